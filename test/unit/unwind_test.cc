// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/unwind_test.cc - the unwinders and the depot ------------===//
//
// Frame-pointer walks over hand-built stacks (corrupt, clobbered, pointing
// into data, returning into data); the DWARF CFI parser over hand-assembled
// .eh_frame_hdr/.eh_frame tables; the auto walk over a fake stack those
// tables describe; the code map, the row cache and the dlclose hand-shake;
// and walks of this process's real stack through code without frame
// pointers, compared with libunwind's.
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "test/unit/unwind_nofp_code.h"
#include "unwind/cfi.h"
#include "unwind/cfi_unwind.h"
#include "unwind/code_map.h"
#include "unwind/fp_unwind.h"
#include "unwind/libunwind_unwind.h"
#include "unwind/row_cache.h"
#include "unwind/stack_depot.h"

namespace gotrace::unwind {
namespace {

// Fake code: any PC in [kCodeLo, kCodeHi) counts as code.
constexpr uintptr_t kCodeLo = 0x400000, kCodeHi = 0x500000;
bool FakeIsCode(uintptr_t pc) { return pc >= kCodeLo && pc < kCodeHi; }

// A fake stack: frame k at words [2k, 2k+1] = {next fp, return address}.
struct FakeStack {
  alignas(16) uintptr_t words[64] = {};
  uintptr_t Addr(size_t word) const { return reinterpret_cast<uintptr_t>(&words[word]); }
  FpBounds Bounds() const { return FpBounds{Addr(0), Addr(64)}; }
  // `frames` records; the last one's saved frame pointer is 0, as the
  // outermost function's is (the ABI's end of the chain).
  void Chain(size_t frames) {
    for (size_t k = 0; k < frames; ++k) {
      words[2 * k] = k + 1 < frames ? Addr(2 * (k + 1)) : 0;
      words[2 * k + 1] = kCodeLo + k * 0x10;
    }
  }
  WalkResult Walk(uint64_t* pcs, size_t max, size_t from_word = 0) const {
    return FpUnwind(Addr(from_word), Addr(0), Bounds(), pcs, max, FakeIsCode);
  }
};

TEST_CASE("fp unwind follows a valid chain to its end", "[unwind]") {
  FakeStack s;
  s.Chain(10);
  uint64_t pcs[64];
  const WalkResult r = s.Walk(pcs, 64);
  REQUIRE(r.n == 10);
  CHECK(r.end == WalkEnd::kOutermost);  // a zero frame pointer ends the chain
  CHECK_FALSE(r.truncated());
  for (size_t k = 0; k < r.n; ++k) CHECK(pcs[k] == kCodeLo + k * 0x10);
  const WalkResult cut = s.Walk(pcs, 3);  // depth limit
  CHECK(cut.n == 3);
  CHECK(cut.end == WalkEnd::kDepth);
  CHECK(cut.truncated());
}

TEST_CASE("fp unwind stops at a corrupted frame pointer without reading it", "[unwind]") {
  uint64_t pcs[64];
  FakeStack s;
  s.Chain(10);
  SECTION("pointer outside the stack") {
    s.words[2 * 4] = 0x10;  // frame 4 points at page zero
    const WalkResult r = s.Walk(pcs, 64);
    CHECK(r.n == 5);
    CHECK(r.end == WalkEnd::kBadFrame);
  }
  SECTION("pointer far above the stack") {
    s.words[2 * 2] = ~uintptr_t{0} - 64;
    CHECK(s.Walk(pcs, 64).n == 3);
  }
  SECTION("misaligned pointer") {
    s.words[2 * 3] = s.Addr(2 * 4) + 3;
    CHECK(s.Walk(pcs, 64).n == 4);
  }
  SECTION("a loop") {
    s.words[2 * 5] = s.Addr(2 * 5);  // points at itself
    CHECK(s.Walk(pcs, 64).n == 6);
    s.words[2 * 5] = s.Addr(2 * 1);  // points back down
    CHECK(s.Walk(pcs, 64).n == 6);
  }
  SECTION("start frame outside the bounds") {
    CHECK(FpUnwind(0x1000, 0, s.Bounds(), pcs, 64, FakeIsCode).n == 0);
    CHECK(s.Walk(pcs, 64, 63).n == 0);  // last frame would cross hi
  }
}

TEST_CASE("fp unwind: a return address that is not code ends the stack (issue 14)", "[unwind]") {
  uint64_t pcs[64];
  FakeStack s;
  s.Chain(10);
  SECTION("into data, a kernel address, a non-canonical one") {
    for (uintptr_t bad : {uintptr_t{0x601040}, uintptr_t{0xffffffff81000000}, uintptr_t{0xf5a656fc6a612ff},
                          uintptr_t{1}}) {
      s.words[2 * 6 + 1] = bad;
      const WalkResult r = s.Walk(pcs, 64);
      CHECK(r.n == 6);
      CHECK(r.end == WalkEnd::kNotCode);
      CHECK(r.bad_pc == bad);
    }
  }
  SECTION("a frame pointer into data: a fake frame record outside the stack") {
    static uintptr_t data_record[2] = {0, kCodeLo + 0x500};  // looks like a frame
    s.words[2 * 3] = reinterpret_cast<uintptr_t>(data_record);
    const WalkResult r = s.Walk(pcs, 64);
    CHECK(r.n == 4);
    CHECK(r.end == WalkEnd::kBadFrame);  // never read: outside the stack's bounds
  }
  SECTION("a clobbered frame pointer that lands on stack words holding data") {
    // rbp used as a general register, holding a stack address whose words
    // are a counter and a pointer to the stack: the "return address" read
    // there is no code.
    s.words[2 * 2] = s.Addr(40);
    s.words[40] = s.Addr(50);
    s.words[41] = s.Addr(7);
    const WalkResult r = s.Walk(pcs, 64);
    CHECK(r.n == 3);
    CHECK(r.end == WalkEnd::kNotCode);
  }
}

TEST_CASE("fp unwind: random garbage never faults and never yields a non-code frame", "[unwind]") {
  std::mt19937_64 rng(1);
  uint64_t pcs[64];
  for (int round = 0; round < 5000; ++round) {
    FakeStack s;
    for (auto& w : s.words) {
      switch (rng() % 5) {
        case 0: w = rng(); break;
        case 1: w = s.Addr(rng() % 64) + (rng() % 2 ? 0 : rng() % 8); break;
        case 2: w = 0; break;
        case 3: w = kCodeHi + rng() % 0x10000; break;  // just past the code
        default: w = kCodeLo + rng() % 0x10000;
      }
    }
    const WalkResult r = s.Walk(pcs, 64, rng() % 64);
    CHECK(r.n <= 32);  // the chain must strictly increase inside 64 words
    for (size_t i = 0; i < r.n; ++i) CHECK(FakeIsCode(pcs[i]));
  }
}

// --- Hand-assembled unwind tables ------------------------------------------------

// DWARF CFA instructions and register numbers (x86_64).
enum : uint8_t {
  kAdvance = 0x40, kOffset = 0x80, kNop = 0x00, kDefCfa = 0x0c, kDefCfaRegister = 0x0d,
  kDefCfaOffset = 0x0e, kDefCfaExpression = 0x0f, kExpression = 0x10, kUndefined = 0x07,
  kRemember = 0x0a, kRestoreState = 0x0b, kRsp = 7, kRbp = 6, kRbx = 3, kR10 = 10, kRip = 16,
  kBreg6 = 0x76, kDeref = 0x06,
};

void Uleb(std::vector<uint8_t>* o, uint64_t v) {
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    o->push_back(static_cast<uint8_t>(b | (v ? 0x80 : 0)));
  } while (v);
}
void Sleb(std::vector<uint8_t>* o, int64_t v) {
  for (;;) {
    const uint8_t b = v & 0x7f;
    v >>= 6;
    const bool done = v == 0 || v == -1;
    v >>= 1;
    o->push_back(static_cast<uint8_t>(b | (done ? 0 : 0x80)));
    if (done) return;
  }
}

// .eh_frame_hdr + .eh_frame for fake functions at kFn[i], laid out in one
// buffer whose address the pc-relative fields are computed against.
struct Tables {
  struct Fn {
    uintptr_t lo, len;
    std::vector<uint8_t> insns;
    bool signal_cie;
  };
  alignas(16) uint8_t mem[8192] = {};
  size_t hdr_len = 0, used = 0;
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(mem); }

