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
// Fork children (a prefork server's workers) open a channel of their own at
// their first call of ours (lifecycle.cc, ForkChildControl).
//
// Cost. The thread exists only where asked for (GOTRACE_START=paused,
// GOTRACE_CTL=1, the flight recorder, and their fork children): a second
// thread changes a program (glibc's single-thread fast paths end), so it is
// not in every traced process. It waits in poll(2) on its socket and an
// eventfd with every signal blocked (but glibc's setxid one), and never
// records; the program's per-thread credential changes are made in it too
// (control::MirrorCapset).
//===----------------------------------------------------------------------===//
#include "preload/control.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
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
// Wakes the control thread from its poll: a credential change to mirror
// (MirrorCapset, MirrorPrctl) or the channel's end. An eventfd.
int g_wake_fd = -1;
// The credential change to mirror: posted under g_op_lock by the program's
// thread (generation g_op_gen), made by the control thread (g_op_done).
struct CredOp {
  long sysno = 0;
  long a[4] = {};
  __user_cap_header_struct hdr{};
  __user_cap_data_struct data[2]{};
};
CredOp g_op;
std::atomic_flag g_op_lock = ATOMIC_FLAG_INIT;
std::atomic<uint32_t> g_op_gen{0};
std::atomic<uint32_t> g_op_done{0};
// A control thread was made (it may not run yet: g_tid is then 0).
std::atomic<bool> g_started{false};
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

// `fd` moved high and close-on-exec, like the log (H27): out of the range
// programs close or dup2 over; `fd` itself if that fails.
int High(long fd) {
  const long high = sys::Fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 600);
  if (high < 0) return static_cast<int>(fd);
  sys::Close(static_cast<int>(fd));
  return static_cast<int>(high);
}

// The user's private directory: created, or checked if it exists.
bool OpenPrivateDir() {
  const char* why = nullptr;
  long fd = control::OpenPrivateDir(g_dir, sizeof g_dir, &why);
  // A process that changed its user keeps the other user's
  // $XDG_RUNTIME_DIR (a worker that became nobody, its master's root
  // session): its own /tmp/gotrace-<uid> then, where `gotrace ctl` looks
  // for a process of that user.
  struct stat xdg_st {};
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  // (Not ours: another user's, or one we cannot even look at.)
  if (fd < 0 && xdg != nullptr &&
      (sys::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(xdg),
                     reinterpret_cast<long>(&xdg_st), 0) != 0 ||
       xdg_st.st_uid != static_cast<uint32_t>(sys::Syscall6(SYS_geteuid)))) {
    char tmp_dir[sizeof g_dir];
    const char* why_tmp = nullptr;
    fd = control::OpenPrivateDir(tmp_dir, sizeof tmp_dir, &why_tmp, /*xdg=*/false);
    if (fd >= 0) sys::Line(g_dir, sizeof g_dir).Str(tmp_dir);
  }
  if (fd < 0) {
    Refuse(g_dir[0] != '\0' ? g_dir : "the control directory", why);
    return false;
  }
  g_dir_fd = High(fd);
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
    const uint64_t pid = control::SocketPid(name);
    if (pid == 0 || pid == static_cast<uint64_t>(g.pid)) return;
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
  // (A fork child's parent swept as it started: a prefork server's every
  // worker read the whole directory again.)
  if (!g.forked_image) SweepStale();
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
  // Non-blocking: the thread waits in poll (with its wake-up), and a
  // connection gone between poll and accept must not hold it.
  sys::Syscall6(SYS_fcntl, s, F_SETFL, O_NONBLOCK);
  return High(s);
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

// Makes the posted credential change in this (the control) thread.
void ApplyCredOp() {
  const uint32_t gen = g_op_gen.load(std::memory_order_acquire);
  if (gen == g_op_done.load(std::memory_order_relaxed)) return;
  if (g_op.sysno == SYS_capset) {
    __user_cap_header_struct hdr = g_op.hdr;
    hdr.pid = 0;  // this thread
    sys::Syscall6(SYS_capset, reinterpret_cast<long>(&hdr), reinterpret_cast<long>(g_op.data));
  } else if (g_op.sysno == SYS_prctl) {
    sys::Syscall6(SYS_prctl, g_op.a[0], g_op.a[1], g_op.a[2], g_op.a[3]);
  }
  g_op_done.store(gen, std::memory_order_release);
  sys::Syscall6(SYS_futex, reinterpret_cast<long>(&g_op_done), FUTEX_WAKE_PRIVATE, 1);
}

// Posts `op` to the control thread and waits (at most 2 s) until it has
// made it. Not from the control thread, nor without one.
void Mirror(const CredOp& op) {
  // A thread made but not running yet (its tid unknown: the program's main
  // may run before it) was given the credentials of the moment it was made:
  // it makes the change as it starts (ControlMain).
  const uint32_t tid = g_tid.load(std::memory_order_acquire);
  if (!g_started.load(std::memory_order_acquire) || g_wake_fd < 0 ||
      g_closed.load(std::memory_order_acquire) || tid == static_cast<uint32_t>(sys::GetTid()) ||
      (tid != 0 && sys::Syscall6(SYS_tgkill, sys::GetPid(), tid, 0) != 0))
    return;
  for (int tries = 0; g_op_lock.test_and_set(std::memory_order_acquire); ++tries) {
    if (tries > 200000) return;
    sys::Syscall6(SYS_sched_yield);
  }
  g_op = op;
  const uint32_t gen = g_op_gen.load(std::memory_order_relaxed) + 1;
  g_op_gen.store(gen, std::memory_order_release);
  const uint64_t one = 1;
  (void)sys::Write(g_wake_fd, &one, sizeof one);
  const uint64_t deadline = sys::MonotonicNs() + 2'000'000'000ull;
  for (;;) {
    const uint32_t done = g_op_done.load(std::memory_order_acquire);
    if (done == gen || sys::MonotonicNs() > deadline) break;
    const struct timespec ts { 0, 10'000'000 };
    sys::Syscall6(SYS_futex, reinterpret_cast<long>(&g_op_done), FUTEX_WAIT_PRIVATE, done,
                  reinterpret_cast<long>(&ts));
  }
  g_op_lock.clear(std::memory_order_release);
}

