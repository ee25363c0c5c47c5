// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/sched_test.cc - the timeline tells the truth (issue 13) -===//
//
// sched_truth.c: six threads on one CPU (four computing around a shared
// mutex, a sleeper, a thread waiting on a raw futex no interposer sees),
// which print the kernel's own count of their time on a CPU. With the
// kernel's context switches (perf_event_open), every thread's running time
// in the parsed trace is within 5% of that count; without them (asked for,
// or denied by a seccomp filter) the trace takes the inferred model, says so
// in one line, and still parses.
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

struct Truth {
  std::string role;
  uint64_t run_ns;    // the scheduler's count (schedstat)
  uint64_t clock_ns;  // the task clock (0: not available)
};

// "thread ROLE TID RUN_NS WAIT_NS CLOCK_NS" lines, by tid.
std::map<uint64_t, Truth> KernelCounts(const std::string& out) {
  std::map<uint64_t, Truth> m;
  std::istringstream in(out);
  std::string word, role;
  uint64_t tid, run, wait, clock;
  while (in >> word >> role >> tid >> run >> wait >> clock)
    if (word == "thread") m[tid] = Truth{role, run, clock};
  return m;
}

// Each goroutine's time running in the parsed trace, from GoStart to the
// event that ends the run, up to `until` (ns; a run that straddles it counts
// its part before).
std::map<uint64_t, int64_t> RunningTime(const ParsedTrace& t,
                                        int64_t until = std::numeric_limits<int64_t>::max()) {
  std::map<uint64_t, int64_t> run, since;
  for (const GoEvent& e : t.events) {
    if (e.name == "GoStart") {
      since[e.args.at("g")] = e.ts;
    } else if (e.name == "GoEnd" || e.name == "GoStop" || e.name == "GoSched" ||
               e.name == "GoPreempt" || e.name == "GoSleep" || e.name == "GoSysBlock" ||
               e.name.rfind("GoBlock", 0) == 0) {
      auto it = since.find(e.g);
      if (it == since.end()) continue;
      if (it->second < until) run[e.g] += std::min(e.ts, until) - it->second;
      since.erase(it);
    }
  }
  return run;
}

// When sched_truth read the kernel's counts: its UserLog, written with every
// thread parked. What the threads ran after it (their ends, where the tracer
// may read the kernel's records for milliseconds) is not in the counts.
int64_t CountsReadAt(const ParsedTrace& t) {
  for (const GoEvent& e : t.events)
    if (e.name == "UserLog") return e.ts;
  return -1;
}

// The traced run only (its output, the kernel's counts, differs run to run).
ScenarioRun RunOnce(const TempDir& dir, std::vector<std::string> env) {
  ScenarioRun s;
  s.trace = dir.File("sched.trace");
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + s.trace};
  o.env.insert(o.env.end(), env.begin(), env.end());
  s.traced = RunProcess({Scenario("sched_truth")}, o);
  INFO(s.traced.Describe() << "\n" << s.traced.err);
  REQUIRE(s.traced.Exited(0));
  s.parsed = ParseWithGo(s.trace);
  INFO(s.parsed.error);
  REQUIRE(s.parsed.ok);
  const std::string w = WebCheck(s.trace);
  INFO("web check: " << w);
  REQUIRE(w.empty());
  return s;
}

TEST_CASE("scheduling from the kernel: each thread's running time within 5% of the kernel's",
          "[sched]") {
  TempDir dir;
  ScenarioRun s = RunOnce(dir, {"GOTRACE_SCHED=kernel"});
  INFO(s.traced.err);
  if (PerfDenied(s.traced.err)) return;
  CHECK_THAT(s.traced.err, Catch::Contains("scheduling from the kernel"));
  const auto truth = KernelCounts(s.traced.out);
  REQUIRE(truth.size() == 6);
  const int64_t read_at = CountsReadAt(s.parsed);
  REQUIRE(read_at > 0);
  const auto run = RunningTime(s.parsed, read_at);
  const auto whole = RunningTime(s.parsed);
  // Against the task clock: the time between each switch in and switch out,
  // as the trace's records measure it. The scheduler's count leaves out the
  // time a hypervisor took the CPU from a running thread (steal time); on a
  // busy host that was 5 to 16% of a thread's time in some runs here, where
  // the trace agreed with the task clock and with `perf sched`'s switches
  // to 0.5%. So against that count the trace may only be longer.
  for (const auto& [tid, k] : truth) {
    const auto it = run.find(tid);
    REQUIRE(it != run.end());
    const uint64_t ref = k.clock_ns != 0 ? k.clock_ns : k.run_ns;
    const double err = (static_cast<double>(it->second) - static_cast<double>(ref)) /
                       static_cast<double>(ref);
    const double vs_sched = (static_cast<double>(it->second) - static_cast<double>(k.run_ns)) /
                            static_cast<double>(k.run_ns);
    INFO(k.role << " " << tid << ": task clock " << k.clock_ns << " ns, scheduler " << k.run_ns
                << " ns, trace " << it->second << " ns (" << err * 100 << "%, "
                << vs_sched * 100 << "% of the scheduler's); to its end " << whole.at(tid) << " ns");
    CHECK(std::abs(err) <= 0.05);
    CHECK(vs_sched >= -0.05);
  }
  // Six threads on one CPU are preempted; the kernel's samples are there.
  CHECK(s.parsed.Count("GoPreempt") >= 10);
  CHECK(s.parsed.Count("CPUSample") >= 5);  // 100 per second of CPU time: about 40
  CHECK(s.parsed.Count("GoBlockSync") >= 1);
  CHECK(s.parsed.Count("GoSleep") >= 15);
  // The raw futex wait (50 ms) is shown as blocked, though nothing recorded
  // it: a GoBlock that lasts until main wakes it.
  uint64_t raw_tid = 0;
  for (const auto& [tid, k] : truth)
    if (k.role == "rawfutex") raw_tid = tid;
  int64_t longest = 0;
  for (const Wake& w : Wakes(s.parsed))
    if (w.block->g == raw_tid && w.block->name == "GoBlock")
      longest = std::max(longest, w.unblock->ts - w.block->ts);
  INFO("longest raw futex block " << longest << " ns");
  CHECK(longest >= 40'000'000);
}

