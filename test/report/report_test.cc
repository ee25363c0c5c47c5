// SPDX-License-Identifier: Apache-2.0
//===-- test/report/report_test.cc - gotrace report on hand-written traces -===//
//
// A small trace written with the encoder's own GoTraceWriter, whose thread
// states are known to the nanosecond, checks the reader (against Go's parser
// too), the analysis, the gates and the command line; a fuzz loop feeds the
// reader damaged copies of it.
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <tuple>

#include "encoder/go_trace_writer.h"
#include "encoder/report/gates.h"
#include "encoder/report/pprof.h"
#include "encoder/report/report.h"
#include "encoder/report/trace_reader.h"
#include "test/support/go_oracle.h"
#include "test/support/log_builder.h"
#include "test/support/subprocess.h"

namespace gotrace::testing {
namespace {

using report::Report;

std::vector<uint8_t> SmallTrace(bool with_meta) {
  MemorySink sink;
  GoTraceWriter w(&sink, 2, 1000000000);
  auto frame = [&](uint64_t pc, const char* fn, const char* file, uint64_t line) {
    return GoFrame{pc, w.String(fn), w.String(file), line};
  };
  auto stack = [&](uint64_t id, std::vector<GoFrame> f) { w.Stack(id, f); };
  stack(1, {frame(0x1000, "main", "/src/app.c", 10)});
  stack(2, {frame(0x2000, "worker", "/src/app.c", 20)});
  stack(3, {frame(0x3000, "take_lock", "/src/app.c", 33), frame(0x2010, "worker", "/src/app.c", 21)});
  stack(4, {frame(0x4000, "do_read", "/src/io.c", 44)});
  stack(5, {frame(0x5000, "nap", "/src/app.c", 55)});
  stack(6, {frame(0x6000, "wait_all", "/src/app.c", 66)});
  if (with_meta) {
    w.String("gotrace-meta:v1 pid=42 sched=kernel cpu_hz=0 lost=3 dropped=0 cmd=./app%20-x");
    w.String("gotrace-kinds:v1 3=mutex 6=join unknown=foo");
    w.String("gotrace-cpu:v1 10=123");
  }
  // g10 (main) and g11 (worker); see the expected intervals in the tests.
  w.Event(0, go::kEvGoCreate, 0, {10, 1, 0});
  w.Event(0, go::kEvGoCreate, 0, {11, 2, 0});
  w.Event(0, go::kEvGoStart, 10, {10, 1});
  w.Event(0, go::kEvGoBlockSync, 100, {3});
  w.Event(1, go::kEvGoStart, 110, {11, 1});
  w.Event(1, go::kEvGoUnblock, 200, {10, 2, 0});
  w.Event(1, go::kEvGoSysCall, 250, {4});
  w.Event(1, go::kEvGoSysBlock, 260, {});
  w.Event(0, go::kEvGoStart, 300, {10, 3});
  w.Event(0, go::kEvGoSleep, 400, {5});
  w.Event(1, go::kEvGoSysExit, 500, {11, 2, 0});
  w.Event(1, go::kEvGoStart, 520, {11, 3});
  w.Event(1, go::kEvHeapAlloc, 600, {1000});
  w.Event(1, go::kEvHeapAlloc, 610, {500});
  w.Event(0, go::kEvGoUnblock, 700, {10, 4, 0});
  w.Event(1, go::kEvGoEnd, 800, {});
  w.Event(0, go::kEvGoStart, 900, {10, 5});
  w.Event(0, go::kEvGoBlock, 1000, {6});
  w.Event(1, go::kEvHeapAlloc, 1200, {800});
  REQUIRE(w.Finish(1200).ok());
  return sink.bytes;
}

std::string WriteFile(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& b) {
  const std::string p = dir.File(name);
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                            static_cast<std::streamsize>(b.size()));
  return p;
}

Report Analyzed(const std::vector<uint8_t>& bytes) {
  report::Trace t;
  Status st = report::ParseTrace(bytes.data(), bytes.size(), &t);
  INFO(st.message());
  REQUIRE(st.ok());
  return report::Analyze(t, "small.trace");
}

TEST_CASE("thread states, kinds, sites, wakers and heap of a known trace", "[report]") {
  const Report r = Analyzed(SmallTrace(true));
  REQUIRE(r.threads.size() == 2);
  CHECK(r.events == 19);
  CHECK(r.duration_ns == 1200);
  REQUIRE(r.processes.size() == 1);
  CHECK(r.processes[0].pid == "42");
  CHECK(r.processes[0].cmd == "./app -x");
  CHECK(r.processes[0].sched == "kernel");
  CHECK(r.processes[0].lost == "3");

  const report::ThreadReport& m = r.threads[0];
  CHECK(m.goid == 10);
  CHECK(m.name == "main");
  CHECK(m.start_ns == 0);
  CHECK(m.end_ns == 1200);  // alive at the end: its life runs to the end of the trace
  CHECK_FALSE(m.ended);
  CHECK(m.cpu_ns == 123);
  CHECK(m.running.ns == 290);
  CHECK(m.running.count == 3);
  CHECK(m.runnable.ns == 310);
  CHECK(m.runnable.count == 3);
  REQUIRE(m.blocked.size() == 3);
  CHECK(m.blocked.at("mutex").ns == 100);  // from gotrace-kinds, not "sync"
  CHECK(m.blocked.at("sleep").ns == 300);  // no kinds entry: the event type
  CHECK(m.blocked.at("join").ns == 200);   // open at the end: charged to the end
  CHECK(m.blocked.at("join").count == 1);

  const report::ThreadReport& wk = r.threads[1];
  CHECK(wk.goid == 11);
  CHECK(wk.name == "worker");
  CHECK(wk.ended);
  CHECK(wk.life() == 800);
  CHECK(wk.cpu_ns == -1);
  CHECK(wk.running.ns == 430);
  CHECK(wk.running.count == 2);
  CHECK(wk.runnable.ns == 130);
  REQUIRE(wk.blocked.size() == 1);
  CHECK(wk.blocked.at("syscall").ns == 240);  // GoSysBlock..GoSysExit

  REQUIRE(r.sites.size() == 4);
  CHECK(r.sites[0].kind == "sleep");
  CHECK(r.sites[0].total_ns == 300);
  CHECK(r.sites[1].kind == "syscall");
  CHECK(r.sites[1].stk == 4);  // the stack of the GoSysCall before GoSysBlock
  REQUIRE(r.sites[1].frames.size() == 1);
  CHECK(r.sites[1].frames[0].func == "do_read");
  CHECK(r.sites[1].frames[0].file == "/src/io.c");
  CHECK(r.sites[1].frames[0].line == 44);
  CHECK(r.sites[2].kind == "join");
  CHECK(r.sites[3].kind == "mutex");
  CHECK(r.sites[3].frames.size() == 2);

  REQUIRE(r.wakers.size() == 1);  // g0's wakeups are not pairs
  CHECK(r.wakers[0].waker == 11);
  CHECK(r.wakers[0].wakee == 10);
  CHECK(r.wakers[0].count == 1);
  CHECK(r.wakers[0].ns == 100);

  CHECK(r.has_heap);
  CHECK(r.heap_peak == 1000);
  CHECK(r.heap_final == 800);
  CHECK(r.heap.size() == 3);
}

// Threads named after a shared routine (python3's, all "python3
// [python3.11+0x6543a0]") are told apart by their tids alone: the text
// report's waker lines cut the names, never the tids, nor the line's counts.
TEST_CASE("text report: long thread names keep their tids and the counts in waker lines",
          "[report]") {
  Report r = Analyzed(SmallTrace(true));
  REQUIRE(r.threads.size() == 2);
  r.threads[0].name = "python3 [python3.11+0x6543a0] worker of the main pool";
  r.threads[1].name = "python3 [python3.11+0x6543a0] worker of the main pool";
  r.wakers[0].count = 1234567;
  r.wakers[0].ns = 3'100'000;
  const std::string text = report::FormatText({r}, 10);
  const size_t at = text.find("Top wakers");
  REQUIRE(at != std::string::npos);
  const std::string line = text.substr(
      text.find('\n', at) + 1, text.find('\n', text.find('\n', at) + 1) - text.find('\n', at) - 1);
  INFO(line);
  CHECK(line.find("(11) -> ") != std::string::npos);
  CHECK(line.find("(10): 1234567, 3.1 ms") != std::string::npos);
  CHECK(line.find("python3 [python3.11") != std::string::npos);
}

// Process 42: its main thread runs and waits once for a lock (100 ns); two
// pool threads run for 10 ns and wait on their condition variable for the
// rest of the trace (1.1 us in all), the first after a short wait at
// another site (a GC safepoint's, 10 ns: work, not idleness).
std::vector<uint8_t> PoolTrace() {
  MemorySink sink;
  GoTraceWriter w(&sink, 2, 1000000000);
  auto frame = [&](uint64_t pc, const char* fn) {
    return GoFrame{pc, w.String(fn), w.String("/src/p.c"), 1};
  };
  w.Stack(1, std::vector<GoFrame>{frame(0x1000, "main")});
  w.Stack(2, std::vector<GoFrame>{frame(0x2000, "pool_main")});
  w.Stack(3, std::vector<GoFrame>{frame(0x3000, "take_lock")});
  w.Stack(7, std::vector<GoFrame>{frame(0x7000, "pool_wait")});
  w.Stack(8, std::vector<GoFrame>{frame(0x8000, "safepoint_wait")});
  w.String("gotrace-meta:v1 pid=42 sched=kernel cpu_hz=0 lost=0 dropped=0 cmd=./pool");
  w.String("gotrace-kinds:v1 3=mutex 7=cond 8=cond");
  w.Event(0, go::kEvGoCreate, 0, {42, 1, 0});
  w.Event(0, go::kEvGoCreate, 0, {43, 2, 0});
  w.Event(0, go::kEvGoCreate, 0, {44, 2, 0});
  w.Event(0, go::kEvGoStart, 1, {42, 1});
  w.Event(1, go::kEvGoStart, 10, {43, 1});
  w.Event(1, go::kEvGoBlockCond, 20, {8});
  w.Event(0, go::kEvGoUnblock, 30, {43, 2, 0});
  w.Event(1, go::kEvGoStart, 31, {43, 3});
  w.Event(1, go::kEvGoBlockCond, 40, {7});
  w.Event(1, go::kEvGoStart, 41, {44, 1});
  w.Event(1, go::kEvGoBlockCond, 50, {7});
  w.Event(0, go::kEvGoBlockSync, 500, {3});
  w.Event(1, go::kEvGoUnblock, 600, {42, 2, 0});
  w.Event(0, go::kEvGoStart, 601, {42, 3});
  REQUIRE(w.Finish(1000).ok());
  return sink.bytes;
}

TEST_CASE("the waits of threads that spent their lives waiting come after the others, apart",
          "[report]") {
  const std::vector<uint8_t> bytes = PoolTrace();
  const Report r = Analyzed(bytes);
  REQUIRE(r.threads.size() == 3);
  CHECK_FALSE(report::IdleThread(r, *r.Thread(42)));  // the process's main thread never is
  CHECK(report::IdleThread(r, *r.Thread(43)));
  CHECK(report::IdleThread(r, *r.Thread(44)));
  REQUIRE(r.sites.size() == 3);
  CHECK(r.sites[0].frames.at(0).func == "take_lock");  // 100 ns, first
  CHECK_FALSE(r.sites[0].idle);
  CHECK(r.sites[1].frames.at(0).func == "safepoint_wait");  // idle threads, but not where they idle
  CHECK_FALSE(r.sites[1].idle);
  CHECK(r.sites[2].frames.at(0).func == "pool_wait");  // 1.1 us of two idle threads
  CHECK(r.sites[2].idle);
  CHECK(r.sites[2].total_ns == 1112);

  const std::string text = report::FormatText({r}, 10);
  const size_t top = text.find("Top blocking sites"), idle = text.find("Idle waits");
  REQUIRE(top != std::string::npos);
  REQUIRE(idle != std::string::npos);
  CHECK(text.find("take_lock") > top);
  CHECK(text.find("take_lock") < idle);
  CHECK(text.find("pool_wait") > idle);
  CHECK_THAT(report::FormatMarkdown({r}, 10), Catch::Contains("**Idle waits"));
  {  // The page draws them apart too.
    report::Trace t;
    REQUIRE(report::ParseTrace(bytes.data(), bytes.size(), &t).ok());
    const std::string html = report::FormatHtml({report::Analyze(t, "pool.trace", true)}, 10);
    CHECK_THAT(html, Catch::Contains("\"sites\":[{\"kind\":\"mutex\",\"total\":100,"));
    CHECK_THAT(html, Catch::Contains("\"idle\":[{\"kind\":\"cond\",\"total\":1112,"));
  }
  CHECK_THAT(report::FormatJson({r}, 10),
             Catch::Contains("\"total_ns\":1112,\"count\":2,\"max_ns\":561,\"idle\":true"));
  // A gate on the top site is about waits that hold work up.
  report::Gate g;
  REQUIRE(report::ParseGate("cond.top.total > 100ns", &g).ok());
  std::string actual;
  CHECK_FALSE(report::GateHolds(g, {r}, &actual));
  REQUIRE(report::ParseGate("top.total == 100ns", &g).ok());
  CHECK(report::GateHolds(g, {r}, &actual));
}

TEST_CASE("without gotrace strings the kinds come from the event types", "[report]") {
  const Report r = Analyzed(SmallTrace(false));
  CHECK(r.processes.empty());
  const report::ThreadReport& m = r.threads[0];
  CHECK(m.blocked.count("sync") == 1);
  CHECK(m.blocked.count("mutex") == 0);
  CHECK(m.blocked.count("block") == 1);  // GoBlock of a trace not written by gotrace
  CHECK(m.cpu_ns == -1);
}

// Our merged order against `go tool trace -d`: the same events, with the same
// times and goroutines (ties may be ordered differently, so compare sorted).
void SameEventsAsGo(const std::string& path) {
  report::Trace t;
  Status st = report::ReadTrace(path, &t);
  INFO(st.message());
  REQUIRE(st.ok());
  ParsedTrace go = ParseWithGo(path);
  INFO(go.error);
  REQUIRE(go.ok);
  using Key = std::tuple<int64_t, std::string, uint64_t>;
  std::vector<Key> ours, theirs;
  for (const auto& e : t.events) ours.emplace_back(e.ts, report::EventName(e.type), e.g);
  for (const auto& e : go.events) theirs.emplace_back(e.ts, e.name, e.g);
  REQUIRE(ours.size() == theirs.size());
  // Times must be non-decreasing in our order, as in Go's.
  for (size_t i = 1; i < t.events.size(); ++i) REQUIRE(t.events[i - 1].ts <= t.events[i].ts);
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  for (size_t i = 0; i < ours.size(); ++i) {
    INFO("event " << i);
    REQUIRE(ours[i] == theirs[i]);
  }
}

TEST_CASE("the reader merges a hand-written trace as Go 1.19 does", "[report][oracle]") {
  TempDir dir;
  SameEventsAsGo(WriteFile(dir, "small.trace", SmallTrace(true)));
}

TEST_CASE("damaged traces end in an error line, never a crash or a hang", "[report]") {
  const std::vector<uint8_t> good = SmallTrace(true);
  std::mt19937_64 rng(15);
  size_t refused = 0, read = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> b = good;
    if (i % 3 != 1) b.resize(rng() % (b.size() + 1));
    if (i % 3 != 0) {
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips && !b.empty(); ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    report::Trace t;
    Status st = report::ParseTrace(b.data(), b.size(), &t);
    if (!st.ok()) {
      ++refused;
      CHECK_FALSE(st.message().empty());
      CHECK(st.message().find('\n') == std::string::npos);
      continue;
    }
    ++read;
    const Report r = report::Analyze(t, "x");
    for (const auto& th : r.threads) CHECK(th.life() >= 0);
    CHECK_FALSE(report::FormatText({r}, 10).empty());
    CHECK_FALSE(report::FormatJson({r}, 10).empty());
  }
  INFO(refused << " refused, " << read << " read");
  CHECK(refused > 1000);
  CHECK(read > 10);
}

TEST_CASE("gates parse, hold and fail as written", "[report][gates]") {
  const std::vector<Report> rs = {Analyzed(SmallTrace(true))};
  // All threads: life 2000 ns; mutex 100, running 720, runnable 440, blocked 840.
  auto holds = [&](const std::string& e) {
    report::Gate g;
    Status st = report::ParseGate(e, &g);
    INFO(e << ": " << st.message());
    REQUIRE(st.ok());
    std::string actual;
    return report::GateHolds(g, rs, &actual);
  };
  CHECK_FALSE(holds("blocked.mutex > 5%"));
  CHECK(holds("blocked.mutex >= 5%"));
  CHECK(holds("blocked.sync >= 5%"));  // the lock-like group
  CHECK(holds("blocked.mutex == 100ns"));
  CHECK(holds("blocked.mutex.count == 1"));
  CHECK(holds("runnable > 21.9%"));
  CHECK_FALSE(holds("runnable > 30%"));
  CHECK(holds("running == 36%"));
  CHECK(holds("blocked > 41%"));
  CHECK(holds("sync.top.total > 50ns"));
  CHECK_FALSE(holds("sync.top.total > 1us"));
  CHECK(holds("top.total == 300ns"));
  CHECK(holds("sleep.top.total>=300ns"));
  CHECK(holds("heap.peak > 900B"));
  CHECK_FALSE(holds("heap.peak > 1KB"));
  CHECK(holds("heap.final == 800"));
  CHECK(holds("threads == 2"));
  CHECK(holds("lost > 2"));
  CHECK_FALSE(holds("dropped != 0"));

  for (const char* bad : {"blocked.foo > 1%", "running >", "running 5%", "running > 5 parsecs",
                          "heap.peak > 5%", "threads > 2ms", "> 5%", "sync.top.total > 5%",
                          "foo.top.total > 1ms", "running > -1%", "running > abc"}) {
    report::Gate g;
    Status st = report::ParseGate(bad, &g);
    INFO(bad);
    CHECK_FALSE(st.ok());
    CHECK_THAT(st.message(), Catch::Contains(bad));
  }
}

std::string Gotrace() { return std::string(GOTRACE_BUILD_DIR) + "/gotrace"; }

TEST_CASE("the command's formats, gates and exit status", "[report][cli]") {
  TempDir dir;
  const std::string trace = WriteFile(dir, "small.trace", SmallTrace(true));
  ProcResult text = RunProcess({Gotrace(), "report", trace});
  REQUIRE(text.Exited(0));
  CHECK_THAT(text.out, Catch::Contains("main (tid 10)"));
  CHECK_THAT(text.out, Catch::Contains("mutex 8.3% (1)"));
  CHECK_THAT(text.out, Catch::Contains("do_read  io.c:44"));
  CHECK_THAT(text.out, Catch::Contains("worker (11) -> main (10): 1"));
  CHECK_THAT(text.out, Catch::Contains("heap: peak 1000 B, final 800 B"));
  size_t start = 0;
  while (start < text.out.size()) {
    const size_t nl = text.out.find('\n', start);
    INFO(text.out.substr(start, nl - start));
    CHECK(nl - start <= 80);
    start = nl + 1;
  }
  ProcResult md = RunProcess({Gotrace(), "report", "--format", "markdown", trace});
  REQUIRE(md.Exited(0));
  CHECK_THAT(md.out, Catch::Contains("| main | 10 | 1.2 us | 24.2% (3) | 25.8% (3) |"));
  ProcResult js = RunProcess({Gotrace(), "report", "--format=json", trace});
  CHECK(js.Exited(2));  // only "--format json" is the syntax
  js = RunProcess({Gotrace(), "report", "--format", "json", "-o", dir.File("r.json"), trace});
  REQUIRE(js.Exited(0));
  std::ifstream in(dir.File("r.json"));
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(json, Catch::StartsWith("{\"version\":1,\"traces\":[{\"file\":"));
  CHECK_THAT(json, Catch::Contains("\"mutex\":{\"ns\":100,\"count\":1,\"pct\":8.333}"));
  CHECK_THAT(json, Catch::Contains("\"heap\":{\"peak\":1000,\"final\":800}"));
  CHECK_THAT(json, Catch::Contains("{\"func\":\"do_read\",\"file\":\"/src/io.c\",\"line\":44,"));

  ProcResult pass = RunProcess({Gotrace(), "report", "--fail-if", "blocked.mutex > 20%",
                                "--fail-if", "runnable > 30%", trace});
  CHECK(pass.Exited(0));
  CHECK(pass.err.empty());
  ProcResult fail = RunProcess({Gotrace(), "report", "--fail-if", "blocked.mutex > 20%",
                                "--fail-if", "sync.top.total > 50ns", trace});
  CHECK(fail.Exited(3));
  CHECK(fail.err == "gotrace: --fail-if 'sync.top.total > 50ns' holds: sync.top.total is 100 ns\n");
  ProcResult bad = RunProcess({Gotrace(), "report", "--fail-if", "blocked.foo > 20%", trace});
  CHECK(bad.Exited(2));
  CHECK_THAT(bad.err, Catch::StartsWith("gotrace: --fail-if 'blocked.foo > 20%': unknown kind 'foo'"));
  CHECK(bad.out.empty());
}

// CPUSample events as the encoder writes them (GO_TRACE_FORMAT.md §1.6):
// [ts, realTicks, p, g, stk]; g10 on stacks 3 and 5, g11 on stack 4.
std::vector<uint8_t> SampledTrace() {
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000000000);
  w.Stack(3, std::vector<GoFrame>{{0x3000, w.String("spin"), w.String("/src/cpu.c"), 7}});
  w.Stack(4, std::vector<GoFrame>{{0x4000, w.String("hash"), w.String("/src/cpu.c"), 9}});
  w.Stack(5, std::vector<GoFrame>{{0x5000, w.String("spin"), w.String("/src/cpu.c"), 8}});
  w.String("gotrace-meta:v1 pid=7 sched=kernel cpu_hz=1000 lost=0 dropped=0");
  w.Event(0, go::kEvGoCreate, 0, {10, 3, 0});
  w.Event(0, go::kEvGoCreate, 0, {11, 4, 0});
  w.Event(0, go::kEvGoStart, 10, {10, 1});
  for (uint64_t i = 0; i < 6; ++i) w.Event(0, go::kEvCPUSample, 20 + i, {20 + i, 0, 10, i % 3 ? 3u : 5u});
  w.Event(0, go::kEvGoSched, 100, {0});
  w.Event(0, go::kEvGoStart, 110, {11, 1});
  w.Event(0, go::kEvCPUSample, 120, {120, 0, 11, 4});
  w.Event(0, go::kEvCPUSample, 121, {121, 0, 11, 0});  // no stack: counted nowhere
  w.Event(0, go::kEvGoEnd, 200, {});
  REQUIRE(w.Finish(200).ok());
  return sink.bytes;
}

