// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/lifecycle_test.cc - fork, exec, exit, crash, kill --===//
//
// Issue 6: the trace survives every way a process ends, forks and execs, and
// programs that are hostile to the tracer's files. Every scenario runs the
// program (test/scenarios/lifecycle.c, or a shell) plain and traced: output
// and exit status must match, and every trace written must be accepted by
// Go's parser before anything is asserted about its content.
//===----------------------------------------------------------------------===//
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

namespace fs = std::filesystem;

const std::string kTracewrap = std::string(GOTRACE_SOURCE_DIR) + "/scripts/tracewrap";
const std::string kGotrace = std::string(GOTRACE_BUILD_DIR) + "/gotrace";

std::string Lifecycle() { return Scenario("lifecycle"); }

// tracewrap ARGS in dir, with the library under test and nothing of ours
// inherited from the test's environment.
ProcResult Tracewrap(const std::vector<std::string>& args, const TempDir& dir) {
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG"};
  o.env = {"GOTRACE_LIB=" + PreloadLib()};
  std::vector<std::string> argv = {kTracewrap};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, o);
}

// Every file in dir, by name.
std::vector<std::string> Names(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.path())) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + " ";
  return s;
}

// Lines of `text` that start with "gotrace:".
std::vector<std::string> TracerLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("gotrace:", 0) == 0) out.push_back(line);
  return out;
}

// The goroutines (threads) a trace shows.
std::set<uint64_t> Goroutines(const ParsedTrace& t) {
  std::set<uint64_t> gs;
  for (const GoEvent& e : t.events)
    if (e.g != 0) gs.insert(e.g);
  return gs;
}

// The last event of goroutine g, ignoring what others do to it.
std::string LastEventOf(const ParsedTrace& t, uint64_t g) {
  std::string name;
  for (const GoEvent& e : t.events)
    if (e.g == g && e.name != "GoUnblock" && e.name != "GoCreate" && e.name != "HeapAlloc")
      name = e.name;
  return name;
}

// The sync profile (blocking on mutexes and condvars) of a trace names fn.
void CheckSyncNames(const std::string& trace, const std::string& fn) {
  const PprofResult p = Pprof(trace, "sync");
  INFO("pprof: " << p.error);
  REQUIRE(p.ok);
  INFO("sync profile:\n" << p.traces);
  CHECK_THAT(p.traces, Catch::Contains(fn));
}

// Parses every trace file in dir (not logs); returns how many there are.
size_t CheckAllTraces(const TempDir& dir) {
  size_t n = 0;
  for (const std::string& name : Names(dir)) {
    INFO("file " << name << " in " << Join(Names(dir)));
    CHECK(name.find(".gtlog") == std::string::npos);  // every log became a trace
    CHECK(name.find(".tmp") == std::string::npos);
    if (name.find(".trace") == std::string::npos) continue;
    const ParsedTrace t = ParseWithGo(dir.File(name));
    INFO("go tool trace -d: " << t.error);
    CHECK(t.ok);
    ++n;
  }
  return n;
}

TEST_CASE("every way to end the process leaves a complete trace", "[lifecycle]") {
  struct Way {
    const char* mode;
    int status;  // exit status, or -signal
    const char* out;
  };
  const Way way = GENERATE(
      Way{"exit-return", 3, "leaving by return\n"}, Way{"exit-exit", 4, "leaving by exit\n"},
      Way{"exit-_exit", 5, "leaving by _exit\n"}, Way{"exit-_Exit", 6, "leaving by _Exit\n"},
      Way{"exit-quick", 7, "leaving by quick\nquick_exit handler\n"},
      Way{"exit-pthread", 0, "leaving by pthread\n"},
      Way{"exit-syscall", 8, "leaving by syscall\n"}, Way{"exit-abort", -6, "leaving by abort\n"});
  INFO("mode " << way.mode);
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), way.mode}, dir);
  CHECK(s.plain.out == way.out);
  if (way.status >= 0) {
    CHECK(s.plain.Exited(way.status));
  } else {
    CHECK(s.plain.term_signal == -way.status);
  }
  // Both threads, the main thread's waits before the end and the worker's.
  CHECK(Goroutines(s.parsed).size() == 2);
  CheckSyncNames(s.trace, "marker_before_exit");
  CheckSyncNames(s.trace, "marker_in_worker");
  CHECK(Names(dir) == std::vector<std::string>{"scenario.trace"});
  if (way.status == -6) CHECK_THAT(s.traced.err, Catch::Contains("the program crashed (signal 6)"));
}

