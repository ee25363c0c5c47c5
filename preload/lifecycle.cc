// SPDX-License-Identifier: Apache-2.0
//===-- preload/lifecycle.cc - start, fork, exec, exit, crash, flushes ----===//
//
// The process's life as the tracer sees it:
//   start   the constructor reads the configuration, opens the event log next
//           to the trace, writes the module map and starts the flusher.
//   fork    the child forgets the parent's buffers and log (H12, H13) and
//           traces into a log of its own (DESIGN.md §6: PATH.<pid>).
//   exec    the current image is finalized (trace written) before the real
//           exec; if the exec fails, tracing starts again (H16).
//   exit    return from main, exit, _exit/_Exit, quick_exit, pthread_exit of
//           the last thread: the final flush and the encode (H26).
//   crash   SIGSEGV/BUS/ILL/FPE/ABRT: an async-signal-safe flush, the trace
//           encoded by a separate `gotrace` process, then the program's own
//           handler or the default action, so the exit status and core dump
//           are what they would be untraced.
//   kill    SIGKILL cannot be caught: the flusher writes snapshots of idle
//           threads' buffers (and owners write chunks older than
//           GOTRACE_FLUSH_MS), so a killed process loses at most that much;
//           tracewrap recovers the log with `gotrace recover`.
//
// Naming: the root process's last image writes the requested path; any other
// process writes PATH.<pid> (the template already unique with %p: as is); an
// image that exec'd another writes that name plus ".<image>" (its exec
// generation). Descendants know they are descendants because our exec and
// posix_spawn interposers (and tracewrap) pass GOTRACE_ROOT_PID; the
// program's own environment is never changed.
//===----------------------------------------------------------------------===//
#include "preload/lifecycle.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "encoder/encode_api.h"
#include "encoder/log_decode.h"
#include "encoder/shell_word.h"
#include "preload/control.h"
#include "preload/fdclass.h"
#include "preload/heap.h"
#include "preload/kernel_sched.h"
#include "preload/learn.h"
#include "preload/real.h"
#include "preload/runtime_internal.h"
#include "preload/sys/clock.h"
#include "preload/sys/next_symbol.h"
#include "preload/sys/raw.h"
#include "unwind/cfi_unwind.h"
#include "unwind/code_map.h"
#include "unwind/libunwind_unwind.h"

#if defined(GOTRACE_LBSS_SYMBOL)
// Defined by the linker: where .bss starts, and where the large tables after
// it start (preload/large_bss.ld).
extern "C" char __bss_start[] __attribute__((visibility("hidden")));
extern "C" char gt_lbss_begin[] __attribute__((visibility("hidden")));
#endif

namespace gotrace {

using namespace internal;

namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
// Signals whose default action ends the process without a fault: a CI
// timeout's SIGTERM, ^C, a closed pipe. Caught only while the program leaves
// them at SIG_DFL; a program that handles or ignores one gets exactly its
// own action installed.
constexpr int kTermSignals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGPIPE,
                                SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU};
constexpr int kMaxSignal = 65;

GT_LARGE_BSS char g_gotrace_bin[1100];  // the gotrace command, for crash-time encodes
bool g_gotrace_searched = false;  // looked for when first needed (a crash)
void FindGotraceBinary();
// What the program asked for our signals, as the kernel keeps an action:
// the handler, the flags and the kernel's 64 signals of the mask (24
// bytes, not a struct sigaction's 152), on g's first page (GT_FORK_HOT).
// Problem (issue 18): a traced shell writes an entry around each fork
// (SIGINT in the shell, SIGQUIT and the others its child resets), and the
// table's own page was one more copy-on-write fault on each side of every
// fork, which the parent's process stream and the child's state already
// pay for on g's first page.
struct KeptAction {
  uintptr_t handler;  // sa_sigaction's (or sa_handler's: SIG_DFL, SIG_IGN) value
  uint64_t mask;
  int flags;
};
GT_FORK_HOT KeptAction g_app_action[kMaxSignal];
// The kept action as a struct sigaction (a mask of the kernel's signals).
// (Inline: the fork path's code window, preload/fork_path.ld.)
GT_ALWAYS_INLINE struct sigaction AppAction(int sig) {
  struct sigaction a {};
  a.sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(g_app_action[sig].handler);
  a.sa_flags = g_app_action[sig].flags;
  std::memcpy(&a.sa_mask, &g_app_action[sig].mask, sizeof(uint64_t));
  return a;
}
GT_ALWAYS_INLINE void SetAppAction(int sig, const struct sigaction& a) {
  KeptAction& k = g_app_action[sig];
  k.handler = reinterpret_cast<uintptr_t>(a.sa_sigaction);
  k.flags = a.sa_flags;
  std::memcpy(&k.mask, &a.sa_mask, sizeof(uint64_t));
}
GT_ALWAYS_INLINE void SetAppHandlerDefault(int sig) {
  g_app_action[sig].handler = reinterpret_cast<uintptr_t>(SIG_DFL);
}
bool g_crash_handlers = false;
// When each of them last reached the program other than from the launcher
// (TermRelay), in MonotonicNs; 0: not since the launcher's last copy.
uint64_t g_term_direct_ns[kMaxSignal];
// A fault the program's own handler is handling: the signal, the thread and
// our handler's frame (a frame deeper on that stack is inside the handler).
std::atomic<int> g_fault_sig{0};
std::atomic<long> g_fault_tid{0};
std::atomic<uintptr_t> g_fault_frame{0};
// The thread writing the trace of a crash (CrashFlush), and whether it is
// done: another thread that faults meanwhile waits for it (AwaitCrashFlush).
std::atomic<long> g_crash_tid{0};
std::atomic<bool> g_crash_done{false};

// Whether the caller runs inside the program's handler for a fault (so the
// process may be in any state), rather than after it jumped out of it.
bool InFaultHandler() {
  if (g_fault_sig.load(std::memory_order_seq_cst) == 0) return false;
  const auto frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t handler = g_fault_frame.load(std::memory_order_seq_cst);
  return sys::GetTid() == g_fault_tid.load(std::memory_order_seq_cst) && frame < handler &&
         handler - frame < (8u << 20);
}

// The thread writing this image's trace at exit or exec (0: none). A
// termination signal that arrives meanwhile (a pool's terminate() sending
// SIGTERM to workers that are already exiting) must not cut the trace short
// and leave only the log: that thread blocks them until the trace is
// written, and the handler, on another thread, waits for it (bounded).
std::atomic<long> g_exit_encoder{0};

// (The kernel's 64-bit masks, by raw system calls: pthread_sigmask's code,
// and sigaddset's, sat on pages of libc that an exec'ing fork child of a
// traced shell ran only for this: a page fault each, issue 18. None of the
// signals is one glibc keeps for itself.)
template <size_t N>
constexpr uint64_t KernelMask(const int (&sigs)[N]) {
  uint64_t m = 0;
  for (int s : sigs) m |= uint64_t{1} << (s - 1);
  return m;
}
// rt_sigprocmask(how, set, old) with the kernel's mask; false on failure.
bool SigMask(int how, const uint64_t* set, uint64_t* old) {
  return sys::Syscall6(SYS_rt_sigprocmask, how, reinterpret_cast<long>(set),
                       reinterpret_cast<long>(old), sizeof *set) == 0;
}

class DeferTermSignals {
 public:
  DeferTermSignals() {
    const uint64_t set = KernelMask(kTermSignals);
    known_ = SigMask(SIG_BLOCK, &set, &old_);
    g_exit_encoder.store(sys::GetTid(), std::memory_order_seq_cst);
  }
  ~DeferTermSignals() {
    g_exit_encoder.store(0, std::memory_order_seq_cst);
    if (known_) (void)SigMask(SIG_SETMASK, &old_, nullptr);  // a pending one is delivered now
  }
  DeferTermSignals(const DeferTermSignals&) = delete;
  DeferTermSignals& operator=(const DeferTermSignals&) = delete;

 private:
  uint64_t old_ = 0;
  bool known_ = false;
};

// While the trace is written: the encoder opens the log, the output and the
// ELF file of every module that named a PC, and a program may end with its
// descriptors near its soft limit (the trace failed with "Too many open
// files"). The soft limit is raised to the hard one meanwhile and put back
// after, so that an exec'd program inherits the limit it would have had.
class RaiseFdLimit {
 public:
  RaiseFdLimit() {
    if (sys::Syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&old_)) != 0 ||
        old_.rlim_cur >= old_.rlim_max) {
      return;
    }
    struct rlimit raised = old_;
    raised.rlim_cur = old_.rlim_max;
    raised_ = sys::Syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, reinterpret_cast<long>(&raised), 0) == 0;
  }
  ~RaiseFdLimit() {
    if (raised_) sys::Syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, reinterpret_cast<long>(&old_), 0);
  }
  RaiseFdLimit(const RaiseFdLimit&) = delete;
  RaiseFdLimit& operator=(const RaiseFdLimit&) = delete;

 private:
  struct rlimit old_ {};
  bool raised_ = false;
};

// In a termination handler: if another thread is writing the trace, let it
// finish (at most 30 s, a generous encode), then die as untraced would.
void AwaitExitEncoder() {
  const long tid = sys::GetTid();
  for (int ms = 0; ms < 30000; ++ms) {
    const long enc = g_exit_encoder.load(std::memory_order_seq_cst);
    if (enc == 0 || enc == tid) return;
    const struct timespec one_ms = {0, 1'000'000};
    sys::Syscall6(SYS_nanosleep, reinterpret_cast<long>(&one_ms), 0);
  }
}
// A window's start or stop in progress (on the control thread): the exit
// path waits for it rather than cut its trace short.
std::atomic<bool> g_window_busy{false};

class WindowOp {
 public:
  WindowOp() { g_window_busy.store(true, std::memory_order_seq_cst); }
  ~WindowOp() { g_window_busy.store(false, std::memory_order_seq_cst); }
  WindowOp(const WindowOp&) = delete;
  WindowOp& operator=(const WindowOp&) = delete;
};

void AwaitWindowOp() {
  for (int i = 0; i < 600000 && g_window_busy.load(std::memory_order_seq_cst); ++i) {
    const struct timespec ts {0, 100'000};
    sys::Syscall6(SYS_nanosleep, reinterpret_cast<long>(&ts), 0);
  }
}

pthread_key_t g_live_key;  // set (to 1) in every counted thread; see AppThreadStarted
bool g_live_key_ok = false;

// The small globals (.data and .bss without the large tables: about 9
// pages) are written all over by start-up: the pool, the keys, the module
// map, the resolved functions, the log state. One system call maps them in,
// instead of a page fault each (issue 18: 15 to 20 us apiece on the VM this
// was first measured on). Not in a process that starts staged, nor in a
// fork child: they touch a few of these pages and of our code's, and on a
// machine where a fault costs 1 to 2 us (this one, 2026-11-25) mapping all
// of them cost more than it saved: 12 us per staged process, 40 us per
// fork of a traced shell (test/bench/spawn_cost, a 300-fork shell loop).
GT_ALWAYS_INLINE void PopulateSmallGlobals() {
#if defined(GOTRACE_LBSS_SYMBOL)
  // g is .data's largest object, at its start.
  const uintptr_t lo = std::min(reinterpret_cast<uintptr_t>(&g), reinterpret_cast<uintptr_t>(__bss_start)) &
                       ~uintptr_t{4095};
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(gt_lbss_begin) + 4095) & ~uintptr_t{4095};
  // (A sanity bound: never more than the small globals are meant to be.)
  if (hi > lo && hi - lo <= (64u << 10))
    (void)sys::PopulateWrite(reinterpret_cast<void*>(lo), hi - lo);
#endif
}

#if defined(GOTRACE_LBSS_SYMBOL)
extern "C" const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
#endif

// Our code and read-only data (about 60 pages): start-up and exit run
// functions spread over all of it, and each 64 KiB the kernel maps per page
// fault was a fault (4 to 5 per process, 12 to 35 us apiece on the VMs
// measured). One system call maps them all: from the first executable
// segment to the end of the read-only ones after it, as the program headers
// say.
GT_ALWAYS_INLINE void PopulateOwnCode() {
#if defined(GOTRACE_LBSS_SYMBOL)
  const auto* base = reinterpret_cast<const char*>(&__ehdr_start);
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(base + __ehdr_start.e_phoff);
  uintptr_t lo = ~uintptr_t{0}, hi = 0;
  for (int i = 0; i < __ehdr_start.e_phnum; ++i) {
    if (ph[i].p_type != PT_LOAD || (ph[i].p_flags & PF_W) != 0) continue;
    const uintptr_t a = reinterpret_cast<uintptr_t>(base) + ph[i].p_vaddr;
    if ((ph[i].p_flags & PF_X) != 0) lo = std::min(lo, a);
    if (lo != ~uintptr_t{0}) hi = std::max(hi, a + ph[i].p_memsz);
  }
  lo &= ~uintptr_t{4095};
  if (hi > lo && hi - lo <= (4u << 20)) (void)sys::PopulateRead(reinterpret_cast<void*>(lo), hi - lo);
#endif
}

bool TemplateHasPid() {
  for (const char* p = g.config.out_template; p[0] != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') return true;
    if (p[0] == '%' && p[1] != '\0') ++p;
  }
  return false;
}

// This image's trace name: `exec_image` names the trace of an image that is
// about to exec another.
bool TracePath(bool exec_image, char* out, size_t cap) {
  const char* exe = program_invocation_short_name ? program_invocation_short_name : "program";
  if (!ExpandOutputPath(g.config.out_template, g.pid, exe, g.cwd, out, cap)) return false;
  sys::Line l(out + sys::StrLen(out), cap - sys::StrLen(out));
  if ((g.descendant || exec_image) && !TemplateHasPid()) l.Char('.').U64(static_cast<uint64_t>(g.pid));
  if (exec_image) l.Char('.').U64(g.image);
  if (g.window > 0) l.Str(".w").U64(g.window);  // a trace window's (issue 16)
  return sys::StrLen(out) + 2 < cap;
}

// The event log's name for a trace: next to it, or, under a launcher that
// gave a log directory (GOTRACE_LOG_DIR: a tmpfs of its own, where creating
// and removing hundreds of files costs nothing like a disk filesystem's
// inode allocation), in that directory under the trace's file name.
void LogNameFor(const char* trace, unsigned n, char* out, size_t cap) {
  sys::Line l(out, cap);
  if (g.config.defer && g.config.log_dir[0] != '\0') {
    const char* base = trace;
    for (const char* p = trace; *p != '\0'; ++p)
      if (*p == '/') base = p + 1;
    l.Str(g.config.log_dir).Char('/').Str(base);
  } else {
    l.Str(trace);
  }
  if (n > 0) l.Char('.').U64(n);
  l.Str(".gtlog");
}

// Whether the launcher's run goes on: its marker (GOTRACE_DEFER) exists.
bool RunAlive() {
  return sys::Syscall6(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(g.config.defer_path), F_OK,
                       0) == 0;
}

// The run's log directory is gone because the run is over (its marker is
// gone too): a process that makes its log only now (a daemon started with
// `setsid -f` or start-stop-daemon, exec'd after the launcher finished; a
// staged process that turns out worth a trace late) is on its own, as any
// process that outlives its run: its log goes next to its trace, which it
// writes itself when it ends (Finalize). It said "cannot create ...;
// tracing is off" and was in no trace and no index.
bool RunOverBeforeLog() {
  if (!g.config.defer || g.config.log_dir[0] == '\0') return false;
  if (RunAlive()) return false;
  g.config.log_dir[0] = '\0';
  return true;
}

// A process that cannot create its log next to its trace (a server started
// by root that gave up its privileges, making its log after its run ended:
// RunOverBeforeLog) puts both into its user's private directory
// (/tmp/gotrace-<uid>), once, and says so. It said "cannot create ...;
// tracing is off".
// `path`'s file name in the user's private directory (/tmp/gotrace-<uid>,
// made if missing: control::OpenPrivateDir) into out; false if there is none.
bool InPrivateDir(const char* path, char* out, size_t cap) {
  const char* why = nullptr;
  char dir[200];
  const long fd = control::OpenPrivateDir(dir, sizeof dir, &why, /*xdg=*/false);
  if (fd < 0) return false;
  sys::Close(static_cast<int>(fd));
  const char* base = path;
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  sys::Line l(out, cap);
  l.Str(dir).Char('/').Str(base);
  return sys::StrLen(out) + 1 < cap;
}

bool IntoPrivateDir() {
  if (g.config.defer && g.config.log_dir[0] != '\0')
    return false;  // the run's directory: the launcher's
  static bool tried = false;
  if (tried) return false;
  tried = true;
  char requested[sizeof g.out_path];
  sys::Line(requested, sizeof requested).Str(g.out_path);
  if (!InPrivateDir(requested, g.out_path, sizeof g.out_path)) {
    sys::Line(g.out_path, sizeof g.out_path).Str(requested);
    return false;
  }
  char buf[2600];
  sys::Line m(buf, sizeof buf);
  m.Str("cannot write next to ").Str(requested).Str(" (this process runs as user ");
  m.U64(static_cast<uint64_t>(sys::Syscall6(SYS_geteuid)))
      .Str(", without permission there); its log and trace go to ");
  m.Str(g.out_path);
  sys::Log(m.c_str());
  return true;
}

bool OpenLog() {
  // A relative trace name in a working directory that was removed (getcwd
  // failed at the start): not a path from the root.
  if (g.config.out_template[0] != '/' && g.cwd[0] == '\0') {
    sys::Log(
        "cannot write a trace relative to the current directory (removed, or unreadable); "
        "give GOTRACE_OUT an absolute path; tracing is off");
    return false;
  }
  if (!TracePath(false, g.out_path, sizeof g.out_path)) {
    sys::Log("GOTRACE_OUT is too long; tracing is off");
    return false;
  }
  // The log sits next to the trace (same filesystem; tracewrap finds it after
  // a crash). Created exclusively, 0600, close-on-exec (H16).
  for (unsigned n = 0; n < 100; ++n) {
    LogNameFor(g.out_path, n, g.log_path, sizeof g.log_path);
    const long fd = sys::OpenAt(-100, g.log_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd == -EEXIST) continue;
    if (fd == -ENOENT && RunOverBeforeLog()) {
      n = ~0u;  // (the loop's ++ makes it 0: the same names, next to the trace)
      continue;
    }
    if ((fd == -EACCES || fd == -EPERM) && IntoPrivateDir()) {
      n = ~0u;
      continue;
    }
    if (fd < 0) {
      char buf[1400];
      sys::Line m(buf, sizeof buf);
      m.Str("cannot create ").Str(g.log_path).Str(" (").Str(strerrordesc_np(static_cast<int>(-fd)));
      m.Str("); tracing is off");
      sys::Log(m.c_str());
      return false;
    }
    // Keep our descriptor out of the range programs close or dup2 over (H27),
    // and never at 0, 1 or 2 (a program started with one of them closed
    // would write its output into our log).
    long high = sys::Fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 512);
    if (high < 0 && fd < 3) high = sys::Fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 3);
    if (high >= 0) {
      sys::Close(static_cast<int>(fd));
      g.log_fd = static_cast<int>(high);
    } else {
      g.log_fd = static_cast<int>(fd);
    }
    return true;
  }
  sys::Log("cannot find a free name for the event log; tracing is off");
  return false;
}

