// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/raw.h - system calls that bypass libc and errno -------===//
//
// The tracer's own I/O must not re-enter our interposers (H2), must not touch
// the application's errno (H31) and must work in any thread state, so it uses
// the kernel directly. Results follow the kernel convention: >= 0 on success,
// -errno on failure. Formatting helpers write into caller buffers (no stdio,
// H20).
//===----------------------------------------------------------------------===//
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

// The tracer's large zero-initialised tables (a KiB to a MiB, each
// touched a page at a time, many pages never) go after all other .bss
// (.lbss follows .bss in the linker's default layout; it is NOBITS like
// .bss). Problem (issue 18): interleaved with them, the few hundred bytes
// of small globals that every process's start-up writes were spread over a
// dozen pages, each a page fault (15 to 20 us on the VMs measured); packed
// together they share a few.
#if defined(__x86_64__)
#define GT_LARGE_BSS __attribute__((section(".lbss")))
#else
#define GT_LARGE_BSS
#endif

// Problem: a fork child's first write to each page of our globals is a
// copy-on-write fault, and a shell's fork children write a few variables
// besides g's first fields (its state): each on a page of its own was one
// more fault per fork. GT_FORK_HOT puts a variable right ahead of g
// (large_bss.ld: .data.gt_hot), so that they share g's first page.
#if defined(__x86_64__)
#define GT_FORK_HOT __attribute__((section(".data.gt_hot")))
#define GT_FORK_HOT_G __attribute__((section(".data.gt_hot.g")))
#else
#define GT_FORK_HOT
#define GT_FORK_HOT_G
#endif

