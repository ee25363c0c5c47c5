// SPDX-License-Identifier: Apache-2.0
// Checks unwind/libunwind_unwind.h's promises in a process of its own (run
// untraced by stacks_test.cc): libunwind is found and loaded without entering
// the program's symbol scope (its _Unwind_* stay libgcc_s's, exceptions
// work); its pipe does not take the program's low descriptors; a walk
// through code without frame pointers finds every caller, innermost first,
// starting with the caller of LibunwindBacktrace; and once a thread has
// walked, its walks call no malloc; after a dlclose, code loaded at the same
// addresses with other unwind rules is never walked with the old ones. Prints
// one line per check ("ok ..." or "FAIL ..."), and the cost of a walk on
// stderr.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "unwind/libunwind_unwind.h"

using gotrace::unwind::LibunwindBacktrace;

// The per-thread word LibunwindBacktrace wants (the tracer keeps it in its
// thread record).
static thread_local uint32_t t_gen;

// Counting allocator: this executable's malloc family wraps glibc's.
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void __libc_free(void*);
static int g_allocs;
extern "C" void* malloc(size_t n) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  __atomic_add_fetch(&g_allocs, 1, __ATOMIC_RELAXED);
  return __libc_realloc(p, n);
}
extern "C" void free(void* p) { __libc_free(p); }

static int g_failures;
static void Check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) ++g_failures;
}

static int LowestFreeFd() {
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(fd);
  return fd;
}

static const char* NameOf(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) == 0 || info.dli_sname == nullptr) return "?";
  return info.dli_sname;
}

// The chain walked (this file is built -O2 -fomit-frame-pointer, -rdynamic so
// that dladdr names these functions).
static volatile int g_sink;
extern "C" __attribute__((noinline)) size_t probe_leaf(uint64_t* pcs, size_t max) {
  const size_t n = LibunwindBacktrace(pcs, max, &t_gen);
  g_sink = g_sink + 1;
  return n;
}
extern "C" __attribute__((noinline)) size_t probe_middle(uint64_t* pcs, size_t max) {
  const size_t n = probe_leaf(pcs, max);
  g_sink = g_sink + 1;
  return n;
}
extern "C" __attribute__((noinline)) size_t probe_outer(uint64_t* pcs, size_t max) {
  const size_t n = probe_middle(pcs, max);
  g_sink = g_sink + 1;
  return n;
}

static void* ThreadWalks(void* result) {
  uint64_t pcs[64];
  const int before = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
  probe_outer(pcs, 64);
  const int first = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED) - before;
  for (int i = 0; i < 1000; ++i) probe_outer(pcs, 64);
  static_cast<int*>(result)[0] = first;
  static_cast<int*>(result)[1] = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED) - before - first;
  return nullptr;
}

// --- Stale unwind rules after dlclose (stacks_cfi_plugin.c) ---------------

using CfiCallFn = void (*)(void (*)());
static uint64_t g_cfi_pcs[64];
static size_t g_cfi_n;
extern "C" __attribute__((noinline)) void cfi_callback() { g_cfi_n = probe_leaf(g_cfi_pcs, 64); }

struct CfiRun {
  void* base = nullptr;
  bool found_caller = false;  // the walk reached cfi_caller, above the plugin
  size_t n = 0;
};

// Loads lib, walks from inside its stacks_cfi_call, unloads it.
extern "C" __attribute__((noinline)) CfiRun cfi_caller(const char* lib) {
  CfiRun r;
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  auto call = h != nullptr ? reinterpret_cast<CfiCallFn>(dlsym(h, "stacks_cfi_call")) : nullptr;
  Dl_info info{};
  if (call == nullptr || dladdr(reinterpret_cast<void*>(call), &info) == 0) {
    std::fprintf(stderr, "%s: %s\n", lib, dlerror());
    return r;
  }
  r.base = info.dli_fbase;
  call(cfi_callback);
  r.n = g_cfi_n;
  for (size_t i = 0; i < g_cfi_n; ++i)
    r.found_caller = r.found_caller || std::strcmp(NameOf(g_cfi_pcs[i]), "cfi_caller") == 0;
  dlclose(h);
  return r;
}