TEST_CASE("pprof --kind cpu: the CPU samples by stack, read by go tool pprof", "[report][pprof]") {
  TempDir dir;
  const std::string trace = WriteFile(dir, "cpu.trace", SampledTrace());
  report::Trace t;
  REQUIRE(report::ReadTrace(trace, &t).ok());
  report::Profile prof;
  REQUIRE(report::ComputeProfile(t, "cpu", &prof).ok());
  CHECK(prof.period == 1000000);  // 1000 Hz from gotrace-meta
  REQUIRE(prof.records.size() == 3);
  CHECK(prof.records[0].stk == 3);
  CHECK(prof.records[0].count == 4);
  CHECK(prof.records[1].count == 1);
  CHECK(prof.records[2].count == 2);
  CHECK(prof.total() == 7 * 1000000);

  const std::string out = dir.File("cpu.pb.gz");
  ProcResult p = RunProcess({Gotrace(), "pprof", "--kind", "cpu", trace, "-o", out});
  REQUIRE(p.Exited(0));
  std::vector<int64_t> totals;
  std::vector<std::string> funcs;
  REQUIRE(report::ReadPprofTotals(out, &totals, &funcs).ok());
  REQUIRE(totals.size() == 2);
  CHECK(totals[0] == 7);
  CHECK(totals[1] == 7000000);
  ProcResult top = RunProcess({GoBinary(), "tool", "pprof", "-top", out});
  INFO(top.err);
  REQUIRE(top.Exited(0));
  CHECK_THAT(top.out, Catch::Contains("Type: cpu"));
  CHECK_THAT(top.out, Catch::Contains("spin"));
  CHECK_THAT(top.out, Catch::Contains("Total samples = 7ms"));
  // The report says how many samples the trace holds, not only the rate
  // (a process that never opened the kernel's sampling had none).
  ProcResult rep = RunProcess({Gotrace(), "report", trace});
  REQUIRE(rep.Exited(0));
  CHECK_THAT(rep.out, Catch::Contains("CPU samples 1000 Hz (8 in the trace)"));

  // A trace without CPU samples: one line, exit 2, no file.
  const std::string none = WriteFile(dir, "none.trace", SmallTrace(true));
  ProcResult q = RunProcess({Gotrace(), "pprof", "--kind", "cpu", none, "-o", dir.File("n.pb.gz")});
  CHECK(q.Exited(2));
  CHECK_THAT(q.err, Catch::StartsWith("gotrace: " + none + ": has no CPU samples"));
  CHECK_THAT(q.err, Catch::Contains("sampling was off or unavailable"));  // its cpu_hz=0
  CHECK(std::count(q.err.begin(), q.err.end(), '\n') == 1);
  // Sampling on, and nothing ran for a period: said so, not "off".
  report::Trace sampled;
  REQUIRE(report::ReadTrace(none, &sampled).ok());
  for (auto& [id, str] : sampled.strings)
    if (str.rfind("gotrace-meta:v1 ", 0) == 0) str.replace(str.find("cpu_hz=0"), 8, "cpu_hz=100");
  const Status st = report::ComputeProfile(sampled, "cpu", &prof);
  CHECK_FALSE(st.ok());
  CHECK(st.message() ==
        "has no CPU samples: sampling was on (100 Hz, a sample per 10.0 ms of a thread's CPU "
        "time) and no thread used that much");
  ProcResult k = RunProcess({Gotrace(), "pprof", "--kind", "heap", none, "-o", dir.File("n.pb.gz")});
  CHECK(k.Exited(2));
  ProcResult bad = RunProcess({Gotrace(), "pprof", "--kind", "sync", dir.path(), "-o", dir.File("n.pb.gz")});
  CHECK(bad.Exited(2));
  CHECK_THAT(bad.err, Catch::StartsWith("gotrace: " + dir.path() + ": is a directory"));
}

