// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/unwind_bench_chain.cc - call chains for unwind_bench ---===//
//
// Compiled twice (test/bench/CMakeLists.txt): with -fno-omit-frame-pointer
// as GT_CHAIN=FpChain, and with -fomit-frame-pointer as GT_CHAIN=NofpChain,
// both -O2. `depth` calls deep, the chain runs the benchmark's loop.
//===----------------------------------------------------------------------===//
#include "test/bench/unwind_bench_chain.h"

namespace gotrace::bench {
namespace {

__attribute__((noinline)) void Down(int depth, ChainBody body, void* arg) {
  if (depth <= 0) {
    body(arg);
  } else {
    Down(depth - 1, body, arg);
  }
  __asm__ volatile("" ::: "memory");  // not a tail call
}

}  // namespace

void GT_CHAIN(int depth, ChainBody body, void* arg) {
  Down(depth, body, arg);
  __asm__ volatile("" ::: "memory");
}

}  // namespace gotrace::bench
