// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_lifecycle.cc - process start, dynamic loading -------===//
//
// __libc_start_main tells us main()'s address (the main thread's start
// routine in the trace) and is where the main thread registers. dlclose
// rescans the module map after the real call returns, outside the loader
// lock (H21), and starts a new module epoch.
//
// Problem: dlopen is deliberately NOT interposed. glibc resolves a bare
// library name against the RUNPATH and $ORIGIN of dlopen's caller, found from
// dlopen's return address; an interposer would make libgotrace.so the caller
// and change which library a program loads. New modules are found instead
// when a new stack holds a PC outside every known module (CaptureStack), and
// at exit.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/capability.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "encoder/quiet_journal.h"
#include "preload/control.h"
#include "preload/lifecycle.h"
#include "preload/real.h"
#include "preload/runtime.h"
#include "preload/sys/clock.h"
#include "preload/sys/raw.h"
#include "unwind/code_map.h"

using namespace gotrace;

namespace {

int (*g_main)(int, char**, char**);

// The exit status of exit() and of a return from main, for the log's
// kExitStatus: on_exit's handlers are given it, atexit's are not. It must
// be registered after the loader's own exit handler (rtld_fini, which runs
// the static destructors and our destructor, where the trace is written),
// so that it runs before it: that is, here, once __libc_start_main has
// registered rtld_fini and calls main.
void RecordExitStatus(int status, void*) {
  gotrace::SetExitStatus(static_cast<uint64_t>(status & 0xff) << 8);
}

int MainWithStatus(int argc, char** argv, char** envp) {
  on_exit(RecordExitStatus, nullptr);
  return g_main(argc, argv, envp);
}

}  // namespace

