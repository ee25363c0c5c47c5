// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/kill_test.cc - nothing lost to SIGKILL (issue 20) --===//
//
// Every record a thread completes is in the log file at once (mapped slots,
// encoder/log_format.h), so a process killed at any moment leaves a log
// from which tracewrap recovers a trace holding everything up to the kill.
// The scenario (kill_pingpong.c) prints the time of its work to a pipe the
// test reads, so the test knows what the process did last before it died.
//===----------------------------------------------------------------------===//
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "encoder/log_format.h"
#include "test/scenarios/scenario_util.h"

extern char** environ;

namespace gotrace::testing {
namespace {

namespace fs = std::filesystem;

const std::string kTracewrap = std::string(GOTRACE_SOURCE_DIR) + "/scripts/tracewrap";
const std::string kGotraceBin = std::string(GOTRACE_BUILD_DIR) + "/gotrace";

long long NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

struct KillRun {
  int pid = 0;              // the scenario's pid (from its first line)
  long long start_ns = 0;   // its "start" time
  long long kill_ns = 0;    // when the test sent SIGKILL (0: it was not sent)
  long long last_ns = 0;    // the last time it printed before it died
  std::vector<long long> times;  // its "t" lines: the times of player 0's writes
  bool exiting = false;     // it printed "exiting"
  int status = 0;           // tracewrap's wait status
  std::string err;          // tracewrap's (and the program's) stderr
};

// Runs `tracewrap -o OUT -- kill_pingpong ARGS` with stdout on a pipe and
// kills the scenario with SIGKILL `delay_ms` after its first line (or, with
// `after_exiting`, after its "exiting" line). Bounded: 60 s in all.
KillRun RunAndKill(const TempDir& dir, const std::string& out, const std::vector<std::string>& args,
                   int delay_ms, bool after_exiting) {
  KillRun k;
  int fds[2];
  REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
  const std::string err_path = dir.File("stderr." + std::to_string(NowNs()));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&fa, dir.path().c_str());
  // Inferred scheduling: each write is exactly one GoSysCall or GoBlockNet
  // (with the kernel's records a write may also block at a switch-out,
  // which makes counting them depend on timing). The kernel's records after
  // a kill are the sched tests' matter.
  std::vector<std::string> argv = {kTracewrap, "--sched", "infer", "-o", out, "--",
                                   Scenario("kill_pingpong")};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    if (v.rfind("LD_PRELOAD=", 0) == 0 || v.rfind("GOTRACE_", 0) == 0) continue;
    env.push_back(v);
  }
  env.push_back("GOTRACE_LIB=" + PreloadLib());
  std::vector<char*> cenv;
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t wrap = 0;
  const int rc = posix_spawn(&wrap, kTracewrap.c_str(), &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  REQUIRE(rc == 0);

  std::string pending;
  long long deadline = 0;
  const long long give_up = NowNs() + 60'000'000'000LL;
  for (;;) {
    const long long now = NowNs();
    if (deadline != 0 && k.kill_ns == 0 && now >= deadline) {
      k.kill_ns = NowNs();
      kill(k.pid, SIGKILL);
    }
    if (now > give_up) {
      kill(wrap, SIGKILL);
      if (k.pid > 0) kill(k.pid, SIGKILL);
      FAIL("the run did not end within 60 s");
    }
    int wait_ms = 100;
    if (deadline != 0 && k.kill_ns == 0) wait_ms = static_cast<int>(std::max<long long>(0, (deadline - now) / 1'000'000));
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) continue;
    char buf[65536];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // every writer is gone
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::istringstream line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
      std::string word;
      line >> word;
      if (word == "start") {
        line >> k.pid >> k.start_ns;
        k.last_ns = k.start_ns;
        if (!after_exiting) deadline = NowNs() + delay_ms * 1'000'000LL;
      } else if (word == "t") {
        long long t = 0;
        line >> t;
        k.times.push_back(t);
        k.last_ns = std::max(k.last_ns, t);
      } else if (word == "exiting") {
        long long t = 0;
        line >> t;
        k.last_ns = std::max(k.last_ns, t);
        k.exiting = true;
        if (after_exiting) deadline = NowNs() + delay_ms * 1'000'000LL;
      }
    }
  }
  close(fds[0]);
  // The pipe closes when the program dies (or exits), before tracewrap's
  // recovery: a kill still due is sent to nobody (the program ended first).
  waitpid(wrap, &k.status, 0);
  k.err = Slurp(err_path);
  fs::remove(err_path);
  return k;
}

