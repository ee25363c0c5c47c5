// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/preload_test.cc - real programs under libgotrace.so -===//
#include <sys/stat.h>

#include <set>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

TEST_CASE("condvar ping-pong: most unblocks come from the other thread", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("condvar_pingpong"), "2000"}, dir);
  CHECK(s.plain.out == "pingpong 2000 2000\n");
  const ParsedTrace& t = s.parsed;
  // The two players are the goroutines created by main (g = pid).
  std::vector<uint64_t> players;
  for (const GoEvent* e : t.Find("GoCreate"))
    if (e->g != 0) players.push_back(e->args.at("g"));
  REQUIRE(players.size() == 2);
  // The condition waits (with kernel scheduling a player is also seen off
  // its CPU on glibc's internal locks, which no interposer records: those
  // are woken by g0, truthfully).
  size_t linked = 0, all = 0;
  for (const Wake& w : Wakes(t)) {
    if (w.block->name != "GoBlockCond") continue;
    const uint64_t target = w.unblock->args.at("g");
    if (target != players[0] && target != players[1]) continue;
    ++all;
    const uint64_t other = target == players[0] ? players[1] : players[0];
    if (w.unblock->g == other) ++linked;
  }
  INFO(linked << " of " << all << " condition waits are ended by the other player");
  CHECK(all >= 1000);
  CHECK(linked * 10 >= all * 9);
  CHECK(t.Count("GoBlockCond") >= 1000);
  // The summary line: one line, with the path and how to view it.
  CHECK_THAT(s.traced.err, Catch::StartsWith("gotrace: wrote "));
  CHECK_THAT(s.traced.err, Catch::Contains("view with: go tool trace"));
  CHECK(std::count(s.traced.err.begin(), s.traced.err.end(), '\n') == 1);
}

TEST_CASE("4-way mutex contention: -pprof=sync names the contended function and line",
          "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("mutex_contention")}, dir);
  CHECK(s.parsed.Count("GoBlockSync") > 20);
  PprofResult p = Pprof(s.trace, "sync");
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("contended_section"));
  CHECK_THAT(p.traces, Catch::Contains("worker"));
  CHECK_THAT(p.raw, Catch::Contains("contended_section " GOTRACE_SCENARIO_SRC "/mutex_contention.c:16"));
  // Contended unlocks link their waiters: mutex waits are ended by another
  // worker (the sleeps inside the critical section by g0).
  size_t linked = 0, mutex_waits = 0, sleeps = 0;
  for (const Wake& w : Wakes(s.parsed)) {
    if (w.block->name == "GoSleep") {
      ++sleeps;
      CHECK(w.unblock->g == 0);
    } else if (w.block->name == "GoBlockSync") {
      ++mutex_waits;
      if (w.unblock->g != 0 && w.unblock->g != w.block->g) ++linked;
    }
  }
  CHECK(sleeps == 400);
  INFO(linked << " of " << mutex_waits << " mutex waits were ended by the unlocking thread");
  CHECK(linked * 10 >= mutex_waits * 9);
  // Go 1.23 shows the same contended function (its waits are ended by unlocking threads).
  const PprofResult p23 = CheckWithGo123(s.trace, "sync");
  if (p23.ok) CHECK_THAT(p23.traces, Catch::Contains("contended_section"));
}

TEST_CASE("a process with one thread waits on a mutex another process holds", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("mutex_pshared")}, dir, {"GOTRACE_FOLLOW=0"});
  CHECK(s.plain.out == "locked 0 child 0\n");
  // The parent's only wait on a mutex: about the child's 150 ms hold.
  const std::vector<Wake> waits = Wakes(s.parsed);
  const auto lock = std::find_if(waits.begin(), waits.end(),
                                 [](const Wake& w) { return w.block->name == "GoBlockSync"; });
  REQUIRE(lock != waits.end());
  CHECK(lock->unblock->ts - lock->block->ts > 50'000'000);
  PprofResult p = Pprof(s.trace, "sync");
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK_THAT(p.traces, Catch::Contains("lock_shared"));
}

