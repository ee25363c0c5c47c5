// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/debuginfod_test.cc - names from a debuginfod server -===//
//
// Issue 14, item 3: a program without debug info or symbols (its build-id
// kept; test/scenarios/debuginfod.cmake) is traced with its log kept, and
// `gotrace encode` names its frames from a local `debuginfod -F` serving the
// debug file on 127.0.0.1, then from libdebuginfod's cache. A dead server
// and one that never answers each cost one line on stderr and the trace is
// still written: the second is cut at the time budget. Every trace is read
// by Go's parser; names, files and lines by `go tool trace -pprof=sync`.
// Without the debuginfod binary the cases say SKIP and pass (scripts/test
// installs it).
//===----------------------------------------------------------------------===//
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "test/scenarios/scenario_util.h"

extern char** environ;

namespace gotrace::testing {
namespace {

const std::string kProgram = GOTRACE_DBGD_PROGRAM;
const std::string kGotrace = std::string(GOTRACE_BUILD_DIR) + "/gotrace";

// The debuginfod binary on PATH, or "" (the case then says SKIP).
std::string DebuginfodBinary() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin:/usr/sbin");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string f = (d.empty() ? "." : d) + "/debuginfod";
    if (access(f.c_str(), X_OK) == 0) return f;
  }
  return std::string();
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A socket listening on 127.0.0.1 at a port the kernel chose. Never
// accepted from: the kernel completes connections into the backlog, so a
// client connects and then waits for an answer that never comes.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return;
    }
    port = ntohs(a.sin_port);
  }
  ~Listener() {
    if (fd >= 0) close(fd);
  }
};

// A port on 127.0.0.1 where nothing listens (connections are refused): one
// the kernel just handed out and that is closed again.
int ClosedPort() {
  Listener l;
  return l.port;
}

// The HTTP status of GET path on 127.0.0.1:port, or 0.
int HttpStatus(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  int status = 0;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    char buf[64] = {};
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size()) &&
        read(fd, buf, sizeof buf - 1) > 12) {
      status = std::atoi(buf + 9);  // "HTTP/1.1 200 OK"
    }
  }
  close(fd);
  return status;
}

// `debuginfod -F dir` on a free port, killed with its process group at the
// end of the scope. Its environment lacks DEBUGINFOD_URLS, so it never
// forwards a miss to another server.
class DebuginfodServer {
 public:
  ~DebuginfodServer() { Stop(); }

  // Returns "" or why it could not be started; serving every one of
  // `build_ids` ends the wait (the scan of dir has reached their files).
  std::string Start(const std::string& binary, const std::string& dir, const TempDir& tmp,
                    const std::vector<std::string>& build_ids) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "DEBUGINFOD_", 11) != 0) env.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    // The port can be taken between ClosedPort and the server's bind: a few tries.
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = ClosedPort();
      const std::string port = std::to_string(port_);
      const std::string db = tmp.File("debuginfod-" + port + ".sqlite");
      const std::string log = tmp.File("debuginfod-" + port + ".log");
      std::vector<std::string> args = {binary, "-F", dir, "-p", port, "-d", db, "-t", "0", "-g", "0"};
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
      posix_spawnattr_t attr;
      posix_spawnattr_init(&attr);
      posix_spawnattr_setpgroup(&attr, 0);
      posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
      const int rc = posix_spawn(&pid_, binary.c_str(), &actions, &attr, argv.data(), envp.data());
      posix_spawn_file_actions_destroy(&actions);
      posix_spawnattr_destroy(&attr);
      if (rc != 0) return "cannot start " + binary + ": " + std::strerror(rc);
      for (const double until = Now() + 30; Now() < until;) {
        int status;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;  // exited (the port was taken?): try another
        }
        if (std::all_of(build_ids.begin(), build_ids.end(), [&](const std::string& id) {
              return HttpStatus(port_, "/buildid/" + id + "/debuginfo") == 200;
            })) {
          return std::string();
        }
        usleep(100 * 1000);
      }
      if (pid_ < 0) continue;
      Stop();
      return "debuginfod did not serve the test's files within 30 s";
    }
    return "debuginfod exited at start three times";
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// The GNU build-id of an ELF file, in hex (readelf -n).
std::string BuildId(const std::string& path) {
  ProcResult r = RunProcess({"readelf", "-n", path});
  REQUIRE(r.Exited(0));
  const size_t at = r.out.find("Build ID: ");
  REQUIRE(at != std::string::npos);
  std::istringstream in(r.out.substr(at + 10));
  std::string id;
  in >> id;
  return id;
}

