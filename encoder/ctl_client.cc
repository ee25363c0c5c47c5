// SPDX-License-Identifier: Apache-2.0
//===-- encoder/ctl_client.cc - `gotrace ctl`: talk to a traced process ---===//
//
// The client side of the control channel (issue 16; the server and its
// privacy rules are in preload/control.cc). The socket is looked for where
// the traced process made it for this user: $XDG_RUNTIME_DIR/gotrace, then
// /tmp/gotrace-<uid> (a client whose session has another XDG_RUNTIME_DIR
// than the program's still finds it).
//===----------------------------------------------------------------------===//
#include "encoder/ctl_client.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "encoder/proc_files.h"
#include "preload/control_path.h"

namespace gotrace {
namespace {

// The process's user ids (real, effective, saved, file system: the Uid
// line of /proc/PID/status), and its $XDG_RUNTIME_DIR if we may read its
// environment (ours, or we are root).
std::vector<uint32_t> ProcessUids(int pid) {
  std::vector<uint32_t> out;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (f == nullptr) return out;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned v[4];
    if (std::sscanf(line, "Uid: %u %u %u %u", &v[0], &v[1], &v[2], &v[3]) == 4) {
      out.assign(v, v + 4);
      break;
    }
  }
  std::fclose(f);
  return out;
}

std::string ProcessXdg(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/environ").c_str(), "r");
  if (f == nullptr) return "";
  std::string env, found;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) env.append(buf, n);
  std::fclose(f);
  for (size_t at = 0; at < env.size();) {
    const size_t end = std::min(env.find('\0', at), env.size());
    if (env.compare(at, 16, "XDG_RUNTIME_DIR=") == 0) found = env.substr(at + 16, end - at - 16);
    at = end + 1;
  }
  return found;
}

