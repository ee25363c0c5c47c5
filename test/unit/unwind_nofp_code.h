// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/unwind_nofp_code.h - real code without frame pointers ---===//
#pragma once

namespace gotrace::unwind::testing {

using CaptureFn = void (*)(void* arg);

// Calls fn(arg) `depth` + 4 frames down, through functions without frame
// pointers (one with rbp clobbered) and libc's qsort.
void NofpChain(int depth, CaptureFn fn, void* arg);

}  // namespace gotrace::unwind::testing
