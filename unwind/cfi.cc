// SPDX-License-Identifier: Apache-2.0
//===-- unwind/cfi.cc - one row of DWARF call frame information -----------===//
//
// References: the DWARF 5 standard §6.4 (call frame information), the Linux
// Standard Base's .eh_frame and .eh_frame_hdr sections (pointer encodings,
// the augmentation string, the binary search table).
#include "unwind/cfi.h"

#include <cstring>
#include <limits>

namespace gotrace::unwind {
namespace {

// --- Arch: the DWARF register numbers of the stack pointer, the frame
// pointer and the return address column. Everything else here is the same
// on every architecture.
#if defined(__x86_64__)
constexpr uint64_t kDwSp = 7;   // rsp
constexpr uint64_t kDwFp = 6;   // rbp
constexpr uint64_t kDwRa = 16;  // the return address column (rip)
#elif defined(__aarch64__)
constexpr uint64_t kDwSp = 31;  // sp
constexpr uint64_t kDwFp = 29;  // x29
constexpr uint64_t kDwRa = 30;  // x30 (lr)
#else
#error "gotrace: DWARF register numbers are defined for x86_64 and aarch64"
#endif

// DW_EH_PE_* pointer encodings (LSB, .eh_frame).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeFormatMask = 0x0f;
constexpr uint8_t kPeApplyMask = 0x70;
constexpr uint8_t kPeIndirect = 0x80;
constexpr uint8_t kPePcrel = 0x10;
constexpr uint8_t kPeDatarel = 0x30;
constexpr uint8_t kPeDatarelSdata4 = 0x3b;  // the binary search table's entries

// DW_OP_* the expressions we follow need.
constexpr uint8_t kOpBreg0 = 0x70;
constexpr uint8_t kOpBreg31 = 0x8f;
constexpr uint8_t kOpDeref = 0x06;

// Sanity limits: real tables are far below them.
constexpr uint64_t kMaxEntryBytes = 1u << 20;
constexpr int kMaxRememberDepth = 8;

// Reads a bounded byte range whose readability was checked once.
class Cursor {
 public:
  Cursor(uintptr_t p, uintptr_t end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }
  uintptr_t pos() const { return p_; }
  bool more() const { return ok_ && p_ < end_; }
  void Fail() { ok_ = false; }

  template <class T>
  T Fixed() {
    if (!ok_ || end_ - p_ < sizeof(T)) {
      ok_ = false;
      return 0;
    }
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(p_), sizeof v);
    p_ += sizeof v;
    return v;
  }
  uint8_t U8() { return Fixed<uint8_t>(); }

  uint64_t Uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
      const uint8_t b = U8();
      if (!ok_ || shift > 63) {
        ok_ = false;
        return 0;
      }
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
  }
  int64_t Sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
      b = U8();
      if (!ok_ || shift > 63) {
        ok_ = false;
        return 0;
      }
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
    } while ((b & 0x80) != 0);
    if (shift < 64 && (b & 0x40) != 0) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  void Skip(uint64_t n) {
    if (!ok_ || n > end_ - p_) ok_ = false;
    else p_ += n;
  }

  // The value part of a DW_EH_PE encoding.
  uint64_t Value(uint8_t format) {
    switch (format) {
      case 0x00: return Fixed<uint64_t>();  // absptr (64-bit targets)
      case 0x01: return Uleb();
      case 0x02: return Fixed<uint16_t>();
      case 0x03: return Fixed<uint32_t>();
      case 0x04: return Fixed<uint64_t>();
      case 0x09: return static_cast<uint64_t>(Sleb());
      case 0x0a: return static_cast<uint64_t>(static_cast<int64_t>(Fixed<int16_t>()));
      case 0x0b: return static_cast<uint64_t>(static_cast<int64_t>(Fixed<int32_t>()));
      case 0x0c: return Fixed<uint64_t>();
      default: ok_ = false; return 0;
    }
  }
  // An encoded pointer. `skip_only`: the value is not used (a personality
  // routine's), so an indirect one is fine: nothing is dereferenced.
  uint64_t Pointer(uint8_t enc, uintptr_t datarel, bool skip_only = false) {
    const uintptr_t field = p_;
    uint64_t v = Value(enc & kPeFormatMask);
    switch (enc & kPeApplyMask) {
      case 0: break;
      case kPePcrel: v += field; break;
      case kPeDatarel:
        if (datarel == 0 && !skip_only) ok_ = false;
        v += datarel;
        break;
      default:
        if (!skip_only) ok_ = false;  // textrel, funcrel, aligned: never in .eh_frame on Linux
    }
    if ((enc & kPeIndirect) != 0 && !skip_only) ok_ = false;
    return v;
  }

 private:
  uintptr_t p_, end_;
  bool ok_ = true;
};

