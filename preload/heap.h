// SPDX-License-Identifier: Apache-2.0
//===-- preload/heap.h - live heap bytes: the runtime's entry points ------===//
//
// hooks_malloc.cc keeps the process's live heap bytes as per-thread deltas
// (t_state.heap_delta) folded into one atomic total now and then, and
// records rate-limited kHeap samples (Go's HeapAlloc) from it. The runtime
// calls in here where a thread's pending delta would otherwise be lost.
//===----------------------------------------------------------------------===//
#pragma once

namespace gotrace {

// Folds the calling thread's pending heap delta (less than 64 KiB either way)
// into the process total and records a sample if the total moved by a step
// (1 MiB or 1%) since the last one, ignoring the per-thread 100 µs limit:
// a thread does this once, as it exits. Cheap when heap tracking is off.
//
// Call it while the thread may still record: first thing in
// FinishCurrentThread, before TracerScope raises t_state.depth and before
// t_state.rec is cleared. Never allocates; preserves errno.
void FoldHeapDelta();

// The process's last sample: folds the calling thread's delta and records
// the total if it changed at all since the last sample (and a peak no sample
// showed). For the runtime's final flush, before the phase leaves kReady,
// with t_state.depth == 0: covers _exit, exec and fatal signals. A normal
// exit also gets it from an atexit handler of hooks_malloc.cc, which runs
// before the runtime's; a second call records nothing new.
void FinishHeap();

// A fork child's log has started (StartForkChildLog): its heap samples
// begin anew, the first fold records the total.
void HeapForkChildLogStart();

}  // namespace gotrace