// The line of stacks_symbols.c that carries "// LINE:name".
uint32_t MarkerLine(const std::string& name) {
  std::ifstream in(std::string(GOTRACE_SCENARIO_SRC) + "/stacks_symbols.c");
  const std::string marker = "// LINE:" + name;
  std::string l;
  for (uint32_t n = 1; std::getline(in, l); ++n) {
    const size_t at = l.find(marker);
    if (at != std::string::npos && at + marker.size() == l.size()) return n;
  }
  FAIL("no marker " << marker);
  return 0;
}

// Runs the stripped program under the tracer with its log kept; returns the
// log. (The trace written at exit is offline: unnamed frames.)
std::string TraceKept(const TempDir& dir) {
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("exit.trace"),
           "GOTRACE_KEEP_LOG=1", "GOTRACE_SCHED=infer"};
  o.unset_env = {"DEBUGINFOD_URLS"};
  ProcResult r = RunProcess({kProgram}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK(r.out == "symbols rounds 3 served 3\n");
  return dir.File("exit.trace.gtlog");
}

// `gotrace encode LOG -o OUT` asking `urls`, with its cache in `cache` and
// no local debug files (an empty GOTRACE_DEBUG_ROOT: libc is asked too).
ProcResult Encode(const TempDir& dir, const std::string& log, const std::string& out,
                  const std::string& urls, const std::string& cache,
                  std::vector<std::string> extra_args = {}, std::vector<std::string> env = {}) {
  mkdir(dir.File("no-debug-root").c_str(), 0755);
  std::vector<std::string> argv = {kGotrace, "encode", "-q", log, "-o", out};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  ProcOptions o;
  o.timeout_s = 30;  // generous: the budgets here are 1 s
  o.env = {"DEBUGINFOD_URLS=" + urls, "DEBUGINFOD_CACHE_PATH=" + cache,
           "GOTRACE_DEBUG_ROOT=" + dir.File("no-debug-root")};
  o.env.insert(o.env.end(), env.begin(), env.end());
  o.unset_env = {"DEBUGINFOD_PROGRESS", "DEBUGINFOD_VERBOSE", "GOTRACE_DEBUGINFOD_TIMEOUT"};
  return RunProcess(argv, o);
}

// The lines of `text` that contain `what`.
std::vector<std::string> LinesWith(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find(what) != std::string::npos) out.push_back(l);
  return out;
}

// Whether the sync profile of `trace` has a frame `func` at
// stacks_symbols.c:line (line 0: any line of that file).
bool HasFrame(const PprofResult& p, const std::string& func, uint32_t line) {
  const std::string where = "/stacks_symbols.c:" + (line != 0 ? std::to_string(line) + " " : "");
  for (const std::string& l : LinesWith(p.raw, " " + func + " ")) {
    if (l.find(where) != std::string::npos) return true;
  }
  return false;
}

PprofResult SyncProfile(const std::string& trace) {
  const ParsedTrace parsed = ParseWithGo(trace);
  INFO("go tool trace -d: " << parsed.error);
  REQUIRE(parsed.ok);
  PprofResult p = Pprof(trace, "sync");
  INFO(p.error);
  REQUIRE(p.ok);
  return p;
}

// Cases without the debuginfod binary say so and pass: its package also
// brings libdebuginfod1, the client every case needs.
#define GT_REQUIRE_DEBUGINFOD(binary)                                              \
  const std::string binary = DebuginfodBinary();                                   \
  if (binary.empty()) {                                                            \
    WARN("SKIP: no debuginfod binary on PATH (Debian package debuginfod)");       \
    return;                                                                        \
  }

bool NonEmptyFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

TEST_CASE("debuginfod: a stripped program is named from a local debuginfod server, then from "
          "the cache (issue 14)",
          "[debuginfod]") {
  GT_REQUIRE_DEBUGINFOD(server_bin);
  // The premise: nothing to name the program's functions with, locally.
  ProcResult sections = RunProcess({"readelf", "-S", "-W", kProgram});
  REQUIRE(sections.Exited(0));
  CHECK(sections.out.find(".debug_info") == std::string::npos);
  CHECK(sections.out.find(".symtab") == std::string::npos);
  CHECK(sections.out.find(".gnu_debuglink") == std::string::npos);
  const std::string id = BuildId(kProgram);
  TempDir dir;
  const std::string log = TraceKept(dir);
  const std::string cache = dir.File("cache");

  DebuginfodServer server;
  const std::string err = server.Start(server_bin, GOTRACE_DBGD_SERVED, dir, {id});
  REQUIRE(err.empty());
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  ProcResult r = Encode(dir, log, dir.File("online.trace"), url, cache);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  // libc is not on the server either: a miss is silent.
  CHECK(LinesWith(r.err, "debuginfod").empty());
  const PprofResult p = SyncProfile(dir.File("online.trace"));
  INFO(p.raw);
  CHECK(HasFrame(p, "symbols_wait", MarkerLine("symbols_wait")));
  CHECK(HasFrame(p, "symbols_caller", MarkerLine("symbols_caller")));
  CHECK(HasFrame(p, "symbols_worker", 0));
  // libdebuginfod's cache holds the file.
  CHECK(NonEmptyFile(cache + "/" + id + "/debuginfo"));

  // The server gone, its URL now refuses: the cache answers without asking.
  server.Stop();
  ProcResult again = Encode(dir, log, dir.File("cached.trace"), url, cache);
  INFO(again.Describe() << "\n" << again.err);
  REQUIRE(again.Exited(0));
  CHECK(LinesWith(again.err, "debuginfod").empty());
  const PprofResult q = SyncProfile(dir.File("cached.trace"));
  INFO(q.raw);
  CHECK(HasFrame(q, "symbols_wait", MarkerLine("symbols_wait")));

  // --offline asks nothing, not even the cache: the frames stay unnamed.
  ProcResult off = Encode(dir, log, dir.File("offline.trace"), url, cache, {"--offline"});
  INFO(off.Describe() << "\n" << off.err);
  REQUIRE(off.Exited(0));
  const PprofResult o = SyncProfile(dir.File("offline.trace"));
  CHECK_FALSE(HasFrame(o, "symbols_wait", 0));
  CHECK(o.raw.find("stacks_dbgd+0x") != std::string::npos);
}