TEST_CASE("pprof of the known trace: sync, syscall and sched records", "[report][pprof]") {
  report::Trace t;
  const std::vector<uint8_t> b = SmallTrace(true);
  REQUIRE(report::ParseTrace(b.data(), b.size(), &t).ok());
  report::Profile p;
  REQUIRE(report::ComputeProfile(t, "sync", &p).ok());
  REQUIRE(p.records.size() == 1);  // the GoBlockSync; GoBlock is not in Go's sync profile
  CHECK(p.records[0].stk == 3);
  CHECK(p.total() == 100);
  REQUIRE(report::ComputeProfile(t, "syscall", &p).ok());
  REQUIRE(p.records.size() == 1);
  CHECK(p.records[0].stk == 4);
  CHECK(p.total() == 250);  // GoSysCall at 250 .. GoSysExit at 500
  REQUIRE(report::ComputeProfile(t, "sched", &p).ok());
  CHECK(p.total() == 0);  // unblocks and creates here carry no stack
  REQUIRE(report::ComputeProfile(t, "net", &p).ok());
  CHECK(p.records.empty());
}

// 100 threads over 10 s, each switching state every few milliseconds: the
// size the page must stay usable with.
std::vector<uint8_t> WideTrace() {
  MemorySink sink;
  GoTraceWriter w(&sink, 4, 1000000000);
  w.Stack(1, std::vector<GoFrame>{{0x1000, w.String("worker"), w.String("/src/w.c"), 5}});
  w.Stack(2, std::vector<GoFrame>{{0x2000, w.String("lock"), w.String("/src/w.c"), 9},
                                  {0x1010, w.String("worker"), w.String("/src/w.c"), 6}});
  w.Stack(3, std::vector<GoFrame>{{0x3000, w.String("nap"), w.String("/src/w.c"), 12},
                                  {0x1020, w.String("worker"), w.String("/src/w.c"), 7}});
  w.String("gotrace-kinds:v1 2=mutex");
  std::vector<uint64_t> seq(101, 0);
  for (uint64_t g = 1; g <= 100; ++g) w.Event(0, go::kEvGoCreate, 0, {g, 1, 0});
  // Each P runs its 25 goroutines in turn; the one that ran last is woken by
  // g0 (no running goroutine: GoUnblock from a P with none is still ready).
  uint64_t heap = 1 << 20;
  for (uint64_t k = 0; k < 1600; ++k) {
    for (uint32_t p = 0; p < 4; ++p) {
      const uint64_t ts = 1000 + k * 6250000 + p * 1000;
      const uint64_t g = 1 + p * 25 + k % 25;
      w.Event(p, go::kEvGoStart, ts, {g, ++seq[g]});
      w.Event(p, k % 3 ? go::kEvGoBlockSync : go::kEvGoSleep, ts + 4000000, {k % 3 ? 2u : 3u});
      w.Event(p, go::kEvGoUnblock, ts + 4000100, {g, ++seq[g], 0});
      heap += (k % 7) * 1000;
      if (p == 0) w.Event(p, go::kEvHeapAlloc, ts + 4000200, {heap});
    }
  }
  REQUIRE(w.Finish(10000000000ull).ok());
  return sink.bytes;
}

