// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/names_test.cc - threads named as the program names them
//
// Issue 14 item 4: go tool trace names and groups goroutines (threads) by
// their start routine; where that routine has no name (a stripped program),
// by the name the thread gave itself. Checked on the /goroutines page of
// Go 1.19 and, where installed, Go 1.23 (issue 19: both must agree).
//===----------------------------------------------------------------------===//
#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

TEST_CASE("names: threads with named start routines keep their routines' names", "[names]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("thread_names")}, dir);
  CHECK(s.plain.out == "named watcher\n");
  CheckGoroutineGroups(s.trace, {{"main", 1}, {"pool_worker", 2}, {"watcher", 1}});
}

TEST_CASE("names: a stripped program's threads go by their kernel names, grouped by them",
          "[names]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("tnames_stripped")}, dir);
  CHECK(s.plain.out == "named watcher\n");
  // The pool threads named themselves and ended; the watcher was still
  // blocked at exit (named by the exit path); main kept the process's name.
  CheckGoroutineGroups(s.trace, {{"tnames_stripped", 1}, {"pool", 2}, {"watcher", 1}});
}

}  // namespace
}  // namespace gotrace::testing
