// SPDX-License-Identifier: Apache-2.0
//===-- test/support/go_oracle.cc - Go 1.19's own tools as the trace oracle -===//
//
// Spawns the Go tools without a shell (posix_spawnp, own process group, output
// captured through pipes, 60 s timeout) and talks HTTP/1.0 to `go tool trace`'s
// web server over a plain socket. Written without exceptions or RTTI because
// gotrace_encoder's -fno-exceptions -fno-rtti propagate to the test targets.
//===----------------------------------------------------------------------===//
#include "test/support/go_oracle.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

extern char** environ;

#ifndef GOTRACE_GO_BINARY
#define GOTRACE_GO_BINARY "/usr/lib/go-1.19/bin/go"
#endif
#ifndef GOTRACE_GO123_BINARY
#define GOTRACE_GO123_BINARY "/usr/lib/go-1.23/bin/go"
#endif

namespace gotrace::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Every tool run, the web server's startup and each HTTP request get this long.
constexpr std::chrono::seconds kToolTimeout{60};
// How many stderr lines an error message quotes.
constexpr size_t kPanicLines = 16;  // from the first "panic" line on
constexpr size_t kTailLines = 4;    // otherwise, the last lines

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

std::string ErrnoText(const std::string& what, int err) { return what + ": " + std::strerror(err); }

std::string TempDirectory() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && dir[0] != '\0' ? dir : "/tmp";
}

// A GOCACHE for runs without HOME (CI as root with a scrubbed environment): the go command
// refuses to start some subcommands when it cannot find a cache directory. Created once,
// removed at exit.
class ScratchGoCache {
 public:
  ScratchGoCache() {
    std::string templ = TempDirectory() + "/gotrace-gocache-XXXXXX";
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~ScratchGoCache() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchGoCache(const ScratchGoCache&) = delete;
  ScratchGoCache& operator=(const ScratchGoCache&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool EnvIsSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0';
}

// The parent's environment plus BROWSER=/bin/true (so web mode never opens a browser:
// cmd/internal/browser tries $BROWSER first and stops when it exits 0) and, without HOME and
// GOCACHE, a scratch GOCACHE.
std::vector<std::string> ChildEnvironment() {
  const bool need_cache = !EnvIsSet("HOME") && !EnvIsSet("GOCACHE");
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("BROWSER=")) continue;
    if (need_cache && kv.starts_with("GOCACHE=")) continue;
    env.emplace_back(kv);
  }
  env.emplace_back("BROWSER=/bin/true");
  if (need_cache) {
    static ScratchGoCache cache;
    if (!cache.path().empty()) env.push_back("GOCACHE=" + cache.path());
  }
  return env;
}

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

// A child process in its own process group with stdin = /dev/null and stdout/stderr captured.
// The destructor kills the group and reaps the child if that has not happened yet.
class Subprocess {
 public:
  Subprocess() = default;
  ~Subprocess() {
    Kill();
    if (pid_ > 0 && !reaped_) waitpid(pid_, &status_, 0);
    CloseFd(&out_fd_);
    CloseFd(&err_fd_);
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Returns "" or why the process could not be started.
  std::string Start(const std::vector<std::string>& argv) {
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return ErrnoText("pipe2", errno);
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      const int err = errno;
      close(out_pipe[0]);
      close(out_pipe[1]);
      return ErrnoText("pipe2", err);
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);  // dup2 drops O_CLOEXEC
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);

