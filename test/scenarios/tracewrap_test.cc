// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/tracewrap_test.cc - the scripts/tracewrap launcher -===//
//
// Runs scripts/tracewrap (the source-tree copy, and an installed copy) on real
// programs: options become GOTRACE_* variables, the program's exit status,
// signal and arguments pass through exec unchanged, and programs the preload
// cannot reach (static: H28; setuid, setgid, capabilities: H29) are refused
// before they run (DESIGN.md §6, STYLE.md G15).
//===----------------------------------------------------------------------===//
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

namespace fs = std::filesystem;

const std::string kTracewrap = std::string(GOTRACE_SOURCE_DIR) + "/scripts/tracewrap";

std::string Canonical(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::canonical(p, ec);
  return ec ? p : c.string();
}

// Variables of the test's own environment that would change what tracewrap or
// the traced program does.
const std::vector<std::string> kUnset = {"LD_PRELOAD",     "GOTRACE_OUT",    "GOTRACE_UNWIND",
                                         "GOTRACE_DEPTH",  "GOTRACE_EVENTS", "GOTRACE_QUIET",
                                         "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG"};

// Runs `script args...` in dir. GOTRACE_LIB points at this build's library
// unless `lib_env` is false: the source-tree copy would otherwise look in
// $source/build, which need not be the build under test.
ProcResult Wrap(const std::vector<std::string>& args, const TempDir& dir,
                std::vector<std::string> env = {}, bool lib_env = true,
                const std::string& script = kTracewrap) {
  std::vector<std::string> argv = {script};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = kUnset;
  if (lib_env) env.push_back("GOTRACE_LIB=" + PreloadLib());
  else
    o.unset_env.push_back("GOTRACE_LIB");
  // Exact counts of blocks: the inferred timeline (see RunTraced).
  if (std::none_of(env.begin(), env.end(),
                   [](const std::string& v) { return v.rfind("GOTRACE_SCHED=", 0) == 0; })) {
    env.push_back("GOTRACE_SCHED=infer");
  }
  o.env = env;
  return RunProcess(argv, o);
}

// tracewrap as a shell command, with this build's library; `sched` adds
// GOTRACE_SCHED=infer (see Wrap).
std::string TracewrapCommand(bool infer = true) {
  return "env GOTRACE_LIB=" + PreloadLib() + (infer ? " GOTRACE_SCHED=infer " : " ") + kTracewrap;
}

// A bash script run in dir, the test's GOTRACE_* variables unset.
ProcResult Script(const TempDir& dir, const std::string& script) {
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = kUnset;
  return RunProcess({"/bin/bash", "-c", script}, o);
}

// The value of NAME=... in `env` output, or "<unset>".
std::string EnvValue(const std::string& env_out, const std::string& name) {
  const std::string key = "\n" + name + "=";
  const std::string text = "\n" + env_out;
  const size_t at = text.find(key);
  if (at == std::string::npos) return "<unset>";
  const size_t b = at + key.size();
  return text.substr(b, text.find('\n', b) - b);
}