TEST_CASE("a thread libc starts by itself is shown from its first record, not from the start",
          "[lifecycle]") {
  // timer_create's SIGEV_THREAD notification runs on a thread glibc makes
  // without the public pthread_create: it was shown runnable from the
  // trace's start, 100 ms before it existed.
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("late_thread")}, dir);
  CHECK(s.plain.out == "late\n");
  const size_t at = s.traced.err.find("late ");
  REQUIRE(at != std::string::npos);
  const uint64_t tid = std::stoull(s.traced.err.substr(at + 5));
  int64_t created = -1, slept = -1;
  for (const GoEvent& e : s.parsed.events) {
    if (e.name == "GoCreate" && e.args.count("g") && e.args.at("g") == tid) created = e.ts;
    if (e.name == "GoSleep" && e.g == tid) slept = e.ts;
  }
  INFO("created at " << created << " ns, slept at " << slept << " ns");
  REQUIRE(slept > 0);
  CHECK(created >= 80'000'000);  // after main's 100 ms nap (the first event: main's)
  CHECK(created <= slept);
}

TEST_CASE("exit while 3 threads are blocked: they end blocked, not running", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "blocked3"}, dir);
  CHECK(s.plain.out == "exiting with 3 threads blocked\n");
  std::vector<uint64_t> threads;
  for (const GoEvent* e : s.parsed.Find("GoCreate"))
    if (e->g != 0) threads.push_back(e->args.at("g"));
  REQUIRE(threads.size() == 3);
  CHECK(LastEventOf(s.parsed, threads[0]) == "GoBlockCond");  // pthread_cond_wait
  CHECK(LastEventOf(s.parsed, threads[1]) == "GoBlockSync");  // pthread_mutex_lock
  CHECK(LastEventOf(s.parsed, threads[2]) == "GoBlockNet");   // read of a pipe
  CHECK(s.parsed.Count("GoEnd") == 0);
}

TEST_CASE("a crash in a worker thread: status as untraced, trace up to the crash",
          "[lifecycle]") {
  const std::string how =
      GENERATE(std::string("segv"), std::string("abort"), std::string("abort-nocldwait"));
  const int sig = how == "segv" ? 11 : 6;
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "crash-" + how}, dir);
  CHECK(s.plain.term_signal == sig);  // 139 / 134 from a shell
  CHECK(s.plain.out == "crashing by " + how + "\n");
  CHECK_THAT(s.traced.err, Catch::Contains("the program crashed (signal " + std::to_string(sig)));
  CHECK(TracerLines(s.traced.err).size() == 1);
  // The crashing thread's waits before the crash, and the other threads.
  CheckSyncNames(s.trace, "marker_before_crash");
  CheckSyncNames(s.trace, "marker_in_worker");
  CHECK(Goroutines(s.parsed).size() == 3);
}

// Four threads fault at the same moment: the first writes the trace, the
// others wait for it. (They went on to the default action at once: the
// process died while the first was writing, leaving a log and no line, in
// every run.)
TEST_CASE("four threads crashing at once: one trace, one line, status as untraced", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "crash-segv4"}, dir);
  CHECK(s.plain.term_signal == 11);
  CHECK(s.plain.out == "crashing by segv4\n");
  CHECK_THAT(s.traced.err, Catch::Contains("the program crashed (signal 11)"));
  CHECK(TracerLines(s.traced.err).size() == 1);
  CheckSyncNames(s.trace, "marker_before_crash");
  CHECK(Goroutines(s.parsed).size() == 6);
}

TEST_CASE("a crash whose trace name is taken writes a numbered trace, like a normal exit",
          "[lifecycle]") {
  TempDir dir;
  std::ofstream(dir.File("x.trace")) << "someone else's file";
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("x.trace")};
  const ProcResult r = RunProcess({Lifecycle(), "crash-abort"}, o);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.term_signal == SIGABRT);
  CHECK_THAT(r.err, Catch::Contains("wrote a numbered trace next to"));
  CHECK(Names(dir) == std::vector<std::string>{"x.1.trace", "x.trace"});
  CHECK(ParseWithGo(dir.File("x.1.trace")).ok);
}

TEST_CASE("SIGTERM, SIGPIPE (default action) and a SIGTERM the program handles",
          "[lifecycle]") {
  struct Case {
    const char* mode;
    int sig;  // 0: exits 0
    const char* out;
  };
  const Case c = GENERATE(Case{"term-self", 15, "ending by term-self\n"},
                          Case{"sigpipe", 13, "ending by sigpipe\n"},
                          Case{"term-handled", 0, "ending by term-handled\nhandled: 1\n"});
  INFO("mode " << c.mode);
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), c.mode}, dir);
  CHECK(s.plain.out == c.out);
  CHECK(s.plain.term_signal == c.sig);
  CheckSyncNames(s.trace, "marker_before_exit");
  CheckSyncNames(s.trace, "marker_in_worker");
  const std::vector<std::string> lines = TracerLines(s.traced.err);
  REQUIRE(lines.size() == 1);
  if (c.sig != 0) {
    CHECK_THAT(lines[0], Catch::Contains("ended by signal " + std::to_string(c.sig)));
  } else {
    CHECK_THAT(lines[0], Catch::Contains("wrote"));
  }
}