// The log's file header, written again as the frequency estimate improves.
void WriteHeader() {
  log::FileHeader h;
  // The parent it had when it began (g.ppid: its fork, its lineage), not
  // getppid's answer now, which is init's pid once that parent is gone.
  const uint32_t ppid = g.ppid != 0 ? g.ppid : static_cast<uint32_t>(sys::GetPPid());
  log::InitFileHeader(&h, sys::EstimateTicksPerSecond(g.start_ticks, g.start_ns), g.start_ticks,
                      static_cast<uint32_t>(g.pid), ppid, g.ncpus, g.slot_bytes);
  h.start_ns = g.start_ns;
  if (g.config.flight) h.flags |= log::kFileFlight;
  (void)sys::PwriteAll(__atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE), &h, sizeof h, 0);
}

// The log's file: created, sized to its header page (slots follow,
// log_format.h), the header written. False if it could not be created (one
// line said why).
bool MakeLogFile() {
  if (!OpenLog()) return false;
  sys::Syscall6(SYS_ftruncate, g.log_fd, log::kSlotsOffset);
  WriteHeader();
  return true;
}

// Staging (issue 18, runtime.h): a descendant under the launcher records
// into memory first. Not the program itself (its trace is always written),
// not with GOTRACE_KEEP_LOG (its logs are wanted), not for services (trace
// windows, the flight recorder, the control channel: they run long and
// record from the start), not with threads.
bool StagingAllowed() {
  return g.config.stage && g.config.defer && g.descendant && g.config.journal_path[0] != '\0' &&
         !g.config.keep_log && !g.config.flight && !g.config.control && !g.config.start_paused &&
         g.window == 0 && g.app_threads.load(std::memory_order_relaxed) <= 1;
}

// A new log for this process image (start, fork child, failed exec, trace
// window). `fork_child`: g.start_ns/start_ticks already hold when the image
// began (a fork child's log starts at its first record, its process at the
// fork), and the unwinder's code map, built by the parent, holds: rebuilt
// only if something was loaded or unloaded since (its pages are the
// parent's until written: a rebuild copied three to five of them, a fault
// each). `before_bind` runs once the log is open, before any thread can
// record into it.
bool StartLog(bool fork_child = false, void (*before_bind)() = nullptr) {
  PoolResetIfForked();  // a fork child's first log: the parent's region goes
  if (!fork_child) {
    g.start_ns = sys::MonotonicNs();
    g.start_ticks = sys::Ticks();
    if (g.window == 0) g.began_ns = g.start_ns;
  }
  // Staged (issue 18): no file until the process records something worth
  // a trace of its own (MaterializeSlow).
  const bool staged = StagingAllowed();
  if (!staged && !MakeLogFile()) return false;
  g.staged.store(staged, std::memory_order_seq_cst);
  g.unproven.store(staged, std::memory_order_relaxed);  // staged: not worth a trace yet
  if (g.reaped_child.load(std::memory_order_relaxed))
    g.reaped_child.store(false, std::memory_order_relaxed);
  g.staged_heap_lo = ~uint64_t{0};
  g.staged_heap_hi = 0;
  if (g.io_block_ticks.load(std::memory_order_relaxed) != 0)
    g.io_block_ticks.store(0, std::memory_order_relaxed);
  // (A fork's: AtForkChild; an exec'd image's: its lineage, when known.)
  if (!fork_child && g.ppid == 0) g.ppid = static_cast<uint32_t>(sys::GetPPid());
  ResetLogState();
  g.phase.store(Phase::kReady, std::memory_order_seq_cst);
  ProcInit(g.start_ticks);
  ModulesReset(/*populate=*/!staged);
  if (before_bind != nullptr) before_bind();
  g.bind.store((g.log_gen << 1) | 1, std::memory_order_release);
  if (staged) {
    ModulesLater();  // a quiet process never needs them
  } else {
    (void)EnsureDepot();
    RescanModules(false, /*force_code_map=*/!fork_child);
  }
  return true;
}

// Recording ends in this log: hooks pass through from now on.
void Unbind() { g.bind.store(0, std::memory_order_seq_cst); }

// The executable as it was run (AT_EXECFN, against the start directory if
// relative: a script's own path, not its interpreter's), also the learn
// table's key (preload/learn.h): /proc/self/exe's first reading costs a new
// process 15 to 25 us, most of a quiet one's end.
constexpr size_t kExecPathMax = 1200;
void ExecPath(char* buf, size_t n) {
  buf[0] = '\0';
  const auto* fn = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
  sys::Line l(buf, n);
  if (fn != nullptr && fn[0] != '/' && g.cwd[0] != '\0') l.Str(g.cwd).Char('/');
  if (fn != nullptr) l.Str(fn);
}

// Notes how this image's command went in the run's learn table
// (preload/learn.h), under the key the exec that started it looked up:
// made from every argument before main could rewrite them
// (NoteOwnCommand), else from the executable alone. A fork's image has no
// command of its own.
void NoteLearned(log::LearnState state) {
  if (g.forked_image) return;
  uint64_t key = g.learn_key;
  uint64_t program = g.learn_program;
  if (key == 0) {
    char exe[kExecPathMax];
    ExecPath(exe, sizeof exe);
    key = log::LearnKey(g.cwd, exe, nullptr);
    program = log::ProgramKey(exe);
  }
  // Small: a quiet end's CPU time (its process's, since the fork that made
  // it) under log::kLearnSmallCpuNs.
  const bool small = state == log::kLearnQuietOnce && ProcessCpuNs() < log::kLearnSmallCpuNs;
  learn::Note(g.config.learn_path, key, program, state, small);
}

}  // namespace

void NoteOwnCommand(char* const* argv) {
  if (g.config.learn_path[0] == '\0' || g.forked_image) return;
  char exe[kExecPathMax];
  ExecPath(exe, sizeof exe);
  g.learn_key = log::LearnKey(g.cwd, exe, argv);
  g.learn_program = log::ProgramKey(exe);
}

void NoteReapedBusy(long pid) {
  if (LearnActive()) learn::ReapedBusy(g.config.learn_path, static_cast<int>(pid));
}