  void Put32(size_t at, uint32_t v) { std::memcpy(mem + at, &v, 4); }
  size_t Append(const std::vector<uint8_t>& v) {
    const size_t at = used;
    std::memcpy(mem + used, v.data(), v.size());
    used += v.size();
    return at;
  }
  // A CIE ("zR", pc-relative sdata4 pointers; "zRS" for signal frames).
  size_t Cie(bool signal) {
    std::vector<uint8_t> b = {0, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R'};
    if (signal) b.push_back('S');
    b.push_back(0);
    Uleb(&b, 1);
    Sleb(&b, -8);
    b.push_back(kRip);
    Uleb(&b, 1);
    b.push_back(0x1b);
    b.insert(b.end(), {kDefCfa, kRsp, 8, static_cast<uint8_t>(kOffset | kRip), 1});
    while (b.size() % 4 != 0) b.push_back(kNop);
    const size_t at = Append(b);
    Put32(at, static_cast<uint32_t>(b.size() - 4));
    return at;
  }
  size_t Fde(size_t cie, const Fn& f) {
    std::vector<uint8_t> b(16, 0);  // length, CIE pointer, pc_begin, pc_range
    Uleb(&b, 0);                    // augmentation data
    b.insert(b.end(), f.insns.begin(), f.insns.end());
    while (b.size() % 4 != 0) b.push_back(kNop);
    const size_t at = Append(b);
    Put32(at, static_cast<uint32_t>(b.size() - 4));
    Put32(at + 4, static_cast<uint32_t>(at + 4 - cie));
    Put32(at + 8, static_cast<uint32_t>(f.lo - (base() + at + 8)));
    Put32(at + 12, static_cast<uint32_t>(f.len));
    return at;
  }
  void Build(const std::vector<Fn>& fns) {
    hdr_len = 12 + 8 * fns.size();
    used = (hdr_len + 15) & ~size_t{15};
    const size_t eh_frame = used;
    const size_t cie = Cie(false), sig_cie = Cie(true);
    std::vector<std::pair<uintptr_t, size_t>> table;
    for (const Fn& f : fns) table.emplace_back(f.lo, Fde(f.signal_cie ? sig_cie : cie, f));
    Append({0, 0, 0, 0});  // .eh_frame's terminator
    std::sort(table.begin(), table.end());
    mem[0] = 1;     // version
    mem[1] = 0x1b;  // eh_frame_ptr: pcrel sdata4
    mem[2] = 0x03;  // fde_count: udata4
    mem[3] = 0x3b;  // table: datarel sdata4
    Put32(4, static_cast<uint32_t>(eh_frame - 4));
    Put32(8, static_cast<uint32_t>(table.size()));
    for (size_t i = 0; i < table.size(); ++i) {
      Put32(12 + 8 * i, static_cast<uint32_t>(table[i].first - base()));
      Put32(16 + 8 * i, static_cast<uint32_t>(table[i].second));
    }
  }
  CodeModule Module() const {
    CodeModule m;
    m.eh_frame_hdr = base();
    m.eh_frame_hdr_len = hdr_len;
    m.nseg = 1;
    m.seg_lo[0] = base();
    m.seg_hi[0] = base() + used;
    return m;
  }
};

// The fake functions, at fixed offsets from the tables (pc-relative fields
// need them within 2 GiB).
struct FakeCode {
  uintptr_t code;
  uintptr_t fp_fn, nofp_fn, realign_fn, outer_fn, signal_fn, r10_fn, gap;
  std::vector<Tables::Fn> fns;
  explicit FakeCode(uintptr_t tables) : code(tables + 0x100000) {
    fp_fn = code;             // push rbp; mov rbp, rsp; ...; leave; ret
    nofp_fn = code + 0x100;   // push rbp (as a GPR); push rbx; sub $32, rsp; remember/restore
    realign_fn = code + 0x200;
    outer_fn = code + 0x300;  // _start-like: rip undefined
    signal_fn = code + 0x400;
    r10_fn = code + 0x500;    // CFA in r10: not followed
    gap = code + 0x480;       // no FDE covers it
    fns.push_back({fp_fn, 0x40,
                   {kAdvance | 1, kDefCfaOffset, 16, kOffset | kRbp, 2, kAdvance | 3, kDefCfaRegister,
                    kRbp, kAdvance | 0x30, kDefCfa, kRsp, 8},
                   false});
    fns.push_back({nofp_fn, 0x80,
                   {kAdvance | 1, kDefCfaOffset, 16, kOffset | kRbp, 2, kAdvance | 1, kDefCfaOffset, 24,
                    kOffset | kRbx, 3, kAdvance | 4, kDefCfaOffset, 56, kAdvance | 0x20, kRemember,
                    kDefCfaOffset, 8, kAdvance | 1, kRestoreState},
                   false});
    fns.push_back({realign_fn, 0x40,
                   {kAdvance | 4, kDefCfa, kR10, 0, kAdvance | 8, kExpression, kRbp, 2, kBreg6, 0,
                    kDefCfaExpression, 3, kBreg6, 0x78 /* -8 */, kDeref},
                   false});
    fns.push_back({outer_fn, 0x20, {kUndefined, kRip}, false});
    fns.push_back({signal_fn, 0x20, {}, true});
    fns.push_back({r10_fn, 0x20, {kDefCfa, kR10, 0}, false});
  }
};

UnwindRow RowAt(const Tables& t, uintptr_t pc, bool ra = false) {
  UnwindRow row;
  REQUIRE(FindUnwindRow(t.Module(), pc, ra, &row) == CfiStatus::kFound);
  return row;
}

#if defined(__x86_64__)
TEST_CASE("cfi: rows of hand-assembled tables", "[unwind][cfi]") {
  auto t = std::make_unique<Tables>();
  FakeCode c(t->base());
  t->Build(c.fns);
  SECTION("a frame-pointer function: prologue, body, epilogue") {
    UnwindRow r = RowAt(*t, c.fp_fn);
    CHECK(r.kind == UnwindRow::kCfi);
    CHECK(r.cfa_reg == UnwindRow::kSp);
    CHECK(r.cfa_off == 8);
    CHECK(r.ra_off == -8);
    CHECK(r.fp_rule == UnwindRow::kSame);
    r = RowAt(*t, c.fp_fn + 1);
    CHECK((r.cfa_reg == UnwindRow::kSp && r.cfa_off == 16));
    CHECK((r.fp_rule == UnwindRow::kAtCfa && r.fp_off == -16));
    r = RowAt(*t, c.fp_fn + 0x10);
    CHECK((r.cfa_reg == UnwindRow::kFp && r.cfa_off == 16));
    r = RowAt(*t, c.fp_fn + 0x10, true);  // a return address: the row of pc - 1
    CHECK((r.cfa_reg == UnwindRow::kFp && r.cfa_off == 16));
    r = RowAt(*t, c.fp_fn + 4, true);  // pc - 1 is still in the prologue
    CHECK((r.cfa_reg == UnwindRow::kSp && r.cfa_off == 16));
    r = RowAt(*t, c.fp_fn + 0x3f);
    CHECK((r.cfa_reg == UnwindRow::kSp && r.cfa_off == 8));
  }
  SECTION("no frame pointer: CFA from rsp, rbp saved as a general register, remember/restore") {
    UnwindRow r = RowAt(*t, c.nofp_fn + 0x10);
    CHECK((r.kind == UnwindRow::kCfi && r.cfa_reg == UnwindRow::kSp && r.cfa_off == 56));
    CHECK((r.fp_rule == UnwindRow::kAtCfa && r.fp_off == -16));
    r = RowAt(*t, c.nofp_fn + 0x26);  // between remember_state and restore_state
    CHECK(r.cfa_off == 8);
    r = RowAt(*t, c.nofp_fn + 0x27);  // restored
    CHECK(r.cfa_off == 56);
  }
  SECTION("stack realignment: CFA = *(rbp - 8), rbp saved at rbp") {
    CHECK(RowAt(*t, c.realign_fn + 6).kind == UnwindRow::kUnsupported);  // CFA in r10
    const UnwindRow r = RowAt(*t, c.realign_fn + 0x20);
    CHECK(r.kind == UnwindRow::kCfi);
    CHECK((r.cfa_reg == UnwindRow::kFp && r.cfa_deref == 1 && r.cfa_off == -8));
    CHECK((r.fp_rule == UnwindRow::kAtFp && r.fp_off == 0));
  }
  SECTION("the outermost frame, a signal frame, a CFA we do not follow") {
    CHECK(RowAt(*t, c.outer_fn + 8, true).kind == UnwindRow::kOutermost);
    CHECK(RowAt(*t, c.signal_fn + 1, true).kind == UnwindRow::kSignal);
    CHECK(RowAt(*t, c.r10_fn + 8, true).kind == UnwindRow::kUnsupported);
  }
  SECTION("PCs no FDE covers") {
    UnwindRow r;
    CHECK(FindUnwindRow(t->Module(), c.code - 0x10, false, &r) == CfiStatus::kNoFde);
    CHECK(FindUnwindRow(t->Module(), c.gap, false, &r) == CfiStatus::kNoFde);
    CHECK(FindUnwindRow(t->Module(), c.code + 0x10000, false, &r) == CfiStatus::kNoFde);
    CodeModule none;  // an object without .eh_frame_hdr
    CHECK(FindUnwindRow(none, c.fp_fn, false, &r) == CfiStatus::kNoFde);
  }
  SECTION("tables that point outside the object's segments are refused, never read") {
    CodeModule m = t->Module();
    UnwindRow r;
    m.seg_hi[0] = m.seg_lo[0] + t->hdr_len + 8;  // the CIEs and FDEs are past the readable end
    CHECK(FindUnwindRow(m, c.fp_fn + 1, false, &r) == CfiStatus::kBad);
    CHECK(FindUnwindRow(m, c.r10_fn + 1, false, &r) == CfiStatus::kBad);
    m = t->Module();
    m.eh_frame_hdr_len = t->used + 4096;  // a table longer than the segment
    CHECK(FindUnwindRow(m, c.fp_fn, false, &r) == CfiStatus::kNoFde);
    // Corrupt a table entry's FDE offset: far outside, then negative.
    const uint32_t saved = [&] { uint32_t v; std::memcpy(&v, t->mem + 16, 4); return v; }();
    t->Put32(16, 0x7fff0000);
    CHECK(FindUnwindRow(t->Module(), c.fp_fn + 1, false, &r) == CfiStatus::kBad);
    t->Put32(16, 0x80000000u);
    CHECK(FindUnwindRow(t->Module(), c.fp_fn + 1, false, &r) == CfiStatus::kBad);
    t->Put32(16, saved);
    CHECK(FindUnwindRow(t->Module(), c.fp_fn + 1, false, &r) == CfiStatus::kFound);
  }
  SECTION("random corruption of the tables never faults") {
    std::mt19937_64 rng(7);
    const auto pristine = std::make_unique<Tables>(*t);
    for (int round = 0; round < 3000; ++round) {
      std::memcpy(t->mem, pristine->mem, sizeof t->mem);
      for (int k = 0; k < 4; ++k) t->mem[rng() % t->used] = static_cast<uint8_t>(rng());
      UnwindRow r;
      (void)FindUnwindRow(t->Module(), c.code + rng() % 0x600, rng() % 2 == 0, &r);
    }
  }
}

// A fake stack built to match FakeCode's rules: a function without frame
// pointer (rbp clobbered, saved by its prologue) called by a frame-pointer
// function called by the outermost one.
TEST_CASE("auto walk over a fake stack described by CFI, and by frame pointers", "[unwind][cfi]") {
  auto t = std::make_unique<Tables>();
  FakeCode c(t->base());
  t->Build(c.fns);
  auto map = std::make_unique<CodeMap>();
  const CodeModule mod = t->Module();
  const CodeRange range{c.code, c.code + 0x1000, 0};
  map->SetForTest(&range, 1, &mod, 1);
  auto rows = std::make_unique<RowCache>();
  REQUIRE(rows->Init(8));
  const UnwindContext cx{map.get(), rows.get()};

  alignas(16) uintptr_t stack[64] = {};
  auto at = [&](size_t w) { return reinterpret_cast<uintptr_t>(&stack[w]); };
  const FpBounds b{at(0), at(64)};
  // nofp_fn's frame at rest after its call returns: sp = at(0), CFA = sp + 56.
  const uintptr_t ra_in_fp_fn = c.fp_fn + 0x20, ra_in_outer = c.outer_fn + 0x10;
  stack[7 - 1] = ra_in_fp_fn;      // CFA - 8
  stack[7 - 2] = at(12);           // CFA - 16: rbp of fp_fn (its frame record)
  stack[12] = 0;                   // fp_fn's frame record: saved rbp (outer_fn's: 0)
  stack[13] = ra_in_outer;         // and its return address
  const Regs start{c.nofp_fn + 0x10, at(0), 0x5bd1e995 /* clobbered */, true};
  uint64_t pcs[16];

  SECTION("auto: every frame, to the outermost") {
    for (int pass = 0; pass < 2; ++pass) {  // the second from the row cache
      const WalkResult r = Walk(cx, WalkMode::kAuto, start, b, pcs, 16);
      REQUIRE(r.n == 3);
      CHECK(pcs[0] == start.pc);
      CHECK(pcs[1] == ra_in_fp_fn);
      CHECK(pcs[2] == ra_in_outer);
      CHECK(r.end == WalkEnd::kOutermost);
    }
  }
  SECTION("fp: the clobbered rbp ends the walk at once") {
    const WalkResult r = Walk(cx, WalkMode::kFp, start, b, pcs, 16);
    CHECK(r.n == 1);
    CHECK(r.end == WalkEnd::kBadFrame);
  }
  SECTION("auto: a saved return address that is not code ends the stack, marked") {
    stack[13] = reinterpret_cast<uintptr_t>(&stack[0]);  // into data
    const WalkResult r = Walk(cx, WalkMode::kAuto, start, b, pcs, 16);
    CHECK(r.n == 2);
    CHECK(r.end == WalkEnd::kNotCode);
    CHECK(r.truncated());
  }
  SECTION("auto: a CFA outside the stack ends the walk without reading it") {
    stack[7 - 2] = 0x10;  // fp_fn's rbp, as nofp_fn saved it, is garbage
    const WalkResult r = Walk(cx, WalkMode::kAuto, start, b, pcs, 16);
    CHECK(r.n == 2);
    CHECK(r.end == WalkEnd::kBadFrame);
  }
  SECTION("auto: code without CFI falls back to its frame pointer") {
    const uintptr_t no_fde = c.gap + 0x10;
    const Regs s2{no_fde, at(10), at(12), true};  // rbp: fp_fn's frame record
    const WalkResult r = Walk(cx, WalkMode::kAuto, s2, b, pcs, 16);
    REQUIRE(r.n == 2);
    CHECK(pcs[1] == ra_in_outer);
    CHECK(r.end == WalkEnd::kOutermost);
    const Regs s3{no_fde, at(10), at(2), true};  // rbp below this frame's sp: no frame
    CHECK(Walk(cx, WalkMode::kAuto, s3, b, pcs, 16).end == WalkEnd::kNoUnwindInfo);
  }
  SECTION("auto: the depth limit is marked") {
    const WalkResult r = Walk(cx, WalkMode::kAuto, start, b, pcs, 2);
    CHECK(r.n == 2);
    CHECK(r.end == WalkEnd::kDepth);
  }
  SECTION("auto: a start PC that is not code gives no stack") {
    const Regs s4{0x1234, at(0), 0, true};
    const WalkResult r = Walk(cx, WalkMode::kAuto, s4, b, pcs, 16);
    CHECK(r.n == 0);
    CHECK(r.end == WalkEnd::kNotCode);
  }
  SECTION("a memo gives the walk's answer, and holds only while every word read is as it was") {
    WalkMemo memo{};  // zeroed: empty
    uint64_t plain[16];
    const WalkResult first = Walk(cx, WalkMode::kAuto, start, b, pcs, 16, &memo);
    const WalkResult want = Walk(cx, WalkMode::kAuto, start, b, plain, 16);
    REQUIRE(first.n == want.n);
    CHECK(std::equal(pcs, pcs + first.n, plain));
    REQUIRE(memo.valid == 1);
    CHECK_FALSE(first.from_memo);
    // Answered from the memo: another row cache, left empty, is never asked.
    auto rows2 = std::make_unique<RowCache>();
    REQUIRE(rows2->Init(8));
    const UnwindContext cx2{map.get(), rows2.get()};
    std::fill(std::begin(pcs), std::end(pcs), 0);
    const WalkResult again = Walk(cx2, WalkMode::kAuto, start, b, pcs, 16, &memo);
    CHECK(again.n == want.n);
    CHECK(again.end == want.end);
    CHECK(again.from_memo);
    CHECK(std::equal(pcs, pcs + again.n, plain));
    UnwindRow row;
    CHECK_FALSE(rows2->Find(start.pc, map->generation(), &row));
    // A word the walk did not read changes nothing; one it read (outer_fn's
    // return address) is a new walk, and a new memo.
    stack[40] = 0xdead;
    const WalkResult unread = Walk(cx2, WalkMode::kAuto, start, b, pcs, 16, &memo);
    CHECK(unread.n == 3);
    CHECK(unread.from_memo);
    CHECK_FALSE(rows2->Find(start.pc, map->generation(), &row));
    stack[13] = c.fp_fn + 0x20;
    const WalkResult moved = Walk(cx2, WalkMode::kAuto, start, b, pcs, 16, &memo);
    CHECK_FALSE(moved.from_memo);
    CHECK(rows2->Find(start.pc, map->generation(), &row));
    REQUIRE(moved.n >= 3);
    CHECK(pcs[2] == c.fp_fn + 0x20);
    // Other start registers, bounds or depth: not this memo's walk.
    const WalkResult cut = Walk(cx, WalkMode::kAuto, start, b, pcs, 2, &memo);
    CHECK(cut.n == 2);
    CHECK(cut.end == WalkEnd::kDepth);
    // A walk that met no code is not kept.
    const Regs s4{0x1234, at(0), 0, true};
    CHECK(Walk(cx, WalkMode::kAuto, s4, b, pcs, 16, &memo).end == WalkEnd::kNotCode);
    CHECK(memo.valid == 0);
  }
  SECTION("a memo's answers are the walk's, whatever the stack holds") {
    std::mt19937_64 rng(7);
    WalkMemo memo{};
    uint64_t plain[16];
    for (int round = 0; round < 5000; ++round) {
      // Few changes between walks, so that the memo is often asked.
      for (int k = 0; k < 3; ++k) {
        uintptr_t& w = stack[rng() % 16];
        switch (rng() % 4) {
          case 0: w = rng(); break;
          case 1: w = at(rng() % 64); break;
          case 2: w = c.code + rng() % 0x600; break;
          default: break;  // unchanged
        }
      }
      const Regs s{c.code + (rng() % 4) * 0x10 + 0x100 * (rng() % 2), at(rng() % 4),
                   stack[rng() % 16], true};
      const WalkResult r = Walk(cx, WalkMode::kAuto, s, b, pcs, 16, &memo);
      const WalkResult p = Walk(cx, WalkMode::kAuto, s, b, plain, 16);
      REQUIRE(r.n == p.n);
      CHECK(r.end == p.end);
      CHECK(std::equal(pcs, pcs + r.n, plain));
    }
  }
  SECTION("random stack contents never fault, every frame is code") {
    std::mt19937_64 rng(3);
    for (int round = 0; round < 5000; ++round) {
      for (auto& w : stack) {
        switch (rng() % 4) {
          case 0: w = rng(); break;
          case 1: w = at(rng() % 64); break;
          case 2: w = c.code + rng() % 0x600; break;
          default: w = 0;
        }
      }
      const Regs s{c.code + rng() % 0x600, at(rng() % 64), stack[rng() % 64], rng() % 2 == 0};
      const WalkResult r = Walk(cx, WalkMode::kAuto, s, b, pcs, 16);
      for (size_t i = 0; i < r.n; ++i) CHECK(map->IsCode(pcs[i]));
    }
  }
}
#endif  // __x86_64__

// --- The code map, the row cache and the unload hand-shake -------------------------

TEST_CASE("code map: this process's executable segments, and nothing else", "[unwind]") {
  REQUIRE(UnwindInit());  // resolves _dl_find_object
  CodeMap& m = ProcessCode();
  m.Update(true);
  CHECK(m.ranges() >= 3);  // this program, libc, the vDSO, ...
  static const int data = 1;
  CHECK(m.IsCode(reinterpret_cast<uintptr_t>(&FakeIsCode)));
  CHECK(m.IsCode(reinterpret_cast<uintptr_t>(&qsort)));
  CHECK_FALSE(m.IsCode(reinterpret_cast<uintptr_t>(&data)));
  int local = 0;
  CHECK_FALSE(m.IsCode(reinterpret_cast<uintptr_t>(&local)));
  std::vector<char> heap(16);
  CHECK_FALSE(m.IsCode(reinterpret_cast<uintptr_t>(heap.data())));
  CHECK_FALSE(m.IsCode(0));
  CHECK_FALSE(m.IsCode(~uintptr_t{0}));
  CodeModule mod;
  REQUIRE(m.ModuleOf(reinterpret_cast<uintptr_t>(&qsort), &mod));
  CHECK(mod.eh_frame_hdr != 0);
  CHECK(mod.Readable(mod.eh_frame_hdr, mod.eh_frame_hdr_len));
  // Known objects, their data, and addresses in no object are no reason to
  // rebuild the map.
  CHECK_FALSE(LoaderHasNewObjectAt(m, reinterpret_cast<uintptr_t>(&qsort)));
  CHECK_FALSE(LoaderHasNewObjectAt(m, reinterpret_cast<uintptr_t>(&data)));
  CHECK_FALSE(LoaderHasNewObjectAt(m, reinterpret_cast<uintptr_t>(&local)));
  CHECK_FALSE(m.Update(false));  // nothing loaded since
  // A map that does not know libc: libc's code is news.
  const CodeRange only_here{reinterpret_cast<uintptr_t>(&FakeIsCode),
                            reinterpret_cast<uintptr_t>(&FakeIsCode) + 1, 0};
  auto small = std::make_unique<CodeMap>();
  small->SetForTest(&only_here, 1, &mod, 1);
  CHECK(LoaderHasNewObjectAt(*small, reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "qsort"))));
  CHECK_FALSE(LoaderHasNewObjectAt(*small, reinterpret_cast<uintptr_t>(&FakeIsCode)));
}