// Player 0's writes in the trace (GoSysCall, or GoBlockNet if it blocked:
// inferred scheduling, see RunAndKill), in order: one per "t" line it
// printed.
std::vector<int64_t> PlayerWrites(const ParsedTrace& t, const KillRun& k) {
  std::vector<int64_t> w;
  for (const GoEvent& e : t.events)
    if ((e.name == "GoSysCall" || e.name == "GoBlockNet") && e.g != static_cast<uint64_t>(k.pid))
      w.push_back(e.ts);
  return w;
}

int64_t LastEventRel(const ParsedTrace& t) {
  int64_t last = 0;
  for (const GoEvent& e : t.events) last = std::max(last, e.ts);
  return last;
}

TEST_CASE("SIGKILL at random moments: every trial recovers everything up to the kill (issue 20)",
          "[kill]") {
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay(1, 300);
  for (int trial = 0; trial < 20; ++trial) {
    const int ms = delay(rng);
    const std::string out = dir.File("k" + std::to_string(trial) + ".trace");
    const KillRun k = RunAndKill(dir, out, {"pingpong", "0"}, ms, false);
    INFO("trial " << trial << ": killed " << ms << " ms after start\n" << k.err);
    REQUIRE(k.kill_ns != 0);
    CHECK(WIFSIGNALED(k.status));
    CHECK(WTERMSIG(k.status) == SIGKILL);
    CHECK_THAT(k.err, Catch::Contains("recovered " + out + " ("));
    CHECK_THAT(k.err, !Catch::Contains("recorded nothing"));
    const ParsedTrace t = ParseWithGo(out);
    INFO(t.error);
    REQUIRE(t.ok);
    // Every write player 0 completed is in the trace: one per line it
    // printed, except perhaps the last (a kill between the write and its
    // record, which is written when the call returns).
    const std::vector<int64_t> writes = PlayerWrites(t, k);
    INFO(k.times.size() << " lines printed, " << writes.size() << " writes in the trace");
    CHECK(writes.size() <= k.times.size());
    CHECK(writes.size() + 1 >= k.times.size());
    // How close the trace's end is to the kill (the last recorded write
    // anchors the trace's relative times to the clock the lines print).
    if (!writes.empty()) {
      const long long end = k.times[writes.size() - 1] + (LastEventRel(t) - writes.back());
      INFO("last event " << (k.kill_ns - end) / 1000 << " us before the kill, last line "
                         << (k.kill_ns - k.last_ns) / 1000 << " us before it");
      CHECK(end <= k.kill_ns + 1'000'000);
    }
    CHECK(fs::directory_iterator(dir.path()) != fs::directory_iterator());
    CHECK_FALSE(fs::exists(out + ".gtlog"));
  }
  // One of them through the web UI too.
  CHECK(ValidateTrace(dir.File("k0.trace")).empty());
}