struct CfiThreadArg {
  const char* lib;
  CfiRun run;
};
static CfiRun CfiInNewThread(const char* lib) {
  CfiThreadArg a{lib, {}};
  pthread_t t;
  pthread_create(&t, nullptr, [](void* p) -> void* {
    auto* arg = static_cast<CfiThreadArg*>(p);
    arg->run = cfi_caller(arg->lib);
    return nullptr;
  }, &a);
  pthread_join(t, nullptr);
  return a.run;
}

static void CheckStaleRules(const std::string& dir) {
#if defined(__x86_64__)
  const std::string lie = dir + "/stacks_cfi_lie.so", truth = dir + "/stacks_cfi_truth.so";
  // One thread walks the lying plugin, which is then unloaded.
  const CfiRun first = cfi_caller(lie.c_str());
  Check(first.base != nullptr && first.n > 0, "the lying plugin is walked");
  // Control (what libunwind itself does): without LibunwindUnloaded, a new
  // thread walks the truthful plugin at the same address with the cached
  // lie. Informational: a libunwind that forgets by itself would be fine.
  const CfiRun control = CfiInNewThread(truth.c_str());
  std::fprintf(stderr, "libunwind without a flush: the truthful plugin at the %s address is %s\n",
               control.base == first.base ? "same" : "other",
               control.found_caller ? "walked right" : "walked with the stale rules");
  const CfiRun lie2 = cfi_caller(lie.c_str());  // cache the lie again
  gotrace::unwind::LibunwindUnloaded(true);
  const CfiRun second = CfiInNewThread(truth.c_str());
  if (second.base != lie2.base) {
    std::printf("ok (not checked: the loader put the plugins at different addresses)\n");
    return;
  }
  Check(second.found_caller, "after LibunwindUnloaded, a new thread walks the new code right");
  // This thread walked the lie: it is refused from now on.
  uint64_t pcs[8];
  Check(LibunwindBacktrace(pcs, 8, &t_gen) == 0, "and a thread that walked the old code is refused");
#else
  (void)dir;
#endif
}

__attribute__((noinline)) static void Thrower(int i) {
  if (i >= 0) throw std::runtime_error("probe");
}

