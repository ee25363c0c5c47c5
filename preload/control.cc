// SPDX-License-Identifier: Apache-2.0
//===-- preload/control.cc - start/stop trace windows while a program runs -===//
//
// Issue 16: `gotrace ctl PID start|stop|snapshot|status` reaches a traced
// process through a unix socket, <dir>/<pid>.sock, in a directory only the
// user can enter (preload/control_path.h). A thread of ours accepts one
// request at a time: a line with a command, answered with one line
// ("ok: ..." or "error: ..."), then the connection closes.
//
// Privacy. The directory is created 0700; one that exists must be a real
// directory (not a symbolic link), owned by us, with no access for group or
// others, or the channel stays closed. It is opened once (O_NOFOLLOW) and the
// socket is bound through /proc/self/fd/N/, so a directory swapped in after
// the checks is never used. A file in the socket's way is removed only if it
// is a socket of ours (a stale one: pids are reused), never followed. Each
// connection's peer credentials (SO_PEERCRED) must carry our uid, the uid
// the channel was opened as, or root's: another user gets the connection
// closed and nothing else.
//
// Fork children (a prefork server's workers) open a channel of their own as
// they are forked (lifecycle.cc, ForkChildControl).
//
// Cost. The thread exists only where asked for (GOTRACE_START=paused,
// GOTRACE_CTL=1, and their fork children): a second thread changes a program (glibc's single-thread
// fast paths end), so it is not in every traced process. It blocks in
// accept(2) with every signal blocked, and never records.
//===----------------------------------------------------------------------===//
#include "preload/control.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "preload/control_path.h"
#include "preload/lifecycle.h"
#include "preload/real.h"
#include "preload/runtime.h"
#include "preload/sys/raw.h"