std::string Chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

// Whether a PNG holds more than one flat colour: its inflated scanlines use
// many distinct byte values.
bool PngHasContent(const std::string& path, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (png.size() < 33 || png.compare(1, 3, "PNG") != 0) return *why = "not a PNG", false;
  std::string idat;
  for (size_t at = 8; at + 12 <= png.size();) {
    const auto u = [&](size_t i) { return static_cast<uint8_t>(png[i]); };
    const size_t len = (size_t{u(at)} << 24) | (size_t{u(at + 1)} << 16) | (size_t{u(at + 2)} << 8) | u(at + 3);
    if (png.compare(at + 4, 4, "IDAT") == 0 && at + 8 + len <= png.size()) idat += png.substr(at + 8, len);
    at += 12 + len;
  }
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return *why = "zlib", false;
  z.next_in = reinterpret_cast<Bytef*>(idat.data());
  z.avail_in = static_cast<uInt>(idat.size());
  std::vector<uint8_t> out(1 << 20);
  bool seen[256] = {};
  size_t total = 0;
  int rc;
  do {
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    rc = inflate(&z, Z_NO_FLUSH);
    const size_t n = out.size() - z.avail_out;
    for (size_t i = 0; i < n; ++i) seen[out[i]] = true;
    total += n;
  } while (rc == Z_OK);
  inflateEnd(&z);
  const size_t distinct = static_cast<size_t>(std::count(std::begin(seen), std::end(seen), true));
  *why = std::to_string(total) + " bytes of pixels, " + std::to_string(distinct) + " distinct values";
  return rc == Z_STREAM_END && distinct >= 16;
}

