// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_malloc.cc - the malloc family: live heap bytes ------===//
//
// Interposes malloc, free, calloc, realloc, reallocarray, memalign,
// posix_memalign, aligned_alloc, valloc, pvalloc and malloc_usable_size, all
// @GLIBC_2.2.5 (reallocarray @GLIBC_2.26, aligned_alloc @GLIBC_2.16; one
// version each), and keeps the process's live heap bytes, which the trace
// shows as Go's HeapAlloc counter ("Heap" in the trace viewer).
//
// Forwarding: always to dlsym(RTLD_NEXT, name), never to __libc_*, so that an
// allocator preloaded after us (jemalloc, tcmalloc, mimalloc) keeps getting
// every call (H10). The real function does all validation and sets errno; the
// wrappers validate nothing and never touch errno (H9, H31).
//
// Counting: in usable sizes, as the real allocator reports them
// (malloc_usable_size): after the real call for an allocation, before it for
// a free (afterwards the block may belong to another thread already; H9,
// heaptrack's free-before-real-free ordering). Each thread adds to its own
// t_state.heap_delta; the delta is folded into one global atomic only when it
// passes ±kFoldBytes, so the hot path has no shared write and no lock. The
// tracer's own allocations (it allocates and frees only inside a
// TracerScope, or on a thread of its own) are not counted, and neither are
// nested calls of the real allocator into the public names (glibc's
// reallocarray calls realloc through the PLT): the real call runs inside a
// TracerScope. The general paths pass such calls through (InTracer); the
// short ones (glibc's header rule) count them like any other, and the
// TracerScope puts the thread's delta back as it was at its end.
//
// Cost: with tracking off (GOTRACE_EVENTS without heap, tracing disabled)
// each wrapper is one load and one predictable branch before a tail call of
// the real function (free and realloc also check the boot arena, G3). With
// tracking on, the usable size (read from glibc's chunk header when that is
// safe, else the real malloc_usable_size) and a thread-local add per call.
//
// None of these wrappers lock, and none allocate except through the real
// allocator. They are as async-signal-safe as the real allocator (not at
// all); a malloc in a signal handler that interrupts a wrapper is counted
// normally.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "preload/heap.h"
#include "preload/real.h"
#include "preload/runtime.h"
#include "preload/sys/clock.h"
#include "preload/sys/next_symbol.h"
#include "preload/sys/raw.h"

namespace gotrace {
namespace {

// --- The real functions -----------------------------------------------------
//
// Problem: these are resolved apart from preload/real.h's table, lazily, on
// the first call of any of them, because that call comes long before our
// constructor (the loader and libc allocate during start-up, and code in
// other libraries' constructors may run first, H24), and because resolving
// them may allocate: dlsym keeps its error state in memory it mallocs (every
// call before glibc 2.34, a failed one since; H1, google/sanitizers#957). Each slot starts out pointing at a stub that
// resolves the whole table and calls again. While one thread resolves, every
// allocation (its own recursive ones, and any other thread's: waiting could
// deadlock on the loader lock the resolver needs) is served from the boot
// arena below. The slots are never null, so a wrapper with tracking off is a
// load, a test and an indirect tail call.

#define GT_MALLOC_FUNCTIONS(X) \
  X(malloc_usable_size)        \
  X(malloc)                    \
  X(free)                      \
  X(calloc)                    \
  X(realloc)                   \
  X(reallocarray)              \
  X(memalign)                  \
  X(posix_memalign)            \
  X(aligned_alloc)             \
  X(valloc)                    \
  X(pvalloc)

template <typename F>
GT_ALWAYS_INLINE F Real(F& slot) {
  return __atomic_load_n(&slot, __ATOMIC_RELAXED);
}

// --- The boot arena (H1, G3) ------------------------------------------------
//
// Static and page-aligned; bump-allocated with a 16-byte header per block
// (its size and where it starts). Freeing the most recent block rolls the
// bump pointer back, so dlsym's error buffer, allocated and freed over and
// over, does not use the arena up (compiler-rt aed80b5b5). Its pointers are
// recognised by free, realloc and malloc_usable_size and never reach the real
// allocator. When it runs out: one line on stderr, nullptr/ENOMEM.
namespace boot {

constexpr size_t kBytes = size_t{256} << 10;
GT_LARGE_BSS alignas(4096) uint8_t g_mem[kBytes];
std::atomic<size_t> g_top{0};
std::atomic<bool> g_warned{false};

struct Header {
  uint64_t size;   // bytes asked for
  uint64_t start;  // offset of the block's start (the bump pointer before it)
};
static_assert(sizeof(Header) == 16);

GT_ALWAYS_INLINE bool Owns(const void* p) {
  return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_mem) < kBytes;
}

constexpr size_t AlignUp(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }

Header* HeaderOf(const void* p) {
  return reinterpret_cast<Header*>(const_cast<uint8_t*>(static_cast<const uint8_t*>(p)) -
                                   sizeof(Header));
}

GT_NOINLINE void* Alloc(size_t n, size_t align) {
  if (align < 16) align = 16;
  if ((align & (align - 1)) != 0) align = size_t{1} << (64 - __builtin_clzl(align));
  size_t top = g_top.load(std::memory_order_relaxed);
  for (;;) {
    // g_mem is page-aligned: an offset aligned to `align` (<= 4096) is an
    // address aligned to it.
    const size_t user = AlignUp(top + sizeof(Header), align);
    if (align > 4096 || n > kBytes || user + n > kBytes) break;
    const size_t end = AlignUp(user + n, 16);
    if (g_top.compare_exchange_weak(top, end, std::memory_order_acq_rel)) {
      void* p = g_mem + user;
      *HeaderOf(p) = Header{n, top};
      return p;
    }
  }
  if (!g_warned.exchange(true, std::memory_order_relaxed)) {
    sys::Log("the bootstrap allocator (256 KiB, used while the real malloc is being looked up) "
             "is exhausted; allocations fail with ENOMEM until then");
  }
  errno = ENOMEM;
  return nullptr;
}

GT_NOINLINE void Free(void* p) {
  const Header h = *HeaderOf(p);
  size_t end = AlignUp(static_cast<size_t>(static_cast<uint8_t*>(p) - g_mem) + h.size, 16);
  // The most recent block: give its memory back. Any other stays (a leak of
  // at most the arena, only while bootstrapping).
  g_top.compare_exchange_strong(end, h.start, std::memory_order_acq_rel);
}

size_t Size(const void* p) { return HeaderOf(p)->size; }

void* Calloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = Alloc(bytes, 16);
  if (p != nullptr) memset(p, 0, bytes);  // the memory may be reused after a Free
  return p;
}

// realloc of an arena block: into the real allocator when it is there.
GT_NOINLINE void* Realloc(void* p, size_t n) {
  if (n == 0) {  // as glibc: realloc(p, 0) frees p and returns NULL
    Free(p);
    return nullptr;
  }
  void* q = malloc(n);  // our wrapper: counted, or the arena again while resolving
  if (q == nullptr) return nullptr;
  const size_t old = Size(p);
  memcpy(q, p, old < n ? old : n);
  Free(p);
  return q;
}

}  // namespace boot

