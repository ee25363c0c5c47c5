// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/run_test.cc - tracing whole CI jobs (issue 18) -----===//
//
// Under tracewrap every process only ends its event log and the launcher
// encodes the run once the program has ended: a shell job's quiet commands
// get no trace file, the run gets one index, and a log encoded by the
// launcher gives the same trace, event for event and frame for frame, as
// the exit-time path (the same log through `gotrace encode`).
//===----------------------------------------------------------------------===//
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

namespace fs = std::filesystem;

const std::string kTracewrap = std::string(GOTRACE_BUILD_DIR) + "/tracewrap";
const std::string kGotrace = std::string(GOTRACE_BUILD_DIR) + "/gotrace";

ProcResult Wrap(const std::vector<std::string>& args, const TempDir& dir,
                const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {kTracewrap};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_QUIET", "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG",
                 "GOTRACE_DEFER"};
  o.env = env;
  o.env.push_back("GOTRACE_LIB=" + PreloadLib());
  return RunProcess(argv, o);
}

void WriteFile(const std::string& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

// Writes `script` to dir/job.sh and runs it under tracewrap with `opts`
// (the shell `shell`).
ProcResult WrapJob(const TempDir& dir, const std::string& script, std::vector<std::string> opts,
                   const std::string& shell = "/bin/sh", const std::vector<std::string>& env = {}) {
  WriteFile(dir.File("job.sh"), script, fs::perms::owner_all);
  opts.insert(opts.end(), {"--", shell, dir.File("job.sh")});
  return Wrap(opts, dir, env);
}

// The samples of `go tool pprof -traces` (blocks between dashed lines),
// sorted: each with its value and symbolized frames.
std::vector<std::string> SortedSamples(const std::string& traces) {
  std::vector<std::string> blocks(1);
  std::istringstream in(traces);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("-----------+", 0) == 0) blocks.emplace_back();
    else blocks.back() += l + "\n";
  }
  std::sort(blocks.begin(), blocks.end());
  return blocks;
}

// The event lines of `go tool trace -d` (the first line is a log line).
// The events as lines, sorted: Go's parser orders events of the same time
// stamp on different Ps differently from one run to the next (the same
// file parsed twice), so the comparison is of the sets of lines.
std::string EventLines(const ParsedTrace& t) {
  std::vector<std::string> lines;
  for (const GoEvent& e : t.events) lines.push_back(e.text);
  std::sort(lines.begin(), lines.end());
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

// The index rows (one process a line) whose argv starts with `argv_prefix`,
// each from its argv to the end of its line.
std::vector<std::string> IndexRows(const std::string& index, const std::string& argv_prefix) {
  std::vector<std::string> rows;
  const std::string key = "\"argv\": [" + argv_prefix;
  for (size_t at = index.find(key); at != std::string::npos; at = index.find(key, at + 1))
    rows.push_back(index.substr(at, index.find('\n', at) - at));
  return rows;
}

// The index's first row of a fork that never exec'd (no command line of its
// own: "argv": []), from its argv to the end of its row; "" if none.
std::string ForkRow(const std::string& index) {
  const size_t at = index.find("\"argv\": [], ");
  if (at == std::string::npos) return "";
  return index.substr(at, index.find('}', index.find("\"records\": ", at)) - at + 1);
}

// The script of the 50-command job: 45 commands that do nothing worth
// showing, 2 that sleep (a wait: worth a trace), 2 that read a small file
// (quiet unless the read blocked), and the shell.
std::string FiftyCommands() {
  std::string script = "echo data > small.txt\n";
  for (int i = 0; i < 45; ++i) script += "/bin/true\n";
  script += "/bin/sleep 0.05\n/bin/cat small.txt >/dev/null\n/bin/sleep 0.05\n/bin/cat small.txt >/dev/null\n";
  return script;
}

// Every trace file of the run is in the index and valid, no log is left;
// returns how many there are and how many of the children's show `event`
// (a sleep by default).
std::pair<size_t, size_t> CheckRunTraces(const TempDir& dir, const std::string& prefix,
                                         const std::string& index,
                                         const std::string& event = "GoSleep") {
  size_t traces = 0, sleeps = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    CHECK(n.find(".gtlog") == std::string::npos);
    if (n.rfind(prefix, 0) != 0 || n.find(".index.json") != std::string::npos) continue;
    ++traces;
    CHECK(index.find("\"trace\": \"" + n + "\"") != std::string::npos);
    const ParsedTrace t = ParseWithGo(e.path().string());
    INFO(n << ": " << t.error);
    CHECK(t.ok);
    if (n != prefix && t.Count(event) >= 1) ++sleeps;
  }
  return {traces, sleeps};
}

TEST_CASE("a shell job of 50 commands: one index of 50 processes, traces only for those that did something",
          "[run]") {
  TempDir dir;
  // Every process traced (--every-process): each /bin/true ends quiet.
  const ProcResult r = WrapJob(dir, FiftyCommands(), {"--every-process", "-o", dir.File("job.trace")});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("job.trace.index.json"));
  INFO(index);
  REQUIRE_FALSE(index.empty());
  CHECK(Occurrences(index, "\"pid\": ") == 50);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/true\"]") == 45);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/sleep\", \"0.05\"]") == 2);
  CHECK(Occurrences(index, "\"traced\": false") == 0);
  CHECK_THAT(index, Catch::Contains("\"not_traced\": 0"));
  const size_t untraced = Occurrences(index, "\"trace\": null");
  CHECK(untraced >= 45);
  CHECK(untraced <= 47);
  // The summary says so, and names the quiet ones.
  CHECK_THAT(r.err, Catch::Contains("50 processes ran: " + std::to_string(50 - untraced) + " traced, " +
                                    std::to_string(untraced) + " quiet (no trace of their own); index"));
  CHECK_THAT(r.err, Catch::Contains("quiet: "));
  CHECK_THAT(r.err, Catch::Contains("true x45"));
  CHECK_THAT(r.err, Catch::Contains("gotrace: wrote " + dir.File("job.trace")));
  // A trace file for each process the index gives one, each valid; the
  // sleeps' traces show the sleep.
  const auto [traces, sleeps] = CheckRunTraces(dir, "job.trace", index);
  CHECK(traces == 50 - untraced);
  CHECK(sleeps == 2);
}

TEST_CASE("a shell job of 50 commands by default: a program quiet twice is listed, not traced again",
          "[run]") {
  TempDir dir;
  const ProcResult r = WrapJob(dir, FiftyCommands(), {"-o", dir.File("job.trace")});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("job.trace.index.json"));
  INFO(index);
  // Still 50 processes with their command lines: the first two /bin/true
  // ran traced (and ended quiet), the other 43 did not load the tracer.
  CHECK(Occurrences(index, "\"pid\": ") == 50);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/true\"]") == 45);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/true\"], \"exe\": \"/bin/true\"") == 45);
  CHECK(Occurrences(index, "\"traced\": false") == 43);
  CHECK_THAT(index, Catch::Contains("\"not_traced\": 43"));
  // Each untraced one has its exit status and a duration (from the shell,
  // which reaped it).
  size_t with_status = 0;
  for (const std::string& row : IndexRows(index, "\"/bin/true\"]")) {
    if (row.find("\"traced\": false") != std::string::npos &&
        row.find("\"exit\": {\"code\":0}") != std::string::npos &&
        row.find("\"duration_ns\": null") == std::string::npos)
      ++with_status;
  }
  CHECK(with_status == 43);
  // The sleeps and the reads are traced as before (a program never learned
  // quiet, or only once).
  CHECK(Occurrences(index, "\"argv\": [\"/bin/sleep\", \"0.05\"]") == 2);
  CHECK_THAT(r.err,
             Catch::Contains(
                 "43 not traced (learned quiet earlier in the run; --every-process traces them)"));
  CHECK_THAT(r.err, Catch::Contains("not traced: true x43"));
  const auto [traces, sleeps] = CheckRunTraces(dir, "job.trace", index);
  CHECK(sleeps == 2);
  CHECK(traces >= 3);  // the shell, the two sleeps
}

// How many index rows IndexRows finds, and how many of them say
// "traced": false.
std::pair<size_t, size_t> Rows(const std::string& index, const std::string& argv_prefix) {
  size_t rows = 0, untraced = 0;
  for (const std::string& row : IndexRows(index, argv_prefix)) {
    ++rows;
    if (row.find("\"traced\": false") != std::string::npos) ++untraced;
  }
  return {rows, untraced};
}

