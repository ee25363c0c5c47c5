// SPDX-License-Identifier: Apache-2.0
//===-- unwind/code_map.cc - executable ranges and unwind tables of the process -===//
#include "unwind/code_map.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/syscall.h>
#include <time.h>

#include <algorithm>
#include <cstddef>

#include "preload/sys/next_symbol.h"
#include "preload/sys/raw.h"

namespace gotrace::unwind {
namespace {

// G7: in .bss (every member is zero-initialised), never destroyed.
GT_LARGE_BSS constinit CodeMap g_code_map;

// Whether this thread is inside a module read: a dlclose from a signal
// handler that interrupted it must not wait for itself.
__thread bool t_reading __attribute__((tls_model("initial-exec")));

// Readers copy what the single writer may be rewriting: relaxed atomic
// loads, validated by the version afterwards (seqlock).
template <class T>
T Ld(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_RELAXED);
}

struct ScanCtx {
  bool force = false;
  bool first = true;
  bool unchanged = false;        // the loader's counters did not move
  bool had_counters = false;     // `adds`/`subs` hold a previous rebuild's counters
  unsigned long long adds = 0, subs = 0;
  bool subs_moved = false;       // something was unloaded since the last rebuild
  size_t nranges = 0, nmodules = 0;
  CodeRange* ranges = nullptr;
  CodeModule* modules = nullptr;
};

int OnObject(dl_phdr_info* info, size_t size, void* arg) {
  auto* c = static_cast<ScanCtx*>(arg);
  if (c->first) {
    c->first = false;
    // dlpi_adds/dlpi_subs count the loads and unloads since the start.
    if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
      const bool same = c->had_counters && info->dlpi_adds == c->adds && info->dlpi_subs == c->subs;
      c->subs_moved = c->had_counters && info->dlpi_subs != c->subs;
      c->adds = info->dlpi_adds;
      c->subs = info->dlpi_subs;
      if (same && !c->force) {
        c->unchanged = true;
        return 1;
      }
    }
  }
  if (c->nmodules == kMaxCodeModules) return 1;
  CodeModule& m = c->modules[c->nmodules];
  m = CodeModule{};
  m.bias = info->dlpi_addr;
  const size_t first_range = c->nranges;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    const uintptr_t hi = lo + ph.p_memsz;
    if (ph.p_type == PT_GNU_EH_FRAME) {
      m.eh_frame_hdr = lo;
      m.eh_frame_hdr_len = ph.p_memsz;
    }
    if (ph.p_type != PT_LOAD || hi <= lo) continue;
    if ((ph.p_flags & PF_R) != 0 && m.nseg < kMaxModuleSegments) {
      m.seg_lo[m.nseg] = lo;
      m.seg_hi[m.nseg] = hi;
      ++m.nseg;
    }
    if ((ph.p_flags & PF_X) != 0 && c->nranges < kMaxCodeRanges) {
      c->ranges[c->nranges++] = CodeRange{lo, hi, static_cast<uint32_t>(c->nmodules)};
    }
  }
  if (c->nranges > first_range) ++c->nmodules;  // objects without code are not needed
  return 0;
}

// glibc >= 2.35 (resolved at run time: the library also runs on 2.34).
using FindObjectFn = int (*)(void*, dl_find_object*);
std::atomic<FindObjectFn> g_find_object{nullptr};

}  // namespace

CodeMap& ProcessCode() { return g_code_map; }

void LoaderLookupInit() {
  if (g_find_object.load(std::memory_order_acquire) != nullptr) return;
  g_find_object.store(
      reinterpret_cast<FindObjectFn>(sys::DlsymQuiet(RTLD_DEFAULT, "_dl_find_object")),
      std::memory_order_release);
}

bool LoaderHasNewObjectAt(const CodeMap& map, uintptr_t pc) {
  const FindObjectFn find = g_find_object.load(std::memory_order_acquire);
  if (find == nullptr) return true;
  dl_find_object o;
  if (find(reinterpret_cast<void*>(pc), &o) != 0) return false;
  return !map.HasCodeIn(reinterpret_cast<uintptr_t>(o.dlfo_map_start),
                        reinterpret_cast<uintptr_t>(o.dlfo_map_end));
}

