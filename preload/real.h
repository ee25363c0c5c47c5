// SPDX-License-Identifier: Apache-2.0
//===-- preload/real.h - the libc functions our interposers forward to ----===//
//
// STYLE.md G2: every real pointer is in one table, resolved in the
// constructor through dlsym(RTLD_NEXT) (dlvsym with an explicit version where
// glibc has two implementations, H3), with a lazy fallback for hooks that run
// before our constructor (H24). GT_REAL(name) has the exact type
// decltype(&::name), so a prototype change fails to compile.
//
// Problem: pthread_cond_* exist as @GLIBC_2.2.5 (the pre-2.3.2 condvar, a
// smaller pthread_cond_t) and @@GLIBC_2.3.2. Before glibc 2.36, dlsym returned
// the oldest version (BZ #14932, google/sanitizers#465), and mixing them
// corrupts memory. We always ask for the current ABI by version, for all the
// cond functions alike.
//===----------------------------------------------------------------------===//
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

// glibc's fortified entry points (declared in bits/*2.h only under
// _FORTIFY_SOURCE); their exact prototypes.
extern "C" {
ssize_t __read_chk(int fd, void* buf, size_t nbytes, size_t buflen);
ssize_t __pread_chk(int fd, void* buf, size_t nbytes, off_t offset, size_t buflen);
ssize_t __pread64_chk(int fd, void* buf, size_t nbytes, off64_t offset, size_t buflen);
ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags, sockaddr* addr,
                       socklen_t* addr_len);
int __poll_chk(pollfd* fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(pollfd* fds, nfds_t nfds, const timespec* timeout, const sigset_t* ss,
                size_t fdslen);
int __open_2(const char* file, int oflag);
int __open64_2(const char* file, int oflag);
int __openat_2(int fd, const char* file, int oflag);
int __openat64_2(int fd, const char* file, int oflag);
size_t __fread_chk(void* p, size_t room, size_t size, size_t n, FILE* fp);
size_t __fread_unlocked_chk(void* p, size_t room, size_t size, size_t n, FILE* fp);
char* __fgets_chk(char* s, size_t room, int n, FILE* fp);
char* __fgets_unlocked_chk(char* s, size_t room, int n, FILE* fp);
int __underflow(FILE* fp);
int _IO_getc(FILE* fp);
wchar_t* __fgetws_chk(wchar_t* ws, size_t room, int n, FILE* fp);
wchar_t* __fgetws_unlocked_chk(wchar_t* ws, size_t room, int n, FILE* fp);
wint_t __wuflow(FILE* fp);
wint_t __wunderflow(FILE* fp);
// The ISO C99 scanf family's va_list forms (<stdio.h> calls them vscanf and
// vfscanf in C99 and later and in C++, and declares them under these names
// only where it does not rename).
int __isoc99_vscanf(const char* format, va_list ap);
int __isoc99_vfscanf(FILE* fp, const char* format, va_list ap);
// glibc 2.38's C23 ones (what it calls them in C++ and C23).
int __isoc23_vscanf(const char* format, va_list ap);
int __isoc23_vfscanf(FILE* fp, const char* format, va_list ap);
}

#include "preload/sys/platform.h"