TEST_CASE("a shell's fork child finds its descriptors' classes again: a pipe read is a net wait",
          "[run]") {
  // A fork child starts with the descriptor table empty (fdclass::WipeOnFork):
  // the subshell's stdin, a pipe the shell dup2'ed there, is found with fstat.
  TempDir dir;
  // The writer waits for the reading subshell to start, then 50 ms.
  const std::string ready = dir.File("ready");
  const ProcResult r =
      WrapJob(dir,
              "{ until [ -e " + ready + " ]; do sleep 0.01; done; sleep 0.05; echo x; } | ( : > " +
                  ready + "; read v; echo \"got $v\" )\n",
              {"-o", dir.File("p.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "got x\n");
  const std::string index = Slurp(dir.File("p.trace.index.json"));
  INFO(index);
  const auto [traces, reading] = CheckRunTraces(dir, "p.trace", index, "GoBlockNet");
  CHECK(traces >= 2);   // the shell's and the reading subshell's
  CHECK(reading >= 1);  // its read of the pipe, a network wait
}

TEST_CASE("tools reading a pipe through stdio wait there, and are worth a trace for it", "[run]") {
  // md5sum (fread_unlocked), sed (getdelim), uniq (__uflow), wc (getdelim)
  // and awk (fgets) read stdin through stdio, whose refills no interposer
  // saw: each waited 0.2 s for the pipe and ended "quiet", with no trace.
  TempDir dir;
  // Each writer waits until its reader has started (a file the reader's
  // subshell makes before it execs the tool), then 0.2 s: the reader must
  // be in its read by then. (Timed from the pipeline's start, uniq once
  // started 0.2 s late in a loaded CI run, read without waiting and ended
  // quiet.)
  std::string script;
  int n = 0;
  for (const char* tool : {"md5sum", "sed s/x/y/", "uniq", "wc -l", "awk '{ print $1 }'"}) {
    const std::string ready = dir.File("ready" + std::to_string(++n));
    script += "{ until [ -e " + ready + " ]; do sleep 0.01; done; sleep 0.2; echo x; } | { : > " +
              ready + "; exec " + tool + "; }\n";
  }
  const ProcResult r = WrapJob(dir, script, {"-q", "-o", dir.File("s.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "401b30e3b8b5d629635a5c613cdb7919  -\ny\nx\n1\nx\n");
  const std::string index = Slurp(dir.File("s.trace.index.json"));
  INFO(index);
  for (const char* tool : {"md5sum", "sed", "uniq", "wc", "awk"}) {
    INFO(tool);
    const std::vector<std::string> rows = IndexRows(index, "\"" + std::string(tool) + "\"");
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].find("\"quiet\": false") != std::string::npos);
    REQUIRE(!EntryTrace(rows[0]).empty());
    const ParsedTrace parsed = ParseWithGo(dir.File(EntryTrace(rows[0])));
    INFO(parsed.error);
    CHECK(parsed.ok);
    CHECK(parsed.Count("GoBlockNet") >= 1);  // its read of the pipe
  }
}

TEST_CASE("learned quiet: only the same command, and never one that runs others",
          "[run]") {
  TempDir dir;
  const std::string script =
      // Quiet twice, then not traced; the same program with other arguments
      // is another command.
      "/bin/echo a >/dev/null\n/bin/echo a >/dev/null\n/bin/echo a >/dev/null\n"
      "/bin/echo b >/dev/null\n"
      // A sleep is worth a trace: traced every time.
      "/bin/sleep 0.01\n/bin/sleep 0.01\n/bin/sleep 0.01\n"
      // env runs another program: never learned quiet (untraced, its child
      // would be untraced too).
      "/usr/bin/env /bin/echo x >/dev/null\n/usr/bin/env /bin/echo x >/dev/null\n"
      "/usr/bin/env /bin/echo x >/dev/null\n"
      // A shell that reaps a child: never learned quiet either.
      "/bin/sh -c '/bin/true; exit 0'\n/bin/sh -c '/bin/true; exit 0'\n"
      "/bin/sh -c '/bin/true; exit 0'\n"
      // Arguments that differ make another command.
      "/bin/sh -c 'sleep 0.02; exit 0' x\n/bin/sh -c 'exit 0' x\n/bin/sh -c 'exit 0' x\n"
      "/bin/sh -c 'exit 0' x\n"
      // A read of an empty pipe (the sleep never writes) makes dd's log, in
      // case the read waits and dd is killed in it; it does not wait
      // (O_NONBLOCK: EAGAIN, exit 1), so dd ends quiet all the same: learned.
      "for i in 1 2 3; do /bin/sleep 0.01 | /bin/dd iflag=nonblock count=1 2>/dev/null; done\n"
      "exit 0\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("l.trace")});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("l.trace.index.json"));
  INFO(index);
  CHECK(Rows(index, "\"/bin/echo\", \"a\"]") == std::pair<size_t, size_t>{3, 1});
  CHECK(Rows(index, "\"/bin/echo\", \"b\"]") == std::pair<size_t, size_t>{1, 0});
  CHECK(Rows(index, "\"/bin/sleep\", \"0.01\"]") == std::pair<size_t, size_t>{6, 0});
  CHECK(Rows(index, "\"/usr/bin/env\"") == std::pair<size_t, size_t>{3, 0});
  CHECK(Rows(index, "\"/bin/sh\", \"-c\", \"/bin/true; exit 0\"]") == std::pair<size_t, size_t>{3, 0});
  // The two sh -c 'exit 0' x after the sleeping one are other commands (their
  // arguments differ): quiet twice, then the third is not traced.
  CHECK(Rows(index, "\"/bin/sh\", \"-c\", \"exit 0\", \"x\"]") == std::pair<size_t, size_t>{3, 1});
  CHECK(Rows(index, "\"/bin/sh\", \"-c\", \"sleep 0.02; exit 0\", \"x\"]") ==
        std::pair<size_t, size_t>{1, 0});
  CHECK(Rows(index, "\"/bin/dd\", \"iflag=nonblock\"") == std::pair<size_t, size_t>{3, 1});
  // The sleeps have their traces, with the sleep.
  const auto [traces, sleeps] = CheckRunTraces(dir, "l.trace", index);
  CHECK(sleeps == 7);
  CHECK(traces == 8);  // and the job's shell
}

TEST_CASE(
    "an exec with an environment without the library: untraced, none of our variables, listed",
    "[run]") {
  // `env -i prog`, a subprocess given its own environment: the new program
  // was untraced (LD_PRELOAD gone) but got GOTRACE_ROOT_PID, GOTRACE_IMAGE,
  // GOTRACE_NCPUS and ASAN_OPTIONS all the same, and the index had no row
  // for it (its exit status lost). Its environment is now the program's
  // own, and it is listed as not traced, with its status.
  TempDir dir;
  const std::string script = "env -i /usr/bin/env; env -i A=1 /usr/bin/env; echo done\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("e.trace")});
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "A=1\ndone\n");
  CHECK_THAT(r.err,
             Catch::Contains("2 not traced (started with an environment without the library"));
  CHECK_THAT(r.err, Catch::Contains("without the library: env x2"));
  const std::string index = Slurp(dir.File("e.trace.index.json"));
  INFO(index);
  const std::vector<std::string> rows = IndexRows(index, "\"/usr/bin/env\"]");
  REQUIRE(rows.size() == 2);
  for (const std::string& row : rows) {
    CHECK_THAT(row, Catch::Contains("\"exit\": {\"code\":0}"));
    CHECK_THAT(row, Catch::Contains("\"traced\": false"));
  }
}

TEST_CASE("learned quiet: the descriptors kept for the exec never reach the program", "[run]") {
  // An exec of a command learned quiet keeps the learn table's and the
  // journal's descriptors open (close-on-exec) for the exec to close: the
  // program never sees them, and when the exec fails (the file is no
  // longer a program: bash then runs it as a script, in the same child)
  // they are closed before the shell goes on. The descriptors below 100
  // are listed (the library's own are above 500), traced and untraced.
  TempDir dir;
  const std::string script =
      "cp /bin/ls ./lsx\n"
      "for i in 1 2 3 4; do ./lsx /proc/self/fd | awk '$1 < 100' | tr '\\n' ' '; echo; done\n"
      // (bash's own glob: a pipeline's descriptors would come and go)
      "printf 'for f in /proc/$BASHPID/fd/*; do n=${f##*/}; [ $n -lt 100 ] && printf \"%%s \" $n; "
      "done; echo\\n' > ./lsx\n"
      "./lsx /proc/self/fd\n";
  WriteFile(dir.File("job.sh"), script, fs::perms::owner_all);
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD"};
  const ProcResult plain = RunProcess({"/bin/bash", dir.File("job.sh")}, o);
  INFO(plain.Describe() << "\n" << plain.out << plain.err);
  REQUIRE(plain.Exited(0));
  REQUIRE(std::count(plain.out.begin(), plain.out.end(), '\n') == 5);
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("k.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == plain.out);
  const std::string index = Slurp(dir.File("k.trace.index.json"));
  INFO(index);
  CHECK(Rows(index, "\"./lsx\", \"/proc/self/fd\"]").second >= 2);  // learned: not traced
}

TEST_CASE(
    "learned quiet: a small program quiet with three argument lists, taken back after a busy run",
    "[run]") {
  TempDir dir;
  // sha256sum of three small files: three commands of one program, each
  // quiet and small, so the program is learned quiet: the next command of
  // it, any arguments, runs untraced. That one uses 20 ms of CPU or more
  // (96 MiB); bash reaps it and the run traces the program again.
  const std::string script =
      "set -e\n"
      "for i in 1 2 3; do echo $i > s$i; done\n"
      "head -c 100663296 /dev/zero > big\n"
      "for i in 1 2 3; do /usr/bin/sha256sum s$i >/dev/null; done\n"
      "/usr/bin/sha256sum big >/dev/null\n"
      "/usr/bin/sha256sum s1 >/dev/null\n"
      "/usr/bin/sha256sum big >/dev/null\n"
      // echo with four other argument lists: the fourth is not traced.
      "for i in 1 2 3 4; do /bin/echo n$i >/dev/null; done\n"
      // The same, reaped by a SIGCHLD handler while its process waits in a
      // hook (bash does so for command substitutions, often while its read
      // of the pipe is in ours).
      "for f in s1 s2 s3 big s1; do " +
      Scenario("reap_in_handler") + " /usr/bin/md5sum $f; done\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("p.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("p.trace.index.json"));
  INFO(index);
  const std::vector<std::string> rows = IndexRows(index, "\"/usr/bin/sha256sum\"");
  REQUIRE(rows.size() == 6);
  // In the order they ran (pids grow: rows sorted by start).
  const char* traced[] = {"s1", "s2", "s3", "big", "s1", "big"};
  const bool want[] = {true, true, true, false, true, true};
  for (size_t i = 0; i < 6; ++i) {
    INFO(i << ": " << rows[i]);
    CHECK_THAT(rows[i], Catch::Contains(std::string("\"") + traced[i] + "\"]"));
    CHECK((rows[i].find("\"traced\": false") == std::string::npos) == want[i]);
  }
  // The second big one was traced, and busy: a trace with its CPU samples.
  CHECK_THAT(rows[5], Catch::Contains("\"quiet\": false"));
  CHECK(Rows(index, "\"/bin/echo\", \"n") == std::pair<size_t, size_t>{4, 1});
  CHECK(Rows(index, "\"/bin/echo\", \"n4\"]") == std::pair<size_t, size_t>{1, 1});
  const std::vector<std::string> md5 = IndexRows(index, "\"/usr/bin/md5sum\"");
  REQUIRE(md5.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    INFO(i << ": " << md5[i]);
    CHECK((md5[i].find("\"traced\": false") == std::string::npos) == (i != 3));
    CHECK_THAT(md5[i], Catch::Contains("\"exit\": {\"code\":0}"));  // reaped: its end is known
  }
  CHECK(Occurrences(r.out, "reaped exit 0\n") == 5);
}

// Only utilities that never run another program are learned as programs:
// any other is learned by its commands alone (the same arguments, quiet
// twice). Learned as programs, three quiet `sh -c` left the fourth, which
// ran a build, untraced with its whole tree out of the index; three quiet
// `git config` the `git gc` that runs pack-refs and repack. cat, a leaf,
// is learned after three files: `cat two` again is not traced.
TEST_CASE("learned quiet: only utilities that run no other program are learned as programs",
          "[run]") {
  TempDir dir;
  const std::string script =
      "set -e\n"
      "for k in 1 2 3; do /bin/sh -c \"echo step $k\"; done\n"
      "/bin/sh -c '/bin/true; /bin/true'\n"
      "git init -q repo && cd repo\n"
      "for k in a b c; do /usr/bin/git config x.$k 1; done\n"
      "/usr/bin/git -c user.name=t -c user.email=t@x commit -q --allow-empty -m m\n"
      "/usr/bin/git gc --quiet\n"
      "for f in one two three; do echo $f > $f; /bin/cat $f >/dev/null; done\n"
      "/bin/cat two >/dev/null\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("g.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("g.trace.index.json"));
  INFO(index);
  CHECK(Rows(index, "\"/bin/sh\", \"-c\", \"/bin/true; /bin/true\"]") ==
        std::pair<size_t, size_t>{1, 0});
  CHECK(Rows(index, "\"/bin/true\"]").first == 2);  // the fourth sh's children, listed
  CHECK(Rows(index, "\"/usr/bin/git\", \"config\"") == std::pair<size_t, size_t>{3, 0});
  CHECK(Rows(index, "\"/usr/bin/git\", \"gc\"") == std::pair<size_t, size_t>{1, 0});
  CHECK(Rows(index, "\"/usr/lib/git-core/git\", \"pack-refs\"").first == 1);
  CHECK(Rows(index, "\"/usr/lib/git-core/git\", \"repack\"").first == 1);
  CHECK(Rows(index, "\"/bin/cat\", \"two\"]") == std::pair<size_t, size_t>{2, 1});
}

TEST_CASE("a pipe reader's short waits keep it quiet, 10 ms of them make it worth a trace",
          "[run]") {
  TempDir dir;
  // cat waits once for a few milliseconds (the subshell's sleep of 3 ms):
  // not worth a trace, as `head` waiting for `sort`. Three tries: on a busy
  // host one wait may pass 10 ms. Then a cat that waits eight times for a
  // line every 4 ms or more (a sleep process each): over 10 ms in all.
  const std::string script =
      "for i in 1 2 3; do { /bin/sleep 0.003; echo x; } | /bin/cat - >/dev/null; done\n"
      "{ for i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.004; echo x; done; } | /bin/cat -u - - "
      ">/dev/null\n";
  const ProcResult r =
      WrapJob(dir, script, {"-o", dir.File("w.trace"), "--every-process"}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("w.trace.index.json"));
  INFO(index);
  const std::vector<std::string> once = IndexRows(index, "\"/bin/cat\", \"-\"]");
  REQUIRE(once.size() == 3);
  size_t quiet = 0;
  for (const std::string& row : once) quiet += row.find("\"quiet\": true") != std::string::npos;
  CHECK(quiet >= 1);
  const std::vector<std::string> eight = IndexRows(index, "\"/bin/cat\", \"-u\"");
  REQUIRE(eight.size() == 1);
  CHECK_THAT(eight[0], Catch::Contains("\"quiet\": false"));
  REQUIRE(!EntryTrace(eight[0]).empty());
  const ParsedTrace parsed = ParseWithGo(dir.File(EntryTrace(eight[0])));
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.Count("GoBlockNet") >= 2);  // its reads of the pipe
}

// A debugger's wait loop (strace -f, gdb: waitpid(-1, __WALL)) reaps its
// tracee's threads as they end, each by its thread id. Each was listed as a
// process of the run that left nothing of its own: "6 processes ran",
// "quiet: (fork) x4" for the debugger and its tracee (three threads and the
// tracer's own).
TEST_CASE("a debugger's reaping of its tracee's threads lists no process", "[run]") {
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("p.trace"), "--", Scenario("ptrace_threads")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  if (r.out == "ptrace unavailable\n") {
    WARN("SKIP: this system does not allow ptrace (PTRACE_TRACEME)");
    return;
  }
  CHECK(r.out == "reaped at least 3 threads' ends; child exited with 0\n");
  CHECK_THAT(r.err, Catch::Contains("2 processes ran: 2 traced, 0 quiet"));
  const std::string index = Slurp(dir.File("p.trace.index.json"));
  INFO(index);
  CHECK(ForkRow(index).empty());  // no row without a command line
}

TEST_CASE("encode ahead: a process's trace is written once it ends, while the program still runs",
          "[run]") {
  TempDir dir;
  // The launcher watches the logs from 2 s into a run (a shorter one ends
  // before it would matter). Then 12 commands sleep (worth a trace: 1.5 MiB
  // of logs, past the backlog of 1 MiB asked for); then the job waits for
  // one of their trace files to appear, up to 20 s, before it ends.
  const std::string script =
      "/bin/sleep 2.3\n"
      "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do /bin/sleep 0.01; done\n"
      "i=0; while [ $i -lt 200 ]; do\n"
      "  for f in job.trace.*; do case $f in *.index.json|*.gtlog*|'job.trace.*') ;; *)\n"
      "    echo \"$f\" > seen.txt; /bin/sleep 0.2; ls \"$GOTRACE_LOG_DIR\" > logs.txt; exit 0 ;; esac; done\n"
      "  i=$((i + 1)); /bin/sleep 0.1\n"
      "done\n"
      "exit 3\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("job.trace")}, "/bin/sh", {"GOTRACE_ENCODE_AHEAD=1"});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string seen = Slurp(dir.File("seen.txt"));
  REQUIRE_FALSE(seen.empty());
  const std::string name = seen.substr(0, seen.find('\n'));
  // Its log was removed with it (the trace is published first, its log
  // removed a moment later: hence the script's sleep): a long job's logs do
  // not pile up (tmpfs).
  const std::string logs = Slurp(dir.File("logs.txt"));
  INFO("logs: " << logs);
  CHECK(logs.find(name + ".gtlog") == std::string::npos);
  // The same trace, listed once in the run's index, for one of the sleeps
  // (the first one's, 2.3 s, ended after the watch began).
  const std::string index = Slurp(dir.File("job.trace.index.json"));
  INFO(index);
  CHECK(Occurrences(index, "\"trace\": \"" + name + "\"") == 1);
  CHECK(IndexRows(index, "\"/bin/sleep\", \"0.01\"]").size() == 12);
  const std::vector<std::string> rows = IndexRows(index, "\"/bin/sleep\"");
  CHECK(std::count_if(rows.begin(), rows.end(), [&](const std::string& row) {
          return row.find("\"trace\": \"" + name + "\"") != std::string::npos;
        }) == 1);
  // Every trace of the run valid, every process listed once, no log left.
  const auto [traces, sleeps] = CheckRunTraces(dir, "job.trace", index);
  CHECK(traces >= 15);  // the shell, the first sleep, the 12, the loop's first
  CHECK(sleeps >= 2);
  std::set<std::string> pids;
  for (size_t at = index.find("\"pid\": "); at != std::string::npos; at = index.find("\"pid\": ", at + 1))
    CHECK(pids.insert(index.substr(at, index.find(',', at) - at)).second);
}

TEST_CASE("gotrace run is tracewrap with the encoder linked in: the same index, the program's status",
          "[run]") {
  TempDir dir;
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_QUIET", "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG",
                 "GOTRACE_DEFER"};
  o.env = {"GOTRACE_LIB=" + PreloadLib()};
  const ProcResult r = RunProcess({kGotrace, "run", "-o", dir.File("g.trace"), "--", "/bin/sh", "-c",
                                   "/bin/sleep 0.02; /bin/true; exit 5"},
                                  o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(5));
  CHECK_THAT(r.err, Catch::Contains("gotrace run: 3 processes ran"));
  const std::string index = Slurp(dir.File("g.trace.index.json"));
  INFO(index);
  CHECK(Occurrences(index, "\"pid\": ") == 3);
  CHECK_THAT(index, Catch::Contains("\"exit\": {\"code\":5}"));
  const auto [traces, sleeps] = CheckRunTraces(dir, "g.trace", index);
  CHECK(traces == 2);  // the shell's and the sleep's; /bin/true is quiet
  CHECK(sleeps == 1);
}