    // Own process group, so a timeout can kill `go` and the tool it runs; clean signal state.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(
        &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::vector<std::string> env = ChildEnvironment();
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);

    const int rc = posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
      pid_ = -1;
      close(out_pipe[0]);
      close(err_pipe[0]);
      return ErrnoText("cannot run " + argv[0], rc);
    }
    out_fd_ = out_pipe[0];
    err_fd_ = err_pipe[0];
    return "";
  }

  // Waits up to timeout_ms until the child writes something (or closes its output) or extra_fd
  // becomes ready, and reads what is available. Reports extra_fd's poll events through
  // extra_revents. Returns true if anything was read from the child.
  bool Pump(int timeout_ms, int extra_fd = -1, short* extra_revents = nullptr) {
    pollfd fds[3];
    nfds_t n = 0;
    int* owners[3] = {nullptr, nullptr, nullptr};
    std::string* sinks[3] = {nullptr, nullptr, nullptr};
    if (out_fd_ >= 0) {
      owners[n] = &out_fd_;
      sinks[n] = &out_;
      fds[n++] = {out_fd_, POLLIN, 0};
    }
    if (err_fd_ >= 0) {
      owners[n] = &err_fd_;
      sinks[n] = &err_;
      fds[n++] = {err_fd_, POLLIN, 0};
    }
    if (extra_fd >= 0) fds[n++] = {extra_fd, POLLIN, 0};
    if (extra_revents != nullptr) *extra_revents = 0;
    if (poll(fds, n, timeout_ms) <= 0) return false;  // timeout or EINTR: the caller loops
    bool got = false;
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (owners[i] == nullptr) {
        if (extra_revents != nullptr) *extra_revents = fds[i].revents;
        continue;
      }
      char buf[64 * 1024];
      const ssize_t r = read(*owners[i], buf, sizeof buf);
      if (r > 0) {
        sinks[i]->append(buf, static_cast<size_t>(r));
        got = true;
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        CloseFd(owners[i]);
      }
    }
    return got;
  }

  // Reads for up to max_ms while the child keeps writing (to collect a panic's stack trace).
  void Drain(int max_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(max_ms);
    while (OutputOpen() && Clock::now() < deadline && Pump(std::min(50, MillisLeft(deadline)))) {
    }
  }

  bool OutputOpen() const { return out_fd_ >= 0 || err_fd_ >= 0; }

  // SIGKILL to the whole process group (only before the child is reaped: afterwards its pid,
  // which is the group id, may belong to someone else).
  void Kill() {
    if (pid_ > 0 && !reaped_) kill(-pid_, SIGKILL);
  }

  // Waits for the child to exit, reading its output meanwhile; kills it at the deadline.
  // Returns false if it had to be killed.
  bool Wait(Clock::time_point deadline) {
    while (pid_ > 0 && !reaped_) {
      const pid_t r = waitpid(pid_, &status_, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) {
        reaped_ = true;
        break;
      }
      if (Clock::now() >= deadline) {
        Kill();
        waitpid(pid_, &status_, 0);
        reaped_ = true;
        timed_out_ = true;
        break;
      }
      if (!Pump(std::min(20, MillisLeft(deadline)))) usleep(1000);
    }
    return !timed_out_;
  }

  int status() const { return status_; }
  bool timed_out() const { return timed_out_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  static void CloseFd(int* fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  bool timed_out_ = false;
  int status_ = 0;
  std::string out_;
  std::string err_;
};

struct RunResult {
  std::string spawn_error;  // non-empty: the process never started
  bool timed_out = false;
  int status = 0;
  std::string out;
  std::string err;

  bool Success() const {
    return spawn_error.empty() && !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
};

RunResult Run(const std::vector<std::string>& argv) {
  RunResult result;
  Subprocess child;
  result.spawn_error = child.Start(argv);
  if (!result.spawn_error.empty()) return result;
  const auto deadline = Clock::now() + kToolTimeout;
  while (child.OutputOpen() && Clock::now() < deadline) child.Pump(MillisLeft(deadline));
  child.Wait(deadline);
  result.timed_out = child.timed_out();
  result.status = child.status();
  result.out = child.out();
  result.err = child.err();
  return result;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Progress messages that cmd/trace logs on every run (log.Print: "2006/01/02 15:04:05 ...").
bool IsNoise(std::string_view line) {
  return line.find("Parsing trace...") != std::string_view::npos ||
         line.find("Splitting trace...") != std::string_view::npos ||
         line.find("Opening browser.") != std::string_view::npos;
}

// The meaningful part of a tool's stderr: from the first panic line on (its goroutine trace
// names the cmd/trace function and line), else the last few lines.
std::string StderrExcerpt(std::string_view err) {
  std::vector<std::string_view> lines;
  for (std::string_view line : SplitLines(err)) {
    line = TrimRight(line);
    if (!line.empty() && !IsNoise(line)) lines.push_back(line);
  }
  size_t begin = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
  size_t end = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("panic") != std::string_view::npos) {
      begin = i;
      end = std::min(lines.size(), i + kPanicLines);
      break;
    }
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (!out.empty()) out += '\n';
    out += lines[i];
  }
  return out;
}

std::string Indented(std::string_view text, std::string_view indent) {
  std::string out;
  for (std::string_view line : SplitLines(text)) {
    if (!out.empty()) out += '\n';
    out += indent;
    out += line;
  }
  return out;
}

// Why a tool run failed, in one or a few lines.
std::string FailureText(const RunResult& r) {
  if (!r.spawn_error.empty()) return r.spawn_error;
  std::string excerpt = StderrExcerpt(r.err);
  if (r.timed_out) {
    return "timed out after " + std::to_string(kToolTimeout.count()) + " s" +
           (excerpt.empty() ? "" : "\n" + excerpt);
  }
  if (excerpt.empty()) return DescribeStatus(r.status) + " with no error output";
  return excerpt;
}

class TempFile {
 public:
  TempFile() = default;
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Creates a unique file holding data. Returns "" or an error.
  std::string Create(std::string_view prefix, std::string_view data) {
    std::string templ = TempDirectory() + "/" + std::string(prefix) + "XXXXXX";
    const int fd = mkstemp(templ.data());
    if (fd < 0) return ErrnoText("mkstemp " + templ, errno);
    path_ = templ;
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t w = write(fd, data.data() + done, data.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        close(fd);
        return ErrnoText("write " + path_, err);
      }
      done += static_cast<size_t>(w);
    }
    if (close(fd) != 0) return ErrnoText("close " + path_, errno);
    return "";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- `go tool trace -d` output ---------------------------------------------------------------

template <typename T>
bool ParseNumber(std::string_view s, T* value) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *value);
  return ec == std::errc() && ptr == s.data() + s.size();
}

