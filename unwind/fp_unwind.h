// SPDX-License-Identifier: Apache-2.0
//===-- unwind/fp_unwind.h - frame-pointer unwinding that never faults ----===//
//
// Walks the chain of saved frame pointers ([fp] = caller's fp, [fp+8] = return
// address on x86_64 and aarch64). Every frame is checked before it is read
// (H22): it must lie inside [lo, hi - 16), be 8-byte aligned, and the chain
// must strictly increase, so a corrupted or absent frame pointer (code built
// with -fomit-frame-pointer) ends the walk instead of faulting. The caller
// chooses the bounds: lo is the current stack pointer (every live frame is
// above it) and hi the top of the thread's stack, so everything in between is
// mapped.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace::unwind {

struct FpBounds {
  uintptr_t lo;
  uintptr_t hi;
};

// Collects up to max return addresses starting with the frame `fp` (its
// return address is pcs[0]). Returns how many were written.
__attribute__((always_inline)) inline size_t FpUnwind(const void* fp, FpBounds b, uint64_t* pcs,
                                                      size_t max) {
  size_t n = 0;
  uintptr_t f = reinterpret_cast<uintptr_t>(fp);
  while (n < max) {
    if (f < b.lo || f >= b.hi - 16 || (f & 7) != 0) break;
    const uintptr_t* frame = reinterpret_cast<const uintptr_t*>(f);
    const uintptr_t next = frame[0];
    const uintptr_t ret = frame[1];
    if (ret < 4096) break;  // the end of the chain (0) or garbage
    pcs[n++] = ret;
    if (next <= f) break;
    f = next;
  }
  return n;
}

}  // namespace gotrace::unwind