TEST_CASE("SIGKILL after 1 s of work: tracewrap recovers the trace from the log",
          "[lifecycle]") {
  TempDir dir;
  const std::string out = dir.File("k.trace");
  const ProcResult r = Tracewrap({"-o", out, Lifecycle(), "kill-self"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.term_signal == 9);  // tracewrap dies as its program did
  CHECK(r.out == "killing myself\n");
  CHECK_THAT(r.err, Catch::Contains("recovered " + out));
  CHECK(Names(dir) == std::vector<std::string>{"k.trace", "k.trace.index.json"});
  const ParsedTrace t = ParseWithGo(out);
  INFO("go tool trace -d: " << t.error);
  REQUIRE(t.ok);
  CHECK(WebCheck(out).empty());
  // At most a flush interval (200 ms) and the last partial chunks are lost.
  REQUIRE(!t.events.empty());
  CHECK(t.events.back().ts - t.events.front().ts > 500'000'000);
  CheckSyncNames(out, "marker_before_kill");
  CheckSyncNames(out, "marker_in_worker");
}

TEST_CASE("a one-thread process killed while it waits: its trace and its row run to its reaping",
          "[lifecycle]") {
  // Its log stops at its last record, the start of the wait: the trace and
  // the index said 1 ms for a process that waited 0.6 s before the kill.
  TempDir dir;
  const std::string out = dir.File("w.trace");
  const ProcResult r = Tracewrap(
      {"-q", "-o", out, "--", "/bin/sh", "-c", "sleep 5 & p=$!; sleep 0.6; kill -9 $p; wait"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(out + ".index.json");
  INFO(index);
  const size_t row = index.find("\"argv\": [\"sleep\", \"5\"]");
  REQUIRE(row != std::string::npos);
  const size_t d = index.find("\"duration_ns\": ", row);
  REQUIRE(d != std::string::npos);
  CHECK(std::stoull(index.substr(d + 15)) >= 550'000'000);
  const size_t tr = index.find("\"trace\": \"", row);
  REQUIRE(tr != std::string::npos);
  const std::string trace = dir.File(index.substr(tr + 10, index.find('"', tr + 10) - tr - 10));
  const ParsedTrace t = ParseWithGo(trace);
  INFO(trace << ": " << t.error);
  REQUIRE(t.ok);
  REQUIRE(!t.events.empty());
  CHECK(t.events.back().ts - t.events.front().ts >= 550'000'000);
  CHECK(t.Count("GoSleep") == 1);  // still asleep at the end
  CHECK(t.Count("GoUnblock") == 0);
  CHECK(WebCheck(trace).empty());  // the end's extra Gomaxprocs too
}

TEST_CASE("SIGKILL without tracewrap: the log stays, gotrace recover reads it", "[lifecycle]") {
  TempDir dir;
  const std::string out = dir.File("k.trace");
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + out};
  const ProcResult r = RunProcess({Lifecycle(), "kill-self"}, o);
  CHECK(r.term_signal == 9);
  REQUIRE(fs::exists(out + ".gtlog"));
  // Strict encoding refuses a log without its end; recover takes it.
  ProcOptions q;
  q.unset_env = {"LD_PRELOAD"};
  const ProcResult strict = RunProcess({kGotrace, "encode", out + ".gtlog", "-o", out}, q);
  CHECK(strict.exit_code != 0);
  CHECK_THAT(strict.err, Catch::Contains("--lenient"));
  const ProcResult rec = RunProcess({kGotrace, "recover", out + ".gtlog", "-o", out}, q);
  INFO(rec.Describe() << "\n" << rec.err);
  REQUIRE(rec.Exited(0));
  const ParsedTrace t = ParseWithGo(out);
  INFO("go tool trace -d: " << t.error);
  REQUIRE(t.ok);
  CheckSyncNames(out, "marker_before_kill");
}

TEST_CASE("fork with a thread recording, a child with threads, vfork and posix_spawn",
          "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "fork-threads"}, dir);
  CHECK(s.plain.out ==
        "child 1 done\nfork child status 0, vfork 0, posix_spawn rc 0 status 0\n");
  // The parent: its two threads only.
  const std::set<uint64_t> parent = Goroutines(s.parsed);
  CHECK(parent.size() == 2);
  // One trace per process: the forked child, and the two /bin/sleep.
  const std::vector<std::string> names = Names(dir);
  INFO("files: " << Join(names));
  CHECK(CheckAllTraces(dir) == 4);
  size_t children_with_threads = 0;
  for (const std::string& n : names) {
    if (n == "scenario.trace") continue;
    CHECK(n.rfind("scenario.trace.", 0) == 0);
    const ParsedTrace c = ParseWithGo(dir.File(n));
    REQUIRE(c.ok);
    const std::set<uint64_t> gs = Goroutines(c);
    // None of the parent's threads (or events) in a child's trace.
    for (uint64_t g : gs) CHECK(parent.count(g) == 0);
    if (gs.size() == 2) {
      ++children_with_threads;
      CheckSyncNames(dir.File(n), "child_work");
    }
  }
  CHECK(children_with_threads == 1);
}

TEST_CASE("100 forks while 4 threads spin in malloc, mutexes and recorded sleeps (H12)",
          "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "fork-storm"}, dir, {}, /*web=*/false);
  CHECK(s.plain.out == "100 children answered\n");
  CHECK(Goroutines(s.parsed).size() == 5);
  // Every child that recorded anything wrote its own trace; a sample of
  // them must be valid (parsing all 100 would take seconds).
  size_t children = 0, parsed = 0;
  for (const std::string& n : Names(dir)) {
    CHECK(n.find(".gtlog") == std::string::npos);
    if (n == "scenario.trace") continue;
    ++children;
    if (children % 20 == 1) {
      const ParsedTrace c = ParseWithGo(dir.File(n));
      INFO(n << ": " << c.error);
      CHECK(c.ok);
      // The child's own thread only: nothing of the parent's four.
      CHECK(Goroutines(c).size() == 1);
      ++parsed;
    }
  }
  CHECK(children <= 100);
  CHECK(parsed >= 1);
}

TEST_CASE("SIGTERM blocked everywhere reaches the program's sigwait thread (H18)",
          "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "sigwait"}, dir);
  CHECK(s.plain.out == "sigwait got SIGTERM\n");
  CHECK(s.plain.Exited(0));
  CheckSyncNames(s.trace, "marker_before_exit");
}

TEST_CASE("a shell running several children: one valid trace per process", "[lifecycle]") {
  TempDir dir;
  // Forks that exec (true, ls, cat), a pipeline, a background job, a subshell
  // that does its own work, and finally an exec of the shell itself into a
  // traced program: the root's last image writes the requested path.
  const std::string script = "/bin/true; ls / > /dev/null; echo b | cat; (echo sub) ; "
                             "sleep 0.01 & wait; exec " + Lifecycle() + " exit-exit";
  ScenarioRun s = RunTraced({"/bin/sh", "-c", script}, dir);
  CHECK(s.plain.out == "b\nsub\nleaving by exit\n");
  CHECK(s.plain.Exited(4));
  CheckSyncNames(s.trace, "marker_before_exit");  // the requested path holds the last image
  const size_t traces = CheckAllTraces(dir);
  CHECK(traces >= 5);  // the root, true, ls, cat, sleep (+ forks that did work)
  for (const std::string& n : Names(dir)) CHECK(n.rfind("scenario.trace", 0) == 0);
  // Only the root speaks.
  CHECK(TracerLines(s.traced.err).size() == 1);
}

TEST_CASE("a shell's forks on their way to exec write no trace of their own", "[lifecycle]") {
  TempDir dir;
  // bash forks (dash uses vfork, whose child records nothing). Each fork
  // carries the shell's heap into the child, sampled at its exec:
  // that sample alone must not make a trace (it would double the traces, and
  // the cost, of every shell script and build).
  ScenarioRun s = RunTraced(
      {"/bin/bash", "-c", "for i in 1 2 3 4 5; do /bin/sleep 0.001; done; exec " + Lifecycle() + " exit-exit"},
      dir);
  CHECK(s.plain.Exited(4));
  // The requested path (the last image), the shell's image before that exec,
  // and one per /bin/sleep (a program that records nothing, /bin/true, has
  // no trace: the next case).
  CHECK(CheckAllTraces(dir) == 7);
  size_t images = 0;
  for (const std::string& n : Names(dir))
    if (std::count(n.begin(), n.end(), '.') == 3) ++images;  // scenario.trace.PID.N
  CHECK(images == 1);
}

TEST_CASE("a child that records nothing (/bin/true) writes no trace, one that sleeps does",
          "[lifecycle]") {
  // /bin/true allocates nothing, waits for nothing: under plain LD_PRELOAD
  // its log is removed at exit, as a shell's fork's is. (Its heap used to
  // show a sample: the tracer's own start-up test blocks initialised the
  // allocator, whose first block the exit-time sample then counted.)
  TempDir dir;
  ScenarioRun s = RunTraced({"/bin/bash", "-c", "/bin/true; /bin/true; /bin/sleep 0.001; exit 3"}, dir);
  CHECK(s.plain.Exited(3));
  INFO("files: " << Join(Names(dir)));
  CHECK(CheckAllTraces(dir) == 2);  // bash, sleep
  for (const std::string& n : Names(dir)) CHECK(n.find(".gtlog") == std::string::npos);
}

TEST_CASE("signals the parent left ignored stay ignored (nohup's SIGHUP, a shell's SIGPIPE)",
          "[lifecycle]") {
  // The tracer installs its termination and crash handlers with one call
  // per signal and learns the old action from it; an inherited SIG_IGN must
  // be put back before any signal can meet ours.
  TempDir dir;
  ScenarioRun s = RunTraced(
      {"/bin/bash", "-c",
       "trap '' HUP PIPE USR1 ABRT; exec /bin/sh -c 'kill -HUP $$; kill -PIPE $$; kill -USR1 $$; "
       "kill -ABRT $$; echo alive; exit 5'"},
      dir);
  CHECK(s.plain.out == "alive\n");
  CHECK(s.plain.Exited(5));
  // A signal left at its default still ends the program, traced or not.
  TempDir dir2;
  ScenarioRun t = RunTraced({"/bin/sh", "-c", "/bin/sleep 0.001; kill -USR2 $$; echo never"}, dir2);
  CHECK(t.plain.term_signal == SIGUSR2);
  CHECK(t.plain.out.empty());
}

TEST_CASE("stderr a pipe nobody reads: the summary line does not kill the program", "[lifecycle]") {
  // `prog 2>&1 | head -1` in CI: head has exited when the program ends, and
  // our summary line is the only write to the pipe. Untraced the program
  // exits 0; SIGPIPE's default action must not turn that into 141.
  TempDir dir;
  auto run = [&](bool traced, const char* shell_cmd) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    close(fds[0]);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      dup2(fds[1], 2);
      signal(SIGPIPE, SIG_DFL);
      if (traced) {
        setenv("LD_PRELOAD", PreloadLib().c_str(), 1);
        setenv("GOTRACE_OUT", dir.File("pipe.%p.trace").c_str(), 1);
      }
      execl("/bin/sh", "sh", "-c", shell_cmd, static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return status;
  };
  for (const char* cmd : {"exit 0", "exit 3", "echo to-the-pipe >&2; exit 0"}) {
    INFO(cmd);
    const int plain = run(false, cmd);
    const int traced = run(true, cmd);
    CHECK(traced == plain);
  }
  CHECK(CheckAllTraces(dir) == 3);
}

TEST_CASE("a termination signal while the trace is written at exit: the trace completes",
          "[lifecycle]") {
  // A pool's terminate() sends SIGTERM to workers that may already be
  // exiting. The signal must wait for the trace (then end the process as it
  // would have), not kill it halfway and leave only the log and a
  // temporary file behind.
  TempDir dir;
  ProcOptions o;
  // Inferred scheduling: the marker's waits expire at once and never leave
  // the CPU, so with the kernel's scheduling they show no block.
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("alarm.trace"),
           "GOTRACE_SCHED=infer"};
  const ProcResult traced = RunProcess({Lifecycle(), "alarm-at-exit"}, o);
  INFO(traced.Describe() << "\n" << traced.err);
  CHECK(traced.out == "armed\n");
  // Exited (the encode beat the timer) or ended by the deferred SIGALRM.
  CHECK(((traced.term_signal == 0 && traced.exit_code == 0) || traced.term_signal == SIGALRM));
  CHECK(CheckAllTraces(dir) == 1);  // and no .gtlog or temporary file left
  CheckSyncNames(dir.File("alarm.trace"), "marker_expired_waits");
}

TEST_CASE("a thread made with a raw clone() records nothing and corrupts nothing (H15)",
          "[lifecycle]") {
  // It shares the main thread's thread-local state, so its hooks would write
  // into the main thread's buffer at the same time as the main thread (a
  // corrupted log, no trace, 2 runs in 5 before). Its calls pass through
  // untraced; the main thread's 2000 sleeps are all there.
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    TempDir dir;
    // Inferred scheduling: every recorded sleep is a GoSleep (with the
    // kernel's, one that never left the CPU is none).
    ScenarioRun s =
        RunTraced({Lifecycle(), "raw-clone"}, dir, {"GOTRACE_SCHED=infer"}, /*web=*/round == 0);
    CHECK(s.plain.out == "raw clone done\n");
    CHECK(s.parsed.Count("GoSleep") == 2000);  // the main thread's, not the clone's
  }
}

