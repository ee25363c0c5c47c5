// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/unwind_bench_chain.h - call chains for unwind_bench ----===//
#pragma once

namespace gotrace::bench {

using ChainBody = void (*)(void* arg);

// body(arg) runs `depth` + 2 frames below the caller, through code built
// with frame pointers (FpChain) or without (NofpChain).
void FpChain(int depth, ChainBody body, void* arg);
void NofpChain(int depth, ChainBody body, void* arg);

}  // namespace gotrace::bench