TEST_CASE("sigaction reports a termination signal's old action as untraced", "[preload]") {
  // The library stands in for SIG_DFL on SIGINT, SIGTERM, ..., SIGSEGV,
  // ...: the old action the program reads back (flags with glibc's
  // SA_RESTORER, the mask, SIG_DFL where ours stands in) is the kernel's,
  // field for field, in the parent and in a fork child; ssignal,
  // sysv_signal, siginterrupt, sigset and sigignore too (RunTraced
  // compares the outputs).
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("sigaction_report")}, dir, {"GOTRACE_FOLLOW=0"}, false);
  CHECK(s.plain.exit_code == 0);
  CHECK_THAT(s.plain.out,
             Catch::Contains("parent 2 before h2: h1 flags 0x14000000 mask 0x200 restorer set"));
  CHECK_THAT(s.plain.out, Catch::Contains("parent 1 start: DFL flags 0 mask 0 restorer none"));
  CHECK_THAT(s.plain.out, Catch::Contains("child 2 now: DFL"));
  CHECK_THAT(s.plain.out, Catch::Contains("read=-1 EINTR"));
  CHECK_THAT(s.plain.out, Catch::Contains("sysv_signal(TERM, h1) gave DFL"));
  CHECK_THAT(s.plain.out, Catch::Contains("sigset(11, h1) gave DFL"));
  CHECK_THAT(s.plain.out, Catch::Contains("sigset(15, HOLD) again gave HOLD"));
  CHECK_THAT(s.plain.out, Catch::Contains("after sigignore 11: IGN"));
  CHECK_THAT(s.plain.out, Catch::Contains("after sysv_signal DFL: DFL flags 0xc4000000"));
  CHECK(s.traced.out == s.plain.out);
}

TEST_CASE("C++ thread pool with std::mutex, std::condition_variable and exceptions",
          "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("threadpool")}, dir);
  CHECK(s.plain.exit_code == 0);
  CHECK_THAT(s.plain.out, Catch::Contains("failures 286"));
  CHECK(s.parsed.Count("GoCreate") == 5);  // main + 4 workers
  CHECK(s.parsed.Count("GoEnd") == 4);
  CHECK(s.parsed.Count("GoBlockCond") > 0);
  PprofResult p = Pprof(s.trace, "sync");
  REQUIRE(p.ok);
  // std::condition_variable::wait reaches pthread_cond_wait; its caller is
  // Pool::Run (the lambda's frames are inlined or named after it).
  CHECK_THAT(p.traces, Catch::Contains("Pool::Run"));
}

TEST_CASE("sleepers: exactly one GoSleep per sleep call", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("sleepers")}, dir);
  CHECK(s.parsed.Count("GoSleep") == 45);
  for (const GoEvent* e : s.parsed.Find("GoUnblock")) {
    // Sleeps end by themselves: woken by g0, never by another thread.
    bool is_join = false;
    for (const GoEvent* c : s.parsed.Find("GoCreate"))
      if (c->g == 0 && c->args.at("g") == e->args.at("g")) is_join = true;  // main joins
    if (!is_join) CHECK(e->g == 0);
  }
}

TEST_CASE("a detached thread", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("detached")}, dir);
  CHECK(s.plain.out == "ready\n");
  CHECK(s.parsed.Count("GoCreate") == 2);
  // main's cond wait is ended by the detached thread's signal.
  size_t from_thread = 0;
  for (const GoEvent* e : s.parsed.Find("GoUnblock"))
    if (e->g != 0) ++from_thread;
  CHECK(from_thread >= 1);
}

TEST_CASE("200 short-lived threads", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("many_threads")}, dir);
  CHECK(s.parsed.Count("GoCreate") == 201);
  CHECK(s.parsed.Count("GoEnd") == 200);
  std::set<uint64_t> ids;
  for (const GoEvent* e : s.parsed.Find("GoCreate")) ids.insert(e->args.at("g"));
  CHECK(ids.size() == 201);
}