namespace {

// Appends one entry to the run's journal. The launcher made the journal;
// gone, it read it already (this process outlived the run): nothing to say.
// One write: entries of concurrent processes never interleave.
// `keep` (may be null): the journal's descriptor, used if open (>= 0),
// else opened and left there (close-on-exec: for an exec to close).
void AppendJournal(const uint8_t* entry, size_t n, int* keep = nullptr) {
  if (n == 0) return;
  long fd = keep != nullptr ? *keep : -1;
  if (fd < 0) fd = sys::OpenAt(-100, g.config.journal_path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
  if (fd < 0) return;
  (void)sys::Write(static_cast<int>(fd), entry, n);
  if (keep != nullptr) {
    *keep = static_cast<int>(fd);
  } else {
    sys::Close(static_cast<int>(fd));
  }
}

// What the run learns of the program from a quiet end of this image
// (preload/learn.h): one that made no child, reaped none (`reaped`) and ran
// no other program counts towards not tracing it again; one that did must
// always be traced (an untraced process's children are untraced too).
// `status`: g.exit_status (0: unknown, nothing learned).
void LearnQuietEnd(uint64_t status, bool reaped) {
  if (status == 0) return;
  const bool exec_d = (status & ~kExitKnown) == log::kExitExec;
  const bool simple = !exec_d && !reaped && !g.made_child.load(std::memory_order_relaxed);
  NoteLearned(simple ? log::kLearnQuietOnce : log::kLearnTrace);
}

// Staging (issue 18): a process that ends without having recorded anything
// worth a trace of its own leaves one entry in the run's journal (who, when,
// how it ended, the children it reaped) instead of a log. A fork that
// execs, quiet, and reaped no child leaves nothing: the image it runs next
// is the same process (its pid, its parent), listed on its own; the entry
// only listed that pid a second time, with no command (a shell's `cmd
// >file` records the open of `file` in the fork before the exec: 156 such
// entries in the shell job, "quiet: (fork) x156"). Async-signal-safe: raw
// system calls, memory it owns (the termination handler may call it).
GT_NOINLINE void QuietEntry(uint64_t status);
bool g_paused_end_written = false;  // PausedEnd, once per image
void QuietEnd() {
  const uint64_t status = g.exit_status.load(std::memory_order_acquire);
  const bool exec_d = status != 0 && (status & ~kExitKnown) == log::kExitExec;
  // Before the entry's 4.5 KiB of stack: in a shell's fork child that
  // execs, those were two or three fresh stack pages (faults) for nothing.
  if (g.forked_image && exec_d && !g.reaped_child.load(std::memory_order_relaxed)) return;
  QuietEntry(status);
}

// The entry's header: this image, ended now with `status` (g.exit_status).
log::QuietHeader QuietHeaderNow(uint64_t status, uint64_t records, uint32_t nkids) {
  log::QuietHeader h{};
  h.pid = static_cast<uint32_t>(g.pid);
  h.ppid = g.ppid;
  h.image = g.image;
  h.flags = (g.descendant ? log::kQuietDescendant : 0) | (g.forked_image ? log::kQuietForked : 0);
  h.start_ns = g.start_ns;
  h.end_ns = sys::MonotonicNs();
  h.exit_status = status != 0 ? (status & ~kExitKnown) : log::kQuietNoStatus;
  h.records = static_cast<uint32_t>(std::min<uint64_t>(records, 0xffffffffu));
  h.nchild = nkids;
  return h;
}

void QuietEntry(uint64_t status) {
  log::QuietChild kids[log::kQuietMaxChildren];
  uint32_t nkids = 0;
  const uint64_t records = StagedSummary(kids, &nkids);
  const log::QuietHeader h = QuietHeaderNow(status, records, nkids);
  // A fork's image has no command line or executable of its own (as in its
  // log, which records no process information).
  const bool forked = g.forked_image;
  char exe[kExecPathMax];
  exe[0] = '\0';
  if (!forked) ExecPath(exe, sizeof exe);
  alignas(8) uint8_t entry[log::kQuietMaxBytes];
  const size_t n = log::BuildQuietEntry(entry, sizeof entry, h, kids, forked ? nullptr : exe,
                                        forked ? nullptr : g.argv, forked ? 0 : static_cast<size_t>(g.argc));
  if (n == 0) return;
  AppendJournal(entry, n);
  LearnQuietEnd(status, nkids != 0);
}

// A process that ends paused (GOTRACE_START=paused, or after `gotrace ctl
// stop`) has no log for the launcher to read: its windows are traces it
// wrote itself. Its entry says who it was and how it ended, so that the
// run's index lists it (a prefork server's workers, a paused shell's
// commands), with kQuietPaused: it is not quiet, it was not recording.
// Async-signal-safe (a SIGTERM ends most services); not for an exec (the
// new image is the same process and writes its own). Once per image.
int ForkCommand(char*** args_out);
void PausedEnd(uint64_t status) {
  if (g.config.journal_path[0] == '\0' || g_paused_end_written) return;
  g_paused_end_written = true;
  log::QuietHeader h = QuietHeaderNow(status, 0, 0);
  h.flags |= log::kQuietPaused;
  if (g.began_ns != 0) h.start_ns = g.began_ns;                     // not its last window's start
  if (h.ppid == 0) h.ppid = static_cast<uint32_t>(sys::GetPPid());  // (no log ever said it)
  // A fork's image: its command line as it rewrote it (a worker's title),
  // as a fork child's log says at its end (RecordForkCommand).
  char** argv = g.argv;
  int argc = g.argc;
  if (g.forked_image) {
    char** title;
    const int n = ForkCommand(&title);
    if (n > 0) {
      argv = title;
      argc = n;
    }
  }
  char exe[kExecPathMax];
  ExecPath(exe, sizeof exe);
  alignas(8) uint8_t entry[log::kQuietMaxBytes];
  AppendJournal(entry, log::BuildQuietEntry(entry, sizeof entry, h, nullptr, exe, argv,
                                            argv != nullptr ? static_cast<size_t>(argc) : 0));
}

// A fork child that ends, not by an exec, before it recorded anything (its
// log never started: StartForkChildLog) is a quiet process of the run all
// the same: its entry says who it was and how it ended (a program's
// `fork(); ... exit(5)`, a shell's subshell of builtins). Once per image.
// Its entry is the header alone (no records, children, command line or
// executable of its own), built in a small buffer: QuietEntry's 4.5 KiB of
// stack were two page faults in every such fork of a shell (`$(builtin)`).
void PendingForkEnd(uint64_t status) {
  if (!g.fork_log_pending.exchange(false, std::memory_order_acq_rel)) return;
  alignas(8) uint8_t entry[sizeof(log::QuietHeader) + 16];
  AppendJournal(entry, log::BuildQuietEntry(entry, sizeof entry, QuietHeaderNow(status, 0, 0),
                                            nullptr, nullptr, nullptr, 0));
}

// The kernel's scheduling records (issue 13), and the log's note of where
// this trace's scheduling comes from. When they are wanted and refused, one
// line says why and how to allow them: in the first process of the run
// only (a build would otherwise print it once per compiler), unless
// GOTRACE_SCHED=kernel asked for them.
//
// With GOTRACE_SCHED=auto the run's first process opens them as it starts.
// A descendant opens them when it creates its second thread (before it
// exists, so that it inherits them) or has been recording for 10 ms,
// whichever comes first: opening them and their ring buffers costs a few
// tenths of a millisecond, and a shell script's short commands, one thread
// and a few milliseconds each, gain nothing from them. The first process
// cannot wait so: "recording for 10 ms" is seen only by a recorded call,
// and a program that computes without one (an in-memory sqlite3 query, a
// numeric loop) would have no CPU samples and no timeline at all. Where no
// perf event was open on the machine in the last second, the first one
// costs the process that opens it a `synchronize_rcu` (5 to 25 ms here);
// tracewrap holds one for the run (run.cc, HoldPerfHooks).
void StartKernelSched(bool stack_copies, bool startup = false);

// At the start of a log: GOTRACE_SCHED=kernel and infer decide now, and
// so does auto in the run's first process; a descendant's auto notes that
// the timeline is inferred until the kernel's records start (the note that
// comes with them replaces it).
void NoteKernelSchedLater() {
  g.kernel_tried.store(false);
  if (g.config.sched != SchedMode::kAuto || !g.descendant) {
    // Start-up rings while the process has one thread (kernel::Grow and
    // UseStackCopies replace them; a window opened later, in a process
    // with threads, gets full-size ones at once).
    StartKernelSched(/*stack_copies=*/false,
                     /*startup=*/g.app_threads.load(std::memory_order_relaxed) <= 1);
    return;
  }
  // (Replaced if they start: a second thread, or a recorded call after 10
  // ms in a process worth a trace. Paused: no log; a window's start notes
  // it in its own, NoteWindowSched.)
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady) return;
  static const char kWhy[] = "not started: one thread, no recorded call after its first 10 ms";
  ProcLock lock;
  ProcReserve(log::ChunkWriter::VarRecordBound(log::ChunkWriter::SchedInfoBound(sizeof kWhy)), false);
  ProcWriter().SchedInfo(sys::Ticks(), 0, log::kSchedInfer, 0, std::string_view(kWhy, sizeof kWhy - 1));
  ProcCommit();
}

// `second_thread`: called as the process creates its second thread (its
// flusher will read the rings: stack copies), else at a 10 ms tick.
void MaybeStartKernelSched(bool second_thread) {
  if (g.config.sched != SchedMode::kAuto || g.kernel_tried.load(std::memory_order_relaxed)) return;
  if (g.kernel_tried.exchange(true)) return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  StartKernelSched(/*stack_copies=*/second_thread);
}

// `stack_copies`: the samples carry stack copies, for a process about to
// have a second thread; else the kernel's call chains
// (kernel::UseStackCopies says why). `startup`: the smaller rings of a
// process's start (kernel::Open).
void StartKernelSched(bool stack_copies, bool startup) {
  g.kernel_tried.store(true);
  const char* why = nullptr;
  int err = 0;
  // The kernel's records need a log to go to: a staged process makes its
  // own now (it has run 10 ms, or is about to have threads).
  if (g.config.sched != SchedMode::kInfer && g.staged.load(std::memory_order_acquire) &&
      !MaterializeSlow(/*worthy=*/false)) {
    return;
  }
  const bool on = g.config.sched != SchedMode::kInfer &&
                  kernel::Open(g.config, stack_copies, startup, &why, &err);
  char text[600];
  sys::Line l(text, sizeof text);
  if (!on && why != nullptr) {
    l.Str(why);
    if (err == EACCES || err == EPERM) {
      char level[16] = {0};
      const long fd = sys::OpenAt(-100, "/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC, 0);
      if (fd >= 0) {
        const long n = sys::Read(static_cast<int>(fd), level, sizeof level - 1);
        sys::Close(static_cast<int>(fd));
        for (long i = 0; i < n; ++i)
          if (level[i] == '\n') level[i] = '\0';
      }
      l.Str(" (kernel.perf_event_paranoid = ").Str(level[0] ? level : "?");
      l.Str(", or a seccomp filter)");
    } else if (err != 0) {
      l.Str(" (").Str(strerrordesc_np(err)).Str(")");
    }
  }
  if (g.phase.load(std::memory_order_acquire) == Phase::kReady) {
    // (Paused: no log now; a window's start notes the outcome in its own.)
    ProcLock lock;
    const size_t len = l.size();
    ProcReserve(log::ChunkWriter::VarRecordBound(log::ChunkWriter::SchedInfoBound(len)), false);
    ProcWriter().SchedInfo(sys::Ticks(), 0, on ? log::kSchedKernel : log::kSchedInfer,
                           on ? g.config.cpu_hz : 0, std::string_view(text, len));
    ProcCommit();
  }
  if (on || why == nullptr || g.config.quiet) return;
  if (g.descendant && g.config.sched != SchedMode::kKernel) return;
  char buf[1000];
  sys::Line m(buf, sizeof buf);
  m.Str("exact scheduling is off: ").Str(text);
  m.Str("; to turn it on: sysctl kernel.perf_event_paranoid=2, or CAP_PERFMON");
  m.Str("; the trace infers scheduling from the interposed calls");
  sys::Log(m.c_str());
}

// --- Final flush and encode ----------------------------------------------------

// Records in r's open chunk that are events of the trace (not its start,
// clock syncs, names or stack definitions). The owner may still be adding
// records: counted up to the size it last published.
uint64_t CountEvents(ThreadRec* r) {
  const log::SlotHeader* h = r->s.hdr();
  const uint32_t size = __atomic_load_n(&h->chunk.size, __ATOMIC_ACQUIRE);
  if (size > g.slot_bytes - log::kSlotHeaderBytes) return 0;
  const uint8_t* p = r->s.window + log::kSlotHeaderBytes;
  const uint8_t* end = p + size;
  Tick raw = h->chunk.base_ticks;
  uint64_t n = 0;
  while (p < end) {
    log::RawRecord rec;
    size_t used;
    if (log::DecodeRecord(p, end, &raw, &rec, &used) != log::Decode::kOk) break;
    switch (rec.type) {
      case log::kThreadStart: case log::kClockSync: case log::kThreadName: case log::kStackDef:
        break;
      default:
        ++n;
    }
    p += used;
  }
  return n;
}

// Reads /proc/self/task/TID/<what> into buf (NUL-terminated); its length.
size_t ReadTaskFile(uint32_t tid, const char* what, char* buf, size_t cap) {
  char path[64];
  sys::Line(path, sizeof path).Str("/proc/self/task/").U64(tid).Char('/').Str(what);
  const long fd = sys::OpenAt(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  const long n = sys::Read(static_cast<int>(fd), buf, cap - 1);
  sys::Close(static_cast<int>(fd));
  const size_t len = n > 0 ? static_cast<size_t>(n) : 0;
  buf[len] = '\0';
  return len;
}

// Problem: a fork that does not exec (a server's worker: postgres's
// backends, nginx's and gunicorn's workers, chromium's renderers forked
// from its zygote) runs its parent's image with its parent's arguments,
// and its log had no process record: the run's index listed it with no
// command at all. Most such workers say what they are by rewriting their
// command line (setproctitle: "postgres: checkpointer", "chromium
// --type=renderer ..."), which /proc shows. At the end of its log it is
// read (raw system calls: async-signal-safe) and recorded; the last process
// record of a log is the one the index uses. The parent's arguments (the
// copy made before its main) stand in where it cannot be read. With the
// process stream's lock held.
// The process's command line as /proc shows it now, its arguments in
// *args (static storage: one caller at a time); how many (0: unreadable).
int ForkCommand(char*** args_out) {
  GT_LARGE_BSS static char bytes[log::ChunkWriter::kMaxArgvBytes + 1];
  static char* args[internal::kMaxArgs + 1];
  // The process's command line, as the task of its first thread shows it.
  const size_t n = ReadTaskFile(static_cast<uint32_t>(g.pid), "cmdline", bytes, sizeof bytes);
  // NUL-separated; a rewritten title may end in NULs (padding): those make
  // no arguments.
  int argc = 0;
  for (size_t i = 0; i < n && static_cast<size_t>(argc) < internal::kMaxArgs; ++i) {
    if (bytes[i] != '\0' && (i == 0 || bytes[i - 1] == '\0')) args[argc++] = bytes + i;
  }
  args[argc] = nullptr;
  *args_out = args;
  return argc;
}

void RecordForkCommand() {
  char** args;
  const int argc = ForkCommand(&args);
  if (argc > 0)
    internal::WriteProcessInfoLocked(argc, args);
  else if (g.argv != nullptr)
    internal::WriteProcessInfoLocked(g.argc, g.argv);
}

// Thread tid's kernel name (/proc/self/task/TID/comm, which
// pthread_setname_np and prctl(PR_SET_NAME) set) into name[16+1]; its length
// (0: unknown). Raw system calls only (async-signal-safe).
size_t ReadTaskComm(uint32_t tid, char* name, size_t cap) {
  size_t len = ReadTaskFile(tid, "comm", name, cap);
  while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == '\0')) name[--len] = '\0';
  return len;
}

// The kernel name of live thread `tid` as a kThreadName record in the
// process stream: threads still running at the end never reach their own
// end-of-thread record, and the encoder names unnamed (stripped) start
// routines after it. Async-signal-safe.
void RecordThreadComm(uint32_t tid, uint32_t serial, const char* ended_as = nullptr) {
  char name[17] = {0};
  // The calling thread's own name: prctl, one system call instead of a
  // path walk in /proc and three (issue 18: every process's main thread).
  size_t len = 0;
  if (ended_as != nullptr) {
    std::memcpy(name, ended_as, 16);
    len = sys::StrLen(name);
  } else if (t_state.rec != nullptr && t_state.rec->s.tid == tid) {
    if (sys::Syscall6(SYS_prctl, PR_GET_NAME, reinterpret_cast<long>(name)) == 0)
      len = sys::StrLen(name);
  } else {
    len = ReadTaskComm(tid, name, sizeof name);
  }
  if (len == 0) return;
  ProcReserve(log::ChunkWriter::VarRecordBound(kMaxVarintBytes + 1 + 16), true);
  ProcWriter().ThreadName(sys::Ticks(), 0, serial, std::string_view(name, len));
  ProcCommit();
}

// Ends the log: every thread wrote its records into its slot already
// (threads may still be running and add more, which the encoder reads only
// up to the end record's time). What is left is the stack of threads blocked
// in a system call (published without one: it is unwound here, from the
// interposer's frame), the module list, the end record and the file's size.
// Async-signal-safe when `in_signal_handler`: raw system calls, no locks
// waited for, no allocation. Returns whether the log holds more than the
// threads' start records and, if `spare_heap_sample`, one heap sample (a
// fork child on its way to exec holds its start and the heap it inherited,
// sampled at the exec: not worth a trace of its own).
// The stack of thread r, blocked in a system call whose interposer's frame
// is `frame`: its frames above ours are at rest; walk them within its stack
// bounds (a thread that wakes meanwhile can only make the walk stop early or
// read stale words, never fault). The built-in unwinder (libunwind walks
// only the calling thread), with no rebuild of the code map:
// async-signal-safe. False if nothing of the program's was found.
// A parked thread's walk (UnwindParked, UnwindKernelParked) without our own
// frames, and its epoch: pcs[0, *k). False if nothing is left.
bool OwnFramesOut(const unwind::WalkResult& wr, uint64_t* pcs, size_t* k, uint32_t* epoch) {
  size_t n = 0;
  for (size_t j = 0; j < wr.n; ++j)
    if (!OwnPc(pcs[j])) pcs[n++] = pcs[j];
  *k = n;
  *epoch = g.epoch.load(std::memory_order_relaxed) | (wr.truncated() ? log::kStackTruncated : 0);
  return n > 0;
}

bool UnwindParked(ThreadRec* r, const void* frame, uint64_t* pcs, size_t* k, uint32_t* epoch) {
  const auto fa = reinterpret_cast<uintptr_t>(frame);
  if (fa < r->stack_lo || fa >= r->stack_hi) return false;
  const unwind::FpBounds b{fa, r->stack_hi};
  unwind::Regs regs;
  if (!unwind::RegsFromFrame(frame, b, &regs)) return false;
  const unwind::WalkResult wr =
      unwind::Walk(unwind::ProcessUnwind(),
                   g.config.unwind == UnwindMode::kFp ? unwind::WalkMode::kFp : unwind::WalkMode::kAuto,
                   regs, b, pcs, g.config.depth);
  return OwnFramesOut(wr, pcs, k, epoch);
}

bool FlushEverything(bool in_signal_handler, bool spare_heap_sample = false) {
  // Let threads taking a new slot finish (bounded: an mmap).
  for (int i = 0; i < 20000 && g.writers.load(std::memory_order_seq_cst) != 0; ++i)
    sys::Syscall6(SYS_sched_yield);
  uint64_t events = 0, threads = 0;
  ProcLock lock{ProcLock::Try{}};
  // Not in a handler: the holder is another thread, finishing soon; wait
  // for it, and hold the lock for the whole final flush.
  std::optional<ProcLock> waited;
  if (!lock.held() && !in_signal_handler) waited.emplace();
  const bool proc = lock.held() || waited.has_value();
  const uint32_t used = PoolUsed();
  for (uint32_t i = 0; i < used; ++i) {
    ThreadRec* r = PoolSlot(i);
    if (r->in_use.load(std::memory_order_acquire) == 0 || r->s.log_gen != g.log_gen) continue;
    ++threads;
    events += CountEvents(r);
    // Its CPU time so far: the running total the trace reports, exact
    // whatever the timeline (a system call, async-signal-safe).
    if (proc) {
      const uint64_t ns = ThreadCpuNs(r->s.tid);
      if (ns != 0) {
        ProcReserve(log::ChunkWriter::VarRecordBound(2 * kMaxVarintBytes), true);
        ProcWriter().ThreadCpu(sys::Ticks(), 0, r->s.serial, ns);
        ProcCommit();
      }
      RecordThreadComm(r->s.tid, r->s.serial,
                       r->exit_named.load(std::memory_order_acquire) ? r->exit_name : nullptr);
    }
    log::SlotHeader* h = r->s.hdr();
    const uint32_t kind = __atomic_load_n(&h->wait_kind, __ATOMIC_ACQUIRE);
    // A wait still open (another thread's, or this one's if a signal
    // handler ends the process from inside it: PostgreSQL's children
    // SIGQUIT'd in epoll_wait) is one: the reader makes it an open wait,
    // which makes the process worth a trace (log_summary.cc), as the run
    // learns.
    if (kind != 0) {
      ++events;
      ProveWorthy();
    }
    const void* frame = r->wait_frame;
    if (kind == 0 || h->wait_stack != 0 || frame == nullptr || !proc ||
        g.config.unwind == UnwindMode::kNone) {
      continue;
    }
    const Tick t0 = h->wait_t0;
    uint64_t pcs[log::kMaxStackDepth];
    size_t k = 0;
    uint32_t epoch = 0;
    if (!UnwindParked(r, frame, pcs, &k, &epoch)) continue;
    bool fresh = false;
    const uint32_t stack = InternStack(pcs, k, epoch, &fresh);
    if (stack == 0) continue;
    if (fresh) {
      ProcReserve(log::ChunkWriter::StackDefBound(k), true);
      ProcWriter().StackDef(t0, 0, stack, epoch, pcs, k);
      ProcCommit();
    }
    if (__atomic_load_n(&h->wait_kind, __ATOMIC_ACQUIRE) == kind && h->wait_t0 == t0)
      __atomic_store_n(&h->wait_stack, stack, __ATOMIC_RELEASE);
  }
  // Threads of a trace window that recorded nothing in it (their stand-in
  // stream is all they have): their CPU time too.
  for (uint32_t i = 0, n = proc ? StandInCount() : 0; i < n; ++i) {
    uint32_t tid, serial;
    StandInAt(i, &tid, &serial);
    const ThreadRec* r = FindRecordOf(tid);
    if (r != nullptr && r->s.log_gen == g.log_gen) continue;  // counted above
    const uint64_t ns = ThreadCpuNs(tid);
    if (ns == 0) continue;
    ProcReserve(log::ChunkWriter::VarRecordBound(2 * kMaxVarintBytes), true);
    ProcWriter().ThreadCpu(sys::Ticks(), 0, serial, ns);
    ProcCommit();
  }
  kernel::Drain(true);
  if (proc && g.forked_image) RecordForkCommand();
  if (proc) {
    const uint64_t status = g.exit_status.load(std::memory_order_acquire);
    if (status != 0) {
      ProcReserve(log::kMaxFixedRecordBytes, true);
      ProcWriter().ExitStatus(sys::Ticks(), 0, status & ~kExitKnown);
      ProcCommit();
    }
  }
  if (proc) {
    if (!in_signal_handler) RescanLocked(false, false, true);  // dl_iterate_phdr is not AS-safe
    ProcReserve(128, true);
    AppendClockSync(&ProcWriter(), sys::CurrentCpu());
    ProcCommit();
    // The end record counts the chunks before it: every slot handed out,
    // but the one it is written in.
    ProcReserve(128, true);
    const Tick end = sys::Ticks();
    // (A flight recorder's punched slots, not handed out again, hold none.)
    const uint64_t slots = g.next_slot.load(std::memory_order_acquire) -
                           g.flight_free.load(std::memory_order_acquire);
    ProcWriter().TraceEnd(end, 0, g.records_dropped.load(), g.chunks_dropped.load(),
                          slots > 0 ? slots - 1 : 0);
    ProcCommit();
    ProcEnd();
  }
  WriteHeader();
  TruncateLog();
  (void)threads;
  const uint64_t spare =
      spare_heap_sample && g.heap_records.load(std::memory_order_relaxed) == 1 ? 1 : 0;
  return g.chunks_written.load(std::memory_order_relaxed) > 0 || events > spare;
}

// Whether this process may create files in the directory of `path`.
bool DirWritable(const char* path) {
  char dir[1200];
  sys::Line l(dir, sizeof dir);
  l.Str(path);
  char* slash = nullptr;
  for (char* p = dir; *p != '\0'; ++p)
    if (*p == '/') slash = p;
  if (slash == nullptr) return true;  // (relative to the working directory: the encoder says)
  *(slash == dir ? slash + 1 : slash) = '\0';
  return sys::AccessAsEffective(dir, W_OK | X_OK);
}

// Loads libgotrace_encode.so (only now) and writes the trace.
void EncodeNow(const char* out_path, bool announce, sys::Line* reply = nullptr) {
  const Tick t0 = sys::Ticks();
  char so[1200];
  sys::Line l(so, sizeof so);
  l.Str(g.self_path).Str("/libgotrace_encode.so");
  void* h = dlopen(so, RTLD_NOW | RTLD_LOCAL);  // libc's: we do not interpose dlopen
  auto fn =
      h ? reinterpret_cast<decltype(&gotrace_encode_v1)>(sys::DlsymQuiet(h, "gotrace_encode_v1"))
        : nullptr;
  if (fn == nullptr) {
    char buf[2048];
    sys::Line m(buf, sizeof buf);
    m.Str("cannot load ").Str(so).Str(" (").Str(h ? "no entry point" : dlerror());
    m.Str("); the event log is kept: gotrace encode ").Str(g.log_path).Str(" -o ").Str(out_path);
    sys::Log(m.c_str());
    if (reply != nullptr) reply->Str("error: ").Str(m.c_str());
    return;
  }
  // Problem: a server started by root that gives up its privileges (nginx's
  // and postgres's workers) and outlives its run writes its own trace, into
  // root's output directory: "cannot create: Permission denied", its log
  // left in memory (/dev/shm) for good. Such a process writes it into its
  // user's private directory instead (where `gotrace ctl` finds sockets),
  // and says where.
  char fallback[1200];
  const char* requested = out_path;
  if (!DirWritable(out_path) && InPrivateDir(out_path, fallback, sizeof fallback))
    out_path = fallback;
  GotraceEncodeRequest req{};
  req.version = kGotraceEncodeApiVersion;
  req.log_path = g.log_path;
  req.out_path = out_path;
  req.block_threshold_ns = g.config.block_threshold_ns;
  req.offline = 1;
  // Chunks that could not be written (a full disk) leave the log without
  // its end: encode what is there; the gap was reported when it happened.
  req.lenient = g.chunks_dropped.load(std::memory_order_relaxed) > 0 ||
                        g.stopped.load(std::memory_order_relaxed)
                    ? 1
                    : 0;
  GotraceEncodeResult res{};
  const int rc = fn(&req, &res);
  const uint64_t ms100 = (sys::Ticks() - t0) * 100 /
                         std::max<uint64_t>(1, sys::EstimateTicksPerSecond(g.start_ticks, g.start_ns));
  char buf[4096];
  sys::Line m(buf, sizeof buf);
  if (rc != 0) {
    m.Str("could not write the trace: ").Str(res.error).Str("; the event log is kept: ");
    m.Str(req.lenient ? "gotrace recover " : "gotrace encode ").Str(g.log_path).Str(" -o ").Str(out_path);
    sys::Log(m.c_str());
    if (reply != nullptr) reply->Str("error: ").Str(m.c_str());
    return;
  }
  if (!g.config.keep_log) sys::Unlink(g.log_path);
  if (out_path != requested) {
    char b3[2600];
    sys::Line w(b3, sizeof b3);
    w.Str("cannot write in the directory of ").Str(requested).Str(" (this process runs as user ");
    w.U64(static_cast<uint64_t>(sys::Syscall6(SYS_geteuid)))
        .Str(", without permission there); wrote ");
    w.Str(res.path).Str(" instead");
    sys::Log(w.c_str());
  }
  if (reply != nullptr) {
    reply->Str("ok: wrote ").Str(res.path).Str(" (").Grouped(res.threads);
    reply->Str(res.threads == 1 ? " thread, " : " threads, ").Grouped(res.events).Str(" events, ");
    reply->Bytes(res.bytes).Str(")");
  }
  if (g.config.quiet || !announce) return;
  // Show the path relative to the directory the program started in.
  const char* shown = res.path;
  const size_t cl = sys::StrLen(g.cwd);
  bool under = cl > 0;
  for (size_t i = 0; i < cl && under; ++i) under = res.path[i] == g.cwd[i];
  if (under && res.path[cl] == '/') shown = res.path + cl + 1;
  m.Str("wrote ").Str(shown).Str(" (").Grouped(res.threads).Str(res.threads == 1 ? " thread, " : " threads, ");
  m.Grouped(res.events).Str(" events, ").Bytes(res.bytes);
  m.Str(kernel::Active() ? "; scheduling from the kernel" : "; scheduling inferred");
  m.Str(") in ").Fixed(ms100);
  m.Str(" s; view with: go tool trace ");
  ShellWord(shown, [&m](std::string_view piece) { m.Str(piece.data(), piece.size()); });
  sys::Log(m.c_str());
  if (res.dropped_records > 0 || g.chunks_dropped.load() > 0) {
    char b2[256];
    sys::Line d(b2, sizeof b2);
    d.Str("the trace has gaps: ").Grouped(res.dropped_records).Str(" records and ");
    // Recording stopped (GOTRACE_MAX_MB, a full disk) said why in a line
    // of its own; what its threads had in flight then is this.
    d.Grouped(g.chunks_dropped.load())
        .Str(g.stopped.load(std::memory_order_relaxed)
                 ? " chunks dropped when recording stopped (why: above)"
                 : " chunks dropped (the log could not be written)");
    sys::Log(d.c_str());
  }
  if (res.kernel_loss[0] != '\0') sys::Log(res.kernel_loss);
}

struct EncodeJob {
  const char* out_path;
  bool announce;
};

void* EncodeThread(void* p) {
  t_state.depth += kTracerDepth;  // never traced
  NoteTracerThread();
  const auto* job = static_cast<const EncodeJob*>(p);
  EncodeNow(job->out_path, job->announce);
  return nullptr;
}

// The encoder (libdw, the scheduling model) needs more stack than the thread
// that happens to end the process may have: a worker with a 64 KiB stack may
// call exit(), and glibc runs exit(0) on the last thread's stack, which may
// be the flusher's. So the encode gets a thread of its own, with all signals
// blocked, unless it runs on the main thread with a normal stack limit (the
// usual exit, and most of a short process's exit cost otherwise); inline
// also if that thread cannot be made.
void EncodeInProcess(const char* out_path, bool announce) {
  if (sys::GetTid() == g.pid) {
    struct rlimit rl {};
    if (sys::Syscall6(SYS_prlimit64, 0, RLIMIT_STACK, 0, reinterpret_cast<long>(&rl)) == 0 &&
        rl.rlim_cur >= (4u << 20)) {
      EncodeNow(out_path, announce);
      return;
    }
  }
  EncodeJob job{out_path, announce};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_t t;
  bool made = pthread_attr_init(&attr) == 0;
  if (made) {
    pthread_attr_setstacksize(&attr, 16u << 20);  // reserved, touched only as used
    made = GT_REAL(pthread_create)(&t, &attr, EncodeThread, &job) == 0;
    pthread_attr_destroy(&attr);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (made) {
    GT_REAL(pthread_join)(t, nullptr);
  } else {
    EncodeNow(out_path, announce);
  }
}

namespace {
// A process still unproven that has used log::kBusyCpuNs of CPU time is
// worth a trace: its CPU samples say where the time went (a long
// sha256sum, sort or xz that never waits got no trace and no samples).
// Asked only once it has lived that long (its one thread cannot have used
// more), at most once per tick: one system call per 10 ms of its records.
GT_NOINLINE bool UsedBusyCpu() { return ProcessCpuNs() >= log::kBusyCpuNs; }
// Whether this image has used log::kBusyCpuNs: the system call only once
// it has lived that long. (Inline: a quiet command's exit runs this, and
// the rest of the text is another 64 KiB window of code, a page fault.)
GT_ALWAYS_INLINE bool Busy(uint64_t now) {
  return now - g.start_ticks >= g.busy_ticks && UsedBusyCpu();
}
GT_ALWAYS_INLINE void ProveIfBusy(uint64_t now) {
  if (GT_UNLIKELY(g.unproven.load(std::memory_order_relaxed)) && Busy(now)) Materialize();
}
}  // namespace

// Ends this image's trace. `for_exec`: the image is about to exec another.
void CrashFlush(int sig, bool in_handler = false);

void Finalize(bool for_exec) {
  if (sys::GetPid() != g.pid) return;  // a vfork child: the memory is the parent's
  if (InFaultHandler()) {
    // Ended from the program's handler for a fault: no allocation, no
    // dlopen here (see CrashHandler).
    CrashFlush(g_fault_sig.load(std::memory_order_seq_cst), /*in_handler=*/true);
    return;
  }
  // The process is ending: no point in starting the kernel's records now
  // (the heap's last sample below may be its first record after 10 ms).
  g.ending.store(true, std::memory_order_seq_cst);
  // A trace window being opened or written by the control thread: let it
  // finish (its trace is the user's), and accept no more requests.
  if (g.config.control && !for_exec) {
    AwaitWindowOp();
    ControlStop();
  }
  // The heap's last sample, while this thread may still record (_exit and
  // exec do not run the heap's own atexit handler; a second call after it
  // records nothing new). Not from a signal handler: see CrashFlush.
  // A busy process whose records since its first 20 ms (if any) came too
  // rarely to tell, or a fork child that computed without recording
  // anything (a subshell's arithmetic): its trace has its timeline,
  // without samples. A fork child's log starts now if it had none, and
  // its CPU time is a record of its own (with GOTRACE_SCHED=kernel its log
  // began at the fork, and the kernel's samples alone were no event: the
  // log was removed as empty, and the process was missing from the index).
  if (!for_exec && t_state.depth == 0 && g.forked_image && Busy(sys::Ticks())) {
    if (g.fork_log_pending.load(std::memory_order_acquire)) (void)StartForkChildLog();
    if (t_state.rec != nullptr && t_state.bound == g.bind.load(std::memory_order_acquire) &&
        g.phase.load(std::memory_order_acquire) == Phase::kReady) {
      TracerScope tracer;
      RecordCpuTime(t_state.rec, sys::Ticks(), sys::CurrentCpu());
    }
  }
  if (t_state.depth == 0 && g.phase.load(std::memory_order_acquire) == Phase::kReady) {
    FinishHeap();
    ProveIfBusy(sys::Ticks());
  }
  // Already ended (the destructor after the atexit handler), or a fork
  // child that recorded nothing: nothing to wait for, and no signal mask to
  // set and restore.
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady) {
    Unbind();
    if (!for_exec && g.phase.load(std::memory_order_acquire) == Phase::kPaused) {
      TracerScope tracer;
      ErrnoGuard errno_guard;
      PausedEnd(g.exit_status.load(std::memory_order_acquire));
    } else if (!for_exec && g.fork_log_pending.load(std::memory_order_acquire)) {
      TracerScope tracer;
      ErrnoGuard errno_guard;
      PendingForkEnd(g.exit_status.load(std::memory_order_acquire));
    }
    return;
  }
  // Before the phase moves: from then on a termination signal's own flush
  // stands aside, so it must wait for this one instead.
  DeferTermSignals defer;
  Unbind();
  Phase expected = Phase::kReady;
  if (!g.phase.compare_exchange_strong(expected, Phase::kShutdown, std::memory_order_seq_cst))
    return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  if (for_exec) SetExitStatus(log::kExitExec);
  if (g.staged.load(std::memory_order_acquire)) {
    QuietEnd();  // nothing worth a trace: no log was ever made
    return;
  }
  const bool events = FlushEverything(false, for_exec || g.forked_image);
  // A log made only to be safe from a kill (a pipe read that could wait),
  // with nothing worth a trace in it: the launcher lists it as quiet, and
  // the run learns it as it would a staged quiet end.
  if (g.unproven.load(std::memory_order_relaxed))
    LearnQuietEnd(g.exit_status.load(std::memory_order_acquire), false);
  // A fork on its way to exec (or a failed exec's _exit): nothing of its
  // own. Under a launcher that encodes later (GOTRACE_DEFER) any other
  // process's log stays, also a quiet one: the run's index lists it. A
  // trace window's stays whatever it holds: a user opened it (idle
  // prefork workers, blocked in accept all along, ended theirs here).
  if (!events && (for_exec || g.descendant) && !(g.config.defer && !g.forked_image) &&
      g.window == 0) {
    // A fork child that ends here (not by an exec) is one of the run's
    // processes all the same: listed as a quiet one, as if its log had
    // never begun (PendingForkEnd).
    if (!for_exec && g.forked_image && g.config.defer)
      QuietEntry(g.exit_status.load(std::memory_order_acquire));
    sys::Unlink(g.log_path);
    return;
  }
  char out[1100];
  if (for_exec) {
    if (!TracePath(true, out, sizeof out)) return;
  } else {
    sys::Line(out, sizeof out).Str(g.out_path);
  }
  if (g.config.defer) {
    // The launcher encodes every log of the run once the program is gone
    // (with one symbol cache, on every CPU): the log is all this process
    // writes. It carries its trace's name: OUT.gtlog.
    if (for_exec) {
      char log[1200];
      LogNameFor(out, 0, log, sizeof log);
      if (sys::Syscall6(SYS_renameat2, -100, reinterpret_cast<long>(g.log_path), -100,
                        reinterpret_cast<long>(log), RENAME_NOREPLACE) == 0) {
        sys::Line(g.log_path, sizeof g.log_path).Str(log);
      }
    }
    // While the launcher's marker exists it will read this log. Once it is
    // gone (a background job that outlived the run), the process writes
    // its own trace, after claiming its log: whoever renames it first (the
    // launcher's last look, or this) encodes it.
    if (RunAlive()) return;
    char mine[1200];
    sys::Line(mine, sizeof mine).Str(g.log_path).Str(".self");
    if (sys::Syscall6(SYS_renameat2, -100, reinterpret_cast<long>(g.log_path), -100,
                      reinterpret_cast<long>(mine), RENAME_NOREPLACE) != 0) {
      return;
    }
    sys::Line(g.log_path, sizeof g.log_path).Str(mine);
  }
  RaiseFdLimit fds;
  // Only the root's last image speaks; tracewrap lists the others.
  EncodeInProcess(out, !g.descendant && !for_exec);
  // A process that outlived its launcher's run took its log from the run's
  // log directory: the last one out removes it (it fails while not empty),
  // and the run's directory above it (/dev/shm/tracewrap.*, which the
  // launcher could not remove then) with the launcher file it left for the
  // next run's sweep (encoder/run.cc; a sweep under way has renamed it, and
  // removes the directory itself): neither stays behind in memory.
  if (g.config.defer && g.config.log_dir[0] != '\0' &&
      sys::Syscall6(SYS_rmdir, reinterpret_cast<long>(g.config.log_dir)) == 0) {
    char run[sizeof g.config.log_dir + 16];
    sys::Line(run, sizeof run).Str(g.config.log_dir);
    char* slash = nullptr;
    for (char* p = run; *p != '\0'; ++p)
      if (*p == '/') slash = p;
    if (slash != nullptr && slash != run) {
      sys::Line(slash, sizeof run - static_cast<size_t>(slash - run))
          .Char('/')
          .Str(log::kLauncherFile);
      sys::Unlink(run);
      *slash = '\0';
      sys::Syscall6(SYS_rmdir, reinterpret_cast<long>(run));
    }
  }
}

// --- Trace windows (issue 16) ----------------------------------------------------
// A service traced for days records only while asked to: GOTRACE_START=paused
// starts it without a log, and the control channel (preload/control.cc) opens
// and closes windows. A window is a log of its own, written as OUT.w<n> when
// it closes (or at exit, or by the launcher under tracewrap). Threads move to
// the new log lazily (their next hook, or the end of the wait they were in:
// MoveToCurrentLog); every thread alive at the window's start gets a stand-in
// stream first, so that one that records nothing in the window (blocked all
// along, computing, or started while paused) is in its trace too, blocked
// where it was.

// Problem: a thread blocked in the kernel when a window begins, in a wait
// no hook of ours recorded (the service was paused: every wait began
// unrecorded), had no stack in the window: its block read "(no stack)".
// The kernel says where it entered the system call (/proc's syscall file:
// its stack pointer and PC), and its stack is ours to read: a copy of its
// top (process_vm_readv on ourselves: a page that is gone reads short, it
// does not fault) is walked by its unwind tables. Without its frame
// pointer (not in that file) the walk stops at the first frame that needs
// it, marked truncated. As UnwindParked: pcs[0, *k) and its epoch.
GT_LARGE_BSS uint8_t g_parked_copy[32 << 10];  // one window's start at a time (WindowOp)
bool UnwindKernelParked(const char* syscall_line, uint64_t* pcs, size_t* k, uint32_t* epoch) {
  if (g.config.unwind == UnwindMode::kNone || g.config.unwind == UnwindMode::kFp ||
      !unwind::CfiSupported())
    return false;
  // "nr a1 a2 a3 a4 a5 a6 sp pc": the last two of nine fields.
  const char* f[9] = {};
  size_t n = 0;
  for (const char* p = syscall_line; *p != '\0' && *p != '\n' && n < 9;) {
    while (*p == ' ') ++p;
    if (*p == '\0' || *p == '\n') break;
    f[n++] = p;
    while (*p != ' ' && *p != '\0' && *p != '\n') ++p;
  }
  if (n != 9) return false;
  auto hex = [](const char* p, uintptr_t* out) {
    if (p[0] != '0' || p[1] != 'x') return false;
    uintptr_t v = 0;
    size_t d = 0;
    for (p += 2; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); ++p, ++d)
      v = v * 16 + static_cast<uintptr_t>(*p <= '9' ? *p - '0' : *p - 'a' + 10);
    *out = v;
    return d > 0 && d <= 16;
  };
  unwind::Regs regs;
  if (!hex(f[7], &regs.sp) || !hex(f[8], &regs.pc) || regs.sp == 0 || regs.pc == 0) return false;
  regs.fp_valid = false;
  struct iovec local = {g_parked_copy, sizeof g_parked_copy};
  struct iovec remote = {reinterpret_cast<void*>(regs.sp), sizeof g_parked_copy};
  const long got =
      sys::Syscall6(SYS_process_vm_readv, sys::GetPid(), reinterpret_cast<long>(&local), 1,
                    reinterpret_cast<long>(&remote), 1, 0);
  if (got < 64) return false;
  const unwind::FpBounds b{regs.sp, regs.sp + static_cast<uintptr_t>(got) / 8 * 8, g_parked_copy};
  const unwind::WalkResult wr =
      unwind::Walk(unwind::ProcessUnwind(), unwind::WalkMode::kAuto, regs, b, pcs, g.config.depth);
  return OwnFramesOut(wr, pcs, k, epoch);
}

