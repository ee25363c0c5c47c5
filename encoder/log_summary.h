// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_summary.h - who a log's process was, and what it did --===//
//
// One pass over an event log without the scheduling model: the process's
// identity (pid, parent, command line, executable), when it started and
// ended and how (exit status, killed), the children it reaped, and whether
// it recorded anything worth a trace of its own. The launcher (`gotrace
// run`) builds the run's index from these, and leaves quiet processes
// without a trace file.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "encoder/quiet_journal.h"
#include "encoder/status.h"

namespace gotrace {

struct LogSummary {
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;    // its end record, or its last record
  bool complete = false;  // ended its log (an end record): not killed
  std::vector<std::string> argv;
  std::string exe;
  bool descendant = false;
  // How it ended, in wait(2) form; -1 unknown (killed: see the parent's
  // child_exits). exec'd: this image ran another program.
  int64_t exit_status = -1;
  bool exec_d = false;
  std::vector<log::ChildExit> child_exits;  // the children it reaped, and when
  // Not traced: an exec of a program learned quiet (log::kQuietSkipped);
  // its end is its reaping, end_ns 0 until the launcher finds it.
  bool skipped = false;
  bool foreign = false;  // skipped because LD_PRELOAD cannot reach it (log::kQuietForeign)
  bool no_preload =
      false;  // skipped: started with an environment without it (log::kQuietNoPreload)
  uint32_t threads = 0;
  uint64_t records = 0;
  // What makes a process worth a trace (README, "Tracing whole CI jobs"):
  uint64_t blocking_waits = 0;  // sync, sleep, or I/O at least the block threshold long
  uint64_t creates = 0;         // threads it started
  uint64_t annotations = 0;
  uint64_t heap_min = UINT64_MAX, heap_max = 0;
  uint64_t cpu_ns = 0;  // CPU time of its busiest thread, as its last count said
  bool quiet() const;
};

// Reads `path` (leniently: a killed process's log is incomplete).
Status SummarizeLog(const std::string& path, uint64_t block_threshold_ns, LogSummary* out);

}  // namespace gotrace
