// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_syscalls.cc - sleeping and blocking system calls ----===//
//
// Every call that can block is recorded as one kWait after it returns (H30: a
// cancelled or interrupted call loses one record, never leaves a half-open
// wait); its kind is kNet for sockets, pipes, ttys, eventfds and all of
// poll/select/epoll, kSyscall otherwise (the descriptor's class comes from
// preload/fdclass.h). Whether a wait blocked is decided by the encoder from
// its duration (GOTRACE_BLOCK_US). Return values, errno (H31), EINTR and
// cancellation behave exactly as without us: we call the real function once
// and only read the clock around it.
//
// Covered, with their LFS64 and _chk (fortified) names (H6, H7), each
// optional (H8: a name missing from the running libc is never called):
// read/write families, socket I/O, accept, connect, poll/select/epoll, open,
// fsync, waits for children and signals, file locks, SysV messages,
// sendfile/splice and getaddrinfo (one network wait). Descriptor-creating
// calls keep the class table current; close/dup2 also protect the tracer's
// own descriptors (H27).
//
// This file is compiled without _FILE_OFFSET_BITS=64 so that open and open64
// (pread and pread64, ...) are distinct functions we both define (H7).
//===----------------------------------------------------------------------===//
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <wchar.h>

#include <cstring>
#include <optional>

#include "preload/fdclass.h"
#include "preload/real.h"
#include "preload/runtime.h"

namespace gotrace {
namespace {

// Problem (issue 18): a fork child's log starts at its first recorded call,
// and a shell's fork child records the open, dup2 and close of each
// redirection before it execs: the log's start (the region, the thread's
// record, the log's state) was 130 us of every such fork here, for records
// dropped with the child as quiet at its exec. In a fork child that has
// recorded nothing yet, a system call that cannot wait for long (a file's,
// not a pipe's, socket's or child's) is timed first, and starts the log and
// is recorded only if it took as long as makes a process worth a trace
// (the quiet threshold, 1 ms); shorter ones are not in the child's trace
// (README). Its errno is the call's.
template <typename Call>
GT_NOINLINE auto PendingForkCall(const void* frame, WaitKind kind, log::FdClass cls, uint64_t obj,
                                 long sysno, Call call) -> decltype(call()) {
  const uint32_t cpu0 = sys::CurrentCpu();
  const Tick t0 = sys::Ticks();
  auto ret = call();
  const Tick d = sys::Ticks() - t0;
  if (GT_LIKELY(d < g.quiet_io_ticks)) return ret;
  const int saved = errno;
  {
    HookScope scope(kGroupIo);  // starts the child's log
    if (scope.active())
      RecordSyscallAt(scope, kind, static_cast<uint64_t>(cls) << log::kWaitFdClassShift, obj,
                      static_cast<uint64_t>(sysno), frame, t0, cpu0, d);
  }
  errno = saved;
  return ret;
}

// The I/O on one descriptor: network or system call by its class.
template <typename Call>
GT_ALWAYS_INLINE auto OnFd(const void* frame, int fd, long sysno, Call call) -> decltype(call()) {
  if (ForkLogPending(kGroupIo)) {
    const log::FdClass cls = fdclass::Get(fd);
    if (!fdclass::IsNet(cls))
      return PendingForkCall(frame, WaitKind::kSyscall, cls, static_cast<uint64_t>(fd), sysno, call);
  }
  HookScope scope(kGroupIo);
  if (!scope.active()) return call();
  const log::FdClass cls = fdclass::Get(fd);
  // Staged (issue 18): a pipe, socket or tty that is not ready may keep the
  // call waiting for good: the log is made first.
  if (GT_UNLIKELY(g.staged.load(std::memory_order_relaxed)) && fdclass::IsNet(cls))
    MaterializeIfWouldBlock(fd, sysno);
  SyscallRecorder rec(scope, fdclass::IsNet(cls) ? WaitKind::kNet : WaitKind::kSyscall, cls,
                      static_cast<uint64_t>(fd), static_cast<uint64_t>(sysno), frame);
  auto ret = call();
  rec.End();
  return ret;
}

// A wait of a fixed kind (poll/select/epoll are network waits; waitpid and
// friends are system calls) on `obj`.
template <typename Call>
GT_ALWAYS_INLINE auto OnWait(const void* frame, WaitKind kind, uint64_t obj, long sysno,
                             Call call) -> decltype(call()) {
  if (ForkLogPending(kGroupIo) && kind == WaitKind::kSyscall &&
      !log::IsChildWaitCall(static_cast<uint64_t>(sysno)))
    return PendingForkCall(frame, kind, log::FdClass::kUnknown, obj, sysno, call);
  HookScope scope(kGroupIo);
  if (!scope.active()) return call();
  if (GT_UNLIKELY(g.staged.load(std::memory_order_relaxed))) MaterializeIfWouldBlock(-1, sysno);
  SyscallRecorder rec(scope, kind, log::FdClass::kUnknown, obj, static_cast<uint64_t>(sysno),
                      frame);
  auto ret = call();
  rec.End();
  return ret;
}

// H8: a function missing from the running libc.
template <typename R>
R Missing() {
  errno = ENOSYS;
  return static_cast<R>(-1);
}

void NewFd(long fd, log::FdClass c) {
  if (fd >= 0) fdclass::Set(static_cast<int>(fd), c);
}

}  // namespace
}  // namespace gotrace

using namespace gotrace;
using log::FdClass;

#define GT_OR_MISSING(name, R)                   \
  auto real_##name = GT_REAL(name);              \
  if (real_##name == nullptr) return Missing<R>();

// --- Sleeping (async-signal-safe, no allocation) ------------------------------

GT_EXPORT int nanosleep(const struct timespec* req, struct timespec* rem) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(nanosleep)(req, rem);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(nanosleep)(req, rem);
  w.End();
  return r;
}

GT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec* req,
                              struct timespec* rem) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(clock_nanosleep)(clock, flags, req, rem);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(clock_nanosleep)(clock, flags, req, rem);
  w.End();
  return r;
}

// glibc's sleep() and usleep() call nanosleep internally without the PLT, so
// each user call is recorded exactly once.
GT_EXPORT int usleep(useconds_t usec) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(usleep)(usec);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(usleep)(usec);
  w.End();
  return r;
}

GT_EXPORT unsigned sleep(unsigned seconds) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(sleep)(seconds);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const unsigned r = GT_REAL(sleep)(seconds);
  w.End();
  return r;
}

// --- read / write families ------------------------------------------------------