namespace gotrace::sys {

#if defined(__x86_64__)
inline long Syscall6(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                     long f = 0) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long Syscall6(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                     long f = 0) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#else
#error "gotrace: raw system calls are implemented for x86_64 and aarch64"
#endif

inline long Write(int fd, const void* buf, size_t n) {
  return Syscall6(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
inline long Pwrite(int fd, const void* buf, size_t n, uint64_t off) {
  return Syscall6(SYS_pwrite64, fd, reinterpret_cast<long>(buf), static_cast<long>(n),
                  static_cast<long>(off));
}
inline long Pread(int fd, void* buf, size_t n, uint64_t off) {
  return Syscall6(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n),
                  static_cast<long>(off));
}
inline long Read(int fd, void* buf, size_t n) {
  return Syscall6(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
inline long OpenAt(int dirfd, const char* path, int flags, int mode) {
  return Syscall6(SYS_openat, dirfd, reinterpret_cast<long>(path), flags, mode);
}
inline long Close(int fd) { return Syscall6(SYS_close, fd); }
inline long Unlink(const char* path) {
  return Syscall6(SYS_unlinkat, -100 /* AT_FDCWD */, reinterpret_cast<long>(path), 0);
}
inline long Fcntl(int fd, int cmd, long arg) { return Syscall6(SYS_fcntl, fd, cmd, arg); }
inline int GetPid() { return static_cast<int>(Syscall6(SYS_getpid)); }
inline int GetPPid() { return static_cast<int>(Syscall6(SYS_getppid)); }
inline int GetTid() { return static_cast<int>(Syscall6(SYS_gettid)); }
inline long Mmap(void* addr, size_t len, int prot, int flags, int fd, long off) {
  return Syscall6(SYS_mmap, reinterpret_cast<long>(addr), static_cast<long>(len), prot, flags, fd,
                  off);
}
inline long Munmap(void* addr, size_t len) {
  return Syscall6(SYS_munmap, reinterpret_cast<long>(addr), static_cast<long>(len));
}
// Maps in the pages of [addr, addr + len) for writing now, as the first
// write to each would (madvise MADV_POPULATE_WRITE, Linux 5.14). Problem
// (issue 18): a page fault costs 13 to 20 us on the VMs measured, this
// system call about 2 us for a page, and a short process's start-up writes
// a few pages it knows in advance. Best effort: an older kernel says EINVAL
// and the pages fault in as before.
inline long PopulateWrite(void* addr, size_t len) {
  constexpr long kMadvPopulateWrite = 23;
  return Syscall6(SYS_madvise, reinterpret_cast<long>(addr), static_cast<long>(len),
                  kMadvPopulateWrite);
}
// Whether `path` allows `mode` (R_OK, W_OK, X_OK) to the effective user:
// faccessat2's AT_EACCESS, libc's emulation before Linux 5.8.
bool AccessAsEffective(const char* path, int mode);
// The same for reading (MADV_POPULATE_READ): code about to run.
inline long PopulateRead(void* addr, size_t len) {
  constexpr long kMadvPopulateRead = 22;
  return Syscall6(SYS_madvise, reinterpret_cast<long>(addr), static_cast<long>(len),
                  kMadvPopulateRead);
}
inline long Readlink(const char* path, char* buf, size_t n) {
  return Syscall6(SYS_readlinkat, -100, reinterpret_cast<long>(path), reinterpret_cast<long>(buf),
                  static_cast<long>(n));
}
inline long Getcwd(char* buf, size_t n) {
  return Syscall6(SYS_getcwd, reinterpret_cast<long>(buf), static_cast<long>(n));
}

// Writes all of buf, retrying short writes and EINTR. Returns 0 or -errno.
long WriteAll(int fd, const void* buf, size_t n);
long PwriteAll(int fd, const void* buf, size_t n, uint64_t off);
// WriteAll without letting a broken pipe's SIGPIPE reach the program.
long WriteAllNoSigpipe(int fd, const void* buf, size_t n);

// Anonymous memory, or nullptr. MAP_NORESERVE: untouched pages cost nothing.
void* MapMemory(size_t bytes);

// Anonymous memory (MAP_NORESERVE) that a fork child gets as fresh zero
// pages (MADV_WIPEONFORK, Linux 4.14), at `at` (replacing what is mapped
// there) or, with `at` null, anywhere; nullptr if it cannot be mapped. For
// the tracer's per-process state that a fork child never reads (it makes
// its own before use): fork neither copies its page tables nor
// write-protects its pages in the parent. Problem (issue 18): a traced
// shell writes its thread record after each of its hundreds of forks, and
// each such write was a copy-on-write fault in the parent while the child
// lived, and a fault on a write-protected page after it (measured: 8 faults
// per fork in the parent instead of 2, +50 us of system time per fork).
// The marking is best effort: an older kernel says EINVAL, and the pages
// are copied on write as before.
void* MapForkFresh(void* at, size_t bytes);

// A small fixed-capacity string builder over a caller buffer; never overflows
// (output is truncated) and is always NUL-terminated.
class Line {
 public:
  Line(char* buf, size_t cap) : buf_(buf), cap_(cap) { buf_[0] = '\0'; }
  Line& Str(const char* s);
  Line& Str(const char* s, size_t n);
  Line& U64(uint64_t v);
  Line& Grouped(uint64_t v);  // 1,234,567
  Line& Hex(uint64_t v);
  Line& Fixed(uint64_t value_x100);  // 1234 -> "12.34"
  Line& Bytes(uint64_t b);           // "512 B", "4.2 KB", "3.1 MB"
  Line& Char(char c);
  const char* c_str() const { return buf_; }
  size_t size() const { return len_; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
};

// Where diagnostics go: a duplicate of the original stderr taken at startup
// (H27: programs close fd 2 at exit, as coreutils' close_stdout does, or
// reuse it for a file), else fd 2.
extern int g_log_fd;

// "gotrace: <msg>\n" on the diagnostics fd, in one write.
void Log(const char* msg);

size_t StrLen(const char* s);
bool StrEq(const char* a, const char* b);
bool StartsWith(const char* s, const char* prefix);
// Parses a decimal uint64; false on anything else.
bool ParseU64(const char* s, uint64_t* out);

// Calls fn(name) for each entry of the directory open at `dir`, read with
// getdents64 into a buffer on the stack (raw system calls only: usable in
// a signal handler or a fork child).
template <typename Fn>
void ForEachDirEntry(long dir, Fn fn) {
  alignas(8) char ents[4096];
  for (;;) {
    const long n = Syscall6(SYS_getdents64, dir, reinterpret_cast<long>(ents), sizeof ents);
    if (n <= 0) return;
    for (long off = 0; off < n;) {
      // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
      uint16_t reclen;
      __builtin_memcpy(&reclen, ents + off + 16, sizeof reclen);
      fn(static_cast<const char*>(ents + off + 19));
      off += reclen;
    }
  }
}

}  // namespace gotrace::sys
