// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/report_bench.cc - gotrace report on 1 million events ---===//
//
// Issue 15's budget: the report of a 1-million-event trace in <= 2 s. The
// trace is synthetic but shaped like gotrace's (96 threads on 8 Ps handing a
// lock to each other, heap records, symbolized stacks, gotrace-kinds); the
// benchmark reads it from a file, analyzes it and formats the text report.
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "encoder/go_trace_writer.h"
#include "encoder/report/report.h"
#include "encoder/report/trace_reader.h"

namespace {

constexpr uint32_t kProcs = 8;
constexpr uint64_t kPerProc = 12;  // goroutines per P

std::vector<uint8_t> BigTrace(uint64_t target_events) {
  gotrace::MemorySink sink;
  gotrace::GoTraceWriter w(&sink, kProcs, 1000000000);
  using gotrace::go::EvType;
  std::string kinds = "gotrace-kinds:v1";
  for (uint64_t s = 1; s <= 64; ++s) {
    std::vector<gotrace::GoFrame> f;
    for (uint64_t d = 0; d < 8; ++d)
      f.push_back({0x1000 * s + d, w.String("func_" + std::to_string(s) + "_" + std::to_string(d)),
                   w.String("/src/file" + std::to_string(d) + ".c"), 10 + d});
    w.Stack(s, f);
    kinds += " " + std::to_string(s) + (s % 2 ? "=mutex" : "=futex");
  }
  w.String(kinds);
  w.String("gotrace-meta:v1 pid=1 sched=kernel cpu_hz=0 lost=0 dropped=0 cmd=bench");
  const uint64_t ngo = kProcs * kPerProc;
  std::vector<uint64_t> seq(ngo + 1, 0);
  for (uint64_t g = 1; g <= ngo; ++g) w.Event(0, gotrace::go::kEvGoCreate, 0, {g, 1 + g % 64, 0});
  uint64_t ts = 10, events = ngo;
  for (uint64_t k = 0; events < target_events; ++k) {
    for (uint32_t p = 0; p < kProcs; ++p) {
      const uint64_t g = 1 + p * kPerProc + k % kPerProc;
      const uint64_t prev = 1 + p * kPerProc + (k + kPerProc - 1) % kPerProc;
      w.Event(p, gotrace::go::kEvGoStart, ts, {g, ++seq[g]});
      if (k > 0) w.Event(p, gotrace::go::kEvGoUnblock, ts + 100, {prev, ++seq[prev], 1 + k % 64});
      if (k % 16 == 0) w.Event(p, gotrace::go::kEvHeapAlloc, ts + 150, {1000 + k});
      w.Event(p, gotrace::go::kEvGoBlockSync, ts + 200, {1 + (k + p) % 64});
      events += k > 0 ? 3 : 2;
      if (k % 16 == 0) ++events;
    }
    ts += 300;
  }
  (void)w.Finish(ts);
  return sink.bytes;
}

void BM_Report1M(benchmark::State& state) {
  const std::vector<uint8_t> bytes = BigTrace(1000000);
  char path[] = "/tmp/gotrace-report-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0 || write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    state.SkipWithError("cannot write the trace");
    return;
  }
  close(fd);
  size_t n = 0;
  for (auto _ : state) {
    gotrace::report::Trace t;
    gotrace::Status st = gotrace::report::ReadTrace(path, &t);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
    n = t.events.size();
    const auto r = gotrace::report::Analyze(t, path);
    benchmark::DoNotOptimize(gotrace::report::FormatText({r}, 10));
  }
  unlink(path);
  state.counters["events"] = static_cast<double>(n);
  state.counters["bytes"] = static_cast<double>(bytes.size());
}
BENCHMARK(BM_Report1M)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