// An entry (CIE or FDE) at `at`: its extent [body, end) after the length
// field, checked readable. False if malformed.
bool EntryBounds(const CodeModule& m, uintptr_t at, uintptr_t* body, uintptr_t* end) {
  if (!m.Readable(at, 4)) return false;
  uint32_t len32;
  std::memcpy(&len32, reinterpret_cast<const void*>(at), 4);
  uintptr_t p = at + 4;
  uint64_t len = len32;
  if (len32 == 0xffffffffu) {  // 64-bit DWARF: never produced for .eh_frame on Linux
    return false;
  }
  if (len == 0 || len > kMaxEntryBytes || !m.Readable(p, len)) return false;
  *body = p;
  *end = p + len;
  return true;
}

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = 0;
  uint64_t ra_reg = kDwRa;
  uint8_t fde_enc = 0;  // DW_EH_PE_absptr
  bool has_aug_data = false;
  bool signal = false;
  uintptr_t insns = 0, insns_end = 0;
};

bool ParseCie(const CodeModule& m, uintptr_t at, Cie* cie) {
  uintptr_t body, end;
  if (!EntryBounds(m, at, &body, &end)) return false;
  Cursor c(body, end);
  if (c.Fixed<uint32_t>() != 0) return false;  // CIE id in .eh_frame
  const uint8_t version = c.U8();
  if (version != 1 && version != 3 && version != 4) return false;
  char aug[16];
  size_t naug = 0;
  for (;;) {
    const uint8_t ch = c.U8();
    if (!c.ok() || naug == sizeof aug) return false;
    aug[naug++] = static_cast<char>(ch);
    if (ch == 0) break;
  }
  if (version == 4) {
    if (c.U8() != sizeof(void*)) return false;  // address size
    if (c.U8() != 0) return false;              // segment selector size
  }
  cie->code_align = c.Uleb();
  cie->data_align = c.Sleb();
  cie->ra_reg = version == 1 ? c.U8() : c.Uleb();
  if (aug[0] == 'z') {
    cie->has_aug_data = true;
    const uint64_t aug_len = c.Uleb();
    const uintptr_t aug_end = c.pos() + aug_len;
    if (!c.ok() || aug_len > end - c.pos()) return false;
    for (size_t i = 1; aug[i] != 0 && c.ok(); ++i) {
      if (aug[i] == 'R') {
        cie->fde_enc = c.U8();
      } else if (aug[i] == 'P') {
        const uint8_t enc = c.U8();
        (void)c.Pointer(enc, 0, true);
      } else if (aug[i] == 'L') {
        (void)c.U8();
      } else if (aug[i] == 'S') {
        cie->signal = true;
      } else {
        // 'B' (aarch64 pointer authentication with key B), 'G' (memory
        // tagging) and letters to come: their data, if any, is skipped
        // with the rest of the augmentation data.
        break;
      }
    }
    if (!c.ok() || c.pos() > aug_end) return false;
    c = Cursor(aug_end, end);
  } else if (aug[0] != 0) {
    return false;  // "eh" (pre-2000 GCC) and unknown strings without 'z'
  }
  if (!c.ok() || cie->code_align == 0) return false;
  cie->insns = c.pos();
  cie->insns_end = end;
  return true;
}

// --- The CFA program ----------------------------------------------------------

enum : uint8_t { kRuleUnsupported = 0xfe };  // beside UnwindRow::Rule

struct RegState {
  uint8_t rule = UnwindRow::kSame;
  int64_t off = 0;
};
struct State {
  enum : uint8_t { kCfaRegOff, kCfaDeref, kCfaUnknown } cfa_kind = kCfaUnknown;
  uint64_t cfa_reg = 0;
  int64_t cfa_off = 0;
  RegState fp, ra;
};