// The run's first process opens the kernel's events at its start. One that
// ends a few milliseconds later, never having left its CPU, has no record
// from them; its timeline is still the kernel's, and the summary said
// "scheduling inferred" in most runs.
TEST_CASE("a short run with the kernel's events open says scheduling from the kernel", "[run][sched]") {
  for (int i = 0; i < 4; ++i) {
    TempDir dir;
    const ProcResult r = Wrap({"-o", dir.File("s.trace"), "--", Scenario("cpu_spin"), "1"}, dir,
                              {"GOTRACE_SCHED=auto"});
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    if (PerfDenied(r.err)) return;
    CHECK_THAT(r.err, Catch::Contains("scheduling from the kernel"));
  }
  TempDir dir;
  const ProcResult r = Wrap({"--sched", "infer", "-o", dir.File("s.trace"), "--", Scenario("cpu_spin"), "1"},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("scheduling inferred"));
}

TEST_CASE("a thread's last chunk after many: no record is said to be torn", "[run]") {
  // 40,000 recorded system calls fill the thread's slot several times; its
  // last chunk, left open at exit, lies in the same slot over the records
  // of the one before it (copied out already). They must read as nothing.
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("d.trace"), "--", "/bin/dd", "if=/dev/zero", "of=/dev/null",
                             "bs=1", "count=20000", "status=none"},
                            dir, {"GOTRACE_BUFFER_KB=16"});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, !Catch::Contains("incomplete"));
  CHECK_THAT(r.err, !Catch::Contains("warning"));
  const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.events.size() >= 40'000);
}