// The interposed functions: X(name, version or nullptr, required).
#define GT_REAL_FUNCTIONS(X)                               \
  X(pthread_create, nullptr, true)                         \
  X(pthread_exit, nullptr, true)                           \
  X(pthread_join, nullptr, true)                           \
  X(pthread_tryjoin_np, nullptr, true)                     \
  X(pthread_timedjoin_np, nullptr, true)                   \
  X(pthread_clockjoin_np, nullptr, false)                  \
  X(pthread_mutex_lock, nullptr, true)                     \
  X(pthread_mutex_trylock, nullptr, true)                  \
  X(pthread_mutex_timedlock, nullptr, true)                \
  X(pthread_mutex_clocklock, nullptr, false)               \
  X(pthread_mutex_unlock, nullptr, true)                   \
  X(pthread_cond_wait, ::gotrace::kCondVersion, true)      \
  X(pthread_cond_timedwait, ::gotrace::kCondVersion, true) \
  X(pthread_cond_clockwait, nullptr, false)                \
  X(pthread_cond_signal, ::gotrace::kCondVersion, true)    \
  X(pthread_cond_broadcast, ::gotrace::kCondVersion, true) \
  X(nanosleep, nullptr, true)                              \
  X(clock_nanosleep, nullptr, true)                        \
  X(usleep, nullptr, true)                                 \
  X(sleep, nullptr, true)                                  \
  X(read, nullptr, false)                                  \
  X(write, nullptr, false)                                 \
  X(pread, nullptr, false)                                 \
  X(pread64, nullptr, false)                               \
  X(pwrite, nullptr, false)                                \
  X(pwrite64, nullptr, false)                              \
  X(readv, nullptr, false)                                 \
  X(writev, nullptr, false)                                \
  X(preadv, nullptr, false)                                \
  X(preadv64, nullptr, false)                              \
  X(pwritev, nullptr, false)                               \
  X(pwritev64, nullptr, false)                             \
  X(preadv2, nullptr, false)                               \
  X(pwritev2, nullptr, false)                              \
  X(preadv64v2, nullptr, false)                            \
  X(pwritev64v2, nullptr, false)                           \
  X(__read_chk, nullptr, false)                            \
  X(__pread_chk, nullptr, false)                           \
  X(__pread64_chk, nullptr, false)                         \
  X(recv, nullptr, false)                                  \
  X(recvfrom, nullptr, false)                              \
  X(recvmsg, nullptr, false)                               \
  X(recvmmsg, nullptr, false)                              \
  X(__recv_chk, nullptr, false)                            \
  X(__recvfrom_chk, nullptr, false)                        \
  X(send, nullptr, false)                                  \
  X(sendto, nullptr, false)                                \
  X(sendmsg, nullptr, false)                               \
  X(sendmmsg, nullptr, false)                              \
  X(accept, nullptr, false)                                \
  X(accept4, nullptr, false)                               \
  X(connect, nullptr, false)                               \
  X(poll, nullptr, false)                                  \
  X(ppoll, nullptr, false)                                 \
  X(__poll_chk, nullptr, false)                            \
  X(__ppoll_chk, nullptr, false)                           \
  X(select, nullptr, false)                                \
  X(pselect, nullptr, false)                               \
  X(epoll_wait, nullptr, false)                            \
  X(epoll_pwait, nullptr, false)                           \
  X(epoll_pwait2, nullptr, false)                          \
  X(open, nullptr, false)                                  \
  X(open64, nullptr, false)                                \
  X(openat, nullptr, false)                                \
  X(openat64, nullptr, false)                              \
  X(__open_2, nullptr, false)                              \
  X(__open64_2, nullptr, false)                            \
  X(__openat_2, nullptr, false)                            \
  X(__openat64_2, nullptr, false)                          \
  X(creat, nullptr, false)                                 \
  X(creat64, nullptr, false)                               \
  X(fsync, nullptr, false)                                 \
  X(fdatasync, nullptr, false)                             \
  X(sync_file_range, nullptr, false)                       \
  X(waitpid, nullptr, false)                               \
  X(wait, nullptr, false)                                  \
  X(wait3, nullptr, false)                                 \
  X(wait4, nullptr, false)                                 \
  X(waitid, nullptr, false)                                \
  X(sigwait, nullptr, false)                               \
  X(sigwaitinfo, nullptr, false)                           \
  X(sigtimedwait, nullptr, false)                          \
  X(pause, nullptr, false)                                 \
  X(sigsuspend, nullptr, false)                            \
  X(flock, nullptr, false)                                 \
  X(fcntl, nullptr, false)                                 \
  X(fcntl64, nullptr, false)                               \
  X(lockf, nullptr, false)                                 \
  X(lockf64, nullptr, false)                               \
  X(msgrcv, nullptr, false)                                \
  X(msgsnd, nullptr, false)                                \
  X(sendfile, nullptr, false)                              \
  X(sendfile64, nullptr, false)                            \
  X(splice, nullptr, false)                                \
  X(getaddrinfo, nullptr, false)                           \
  X(socket, nullptr, false)                                \
  X(socketpair, nullptr, false)                            \
  X(pipe, nullptr, false)                                  \
  X(pipe2, nullptr, false)                                 \
  X(dup, nullptr, false)                                   \
  X(dup2, nullptr, false)                                  \
  X(dup3, nullptr, false)                                  \
  X(close, nullptr, false)                                 \
  X(close_range, nullptr, false)                           \
  X(closefrom, nullptr, false)                             \
  X(fclose, nullptr, false)                                \
  X(freopen, nullptr, false)                               \
  X(freopen64, nullptr, false)                             \
  X(daemon, nullptr, false)                                \
  X(fread, nullptr, false)                                 \
  X(fread_unlocked, nullptr, false)                        \
  X(__fread_chk, nullptr, false)                           \
  X(__fread_unlocked_chk, nullptr, false)                  \
  X(fgets, nullptr, false)                                 \
  X(fgets_unlocked, nullptr, false)                        \
  X(__fgets_chk, nullptr, false)                           \
  X(__fgets_unlocked_chk, nullptr, false)                  \
  X(getdelim, nullptr, false)                              \
  X(__getdelim, nullptr, false)                            \
  X(getline, nullptr, false)                               \
  X(fgetc, nullptr, false)                                 \
  X(getc, nullptr, false)                                  \
  X(_IO_getc, nullptr, false)                              \
  X(fgetc_unlocked, nullptr, false)                        \
  X(getc_unlocked, nullptr, false)                         \
  X(getchar, nullptr, false)                               \
  X(getchar_unlocked, nullptr, false)                      \
  X(__uflow, nullptr, false)                               \
  X(__underflow, nullptr, false)                           \
  X(fgetwc, nullptr, false)                                \
  X(getwc, nullptr, false)                                 \
  X(fgetwc_unlocked, nullptr, false)                       \
  X(getwc_unlocked, nullptr, false)                        \
  X(getwchar, nullptr, false)                              \
  X(getwchar_unlocked, nullptr, false)                     \
  X(fgetws, nullptr, false)                                \
  X(fgetws_unlocked, nullptr, false)                       \
  X(__fgetws_chk, nullptr, false)                          \
  X(__fgetws_unlocked_chk, nullptr, false)                 \
  X(__wuflow, nullptr, false)                              \
  X(__wunderflow, nullptr, false)                          \
  X(vscanf, nullptr, false)                                \
  X(vfscanf, nullptr, false)                               \
  X(__isoc99_vscanf, nullptr, false)                       \
  X(__isoc99_vfscanf, nullptr, false)                      \
  X(__isoc23_vscanf, nullptr, false)                       \
  X(__isoc23_vfscanf, nullptr, false)                      \
  X(eventfd, nullptr, false)                               \
  X(timerfd_create, nullptr, false)                        \
  X(signalfd, nullptr, false)                              \
  X(epoll_create, nullptr, false)                          \
  X(epoll_create1, nullptr, false)                         \
  X(inotify_init, nullptr, false)                          \
  X(inotify_init1, nullptr, false)                         \
  X(pthread_rwlock_rdlock, nullptr, false)                 \
  X(pthread_rwlock_tryrdlock, nullptr, false)              \
  X(pthread_rwlock_timedrdlock, nullptr, false)            \
  X(pthread_rwlock_clockrdlock, nullptr, false)            \
  X(pthread_rwlock_wrlock, nullptr, false)                 \
  X(pthread_rwlock_trywrlock, nullptr, false)              \
  X(pthread_rwlock_timedwrlock, nullptr, false)            \
  X(pthread_rwlock_clockwrlock, nullptr, false)            \
  X(pthread_rwlock_unlock, nullptr, false)                 \
  X(pthread_barrier_wait, nullptr, false)                  \
  X(sem_wait, nullptr, false)                              \
  X(sem_trywait, nullptr, false)                           \
  X(sem_timedwait, nullptr, false)                         \
  X(sem_clockwait, nullptr, false)                         \
  X(sem_post, nullptr, false)                              \
  X(syscall, nullptr, false)                               \
  X(execve, nullptr, false)                                \
  X(execv, nullptr, false)                                 \
  X(execvp, nullptr, false)                                \
  X(execvpe, nullptr, false)                               \
  X(fexecve, nullptr, false)                               \
  X(execveat, nullptr, false)                              \
  X(posix_spawn, nullptr, false)                           \
  X(posix_spawnp, nullptr, false)                          \
  X(_exit, nullptr, false)                                 \
  X(_Exit, nullptr, false)                                 \
  X(quick_exit, nullptr, false)                            \
  X(sigaction, nullptr, false)                             \
  X(signal, nullptr, false)                                \
  X(__sysv_signal, nullptr, false)                         \
  X(siginterrupt, nullptr, false)                          \
  X(sigset, nullptr, false)                                \
  X(sigignore, nullptr, false)                             \
  X(dlclose, nullptr, true)

