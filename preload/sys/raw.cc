// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/raw.cc - system calls that bypass libc and errno ------===//
#include "preload/sys/raw.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace gotrace::sys {

long WriteAll(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const long w = Write(fd, p, n);
    if (w == -EINTR) continue;
    if (w < 0) return w;
    if (w == 0) return -EIO;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

long PwriteAll(int fd, const void* buf, size_t n, uint64_t off) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    const long w = Pwrite(fd, p, n, off);
    if (w == -EINTR) continue;
    if (w < 0) return w;
    if (w == 0) return -ENOSPC;
    p += w;
    n -= static_cast<size_t>(w);
    off += static_cast<uint64_t>(w);
  }
  return 0;
}

void* MapMemory(size_t bytes) {
  const long r = Mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r < 0 && r > -4096) return nullptr;
  return reinterpret_cast<void*>(r);
}

void* MapForkFresh(void* at, size_t bytes) {
  const int fixed = at != nullptr ? MAP_FIXED : 0;
  const long r = Mmap(at, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
  if (r < 0 && r > -4096) return nullptr;
  constexpr long kMadvWipeOnFork = 18;
  (void)Syscall6(SYS_madvise, r, static_cast<long>(bytes), kMadvWipeOnFork);
  return reinterpret_cast<void*>(r);
}

Line& Line::Str(const char* s, size_t n) {
  for (size_t i = 0; i < n && len_ + 1 < cap_; ++i) buf_[len_++] = s[i];
  buf_[len_] = '\0';
  return *this;
}
Line& Line::Str(const char* s) { return Str(s, StrLen(s)); }
Line& Line::Char(char c) { return Str(&c, 1); }

Line& Line::U64(uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) Char(tmp[--n]);
  return *this;
}

Line& Line::Grouped(uint64_t v) {
  char tmp[32];
  size_t n = 0, digits = 0;
  do {
    if (digits > 0 && digits % 3 == 0) tmp[n++] = ',';
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
    ++digits;
  } while (v != 0);
  while (n > 0) Char(tmp[--n]);
  return *this;
}

Line& Line::Hex(uint64_t v) {
  Str("0x");
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  while (n > 0) Char(tmp[--n]);
  return *this;
}

Line& Line::Fixed(uint64_t x100) {
  U64(x100 / 100);
  Char('.');
  Char(static_cast<char>('0' + (x100 / 10) % 10));
  return Char(static_cast<char>('0' + x100 % 10));
}

Line& Line::Bytes(uint64_t b) {
  if (b < 10 * 1024) return U64(b).Str(" B");
  if (b < 10 * 1024 * 1024) {
    U64(b / 1024).Char('.').Char(static_cast<char>('0' + (b % 1024) * 10 / 1024));
    return Str(" KB");
  }
  const uint64_t mb = 1024 * 1024;
  U64(b / mb).Char('.').Char(static_cast<char>('0' + (b % mb) * 10 / mb));
  return Str(" MB");
}

GT_FORK_HOT int g_log_fd = 2;  // (a shell's fork child may close it: StderrGone)

// Our lines go to the program's stderr, which may be a pipe whose reader is
// gone (`prog 2>&1 | head -1`): writing there raises SIGPIPE, whose default
// action would kill a program that, untraced, wrote nothing more and exited
// 0. So SIGPIPE is blocked around the write and, if this write raised it,
// taken back (a zero-timeout rt_sigtimedwait) before the mask is restored; a
// SIGPIPE already pending is left alone. Raw system calls only: usable in
// signal handlers.
long WriteAllNoSigpipe(int fd, const void* buf, size_t n) {
  const uint64_t pipe_bit = uint64_t{1} << (SIGPIPE - 1);
  uint64_t old_mask = 0, pending = 0;
  constexpr long kSetSize = sizeof(uint64_t);  // the kernel's sigset_t
  Syscall6(SYS_rt_sigprocmask, SIG_BLOCK, reinterpret_cast<long>(&pipe_bit),
           reinterpret_cast<long>(&old_mask), kSetSize);
  Syscall6(SYS_rt_sigpending, reinterpret_cast<long>(&pending), kSetSize);
  const long r = WriteAll(fd, buf, n);
  if (r == -EPIPE && (pending & pipe_bit) == 0) {
    const struct timespec zero {};
    Syscall6(SYS_rt_sigtimedwait, reinterpret_cast<long>(&pipe_bit), 0,
             reinterpret_cast<long>(&zero), kSetSize);
  }
  Syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&old_mask), 0, kSetSize);
  return r;
}

void Log(const char* msg) {
  char buf[4200];  // callers build lines of up to 4 KiB (paths in recovery hints)
  Line l(buf, sizeof buf);
  l.Str("gotrace: ").Str(msg).Char('\n');
  (void)WriteAllNoSigpipe(g_log_fd, l.c_str(), l.size());
}

size_t StrLen(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool StrEq(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

bool StartsWith(const char* s, const char* prefix) {
  while (*prefix != '\0' && *s == *prefix) {
    ++s;
    ++prefix;
  }
  return *prefix == '\0';
}

bool ParseU64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9') return false;
    const uint64_t d = static_cast<uint64_t>(*s - '0');
    if (v > (~0ull - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool AccessAsEffective(const char* path, int mode) {
#if defined(SYS_faccessat2)
  const long r = Syscall6(SYS_faccessat2, AT_FDCWD, reinterpret_cast<long>(path), mode, AT_EACCESS);
  if (r != -ENOSYS) return r == 0;
#endif
  return faccessat(AT_FDCWD, path, mode, AT_EACCESS) == 0;
}

}  // namespace gotrace::sys