// Called once by the executable's _start (any of its symbol versions binds
// here: an unversioned definition satisfies a versioned reference).
GT_EXPORT int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                void* stack_end) {
  g.main_pc.store(reinterpret_cast<uintptr_t>(main), std::memory_order_relaxed);
  RegisterMainThread();
  RecordProcessInfo();  // (its arguments: NoteProcessArgs, from our constructor)
  auto real = real::libc_start_main;
  if (real == nullptr) {
    real = reinterpret_cast<decltype(real)>(dlsym(RTLD_NEXT, "__libc_start_main"));
  }
  const Phase phase = g.phase.load(std::memory_order_acquire);
  if ((phase == Phase::kReady || phase == Phase::kPaused) && main != nullptr) {
    g_main = main;
    main = MainWithStatus;
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

// dlclose@@GLIBC_2.34 (and 2.2.5). May take the loader lock (dl_iterate_phdr).
// The unwinder reads unwind tables of loaded objects: nothing may be
// unmapped while it does, and its map of code is not trusted for such reads
// again until it has been rebuilt (unwind/code_map.h, "Problem:").
// UnloadBegin may wait (yielding) for reads in progress, which take
// microseconds and never wait themselves.
GT_EXPORT int dlclose(void* handle) {
  unwind::ProcessCode().UnloadBegin();
  const int r = GT_REAL(dlclose)(handle);
  unwind::ProcessCode().UnloadEnd();
  if (r == 0 && t_state.depth == 0) RescanModules(true);
  return r;
}

// --- exec: finalize this image first, start again if the exec fails (H16) ------
// Each exec function is interposed: glibc's execl*/execvp call execve
// internally, without the PLT. A vfork child (H14) changes no tracer state:
// it only gets its children's environment, built on its own stack.

namespace {

using gotrace::ExecEnv;

constexpr size_t kPathMax = 4096;  // a program's path: PATH_MAX

// The environment for the new image (ours, on the stack) or envp unchanged.
char* const* ChildEnv(char* const* envp, ExecEnv* env, bool same_process) {
  return gotrace::ExecEnvironment(envp, env, /*untraced=*/false, same_process) ? env->ptrs : envp;
}

// Whether an exec of `path` can succeed: an executable regular file. An exec
// that is bound to fail (a missing file, a PATH search that finds nothing)
// then leaves the trace whole instead of splitting it at the attempt.
// System calls of our own, not libc's stat and faccessat: a shell's fork
// child runs this before each exec, and their code was two more pages of
// libc to fault in per command (issue 18). libc's faccessat only on a
// kernel without faccessat2 (before 5.8), which it emulates.
bool MayExec(const char* path) {
  if (path == nullptr) return false;
  struct stat st;
  if (sys::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path),
                    reinterpret_cast<long>(&st), 0) != 0 ||
      !S_ISREG(st.st_mode)) {
    return false;
  }
  return sys::AccessAsEffective(path, X_OK);
}

// The program an exec of `path` runs, as the new image will know it
// (AT_EXECFN, made absolute against the working directory as QuietEnd
// does), into buf; nullptr if it does not fit.
const char* AbsolutePath(const char* path, char* buf, size_t n) {
  if (path == nullptr || path[0] == '\0') return nullptr;
  if (path[0] == '/') return path;
  if (sys::Getcwd(buf, n) <= 0) return nullptr;
  const size_t len = strlen(buf), plen = strlen(path);
  if (len + plen + 2 > n) return nullptr;
  buf[len] = '/';
  memcpy(buf + len + 1, path, plen + 1);
  return buf;
}

// The same as MayExec for execvp's search: a name with a slash is a path;
// otherwise any directory of PATH (glibc's default when unset) holding it
// will do, the first one being the program glibc runs. *found: that
// program's path (`file` itself if it has a slash, else an absolute path
// in buf), or nullptr when it cannot tell (no candidate, one too long, or
// one in a relative or empty entry).
bool MayExecSearch(const char* file, char* buf, size_t n, const char** found) {
  *found = nullptr;
  if (file == nullptr || file[0] == '\0') return false;
  if (strchr(file, '/') != nullptr) {
    *found = file;
    return MayExec(file);
  }
  const char* path = getenv("PATH");
  if (path == nullptr) path = "/bin:/usr/bin";
  const size_t flen = strlen(file);
  for (const char* p = path;; ++p) {
    const char* end = strchrnul(p, ':');
    const size_t dlen = static_cast<size_t>(end - p);
    if (dlen + flen + 2 > n) return true;  // cannot tell: assume it may succeed
    size_t k = 0;
    if (dlen == 0) {
      buf[k++] = '.';  // an empty entry is the current directory
    } else {
      memcpy(buf, p, dlen);
      k = dlen;
    }
    buf[k++] = '/';
    memcpy(buf + k, file, flen + 1);
    if (MayExec(buf)) {
      if (buf[0] == '/') *found = buf;
      return true;
    }
    if (*end == '\0') return false;
    p = end;
  }
}

// Our own ELF class and machine, as constants: reading them from our ELF
// header (__ehdr_start) was a page fault of the library's first page in
// every exec'ing fork child of a traced shell.
constexpr unsigned char kOurClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if defined(__x86_64__)
constexpr unsigned kOurMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kOurMachine = EM_AARCH64;
#else
#error "the ELF machine of this architecture"
#endif

// Problem: the loader preloads our library only into a dynamically linked
// program of its own class and machine. A 32-bit program got "ERROR:
// ld.so: object ... from LD_PRELOAD cannot be preloaded (wrong ELF class:
// ELFCLASS64): ignored" on its stderr, which the program's output then
// differed by; a static one (busybox, or run through `#!/bin/busybox sh`)
// ran untraced and said nothing. Whether `path` (a script: its
// interpreter, two levels deep, as the kernel allows more) is such a
// program: an ELF of our class and machine with an interpreter (PT_INTERP).
// Anything it cannot read or tell is taken as preloadable. Raw system calls:
// a shell's fork child runs this before each exec, in 1 KiB of stack (each
// page of it below the shell's own frames is a fault in the child).
bool Preloadable(const char* path, int depth = 0) {
  if (path == nullptr || depth > 2) return true;
  const long fd = sys::OpenAt(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return true;
  alignas(8) char head[1024];
  const long n = sys::Pread(static_cast<int>(fd), head, sizeof head - 1, 0);
  bool ok = true;
  if (n >= 2 && head[0] == '#' && head[1] == '!') {
    head[n] = '\0';
    char* p = head + 2;
    while (*p == ' ' || *p == '\t') ++p;
    char* end = p;
    while (*end != '\0' && *end != ' ' && *end != '\t' && *end != '\n') ++end;
    *end = '\0';
    sys::Close(static_cast<int>(fd));
    return *p != '/' || Preloadable(p, depth + 1);
  }
  if (n >= static_cast<long>(sizeof(ElfW(Ehdr))) && memcmp(head, ELFMAG, SELFMAG) == 0) {
    ElfW(Ehdr) eh;
    std::memcpy(&eh, head, sizeof eh);
    if (eh.e_ident[EI_CLASS] != kOurClass || eh.e_machine != kOurMachine) {
      ok = false;
    } else if (eh.e_phentsize == sizeof(ElfW(Phdr)) && eh.e_phnum > 0 && eh.e_phnum <= 64) {
      // The program headers, in `head`'s bytes if they are there (they
      // follow the ELF header in what linkers write), else read into it.
      constexpr size_t kPer = sizeof head / sizeof(ElfW(Phdr));
      bool interp = false, read_all = true;
      for (size_t i = 0; i < eh.e_phnum; i += kPer) {
        const size_t k = eh.e_phnum - i < kPer ? eh.e_phnum - i : kPer;
        const size_t off = eh.e_phoff + i * sizeof(ElfW(Phdr));
        const size_t bytes = k * sizeof(ElfW(Phdr));
        const char* at = head + off;
        if (i != 0 || off + bytes > static_cast<size_t>(n)) {
          read_all = sys::Pread(static_cast<int>(fd), head, bytes, static_cast<long>(off)) ==
                     static_cast<long>(bytes);
          if (!read_all) break;
          at = head;
        }
        for (size_t j = 0; j < k; ++j) {
          ElfW(Phdr) ph;
          std::memcpy(&ph, at + j * sizeof ph, sizeof ph);
          if (ph.p_type == PT_INTERP) interp = true;
        }
      }
      if (read_all) ok = interp;
    }
  }
  sys::Close(static_cast<int>(fd));
  return ok;
}

// What an exec of `file` (execvp's search when `search`) is to run: whether
// it may succeed, and, when the run may leave it untraced (issue 18,
// preload/learn.h), its absolute path (else nullptr: no look-up is made);
// the file to ask whether our library can be preloaded into it
// (Preloadable; nullptr: it can). Asked only of a command the run has not
// learned quiet: one it learned ran with the library (the question was an
// open, a read and a close in a shell's fork child before each command).
struct ExecTarget {
  bool may_succeed;
  const char* learn_path;
  const char* check = nullptr;
  bool Preloadable() const { return check == nullptr || ::Preloadable(check); }
};
ExecTarget Target(const char* file, bool search, char* buf, size_t n) {
  if (!search) {
    const bool ok = MayExec(file);
    return {ok, gotrace::LearnActive() ? AbsolutePath(file, buf, n) : nullptr, ok ? file : nullptr};
  }
  const char* found;
  const bool ok = MayExecSearch(file, buf, n, &found);
  return {ok, gotrace::LearnActive() ? AbsolutePath(found, buf, n) : nullptr, ok ? found : nullptr};
}

// The journal flags of a program that runs untraced (NoteUntraced).
uint32_t UntracedFlags(bool foreign, bool no_preload) {
  return log::kQuietSkipped | (foreign ? log::kQuietForeign : 0) |
         (no_preload ? log::kQuietNoPreload : 0);
}

// When the run learned the command quiet, or the program's environment for
// it leaves our library out, it runs without it and its journal entry is
// written here (taken back if the exec fails).
template <typename Exec>
int DoExec(char* const* envp, ExecTarget t, char* const* argv, Exec exec) {
  const bool may_succeed = t.may_succeed;
  const char* target = t.learn_path;
  const Phase phase = g.phase.load(std::memory_order_relaxed);
  if (phase == Phase::kUninit) return exec(envp);
  const bool vfork_child = gotrace::IsVforkChild();
  if (vfork_child) gotrace::NoteMadeChild();  // the parent's state: it made a child
  GT_EXEC_ENV(env, envp);
  char* const* child = envp;
  bool untraced = false;
  int pid = 0, ppid = 0;
  uint32_t image = 0;
  uint64_t start_ns = 0;
  log::LearnPid who{};
  gotrace::ExecFds kept;  // for the exec to close
  bool learned = false, foreign = false, no_preload = false;
  if (may_succeed &&
      ((no_preload = gotrace::EnvLeavesUsOut(envp)) ||
       (target != nullptr && (learned = gotrace::SkipTracing(target, argv, &who, &kept))) ||
       (foreign = !t.Preloadable())) &&
      gotrace::ExecEnvironment(envp, &env, /*untraced=*/true)) {
    untraced = true;
    child = env.ptrs;
    pid = sys::GetPid();
    ppid = gotrace::ParentPid();
    image = gotrace::NextImage(pid);
    start_ns = sys::MonotonicNs();
    gotrace::NoteUntraced(pid, ppid, image, start_ns, UntracedFlags(foreign, no_preload), target,
                          argv, learned ? &who : nullptr, &kept);
  } else {
    if (learned) gotrace::CloseExecFds(&kept);  // (ExecEnvironment said no)
    child = ChildEnv(envp, &env, /*same_process=*/!vfork_child);
  }
  const bool finalize = !vfork_child && phase == Phase::kReady && may_succeed;
  if (finalize) gotrace::BeforeExec();
  const int r = exec(child);
  const int saved = errno;
  if (untraced) {
    gotrace::NoteUntraced(pid, ppid, image, start_ns, log::kQuietRetract, target, nullptr, nullptr,
                          &kept);
    gotrace::CloseExecFds(&kept);
  }
  if (finalize) gotrace::AfterFailedExec();
  errno = saved;
  return r;
}

// posix_spawn and posix_spawnp: the child is a new process; it only needs
// to know its name, or, learned quiet, to run without our library.
template <typename Spawn>
int DoSpawn(pid_t* pid, ExecTarget t, char* const* argv, char* const* envp, Spawn spawn) {
  gotrace::NoteMadeChild();
  GT_EXEC_ENV(env, envp);
  const char* target = t.learn_path;
  log::LearnPid who{};
  bool learned = false, foreign = false, no_preload = false;
  if (((no_preload = gotrace::EnvLeavesUsOut(envp)) ||
       (pid != nullptr && target != nullptr &&
        (learned = gotrace::SkipTracing(target, argv, &who))) ||
       (foreign = !t.Preloadable())) &&
      gotrace::ExecEnvironment(envp, &env, /*untraced=*/true)) {
    const uint64_t start_ns = sys::MonotonicNs();
    const int r = spawn(env.ptrs);
    // Raw system calls: errno stays the spawn's.
    if (r == 0 && pid != nullptr)
      gotrace::NoteUntraced(*pid, sys::GetPid(), 0, start_ns, UntracedFlags(foreign, no_preload),
                            target, argv, learned ? &who : nullptr);
    return r;
  }
  return spawn(ChildEnv(envp, &env, /*same_process=*/false));
}

// execl-style argument lists, gathered on the stack.
#define GT_GATHER_ARGS(first, last_arg, argv)                            \
  size_t argc_ = 1;                                                      \
  {                                                                      \
    va_list ap;                                                          \
    va_start(ap, last_arg);                                              \
    while (va_arg(ap, const char*) != nullptr) ++argc_;                  \
    va_end(ap);                                                          \
  }                                                                      \
  char** argv = static_cast<char**>(__builtin_alloca((argc_ + 1) * sizeof(char*))); \
  {                                                                      \
    va_list ap;                                                          \
    va_start(ap, last_arg);                                              \
    argv[0] = const_cast<char*>(first);                                  \
    for (size_t i = 1; i <= argc_; ++i) argv[i] = va_arg(ap, char*);     \
    va_end(ap);                                                          \
  }

}  // namespace

// execve and execv of `path`. An absolute path needs no buffer to resolve
// it: without the 4 KiB one in the frame, a shell's fork child writes one
// page of stack fewer before its exec (issue 18; shells exec absolute paths).
template <typename Exec>
GT_NOINLINE int ExecRelative(char* const* envp, const char* path, char* const* argv, Exec exec) {
  char buf[kPathMax];
  return DoExec(envp, Target(path, false, buf, sizeof buf), argv, exec);
}
template <typename Exec>
GT_ALWAYS_INLINE int ExecOfPath(char* const* envp, const char* path, char* const* argv, Exec exec) {
  if (path != nullptr && path[0] == '/')
    return DoExec(envp, Target(path, false, nullptr, 0), argv, exec);
  return ExecRelative(envp, path, argv, exec);
}

GT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  auto real = GT_REAL(execve);
  return ExecOfPath(envp, path, argv, [&](char* const* e) { return real(path, argv, e); });
}
GT_EXPORT int execv(const char* path, char* const argv[]) {
  auto real = GT_REAL(execve);
  return ExecOfPath(environ, path, argv, [&](char* const* e) { return real(path, argv, e); });
}
GT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  auto real = GT_REAL(execvpe);
  char buf[kPathMax];
  return DoExec(envp, Target(file, true, buf, sizeof buf), argv,
                [&](char* const* e) { return real(file, argv, e); });
}
GT_EXPORT int execvp(const char* file, char* const argv[]) {
  auto real = GT_REAL(execvpe);
  char buf[kPathMax];
  return DoExec(environ, Target(file, true, buf, sizeof buf), argv,
                [&](char* const* e) { return real(file, argv, e); });
}
GT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  auto real = GT_REAL(fexecve);
  return DoExec(envp, ExecTarget{true, nullptr}, argv, [&](char* const* e) { return real(fd, argv, e); });
}
GT_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                       int flags) {
  auto real = GT_REAL(execveat);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return DoExec(envp, ExecTarget{true, nullptr}, argv, [&](char* const* e) { return real(dirfd, path, argv, e, flags); });
}
GT_EXPORT int execl(const char* path, const char* arg, ...) {
  GT_GATHER_ARGS(arg, arg, argv);
  auto real = GT_REAL(execve);
  char buf[kPathMax];
  return DoExec(environ, Target(path, false, buf, sizeof buf), argv,
                [&](char* const* e) { return real(path, argv, e); });
}
GT_EXPORT int execlp(const char* file, const char* arg, ...) {
  GT_GATHER_ARGS(arg, arg, argv);
  auto real = GT_REAL(execvpe);
  char buf[kPathMax];
  return DoExec(environ, Target(file, true, buf, sizeof buf), argv,
                [&](char* const* e) { return real(file, argv, e); });
}
GT_EXPORT int execle(const char* path, const char* arg, ...) {
  GT_GATHER_ARGS(arg, arg, argv);
  char* const* envp;
  {
    va_list ap;
    va_start(ap, arg);
    while (va_arg(ap, const char*) != nullptr) {
    }
    envp = va_arg(ap, char* const*);
    va_end(ap);
  }
  auto real = GT_REAL(execve);
  char buf[kPathMax];
  return DoExec(envp, Target(path, false, buf, sizeof buf), argv,
                [&](char* const* e) { return real(path, argv, e); });
}