std::string_view NextToken(std::string_view* rest) {
  const size_t sp = rest->find(' ');
  const std::string_view token = rest->substr(0, sp);
  *rest = sp == std::string_view::npos ? std::string_view() : rest->substr(sp + 1);
  return token;
}

template <typename T>
bool ParseKeyed(std::string_view token, std::string_view key, T* value) {
  return token.size() > key.size() && token.starts_with(key) && token[key.size()] == '=' &&
         ParseNumber(token.substr(key.size() + 1), value);
}

bool IsEventName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum) return false;
  }
  return true;
}

// "<ns> <Name> p=<P> g=<G> off=<off> <arg>=<val>..." (internal/trace/parser.go, Event.String:
// desc.Args, all numeric, then desc.SArgs, free text).
bool ParseEventLine(std::string_view line, GoEvent* ev) {
  std::string_view rest = line;
  if (!ParseNumber(NextToken(&rest), &ev->ts)) return false;
  const std::string_view name = NextToken(&rest);
  if (!IsEventName(name)) return false;
  if (!ParseKeyed(NextToken(&rest), "p", &ev->p)) return false;
  if (!ParseKeyed(NextToken(&rest), "g", &ev->g)) return false;
  if (!ParseKeyed(NextToken(&rest), "off", &ev->off)) return false;
  ev->name = std::string(name);
  while (!rest.empty()) {
    const std::string_view token = NextToken(&rest);
    const size_t eq = token.find('=');
    uint64_t value = 0;
    if (eq == 0 || eq == std::string_view::npos || !ParseNumber(token.substr(eq + 1), &value)) {
      break;  // the string arguments start here
    }
    ev->args[std::string(token.substr(0, eq))] = value;
  }
  ev->text = std::string(line);
  return true;
}