// A stand-in's wait stack from a parked thread's walk: its id, and its PCs
// for the stand-in to define where this log lacks it.
void ParkedStack(StandInThread* t, uint64_t* pcs, size_t k, uint32_t epoch) {
  bool fresh = false;
  t->wait_stack = InternStack(pcs, k, epoch, &fresh);
  if (fresh) {
    t->stack_pcs = pcs;
    t->stack_n = k;
    t->stack_epoch = epoch;
  }
}

// What a thread with no wait of ours published is blocked in, as the kernel
// says (its state and current system call, and where it made it): none if
// it is running.
void KernelWaitOf(uint32_t tid, StandInThread* t, uint64_t* pcs) {
  char stat[512];
  if (ReadTaskFile(tid, "stat", stat, sizeof stat) == 0) return;
  const char* p = stat;
  for (const char* q = stat; *q != '\0'; ++q)
    if (*q == ')') p = q;  // the name may hold anything but ends at the last ')'
  if (p[0] != ')' || p[1] != ' ' || (p[2] != 'S' && p[2] != 'D')) return;
  char sc[256];
  uint64_t nr = ~uint64_t{0};
  if (ReadTaskFile(tid, "syscall", sc, sizeof sc) > 0 && sc[0] >= '0' && sc[0] <= '9') {
    nr = 0;
    for (size_t i = 0; sc[i] >= '0' && sc[i] <= '9'; ++i)
      nr = nr * 10 + static_cast<uint64_t>(sc[i] - '0');
  }
  WaitKind kind = WaitKind::kSyscall;
  switch (nr) {
    case SYS_futex: kind = WaitKind::kFutex; break;
    case SYS_nanosleep: case SYS_clock_nanosleep: kind = WaitKind::kSleep; break;
    case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_epoll_wait:
    case SYS_epoll_pwait: case SYS_epoll_pwait2: case SYS_accept: case SYS_accept4:
    case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg: case SYS_connect:
      kind = WaitKind::kNet;
      break;
    default: break;
  }
  t->wait_kind = static_cast<uint32_t>(kind);
  t->wait_aux = nr == ~uint64_t{0} ? 0 : nr;
  size_t k = 0;
  uint32_t epoch = 0;
  if (nr != ~uint64_t{0} && UnwindKernelParked(sc, pcs, &k, &epoch)) ParkedStack(t, pcs, k, epoch);
}