namespace gotrace {
namespace {

char g_dir[128];
char g_sock_name[32];     // <pid>.sock
int g_dir_fd = -1;
std::atomic<uint32_t> g_tid{0};
std::atomic<bool> g_closed{false};
// The user the channel was opened as: a worker forked by root that then
// became www-data keeps its socket in root's directory, and root's
// `gotrace ctl` must still be heard.
uint32_t g_owner_uid = 0;

void Refuse(const char* what, const char* why) {
  char buf[512];
  sys::Line l(buf, sizeof buf);
  l.Str("the control channel is off: ").Str(what).Str(" ").Str(why);
  sys::Log(l.c_str());
}

}  // namespace

long control::OpenPrivateDir(char* dir, size_t cap, const char** why, bool xdg) {
  const uint32_t uid = static_cast<uint32_t>(sys::Syscall6(SYS_geteuid));
  if (!control::DirFor(xdg ? getenv("XDG_RUNTIME_DIR") : nullptr, uid, dir, cap)) {
    *why = "$XDG_RUNTIME_DIR is too long for a socket path";
    return -1;
  }
  const long mk = sys::Syscall6(SYS_mkdirat, AT_FDCWD, reinterpret_cast<long>(dir), 0700);
  if (mk != 0 && mk != -EEXIST) {
    *why = strerrordesc_np(static_cast<int>(-mk));
    return -1;
  }
  const long fd = sys::OpenAt(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) {
    *why = fd == -ELOOP || fd == -ENOTDIR ? "is not a directory (a symbolic link?)"
                                          : strerrordesc_np(static_cast<int>(-fd));
    return -1;
  }
  struct stat st {};
  if (sys::Syscall6(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != uid || (st.st_mode & 077) != 0) {
    sys::Close(static_cast<int>(fd));
    *why = "is not a private directory of this user (owner and mode 0700 expected)";
    return -1;
  }
  return fd;
}

namespace {

// The user's private directory: created, or checked if it exists.
bool OpenPrivateDir() {
  const char* why = nullptr;
  const long fd = control::OpenPrivateDir(g_dir, sizeof g_dir, &why);
  if (fd < 0) {
    Refuse(g_dir[0] != '\0' ? g_dir : "the control directory", why);
    return false;
  }
  // High and close-on-exec, like the log (H27).
  const long high = sys::Fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 600);
  if (high >= 0) {
    sys::Close(static_cast<int>(fd));
    g_dir_fd = static_cast<int>(high);
  } else {
    g_dir_fd = static_cast<int>(fd);
  }
  return true;
}

// Problem: a process killed with SIGKILL leaves its <pid>.sock, and nothing
// removed them (a sweep of services found them after every kill, under
// tracewrap too). A socket of a pid that does not exist here and that no
// one answers on (a process in another pid namespace sharing the directory
// would) is removed as the next channel opens.
void SweepStale() {
  const long dir = sys::OpenAt(g_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  sys::ForEachDirEntry(dir, [](const char* name) {
    uint64_t pid = 0;
    size_t i = 0;
    for (; name[i] >= '0' && name[i] <= '9' && i < 10; ++i)
      pid = pid * 10 + static_cast<uint64_t>(name[i] - '0');
    if (i == 0 || std::strcmp(name + i, ".sock") != 0 || pid == static_cast<uint64_t>(g.pid))
      return;
    if (sys::Syscall6(SYS_kill, static_cast<long>(pid), 0) != -ESRCH) return;
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    sys::Line(addr.sun_path, sizeof addr.sun_path)
        .Str("/proc/self/fd/")
        .U64(static_cast<uint64_t>(g_dir_fd))
        .Char('/')
        .Str(name);
    const long c = sys::Syscall6(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c < 0) return;
    const long rc = sys::Syscall6(SYS_connect, c, reinterpret_cast<long>(&addr), sizeof addr);
    sys::Close(static_cast<int>(c));
    if (rc == -ECONNREFUSED) sys::Syscall6(SYS_unlinkat, g_dir_fd, reinterpret_cast<long>(name), 0);
  });
  sys::Close(static_cast<int>(dir));
}

// Binds and listens on <dir>/<pid>.sock; the socket's descriptor or -1.
int Listen() {
  SweepStale();
  sys::Line(g_sock_name, sizeof g_sock_name).U64(static_cast<uint64_t>(g.pid)).Str(".sock");
  struct stat st {};
  if (sys::Syscall6(SYS_newfstatat, g_dir_fd, reinterpret_cast<long>(g_sock_name),
                    reinterpret_cast<long>(&st), AT_SYMLINK_NOFOLLOW) == 0) {
    // A socket of ours left by an earlier process with this pid (or an
    // earlier image of this one, before an exec): replace it. Anything else
    // stays where it is, untouched.
    if (!S_ISSOCK(st.st_mode) || st.st_uid != static_cast<uint32_t>(sys::Syscall6(SYS_geteuid))) {
      Refuse(g_sock_name, "is in the way and is not a socket of this user");
      return -1;
    }
    sys::Syscall6(SYS_unlinkat, g_dir_fd, reinterpret_cast<long>(g_sock_name), 0);
  }
  const long s = sys::Syscall6(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) {
    Refuse("socket:", strerrordesc_np(static_cast<int>(-s)));
    return -1;
  }
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  sys::Line(addr.sun_path, sizeof addr.sun_path)
      .Str("/proc/self/fd/").U64(static_cast<uint64_t>(g_dir_fd)).Char('/').Str(g_sock_name);
  // Only the user may connect (the directory already says so).
  const long old_mask = sys::Syscall6(SYS_umask, 077);
  const long b = sys::Syscall6(SYS_bind, s, reinterpret_cast<long>(&addr), sizeof addr);
  sys::Syscall6(SYS_umask, old_mask);
  if (b != 0 || sys::Syscall6(SYS_listen, s, 8) != 0) {
    sys::Close(static_cast<int>(s));
    Refuse(g_dir, b != 0 ? strerrordesc_np(static_cast<int>(-b)) : "listen failed");
    return -1;
  }
  const long high = sys::Fcntl(static_cast<int>(s), F_DUPFD_CLOEXEC, 600);
  if (high < 0) return static_cast<int>(s);
  sys::Close(static_cast<int>(s));
  return static_cast<int>(high);
}

// One request: a command line in, one line out.
void Serve(int c) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (sys::Syscall6(SYS_getsockopt, c, SOL_SOCKET, SO_PEERCRED, reinterpret_cast<long>(&cred),
                    reinterpret_cast<long>(&len)) != 0) {
    return;
  }
  // This process's user, the one the channel was opened as, or root (who
  // could read this process's memory anyway); another user: nothing.
  if (cred.uid != static_cast<uid_t>(sys::Syscall6(SYS_geteuid)) && cred.uid != g_owner_uid &&
      cred.uid != 0) {
    return;
  }
  // A client that connects and says nothing must not hold the channel.
  const struct timeval tv {5, 0};
  sys::Syscall6(SYS_setsockopt, c, SOL_SOCKET, SO_RCVTIMEO, reinterpret_cast<long>(&tv), sizeof tv);
  char cmd[128];
  size_t n = 0;
  while (n + 1 < sizeof cmd) {
    const long got = sys::Read(c, cmd + n, sizeof cmd - 1 - n);
    if (got <= 0) break;
    n += static_cast<size_t>(got);
    if (memchr(cmd, '\n', n) != nullptr) break;
  }
  cmd[n] = '\0';
  while (n > 0 && (cmd[n - 1] == '\n' || cmd[n - 1] == '\r' || cmd[n - 1] == ' ')) cmd[--n] = '\0';
  char out[2048];
  sys::Line reply(out, sizeof out - 1);
  if (sys::StrEq(cmd, "start")) {
    WindowStart(&reply);
  } else if (sys::StrEq(cmd, "stop")) {
    WindowStop(&reply);
  } else if (sys::StrEq(cmd, "snapshot")) {
    // The window so far as a trace of its own; recording goes on in the next.
    char first[1024];
    sys::Line stopped(first, sizeof first);
    if (WindowStop(&stopped)) {
      char second[1024];
      sys::Line started(second, sizeof second);
      WindowStart(&started);
      reply.Str(first).Str("; ").Str(second[0] == 'o' ? second + 4 : second);
    } else {
      reply.Str(first);
    }
  } else if (sys::StrEq(cmd, "status")) {
    WindowStatus(&reply);
  } else {
    reply.Str("error: unknown command '").Str(cmd, n > 40 ? 40 : n);
    reply.Str("' (expected start, stop, snapshot or status)");
  }
  const size_t len_out = reply.size();
  out[len_out] = '\n';
  (void)sys::WriteAllNoSigpipe(c, out, len_out + 1);
}

void* ControlMain(void*) {
  t_state.depth += kTracerDepth;  // never traced
  NoteTracerThread();
  g_tid.store(static_cast<uint32_t>(sys::GetTid()), std::memory_order_release);
  while (!g_closed.load(std::memory_order_acquire)) {
    const int ls = __atomic_load_n(&g.control_fd, __ATOMIC_ACQUIRE);
    if (ls < 0) break;
    const long c = sys::Syscall6(SYS_accept4, ls, 0, 0, SOCK_CLOEXEC);
    if (c == -EINTR || c == -ECONNABORTED) continue;
    if (c < 0) {
      // The socket was shut down (exit) or taken away: end quietly, after a
      // pause if it may be transient (out of descriptors).
      if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS || c == -ENOMEM) {
        const struct timespec ts {0, 100'000'000};
        sys::Syscall6(SYS_nanosleep, reinterpret_cast<long>(&ts), 0);
        continue;
      }
      break;
    }
    Serve(static_cast<int>(c));
    sys::Close(static_cast<int>(c));
  }
  return nullptr;
}

}  // namespace

