// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/report_test.cc - gotrace report on real programs ---===//
//
// The scenario programs do known things (four threads on one mutex, a
// condvar ping-pong, sleepers, a network echo); their reports must say so:
// thread count, block kinds, the contended function at the top with its
// file:line, who woke whom. The reader must also see the very events Go's
// parser sees in these traces.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <tuple>

#include "encoder/report/pprof.h"
#include "encoder/report/report.h"
#include "encoder/report/trace_reader.h"
#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

report::Report ReportOf(const ScenarioRun& s) {
  report::Trace t;
  Status st = report::ReadTrace(s.trace, &t);
  INFO(st.message());
  REQUIRE(st.ok());
  // The same events, times and goroutines as go tool trace -d (ties may be
  // ordered differently, so compare sorted).
  using Key = std::tuple<int64_t, std::string, uint64_t>;
  std::vector<Key> ours, theirs;
  for (const auto& e : t.events) ours.emplace_back(e.ts, report::EventName(e.type), e.g);
  for (const auto& e : s.parsed.events) theirs.emplace_back(e.ts, e.name, e.g);
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  CHECK(ours == theirs);
  report::Report r = report::Analyze(t, s.trace);
  for (const auto& th : r.threads) {
    INFO(th.name << " " << th.goid);
    CHECK(th.running.ns + th.runnable.ns + th.blocked_ns() == th.life());
  }
  REQUIRE(r.processes.size() == 1);
  CHECK(r.processes[0].sched != "");
  return r;
}

std::vector<const report::ThreadReport*> Named(const report::Report& r, const std::string& name) {
  std::vector<const report::ThreadReport*> out;
  for (const auto& t : r.threads)
    if (t.name == name) out.push_back(&t);
  return out;
}

uint64_t Count(const report::ThreadReport& t, const std::string& kind) {
  auto it = t.blocked.find(kind);
  return it == t.blocked.end() ? 0 : it->second.count;
}

std::string Gotrace() { return std::string(GOTRACE_BUILD_DIR) + "/gotrace"; }