void WriteFile(const std::string& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

// Compiles a hello-world with extra flags (e.g. -static) with the system C
// compiler; "" if the toolchain cannot (then the caller WARNs and skips).
std::string CompileHello(const TempDir& dir, const std::string& name,
                         const std::vector<std::string>& flags) {
  const std::string out = dir.File(name);
  std::vector<std::string> argv = {"cc"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-O1", "-x", "c", "-", "-o", out});
  ProcOptions o;
  o.stdin_data = "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n";
  const ProcResult r = RunProcess(argv, o);
  if (!r.Exited(0) || !fs::exists(out)) {
    WARN("cannot build a hello-world with cc " << flags[0] << ": " << r.Describe() << " "
                                              << r.err);
    return "";
  }
  return out;
}

TEST_CASE("tracewrap: traces a program into the -o path", "[tracewrap]") {
  TempDir dir;
  const std::string out = dir.File("sleepers.trace");
  const ProcResult plain = RunProcess({Scenario("sleepers")});
  const ProcResult r = Wrap({"-o", out, "--", Scenario("sleepers")}, dir);
  INFO(r.Describe() << "\nstderr:\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == plain.out);
  CHECK(r.out == "slept\n");
  // The library's summary line is the only thing on stderr.
  CHECK_THAT(r.err, Catch::StartsWith("gotrace: wrote "));
  CHECK_THAT(r.err, Catch::Contains("view with: go tool trace"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(FilesEnding(dir.path(), ".gtlog").empty());
  const ParsedTrace t = ParseWithGo(out);
  INFO("go tool trace -d: " << t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 45);
}

TEST_CASE("tracewrap: options become GOTRACE_* variables", "[tracewrap]") {
  TempDir dir;
  SECTION("each option reaches the program's environment") {
    const ProcResult r = Wrap({"-q", "-o", "t.%p.trace", "--unwind", "none", "--depth", "007",
                               "--events=sync,io", "--", "env"},
                              dir, {"LD_PRELOAD=/nonexistent/libother.so"});
    INFO(r.Describe() << "\nstderr:\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK(EnvValue(r.out, "GOTRACE_OUT") == "t.%p.trace");
    CHECK(EnvValue(r.out, "GOTRACE_UNWIND") == "none");
    CHECK(EnvValue(r.out, "GOTRACE_DEPTH") == "7");
    CHECK(EnvValue(r.out, "GOTRACE_EVENTS") == "sync,io");
    CHECK(EnvValue(r.out, "GOTRACE_QUIET") == "1");
    // Ours first, the user's preload kept after it.
    CHECK(EnvValue(r.out, "LD_PRELOAD") ==
          Canonical(PreloadLib()) + ":/nonexistent/libother.so");
    CHECK(FilesEnding(dir.path(), ".trace").size() == 1);  // t.<pid>.trace
    // Every mode is accepted (issue 14 added auto, the default).
    for (const char* mode : {"auto", "fp", "libunwind"}) {
      const ProcResult m = Wrap({"-q", "--unwind", mode, "--", "env"}, dir);
      INFO(mode << ": " << m.Describe() << "\nstderr:\n" << m.err);
      REQUIRE(m.Exited(0));
      CHECK(EnvValue(m.out, "GOTRACE_UNWIND") == mode);
    }
  }
  SECTION("without options nothing but LD_PRELOAD is set") {
    const ProcResult r = Wrap({"env"}, dir);
    REQUIRE(r.Exited(0));
    CHECK(EnvValue(r.out, "LD_PRELOAD") == Canonical(PreloadLib()));
    CHECK(EnvValue(r.out, "GOTRACE_OUT") == "<unset>");
    CHECK(EnvValue(r.out, "GOTRACE_QUIET") == "<unset>");
    // The default output name, in the working directory. (Not checked on
    // `env`'s stderr: coreutils close stderr in an atexit handler, before the
    // library prints its summary.)
    const ProcResult s = Wrap({Scenario("sleepers")}, dir);
    REQUIRE(s.Exited(0));
    CHECK_THAT(s.err, Catch::StartsWith("gotrace: wrote gotrace."));
    CHECK(FilesEnding(dir.path(), ".trace").size() == 2);
  }
  SECTION("-q, --depth and --events take effect in the library") {
    const std::string out = dir.File("q.trace");
    // (Inferred scheduling: with the kernel's, the untraced joins still
    // show, as blocks outside any recorded call.)
    const ProcResult r = Wrap({"--quiet", "--output=" + out, "--depth", "4", "--events",
                               "sleep", "--unwind=fp", "--sched=infer", Scenario("sleepers")},
                              dir);
    INFO(r.Describe() << "\nstderr:\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK(r.err.empty());
    const ParsedTrace t = ParseWithGo(out);
    INFO(t.error);
    REQUIRE(t.ok);
    CHECK(t.Count("GoSleep") == 45);
    CHECK(t.Count("GoBlock") == 0);  // the joins are "sync", which is off
  }
}

TEST_CASE("tracewrap: exit status and signals pass through", "[tracewrap]") {
  TempDir dir;
  const std::string out = dir.File("x.trace");
  SECTION("exit 3") {
    const ProcResult plain = RunProcess({"sh", "-c", "exit 3"});
    REQUIRE(plain.Exited(3));
    const ProcResult r = Wrap({"-q", "-o", out, "--", "sh", "-c", "exit 3"}, dir);
    INFO(r.Describe() << "\n" << r.err);
    CHECK(r.Exited(3));
  }
  SECTION("killed by SIGTERM") {
    const std::vector<std::string> prog = {"sh", "-c", "echo before; kill -TERM $$; echo after"};
    const ProcResult plain = RunProcess(prog);
    REQUIRE(plain.term_signal == 15);
    std::vector<std::string> args = {"-q", "-o", out, "--"};
    args.insert(args.end(), prog.begin(), prog.end());
    const ProcResult r = Wrap(args, dir);
    INFO(r.Describe() << "\n" << r.err);
    CHECK(r.term_signal == 15);
    CHECK(r.out == plain.out);
    CHECK(r.out == "before\n");
  }
}

TEST_CASE("tracewrap: a process killed at once is recovered with what it recorded",
          "[tracewrap]") {
  // Everything a thread records is in the log the moment it is recorded
  // (issue 20), so even a process killed right after it started leaves its
  // start in the log: tracewrap recovers it and says how many events the
  // trace holds, never that it "recorded nothing".
  TempDir dir;
  const std::string out = dir.File("k.trace");
  const ProcResult r = Wrap({"-o", out, "--", "sh", "-c", "kill -KILL $$"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.term_signal == SIGKILL);
  CHECK_THAT(r.err, Catch::Contains("recovered " + out + " ("));
  CHECK_THAT(r.err, Catch::Contains(" events) from the log of a process killed"));
  CHECK_THAT(r.err, !Catch::Contains("recorded nothing"));
  CHECK_THAT(r.err, !Catch::Contains("could not recover"));
  const ParsedTrace t = ParseWithGo(out);
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoCreate") >= 1);
  CHECK_FALSE(fs::exists(out + ".gtlog"));
}

TEST_CASE("tracewrap --paused: the end names the windows, the index lists the program",
          "[tracewrap]") {
  // It said "no trace was written ... the tracer recorded nothing" after
  // windows had been written, and the index listed no process at all.
  TempDir dir;
  const std::string cmd =
      kTracewrap + " --paused --signal USR2 -o " + dir.File("p.trace") +
      " -- /bin/sleep 1.2 & t=$!; sleep 0.3; kill -USR2 $t; sleep 0.3; kill -USR2 $t; wait $t";
  const ProcResult r =
      Wrap({"-c", cmd}, dir, {}, true, "/bin/bash");  // (a shell running tracewrap)
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("the run's trace windows: " + dir.File("p.trace.w1")));
  CHECK_THAT(r.err, !Catch::Contains("no trace was written"));
  CHECK(ParseWithGo(dir.File("p.trace.w1")).ok);
  const std::string index = Slurp(dir.File("p.trace.index.json"));
  INFO(index);
  CHECK(index.find("\"argv\": [\"/bin/sleep\", \"1.2\"]") != std::string::npos);
  CHECK(index.find("\"exit\": {\"code\":0}, \"trace\": null") != std::string::npos);
  // No window opened: it says so, not that the tracer recorded nothing.
  const ProcResult n = Wrap({"--paused", "-o", dir.File("n.trace"), "--", "/bin/true"}, dir);
  INFO(n.err);
  CHECK(n.Exited(0));
  CHECK_THAT(n.err, Catch::Contains("the program started paused and no trace window was opened"));
  CHECK_THAT(n.err, !Catch::Contains("recorded nothing"));
  // Nor with several processes: the table said their windows were below,
  // with none below, then that the tracer recorded nothing.
  const ProcResult m =
      Wrap({"--paused", "-o", dir.File("m.trace"), "--", "/bin/sh", "-c", "sleep 0.1; true"}, dir);
  INFO(m.err);
  CHECK(m.Exited(0));
  CHECK_THAT(m.err, Catch::Contains("2 ended paused (no trace window was opened)"));
  CHECK_THAT(m.err,
             Catch::Contains("the run's processes were paused and no trace window was opened"));
  CHECK_THAT(m.err, !Catch::Contains("recorded nothing") && !Catch::Contains("windows are below"));
}

TEST_CASE("tracewrap --paused: gotrace ctl on tracewrap's pid talks to its program",
          "[tracewrap]") {
  // README's example, `tracewrap --paused -- server &` then `gotrace ctl $!
  // start`: $! is tracewrap's, and ctl said it had no control channel.
  TempDir dir;
  const std::string ctl = std::string(GOTRACE_BUILD_DIR) + "/gotrace ctl";
  const ProcResult r =
      Script(dir, TracewrapCommand(false) + " --paused -q -o " + dir.File("c.trace") +
                      " -- /bin/sleep 1.5 & t=$!; sleep 0.5; " + ctl +
                      " $t start && sleep 0.3 && " + ctl + " $t stop; wait $t");
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.out, Catch::Contains("ok: recording window 1 into " + dir.File("c.trace.w1")));
  CHECK_THAT(r.out, Catch::Contains("ok: wrote " + dir.File("c.trace.w1")));
  CHECK(ParseWithGo(dir.File("c.trace.w1")).ok);
}

TEST_CASE("tracewrap: a launcher killed by SIGKILL: the next run moves its logs out of memory",
          "[tracewrap]") {
  // Its run's directory on tmpfs kept the logs until reboot, and nobody
  // was told. The program sleeps on after the kill (its log is held open:
  // left alone), then ends; the next run moves the log next to where the
  // trace would have gone, says so, and removes the directory.
  TempDir dir;
  const std::string cmd = "TW=" + kTracewrap + "; $TW -q -o " + dir.File("k.trace") +
                          " -- /bin/sleep 0.6 & t=$!; sleep 0.3; kill -9 $t; " + "$TW -o " +
                          dir.File("a.trace") + " -- /bin/true; sleep 0.6; " + "$TW -o " +
                          dir.File("b.trace") + " -- /bin/true & " + "$TW -o " +
                          dir.File("c.trace") + " -- /bin/true & wait";
  const ProcResult r = Wrap({"-c", cmd}, dir, {}, true, "/bin/sh");  // (a shell running tracewrap)
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  // While the sleep ran, its log was its own; then it was moved, once, by
  // one of the two runs that started together.
  size_t said = 0;
  for (size_t at = r.err.find("whose launcher was killed"); at != std::string::npos;
       at = r.err.find("whose launcher was killed", at + 1))
    ++said;
  CHECK(said == 1);
  CHECK_THAT(r.err, Catch::Contains("left 1 event log(s): moved to " + dir.path()));
  REQUIRE(fs::exists(dir.File("k.trace.gtlog")));
  const ProcResult rec = RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "recover", "-q",
                                     dir.File("k.trace.gtlog"), "-o", dir.File("k.trace")});
  INFO(rec.err);
  CHECK(rec.Exited(0));
  CHECK(ParseWithGo(dir.File("k.trace")).ok);
}

// The run directories on tmpfs (/dev/shm/tracewrap.*) whose launcher file
// names `outdir`, as their runs' output directory.
size_t RunDirsNaming(const std::string& outdir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator("/dev/shm")) {
    const std::string launcher = e.path().string() + "/launcher";
    if (e.path().filename().string().rfind("tracewrap.", 0) != 0 || !fs::exists(launcher)) continue;
    n += Slurp(launcher).find(outdir + "\n") != std::string::npos;
  }
  return n;
}

TEST_CASE(
    "tracewrap: a process that outlives the run and is killed: the next run moves its log out of "
    "memory",
    "[tracewrap][sweep]") {
  // A daemon the job started, killed by SIGKILL after the run ended (a
  // PostgreSQL backend): its log stayed in /dev/shm for good, as nothing
  // swept a run whose launcher ended normally. Then the same with an
  // output directory removed meanwhile: the next run anywhere removes the
  // logs, which have nowhere to go. (Each job waits a little first: its
  // sleep makes its log at its nanosleep, staging.)
  TempDir dir;
  const std::string gone = dir.File("gone");
  fs::create_directory(gone);
  const std::string cmd =
      "TW=" + kTracewrap + "; " + "$TW -q -o " + dir.File("d.trace") +
      " -- sh -c '/bin/sleep 30 & echo $! > " + dir.File("p1") + "; sleep 0.2'; " + "$TW -q -o " +
      gone + "/g.trace -- sh -c '/bin/sleep 30 & echo $! > " + dir.File("p2") + "; sleep 0.2'; " +
      "kill -9 $(cat " + dir.File("p1") + ") $(cat " + dir.File("p2") + "); rm -r " + gone +
      "; sleep 0.2; " + "$TW -o " + dir.File("e.trace") + " -- /bin/true";
  const ProcResult r = Wrap({"-c", cmd}, dir, {}, true, "/bin/sh");  // (a shell running tracewrap)
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("processes that outlived a run (launcher pid ") &&
                        Catch::Contains("left 1 event log(s): moved to " + dir.path()));
  CHECK_THAT(r.err, Catch::Contains("left 1 event log(s) for " + gone +
                                    ", which no longer exists: removed"));
  const std::string pid = Slurp(dir.File("p1")).substr(0, Slurp(dir.File("p1")).find('\n'));
  const std::string log = dir.File("d.trace." + pid + ".gtlog");
  REQUIRE(fs::exists(log));
  const ProcResult rec = RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "recover", "-q",
                                     log, "-o", dir.File("d.trace." + pid)});
  INFO(rec.err);
  CHECK(rec.Exited(0));
  const ParsedTrace t = ParseWithGo(dir.File("d.trace." + pid));
  INFO(t.error);
  CHECK(t.ok);
  CHECK(t.Count("GoSleep") == 1);  // killed in its sleep
  // Neither run's directory is left on tmpfs.
  CHECK(RunDirsNaming(dir.path()) == 0);
  CHECK(RunDirsNaming(gone) == 0);
}

