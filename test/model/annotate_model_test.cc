// SPDX-License-Identifier: Apache-2.0
//===-- test/model/annotate_model_test.cc - annotations in the model ------===//
//
// Synthetic logs with gotrace/annotate.h records (issue 17): region nesting
// errors, regions open at a thread's end and at the trace's end, tasks that
// end on another thread, events without stacks, and task ids of several
// processes in one trace. Every trace must pass Go 1.19's parser and web UI.
//===----------------------------------------------------------------------===//
#include <map>
#include <random>
#include <set>

#include "encoder/user_annotations.h"
#include "test/model/model_util.h"

using namespace gotrace;
using namespace gotrace::testing;

namespace {

constexpr uint64_t kStkAnnotate = 20;  // worker:113 (0x2031)
constexpr uint64_t kStkAnnotateMain = 21;  // main:16 (0x1019)

void DefineAnnotationStacks(LogBuilder& b) {
  DefineStandardStacks(b);
  b.Stack(kStkAnnotate, {0x2031});
  b.Stack(kStkAnnotateMain, {0x1019});
}

// The name= of a UserRegion/UserTaskCreate line (string arguments come last).
std::string NameOf(const GoEvent& e) {
  const size_t at = e.text.find(" name=");
  return at == std::string::npos ? "" : e.text.substr(at + 6);
}

// "name/mode" of each UserRegion of goroutine g, in trace order.
std::vector<std::string> RegionsOf(const ParsedTrace& t, uint64_t g) {
  std::vector<std::string> out;
  for (const GoEvent* e : ByG(t, g, "UserRegion"))
    out.push_back(NameOf(*e) + "/" + std::to_string(e->args.at("mode")));
  return out;
}

}  // namespace