void ParseDebugOutput(std::string_view out, ParsedTrace* result) {
  for (std::string_view line : SplitLines(out)) {
    if (line.empty()) continue;
    GoEvent ev;
    if (ParseEventLine(line, &ev)) {
      result->events.push_back(std::move(ev));
    } else if (!result->events.empty()) {
      // A string argument (a UserLog message) with a newline in it.
      result->events.back().text.append("\n").append(line);
    } else {
      result->error = "unexpected line in `go tool trace -d` output: " + std::string(line);
      result->events.clear();
      return;
    }
  }
  if (result->events.empty()) {
    result->error = "`go tool trace -d` succeeded but printed no events";
    return;
  }
  result->ok = true;
}

// ---- HTTP/1.0 client -------------------------------------------------------------------------

struct HttpResponse {
  std::string error;  // transport or protocol failure; empty if a response was parsed
  int status = 0;
  std::string status_line;
  std::string body;
};

std::string HeaderValue(std::string_view headers, std::string_view name) {
  for (std::string_view line : SplitLines(headers)) {
    line = TrimRight(line);
    if (line.size() <= name.size() || line[name.size()] != ':') continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(line[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (!same) continue;
    std::string_view v = line.substr(name.size() + 1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    return std::string(v);
  }
  return "";
}

// GET http://<addr><path>, reading to EOF. While waiting it keeps reading the server's output,
// so a handler panic's stack trace cannot fill the stderr pipe and block the server.
HttpResponse HttpGet(const std::string& addr, const std::string& path, Subprocess* server) {
  HttpResponse resp;
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos) {
    resp.error = "bad server address '" + addr + "'";
    return resp;
  }
  std::string host = addr.substr(0, colon);
  const std::string port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    resp.error = "bad server address '" + addr + "': " + gai_strerror(rc);
    return resp;
  }
  const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    resp.error = ErrnoText("socket", errno);
    freeaddrinfo(ai);
    return resp;
  }
  const int crc = connect(fd, ai->ai_addr, ai->ai_addrlen);
  const int connect_errno = errno;
  freeaddrinfo(ai);
  if (crc != 0) {
    close(fd);
    resp.error = ErrnoText("connect to " + addr, connect_errno);
    return resp;
  }

  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + addr +
                              "\r\nUser-Agent: gotrace-oracle\r\nConnection: close\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t w = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      resp.error = ErrnoText("send", errno);
      close(fd);
      return resp;
    }
    sent += static_cast<size_t>(w);
  }

  std::string raw;
  const auto deadline = Clock::now() + kToolTimeout;
  bool reset = false;
  for (;;) {
    if (Clock::now() >= deadline) {
      resp.error = "no complete response within " + std::to_string(kToolTimeout.count()) + " s (" +
                   std::to_string(raw.size()) + " bytes received)";
      close(fd);
      return resp;
    }
    short revents = 0;
    server->Pump(MillisLeft(deadline), fd, &revents);
    if (revents == 0) continue;
    char buf[64 * 1024];
    const ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r > 0) {
      raw.append(buf, static_cast<size_t>(r));
    } else if (r == 0) {
      break;
    } else if (errno != EINTR && errno != EAGAIN) {
      reset = true;
      break;
    }
  }
  close(fd);

  if (raw.empty()) {
    resp.error = std::string("connection closed without a response") + (reset ? " (reset)" : "") +
                 " - a handler panic?";
    return resp;
  }
  const size_t header_end = raw.find("\r\n\r\n");
  const size_t line_end = raw.find("\r\n");
  int status = 0;
  if (!raw.starts_with("HTTP/1.") || header_end == std::string::npos || raw.size() < 12 ||
      !ParseNumber(std::string_view(raw).substr(9, 3), &status)) {
    resp.error = "malformed response (" + std::to_string(raw.size()) +
                 " bytes): " + raw.substr(0, std::min<size_t>(raw.size(), 80));
    return resp;
  }
  resp.status = status;
  resp.status_line = raw.substr(0, line_end);
  resp.body = raw.substr(header_end + 4);
  const std::string length =
      HeaderValue(std::string_view(raw).substr(0, header_end), "Content-Length");
  size_t want = 0;
  if (!length.empty() && ParseNumber(std::string_view(length), &want) && resp.body.size() < want) {
    resp.error = "truncated body: " + std::to_string(resp.body.size()) + " of " + length +
                 " bytes" + (reset ? " (connection reset)" : "");
  }
  return resp;
}