TEST_CASE("html page (--html) loads in headless chromium without errors and draws", "[report][html]") {
  const std::string chromium = Chromium();
  if (chromium.empty()) {
    // CTest shows this test as skipped (SKIP_RETURN_CODE 77), not passed.
    std::printf("SKIP: chromium is not installed (Debian package chromium)\n");
    std::fflush(stdout);
    std::_Exit(77);
  }
  TempDir dir;
  const std::string trace = WriteFile(dir, "wide.trace", WideTrace());
  const std::string page = dir.File("wide.html");
  ProcResult r = RunProcess({Gotrace(), "report", "--html", page, trace});
  INFO(r.err);
  REQUIRE(r.Exited(0));
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  // Self-contained: nothing is fetched.
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("http") == std::string::npos);
  // The data the page draws: 100 threads, the mutex site, the heap.
  CHECK_THAT(html, Catch::Contains("\"name\":\"worker\",\"tid\":100,"));
  CHECK_THAT(html, Catch::Contains("\"frames\":[\"lock w.c:9\",\"worker w.c:6\"]"));

  auto browser = [&](const std::string& profile, std::vector<std::string> extra) {
    std::vector<std::string> argv = {chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                     "--no-first-run", "--disable-background-networking",
                                     "--disable-component-update", "--disable-sync",
                                     "--user-data-dir=" + dir.File(profile),
                                     "--enable-logging=stderr"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("file://" + page);
    ProcOptions o;
    o.timeout_s = 90;
    o.env = {"HOME=" + dir.path()};
    return RunProcess(argv, o);
  };
  ProcResult dom = browser("profile-dom", {"--virtual-time-budget=5000", "--dump-dom"});
  INFO(dom.Describe() << "\n" << dom.err.substr(0, 3000));
  REQUIRE(dom.Exited(0));
  CHECK_THAT(dom.out, Catch::Contains("<title>gotrace report: OK</title>"));
  CHECK(dom.err.find("Uncaught") == std::string::npos);
  CHECK_THAT(dom.out, Catch::Contains("Top blocking sites"));

  const std::string shot = dir.File("wide.png");
  ProcResult sc = browser("profile-shot", {"--window-size=1400,2200", "--screenshot=" + shot});
  INFO(sc.Describe() << "\n" << sc.err.substr(0, 3000));
  REQUIRE(sc.Exited(0));
  CHECK(sc.err.find("Uncaught") == std::string::npos);
  std::string why;
  CHECK(PngHasContent(shot, &why));
  INFO(why);
  CHECK_FALSE(why.empty());
}