// `gotrace pprof --kind KIND` against `go tool trace -pprof=KIND`: the same
// waits and total delay within 1%, and `go tool pprof` reads our file.
// Returns the functions named in our profile.
std::vector<std::string> SameProfileAsGo(const std::string& trace, const std::string& kind,
                                         const TempDir& dir, bool empty_ok = false) {
  INFO("pprof --kind " << kind);
  const std::string ours = dir.File(kind + ".pb.gz"), theirs = dir.File(kind + ".go.pb");
  ProcResult p = RunProcess({Gotrace(), "pprof", "--kind", kind, trace, "-o", ours});
  INFO(p.err);
  REQUIRE(p.Exited(0));
  ProcResult g = RunProcess({GoBinary(), "tool", "trace", "-pprof=" + kind, trace});
  INFO(g.err);
  REQUIRE(g.Exited(0));
  {
    std::ofstream f(theirs, std::ios::binary);
    f << g.out;
  }
  std::vector<int64_t> a, b;
  std::vector<std::string> fa, fb;
  REQUIRE(report::ReadPprofTotals(ours, &a, &fa).ok());
  REQUIRE(report::ReadPprofTotals(theirs, &b, &fb).ok());
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  INFO("ours: " << a[0] << " waits, " << a[1] << " ns; go: " << b[0] << " waits, " << b[1] << " ns");
  if (!empty_ok) CHECK(b[1] > 0);
  CHECK(std::llabs(a[0] - b[0]) * 100 <= b[0]);
  CHECK(std::llabs(a[1] - b[1]) * 100 <= b[1]);
  std::sort(fa.begin(), fa.end());
  std::sort(fb.begin(), fb.end());
  CHECK(fa == fb);
  ProcResult raw = RunProcess({GoBinary(), "tool", "pprof", "-raw", ours});
  INFO(raw.err);
  CHECK(raw.Exited(0));
  return fa;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_CASE("report: 4-way mutex contention names contended_section at the top", "[report]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("mutex_contention")}, dir, {}, false);
  const report::Report r = ReportOf(s);
  CHECK(r.threads.size() == 5);
  const auto workers = Named(r, "worker");
  REQUIRE(workers.size() == 4);
  // 800 iterations, a sleep every 8th: each sleep is one GoSleep of that
  // thread in Go's reading of the trace, and nearly all 100 are there (on a
  // loaded machine the encoder may show a sleep that never left the CPU as
  // running).
  uint64_t sleeps = 0, mutexes = 0;
  for (const auto* w : workers) {
    // Every GoBlockSync of the thread is a lock-like wait in the report.
    size_t go_syncs = 0;
    for (const GoEvent* e : s.parsed.Find("GoBlockSync")) go_syncs += e->g == w->goid;
    uint64_t syncs = 0;
    for (const auto& [k, st] : w->blocked)
      if (report::InSyncGroup(k)) syncs += st.count;
    CHECK(syncs == go_syncs);
    mutexes += Count(*w, "mutex");
    size_t go_sleeps = 0;
    for (const GoEvent* e : s.parsed.Find("GoSleep")) go_sleeps += e->g == w->goid;
    CHECK(Count(*w, "sleep") == go_sleeps);
    CHECK(Count(*w, "sleep") <= 100);
    sleeps += Count(*w, "sleep");
    CHECK(w->ended);
  }
  CHECK(sleeps >= 380);
  CHECK(mutexes > 20);
  REQUIRE(Named(r, "main").size() == 1);
  CHECK(Count(*Named(r, "main")[0], "join") >= 1);
  REQUIRE_FALSE(r.sites.empty());
  const report::BlockSite* top_mutex = nullptr;
  for (const auto& b : r.sites)
    if (b.kind == "mutex" && !top_mutex) top_mutex = &b;
  REQUIRE(top_mutex != nullptr);
  REQUIRE_FALSE(top_mutex->frames.empty());
  CHECK(top_mutex->frames[0].func == "contended_section");
  CHECK(top_mutex->frames[0].file == GOTRACE_SCENARIO_SRC "/mutex_contention.c");
  CHECK(top_mutex->frames[0].line == 16);
  // Mutex waits are ended by the unlocking worker: the pairs are workers.
  REQUIRE_FALSE(r.wakers.empty());
  CHECK(r.Thread(r.wakers[0].waker)->name == "worker");
  CHECK(r.Thread(r.wakers[0].wakee)->name == "worker");

  ProcResult text = RunProcess({Gotrace(), "report", s.trace});
  REQUIRE(text.Exited(0));
  CHECK_THAT(text.out, Catch::Contains("contended_section  mutex_contention.c:16"));
  // Gates over the real trace: they hold and fail as written.
  CHECK(RunProcess({Gotrace(), "report", "--fail-if", "blocked.mutex > 1%", s.trace}).Exited(3));
  CHECK(RunProcess({Gotrace(), "report", "--fail-if", "mutex.top.total > 1us", s.trace}).Exited(3));
  CHECK(RunProcess({Gotrace(), "report", "--fail-if", "blocked.mutex > 99%", "--fail-if",
                    "blocked.net > 0ns", "--fail-if", "threads != 5", s.trace}).Exited(0));
  CHECK(Has(SameProfileAsGo(s.trace, "sync", dir), "contended_section"));
  SameProfileAsGo(s.trace, "sched", dir);
}

TEST_CASE("report: condvar ping-pong: cond waits, the players wake each other", "[report]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("condvar_pingpong"), "2000"}, dir, {}, false);
  const report::Report r = ReportOf(s);
  CHECK(r.threads.size() == 3);
  const auto players = Named(r, "player");
  REQUIRE(players.size() == 2);
  CHECK(Count(*players[0], "cond") + Count(*players[1], "cond") >= 1000);
  uint64_t between = 0, cond_waits = Count(*players[0], "cond") + Count(*players[1], "cond");
  for (const auto& w : r.wakers) {
    const bool a = w.waker == players[0]->goid && w.wakee == players[1]->goid;
    const bool b = w.waker == players[1]->goid && w.wakee == players[0]->goid;
    if (a || b) between += w.count;
  }
  INFO(between << " wakeups between the players, " << cond_waits << " cond waits");
  // Not all: with kernel scheduling some waits end on glibc's internal
  // locks, off the CPU where no interposer sees them (woken by g0).
  CHECK(between * 4 >= cond_waits * 3);
  REQUIRE(r.wakers.size() >= 2);
  CHECK(r.Thread(r.wakers[0].waker)->name == "player");
  CHECK(Has(SameProfileAsGo(s.trace, "sync", dir), "player"));
}

TEST_CASE("report: sleepers: 15 sleeps per thread, main joins", "[report]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("sleepers")}, dir, {}, false);
  const report::Report r = ReportOf(s);
  CHECK(r.threads.size() == 4);
  const auto sleepers = Named(r, "sleeper");
  REQUIRE(sleepers.size() == 3);
  for (const auto* t : sleepers) CHECK(Count(*t, "sleep") == 15);
  REQUIRE(Named(r, "main").size() == 1);
  CHECK(Count(*Named(r, "main")[0], "join") >= 1);
  for (const auto& w : r.wakers)  // sleeps end by themselves: no thread wakes a sleeper
    CHECK(r.Thread(w.wakee)->name == "main");
}

TEST_CASE("report: network echo: net waits under the functions that wait", "[report]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("net_echo")}, dir, {}, false);
  const report::Report r = ReportOf(s);
  CHECK(r.threads.size() == 3);
  REQUIRE(Named(r, "server_loop").size() == 1);
  REQUIRE(Named(r, "pipe_waiter").size() == 1);
  CHECK(Count(*Named(r, "server_loop")[0], "net") >= 1);  // accept; recv when no data yet
  const report::ThreadReport& pw = *Named(r, "pipe_waiter")[0];
  // Its poll; and its read of the byte poll saw, where that call took the
  // block threshold (20 us) because the thread lost its CPU in it (a loaded
  // machine: once in a full parallel ctest run).
  CHECK(Count(pw, "net") >= 1);
  CHECK(Count(pw, "net") <= 2);
  std::set<std::string> net_funcs;
  for (const auto& b : r.sites)
    if (b.kind == "net" && !b.frames.empty()) net_funcs.insert(b.frames[0].func);
  CHECK(net_funcs.count("pipe_waiter") == 1);
  CHECK(net_funcs.count("server_loop") == 1);
  CHECK(net_funcs.count("client_roundtrips") == 1);
  ProcResult md = RunProcess({Gotrace(), "report", "--format", "markdown", s.trace});
  REQUIRE(md.Exited(0));
  CHECK_THAT(md.out, Catch::Contains("| pipe\\_waiter | "));
  CHECK(Has(SameProfileAsGo(s.trace, "net", dir), "pipe_waiter"));
  SameProfileAsGo(s.trace, "syscall", dir, true);  // blocking syscalls: load-dependent
  SameProfileAsGo(s.trace, "sched", dir);
}

TEST_CASE("report: tracewrap --report reports the traces of the run", "[report][tracewrap]") {
  TempDir dir;
  const std::string tracewrap = std::string(GOTRACE_SOURCE_DIR) + "/scripts/tracewrap";
  ProcResult r = RunProcess({tracewrap, "--report=" + dir.File("report.txt"), "-q", "-o",
                             dir.File("run.trace"), Scenario("sleepers")});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "slept\n");
  const std::string text = Slurp(dir.File("report.txt"));
  CHECK_THAT(text, Catch::StartsWith("== " + dir.File("run.trace") + "\n"));
  CHECK_THAT(text, Catch::Contains("sleeper (tid "));
  // To stderr without a file; the program's exit status is kept.
  ProcResult e = RunProcess({tracewrap, "--report", "-q", "-o", dir.File("f.trace"), "false"});
  CHECK(e.Exited(1));
  CHECK_THAT(e.err, Catch::Contains("== " + dir.File("f.trace")));
  ProcResult x = RunProcess({tracewrap, "--exec", "--report", "true"});
  CHECK(x.Exited(2));
}

}  // namespace
}  // namespace gotrace::testing