GT_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  GT_OR_MISSING(read, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_read, [&] { return real_read(fd, buf, n); });
}
GT_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  GT_OR_MISSING(__read_chk, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_read, [&] { return real___read_chk(fd, buf, n, buflen); });
}
GT_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  GT_OR_MISSING(write, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_write, [&] { return real_write(fd, buf, n); });
}
GT_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  GT_OR_MISSING(pread, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pread64, [&] { return real_pread(fd, buf, n, off); });
}
GT_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  GT_OR_MISSING(pread64, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pread64, [&] { return real_pread64(fd, buf, n, off); });
}
GT_EXPORT ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  GT_OR_MISSING(__pread_chk, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pread64,
              [&] { return real___pread_chk(fd, buf, n, off, buflen); });
}
GT_EXPORT ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  GT_OR_MISSING(__pread64_chk, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pread64,
              [&] { return real___pread64_chk(fd, buf, n, off, buflen); });
}
GT_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  GT_OR_MISSING(pwrite, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwrite64, [&] { return real_pwrite(fd, buf, n, off); });
}
GT_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  GT_OR_MISSING(pwrite64, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwrite64, [&] { return real_pwrite64(fd, buf, n, off); });
}
GT_EXPORT ssize_t readv(int fd, const struct iovec* iov, int cnt) {
  GT_OR_MISSING(readv, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_readv, [&] { return real_readv(fd, iov, cnt); });
}
GT_EXPORT ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  GT_OR_MISSING(writev, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_writev, [&] { return real_writev(fd, iov, cnt); });
}
GT_EXPORT ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) {
  GT_OR_MISSING(preadv, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_preadv, [&] { return real_preadv(fd, iov, cnt, off); });
}
GT_EXPORT ssize_t preadv64(int fd, const struct iovec* iov, int cnt, off64_t off) {
  GT_OR_MISSING(preadv64, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_preadv, [&] { return real_preadv64(fd, iov, cnt, off); });
}
GT_EXPORT ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  GT_OR_MISSING(pwritev, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwritev, [&] { return real_pwritev(fd, iov, cnt, off); });
}
GT_EXPORT ssize_t pwritev64(int fd, const struct iovec* iov, int cnt, off64_t off) {
  GT_OR_MISSING(pwritev64, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwritev, [&] { return real_pwritev64(fd, iov, cnt, off); });
}
GT_EXPORT ssize_t preadv2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  GT_OR_MISSING(preadv2, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_preadv2, [&] { return real_preadv2(fd, iov, cnt, off, flags); });
}
GT_EXPORT ssize_t preadv64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  GT_OR_MISSING(preadv64v2, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_preadv2,
              [&] { return real_preadv64v2(fd, iov, cnt, off, flags); });
}
GT_EXPORT ssize_t pwritev2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  GT_OR_MISSING(pwritev2, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwritev2,
              [&] { return real_pwritev2(fd, iov, cnt, off, flags); });
}
GT_EXPORT ssize_t pwritev64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  GT_OR_MISSING(pwritev64v2, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_pwritev2,
              [&] { return real_pwritev64v2(fd, iov, cnt, off, flags); });
}

// --- stdio reads --------------------------------------------------------------------
//
// Problem: stdio refills a stream's buffer with libc's internal read, which
// no interposer sees: md5sum (fread_unlocked), sed (__uflow, getdelim), uniq
// (__uflow), sort and wc (fgetc), awk (fgets) waiting on an empty pipe
// showed no wait, and a staged one ended "quiet" after waiting a second.
// Only a call that must refill the buffer reads the descriptor, so only
// one the bytes already buffered cannot answer is recorded, as a read of
// the stream's descriptor (a wait of its class); any other is forwarded
// after a look at two pointers (the buffer's fill, read without the
// stream's lock: a guess that is at worst a record of a call that did not
// wait). Streams without a descriptor (fmemopen, fopencookie) pass through.
// The scanf family reads as much as its format asks: a call is taken as
// answered when a whole word is buffered (something other than blanks,
// then a blank: the newline a previous scanf left behind is not an answer,
// the next one skips it and waits), and recorded otherwise: glibc's GNU entry points,
// the ISO C99 ones and glibc 2.38's C23 ones. Wide-character reads
// (fgetwc, getwc, fgetws, getwchar and their unlocked forms, what
// libstdc++'s std::wcin calls) convert from the byte buffer into a wide one
// and read only when both are short (HasWideChar, HasWideLine). Not covered:
// the wscanf family.