TEST_CASE("a run index stands for the traces it lists", "[report][cli]") {
  TempDir dir;
  WriteFile(dir, "app.trace", SmallTrace(true));
  mkdir(dir.File("sub").c_str(), 0700);
  WriteFile(dir, "sub/child.trace", SmallTrace(false));
  const std::string idx = dir.File("run.index.json");
  std::ofstream(idx) << R"({"version": 1, "future": {"x": [1, 2.5e3, null]},
    "processes": [
      {"pid": 42, "ppid": 1, "argv": ["./app", "-x \"q\" \u00e9", "caf\udce9"], "trace": "app.trace", "quiet": false},
      {"pid": 43, "ppid": 42, "argv": ["true"], "trace": null, "quiet": true},
      {"pid": 44, "ppid": 42, "argv": ["child"], "trace": "sub/child.trace", "new_key": {}}
    ]})";
  ProcResult r = RunProcess({Gotrace(), "report", "--format", "json", idx});
  INFO(r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.out, Catch::Contains("{\"file\":\"" + dir.File("app.trace") + "\""));
  CHECK_THAT(r.out, Catch::Contains("{\"file\":\"" + dir.File("sub/child.trace") + "\""));
  size_t traces = 0;  // the process without a trace is left out
  for (size_t at = r.out.find("\"duration_ns\":"); at != std::string::npos;
       at = r.out.find("\"duration_ns\":", at + 1))
    ++traces;
  CHECK(traces == 2);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"version\": 2, \"processes\": []}", "run index version 2 is not supported"},
      {"{\"version\": 1, \"processes\": [{\"pid\": 1, \"trace\": null}]}",
       "the run index lists no trace"},
      {"{\"version\": 1, \"processes\": [", "not a run index: bad JSON at offset"},
      {"{\"hello\": 1}", "not a run index"},
      // The placeholder of a launcher still running, or killed.
      {"{\"version\": 1, \"running\": \"tracewrap (pid 7299) writes this index when its program "
       "ends\"}",
       "not written yet: tracewrap (pid 7299) writes this index when its program ends"},
  };
  for (const auto& [text, what] : bad) {
    const std::string p = dir.File("bad.index.json");
    std::ofstream(p, std::ios::trunc) << text;
    ProcResult b = RunProcess({Gotrace(), "report", p});
    INFO(text << " -> " << b.err);
    CHECK(b.Exited(2));
    CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
    CHECK_THAT(b.err, Catch::StartsWith("gotrace: " + p + ": " + what));
  }
  // A listed trace that is gone: said, the others reported (the windows
  // too); all gone: exit 2.
  const std::string p = dir.File("gone.index.json");
  std::ofstream(p, std::ios::trunc)
      << R"({"version": 1, "processes": [{"pid": 1, "trace": "missing.trace"},
             {"pid": 2, "trace": null, "windows": ["app.trace", "sub/child.trace"]}]})";
  ProcResult g = RunProcess({Gotrace(), "report", p});
  INFO(g.err);
  CHECK(g.Exited(0));
  CHECK(g.err == "gotrace: warning: " + dir.File("missing.trace") + " is missing (listed by " + p +
                     "); reporting the others\n");
  CHECK_THAT(g.out, Catch::Contains("== " + dir.File("app.trace")));
  CHECK_THAT(g.out, Catch::Contains("== " + dir.File("sub/child.trace")));
  std::ofstream(p, std::ios::trunc)
      << R"({"version": 1, "processes": [{"trace": "missing.trace"}]})";
  g = RunProcess({Gotrace(), "report", p});
  CHECK(g.Exited(2));
  CHECK_THAT(g.err,
             Catch::EndsWith("gotrace: " + p + ": every trace the run index lists is missing\n"));
}

