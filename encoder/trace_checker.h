// SPDX-License-Identifier: Apache-2.0
//===-- encoder/trace_checker.h - the Go parser's rules, applied as we emit -===//
//
// Mirrors what Go 1.19's internal/trace (order.go ordering state, parser.go
// postProcessTrace) and cmd/trace's viewer generator enforce, plus the Go
// >= 1.23 extras (GO_TRACE_FORMAT.md §2.4, §2.7, §2.11, §4.2). The model emits
// events in one global order that is consistent by construction; the checker
// verifies that claim event by event, so a model bug is reported at the event
// that breaks a rule instead of as "no consistent ordering" from Go.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "encoder/go_trace_format.h"

namespace gotrace {

class TraceChecker {
 public:
  explicit TraceChecker(uint32_t nprocs);

  // Checks one event (args exclude the time). Returns "" if it is valid,
  // else a description of the violated rule. Events must be passed in the
  // order they are emitted.
  std::string Check(uint32_t p, go::EvType type, uint64_t ts, std::span<const uint64_t> args);

  // End-of-trace rules: no goroutine left running, every P stopped. Also
  // returns the start-stack ids that GoCreate referenced, which must be
  // defined with at least one frame of nonzero PC.
  std::string Finish();
  const std::unordered_set<uint64_t>& start_stacks() const { return start_stacks_; }

 private:
  enum class GSt : uint8_t { kDead, kRunnable, kRunning, kWaiting };
  struct G {
    uint64_t seq = 0;  // the parser's ordering seq: GoStart/GoUnblock need args.seq == seq
    GSt st = GSt::kDead;
    bool in_syscall = false;  // waiting because of GoSysBlock / GoInSyscall
    bool created = false;
    bool ended = false;
  };
  struct P {
    bool running = false;
    uint64_t g = 0;
  };
  G& Get(uint64_t g) { return gs_[g]; }
  std::string CheckRunning(uint32_t p, go::EvType type, bool allow_g0);

  std::vector<P> procs_;
  std::unordered_map<uint64_t, G> gs_;
  std::unordered_set<uint64_t> start_stacks_;
  uint64_t last_ts_ = 0;
  bool gomaxprocs_seen_ = false;
  uint64_t gomaxprocs_ = 0;  // its value: a repeated Gomaxprocs must not change it
  bool any_event_ = false;
};

}  // namespace gotrace