// Every thread alive now (but the tracer's own) gets its stand-in stream in
// the new log. Runs before threads can record into it (StartLog).
void WriteStandIns() {
  StandInsReset();
  // The parked threads' walks need the unwinder's map of the code, which
  // the log's start makes after the stand-ins: in a paused process's first
  // window it did not exist yet.
  if (g.config.unwind != UnwindMode::kNone) {
    ProcLock lock;
    unwind::ProcessCode().Update(false);
  }
  const Tick now = sys::Ticks();
  const uint32_t cpu = sys::CurrentCpu();
  const long dir = sys::OpenAt(AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return;
  uint64_t pcs[log::kMaxStackDepth];
  sys::ForEachDirEntry(dir, [&](const char* name) {
    uint64_t v;
    if (!sys::ParseU64(name, &v)) return;
    const auto tid = static_cast<uint32_t>(v);
    StandInThread t;
    t.name_len = ReadTaskComm(tid, t.name, sizeof t.name);
    if (tid == ControlTid() || (t.name_len >= 8 && std::memcmp(t.name, "gotrace-", 8) == 0))
      return;  // ours
    t.tid = tid;
    t.cpu = cpu;
    t.ts = now;
    const bool main_thread = static_cast<int>(tid) == g.pid;
    t.flags = main_thread ? log::kThreadMain : 0;
    t.start_pc = main_thread ? g.main_pc.load(std::memory_order_relaxed) : 0;
    ThreadRec* r = FindRecordOf(tid);
    if (r != nullptr) {
      if (r->start_pc != 0) t.start_pc = r->start_pc;
      t.self = r->self;
      t.flags = r->thread_flags;
      const log::SlotHeader* h = r->s.hdr();
      t.wait_kind = __atomic_load_n(&h->wait_kind, __ATOMIC_ACQUIRE);
      if (t.wait_kind != 0) {
        t.wait_obj = h->wait_obj;
        t.wait_aux = h->wait_aux;
        t.wait_flags = h->wait_flags;
        const uint32_t stack = static_cast<uint32_t>(h->wait_stack);
        const uint64_t* def = nullptr;
        size_t k = 0;
        uint32_t epoch = 0;
        if (stack != 0) {
          if (RedefineStack(stack, g.log_gen, &def, &k, &epoch)) {
            t.stack_pcs = def;
            t.stack_n = k;
            t.stack_epoch = epoch;
          }
          t.wait_stack = stack;
        } else if (r->wait_frame != nullptr && g.config.unwind != UnwindMode::kNone &&
                   UnwindParked(r, r->wait_frame, pcs, &k, &epoch)) {
          // Blocked in a system call (its stack is taken as it returns).
          ParkedStack(&t, pcs, k, epoch);
        }
      }
    }
    if (t.wait_kind == 0) KernelWaitOf(tid, &t, pcs);
    if (!WriteStandIn(t)) return;
    // Its CPU time so far: the window shows what it used within it.
    const uint64_t ns = ThreadCpuNs(tid);
    if (ns != 0) {
      ProcLock lock;
      ProcReserve(log::ChunkWriter::VarRecordBound(2 * kMaxVarintBytes), false);
      ProcWriter().ThreadCpu(now, 0, StandInSerial(tid), ns, /*base=*/true);
      ProcCommit();
    }
  });
  sys::Close(static_cast<int>(dir));
}

// Where the window's scheduling comes from: the kernel's records if they
// run (what they hold from before the window is dropped), else inferred.
void NoteWindowSched() {
  if (kernel::Active()) {
    kernel::Discard();
    ProcLock lock;
    ProcReserve(log::ChunkWriter::VarRecordBound(log::ChunkWriter::SchedInfoBound(0)), false);
    ProcWriter().SchedInfo(sys::Ticks(), 0, log::kSchedKernel, g.config.cpu_hz, std::string_view());
    ProcCommit();
  } else if (!g.kernel_tried.load()) {
    NoteKernelSchedLater();
  } else {
    static const char kWhy[] = "the kernel's records were not available when the process started";
    ProcLock lock;
    ProcReserve(log::ChunkWriter::VarRecordBound(log::ChunkWriter::SchedInfoBound(sizeof kWhy)), false);
    ProcWriter().SchedInfo(sys::Ticks(), 0, log::kSchedInfer, 0, std::string_view(kWhy, sizeof kWhy - 1));
    ProcCommit();
  }
}

std::atomic<bool> g_materializing{false};

}  // namespace

void ProveWorthy() {
  // Staged: the log is made now, and proves it (MaterializeSlow).
  if (g.staged.load(std::memory_order_acquire)) {
    (void)MaterializeSlow();
    return;
  }
  if (!g.unproven.exchange(false, std::memory_order_relaxed)) return;
  // Worth a trace: the run always traces this program (preload/learn.h).
  TracerScope tracer;
  ErrnoGuard errno_guard;
  NoteLearned(log::kLearnTrace);
}

bool MaterializeSlow(bool worthy) {
  if (!g.staged.load(std::memory_order_acquire)) {
    if (worthy) ProveWorthy();
    return true;
  }
  // Re-entered: a crash inside, whose flush then ends the process quiet.
  if (g_materializing.exchange(true, std::memory_order_acq_rel)) return false;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  // The file, then the streams' slots (their records so far). On failure
  // one line said why, and recording ends here.
  const bool ok = MakeLogFile() && MaterializeStreams();
  g.staged.store(false, std::memory_order_seq_cst);
  // Its modules (and the unwinder's code map) and stack depot, if no stack
  // walk made them.
  if (ok) {
    (void)EnsureDepot();
    EnsureModules();
    // Who it is (RecordProcessInfo left it for now). A fork's image has no
    // record of its own, as when its log starts unstaged.
    if (!g.forked_image && g.argv != nullptr) WriteProcessInfo(g.argc, g.argv, /*wait=*/false);
    if (worthy) ProveWorthy();  // (unproven since the log began staged)
  }
  if (g.log_fd < 0) {
    g.unproven.store(false, std::memory_order_relaxed);  // not traced: nothing to learn
    Unbind();
    g.phase.store(Phase::kDisabled, std::memory_order_seq_cst);
  }
  g_materializing.store(false, std::memory_order_release);
  return ok;
}

bool WindowStart(sys::Line* reply) {
  WindowOp op;
  if (g.ending.load(std::memory_order_seq_cst)) {
    reply->Str("error: the process is exiting");
    return false;
  }
  const Phase phase = g.phase.load(std::memory_order_acquire);
  if (phase != Phase::kPaused) {
    if (phase == Phase::kReady && g.window == 0)
      reply->Str("error: already recording (since the process started)");
    else if (phase == Phase::kReady)
      reply->Str("error: already recording (window ").U64(g.window).Str(")");
    else reply->Str("error: tracing is off in this process");
    return false;
  }
  TracerScope tracer;
  ErrnoGuard errno_guard;
  ++g.window;
  if (!StartLog(false, WriteStandIns)) {
    g.phase.store(Phase::kPaused, std::memory_order_release);
    reply->Str("error: cannot start the window's event log (see the program's stderr)");
    return false;
  }
  NoteWindowSched();
  (void)RecordProcessInfo();  // the window's log has its own
  MaybeStartFlusher();
  // Where its trace will be: a worker that gave up root may not write next
  // to the run's other traces, and writes into its private directory
  // (the answer to stop named that one, this one the other).
  // (EncodeNow's choice, made the same way.)
  char where[sizeof g.out_path];
  sys::Line(where, sizeof where).Str(g.out_path);
  if (!DirWritable(g.out_path)) (void)InPrivateDir(g.out_path, where, sizeof where);
  reply->Str("ok: recording window ").U64(g.window).Str(" into ").Str(where);
  return true;
}

bool WindowStop(sys::Line* reply) {
  WindowOp op;
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady || g.ending.load()) {
    reply->Str(g.phase.load() == Phase::kPaused ? "error: not recording (paused)"
                                                : "error: not recording");
    return false;
  }
  TracerScope tracer;
  ErrnoGuard errno_guard;
  // The window's last heap sample is the one before it: a window records the
  // heap's moves within it.
  Unbind();
  Phase expected = Phase::kReady;
  if (!g.phase.compare_exchange_strong(expected, Phase::kShutdown, std::memory_order_seq_cst)) {
    reply->Str("error: the process is exiting");
    return false;
  }
  FlushEverything(false);
  char out[1100];
  sys::Line(out, sizeof out).Str(g.out_path);
  {
    RaiseFdLimit fds;
    EncodeNow(out, false, reply);
  }
  sys::Close(g.log_fd);
  __atomic_store_n(&g.log_fd, -1, __ATOMIC_RELEASE);
  g.phase.store(Phase::kPaused, std::memory_order_seq_cst);
  return true;
}

void WindowStatus(sys::Line* reply) {
  const Phase phase = g.phase.load(std::memory_order_acquire);
  reply->Str("ok: pid ").U64(static_cast<uint64_t>(g.pid)).Str(", ");
  if (phase == Phase::kReady) {
    if (g.window > 0) {
      const uint64_t ms = (sys::MonotonicNs() - g.start_ns) / 1'000'000;
      reply->Str("recording window ").U64(g.window).Str(" for ").Fixed(ms / 10).Str(" s into ");
    } else {
      reply->Str("recording since the start into ");
    }
    reply->Str(g.out_path).Str(", log ");
    reply->Bytes((g.next_slot.load() - g.flight_free.load()) * g.slot_bytes);
    if (g.config.flight) {
      reply->Str("; flight recorder keeping the last ");
      if (g.config.flight_bytes != 0) reply->Bytes(g.config.flight_bytes);
      else reply->Fixed(g.config.flight_ns / 10'000'000).Str(" s");
    }
  } else if (phase == Phase::kPaused) {
    reply->Str("paused, ").U64(g.window).Str(g.window == 1 ? " window" : " windows").Str(" written");
  } else {
    reply->Str("tracing is off");
  }
}

namespace {

// --- Crashes ------------------------------------------------------------------------

// Each list as a mask of its signals, tested with an immediate: a shell's
// fork child asks for every signal it resets before each exec, and a loop
// over the lists read our read-only data, one more page fault in each
// child (issue 18).
template <size_t N>
constexpr uint64_t MaskOf(const int (&sigs)[N]) {
  uint64_t m = 0;
  for (int s : sigs) m |= uint64_t{1} << s;
  return m;
}

bool IsCrashSignal(int sig) {
  constexpr uint64_t kMask = MaskOf(kCrashSignals);
  return sig > 0 && sig < 64 && ((kMask >> sig) & 1) != 0;
}

bool IsTermSignal(int sig) {
  constexpr uint64_t kMask = MaskOf(kTermSignals);
  return sig > 0 && sig < 64 && ((kMask >> sig) & 1) != 0;
}

// Runs `gotrace encode --lenient --offline LOG -o OUT` in a new process and
// waits for it (bounded). Async-signal-safe: raw fork and execve.
bool EncodeInChild() {
  if (!g_gotrace_searched) FindGotraceBinary();
  if (g_gotrace_bin[0] == '\0') return false;
  // As the exit-time encode would: an existing name gets a suffix, and the
  // program's GOTRACE_BLOCK_US holds.
  char threshold[24];
  sys::Line(threshold, sizeof threshold).U64(g.config.block_threshold_ns / 1000);
  // It removes the log itself: a process killed while it waits (a SIGTERM,
  // then a SIGKILL) left the log beside the trace the encode went on to
  // write.
  const char* argv[] = {g_gotrace_bin, "recover",       "--offline", "--fast-symbols",
                        "--quiet",     "--remove-logs", "--unique",  "--block-threshold-us",
                        threshold,     g.log_path,      "-o",        g.out_path,
                        nullptr};
  const char* envp[] = {"GOTRACE_DISABLE=1", nullptr};
  // No exit signal: the program gets no SIGCHLD for a child it never made
  // (__WALL waits for such a child). And SIGCHLD at its default while we
  // wait: with it ignored (or SA_NOCLDWAIT) the kernel would reap the child
  // itself and take its status with it. Only used by a process about to
  // die, so the program's own children missing an automatic reap meanwhile
  // do not matter.
  struct sigaction dfl {}, old_chld {};
  dfl.sa_handler = SIG_DFL;
  GT_REAL(sigaction)(SIGCHLD, &dfl, &old_chld);
  struct RestoreChld {
    const struct sigaction* old;
    ~RestoreChld() { GT_REAL(sigaction)(SIGCHLD, old, nullptr); }
  } restore{&old_chld};
  const long pid = sys::Syscall6(SYS_clone, 0, 0, 0, 0, 0);
  if (pid < 0) return false;
  if (pid == 0) {
    // Its stderr is ours, not whatever the program has at descriptor 2 now
    // (a data file, if the program started with stderr closed).
    long to = sys::g_log_fd;
    if (to < 0) to = sys::OpenAt(-100, "/dev/null", O_WRONLY | O_CLOEXEC, 0);
    if (to >= 0 && to != 2) sys::Syscall6(SYS_dup3, to, 2, 0);
    sys::Syscall6(SYS_execve, reinterpret_cast<long>(g_gotrace_bin), reinterpret_cast<long>(argv),
                  reinterpret_cast<long>(envp));
    sys::Syscall6(SYS_exit_group, 127);
  }
  int status = 0;
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
    const long r =
        sys::Syscall6(SYS_wait4, pid, reinterpret_cast<long>(&status), WNOHANG | __WALL, 0);
    if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r < 0 && r != -EINTR) return false;
    const struct timespec ten_ms = {0, 10'000'000};
    sys::Syscall6(SYS_nanosleep, reinterpret_cast<long>(&ten_ms), 0);
  }
  sys::Syscall6(SYS_kill, pid, SIGKILL);
  sys::Syscall6(SYS_wait4, pid, 0, __WALL, 0);
  return false;
}

// Problem: two threads that fault at once both reach CrashFlush. The second
// found the flush taken and went on to the default action at once: the
// process died of its fault while the first was writing the trace (left a
// log, said nothing; 6 runs of 6 with four threads faulting together). It
// now waits for the first to finish, bounded as the encode is. Not the
// flushing thread itself (a fault inside the flush goes straight on).
// (Only while that thread lives in this process: not in a fork child that
// inherited the claim, nor after the flushing thread itself died.)
void AwaitCrashFlush(long owner) {
  const long pid = sys::GetPid();
  for (int waited_ms = 0; waited_ms < 65000 && !g_crash_done.load(std::memory_order_seq_cst) &&
                          sys::Syscall6(SYS_tgkill, pid, owner, 0) == 0;
       ++waited_ms) {
    const struct timespec one_ms = {0, 1'000'000};
    sys::Syscall6(SYS_nanosleep, reinterpret_cast<long>(&one_ms), 0);
  }
}

// `in_handler`: the program's own handler for the fault `sig` is ending the
// process (exit, _exit, exec from the handler).
void CrashFlush(int sig, bool in_handler) {
  // Once per process: a second fault (also one inside this flush) finds the
  // phase already moved and goes straight to its action.
  Unbind();
  // The first thread here flushes; another waits until it is done (claimed
  // before the phase moves: a thread that came between the two went on).
  const long me = sys::GetTid();
  long owner = 0;
  if (!g_crash_tid.compare_exchange_strong(owner, me, std::memory_order_seq_cst) && owner != me) {
    AwaitCrashFlush(owner);
    return;
  }
  struct Done {
    ~Done() { g_crash_done.store(true, std::memory_order_seq_cst); }
  } done;
  // The process is ending: its control channel goes (a service killed by
  // SIGTERM, paused or in a window, left its socket behind). Raw system
  // calls only; a window the control thread is writing is not waited for.
  if (g.config.control) ControlStop();
  Phase expected = Phase::kReady;
  if (!g.phase.compare_exchange_strong(expected, Phase::kShutdown, std::memory_order_seq_cst)) {
    // A fork child that recorded nothing, dying of the signal (or ending
    // from the program's handler for it).
    if (expected == Phase::kShutdown && g.fork_log_pending.load(std::memory_order_acquire)) {
      if (!in_handler) SetExitStatus(static_cast<uint64_t>(sig));
      PendingForkEnd(g.exit_status.load(std::memory_order_acquire));
    } else if (expected == Phase::kPaused) {
      if (!in_handler) SetExitStatus(static_cast<uint64_t>(sig));
      PausedEnd(g.exit_status.load(std::memory_order_acquire));
    }
    return;
  }
  if (!in_handler) SetExitStatus(static_cast<uint64_t>(sig));  // it dies of the signal
  if (g.staged.load(std::memory_order_acquire) && !g_materializing.load(std::memory_order_acquire)) {
    // Staged: nothing worth a trace was recorded; how it ended is said in
    // the journal, as a quiet process's log would have said it.
    QuietEnd();
    return;
  }
  TracerScope tracer;
  FlushEverything(true);
  // The launcher, still there, encodes the log and says what happened.
  if (g.config.defer && RunAlive()) return;
  char buf[1400];
  sys::Line m(buf, sizeof buf);
  const bool crash = IsCrashSignal(sig);
  m.Str(in_handler ? "the program ended in its own handler (signal "
                   : crash ? "the program crashed (signal " : "the program was ended by signal ");
  m.U64(static_cast<uint64_t>(sig));
  if (!crash) m.Str(" (").Str(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  // A taken name makes the recovery write a numbered one (--unique).
  const bool taken = sys::Syscall6(SYS_faccessat, -100, reinterpret_cast<long>(g.out_path), F_OK, 0) == 0;
  if (EncodeInChild()) {
    sys::Unlink(g.log_path);
    if (!g.config.quiet && !g.descendant) {
      m.Str("); wrote ").Str(taken ? "a numbered trace next to " : "").Str(g.out_path);
      m.Str(crash ? " from the events up to the crash" : "");
      sys::Log(m.c_str());
    }
  } else {
    m.Str("); make the trace with: gotrace recover --unique ").Str(g.log_path).Str(" -o ");
    m.Str(g.out_path);
    sys::Log(m.c_str());
  }
}

void InstallCrashHandler(int sig, const struct sigaction& app);

void CrashHandler(int sig, siginfo_t* info, void* uc) {
  struct sigaction app = AppAction(sig);
  // Sent (kill, raise, sigqueue) to a program that ignores it: nothing
  // happens untraced, so nothing here either. (A real fault with the signal
  // ignored ends the process: the kernel forces the default action.)
  if (app.sa_handler == SIG_IGN && info != nullptr && info->si_code <= 0) return;
  const int saved_errno = errno;
  const bool program_handles = app.sa_handler != SIG_DFL && app.sa_handler != SIG_IGN;
  // Only when the default action is about to end the process: a handler of
  // the program's own may recover (a guard page it unprotects, a siglongjmp
  // out of a probe), and then tracing goes on. If it ends the process it
  // does so through exit, _exit or abort, which write the trace.
  if (!program_handles) {
    CrashFlush(sig);
  } else {
    // While the program's handler runs after a fault, the process may be in
    // any state (a crash inside malloc holds its lock): if the handler ends
    // the process, the trace is written the crash way (Finalize). If it
    // jumps out instead, a later exit is told apart by its frame.
    g_fault_tid.store(sys::GetTid(), std::memory_order_seq_cst);
    g_fault_frame.store(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)),
                        std::memory_order_seq_cst);
    g_fault_sig.store(sig, std::memory_order_seq_cst);
  }
  if (app.sa_flags & SA_RESETHAND) SetAppHandlerDefault(sig);
  if (!program_handles) {
    // As untraced: the kernel's action. A fault re-executes the instruction
    // and meets the restored action; a sent signal is sent again.
    struct sigaction dfl {};
    dfl.sa_handler = app.sa_handler;
    GT_REAL(sigaction)(sig, &dfl, nullptr);
    if (info == nullptr || info->si_code <= 0 || sig == SIGABRT)
      sys::Syscall6(SYS_tgkill, sys::GetPid(), sys::GetTid(), sig);
  } else {
    if (app.sa_flags & SA_SIGINFO) {
      app.sa_sigaction(sig, info, uc);
    } else {
      app.sa_handler(sig);
    }
    g_fault_sig.store(0, std::memory_order_seq_cst);  // it returned: recovered
    // ...except from abort(): when the handler returns, glibc puts back the
    // default action itself (not through sigaction) and raises again, so
    // this is the last moment to write the trace.
    if (sig == SIGABRT) {
      CrashFlush(sig);
    }
  }
  errno = saved_errno;
}

