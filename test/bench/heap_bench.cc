// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/heap_bench.cc - cost of heap tracking (issue 5) --------===//
//
// Links no gotrace code: scripts/bench-heap runs it plain, under
// LD_PRELOAD=libgotrace.so with heap tracking on (GOTRACE_EVENTS=all) and
// off (GOTRACE_EVENTS=sync), and under heaptrack, and prints the differences.
//
//   heap_bench [Google Benchmark flags]
//     BM_MallocFree/N     malloc(N) + free, the same size every time: the
//                         allocator's fastest path (glibc: the tcache), so
//                         what the wrappers add shows (budget: <= 6 ns per
//                         pair with tracking on, ~0 with it off)
//     BM_MallocFreeMixed  a ring of 256 live blocks of 16..1024 bytes: free
//                         one, allocate another
//
//   heap_bench --storm [THREADS [PAIRS]]
//     THREADS threads (default 2) share PAIRS malloc/free pairs (default
//     10,000,000) of the ring pattern above, each touching its block; prints
//     a checksum that does not depend on timing. Its wall time, plain and
//     traced, is the storm budget (traced <= 1.5 x plain).
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr double kMinTime = 0.3;  // seconds per benchmark run (the script repeats runs)
constexpr int kRing = 256;

// xorshift64: the same sequence on every run.
inline uint64_t Next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}
inline size_t SizeOf(uint64_t r) { return 16 + (r >> 32) % 1009; }

void BM_MallocFree(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(n);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}
BENCHMARK(BM_MallocFree)->Arg(64)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

void BM_MallocFreeMixed(benchmark::State& state) {
  void* ring[kRing] = {};
  uint64_t s = 88172645463325252ull;
  for (auto _ : state) {
    const uint64_t r = Next(s);
    void*& slot = ring[r & (kRing - 1)];
    free(slot);
    slot = malloc(SizeOf(r));
    benchmark::DoNotOptimize(slot);
  }
  for (void* p : ring) free(p);
}
BENCHMARK(BM_MallocFreeMixed)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

struct StormArg {
  uint64_t pairs;
  uint64_t seed;
  uint64_t sum;
};

void* StormThread(void* p) {
  auto* a = static_cast<StormArg*>(p);
  unsigned char* ring[kRing] = {};
  uint64_t s = a->seed, sum = 0;
  for (uint64_t i = 0; i < a->pairs; ++i) {
    const uint64_t r = Next(s);
    unsigned char*& slot = ring[r & (kRing - 1)];
    if (slot != nullptr) sum += slot[0];
    free(slot);
    slot = static_cast<unsigned char*>(malloc(SizeOf(r)));
    if (slot == nullptr) abort();
    slot[0] = static_cast<unsigned char>(r >> 8);
  }
  for (unsigned char* q : ring) free(q);
  a->sum = sum;
  return nullptr;
}

int Storm(int threads, uint64_t pairs) {
  if (threads < 1 || threads > 64) return 2;
  pthread_t t[64];
  StormArg args[64];
  for (int i = 0; i < threads; ++i) {
    args[i] = StormArg{pairs / threads + (static_cast<uint64_t>(i) < pairs % threads ? 1 : 0),
                       0x9E3779B97F4A7C15ull * (i + 1), 0};
    if (pthread_create(&t[i], nullptr, StormThread, &args[i]) != 0) return 1;
  }
  uint64_t sum = 0;
  for (int i = 0; i < threads; ++i) {
    pthread_join(t[i], nullptr);
    sum += args[i].sum;
  }
  std::printf("storm threads=%d pairs=%llu checksum=%llu\n", threads,
              static_cast<unsigned long long>(pairs), static_cast<unsigned long long>(sum));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--storm") == 0) {
    const int threads = argc >= 3 ? std::atoi(argv[2]) : 2;
    const uint64_t pairs = argc >= 4 ? std::strtoull(argv[3], nullptr, 10) : 10'000'000;
    return Storm(threads, pairs);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