// The rule of reg, if it is one a stack walk needs (the others are parsed
// and dropped): the frame pointer's, or the return address column's (the
// CIE names it; kDwRa for everything compilers emit).
template <class S>
auto Track(S* s, uint64_t reg, uint64_t ra_column) -> decltype(&s->fp) {
  if (reg == ra_column) return &s->ra;
  if (reg == kDwFp) return &s->fp;
  return nullptr;
}

// A DWARF expression block of the forms we follow: DW_OP_breg<r> off,
// optionally then DW_OP_deref. False for anything else.
bool ParseBregExpr(Cursor* c, uint64_t len, uint64_t* reg, int64_t* off, bool* deref) {
  const uintptr_t end = c->pos() + len;
  const uint8_t op = c->U8();
  if (!c->ok() || op < kOpBreg0 || op > kOpBreg31) {
    c->Skip(end > c->pos() ? end - c->pos() : 0);
    return false;
  }
  *reg = op - kOpBreg0;
  *off = c->Sleb();
  *deref = false;
  if (c->ok() && c->pos() < end) {
    *deref = c->U8() == kOpDeref;
    if (!*deref || c->pos() != end) {
      c->Skip(end > c->pos() ? end - c->pos() : 0);
      return false;
    }
  }
  return c->ok() && c->pos() == end;
}