TEST_CASE("a fork child's log starts at its first record, its process at the fork", "[run]") {
  TempDir dir;
  // The subshell computes for 100 ms without an interposed call (bash
  // arithmetic on $EPOCHREALTIME, read through the vDSO), opens a file (a
  // short call: not recorded while nothing else is), then waits for a
  // command: its first record, which starts its log (AtForkChild leaves it
  // pending). Its time in the index must still run from the fork: at least
  // the loop.
  const std::string script =
      "( s=$EPOCHREALTIME; while (( ${EPOCHREALTIME/./} - ${s/./} < 100000 )); do :; done; "
      "echo x > f.txt; /bin/sleep 0.01; : ); /bin/true";
  const ProcResult r = Wrap({"-q", "-o", dir.File("f.trace"), "--", "/bin/bash", "-c", script}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("f.trace.index.json"));
  INFO(index);
  // bash, its subshell, the subshell's sleep, and bash's last command exec'd
  // in place.
  REQUIRE(Occurrences(index, "\"pid\": ") == 4);
  // The subshell never exec'd: it is listed by bash's command line, and
  // ended by itself where bash exec'd /bin/true. Its 100 ms of computing
  // make it worth a trace of its own.
  std::string entry;
  for (const std::string& row : IndexRows(index, "\"/bin/bash\""))
    if (row.find("\"exit\": {\"code\":0}") != std::string::npos) entry = row;
  REQUIRE(!entry.empty());
  CHECK_THAT(entry, Catch::Contains("\"quiet\": false"));
  const size_t d = entry.find("\"duration_ns\": ");
  REQUIRE(d != std::string::npos);
  const uint64_t ns = std::stoull(entry.substr(d + 15));
  CHECK(ns >= 95'000'000);  // (the loop reads the wall clock, the index the monotonic one)
  // It recorded something (the wait), so it has a log of its own.
  CHECK(entry.find("\"records\": 0,") == std::string::npos);
}