TEST_CASE("GOTRACE_UNWIND=none records no stacks; GOTRACE_QUIET=1 prints nothing",
          "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("mutex_contention")}, dir,
                            {"GOTRACE_UNWIND=none", "GOTRACE_QUIET=1"}, /*web=*/false);
  CHECK(s.traced.err.empty());
  PprofResult p = Pprof(s.trace, "sync");
  REQUIRE(p.ok);
  CHECK(p.traces.find("contended_section") == std::string::npos);
}

TEST_CASE("an invalid setting prints one line and is ignored", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("sleepers")}, dir, {"GOTRACE_DEPTH=lots"}, false);
  CHECK_THAT(s.traced.err, Catch::StartsWith("gotrace: ignoring GOTRACE_DEPTH='lots'"));
  CHECK(s.parsed.Count("GoSleep") == 45);
}

TEST_CASE("the trace is never overwritten: a second run adds a suffix", "[preload]") {
  TempDir dir;
  const std::string out = dir.File("same.trace");
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + out, "GOTRACE_QUIET=1"};
  REQUIRE(RunProcess({Scenario("sleepers")}, o).Exited(0));
  REQUIRE(RunProcess({Scenario("sleepers")}, o).Exited(0));
  CHECK(ParseWithGo(out).ok);
  CHECK(ParseWithGo(dir.File("same.1.trace")).ok);
  struct stat st;
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("%p and %e expand in GOTRACE_OUT; relative paths are against the start directory",
          "[preload]") {
  TempDir dir;
  ProcOptions o;
  o.cwd = dir.path();
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=%e-%p.trace", "GOTRACE_QUIET=1"};
  REQUIRE(RunProcess({Scenario("sleepers")}, o).Exited(0));
  auto traces = FilesEnding(dir.path(), ".trace");
  REQUIRE(traces.size() == 1);
  CHECK_THAT(traces[0], Catch::Contains("/sleepers-"));
}

}  // namespace
}  // namespace gotrace::testing

namespace gotrace::testing {
namespace {

TEST_CASE("the summary survives a program that closes stderr at exit (coreutils)",
          "[preload]") {
  // coreutils programs close stdout and stderr in an atexit handler that runs
  // before ours; the library writes to its own copy of the original stderr.
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("p.trace")};
  ProcResult r = RunProcess({"/usr/bin/printf", "%s\\n", "hello"}, o);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "hello\n");
  CHECK_THAT(r.err, Catch::StartsWith("gotrace: wrote " + dir.File("p.trace")));
  CHECK(ParseWithGo(dir.File("p.trace")).ok);
}

}  // namespace
}  // namespace gotrace::testing

namespace gotrace::testing {
namespace {

TEST_CASE("exit while threads are blocked or running: blocked ones end blocked", "[preload]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("exit_with_threads")}, dir);
  CHECK(s.plain.out == "exiting\n");
  const ParsedTrace& t = s.parsed;
  std::vector<uint64_t> threads;
  for (const GoEvent* e : t.Find("GoCreate"))
    if (e->g != 0) threads.push_back(e->args.at("g"));
  REQUIRE(threads.size() == 3);
  auto last = [&](uint64_t g) -> std::string {
    std::string name;
    for (const GoEvent& e : t.events)
      if (e.g == g && e.name != "GoUnblock" && e.name != "GoCreate") name = e.name;
    return name;
  };
  CHECK(last(threads[0]) == "GoBlockCond");  // waits_forever
  CHECK(last(threads[1]) == "GoBlockSync");  // blocks_on_mutex
  // computes: seen running last, descheduled at the end (never left running:
  // the web check would fail).
  const std::string busy = last(threads[2]);
  CHECK((busy == "GoSched" || busy == "GoPreempt"));
  CHECK(t.Count("GoEnd") == 0);  // nobody ended; main exited the process
}

}  // namespace
}  // namespace gotrace::testing