// A page of ours about to be written, mapped in by a system call.
static void Prefault(const void* p) {
  (void)sys::PopulateWrite(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095}), 4096);
}

bool CodeMap::Update(bool force) {
  // The first build writes three pages far apart (the map's counters, the
  // first ranges, the first modules): a system call each maps them in, not
  // a page fault each (issue 18: 12 to 35 us apiece on the VMs measured; a
  // short process builds the map once).
  if (!built_) Prefault(&version_);
  const uint32_t v = version_.load(std::memory_order_relaxed);
  Snapshot& next = snap_[(v + 1) & 1];
  // Readers of the snapshot we are about to rewrite hold an older version:
  // they see the version move and discard what they read (seqlock).
  std::atomic_thread_fence(std::memory_order_release);
  const uint32_t unmapped = unmapped_.load(std::memory_order_seq_cst);
  ScanCtx c;
  c.force = force;
  c.had_counters = built_;
  c.adds = seen_adds_;
  c.subs = seen_subs_;
  c.ranges = next.ranges;
  c.modules = next.modules;
  if (!built_) {
    Prefault(&next.ranges[0]);
    Prefault(&next.modules[0]);
  }
  dl_iterate_phdr(OnObject, &c);
  if (c.unchanged) {
    // Nothing loaded or unloaded: the current map stands, and it reflects
    // every unload that ended before this call (a dlclose that unmapped
    // something also moved dlpi_subs).
    valid_for_.store(unmapped, std::memory_order_release);
    return false;
  }
  built_ = !c.first;
  seen_adds_ = c.adds;
  seen_subs_ = c.subs;
  std::sort(next.ranges, next.ranges + c.nranges,
            [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  next.nranges = c.nranges;
  next.nmodules = c.nmodules;
  version_.store(v + 1, std::memory_order_release);
  // Code may have gone (an unload the program's dlclose did not announce):
  // rows cached for its addresses are stale.
  if (c.subs_moved) gen_.fetch_add(1, std::memory_order_acq_rel);
  valid_for_.store(unmapped, std::memory_order_release);
  return true;
}

void CodeMap::SetForTest(const CodeRange* ranges, size_t nranges, const CodeModule* modules,
                         size_t nmodules) {
  const uint32_t v = version_.load(std::memory_order_relaxed);
  Snapshot& next = snap_[(v + 1) & 1];
  std::atomic_thread_fence(std::memory_order_release);
  nranges = std::min(nranges, kMaxCodeRanges);
  nmodules = std::min(nmodules, kMaxCodeModules);
  std::copy(ranges, ranges + nranges, next.ranges);
  std::copy(modules, modules + nmodules, next.modules);
  std::sort(next.ranges, next.ranges + nranges,
            [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  next.nranges = nranges;
  next.nmodules = nmodules;
  built_ = false;
  version_.store(v + 1, std::memory_order_release);
  gen_.fetch_add(1, std::memory_order_acq_rel);
  valid_for_.store(unmapped_.load(std::memory_order_seq_cst), std::memory_order_release);
}

const CodeRange* CodeMap::Find(const Snapshot& s, uintptr_t pc) {
  size_t lo = 0, hi = std::min(Ld(s.nranges), kMaxCodeRanges);
  // The last range starting at or below pc.
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (Ld(s.ranges[mid].lo) <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return nullptr;
  const CodeRange& r = s.ranges[lo - 1];
  return pc < Ld(r.hi) ? &r : nullptr;
}

bool CodeMap::IsCodeSlow(uintptr_t pc, CodeMemo* memo) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint32_t v = version_.load(std::memory_order_acquire);
    const Snapshot& s = snap_[v & 1];
    const CodeRange* r = Find(s, pc);
    uintptr_t lo = 0, hi = 0;
    if (r != nullptr) {
      lo = Ld(r->lo);
      hi = Ld(r->hi);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (version_.load(std::memory_order_relaxed) != v) continue;  // rebuilt meanwhile
    if (r == nullptr || pc < lo || pc >= hi) return false;
    if (memo != nullptr) *memo = CodeMemo{v, lo, hi};
    return true;
  }
  return false;  // the map keeps moving: not proven to be code
}

bool CodeMap::ModuleOf(uintptr_t pc, CodeModule* out) const {
  const uint32_t v = version_.load(std::memory_order_acquire);
  const Snapshot& s = snap_[v & 1];
  const CodeRange* r = Find(s, pc);
  if (r == nullptr) return false;
  const uint32_t i = Ld(r->module);
  if (i >= std::min(Ld(s.nmodules), kMaxCodeModules)) return false;
  const CodeModule& m = s.modules[i];
  out->bias = Ld(m.bias);
  out->eh_frame_hdr = Ld(m.eh_frame_hdr);
  out->eh_frame_hdr_len = Ld(m.eh_frame_hdr_len);
  out->nseg = std::min<uint32_t>(Ld(m.nseg), kMaxModuleSegments);
  for (uint32_t k = 0; k < out->nseg; ++k) {
    out->seg_lo[k] = Ld(m.seg_lo[k]);
    out->seg_hi[k] = Ld(m.seg_hi[k]);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return version_.load(std::memory_order_relaxed) == v;
}

bool CodeMap::HasCodeIn(uintptr_t lo, uintptr_t hi) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint32_t v = version_.load(std::memory_order_acquire);
    const Snapshot& s = snap_[v & 1];
    // The first range starting at or above lo.
    size_t a = 0, b = std::min(Ld(s.nranges), kMaxCodeRanges);
    while (a < b) {
      const size_t mid = a + (b - a) / 2;
      if (Ld(s.ranges[mid].lo) < lo) a = mid + 1;
      else b = mid;
    }
    const bool found = a < std::min(Ld(s.nranges), kMaxCodeRanges) && Ld(s.ranges[a].lo) < hi;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (version_.load(std::memory_order_relaxed) == v) return found;
  }
  return false;  // the map keeps moving: worth a rebuild
}

size_t CodeMap::ranges() const {
  return Ld(snap_[version_.load(std::memory_order_acquire) & 1].nranges);
}

void CodeMap::UnloadBegin() {
  unloading_.fetch_add(1, std::memory_order_seq_cst);
  if (t_reading) return;  // a handler interrupted this thread's own read
  // Module reads are a bounded parse of one FDE: microseconds, never waiting.
  if (readers_.load(std::memory_order_seq_cst) == 0) return;
  timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (unsigned spins = 1; readers_.load(std::memory_order_seq_cst) != 0; ++spins) {
    sys::Syscall6(SYS_sched_yield);
    if (spins % 1024 != 0) continue;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= 2) return;  // a read that will not end (see the header)
  }
}

void CodeMap::AfterFork() {
  // Written only if not already zero: a store would copy the page in every
  // fork child (a shell's), for nothing in the usual case.
  if (readers_.load(std::memory_order_relaxed) != 0) readers_.store(0, std::memory_order_relaxed);
  if (unloading_.load(std::memory_order_relaxed) != 0) unloading_.store(0, std::memory_order_relaxed);
}

void CodeMap::UnloadEnd() {
  // The map may still list what was unmapped: no module reads through it
  // until it is rebuilt (valid_for_ catches up), and no cached row of the
  // old generation is used again.
  unmapped_.fetch_add(1, std::memory_order_seq_cst);
  gen_.fetch_add(1, std::memory_order_acq_rel);
  unloading_.fetch_sub(1, std::memory_order_seq_cst);
}

CodeMap::ModuleReadScope::ModuleReadScope(CodeMap& m) : m_(m), prev_reading_(t_reading) {
  t_reading = true;
  m_.readers_.fetch_add(1, std::memory_order_seq_cst);
  if (m_.unloading_.load(std::memory_order_seq_cst) != 0) return;
  if (m_.valid_for_.load(std::memory_order_acquire) != m_.unmapped_.load(std::memory_order_acquire)) {
    stale_ = true;
    return;
  }
  ok_ = true;
}

CodeMap::ModuleReadScope::~ModuleReadScope() {
  m_.readers_.fetch_sub(1, std::memory_order_release);
  t_reading = prev_reading_;
}

}  // namespace gotrace::unwind
