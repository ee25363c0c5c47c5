// SPDX-License-Identifier: Apache-2.0
//===-- unwind/cfi_unwind.cc - stack walks: frame pointers or DWARF CFI ---===//
#include "unwind/cfi_unwind.h"

#include <atomic>

#include "preload/sys/raw.h"

namespace gotrace::unwind {
namespace {

// 2^15 rows of 32 bytes: 1 MiB reserved, a page committed per 128 rows
// touched. A large interpreter's waits meet a few thousand return addresses.
constexpr unsigned kRowCacheLog2 = 15;

// The stack words a walk read, in order (WalkMemo). A walk whose tape fills
// up is not memoized.
struct Tape {
  WalkMemo* memo;
  uint32_t n;
  bool full;
  bool uses_fp;  // the start's fp was used
  void Note(uintptr_t lo, uintptr_t a, uintptr_t v) {
    if (n == WalkMemo::kMaxReads || a - lo > UINT32_MAX) {
      full = true;
      return;
    }
    memo->read_off[n] = static_cast<uint32_t>(a - lo);
    memo->read_val[n] = v;
    ++n;
  }
};

// A word of the stack, if it is inside the bounds and aligned. With a tape,
// noted as read (the walk depends on its value).
inline bool ReadStack(FpBounds b, uintptr_t a, uintptr_t* v, Tape* t = nullptr) {
  if ((a & 7) != 0 || a < b.lo || b.hi < 8 || a > b.hi - 8) return false;
  *v = StackWord(b, a);
  if (t != nullptr) t->Note(b.lo, a, *v);
  return true;
}

// A frame pointer's value is about to be used (r.fp_valid): the walk
// depends on the word it was read from, or on the start's fp.
inline void UseFp(const Regs& r, FpBounds b, Tape* t) {
  if (t == nullptr) return;
  if (r.fp_at == 0) {
    t->uses_fp = true;
  } else {
    t->Note(b.lo, r.fp_at, r.fp);
  }
}

struct Lookup {
  uint32_t gen;  // the code map's generation when the walk began
  CodeMemo memo;
  bool stale_map = false;
};

// Problem (issue 18): a short process's first walks through an object
// binary-search its .eh_frame_hdr table and read FDEs and CIEs all over
// .eh_frame, file pages this process has not touched yet: about 15 page
// faults for one grep's few stacks, at 13 to 20 us each on the VMs
// measured. The first time a walk needs an object's tables, one madvise
// maps them all in (from .eh_frame_hdr to the end of its segment: the
// table, then .eh_frame; at most 2 MiB), about 2 us plus a little per page.
// Once per object per process (the objects seen: a fixed set, lock-free; a
// process with more objects than that maps the others in by faults).
GT_LARGE_BSS std::atomic<uintptr_t> g_tables_mapped[128];

void MapInTables(const CodeModule& m) {
  const uintptr_t hdr = m.eh_frame_hdr;
  if (hdr == 0) return;
  for (std::atomic<uintptr_t>& slot : g_tables_mapped) {
    uintptr_t v = slot.load(std::memory_order_relaxed);
    if (v == hdr) return;
    if (v != 0) continue;
    if (!slot.compare_exchange_strong(v, hdr, std::memory_order_relaxed)) {
      if (v == hdr) return;
      continue;
    }
    for (uint32_t i = 0; i < m.nseg; ++i) {
      if (hdr < m.seg_lo[i] || hdr >= m.seg_hi[i]) continue;
      const uintptr_t lo = hdr & ~uintptr_t{4095};
      const uintptr_t hi = std::min<uintptr_t>(m.seg_hi[i], lo + (uintptr_t{2} << 20));
      (void)sys::PopulateRead(reinterpret_cast<void*>(lo), hi - lo);
      break;
    }
    return;
  }
}

// A row-cache miss: decode pc's row from its object's tables (and cache it).
__attribute__((noinline)) bool RowForSlow(const UnwindContext& cx, uintptr_t pc, UnwindRow* row,
                                          Lookup* lk);

// The row for return address pc. False if pc is not code.
inline bool RowFor(const UnwindContext& cx, uintptr_t pc, UnwindRow* row, Lookup* lk) {
  if (cx.rows->Find(pc, lk->gen, row)) return true;
  return RowForSlow(cx, pc, row, lk);
}

bool RowForSlow(const UnwindContext& cx, uintptr_t pc, UnwindRow* row, Lookup* lk) {
  if (!cx.code->IsCode(pc, &lk->memo)) return false;
  const uint32_t gen = lk->gen;
  *row = UnwindRow{};
  row->kind = UnwindRow::kNoCfi;
  CodeMap::ModuleReadScope scope(*cx.code);
  if (!scope.ok()) {
    // An unload in progress, or a map that may list unloaded objects: read
    // no table, cache nothing; frame pointers for this frame.
    lk->stale_map = lk->stale_map || scope.stale_map();
    return true;
  }
  CodeModule m;
  if (!cx.code->ModuleOf(pc, &m)) return true;  // the map moved meanwhile: not cached
  MapInTables(m);  // inside the read scope: the object stays mapped
  switch (FindUnwindRow(m, pc, true, row)) {
    case CfiStatus::kFound: break;
    case CfiStatus::kNoFde: row->kind = UnwindRow::kNoCfi; break;
    case CfiStatus::kBad: row->kind = UnwindRow::kUnsupported; break;
  }
  cx.rows->Insert(pc, gen, *row);
  return true;
}

// One frame up from r by row. Returns false with *end set when the walk
// stops here.
bool Step(const UnwindRow& row, const Regs& r, FpBounds b, Regs* next, WalkEnd* end, Tape* t) {
  switch (row.kind) {
    case UnwindRow::kOutermost: *end = WalkEnd::kOutermost; return false;
    case UnwindRow::kSignal: *end = WalkEnd::kSignalFrame; return false;
    case UnwindRow::kCfi: break;
    case UnwindRow::kNoCfi: {
      // No unwind tables: the frame pointer, if it designates a frame record
      // above this frame's stack pointer. A zero frame pointer is the ABI's
      // mark of the outermost frame.
      if (!r.fp_valid) {
        *end = WalkEnd::kNoUnwindInfo;
        return false;
      }
      UseFp(r, b, t);
      if (r.fp == 0) {
        *end = WalkEnd::kOutermost;
        return false;
      }
      uintptr_t saved_fp, ra;
      if (r.fp < r.sp || !ReadStack(b, r.fp, &saved_fp) || !ReadStack(b, r.fp + 8, &ra, t)) {
        *end = WalkEnd::kNoUnwindInfo;
        return false;
      }
      *next = Regs{ra, r.fp + 16, saved_fp, true, r.fp};
      return true;
    }
    default: *end = WalkEnd::kNoUnwindInfo; return false;
  }
  uintptr_t cfa;
  if (row.cfa_reg == UnwindRow::kSp) {
    cfa = r.sp + static_cast<intptr_t>(row.cfa_off);
  } else if (r.fp_valid) {
    UseFp(r, b, t);
    cfa = r.fp + static_cast<intptr_t>(row.cfa_off);
  } else {
    *end = WalkEnd::kNoUnwindInfo;
    return false;
  }
  if (row.cfa_deref != 0 && !ReadStack(b, cfa, &cfa, t)) {
    *end = WalkEnd::kBadFrame;
    return false;
  }
  uintptr_t ra;
  if (cfa <= r.sp || cfa > b.hi || !ReadStack(b, cfa + static_cast<intptr_t>(row.ra_off), &ra, t)) {
    *end = WalkEnd::kBadFrame;
    return false;
  }
  // The caller's fp is read, not used: the tape notes it when a rule uses
  // it (UseFp).
  Regs n{ra, cfa, r.fp, r.fp_valid, r.fp_at};
  switch (row.fp_rule) {
    case UnwindRow::kSame: break;
    case UnwindRow::kAtCfa:
      n.fp_at = cfa + static_cast<intptr_t>(row.fp_off);
      n.fp_valid = ReadStack(b, n.fp_at, &n.fp);
      break;
    case UnwindRow::kAtFp:
      if (r.fp_valid) UseFp(r, b, t);
      n.fp_at = r.fp + static_cast<intptr_t>(row.fp_off);
      n.fp_valid = r.fp_valid && ReadStack(b, n.fp_at, &n.fp);
      break;
    default: n.fp_valid = false;
  }
  if (!n.fp_valid) n.fp = 0;
  *next = n;
  return true;
}

WalkResult AutoWalk(const UnwindContext& cx, const Regs& start, FpBounds b, uint64_t* pcs,
                    size_t max, Tape* t = nullptr) {
  WalkResult res;
  Lookup lk{cx.code->generation(), CodeMemo{}, false};
  UnwindRow row;
  if (max == 0) {
    res.end = WalkEnd::kDepth;
    return res;
  }
  if (!RowFor(cx, start.pc, &row, &lk)) {
    res.end = WalkEnd::kNotCode;
    res.bad_pc = start.pc;
    return res;
  }
  pcs[res.n++] = start.pc;
  Regs r = start;
  for (;;) {
    Regs next;
    if (!Step(row, r, b, &next, &res.end, t)) break;
    if (!RowFor(cx, next.pc, &row, &lk)) {
      res.end = WalkEnd::kNotCode;
      res.bad_pc = next.pc;
      break;
    }
    if (res.n == max) {
      res.end = WalkEnd::kDepth;
      break;
    }
    pcs[res.n++] = next.pc;
    r = next;
  }
  res.stale_map = lk.stale_map;
  return res;
}

WalkResult FpWalk(const UnwindContext& cx, const Regs& start, FpBounds b, uint64_t* pcs,
                  size_t max) {
  CodeMemo memo;
  auto is_code = [&](uintptr_t pc) { return cx.code->IsCode(pc, &memo); };
  WalkResult res;
  if (max == 0) {
    res.end = WalkEnd::kDepth;
    return res;
  }
  if (!is_code(start.pc)) {
    res.end = WalkEnd::kNotCode;
    res.bad_pc = start.pc;
    return res;
  }
  pcs[0] = start.pc;
  if (!start.fp_valid) {
    res.n = 1;
    res.end = WalkEnd::kNoUnwindInfo;
    return res;
  }
  res = FpUnwind(start.fp, start.sp, b, pcs + 1, max - 1, is_code);
  ++res.n;
  return res;
}

}  // namespace

bool RegsFromFrame(const void* frame, FpBounds b, Regs* out) {
  const auto f = reinterpret_cast<uintptr_t>(frame);
  uintptr_t saved_fp, ra;
  if (!ReadStack(b, f, &saved_fp) || !ReadStack(b, f + 8, &ra)) return false;
  *out = Regs{ra, f + 16, saved_fp, true};
  return true;
}

UnwindContext ProcessUnwind() { return UnwindContext{&ProcessCode(), &ProcessRows()}; }

bool CfiSupported() {
#if defined(__x86_64__)
  return true;
#else
  // The walk from an interposer's frame needs its CFA, which on aarch64 is
  // not at a fixed place from the frame record; and signed return addresses
  // are not stripped. Untested there: frame pointers.
  return false;
#endif
}

WalkResult Walk(const UnwindContext& cx, WalkMode mode, const Regs& start, FpBounds b,
                uint64_t* pcs, size_t max) {
  // The code map may be rebuilt during the walk (a library found or gone):
  // a range the walk relied on could then be stale. Walk again; twice in a
  // row means the program is loading and unloading without pause, and the
  // second walk's answer is kept (each of its PCs was code when checked).
  // Likewise if code was unloaded meanwhile: the walk used rows of the
  // generation it began with.
  WalkResult res;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint32_t v = cx.code->version(), gen = cx.code->generation();
    res = mode == WalkMode::kAuto && CfiSupported() ? AutoWalk(cx, start, b, pcs, max)
                                                     : FpWalk(cx, start, b, pcs, max);
    if (cx.code->version() == v && cx.code->generation() == gen) break;
  }
  return res;
}

