// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/encode_bench.cc - encoder throughput and peak memory ---===//
//
// Issue goal: a synthetic 4-thread log of 10 M records encodes at >= 5 M
// records/s with peak memory under 64 MiB, and memory does not grow with the
// number of records. The log is generated once, streaming (one chunk buffer
// per thread), so the process's peak RSS is the encoder's.
//
//   build/test/bench/encode_bench [--records=N] [--benchmark_*]
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "encoder/encode.h"
#include "encoder/log_writer.h"

namespace gotrace {
namespace {

uint64_t g_records = 10'000'000;
std::string g_log;

void WriteOrDie(int fd, const void* p, size_t n) {
  if (::write(fd, p, n) != static_cast<ssize_t>(n)) {
    std::perror("write");
    std::exit(1);
  }
}

// A plausible mix: contended mutexes handed between 4 threads, short and
// blocking syscalls, heap samples, sleeps; 64 distinct stacks.
std::string GenerateLog(uint64_t records) {
  char path[] = "/tmp/gotrace-bench-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) std::exit(1);
  log::FileHeader h;
  log::InitFileHeader(&h, 1'000'000'000, 1000, 1, 0, 2);
  WriteOrDie(fd, &h, sizeof h);
  uint64_t chunks = 0;
  constexpr size_t kChunk = 64 << 10;
  std::vector<uint64_t> mem(kChunk / 8);
  log::ChunkWriter w;
  w.Init(reinterpret_cast<uint8_t*>(mem.data()), kChunk);
  auto flush = [&](uint32_t serial, uint32_t tid, uint32_t* seq) {
    if (w.empty()) return;
    log::SealedChunk c = w.Seal(serial, tid, (*seq)++);
    WriteOrDie(fd, c.data, c.size);
    ++chunks;
    w.Begin(0);
  };
  // Stacks in the process stream.
  uint32_t pseq = 0;
  w.Begin(1000);
  for (uint64_t id = 1; id <= 64; ++id) {
    uint64_t pcs[16];
    for (int i = 0; i < 16; ++i) pcs[i] = 0x400000 + id * 0x1000 + i * 0x40;
    w.StackDef(1000, 0, id, 0, pcs, 16);
  }
  flush(0, 0, &pseq);

  // Four threads, each its own time line; they run in lockstep rounds so
  // waits and releases of the shared mutexes overlap.
  constexpr int kThreads = 4;
  const uint64_t per_thread = records / kThreads;
  std::mt19937_64 rng(42);
  for (int t = 0; t < kThreads; ++t) {
    uint32_t seq = 0;
    const uint32_t tid = 100 + t;
    log::Tick ts = 1000;
    w.Begin(ts);
    w.ThreadStart(ts, t % 2, 0, 0x401000, 0x7000 + t, log::kThreadExisted);
    uint32_t cpu = t % 2;
    for (uint64_t i = 1; i < per_thread; ++i) {
      if (!w.Fits(log::kMaxFixedRecordBytes)) {
        flush(1 + t, tid, &seq);
        w.Begin(ts);
      }
      ts += 200 + rng() % 2000;
      if (rng() % 10 == 0) cpu = 1 - cpu;  // threads migrate now and then
      const uint64_t stk = 1 + rng() % 64;
      const uint64_t obj = 0x9000 + (rng() % 4) * 64;
      switch (rng() % 20) {
        case 0: case 1: case 2: case 3: case 4:
          w.Wait(ts, cpu, log::WaitKind::kMutex, 0, obj, 0, 1500, cpu, stk);
          ts += 1500;
          break;
        case 5: case 6: case 7: case 8: case 9:
          w.Release(ts, cpu, log::WaitKind::kMutex, obj, 1, stk);
          break;
        case 10: case 11: case 12: case 13:
          w.Wait(ts, cpu, log::WaitKind::kSyscall, 0, 3, 0, 800, cpu, stk);
          ts += 800;
          break;
        case 14:
          w.Wait(ts, cpu, log::WaitKind::kSyscall, 0, 3, 0, 50'000, 1 - cpu, stk);
          ts += 50'000;
          break;
        case 15:
          w.Wait(ts, cpu, log::WaitKind::kSleep, 0, 0, 0, 20'000, cpu, stk);
          ts += 20'000;
          break;
        default:
          w.Heap(ts, cpu, 1'000'000 + rng() % 1'000'000);
          break;
      }
    }
    flush(1 + t, tid, &seq);
  }
  w.Begin(0);
  w.TraceEnd(~0ull >> 8, 0, 0, 0, chunks);
  flush(0, 0, &pseq);
  ::close(fd);
  return path;
}

void BM_Encode(benchmark::State& state) {
  EncodeOptions opts;
  opts.output_mode = OutputMode::kOverwrite;
  EncodeStats stats;
  const std::string out = g_log + ".trace";
  for (auto _ : state) {
    stats = EncodeStats();
    Status st = Encode(std::span<const std::string>(&g_log, 1), out, opts, &stats);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  ::unlink(out.c_str());
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(stats.log_records), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["records"] = static_cast<double>(stats.log_records);
  state.counters["events"] = static_cast<double>(stats.events);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  state.counters["trace_MiB"] = static_cast<double>(stats.bytes) / (1 << 20);
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace gotrace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--records=", 10) == 0) gotrace::g_records = std::strtoull(argv[i] + 10, nullptr, 10);
  }
  gotrace::g_log = gotrace::GenerateLog(gotrace::g_records);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  ::unlink(gotrace::g_log.c_str());
  return 0;
}
