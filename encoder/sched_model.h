// SPDX-License-Identifier: Apache-2.0
//===-- encoder/sched_model.h - OS threads as goroutines, CPUs as Ps ------===//
//
// Replays the thread streams of a LogSet in time order against a model of
// goroutine and P state and emits Go trace events (DESIGN.md §4):
//
//   - a thread is a goroutine (id = tid; a reused tid gets a fresh id >= 2^22,
//     above any kernel pid), a CPU is a P;
//   - a record on CPU c makes its thread the one running on P c: whoever ran
//     there is preempted, and a thread last seen on another CPU migrated;
//   - waits become GoBlock*/GoSleep/GoBlockNet or GoSysCall(+GoSysBlock) with
//     the waiter's stack; a release by another thread during the wait becomes
//     the GoUnblock, on the releaser's P with the releaser's stack;
//     unmatched ends are unblocked by g0 on the P the thread resumes on;
//   - every event is emitted at the model's clock, which only moves forward,
//     so per-P order and cross-P causality hold whatever the log's clocks did.
//
// The merge reads one record per stream ahead (the heads); the waker match
// tolerates a release recorded slightly after the waiter resumed by looking
// at other streams' heads (clock skew: clamp, don't trust).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "encoder/go_trace_writer.h"
#include "encoder/log_reader.h"
#include "encoder/stack_table.h"
#include "encoder/status.h"
#include "encoder/symbolizer.h"
#include "encoder/user_annotations.h"

namespace gotrace {

struct ModelOptions {
  // Syscalls and network waits shorter than this (ns) are non-blocking
  // (GoSysCall only); longer ones block (DESIGN.md §4).
  uint64_t block_threshold_ns = 20'000;
  // A release of the awaited object recorded at most this long (ns) after
  // the waiter resumed still counts as its waker.
  uint64_t skew_tolerance_ns = 100'000;
  // A killed process's end (CLOCK_MONOTONIC ns), which its log, cut at its
  // last record, cannot tell: the launcher knows it from the parent's
  // reaping (or its own wait for the program). When no log of the set has
  // its end record, the trace runs to it, and the waits open at the kill
  // end there; 0: the last record ends the trace.
  uint64_t killed_end_ns = 0;
  // Check every emitted event against the parser's rules (TraceChecker); on
  // by default in debug builds.
#ifdef NDEBUG
  bool check = false;
#else
  bool check = true;
#endif
};

struct ModelStats {
  uint64_t records = 0;
  uint64_t threads = 0;           // goroutines created (including the snapshot)
  uint64_t snapshot_threads = 0;  // alive at trace start or first seen without a create
  uint64_t wakeups_linked = 0;    // GoUnblock from a releasing thread
  uint64_t wakeups_skewed = 0;    // ... of which matched across clock skew
  uint64_t wakeups_g0 = 0;        // GoUnblock from g0 (timeouts, sleeps, unseen wakers)
  uint64_t migrations = 0;
  uint64_t preemptions = 0;       // inferred: another thread recorded on the CPU, or the kernel's
  // Kernel scheduling (the log has the kernel's context switches):
  uint64_t kernel_processes = 0;  // logs whose scheduling came from the kernel
  uint64_t switches = 0;          // context-switch records used
  uint64_t offcpu_blocks = 0;     // voluntary switches outside any recorded wait
  uint64_t implicit_starts = 0;   // a thread recorded while the kernel had it off-CPU
  uint64_t cpu_samples = 0;
  uint64_t kernel_lost = 0;       // records the kernel dropped (full rings)
  uint64_t kernel_rings_full = 0; // rings still full at a process's last read: records after may be missing
  uint64_t kernel_full_at = 0;    // the earliest such ring's last record, ns into the trace
  uint64_t dropped_records = 0;   // from kTraceEnd: lost in the recording process
  uint64_t ignored_records = 0;   // records of ended threads, misplaced records
  AnnotationStats annotations;    // gotrace/annotate.h calls (user_annotations.h)
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

// Replays `logs` into `writer`, filling `stacks` with the stack references and
// `syms` (one per log file, may be null) with the module map.
Status ReplayModel(const log::LogSet& logs, const ModelOptions& opts, GoTraceWriter* writer,
                   StackTable* stacks, const std::vector<Symbolizer*>& syms, ModelStats* stats);

}  // namespace gotrace
