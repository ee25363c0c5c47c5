// SPDX-License-Identifier: Apache-2.0
//===-- test/model/model_util.h - encode a synthetic log, ask Go about it -===//
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "test/support/go_oracle.h"
#include "test/support/log_builder.h"

namespace gotrace::testing {

// Stack ids used by the model tests (defined by DefineStandardStacks).
enum : uint64_t {
  kStkMutexLock = 1,     // pthread_mutex_lock <- worker:101
  kStkMutexUnlock = 2,   // pthread_mutex_unlock <- worker:102
  kStkCondWait = 3,      // pthread_cond_wait <- worker:103
  kStkCondSignal = 4,    // pthread_cond_signal <- worker:104
  kStkRead = 5,          // read <- worker:105
  kStkSleep = 6,         // nanosleep <- worker:106
  kStkRecv = 7,          // recv <- consumer
  kStkCreate = 8,        // pthread_create <- main:12
  kStkJoin = 9,          // pthread_join <- main:13
  kStkInlined = 10,      // pthread_mutex_lock <- Queue::Pop (inlined) <- consumer
};

inline void DefineStandardStacks(LogBuilder& b) {
  b.Stack(kStkMutexLock, {0x3011, 0x2005});
  b.Stack(kStkMutexUnlock, {0x4011, 0x2009});
  b.Stack(kStkCondWait, {0x5011, 0x200d});
  b.Stack(kStkCondSignal, {0x6011, 0x2011});
  b.Stack(kStkRead, {0x7011, 0x2015});
  b.Stack(kStkSleep, {0x8011, 0x2019});
  b.Stack(kStkRecv, {0x9011, 0xd011});
  b.Stack(kStkCreate, {0xa011, 0x1009});
  b.Stack(kStkJoin, {0xb011, 0x100d});
  b.Stack(kStkInlined, {0x3021, 0xd111});
}

struct Checked {
  EncodeRun run;
  ParsedTrace parsed;
};

// Writes the log, encodes it (every event checked by TraceChecker), then
// requires Go 1.19's parser and the web UI to accept the result.
inline Checked EncodeAndValidate(LogBuilder& b, const TempDir& dir, ModelOptions opts = {},
                                 bool web = true, bool strict = true) {
  const std::string log = dir.File("test.gtlog");
  b.Write(log);
  Checked c;
  c.run = EncodeForTest({log}, dir.File("test.trace"), opts, StandardFakeSymbolizer(), strict);
  INFO("encode: " << c.run.status.message());
  REQUIRE(c.run.status.ok());
  c.parsed = ParseWithGo(c.run.trace);
  INFO("go tool trace -d: " << c.parsed.error);
  REQUIRE(c.parsed.ok);
  if (web) {
    const std::string w = WebCheck(c.run.trace);
    INFO("web check: " << w);
    REQUIRE(w.empty());
  }
  return c;
}

// The trace's Gomaxprocs events: the snapshot's, repeated for Go 1.21+
// (Replay::Snapshot), and a third only as the trace's last event, later than
// every other: it marks an end that came after the last event (an end
// record, a window taken while every thread was blocked).
inline bool GomaxprocsAsExpected(const ParsedTrace& t) {
  const size_t n = t.Count("Gomaxprocs");
  if (n == 2) return true;
  const size_t k = t.events.size();
  return n == 3 && k >= 2 && t.events[k - 1].name == "Gomaxprocs" &&
         t.events[k - 1].ts > t.events[k - 2].ts;
}

// Events named `name` whose argument `arg` equals v.
inline std::vector<const GoEvent*> With(const ParsedTrace& t, std::string_view name,
                                        const std::string& arg, uint64_t v) {
  std::vector<const GoEvent*> out;
  for (const GoEvent* e : t.Find(name)) {
    auto it = e->args.find(arg);
    if (it != e->args.end() && it->second == v) out.push_back(e);
  }
  return out;
}

// Events attributed to goroutine g (ev.g), optionally of one type.
inline std::vector<const GoEvent*> ByG(const ParsedTrace& t, uint64_t g,
                                       std::string_view name = {}) {
  std::vector<const GoEvent*> out;
  for (const GoEvent& e : t.events)
    if (e.g == g && (name.empty() || e.name == name)) out.push_back(&e);
  return out;
}

}  // namespace gotrace::testing