TEST_CASE("code map: readers during rebuilds never take data for code", "[unwind]") {
  auto m = std::make_unique<CodeMap>();
  const CodeModule mod;
  // Two maps: [A) and [A, B); pc_a is code in both, pc_b in the second only,
  // pc_x in neither.
  const CodeRange one[] = {{0x1000, 0x2000, 0}};
  const CodeRange two[] = {{0x1000, 0x2000, 0}, {0x5000, 0x6000, 0}};
  m->SetForTest(one, 1, &mod, 1);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (i % 2) m->SetForTest(one, 1, &mod, 1);
      else m->SetForTest(two, 2, &mod, 1);
    }
  });
  uint64_t code_a = 0, wrong = 0;
  for (int i = 0; i < 200000; ++i) {
    code_a += m->IsCode(0x1800) ? 1 : 0;
    wrong += m->IsCode(0x3000) ? 1 : 0;
    wrong += m->IsCode(0x6000) ? 1 : 0;
  }
  stop = true;
  writer.join();
  CHECK(wrong == 0);
  CHECK(code_a > 0);  // a reader can lose every retry to the writer, not most
}

TEST_CASE("row cache: concurrent inserts and finds never return another PC's row", "[unwind]") {
  auto cache = std::make_unique<RowCache>();
  REQUIRE(cache->Init(6));  // 64 entries: constant collisions
  constexpr int kThreads = 4;
  std::atomic<uint64_t> hits{0}, wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      for (int i = 0; i < 200000; ++i) {
        const uintptr_t pc = 0x400000 + (rng() % 1000) * 16;
        const uint32_t gen = static_cast<uint32_t>(rng() % 2);
        UnwindRow row;
        if (cache->Find(pc, gen, &row)) {
          hits.fetch_add(1);
          // Each row encodes its PC and generation.
          if (row.cfa_off != static_cast<int32_t>(pc & 0xffffff) || row.ra_off != static_cast<int16_t>(gen))
            wrong.fetch_add(1);
        } else {
          UnwindRow r;
          r.kind = UnwindRow::kCfi;
          r.cfa_off = static_cast<int32_t>(pc & 0xffffff);
          r.ra_off = static_cast<int16_t>(gen);
          cache->Insert(pc, gen, r);
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  CHECK(wrong.load() == 0);
  CHECK(hits.load() > 0);
}

TEST_CASE("code map: no module read while an unload runs, none through a stale map", "[unwind]") {
  auto m = std::make_unique<CodeMap>();
  const CodeModule mod;
  const CodeRange r{0x1000, 0x2000, 0};
  m->SetForTest(&r, 1, &mod, 1);
  {
    CodeMap::ModuleReadScope s(*m);
    CHECK(s.ok());
  }
  // A read in progress holds the unload back until it ends.
  std::atomic<int> phase{0};
  std::atomic<bool> unload_returned_early{false}, reader_ok{false};
  std::thread reader([&] {
    CodeMap::ModuleReadScope s(*m);
    reader_ok = s.ok();
    phase = 1;
    while (phase.load() == 1) sched_yield();  // until the unloader has started
    for (int i = 0; i < 1000; ++i) sched_yield();
    phase = 3;
  });
  while (phase.load() != 1) sched_yield();
  phase = 2;
  m->UnloadBegin();
  if (phase.load() != 3) unload_returned_early = true;
  {
    CodeMap::ModuleReadScope s(*m);
    CHECK_FALSE(s.ok());  // an unload in progress
  }
  const uint32_t gen = m->generation();
  m->UnloadEnd();
  reader.join();
  CHECK(reader_ok.load());
  CHECK_FALSE(unload_returned_early.load());
  CHECK(m->generation() != gen);  // rows cached before are stale
  {
    CodeMap::ModuleReadScope s(*m);
    CHECK_FALSE(s.ok());  // the map may list what was unmapped
    CHECK(s.stale_map());
  }
  m->SetForTest(&r, 1, &mod, 1);  // rebuilt
  CodeMap::ModuleReadScope s(*m);
  CHECK(s.ok());
}

// --- This process's real stacks -------------------------------------------------------

FpBounds ThreadStack() {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  REQUIRE(pthread_getattr_np(pthread_self(), &attr) == 0);
  pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  return FpBounds{reinterpret_cast<uintptr_t>(addr), reinterpret_cast<uintptr_t>(addr) + size};
}

struct Walks {
  WalkMode mode = WalkMode::kAuto;
  FpBounds stack{};
  uint64_t mine[128] = {};
  WalkResult mine_r;
  uint64_t lu[160] = {};
  size_t lu_n = 0;
};

// The bounds of a walk from the function whose frame record is `frame` (up
// to the top of `stack`), and the registers at its return.
FpBounds FromFrame(const void* frame, const FpBounds& stack, Regs* regs) {
  const FpBounds b{reinterpret_cast<uintptr_t>(frame), stack.hi};
  REQUIRE(RegsFromFrame(frame, b, regs));
  return b;
}

// Walks from here with the built-in unwinder and with libunwind.
__attribute__((noinline)) void CaptureBoth(void* arg) {
  auto* w = static_cast<Walks*>(arg);
  Regs regs;
  const FpBounds b = FromFrame(__builtin_frame_address(0), w->stack, &regs);
  w->mine_r = Walk(ProcessUnwind(), w->mode, regs, b, w->mine, 128);
  uint32_t gen = 0;
  w->lu_n = LibunwindReady() ? LibunwindBacktrace(w->lu, 160, &gen) : 0;
  __asm__ volatile("" ::: "memory");
}

// Walks from here twice with a memo (the second time with a row cache left
// empty: a walk that is not the memo's would fill it), and once without.
struct MemoWalks {
  FpBounds stack{};
  WalkMemo memo{};
  RowCache* empty_rows = nullptr;
  uint64_t first[64] = {}, second[64] = {}, plain[64] = {};
  WalkResult first_r, second_r, plain_r;
};
__attribute__((noinline)) void CaptureMemo(void* arg) {
  auto* w = static_cast<MemoWalks*>(arg);
  Regs regs;
  const FpBounds b = FromFrame(__builtin_frame_address(0), w->stack, &regs);
  w->first_r = Walk(ProcessUnwind(), WalkMode::kAuto, regs, b, w->first, 64, &w->memo);
  const UnwindContext empty{&ProcessCode(), w->empty_rows};
  w->second_r = Walk(empty, WalkMode::kAuto, regs, b, w->second, 64, &w->memo);
  w->plain_r = Walk(ProcessUnwind(), WalkMode::kAuto, regs, b, w->plain, 64);
  __asm__ volatile("" ::: "memory");
}

void ExpectSameAsLibunwind(const Walks& w) {
  INFO("built-in: " << w.mine_r.n << " frames, libunwind: " << w.lu_n);
  REQUIRE(w.mine_r.n >= 8);
  for (size_t i = 0; i < w.mine_r.n; ++i) CHECK(ProcessCode().IsCode(w.mine[i]));
  if (w.lu_n == 0) {
    WARN("libunwind.so.8 is not available: nothing to compare with");
    return;
  }
  // libunwind's first frame is CaptureBoth itself.
  const uint64_t* at = std::find(w.lu, w.lu + w.lu_n, w.mine[0]);
  REQUIRE(at != w.lu + w.lu_n);
  const size_t lu_rest = static_cast<size_t>(w.lu + w.lu_n - at);
  CHECK(lu_rest == w.mine_r.n);
  for (size_t i = 0; i < std::min(lu_rest, w.mine_r.n); ++i) {
    INFO("frame " << i);
    CHECK(at[i] == w.mine[i]);
  }
  CHECK(w.mine_r.end == WalkEnd::kOutermost);
}

TEST_CASE("auto walk of real code without frame pointers matches libunwind", "[unwind]") {
  const char* why = nullptr;
  (void)LibunwindInit(&why);
  REQUIRE(UnwindInit());
  ProcessCode().Update(true);
  SECTION("this thread") {
    Walks w;
    w.stack = ThreadStack();
    testing::NofpChain(5, CaptureBoth, &w);
    ExpectSameAsLibunwind(w);
  }
  SECTION("a new thread, down to its first frame") {
    Walks w;
    std::thread t([&] {
      w.stack = ThreadStack();
      testing::NofpChain(3, CaptureBoth, &w);
    });
    t.join();
    ExpectSameAsLibunwind(w);
  }
  SECTION("a memo answers a walk of real code without frame pointers, as the walk would") {
    auto rows = std::make_unique<RowCache>();
    REQUIRE(rows->Init(8));
    MemoWalks w;
    w.stack = ThreadStack();
    w.empty_rows = rows.get();
    testing::NofpChain(5, CaptureMemo, &w);
    REQUIRE(w.plain_r.n >= 8);
    for (const WalkResult* r : {&w.first_r, &w.second_r}) {
      CHECK(r->n == w.plain_r.n);
      CHECK(r->end == w.plain_r.end);
    }
    CHECK(std::equal(w.first, w.first + w.plain_r.n, w.plain));
    CHECK(std::equal(w.second, w.second + w.plain_r.n, w.plain));
    CHECK_FALSE(w.first_r.from_memo);
    CHECK(w.second_r.from_memo);
    UnwindRow row;
    CHECK_FALSE(rows->Find(w.plain[0], ProcessCode().generation(), &row));  // from the memo
  }
  SECTION("fp mode stops at the first frame without a frame pointer, and is marked") {
    Walks w;
    w.mode = WalkMode::kFp;
    w.stack = ThreadStack();
    testing::NofpChain(5, CaptureBoth, &w);
    CHECK(w.mine_r.truncated());
    CHECK(w.mine_r.n < 8);
    for (size_t i = 0; i < w.mine_r.n; ++i) CHECK(ProcessCode().IsCode(w.mine[i]));
  }
}

// --- The stack depot --------------------------------------------------------------------

TEST_CASE("stack depot: same stack same id, epochs and lengths distinguish", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 10, 1 << 20));
  const uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
  bool fresh;
  const uint32_t ia = d.Intern(a, 3, 0, &fresh);
  CHECK(fresh);
  CHECK(ia == 1);
  CHECK(d.Intern(a, 3, 0, &fresh) == ia);
  CHECK_FALSE(fresh);
  CHECK(d.Intern(b, 3, 0, &fresh) != ia);
  CHECK(d.Intern(a, 2, 0, &fresh) != ia);
  CHECK(d.Intern(a, 3, 1, &fresh) != ia);  // another module epoch
  CHECK(d.size() == 4);
}

