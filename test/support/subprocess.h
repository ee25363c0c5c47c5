// SPDX-License-Identifier: Apache-2.0
//===-- test/support/subprocess.h - run a program, capture its output -----===//
//
// Test-only: spawns a program (no shell) in its own process group with
// stdout and stderr captured, and kills the group when a timeout expires,
// because hangs are the usual failure of the things we test.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace gotrace::testing {

struct ProcResult {
  int exit_code = -1;    // valid when term_signal == 0 and !timed_out
  int term_signal = 0;   // the signal that ended it, or 0
  bool timed_out = false;
  bool spawn_failed = false;
  std::string out;       // stdout
  std::string err;       // stderr
  // "exit 3", "signal 11", "timed out", "spawn failed"
  std::string Describe() const;
  bool Exited(int code) const { return !timed_out && term_signal == 0 && exit_code == code; }
};

struct ProcOptions {
  int timeout_s = 60;
  std::vector<std::string> env;  // extra NAME=VALUE entries (override the inherited ones)
  std::vector<std::string> unset_env;
  std::string cwd;               // empty: inherit
  std::string stdin_data;        // written to the child's stdin, then closed
};

ProcResult RunProcess(const std::vector<std::string>& argv, const ProcOptions& opts = {});

}  // namespace gotrace::testing