TEST_CASE("GOTRACE_SCHED=infer: scheduling inferred, no line, no samples", "[sched]") {
  TempDir dir;
  ScenarioRun s = RunOnce(dir, {"GOTRACE_SCHED=infer"});
  CHECK_THAT(s.traced.err, Catch::Contains("scheduling inferred"));
  CHECK_THAT(s.traced.err, !Catch::Contains("exact scheduling is off"));
  CHECK(s.parsed.Count("CPUSample") == 0);
  CHECK(s.parsed.Count("GoBlockSync") >= 1);
}

// The kernel's rings cost their pages as they are mapped (0.4 to 1.7 ms for
// a process's first ones, here): a process starts with 32 pages a CPU and
// gets full-size rings (128 pages a CPU on fewer than 16 CPUs) once it has
// recorded for 10 ms, or makes a second thread; its records carry on across
// the change.
TEST_CASE("the first rings are small, and grow once the process has run 10 ms", "[sched]") {
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("r.trace")};
  o.unset_env = {"GOTRACE_SCHED", "GOTRACE_CPU_HZ", "GOTRACE_UNWIND"};
  const ProcResult r = RunProcess({Scenario("ring_sizes")}, o);
  INFO(r.Describe() << "\n" << r.out << r.err);
  REQUIRE(r.Exited(0));
  if (PerfDenied(r.err)) return;
  std::map<std::string, std::pair<unsigned long, unsigned long>> rings;  // stage: n, pages
  std::istringstream in(r.out);
  std::string word, stage;
  unsigned long n, pages;
  while (in >> word >> stage >> n >> pages)
    if (word == "rings") rings[stage] = {n, pages};
  REQUIRE(rings.size() == 3);
  const unsigned long cpus = rings["start"].first;
  REQUIRE(cpus >= 1);
  for (const auto& [st, v] : rings) {
    INFO(st);
    CHECK(v.first == cpus);
  }
  const unsigned long start = rings["start"].second / cpus, grown = rings["recorded"].second / cpus,
                      threads = rings["threads"].second / cpus;
  CHECK(start <= 33);
  CHECK(grown >= start);
  if (cpus < 16) {
    CHECK(start == 33);
    CHECK(grown == 129);
    CHECK(threads == 129);
  }
  CHECK_THAT(r.err, !Catch::Contains("overflowed"));
  const ParsedTrace t = ParseWithGo(dir.File("r.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") >= 30);   // the usleeps, before and after the rings grew
  CHECK(t.Count("CPUSample") >= 2);  // 50 ms of spinning at 100 Hz: about 5
}

// A one-thread program that only computes never makes a recorded call, so
// "10 ms of recording" never comes: the run's first process opens the
// kernel's events as it starts, and its CPU samples and timeline are there.
// Also at GOTRACE_DEPTH=128, the largest allowed: above the kernel's
// kernel.perf_event_max_stack (127 by default) the kernel refused the
// samples' call chains, and exact scheduling was off ("the kernel lacks the
// events needed").
TEST_CASE("default scheduling: a program that only computes has its CPU samples", "[sched]") {
  for (const std::string depth : {"", "128"}) {
    INFO("GOTRACE_DEPTH=" << depth);
    TempDir dir;
    ProcOptions o;
    o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace")};
    o.unset_env = {"GOTRACE_SCHED", "GOTRACE_CPU_HZ", "GOTRACE_DEPTH"};
    if (!depth.empty()) o.env.push_back("GOTRACE_DEPTH=" + depth);
    const ProcResult r = RunProcess({Scenario("cpu_spin"), "300"}, o);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK_THAT(r.out, Catch::Contains("spun 300 ms: ok"));
    // (The default depth's run went first: allowed there, they are here.)
    if (depth.empty() && PerfDenied(r.err)) return;
    CHECK_THAT(r.err, Catch::Contains("scheduling from the kernel"));
    const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
    INFO(t.error);
    REQUIRE(t.ok);
    CHECK(t.Count("CPUSample") >= 15);  // 100 per second of CPU time: about 30
    CHECK_THAT(r.err, !Catch::Contains("overflowed"));
  }
}