TEST_CASE("SIGKILL during the exit-time write: the log is recovered, no partial trace is left",
          "[kill]") {
  TempDir dir;
  const std::string out = dir.File("x.trace");
  // 1,000,000 recorded system calls: a log whose encode takes long enough
  // to be killed in the middle of (the kill is 2 ms after "exiting").
  const KillRun k = RunAndKill(dir, out, {"burst", "1000000"}, 2, true);
  INFO(k.err);
  REQUIRE(k.exiting);
  const ParsedTrace t = ParseWithGo(out);
  INFO(t.error);
  REQUIRE(t.ok);
  // Under tracewrap the exit-time write is the end of the log (the launcher
  // encodes): a kill that comes after its end record, before the process is
  // gone, leaves a complete log, written as any other (seen in CI once the
  // exit path got faster).
  const bool complete_first = k.err.find("gotrace: wrote " + out + " (") != std::string::npos;
  if (k.kill_ns != 0 && WIFSIGNALED(k.status) && !complete_first) {
    CHECK_THAT(k.err, Catch::Contains("recovered " + out + " ("));
  } else if (complete_first) {
    WARN("the log was complete before the kill came: " << k.err);
  } else {
    WARN("the trace was written before the kill came: " << k.err);
  }
  CHECK(t.Count("GoSysCall") >= 1000000);
  for (const auto& e : fs::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    INFO(name);
    CHECK(name.find(".gtlog") == std::string::npos);
    CHECK(name.find(".tmp") == std::string::npos);
  }
}

TEST_CASE("a record cut in the middle by a kill: recover reads the log with one warning",
          "[kill]") {
  // A killed process's log, then the bytes of a half-written record after
  // the committed size of its open slots (as a kill between the record's
  // bytes and the size store leaves it).
  TempDir dir;
  ProcOptions o;
  o.unset_env = {"LD_PRELOAD", "GOTRACE_OUT", "GOTRACE_KEEP_LOG"};
  o.timeout_s = 30;
  const std::string script = "LD_PRELOAD='" + PreloadLib() + "' GOTRACE_OUT='" +
                             dir.File("c.trace") + "' '" + Scenario("kill_pingpong") +
                             "' pingpong 0 >/dev/null & pid=$!; "
                             "sleep 0.3; kill -KILL $pid; wait $pid; exit 0";
  const ProcResult r = RunProcess({"/bin/sh", "-c", script}, o);
  INFO(r.Describe() << "\n" << r.err);
  const std::string log = dir.File("c.trace.gtlog");
  REQUIRE(fs::exists(log));
  // Damage every open slot the same way.
  std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
  log::FileHeader h{};
  f.read(reinterpret_cast<char*>(&h), sizeof h);
  REQUIRE(h.version == log::kLogVersion);
  const uint64_t size = fs::file_size(log);
  int damaged = 0;
  for (uint64_t off = h.slots_offset; off + h.slot_bytes <= size; off += h.slot_bytes) {
    log::SlotHeader sh{};
    f.seekg(static_cast<std::streamoff>(off));
    f.read(reinterpret_cast<char*>(&sh), sizeof sh);
    if (sh.chunk.magic != log::kChunkMagic || !(sh.chunk.flags & log::kChunkOpen)) continue;
    if (sh.chunk.size + log::kSlotHeaderBytes + 8 > h.slot_bytes) continue;
    const char half[3] = {log::kWait, 0x7f, 0x05};  // type, a delta, cpu: no fields
    f.seekp(static_cast<std::streamoff>(off + log::kSlotHeaderBytes + sh.chunk.size));
    f.write(half, sizeof half);
    ++damaged;
  }
  f.close();
  REQUIRE(damaged >= 1);
  ProcOptions q;
  q.unset_env = {"LD_PRELOAD"};
  const ProcResult rec = RunProcess({kGotraceBin, "recover", log, "-o", dir.File("c.trace")}, q);
  INFO(rec.Describe() << "\n" << rec.err);
  REQUIRE(rec.Exited(0));
  size_t warnings = 0;
  for (size_t at = rec.err.find("warning:"); at != std::string::npos;
       at = rec.err.find("warning:", at + 1)) {
    ++warnings;
  }
  CHECK(warnings == 1);
  CHECK_THAT(rec.err, Catch::Contains("incomplete"));
  CHECK(ParseWithGo(dir.File("c.trace")).ok);
}

}  // namespace
}  // namespace gotrace::testing