TEST_CASE("tracewrap: a log made after its run ended, its process killed: the next run says so",
          "[tracewrap]") {
  // The job's background subshell blocks opening a FIFO until the run has
  // ended, then makes its log (next to its trace: no run to leave it to)
  // and execs a sleep, which is killed. No index lists it; its log alone
  // stayed, and no run said a word of it.
  TempDir dir;
  const std::string fifo = dir.File("f");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  const std::string cmd = "TW=" + kTracewrap + "; $TW -q -o " + dir.File("d.trace") +
                          " -- sh -c '(exec /bin/sleep 30 < " + fifo + ") & echo $! > " +
                          dir.File("p") + "'; sleep 0.2; echo x > " + fifo +
                          "; sleep 0.3; kill -9 $(cat " + dir.File("p") + "); sleep 0.2; $TW -o " +
                          dir.File("e.trace") + " -- /bin/true";
  const ProcResult r = Wrap({"-c", cmd}, dir, {}, true, "/bin/sh");  // (a shell running tracewrap)
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  const std::string pid = Slurp(dir.File("p")).substr(0, Slurp(dir.File("p")).find('\n'));
  const std::string log = dir.File("d.trace." + pid + ".gtlog");
  REQUIRE(fs::exists(log));
  CHECK_THAT(r.err, Catch::Contains(dir.path() + " holds 1 event log(s) of processes that ended "
                                                 "without writing their traces") &&
                        Catch::Contains(log));
  // A log kept on purpose (GOTRACE_KEEP_LOG) has its trace beside it: the
  // run after it does not count it (the killed one's is still there).
  const ProcResult k =
      Wrap({"-o", dir.File("k.trace"), "--", "/bin/true"}, dir, {"GOTRACE_KEEP_LOG=1"});
  INFO(k.err);
  CHECK(k.Exited(0));
  REQUIRE(fs::exists(dir.File("k.trace.gtlog")));
  const ProcResult q = Wrap({"-o", dir.File("q.trace"), "--", "/bin/true"}, dir);
  INFO(q.err);
  CHECK(q.Exited(0));
  CHECK_THAT(q.err, Catch::Contains(" holds 1 event log(s) ") && Catch::Contains(log));
}

TEST_CASE("tracewrap: a background job that outlives the program keeps its log and traces itself",
          "[tracewrap]") {
  // Its log is still open when the program ends: not a killed process's. It
  // must be left alone (recovering it, or removing it as empty, took the log
  // from under the job, whose own trace then failed).
  // (The program waits a little first: a job that has recorded nothing
  // worth a trace yet has no log at all, staging, and is not listed.)
  TempDir dir;
  const ProcResult r = Wrap(
      {"-o", dir.File("bg.trace"), "--", "sh", "-c", "(sleep 1.5; echo bg-done >&2) & sleep 0.2; echo fg"},
      dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("still running"));
  CHECK_THAT(r.err, !Catch::Contains("recorded nothing"));
  CHECK_THAT(r.err, !Catch::Contains("recovered"));
  const std::string index = Slurp(dir.File("bg.trace.index.json"));
  INFO(index);
  CHECK(index.find("\"running\": true") != std::string::npos);
  // The job ends later and writes its own traces (the subshell and sleep).
  size_t traces = 0;
  for (int i = 0; i < 100; ++i) {
    usleep(50000);
    traces = 0;
    size_t logs = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      const std::string n = e.path().filename().string();
      if (n.find(".gtlog") != std::string::npos) ++logs;
      else if (n.rfind("bg.trace.", 0) == 0) ++traces;
    }
    if (logs == 0 && traces >= 1) break;
  }
  CHECK(traces >= 1);
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    CHECK(n.find(".gtlog") == std::string::npos);
    if (n.rfind("bg.trace", 0) == 0 && n.find(".index.json") == std::string::npos) {
      INFO(n);
      CHECK(ParseWithGo(e.path().string()).ok);
    }
  }
  // The last of the job's processes removed the run's directory on tmpfs,
  // the launcher file left for a sweep with it.
  size_t left = 1;
  for (int i = 0; i < 40 && (left = RunDirsNaming(dir.path())) != 0; ++i) usleep(50000);
  CHECK(left == 0);
}