TEST_CASE("debuginfod: a debug file compressed with dwz gets its supplementary file by its "
          "build-id, from the server or the local build-id tree (issue 14)",
          "[debuginfod]") {
  GT_REQUIRE_DEBUGINFOD(server_bin);
#ifndef GOTRACE_DWZ_PROGRAM
  WARN("SKIP: no dwz at configure time (Debian package dwz)");
#else
  const std::string program = GOTRACE_DWZ_PROGRAM;
  const std::string served = GOTRACE_DWZ_SERVED;
  const std::string id = BuildId(program);
  const std::string alt_id = BuildId(served + "/stacks_dwz.alt.debug");
  // The premise: the debug file has no symbol table and names a
  // supplementary file that is not where it says; the names are there, not
  // in the debug file (readelf cannot show them).
  ProcResult sections = RunProcess({"readelf", "-S", "-W", served + "/stacks_dwz.debug"});
  CHECK(sections.out.find(".gnu_debugaltlink") != std::string::npos);
  CHECK(sections.out.find(".symtab") == std::string::npos);
  ProcResult info = RunProcess({"readelf", "--debug-dump=info", served + "/stacks_dwz.debug"});
  CHECK(LinesWith(info.out, "symbols_wait").empty());
  CHECK(LinesWith(info.out, "alt indirect string").size() >= 1);

  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("exit.trace"),
           "GOTRACE_KEEP_LOG=1", "GOTRACE_SCHED=infer"};
  o.unset_env = {"DEBUGINFOD_URLS"};
  ProcResult run = RunProcess({program}, o);
  REQUIRE(run.Exited(0));
  const std::string log = dir.File("exit.trace.gtlog");

  SECTION("from debuginfod") {
    DebuginfodServer server;
    REQUIRE(server.Start(server_bin, served, dir, {id, alt_id}).empty());
    const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
    const std::string cache = dir.File("cache");
    ProcResult r = Encode(dir, log, dir.File("dwz.trace"), url, cache);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK(LinesWith(r.err, "debuginfod").empty());
    const PprofResult p = SyncProfile(dir.File("dwz.trace"));
    INFO(p.raw);
    CHECK(HasFrame(p, "symbols_wait", MarkerLine("symbols_wait")));
    CHECK(HasFrame(p, "symbols_caller", MarkerLine("symbols_caller")));
    CHECK(NonEmptyFile(cache + "/" + id + "/debuginfo"));
    CHECK(NonEmptyFile(cache + "/" + alt_id + "/debuginfo"));
  }
  SECTION("from GOTRACE_DEBUG_ROOT/.build-id, offline") {
    // Debian's and Fedora's layout: both files under .build-id.
    const std::string root = dir.File("root");
    for (const auto& [file, build_id] : {std::pair{served + "/stacks_dwz.debug", id},
                                         std::pair{served + "/stacks_dwz.alt.debug", alt_id}}) {
      const std::string sub = root + "/.build-id/" + build_id.substr(0, 2);
      REQUIRE(RunProcess({"mkdir", "-p", sub}).Exited(0));
      REQUIRE(RunProcess({"cp", file, sub + "/" + build_id.substr(2) + ".debug"}).Exited(0));
    }
    ProcOptions e;
    e.env = {"GOTRACE_DEBUG_ROOT=" + root};
    ProcResult r = RunProcess({kGotrace, "encode", "-q", "--offline", log, "-o",
                               dir.File("local.trace")}, e);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    const PprofResult p = SyncProfile(dir.File("local.trace"));
    INFO(p.raw);
    CHECK(HasFrame(p, "symbols_wait", MarkerLine("symbols_wait")));
    CHECK(HasFrame(p, "symbols_caller", MarkerLine("symbols_caller")));
  }