TEST_CASE("a fork child's short file calls before anything else are not recorded (a shell's redirections)",
          "[run]") {
  // A shell's fork child opens, dup2s and closes each redirection before it
  // execs: those opens made the child's log (130 us a fork here) for
  // records dropped with it. Now a file's call shorter than the quiet
  // threshold in a child that recorded nothing is timed, not recorded; the
  // subshell below is listed with no records and no log of its own.
  TempDir dir;
  const ProcResult r = Wrap({"-q", "-o", dir.File("r.trace"), "--", "/bin/bash", "-c",
                             "( echo x > f.txt; echo y >> f.txt ); /bin/true"},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(Slurp(dir.File("f.txt")) == "x\ny\n");
  const std::string index = Slurp(dir.File("r.trace.index.json"));
  INFO(index);
  REQUIRE(Occurrences(index, "\"pid\": ") == 3);  // bash, the subshell, true exec'd in place
  const std::string entry = ForkRow(index);
  REQUIRE(!entry.empty());
  CHECK(entry.find("\"trace\": null") != std::string::npos);
  CHECK(entry.find("\"records\": 0,") != std::string::npos);
}

TEST_CASE("a background job whose parent ended first is listed under that parent, not init",
          "[run]") {
  // The inner shell starts `sleep` in the background and ends; sleep's
  // getppid() is then init's 1, and the index listed it under 1 though its
  // parent was in the index. The parent it had when it began is kept
  // across its fork and exec (GOTRACE_IMAGE carries it).
  TempDir dir;
  const ProcResult r = Wrap({"-q", "-o", dir.File("b.trace"), "--", "/bin/sh", "-c",
                             "/bin/sh -c '/bin/sleep 0.3 &'; /bin/sleep 0.5"},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("b.trace.index.json"));
  INFO(index);
  const std::vector<std::string> inner =
      IndexRows(index, "\"/bin/sh\", \"-c\", \"/bin/sleep 0.3 &\"]");
  const std::vector<std::string> bg = IndexRows(index, "\"/bin/sleep\", \"0.3\"]");
  REQUIRE(inner.size() == 1);
  REQUIRE(bg.size() == 1);
  // Each row reads {"pid": P, "ppid": Q, "argv": ...: the inner shell's pid
  // is the background sleep's ppid.
  const std::string whole = index;
  const size_t at_inner = whole.rfind("{\"pid\": ", whole.find(inner[0]));
  const size_t at_bg = whole.rfind("{\"pid\": ", whole.find(bg[0]));
  const std::string inner_pid =
      whole.substr(at_inner + 9, whole.find(',', at_inner) - at_inner - 9);
  const size_t pp = whole.find("\"ppid\": ", at_bg) + 9;
  const std::string bg_ppid = whole.substr(pp, whole.find(',', pp) - pp);
  CHECK(bg_ppid == inner_pid);
}

TEST_CASE("a rerun into the same -o: the whole run takes the next number, children and index too",
          "[run]") {
  TempDir dir;
  const std::vector<std::string> job = {"-o", dir.File("r.trace"),         "--", "/bin/bash",
                                        "-c", "/bin/sleep 0.02; /bin/true"};
  for (int run = 0; run < 2; ++run) {
    const ProcResult r = Wrap(job, dir);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
  }
  // The second run: r.1.trace, r.1.trace.PID for its sleep, r.1.trace.index.json naming both.
  const std::string index = Slurp(dir.File("r.1.trace.index.json"));
  INFO(index);
  const std::string sleep = IndexEntry(index, "/bin/sleep");
  const std::string trace = EntryTrace(sleep);
  CHECK(trace.rfind("r.1.trace.", 0) == 0);
  CHECK(fs::exists(dir.File(trace)));
  CHECK(fs::exists(dir.File("r.1.trace")));
  // The first run's files are as it left them.
  const std::string first = Slurp(dir.File("r.trace.index.json"));
  CHECK(EntryTrace(IndexEntry(first, "/bin/sleep")).rfind("r.trace.", 0) == 0);
}

// Runs started together into the same -o (parallel CI jobs) each take a
// number of their own at their start: every run's children's traces carry
// its number. They all found the name free, and the children of all three
// were r.trace.PID, whatever number each program's trace got at the end.
TEST_CASE("runs started together into the same -o each take their own number, children too",
          "[run]") {
  TempDir dir;
  std::string script;
  for (int k = 0; k < 3; ++k)
    script += kTracewrap + " -q -o " + dir.File("c.trace") +
              " -- /bin/bash -c '/bin/sleep 0.05; /bin/true' & ";
  script += "wait";
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD",      "GOTRACE_OUT",      "GOTRACE_QUIET",
                 "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG", "GOTRACE_DEFER"};
  o.env = {"GOTRACE_LIB=" + PreloadLib()};
  const ProcResult r = RunProcess({"/bin/bash", "-c", script}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  for (const char* root : {"c.trace", "c.1.trace", "c.2.trace"}) {
    INFO(root);
    const std::string index = Slurp(dir.File(std::string(root) + ".index.json"));
    INFO(index);
    const std::string trace = EntryTrace(IndexEntry(index, "/bin/sleep"));
    CHECK(trace.rfind(std::string(root) + ".", 0) == 0);
    CHECK(fs::exists(dir.File(trace)));
    CHECK(fs::exists(dir.File(root)));
  }
  CHECK_FALSE(fs::exists(dir.File("c.3.trace.index.json")));
}

// A process killed by SIGKILL before it recorded anything (staged, in
// memory) leaves no log and no journal entry: it was missing from the index
// ("2 processes ran" where 3 did), though its traced parent reaped it.
TEST_CASE("a process killed before it recorded anything is listed from its reaping", "[run]") {
  TempDir dir;
  const ProcResult r = Wrap(
      {"-o", dir.File("r.trace"), "--", "/bin/sh", "-c", "/bin/sh -c 'kill -9 $$'; echo $?"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "137\n");
  const std::string index = Slurp(dir.File("r.trace.index.json"));
  INFO(index);
  CHECK(Occurrences(index, "\"pid\": ") == 2);
  const size_t at = index.find("\"exit\": {\"signal\":9,\"name\":\"SIGKILL\"}");
  REQUIRE(at != std::string::npos);
  const std::string row = index.substr(index.rfind('{', index.rfind("\"pid\": ", at)),
                                       index.find('\n', at) - index.rfind("\"pid\": ", at));
  CHECK_THAT(row, Catch::Contains("\"start_ns\": null, \"duration_ns\": null") &&
                      Catch::Contains("\"trace\": null"));
  CHECK_THAT(r.err, Catch::Contains("1 killed process(es) had recorded nothing yet"));
  CHECK_THAT(r.err, Catch::Contains("2 processes ran"));
}

// A fork child's log numbers its modules from its parent's epoch (an
// unload moved it on), and its main thread, there from the log's start,
// had its routine looked up at epoch 0, where the log had no module: it was
// named after the process (Apache's event workers: by its raw start
// address, "apache2 [0x564ef55d3710]").
TEST_CASE("a fork child of a process that unloaded a library: its main thread is main", "[run]") {
  TempDir dir;
  const ProcResult r =
      Wrap({"-q", "-o", dir.File("d.trace"), "--", Scenario("fork_after_dlclose")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string child = r.out.substr(0, r.out.find('\n'));
  const std::string trace = dir.File("d.trace." + child);
  REQUIRE(ValidateTrace(trace).empty());
  const ProcResult rep = RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "report", trace});
  INFO(rep.out);
  CHECK_THAT(rep.out, Catch::Contains("  main (tid " + child + ")"));
}

TEST_CASE("a fork child killed while it waits is listed by its parent's command line", "[run]") {
  // Its command line is recorded at its end (its title), which SIGKILL
  // never lets it reach: README promises its parent's then.
  TempDir dir;
  const std::string py =
      "import os, time, signal\n"
      "p = os.fork()\n"
      "if p == 0:\n"
      "    time.sleep(5)\n"
      "    os._exit(0)\n"
      "time.sleep(0.3)\n"
      "os.kill(p, signal.SIGKILL)\n"
      "os.waitpid(p, 0)\n"
      "print(p)\n";
  const ProcResult r =
      Wrap({"-q", "-o", dir.File("k.trace"), "--", "/usr/bin/python3", "-c", py}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("k.trace.index.json"));
  INFO(index);
  const std::string pid = r.out.substr(0, r.out.find('\n'));
  const size_t at = index.find("{\"pid\": " + pid + ",");
  REQUIRE(at != std::string::npos);
  const std::string row = index.substr(at, index.find('\n', at) - at);
  CHECK_THAT(row, Catch::Contains("\"argv\": [\"/usr/bin/python3\", \"-c\"") &&
                      Catch::Contains("\"exit\": {\"signal\":9,\"name\":\"SIGKILL\"}") &&
                      Catch::Contains("\"recovered\": true"));
}

TEST_CASE(
    "a child reaped by a signal handler that interrupted a recorded wait has its exit in the index",
    "[run]") {
  // The postmaster's backends killed by SIGKILL were listed with "exit":
  // null: it reaps in its SIGCHLD handler, inside its select's hook, where
  // the waitpid hook did not record.
  TempDir dir;
  const ProcResult r =
      Wrap({"-q", "-o", dir.File("r.trace"), "--", Scenario("reap_in_handler")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string pid = r.out.substr(0, r.out.find('\n'));
  CHECK_THAT(r.out, Catch::EndsWith("reaped signal 9\n"));
  const std::string index = Slurp(dir.File("r.trace.index.json"));
  INFO(index);
  const size_t at = index.find("{\"pid\": " + pid + ",");
  REQUIRE(at != std::string::npos);
  const std::string row = index.substr(at, index.find('\n', at) - at);
  CHECK_THAT(row, Catch::Contains("\"exit\": {\"signal\":9,\"name\":\"SIGKILL\"}"));
  // Its end is the reaping, after the parent's 300 ms nap: not its last
  // record, at the start of its sleep (the launcher takes a reaping 100 ms
  // or more after a killed process's last record).
  const size_t d = row.find("\"duration_ns\": ");
  REQUIRE(d != std::string::npos);
  CHECK(std::strtoull(row.c_str() + d + 15, nullptr, 10) >= 250'000'000);
  // The parent's trace is valid, its select whole.
  const ParsedTrace t = ParseWithGo(dir.File("r.trace"));
  INFO(t.error);
  CHECK(t.ok);
}

TEST_CASE("a fork child that ends by _exit from a signal handler while it waits keeps its trace",
          "[run]") {
  // It made its log before the poll (a kill while it waits must find the
  // wait), then ended normally with nothing but the open wait: dropped as
  // quiet, the 300 ms in poll nowhere (PostgreSQL's SIGQUIT'd children).
  TempDir dir;
  const std::string prog = Scenario("handler_exit");
  const ProcResult r = Wrap({"-q", "-o", dir.File("e.trace"), "--", prog}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "child 2\n");
  const std::string index = Slurp(dir.File("e.trace.index.json"));
  INFO(index);
  std::string child;
  for (const std::string& row : IndexRows(index, ""))
    if (row.find("\"exit\": {\"code\":2}") != std::string::npos) child = row;
  REQUIRE(!child.empty());
  CHECK_THAT(child, Catch::Contains("\"quiet\": false"));
  REQUIRE(!EntryTrace(child).empty());
  const ParsedTrace t = ParseWithGo(dir.File(EntryTrace(child)));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoBlockNet") == 1);  // the poll, open until its end
}

TEST_CASE("the summary counts processes, and their images apart", "[run]") {
  // One process that execs twice (sh, env, sh) and its two children: it
  // said "5 processes ran", one row per image.
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("e.trace"), "--", "/bin/sh", "-c",
                             "exec /usr/bin/env /bin/sh -c '/bin/true; /bin/true'"},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("3 processes ran, 5 program images: "));
}

TEST_CASE("a worker forked without exec is listed by its command line as it rewrote it", "[run]") {
  TempDir dir;
  const std::string prog = Scenario("fork_title");
  const ProcResult r = Wrap({"-q", "-o", dir.File("w.trace"), "--", prog, "an-argument"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "workers 0 0\n");
  const std::string index = Slurp(dir.File("w.trace.index.json"));
  INFO(index);
  REQUIRE(Occurrences(index, "\"pid\": ") == 3);
  // The first worker's setproctitle (/proc/self/cmdline at its end, NUL
  // padding dropped); the second's is its parent's (ended by _exit).
  CHECK(Occurrences(index, "\"argv\": [\"worker: busy\"]") == 1);
  CHECK(Occurrences(index, "\"argv\": [\"" + prog + "\", \"an-argument\"]") == 2);
  CHECK(Occurrences(index, "\"argv\": []") == 0);
}

TEST_CASE("a fork child that ends before recording anything is listed with how it ended", "[run]") {
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("q.trace"), "--", Scenario("fork_quiet")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "children 5 6 143 4\n");
  CHECK(r.err.find("6 processes ran: 2 traced, 4 quiet") != std::string::npos);
  const std::string index = Slurp(dir.File("q.trace.index.json"));
  INFO(index);
  REQUIRE(Occurrences(index, "\"pid\": ") == 6);
  CHECK(index.find("\"quiet\": 4,") != std::string::npos);
  // No command line of their own (they never exec'd), no trace, no records.
  const std::vector<std::string> forks = IndexRows(index, "]");
  REQUIRE(forks.size() == 4);
  const char* exits[] = {"{\"code\":5}", "{\"code\":6}", "{\"signal\":15,\"name\":\"SIGTERM\"}",
                         "{\"code\":4}"};
  for (size_t i = 0; i < 4; ++i) {
    INFO(forks[i]);
    CHECK(forks[i].find("\"exit\": " + std::string(exits[i]) + ",") != std::string::npos);
    CHECK(forks[i].find("\"trace\": null, \"quiet\": true,") != std::string::npos);
  }
  // The double fork: the child that recorded nothing is its parent's, and
  // its child (which slept: traced) is its own, not lost nor its
  // grandparent's.
  std::istringstream pids(r.err.substr(r.err.find("double fork ") + 12));
  int main_pid = 0, middle = 0, grandchild = 0;
  pids >> main_pid >> middle >> grandchild;
  REQUIRE(grandchild > 0);
  const std::string mid =
      "\"pid\": " + std::to_string(middle) + ", \"ppid\": " + std::to_string(main_pid) + ",";
  const std::string grand =
      "\"pid\": " + std::to_string(grandchild) + ", \"ppid\": " + std::to_string(middle) + ",";
  CHECK(Occurrences(index, "\"pid\": " + std::to_string(middle) + ",") == 1);
  CHECK(index.find(mid) != std::string::npos);
  REQUIRE(index.find(grand) != std::string::npos);
  const std::string row =
      index.substr(index.find(grand), index.find('\n', index.find(grand)) - index.find(grand));
  INFO(row);
  CHECK(row.find("\"exit\": {\"code\":3},") != std::string::npos);
  CHECK(row.find("\"trace\": \"q.trace." + std::to_string(grandchild) + "\"") != std::string::npos);
  const ParsedTrace t = ParseWithGo(dir.File("q.trace." + std::to_string(grandchild)));
  INFO(t.error);
  CHECK(t.ok);
}

// Runs fork_in_handler ARGS under tracewrap: its forked child exits with
// `code`, listed as worth a trace; returns the child's trace, parsed.
ParsedTrace HandlerChild(const TempDir& dir, const std::vector<std::string>& args, int code) {
  const std::string prog = Scenario("fork_in_handler");
  std::vector<std::string> argv = {"-o", dir.File("h.trace"), "--", prog};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcResult r = Wrap(argv, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "child " + std::to_string(code) + "\n");
  const std::string index = Slurp(dir.File("h.trace.index.json"));
  INFO(index);
  std::string child;
  for (const std::string& row : IndexRows(index, "\"" + prog + "\""))
    if (row.find("\"exit\": {\"code\":" + std::to_string(code) + "}") != std::string::npos)
      child = row;
  REQUIRE(!child.empty());
  CHECK_THAT(child, Catch::Contains("\"quiet\": false"));
  REQUIRE(!EntryTrace(child).empty());
  ParsedTrace t = ParseWithGo(dir.File(EntryTrace(child)));
  INFO(t.error);
  REQUIRE(t.ok);
  return t;
}

TEST_CASE("a child forked by a signal handler that interrupted a recorded wait is traced",
          "[run]") {
  // PostgreSQL 15's postmaster: its walwriter, autovacuum and startup
  // processes were listed as traced, with nothing recorded.
  TempDir dir;
  CHECK(HandlerChild(dir, {}, 7).Count("GoSleep") == 1);
  // The parent's read, interrupted by the handler, is recorded as before.
  const ParsedTrace p = ParseWithGo(dir.File("h.trace"));
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK(p.Count("GoBlockNet") + p.Count("GoSysBlock") >= 1);
}

TEST_CASE("a child forked by a signal handler that returns into the interrupted wait is traced",
          "[run]") {
  // The handler ran on a second thread (its record not the first); the
  // child sleeps in it, then returns into the read it interrupted: the
  // read's end is written to the child's record of that thread.
  TempDir dir;
  CHECK(HandlerChild(dir, {"--return"}, 8).Count("GoSleep") == 2);
}

TEST_CASE("the launcher's encode of a log is the exit-time encode's, event for event", "[run]") {
  // One run under tracewrap keeping its logs; the kept log encoded again by
  // the exit-time path's encoder (gotrace encode with its settings: offline,
  // system libraries by their symbol tables) gives the same events, stacks
  // and names.
  for (const std::string scenario : {"mutex_contention", "condvar_pingpong", "threadpool"}) {
    INFO(scenario);
    TempDir dir;
    const ProcResult r =
        Wrap({"-q", "-o", dir.File("d.trace"), Scenario(scenario)}, dir, {"GOTRACE_KEEP_LOG=1"});
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    REQUIRE(fs::exists(dir.File("d.trace.gtlog")));
    const ProcResult e = RunProcess({kGotrace, "encode", "-q", "--offline", "--fast-symbols",
                                     dir.File("d.trace.gtlog"), "-o", dir.File("e.trace")});
    INFO(e.err);
    REQUIRE(e.Exited(0));
    const ParsedTrace d = ParseWithGo(dir.File("d.trace")), x = ParseWithGo(dir.File("e.trace"));
    INFO(d.error << x.error);
    REQUIRE(d.ok);
    REQUIRE(x.ok);
    CHECK(d.events.size() > 10);
    CHECK(EventLines(d) == EventLines(x));
    const PprofResult pd = Pprof(dir.File("d.trace"), "sync"), px = Pprof(dir.File("e.trace"), "sync");
    REQUIRE(pd.ok);
    REQUIRE(px.ok);
    // Go prints the samples in map order: compare them as sets.
    CHECK(SortedSamples(pd.traces) == SortedSamples(px.traces));
    CHECK(pd.raw.find(scenario + ".c") != std::string::npos);  // also matches .cc
  }
}

TEST_CASE("staging: a quiet process leaves a journal entry, not a log; one that turns out worth a trace keeps all it recorded",
          "[run][staging]") {
  TempDir dir;
  // ls runs while bash (the program: its log is made at its start) is the
  // only process of the run with a log: every other has been quiet so far
  // and recorded into memory (the fork that opens listing.txt too).
  const std::string script =
      "ls -a \"$GOTRACE_LOG_DIR\" > listing.txt\n"
      "/bin/false || true\n" +
      Scenario("staged_late") + "\n"
      "sh -c 'kill -TERM $$' || true\n"
      "x=$(/bin/sleep 0.02; /bin/true)\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("s.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "done\n");
  const std::string listing = Slurp(dir.File("listing.txt"));
  INFO("the log directory while ls ran:\n" << listing);
  CHECK(Occurrences(listing, ".gtlog") == 1);
  const std::string index = Slurp(dir.File("s.trace.index.json"));
  INFO(index);
  // Quiet: listed with what the process said of itself in its entry.
  const std::string ls = IndexEntry(index, "ls");
  CHECK_THAT(ls, Catch::Contains("\"exe\": \"/usr/bin/ls\"") && Catch::Contains("\"quiet\": true") &&
                     Catch::Contains("\"trace\": null") && Catch::Contains("\"exit\": {\"code\":0}"));
  CHECK_THAT(IndexEntry(index, "/bin/false"), Catch::Contains("\"exit\": {\"code\":1}") &&
                                                   Catch::Contains("\"quiet\": true"));
  // The command substitution's subshell waited 20 ms for its sleep, and did
  // nothing else: a wait for a child is no reason for a trace (the sleep
  // has one). Every fork of bash's is quiet.
  size_t forks = 0;
  for (size_t at = index.find("\"argv\": [], "); at != std::string::npos;
       at = index.find("\"argv\": [], ", at + 1)) {
    const std::string entry = index.substr(at, index.find('}', index.find("\"records\": ", at)) - at);
    INFO(entry);
    CHECK_THAT(entry, Catch::Contains("\"quiet\": true"));
    ++forks;
  }
  CHECK(forks >= 1);
  CHECK_THAT(IndexEntry(index, "/bin/sleep"), Catch::Contains("\"quiet\": false"));
  // Killed by a signal it did not handle, while quiet: its entry says how.
  CHECK_THAT(IndexEntry(index, "sh"), Catch::Contains("\"exit\": {\"signal\":15,\"name\":\"SIGTERM\"}") &&
                                          Catch::Contains("\"quiet\": true"));
  // Worth a trace from its sleep on: the trace has its short calls before
  // it too, and the sleep with its stack.
  const std::string late = IndexEntry(index, Scenario("staged_late"));
  CHECK_THAT(late, Catch::Contains("\"quiet\": false") && Catch::Contains("\"exit\": {\"code\":0}"));
  REQUIRE(!EntryTrace(late).empty());
  const std::string trace = dir.File(EntryTrace(late));
  const ParsedTrace p = ParseWithGo(trace);
  INFO(trace << ": " << p.error);
  REQUIRE(p.ok);
  REQUIRE(p.Count("GoSleep") == 1);
  const int64_t slept = p.Find("GoSleep")[0]->ts;
  size_t before = 0;
  for (const GoEvent* e : p.Find("GoSysCall")) before += e->ts < slept ? 1 : 0;
  CHECK(before >= 9);  // the open and the 8 reads
  const ProcResult rep = RunProcess({kGotrace, "report", "--format", "json", trace});
  REQUIRE(rep.Exited(0));
  CHECK_THAT(rep.out, Catch::Contains("\"func\":\"nap\",\"file\":\"" + std::string(GOTRACE_SCENARIO_SRC) +
                                      "/staged_late.c\""));
}

TEST_CASE(
    "staging: a program that rewrites its arguments in main is listed with the ones it was given",
    "[run][staging]") {
  // perf record crashed under tracewrap: its staged log was made at its
  // first pthread_create, from argv as main had left it (argv[1] NULL).
  TempDir dir;
  const std::string prog = Scenario("argv_rewrite");
  const std::string script = prog + " thread one two\n" + prog + " quiet three four\n" + prog +
                             " quiet three four\n" + prog + " quiet three four\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("a.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "done\n");  // the quiet runs print nothing (a write could block)
  const std::string index = Slurp(dir.File("a.trace.index.json"));
  INFO(index);
  CHECK(index.find("rewritten") == std::string::npos);
  const std::string traced = IndexEntry(index, prog);
  CHECK_THAT(traced, Catch::Contains("[\"" + prog + "\", \"thread\", \"one\", \"two\"]") &&
                         Catch::Contains("\"quiet\": false"));
  // Quiet twice: the third run is not traced. The key the exec looked up
  // is the one the process noted, made from the arguments it was given.
  CHECK(Occurrences(index, "[\"" + prog + "\", \"quiet\", \"three\", \"four\"]") == 3);
  CHECK_THAT(index, Catch::Contains("\"quiet\": 2,") && Catch::Contains("\"not_traced\": 1,"));
  REQUIRE(!EntryTrace(traced).empty());
  const ParsedTrace p = ParseWithGo(dir.File(EntryTrace(traced)));
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK(p.Count("GoSleep") == 1);
}