namespace gotrace {
namespace {

GT_ALWAYS_INLINE const char* ReadPtr(FILE* fp) {
  return __atomic_load_n(&fp->_IO_read_ptr, __ATOMIC_RELAXED);
}
GT_ALWAYS_INLINE size_t Buffered(FILE* fp) {
  return static_cast<size_t>(__atomic_load_n(&fp->_IO_read_end, __ATOMIC_RELAXED) - ReadPtr(fp));
}
// Whether `need` bytes are buffered (fread).
GT_ALWAYS_INLINE bool HasBytes(FILE* fp, size_t size, size_t n) {
  size_t need;
  return !__builtin_mul_overflow(size, n, &need) && need <= Buffered(fp);
}
// Whether a line ending in `delim` is buffered within `max` bytes (fgets:
// its room; getdelim: no limit), or `max` bytes are.
GT_ALWAYS_INLINE bool HasLine(FILE* fp, int delim, size_t max) {
  const size_t have = Buffered(fp);
  if (have >= max) return true;
  return have != 0 && std::memchr(ReadPtr(fp), delim, have) != nullptr;
}

GT_ALWAYS_INLINE size_t FgetsRoom(int n) { return n > 1 ? static_cast<size_t>(n - 1) : 0; }

GT_ALWAYS_INLINE bool Blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
// scanf's test: a whole word buffered (something other than blanks, then a
// blank), what a conversion like %d or %s reads without a refill, or
// kWordLook bytes of one. It looks at that word only, not for a line's end:
// a file of numbers on one long line had every fscanf scan the whole buffer
// for a newline, and be recorded. The bound keeps a text without blanks
// read a character at a time (%c) from a scan of the buffer per call: only
// the calls in a buffer's last kWordLook bytes are recorded then.
constexpr size_t kWordLook = 256;
GT_ALWAYS_INLINE bool HasWord(FILE* fp) {
  const char* p = ReadPtr(fp);
  const char* end = p + Buffered(fp);
  while (p < end && Blank(*p)) ++p;
  if (p == end) return false;
  const char* stop = end - p > static_cast<ptrdiff_t>(kWordLook) ? p + kWordLook : end;
  while (p < stop && !Blank(*p)) ++p;
  return p < end;
}

// A wide-oriented stream's get area: the first two members of glibc's
// struct _IO_wide_data (libio.h; public until 2.27, where the getwc macros
// read them, so fixed by glibc's ABI).
struct WideGetArea {
  const wchar_t* read_ptr;
  const wchar_t* read_end;
};
GT_ALWAYS_INLINE const WideGetArea* Wide(FILE* fp) {
  return reinterpret_cast<const WideGetArea*>(__atomic_load_n(&fp->_wide_data, __ATOMIC_RELAXED));
}
GT_ALWAYS_INLINE size_t WideBuffered(const WideGetArea* w) {
  if (w == nullptr) return 0;
  return static_cast<size_t>(__atomic_load_n(&w->read_end, __ATOMIC_RELAXED) -
                             __atomic_load_n(&w->read_ptr, __ATOMIC_RELAXED));
}
// Bytes that convert to a wide character without a read: a whole
// multibyte character's worth (MB_LEN_MAX), or a newline after them (a
// sequence cut there is an encoding error, not a read).
constexpr size_t kMultibyteMax = 16;
GT_ALWAYS_INLINE bool ConvertibleBytes(FILE* fp) {
  const size_t have = Buffered(fp);
  return have >= kMultibyteMax || (have != 0 && std::memchr(ReadPtr(fp), '\n', have) != nullptr);
}
// A byte-oriented stream (fwide < 0): a wide read fails without reading
// (glibc's __wuflow returns WEOF), and a stream that can only be one
// (glibc's string and cookie streams) has a poison value for _wide_data.
GT_ALWAYS_INLINE bool ByteOriented(FILE* fp) {
  return __atomic_load_n(&fp->_mode, __ATOMIC_RELAXED) < 0;
}
// Whether a wide character is buffered, or its bytes are (fgetwc).
GT_ALWAYS_INLINE bool HasWideChar(FILE* fp) {
  return ByteOriented(fp) || WideBuffered(Wide(fp)) != 0 || ConvertibleBytes(fp);
}
// Whether a line, or `max` wide characters, are buffered (fgetws: its
// room): in the wide buffer, or its end in the bytes behind it.
GT_ALWAYS_INLINE bool HasWideLine(FILE* fp, size_t max) {
  if (ByteOriented(fp)) return true;
  const WideGetArea* w = Wide(fp);
  const size_t have = WideBuffered(w);
  if (have >= max) return true;
  if (have != 0 && std::wmemchr(w->read_ptr, L'\n', have) != nullptr) return true;
  return HasLine(fp, '\n', SIZE_MAX);
}

// A refill: a read of the stream's descriptor. Out of line: the hooks'
// test and tail call need no frame of their own.
template <typename Call>
GT_NOINLINE auto Refill(FILE* fp, Call call) -> decltype(call()) {
  const int fd = __atomic_load_n(&fp->_fileno, __ATOMIC_RELAXED);
  if (fd < 0) return call();
  return OnFd(GT_FRAME(), fd, SYS_read, call);
}

}  // namespace
}  // namespace gotrace

// Each hook: the test inline (a load of two pointers, a compare, a tail
// call of the real function, once it is resolved: no call, so no registers
// to save); the refill, and the first call's look-up, out of line.
#define GT_IF_ANSWERED(name, answered, args)                                               \
  if (const auto real_ = ::gotrace::real::name; GT_LIKELY(real_ != nullptr && (answered))) \
  return real_ args
#define GT_REFILL(fp, call) Refill(fp, [=] { return call; })

GT_EXPORT size_t fread(void* p, size_t size, size_t n, FILE* fp) {
  GT_IF_ANSWERED(fread, HasBytes(fp, size, n), (p, size, n, fp));
  return GT_REFILL(fp, GT_REAL(fread)(p, size, n, fp));
}
GT_EXPORT size_t fread_unlocked(void* p, size_t size, size_t n, FILE* fp) {
  GT_IF_ANSWERED(fread_unlocked, HasBytes(fp, size, n), (p, size, n, fp));
  return GT_REFILL(fp, GT_REAL(fread_unlocked)(p, size, n, fp));
}
GT_EXPORT size_t __fread_chk(void* p, size_t room, size_t size, size_t n, FILE* fp) {
  GT_IF_ANSWERED(__fread_chk, HasBytes(fp, size, n), (p, room, size, n, fp));
  return GT_REFILL(fp, GT_REAL(__fread_chk)(p, room, size, n, fp));
}
GT_EXPORT size_t __fread_unlocked_chk(void* p, size_t room, size_t size, size_t n, FILE* fp) {
  GT_IF_ANSWERED(__fread_unlocked_chk, HasBytes(fp, size, n), (p, room, size, n, fp));
  return GT_REFILL(fp, GT_REAL(__fread_unlocked_chk)(p, room, size, n, fp));
}
GT_EXPORT char* fgets(char* s, int n, FILE* fp) {
  GT_IF_ANSWERED(fgets, HasLine(fp, '\n', FgetsRoom(n)), (s, n, fp));
  return GT_REFILL(fp, GT_REAL(fgets)(s, n, fp));
}
GT_EXPORT char* fgets_unlocked(char* s, int n, FILE* fp) {
  GT_IF_ANSWERED(fgets_unlocked, HasLine(fp, '\n', FgetsRoom(n)), (s, n, fp));
  return GT_REFILL(fp, GT_REAL(fgets_unlocked)(s, n, fp));
}
GT_EXPORT char* __fgets_chk(char* s, size_t room, int n, FILE* fp) {
  GT_IF_ANSWERED(__fgets_chk, HasLine(fp, '\n', FgetsRoom(n)), (s, room, n, fp));
  return GT_REFILL(fp, GT_REAL(__fgets_chk)(s, room, n, fp));
}
GT_EXPORT char* __fgets_unlocked_chk(char* s, size_t room, int n, FILE* fp) {
  GT_IF_ANSWERED(__fgets_unlocked_chk, HasLine(fp, '\n', FgetsRoom(n)), (s, room, n, fp));
  return GT_REFILL(fp, GT_REAL(__fgets_unlocked_chk)(s, room, n, fp));
}
GT_EXPORT ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  GT_IF_ANSWERED(getdelim, HasLine(fp, delim, SIZE_MAX), (line, n, delim, fp));
  return GT_REFILL(fp, GT_REAL(getdelim)(line, n, delim, fp));
}
GT_EXPORT ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  GT_IF_ANSWERED(__getdelim, HasLine(fp, delim, SIZE_MAX), (line, n, delim, fp));
  return GT_REFILL(fp, GT_REAL(__getdelim)(line, n, delim, fp));
}
GT_EXPORT ssize_t getline(char** line, size_t* n, FILE* fp) {
  GT_IF_ANSWERED(getline, HasLine(fp, '\n', SIZE_MAX), (line, n, fp));
  return GT_REFILL(fp, GT_REAL(getline)(line, n, fp));
}
GT_EXPORT int fgetc(FILE* fp) {
  GT_IF_ANSWERED(fgetc, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(fgetc)(fp));
}
GT_EXPORT int getc(FILE* fp) {
  GT_IF_ANSWERED(getc, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(getc)(fp));
}
GT_EXPORT int _IO_getc(FILE* fp) {
  GT_IF_ANSWERED(_IO_getc, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(_IO_getc)(fp));
}
GT_EXPORT int fgetc_unlocked(FILE* fp) {
  GT_IF_ANSWERED(fgetc_unlocked, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(fgetc_unlocked)(fp));
}
GT_EXPORT int getc_unlocked(FILE* fp) {
  GT_IF_ANSWERED(getc_unlocked, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(getc_unlocked)(fp));
}
GT_EXPORT int getchar() {
  GT_IF_ANSWERED(getchar, Buffered(stdin) != 0, ());
  return GT_REFILL(stdin, GT_REAL(getchar)());
}
GT_EXPORT int getchar_unlocked() {
  GT_IF_ANSWERED(getchar_unlocked, Buffered(stdin) != 0, ());
  return GT_REFILL(stdin, GT_REAL(getchar_unlocked)());
}
// Called by the getc_unlocked and getchar_unlocked macros (and glibc's
// inline getline) from the program's own code when the buffer is empty.
GT_EXPORT int __uflow(FILE* fp) {
  GT_IF_ANSWERED(__uflow, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(__uflow)(fp));
}
GT_EXPORT int __underflow(FILE* fp) {
  GT_IF_ANSWERED(__underflow, Buffered(fp) != 0, (fp));
  return GT_REFILL(fp, GT_REAL(__underflow)(fp));
}