// Where `pid`'s socket may be: this user's directories, then the process's
// own user's (a service run as postgres, asked by root; a worker that
// changed its user after its channel opened keeps its first user's).
std::vector<std::string> SocketCandidates(int pid) {
  std::vector<std::string> out;
  char dir[256];
  auto add = [&](const char* xdg, uint32_t uid) {
    if (xdg != nullptr && xdg[0] != '/') return;
    if (!control::DirFor(xdg, uid, dir, sizeof dir)) return;
    const std::string path = std::string(dir) + "/" + std::to_string(pid) + ".sock";
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  const uint32_t uid = static_cast<uint32_t>(geteuid());
  add(getenv("XDG_RUNTIME_DIR"), uid);
  add(nullptr, uid);
  const std::string xdg = ProcessXdg(pid);
  for (uint32_t u : ProcessUids(pid)) {
    if (!xdg.empty()) add(xdg.c_str(), u);
    add(nullptr, u);
  }
  return out;
}

// Whether the process is stopped (SIGSTOP: T; a debugger: t).
bool Stopped(int pid) {
  const std::string state = ProcStatField(pid, 3);
  return state == "T" || state == "t";
}

uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

// The program a launcher runs: `pid`'s one child, if `pid` is tracewrap or
// `gotrace run`; else 0. The
// README's `tracewrap --paused -- server &` then `gotrace ctl $! start`
// named the launcher, whose program has the channel.
std::string Comm(int pid) {
  char name[32] = {0};
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/comm").c_str(), "r");
  if (f == nullptr) return "";
  if (std::fgets(name, sizeof name, f) == nullptr) name[0] = '\0';
  std::fclose(f);
  name[std::strcspn(name, "\n")] = '\0';
  return name;
}

// The children of every thread of `pid` (/proc/PID/task/*/children).
std::vector<int> ChildrenOf(int pid) {
  std::vector<int> out;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(tasks.c_str());
  if (d == nullptr) return out;
  for (dirent* e; (e = readdir(d)) != nullptr;) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    FILE* f = std::fopen((tasks + "/" + e->d_name + "/children").c_str(), "r");
    if (f == nullptr) continue;
    for (int c; std::fscanf(f, "%d", &c) == 1;) out.push_back(c);
    std::fclose(f);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

int LaunchedProgram(int pid) {
  const std::string comm = Comm(pid);
  if (comm != "tracewrap" && comm != "gotrace") return 0;
  const std::vector<int> kids = ChildrenOf(pid);
  return kids.size() == 1 ? kids[0] : 0;
}

}  // namespace

bool CtlRequest(int pid, const std::string& command, int timeout_s, std::string* reply,
                std::string* error) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
    *error = "no process " + std::to_string(pid);
    return false;
  }
  const std::vector<std::string> paths = SocketCandidates(pid);
  int fd = -1;
  std::string tried;
  int last_errno = ENOENT;
  for (const std::string& path : paths) {
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) continue;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    tried += (tried.empty() ? "" : ", ") + path;
    const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
      *error = std::string("socket: ") + strerror(errno);
      return false;
    }
    if (connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      fd = s;
      break;
    }
    last_errno = errno;
    close(s);
    if (last_errno == EACCES || last_errno == EPERM) break;
  }
  if (fd < 0) {
    if (last_errno == EACCES || last_errno == EPERM) {
      *error = "permission denied: the control channel of process " + std::to_string(pid) +
               " belongs to another user (" + tried + ")";
    } else if (last_errno == ECONNREFUSED) {
      *error = "process " + std::to_string(pid) + " no longer answers on its control channel (" +
               tried + ")";
    } else if (const int program = LaunchedProgram(pid); program > 0) {
      return CtlRequest(program, command, timeout_s, reply, error);  // (its program's channel)
    } else {
      *error = "process " + std::to_string(pid) +
               " has no control channel: it is not traced, or is traced without one (a "
               "channel comes with tracewrap --paused, --ctl or a flight recorder: "
               "GOTRACE_START=paused, GOTRACE_CTL=1, GOTRACE_MODE=flight; and, from its first "
               "call of ours, with the fork of a process that has one) (looked for " +
               tried + ")";
    }
    return false;
  }
  const std::string line = command + "\n";
  if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    *error = std::string("cannot send the request: ") + strerror(errno);
    close(fd);
    return false;
  }
  // The answer comes when the work is done (a stop writes the window's
  // trace first: seconds for a large window).
  std::string got;
  const uint64_t deadline = NowMs() + static_cast<uint64_t>(timeout_s) * 1000;
  char buf[4096];
  for (;;) {
    const uint64_t now = NowMs();
    if (now >= deadline) {
      // The request was delivered: the process carries it out when its
      // control thread runs again (a stopped process, when continued), even
      // with nobody left to read the answer.
      *error = "no answer from process " + std::to_string(pid) + " within " +
               std::to_string(timeout_s) + " s" +
               (Stopped(pid) ? " (it is stopped: SIGSTOP or a debugger)" : "") +
               "; the request was delivered and is carried out when the process gets to it "
               "(see: gotrace ctl " +
               std::to_string(pid) + " status)";
      close(fd);
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(deadline - now));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  while (!got.empty() && (got.back() == '\n' || got.back() == '\r')) got.pop_back();
  if (got.empty()) {
    *error = "process " + std::to_string(pid) + " closed its control channel without an answer";
    return false;
  }
  *reply = got;
  return true;
}

