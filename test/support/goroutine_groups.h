// SPDX-License-Identifier: Apache-2.0
//===-- test/support/goroutine_groups.h - threads as go tool trace groups them
//
// One check for the model and scenario tests: go tool trace names and groups
// goroutines (threads) on its /goroutines page; Go 1.19 and the current Go
// (issue 19) must both show the groups a test expects.
//===----------------------------------------------------------------------===//
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <string>

#include "test/support/go_oracle.h"

namespace gotrace::testing {

// "main x1, worker x2": groups as a failed check shows them.
inline std::string GroupsText(const std::map<std::string, uint64_t>& groups) {
  std::string out;
  for (const auto& [name, n] : groups)
    out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  return out;
}

// The /goroutines page's groups (name -> count) of Go 1.19 and, where
// installed, Go 1.23 (issue 19: both must agree).
inline void CheckGoroutineGroups(const std::string& trace, const std::map<std::string, uint64_t>& want) {
  INFO(trace << ": want " << GroupsText(want));
  GoroutineGroups old_go = ReadGoroutineGroups(trace, GoBinary());
  INFO("go 1.19: " << old_go.error << " groups " << GroupsText(old_go.groups));
  REQUIRE(old_go.error.empty());
  CHECK(old_go.groups == want);
  const std::string newer = NewerGoBinary();
  if (newer.empty()) {
    WARN("skipped the Go 1.23 check: no /usr/lib/go-1.23/bin/go (golang-1.23-go) or $GOTRACE_GO_NEW");
    return;
  }
  GoroutineGroups new_go = ReadGoroutineGroups(trace, newer);
  INFO(newer << ": " << new_go.error << " groups " << GroupsText(new_go.groups));
  REQUIRE(new_go.error.empty());
  CHECK(new_go.groups == want);
}

}  // namespace gotrace::testing
