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

TEST_CASE("names: threads of several names started through one routine go by their names",
          "[names]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("thread_trampoline")}, dir);
  CHECK(s.plain.out == "5 roles, 2 pool threads\n");
  // The trampoline's threads by their names, a series folded (gc-0, gc-1)
  // and a digit inside a word kept (C1, C2); the pool that never named its
  // threads keeps its routine's name.
  CheckGoroutineGroups(
      s.trace,
      {{"main", 1}, {"gc-*", 2}, {"C1 comp", 1}, {"C2 comp", 1}, {"io", 1}, {"lonely_pool", 2}});
}

}  // namespace
}  // namespace gotrace::testing