TEST_CASE("tracewrap: a fork still running at the end is listed under its parent's command line",
          "[tracewrap]") {
  // A fork says its command line at its end (its title); one still running
  // when the run ends (a daemon's fork: redis-server --daemonize) had said
  // nothing, and its row read "argv": [], "exe": "".
  TempDir dir;
  const std::string script = "mkfifo " + dir.File("F") + "; ( exec 3<>" + dir.File("F") +
                             "; read -t 1 v <&3 ) & sleep 0.3; echo fg";
  const ProcResult r = Wrap({"-q", "-o", dir.File("r.trace"), "--", "bash", "-c", script}, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  const std::string index = Slurp(dir.File("r.trace.index.json"));
  INFO(index);
  size_t running = 0;
  for (size_t at = index.find("\"running\": true"); at != std::string::npos;
       at = index.find("\"running\": true", at + 1)) {
    const size_t row_at = index.rfind("{\"pid\": ", at);
    const std::string row = index.substr(row_at, at - row_at);
    INFO(row);
    ++running;
    CHECK_THAT(row, Catch::Contains("\"argv\": [\"bash\", \"-c\", ") &&
                        Catch::Contains("\"exe\": \"/usr/bin/bash\""));
  }
  CHECK(running == 1);
}

TEST_CASE("tracewrap: a run that writes no trace says so", "[tracewrap]") {
  // env -i drops LD_PRELOAD: echo runs untraced and env recorded nothing.
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("n.trace"), "--", "env", "-i", "/bin/echo", "hi"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK(r.out == "hi\n");
  CHECK_THAT(r.err, Catch::Contains("no trace was written"));
  // A run that writes one does not say it.
  const ProcResult t = Wrap({"-o", dir.File("t.trace"), "--", "/bin/true"}, dir);
  CHECK_THAT(t.err, !Catch::Contains("no trace was written"));
}

TEST_CASE("tracewrap: the program's signal dispositions are its own (^C reaches it)",
          "[tracewrap]") {
  // tracewrap ignores INT and QUIT while it waits; its child must not.
  TempDir dir;
  const std::vector<std::string> prog = {"grep", "^SigIgn", "/proc/self/status"};
  const ProcResult plain = RunProcess(prog);
  std::vector<std::string> args = {"-q", "-o", dir.File("s.trace"), "--"};
  args.insert(args.end(), prog.begin(), prog.end());
  const ProcResult r = Wrap(args, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK(r.out == plain.out);
}

TEST_CASE("tracewrap: INT sent to tracewrap's pid reaches the program", "[tracewrap]") {
  // A terminal's ^C reaches the whole process group, the program itself;
  // one a process sends to tracewrap alone (a CI runner, a supervisor,
  // Popen.send_signal) was dropped: the program slept on and tracewrap
  // exited 0. Sent by a Python driver (a shell's background job would start
  // with INT ignored).
  if (access("/usr/bin/python3", X_OK) != 0) {
    WARN("skipped: needs /usr/bin/python3");
    return;
  }
  TempDir dir;
  const std::string prog =
      "import time\n"
      "try:\n"
      "    time.sleep(20)\n"
      "except KeyboardInterrupt:\n"
      "    print('interrupted', flush=True)\n"
      "    raise SystemExit(9)\n";
  const std::string driver =
      "import signal, subprocess, sys, time\n"
      "p = subprocess.Popen(sys.argv[1:])\n"
      "time.sleep(1.0)\n"
      "p.send_signal(signal.SIGINT)\n"
      "print('status', p.wait(timeout=15), flush=True)\n";
  const ProcResult r = RunProcess({"/usr/bin/python3", "-c", driver, kTracewrap, "-q", "-o",
                                   dir.File("i.trace"), "--", "/usr/bin/python3", "-c", prog});
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "interrupted\nstatus 9\n");
}

TEST_CASE("tracewrap: a signal sent to the process group reaches the program once", "[tracewrap]") {
  // A CI runner cancelling a job, timeout(1) or `kill -- -PGID` signal the
  // whole process group: the program got the signal itself, then again from
  // tracewrap, which passes on what it gets (it cannot tell a signal sent
  // to its pid from one sent to its group). A program that counts them (a
  // graceful stop, then a forced one) was forced at the first. Two group
  // kills and one of tracewrap's pid: three deliveries, as untraced; with a
  // one-shot handler (SA_RESETHAND), one group kill runs it once and the
  // program lives on, as untraced (a second delivery would end it).
  TempDir dir;
  const std::string prog = Scenario("term_count");
  for (const bool traced : {false, true}) {
    INFO((traced ? "traced" : "untraced"));
    const std::string run =
        traced ? TracewrapCommand() + " -q -o " + dir.File("g.trace") + " -- " : std::string();
    const std::string cmd =
        "setsid " + run + prog + " 2000 & p=$!; sleep 0.6; kill -TERM -- -$p; sleep 0.4; " +
        "kill -TERM -- -$p; sleep 0.4; kill -TERM $p; wait $p; echo status $?; " + "setsid " + run +
        prog + " 1500 --oneshot & p=$!; sleep 0.6; kill -TERM -- -$p; " + "wait $p; echo status $?";
    const ProcResult r = Script(dir, cmd);
    INFO(r.Describe() << "\n" << r.out << r.err);
    REQUIRE(r.Exited(0));
    CHECK(r.out == "TERM 3\nstatus 0\nTERM 1\nstatus 0\n");
  }
}

// Signals no handler can catch, sent to tracewrap's pid alone (a runner
// that kills or stops the pid it started): untraced they reached the
// program, which was that pid. A SIGKILL of tracewrap left the program
// running (reparented to init); a TSTP stopped tracewrap alone.
TEST_CASE("tracewrap: a SIGKILL or TSTP of its pid alone reaches the program", "[tracewrap]") {
  TempDir dir;
  const std::string tw = TracewrapCommand();
  const std::string find =
      "for i in $(seq 100); do p=$(pgrep -P $tw -x %s) && break; sleep 0.05; done; ";
  auto with = [&find](const char* comm) {
    std::string f = find;
    f.replace(f.find("%s"), 2, comm);
    return f;
  };
  const ProcResult k =
      Script(dir, tw + " -q -o " + dir.File("k.trace") + " -- sleep 30 & tw=$!; " + with("sleep") +
                      "kill -9 $tw; wait $tw; "
                      "for i in $(seq 100); do kill -0 $p 2>/dev/null || { echo gone; exit 0; }; "
                      "sleep 0.05; done; kill -9 $p; echo alive");
  INFO(k.Describe() << "\n" << k.out << k.err);
  CHECK(k.out == "gone\n");
  // Stopped with tracewrap (the shell sees the job stopped), resumed by a
  // CONT of tracewrap: the program ends as untraced.
  const ProcResult s = Script(
      dir, tw + " -q -o " + dir.File("s.trace") +
               " -- sh -c 'i=0; while [ $i -lt 10 ]; do i=$((i+1)); sleep 0.1; done; echo done' "
               "& tw=$!; " +
               with("sh") +
               "sleep 0.2; kill -TSTP $tw; sleep 1.5; "
               "echo \"$(awk '{print $3}' /proc/$p/stat) $(awk '{print $3}' /proc/$tw/stat)\"; "
               "kill -CONT $tw; wait $tw; echo status $?");
  INFO(s.Describe() << "\n" << s.out << s.err);
  CHECK(s.out == "T T\ndone\nstatus 0\n");
  // Stopped by TSTP as the program would have been, twice: tracewrap
  // stopped itself with STOP, and a shell with job control said "Stopped
  // (signal)", its `wait` 147 where 148 was due.
  const ProcResult t = Script(
      dir, "set -m; " + tw + " -q -o " + dir.File("t.trace") +
               " -- sh -c 'i=0; while [ $i -lt 12 ]; do i=$((i+1)); sleep 0.1; done; echo done' "
               "& tw=$!; sleep 0.3; kill -TSTP $tw; wait $tw; echo stop $?; "
               "kill -CONT $tw; sleep 0.2; kill -TSTP $tw; wait $tw; echo stop $?; "
               "kill -CONT $tw; wait $tw; echo status $?");
  INFO(t.Describe() << "\n" << t.out << t.err);
  CHECK(t.out == "stop 148\nstop 148\ndone\nstatus 0\n");
}

// With %e in -o the index is named after the program tracewrap started
// (README), in every run: a rerun's was named after the image the program
// exec'd (sh.trace.index.json, then node.1.trace.index.json), and a CI step
// collecting sh*.index.json missed every run after the first.
TEST_CASE("tracewrap: with %e in -o, every run's index is named after the program it started",
          "[tracewrap]") {
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    const ProcResult r = Wrap(
        {"-q", "-o", dir.File("%e.trace"), "--", "/bin/sh", "-c", "exec " + Scenario("sleepers")},
        dir);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
  }
  CHECK(access(dir.File("sh.trace.index.json").c_str(), F_OK) == 0);
  CHECK(access(dir.File("sh.1.trace.index.json").c_str(), F_OK) == 0);
  CHECK(access(dir.File("sleepers.trace").c_str(), F_OK) == 0);
  CHECK(access(dir.File("sleepers.1.trace").c_str(), F_OK) == 0);
  CHECK(FilesEnding(dir.path(), ".index.json").size() == 2);
  // Each index lists its own run's trace.
  CHECK(EntryTrace(IndexEntry(Slurp(dir.File("sh.1.trace.index.json")), Scenario("sleepers"))) ==
        "sleepers.1.trace");
}

