// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/run_test.cc - tracing whole CI jobs (issue 18) -----===//
//
// Under tracewrap every process only ends its event log and the launcher
// encodes the run once the program has ended: a shell job's quiet commands
// get no trace file, the run gets one index, and a log encoded by the
// launcher gives the same trace, event for event and frame for frame, as
// the exit-time path (the same log through `gotrace encode`).
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text, fs::perms perms) {
  std::ofstream(path) << text;
  fs::permissions(path, perms);
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
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

TEST_CASE("a shell job of 50 commands: one index of 50 processes, traces only for those that did something",
          "[run]") {
  TempDir dir;
  // 49 commands: 45 that do nothing worth showing, 2 that sleep (a wait:
  // worth a trace), 2 that read a small file (quiet unless the read blocked).
  std::string script = "echo data > small.txt\n";
  for (int i = 0; i < 45; ++i) script += "/bin/true\n";
  script += "/bin/sleep 0.05\n/bin/cat small.txt >/dev/null\n/bin/sleep 0.05\n/bin/cat small.txt >/dev/null\n";
  WriteFile(dir.File("job.sh"), script, fs::perms::owner_all);
  const ProcResult r = Wrap({"-o", dir.File("job.trace"), "--", "/bin/sh", dir.File("job.sh")}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("job.trace.index.json"));
  INFO(index);
  REQUIRE_FALSE(index.empty());
  CHECK(Occurrences(index, "\"pid\": ") == 50);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/true\"]") == 45);
  CHECK(Occurrences(index, "\"argv\": [\"/bin/sleep\", \"0.05\"]") == 2);
  const size_t untraced = Occurrences(index, "\"trace\": null");
  CHECK(untraced >= 45);
  CHECK(untraced <= 47);
  // The summary says so, and names the quiet ones.
  CHECK_THAT(r.err, Catch::Contains("50 processes ran: " + std::to_string(50 - untraced) + " traced, " +
                                    std::to_string(untraced) + " quiet"));
  CHECK_THAT(r.err, Catch::Contains("quiet: "));
  CHECK_THAT(r.err, Catch::Contains("true x45"));
  CHECK_THAT(r.err, Catch::Contains("gotrace: wrote " + dir.File("job.trace")));
  // A trace file for each process the index gives one, each valid; no log left.
  size_t traces = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    CHECK(n.find(".gtlog") == std::string::npos);
    if (n.rfind("job.trace", 0) != 0 || n.find(".index.json") != std::string::npos) continue;
    ++traces;
    CHECK(index.find("\"trace\": \"" + n + "\"") != std::string::npos);
    const ParsedTrace t = ParseWithGo(e.path().string());
    INFO(n << ": " << t.error);
    CHECK(t.ok);
  }
  CHECK(traces == 50 - untraced);
  // The sleeps' traces show the sleep.
  size_t sleeps = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string n = e.path().filename().string();
    if (n.rfind("job.trace.", 0) != 0 || n.find(".index.json") != std::string::npos) continue;
    const ParsedTrace t = ParseWithGo(e.path().string());
    if (t.Count("GoSleep") >= 1) ++sleeps;
  }
  CHECK(sleeps == 2);
}

TEST_CASE("a fork child's log starts at its first record, its process at the fork", "[run]") {
  TempDir dir;
  // The subshell computes for 100 ms without an interposed call (bash
  // arithmetic on $EPOCHREALTIME, read through the vDSO), then opens a file:
  // its first record, which starts its log (AtForkChild leaves it pending).
  // Its time in the index must still run from the fork: at least the loop.
  const std::string script =
      "( s=$EPOCHREALTIME; while (( ${EPOCHREALTIME/./} - ${s/./} < 100000 )); do :; done; "
      "echo x > f.txt ); /bin/true";
  const ProcResult r = Wrap({"-q", "-o", dir.File("f.trace"), "--", "/bin/bash", "-c", script}, dir);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::string index = Slurp(dir.File("f.trace.index.json"));
  INFO(index);
  // bash, its subshell, and bash's last command exec'd in place.
  REQUIRE(Occurrences(index, "\"pid\": ") == 3);
  // The subshell never exec'd: no command line of its own.
  const size_t at = index.find("\"argv\": [], ");
  REQUIRE(at != std::string::npos);
  const size_t d = index.find("\"duration_ns\": ", at);
  REQUIRE(d != std::string::npos);
  const uint64_t ns = std::stoull(index.substr(d + 15));
  CHECK(ns >= 95'000'000);  // (the loop reads the wall clock, the index the monotonic one)
  // It recorded something (the open), so it has a log of its own.
  const std::string entry = index.substr(at, index.find('}', index.find("\"records\": ", at)) - at + 1);
  CHECK(entry.find("\"records\": 0}") == std::string::npos);
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

}  // namespace
}  // namespace gotrace::testing