namespace {

// `gotrace ctl --tree PID cmd`: PID (or the program its launcher runs) and
// its descendants, parents first; those without a channel are passed over.
// The process `pid` and its descendants, parents first.
std::vector<int> TreeOf(int pid) {
  std::vector<int> order, todo = {pid};
  std::set<int> seen;
  while (!todo.empty()) {
    const int p = todo.front();
    todo.erase(todo.begin());
    if (!seen.insert(p).second) continue;
    order.push_back(p);
    const std::vector<int> kids = ChildrenOf(p);
    todo.insert(todo.end(), kids.begin(), kids.end());
  }
  return order;
}

int CtlTree(int pid, const std::string& cmd, int timeout_s) {
  if (kill(pid, 0) != 0 && errno == ESRCH) {
    std::fprintf(stderr, "gotrace ctl: no process %d\n", pid);
    return 1;
  }
  if (const int program = LaunchedProgram(pid); program > 0) pid = program;
  int answered = 0, refused = 0;
  size_t tree = 0;
  std::set<int> asked;
  // Passes over the tree until one finds no process with a channel not yet
  // asked: a worker forked meanwhile, or whose channel opened meanwhile,
  // missed by the first (a stop that left a new backend recording), is
  // asked by the next (at most 5).
  for (int pass = 0; pass < 5; ++pass) {
    const std::vector<int> order = TreeOf(pid);
    tree = std::max(tree, order.size());
    bool any = false;
    for (const int p : order) {
      if (asked.count(p) != 0) continue;
      // Only a process whose channel exists is asked (no "no control
      // channel" line for each helper of the tree).
      bool has = false;
      for (const std::string& path : SocketCandidates(p))
        has = has || access(path.c_str(), F_OK) == 0;
      if (!has) continue;
      asked.insert(p);
      any = true;
      std::string reply, error;
      if (!CtlRequest(p, cmd, timeout_s, &reply, &error)) {
        // A worker that ended meanwhile (a server's churn) is not a refusal.
        if (kill(p, 0) != 0 && errno == ESRCH) continue;
        std::fprintf(stderr, "gotrace ctl: %d: %s\n", p, error.c_str());
        ++refused;
        continue;
      }
      ++answered;
      const bool ok = reply.rfind("ok", 0) == 0;
      if (!ok) ++refused;
      std::fprintf(ok ? stdout : stderr, "%d: %s\n", p, reply.c_str());
    }
    if (!any) break;
  }
  if (answered == 0 && refused == 0) {
    std::fprintf(stderr,
                 "gotrace ctl: neither process %d nor any of its %zu descendants has a control "
                 "channel\n",
                 pid, tree - 1);
    return 1;
  }
  return refused == 0 ? 0 : 1;
}

}  // namespace

int CmdCtl(int argc, char** argv) {
  static const char kUsage[] =
      "usage: gotrace ctl [--timeout SECONDS] [--tree] PID start|stop|snapshot|status\n"
      "  start     begin recording a trace window (the process was started with\n"
      "            GOTRACE_START=paused, tracewrap --paused, or was stopped)\n"
      "  stop      end the window and write its trace, OUT.w<n>\n"
      "  snapshot  write the window so far as its trace; recording goes on in the next\n"
      "  status    recording or paused, the current window and its log size\n"
      "  --timeout wait at most SECONDS for the answer (default 300)\n"
      "  --tree    also every descendant of PID that has a control channel (a prefork\n"
      "            server's workers), parents first; each answer is 'PID: answer'\n"
      "exit status: 0 done, 1 the process refused or could not be reached (--tree: any\n"
      "of them refused, or none has a channel), 2 usage\n";
  int timeout_s = 300;
  bool tree = false;
  std::vector<std::string> pos;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--timeout" && i + 1 < argc) {
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v <= 0 || v > 86400) {
        std::fprintf(stderr, "gotrace ctl: --timeout needs a number of seconds, 1 to 86400\n");
        return 2;
      }
      timeout_s = static_cast<int>(v);
      continue;
    }
    if (a == "--tree") {
      tree = true;
      continue;
    }
    pos.push_back(a);
  }
  if (pos.size() != 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  char* end = nullptr;
  const long pid = std::strtol(pos[0].c_str(), &end, 10);
  if (end == pos[0].c_str() || *end != '\0' || pid <= 0 || pid > 0x3fffffff) {
    std::fprintf(stderr, "gotrace ctl: '%s' is not a process id\n", pos[0].c_str());
    return 2;
  }
  const std::string& cmd = pos[1];
  if (cmd != "start" && cmd != "stop" && cmd != "snapshot" && cmd != "status") {
    std::fprintf(stderr, "gotrace ctl: unknown command '%s' (expected start, stop, snapshot or status)\n",
                 cmd.c_str());
    return 2;
  }
  std::string reply, error;
  if (tree) return CtlTree(static_cast<int>(pid), cmd, timeout_s);
  if (!CtlRequest(static_cast<int>(pid), cmd, timeout_s, &reply, &error)) {
    std::fprintf(stderr, "gotrace ctl: %s\n", error.c_str());
    return 1;
  }
  const bool ok = reply.rfind("ok", 0) == 0;
  std::fprintf(ok ? stdout : stderr, "%s\n", reply.c_str());
  return ok ? 0 : 1;
}

}  // namespace gotrace
