// SPDX-License-Identifier: Apache-2.0
//===-- test/model/go123_test.cc - what Go 1.23 shows of the same trace ---===//
//
// Go 1.21 and later read our Go 1.19 format through internal/trace's oldtrace
// converter, and their cmd/trace computes the -pprof profiles from goroutine
// state transitions (cmd/trace/pprof.go, makeComputePprofFunc). That code
// skips every transition without a stack before it checks whether the
// goroutine leaves the state it is timing (golang/go#74850). A GoUnblock
// from g0 (a wait whose waker was not seen: timeouts, the kernel, a thread
// outside the trace) has no stack, as the runtime's own timer and netpoller
// unblocks have none, so in Go 1.23 such a wait goes on until the goroutine's
// next transition that has a stack and leaves the waiting state, or is
// dropped when none comes. Go 1.19 ends every wait at its GoUnblock. This is
// why the sync totals of one trace differ between the versions (README.md,
// "Compatibility"); the test pins that reading down with exact numbers.
//===----------------------------------------------------------------------===//
#include "test/model/model_util.h"

namespace gotrace::testing {
namespace {

constexpr uint64_t kMutex = 0xa1000, kCond = 0xc1000;

int64_t Ts(const std::vector<const GoEvent*>& events, size_t i) {
  REQUIRE(i < events.size());
  return events[i]->ts;
}

// Both versions convert ticks to nanoseconds on their own; allow their rounding.
bool Near(uint64_t a, int64_t b) {
  const int64_t d = static_cast<int64_t>(a) - b;
  return d >= -3 && d <= 3;
}

TEST_CASE("sync totals in Go 1.19 and Go 1.23: a wait ended by g0 lasts until a stack (1.23)",
          "[model][go123]") {
  const std::string go123 = Go123Binary();
  if (go123.empty()) {
    WARN("Go 1.23 (" GOTRACE_GO123_BINARY ") is not installed: Go 1.23 checks skipped");
    return;
  }
  TempDir dir;
  LogBuilder b(3);
  DefineStandardStacks(b);
  auto& a = b.Thread(101).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  auto& c = b.Thread(102).Start(1000, 1, 0, 0x2000, log::kThreadExisted);
  auto& d = b.Thread(103).Start(1000, 2, 0, 0x2000, log::kThreadExisted);
  // a: a mutex wait nobody is seen to end (g0 unblocks it), then one that c's unlock ends.
  // They are further apart than ModelOptions::skew_tolerance_ns, so that the unlock cannot
  // be taken for the first wait's waker.
  a.Wait(10'000, 0, WaitKind::kMutex, kMutex, 2'000, 0, kStkMutexLock)
      .Wait(200'000, 0, WaitKind::kMutex, kMutex, 5'000, 0, kStkMutexLock);
  c.Release(204'900, 1, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  // d: one condition wait ended by g0, and no transition with a stack after it.
  d.Wait(400'000, 2, WaitKind::kCond, kCond, 3'000, 2, kStkCondWait);
  b.TraceEnd(600'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;

  const auto a_blocks = ByG(t, 101, "GoBlockSync");
  const auto a_unblocks = With(t, "GoUnblock", "g", 101);
  const auto d_blocks = ByG(t, 103, "GoBlockCond");
  const auto d_unblocks = With(t, "GoUnblock", "g", 103);
  REQUIRE(a_blocks.size() == 2);
  REQUIRE(a_unblocks.size() == 2);
  REQUIRE(d_blocks.size() == 1);
  REQUIRE(d_unblocks.size() == 1);
  CHECK(a_unblocks[0]->g == 0);    // no waker seen: g0, no stack
  CHECK(a_unblocks[1]->g == 102);  // the unlocking thread, with its stack
  CHECK(d_unblocks[0]->g == 0);

  // Go 1.19: each wait from its GoBlock* to its GoUnblock.
  const PprofResult old_sync = Pprof(k.run.trace, "sync");
  INFO(old_sync.error);
  REQUIRE(old_sync.ok);
  const ProfileTotals old_totals = Totals(old_sync);
  REQUIRE(old_totals.ok);
  CHECK(old_totals.count == 3);
  CHECK(Near(old_totals.nanoseconds, (Ts(a_unblocks, 0) - Ts(a_blocks, 0)) +
                                         (Ts(a_unblocks, 1) - Ts(a_blocks, 1)) +
                                         (Ts(d_unblocks, 0) - Ts(d_blocks, 0))));

  // Go 1.23: a's first wait runs on through its second wait until c's unblock (the next
  // transition with a stack that leaves Waiting), counted once on the first wait's stack;
  // d's wait has no such transition after it and is not counted at all.
  const PprofResult new_sync = Pprof(k.run.trace, "sync", go123);
  INFO(new_sync.error);
  REQUIRE(new_sync.ok);
  const ProfileTotals new_totals = Totals(new_sync);
  REQUIRE(new_totals.ok);
  CHECK(new_totals.count == 1);
  CHECK(Near(new_totals.nanoseconds, Ts(a_unblocks, 1) - Ts(a_blocks, 0)));
  CHECK_THAT(new_sync.traces, Catch::Contains("pthread_mutex_lock"));
  CHECK_THAT(new_sync.traces, !Catch::Contains("pthread_cond_wait"));

  // And Go 1.23's web UI serves every page of this trace.
  const std::string web = WebCheck(k.run.trace, go123);
  INFO(web);
  CHECK(web.empty());
}

TEST_CASE("Go 1.23: waits all ended by their wakers give the same sync profile as Go 1.19",
          "[model][go123]") {
  const std::string go123 = Go123Binary();
  if (go123.empty()) {
    WARN("Go 1.23 (" GOTRACE_GO123_BINARY ") is not installed: Go 1.23 checks skipped");
    return;
  }
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  auto& a = b.Thread(101).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  auto& c = b.Thread(102).Start(1000, 1, 0, 0x2000, log::kThreadExisted);
  for (int r = 0; r < 20; ++r) {
    const Tick t = 10'000 + r * 1000;
    a.Wait(t, 0, WaitKind::kCond, kCond, 500, 0, kStkCondWait);
    c.Release(t + 400, 1, WaitKind::kCond, kCond, 1, kStkCondSignal)
        .Wait(t + 450, 1, WaitKind::kMutex, kMutex, 540, 1, kStkMutexLock);
    a.Release(t + 900, 0, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  }
  b.TraceEnd(100'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.run.stats.model.wakeups_g0 == 0);
  const PprofResult old_sync = Pprof(k.run.trace, "sync");
  const PprofResult new_sync = Pprof(k.run.trace, "sync", go123);
  INFO(old_sync.error << new_sync.error);
  REQUIRE(old_sync.ok);
  REQUIRE(new_sync.ok);
  const ProfileTotals o = Totals(old_sync), n = Totals(new_sync);
  REQUIRE(o.ok);
  REQUIRE(n.ok);
  CHECK(o.count == 40);
  CHECK(n.count == o.count);
  CHECK(n.stacks == o.stacks);
  CHECK(Near(n.nanoseconds, static_cast<int64_t>(o.nanoseconds)));
}

}  // namespace
}  // namespace gotrace::testing