TEST_CASE("annotations: an end that skips inner regions ends them first, a stray end is dropped",
          "[model][annotate]") {
  TempDir dir;
  LogBuilder b(2, 1000);
  DefineAnnotationStacks(b);
  b.Thread(100)
      .Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .TaskBegin(1100, 0, 1, 0, "req", kStkAnnotateMain)
      .Region(1200, 0, 1, 0, "a", kStkAnnotate)
      .Region(1300, 0, 1, 0, "b", kStkAnnotate)
      .Region(1400, 0, 1, 0, "c", kStkAnnotate)
      .Region(1500, 0, 1, 1, "a", kStkAnnotate)   // ends c and b first
      .Region(1600, 0, 1, 0, "x", kStkAnnotate)
      .Region(1700, 0, 1, 1, "y", kStkAnnotate)   // names no open region: dropped
      .Region(1750, 0, 2, 1, "x", kStkAnnotate)   // the right name in another task: dropped
      .Region(1760, 0, 1, 2, "x", kStkAnnotate)   // no such mode: ignored
      .Region(1800, 0, 1, 1, "x", kStkAnnotate)
      .Region(1900, 0, 1, 1, "before", kStkAnnotate)  // nothing open: begun before the trace
      .TaskEnd(2000, 0, 1, kStkAnnotateMain)
      .Wait(3000, 0, WaitKind::kSleep, 0, 1000, 0, kStkSleep);
  b.TraceEnd(10'000);
  Checked c = EncodeAndValidate(b, dir);
  CHECK(RegionsOf(c.parsed, 100) == std::vector<std::string>{"a/0", "b/0", "c/0", "c/1", "b/1",
                                                             "a/1", "x/0", "x/1", "before/1"});
  const AnnotationStats& a = c.run.stats.model.annotations;
  CHECK(a.regions == 4);
  CHECK(a.regions_closed == 2);
  CHECK(a.region_ends_dropped == 2);
  bool warned = false;
  for (const auto& w : c.run.stats.warnings)
    warned |= w.find("2 region ends named no open region") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("annotations: regions open when a thread ends or the trace ends", "[model][annotate]") {
  TempDir dir;
  LogBuilder b(3, 1000);
  DefineAnnotationStacks(b);
  b.Thread(100)
      .Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .Create(1100, 0, 1, 0x2000, kStkCreate)
      .Create(1150, 0, 2, 0x2000, kStkCreate)
      .Region(1200, 0, 0, 0, "main-open", kStkAnnotateMain)
      .Heap(9000, 0, 4096);  // still running at the end
  b.Thread(101)
      .Start(1300, 1, 1, 0x2000)
      .Region(1400, 1, 0, 0, "outer", kStkAnnotate)
      .Region(1500, 1, 0, 0, "inner", kStkAnnotate)
      .End(1600, 1);  // ends inside both
  b.Thread(102)
      .Start(1300, 2, 2, 0x2000)
      .Region(1400, 2, 0, 0, "blocked-open", kStkAnnotate)
      .OpenWait(1500, 2, WaitKind::kMutex, 0x77, kStkMutexLock);  // waits at the end
  b.TraceEnd(10'000);
  Checked c = EncodeAndValidate(b, dir);
  CHECK(RegionsOf(c.parsed, 101) ==
        std::vector<std::string>{"outer/0", "inner/0", "inner/1", "outer/1"});
  // The ends come before the thread's GoEnd.
  const auto ev101 = ByG(c.parsed, 101);
  REQUIRE(!ev101.empty());
  CHECK(ev101.back()->name == "GoEnd");
  CHECK(RegionsOf(c.parsed, 100) == std::vector<std::string>{"main-open/0", "main-open/1"});
  // A thread that waits at the end cannot run an event: its region stays
  // open, which the parser takes as lasting to the trace's end.
  CHECK(RegionsOf(c.parsed, 102) == std::vector<std::string>{"blocked-open/0"});
  CHECK(c.run.stats.model.annotations.regions_closed == 3);
}

TEST_CASE("annotations: a task ends on another thread, events without stacks get one",
          "[model][annotate]") {
  TempDir dir;
  LogBuilder b(2, 1000);
  DefineAnnotationStacks(b);
  b.Thread(100)
      .Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .TaskBegin(1100, 0, 7, 0, "job", kStkAnnotateMain)
      .TaskBegin(1150, 0, 8, 7, "part", 0)           // no stack captured
      .UserLog(1200, 0, 7, "", "queued")
      .Release(1300, 0, WaitKind::kCond, 0x50, 1, kStkCondSignal)
      .Wait(2000, 0, WaitKind::kSleep, 0, 5000, 0, kStkSleep);
  b.Thread(101)
      .Start(1000, 1, 0, 0x2000, log::kThreadExisted)
      .Wait(1050, 1, WaitKind::kCond, 0x50, 300, 1, kStkCondWait)
      .Region(1400, 1, 7, 0, "work", 0)              // no stack captured
      .Region(1450, 1, 7, 0, "sub", 999)             // a stack never defined
      .UserLog(1500, 1, 7, "step", "half done", kStkAnnotate)
      .Region(1550, 1, 7, 1, "sub", 999)
      .Region(1600, 1, 7, 1, "work", 0)
      .Region(1620, 1, 7, 0, "named", kStkAnnotate)
      .Region(1640, 1, 7, 1, "named", kStkAnnotate)
      .TaskEnd(1700, 1, 8, kStkAnnotate)
      .TaskEnd(1710, 1, 7, kStkAnnotate)
      .TaskEnd(1720, 1, 5, kStkAnnotate)             // never begun: harmless
      .Wait(1800, 1, WaitKind::kSleep, 0, 5000, 1, kStkSleep);
  b.TraceEnd(10'000);
  Checked c = EncodeAndValidate(b, dir);  // includes /usertasks, /userregions

  auto creates = c.parsed.Find("UserTaskCreate");
  REQUIRE(creates.size() == 2);
  CHECK(creates[0]->g == 100);
  CHECK(creates[0]->args.at("taskid") == 7);
  CHECK(creates[1]->args.at("pid") == 7);
  auto ends = c.parsed.Find("UserTaskEnd");
  REQUIRE(ends.size() == 3);
  CHECK(ends[1]->args.at("taskid") == 7);
  CHECK(ends[1]->g == 101);
  auto logs = c.parsed.Find("UserLog");
  REQUIRE(logs.size() == 2);
  CHECK_THAT(logs[0]->text, Catch::Contains("message=queued"));
  CHECK_THAT(logs[1]->text, Catch::Contains("category=step message=half done"));

  // The region starts without a stack got the synthetic frame (a start
  // with none would have crashed the page, EncodeAndValidate's WebCheck).
  std::vector<std::string> pages;
  REQUIRE(WebPages(c.run.trace, {"/userregions"}, &pages).empty());
  CHECK_THAT(pages[0], Catch::Contains(UserAnnotations::kNoStackFrame));
  CHECK_THAT(pages[0], Catch::Contains("worker"));  // the one with a stack
}

TEST_CASE("annotations: the same task ids in several processes stay apart", "[model][annotate]") {
  TempDir dir;
  LogBuilder b1(2, 1000, 100), b2(2, 1500, 200);
  DefineAnnotationStacks(b1);
  DefineAnnotationStacks(b2);
  // Both processes begin task 1 and keep it open at the same time: one id
  // in the trace would be "task id conflicts" for the parser.
  b1.Thread(100)
      .Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .TaskBegin(1600, 0, 1, 0, "req", kStkAnnotateMain)
      .Region(1700, 0, 1, 0, "r", kStkAnnotate)
      .Region(2900, 0, 1, 1, "r", kStkAnnotate)
      .TaskEnd(3000, 0, 1, kStkAnnotateMain)
      .Wait(4000, 0, WaitKind::kSleep, 0, 1000, 0, kStkSleep);
  b2.Thread(200)
      .Start(1500, 1, 0, 0x1000, log::kThreadExisted | log::kThreadMain)
      .TaskBegin(1650, 1, 1, 0, "req", kStkAnnotateMain)
      .Region(1750, 1, 1, 0, "r", kStkAnnotate)
      .Region(2950, 1, 1, 1, "r", kStkAnnotate)
      .TaskEnd(3050, 1, 1, kStkAnnotateMain)
      .Wait(4000, 1, WaitKind::kSleep, 0, 1000, 1, kStkSleep);
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
  std::set<uint64_t> ids;
  for (const GoEvent* e : t.Find("UserTaskCreate")) ids.insert(e->args.at("taskid"));
  CHECK(ids.size() == 2);
  std::set<uint64_t> region_tasks;
  for (const GoEvent* e : t.Find("UserRegion")) region_tasks.insert(e->args.at("taskid"));
  CHECK(region_tasks == ids);
  std::vector<std::string> pages;
  REQUIRE(WebPages(run.trace, {"/usertasks"}, &pages).empty());
  CHECK_THAT(pages[0], Catch::Contains("/usertask?type=req\">2<"));
}

// Random annotation sequences on threads that also wait, migrate, end and
// keep recording after their end: mismatched, missing and extra region ends,
// tasks ended twice or never, on any thread (a task id is begun once, as
// the library's counter does). Go must accept every trace, and
// /usertasks and /userregions must load (their stacks are never empty).
TEST_CASE("annotations: random sequences always encode to traces Go accepts",
          "[model][annotate][fuzz]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    DYNAMIC_SECTION("seed " << seed) {
      std::mt19937_64 rng(seed);
      auto rnd = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
      TempDir dir;
      const uint32_t ncpus = 1 + static_cast<uint32_t>(rnd(3));
      LogBuilder b(ncpus, 1000);
      b.set_chunk_bytes(64 + rnd(400));
      DefineAnnotationStacks(b);
      const char* names[] = {"a", "b", "c"};
      const int nthreads = 2 + static_cast<int>(rnd(4));
      uint64_t next_task = 1;
      for (int i = 0; i < nthreads; ++i) {
        auto& t = b.Thread(1000 + i);
        Tick ts = 1000 + rnd(5000);
        t.Start(ts, static_cast<uint32_t>(rnd(ncpus)), 0, 0x2000,
                (i == 0 ? log::kThreadMain : 0) | log::kThreadExisted);
        const int n = static_cast<int>(rnd(80));
        for (int j = 0; j < n; ++j) {
          ts += rnd(3) == 0 ? 0 : rnd(20'000);
          const auto cpu = static_cast<uint32_t>(rnd(ncpus));
          const uint64_t task = rnd(4);
          const uint64_t stack = rnd(3) == 0 ? 0 : (rnd(2) ? kStkAnnotate : 999);
          switch (rnd(8)) {
            case 0: case 1:
              t.Region(ts, cpu, task, 0, names[rnd(3)], stack);
              break;
            case 2: case 3:
              t.Region(ts, cpu, task, 1, names[rnd(3)], stack);
              break;
            case 4:
              t.TaskBegin(ts, cpu, next_task++, task, names[rnd(3)], stack);
              break;
            case 5:
              t.TaskEnd(ts, cpu, task, stack);
              break;
            case 6:
              t.UserLog(ts, cpu, task, rnd(2) ? "" : "k", "m", stack);
              break;
            default:
              if (rnd(8) == 0) t.End(ts, cpu);
              else t.Wait(ts, cpu, WaitKind::kSleep, 0, rnd(50'000), cpu, kStkSleep);
              break;
          }
        }
      }
      b.TraceEnd(2'000'000);
      Checked k = EncodeAndValidate(b, dir);
      // The snapshot's, repeated for Go 1.21+ (Replay::Snapshot), and one
      // more where the end record comes after the last event: the trace
      // lasts until then.
      CHECK(GomaxprocsAsExpected(k.parsed));
    }
  }
}