// --- Stubs: the slots' values until resolved --------------------------------
// Each resolves the table (or finds it being resolved: the arena), then calls
// the real function; a function this C library lacks (pvalloc on musl, say)
// is done with the others, through our wrappers.

enum : uint32_t { kUnresolved = 0, kResolving = 1, kResolved = 2 };
std::atomic<uint32_t> g_resolve{kUnresolved};

bool ResolveSlow();

size_t UsableStub(void* p) noexcept;
void* MallocStub(size_t n) noexcept;
void FreeStub(void* p) noexcept;
void* CallocStub(size_t n, size_t size) noexcept;
void* ReallocStub(void* p, size_t n) noexcept;
void* ReallocarrayStub(void* p, size_t n, size_t size) noexcept;
void* MemalignStub(size_t align, size_t n) noexcept;
int PosixMemalignStub(void** out, size_t align, size_t n) noexcept;
void* AlignedAllocStub(size_t align, size_t n) noexcept;
void* VallocStub(size_t n) noexcept;
void* PvallocStub(size_t n) noexcept;

struct MallocReal {
#define GT_MALLOC_MEMBER(name) decltype(&::name) name;
  GT_MALLOC_FUNCTIONS(GT_MALLOC_MEMBER)
#undef GT_MALLOC_MEMBER
};
// The stubs, also to tell "resolved" from "missing in this libc" afterwards.
// constexpr: constant-initialized, no static constructor (G7).
constexpr MallocReal kStubs = {UsableStub,       MallocStub,       FreeStub,     CallocStub,
                               ReallocStub,      ReallocarrayStub, MemalignStub, PosixMemalignStub,
                               AlignedAllocStub, VallocStub,       PvallocStub};
// Written by ResolveSlow, read with relaxed atomics (a slot holds either its
// stub or the real function, both valid to call).
alignas(64) MallocReal g_real = kStubs;
static_assert(std::is_trivially_destructible_v<MallocReal>);