// Wide characters.
GT_EXPORT wint_t fgetwc(FILE* fp) {
  GT_IF_ANSWERED(fgetwc, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(fgetwc)(fp));
}
GT_EXPORT wint_t getwc(FILE* fp) {
  GT_IF_ANSWERED(getwc, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(getwc)(fp));
}
GT_EXPORT wint_t fgetwc_unlocked(FILE* fp) {
  GT_IF_ANSWERED(fgetwc_unlocked, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(fgetwc_unlocked)(fp));
}
GT_EXPORT wint_t getwc_unlocked(FILE* fp) {
  GT_IF_ANSWERED(getwc_unlocked, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(getwc_unlocked)(fp));
}
GT_EXPORT wint_t getwchar() {
  GT_IF_ANSWERED(getwchar, HasWideChar(stdin), ());
  return GT_REFILL(stdin, GT_REAL(getwchar)());
}
GT_EXPORT wint_t getwchar_unlocked() {
  GT_IF_ANSWERED(getwchar_unlocked, HasWideChar(stdin), ());
  return GT_REFILL(stdin, GT_REAL(getwchar_unlocked)());
}
GT_EXPORT wchar_t* fgetws(wchar_t* ws, int n, FILE* fp) {
  GT_IF_ANSWERED(fgetws, HasWideLine(fp, FgetsRoom(n)), (ws, n, fp));
  return GT_REFILL(fp, GT_REAL(fgetws)(ws, n, fp));
}
GT_EXPORT wchar_t* fgetws_unlocked(wchar_t* ws, int n, FILE* fp) {
  GT_IF_ANSWERED(fgetws_unlocked, HasWideLine(fp, FgetsRoom(n)), (ws, n, fp));
  return GT_REFILL(fp, GT_REAL(fgetws_unlocked)(ws, n, fp));
}
GT_EXPORT wchar_t* __fgetws_chk(wchar_t* ws, size_t room, int n, FILE* fp) {
  GT_IF_ANSWERED(__fgetws_chk, HasWideLine(fp, FgetsRoom(n)), (ws, room, n, fp));
  return GT_REFILL(fp, GT_REAL(__fgetws_chk)(ws, room, n, fp));
}
GT_EXPORT wchar_t* __fgetws_unlocked_chk(wchar_t* ws, size_t room, int n, FILE* fp) {
  GT_IF_ANSWERED(__fgetws_unlocked_chk, HasWideLine(fp, FgetsRoom(n)), (ws, room, n, fp));
  return GT_REFILL(fp, GT_REAL(__fgetws_unlocked_chk)(ws, room, n, fp));
}
// What programs built with glibc's old public libio.h call from their own
// code (its getwc macros) when the wide buffer is empty.
GT_EXPORT wint_t __wuflow(FILE* fp) {
  GT_IF_ANSWERED(__wuflow, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(__wuflow)(fp));
}
GT_EXPORT wint_t __wunderflow(FILE* fp) {
  GT_IF_ANSWERED(__wunderflow, HasWideChar(fp), (fp));
  return GT_REFILL(fp, GT_REAL(__wunderflow)(fp));
}

// The scanf family: the variadic entry points go through their va_list
// forms (vscanf for scanf, vfscanf for fscanf, and the same for the ISO C99
// ones), as glibc's own do.
namespace gotrace {
namespace {
template <typename Real>
GT_ALWAYS_INLINE int Scan(Real real, FILE* fp, const char* format, va_list ap) {
  if (real == nullptr) return Missing<int>();
  if (HasWord(fp)) return real(fp, format, ap);
  return Refill(fp, [&] { return real(fp, format, ap); });
}
// vscanf's shape for Scan: stdin's.
template <typename Real>
GT_ALWAYS_INLINE int ScanStdin(Real real, const char* format, va_list ap) {
  if (real == nullptr) return Missing<int>();
  if (HasWord(stdin)) return real(format, ap);
  return Refill(stdin, [&] { return real(format, ap); });
}
}  // namespace
}  // namespace gotrace

// C++ sees only the ISO C99 names (<stdio.h> renames fscanf to
// __isoc99_fscanf for it): glibc's own scanf, fscanf, vscanf and vfscanf
// (GNU's, which a C program built with _GNU_SOURCE for C89 calls) are
// defined under names of their own, exported as theirs (GT_EXPORT_AS).
extern "C" {
int GnuVfscanf(FILE* fp, const char* format, va_list ap) GT_EXPORT_AS(vfscanf);
int GnuVscanf(const char* format, va_list ap) GT_EXPORT_AS(vscanf);
int GnuFscanf(FILE* fp, const char* format, ...) GT_EXPORT_AS(fscanf);
int GnuScanf(const char* format, ...) GT_EXPORT_AS(scanf);
}