TEST_CASE("stack depot: a new log defines again the stacks it uses, under the same ids", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 10, 1 << 20));
  const uint64_t a[] = {1, 2, 3}, b[] = {4, 5};
  bool fresh;
  const uint32_t ia = d.Intern(a, 3, 0, &fresh, 1);
  CHECK(fresh);
  const uint32_t ib = d.Intern(b, 2, 0, &fresh, 1);
  CHECK(fresh);
  CHECK(d.Intern(a, 3, 0, &fresh, 1) == ia);
  CHECK_FALSE(fresh);
  // Log 2 (a trace window's): the first user defines it, the next does not.
  CHECK(d.Intern(a, 3, 0, &fresh, 2) == ia);
  CHECK(fresh);
  CHECK(d.Intern(a, 3, 0, &fresh, 2) == ia);
  CHECK_FALSE(fresh);
  // By id (a wait that began in log 1 and ends in log 2): its PCs, once.
  const uint64_t* pcs = nullptr;
  size_t n = 0;
  uint32_t epoch = 7;
  REQUIRE(d.Redefine(ib, 2, &pcs, &n, &epoch));
  CHECK(n == 2);
  CHECK(pcs[0] == 4);
  CHECK(pcs[1] == 5);
  CHECK(epoch == 0);
  CHECK_FALSE(d.Redefine(ib, 2, &pcs, &n, &epoch));
  CHECK_FALSE(d.Redefine(ia, 2, &pcs, &n, &epoch));  // already defined in log 2
  CHECK_FALSE(d.Redefine(999, 2, &pcs, &n, &epoch));  // unknown id
  CHECK(d.Intern(b, 2, 0, &fresh, 2) == ib);
  CHECK_FALSE(fresh);
}