// The kernel-level action for a crash signal: our handler, with the mask and
// flags the program chose (SA_ONSTACK matters for stack overflows).
// A signal the program ignores is ignored by the kernel, not by our
// handler: only SIG_IGN survives an exec (and a posix_spawn), so ours in its
// place would hand the next program SIG_DFL (`trap '' ABRT; exec prog`, and
// then a `kill -ABRT` killed it). The cost: a real fault, or abort(), in a
// program that ignores the signal ends it without the crash-time trace
// (its log stays, for tracewrap or `gotrace recover`).
void InstallCrashHandler(int sig, const struct sigaction& app) {
  if (app.sa_handler == SIG_IGN && (app.sa_flags & SA_SIGINFO) == 0) {
    GT_REAL(sigaction)(sig, &app, nullptr);
    return;
  }
  struct sigaction ours {};
  ours.sa_sigaction = CrashHandler;
  ours.sa_mask = app.sa_mask;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (app.sa_flags & (SA_NODEFER | SA_RESTART));
  GT_REAL(sigaction)(sig, &ours, nullptr);
}

// A termination signal the program left at SIG_DFL: write the trace, then
// die of the signal as untraced (it is blocked while we run, unless the
// program asked for SA_NODEFER, so the re-sent one is delivered on return,
// to the default action).
bool LauncherCopy(int sig, const siginfo_t* info);

void TermHandler(int sig, siginfo_t* info, void*) {
  // (After a one-shot handler of the program's: see TermRelay.)
  if (LauncherCopy(sig, info)) return;
  const int saved_errno = errno;
  AwaitExitEncoder();
  CrashFlush(sig);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  GT_REAL(sigaction)(sig, &dfl, nullptr);
  sys::Syscall6(SYS_tgkill, sys::GetPid(), sys::GetTid(), sig);
  errno = saved_errno;
}

constexpr int kSaRestorer = 0x04000000;  // the kernel's SA_RESTORER, which glibc sets
// The flags the kernel keeps (Linux 5.11+ clears the others, such as glibc's
// SA_INTERRUPT and SA_UNSUPPORTED: its UAPI_SA_FLAGS, 0x800 being
// SA_EXPOSE_TAGBITS).
constexpr int kKernelSaFlags = SA_NOCLDSTOP | SA_NOCLDWAIT | SA_SIGINFO | SA_ONSTACK | SA_RESTART |
                               SA_NODEFER | SA_RESETHAND | 0x800 | kSaRestorer;

// Whether the program's action `app` for a termination signal is the one
// we stand in for (TermHandler in its place).
bool TermDefault(const struct sigaction& app) {
  return app.sa_handler == SIG_DFL && (app.sa_flags & SA_SIGINFO) == 0;
}

int InstallTermAction(int sig, const struct sigaction& app, struct sigaction* old = nullptr);

// Problem: tracewrap passes on a signal sent to it (a supervisor's kill of
// its pid) to the program, but a signal sent to the whole process group
// (a CI runner cancelling the job, timeout(1), kill -- -PGID) reaches the
// program itself too, and then again from the launcher: a program that
// counts its SIGTERMs (a graceful stop, then a forced one at the second)
// was forced at the first. The launcher cannot tell the two kinds apart
// (both are SI_USER from the sender's pid); the program can: the run's
// first process runs its handlers for the signals the launcher passes on
// through this one, which drops the launcher's copy of a signal that
// reached the program from elsewhere within kRelayWindowNs before it, once.
// (One the program had blocked meanwhile is merged with the launcher's by
// the kernel: delivered once, as the original.) The sigaction calls report
// the program's handler as untraced.
constexpr uint64_t kRelayWindowNs = 250'000'000;

// Whether the program's own handler for `sig` goes through TermRelay: in
// the run's first process under tracewrap, for the signals it passes on.
// No system call (a shell's fork children set three signals before each
// exec): a fork child (g.descendant, set by AtForkChild where it traces the
// child) or one that is not traced may relay too, which LauncherCopy's
// look at the real pid makes a plain call of the program's handler.
bool RelayedTermSignal(int sig) {
  if (!g.config.defer || g.descendant) return false;
  if (sig == SIGINT || sig == SIGQUIT) return true;
  for (int s : log::kLauncherForwarded)
    if (s == sig) return true;
  return false;
}

// Whether this delivery of `sig` is the launcher's copy of one the program
// got itself (to be dropped); notes a delivery from elsewhere.
bool LauncherCopy(int sig, const siginfo_t* info) {
  if (!g.config.defer || sig <= 0 || sig >= kMaxSignal) return false;
  const int saved_errno = errno;
  const uint64_t now = sys::MonotonicNs();
  bool copy = false;
  if (info == nullptr || info->si_code != SI_USER || sys::GetPid() != g.root_pid ||
      info->si_pid != sys::GetPPid()) {
    g_term_direct_ns[sig] = now;
  } else if (g_term_direct_ns[sig] != 0 && now - g_term_direct_ns[sig] < kRelayWindowNs) {
    g_term_direct_ns[sig] = 0;  // the program got this one already
    copy = true;
  }
  errno = saved_errno;
  return copy;
}

void TermRelay(int sig, siginfo_t* info, void* uc) {
  if (LauncherCopy(sig, info)) return;
  const struct sigaction app = AppAction(sig);
  if (app.sa_handler == SIG_DFL || app.sa_handler == SIG_IGN) return;  // changed meanwhile
  if (app.sa_flags & SA_RESETHAND) {
    // One-shot, as the kernel makes it: the handler SIG_DFL (ours in its
    // place), the flags and mask as they were.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    const int saved_errno = errno;
    SetAppHandlerDefault(sig);
    (void)InstallTermAction(sig, dfl);
    errno = saved_errno;
  }
  // (errno as the program's handler leaves it, as untraced.)
  if (app.sa_flags & SA_SIGINFO) {
    app.sa_sigaction(sig, info, uc);
  } else {
    app.sa_handler(sig);
  }
}

// The kernel-level action for a termination signal: ours while the program
// has SIG_DFL, TermRelay for its handler where RelayedTermSignal, else
// exactly the program's. `old`: the kernel's action before (may be null).
int InstallTermAction(int sig, const struct sigaction& app, struct sigaction* old) {
  struct sigaction ours {};
  ours.sa_mask = app.sa_mask;
  if (TermDefault(app)) {
    ours.sa_sigaction = TermHandler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  } else if (app.sa_handler != SIG_IGN && app.sa_handler != SIG_DFL && RelayedTermSignal(sig)) {
    // The program's mask and flags (less SA_RESETHAND: TermRelay does it).
    ours.sa_sigaction = TermRelay;
    ours.sa_flags = SA_SIGINFO | (app.sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER));
  } else {
    return GT_REAL(sigaction)(sig, &app, old);
  }
  return GT_REAL(sigaction)(sig, &ours, old);
}

// Whether `app` is what exec leaves a signal the program never touched:
// SIG_DFL with no mask and no flags (glibc's SA_RESTORER aside).
bool PristineDefault(const struct sigaction& app) {
  if (app.sa_handler != SIG_DFL || (app.sa_flags & ~kSaRestorer) != 0) return false;
  // The kernel's part of the mask (64 signals): glibc leaves the rest of
  // sigset_t's 128 bytes as it finds them.
  uint64_t mask;
  std::memcpy(&mask, &app.sa_mask, sizeof mask);
  return mask == 0;
}

// One system call per signal, not two (issue 18: 14 signals, each a read
// then a write, were 28 of a short process's start-up calls): ours goes in
// as it would for an untouched SIG_DFL and the old action comes back from
// the same call; only a signal the program's parent left otherwise (ignored:
// nohup's SIGHUP, a shell's SIGPIPE) takes a second call to put the
// program's action back. Our signals are blocked meanwhile, so one sent in
// between waits for the action it should meet.
void InstallCrashHandlers() {
  // (Sent crash signals too: kill -ABRT.)
  const uint64_t term = KernelMask(kTermSignals) | KernelMask(kCrashSignals);
  uint64_t saved = 0;
  const bool known = SigMask(SIG_BLOCK, &term, &saved);
  for (int sig : kCrashSignals) {
    struct sigaction ours {}, old{};
    ours.sa_sigaction = CrashHandler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    if (GT_REAL(sigaction)(sig, &ours, &old) != 0) continue;
    SetAppAction(sig, old);
    if (!PristineDefault(old)) InstallCrashHandler(sig, old);
  }
  for (int sig : kTermSignals) {
    struct sigaction ours {}, old{};
    ours.sa_sigaction = TermHandler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    if (GT_REAL(sigaction)(sig, &ours, &old) != 0) continue;
    SetAppAction(sig, old);
    if (!PristineDefault(old)) InstallTermAction(sig, old);
  }
  if (known) (void)SigMask(SIG_SETMASK, &saved, nullptr);
  g_crash_handlers = true;
}

void FindGotraceBinary() {
  g_gotrace_searched = true;
  // Next to the library (the build tree) or in ../bin (an install).
  for (const char* rel : {"/gotrace", "/../bin/gotrace"}) {
    sys::Line l(g_gotrace_bin, sizeof g_gotrace_bin);
    l.Str(g.self_path).Str(rel);
    if (sys::Syscall6(SYS_faccessat, -100, reinterpret_cast<long>(g_gotrace_bin), X_OK, 0) == 0)
      return;
  }
  g_gotrace_bin[0] = '\0';
}

// --- The flusher ---------------------------------------------------------------------
// Writes snapshots of threads that have not recorded for a while (idle or
// blocked: their owners write nothing) and of the process stream, and
// refreshes the log header's clock. G13: all signals blocked, never traced,
// never joined.

// A counted thread ended (its g_live_key destructor), or will never be
// counted. The last one wakes the flusher, which then ends.
void AppThreadEnded(void*) {
  if (g.app_threads.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    g.flusher_retired.store(true, std::memory_order_release);
    // Nor may the control thread keep it alive (glibc ends the process when
    // its last thread ends, and counts ours).
    if (g.config.control) ControlStop();
    sys::Syscall6(SYS_futex, reinterpret_cast<long>(&g.app_threads), FUTEX_WAKE_PRIVATE, 1);
  }
}

