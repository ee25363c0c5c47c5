// SPDX-License-Identifier: Apache-2.0
//===-- encoder/proc_files.h - files and processes, as the launcher sees them ===//
//
// What tracewrap (encoder/run.cc) and the run's end (encoder/run_finish.cc,
// in the encoder library tracewrap loads later) both need: which files some
// process holds open, a process's /proc/PID/stat, copying a log. Compiled
// into both (tracewrap links no encoder).
//===----------------------------------------------------------------------===//
#pragma once

#include <sys/types.h>

#include <set>
#include <string>

namespace gotrace {

// Whether `s` ends with `suffix`.
bool EndsWith(const std::string& s, const std::string& suffix);

// The files some process holds open (/proc/*/fd) whose paths start with
// `prefix` and end with `suffix`. Reads every process's descriptors: not
// free, for the rare paths only.
std::set<std::string> OpenFiles(const std::string& prefix, const std::string& suffix);

// Field `n` of /proc/PID/stat, numbered as proc(5) does (3: the state, 22:
// the start time in clock ticks); "" if there is no such process.
std::string ProcStatField(pid_t pid, int n);

// Copies src to dst (a new file, 0600); false if any step fails (dst
// removed).
bool CopyFile(const std::string& src, const std::string& dst);

}  // namespace gotrace