TEST_CASE("a process made with a raw fork system call neither crashes nor writes its parent's log",
          "[lifecycle]") {
  // No atfork handler runs in it: it has the parent's recording state, and
  // its hooks record on. Its copy of the tracer's per-process memory is
  // fresh pages (MADV_WIPEONFORK): its records go nowhere (before, they
  // went into the parent's log through the shared mapping, and the
  // parent's trace lost a torn record).
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    TempDir dir;
    ScenarioRun s = RunTraced({Lifecycle(), "raw-fork"}, dir, {"GOTRACE_SCHED=infer"}, /*web=*/false);
    CHECK(s.plain.out == "child done\nchild status 7\n");
    CHECK(s.traced.err.find("incomplete") == std::string::npos);
    CHECK(s.traced.err.find("skipped") == std::string::npos);
    CHECK(s.parsed.Count("GoSleep") == 100);  // the parent's, not the child's
  }
}

TEST_CASE("a program that ends near its descriptor limit still gets its trace", "[lifecycle]") {
  // Soft limit 64, 62 descriptors open at exit, 64 with the tracer's two:
  // nothing is left for the encoder (its library, the log, the output, the
  // modules' ELF files) under the soft limit, so it is raised meanwhile.
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "fd-limit"}, dir);
  if (s.plain.out == "hard limit too low\n") {
    WARN("hard descriptor limit below 128: not tested");
    return;
  }
  CHECK(s.plain.out == "opened 59\n");
  CheckSyncNames(s.trace, "marker_fd_work");
}