// Runs instructions [c.pos, end) from location `loc` until the location
// passes `target`. `initial` is the state after the CIE's instructions (for
// DW_CFA_restore), null while running those.
bool Run(Cursor c, const Cie& cie, uintptr_t loc, uintptr_t target, const State* initial,
         State* s) {
  State stack[kMaxRememberDepth];
  int depth = 0;
  auto restore = [&](uint64_t reg) {
    RegState* r = Track(s, reg, cie.ra_reg);
    if (r == nullptr) return;
    const RegState* from = initial != nullptr ? Track(initial, reg, cie.ra_reg) : nullptr;
    *r = from != nullptr ? *from : RegState{};
  };
  auto set = [&](uint64_t reg, uint8_t rule, int64_t off) {
    if (RegState* r = Track(s, reg, cie.ra_reg)) *r = RegState{rule, off};
  };
  while (c.more()) {
    const uint8_t op = c.U8();
    const uint8_t low = op & 0x3f;
    uint64_t advance = 0;
    switch (op & 0xc0) {
      case 0x40: advance = low; break;                                     // advance_loc
      case 0x80: set(low, UnwindRow::kAtCfa, static_cast<int64_t>(c.Uleb()) * cie.data_align); continue;  // offset
      case 0xc0: restore(low); continue;                                   // restore
      default: break;
    }
    if ((op & 0xc0) == 0) {
      switch (op) {
        case 0x00: continue;  // nop
        case 0x01: {          // set_loc
          const uint64_t to = c.Pointer(cie.fde_enc, 0);
          if (!c.ok()) return false;
          if (to > target) return true;
          loc = to;
          continue;
        }
        case 0x02: advance = c.U8(); break;
        case 0x03: advance = c.Fixed<uint16_t>(); break;
        case 0x04: advance = c.Fixed<uint32_t>(); break;
        case 0x05: {  // offset_extended
          const uint64_t reg = c.Uleb();
          set(reg, UnwindRow::kAtCfa, static_cast<int64_t>(c.Uleb()) * cie.data_align);
          continue;
        }
        case 0x06: restore(c.Uleb()); continue;                     // restore_extended
        case 0x07: set(c.Uleb(), UnwindRow::kUndefined, 0); continue;  // undefined
        case 0x08: set(c.Uleb(), UnwindRow::kSame, 0); continue;       // same_value
        case 0x09: {  // register: the value is in another register
          const uint64_t reg = c.Uleb();
          (void)c.Uleb();
          set(reg, kRuleUnsupported, 0);
          continue;
        }
        case 0x0a:  // remember_state
          if (depth == kMaxRememberDepth) return false;
          stack[depth++] = *s;
          continue;
        case 0x0b:  // restore_state (the CFA rule is restored too, as GCC's unwinder does)
          if (depth == 0) return false;
          *s = stack[--depth];
          continue;
        case 0x0c:  // def_cfa
          s->cfa_kind = State::kCfaRegOff;
          s->cfa_reg = c.Uleb();
          s->cfa_off = static_cast<int64_t>(c.Uleb());
          continue;
        case 0x0d:  // def_cfa_register
          s->cfa_reg = c.Uleb();
          if (s->cfa_kind != State::kCfaRegOff) s->cfa_kind = State::kCfaUnknown;
          continue;
        case 0x0e:  // def_cfa_offset
          s->cfa_off = static_cast<int64_t>(c.Uleb());
          if (s->cfa_kind != State::kCfaRegOff) s->cfa_kind = State::kCfaUnknown;
          continue;
        case 0x0f: {  // def_cfa_expression
          const uint64_t len = c.Uleb();
          uint64_t reg;
          int64_t off;
          bool deref;
          if (ParseBregExpr(&c, len, &reg, &off, &deref)) {
            s->cfa_kind = deref ? State::kCfaDeref : State::kCfaRegOff;
            s->cfa_reg = reg;
            s->cfa_off = off;
          } else {
            s->cfa_kind = State::kCfaUnknown;
          }
          continue;
        }
        case 0x10: {  // expression: saved at the address the block computes
          const uint64_t reg = c.Uleb();
          const uint64_t len = c.Uleb();
          uint64_t base;
          int64_t off;
          bool deref;
          if (ParseBregExpr(&c, len, &base, &off, &deref) && base == kDwFp && !deref) {
            set(reg, UnwindRow::kAtFp, off);
          } else {
            set(reg, kRuleUnsupported, 0);
          }
          continue;
        }
        case 0x11: {  // offset_extended_sf
          const uint64_t reg = c.Uleb();
          set(reg, UnwindRow::kAtCfa, c.Sleb() * cie.data_align);
          continue;
        }
        case 0x12:  // def_cfa_sf
          s->cfa_kind = State::kCfaRegOff;
          s->cfa_reg = c.Uleb();
          s->cfa_off = c.Sleb() * cie.data_align;
          continue;
        case 0x13:  // def_cfa_offset_sf
          s->cfa_off = c.Sleb() * cie.data_align;
          if (s->cfa_kind != State::kCfaRegOff) s->cfa_kind = State::kCfaUnknown;
          continue;
        case 0x14:  // val_offset
        case 0x15: {  // val_offset_sf: the value (not its place) is CFA + off
          const uint64_t reg = c.Uleb();
          if (op == 0x14) (void)c.Uleb();
          else (void)c.Sleb();
          set(reg, kRuleUnsupported, 0);
          continue;
        }
        case 0x16: {  // val_expression
          const uint64_t reg = c.Uleb();
          c.Skip(c.Uleb());
          set(reg, kRuleUnsupported, 0);
          continue;
        }
        case 0x2d:  // DW_CFA_AARCH64_negate_ra_state (GNU_window_save elsewhere)
#if defined(__aarch64__)
          // The return address is signed (pointer authentication) from here
          // on; stripping it is not implemented.
          s->ra.rule = kRuleUnsupported;
          continue;
#else
          return false;
#endif
        case 0x2e: (void)c.Uleb(); continue;  // GNU_args_size
        case 0x2f: {                          // GNU_negative_offset_extended
          const uint64_t reg = c.Uleb();
          set(reg, UnwindRow::kAtCfa, -static_cast<int64_t>(c.Uleb()) * cie.data_align);
          continue;
        }
        default: return false;
      }
    }
    // An advance: the row so far covers [loc, loc + advance).
    const uint64_t delta = advance * cie.code_align;
    if (!c.ok()) return false;
    if (delta > target - loc) return true;  // the next row starts past target
    loc += delta;
  }
  return c.ok();
}