TEST_CASE("bad input is one line naming the file, exit 2", "[report][cli]") {
  TempDir dir;
  const std::vector<uint8_t> good = SmallTrace(true);
  std::vector<uint8_t> truncated(good.begin(), good.begin() + static_cast<long>(good.size() / 2));
  std::vector<uint8_t> garbled = good;
  REQUIRE(garbled.size() > 60);
  std::fill(garbled.begin() + 40, garbled.begin() + 60, uint8_t{0xff});
  std::vector<uint8_t> log(good.size(), 0);
  std::memcpy(log.data(), "GOTRLOG\n", 8);
  const std::string go122("go 1.22 trace\0\0\0", 16);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {WriteFile(dir, "empty.trace", {}), "empty file"},
      {WriteFile(dir, "half.trace", truncated), ""},
      {WriteFile(dir, "garbled.trace", garbled), ""},
      {WriteFile(dir, "app.gtlog", log), "a gotrace event log, not a trace"},
      {WriteFile(dir, "new.trace", std::vector<uint8_t>(go122.begin(), go122.end())),
       "a Go 1.22 trace: only the go 1.19 format"},
      {WriteFile(dir, "text.trace", {'h', 'e', 'l', 'l', 'o', '\n'}), "not a Go execution trace"},
      {dir.path(), "is a directory"},
      {dir.File("missing.trace"), "No such file or directory"},
  };
  for (const auto& [path, what] : cases) {
    ProcResult p = RunProcess({Gotrace(), "report", path});
    INFO(path << ": " << p.Describe() << ": " << p.err);
    CHECK(p.Exited(2));
    CHECK_THAT(p.err, Catch::StartsWith("gotrace: " + path + ": " + what));
    CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
    CHECK(p.out.empty());
  }
}

}  // namespace
}  // namespace gotrace::testing