GT_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa,
                          const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  char buf[kPathMax];
  return DoSpawn(pid, Target(path, false, buf, sizeof buf), argv, envp, [&](char* const* e) {
    return GT_REAL(posix_spawn)(pid, path, fa, attr, argv, e);
  });
}
GT_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa,
                           const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  char buf[kPathMax];
  return DoSpawn(pid, Target(file, true, buf, sizeof buf), argv, envp, [&](char* const* e) {
    return GT_REAL(posix_spawnp)(pid, file, fa, attr, argv, e);
  });
}

// --- exits that skip atexit -------------------------------------------------------

GT_EXPORT void _exit(int status) {
  if (!gotrace::IsVforkChild()) gotrace::SetExitStatus(static_cast<uint64_t>(status & 0xff) << 8);
  gotrace::FinishProcess();  // a vfork child passes straight through
  GT_REAL(_exit)(status);
  __builtin_unreachable();
}
GT_EXPORT void _Exit(int status) {
  if (!gotrace::IsVforkChild()) gotrace::SetExitStatus(static_cast<uint64_t>(status & 0xff) << 8);
  gotrace::FinishProcess();
  GT_REAL(_Exit)(status);
  __builtin_unreachable();
}
// quick_exit's handlers (at_quick_exit: ours writes the trace) get no status.
GT_EXPORT void quick_exit(int status) {
  if (!gotrace::IsVforkChild()) gotrace::SetExitStatus(static_cast<uint64_t>(status & 0xff) << 8);
  GT_REAL(quick_exit)(status);
  __builtin_unreachable();
}