bool ControlStart() {
  // (Again in a fork child: ControlAfterFork closed the parent's.)
  g_closed.store(false, std::memory_order_relaxed);
  g_owner_uid = static_cast<uint32_t>(sys::Syscall6(SYS_geteuid));
  if (!OpenPrivateDir()) return false;
  const int s = Listen();
  if (s < 0) return false;
  __atomic_store_n(&g.control_fd, s, __ATOMIC_RELEASE);
  // A window's trace is encoded on this thread (libdw, the scheduling model):
  // 16 MiB reserved, touched only as used.
  const int rc = StartTracerThread(ControlMain, 16u << 20, "gotrace-ctl");
  if (rc != 0) {
    ControlStop();
    Refuse("its thread:", strerrordesc_np(rc));
    return false;
  }
  return true;
}

void ControlStop() {
  if (g_closed.exchange(true)) return;
  const int s = __atomic_exchange_n(&g.control_fd, -1, __ATOMIC_ACQ_REL);
  if (s < 0) return;
  if (sys::GetPid() == g.pid && g_dir_fd >= 0)
    sys::Syscall6(SYS_unlinkat, g_dir_fd, reinterpret_cast<long>(g_sock_name), 0);
  // Wakes the thread from accept(2) (EINVAL), which then ends.
  sys::Syscall6(SYS_shutdown, s, SHUT_RDWR);
  sys::Close(s);
}

void ControlAfterFork() {
  if (!g.config.control) return;  // (nothing to touch: no copy-on-write faults)
  g_tid.store(0, std::memory_order_relaxed);
  g_closed.store(true, std::memory_order_relaxed);
  const int s = __atomic_exchange_n(&g.control_fd, -1, __ATOMIC_ACQ_REL);
  if (s >= 0) sys::Close(s);  // the parent's socket stays open in the parent
  if (g_dir_fd >= 0) sys::Close(g_dir_fd);
  g_dir_fd = -1;
}

uint32_t ControlTid() { return g_tid.load(std::memory_order_acquire); }

}  // namespace gotrace
