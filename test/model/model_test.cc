// SPDX-License-Identifier: Apache-2.0
//===-- test/model/model_test.cc - the scheduling model against Go 1.19 ---===//
//
// Each test builds a synthetic event log, encodes it with every event checked
// by TraceChecker, requires `go tool trace -d` and the web pages to accept the
// result, and asserts on the events Go parsed.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "test/model/model_util.h"
#include "test/support/goroutine_groups.h"

namespace gotrace::testing {
namespace {

constexpr uint64_t kCond1 = 0xc1000, kCond2 = 0xc2000, kMutex = 0xa1000;

TEST_CASE("condvar ping-pong: each unblock comes from the other thread", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  auto& a = b.Thread(101).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  auto& c = b.Thread(102).Start(1000, 1, 0, 0x2000, log::kThreadExisted);
  constexpr int kRounds = 50;
  for (int r = 0; r < kRounds; ++r) {
    const Tick t = 10'000 + r * 1000;
    a.Wait(t, 0, WaitKind::kCond, kCond1, 500, 0, kStkCondWait);
    c.Release(t + 400, 1, WaitKind::kCond, kCond1, 1, kStkCondSignal)
        .Wait(t + 450, 1, WaitKind::kCond, kCond2, 540, 1, kStkCondWait);
    a.Release(t + 900, 0, WaitKind::kCond, kCond2, 1, kStkCondSignal);
  }
  b.TraceEnd(200'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  CHECK(t.Count("GoBlockCond") == 2 * kRounds);
  auto to_a = With(t, "GoUnblock", "g", 101);
  auto to_c = With(t, "GoUnblock", "g", 102);
  REQUIRE(to_a.size() == kRounds);
  REQUIRE(to_c.size() == kRounds);
  for (const GoEvent* e : to_a) CHECK(e->g == 102);
  for (const GoEvent* e : to_c) CHECK(e->g == 101);
  CHECK(k.run.stats.model.wakeups_linked == 2 * kRounds);
  CHECK(k.run.stats.model.wakeups_g0 == 0);

  PprofResult sync = Pprof(k.run.trace, "sync");
  INFO(sync.error);
  REQUIRE(sync.ok);
  CHECK(sync.traces.find("pthread_cond_wait") != std::string::npos);
  CHECK(sync.traces.find("worker") != std::string::npos);
  PprofResult sched = Pprof(k.run.trace, "sched");
  REQUIRE(sched.ok);
  CHECK(sched.traces.find("pthread_cond_signal") != std::string::npos);  // the waker's stack
}

TEST_CASE("4-way mutex contention: hand-off chain and -pprof=sync frames", "[model]") {
  TempDir dir;
  LogBuilder b(4);
  DefineStandardStacks(b);
  std::vector<ThreadLog*> th;
  for (uint32_t i = 0; i < 4; ++i) th.push_back(&b.Thread(201 + i).Start(1000, i, 0, 0x2000, log::kThreadExisted));
  constexpr int kRounds = 20;
  for (int r = 0; r < kRounds; ++r) {
    const Tick t = 10'000 + r * 10'000;
    // Thread 0 holds the lock; 1..3 queue up and get it in turn.
    for (int i = 1; i < 4; ++i) {
      const Tick resume = t + 1000 * i + 100;
      th[i]->Wait(t + 10 * i, i, WaitKind::kMutex, kMutex, resume - (t + 10 * i), i, kStkMutexLock);
    }
    th[0]->Release(t + 1000, 0, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
    for (int i = 1; i < 3; ++i)
      th[i]->Release(t + 1000 * (i + 1), i, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  }
  b.TraceEnd(400'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  CHECK(t.Count("GoBlockSync") == 3 * kRounds);
  for (int i = 1; i < 4; ++i) {
    auto unblocks = With(t, "GoUnblock", "g", 201 + i);
    REQUIRE(unblocks.size() == kRounds);
    for (const GoEvent* e : unblocks) CHECK(e->g == static_cast<uint64_t>(201 + i - 1));
  }
  PprofResult sync = Pprof(k.run.trace, "sync");
  INFO(sync.error);
  REQUIRE(sync.ok);
  CHECK(sync.traces.find("pthread_mutex_lock") != std::string::npos);
  CHECK(sync.raw.find("pthread_mutex_lock /glibc/nptl/pthread_mutex_lock.c:64") != std::string::npos);
  // The caller frame, with its line: 0x2005 - 1 = 0x2004 -> worker.cc:101.
  CHECK(sync.raw.find("worker /src/app/worker.cc:101") != std::string::npos);
}

TEST_CASE("migration between CPUs preempts on the old P and starts on the new", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(301)
      .Start(1000, 0, 0, 0x2000, log::kThreadExisted)
      .Wait(2000, 0, WaitKind::kSyscall, 3, 1000, 0, kStkRead)   // short, on cpu 0
      .Wait(5000, 1, WaitKind::kSyscall, 3, 1000, 1, kStkRead)   // now on cpu 1: migrated
      .Wait(8000, 1, WaitKind::kSleep, 0, 50'000, 0, kStkSleep)  // resumes on cpu 0
      .Wait(60'000, 0, WaitKind::kSyscall, 3, 1000, 0, kStkRead);
  b.TraceEnd(100'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  auto starts = With(t, "GoStart", "g", 301);
  REQUIRE(starts.size() == 3);
  CHECK(starts[0]->p == 0);
  CHECK(starts[1]->p == 1);
  CHECK(starts[2]->p == 0);  // after the sleep, on the CPU it resumed on
  auto preempts = ByG(t, 301, "GoPreempt");
  REQUIRE(preempts.size() == 1);
  CHECK(preempts[0]->p == 0);
  CHECK(k.run.stats.model.migrations == 1);
  CHECK(t.Count("GoSleep") == 1);
}

TEST_CASE("two threads seen on one CPU: the later record preempts the earlier", "[model]") {
  TempDir dir;
  LogBuilder b(1);
  DefineStandardStacks(b);
  auto& x = b.Thread(401).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  auto& y = b.Thread(402).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  x.Wait(2000, 0, WaitKind::kSyscall, 1, 100, 0, kStkRead);
  y.Wait(3000, 0, WaitKind::kSyscall, 1, 100, 0, kStkRead);
  x.Wait(4000, 0, WaitKind::kSyscall, 1, 100, 0, kStkRead);
  b.TraceEnd(10'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  // The start records of both threads also land on CPU 0: x, y, x, y, x.
  std::vector<uint64_t> order;
  for (const GoEvent* e : t.Find("GoStart")) order.push_back(e->args.at("g"));
  CHECK(order == std::vector<uint64_t>{401, 402, 401, 402, 401});
  CHECK(ByG(t, 401, "GoPreempt").size() == 2);
  CHECK(ByG(t, 402, "GoPreempt").size() == 2);
  CHECK(t.Count("GoSysCall") == 3);
  CHECK(t.Count("GoSysBlock") == 0);  // 100 ns: below the threshold
}

TEST_CASE("sleep: one GoSleep per sleep, woken by g0 on the CPU it resumes on", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  auto& s = b.Thread(501).Start(1000, 1, 0, 0x2000, log::kThreadExisted);
  for (int i = 0; i < 10; ++i)
    s.Wait(10'000 + i * 2'000'000, i % 2, WaitKind::kSleep, 0, 1'000'000, (i + 1) % 2, kStkSleep);
  b.TraceEnd(30'000'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  CHECK(t.Count("GoSleep") == 10);
  auto unblocks = With(t, "GoUnblock", "g", 501);
  REQUIRE(unblocks.size() == 10);
  for (const GoEvent* e : unblocks) CHECK(e->g == 0);
  CHECK(k.run.stats.model.wakeups_g0 == 10);
}

TEST_CASE("short and blocking syscalls, and the configurable threshold", "[model]") {
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(601)
      .Start(1000, 0, 0, 0x2000, log::kThreadExisted)
      .Wait(2'000, 0, WaitKind::kSyscall, 4, 5'000, 0, kStkRead)       // 5 us: short
      .Wait(10'000, 0, WaitKind::kSyscall, 4, 1'000'000, 1, kStkRead)  // 1 ms: blocks
      .Wait(2'000'000, 1, WaitKind::kSyscall, 4, 19'000, 1, kStkRead); // 19 us: short
  b.TraceEnd(3'000'000);
  {
    TempDir dir;
    Checked k = EncodeAndValidate(b, dir);
    const ParsedTrace& t = k.parsed;
    CHECK(t.Count("GoSysCall") == 3);
    CHECK(t.Count("GoSysBlock") == 1);
    auto exits = t.Find("GoSysExit");
    REQUIRE(exits.size() == 1);
    CHECK(exits[0]->g == 601);
    auto starts = With(t, "GoStart", "g", 601);
    REQUIRE(starts.size() == 2);
    CHECK(starts[1]->p == 1);
    PprofResult sys = Pprof(k.run.trace, "syscall");
    INFO(sys.error);
    REQUIRE(sys.ok);
    CHECK(sys.traces.find("read") != std::string::npos);
    CHECK(sys.traces.find("worker") != std::string::npos);
  }
  {
    TempDir dir;
    ModelOptions opts;
    opts.block_threshold_ns = 1'000;  // everything above 1 us blocks
    Checked k = EncodeAndValidate(b, dir, opts);
    CHECK(k.parsed.Count("GoSysBlock") == 3);
    CHECK(k.parsed.Count("GoSysExit") == 3);
  }
}

TEST_CASE("network waits become GoBlockNet unblocked by the netpoller", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(701)
      .Start(1000, 0, 0, 0xd000, log::kThreadExisted)
      .Wait(2'000, 0, WaitKind::kNet, 5, 2'000'000, 0, kStkRecv)   // a long recv
      .Wait(3'000'000, 0, WaitKind::kNet, 5, 1'000, 0, kStkRecv);  // data ready: short
  b.TraceEnd(4'000'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  CHECK(t.Count("GoBlockNet") == 1);
  CHECK(t.Count("GoSysCall") == 1);
  auto unblocks = With(t, "GoUnblock", "g", 701);
  REQUIRE(unblocks.size() == 1);
  CHECK(unblocks[0]->p == 1000002);  // Go's parser moves netpoll unblocks to NetpollP
  PprofResult net = Pprof(k.run.trace, "net");
  INFO(net.error);
  REQUIRE(net.ok);
  CHECK(net.traces.find("recv") != std::string::npos);
  CHECK(net.traces.find("consumer") != std::string::npos);
}

TEST_CASE("create, exit and join: linked creation, the joiner woken by the exiting thread",
          "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  const uint64_t child_self = 0x7f0000001000;
  b.Thread(100)
      .Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Create(2'000, 0, 1, 0x2000, kStkCreate)
      .Wait(3'000, 0, WaitKind::kJoin, child_self, 100'000, 0, kStkJoin)
      .End(200'000, 0);
  b.Thread(101)
      .Start(2'500, 1, 1, 0x2000, 0, child_self)
      .Wait(5'000, 1, WaitKind::kSyscall, 3, 50'000, 1, kStkRead)
      .End(90'000, 1);
  b.TraceEnd(200'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  auto creates = With(t, "GoCreate", "g", 101);
  REQUIRE(creates.size() == 1);
  CHECK(creates[0]->g == 100);  // created by main, not by g0
  auto unblocks = With(t, "GoUnblock", "g", 100);
  REQUIRE(unblocks.size() == 1);
  CHECK(unblocks[0]->g == 101);  // the exiting thread wakes its joiner
  CHECK(t.Count("GoBlock") == 1);
  CHECK(t.Count("GoEnd") == 2);
  CHECK(k.run.stats.model.threads == 2);
  PprofResult sched = Pprof(k.run.trace, "sched");
  REQUIRE(sched.ok);
  CHECK(sched.traces.find("pthread_create") != std::string::npos);
}

TEST_CASE("threads alive at start are in the snapshot; threads running at the end are descheduled",
          "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Wait(5'000, 0, WaitKind::kSyscall, 1, 100, 0, kStkRead);
  b.Thread(150).Start(1000, 1, 0, 0, log::kThreadExisted);  // start routine unknown
  // A stream whose first chunk was lost: no ThreadStart at all.
  b.Thread(160).Wait(7'000, 1, WaitKind::kSyscall, 1, 100, 1, kStkRead);
  b.Thread(170).Start(1000, 0, 0, 0x2000, log::kThreadExisted)
      .OpenWait(8'000, 0, WaitKind::kMutex, kMutex, kStkMutexLock);  // blocked at exit
  b.TraceEnd(50'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  // Gomaxprocs first (Go 1.21+ reads the start stacks only of goroutines
  // created after it), then the snapshot: GoCreate from g0 for every thread.
  REQUIRE(t.events.size() > 5);
  CHECK(t.events[0].name == "Gomaxprocs");
  CHECK(t.events[0].args.at("procs") == 2);
  std::set<uint64_t> snap;
  size_t i = 1;
  for (; i < t.events.size() && t.events[i].name == "GoCreate"; ++i) {
    CHECK(t.events[i].g == 0);
    snap.insert(t.events[i].args.at("g"));
  }
  CHECK(snap == std::set<uint64_t>{100, 150, 160, 170});
  // Repeated with the same value after the snapshot: Go 1.21+'s converter
  // drops the first one (the end of the snapshot) and needs another for its MMU.
  REQUIRE(i < t.events.size());
  CHECK(t.events[i].name == "Gomaxprocs");
  CHECK(t.events[i].args.at("procs") == 2);
  // 170 preempted 100 on CPU 0, 100 took it back at 5'000, 170 took it
  // again to block (open wait: it stays blocked); 160 displaced 150 on CPU 1
  // and is the only thread still running at the end: one GoSched.
  auto sched = t.Find("GoSched");
  REQUIRE(sched.size() == 1);
  CHECK(sched[0]->g == 160);
  auto last170 = ByG(t, 170);
  REQUIRE(!last170.empty());
  CHECK(last170.back()->name == "GoBlockSync");
  CHECK(t.Count("ProcStart") == t.Count("ProcStop"));
  CHECK(t.events.back().name == "ProcStop");
}

TEST_CASE("equal timestamps everywhere still give a valid trace", "[model]") {
  TempDir dir;
  LogBuilder b(2);
  DefineStandardStacks(b);
  std::vector<ThreadLog*> th;
  for (uint32_t i = 0; i < 4; ++i) th.push_back(&b.Thread(801 + i).Start(5000, i % 2, 0, 0x2000, log::kThreadExisted));
  for (int r = 0; r < 5; ++r) {
    for (uint32_t i = 0; i < 4; ++i) {
      th[i]->Wait(5000, i % 2, WaitKind::kMutex, kMutex, 0, (i + 1) % 2, kStkMutexLock);
      th[i]->Release(5000, (i + 1) % 2, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
      th[i]->Wait(5000, (i + 1) % 2, WaitKind::kSyscall, 1, 0, i % 2, kStkRead);
    }
  }
  b.TraceEnd(5000);
  // Every event at one tick: /mmuPlot cannot plot a zero-length trace, which
  // is Go's limitation (GO_TRACE_FORMAT.md §2.9); the parse must succeed.
  Checked k = EncodeAndValidate(b, dir, {}, /*web=*/false);
  CHECK(k.parsed.Count("GoBlockSync") == 20);
}

TEST_CASE("a release recorded after the waiter resumed still wakes it (clock skew)", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  auto& w = b.Thread(901).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  auto& r = b.Thread(902).Start(1000, 1, 0, 0x2000, log::kThreadExisted);
  w.Wait(10'000, 0, WaitKind::kMutex, kMutex, 10'000, 0, kStkMutexLock);  // resumes at 20'000
  r.Wait(12'000, 1, WaitKind::kSyscall, 1, 100, 1, kStkRead)             // r is running
      .Release(20'050, 1, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);  // 50 ns late
  // Far beyond the tolerance: not a waker.
  w.Wait(30'000, 0, WaitKind::kMutex, kMutex, 1'000, 0, kStkMutexLock);   // resumes at 31'000
  r.Release(5'000'000, 1, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  b.TraceEnd(6'000'000);
  Checked k = EncodeAndValidate(b, dir);
  auto unblocks = With(k.parsed, "GoUnblock", "g", 901);
  REQUIRE(unblocks.size() == 2);
  CHECK(unblocks[0]->g == 902);
  CHECK(unblocks[1]->g == 0);
  CHECK(k.run.stats.model.wakeups_skewed == 1);
}

TEST_CASE("a stream whose clock runs backwards is clamped, not trusted", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(950)
      .Start(10'000, 0, 0, 0x2000, log::kThreadExisted)
      .Wait(9'000, 0, WaitKind::kSyscall, 1, 100'000, 1, kStkRead)  // before its start
      .Wait(50'000, 1, WaitKind::kSleep, 0, 10, 1, kStkSleep)        // inside the last wait
      .Release(40'000, 1, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  b.TraceEnd(1'000);  // before everything
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.parsed.Count("GoSysBlock") == 1);
  CHECK(k.parsed.Count("GoSleep") == 1);
}

TEST_CASE("100 threads on 2 CPUs", "[model]") {
  TempDir dir;
  LogBuilder b(2);
  DefineStandardStacks(b);
  auto& main = b.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain);
  constexpr int kThreads = 100;
  std::vector<ThreadLog*> th;
  for (int i = 0; i < kThreads; ++i) {
    const Tick t0 = 2'000 + i * 1'000;
    main.Create(t0, 0, i + 1, 0x2000, kStkCreate);
    th.push_back(&b.Thread(1000 + i).Start(t0 + 500, i % 2, i + 1, 0x2000, 0, 0x50000 + i));
  }
  for (int i = 0; i < kThreads; ++i) {
    const Tick base = 200'000 + i * 5'000;
    th[i]->Wait(base, i % 2, WaitKind::kMutex, kMutex, 3'000, (i + 1) % 2, kStkMutexLock)
        .Release(base + 3'500, (i + 1) % 2, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock)
        .Wait(base + 4'000, (i + 1) % 2, WaitKind::kSyscall, 2, 30'000, i % 2, kStkRead)
        .End(base + 40'000, i % 2);
  }
  for (int i = 0; i < kThreads; ++i)
    main.Wait(800'000 + i * 10, 0, WaitKind::kJoin, 0x50000 + i, 5, 0, kStkJoin);
  b.TraceEnd(1'000'000);
  Checked k = EncodeAndValidate(b, dir);
  const ParsedTrace& t = k.parsed;
  CHECK(t.Count("GoCreate") == kThreads + 1);
  CHECK(t.Count("GoEnd") == kThreads);
  CHECK(t.Count("GoSysBlock") == kThreads);
  for (const GoEvent* e : t.Find("GoStart")) CHECK(e->p < 2);
  CHECK(k.run.stats.model.threads == kThreads + 1);
}

TEST_CASE("inlined frames and distinct PCs reach the profiles", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  auto& w = b.Thread(1101).Start(1000, 0, 0, 0xd000, log::kThreadExisted);
  auto& r = b.Thread(1102).Start(1000, 1, 0, 0xc000, log::kThreadExisted);
  w.Wait(10'000, 0, WaitKind::kMutex, kMutex, 10'000, 0, kStkInlined);
  r.Release(15'000, 1, WaitKind::kMutex, kMutex, 1, kStkMutexUnlock);
  b.TraceEnd(30'000);
  Checked k = EncodeAndValidate(b, dir);
  PprofResult sync = Pprof(k.run.trace, "sync");
  INFO(sync.error);
  REQUIRE(sync.ok);
  // 0xd111 - 1 lies in Queue::Pop (inlined) inside consumer: both frames.
  CHECK(sync.raw.find("Queue::Pop /src/app/queue.h") != std::string::npos);
  CHECK(sync.raw.find("consumer /src/app/queue.cc") != std::string::npos);
}

TEST_CASE("deep stacks are cut to 128 frames and 2048 bytes", "[model]") {
  TempDir dir;
  LogBuilder b;
  std::vector<uint64_t> deep;
  for (int i = 0; i < 128; ++i) deep.push_back(0x7fff'0000'0000 + i * 0x1000);  // unknown PCs
  b.Stack(1, deep);
  auto& w = b.Thread(1201).Start(1000, 0, 0, 0x2000, log::kThreadExisted);
  w.Wait(10'000, 0, WaitKind::kSleep, 0, 1000, 0, 1);
  b.TraceEnd(20'000);
  Checked k = EncodeAndValidate(b, dir);
  CHECK(k.run.stats.stacks.truncated == 0);  // 128 short frames fit
  CHECK(k.parsed.Count("GoSleep") == 1);
}

TEST_CASE("a reused thread id becomes a new goroutine", "[model]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  b.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Create(2000, 0, 1, 0x2000, kStkCreate)
      .Create(20'000, 0, 2, 0x2000, kStkCreate);
  b.Thread(300).Start(3000, 1, 1, 0x2000).End(10'000, 1);
  b.Thread(300).Start(21'000, 1, 2, 0x2000).End(30'000, 1);  // the kernel reused tid 300
  b.TraceEnd(40'000);
  Checked k = EncodeAndValidate(b, dir);
  auto creates = k.parsed.Find("GoCreate");
  std::set<uint64_t> ids;
  for (auto* e : creates) ids.insert(e->args.at("g"));
  CHECK(ids.size() == 3);
  CHECK(ids.count(300) == 1);
  CHECK(k.parsed.Count("GoEnd") == 2);
}

TEST_CASE("thread names name the threads whose start routine has none, in Go 1.19 and 1.23",
          "[model][names]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  constexpr uint64_t kStripped = 0xf0000;  // no function of the fake symbolizer's
  auto& main_thread = b.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain);
  for (uint64_t id = 1; id <= 6; ++id)
    main_thread.Create(1000 + id * 1000, 0, id, id <= 2 ? 0x2000 : kStripped, kStkCreate);
  main_thread.Name(90'000, 0, 0, "app").End(100'000, 0);
  // A named routine keeps its name whatever the threads call themselves.
  b.Thread(101).Start(2'500, 1, 1, 0x2000).Name(9'000, 1, 0, "w-1").End(10'000, 1);
  b.Thread(102).Start(3'500, 1, 2, 0x2000).Name(19'000, 1, 0, "w-2").End(20'000, 1);
  // Unnamed (stripped) routines: by the thread's name, named from its own
  // stream as it ends or from the process stream (threads alive at the end).
  b.Thread(103).Start(4'500, 1, 3, kStripped).Name(29'000, 1, 0, "io-pool").End(30'000, 1);
  auto& t104 = b.Thread(104).Start(5'500, 1, 4, kStripped);
  t104.Wait(40'000, 1, WaitKind::kSyscall, 3, 50'000, 1, kStkRead);
  b.Thread(105).Start(6'500, 0, 5, kStripped).Name(39'000, 0, 0, "gc").End(40'000, 0);
  b.Thread(106).Start(7'500, 0, 6, kStripped).End(45'000, 0);  // never named
  // Unknown routine (a thread that existed before tracing), named late.
  auto& t107 = b.Thread(107).Start(1000, 1, 0, 0, log::kThreadExisted);
  b.Process().Name(99'000, 0, t104.serial(), "io-pool").Name(99'000, 0, t107.serial(), "jvm-gc");
  b.TraceEnd(100'000);
  Checked k = EncodeAndValidate(b, dir);

  const std::map<std::string, uint64_t> want = {
      {"main", 1}, {"worker", 2}, {"io-pool", 2}, {"gc", 1}, {"0xf0000", 1}, {"jvm-gc", 1}};
  CheckGoroutineGroups(k.run.trace, want);
}

// Threads of a stripped program all go by its name (python3's main thread
// and its workers): each routine is a group, named by its address; the main
// thread's is main, which it said as "python3 [python3.11+0x627ca0]".
TEST_CASE("a stripped program's main thread is [main] beside workers of its name",
          "[model][names]") {
  TempDir dir;
  LogBuilder b;
  DefineStandardStacks(b);
  constexpr uint64_t kStrippedMain = 0xf0000, kStrippedWorker = 0xf1000;  // no names
  auto& main_thread =
      b.Thread(100).Start(1000, 0, 0, kStrippedMain, log::kThreadExisted | log::kThreadMain);
  main_thread.Create(2000, 0, 1, kStrippedWorker, kStkCreate);
  b.Thread(101).Start(2'500, 1, 1, kStrippedWorker).Name(9'000, 1, 0, "app").End(10'000, 1);
  main_thread.Name(90'000, 0, 0, "app").End(100'000, 0);
  b.TraceEnd(100'000);
  Checked k = EncodeAndValidate(b, dir);
  CheckGoroutineGroups(k.run.trace, {{"app [main]", 1}, {"app [0xf1000]", 1}});
}

TEST_CASE("several logs merge into one trace", "[model]") {
  TempDir dir;
  LogBuilder b1(2, 1000, 100), b2(2, 1500, 200);
  DefineStandardStacks(b1);
  DefineStandardStacks(b2);
  b1.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Wait(2000, 0, WaitKind::kSleep, 0, 5000, 0, kStkSleep);
  b2.Thread(200).Start(1500, 1, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Wait(2500, 1, WaitKind::kSleep, 0, 5000, 1, kStkSleep);
  b1.TraceEnd(10'000);
  b2.TraceEnd(10'000);
  b1.Write(dir.File("a.gtlog"));
  b2.Write(dir.File("b.gtlog"));
  EncodeRun run = EncodeForTest({dir.File("a.gtlog"), dir.File("b.gtlog")}, dir.File("ab.trace"));
  INFO(run.status.message());
  REQUIRE(run.status.ok());
  ParsedTrace t = ParseWithGo(run.trace);
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 2);
  CHECK(WebCheck(run.trace).empty());
}

// Random, adversarial logs: overlapping and equal times, random CPUs, waits
// that end on other CPUs, releases of shared objects, creations, ends, open
// waits, missing starts. Whatever the input, Go must accept the output.
TEST_CASE("random logs always encode to traces Go accepts", "[model][fuzz]") {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    DYNAMIC_SECTION("seed " << seed) {
      std::mt19937_64 rng(seed);
      auto rnd = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
      TempDir dir;
      const uint32_t ncpus = 1 + static_cast<uint32_t>(rnd(4));
      LogBuilder b(ncpus, 1000);
      b.set_chunk_bytes(64 + rnd(400));
      DefineStandardStacks(b);
      const int nthreads = 2 + static_cast<int>(rnd(12));
      const uint64_t objs[] = {kMutex, kCond1, kCond2, 0x10000 + 1001, 0};
      for (int i = 0; i < nthreads; ++i) {
        auto& t = b.Thread(1000 + i);
        Tick ts = 1000 + rnd(5000);
        if (rnd(5) != 0) {
          const uint64_t flags = i == 0 ? log::kThreadMain | log::kThreadExisted
                                        : (rnd(3) == 0 ? log::kThreadExisted : 0);
          t.Start(ts, static_cast<uint32_t>(rnd(ncpus + 1)), flags ? 0 : 1 + rnd(nthreads),
                  0x2000 + rnd(64), flags);
        }
        const int n = static_cast<int>(rnd(60));
        for (int j = 0; j < n; ++j) {
          ts += rnd(3) == 0 ? 0 : rnd(20'000);
          const auto cpu = static_cast<uint32_t>(rnd(ncpus + 1));  // sometimes out of range
          switch (rnd(8)) {
            case 0: case 1: {
              const auto kind = static_cast<WaitKind>(1 + rnd(log::kMaxWaitKind));
              const Tick d = rnd(2) ? rnd(100) : rnd(200'000);
              t.Wait(ts, cpu, kind, objs[rnd(5)], d, static_cast<uint32_t>(rnd(ncpus)), 1 + rnd(11));
              ts += d;
              break;
            }
            case 2: case 3:
              t.Release(ts, cpu, WaitKind::kMutex, objs[rnd(5)], rnd(3), 1 + rnd(11));
              break;
            case 4:
              t.Create(ts, cpu, 1 + rnd(nthreads + 3), 0x2000 + rnd(64), kStkCreate);
              break;
            case 5:
              t.Heap(ts, cpu, rnd(1 << 30));
              break;
            case 6:
              if (rnd(4) == 0) t.OpenWait(ts, cpu, WaitKind::kCond, objs[rnd(5)], kStkCondWait);
              break;
            default:
              if (rnd(10) == 0) t.End(ts, cpu);
              break;
          }
        }
      }
      // Half of the logs are complete; the others were cut short (no end
      // record) and need lenient mode, as after a crash.
      const bool complete = rnd(2) == 0;
      if (complete) b.TraceEnd(1000 + rnd(2'000'000));
      Checked k = EncodeAndValidate(b, dir, {}, /*web=*/seed % 4 == 0, /*strict=*/complete);
      // The snapshot's, repeated for Go 1.21+ (Replay::Snapshot), and one
      // more where the end record comes after the last event: the trace
      // lasts until then.
      CHECK(GomaxprocsAsExpected(k.parsed));
    }
  }
}

}  // namespace
}  // namespace gotrace::testing