bool FitsInt16(int64_t v) {
  return v >= std::numeric_limits<int16_t>::min() && v <= std::numeric_limits<int16_t>::max();
}
bool FitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// The reduced row.
UnwindRow Reduce(const State& s, const Cie& cie) {
  UnwindRow row;
  if (cie.signal) {
    row.kind = UnwindRow::kSignal;
    return row;
  }
  if (s.ra.rule == UnwindRow::kUndefined) {
    row.kind = UnwindRow::kOutermost;
    return row;
  }
  row.kind = UnwindRow::kUnsupported;
  if (s.cfa_kind == State::kCfaUnknown || (s.cfa_reg != kDwSp && s.cfa_reg != kDwFp) ||
      !FitsInt32(s.cfa_off))
    return row;
  if (s.ra.rule != UnwindRow::kAtCfa || !FitsInt16(s.ra.off)) return row;
  if (s.fp.rule == kRuleUnsupported || !FitsInt16(s.fp.off)) return row;
  row.kind = UnwindRow::kCfi;
  row.cfa_reg = s.cfa_reg == kDwSp ? UnwindRow::kSp : UnwindRow::kFp;
  row.cfa_deref = s.cfa_kind == State::kCfaDeref ? 1 : 0;
  row.cfa_off = static_cast<int32_t>(s.cfa_off);
  row.ra_rule = UnwindRow::kAtCfa;
  row.ra_off = static_cast<int16_t>(s.ra.off);
  row.fp_rule = s.fp.rule;
  row.fp_off = static_cast<int16_t>(s.fp.off);
  return row;
}

// The FDE whose table entry is the last one starting at or below target:
// its address, or 0 if none. kBad on a malformed table.
CfiStatus SearchTable(const CodeModule& m, uintptr_t target, uintptr_t* fde) {
  const uintptr_t hdr = m.eh_frame_hdr;
  if (hdr == 0 || m.eh_frame_hdr_len < 4 || !m.Readable(hdr, m.eh_frame_hdr_len))
    return CfiStatus::kNoFde;
  Cursor c(hdr, hdr + m.eh_frame_hdr_len);
  const uint8_t version = c.U8();
  const uint8_t frame_ptr_enc = c.U8();
  const uint8_t count_enc = c.U8();
  const uint8_t table_enc = c.U8();
  if (version != 1) return CfiStatus::kBad;
  if (frame_ptr_enc != kPeOmit) (void)c.Pointer(frame_ptr_enc, hdr);
  // Without the sorted table, finding an FDE means scanning .eh_frame;
  // linkers always write the table, in this one encoding.
  if (count_enc == kPeOmit || table_enc != kPeDatarelSdata4) return CfiStatus::kNoFde;
  const uint64_t count = c.Pointer(count_enc, hdr);
  if (!c.ok()) return CfiStatus::kBad;
  const uintptr_t table = c.pos();
  if (count == 0) return CfiStatus::kNoFde;
  if (count > (hdr + m.eh_frame_hdr_len - table) / 8) return CfiStatus::kBad;
  auto entry = [&](uint64_t i, int k) {
    int32_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(table + i * 8 + 4 * k), 4);
    return hdr + static_cast<uintptr_t>(static_cast<intptr_t>(v));
  };
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid, 0) <= target) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return CfiStatus::kNoFde;
  *fde = entry(lo - 1, 1);
  return CfiStatus::kFound;
}

}  // namespace

CfiStatus FindUnwindRow(const CodeModule& m, uintptr_t pc, bool return_address, UnwindRow* row) {
  const uintptr_t target = return_address ? pc - 1 : pc;
  uintptr_t fde = 0;
  const CfiStatus found = SearchTable(m, target, &fde);
  if (found != CfiStatus::kFound) return found;

  uintptr_t body, end;
  if (!EntryBounds(m, fde, &body, &end)) return CfiStatus::kBad;
  Cursor c(body, end);
  const uint32_t cie_delta = c.Fixed<uint32_t>();
  if (!c.ok() || cie_delta == 0 || cie_delta > body) return CfiStatus::kBad;
  Cie cie;
  if (!ParseCie(m, body - cie_delta, &cie)) return CfiStatus::kBad;
  const uint64_t pc_begin = c.Pointer(cie.fde_enc, 0);
  const uint64_t pc_range = c.Value(cie.fde_enc & kPeFormatMask);
  if (cie.has_aug_data) c.Skip(c.Uleb());
  if (!c.ok()) return CfiStatus::kBad;
  if (target < pc_begin || target - pc_begin >= pc_range) return CfiStatus::kNoFde;

  State initial;
  if (!Run(Cursor(cie.insns, cie.insns_end), cie, pc_begin, target, nullptr, &initial))
    return CfiStatus::kBad;
  State s = initial;
  if (!Run(Cursor(c.pos(), end), cie, pc_begin, target, &initial, &s)) return CfiStatus::kBad;
  *row = Reduce(s, cie);
  return CfiStatus::kFound;
}

}  // namespace gotrace::unwind