TEST_CASE("started with stderr closed: no line of ours lands in the program's files",
          "[lifecycle]") {
  // The program's first file becomes descriptor 2; the summary line (normal
  // exit) and the recovery child's output (abort) must not go there.
  for (const char* how : {"exit", "crash"}) {
    INFO(how);
    TempDir dir;
    const std::string data = dir.File("data.txt");
    std::vector<std::string> argv = {Lifecycle(), "stderr-closed", data};
    if (std::string(how) == "crash") argv.push_back("crash");
    ProcOptions o;
    o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("closed.trace")};
    const ProcResult r = RunProcess(argv, o);
    INFO(r.Describe() << "\n" << r.err);
    CHECK(r.out == "data on descriptor 2\n");
    const std::string content = Slurp(data);
    CHECK(content == "data\n");
    CHECK(CheckAllTraces(dir) >= 1);
  }
}

TEST_CASE("started with stdout closed and a low descriptor limit: the log is not descriptor 1",
          "[lifecycle]") {
  // With the limit under 512 the log cannot move high; it must still not
  // take the free slot 1, or the program's output goes into the log.
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("out.trace")};
  const ProcResult traced = RunProcess({Lifecycle(), "stdout-closed"}, o);
  const ProcResult plain = RunProcess({Lifecycle(), "stdout-closed"});
  INFO(traced.Describe() << "\n" << traced.err);
  CHECK(traced.Exited(0));
  CHECK_THAT(plain.err, Catch::Contains("200 writes failed"));
  CHECK_THAT(traced.err, Catch::Contains("200 writes failed"));  // as untraced: EBADF
  CHECK(CheckAllTraces(dir) == 1);
}

