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

void CheckGroups(const std::string& trace, const std::map<std::string, uint64_t>& want) {
  GoroutineGroups old_go = ReadGoroutineGroups(trace, GoBinary());
  INFO("go 1.19: " << old_go.error);
  REQUIRE(old_go.error.empty());
  CHECK(old_go.groups == want);
  const std::string newer = NewerGoBinary();
  if (newer.empty()) {
    WARN("skipped the Go 1.23 check: no /usr/lib/go-1.23/bin/go (golang-1.23-go) or $GOTRACE_GO_NEW");
    return;
  }
  GoroutineGroups new_go = ReadGoroutineGroups(trace, newer);
  INFO(newer << ": " << new_go.error);
  REQUIRE(new_go.error.empty());
  CHECK(new_go.groups == want);
}

TEST_CASE("names: threads with named start routines keep their routines' names", "[names]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("thread_names")}, dir);
  CHECK(s.plain.out == "named watcher\n");
  CheckGroups(s.trace, {{"main", 1}, {"pool_worker", 2}, {"watcher", 1}});
}

TEST_CASE("names: a stripped program's threads go by their kernel names, grouped by them",
          "[names]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("tnames_stripped")}, dir);
  CHECK(s.plain.out == "named watcher\n");
  // The pool threads named themselves and ended; the watcher was still
  // blocked at exit (named by the exit path); main kept the process's name.
  CheckGroups(s.trace, {{"tnames_stripped", 1}, {"pool", 2}, {"watcher", 1}});
}

}  // namespace
}  // namespace gotrace::testing
