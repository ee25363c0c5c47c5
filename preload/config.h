// SPDX-License-Identifier: Apache-2.0
//===-- preload/config.h - GOTRACE_* settings, read once at start ---------===//
//
// DESIGN.md §6. Every variable is read once in the constructor; an invalid
// value prints one line and is ignored. In secure-execution mode (setuid,
// file capabilities: AT_SECURE) nothing is read and tracing stays off (H29).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace gotrace {

// kAuto: DWARF CFI where the code has it, frame pointers where it does not
// (unwind/cfi_unwind.h). kFp: frame pointers only. kLibunwind: libunwind's
// unw_backtrace (unwind/libunwind_unwind.h). Every mode ends a stack at the
// first return address outside executable code.
enum class UnwindMode : uint8_t { kFp, kLibunwind, kNone, kAuto };

// Where the trace's scheduling comes from (GOTRACE_SCHED, issue 13).
enum class SchedMode : uint8_t {
  kAuto,    // the kernel's context switches where perf_event_open allows, else inferred
  kKernel,  // the same, but saying so in every process when it is not allowed
  kInfer,   // inferred from the interposed calls only (DESIGN.md §4)
};

// Interposer groups (GOTRACE_EVENTS).
enum EventGroup : uint32_t {
  kGroupSync = 1u << 0,   // mutex, rwlock, cond, sem, barrier, futex, join
  kGroupSleep = 1u << 1,  // nanosleep, clock_nanosleep, usleep, sleep
  kGroupIo = 1u << 2,     // blocking system calls and network waits
  kGroupHeap = 1u << 3,   // malloc family
  kGroupAnnotate = 1u << 4,  // the program's own annotations (gotrace/annotate.h)
  kGroupAll = kGroupSync | kGroupSleep | kGroupIo | kGroupHeap | kGroupAnnotate,
};

struct Config {
  bool enabled = true;
  bool quiet = false;
  bool keep_log = false;
  // GOTRACE_DEFER: a launcher encodes the run's logs after the program
  // ended, while this file exists (else the process encodes its own).
  bool defer = false;
  char defer_path[1024] = {0};
  // GOTRACE_LOG_DIR (deferred mode only): where the launcher wants the event
  // logs (a tmpfs directory of its own), named after their traces.
  char log_dir[1024] = {0};
  // Deferred mode: the launcher's journal of quiet processes (the marker's
  // path + ".quiet", encoder/quiet_journal.h).
  char journal_path[1040] = {0};
  // Deferred mode: the launcher's table of programs learned quiet (the
  // marker's path + ".learn"; absent with --every-process).
  char learn_path[1040] = {0};
  // GOTRACE_STAGE (default on; deferred mode, descendants only): record into
  // memory until the process does something worth a trace of its own, and
  // make the event log only then (runtime.cc, MaterializeSlow). 0: make it
  // at start, as plain LD_PRELOAD does (for measurements).
  bool stage = true;
  bool follow = true;                    // trace forked and exec'd children
  bool crash = true;                     // write the trace on crash and termination signals
  uint32_t flush_ms = 50;                // the flusher's period: kernel records, clock (0: no flusher)
  UnwindMode unwind = UnwindMode::kAuto;
  uint32_t depth = 64;                   // frames per stack, 1..128
  uint32_t events = kGroupAll;
  uint32_t buffer_kb = 64;               // per-thread buffer (a slot of the log)
  uint32_t max_mb = 1024;                // the event log's size limit (0: none)
  SchedMode sched = SchedMode::kAuto;
  uint32_t cpu_hz = 100;                 // CPU samples per second of CPU time (0: none), as Go's pprof
  uint64_t block_threshold_ns = 20'000;  // passed to the encoder
  // Issue 16: GOTRACE_START=paused records nothing until `gotrace ctl PID
  // start` opens a window; GOTRACE_CTL=1 gives a process that records from
  // its start the control channel too (preload/control.h).
  bool start_paused = false;
  bool control = false;
  // GOTRACE_MODE=flight: keep only the last GOTRACE_FLIGHT of the log (a
  // time span, or a size): older chunks are dropped as recording goes on.
  bool flight = false;
  uint64_t flight_ns = 30'000'000'000ull;  // 30 s
  uint64_t flight_bytes = 0;               // 0: by time only
  char out_template[1024] = "gotrace.%p.trace";
};

// Reads the environment into *c; reports invalid values on stderr.
void ReadConfig(Config* c);
// GOTRACE_<name> as the environment had it when ReadConfig ran (nullptr:
// unset). No allocation, async-signal-safe.
const char* Var(const char* name);

// Expands %p (pid), %e (executable name) and %% in tmpl; a relative result is
// made absolute against cwd. False if it does not fit.
bool ExpandOutputPath(const char* tmpl, int pid, const char* exe, const char* cwd, char* out,
                      unsigned long cap);

}  // namespace gotrace