// --- signals: keep our crash handlers in front ------------------------------------
// A program that installs its own SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGABRT handler
// gets exactly the behaviour it asked for (sigaction reports it back; our
// handler calls it after flushing), but our handler stays the kernel's.

// --- Credentials -----------------------------------------------------------
// Capabilities, keepcaps and securebits belong to a thread: a change the
// program makes in its thread is made in the control thread too (see
// control::MirrorCapset), or glibc's next setresgid, which it makes in every
// thread, finds the two disagreeing and aborts the process. Both are thin
// system call wrappers in glibc (errno from the result), as here.
GT_EXPORT int capset(__user_cap_header_struct* header, __user_cap_data_struct* data) {
  const long r =
      sys::Syscall6(SYS_capset, reinterpret_cast<long>(header), reinterpret_cast<long>(data));
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  control::MirrorCapset(header, data);
  return 0;
}

GT_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  const unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  const unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  const long r = sys::Syscall6(SYS_prctl, option, static_cast<long>(a2), static_cast<long>(a3),
                               static_cast<long>(a4), static_cast<long>(a5));
  if (r < 0) {
    errno = static_cast<int>(-r);
    return -1;
  }
  if (GT_UNLIKELY(control::IsCredPrctl(option))) control::MirrorPrctl(option, a2, a3, a4, a5);
  return static_cast<int>(r);
}

