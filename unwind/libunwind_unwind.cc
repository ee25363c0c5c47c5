// SPDX-License-Identifier: Apache-2.0
//===-- unwind/libunwind_unwind.cc - DWARF CFI unwinding through libunwind -===//
#include "unwind/libunwind_unwind.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "preload/sys/next_symbol.h"
#include "preload/sys/raw.h"

#if GOTRACE_HAVE_LIBUNWIND_H
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

namespace gotrace::unwind {
namespace {

// unw_backtrace(buffer, size): its name is not mapped by libunwind.h's
// _ULx86_64_ / _ULaarch64_ macros (it is exported as is since libunwind 1.1).
// It walks with libunwind's cached fast trace (tdep_trace) and falls back to
// the unw_step loop by itself on frames the fast trace does not handle.
using BacktraceFn = int (*)(void**, int);
// unw_flush_cache(unw_local_addr_space, 0, 0): the names are macros of the
// architecture (_Ux86_64_flush_cache, _ULx86_64_local_addr_space, ...).
using AddrSpace = void*;  // unw_addr_space_t
using FlushCacheFn = void (*)(AddrSpace, uintptr_t, uintptr_t);
#define GT_UNW_STR2(x) #x
#define GT_UNW_STR(x) GT_UNW_STR2(x)
#if GOTRACE_HAVE_LIBUNWIND_H
static_assert(std::is_same_v<BacktraceFn, decltype(&::unw_backtrace)>,
              "libunwind's unw_backtrace has changed its type");
static_assert(std::is_pointer_v<unw_addr_space_t> && sizeof(unw_addr_space_t) == sizeof(AddrSpace));
static_assert(std::is_same_v<void (*)(unw_addr_space_t, unw_word_t, unw_word_t),
                             decltype(&::unw_flush_cache)>);
constexpr const char kFlushCache[] = GT_UNW_STR(unw_flush_cache);
constexpr const char kLocalAddrSpace[] = GT_UNW_STR(unw_local_addr_space);
#elif defined(__x86_64__)
constexpr const char kFlushCache[] = "_Ux86_64_flush_cache";
constexpr const char kLocalAddrSpace[] = "_ULx86_64_local_addr_space";
#elif defined(__aarch64__)
constexpr const char kFlushCache[] = "_Uaarch64_flush_cache";
constexpr const char kLocalAddrSpace[] = "_ULaarch64_local_addr_space";
#endif
static_assert(sizeof(void*) == sizeof(uint64_t));

constexpr const char kSoname[] = "libunwind.so.8";
constexpr size_t kMaxFrames = 256;

// G7: written once by LibunwindInit (before tracing starts), trivially
// destructible.
std::atomic<BacktraceFn> g_backtrace{nullptr};
std::atomic<FlushCacheFn> g_flush_cache{nullptr};
std::atomic<AddrSpace*> g_local_addr_space{nullptr};
std::atomic<uint32_t> g_gen{1};  // frame caches older than this may be stale
std::atomic<int> g_init{0};  // 0: not tried, 1: ready, 2: unavailable
const char* g_why = "libunwind was not initialised";
std::atomic<int> g_fds[2] = {-1, -1};

// --- Where libunwind's pipe goes (see "Problem:" in the header) ----------

// The floor, lowered to leave room under a small RLIMIT_NOFILE; 0: do not
// move the pipe at all.
int PipeFloor() {
  struct rlimit rl{};
  if (sys::Syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&rl)) != 0)
    return 0;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= kLibunwindFdFloor + 64u)
    return kLibunwindFdFloor;
  return rl.rlim_cur > 128 ? static_cast<int>(rl.rlim_cur) - 64 : 0;
}

// The descriptors taken below the floor, given back by Release.
struct FdFill {
  int held[kLibunwindFdFloor + 1];
  size_t n = 0;
  int lowest_free = -1;  // the first free descriptor at or above the floor
  static constexpr int kWindow = 32;
  bool was_open[kWindow] = {};

  void Take(int floor) {
    if (floor <= 0) return;
    const long src = sys::OpenAt(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC, 0);
    if (src < 0) return;
    if (src >= floor) {
      lowest_free = static_cast<int>(src);
      sys::Close(static_cast<int>(src));
    } else {
      held[n++] = static_cast<int>(src);
      // F_DUPFD returns the lowest free descriptor: take them until the
      // floor (or the limit: then libunwind's pipe goes where it can).
      while (n < kLibunwindFdFloor) {
        const long fd = sys::Fcntl(static_cast<int>(src), F_DUPFD_CLOEXEC, 0);
        if (fd < 0) break;
        if (fd >= floor) {
          lowest_free = static_cast<int>(fd);
          sys::Close(static_cast<int>(fd));
          break;
        }
        held[n++] = static_cast<int>(fd);
      }
    }
    if (lowest_free < 0) return;
    for (int i = 0; i < kWindow; ++i) was_open[i] = sys::Fcntl(lowest_free + i, F_GETFD, 0) >= 0;
  }

  // The pipe libunwind opened meanwhile: new descriptors in the window that
  // are pipes (F_GETPIPE_SZ fails on anything else).
  void FindPipe() const {
    if (lowest_free < 0) return;
    int k = 0;
    for (int i = 0; i < kWindow && k < 2; ++i) {
      const int fd = lowest_free + i;
      if (!was_open[i] && sys::Fcntl(fd, F_GETPIPE_SZ, 0) > 0)
        g_fds[k++].store(fd, std::memory_order_relaxed);
    }
  }