TEST_CASE("stack depot: full tables fail softly", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 4, 1 << 12));
  uint64_t pcs[2];
  bool fresh;
  size_t zeros = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    pcs[0] = i;
    pcs[1] = i * 7;
    if (d.Intern(pcs, 2, 0, &fresh) == 0) ++zeros;
  }
  CHECK(zeros >= 100 - 16);
  CHECK(d.full_misses() == zeros);
}

TEST_CASE("stack depot: concurrent interning is consistent", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 14, 16 << 20));
  constexpr int kThreads = 4, kStacks = 2000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::atomic<int> go{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < kThreads) {
      }
      uint64_t pcs[8];
      bool fresh;
      for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < kStacks; ++i) {
          static const int kMul[] = {1, 3, 7, 11};  // coprime with kStacks: permutations
          const int k = (i * kMul[t]) % kStacks;
          for (int j = 0; j < 8; ++j) pcs[j] = 0x1000 + static_cast<uint64_t>(k) * 8 + j;
          const uint32_t id = d.Intern(pcs, 8, 0, &fresh);
          if (r == 2) ids[t][k] = id;
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  // After the first rounds every stack is published and found again. Threads
  // may disagree only where an insert raced: a thread that found a slot
  // still being filled (preempted mid-insert) inserted the stack again
  // further on, and keeps finding its own copy while the other is busy.
  // That takes a preemption inside a few instructions: rare.
  int disagree = 0;
  for (int k = 0; k < kStacks; ++k) {
    bool same = true;
    for (int t = 0; t < kThreads; ++t) {
      CHECK(ids[t][k] != 0);
      same = same && ids[t][k] == ids[0][k];
    }
    disagree += same ? 0 : 1;
  }
  CHECK(disagree <= 64);
  // A racing insert may give a stack a second id, never more than a few.
  CHECK(d.size() >= static_cast<uint32_t>(kStacks));
  CHECK(d.size() <= static_cast<uint32_t>(kStacks) + 64);
}

}  // namespace
}  // namespace gotrace::unwind