GT_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(sigaction)(sig, act, old);
  return gotrace::CrashSigaction(sig, act, old);
}

// glibc's signal, bsd_signal, ssignal, sysv_signal, siginterrupt, sigset and
// sigignore set an action through glibc's own sigaction, around ours: for our signals they
// would put the program's handler in place of ours, report ours as the old
// one, or (signal after siginterrupt(sig, 1)) not know that system calls
// are to be interrupted. They are ours for those signals, as glibc writes
// them.
namespace {
uint64_t g_sigintr;  // siginterrupt(sig, 1) was asked: glibc's _sigintr

// `handler` for `sig` with `flags`, the mask empty or `sig` alone: the old
// handler, or SIG_ERR.
sighandler_t SetHandler(int sig, sighandler_t handler, int flags, bool mask_self) {
  struct sigaction act {
  }, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (mask_self) sigaddset(&act.sa_mask, sig);
  act.sa_flags = flags;
  if (handler == SIG_ERR || gotrace::CrashSigaction(sig, &act, &old) != 0) {
    errno = EINVAL;
    return SIG_ERR;
  }
  return old.sa_handler;
}
}  // namespace

GT_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(signal)(sig, handler);
  // BSD semantics: the signal blocked in its handler, calls restarted
  // unless siginterrupt asked otherwise.
  return SetHandler(sig, handler, (g_sigintr >> sig) & 1 ? 0 : SA_RESTART, true);
}
GT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) { return signal(sig, handler); }
GT_EXPORT sighandler_t ssignal(int sig, sighandler_t handler) { return signal(sig, handler); }