  // Closes what Take took: runs of consecutive descriptors with one
  // close_range each (Linux 5.9), else one by one.
  void Release() {
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && held[j] == held[j - 1] + 1) ++j;
      if (j - i == 1 || sys::Syscall6(SYS_close_range, held[i], held[j - 1], 0) != 0) {
        for (size_t k = i; k < j; ++k) sys::Close(held[k]);
      }
      i = j;
    }
    n = 0;
  }
};

}  // namespace

bool LibunwindInit(const char** why) {
  int state = g_init.load(std::memory_order_acquire);
  if (state == 0) {
    // RTLD_LOCAL keeps libunwind's _Unwind_* out of the program's scope; if
    // the program itself already has libunwind.so.8, this is its copy.
    void* h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    auto fn =
        h != nullptr ? reinterpret_cast<BacktraceFn>(sys::DlsymQuiet(h, "unw_backtrace")) : nullptr;
    auto flush =
        h != nullptr ? reinterpret_cast<FlushCacheFn>(sys::DlsymQuiet(h, kFlushCache)) : nullptr;
    auto as = h != nullptr ? static_cast<AddrSpace*>(sys::DlsymQuiet(h, kLocalAddrSpace)) : nullptr;
    if (h == nullptr) {
      g_why = "libunwind.so.8 cannot be loaded (Debian: apt-get install libunwind8)";
    } else if (fn == nullptr || flush == nullptr || as == nullptr) {
      // Without unw_flush_cache, code loaded where unloaded code was would be
      // walked with stale rules (see "Problem:" in the header).
      g_why = "libunwind.so.8 lacks unw_backtrace or unw_flush_cache";
    } else {
      g_flush_cache.store(flush, std::memory_order_relaxed);
      g_local_addr_space.store(as, std::memory_order_relaxed);
      g_backtrace.store(fn, std::memory_order_release);
      // The first walk initialises libunwind (tdep_init: its pipe) and this
      // thread's frame cache: with the low descriptors taken, the pipe lands
      // above the floor.
      FdFill fill;
      fill.Take(PipeFloor());
      uint64_t pcs[8];
      uint32_t gen = 0;
      const size_t n = LibunwindBacktrace(pcs, 8, &gen);
      fill.FindPipe();
      fill.Release();
      if (n == 0) {
        g_backtrace.store(nullptr, std::memory_order_release);
        g_why = "libunwind cannot walk this thread's stack";
      }
    }
    state = g_backtrace.load(std::memory_order_relaxed) != nullptr ? 1 : 2;
    g_init.store(state, std::memory_order_release);
  }
  if (state != 1 && why != nullptr) *why = g_why;
  return state == 1;
}

bool LibunwindReady() { return g_init.load(std::memory_order_acquire) == 1; }

// Not inlined: buf[0], the return address into this function, is dropped.
__attribute__((noinline)) size_t LibunwindBacktrace(uint64_t* pcs, size_t max,
                                                    uint32_t* thread_gen) {
  const BacktraceFn fn = g_backtrace.load(std::memory_order_acquire);
  if (fn == nullptr || max == 0) return 0;
  const uint32_t gen = g_gen.load(std::memory_order_acquire);
  if (*thread_gen == 0) *thread_gen = gen;  // the first walk: a new frame cache
  if (*thread_gen != gen) return 0;          // cached rules of unloaded code
  void* buf[kMaxFrames + 1];
  const int got = fn(buf, static_cast<int>(std::min(max, kMaxFrames) + 1));
  size_t n = 0;
  for (int i = 1; i < got; ++i) pcs[n++] = reinterpret_cast<uintptr_t>(buf[i]);
  return n;
}

void LibunwindPrepareThread(uint32_t* thread_gen) {
  *thread_gen = 0;
  uint64_t pcs[1];
  (void)LibunwindBacktrace(pcs, 1, thread_gen);
}

void LibunwindUnloaded(bool walked) {
  const FlushCacheFn flush = g_flush_cache.load(std::memory_order_acquire);
  AddrSpace* as = g_local_addr_space.load(std::memory_order_acquire);
  if (flush == nullptr || as == nullptr) return;
  // Threads see the new generation at their next walk. The stale rules are
  // for addresses no live code has until something is loaded there, which is
  // after the dlclose that led here.
  if (walked) g_gen.fetch_add(1, std::memory_order_acq_rel);
  flush(*as, 0, 0);  // the global cache: an atomic generation bump
}

bool IsLibunwindFd(int fd) {
  return fd >= 0 && (fd == g_fds[0].load(std::memory_order_relaxed) ||
                     fd == g_fds[1].load(std::memory_order_relaxed));
}

void LibunwindFds(int fds[2]) {
  fds[0] = g_fds[0].load(std::memory_order_relaxed);
  fds[1] = g_fds[1].load(std::memory_order_relaxed);
}

void LibunwindFdLost() {
  g_backtrace.store(nullptr, std::memory_order_release);
  g_fds[0].store(-1, std::memory_order_relaxed);
  g_fds[1].store(-1, std::memory_order_relaxed);
}

}  // namespace gotrace::unwind