// True when the table is resolved (each slot holds the real function, or its
// stub if the C library lacks it). False while resolution is under way, in
// this thread (dlsym allocating) or another: use the boot arena.
GT_NOINLINE bool ResolveSlow() {
  uint32_t s = g_resolve.load(std::memory_order_acquire);
  if (s == kResolved) return true;
  if (s != kUnresolved || !g_resolve.compare_exchange_strong(s, kResolving)) {
    return g_resolve.load(std::memory_order_acquire) == kResolved;
  }
  const int saved_errno = errno;
  // malloc_usable_size first: the counting path uses it in every wrapper.
  // (real::Lookup: sys::NextSymbol, which never allocates, before dlsym,
  // whose own allocations the boot arena serves.)
#define GT_MALLOC_RESOLVE(name)                                                  \
  if (void* f = real::Lookup(#name, nullptr)) {                                  \
    __atomic_store_n(&g_real.name, reinterpret_cast<decltype(&::name)>(f),       \
                     __ATOMIC_RELEASE);                                          \
  }
  GT_MALLOC_FUNCTIONS(GT_MALLOC_RESOLVE)
#undef GT_MALLOC_RESOLVE
  g_resolve.store(kResolved, std::memory_order_release);
  errno = saved_errno;
  return true;
}

template <typename F>
bool Resolved(F& slot, F stub) {
  return ResolveSlow() && Real(slot) != stub;
}

size_t UsableStub(void* p) noexcept {
  return Resolved(g_real.malloc_usable_size, kStubs.malloc_usable_size)
             ? Real(g_real.malloc_usable_size)(p)
             : 0;
}
void* MallocStub(size_t n) noexcept {
  return Resolved(g_real.malloc, kStubs.malloc) ? Real(g_real.malloc)(n) : boot::Alloc(n, 16);
}
void FreeStub(void* p) noexcept {
  // Nothing we returned reaches here (arena blocks are caught before); a
  // block from elsewhere before resolution is left alone rather than given
  // to the wrong allocator.
  if (Resolved(g_real.free, kStubs.free)) Real(g_real.free)(p);
}
void* CallocStub(size_t n, size_t size) noexcept {
  return Resolved(g_real.calloc, kStubs.calloc) ? Real(g_real.calloc)(n, size)
                                                : boot::Calloc(n, size);
}
void* ReallocStub(void* p, size_t n) noexcept {
  if (Resolved(g_real.realloc, kStubs.realloc)) return Real(g_real.realloc)(p, n);
  if (p == nullptr) return boot::Alloc(n, 16);
  errno = ENOMEM;  // a foreign block while another thread resolves: cannot move it
  return nullptr;
}
void* ReallocarrayStub(void* p, size_t n, size_t size) noexcept {
  if (Resolved(g_real.reallocarray, kStubs.reallocarray))
    return Real(g_real.reallocarray)(p, n, size);
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}
void* MemalignStub(size_t align, size_t n) noexcept {
  return Resolved(g_real.memalign, kStubs.memalign) ? Real(g_real.memalign)(align, n)
                                                    : boot::Alloc(n, align);
}
int PosixMemalignStub(void** out, size_t align, size_t n) noexcept {
  if (Resolved(g_real.posix_memalign, kStubs.posix_memalign))
    return Real(g_real.posix_memalign)(out, align, n);
  if (align == 0 || (align & (align - 1)) != 0 || align % sizeof(void*) != 0) return EINVAL;
  const int saved_errno = errno;
  void* p = boot::Alloc(n, align);
  errno = saved_errno;
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* AlignedAllocStub(size_t align, size_t n) noexcept {
  if (Resolved(g_real.aligned_alloc, kStubs.aligned_alloc)) return Real(g_real.aligned_alloc)(align, n);
  return g_resolve.load(std::memory_order_acquire) == kResolved ? memalign(align, n)
                                                                 : boot::Alloc(n, align);
}
void* VallocStub(size_t n) noexcept {
  if (Resolved(g_real.valloc, kStubs.valloc)) return Real(g_real.valloc)(n);
  return g_resolve.load(std::memory_order_acquire) == kResolved ? memalign(4096, n)
                                                                 : boot::Alloc(n, 4096);
}
void* PvallocStub(size_t n) noexcept {
  if (Resolved(g_real.pvalloc, kStubs.pvalloc)) return Real(g_real.pvalloc)(n);
  if (n > (size_t{1} << 62)) {
    errno = ENOMEM;
    return nullptr;
  }
  const size_t rounded = boot::AlignUp(n != 0 ? n : 1, 4096);
  return g_resolve.load(std::memory_order_acquire) == kResolved ? memalign(4096, rounded)
                                                                 : boot::Alloc(rounded, 4096);
}

// --- Counting ----------------------------------------------------------------

// Read by every call and written once: a cache line of their own, away from
// the counters that folds write (false sharing would cost more than the rest
// of the wrapper).
struct alignas(64) HotFlags {
  // OnMode. Set by the constructor when GOTRACE_EVENTS includes heap and
  // tracing is ready, after the baseline is in place; kCountedHeader once the
  // header rule is trusted (UsableSlow); cleared by the slow path once
  // tracing is disabled.
  uint32_t on;
  uint32_t glibc_header;  // Header: whether Usable() may read glibc's chunk header (below)
};
HotFlags g_hot = {0, 0};

// A thread's delta is folded into the total once it passes this, either way.
// Error bound of the total: kFoldBytes per live thread, plus kFoldBytes per
// exited thread if the runtime does not call FoldHeapDelta at thread exit.
constexpr int64_t kFoldBytes = int64_t{64} << 10;
constexpr uint64_t kMinStep = uint64_t{1} << 20;  // samples: at least 1 MiB apart...
constexpr uint64_t kStepPermille = 10;            // ... and at least 1% of the last one
constexpr uint64_t kSampleGapUs = 100;            // per thread, between its samples

// (On g's first page: a fork child's frees fold into them. GT_FORK_HOT.)
// g_live: baseline + folded deltas (may dip below 0).
alignas(64) GT_FORK_HOT std::atomic<int64_t> g_live{0};
alignas(64) GT_FORK_HOT std::atomic<uint64_t> g_last{0};  // the last sample recorded
alignas(64) GT_FORK_HOT std::atomic<uint64_t> g_peak{0};  // the highest total since the last sample
uint64_t g_gap_ticks = 0;                      // kSampleGapUs in TSC ticks

// What the wrappers do: forward (off), count through the general path, or
// count through the short one that reads glibc's chunk header (the rule is
// trusted: the wrappers need not look at g_hot.glibc_header again).
enum OnMode : uint32_t { kOff = 0, kCounted = 1, kCountedHeader = 2 };

GT_ALWAYS_INLINE uint32_t Mode() { return __atomic_load_n(&g_hot.on, __ATOMIC_RELAXED); }
GT_ALWAYS_INLINE bool On() { return Mode() != kOff; }

// --- Usable sizes ---------------------------------------------------------------
//
// Problem: the real malloc_usable_size is one more call into the allocator
// per malloc and per free; glibc's also reads the next chunk's header (its
// in-use bit), often another cache line. Profiled on the development machine
// it was 2.5 ns of the 6.3 ns that tracking added to a malloc+free pair,
// over the 6 ns budget. For a block in use, glibc's answer is a function of
// its own chunk header alone: mchunk_size at p - 8, (size & ~7) - 16 if
// IS_MMAPPED (2) is set, else - 8 (malloc.c musable()/memsize(), the same
// since glibc 2.26). So when the real malloc_usable_size is glibc's and
// agrees with that formula on the program's first blocks (runtime
// detection, G12; UsableSlow), the header is read inline; otherwise
// (jemalloc, tcmalloc, mimalloc, a changed glibc) the real function is
// called. x86_64 only: on aarch64 glibc may tag memory (MTE,
// glibc.mem.tagging), and the header then carries another tag than the
// pointer.
constexpr uint64_t kIsMmapped = 2;
GT_ALWAYS_INLINE uint64_t ChunkHeader(const void* p) { return static_cast<const uint64_t*>(p)[-1]; }
// The usable size of a heap block (not IS_MMAPPED) from its header.
GT_ALWAYS_INLINE int64_t HeapBlockUsable(uint64_t header) {
  return static_cast<int64_t>((header & ~uint64_t{7}) - 8);
}
GT_ALWAYS_INLINE uint64_t GlibcUsable(const void* p) {
  const uint64_t size = ChunkHeader(p);
  return static_cast<uint64_t>(HeapBlockUsable(size)) - ((size & kIsMmapped) << 2);
}

// g_hot.glibc_header: the real function only; the header, for blocks from
// the heap; or not known yet: the real function, each of the first
// kVerifyBlocks heap blocks compared with the header's answer.
enum Header : uint32_t { kHeaderReal = 0, kHeaderTrusted = 1, kHeaderVerify = 2 };
constexpr uint32_t kVerifyBlocks = 64;
std::atomic<uint32_t> g_verified{0};

// Problem (issue 18): the header rule used to be checked at start-up on
// test blocks, one of them 33 MiB (mmapped whatever the program did): an
// mmap, a fault and a munmap, and the heap's first use (its brk, its first
// pages) in every process, also in those that allocate nothing: 0.26 ms of
// a short command's start. Now the rule is checked on the program's own
// blocks as they come: the real function answers for each of the first 64
// from the heap, and its answer is compared with the header's; one
// disagreement and the real function answers for good. Blocks glibc
// mmapped (IS_MMAPPED, 128 KiB and up, each an mmap anyway) always ask
// the real function: their rule is never trusted without a test.
__attribute__((noinline)) int64_t UsableSlow(void* p) {
  const auto usable = Real(g_real.malloc_usable_size);
  const uint64_t real = usable(p);
#if defined(__x86_64__)
  if (__atomic_load_n(&g_hot.glibc_header, __ATOMIC_RELAXED) == kHeaderVerify &&
      (ChunkHeader(p) & kIsMmapped) == 0) {
    if (GlibcUsable(p) != real) {
      __atomic_store_n(&g_hot.glibc_header, kHeaderReal, __ATOMIC_RELAXED);
    } else if (g_verified.fetch_add(1, std::memory_order_relaxed) + 1 == kVerifyBlocks) {
      uint32_t expected = kHeaderVerify;
      if (__atomic_compare_exchange_n(&g_hot.glibc_header, &expected, kHeaderTrusted, false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        // The wrappers' short path from now on, unless tracking was
        // switched off meanwhile (then it stays off).
        uint32_t counted = kCounted;
        __atomic_compare_exchange_n(&g_hot.on, &counted, kCountedHeader, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
      }
    }
  }
#endif
  return static_cast<int64_t>(real);
}

GT_ALWAYS_INLINE int64_t Usable(void* p) {
#if defined(__x86_64__)
  if (GT_LIKELY(g_hot.glibc_header == kHeaderTrusted)) {
    const uint64_t header = ChunkHeader(p);
    if (GT_LIKELY((header & kIsMmapped) == 0)) return HeapBlockUsable(header);
  }
#endif
  return UsableSlow(p);
}

// Whether two functions are defined in the same loaded object.
bool SameObject(const void* a, const void* b) {
  uintptr_t base_a = 0, base_b = 0;
  const char* name;
  return ObjectOf(a, &base_a, &name) && ObjectOf(b, &base_b, &name) && base_a == base_b;
}

// Whether the header rule may be tried at all: the real malloc_usable_size
// is glibc's (not jemalloc's, tcmalloc's, mimalloc's).
bool GlibcAllocator() {
#if defined(__x86_64__)
  void* libc_fn = sys::DlsymQuiet(RTLD_DEFAULT, "gnu_get_libc_version");
  const auto usable = Real(g_real.malloc_usable_size);
  return libc_fn != nullptr && SameObject(reinterpret_cast<void*>(usable), libc_fn);
#else
  return false;
#endif
}

enum class Sample {
  kRateLimited,  // from the hot path: the step and the thread's 100 µs gap
  kThreadExit,   // FoldHeapDelta: the step only (once per thread)
  kFinal,        // process exit: whatever changed
};

// Problem: how many samples, and which. A sample is recorded when the total
// moved by max(1 MiB, 1% of the last sample) since the last one; a thread
// records at most one every 100 µs; and when the total has fallen from a
// peak that no sample showed, the peak is recorded first, so the maximum is
// on the curve. Volume bound: consecutive samples differ by >= 1 MiB, so a
// run records at most 2 x (bytes allocated + bytes freed) / 1 MiB samples
// (x2 for the peaks), and never more than 2 x 10,000 per second per thread;
// above 100 MiB live the 1% step makes it logarithmic in the size. A program
// churning 1 GB/s of short-lived blocks moves the total by little and
// records almost nothing; one growing by 1 GB/s records at most ~1,000
// samples/s (1 MiB steps; fewer once the 1% step is larger), 10 bytes each
// in the log. Faithfulness: a sample is at most one step plus
// kFoldBytes per thread away from the true total, and the last 100 µs of a
// thread's changes show up at its next fold, thread exit or process exit.
void SampleSlow(uint64_t v, Sample mode) {
  const Phase phase = g.phase.load(std::memory_order_relaxed);
  if (phase != Phase::kReady) {
    // Disabled for good: stop counting. Shut down (at exit, or before an
    // exec that may fail and resume tracing): keep counting, record nothing.
    if (phase == Phase::kDisabled) __atomic_store_n(&g_hot.on, 0, __ATOMIC_RELAXED);
    return;
  }
  uint64_t peak = g_peak.load(std::memory_order_relaxed);
  while (v > peak && !g_peak.compare_exchange_weak(peak, v, std::memory_order_relaxed)) {
  }
  uint64_t last = g_last.load(std::memory_order_relaxed);
  const uint64_t diff = v > last ? v - last : last - v;
  const uint64_t step = std::max(kMinStep, last / 1000 * kStepPermille);
  const uint64_t hidden_peak = std::max(last, v) + step / 16;  // a peak above this is shown
  if (mode == Sample::kFinal ? diff == 0 && peak <= hidden_peak : diff < step) return;
  // Only a thread the runtime knows records (RecordHeap registers a new
  // one, but the main thread must not be registered before main() is known,
  // or it would lose its name: that happens in __libc_start_main).
  if (t_state.rec == nullptr &&
      (t_state.status != kThreadNew || g.main_pc.load(std::memory_order_relaxed) == 0)) {
    return;
  }
  // Inside a hook or the tracer RecordHeap records nothing: leave the
  // sample to the next fold rather than claim it and lose it.
  if (t_state.depth != 0) return;
  const Tick now = sys::Ticks();
  if (mode == Sample::kRateLimited && now - t_state.heap_emit < g_gap_ticks) return;
  // Claim the sample; another thread that claimed one meanwhile wins.
  if (!g_last.compare_exchange_strong(last, v, std::memory_order_relaxed)) return;
  t_state.heap_emit = now;
  const uint64_t p = g_peak.exchange(v, std::memory_order_relaxed);
  if (p > hidden_peak) RecordHeap(p);
  RecordHeap(v);
}

// Folds this thread's delta into the total and samples it. Inside the
// tracer the delta is the tracer's own (the short paths count without
// asking; see "The short paths"): dropped, and the TracerScope puts the
// program's back at its end.
GT_NOINLINE void FoldSlow(Sample mode) {
  if (InTracer()) {
    t_state.heap_delta = 0;
    return;
  }
  const int saved_errno = errno;  // H31: registration and spills may touch it
  const int64_t d = t_state.heap_delta;
  t_state.heap_delta = 0;
  const int64_t total = g_live.fetch_add(d, std::memory_order_relaxed) + d;
  // Memory allocated before tracing and freed during it is in the baseline;
  // what the baseline missed could take the total below zero: clamp.
  SampleSlow(total > 0 ? static_cast<uint64_t>(total) : 0, mode);
  errno = saved_errno;
}

// Adds to this thread's delta; true when it is time to fold (|delta| >
// kFoldBytes, in one unsigned comparison).
GT_ALWAYS_INLINE bool AddDelta(int64_t bytes) {
  const int64_t v = t_state.heap_delta + bytes;
  t_state.heap_delta = v;
  return static_cast<uint64_t>(v + kFoldBytes) > static_cast<uint64_t>(2 * kFoldBytes);
}

GT_ALWAYS_INLINE void Account(int64_t bytes) {
  if (GT_UNLIKELY(AddDelta(bytes))) FoldSlow(Sample::kRateLimited);
}

// The allocation pattern shared by malloc, calloc, memalign, aligned_alloc,
// valloc and pvalloc: call the real function inside a TracerScope (nested
// public calls pass through), count the block.
template <typename F, typename... Args>
GT_ALWAYS_INLINE void* CountedAlloc(F real, Args... args) {
  void* p;
  if (GT_LIKELY(g_hot.glibc_header == kHeaderTrusted)) {
    // glibc's allocator calls none of our interposers (its memory comes
    // from internal brk and mmap calls): no scope to enter and leave, two
    // stores of the thread's state less per call (issue 18's allocation
    // storm: about 0.5 ns of the 3.5 tracking adds to a malloc+free pair).
    p = real(args...);
  } else {
    TracerScope nested;
    p = real(args...);
  }
  if (GT_LIKELY(p != nullptr)) Account(Usable(p));
  return p;
}

// realloc and reallocarray: `old` was measured before the call.
GT_ALWAYS_INLINE void CountRealloc(void* p, void* q, int64_t old, bool zero_bytes) {
  if (q != nullptr) {
    Account(Usable(q) - old);
  } else if (p != nullptr && zero_bytes) {
    // realloc(p, 0) returned NULL: glibc and jemalloc (opt.zero_realloc:free,
    // its default) freed p. A failed realloc (NULL for a nonzero size) left
    // p alone.
    Account(-old);
  }
}

// --- Counted calls (tracking on) ---------------------------------------------
// Out of line, so that a wrapper with tracking off stays a tail call. Inside
// the tracer (TracerScope: InTracer()) nothing is counted: the tracer
// allocates and frees only there, so its blocks are never counted, and
// nested calls from the real allocator (reallocarray -> realloc) are inside
// our own TracerScope. What libc allocates inside a traced call (a HookScope:
// getaddrinfo's result list) is the program's and counts, as does its free
// outside any hook (freeaddrinfo): heap_gai checks that the total does not
// drift.
GT_ALWAYS_INLINE bool Uncounted() { return InTracer(); }
//
// malloc and free run without a frame pointer: no stack is ever captured
// while they are on the stack (what runs under them is inside a TracerScope
// or the real allocator), and a frame-pointer walk from below them still
// reaches their caller. Measured with the shorter size formula in
// GlibcUsable: about 1 ns of a malloc+free pair.
#define GT_NO_FRAME_POINTER __attribute__((optimize("omit-frame-pointer")))
#define GT_HOT_PATH GT_NO_FRAME_POINTER GT_NOINLINE

GT_HOT_PATH void* MallocCounted(size_t n) {
  const auto real = Real(g_real.malloc);
  if (Uncounted()) return real(n);
  return CountedAlloc(real, n);
}

// The rare free that also folds: after the real free, so that FreeCounted
// itself makes no call and needs no frame.
GT_NOINLINE void FreeThenFold(decltype(&::free) real, void* p) {
  real(p);
  FoldSlow(Sample::kRateLimited);
}

GT_HOT_PATH void FreeCounted(void* p) {
  const auto real = Real(g_real.free);
  if (Uncounted() || p == nullptr) return real(p);
  // Counted before the real free: the size is gone after it (H9).
  if (GT_UNLIKELY(AddDelta(-Usable(p)))) return FreeThenFold(real, p);
  return real(p);
}

// --- The short paths (kCountedHeader) ---------------------------------------
// glibc's allocator, its header rule trusted: the malloc and free wrappers
// themselves count a heap block by its chunk header, with no jump to a
// counted function and no second look at the rule. What is rare leaves by
// a tail call (a block glibc mmapped, a fold), so that malloc keeps only the
// thread pointer's offset across its call of the real malloc and free needs
// no frame at all. Measured (heap_bench --storm, 10 M pairs, whole
// processes, interleaved medians, 2026-11-27): one thread 1.34 -> 1.24 of
// the untraced time, two threads 1.33 -> 1.30 and 1.38 -> 1.27 (two runs).
// Nor do they ask whether they run inside the tracer (a thread-local load
// and a branch on each side): what the tracer allocates and frees is
// counted into the thread's delta like the program's, and dropped by its
// TracerScope's end (runtime.h) or, on a thread of its own, by FoldSlow.

// A block glibc mmapped: its size from the real function.
GT_NOINLINE void* AccountMappedThenReturn(void* p) {
  Account(UsableSlow(p));
  return p;
}

GT_NOINLINE void* FoldThenReturn(void* p) {
  FoldSlow(Sample::kRateLimited);
  return p;
}

GT_ALWAYS_INLINE void* MallocHeader(size_t n) {
  const auto real = Real(g_real.malloc);
  void* const p = real(n);
  if (GT_UNLIKELY(p == nullptr)) return p;
  const uint64_t header = ChunkHeader(p);
  if (GT_UNLIKELY((header & kIsMmapped) != 0)) return AccountMappedThenReturn(p);
  if (GT_UNLIKELY(AddDelta(HeapBlockUsable(header)))) return FoldThenReturn(p);
  return p;
}

// free's short path, inlined into the wrapper (which makes no other call).
GT_ALWAYS_INLINE void FreeHeader(decltype(&::free) real, void* p) {
  if (p == nullptr) return real(p);
  const uint64_t header = ChunkHeader(p);
  if (GT_UNLIKELY((header & kIsMmapped) != 0)) return FreeCounted(p);  // asks the real function
  if (GT_UNLIKELY(AddDelta(-HeapBlockUsable(header)))) return FreeThenFold(real, p);
  return real(p);
}

GT_NOINLINE void* CallocCounted(size_t n, size_t size) {
  const auto real = Real(g_real.calloc);
  if (Uncounted()) return real(n, size);
  return CountedAlloc(real, n, size);
}

GT_NOINLINE void* ReallocCounted(void* p, size_t n) {
  const auto real = Real(g_real.realloc);
  if (Uncounted()) return real(p, n);
  const int64_t old = p != nullptr ? Usable(p) : 0;
  void* q;
  {
    TracerScope nested;
    q = real(p, n);
  }
  CountRealloc(p, q, old, n == 0);
  return q;
}

// glibc's reallocarray checks for overflow and calls realloc through the
// PLT: that nested call passes through (TracerScope), this one counts.
GT_NOINLINE void* ReallocarrayCounted(void* p, size_t n, size_t size) {
  const auto real = Real(g_real.reallocarray);
  if (Uncounted()) return real(p, n, size);
  const int64_t old = p != nullptr ? Usable(p) : 0;
  void* q;
  {
    TracerScope nested;
    q = real(p, n, size);
  }
  CountRealloc(p, q, old, n == 0 || size == 0);
  return q;
}

GT_NOINLINE void* MemalignCounted(size_t align, size_t n) {
  const auto real = Real(g_real.memalign);
  if (Uncounted()) return real(align, n);
  return CountedAlloc(real, align, n);
}

GT_NOINLINE int PosixMemalignCounted(void** out, size_t align, size_t n) {
  const auto real = Real(g_real.posix_memalign);
  if (Uncounted()) return real(out, align, n);
  int rc;
  {
    TracerScope nested;
    rc = real(out, align, n);
  }
  if (rc == 0 && *out != nullptr) Account(Usable(*out));
  return rc;
}

GT_NOINLINE void* AlignedAllocCounted(size_t align, size_t n) {
  const auto real = Real(g_real.aligned_alloc);
  if (Uncounted()) return real(align, n);
  return CountedAlloc(real, align, n);
}

GT_NOINLINE void* VallocCounted(size_t n) {
  const auto real = Real(g_real.valloc);
  if (Uncounted()) return real(n);
  return CountedAlloc(real, n);
}

GT_NOINLINE void* PvallocCounted(size_t n) {
  const auto real = Real(g_real.pvalloc);
  if (Uncounted()) return real(n);
  return CountedAlloc(real, n);
}

// --- Start and exit ------------------------------------------------------------

void AtExit() {
  if (On() && !Uncounted()) FoldSlow(Sample::kFinal);
}

}  // namespace

// A forked child starts a trace of its own with the parent's heap (and this
// thread's pending delta): its first fold records the total, whatever the
// parent last recorded. Other threads' pending deltas (< kFoldBytes each)
// are lost with them. When its log starts (StartForkChildLog), not at the
// fork: a shell's child that only execs never writes these pages (each was
// a copy-on-write fault per command, issue 18).
void HeapForkChildLogStart() {
  g_last.store(0, std::memory_order_relaxed);
  g_peak.store(0, std::memory_order_relaxed);
  t_state.heap_emit = 0;
}

namespace {

// glibc's own count of what is allocated now, when malloc is glibc's: the
// memory allocated before tracing began, which the program may free while
// traced. Zero when mallinfo2 is missing (glibc < 2.33) or another allocator
// is in use (its malloc and glibc's mallinfo2 are in different objects).
uint64_t Baseline() {
  using MallInfo2 = struct mallinfo2 (*)();
  const auto info = reinterpret_cast<MallInfo2>(sys::DlsymQuiet(RTLD_NEXT, "mallinfo2"));
  const auto m = Real(g_real.malloc);
  if (info == nullptr || !SameObject(reinterpret_cast<void*>(m), reinterpret_cast<void*>(info)))
    return 0;
  const struct mallinfo2 mi = info();
  return mi.uordblks + mi.hblkhd;
}

// After the runtime's constructor (101), which makes the phase kReady. The
// atexit handler registered here runs before the runtime's (atexit is LIFO),
// while the phase is still kReady, and after the program's own atexit
// handlers and static destructors, registered later.
__attribute__((constructor(102))) void InitHeap() {
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady || (g.events & kGroupHeap) == 0)
    return;
  TracerScope tracer;
  // Counting needs the real allocator's own malloc, free and usable size.
  if (!ResolveSlow() || g_real.malloc == kStubs.malloc || g_real.free == kStubs.free ||
      g_real.malloc_usable_size == kStubs.malloc_usable_size) {
    return;
  }
  g_hot.glibc_header = GlibcAllocator() ? kHeaderVerify : kHeaderReal;
  g_gap_ticks = sys::EstimateTicksPerSecond(g.start_ticks, g.start_ns) / 1'000'000 * kSampleGapUs;
  const uint64_t base = Baseline();
  g_live.store(static_cast<int64_t>(base), std::memory_order_relaxed);
  g_peak.store(base, std::memory_order_relaxed);  // shown if it is never exceeded
  atexit(AtExit);
  __atomic_store_n(&g_hot.on, kCounted, __ATOMIC_RELEASE);
}

}  // namespace

void FoldHeapDelta() {
  if (On()) FoldSlow(Sample::kThreadExit);
}

void FinishHeap() { AtExit(); }

}  // namespace gotrace

using namespace gotrace;

// --- The interposers ------------------------------------------------------------
// Tracking off: a load, a test and a tail call of the real function (free
// and realloc first look for an arena block, G3). Tracking on: malloc and
// free count inline when glibc's header rule is trusted (the short paths
// above); otherwise, and the other functions always, the counted call, out
// of line.

GT_EXPORT GT_NO_FRAME_POINTER void* malloc(size_t n) noexcept {
  const uint32_t mode = Mode();
  if (GT_LIKELY(mode == kOff)) return Real(g_real.malloc)(n);
  if (GT_LIKELY(mode == kCountedHeader)) return MallocHeader(n);
  return MallocCounted(n);
}

GT_EXPORT void free(void* p) noexcept {
  if (GT_UNLIKELY(boot::Owns(p))) return boot::Free(p);
  const uint32_t mode = Mode();
  if (GT_LIKELY(mode == kOff)) return Real(g_real.free)(p);
  if (GT_LIKELY(mode == kCountedHeader)) return FreeHeader(Real(g_real.free), p);
  return FreeCounted(p);
}

GT_EXPORT void* calloc(size_t n, size_t size) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.calloc)(n, size);
  return CallocCounted(n, size);
}