// Sleeps one flush interval, or less if the program's last thread ends.
// False: it has ended (the flusher must end too).
bool FlusherNap(uint64_t interval_ns) {
  const uint64_t deadline = sys::MonotonicNs() + interval_ns;
  for (;;) {
    const int live = g.app_threads.load(std::memory_order_acquire);
    if (live <= 0 || g.flusher_retired.load(std::memory_order_acquire)) return false;
    const uint64_t now = sys::MonotonicNs();
    if (now >= deadline) return true;
    const struct timespec left = {static_cast<time_t>((deadline - now) / 1'000'000'000ull),
                                  static_cast<long>((deadline - now) % 1'000'000'000ull)};
    // Woken by the last thread's end (AppThreadEnded); returns at once if
    // the count moved meanwhile, and the loop looks again.
    sys::Syscall6(SYS_futex, reinterpret_cast<long>(&g.app_threads), FUTEX_WAIT_PRIVATE, live,
                  reinterpret_cast<long>(&left));
  }
}

void* FlusherMain(void*) {
  t_state.depth += kTracerDepth;  // never traced
  NoteTracerThread();
  const uint64_t interval_ns = g.config.flush_ms * 1'000'000ull;
  const int my_pid = g.pid;
  for (;;) {
    // When the program's threads are all gone (the main thread ended with
    // pthread_exit, then the others), this thread must not keep the process
    // alive: glibc exits the process when its last thread ends, which may
    // then be this one (the exit handlers then run here).
    if (!FlusherNap(interval_ns)) break;
    if (g.phase.load(std::memory_order_acquire) != Phase::kReady || g.pid != my_pid) break;
    kernel::Drain(false);
    if (g.config.flight) FlightTrim(true);
    WriteHeader();
  }
  g.flusher_running.store(false);
  return nullptr;
}

void StartFlusher() {
  if (g.config.flush_ms == 0 || !g_live_key_ok || g.flusher_retired.load()) return;
  if (g.flusher_running.exchange(true)) return;
  // The exit handlers may run on its stack (see FlusherMain); the encode
  // itself gets a thread of its own (EncodeInProcess).
  if (StartTracerThread(FlusherMain, 1 << 20, "gotrace-flush") != 0) g.flusher_running.store(false);
}

// --- fork, exit -----------------------------------------------------------------------

void AtExit() { Finalize(false); }

// H12/H13: the child of a fork holds copies of the parent's buffers and its
// log descriptor; it must never write them. With GOTRACE_FOLLOW (default),
// it gets a log of its own, started at its first record (StartForkChildLog);
// the flusher (a thread, lost in the fork) is restarted lazily by the first
// spill.
//
// Problem (issue 18): a shell forks for every command, and the child
// mostly execs at once, recording nothing. A log started here was created,
// sized, mapped, given the module list and the thread's start, then found
// empty at the exec and removed: about a tenth of a traced shell job's
// time. Until its first record the child's phase is kShutdown (hooks pass
// through, the heap is still counted, exit and exec finalize nothing) and
// g.fork_log_pending is set; a child that execs or exits before recording
// anything writes no file at all, as an empty one was removed before.

// Whether this thread is inside daemon(3) (another thread's fork meanwhile
// is no daemon's).
bool InDaemon() {
  const int tid = g.daemon_tid.load(std::memory_order_relaxed);
  return tid != 0 && tid == sys::GetTid();
}

// In the parent, before its first fork: the rest of the real functions.
// A lookup made in a child (its first sigaction, dup2, execve...) is lost
// with it, and cost a shell three page faults of libc's symbol tables and
// the lookups per command; made once here, every child has them.
void BeforeFork() {
  NoteMadeChild();
  if (!g.forked_once) {
    g.forked_once = true;
    TracerScope tracer;
    ErrnoGuard errno_guard;
    real::ResolveRest();
    fdclass::WipeOnFork();
  }
  // daemon(3)'s fork: AtForkParent tells from errno whether it made the
  // child. (Ours runs late among the prepare handlers, registered early;
  // one after it that sets errno only leaves the parent to end as before.)
  if (GT_UNLIKELY(InDaemon())) errno = 0;
}

// Problem: glibc's daemon(3) ends its parent with its own _exit(0), right
// after its fork, where no hook sees it: with GOTRACE_OUT alone that
// process left its event log and no trace, silently, and tracewrap took the
// log for a Go program's ("ended by a raw exit_group system call"). The
// parent ends here instead, its status 0, once the fork made the child: glibc
// runs the parent's handlers when the fork fails too (errno set; daemon then
// returns -1 and the program goes on).
void AtForkParent() {
  if (GT_LIKELY(!InDaemon()) || errno != 0) return;
  ErrnoGuard errno_guard;
  SetExitStatus(0);
  FinishProcess();
}

// A fork child's identity, a process of its own (a recording parent's
// child and a paused one's alike). Inline: in the fork path's code window.
GT_ALWAYS_INLINE void BecomeForkChild() {
  // Its parent is the process that forked it (a pending child's parent is
  // not in StartLog's getppid yet, and this one's entry may be written
  // after its parent died and it was reparented).
  g.ppid = static_cast<uint32_t>(g.pid);
  g.pid = sys::GetPid();
  // Two stores, not one of a constant the compiler keeps in our read-only
  // data for them both: its page was a fault in every fork child (issue 18).
  __atomic_store_n(&g.descendant, true, __ATOMIC_RELAXED);
  __atomic_store_n(&g.forked_image, true, __ATOMIC_RELAXED);
  g.image = 0;
  // One thread now: this one, counted whether or not it was before.
  g.app_threads.store(1, std::memory_order_relaxed);
  g.flusher_retired.store(false);
  // The process began now: its log's start, whenever the log is made.
  g.start_ns = sys::MonotonicNs();
  g.began_ns = g.start_ns;
  g.start_ticks = sys::Ticks();
}

// Problem: a fork child of a process with a control channel had none (its
// thread is the parent's), so a prefork server's workers, where its work
// is, could not be started, stopped or snapshotted, and a paused server's
// workers (and a daemon's master, forked from the process tracewrap
// started) were never traced at all. Each such child opens a channel of
// its own, <pid>.sock (a thread and a socket, about 0.1 ms), at its first
// call of ours, where a recording child starts its log (StartForkChildLog):
// not in the fork itself, where a child of a threaded parent may run only
// async-signal-safe code before its exec (a thread made there needs the
// loader's TLS lock, which another thread of the parent may have held),
// and not at all in a child that only execs (its new image opens one).
// Out of the fork path's code window: only services pay it.
GT_NOINLINE void ForkChildControl() {
  TracerScope tracer;
  (void)ControlStart();
}

// A fork child of a paused process: paused too, a process of its own (its
// windows are PATH.<pid>.wN). Its channel opens at its first call of ours
// (StartForkChildLog), its kernel records once a window records, as any
// descendant's; until then it is a pending fork child like a recording
// one's.
GT_NOINLINE void PausedForkChild() {
  TracerScope tracer;
  PoolForgetForChild(/*keep_slot=*/false);
  PoolResetIfForked();  // the parent's slots and kernel records are not ours
  BecomeForkChild();
  g.flusher_running.store(false);
  g.kernel_tried.store(false);  // (the parent's were its own)
  g.fork_log_pending.store(true, std::memory_order_release);
}

void AtForkChild() {
  // What the parent's other threads held or were doing at the fork is
  // nobody's in the child, whose only thread would wait for it (H12): the
  // tracer's locks, a trace window the control thread was writing (the
  // child's exit waited a minute for it), module reads and unloads (none
  // holds the child's dlclose back). The descriptor classes start empty
  // (fdclass::WipeOnFork).
  internal::UnlockAfterFork();
  if (g_window_busy.load(std::memory_order_relaxed))
    g_window_busy.store(false, std::memory_order_relaxed);
  unwind::ProcessCode().AfterFork();
  fdclass::AfterForkChild();
  // The child's log, when it makes one, decides for itself (StartLog).
  g.staged.store(false, std::memory_order_relaxed);
  g.ending.store(false, std::memory_order_relaxed);  // the child's life begins
  // The control channel is the parent's (its thread is not in the child):
  // the child opens its own (ForkChildControl). A child of a paused process
  // is paused too, a window's child traces its whole life into a trace of
  // its own (not a window) unless told otherwise through its channel.
  ControlAfterFork();
  if (g.window != 0) g.window = 0;
  if (g.phase.load(std::memory_order_acquire) == Phase::kPaused) {
    if (!g.config.control || !g.config.follow) {
      g.phase.store(Phase::kDisabled, std::memory_order_release);
      return;
    }
    PausedForkChild();
    return;
  }
  // A fork child that had recorded nothing yet (its log pending) forks in
  // turn: a daemon's double fork, a subshell's pipeline. The grandchild is
  // a pending fork child too, of its own pid, its parent the middle one
  // (it was lost: no trace, no entry, and its end wrote one more entry
  // under the middle process's pid).
  const Phase phase = g.phase.load(std::memory_order_acquire);
  const bool pending_parent =
      phase == Phase::kShutdown && g.fork_log_pending.load(std::memory_order_acquire);
  if (phase != Phase::kReady && !pending_parent) return;
  if (phase == Phase::kReady) {
    Unbind();
    g.phase.store(Phase::kDisabled, std::memory_order_release);
    sys::Close(g.log_fd);  // the parent's
    g.log_fd = -1;
    g.flusher_running.store(false);
  }
  // Forked by a signal handler that interrupted a recorded call (PostgreSQL
  // 15's postmaster starts its walwriter, autovacuum and startup processes
  // from its SIGCHLD and SIGUSR1 handlers while it sits in select): the
  // call's hook scope is the parent's, and at its depth every hook of the
  // child passed through all its life (listed traced, nothing recorded).
  // The child starts outside any hook. Should the handler return into
  // that hook, its end writes to the record this thread then has in the
  // child's log (the slot it had in the parent: PoolForgetForChild) or
  // finds the log moved, and its scope's end finds the depth at zero
  // (~HookScope).
  const bool in_hook = t_state.depth != 0 && !InTracer();
  if (in_hook) t_state.depth = 0;
  {
    // No ErrnoGuard: nothing below sets errno (raw system calls), and its
    // __errno_location was a page fault of libc's code in every fork child
    // of a traced shell (issue 18).
    TracerScope tracer;
    // The parent's slots are mapped here (MAP_SHARED): nothing may write to
    // them, followed or not (replaced when the child starts a log).
    PoolForgetForChild(in_hook);
    if (!g.config.follow) return;
    BecomeForkChild();
    // The thread's live key is set when the child starts its log
    // (StartForkChildLog): a child that execs or exits first never needs it,
    // and pthread_setspecific was one more page of libc's code per fork.
    g.kernel_tried.store(true);  // nothing to attach the kernel's records to yet
    g.phase.store(Phase::kShutdown, std::memory_order_release);
    g.fork_log_pending.store(true, std::memory_order_release);
  }
  // GOTRACE_SCHED=kernel: the kernel's records in every process from its
  // start (README), a fork child's too, whose log would otherwise start at
  // its first recorded call, if any (a subshell that computes, a child
  // that only writes through stdio: no samples, no timeline).
  if (GT_UNLIKELY(g.config.sched == SchedMode::kKernel)) (void)StartForkChildLog();
}

// Reads GOTRACE_ROOT_PID and GOTRACE_IMAGE ("pid:n:ppid") from the
// environment. The parent is the one the process had when it exec'd: a
// background job whose parent ended before it exec'd was listed under init
// (getppid's 1) while its parent was in the index.
void ReadLineage() {
  uint64_t v;
  const char* root = Var("ROOT_PID");
  g.root_pid = (root != nullptr && sys::ParseU64(root, &v)) ? static_cast<int>(v) : g.pid;
  g.descendant = g.root_pid != g.pid;
  g.image = 0;
  if (const char* img = Var("IMAGE")) {
    // Only an image exec'd by the same process (same pid) continues its count.
    char pid_part[24] = {0};
    size_t i = 0;
    for (; img[i] != '\0' && img[i] != ':' && i + 1 < sizeof pid_part; ++i) pid_part[i] = img[i];
    if (img[i] == ':' && sys::ParseU64(pid_part, &v) && static_cast<int>(v) == g.pid) {
      uint64_t n = 0, ppid = 0;
      const char* p = img + i + 1;
      bool ok = *p >= '0' && *p <= '9';
      while (*p >= '0' && *p <= '9') n = n * 10 + static_cast<uint64_t>(*p++ - '0');
      if (*p == ':') {
        ++p;
        while (*p >= '0' && *p <= '9') ppid = ppid * 10 + static_cast<uint64_t>(*p++ - '0');
      }
      if (ok && *p == '\0') {
        g.image = static_cast<uint32_t>(n);
        g.ppid = static_cast<uint32_t>(ppid);
      }
    }
  }
}

// The CPUs the kernel may ever bring online: sysconf(_SC_NPROCESSORS_CONF)'s
// answer, read as glibc does (/sys/devices/system/cpu/possible: "0-3,8-11")
// with raw system calls. Problem (issue 18): sysconf and its number parsing
// were three page faults of libc's code in every process; this is none.
// glibc's own answer if the file cannot be read or parsed.
uint32_t ConfiguredCpus() {
  // Passed down by the launcher or a traced parent (ExecEnvironment): the
  // file below costs a new process 10 to 15 us (sysfs).
  uint64_t passed;
  if (const char* v = Var("NCPUS"); v != nullptr && sys::ParseU64(v, &passed) && passed > 0 &&
                                    passed <= (1u << 20)) {
    return static_cast<uint32_t>(passed);
  }
  char buf[256];
  long n = -1;
  const long fd = sys::OpenAt(-100, "/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC, 0);
  if (fd >= 0) {
    n = sys::Read(static_cast<int>(fd), buf, sizeof buf - 1);
    sys::Close(static_cast<int>(fd));
  }
  uint64_t count = 0;
  bool ok = n > 0;
  if (ok) {
    buf[n] = '\0';
    // Ranges "a-b" or single CPUs "a", separated by commas.
    for (const char* p = buf; ok && *p != '\0' && *p != '\n';) {
      uint64_t a = 0, b = 0;
      if (*p < '0' || *p > '9') ok = false;
      while (*p >= '0' && *p <= '9') a = a * 10 + static_cast<uint64_t>(*p++ - '0');
      b = a;
      if (ok && *p == '-') {
        ++p;
        if (*p < '0' || *p > '9') ok = false;
        b = 0;
        while (*p >= '0' && *p <= '9') b = b * 10 + static_cast<uint64_t>(*p++ - '0');
      }
      if (b < a || b > 1u << 20) ok = false;
      if (ok) count += b - a + 1;
      if (*p == ',') ++p;
      else if (*p != '\0' && *p != '\n') ok = false;
    }
  }
  if (ok && count > 0) return static_cast<uint32_t>(count);
  const long nconf = sysconf(_SC_NPROCESSORS_CONF);
  return nconf > 0 ? static_cast<uint32_t>(nconf) : 1;
}

// What DT_FINI names (CMakeLists.txt: -Wl,-fini): nothing to do, as crti's
// _fini has nothing, but placed with the code a quiet process runs
// (fork_path.ld) where _fini sits after all of the text: running it at exit
// was one more 64 KiB window of code, one more page fault (issue 18).
extern "C" __attribute__((visibility("hidden"), used, noinline)) void gotrace_fini() {
  asm volatile("");
}

// glibc calls a library's constructors with main's arguments and
// environment.
__attribute__((constructor(101))) void Init(int argc, char** argv, char**) {
  if (g.phase.load() != Phase::kUninit) return;
  TracerScope tracer;
  // Keep our own handle on stderr, high and close-on-exec (H27). A program
  // started with stderr closed (`2>&-`) gets no lines from us at all: the
  // next file it opens becomes descriptor 2 and must not receive them.
  const long err = sys::Fcntl(2, F_DUPFD_CLOEXEC, 513);
  if (err >= 0) {
    sys::g_log_fd = static_cast<int>(err);
  } else if (err == -EBADF) {
    sys::g_log_fd = -1;
  }  // else (a descriptor limit under 514): stderr itself
  ReadConfig(&g.config);
  // Before any way out of here (disabled, or tracing off for want of
  // something): the interposers pass through to functions looked up at
  // their first call whatever happens, and one a fork child calls first
  // (its _exit, an execve) was looked up in every child and lost with it,
  // its symbol tables read in anew (a fork loop ran 1.20x with the library
  // disabled against 1.08x with an empty one). BeforeFork looks them up once.
  pthread_atfork(BeforeFork, nullptr, nullptr);
  if (!g.config.enabled) {
    g.phase.store(Phase::kDisabled);
    return;
  }
  sys::InitClock();
  g.pid = sys::GetPid();
  ReadLineage();
  // Only once tracing is on, and not in a process that starts staged (it
  // touches a fraction of them, and most such processes end quiet).
  if (!StagingAllowed()) {
    PopulateSmallGlobals();
    PopulateOwnCode();
  }
  g.ncpus = ConfiguredCpus();
  if (sys::Getcwd(g.cwd, sizeof g.cwd) < 0) g.cwd[0] = '\0';
  const char* missing = nullptr;
  if (!real::ResolveAll(&missing)) {
    char buf[256];
    sys::Line l(buf, sizeof buf);
    l.Str("the C library lacks ").Str(missing);
    Disable(buf);
    return;
  }
  // ThreadSanitizer intercepts memcpy and memset, also ours, and cannot see
  // the atomics our slots are handed over with: it reported races in the
  // tracer's memory and the program exited 66 instead of 0.
  if (sys::TsanLoaded()) {
    Disable("the program is built with ThreadSanitizer, which would report the tracer's own "
            "memory as races");
    return;
  }
  FindSelf();
  DepotInit();
  if (!PoolInit(g.config.buffer_kb)) {
    Disable("cannot reserve memory for the tracer");
    return;
  }
  if (!KeyCreate()) {
    Disable("cannot create a thread-specific key");
    return;
  }
  if (g.config.unwind == UnwindMode::kLibunwind) {
    // dlopen, its mallocs and libunwind's first walk: inside TracerScope,
    // before any thread records (unwind/libunwind_unwind.h).
    const char* why = nullptr;
    if (!unwind::LibunwindInit(&why)) {
      char buf[256];
      sys::Line l(buf, sizeof buf);
      l.Str("GOTRACE_UNWIND=libunwind: ").Str(why).Str("; using GOTRACE_UNWIND=auto");
      sys::Log(l.c_str());
      g.config.unwind = UnwindMode::kAuto;
    }
  }
  // Without this key the flusher could not tell when the program's threads
  // are gone; it is then not started (crash recovery loses its snapshots).
  g_live_key_ok = pthread_key_create(&g_live_key, AppThreadEnded) == 0;
  if (g_live_key_ok) pthread_setspecific(g_live_key, reinterpret_cast<void*>(1));
  if (g.config.start_paused) {
    // Issue 16: no log until the control channel opens a window.
    g.start_ns = sys::MonotonicNs();
    g.start_ticks = sys::Ticks();
    g.began_ns = g.start_ns;
    g.phase.store(Phase::kPaused, std::memory_order_seq_cst);
    // The kernel's records as a process that records from its start opens
    // them: on this thread, before any other exists, so that every thread
    // inherits them. Opened by the first window's start, they were the
    // control thread's alone (pid 0 is the calling thread): the program's
    // threads had no timeline and no CPU samples in any window. (A window
    // drops what they recorded before it: Discard.)
    NoteKernelSchedLater();
  } else if (!StartLog()) {
    g.phase.store(Phase::kDisabled);
    return;
  } else {
    NoteKernelSchedLater();
  }
  NoteProcessArgs(argc, argv);
  // System calls shorter than 1 us (or the block threshold, if lower) record
  // no stack. The frequency estimate is rough this early; these are
  // thresholds.
  const uint64_t tps = sys::EstimateTicksPerSecond(g.start_ticks, g.start_ns);
  g.stack_min_ticks = tps / 1'000'000 * std::min<uint64_t>(1000, g.config.block_threshold_ns) / 1000;
  g.sync_ticks = tps / 100;  // 10 ms: see Commit
  g.busy_ticks = tps / 1'000'000 * (log::kBusyCpuNs / 1000);  // ProveIfBusy
  // As the launcher judges a process quiet (log_summary.cc): system calls
  // of 1 ms, or of the block threshold if that is longer, 10 ms of them in
  // all, are worth a trace.
  g.quiet_io_ticks = tps / 1'000'000 * log::QuietIoCallNs(g.config.block_threshold_ns) / 1000;
  g.quiet_io_total_ticks =
      tps / 1'000'000 * log::QuietIoTotalNs(g.config.block_threshold_ns) / 1000;
  g.events = g.config.events;
  // Registered early, so they run late: after the program's own atexit /
  // at_quick_exit handlers and static destructors (H26).
  atexit(AtExit);
  at_quick_exit(AtExit);
  pthread_atfork(nullptr, AtForkParent, AtForkChild);
  if (g.config.crash) InstallCrashHandlers();
  // No flusher yet: it starts with the program's second thread
  // (MaybeStartFlusher).
  if (g.config.control && !ControlStart() && g.config.start_paused) {
    // Paused with no way to start: say so once; the program runs untraced.
    Disable("the control channel could not be opened (see above), so GOTRACE_START=paused could never start");
  }
}

__attribute__((destructor(101))) void Fini() { Finalize(false); }

}  // namespace

// ---------------------------------------------------------------------------
// For the interposers (preload/lifecycle.h)

void FinishProcess() { Finalize(false); }

bool IsVforkChild() {
  return g.phase.load(std::memory_order_relaxed) == Phase::kReady && sys::GetPid() != g.pid;
}

void BeforeExec() { Finalize(true); }

uint32_t StartForkChildLog() {
  // Not inside the tracer or another hook (a signal handler's hook while
  // the thread is in one), and not from a vfork child of this process (it
  // shares our memory: the log would be ours, made by another process).
  if (t_state.depth != 0 || sys::GetPid() != g.pid) return 0;
  if (!g.fork_log_pending.exchange(false, std::memory_order_acq_rel)) {
    return g.bind.load(std::memory_order_acquire);  // another thread started it
  }
  TracerScope tracer;
  ErrnoGuard errno_guard;
  if (g.phase.load(std::memory_order_acquire) == Phase::kPaused) {
    // A paused process's fork child (PausedForkChild): no log until a
    // window opens; its channel now (not as it ends). Its kernel records
    // start as any descendant's do, once a window records (NoteWindowSched:
    // its second thread, or a recorded call 10 ms in): opened here they
    // cost every connection's backend of a paused PostgreSQL two
    // perf_event_opens and two rings, and a window may never come.
    // (GOTRACE_SCHED=kernel: now, on this thread, as its start opened a
    // paused process's: a window's start would open them on the control
    // thread, for that thread alone.)
    if (g.ending.load(std::memory_order_acquire)) return 0;
    if (g.config.sched == SchedMode::kKernel && g.app_threads.load(std::memory_order_relaxed) <= 1)
      StartKernelSched(/*stack_copies=*/false, /*startup=*/true);
    ForkChildControl();
    return 0;
  }
  // StartLog moves the phase to kReady; until then it stays kShutdown (a
  // thread counting the heap meanwhile goes on counting).
  DepotInit();
  HeapForkChildLogStart();
  if (!StartLog(/*fork_child=*/true)) {
    g.phase.store(Phase::kDisabled, std::memory_order_release);
    return 0;
  }
  NoteKernelSchedLater();
  // The thread that forked is the child's first (its tid is the pid); a
  // thread the child made before recording anything (its pthread_create
  // would have started the log) is not. It is counted (AtForkChild set
  // app_threads to 1) whether or not it was in the parent: its end ends
  // the count.
  // It ran from the fork on: its start is dated there (else it showed as
  // runnable until its first record, a whole computation's time in a
  // subshell that records nothing before its end).
  if (sys::GetTid() == g.pid) {
    if (g_live_key_ok) pthread_setspecific(g_live_key, reinterpret_cast<void*>(1));
    RegisterCurrentThreadSlow(0, g.main_pc.load(std::memory_order_relaxed),
                              log::kThreadMain | log::kThreadExisted, g.start_ticks);
  }
  MaybeStartFlusher();
  if (g.config.control) ForkChildControl();  // (see ForkChildControl)
  return g.bind.load(std::memory_order_acquire);
}

void AfterFailedExec() {
  // The image lives on: trace it into a new log (its trace so far was
  // written under the exec image's name).
  if (g.phase.load(std::memory_order_acquire) != Phase::kShutdown || sys::GetPid() != g.pid) return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  ++g.image;
  // Not PoolResetForChild: other threads of the image live on, possibly
  // inside a hook with their record in hand. Their records stay theirs (and
  // stay mapped to the finished log); each thread takes a new one in the new
  // log at its next hook (the log generation moved).
  sys::Close(g.log_fd);  // the finished image's log (its trace is written)
  g.log_fd = -1;
  DepotInit();
  if (!StartLog()) return;
  RegisterCurrentThreadSlow(0, g.main_pc.load(std::memory_order_relaxed),
                            log::kThreadMain | log::kThreadExisted);
  MaybeStartFlusher();
}

// The flusher is a thread, and a second thread changes a program: glibc
// drops its single-threaded fast paths (a mutex unlock after a condition
// wait becomes a futex system call: +400 ns; an uncontended lock/unlock pair
// +5 ns), and tools that count threads see one more. So a single-threaded
// program never gets one: its thread writes chunks older than
// GOTRACE_FLUSH_MS itself whenever it records (SpillIfOld), so a kill loses
// what it recorded in the last interval before it stopped recording. The
// flusher starts when the program creates its second thread (or an exec'd
// image or fork child has more than one).
bool FlusherRunning() { return g.flusher_running.load(std::memory_order_relaxed); }

void MaybeStartFlusher() {
  if (!g.flusher_running.load(std::memory_order_relaxed) &&
      g.app_threads.load(std::memory_order_relaxed) > 1) {
    StartFlusher();
  }
}

// The kernel's events move to stack copies (kernel::UseStackCopies) as the
// process creates its second thread: from then on its flusher reads the
// rings every GOTRACE_FLUSH_MS. Not at a one-thread process's 10 ms ticks:
// its recorded calls read the rings only as long as it makes some, and a
// script that imports, then computes in a loop that calls nothing, would
// lose all but the first second of its samples.
void MaybeUseStackCopies() {
  if (FlusherRunning() || g.app_threads.load(std::memory_order_relaxed) > 1 ||
      g.ending.load(std::memory_order_relaxed))
    return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  kernel::UseStackCopies(g.config);
}

// A Go program (its runtime exports crosscall2 for cgo) ends by the
// exit_group system call itself: no exit handler of libc's runs, ours
// neither, and no trace is written at its end. Under tracewrap the launcher
// recovers the log and says so; alone, one line says where the log is and
// how to make the trace from it.
void SayGoExit() {
  if (g.config.defer || g.config.quiet || g.phase.load(std::memory_order_acquire) != Phase::kReady)
    return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  if (sys::DlsymQuiet(RTLD_DEFAULT, "crosscall2") == nullptr) return;
  char buf[3000];
  sys::Line m(buf, sizeof buf);
  m.Str(
       "this is a Go program: it ends by a raw exit_group system call, past every exit "
       "handler, so no trace is written at its end; make it from the event log with: gotrace "
       "recover --unique ")
      .Str(g.log_path)
      .Str(" -o ")
      .Str(g.out_path)
      .Str(" (tracewrap does this by itself)");
  sys::Log(m.c_str());
}

void AppThreadCreating() {
  // A staged process makes its log while it still has one thread (staging
  // writes without locks: one writer).
  Materialize();
  // An image that started without __libc_start_main (Go's runtime: its
  // threads come first) has its process record now: it may end by a raw
  // exit_group, with no exit path of ours to write it.
  if (g.main_pc.load(std::memory_order_relaxed) == 0 && !g.forked_image && RecordProcessInfo())
    SayGoExit();
  // Before the new thread exists: it inherits the kernel's events.
  MaybeStartKernelSched(/*second_thread=*/true);
  MaybeUseStackCopies();
  g.app_threads.fetch_add(1, std::memory_order_acq_rel);
  MaybeStartFlusher();
}

void KernelSchedTick(uint64_t now) {
  // Not while staged or unproven: a process still quiet gets no trace, and
  // the kernel's records (and the log they need) would be made for nothing
  // (a grep or sort of a small file, one reading a pipe). They start at its
  // first tick after it turns worth a trace, as a busy one does here.
  if (!g.ending.load(std::memory_order_relaxed)) ProveIfBusy(now);
  if (now - g.start_ticks >= g.sync_ticks && g.app_threads.load(std::memory_order_relaxed) <= 1 &&
      !g.ending.load(std::memory_order_relaxed) && !g.unproven.load(std::memory_order_relaxed)) {
    MaybeStartKernelSched(/*second_thread=*/false);
  }
}

void AppThreadCreateFailed() { AppThreadEnded(nullptr); }

void AppThreadStarted() {
  if (g_live_key_ok) {
    pthread_setspecific(g_live_key, reinterpret_cast<void*>(1));
  } else {
    AppThreadEnded(nullptr);  // no destructor will count its end: uncount it now
  }
}

bool CrashSignalInterposed(int sig) {
  return g_crash_handlers && sig > 0 && sig < kMaxSignal && (IsCrashSignal(sig) || IsTermSignal(sig));
}

namespace {
// The program's action for `sig` in the table, as the kernel would keep it
// untraced (glibc adds SA_RESTORER; the kernel reads the handler, the
// flags and 64 signals of the mask, less SIGKILL and SIGSTOP). Stored only
// if that changed: the rest
// of a struct sigaction is whatever the caller's stack held (bash leaves
// sa_restorer and the mask's other 120 bytes unset), and a shell's fork
// child resets its signals before each exec, mostly to what they were:
// each store was a copy-on-write fault of this table's page (issue 18).
void Keep(int sig, const struct sigaction& act) {
  KeptAction& kept = g_app_action[sig];
  uint64_t mask;
  static_assert(sizeof act.sa_mask >= sizeof mask);
  std::memcpy(&mask, &act.sa_mask, sizeof mask);
  mask &= ~((uint64_t{1} << (SIGKILL - 1)) | (uint64_t{1} << (SIGSTOP - 1)));
  const int flags = (act.sa_flags & kKernelSaFlags) | kSaRestorer;
  const uintptr_t handler = reinterpret_cast<uintptr_t>(act.sa_sigaction);
  if (kept.handler == handler && kept.flags == flags && kept.mask == mask) return;
  kept.handler = handler;
  kept.flags = flags;
  kept.mask = mask;
}

// *old as glibc reports an action untraced: the program's handler and
// flags as kept, `restorer` (glibc's once the program set the action, which
// ours, installed through glibc, has; else none), the kernel's 64 signals
// of the mask; the rest of *old as the caller left it.
void Report(struct sigaction* old, const struct sigaction& kept, const struct sigaction& ours) {
  old->sa_sigaction = kept.sa_sigaction;
  old->sa_flags = kept.sa_flags;
  old->sa_restorer = (kept.sa_flags & kSaRestorer) != 0 ? ours.sa_restorer : nullptr;
  std::memcpy(&old->sa_mask, &kept.sa_mask, sizeof(uint64_t));
}

// A termination signal's action is the kernel's, but for SIG_DFL (ours in
// its place; the program's kept in the table): the old one comes back from
// the call that sets the new one, and the table is written only for
// SIG_DFL. A shell sets SIGINT to one handler before each fork and to
// another after it, and each store was a copy-on-write fault of the table's
// page in the shell after every fork (issue 18). That call, a handler and
// no old action asked, is the kernel's call and nothing else (CrashSigaction:
// no frame of ours below the shell's, each stack page deeper is a fault
// after every fork too).
GT_NOINLINE int TermSigactionSlow(int sig, const struct sigaction* act, struct sigaction* old) {
  const struct sigaction before = AppAction(sig);
  struct sigaction kernel {};
  // The kernel checks the new action (and says EINVAL, EFAULT) itself.
  if (act != nullptr ? InstallTermAction(sig, *act, &kernel) != 0
                     : GT_REAL(sigaction)(sig, nullptr, &kernel) != 0) {
    return -1;
  }
  if (act != nullptr && (TermDefault(*act) || RelayedTermSignal(sig))) Keep(sig, *act);
  if (old == nullptr) return 0;
  if ((kernel.sa_flags & SA_SIGINFO) != 0 &&
      (kernel.sa_sigaction == TermHandler || kernel.sa_sigaction == TermRelay)) {
    Report(old, before, kernel);  // SIG_DFL or a relayed handler, ours in its place
  } else {
    Report(old, kernel, kernel);  // the program's own, in the kernel
  }
  return 0;
}

// A crash signal's action: ours in the kernel, the program's in the table.
GT_NOINLINE int CrashSignalSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  const struct sigaction before = AppAction(sig);
  if (act != nullptr) {
    InstallCrashHandler(sig, *act);
    Keep(sig, *act);
  }
  if (old != nullptr) {
    struct sigaction ours {};
    if ((before.sa_flags & kSaRestorer) != 0) (void)GT_REAL(sigaction)(sig, nullptr, &ours);
    Report(old, before, ours);
  }
  return 0;
}
}  // namespace

int CrashSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!IsTermSignal(sig)) return CrashSignalSigaction(sig, act, old);
  if (act != nullptr && old == nullptr && !TermDefault(*act) && !RelayedTermSignal(sig))
    return GT_REAL(sigaction)(sig, act, nullptr);
  return TermSigactionSlow(sig, act, old);
}

