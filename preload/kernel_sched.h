// SPDX-License-Identifier: Apache-2.0
//===-- preload/kernel_sched.h - the kernel's context switches and samples -===//
//
// Issue 13: when each thread ran, and on which CPU, from the kernel itself.
// perf_event_open lets a process watch its own threads without privileges at
// kernel.perf_event_paranoid <= 2 (or with CAP_PERFMON): context-switch
// records (PERF_RECORD_SWITCH, with the thread, time and CPU of each switch,
// and whether a switch out was a preemption) and CPU-clock samples with user
// call chains. They are copied into the event log's kernel stream
// (log::kKernelSerial), where the encoder makes them decide where threads
// run (encoder/sched_model.cc).
//
// Choice: one event per CPU (pid = the calling thread, cpu = c, inherit
// with inherit_thread), opened once in the constructor, rather than one per
// thread. Every thread created later inherits them (also threads that never
// call an interposed function), the kernel sends their records to the
// per-CPU ring buffers of the events we opened, and a process needs ncpus
// ring buffers whatever its thread count (per-thread events need a
// descriptor and a ring per thread: 1,000 threads would use 1,000
// descriptors and tens of megabytes). The descriptors are closed right
// after mapping their rings (the mapping keeps each event alive), so the
// program sees no descriptor of ours. Fork children get events of their own
// (inherit_thread: a fork does not inherit; the rings are MADV_DONTFORK).
// One event per CPU does both jobs: a CPU-clock sampling event (or, with
// GOTRACE_CPU_HZ=0, a dummy event) with context_switch set.
//
// Times: CLOCK_MONOTONIC (use_clockid), the clock the log's kClockSync pairs
// tie the tick counter to; the kernel stream's chunks carry kChunkNsTime.
//
// The rings are read (Drain) by the flusher thread every GOTRACE_FLUSH_MS,
// by a recording thread of a program that has no flusher (every 10 ms of
// its recording), and at exit, exec and crash. A process killed with
// SIGKILL loses what the rings held since the last read: the kernel frees
// them with the process.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

#include "preload/config.h"

namespace gotrace::kernel {

// Opens the events for the calling process (its calling thread and every
// thread created afterwards). False, with a reason for the user in *why
// (static text) and the errno in *err, if the kernel refuses or lacks them.
// `stack_copies`: CPU samples carry a copy of the user stack, walked here by
// CFI (kernel_sched.cc, kStackDumpBytes), where GOTRACE_UNWIND allows it;
// otherwise the kernel's frame-pointer call chains.
// `startup`: the first thread's rings, as the process starts: smaller
// (kernel_sched.cc, kStartupPages), replaced by Grow or UseStackCopies.
bool Open(const Config& config, bool stack_copies, bool startup, const char** why, int* err);

// Problem: a sample with a stack copy is 8 KiB in the ring, one with a
// call chain about 100 bytes, and the rings of a one-thread program are
// read only by its own recorded calls (every 10 ms) or at its end: one
// that computes without a recorded call would lose all but its first
// second of samples. So a one-thread process takes call chains, and moves
// to stack copies once something reads its rings on a clock: its second
// thread's flusher (lifecycle.cc, MaybeUseStackCopies). The rings are read
// out and the events opened anew, before the second thread exists; so are
// start-up rings (below), with full-size ones, also where copies are not
// allowed.
void UseStackCopies(const Config& config);
// If the rings are the start-up ones (Open's `startup`): when they were
// opened (sys::Ticks); else 0.
uint64_t StartupRingsOpened();
// Replaces start-up rings with full-size ones (call chains), read out
// first. Only in a process with one thread, on it: its recording after
// 10 ms (runtime.cc, ClockSyncSlow).
void Grow(const Config& config);

// Whether Open succeeded in this process image.
bool Active();

// Copies what the kernel recorded into the log's kernel stream, in time
// order. `final`: everything (exit, exec, crash); otherwise records younger
// than 1 ms stay for the next call (a record of another CPU may still be on
// its way). Never waits: a call while another one runs returns at once.
// Async-signal-safe (memory reads, the lock-free stack depot, our slot).
void Drain(bool final);

// Drops what the kernel recorded so far unread: a trace window's log
// starts with the records of its own time (issue 16).
void Discard();
// In a fork child: the parent's events are not ours (the rings are not
// mapped in the child: MADV_DONTFORK). Forgets them without reading.
void ForgetForChild();

}  // namespace gotrace::kernel