TEST_CASE("staging: a process busy for 20 ms of CPU is worth a trace, with its CPU samples",
          "[run][staging]") {
  // One thread that never waits: by its waits, heap and threads it is
  // quiet; by its CPU time it is where the job's time went.
  TempDir dir;
  const std::string spin = Scenario("cpu_spin");
  const std::string script =
      spin + " 250 --io 150 --silent\n" +  // recorded calls, then no more
      spin + " 150 --silent\n" +           // no recorded call at all
      spin + " 2 --silent\n" +             // short: stays quiet
      // A subshell's arithmetic: no recorded call, no log started.
      "( s=$EPOCHREALTIME; while (( ${EPOCHREALTIME/./} - ${s/./} < 60000 )); do :; done )\n"
      "echo done\n";  // (last, the subshell would be bash itself)
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("c.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("c.trace.index.json"));
  INFO(index);
  const std::string io = IndexEntry(index, spin + "\", \"250");
  const std::string calm = IndexEntry(index, spin + "\", \"150");
  const std::string brief = IndexEntry(index, spin + "\", \"2");
  CHECK_THAT(brief, Catch::Contains("\"quiet\": true") && Catch::Contains("\"trace\": null"));
  // The subshell too, listed by bash's command line as bash is.
  const std::vector<std::string> shells = IndexRows(index, "\"/bin/bash\"");
  CHECK(shells.size() == 2);
  for (const std::string& row : shells) {
    CHECK_THAT(row, Catch::Contains("\"quiet\": false"));
    REQUIRE(!EntryTrace(row).empty());
    const ParsedTrace t = ParseWithGo(dir.File(EntryTrace(row)));
    INFO(t.error);
    CHECK(t.ok);
    // Running from its start (the subshell's log began at its end: its
    // thread showed runnable all its life).
    const std::vector<const GoEvent*> starts = t.Find("GoStart");
    REQUIRE(!starts.empty());
    CHECK(starts[0]->ts < t.events.back().ts / 2);
  }
  // Found busy at its exit: a trace of its running, without samples.
  CHECK_THAT(calm, Catch::Contains("\"quiet\": false"));
  REQUIRE(!EntryTrace(calm).empty());
  const ParsedTrace c = ParseWithGo(dir.File(EntryTrace(calm)));
  INFO(c.error);
  CHECK(c.ok);
  // Found busy at a tick of its recorded calls, 20 to 30 ms in: the
  // kernel's CPU samples from then on, its 300-odd ms of spinning in them.
  CHECK_THAT(io, Catch::Contains("\"quiet\": false"));
  REQUIRE(!EntryTrace(io).empty());
  const ParsedTrace p = ParseWithGo(dir.File(EntryTrace(io)));
  INFO(p.error);
  REQUIRE(p.ok);
  if (PerfDenied(r.err)) return;
  // 100 per second of CPU time: about 35 (9 with two other CPU hogs on
  // this 2-CPU host); none before.
  CHECK(p.Count("CPUSample") >= 3);
}

TEST_CASE("GOTRACE_SCHED=kernel: a fork child has the kernel's records from its fork",
          "[run][staging]") {
  // README: kernel mode opens them in every process at its start. A
  // subshell's log began at its first recorded call, if any: one that
  // computes had no samples; and one with nothing else but them was
  // removed as empty, missing from the index.
  TempDir dir;
  // (Work counted in iterations, not wall time: on a busy CI host a 200 ms
  // spin on the clock got 40 ms of CPU, 4 samples.)
  const ProcResult r =
      Wrap({"-o", dir.File("k.trace"), "--", "/bin/bash", "-c",
            "( s=0; for ((i = 0; i < 100000; i++)); do s=$((s + i)); done ); ( : ); true"},
           dir, {"GOTRACE_SCHED=kernel"});
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("k.trace.index.json"));
  INFO(index);
  CHECK(Occurrences(index, "\"pid\": ") == 3);  // bash, the busy subshell, the empty one
  std::string busy;
  for (const std::string& row : IndexRows(index, "\"/bin/bash\""))
    if (row.find("\"trace\": \"k.trace.") != std::string::npos) busy = row;
  REQUIRE(!busy.empty());
  const ParsedTrace t = ParseWithGo(dir.File(EntryTrace(busy)));
  INFO(t.error);
  REQUIRE(t.ok);
  if (r.err.find("perf_event_open") != std::string::npos) {
    WARN("perf_event_open is not allowed here: " << r.err);
    return;
  }
  CHECK(t.Count("CPUSample") >= 5);  // 100 per second of CPU time: about 30
}