namespace {
using sys::StartsWith;
// Whether an LD_PRELOAD entry [b, e) names our library.
bool IsOurLibrary(const char* b, const char* e) {
  const char* base = b;
  for (const char* p = b; p < e; ++p)
    if (*p == '/') base = p + 1;
  const char kName[] = "libgotrace.so";
  return static_cast<size_t>(e - base) == sizeof kName - 1 &&
         std::memcmp(base, kName, sizeof kName - 1) == 0;
}
}  // namespace

bool LearnActive() {
  // Under the launcher, with its learn table, in a process that follows its
  // children.
  const Phase phase = g.phase.load(std::memory_order_acquire);
  return g.config.defer && g.config.follow && g.config.learn_path[0] != '\0' &&
         phase != Phase::kUninit && phase != Phase::kDisabled;
}

bool SkipTracing(const char* path, char* const* argv, log::LearnPid* who, ExecFds* kept) {
  *who = log::LearnPid{};
  // Never the run's own program: its images are the run's trace.
  if (path == nullptr || sys::GetPid() == g.root_pid) return false;
  char cwd[sizeof g.cwd];
  if (sys::Getcwd(cwd, sizeof cwd) <= 0) return false;
  who->key = log::LearnKey(cwd, path, argv);
  who->program = log::ProgramKey(path);
  return learn::Quiet(g.config.learn_path, who->key, who->program,
                      kept != nullptr ? &kept->learn : nullptr);
}

void NoteUntraced(int pid, int ppid, uint32_t image, uint64_t start_ns, uint32_t flags,
                  const char* exe, char* const* argv, const log::LearnPid* who, ExecFds* kept) {
  if (who != nullptr)
    learn::NotePid(g.config.learn_path, pid, *who, kept != nullptr ? kept->learn : -1);
  log::QuietHeader h{};
  h.pid = static_cast<uint32_t>(pid);
  h.ppid = static_cast<uint32_t>(ppid);
  h.image = image;
  h.flags = log::kQuietDescendant | flags;
  h.start_ns = start_ns;
  h.exit_status = log::kQuietNoStatus;
  // The entry's size (BuildQuietEntry cuts at kQuietMaxBytes, as before):
  // a fixed 4 KiB buffer was one more page of stack for a shell's fork
  // child to write before each exec of a learned command (issue 18).
  size_t argc = 0, need = sizeof h + 16 + (exe != nullptr ? sys::StrLen(exe) : 0);
  for (; argv != nullptr && argv[argc] != nullptr; ++argc) need += sys::StrLen(argv[argc]) + 1;
  const size_t cap = std::min(need, log::kQuietMaxBytes);
  auto* entry = static_cast<uint8_t*>(__builtin_alloca(cap));
  AppendJournal(entry, log::BuildQuietEntry(entry, cap, h, nullptr, exe, argv, argc),
                kept != nullptr ? &kept->journal : nullptr);
}

void CloseExecFds(ExecFds* kept) {
  if (kept->learn >= 0) sys::Close(kept->learn);
  if (kept->journal >= 0) sys::Close(kept->journal);
  kept->learn = kept->journal = -1;
}

void NoteMadeChild() {
  // Read first: after the first fork the page is the child's too, and a
  // store on every fork was a copy-on-write fault on every fork.
  if (!g.made_child.load(std::memory_order_relaxed)) g.made_child.store(true, std::memory_order_relaxed);
}

uint32_t NextImage(int pid) { return pid == g.pid ? g.image + 1 : 0; }

int ParentPid() {
  // (A vfork child shares our memory: its parent is this process.)
  if (sys::GetPid() != g.pid) return g.pid;
  return g.ppid != 0 ? static_cast<int>(g.ppid) : static_cast<int>(sys::GetPPid());
}

namespace {
// The exec path's literals, on g's first page (GT_FORK_HOT, which a fork
// child writes anyway): read from .rodata they were one more page fault in
// every exec'ing fork child of a traced shell. (Not const: the section is
// writable data.)
struct ExecLiterals {
  char ld_preload[12] = "LD_PRELOAD=";
  char root_pid[18] = "GOTRACE_ROOT_PID=";
  char image[15] = "GOTRACE_IMAGE=";
  char ncpus[15] = "GOTRACE_NCPUS=";
  char asan[14] = "ASAN_OPTIONS=";
  char asan_add[38] = "ASAN_OPTIONS=verify_asan_link_order=0";
  char asan_name[23] = "verify_asan_link_order";
  char list[25] = "LD_TRACE_LOADED_OBJECTS=";
};
GT_FORK_HOT ExecLiterals g_lit;
}  // namespace

void ExecEnvRoom(char* const* envp, size_t* ptrs, size_t* preload_bytes) {
  size_t n = 0, bytes = 16;
  for (; envp != nullptr && envp[n] != nullptr; ++n)
    if (StartsWith(envp[n], g_lit.ld_preload)) bytes = std::max(bytes, sys::StrLen(envp[n]) + 1);
  *ptrs = std::min(n + 5, ExecEnv::kMax);  // ours (3, ASAN_OPTIONS) and the terminating null
  *preload_bytes = std::min(bytes, ExecEnv::kMaxPreload);
}

// Problem: a program built with -fsanitize=address refuses to start when a
// preloaded library comes before its runtime in the initial library list
// ("ASan runtime does not come first ..."; exit status 1), before any
// constructor of ours runs: every sanitizer build of a CI job failed under
// gotrace. ASan's own switch for that, verify_asan_link_order=0, lets it
// run with ours first (its interceptors are then next after ours, and ours
// forward to the next definition); its checks work as before. So every
// traced exec gets it in ASAN_OPTIONS (added, or appended to the options
// the program passes on), unless the program chose the option itself.
// Returns the entry to use in place of `e` (`e` nullptr: the program passes
// none on; the entry to add); programs without ASan ignore the variable.
const char* AsanOptions(const char* e, ExecEnv* env) {
  if (e == nullptr) return g_lit.asan_add;
  const char* v = e + 13;  // after "ASAN_OPTIONS="
  for (const char* p = v; *p != '\0'; ++p)
    if (StartsWith(p, g_lit.asan_name)) return e;
  const char* key = g_lit.asan_add + 13;  // "verify_asan_link_order=0"
  sys::Line l(env->asan, sizeof env->asan);
  l.Str(e);
  if (*v != '\0') l.Char(':');
  l.Str(key);
  // Too long to fit: passed on as it was.
  const size_t want = sys::StrLen(e) + (*v != '\0' ? 1 : 0) + sys::StrLen(key);
  return l.size() == want ? env->asan : e;
}

// Whether the new image only lists its libraries: ldd runs the loader with
// LD_TRACE_LOADED_OBJECTS set (any value), and the loader then prints every
// object it maps, our library among them, and runs nothing. Such an image
// goes without our library, so that ldd under the tracer prints what it
// prints without it.
namespace {
bool ListsLibraries(char* const* envp) {
  for (size_t i = 0; envp != nullptr && envp[i] != nullptr; ++i)
    if (StartsWith(envp[i], g_lit.list)) return true;
  return false;
}

// Whether `envp` preloads our library (LD_PRELOAD's entries are separated
// by colons or spaces, ld.so(8)).
bool PreloadsUs(char* const* envp) {
  for (size_t i = 0; envp != nullptr && envp[i] != nullptr; ++i) {
    if (!StartsWith(envp[i], g_lit.ld_preload)) continue;
    for (const char* p = envp[i] + 11; *p != '\0';) {
      const char* q = p;
      while (*q != '\0' && *q != ':' && *q != ' ') ++q;
      if (q > p && IsOurLibrary(p, q)) return true;
      p = *q != '\0' ? q + 1 : q;
    }
  }
  return false;
}
}  // namespace

bool EnvLeavesUsOut(char* const* envp) {
  return g.config.follow && !ListsLibraries(envp) && !PreloadsUs(envp);
}

// (No store merging: GCC's SLP vectorizer set sys::Line's fields from a
// 16-byte constant in .rodata, a page fault in every exec'ing fork child.)
__attribute__((optimize("no-tree-slp-vectorize"))) bool ExecEnvironment(char* const* envp,
                                                                        ExecEnv* env, bool untraced,
                                                                        bool same_process) {
  // (An environment the program made without our library, `env -i`: the
  // new image runs untraced and gets none of our variables either.)
  // GOTRACE_FOLLOW=0 leaves out other processes, not the program's next
  // image: under tracewrap --no-follow `sh -c 'exec node ...'` and `npm`
  // (a #!/usr/bin/env node script) wrote no trace at all.
  // (Its pid: a fork child that followed nothing kept the fields the
  // launcher's child had.)
  const bool program = !g.config.follow && same_process && sys::GetPid() == g.root_pid;
  const bool follow =
      (g.config.follow || program) && !untraced && !ListsLibraries(envp) && PreloadsUs(envp);
  bool asan_seen = false;
  sys::Line(env->root, sizeof env->root).Str(g_lit.root_pid).U64(static_cast<uint64_t>(g.root_pid));
  sys::Line(env->image, sizeof env->image)
      .Str(g_lit.image)
      .U64(static_cast<uint64_t>(g.pid))
      .Char(':')
      .U64(g.image + 1)
      .Char(':')
      .U64(g.ppid);
  sys::Line(env->ncpus, sizeof env->ncpus).Str(g_lit.ncpus).U64(g.ncpus);
  size_t n = 0;
  for (size_t i = 0; envp != nullptr && envp[i] != nullptr; ++i) {
    const char* e = envp[i];
    if (StartsWith(e, g_lit.root_pid) || StartsWith(e, g_lit.image) || StartsWith(e, g_lit.ncpus)) {
      continue;
    }
    if (n + 5 >= env->cap) return false;
    if (follow && StartsWith(e, g_lit.asan)) {
      env->ptrs[n++] = const_cast<char*>(AsanOptions(e, env));
      asan_seen = true;
      continue;
    }
    if (!follow && StartsWith(e, g_lit.ld_preload)) {
      // GOTRACE_FOLLOW=0: the children run untraced; keep the user's other
      // preloads (LD_PRELOAD is separated by colons or spaces, ld.so(8)).
      sys::Line l(env->preload, env->preload_cap);
      l.Str(g_lit.ld_preload);
      bool first = true;
      for (const char* p = e + 11; *p != '\0';) {
        const char* q = p;
        while (*q != '\0' && *q != ':' && *q != ' ') ++q;
        if (q > p && !IsOurLibrary(p, q)) {
          if (!first) l.Char(':');
          l.Str(p, static_cast<size_t>(q - p));
          first = false;
        }
        p = *q != '\0' ? q + 1 : q;
      }
      env->ptrs[n++] = env->preload;
      continue;
    }
    env->ptrs[n++] = const_cast<char*>(e);
  }
  if (follow) {
    env->ptrs[n++] = env->root;
    env->ptrs[n++] = env->image;
    env->ptrs[n++] = env->ncpus;
    if (!asan_seen) env->ptrs[n++] = const_cast<char*>(AsanOptions(nullptr, env));
  }
  env->ptrs[n] = nullptr;
  return true;
}

}  // namespace gotrace