WalkResult Walk(const UnwindContext& cx, WalkMode mode, const Regs& start, FpBounds b,
                uint64_t* pcs, size_t max, WalkMemo* memo) {
  // (A start whose fp was read from the stack, not a register, is not one
  // a memo keeps: its reads would not hold that word.)
  if (memo == nullptr || mode != WalkMode::kAuto || !CfiSupported() || b.copy != nullptr ||
      max > WalkMemo::kMaxPcs || start.fp_at != 0) {
    return Walk(cx, mode, start, b, pcs, max);
  }
  const uint32_t v = cx.code->version(), gen = cx.code->generation();
  WalkMemo& m = *memo;
  if (m.valid != 0 && m.version == v && m.gen == gen && m.max == max && m.lo == b.lo &&
      m.hi == b.hi && m.pc == start.pc && m.sp == start.sp &&
      (m.uses_fp == 0 || m.fp == start.fp) && m.fp_valid == static_cast<uint32_t>(start.fp_valid)) {
    // Every word the walk read, as it was (each inside the same bounds).
    uint32_t i = 0;
    while (i < m.nreads && StackWord(b, b.lo + m.read_off[i]) == m.read_val[i]) ++i;
    if (i == m.nreads) {
      __builtin_memcpy(pcs, m.pcs, m.res_n * sizeof(uint64_t));
      WalkResult res;
      res.n = m.res_n;
      res.end = m.res_end;
      res.bad_pc = m.res_bad_pc;
      res.from_memo = true;
      return res;
    }
  }
  m.valid = 0;
  Tape t{&m, 0, false, false};
  WalkResult res = AutoWalk(cx, start, b, pcs, max, &t);
  if (cx.code->version() != v || cx.code->generation() != gen) {
    // The map changed during the walk: as Walk does, without a memo.
    return Walk(cx, mode, start, b, pcs, max);
  }
  // Not kept: a walk that met code the map does not know yet (a library
  // loaded since: the caller rescans), or that read no tables (an unload
  // under way), or whose reads overflowed the tape.
  if (!t.full && !res.stale_map && res.end != WalkEnd::kNotCode) {
    m.nreads = t.n;
    m.version = v;
    m.gen = gen;
    m.max = static_cast<uint32_t>(max);
    m.lo = b.lo;
    m.hi = b.hi;
    m.pc = start.pc;
    m.sp = start.sp;
    m.fp = start.fp;
    m.fp_valid = start.fp_valid ? 1 : 0;
    m.uses_fp = t.uses_fp ? 1 : 0;
    m.res_n = static_cast<uint32_t>(res.n);
    m.res_end = res.end;
    m.res_bad_pc = res.bad_pc;
    __builtin_memcpy(m.pcs, pcs, res.n * sizeof(uint64_t));
    m.valid = 1;
  }
  return res;
}

WalkResult CheckCode(const UnwindContext& cx, const uint64_t* pcs, size_t n, size_t max) {
  CodeMemo memo;
  WalkResult res;
  for (res.n = 0; res.n < n; ++res.n) {
    if (!cx.code->IsCode(pcs[res.n], &memo)) {
      res.end = WalkEnd::kNotCode;
      res.bad_pc = pcs[res.n];
      return res;
    }
  }
  if (n == max) res.end = WalkEnd::kDepth;
  return res;
}

bool UnwindInit() {
  LoaderLookupInit();
  return ProcessRows().Init(kRowCacheLog2);
}

}  // namespace gotrace::unwind