void* ControlMain(void*) {
  t_state.depth += kTracerDepth;  // never traced
  NoteTracerThread();
  g_tid.store(static_cast<uint32_t>(sys::GetTid()), std::memory_order_release);
  ApplyCredOp();  // one posted before this thread ran
  while (!g_closed.load(std::memory_order_acquire)) {
    const int ls = __atomic_load_n(&g.control_fd, __ATOMIC_ACQUIRE);
    if (ls < 0) break;
    // The listening socket (non-blocking) and the wake-up.
    struct pollfd p[2] = {{ls, POLLIN, 0}, {g_wake_fd, POLLIN, 0}};
    const long n = sys::Syscall6(SYS_poll, reinterpret_cast<long>(p), g_wake_fd >= 0 ? 2 : 1, -1);
    if (n == -EINTR) continue;
    if (n < 0) break;
    if ((p[1].revents & POLLIN) != 0) {
      uint64_t count;
      (void)sys::Read(g_wake_fd, &count, sizeof count);
      ApplyCredOp();
      continue;
    }
    if ((p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) break;  // shut down
    if ((p[0].revents & POLLIN) == 0) continue;
    const long c = sys::Syscall6(SYS_accept4, ls, 0, 0, SOCK_CLOEXEC);
    if (c == -EINTR || c == -ECONNABORTED || c == -EAGAIN) continue;
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
  const long wake = sys::Syscall6(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake >= 0) g_wake_fd = High(wake);
  __atomic_store_n(&g.control_fd, s, __ATOMIC_RELEASE);
  // A window's trace is encoded on this thread (libdw, the scheduling model):
  // 16 MiB reserved, touched only as used.
  g_started.store(true, std::memory_order_release);
  const int rc = StartTracerThread(ControlMain, 16u << 20, "gotrace-ctl");
  if (rc != 0) {
    g_started.store(false, std::memory_order_release);
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
  // Wakes the thread from its poll (the socket hangs up; and the eventfd),
  // which then ends. (The eventfd stays open: the thread may still read it.)
  sys::Syscall6(SYS_shutdown, s, SHUT_RDWR);
  if (g_wake_fd >= 0) {
    const uint64_t one = 1;
    (void)sys::Write(g_wake_fd, &one, sizeof one);
  }
  sys::Close(s);
}

void ControlAfterFork() {
  if (!g.config.control) return;  // (nothing to touch: no copy-on-write faults)
  g_tid.store(0, std::memory_order_relaxed);
  g_started.store(false, std::memory_order_relaxed);
  g_closed.store(true, std::memory_order_relaxed);
  const int s = __atomic_exchange_n(&g.control_fd, -1, __ATOMIC_ACQ_REL);
  if (s >= 0) sys::Close(s);  // the parent's socket stays open in the parent
  if (g_dir_fd >= 0) sys::Close(g_dir_fd);
  g_dir_fd = -1;
  if (g_wake_fd >= 0) sys::Close(g_wake_fd);
  g_wake_fd = -1;
  g_op_lock.clear(std::memory_order_relaxed);  // (a mirror the fork interrupted)
}

uint32_t ControlTid() { return g_tid.load(std::memory_order_acquire); }

bool control::IsCredPrctl(int option) {
  return option == PR_SET_KEEPCAPS || option == PR_SET_SECUREBITS || option == PR_CAPBSET_DROP ||
         option == PR_CAP_AMBIENT;
}

void control::MirrorCapset(const void* header, const void* data) {
  if (!g_started.load(std::memory_order_acquire) || header == nullptr || data == nullptr) return;
  CredOp op;
  op.sysno = SYS_capset;
  std::memcpy(&op.hdr, header, sizeof op.hdr);
  // Another thread's (pid other than ours) is refused by the kernel anyway.
  if (op.hdr.pid != 0 && op.hdr.pid != sys::GetTid()) return;
  const size_t n = op.hdr.version == _LINUX_CAPABILITY_VERSION_1 ? 1 : 2;
  std::memcpy(op.data, data, n * sizeof op.data[0]);
  Mirror(op);
}

void control::MirrorPrctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
                          unsigned long a5) {
  if (!g_started.load(std::memory_order_acquire)) return;
  CredOp op;
  op.sysno = SYS_prctl;
  op.a[0] = option;
  op.a[1] = static_cast<long>(a2);
  op.a[2] = static_cast<long>(a3);
  op.a[3] = static_cast<long>(a4);
  (void)a5;  // (none of the mirrored options has a fifth argument)
  Mirror(op);
}

}  // namespace gotrace