int main(int argc, char** argv) {
  (void)argc;
  std::string dir = argv[0];
  dir = dir.find('/') == std::string::npos ? std::string(".") : dir.substr(0, dir.rfind('/'));
  const int low = LowestFreeFd();
  const char* why = nullptr;
  const auto init0 = std::chrono::steady_clock::now();
  const bool ready = gotrace::unwind::LibunwindInit(&why);
  std::fprintf(stderr, "LibunwindInit: %.0f us\n",
               std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - init0).count());
  Check(ready, why != nullptr ? why : "libunwind loaded");
  if (!ready) return 1;
  Check(gotrace::unwind::LibunwindReady(), "LibunwindReady");

  // The program's own scope: no libunwind there.
  Dl_info info{};
  void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
  Check(raise != nullptr && dladdr(raise, &info) != 0 && info.dli_fname != nullptr &&
            std::strstr(info.dli_fname, "libgcc_s") != nullptr,
        "_Unwind_RaiseException is libgcc_s's");
  Check(dlsym(RTLD_DEFAULT, "unw_backtrace") == nullptr, "unw_backtrace is not in the global scope");
  bool caught = false;
  try {
    Thrower(1);
  } catch (const std::runtime_error& e) {
    caught = std::strcmp(e.what(), "probe") == 0;
  }
  Check(caught, "exceptions still work");

  // Descriptors.
  Check(LowestFreeFd() == low, "the program's lowest free descriptor is unchanged");
  int fds[2];
  gotrace::unwind::LibunwindFds(fds);
  Check(fds[0] >= gotrace::unwind::kLibunwindFdFloor && fds[1] >= gotrace::unwind::kLibunwindFdFloor,
        "libunwind's pipe is above the floor");
  Check(fcntl(fds[0], F_GETPIPE_SZ) > 0 && fcntl(fds[1], F_GETPIPE_SZ) > 0, "and it is a pipe");
  Check(gotrace::unwind::IsLibunwindFd(fds[0]) && gotrace::unwind::IsLibunwindFd(fds[1]) &&
            !gotrace::unwind::IsLibunwindFd(low) && !gotrace::unwind::IsLibunwindFd(-1),
        "IsLibunwindFd");

  // The walk: innermost first, from the caller of LibunwindBacktrace.
  uint64_t pcs[64];
  const size_t n = probe_outer(pcs, 64);
  Check(n >= 4 && std::strcmp(NameOf(pcs[0]), "probe_leaf") == 0 &&
            std::strcmp(NameOf(pcs[1]), "probe_middle") == 0 &&
            std::strcmp(NameOf(pcs[2]), "probe_outer") == 0,
        "the walk through code without frame pointers finds every caller");
  for (size_t i = 0; i < n && i < 6; ++i)
    std::fprintf(stderr, "  #%zu %#llx %s\n", i, static_cast<unsigned long long>(pcs[i]), NameOf(pcs[i]));
  Check(probe_outer(pcs, 2) == 2, "the walk stops at max");
  Check(LibunwindBacktrace(pcs, 0, &t_gen) == 0, "max 0 walks nothing");

  // Allocation: none on a thread that walked before; a new thread's first
  // walk may allocate (libunwind's TLS block), its later walks must not.
  const int before = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) probe_outer(pcs, 64);
  const auto t1 = std::chrono::steady_clock::now();
  Check(__atomic_load_n(&g_allocs, __ATOMIC_RELAXED) == before, "no malloc in 10000 walks");
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / 10000;
  std::fprintf(stderr, "walk of %zu frames: %.0f ns (%.1f ns a frame)\n", n, ns, ns / n);
  int allocs[2] = {-1, -1};
  pthread_t t;
  pthread_create(&t, nullptr, ThreadWalks, allocs);
  pthread_join(t, nullptr);
  std::fprintf(stderr, "a new thread's first walk: %d allocations\n", allocs[0]);
  Check(allocs[1] == 0, "no malloc in a thread's later walks");
  gotrace::unwind::LibunwindPrepareThread(&t_gen);
  Check(probe_outer(pcs, 64) == n, "LibunwindPrepareThread keeps the thread walking");

  // After an unload of code that was walked, threads that walked before are
  // refused (their frame caches may be stale), new threads walk.
  gotrace::unwind::LibunwindUnloaded(false);
  Check(probe_outer(pcs, 64) == n, "an unload of code never walked changes nothing");
  gotrace::unwind::LibunwindUnloaded(true);
  Check(probe_outer(pcs, 64) == 0, "an unload of walked code: an older frame cache is refused");
  size_t fresh = 0;
  pthread_create(&t, nullptr, [](void* out) -> void* {
    uint64_t p[64];
    *static_cast<size_t*>(out) = probe_outer(p, 64);
    return nullptr;
  }, &fresh);
  pthread_join(t, nullptr);
  Check(fresh >= 4, "a new thread walks after the unload");
  // On a thread of its own, which walked nothing yet (and ends refused).
  pthread_create(&t, nullptr, [](void* d) -> void* {
    CheckStaleRules(*static_cast<const std::string*>(d));
    return nullptr;
  }, &dir);
  pthread_join(t, nullptr);
  const char* again = nullptr;
  Check(gotrace::unwind::LibunwindInit(&again) && again == nullptr, "LibunwindInit again: ready");
  // The program takes libunwind's descriptor number (dup2): libunwind's use ends.
  gotrace::unwind::LibunwindFdLost();
  Check(!gotrace::unwind::IsLibunwindFd(fds[0]) && !gotrace::unwind::IsLibunwindFd(fds[1]),
        "after LibunwindFdLost the descriptors are not libunwind's");
  size_t after_lost = 1;
  pthread_create(&t, nullptr, [](void* out) -> void* {
    uint64_t p[64];
    *static_cast<size_t*>(out) = probe_outer(p, 64);
    return nullptr;
  }, &after_lost);
  pthread_join(t, nullptr);
  Check(after_lost == 0, "and no thread walks with libunwind");
  std::printf("%d failed\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
