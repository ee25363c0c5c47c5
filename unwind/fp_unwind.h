// SPDX-License-Identifier: Apache-2.0
//===-- unwind/fp_unwind.h - frame-pointer unwinding that never faults ----===//
//
// Walks the chain of saved frame pointers ([fp] = caller's fp, [fp+8] = return
// address on x86_64 and aarch64). Every frame is checked before it is read
// (H22): it must lie inside [lo, hi - 16), be 8-byte aligned, and the chain
// must strictly increase, so a corrupted or absent frame pointer (code built
// with -fomit-frame-pointer) ends the walk instead of faulting. Every return
// address must be code (`is_code`: an executable segment of a loaded object),
// so a frame pointer that leads into data ends the walk instead of adding a
// garbage frame (issue 14). The caller chooses the bounds: lo is the current
// stack pointer (every live frame is above it) and hi the top of the thread's
// stack, so everything in between is mapped.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace::unwind {

// The stack a walk may read: [lo, hi). `copy`, when set, holds those bytes
// as they were (a snapshot of another moment's stack: the kernel's copy at
// a CPU sample), and reads come from it instead of the live memory.
struct FpBounds {
  uintptr_t lo;
  uintptr_t hi;
  const uint8_t* copy = nullptr;
};

// The word at a (aligned, inside b: the caller checked), from the stack or
// its copy.
__attribute__((always_inline)) inline uintptr_t StackWord(const FpBounds& b, uintptr_t a) {
  if (b.copy == nullptr) return *reinterpret_cast<const uintptr_t*>(a);
  uintptr_t v;
  __builtin_memcpy(&v, b.copy + (a - b.lo), sizeof v);
  return v;
}

// Why a walk stopped. Anything but kOutermost means the stack is cut short
// (the log marks such stacks truncated).
enum class WalkEnd : uint8_t {
  kOutermost,     // the thread's first frame (undefined return address, or a zero frame pointer)
  kDepth,         // more frames than room
  kNotCode,       // a return address outside every executable segment (bad_pc)
  kBadFrame,      // a frame outside the stack, misaligned, or not above the previous one
  kNoUnwindInfo,  // no unwind rule we can follow and no frame-pointer frame
  kSignalFrame,   // a signal handler's frame: the code it interrupted is not walked
};

struct WalkResult {
  size_t n = 0;
  WalkEnd end = WalkEnd::kOutermost;
  uintptr_t bad_pc = 0;    // kNotCode: the return address that is not code
  bool stale_map = false;  // unwind tables were not read: the code map is older than an unload
  bool from_memo = false;  // answered by a WalkMemo (cfi_unwind.h): the same walk as its last
  bool truncated() const { return end != WalkEnd::kOutermost; }
};

// Collects up to max return addresses from the frame record at `fp` (its
// return address is pcs[0]), which must lie at or above `lo`.
template <class IsCode>
__attribute__((always_inline)) inline WalkResult FpUnwind(uintptr_t fp, uintptr_t lo, FpBounds b,
                                                          uint64_t* pcs, size_t max,
                                                          IsCode&& is_code) {
  WalkResult r;
  for (;;) {
    if (fp == 0) return r;  // the ABI's end of the chain
    if (fp < lo || fp < b.lo || b.hi < 16 || fp > b.hi - 16 || (fp & 7) != 0) {
      r.end = WalkEnd::kBadFrame;
      return r;
    }
    const uintptr_t next = StackWord(b, fp);
    const uintptr_t ret = StackWord(b, fp + 8);
    if (!is_code(ret)) {
      r.end = WalkEnd::kNotCode;
      r.bad_pc = ret;
      return r;
    }
    if (r.n == max) {
      r.end = WalkEnd::kDepth;
      return r;
    }
    pcs[r.n++] = ret;
    lo = fp + 16;
    fp = next;
  }
}

}  // namespace gotrace::unwind