TEST_CASE("staging: a process killed while it waits on a pipe is recovered from its log", "[run][staging]") {
  TempDir dir;
  // cat waits on a pipe that stays empty: before it blocks, it makes its
  // log (the pipe was not ready), so the kill finds the wait in a log.
  const std::string script = "(sleep 0.6) | cat & c=$!\nsleep 0.3\nkill -KILL $c\nwait\n";
  const ProcResult r = WrapJob(dir, script, {"-o", dir.File("k.trace")}, "/bin/bash");
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::Contains("recovered "));
  const std::string index = Slurp(dir.File("k.trace.index.json"));
  INFO(index);
  const std::string cat = IndexEntry(index, "cat");
  CHECK_THAT(cat, Catch::Contains("\"recovered\": true") && Catch::Contains("\"signal\":9"));
  REQUIRE(!EntryTrace(cat).empty());
  const ParsedTrace p = ParseWithGo(dir.File(EntryTrace(cat)));
  INFO(p.error);
  REQUIRE(p.ok);
  CHECK(p.Count("GoBlockNet") + p.Count("GoSysBlock") >= 1);  // blocked in its read at the end
}

TEST_CASE("plain LD_PRELOAD still writes the trace at exit; GOTRACE_DEFER without its marker too",
          "[run]") {
  TempDir dir;
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"GOTRACE_QUIET", "GOTRACE_DEFER"};
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("p.trace")};
  const ProcResult p = RunProcess({Scenario("sleepers")}, o);
  INFO(p.err);
  CHECK(p.Exited(0));
  CHECK(ParseWithGo(dir.File("p.trace")).ok);
  // A launcher that is gone (its marker removed): the process encodes its
  // own log, as if it ran alone.
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("q.trace"),
           "GOTRACE_DEFER=" + dir.File("no-such-marker")};
  const ProcResult q = RunProcess({Scenario("sleepers")}, o);
  INFO(q.err);
  CHECK(q.Exited(0));
  CHECK(ParseWithGo(dir.File("q.trace")).ok);
  CHECK_FALSE(fs::exists(dir.File("q.trace.gtlog")));
  CHECK_FALSE(fs::exists(dir.File("q.trace.gtlog.self")));
}

