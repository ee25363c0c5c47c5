// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/unwind_bench.cc - nanoseconds per frame of each unwinder -===//
//
// Issue 14: what a stack walk costs per frame with GOTRACE_UNWIND=auto, fp
// and libunwind, on code built with frame pointers and without. Each
// benchmark walks from inside a chain of `depth` calls (plus the benchmark
// framework's own frames below it, which every unwinder walks too) and
// reports ns_per_frame = time / frames walked:
//   BM_Fp         frame pointers (only meaningful on the FP chain: without
//                 frame pointers the walk stops after a frame or two)
//   BM_Auto       the built-in CFI unwinder, its row cache warm
//   BM_AutoCold   the same with no row cache: every frame decoded from
//                 .eh_frame (what a return address costs the first time)
//   BM_Libunwind  libunwind's unw_backtrace (its own cache warm)
// Arguments: {chain (0: frame pointers, 1: none), depth}.
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>

#include "test/bench/unwind_bench_chain.h"
#include "unwind/cfi_unwind.h"
#include "unwind/libunwind_unwind.h"

namespace gotrace::bench {
namespace {

using unwind::FpBounds;
using unwind::Regs;
using unwind::UnwindContext;
using unwind::WalkMode;

uintptr_t StackTop() {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  return reinterpret_cast<uintptr_t>(addr) + size;
}

enum class Walker { kFp, kAuto, kAutoCold, kLibunwind };

struct Job {
  benchmark::State* state;
  Walker walker;
  uintptr_t top;
  size_t frames = 0;  // per walk
};

UnwindContext ColdContext() {
  // A row cache that was never mapped: every lookup misses, nothing is kept.
  static unwind::RowCache none;
  return UnwindContext{&unwind::ProcessCode(), &none};
}

// The loop, at the bottom of the chain. Not inlined: its frame is the
// interposer's stand-in (frame pointers: this file is built with them).
__attribute__((noinline)) void Loop(void* arg) {
  auto* job = static_cast<Job*>(arg);
  uint64_t pcs[160];
  const UnwindContext warm = unwind::ProcessUnwind(), cold = ColdContext();
  size_t n = 0;
  for (auto _ : *job->state) {
    const void* frame = __builtin_frame_address(0);
    const FpBounds b{reinterpret_cast<uintptr_t>(frame), job->top};
    Regs regs;
    unwind::RegsFromFrame(frame, b, &regs);
    switch (job->walker) {
      case Walker::kFp: n = unwind::Walk(warm, WalkMode::kFp, regs, b, pcs, 128).n; break;
      case Walker::kAuto: n = unwind::Walk(warm, WalkMode::kAuto, regs, b, pcs, 128).n; break;
      case Walker::kAutoCold: n = unwind::Walk(cold, WalkMode::kAuto, regs, b, pcs, 128).n; break;
      case Walker::kLibunwind: {
        uint32_t gen = 0;
        n = unwind::LibunwindBacktrace(pcs, 128, &gen);
        break;
      }
    }
    benchmark::DoNotOptimize(pcs[0]);
  }
  job->frames = n;
}

void Run(benchmark::State& state, Walker walker) {
  Job job{&state, walker, StackTop()};
  const bool nofp = state.range(0) != 0;
  const int depth = static_cast<int>(state.range(1));
  if (nofp) NofpChain(depth, Loop, &job);
  else FpChain(depth, Loop, &job);
  if (job.frames == 0) {
    state.SkipWithError("the walk found no frame");
    return;
  }
  state.counters["frames"] = static_cast<double>(job.frames);
  state.counters["ns_per_frame"] = benchmark::Counter(
      static_cast<double>(job.frames) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Fp(benchmark::State& s) { Run(s, Walker::kFp); }
void BM_Auto(benchmark::State& s) { Run(s, Walker::kAuto); }
void BM_AutoCold(benchmark::State& s) { Run(s, Walker::kAutoCold); }
void BM_Libunwind(benchmark::State& s) {
  if (!unwind::LibunwindReady()) {
    s.SkipWithError("libunwind.so.8 is not available");
    return;
  }
  Run(s, Walker::kLibunwind);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int chain : {0, 1})
    for (int depth : {8, 32}) b->Args({chain, depth});
  b->ArgNames({"nofp", "depth"});
}
BENCHMARK(BM_Fp)->Args({0, 8})->Args({0, 32})->ArgNames({"nofp", "depth"});
BENCHMARK(BM_Auto)->Apply(Args);
BENCHMARK(BM_AutoCold)->Apply(Args);
BENCHMARK(BM_Libunwind)->Apply(Args);

}  // namespace
}  // namespace gotrace::bench

int main(int argc, char** argv) {
  const char* why = nullptr;
  if (!gotrace::unwind::LibunwindInit(&why)) std::fprintf(stderr, "libunwind: %s\n", why);
  if (!gotrace::unwind::UnwindInit()) {
    std::fprintf(stderr, "cannot map the row cache\n");
    return 1;
  }
  gotrace::unwind::ProcessCode().Update(true);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