TEST_CASE("faults the program's own handler recovers from are not crashes", "[lifecycle]") {
  // A SIGSEGV handler that siglongjmps out (a probe, a guard page): the
  // program goes on, so must tracing, with no "crashed" line.
  TempDir dir;
  // Inferred scheduling: one GoBlockCond per timed wait (with the kernel's,
  // a wait whose timeout passed while the thread was preempted shows none).
  ScenarioRun s = RunTraced({Lifecycle(), "segv-recover"}, dir, {"GOTRACE_SCHED=infer"});
  CHECK(s.plain.out == "faults handled: 3\n");
  CHECK(s.plain.Exited(0));
  CHECK_THAT(s.traced.err, !Catch::Contains("crashed"));
  CheckSyncNames(s.trace, "marker_after_fault");
  size_t waits = 0;
  for (const GoEvent* e : s.parsed.Find("GoBlockCond")) waits += e->g != 0;
  CHECK(waits == 6);  // 3 before and 3 after the faults
}

TEST_CASE("a crash signal sent to a program that ignores it changes nothing", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "segv-ignored"}, dir);
  CHECK(s.plain.out == "SIGSEGV ignored\n");
  CHECK(s.plain.Exited(0));
  CHECK_THAT(s.traced.err, !Catch::Contains("crashed"));
  CheckSyncNames(s.trace, "marker_after_fault");  // tracing went on
}

TEST_CASE("a fault handler of the program's that exits: status as untraced, trace written",
          "[lifecycle]") {
  // _exit from inside the handler: the process may be in any state there,
  // so the trace is written the crash way (a separate process).
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "segv-handler-exit"}, dir);
  CHECK(s.plain.out == "handler exits\n");
  CHECK(s.plain.Exited(42));
  CHECK_THAT(s.traced.err, Catch::Contains("ended in its own handler (signal 11)"));
  CheckSyncNames(s.trace, "marker_before_crash");
}