TEST_CASE("tracewrap started with stdout and stderr closed: the program's status, and the index",
          "[run]") {
  // Its own descriptors took 1 and 2, and its summary line on a pipe
  // without a reader killed it with SIGPIPE (141 for the program's 7).
  TempDir dir;
  const std::string cmd = "exec " + kTracewrap + " -o " + dir.File("c.trace") +
                          " -- /bin/sh -c 'sleep 0.01; exit 7' >&- 2>&-";
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_QUIET", "GOTRACE_DEFER"};
  o.env = {"GOTRACE_LIB=" + PreloadLib()};
  const ProcResult r = RunProcess({"/bin/sh", "-c", cmd}, o);
  INFO(r.Describe() << "\n" << r.err);
  CHECK(r.Exited(7));
  CHECK(fs::exists(dir.File("c.trace.index.json")));
  CHECK(ParseWithGo(dir.File("c.trace")).ok);
  // A program that dies of SIGPIPE: the launcher dies of it too.
  const ProcResult p =
      Wrap({"-q", "-o", dir.File("p.trace"), "--", "/bin/sh", "-c", "kill -PIPE $$"}, dir);
  CHECK(p.term_signal == SIGPIPE);
}

TEST_CASE("an argument that is not UTF-8 is \\udcXX in the index, which stays valid JSON",
          "[run]") {
  TempDir dir;
  const ProcResult r = Wrap({"-q", "-o", dir.File("u.trace"), "--", "/bin/sh", "-c", "exit 0",
                             "\xff\xfe", "caf\xe9", "caf\xc3\xa9"},
                            dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("u.trace.index.json"));
  INFO(index);
  CHECK(index.find("\"exit 0\", \"\\udcff\\udcfe\", \"caf\\udce9\", \"caf\xc3\xa9\"]") !=
        std::string::npos);
  CHECK(index.find('\xff') == std::string::npos);
}

TEST_CASE("run from a removed directory: the program runs, untraced, with one line", "[run]") {
  // tracewrap refused to run it (status 2); the library alone wrote its
  // trace into / (a relative name against an empty working directory).
  TempDir dir;
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_QUIET", "GOTRACE_DEFER"};
  o.env = {"GOTRACE_LIB=" + PreloadLib()};
  const std::string gone = "mkdir gone && cd gone && rmdir ../gone && ";
  const ProcResult r =
      RunProcess({"/bin/sh", "-c", gone + "exec " + kTracewrap + " -- /bin/sh -c 'exit 3'"}, o);
  INFO(r.err);
  CHECK(r.Exited(3));
  CHECK(r.err.find("cannot write a trace relative to the current directory") != std::string::npos);
  CHECK(r.err.find("running /bin/sh untraced") != std::string::npos);
  auto root_traces = [] {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator("/"))
      if (e.path().filename().string().rfind("gotrace.", 0) == 0) names.insert(e.path().string());
    return names;
  };
  const std::set<std::string> before = root_traces();
  const ProcResult p = RunProcess(
      {"/bin/sh", "-c",
       gone + "exec env LD_PRELOAD=" + PreloadLib() + " /bin/sh -c 'sleep 0.01; exit 4'"},
      o);
  INFO(p.err);
  CHECK(p.Exited(4));
  CHECK(p.err.find("give GOTRACE_OUT an absolute path; tracing is off") != std::string::npos);
  CHECK(root_traces() == before);
}

TEST_CASE("a Go program ends by a raw exit_group: its log becomes its trace, with its command line",
          "[run]") {
  // Debian's go command: a Go program linked with cgo (dynamically, so the
  // library is loaded), started by Go's runtime without __libc_start_main
  // and ended by exit_group, past exit().
  const std::string go = GoBinary();
  TempDir dir;
  const ProcResult r = Wrap({"-o", dir.File("g.trace"), "--", go, "version"}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out.rfind("go version go1.", 0) == 0);
  CHECK(r.err.find("wrote " + dir.File("g.trace") + " (") != std::string::npos);
  CHECK(r.err.find("from the log of a process that ended by a raw exit_group system call (status "
                   "0), as Go programs end; view with: go tool trace ") != std::string::npos);
  CHECK(r.err.find("killed") == std::string::npos);
  const std::string index = Slurp(dir.File("g.trace.index.json"));
  INFO(index);
  CHECK(index.find("\"argv\": [\"" + go + "\", \"version\"], \"exe\": \"" + go + "\"") !=
        std::string::npos);
  CHECK(index.find("\"exit\": {\"code\":0}, \"trace\": \"g.trace\"") != std::string::npos);
  const ParsedTrace t = ParseWithGo(dir.File("g.trace"));
  INFO(t.error);
  CHECK(t.ok);
  CHECK(t.Count("GoCreate") >= 2);  // Go's threads

  // Alone: one line says where the log is and how to make the trace.
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = {"GOTRACE_QUIET", "GOTRACE_DEFER"};
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("p.trace")};
  const ProcResult p = RunProcess({go, "version"}, o);
  INFO(p.err);
  CHECK(p.Exited(0));
  const std::string log = dir.File("p.trace.gtlog");
  CHECK(p.err.find("gotrace: this is a Go program: it ends by a raw exit_group system call") !=
        std::string::npos);
  CHECK(p.err.find("gotrace recover --unique " + log + " -o " + dir.File("p.trace")) !=
        std::string::npos);
  const ProcResult rec = RunProcess({kGotrace, "recover", "-q", log, "-o", dir.File("p.trace")});
  INFO(rec.err);
  CHECK(rec.Exited(0));
  CHECK(ParseWithGo(dir.File("p.trace")).ok);
}

}  // namespace
}  // namespace gotrace::testing
