// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/annotate_bench.cc - cost of a gotrace/annotate.h call --===//
//
// The annotation calls of issue 17, per call, in a program that links no
// gotrace code: run plain (the library absent: a load and a branch, budget
// <= 2 ns) and under LD_PRELOAD=libgotrace.so (a stack walk and a record):
//
//   build/test/bench/annotate_bench
//   export GOTRACE_DEFER=1 GOTRACE_OUT=/tmp/a.trace
//   LD_PRELOAD=build/libgotrace.so build/test/bench/annotate_bench --benchmark_min_time=0.2
//
// (GOTRACE_DEFER: the log is left unencoded, /tmp/a.trace.gtlog: remove it.)
//
//   BM_RegionBeginEnd   gotrace_region_begin + gotrace_region_end (2 calls)
//   BM_Log              gotrace_log with a 16-byte message (1 call)
//   BM_TaskBeginEnd     gotrace_task_begin + gotrace_task_end (2 calls)
//
// Times are per iteration: halve the pairs' for the cost of one call. The
// stack is the same on every call (the steady state: interned once, then
// found). Traced, every call writes a record: keep runs short
// (--benchmark_min_time=0.2), the log grows by about 20 bytes a call.
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <gotrace/annotate.h>

namespace {

void BM_RegionBeginEnd(benchmark::State& state) {
  const uint64_t task = gotrace_task_begin("bench");
  for (auto _ : state) {
    gotrace_region_begin(task, "region");
    gotrace_region_end(task, "region");
  }
  gotrace_task_end(task);
}
BENCHMARK(BM_RegionBeginEnd);

void BM_Log(benchmark::State& state) {
  for (auto _ : state) gotrace_log(0, "bench", "sixteen bytes...");
}
BENCHMARK(BM_Log);

void BM_TaskBeginEnd(benchmark::State& state) {
  for (auto _ : state) {
    const uint64_t task = gotrace_task_begin("task");
    benchmark::DoNotOptimize(task);
    gotrace_task_end(task);
  }
}
BENCHMARK(BM_TaskBeginEnd);

}  // namespace

BENCHMARK_MAIN();