int GnuVfscanf(FILE* fp, const char* format, va_list ap) {
  return Scan(GT_REAL(vfscanf), fp, format, ap);
}
int GnuVscanf(const char* format, va_list ap) { return ScanStdin(GT_REAL(vscanf), format, ap); }
int GnuFscanf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = Scan(GT_REAL(vfscanf), fp, format, ap);
  va_end(ap);
  return r;
}
int GnuScanf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = ScanStdin(GT_REAL(vscanf), format, ap);
  va_end(ap);
  return r;
}
GT_EXPORT int __isoc99_vfscanf(FILE* fp, const char* format, va_list ap) {
  return Scan(GT_REAL(__isoc99_vfscanf), fp, format, ap);
}
GT_EXPORT int __isoc99_vscanf(const char* format, va_list ap) {
  return ScanStdin(GT_REAL(__isoc99_vscanf), format, ap);
}
GT_EXPORT int __isoc99_fscanf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = Scan(GT_REAL(__isoc99_vfscanf), fp, format, ap);
  va_end(ap);
  return r;
}
GT_EXPORT int __isoc99_scanf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = ScanStdin(GT_REAL(__isoc99_vscanf), format, ap);
  va_end(ap);
  return r;
}
// glibc 2.38 and later: what <stdio.h> calls scanf in C++ and C23. With an
// older glibc no program calls these (they need GLIBC_2.38).
GT_EXPORT int __isoc23_vfscanf(FILE* fp, const char* format, va_list ap) {
  return Scan(GT_REAL(__isoc23_vfscanf), fp, format, ap);
}
GT_EXPORT int __isoc23_vscanf(const char* format, va_list ap) {
  return ScanStdin(GT_REAL(__isoc23_vscanf), format, ap);
}
GT_EXPORT int __isoc23_fscanf(FILE* fp, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = Scan(GT_REAL(__isoc23_vfscanf), fp, format, ap);
  va_end(ap);
  return r;
}
GT_EXPORT int __isoc23_scanf(const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  const int r = ScanStdin(GT_REAL(__isoc23_vscanf), format, ap);
  va_end(ap);
  return r;
}

// --- sockets ----------------------------------------------------------------------

GT_EXPORT ssize_t recv(int fd, void* buf, size_t n, int flags) {
  GT_OR_MISSING(recv, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_recvfrom, [&] { return real_recv(fd, buf, n, flags); });
}
GT_EXPORT ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {
  GT_OR_MISSING(__recv_chk, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_recvfrom,
              [&] { return real___recv_chk(fd, buf, n, buflen, flags); });
}
GT_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* addr,
                           socklen_t* len) {
  GT_OR_MISSING(recvfrom, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_recvfrom,
              [&] { return real_recvfrom(fd, buf, n, flags, addr, len); });
}
GT_EXPORT ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags,
                                 struct sockaddr* addr, socklen_t* len) {
  GT_OR_MISSING(__recvfrom_chk, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_recvfrom,
              [&] { return real___recvfrom_chk(fd, buf, n, buflen, flags, addr, len); });
}
GT_EXPORT ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  GT_OR_MISSING(recvmsg, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_recvmsg, [&] { return real_recvmsg(fd, msg, flags); });
}
GT_EXPORT int recvmmsg(int fd, struct mmsghdr* v, unsigned n, int flags, struct timespec* t) {
  GT_OR_MISSING(recvmmsg, int);
  return OnFd(GT_FRAME(), fd, SYS_recvmmsg, [&] { return real_recvmmsg(fd, v, n, flags, t); });
}
GT_EXPORT ssize_t send(int fd, const void* buf, size_t n, int flags) {
  GT_OR_MISSING(send, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_sendto, [&] { return real_send(fd, buf, n, flags); });
}
GT_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags,
                         const struct sockaddr* addr, socklen_t len) {
  GT_OR_MISSING(sendto, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_sendto,
              [&] { return real_sendto(fd, buf, n, flags, addr, len); });
}
GT_EXPORT ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  GT_OR_MISSING(sendmsg, ssize_t);
  return OnFd(GT_FRAME(), fd, SYS_sendmsg, [&] { return real_sendmsg(fd, msg, flags); });
}
GT_EXPORT int sendmmsg(int fd, struct mmsghdr* v, unsigned n, int flags) {
  GT_OR_MISSING(sendmmsg, int);
  return OnFd(GT_FRAME(), fd, SYS_sendmmsg, [&] { return real_sendmmsg(fd, v, n, flags); });
}
GT_EXPORT int accept(int fd, struct sockaddr* addr, socklen_t* len) {
  GT_OR_MISSING(accept, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(fd), SYS_accept,
                       [&] { return real_accept(fd, addr, len); });
  NewFd(r, FdClass::kSocket);
  return r;
}
GT_EXPORT int accept4(int fd, struct sockaddr* addr, socklen_t* len, int flags) {
  GT_OR_MISSING(accept4, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(fd), SYS_accept4,
                       [&] { return real_accept4(fd, addr, len, flags); });
  NewFd(r, FdClass::kSocket);
  return r;
}
GT_EXPORT int connect(int fd, const struct sockaddr* addr, socklen_t len) {
  GT_OR_MISSING(connect, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(fd), SYS_connect,
                [&] { return real_connect(fd, addr, len); });
}

// --- readiness waits: always network waits -----------------------------------

GT_EXPORT int poll(struct pollfd* fds, nfds_t n, int timeout) {
  GT_OR_MISSING(poll, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_poll, [&] { return real_poll(fds, n, timeout); });
}
GT_EXPORT int __poll_chk(struct pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  GT_OR_MISSING(__poll_chk, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_poll,
                [&] { return real___poll_chk(fds, n, timeout, fdslen); });
}
GT_EXPORT int ppoll(struct pollfd* fds, nfds_t n, const struct timespec* t, const sigset_t* ss) {
  GT_OR_MISSING(ppoll, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_ppoll, [&] { return real_ppoll(fds, n, t, ss); });
}
GT_EXPORT int __ppoll_chk(struct pollfd* fds, nfds_t n, const struct timespec* t,
                          const sigset_t* ss, size_t fdslen) {
  GT_OR_MISSING(__ppoll_chk, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_ppoll,
                [&] { return real___ppoll_chk(fds, n, t, ss, fdslen); });
}
GT_EXPORT int select(int n, fd_set* r, fd_set* w, fd_set* e, struct timeval* t) {
  GT_OR_MISSING(select, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_select, [&] { return real_select(n, r, w, e, t); });
}
GT_EXPORT int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const struct timespec* t,
                      const sigset_t* ss) {
  GT_OR_MISSING(pselect, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, SYS_pselect6,
                [&] { return real_pselect(n, r, w, e, t, ss); });
}
GT_EXPORT int epoll_wait(int ep, struct epoll_event* ev, int max, int timeout) {
  GT_OR_MISSING(epoll_wait, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(ep), SYS_epoll_wait,
                [&] { return real_epoll_wait(ep, ev, max, timeout); });
}
GT_EXPORT int epoll_pwait(int ep, struct epoll_event* ev, int max, int timeout,
                          const sigset_t* ss) {
  GT_OR_MISSING(epoll_pwait, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(ep), SYS_epoll_pwait,
                [&] { return real_epoll_pwait(ep, ev, max, timeout, ss); });
}
GT_EXPORT int epoll_pwait2(int ep, struct epoll_event* ev, int max, const struct timespec* t,
                           const sigset_t* ss) {
  GT_OR_MISSING(epoll_pwait2, int);
  return OnWait(GT_FRAME(), WaitKind::kNet, static_cast<uint64_t>(ep), SYS_epoll_pwait2,
                [&] { return real_epoll_pwait2(ep, ev, max, t, ss); });
}

