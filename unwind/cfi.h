// SPDX-License-Identifier: Apache-2.0
//===-- unwind/cfi.h - one row of DWARF call frame information ------------===//
//
// Finds the FDE covering a PC through .eh_frame_hdr's binary search table,
// parses its CIE and runs both CFA programs up to the PC, and reduces the
// resulting row to what a stack walk needs: where the canonical frame
// address (CFA) is, where the return address and the caller's frame pointer
// were saved. Every byte read is checked against the object's readable
// segments first (CodeModule::Readable), so a corrupt or hostile table ends
// in kBad, never in a fault. No allocation, no locks, no libc beyond memcpy:
// async-signal-safe.
//
// Only what compilers and assemblers emit for x86_64 Linux code is
// understood: CFA = rsp or rbp + offset, or *(rbp/rsp + offset) (stack
// realignment, DW_CFA_def_cfa_expression); saved registers at CFA + offset
// or at rbp + offset (DW_CFA_expression). Anything else (the PLT's CFA
// expression, a CFA in another register) gives kUnsupported at the rows that
// need it. The architecture's register numbers are in cfi.cc's Arch block.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

#include "unwind/code_map.h"

namespace gotrace::unwind {

// How to find a frame's caller from that frame (one row of the CFI table).
struct UnwindRow {
  enum Kind : uint8_t {
    kCfi = 1,         // cfa_*, ra_*, fp_* below apply
    kNoCfi = 2,       // no FDE covers the PC: frame pointers may
    kOutermost = 3,   // the return address is undefined: the thread's first frame
    kSignal = 4,      // a signal frame (CIE augmentation 'S'): the walk ends
    kUnsupported = 5, // an FDE we cannot follow at this PC
  };
  enum Reg : uint8_t { kSp = 0, kFp = 1 };
  enum Rule : uint8_t {
    kSame = 0,       // the caller's value is this frame's (not saved)
    kUndefined = 1,  // lost
    kAtCfa = 2,      // saved at CFA + off
    kAtFp = 3,       // saved at fp + off (DW_CFA_expression: DW_OP_breg<fp> off)
  };

  int32_t cfa_off = 0;
  int16_t ra_off = 0;
  int16_t fp_off = 0;
  uint8_t kind = 0;
  uint8_t cfa_reg = kSp;
  uint8_t cfa_deref = 0;  // CFA = *(reg + cfa_off)
  uint8_t ra_rule = kAtCfa;
  uint8_t fp_rule = kSame;
  uint8_t pad[3] = {};
};
static_assert(sizeof(UnwindRow) == 16);

enum class CfiStatus : uint8_t {
  kFound,    // *row holds the rule for pc
  kNoFde,    // no FDE covers pc (or the object has no .eh_frame_hdr table)
  kBad,      // the tables are malformed or out of the object's segments
};

// The row in effect at `pc` in object m. `return_address`: pc is a return
// address (the row is looked up at pc - 1, inside the call instruction).
CfiStatus FindUnwindRow(const CodeModule& m, uintptr_t pc, bool return_address, UnwindRow* row);

}  // namespace gotrace::unwind