// "... Trace viewer is listening on http://127.0.0.1:NNNN\n" -> "127.0.0.1:NNNN".
std::string ListeningAddress(std::string_view err) {
  constexpr std::string_view kMarker = "listening on http://";
  const size_t at = err.find(kMarker);
  if (at == std::string_view::npos) return "";
  const size_t begin = at + kMarker.size();
  const size_t nl = err.find('\n', begin);
  if (nl == std::string_view::npos) return "";  // the line is not complete yet
  std::string_view addr = TrimRight(err.substr(begin, nl - begin));
  if (const size_t slash = addr.find('/'); slash != std::string_view::npos) {
    addr = addr.substr(0, slash);
  }
  return std::string(addr);
}

// The first goroutine group's page on /goroutines, as a request path: Go 1.19 links
// <a href="/goroutine?id=PC">, Go 1.23 and later <a href="/goroutine?name=NAME"> with the name
// URL-escaped and then HTML-escaped by html/template (so "&" arrives as "&amp;", "+" as "&#43;").
// "" if the page lists no group.
std::string FirstGoroutineGroupPage(std::string_view body) {
  constexpr std::string_view kLink = "href=\"/goroutine?";
  const size_t at = body.find(kLink);
  if (at == std::string_view::npos) return "";
  const size_t begin = at + std::string_view("href=\"").size();
  const size_t end = body.find('"', begin);
  if (end == std::string_view::npos) return "";
  const std::string_view href = body.substr(begin, end - begin);
  static constexpr std::pair<std::string_view, std::string_view> kEntities[] = {
      {"&amp;", "&"}, {"&#43;", "%2B"}, {"&#39;", "%27"}, {"&#34;", "%22"}, {"&quot;", "%22"},
      {"&lt;", "%3C"}, {"&gt;", "%3E"}};
  std::string path;
  for (size_t i = 0; i < href.size();) {
    bool replaced = false;
    for (const auto& [entity, text] : kEntities) {
      if (href.substr(i).starts_with(entity)) {
        path += text;
        i += entity.size();
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    const unsigned char c = static_cast<unsigned char>(href[i++]);
    if (c <= ' ' || c >= 0x7f) {  // a raw space or byte the request line cannot carry
      static constexpr char kHex[] = "0123456789ABCDEF";
      path += '%';
      path += kHex[c >> 4];
      path += kHex[c & 15];
    } else {
      path += static_cast<char>(c);
    }
  }
  return path;
}

std::string FirstLine(std::string_view text, size_t max) {
  text = text.substr(0, text.find('\n'));
  text = TrimRight(text);
  return std::string(text.substr(0, max));
}

std::string ServerStderrSection(const Subprocess& server) {
  const std::string excerpt = StderrExcerpt(server.err());
  if (excerpt.empty()) return "\n  server stderr: (nothing)";
  return "\n  server stderr:\n" + Indented(excerpt, "    ");
}

}  // namespace

// ---- public API -------------------------------------------------------------------------------

size_t ParsedTrace::Count(std::string_view name) const {
  size_t n = 0;
  for (const GoEvent& ev : events) n += ev.name == name ? 1 : 0;
  return n;
}

std::vector<const GoEvent*> ParsedTrace::Find(std::string_view name) const {
  std::vector<const GoEvent*> found;
  for (const GoEvent& ev : events) {
    if (ev.name == name) found.push_back(&ev);
  }
  return found;
}

std::string GoBinary() {
  const char* env = std::getenv("GOTRACE_GO");
  if (env != nullptr && env[0] != '\0') return env;
  return GOTRACE_GO_BINARY;
}

std::string Go123Binary() {
  const char* env = std::getenv("GOTRACE_GO123");
  const std::string go = env != nullptr ? std::string(env) : std::string(GOTRACE_GO123_BINARY);
  if (go.empty() || access(go.c_str(), X_OK) != 0) return "";
  return go;
}

int GoMinorVersion(const std::string& go) {
  // One `go env GOVERSION` per toolchain: tests ask for every trace they check.
  static std::map<std::string, int> known;
  if (const auto it = known.find(go); it != known.end()) return it->second;
  int minor = -1;
  const RunResult r = Run({go, "env", "GOVERSION"});
  // "go1.19.8", "go1.23.1", "go1.24rc1": the number after "go1.".
  std::string_view v = TrimRight(r.Success() ? std::string_view(r.out) : std::string_view());
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  if (v.starts_with("go1.")) {
    v.remove_prefix(4);
    size_t digits = 0;
    while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
    if (!ParseNumber(v.substr(0, digits), &minor)) minor = -1;
  }
  known[go] = minor;
  return minor;
}

ParsedTrace ParseWithGo(const std::string& trace_path) {
  ParsedTrace result;
  // Go 1.19's -d output; Go 1.23's -d takes a level (-d=1) and prints the converted events.
  const RunResult run = Run({GoBinary(), "tool", "trace", "-d", trace_path});
  if (!run.Success()) {
    result.error = FailureText(run);
    return result;
  }
  ParseDebugOutput(run.out, &result);
  return result;
}

std::string WebCheck(const std::string& trace_path) { return WebCheck(trace_path, GoBinary()); }

namespace {

// The pages WebCheck requests, by the minor version of the serving Go (-1: unknown, the newest
// list).
std::vector<std::string> PagesFor(int go_minor) {
  // The profile pages (/io, /block, /syscall, /sched) render SVG through `go tool pprof -svg`,
  // which runs Graphviz's dot: they answer 500 without it.
  if (go_minor >= 0 && go_minor < 23) {
    return {"/",     "/goroutines", "/jsontrace",  "/block?raw=1", "/io",  "/block",
            "/syscall", "/sched",   "/usertasks", "/userregions", "/mmu", "/mmuPlot"};
  }
  // Go 1.23 and later (cmd/trace/main.go; up to 1.22 a trace of this format is served by the
  // old cmd/trace): the trace viewer by proc and by thread, the goroutine groups by name, the
  // MMU plot under /mmu?mode=plot, with the page's default flags and per goroutine.
  return {"/",          "/trace",       "/jsontrace",  "/jsontrace?view=thread",
          "/goroutines", "/block?raw=1", "/io",         "/block",
          "/syscall",   "/sched",       "/usertasks",  "/userregions",
          "/mmu",       "/mmu?mode=plot&flags=system|stw|background|assist",
          "/mmu?mode=plot&flags=perProc|stw|background|assist|sweep"};
}

}  // namespace

namespace {

// Starts `GO tool trace -http` on trace_path in *server and waits until it
// listens (*addr). cmd/trace listens first, then parses and runs the viewer
// generator over the whole trace (where goroutines left running or unclosed
// GC/STW crash it), and only then logs the address. Returns "" or why not,
// prefixed with `who`.
std::string StartTraceServer(Subprocess* server, const std::string& go, const std::string& trace_path,
                             Clock::time_point deadline, const std::string& who, std::string* addr) {
  if (std::string err = server->Start({go, "tool", "trace", "-http=127.0.0.1:0", trace_path});
      !err.empty()) {
    return who + ": " + err;
  }
  for (;;) {
    *addr = ListeningAddress(server->err());
    if (!addr->empty()) return "";
    if (!server->OutputOpen()) {
      server->Wait(deadline);
      return who + ": go tool trace exited (" + DescribeStatus(server->status()) +
             ") before listening" + ServerStderrSection(*server);
    }
    if (Clock::now() >= deadline) {
      server->Kill();
      server->Wait(deadline);
      return who + ": go tool trace did not start listening within " +
             std::to_string(kToolTimeout.count()) + " s" + ServerStderrSection(*server);
    }
    server->Pump(MillisLeft(deadline));
  }
}

}  // namespace

std::string WebCheck(const std::string& trace_path, const std::string& go) {
  const std::string who = go == GoBinary() ? "WebCheck" : "WebCheck(" + go + ")";
  Subprocess server;
  const auto deadline = Clock::now() + kToolTimeout;
  std::string addr;
  if (std::string err = StartTraceServer(&server, go, trace_path, deadline, who, &addr); !err.empty())
    return err;

  std::vector<std::string> pages = PagesFor(GoMinorVersion(go));
  std::string problem;
  for (size_t i = 0; i < pages.size() && problem.empty(); ++i) {
    const HttpResponse resp = HttpGet(addr, pages[i], &server);
    if (!resp.error.empty()) {
      problem = who + ": GET " + pages[i] + ": " + resp.error;
    } else if (resp.status != 200) {
      problem =
          who + ": GET " + pages[i] + ": " + resp.status_line + ": " + FirstLine(resp.body, 200);
    } else if (resp.body.empty()) {
      problem = who + ": GET " + pages[i] + ": HTTP 200 with an empty body";
    } else if (pages[i] == "/goroutines") {
      const std::string group = FirstGoroutineGroupPage(resp.body);
      if (!group.empty()) pages.insert(pages.begin() + i + 1, group);
    }
  }
  if (!problem.empty()) server.Drain(2000);  // the panic is logged before the connection closes
  server.Kill();
  server.Wait(Clock::now() + kToolTimeout);
  if (!problem.empty()) problem += ServerStderrSection(server);
  return problem;
}

std::string WebPages(const std::string& trace_path, const std::vector<std::string>& pages,
                     std::vector<std::string>* bodies) {
  Subprocess server;
  const auto deadline = Clock::now() + kToolTimeout;
  std::string addr;
  if (std::string err = StartTraceServer(&server, GoBinary(), trace_path, deadline, "WebPages", &addr);
      !err.empty()) {
    return err;
  }
  std::string problem;
  bodies->clear();
  for (const std::string& page : pages) {
    const HttpResponse resp = HttpGet(addr, page, &server);
    if (!resp.error.empty()) problem = "WebPages: GET " + page + ": " + resp.error;
    else if (resp.status != 200) problem = "WebPages: GET " + page + ": " + resp.status_line;
    if (!problem.empty()) break;
    bodies->push_back(resp.body);
  }
  if (!problem.empty()) server.Drain(2000);
  server.Kill();
  server.Wait(Clock::now() + kToolTimeout);
  if (!problem.empty()) problem += ServerStderrSection(server);
  return problem;
}

PprofResult Pprof(const std::string& trace_path, const std::string& kind) {
  return Pprof(trace_path, kind, GoBinary());
}

PprofResult Pprof(const std::string& trace_path, const std::string& kind, const std::string& go) {
  PprofResult result;
  const std::string flag = "-pprof=" + (kind == "io" ? std::string("net") : kind);
  const RunResult gen = Run({go, "tool", "trace", flag, trace_path});
  if (!gen.Success()) {
    result.error = "go tool trace " + flag + ": " + FailureText(gen);
    return result;
  }
  TempFile profile;
  if (std::string err = profile.Create("gotrace-pprof-", gen.out); !err.empty()) {
    result.error = err;
    return result;
  }
  const RunResult traces = Run({go, "tool", "pprof", "-traces", profile.path()});
  if (!traces.Success()) {
    result.error = "go tool pprof -traces: " + FailureText(traces);
    return result;
  }
  const RunResult raw = Run({go, "tool", "pprof", "-raw", profile.path()});
  if (!raw.Success()) {
    result.error = "go tool pprof -raw: " + FailureText(raw);
    return result;
  }
  result.traces = traces.out;
  result.raw = raw.out;
  result.ok = true;
  return result;
}

ProfileTotals Totals(const PprofResult& profile) {
  // `go tool pprof -raw`: "Samples:", a line naming the sample types, then one row per sample,
  // "<count> <nanoseconds>: <location ids>", until "Locations".
  ProfileTotals totals;
  bool in_samples = false;
  bool header_seen = false;
  for (std::string_view line : SplitLines(profile.raw)) {
    line = TrimRight(line);
    if (!in_samples) {
      in_samples = line == "Samples:";
      continue;
    }
    if (!header_seen) {
      header_seen = true;
      continue;
    }
    if (line.starts_with("Locations")) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view values = line.substr(0, colon);
    uint64_t numbers[2] = {0, 0};
    size_t n = 0;
    while (n < 2) {
      while (!values.empty() && values.front() == ' ') values.remove_prefix(1);
      if (values.empty()) break;
      const std::string_view token = NextToken(&values);
      if (!ParseNumber(token, &numbers[n])) break;
      ++n;
    }
    if (n != 2) return ProfileTotals{};
    totals.count += numbers[0];
    totals.nanoseconds += numbers[1];
    ++totals.stacks;
  }
  totals.ok = header_seen;
  return totals;
}

namespace {

std::string HtmlUnescape(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&#34;", '"'}, {"&#39;", '\''}, {"&quot;", '"'}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool replaced = false;
    if (s[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (s.substr(i).starts_with(entity)) {
          out += c;
          i += entity.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += s[i++];
  }
  return out;
}

// Both versions' rows: <a href="/goroutine?...">NAME</a>, then the count as
// " N=COUNT" (1.19) or in the next cell "<td>COUNT</td>" (1.21+).
std::string ParseGroups(std::string_view body, std::map<std::string, uint64_t>* groups) {
  constexpr std::string_view kLink = "<a href=\"/goroutine?";
  for (size_t at = body.find(kLink); at != std::string_view::npos; at = body.find(kLink, at + 1)) {
    const size_t open_end = body.find("\">", at);
    const size_t close = body.find("</a>", open_end);
    if (open_end == std::string_view::npos || close == std::string_view::npos)
      return "unexpected /goroutines row";
    const std::string name = HtmlUnescape(body.substr(open_end + 2, close - open_end - 2));
    size_t p = close + 4;
    while (p < body.size() && !std::isdigit(static_cast<unsigned char>(body[p]))) ++p;
    uint64_t n = 0;
    while (p < body.size() && std::isdigit(static_cast<unsigned char>(body[p])))
      n = n * 10 + static_cast<uint64_t>(body[p++] - '0');
    if (name.empty() || name.starts_with("(Inactive")) continue;
    (*groups)[name] += n;
  }
  return "";
}

}  // namespace

std::string NewerGoBinary() {
  const char* env = std::getenv("GOTRACE_GO_NEW");
  const std::string go = env != nullptr && env[0] != '\0' ? env : "/usr/lib/go-1.23/bin/go";
  return access(go.c_str(), X_OK) == 0 ? go : "";
}

GoroutineGroups ReadGoroutineGroups(const std::string& trace_path, const std::string& go_binary) {
  GoroutineGroups result;
  Subprocess server;
  const auto deadline = Clock::now() + kToolTimeout;
  std::string addr;
  result.error = StartTraceServer(&server, go_binary, trace_path, deadline, go_binary, &addr);
  if (!result.error.empty()) return result;
  const HttpResponse resp = HttpGet(addr, "/goroutines", &server);
  if (!resp.error.empty() || resp.status != 200) {
    result.error = "GET /goroutines: " + (resp.error.empty() ? resp.status_line : resp.error);
  } else {
    result.error = ParseGroups(resp.body, &result.groups);
  }
  server.Kill();
  server.Wait(Clock::now() + kToolTimeout);
  return result;
}

std::string ValidateTrace(const std::string& trace_path) {
  const ParsedTrace parsed = ParseWithGo(trace_path);
  if (!parsed.ok) return "go tool trace -d " + trace_path + ": " + parsed.error;
  return WebCheck(trace_path);
}

}  // namespace gotrace::testing