// --no-follow traces "only the program itself", and the program is its
// images: `sh -c 'exec node ...'`, `env prog`, npm (a #!/usr/bin/env node
// script) wrote no trace at all, every exec leaving the library out.
TEST_CASE("tracewrap: --no-follow traces the program through its execs, not its children",
          "[tracewrap]") {
  TempDir dir;
  const ProcResult r = Wrap({"--no-follow", "-o", dir.File("n.trace"), "--", "/bin/sh", "-c",
                             "/bin/sleep 0.05 & wait; exec /usr/bin/env " + Scenario("sleepers")},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  REQUIRE(ValidateTrace(dir.File("n.trace")).empty());
  CHECK(ParseWithGo(dir.File("n.trace")).Count("GoSleep") == 45);
  // The background sleep (a child) is not traced: no trace of its own.
  const std::string index = Slurp(dir.File("n.trace.index.json"));
  INFO(index);
  const std::string sleep = IndexEntry(index, "/bin/sleep");
  if (!sleep.empty()) CHECK(EntryTrace(sleep).empty());
  CHECK(EntryTrace(IndexEntry(index, Scenario("sleepers"))) == "n.trace");
}

// A runner finds the program it started through tracewrap as tracewrap's
// child (`pgrep -P`). A helper process that held the kernel's perf hooks for
// the run was a second child with tracewrap's own command line (the kernel's
// records on: the helper held them).
TEST_CASE("tracewrap: the program is its only child", "[tracewrap]") {
  TempDir dir;
  const ProcResult r =
      Script(dir, TracewrapCommand(/*infer=*/false) + " -q -o " + dir.File("c.trace") +
                      " -- sleep 1 & tw=$!; "
                      "for i in $(seq 100); do pgrep -P $tw -x sleep >/dev/null && break; "
                      "sleep 0.02; done; pgrep -P $tw | wc -l; "
                      "ps -o comm= --ppid $tw; wait $tw; echo status $?");
  INFO(r.Describe() << "\n" << r.out << r.err);
  CHECK(r.out == "1\nsleep\nstatus 0\n");
}

TEST_CASE(
    "tracewrap: started in the background of a script, QUIT and INT sent to it reach the program",
    "[tracewrap]") {
  // A script's background job starts with INT and QUIT ignored; tracewrap
  // left them so, and dropped one sent to it: `tracewrap -- nginx &` then
  // `kill -QUIT $!` (nginx's graceful stop) waited forever, where untraced
  // the program, with a handler of its own, got it. It still starts with
  // them ignored, as untraced (the first line).
  TempDir dir;
  const std::string tw = TracewrapCommand();
  const ProcResult r = Script(
      dir, tw + " -q -o " + dir.File("b.trace") + " -- grep ^SigIgn /proc/self/status & wait $!; " +
               "grep ^SigIgn /proc/self/status & wait $!; " + tw + " -q -o " + dir.File("q.trace") +
               " -- " + Scenario("term_count") +
               " 1500 --quit & p=$!; sleep 0.6; kill -QUIT $p; wait $p; echo status $?");
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  std::istringstream in(r.out);
  std::string traced_ign, untraced_ign, rest;
  std::getline(in, traced_ign);
  std::getline(in, untraced_ign);
  std::getline(in, rest, '\0');
  CHECK(traced_ign == untraced_ign);
  CHECK(rest == "QUIT 1\nstatus 0\n");
}

TEST_CASE("tracewrap: the first process's handlers are reported as untraced", "[tracewrap]") {
  // Its handlers for the signals tracewrap passes on run through the
  // library's (see above); sigaction, signal, sysv_signal, sigset and the
  // rest report the program's, field for field (preload_test.cc has the
  // same under LD_PRELOAD, where they are the kernel's).
  TempDir dir;
  const ProcResult plain = RunProcess({Scenario("sigaction_report")});
  REQUIRE(plain.Exited(0));
  const ProcResult r =
      Wrap({"-q", "-o", dir.File("s.trace"), "--", Scenario("sigaction_report")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(0));
  CHECK(r.out == plain.out);
}

TEST_CASE("tracewrap: a daemon that points its stderr elsewhere does not hold the caller's pipe",
          "[tracewrap]") {
  // The tracer's copy of stderr (H27) stayed open in a process that had
  // redirected its own: `tracewrap -- memcached -d 2>&1 | cat` waited for as
  // long as the daemon lived. Here the daemon is a background subshell that
  // points its 1 and 2 at /dev/null, then sleeps 2 s and leaves a marker:
  // `cat` must end first.
  TempDir dir;
  const std::string marker = dir.File("marker");
  const std::string daemon = "(exec >/dev/null 2>&1; sleep 2; touch " + marker + ") & echo started";
  const std::string cmd = kTracewrap + " -q -o " + dir.File("d.trace") + " -- sh -c '" + daemon +
                          "' 2>&1 | cat; test -e " + marker + " && echo late || echo early";
  const ProcResult r = RunProcess({"/bin/sh", "-c", cmd});
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "started\nearly\n");
  for (int i = 0; i < 50 && !fs::exists(marker); ++i) usleep(100 * 1000);  // (let it finish)
  // Redirected inside glibc, where no dup2 hook sees it: daemon(3), freopen.
  for (const std::string mode : {"daemon3", "freopen"}) {
    INFO(mode);
    const std::string m = dir.File("marker-" + mode);
    const std::string c = kTracewrap + " -q -o " + dir.File(mode + ".trace") + " -- " +
                          Scenario("daemonize") + " " + mode + " " + m + " 2>&1 | cat; test -e " +
                          m + " && echo late || echo early";
    const ProcResult d = RunProcess({"/usr/bin/setsid", "/bin/sh", "-c", c});
    INFO(d.Describe() << "\n" << d.out << d.err);
    CHECK(d.out == "early\n");
    for (int i = 0; i < 50 && !fs::exists(m); ++i) usleep(100 * 1000);
    CHECK(fs::exists(m));
  }
}

TEST_CASE("tracewrap: a daemon exec'd after the run ended writes its own trace", "[tracewrap]") {
  // `setsid -f` returns at once: the run ends, its log directory goes, and
  // the daemon, exec'd 1.5 s later (after the launcher's last look), could not make its log
  // ("cannot create ...; tracing is off"): no trace. It makes it next to its trace now, and writes
  // the trace itself when it ends.
  if (access("/usr/bin/setsid", X_OK) != 0) {
    WARN("skipped: needs setsid");
    return;
  }
  TempDir dir;
  const ProcResult r = Wrap({"-q", "-o", dir.File("s.trace"), "--", "/usr/bin/setsid", "-f",
                             "/bin/sh", "-c", "sleep 1.5; exec " + Scenario("sleepers")},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  // The daemon's trace (after sh's image: the sleepers' 45 sleeps), once no
  // log is left; its `sleep 0.5` has a trace of its own.
  std::string trace, listing;
  for (int i = 0; i < 300 && trace.empty(); ++i) {  // (30 s: the daemon encodes its own trace)
    usleep(100 * 1000);
    std::vector<std::string> found;
    bool logs = false;
    listing.clear();
    for (const auto& e : fs::directory_iterator(dir.path())) {
      const std::string n = e.path().filename().string();
      listing += n + "\n";
      if (n.find(".gtlog") != std::string::npos) logs = true;
      if (n.rfind("s.trace.", 0) == 0 && n.find_first_not_of("0123456789", 8) == std::string::npos)
        found.push_back(e.path().string());
    }
    for (const std::string& f : found) {
      const ParsedTrace t = ParseWithGo(f);
      if (!logs && t.ok && t.Count("GoSleep") >= 45) trace = f;
    }
  }
  INFO(listing);
  CHECK_THAT(r.err, !Catch::Contains("tracing is off"));
  REQUIRE_FALSE(trace.empty());
}

TEST_CASE(
    "tracewrap: a daemon that gave up root's privileges and outlived the run writes its trace to "
    "its user's directory",
    "[tracewrap]") {
  // Run as root, a server whose processes change their user (nginx's,
  // postgres's) and outlive the run made their logs next to root's traces:
  // "cannot create ...: Permission denied; tracing is off". They go to the
  // user's private directory (/tmp/gotrace-<uid>) now, with one line.
  if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
    WARN("skipped: needs root and setpriv");
    return;
  }
  TempDir dir;  // 0700, root's: nobody may not write in it
  TempDir pub;  // the daemon's stderr
  fs::permissions(pub.path(), fs::perms::all);
  const std::string name = "priv-" + std::to_string(getpid()) + ".trace";
  // (setsid: out of the process group the test harness kills when the run
  // ends. The daemon points its own stderr at the file, after it was
  // exec'd: a fork child's open of it, slow on a loaded machine, was worth
  // a log while the run still ran.)
  const std::string daemon = "/usr/bin/setsid /bin/sh -c 'exec 2>" + pub.File("daemon.err") +
                             " >/dev/null; sleep 1.5; exec " + Scenario("sleepers") + "' &";
  const ProcResult r = Wrap({"-q", "-o", dir.File(name), "--", "/usr/bin/setpriv", "--reuid=65534",
                             "--regid=65534", "--clear-groups", "/bin/sh", "-c", daemon},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string mine = "/tmp/gotrace-65534";
  std::string trace;
  for (int i = 0; i < 300 && trace.empty(); ++i) {  // (30 s: the daemon encodes its own trace)
    usleep(100 * 1000);
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(mine, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind(name + ".", 0) != 0 || n.find(".gtlog") != std::string::npos) continue;
      const ParsedTrace t = ParseWithGo(e.path().string());
      if (t.ok && t.Count("GoSleep") >= 45) trace = e.path().string();
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(mine, ec))
    if (e.path().filename().string().rfind(name, 0) == 0) fs::remove(e.path(), ec);
  const std::string err = Slurp(pub.File("daemon.err"));
  INFO(err);
  CHECK_THAT(err, !Catch::Contains("tracing is off"));
  CHECK_THAT(
      err,
      Catch::Contains(
          "(this process runs as user 65534, without permission there); its log and trace go to " +
          mine + "/"));
  CHECK_FALSE(trace.empty());
}

TEST_CASE("tracewrap: a small /dev/shm (a container's) is not used for the run's logs",
          "[tracewrap]") {
  // Docker's and Kubernetes's 64 MiB /dev/shm filled with a build's logs:
  // every process printed "cannot extend the event log ... No space left on
  // device" into the build's stderr, logs were cut, the index had empty
  // rows. With less than 256 MiB free there the logs go next to the traces.
  // Needs root (a mount namespace of its own with a small tmpfs).
  if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0) {
    WARN("skipped: needs root and unshare");
    return;
  }
  TempDir dir;
  const std::string inner =
      "mount -t tmpfs -o size=64m tmpfs /dev/shm && " + kTracewrap + " -q -o " +
      dir.File("s.trace") +
      " -- /bin/sh -c 'echo \"logs: ${GOTRACE_LOG_DIR:-next to the traces}\"; " +
      Scenario("sleepers") + " >/dev/null'";
  const ProcResult r = RunProcess({"/usr/bin/unshare", "-m", "/bin/sh", "-c", inner});
  INFO(r.Describe() << "\n" << r.out << r.err);
  if (r.err.find("mount:") != std::string::npos || r.err.find("unshare:") != std::string::npos) {
    WARN("skipped: cannot mount a tmpfs in a new mount namespace here");
    return;
  }
  REQUIRE(r.Exited(0));
  CHECK(r.out == "logs: next to the traces\n");
  CHECK_THAT(r.err, !Catch::Contains("No space left") && !Catch::Contains("cannot extend"));
  bool sleepers = false;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    CHECK(n.find(".gtlog") == std::string::npos);
    // All 45 sleeps, give or take one: with the kernel's records a thread's
    // first record can fault on a fresh log page on disk (ext4's
    // page_mkwrite sleeps) inside its first sleep, and the model shows that
    // trip as a sleep of its own, or the sleep as an off-CPU block (the
    // closing note of session 14). A log cut short by a full /dev/shm
    // holds far fewer.
    if (n.rfind("s.trace.", 0) == 0 && n.find("index") == std::string::npos) {
      const size_t slept = ParseWithGo(e.path().string()).Count("GoSleep");
      sleepers = sleepers || (slept >= 44 && slept <= 46);
    }
  }
  CHECK(sleepers);
}

