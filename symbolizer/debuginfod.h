// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/debuginfod.h - debuginfod lookups on a time budget -----===//
//
// Asks the debuginfod servers of DEBUGINFOD_URLS for the debug file of a
// build-id through elfutils' own client (libdebuginfod.so.1, loaded only at
// the first lookup), with one budget of seconds for all the lookups of one
// encode: a server that never answers costs at most the budget, a dead one
// a few milliseconds, and either is said in one line on stderr.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gotrace {

// The budget when neither --debuginfod-timeout nor GOTRACE_DEBUGINFOD_TIMEOUT
// says otherwise, in seconds, for all the lookups of one encode.
constexpr double kDefaultDebuginfodBudget = 10.0;

// GOTRACE_DEBUGINFOD_TIMEOUT (seconds, a decimal number >= 0), else
// kDefaultDebuginfodBudget. A malformed value is said once on stderr and
// ignored.
double DebuginfodBudgetFromEnv();

// Parses a budget in seconds ("10", "0.5"; 0 turns the lookups off).
bool ParseDebuginfodBudget(const char* text, double* seconds);

class DebuginfodLookup {
 public:
  // Null when there is nothing to ask: DEBUGINFOD_URLS unset or empty, or a
  // budget of 0. A negative budget: DebuginfodBudgetFromEnv(). Loads
  // nothing yet.
  static std::shared_ptr<DebuginfodLookup> Create(double budget_seconds);

  DebuginfodLookup(std::string urls, double budget_seconds);
  ~DebuginfodLookup();
  DebuginfodLookup(const DebuginfodLookup&) = delete;
  DebuginfodLookup& operator=(const DebuginfodLookup&) = delete;

  // An open descriptor of the debug file (DWARF and .symtab) of the module
  // with this build-id, from libdebuginfod's cache (DEBUGINFOD_CACHE_PATH,
  // default ~/.cache/debuginfod_client) or a server, and its path in
  // *path; -1 if there is none, the budget is spent or a server failed.
  // One question per build-id: later calls answer from memory. Locked:
  // symbolizers on several threads may share one lookup.
  int FindDebuginfo(const unsigned char* build_id, size_t len, std::string* path);

  // Questions that went to libdebuginfod (cache or network), for tests.
  int queries() const;
  // Whether lookups stopped (budget spent, server failed, no library).
  bool stopped() const;

  struct Api;  // libdebuginfod's functions (debuginfod.cc)

 private:
  friend struct DebuginfodProgress;

  bool LoadLocked();
  void StopLocked(const std::string& why);

  mutable std::mutex mu_;
  const std::string urls_;
  const double budget_;  // seconds, all lookups together
  double remaining_;  // seconds of budget left
  bool tried_load_ = false;
  bool stopped_ = false;
  int queries_ = 0;
  const Api* api_ = nullptr;  // set with client_
  void* client_ = nullptr;  // debuginfod_client*
  double deadline_ = 0;     // CLOCK_MONOTONIC seconds, during a query
  bool cut_ = false;        // the progress callback ended the query
  // build-id (hex) -> path in the cache, empty when there was none
  std::unordered_map<std::string, std::string> answers_;
};

}  // namespace gotrace