TEST_CASE("abort() with a SIGABRT handler that returns: dies as untraced, trace written",
          "[lifecycle]") {
  // glibc restores the default action itself (not through sigaction) and
  // raises again once the handler returns: the trace is written in between.
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "abort-handler-returns"}, dir);
  CHECK(s.plain.out == "abort handler returns\n");
  CHECK(s.plain.term_signal == SIGABRT);
  CHECK_THAT(s.traced.err, Catch::Contains("crashed (signal 6)"));
  CheckSyncNames(s.trace, "marker_before_crash");
}

TEST_CASE("2000 short-lived threads", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "short-threads", "2000"}, dir, {}, /*web=*/false);
  CHECK(s.plain.out == "2000 threads ran\n");
  // 2000 creations and main's in the start snapshot. (Who emits a creation
  // is not checked: with the kernel's records, a creation recorded while the
  // kernel had the creator off its CPU by a hair comes from g0.)
  CHECK(s.parsed.Count("GoCreate") == 2001);
  CHECK(s.parsed.Count("GoEnd") == 2000);
  CHECK(Goroutines(s.parsed).size() == 2001);
}

TEST_CASE("threads that allocate as they start: each created once, under its own id, and run",
          "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("create_reuse")}, dir, {}, /*web=*/false);
  CHECK(s.plain.out == "sum 8194016\n");
  // 64 creations by main (g != 0: not the start snapshot's), each of a
  // goroutine that then starts and ends; no other goroutine.
  std::set<uint64_t> created, started;
  for (const GoEvent& e : s.parsed.events) {
    if (e.name == "GoCreate" && e.g != 0) created.insert(e.args.at("g"));
    if (e.name == "GoStart") started.insert(e.g);
  }
  CHECK(created.size() == 64);
  for (uint64_t g : created) {
    INFO("goroutine " << g);
    CHECK(started.count(g) == 1);
  }
  CHECK(s.parsed.Count("GoEnd") == 64);
  CHECK(Goroutines(s.parsed).size() == 65);
}

TEST_CASE("a daemon that closes every descriptor, dup2s over them and chdirs", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "fd-closer"}, dir);
  CHECK(s.plain.out == "daemon work done\n");
  CheckSyncNames(s.trace, "marker_after_close");
  // Nothing went wrong inside the tracer: only the summary line.
  CHECK(TracerLines(s.traced.err).size() == 1);
  // A relative GOTRACE_OUT is against the directory the program started in,
  // not the one it moved to.
  ProcOptions o;
  o.cwd = dir.path();
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=rel.trace"};
  const ProcResult r = RunProcess({Lifecycle(), "fd-closer"}, o);
  INFO(r.err);
  CHECK(r.Exited(0));
  CHECK(ParseWithGo(dir.File("rel.trace")).ok);
}

// glibc's daemon(3) ends its parent with its own _exit, past every hook:
// with GOTRACE_OUT alone that process left its event log and no trace, and
// said nothing.
TEST_CASE("daemon(3): the parent glibc ends inside it writes its trace", "[lifecycle]") {
  TempDir dir;
  const std::string marker = dir.File("marker");
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace"),
           "GOTRACE_SCHED=infer"};
  const ProcResult r = RunProcess({Scenario("daemonize"), "daemon3", marker}, o);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("gotrace: wrote"));
  CHECK_FALSE(fs::exists(dir.File("d.trace.gtlog")));
  const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
  INFO(t.error);
  CHECK(t.ok);
  // The daemon makes its marker 2 s later, then writes its own trace.
  for (int i = 0; i < 80 && (!fs::exists(marker) || !FilesEnding(dir.path(), ".gtlog").empty());
       ++i) {
    usleep(100 * 1000);
  }
  CHECK(fs::exists(marker));
}

TEST_CASE("failed execs: tracing continues, no descriptor left behind", "[lifecycle]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Lifecycle(), "exec-fail"}, dir);
  CHECK(s.plain.out ==
        "execve returned -1 errno ENOENT, execvp errno ENOENT\n"
        "exec of a non-program: errno ENOEXEC, descriptors +0\n");
  // The exec that failed in the kernel split the trace: the image before it
  // is scenario.trace.PID.0, what came after it the requested path.
  CheckSyncNames(s.trace, "marker_after_failed_exec");
  const std::vector<std::string> names = Names(dir);
  REQUIRE(names.size() == 2);
  const std::string before = names[0] == "scenario.trace" ? names[1] : names[0];
  CHECK(before.rfind("scenario.trace.", 0) == 0);
  CheckSyncNames(dir.File(before), "marker_before_exit");
  CHECK(CheckAllTraces(dir) == 2);
}