// --- opening files (may block on NFS, FIFOs, devices) -------------------------

// The mode argument exists only with O_CREAT or O_TMPFILE.
#define GT_OPEN_MODE(flags)                                   \
  mode_t mode = 0;                                            \
  if ((flags) & (O_CREAT | O_TMPFILE)) {                      \
    va_list ap;                                               \
    va_start(ap, flags);                                      \
    mode = static_cast<mode_t>(va_arg(ap, unsigned));         \
    va_end(ap);                                               \
  }

GT_EXPORT int open(const char* path, int flags, ...) {
  GT_OPEN_MODE(flags);
  GT_OR_MISSING(open, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_open(path, flags, mode); });
  if (r >= 0) fdclass::Forget(r);  // classified on first use
  return r;
}
GT_EXPORT int open64(const char* path, int flags, ...) {
  GT_OPEN_MODE(flags);
  GT_OR_MISSING(open64, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_open64(path, flags, mode); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int openat(int dir, const char* path, int flags, ...) {
  GT_OPEN_MODE(flags);
  GT_OR_MISSING(openat, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_openat(dir, path, flags, mode); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int openat64(int dir, const char* path, int flags, ...) {
  GT_OPEN_MODE(flags);
  GT_OR_MISSING(openat64, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_openat64(dir, path, flags, mode); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int __open_2(const char* path, int flags) {
  GT_OR_MISSING(__open_2, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real___open_2(path, flags); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int __open64_2(const char* path, int flags) {
  GT_OR_MISSING(__open64_2, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real___open64_2(path, flags); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int __openat_2(int dir, const char* path, int flags) {
  GT_OR_MISSING(__openat_2, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real___openat_2(dir, path, flags); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int __openat64_2(int dir, const char* path, int flags) {
  GT_OR_MISSING(__openat64_2, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real___openat64_2(dir, path, flags); });
  if (r >= 0) fdclass::Forget(r);
  return r;
}
GT_EXPORT int creat(const char* path, mode_t mode) {
  GT_OR_MISSING(creat, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_creat(path, mode); });
  if (r >= 0) fdclass::Set(r, FdClass::kFile);
  return r;
}
GT_EXPORT int creat64(const char* path, mode_t mode) {
  GT_OR_MISSING(creat64, int);
  const int r = OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_openat,
                       [&] { return real_creat64(path, mode); });
  if (r >= 0) fdclass::Set(r, FdClass::kFile);
  return r;
}

// --- syncing ----------------------------------------------------------------------

GT_EXPORT int fsync(int fd) {
  GT_OR_MISSING(fsync, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_fsync,
                [&] { return real_fsync(fd); });
}
GT_EXPORT int fdatasync(int fd) {
  GT_OR_MISSING(fdatasync, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_fdatasync,
                [&] { return real_fdatasync(fd); });
}
GT_EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned flags) {
  GT_OR_MISSING(sync_file_range, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_sync_file_range,
                [&] { return real_sync_file_range(fd, off, n, flags); });
}

// --- children and signals ------------------------------------------------------------

// The wait family also records which child ended and how (kChildExit), for
// the run index of a launcher: a killed process cannot say it itself. A
// caller that passes no status pointer gets the status read into ours
// (the kernel writes it either way; the caller sees no difference). The
// child's resource usage is read too (waitpid and wait are wait4 with no
// rusage: the same system call with ours): a child that used
// log::kBusyCpuNs may have run a learned command untraced, which the run
// then traces again (NoteReapedBusy).
// A wait that includes threads (__WALL, __WCLONE: a debugger's, strace -f's)
// reaps its tracee's threads as they end, each by its thread id: recorded,
// each was listed in the run's index as a process that left nothing of its
// own. Such a wait records no child's end (a process it reaps says its own;
// one killed before it recorded anything is not listed).
namespace {
GT_ALWAYS_INLINE bool ReapsThreads(int options) { return (options & (__WALL | __WCLONE)) != 0; }

// A reaped child's CPU time, user and system, in microseconds.
GT_ALWAYS_INLINE uint64_t CpuUs(const struct rusage& u) {
  return static_cast<uint64_t>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000 +
         static_cast<uint64_t>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

template <typename Call>
pid_t OnChildWait(const void* frame, uint64_t obj, int* status, struct rusage* ru, int options,
                  Call call) {
  HookScope scope(kGroupIo);
  const bool record_end = !ReapsThreads(options);
  int own = 0;
  int* st = status != nullptr ? status : &own;
  if (!scope.active()) {
    // Nested in a hook (a shell's SIGCHLD handler that reaps while its
    // read of a command substitution's pipe is in our hook): the child's
    // end and CPU time all the same.
    if (GT_LIKELY(!NestedInHook())) return call(status, ru);
    struct rusage own_ru;
    struct rusage* u = ru != nullptr ? ru : &own_ru;
    const pid_t r = call(st, u);
    if (r > 0 && (WIFEXITED(*st) || WIFSIGNALED(*st))) {
      const int saved = errno;
      if (record_end) RecordNestedChildExit(r, *st);
      if (CpuUs(*u) >= log::kBusyCpuNs / 1000) NoteReapedBusy(r);
      errno = saved;
    }
    return r;
  }
  struct rusage* u = ru != nullptr ? ru : &scope.rec()->reap_usage;
  // (Staged, a wait for a child is no reason to make the log: not worth a
  // trace by itself, README "Quiet processes stay quiet".)
  SyscallRecorder rec(scope, WaitKind::kSyscall, FdClass::kUnknown, obj, SYS_wait4, frame);
  const pid_t r = call(st, u);
  const int saved = errno;
  rec.End();
  if (r > 0 && (WIFEXITED(*st) || WIFSIGNALED(*st))) {
    if (record_end) RecordChildExit(scope, r, *st);
    if (GT_UNLIKELY(CpuUs(*u) >= log::kBusyCpuNs / 1000)) NoteReapedBusy(r);
  }
  errno = saved;
  return r;
}
}  // namespace

GT_EXPORT pid_t waitpid(pid_t pid, int* status, int options) {
  GT_OR_MISSING(waitpid, pid_t);
  return OnChildWait(GT_FRAME(), static_cast<uint64_t>(pid), status, nullptr, options,
                     [&](int* st, struct rusage* u) {
                       auto w4 = GT_REAL(wait4);
                       return u != nullptr && w4 != nullptr ? w4(pid, st, options, u)
                                                            : real_waitpid(pid, st, options);
                     });
}
GT_EXPORT pid_t wait(int* status) {
  GT_OR_MISSING(wait, pid_t);
  return OnChildWait(GT_FRAME(), 0, status, nullptr, 0, [&](int* st, struct rusage* u) {
    auto w4 = GT_REAL(wait4);
    return u != nullptr && w4 != nullptr ? w4(-1, st, 0, u) : real_wait(st);
  });
}
GT_EXPORT pid_t wait3(int* status, int options, struct rusage* ru) {
  GT_OR_MISSING(wait3, pid_t);
  return OnChildWait(GT_FRAME(), 0, status, ru, options,
                     [&](int* st, struct rusage* u) { return real_wait3(st, options, u); });
}
GT_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* ru) {
  GT_OR_MISSING(wait4, pid_t);
  return OnChildWait(GT_FRAME(), static_cast<uint64_t>(pid), status, ru, options,
                     [&](int* st, struct rusage* u) { return real_wait4(pid, st, options, u); });
}
GT_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  GT_OR_MISSING(waitid, int);
  HookScope scope(kGroupIo);
  const bool active = scope.active();
  std::optional<SyscallRecorder> rec;
  if (active) rec.emplace(scope, WaitKind::kSyscall, FdClass::kUnknown, id, SYS_waitid, GT_FRAME());
  const int r = real_waitid(type, id, info, options);
  const int saved = errno;
  if (active) rec->End();
  // WNOWAIT leaves the child to be reaped later: that wait records it.
  if (r == 0 && info != nullptr && info->si_pid > 0 && !(options & WNOWAIT) &&
      !ReapsThreads(options)) {
    int st = -1;
    if (info->si_code == CLD_EXITED) st = (info->si_status & 0xff) << 8;
    else if (info->si_code == CLD_KILLED) st = info->si_status & 0x7f;
    else if (info->si_code == CLD_DUMPED) st = (info->si_status & 0x7f) | 0x80;
    if (st >= 0 && active)
      RecordChildExit(scope, info->si_pid, st);
    else if (st >= 0 && GT_UNLIKELY(NestedInHook()))
      RecordNestedChildExit(info->si_pid, st);
  }
  errno = saved;
  return r;
}
GT_EXPORT int sigwait(const sigset_t* set, int* sig) {
  GT_OR_MISSING(sigwait, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_rt_sigtimedwait,
                [&] { return real_sigwait(set, sig); });
}
GT_EXPORT int sigwaitinfo(const sigset_t* set, siginfo_t* info) {
  GT_OR_MISSING(sigwaitinfo, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_rt_sigtimedwait,
                [&] { return real_sigwaitinfo(set, info); });
}
GT_EXPORT int sigtimedwait(const sigset_t* set, siginfo_t* info, const struct timespec* t) {
  GT_OR_MISSING(sigtimedwait, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_rt_sigtimedwait,
                [&] { return real_sigtimedwait(set, info, t); });
}
GT_EXPORT int pause(void) {
  GT_OR_MISSING(pause, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_pause, [&] { return real_pause(); });
}
GT_EXPORT int sigsuspend(const sigset_t* set) {
  GT_OR_MISSING(sigsuspend, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, 0, SYS_rt_sigsuspend,
                [&] { return real_sigsuspend(set); });
}

// --- file locks -------------------------------------------------------------------------

GT_EXPORT int flock(int fd, int op) {
  GT_OR_MISSING(flock, int);
  if (op & LOCK_NB) return real_flock(fd, op);  // never waits
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_flock,
                [&] { return real_flock(fd, op); });
}

namespace {
// fcntl's third argument is an int or a pointer: passed on as a word.
template <typename Real>
int Fcntl(const void* frame, Real real, int fd, int cmd, unsigned long arg) {
  switch (cmd) {
    case F_SETLKW: case F_OFD_SETLKW:
#if defined(F_SETLKW64) && F_SETLKW64 != F_SETLKW
    case F_SETLKW64:
#endif
      return OnWait(frame, WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_fcntl,
                    [&] { return real(fd, cmd, arg); });
    case F_DUPFD: case F_DUPFD_CLOEXEC: {
      const int r = real(fd, cmd, arg);
      if (r >= 0) fdclass::Copy(fd, r);
      return r;
    }
    default:
      return real(fd, cmd, arg);
  }
}
}  // namespace

GT_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  GT_OR_MISSING(fcntl, int);
  return Fcntl(GT_FRAME(), real_fcntl, fd, cmd, arg);
}
GT_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const unsigned long arg = va_arg(ap, unsigned long);
  va_end(ap);
  GT_OR_MISSING(fcntl64, int);
  return Fcntl(GT_FRAME(), real_fcntl64, fd, cmd, arg);
}
GT_EXPORT int lockf(int fd, int cmd, off_t len) {
  GT_OR_MISSING(lockf, int);
  if (cmd != F_LOCK) return real_lockf(fd, cmd, len);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_fcntl,
                [&] { return real_lockf(fd, cmd, len); });
}
GT_EXPORT int lockf64(int fd, int cmd, off64_t len) {
  GT_OR_MISSING(lockf64, int);
  if (cmd != F_LOCK) return real_lockf64(fd, cmd, len);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(fd), SYS_fcntl,
                [&] { return real_lockf64(fd, cmd, len); });
}

// --- SysV messages, zero-copy transfers ----------------------------------------

GT_EXPORT ssize_t msgrcv(int q, void* msg, size_t n, long type, int flags) {
  GT_OR_MISSING(msgrcv, ssize_t);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(q), SYS_msgrcv,
                [&] { return real_msgrcv(q, msg, n, type, flags); });
}
GT_EXPORT int msgsnd(int q, const void* msg, size_t n, int flags) {
  GT_OR_MISSING(msgsnd, int);
  return OnWait(GT_FRAME(), WaitKind::kSyscall, static_cast<uint64_t>(q), SYS_msgsnd,
                [&] { return real_msgsnd(q, msg, n, flags); });
}
GT_EXPORT ssize_t sendfile(int out, int in, off_t* off, size_t n) {
  GT_OR_MISSING(sendfile, ssize_t);
  return OnFd(GT_FRAME(), out, SYS_sendfile, [&] { return real_sendfile(out, in, off, n); });
}
GT_EXPORT ssize_t sendfile64(int out, int in, off64_t* off, size_t n) {
  GT_OR_MISSING(sendfile64, ssize_t);
  return OnFd(GT_FRAME(), out, SYS_sendfile, [&] { return real_sendfile64(out, in, off, n); });
}
GT_EXPORT ssize_t splice(int in, loff_t* in_off, int out, loff_t* out_off, size_t n,
                         unsigned flags) {
  GT_OR_MISSING(splice, ssize_t);
  return OnFd(GT_FRAME(), in, SYS_splice,
              [&] { return real_splice(in, in_off, out, out_off, n, flags); });
}

// getaddrinfo: DNS over its own sockets, inside libc (not seen). One network
// wait for the whole lookup.
GT_EXPORT int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                          struct addrinfo** res) {
  auto real = GT_REAL(getaddrinfo);
  if (real == nullptr) return EAI_SYSTEM;
  return OnWait(GT_FRAME(), WaitKind::kNet, 0, 0, [&] { return real(node, service, hints, res); });
}