// CPU time in system calls is CPU time: where the kernel allows samples of
// kernel time (root, perf_event_paranoid 1 or less), a sample taken there
// is charged to the user stack that made the call. dd copying /dev/zero to
// /dev/null spends ~97% of its CPU time in the kernel: it had 0 or 1
// samples for ~150 ms of CPU time (user time only).
TEST_CASE("default scheduling: CPU time in system calls has its samples", "[sched]") {
  if (geteuid() != 0 && Slurp("/proc/sys/kernel/perf_event_paranoid").rfind('2', 0) == 0) {
    WARN("perf_event_paranoid 2 without root: samples of user time only");
    return;
  }
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace")};
  o.unset_env = {"GOTRACE_SCHED", "GOTRACE_CPU_HZ"};
  const ProcResult r =
      RunProcess({"/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=1M", "count=6000"}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  if (PerfDenied(r.err)) return;
  const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("CPUSample") >= 5);  // ~150 ms of CPU time at 100 Hz: about 15
}

// Nothing reads the rings of a one-thread program that records nothing
// until it ends: at 20,000 samples a second on one CPU they fill up, and
// the kernel's own count of what it dropped never arrives. Said, not hidden.
// A one-thread program's rings are read by its recorded calls: after an
// I/O phase (ticks every 10 ms), a loop that calls nothing reads them no
// more. Its samples keep the kernel's short chains, which the rings hold
// 80 times as many of as stack copies: none is lost.
TEST_CASE("a one-thread program that stops making recorded calls loses no CPU sample", "[sched]") {
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace"), "GOTRACE_CPU_HZ=1000"};
  o.unset_env = {"GOTRACE_SCHED", "GOTRACE_UNWIND"};
  const ProcResult r = RunProcess({Scenario("cpu_spin"), "1500", "--io", "50"}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  if (PerfDenied(r.err)) return;
  CHECK_THAT(r.err, !Catch::Contains("overflowed"));
  const ParsedTrace t = ParseWithGo(dir.File("d.trace"));
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("CPUSample") >= 1000);  // 1.55 s of CPU time at 1000 Hz
}

TEST_CASE("a kernel ring still full at the end is said, in the summary and the report", "[sched]") {
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace"),
           "GOTRACE_CPU_HZ=20000", "GOTRACE_SCHED=kernel"};
  // Silent: no recorded call reads the rings before the last read.
  const ProcResult r = RunProcess({Scenario("cpu_spin"), "1000", "--pin", "--silent"}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  if (PerfDenied(r.err)) return;
  CHECK_THAT(r.err, Catch::Contains("the kernel's ring buffers overflowed"));
  CHECK_THAT(r.err, Catch::Contains("still full at the end"));
  CHECK_THAT(r.err, Catch::Contains("GOTRACE_CPU_HZ"));
  CHECK(ValidateTrace(dir.File("d.trace")).empty());
  const ProcResult rep =
      RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "report", dir.File("d.trace")});
  INFO(rep.err);
  REQUIRE(rep.Exited(0));
  CHECK_THAT(rep.out, Catch::Contains("kernel ring was still full at the end: records after"));
  const ProcResult js = RunProcess(
      {std::string(GOTRACE_BUILD_DIR) + "/gotrace", "report", "--format", "json", dir.File("d.trace")});
  REQUIRE(js.Exited(0));
  CHECK_THAT(js.out, Catch::Contains("\"rings_full\":1"));
}

TEST_CASE("perf_event_open denied (seccomp): one line, inferred scheduling, a valid trace",
          "[sched]") {
  for (const char* how : {"EACCES", "ENOSYS"}) {
    INFO(how);
    TempDir dir;
    std::vector<std::string> argv = {Scenario("no_perf")};
    if (std::string(how) == "ENOSYS") argv.push_back("--enosys");
    argv.push_back(Scenario("sched_truth"));
    ProcOptions o;
    o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace")};
    const ProcResult r = RunProcess(argv, o);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK(KernelCounts(r.out).size() == 6);
    size_t lines = 0;
    for (size_t at = r.err.find("exact scheduling is off"); at != std::string::npos;
         at = r.err.find("exact scheduling is off", at + 1)) {
      ++lines;
    }
    CHECK(lines == 1);
    if (std::string(how) == "EACCES") {
      CHECK_THAT(r.err, Catch::Contains("perf_event_open is not permitted"));
      CHECK_THAT(r.err, Catch::Contains("sysctl kernel.perf_event_paranoid=2"));
    } else {
      CHECK_THAT(r.err, Catch::Contains("not available"));
    }
    CHECK_THAT(r.err, Catch::Contains("scheduling inferred"));
    CHECK(ValidateTrace(dir.File("d.trace")).empty());
  }
}

}  // namespace
}  // namespace gotrace::testing