extern "C" int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                 void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                 void* stack_end);

namespace gotrace::real {

// (siginterrupt, sigset and sigignore are deprecated in glibc's header;
// programs still call them.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define GT_REAL_DECLARE(name, version, required) extern decltype(&::name) name;
GT_REAL_FUNCTIONS(GT_REAL_DECLARE)
#undef GT_REAL_DECLARE
#pragma GCC diagnostic pop
extern decltype(&::__libc_start_main) libc_start_main;

enum Index : int {
#define GT_REAL_INDEX(name, version, required) k_##name,
  GT_REAL_FUNCTIONS(GT_REAL_INDEX)
#undef GT_REAL_INDEX
  kCount
};

// The next definition of `name` (at `version`, if not nullptr, else the
// default one) after our library: sys::NextSymbol (no lock, no allocation)
// first, dlvsym and dlsym for what it cannot answer. nullptr if none.
// `ahead`: looked up before it is needed (ResolveRest): a name that no
// object loaded at start defines is not asked of dlsym.
void* Lookup(const char* name, const char* version, bool ahead = false);
// Resolves entry `index` (idempotent); returns the pointer or nullptr.
void* Resolve(int index, bool ahead = false);
// Resolves the required entries of the table (the others are resolved when
// first called). False if a required function is missing, with its name in
// *missing.
bool ResolveAll(const char** missing);
// Resolves every entry not resolved yet (before a fork: what the child
// resolves itself is lost at its exec, in every child of a shell).
void ResolveRest();

template <typename F>
__attribute__((always_inline)) inline F Get(F& slot, int index) {
  F f = __atomic_load_n(&slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f != nullptr, 1)) return f;
  return reinterpret_cast<F>(Resolve(index));
}

}  // namespace gotrace::real

#define GT_REAL(name) (::gotrace::real::Get(::gotrace::real::name, ::gotrace::real::k_##name))