TEST_CASE("tracewrap: arguments pass intact and argv 0 is kept", "[tracewrap]") {
  TempDir dir;
  const std::string out = dir.File("x.trace");
  const std::vector<std::string> prog = {"printf", "%s|\\n", "a b", "c", "", "*", "$HOME",
                                         "-o", "--", "tab\there"};
  const ProcResult plain = RunProcess(prog);
  REQUIRE(plain.Exited(0));
  std::vector<std::string> args = {"-q", "-o", out};  // no "--": the first non-option starts it
  args.insert(args.end(), prog.begin(), prog.end());
  const ProcResult r = Wrap(args, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == plain.out);
  CHECK(r.out == "a b|\nc|\n|\n*|\n$HOME|\n-o|\n--|\ntab\there|\n");
  // A shell would run `sh` with argv[0] "sh", not the path found in PATH.
  const ProcResult a = Wrap({"-q", "-o", out, "sh", "-c", "tr '\\0' ' ' </proc/$$/cmdline"}, dir);
  REQUIRE(a.Exited(0));
  CHECK_THAT(a.out, Catch::StartsWith("sh -c "));
}

TEST_CASE("tracewrap: ldd lists the libraries it lists untraced", "[tracewrap]") {
  // ldd runs the loader with LD_TRACE_LOADED_OBJECTS set, and the loader
  // prints every object it maps: our library was one of them.
  TempDir dir;
  // The objects' names, without their load addresses (random).
  const std::string cmd =
      "ldd /bin/true | sed 's/ (0x[0-9a-f]*)//'; "
      "LD_TRACE_LOADED_OBJECTS=1 /bin/sh -c 'exec /bin/true' | sed 's/ (0x[0-9a-f]*)//'";
  const ProcResult plain = RunProcess({"/bin/bash", "-c", cmd});
  REQUIRE(plain.Exited(0));
  REQUIRE(plain.out.find("libc.so") != std::string::npos);
  const ProcResult r = Wrap({"-q", "-o", dir.File("l.trace"), "--", "/bin/bash", "-c", cmd}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == plain.out);
  CHECK(r.out.find("libgotrace") == std::string::npos);
}

TEST_CASE("tracewrap: run as root, a process that gives up root keeps its log, trace and entry",
          "[tracewrap]") {
  // setpriv, su, a server's workers: the run's log directory was root's
  // alone, so such a process said "cannot create ...; tracing is off" and
  // was missing from the index.
  if (geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  const std::vector<std::string> as_nobody = {"setpriv", "--reuid=65534", "--regid=65534",
                                              "--clear-groups"};
  std::vector<std::string> probe = as_nobody;
  probe.insert(probe.end(), {"test", "-r", PreloadLib()});
  if (!RunProcess(probe).Exited(0)) {
    WARN("skipped: setpriv is missing, or nobody cannot read " << PreloadLib());
    return;
  }
  TempDir dir;
  std::string cmd;
  for (const std::string& a : as_nobody) cmd += a + " ";
  cmd += "sh -c 'sleep 0.05; echo ok-$(id -u)'";
  const ProcResult r = Wrap({"-o", dir.File("n.trace"), "--", "/bin/bash", "-c", cmd}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "ok-65534\n");
  CHECK_THAT(r.err, !Catch::Contains("cannot create"));
  const std::string index = Slurp(dir.File("n.trace.index.json"));
  INFO(index);
  const std::string trace = EntryTrace(IndexEntry(index, "sh"));
  REQUIRE(!trace.empty());
  const ParsedTrace p = ParseWithGo(dir.File(trace));
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK(p.Count("GoSysBlock") + p.Count("GoBlock") >= 1);  // it waited for its sleep
}

TEST_CASE("tracewrap: a program built with AddressSanitizer runs traced, and ASan still reports",
          "[tracewrap]") {
#if !defined(GOTRACE_HAVE_ASAN)
  WARN("skipped: the compiler has no -fsanitize=address");
#else
  // ASan exited at once ("ASan runtime does not come first in initial
  // library list"): tracewrap and the exec hooks now pass
  // verify_asan_link_order=0 in ASAN_OPTIONS.
  TempDir dir;
  const std::string prog = Scenario("asan_threads");
  const ProcResult d = Wrap({"-o", dir.File("d.trace"), "--", prog}, dir);
  INFO(d.Describe() << "\n" << d.err);
  REQUIRE(d.Exited(0));
  CHECK(d.out == "asan ok\n");
  const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoBlockSync") >= 1);  // the worker waited for the lock
  // As children: plain, with options of the parent's own (appended to),
  // and one that overflows a heap block (ASan reports it and exits 1).
  const std::string job = prog + "; ASAN_OPTIONS=detect_leaks=0 " + prog + "; " + prog +
                          " overflow; echo \"overflow: $?\"";
  const ProcResult r = Wrap({"-o", dir.File("j.trace"), "--", "/bin/bash", "-c", job}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "asan ok\nasan ok\noverflow: 1\n");
  CHECK_THAT(r.err,
             Catch::Contains("heap-buffer-overflow") && !Catch::Contains("does not come first"));
#endif
}

TEST_CASE("tracewrap: a program built with ThreadSanitizer runs as untraced, and one line says why",
          "[tracewrap]") {
#if !defined(GOTRACE_HAVE_TSAN)
  WARN("skipped: the compiler has no -fsanitize=thread");
#else
  // It crashed (a jump to address 0): TSan's initialisation mallocs, and our
  // malloc's first look-up of the real one went through TSan's
  // dl_iterate_phdr before TSan had set it up (preload/sys/next_symbol.cc).
  // Then, traced, TSan took the tracer's own memory for the program's
  // (it intercepts our memcpy and memset, and cannot see the atomics our
  // slots are handed over with): race reports, and exit 66. So tracing
  // turns itself off in such a program, with one line, and it runs as
  // untraced.
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("t.trace"), "--", Scenario("tsan_threads")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "tsan ok 2000\n");
  CHECK_THAT(r.err, !Catch::Contains("WARNING: ThreadSanitizer"));
  CHECK_THAT(r.err, Catch::Contains("gotrace: the program is built with ThreadSanitizer") &&
                        Catch::Contains("tracing is off, the program continues"));
  CHECK(r.err.find("gotrace:") == r.err.rfind("gotrace:"));  // that line only
#endif
}