#endif
}

TEST_CASE("debuginfod: a dead server costs one line, not one per module, and the trace is "
          "written (issue 14)",
          "[debuginfod]") {
  GT_REQUIRE_DEBUGINFOD(server_bin);
  TempDir dir;
  const std::string log = TraceKept(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  ProcResult r = Encode(dir, log, dir.File("dead.trace"), url, dir.File("cache"));
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::vector<std::string> lines = LinesWith(r.err, "debuginfod");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(url) != std::string::npos);
  CHECK(lines[0].find("no more lookups") != std::string::npos);
  const PprofResult p = SyncProfile(dir.File("dead.trace"));
  CHECK(p.raw.find("stacks_dbgd+0x") != std::string::npos);
}

TEST_CASE("debuginfod: a server that never answers is cut at the time budget (issue 14)",
          "[debuginfod]") {
  GT_REQUIRE_DEBUGINFOD(server_bin);
  TempDir dir;
  const std::string log = TraceKept(dir);
  const std::string id = BuildId(kProgram);
  Listener silent;
  REQUIRE(silent.port > 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(silent.port);
  const std::string cache = dir.File("cache");
  ProcResult r;
  SECTION("--debuginfod-timeout") {
    r = Encode(dir, log, dir.File("silent.trace"), url, cache, {"--debuginfod-timeout", "1"});
  }
  SECTION("GOTRACE_DEBUGINFOD_TIMEOUT") {
    r = Encode(dir, log, dir.File("silent.trace"), url, cache, {},
               {"GOTRACE_DEBUGINFOD_TIMEOUT=1"});
  }
  // Finished (RunProcess would have killed it at 30 s), one line, a trace.
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  const std::vector<std::string> lines = LinesWith(r.err, "debuginfod");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(url) != std::string::npos);
  CHECK(lines[0].find("1 s budget") != std::string::npos);
  const PprofResult p = SyncProfile(dir.File("silent.trace"));
  CHECK(p.raw.find("stacks_dbgd+0x") != std::string::npos);
  // The cut is not remembered as "no such file" in the cache: a server
  // that recovers is asked again by the next encode.
  CHECK_FALSE(NonEmptyFile(cache + "/" + id + "/debuginfo"));
  struct stat st;
  CHECK(stat((cache + "/" + id + "/debuginfo").c_str(), &st) != 0);
}

TEST_CASE("debuginfod: without DEBUGINFOD_URLS, or --offline, libdebuginfod is not even loaded "
          "(issue 14)",
          "[debuginfod]") {
  GT_REQUIRE_DEBUGINFOD(server_bin);
  TempDir dir;
  const std::string log = TraceKept(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  SECTION("no DEBUGINFOD_URLS") {
    // LD_DEBUG=files: the dynamic loader names every library it loads.
    ProcResult r = Encode(dir, log, dir.File("a.trace"), "", dir.File("cache"), {},
                          {"LD_DEBUG=files"});
    INFO(r.Describe());
    REQUIRE(r.Exited(0));
    CHECK(r.err.find("libdebuginfod") == std::string::npos);
    CHECK(r.err.find("libdw") != std::string::npos);  // the premise: LD_DEBUG works here
  }
  SECTION("the control: with DEBUGINFOD_URLS it is loaded") {
    ProcResult r = Encode(dir, log, dir.File("c.trace"), url, dir.File("cache"), {},
                          {"LD_DEBUG=files"});
    INFO(r.Describe());
    REQUIRE(r.Exited(0));
    CHECK(r.err.find("libdebuginfod") != std::string::npos);
  }
  SECTION("--offline") {
    ProcResult r = Encode(dir, log, dir.File("b.trace"), url, dir.File("cache"), {"--offline"},
                          {"LD_DEBUG=files"});
    INFO(r.Describe());
    REQUIRE(r.Exited(0));
    CHECK(r.err.find("libdebuginfod") == std::string::npos);
    CHECK(LinesWith(r.err, "gotrace: debuginfod").empty());
  }
}

TEST_CASE("debuginfod: --debuginfod-timeout wants seconds", "[debuginfod]") {
  for (const char* bad : {"", "-1", "ten", "1e9"}) {
    ProcResult r = RunProcess({kGotrace, "encode", "x.gtlog", "-o", "x.trace",
                               "--debuginfod-timeout", bad});
    INFO(bad << ": " << r.Describe() << "\n" << r.err);
    CHECK(r.Exited(2));
    CHECK(r.err.find("--debuginfod-timeout") != std::string::npos);
  }
}

}  // namespace
}  // namespace gotrace::testing