// System V semantics (what signal is in a program built with -std=c11:
// glibc's header sends it here): reset to SIG_DFL on delivery, not blocked
// in the handler, calls not restarted.
GT_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) {
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(__sysv_signal)(sig, handler);
  constexpr int kSaInterrupt = 0x20000000;  // glibc's SA_INTERRUPT, a no-op it sets
  return SetHandler(sig, handler, SA_RESETHAND | SA_NODEFER | kSaInterrupt, false);
}
GT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) {
  return __sysv_signal(sig, handler);
}

// System V: the handler with no flags and an empty mask, and `sig` taken out
// of the thread's mask; SIG_HOLD adds it to the mask instead. The old
// handler, or SIG_HOLD if `sig` was blocked.
GT_EXPORT sighandler_t sigset(int sig, sighandler_t disp) {
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(sigset)(sig, disp);
  sigset_t one, old;
  sigemptyset(&one);
  sigaddset(&one, sig);
  if (disp == SIG_HOLD) {
    if (sigprocmask(SIG_BLOCK, &one, &old) != 0) return SIG_ERR;
    if (sigismember(&old, sig)) return SIG_HOLD;
    struct sigaction cur {};
    if (gotrace::CrashSigaction(sig, nullptr, &cur) != 0) return SIG_ERR;
    return cur.sa_handler;
  }
  const sighandler_t prev = SetHandler(sig, disp, 0, false);
  if (prev == SIG_ERR || sigprocmask(SIG_UNBLOCK, &one, &old) != 0) return SIG_ERR;
  return sigismember(&old, sig) ? SIG_HOLD : prev;
}
GT_EXPORT int sigignore(int sig) {
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(sigignore)(sig);
  return SetHandler(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}

GT_EXPORT int siginterrupt(int sig, int interrupt) {
  if (sig > 0 && sig < 64) {
    if (interrupt)
      g_sigintr |= uint64_t{1} << sig;
    else
      g_sigintr &= ~(uint64_t{1} << sig);
  }
  if (!gotrace::CrashSignalInterposed(sig)) return GT_REAL(siginterrupt)(sig, interrupt);
  struct sigaction act {};
  if (gotrace::CrashSigaction(sig, nullptr, &act) != 0) return -1;
  if (interrupt)
    act.sa_flags &= ~SA_RESTART;
  else
    act.sa_flags |= SA_RESTART;
  return gotrace::CrashSigaction(sig, &act, nullptr);
}