// --- descriptor bookkeeping (no events) --------------------------------------------

GT_EXPORT int socket(int domain, int type, int protocol) {
  GT_OR_MISSING(socket, int);
  const int r = real_socket(domain, type, protocol);
  NewFd(r, FdClass::kSocket);
  return r;
}
GT_EXPORT int socketpair(int domain, int type, int protocol, int sv[2]) {
  GT_OR_MISSING(socketpair, int);
  const int r = real_socketpair(domain, type, protocol, sv);
  if (r == 0) {
    NewFd(sv[0], FdClass::kSocket);
    NewFd(sv[1], FdClass::kSocket);
  }
  return r;
}
GT_EXPORT int pipe(int fds[2]) {
  GT_OR_MISSING(pipe, int);
  const int r = real_pipe(fds);
  if (r == 0) {
    NewFd(fds[0], FdClass::kPipe);
    NewFd(fds[1], FdClass::kPipe);
  }
  return r;
}
GT_EXPORT int pipe2(int fds[2], int flags) {
  GT_OR_MISSING(pipe2, int);
  const int r = real_pipe2(fds, flags);
  if (r == 0) {
    NewFd(fds[0], FdClass::kPipe);
    NewFd(fds[1], FdClass::kPipe);
  }
  return r;
}
GT_EXPORT int eventfd(unsigned init, int flags) {
  GT_OR_MISSING(eventfd, int);
  const int r = real_eventfd(init, flags);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int timerfd_create(int clock, int flags) {
  GT_OR_MISSING(timerfd_create, int);
  const int r = real_timerfd_create(clock, flags);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int signalfd(int fd, const sigset_t* mask, int flags) {
  GT_OR_MISSING(signalfd, int);
  const int r = real_signalfd(fd, mask, flags);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int epoll_create(int size) {
  GT_OR_MISSING(epoll_create, int);
  const int r = real_epoll_create(size);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int epoll_create1(int flags) {
  GT_OR_MISSING(epoll_create1, int);
  const int r = real_epoll_create1(flags);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int inotify_init(void) {
  GT_OR_MISSING(inotify_init, int);
  const int r = real_inotify_init();
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int inotify_init1(int flags) {
  GT_OR_MISSING(inotify_init1, int);
  const int r = real_inotify_init1(flags);
  NewFd(r, FdClass::kEvent);
  return r;
}
GT_EXPORT int dup(int fd) {
  GT_OR_MISSING(dup, int);
  const int r = real_dup(fd);
  if (r >= 0) fdclass::Copy(fd, r);
  return r;
}
GT_EXPORT int dup2(int fd, int to) {
  GT_OR_MISSING(dup2, int);
  ProtectFd(to);
  const int r = real_dup2(fd, to);
  if (r >= 0) fdclass::Copy(fd, r);
  if (r == 2 && fd != 2) StderrGone();
  return r;
}
GT_EXPORT int dup3(int fd, int to, int flags) {
  GT_OR_MISSING(dup3, int);
  ProtectFd(to);
  const int r = real_dup3(fd, to, flags);
  if (r >= 0) fdclass::Copy(fd, r);
  if (r == 2) StderrGone();
  return r;
}
// Redirections of stderr inside glibc, which no dup2 hook sees: daemon(3)
// points 0 to 2 at /dev/null (noclose 0), freopen(..., stderr) reopens it.
// Our copy of stderr held the caller's pipe as dup2 did (StderrGone).
// daemon(3)'s parent ends inside it, by glibc's own _exit: in its fork
// (AtForkParent, lifecycle.cc). Only the child, or a parent whose fork
// failed, returns here.
GT_EXPORT int daemon(int nochdir, int noclose) {
  GT_OR_MISSING(daemon, int);
  g.daemon_tid.store(sys::GetTid(), std::memory_order_relaxed);
  const int r = real_daemon(nochdir, noclose);
  g.daemon_tid.store(0, std::memory_order_relaxed);
  if (r == 0 && noclose == 0) StderrGone();
  return r;
}
namespace {
FILE* Reopen(decltype(&::freopen) real, const char* path, const char* mode, FILE* fp) {
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  FILE* const r = real(path, mode, fp);
  if (r != nullptr && r->_fileno == 2) StderrGone();
  return r;
}
}  // namespace
GT_EXPORT FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return Reopen(GT_REAL(freopen), path, mode, fp);
}
GT_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return Reopen(GT_REAL(freopen64), path, mode, fp);
}
GT_EXPORT int close(int fd) {
  GT_OR_MISSING(close, int);
  if (IsTracerFd(fd)) return 0;  // H27: our descriptors stay open (documented)
  fdclass::Forget(fd);
  // (Not StderrGone for close(2): coreutils close it at exit, and the
  // trace's line after that is wanted. A daemon's dup2 onto it is.)
  return real_close(fd);
}
GT_EXPORT int close_range(unsigned lo, unsigned hi, int flags) {
  GT_OR_MISSING(close_range, int);
  // H27: close around the tracer's descriptors, not over them.
  fdclass::ForgetRange(lo, hi);
  const int r = CloseRangeAround(lo, hi, flags, real_close_range);
  if (r == 0 && lo <= 2 && hi >= 2 && (flags & CLOSE_RANGE_CLOEXEC) == 0) StderrGone();
  return r;
}
GT_EXPORT void closefrom(int lo) {
  auto real = GT_REAL(close_range);
  if (real == nullptr) {
    if (auto cf = GT_REAL(closefrom)) cf(lo);
    return;
  }
  fdclass::ForgetRange(static_cast<unsigned>(lo), ~0u);
  (void)CloseRangeAround(static_cast<unsigned>(lo), ~0u, 0, real);
  if (lo <= 2) StderrGone();
}
GT_EXPORT int fclose(FILE* f) {
  GT_OR_MISSING(fclose, int);
  // glibc closes the descriptor inside, without our close(): forget it here.
  if (f != nullptr) {
    const int saved_errno = errno;
    const int fd = fileno(f);
    errno = saved_errno;
    if (fd >= 0) fdclass::Forget(fd);
  }
  return real_fclose(f);
}
