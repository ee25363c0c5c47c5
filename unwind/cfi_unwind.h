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
#include <type_traits>

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
  // Where fp was read from on the stack, 0 for a start register: a walk
  // depends on a frame pointer's value only where a rule uses it (in code
  // without frame pointers rbp is data, saved and restored by every frame),
  // so a WalkMemo checks that word only then.
  uintptr_t fp_at = 0;
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

// Problem: a program that waits or makes system calls in a loop (sqlite3's
// sorter: 280,000 pread and pwrite calls on its temporary files) has its
// stack walked each time from the same frame through the same frames, one
// row-cache look-up and a few stack reads per frame (1 to 5 us a stack).
// A walk is a function of its start registers, its bounds, the code map's
// state (version and generation: the rows it looked up) and the stack words
// it read: a memo keeps all of those with the walk's answer, and a walk
// that finds them all as they were returns that answer after reading the
// same words again (a few ns a frame) instead of looking up any row. Sound
// by construction: the same inputs give the same walk. Only live stacks
// (not a sample's copy), auto mode, x86_64.
struct WalkMemo {
  static constexpr uint32_t kMaxReads = 2 * 64 + 4;  // a walk that reads more: not memoized
  static constexpr uint32_t kMaxPcs = 64;  // a deeper walk (GOTRACE_DEPTH > 64): not memoized
  // No member initializers: a memo in a thread's record is written by its
  // first walk, not when the record is made (a page fault for every thread
  // and process that never walks a stack). Zeroed memory is an empty memo;
  // one left by an earlier thread in a reused record is checked like any
  // other (it holds only if this thread's stack reads the same).
  uint32_t valid;
  uint32_t nreads;
  uint32_t version, gen;
  uint32_t max;
  uint32_t fp_valid;
  uint32_t uses_fp;  // whether the walk used the start's fp (else any will do)
  uintptr_t lo, hi;
  uintptr_t pc, sp, fp;  // the start registers
  uint32_t res_n;  // the walk's answer (stale_map is never kept)
  WalkEnd res_end;
  uintptr_t res_bad_pc;
  uint32_t read_off[kMaxReads];  // from lo
  uintptr_t read_val[kMaxReads];
  uint64_t pcs[kMaxPcs];
};
static_assert(std::is_trivially_default_constructible_v<WalkMemo>,
              "a memo is written by its first walk, not when it is made");

// Walk, with memo (nullptr: none): its answer when the memo holds for this
// walk (from_memo: the walk the memo held before this call), else a walk
// that refills the memo when it can.
WalkResult Walk(const UnwindContext& cx, WalkMode mode, const Regs& start, FpBounds b,
                uint64_t* pcs, size_t max, WalkMemo* memo);

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