GT_EXPORT void* realloc(void* p, size_t n) noexcept {
  if (GT_UNLIKELY(boot::Owns(p))) return boot::Realloc(p, n);
  if (GT_LIKELY(!On())) return Real(g_real.realloc)(p, n);
  return ReallocCounted(p, n);
}

GT_EXPORT void* reallocarray(void* p, size_t n, size_t size) noexcept {
  if (GT_UNLIKELY(boot::Owns(p))) {
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
      errno = ENOMEM;
      return nullptr;
    }
    return boot::Realloc(p, bytes);
  }
  if (GT_LIKELY(!On())) return Real(g_real.reallocarray)(p, n, size);
  return ReallocarrayCounted(p, n, size);
}

GT_EXPORT void* memalign(size_t align, size_t n) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.memalign)(align, n);
  return MemalignCounted(align, n);
}

GT_EXPORT int posix_memalign(void** out, size_t align, size_t n) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.posix_memalign)(out, align, n);
  return PosixMemalignCounted(out, align, n);
}

GT_EXPORT void* aligned_alloc(size_t align, size_t n) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.aligned_alloc)(align, n);
  return AlignedAllocCounted(align, n);
}

GT_EXPORT void* valloc(size_t n) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.valloc)(n);
  return VallocCounted(n);
}

GT_EXPORT void* pvalloc(size_t n) noexcept {
  if (GT_LIKELY(!On())) return Real(g_real.pvalloc)(n);
  return PvallocCounted(n);
}

// Needed for arena blocks (H1); otherwise a plain forward.
GT_EXPORT size_t malloc_usable_size(void* p) noexcept {
  if (GT_UNLIKELY(boot::Owns(p))) return boot::Size(p);
  return Real(g_real.malloc_usable_size)(p);
}