// Switches take 1 or 0 (yes/no, true/false, on/off): anything else was
// taken as 1, silently (GOTRACE_DISABLE=x turned tracing off).
TEST_CASE("a switch variable with a value that is no switch: one line, the default",
          "[lifecycle]") {
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("s.trace"), "GOTRACE_DISABLE=x",
           "GOTRACE_KEEP_LOG=maybe"};
  const ProcResult r = RunProcess({Lifecycle(), "exit-return"}, o);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(3));
  CHECK_THAT(r.err, Catch::Contains("ignoring GOTRACE_DISABLE='x': expected 1 or 0"));
  CHECK_THAT(r.err, Catch::Contains("ignoring GOTRACE_KEEP_LOG='maybe': expected 1 or 0"));
  CHECK(ParseWithGo(dir.File("s.trace")).ok);        // traced
  CHECK(FilesEnding(dir.path(), ".gtlog").empty());  // the log not kept
  // The words: GOTRACE_QUIET=Yes is 1, no line at all.
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("q.trace"), "GOTRACE_QUIET=Yes"};
  const ProcResult q = RunProcess({Lifecycle(), "exit-return"}, o);
  INFO(q.err);
  CHECK(q.Exited(3));
  CHECK(TracerLines(q.err).empty());
  CHECK(ParseWithGo(dir.File("q.trace")).ok);
}

TEST_CASE("an unwritable output directory: one line, the program runs", "[lifecycle]") {
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("missing/t.trace")};
  const ProcResult plain = RunProcess({Lifecycle(), "exit-exit"});
  const ProcResult r = RunProcess({Lifecycle(), "exit-exit"}, o);
  CHECK(r.out == plain.out);
  CHECK(r.Exited(4));
  const std::vector<std::string> lines = TracerLines(r.err);
  INFO(r.err);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Catch::Contains("No such file or directory"));
  CHECK_THAT(lines[0], Catch::Contains("tracing is off"));
}

TEST_CASE("a full disk: recording stops with one line, the program runs", "[lifecycle]") {
  // A 192 KiB tmpfs in a private mount namespace; skipped where mounting is
  // not allowed (an unprivileged container). The log grows with fallocate,
  // so a full disk is an error the tracer sees (never a SIGBUS in a thread
  // writing its mapped slot): recording stops with one line, the program
  // runs on, and what was recorded becomes a valid trace (it fits: the log
  // is removed first).
  TempDir dir;
  const std::string mnt = dir.File("small");
  fs::create_directory(mnt);
  const std::string script =
      "mount -t tmpfs -o size=192k tmpfs '" + mnt + "' || exit 99\n"
      "LD_PRELOAD='" + PreloadLib() + "' GOTRACE_OUT='" + mnt + "/t.trace' '" + Lifecycle() +
      "' short-threads 6000\n"
      "status=$?\n"
      "cp '" + mnt + "/t.trace' '" + dir.File("full.trace") + "' || exit 98\n"
      "exit $status\n";
  ProcOptions o;
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT"};
  const ProcResult r = RunProcess({"unshare", "-m", "/bin/sh", "-c", script}, o);
  if (r.exit_code == 99 || r.spawn_failed || r.exit_code == 1) {
    WARN("cannot mount a tmpfs here (" << r.Describe() << "): " << r.err);
    return;
  }
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK(r.out == "6000 threads ran\n");
  // Recording stops there (the hooks pass through from then on: nothing
  // more is recorded, so a "gaps" line appears only if a thread already
  // had a record in hand).
  const std::vector<std::string> lines = TracerLines(r.err);
  REQUIRE(lines.size() >= 2);
  REQUIRE(lines.size() <= 3);
  CHECK_THAT(lines[0], Catch::Contains("No space left on device"));
  CHECK_THAT(lines[0], Catch::Contains("recording stopped"));
  CHECK_THAT(lines[1], Catch::Contains("wrote "));
  if (lines.size() == 3)
    CHECK_THAT(lines[2], Catch::Contains("the trace has gaps") &&
                             Catch::Contains("dropped when recording stopped"));
  CHECK(ValidateTrace(dir.File("full.trace")).empty());
}

TEST_CASE("a steady run: tracer memory stays flat", "[lifecycle]") {
  // The 60 s version is scripts/bench-memory; this one is short enough for
  // the suite and still spills many times over.
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("s.trace")};
  const ProcResult r = RunProcess({Lifecycle(), "steady", "3", "50000", "rss"}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  long sleeps = 0, rss_1s = 0, rss_end = 0;
  {
    std::istringstream in(r.err);
    for (std::string w; in >> w;) {
      if (w == "sleeps") in >> sleeps;
      if (w == "rss_kib_1s") in >> rss_1s;
      if (w == "rss_kib_end") in >> rss_end;
    }
  }
  CHECK(sleeps > 10000);
  REQUIRE(rss_1s > 0);
  // Every thread's buffer is fixed; nothing else grows with the run length
  // here (the stacks repeat). 2 s more of recording must not add 4 MiB.
  CHECK(rss_end - rss_1s < 4096);
}

}  // namespace
}  // namespace gotrace::testing
