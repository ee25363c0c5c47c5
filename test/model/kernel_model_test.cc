// SPDX-License-Identifier: Apache-2.0
//===-- test/model/kernel_model_test.cc - the kernel-mode scheduling model ===//
//
// Logs with a kernel stream (perf's context switches): the switches decide
// where threads run, the interposers' records say why a thread left its
// CPU. Each case is a situation seen in real traces (issue 13), encoded with
// every event checked and parsed by Go 1.19.
//===----------------------------------------------------------------------===//
#include "test/model/model_util.h"

namespace gotrace::testing {
namespace {

constexpr uint32_t kTid = 501;

// One thread on CPU 0 from t=1000, in a log with a kernel stream.
ThreadLog& OneThread(LogBuilder& b) {
  DefineStandardStacks(b);
  b.Kernel().SwitchIn(1000, 0, kTid);
  return b.Thread(kTid).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
}

TEST_CASE("kernel mode: a trip off the CPU just before a wait is not that wait", "[model][kernel]") {
  // A new thread's first record (its slot in the log) took it off its CPU
  // for 7 us a little before its first sleep; it was back before the sleep
  // began. That trip is an off-CPU block of its own, and the sleep one
  // GoSleep (the sleepers scenario once showed two).
  TempDir dir;
  LogBuilder b;
  auto& s = OneThread(b);
  s.Wait(120'000, 0, WaitKind::kSleep, 0, 200'000, 0, kStkSleep);
  b.Kernel()
      .SwitchOut(100'000, 0, kTid)
      .SwitchIn(107'000, 0, kTid)
      .SwitchOut(125'000, 0, kTid)
      .SwitchIn(319'000, 0, kTid);
  b.TraceEnd(400'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.parsed.Count("GoSleep") == 1);
  CHECK(k.parsed.Count("GoBlock") == 1);
  CHECK(k.run.stats.model.offcpu_blocks == 1);
}

TEST_CASE("kernel mode: a switch-out a hair before the wait's record is the wait's", "[model][kernel]") {
  // The two clocks disagree by a few microseconds: the kernel's switch-out
  // can carry a time just before the record of the wait it is for. The
  // thread is back only after the wait began: it slept in it.
  TempDir dir;
  LogBuilder b;
  auto& s = OneThread(b);
  s.Wait(115'000, 0, WaitKind::kSleep, 0, 200'000, 0, kStkSleep);
  b.Kernel().SwitchOut(110'000, 0, kTid).SwitchIn(314'000, 0, kTid);
  b.TraceEnd(400'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.parsed.Count("GoSleep") == 1);
  CHECK(k.parsed.Count("GoBlock") == 0);
}

TEST_CASE("kernel mode: a wait that never left the CPU is no block", "[model][kernel]") {
  // sleep(0), a lock taken while spinning: the kernel never switched the
  // thread out, so the timeline shows it running (README).
  TempDir dir;
  LogBuilder b;
  auto& s = OneThread(b);
  s.Wait(50'000, 0, WaitKind::kSleep, 0, 60'000, 0, kStkSleep);
  s.Wait(150'000, 0, WaitKind::kSleep, 0, 100'000, 0, kStkSleep);
  b.Kernel().SwitchOut(151'000, 0, kTid).SwitchIn(249'000, 0, kTid);
  b.TraceEnd(400'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.parsed.Count("GoSleep") == 1);
  CHECK(k.parsed.Count("GoBlock") == 0);
}

TEST_CASE("kernel mode: an involuntary switch-out is a preemption, on the CPU it returns to",
          "[model][kernel]") {
  TempDir dir;
  LogBuilder b;
  OneThread(b);
  b.Kernel().SwitchOut(100'000, 0, kTid, true).SwitchIn(180'000, 1, kTid);
  b.TraceEnd(400'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.parsed.Count("GoPreempt") == 1);
  CHECK(k.parsed.Count("GoBlock") == 0);
  const auto starts = With(k.parsed, "GoStart", "g", kTid);
  REQUIRE(starts.size() == 2);
  CHECK(starts[1]->p == 1);
  CHECK(k.run.stats.model.preemptions == 1);
}

}  // namespace
}  // namespace gotrace::testing
