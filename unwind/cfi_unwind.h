// SPDX-License-Identifier: Apache-2.0
//===-- unwind/cfi_unwind.h - stack walks: frame pointers or DWARF CFI ----===//
//
// GOTRACE_UNWIND=auto (the default) and fp. An in-process unwinder that
// never faults, never allocates, takes no lock on its hot path and is
// async-signal-safe except for what its caller does about new code
// (CodeMap::Update):
//  - auto: each frame is unwound by its DWARF call frame information
//    (.eh_frame, found through .eh_frame_hdr), decoded once per return
//    address into the process-wide RowCache; code without CFI falls back to
//    its frame pointer, if the frame it points at is a valid one. Correct on
//    code built with or without frame pointers, in any mix.
//  - fp: the frame-pointer chain only (unwind/fp_unwind.h).
// In both, every return address must be code (CodeMap::IsCode, or a row
// cache hit, which implies it): a return address outside every executable
// segment ends the stack there (issue 14: no garbage frame). Reads of the
// stack stay inside the caller's bounds; reads of unwind tables stay inside
// the object's segments and never race with its unloading (code_map.h,
// "Problem:").
//
// Only x86_64's CFI is followed (register numbers in cfi.cc); elsewhere auto
// walks frame pointers, still checking every return address.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

#include "unwind/code_map.h"
#include "unwind/fp_unwind.h"
#include "unwind/row_cache.h"

namespace gotrace::unwind {

enum class WalkMode : uint8_t { kFp, kAuto };

// The registers a walk needs, at a return address: pc (the return address),
// sp (the stack pointer once returned there: the callee's CFA) and the frame
// pointer register. fp_valid: false once the frame pointer is lost (an
// undefined rule).
struct Regs {
  uintptr_t pc = 0, sp = 0, fp = 0;
  bool fp_valid = true;
};

// The registers at the return into the caller of a function whose frame
// record is at `frame` (its __builtin_frame_address(0); the function keeps a
// frame pointer, as libgotrace.so's interposers do). False if the record is
// not inside the bounds.
bool RegsFromFrame(const void* frame, FpBounds b, Regs* out);

struct UnwindContext {
  CodeMap* code;
  RowCache* rows;
};
// The process's code map and row cache.
UnwindContext ProcessUnwind();

// Whether auto mode follows CFI on this architecture (x86_64).
bool CfiSupported();

// Walks from `start` (pcs[0] = start.pc) within the stack bounds b, up to
// max return addresses.
WalkResult Walk(const UnwindContext& cx, WalkMode mode, const Regs& start, FpBounds b,
                uint64_t* pcs, size_t max);

// Cuts another unwinder's return addresses (libunwind's) at the first that
// is not code. n == max is reported as kDepth. libunwind does not say why it
// stopped, so its stacks otherwise count as complete.
WalkResult CheckCode(const UnwindContext& cx, const uint64_t* pcs, size_t n, size_t max);

// Maps the row cache and finds the loader's lookup function (once per
// process; idempotent; may allocate: call from the library's constructor).
// False if the memory cannot be had: walks then decode every frame's row
// anew.
bool UnwindInit();

}  // namespace gotrace::unwind