TEST_CASE("tracewrap: under an address-space limit (ulimit -v) a program is still traced",
          "[tracewrap]") {
  // The pool's reservation (5 GiB at the default buffer) was more than the
  // limit: "cannot reserve memory for the tracer; tracing is off".
  TempDir dir;
  const std::string cmd = "ulimit -v 2000000 && exec " + Scenario("staged_late");
  const ProcResult r = Wrap({"-o", dir.File("v.trace"), "--", "/bin/sh", "-c", cmd}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "done\n");
  CHECK_THAT(r.err, !Catch::Contains("cannot reserve memory"));
  const ParsedTrace t = ParseWithGo(dir.File("v.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 1);
}

TEST_CASE(
    "tracewrap: under an address-space limit the tracer takes at most 3/16 of it, and no malloc "
    "arenas",
    "[tracewrap]") {
  // Threads that never called malloc each took a malloc arena (64 MiB of
  // address space) when they freed the tracer's start context or asked
  // pthread_getattr_np for their stack; the stack depot reserved 100 MiB
  // whatever the limit. Under `ulimit -v` programs could no longer start
  // threads. The pool takes at most an eighth of the limit, the depot a
  // sixteenth; the rest (rings, tables, the library) is a few MiB.
  TempDir dir;
  const long limit_kb = 200000;
  const std::string cmd =
      "ulimit -v " + std::to_string(limit_kb) + " && exec " + Scenario("as_limit");
  const ProcResult plain = RunProcess({"/bin/sh", "-c", cmd});
  INFO(plain.Describe() << "\n" << plain.err);
  REQUIRE(plain.Exited(0));
  const ProcResult r = Wrap({"-q", "-o", dir.File("a.trace"), "--", "/bin/sh", "-c", cmd}, dir);
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  auto vm = [](const std::string& out) { return std::stol(out.substr(out.find("vmsize ") + 7)); };
  REQUIRE(plain.out.find("vmsize ") != std::string::npos);
  REQUIRE(r.out.find("vmsize ") != std::string::npos);
  CHECK(vm(r.out) - vm(plain.out) <= limit_kb * 3 / 16 + 12 * 1024);
  // Each thread's stack bounds (from its creator's attributes, glibc's
  // default stack, a smaller one, the program's own) let its wait's stack
  // be walked to the program's functions.
  const PprofResult p = Pprof(dir.File("a.trace"), "sync");
  INFO(p.raw);
  REQUIRE(p.ok);
  CHECK(p.raw.find("WaitHere") != std::string::npos);
  CHECK(p.raw.find("Worker") != std::string::npos);
}

// Chromium's sandboxed storage service limits its own address space once
// started; the pool's reservation (5 GiB, inherited from the zygote) made
// its next allocation fail: a crash report for each of its restarts,
// while the page still loaded. Needs root (to run chromium as nobody, with
// its sandbox) and a chromium whose sandbox starts untraced.
TEST_CASE("tracewrap: sandboxed headless chromium runs without crash reports", "[tracewrap]") {
  if (geteuid() != 0 || access("/usr/bin/chromium", X_OK) != 0) {
    WARN("skipped: needs root and /usr/bin/chromium");
    return;
  }
  TempDir dir;
  const std::string home = dir.File("home");
  std::filesystem::create_directories(home);
  std::filesystem::permissions(dir.path(), std::filesystem::perms::all);
  std::filesystem::permissions(home, std::filesystem::perms::all);
  {
    std::ofstream page(dir.File("p.html"));
    page << "<html><body><p id=x>hi</p><script>document.getElementById('x').textContent='js'"
            "</script></body></html>\n";
  }
  std::filesystem::permissions(dir.File("p.html"), std::filesystem::perms::all);
  const std::vector<std::string> chromium = {"setpriv",
                                             "--reuid=65534",
                                             "--regid=65534",
                                             "--clear-groups",
                                             "env",
                                             "HOME=" + home,
                                             "/usr/bin/chromium",
                                             "--headless",
                                             "--disable-gpu",
                                             "--dump-dom",
                                             "file://" + dir.File("p.html")};
  const std::string reports = home + "/.config/chromium/Crash Reports/pending";
  auto dumps = [&reports]() {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(reports, ec))
      n += e.path().extension() == ".dmp" ? 1 : 0;
    return n;
  };
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD"};
  const ProcResult plain = RunProcess(chromium, o);
  if (!plain.Exited(0) || plain.out.find("<p id=\"x\">js</p>") == std::string::npos ||
      dumps() != 0) {
    WARN("skipped: chromium's sandbox does not start here as nobody\n" << plain.err);
    return;
  }
  std::vector<std::string> args = {"-q", "-o", dir.File("c.trace"), "--"};
  args.insert(args.end(), chromium.begin(), chromium.end());
  const ProcResult r = Wrap(args, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out.find("<p id=\"x\">js</p>") != std::string::npos);
  CHECK(dumps() == 0);
}

TEST_CASE("tracewrap: usage, bad options and values", "[tracewrap]") {
  TempDir dir;
  for (const char* h : {"-h", "--help"}) {
    const ProcResult r = Wrap({h}, dir);
    CHECK(r.Exited(0));
    CHECK_THAT(r.out, Catch::StartsWith("usage: tracewrap [options] [--] program [args...]"));
    CHECK_THAT(r.out, Catch::Contains("--output") && Catch::Contains("--events"));
    CHECK(r.err.empty());
  }
  // Each is refused with one error line and a hint, before the program runs.
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--frobnicate"}, "unknown option '--frobnicate'"},
      {{"-x"}, "unknown option '-x'"},
      {{"--unwind", "dwarf"}, "--unwind: 'dwarf'"},
      {{"--depth", "0"}, "--depth: '0'"},
      {{"--depth", "129"}, "--depth: '129'"},
      {{"--depth", "12x"}, "--depth: '12x'"},
      {{"--depth", "99999999999999999999999"}, "--depth: "},
      {{"--events", "sync,bogus"}, "--events: 'bogus'"},
      {{"--events", "sync,"}, "--events: ''"},
      {{"-o", "no/such/dir/x.trace"}, "directory 'no/such/dir' does not exist"},
      {{"-o", "out/"}, "names a directory"},
      {{"-o", dir.path()},
       "names a directory; give a file name (e.g. " + dir.path() + "/run.trace)"},
      {{"--depth"}, "option '--depth' needs a value"},
      {{"--depth="}, "option '--depth' needs a value"},
      {{"-o", ""}, "option '-o' needs a value"},
  };
  for (const auto& [opts, message] : bad) {
    std::vector<std::string> args = opts;
    if (opts.size() > 1 || opts[0] != "--depth") {
      args.insert(args.end(), {"sh", "-c", "touch ran"});
    }
    const ProcResult r = Wrap(args, dir);
    INFO(opts[0] << ": " << r.Describe() << "\n" << r.err);
    CHECK(r.Exited(2));
    CHECK_THAT(r.err, Catch::StartsWith("tracewrap: ") && Catch::Contains(message));
    CHECK_THAT(r.err, Catch::Contains("Try 'tracewrap --help'"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 2);
    CHECK(r.out.empty());
    CHECK_FALSE(fs::exists(dir.File("ran")));
  }
  const ProcResult none = Wrap({"-q"}, dir);
  CHECK(none.Exited(2));
  CHECK_THAT(none.err, Catch::Contains("no program given"));
}

TEST_CASE("tracewrap: a missing program exits 127 like a shell", "[tracewrap]") {
  TempDir dir;
  const ProcResult r = Wrap({"-q", "--", "gotrace-no-such-program"}, dir);
  CHECK(r.Exited(127));
  CHECK(r.err == "tracewrap: gotrace-no-such-program: command not found\n");
  const ProcResult p = Wrap({"-q", "./no-such-file"}, dir);
  CHECK(p.Exited(127));
  CHECK_THAT(p.err, Catch::Contains("./no-such-file: no such file or directory"));
  // Not executable: 126, as sh says "Permission denied".
  WriteFile(dir.File("data.txt"), "not a program\n", fs::perms::owner_read | fs::perms::owner_write);
  const ProcResult n = Wrap({"-q", dir.File("data.txt")}, dir);
  CHECK(n.Exited(126));
  CHECK_THAT(n.err, Catch::Contains("permission denied"));
}

TEST_CASE("tracewrap: static programs are refused (H28)", "[tracewrap]") {
  TempDir dir;
  for (const char* flag : {"-static", "-static-pie"}) {
    const std::string hello = CompileHello(dir, std::string("hello") + flag, {flag});
    if (hello.empty()) continue;
    INFO(flag);
    REQUIRE(RunProcess({hello}).out == "hello\n");
    const ProcResult r = Wrap({"-o", dir.File("x.trace"), hello}, dir);
    INFO(r.Describe() << "\n" << r.err);
    CHECK(r.Exited(2));
    CHECK_THAT(r.err, Catch::Contains(hello + " is statically linked"));
    CHECK(r.out.empty());  // refused before running
    // --force runs it anyway (untraced: no library ever loads).
    const ProcResult f = Wrap({"--force", "-o", dir.File("x.trace"), hello}, dir);
    INFO(f.err);
    CHECK(f.Exited(0));
    CHECK(f.out == "hello\n");
    CHECK_FALSE(fs::exists(dir.File("x.trace")));
    // One line says why no trace comes (the end's "a line above says why"
    // pointed at none).
    CHECK_THAT(f.err, Catch::Contains(hello + " is statically linked: LD_PRELOAD cannot load "
                                              "libgotrace.so into it, so it cannot be traced; it "
                                              "runs untraced (--force)"));
  }
  // A dynamic build of the same program is not refused (PT_INTERP found).
  const std::string dyn = CompileHello(dir, "hello-dynamic", {"-fPIE"});
  if (!dyn.empty()) {
    const ProcResult r = Wrap({"-q", "-o", dir.File("d.trace"), dyn}, dir);
    CHECK(r.Exited(0));
    CHECK(r.out == "hello\n");
    CHECK(fs::exists(dir.File("d.trace")));
  }
}

TEST_CASE(
    "tracewrap: a static or 32-bit program run by a traced one runs untraced, its output unchanged",
    "[tracewrap]") {
  // The loader of a 32-bit program printed "ERROR: ld.so: object ... cannot
  // be preloaded (wrong ELF class: ELFCLASS64): ignored." on its stderr; a
  // static one (busybox, `#!/bin/busybox sh`) ran untraced, listed nowhere.
  // The exec hook leaves our library out for them and lists them as not
  // traceable; tracewrap refuses a 32-bit program as it does a static one.
  TempDir dir;
  std::vector<std::string> progs;
  for (const char* flag : {"-static", "-m32"}) {
    const std::string p = CompileHello(dir, std::string("hello") + flag, {flag});
    if (!p.empty()) progs.push_back(p);
  }
  if (progs.empty()) {
    WARN("skipped: cc builds neither a static nor a 32-bit program here");
    return;
  }
  // A script whose interpreter is one of them.
  const std::string script = dir.File("via-interpreter");
  {
    std::ofstream f(script);
    f << "#!" << progs[0] << "\n";
  }
  fs::permissions(script, fs::perms::owner_all);
  std::string cmd;
  for (const std::string& p : progs) cmd += p + "; ";
  cmd += script + "; true";
  const ProcResult plain = RunProcess({"/bin/sh", "-c", cmd});
  REQUIRE(plain.Exited(0));
  const ProcResult r = Wrap({"-o", dir.File("s.trace"), "--", "/bin/sh", "-c", cmd}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == plain.out);
  CHECK_THAT(r.err, !Catch::Contains("ld.so"));
  CHECK_THAT(r.err, Catch::Contains(std::to_string(progs.size() + 1) +
                                    " not traceable (static, or of another ELF class"));
  const std::string index = Slurp(dir.File("s.trace.index.json"));
  INFO(index);
  CHECK(Occurrences(index, "\"traced\": false") == progs.size() + 1);
  for (const std::string& p : progs) {
    if (p.find("-m32") == std::string::npos) continue;
    const ProcResult root = Wrap({"-o", dir.File("r.trace"), p}, dir);
    CHECK(root.Exited(2));
    CHECK_THAT(root.err, Catch::Contains(p + " is a 32-bit program"));
    CHECK(root.out.empty());
  }
}

TEST_CASE("tracewrap: setuid, setgid and capabilities are refused (H29)", "[tracewrap]") {
  TempDir dir;
  const std::string copy = dir.File("sleepers-setid");
  fs::copy_file(Scenario("sleepers"), copy);
  struct stat st;
  // Secure-execution mode is the kernel's when the exec changes an id or
  // gains capabilities: as root, the copy must belong to someone else.
  const bool root = getuid() == 0;
  const auto traced = [&](const std::string& what) {
    const ProcResult r = Wrap({"-q", "-o", dir.File(what + ".trace"), copy}, dir);
    INFO(what << ": " << r.Describe() << "\n" << r.err);
    CHECK(r.Exited(0));
    CHECK(r.out == "slept\n");
    CHECK(ParseWithGo(dir.File(what + ".trace")).ok);
  };
  const auto refused = [&](const std::string& what) {
    const ProcResult r = Wrap({"-q", "-o", dir.File("x.trace"), copy}, dir);
    INFO(what << ": " << r.Describe() << "\n" << r.err);
    CHECK(r.Exited(2));
    CHECK_THAT(r.err, Catch::Contains(copy + " " + what) && Catch::Contains("secure-execution"));
    CHECK(r.out.empty());
  };

  SECTION("setuid") {
    if (root) REQUIRE(chown(copy.c_str(), 65534, static_cast<gid_t>(-1)) == 0);  // nobody's
    REQUIRE(chmod(copy.c_str(), 04755) == 0);
    REQUIRE(stat(copy.c_str(), &st) == 0);
    if ((st.st_mode & S_ISUID) == 0) {
      WARN("cannot set the setuid bit here; skipped");
      return;
    }
    refused("is setuid");
  }
  SECTION("setuid-root run by root is traced: the exec changes no id (su, sudo in a root job)") {
    if (!root) {
      WARN("not root; skipped");
      return;
    }
    REQUIRE(chmod(copy.c_str(), 04755) == 0);
    traced("root");
  }
  SECTION("setgid with group execute; without it the bit means nothing to exec") {
    if (root) REQUIRE(chown(copy.c_str(), static_cast<uid_t>(-1), 65534) == 0);  // nogroup's
    REQUIRE(chmod(copy.c_str(), 02755) == 0);
    REQUIRE(stat(copy.c_str(), &st) == 0);
    if ((st.st_mode & S_ISGID) == 0) {
      WARN("cannot set the setgid bit here (not in the file's group?); skipped");
      return;
    }
    refused("is setgid");
    REQUIRE(chmod(copy.c_str(), 02745) == 0);
    const ProcResult r = Wrap({"-q", "-o", dir.File("g.trace"), copy}, dir);
    CHECK(r.Exited(0));
    CHECK(r.out == "slept\n");
  }
  SECTION("file capabilities") {
    const ProcResult s = RunProcess({"setcap", "cap_net_raw+ep", copy});
    if (!s.Exited(0)) {
      WARN("setcap unavailable or not permitted (" << s.Describe() << " " << s.err
                                                   << "); skipped");
      return;
    }
    // Root has every capability already: the exec gains none.
    if (root)
      traced("caps");
    else
      refused("has file capabilities (cap_net_raw");
  }
  SECTION("a setuid #! script is not refused: the kernel ignores the bit on scripts") {
    const std::string script = dir.File("setuid-script");
    WriteFile(script, "#!/bin/sh\necho \"script $1\"\n", fs::perms::owner_all);
    REQUIRE(chmod(script.c_str(), 04755) == 0);
    const ProcResult r = Wrap({"-q", "-o", dir.File("s.trace"), script, "ok"}, dir);
    INFO(r.err);
    CHECK(r.Exited(0));
    CHECK(r.out == "script ok\n");
  }
}

TEST_CASE("tracewrap: finds the library next to itself", "[tracewrap]") {
  TempDir dir;
  const std::string lib = Canonical(PreloadLib());
  // The source-tree layout: scripts/tracewrap finds ../build/libgotrace.so,
  // also when run through a symlink from elsewhere.
  fs::create_directories(dir.File("src/scripts"));
  fs::copy_file(kTracewrap, dir.File("src/scripts/tracewrap"));
  fs::create_directory_symlink(GOTRACE_BUILD_DIR, dir.File("src/build"));
  fs::create_directories(dir.File("bin"));
  fs::create_symlink(dir.File("src/scripts/tracewrap"), dir.File("bin/tw"));
  for (const std::string& script : {dir.File("src/scripts/tracewrap"), dir.File("bin/tw")}) {
    const ProcResult r = Wrap({"-q", "-o", dir.File("x.trace"), "env"}, dir, {}, false, script);
    INFO(script << ": " << r.Describe() << "\n" << r.err);
    CHECK(r.Exited(0));
    CHECK(EnvValue(r.out, "LD_PRELOAD") == lib);
  }
  // Nothing to find: a clear message and exit 2, before the program runs.
  fs::create_directories(dir.File("lonely/scripts"));
  fs::copy_file(kTracewrap, dir.File("lonely/scripts/tracewrap"));
  const ProcResult r =
      Wrap({"sh", "-c", "touch ran"}, dir, {}, false, dir.File("lonely/scripts/tracewrap"));
  CHECK(r.Exited(2));
  CHECK_THAT(r.err, Catch::StartsWith("tracewrap: cannot find libgotrace.so") &&
                        Catch::Contains("scripts/build") && Catch::Contains("GOTRACE_LIB"));
  CHECK_FALSE(fs::exists(dir.File("ran")));
  // GOTRACE_LIB that does not exist is an error, not a fallback.
  const ProcResult g = Wrap({"env"}, dir, {"GOTRACE_LIB=" + dir.File("nope.so")}, false);
  CHECK(g.Exited(2));
  CHECK_THAT(g.err, Catch::Contains("GOTRACE_LIB=" + dir.File("nope.so") + ": no such file"));
}

TEST_CASE("tracewrap: the installed copy finds the installed library", "[tracewrap]") {
  TempDir dir;
  const std::string prefix = dir.File("prefix");
  const ProcResult inst = RunProcess({"cmake", "--install", GOTRACE_BUILD_DIR, "--prefix", prefix});
  INFO(inst.Describe() << "\n" << inst.out << inst.err);
  REQUIRE(inst.Exited(0));
  for (const char* f : {"bin/gotrace", "bin/tracewrap"}) CHECK(fs::exists(prefix + "/" + f));
  // Wherever CMAKE_INSTALL_LIBDIR put the libraries, they are together.
  std::string libdir;
  for (const auto& e : fs::recursive_directory_iterator(prefix))
    if (e.path().filename() == "libgotrace.so") libdir = e.path().parent_path().string();
  REQUIRE_FALSE(libdir.empty());
  CHECK(fs::exists(libdir + "/libgotrace_encode.so"));

  // Moved after installing: the script finds the library relative to itself.
  const std::string moved = dir.File("moved");
  fs::rename(prefix, moved);
  const std::string moved_lib = Canonical(moved + libdir.substr(prefix.size()) + "/libgotrace.so");
  const std::string script = moved + "/bin/tracewrap";
  const ProcResult e = Wrap({"-q", "-o", dir.File("e.trace"), "env"}, dir, {}, false, script);
  INFO(e.Describe() << "\n" << e.err);
  REQUIRE(e.Exited(0));
  CHECK(EnvValue(e.out, "LD_PRELOAD") == moved_lib);

  // And the installed pair (preload + encoder) writes a valid trace.
  const std::string out = dir.File("installed.trace");
  const ProcResult r = Wrap({"-o", out, Scenario("sleepers")}, dir, {}, false, script);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::StartsWith("gotrace: wrote "));
  const ParsedTrace t = ParseWithGo(out);
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 45);
}

}  // namespace
}  // namespace gotrace::testing
