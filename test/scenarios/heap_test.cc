// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/heap_test.cc - the heap counter (issue 5) ----------===//
//
// Programs that allocate, run plain and under libgotrace.so: their output
// must be the same, the trace must satisfy Go's parser and web UI, and its
// HeapAlloc samples (the "Heap" counter of `go tool trace`) must follow the
// live heap: peaks within 5 %, back near the start when all is freed, never
// below zero, bounded in number (H1, H5, H9, H10, H31).
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
const std::string kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

struct HeapSample {
  int64_t ts;
  uint64_t g;
  uint64_t bytes;
};

std::vector<HeapSample> HeapSamples(const ParsedTrace& t) {
  std::vector<HeapSample> out;
  for (const GoEvent* e : t.Find("HeapAlloc")) out.push_back({e->ts, e->g, e->args.at("mem")});
  return out;
}

uint64_t MaxBytes(const std::vector<HeapSample>& v) {
  uint64_t m = 0;
  for (const HeapSample& s : v) m = std::max(m, s.bytes);
  return m;
}

// A value the program printed on stderr as NAME=123 (or NAME>=123).
uint64_t Reported(const std::string& err, const std::string& name) {
  std::smatch m;
  const std::regex re(name + ">?=([0-9]+)");
  INFO("stderr: " << err);
  REQUIRE(std::regex_search(err, m, re));
  return std::stoull(m[1]);
}

std::string Describe(const std::vector<HeapSample>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 40; ++i)
    s += std::to_string(v[i].ts) + " g" + std::to_string(v[i].g) + " " + std::to_string(v[i].bytes) + "\n";
  if (v.size() > 40) s += "... (" + std::to_string(v.size()) + " samples)\n";
  return s;
}

// Every sample is a plausible size: a negative total wrapped to uint64 would
// be astronomically large.
void CheckNeverNegative(const std::vector<HeapSample>& v) {
  for (const HeapSample& s : v) {
    INFO("sample at " << s.ts << ": " << s.bytes);
    CHECK(s.bytes < (uint64_t{1} << 40));
  }
}

// The heap grows to 100 MiB in steps of `kib` and is freed.
void CheckGrowth(const std::string& kib) {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_grow"), kib}, dir);
  REQUIRE(s.plain.Exited(0));
  const uint64_t baseline = Reported(s.traced.err, "baseline");
  const uint64_t truth = baseline + Reported(s.traced.err, "usable");
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO("baseline " << baseline << ", peak " << truth << "\n" << Describe(v));
  REQUIRE(v.size() >= 3);
  const uint64_t peak = MaxBytes(v);
  CHECK(peak >= truth * 95 / 100);
  CHECK(peak <= truth * 105 / 100);
  // The curve rises to the peak (not one jump) and ends where it started.
  const auto at_peak = std::find_if(v.begin(), v.end(), [&](const HeapSample& x) { return x.bytes == peak; });
  CHECK(std::count_if(v.begin(), at_peak, [&](const HeapSample& x) { return x.bytes < peak / 2; }) >= 1);
  CHECK(v.back().bytes <= baseline + 4 * kMiB);
  CHECK(v.back().bytes + 4 * kMiB >= baseline);
  // Bounded: at most one sample per MiB of change (x2 for a peak), plus a few.
  CHECK(v.size() <= 2 * 200 + 10);
  CheckNeverNegative(v);
  for (size_t i = 1; i < v.size(); ++i) CHECK(v[i].ts >= v[i - 1].ts);
}

TEST_CASE("heap grows to 100 MiB in 1 MiB steps and is freed: peak within 5 %, end at the start",
          "[heap]") {
  CheckGrowth("1024");  // blocks glibc mmaps
}

TEST_CASE("heap grows to 100 MiB in 64 KiB steps and is freed: peak within 5 %, end at the start",
          "[heap]") {
  CheckGrowth("64");  // heap blocks, past the per-thread fold every other step
}

TEST_CASE("allocation storm in 4 threads through every malloc-family function", "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_storm"), "4", "200000"}, dir);
  REQUIRE(s.plain.Exited(0));
  CHECK_THAT(s.plain.out, Catch::Contains("errors 0"));
  CHECK_THAT(s.plain.out, Catch::Contains("pvalloc "));
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO(Describe(v));
  REQUIRE(v.size() >= 5);
  // The rings hold a few dozen MiB at most; everything is freed at the end.
  CHECK(MaxBytes(v) >= 2 * kMiB);
  CHECK(MaxBytes(v) <= 512 * kMiB);
  CHECK(v.back().bytes <= 4 * kMiB);
  CheckNeverNegative(v);
  // Several threads record samples; the volume stays bounded.
  std::set<uint64_t> threads;
  for (const HeapSample& x : v) threads.insert(x.g);
  CHECK(threads.size() >= 2);
  CHECK(v.size() <= 20000);
}

TEST_CASE("GOTRACE_EVENTS without heap: no HeapAlloc, same output", "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_storm"), "2", "50000"}, dir, {"GOTRACE_EVENTS=sync"},
                            /*web=*/false);
  REQUIRE(s.plain.Exited(0));
  CHECK(s.parsed.Count("HeapAlloc") == 0);
}

TEST_CASE("storm with jemalloc preloaded after libgotrace.so (H10)", "[heap]") {
  if (access(kJemalloc.c_str(), R_OK) != 0) {
    WARN("skipped: " << kJemalloc << " is missing (Debian package libjemalloc2)");
    return;
  }
  TempDir dir;
  // pvalloc is left out: jemalloc has none and glibc's bypasses malloc, so
  // its block cannot be given to jemalloc's free, traced or not.
  ScenarioRun s = RunTraced({Scenario("heap_storm"), "4", "200000", "--no-pvalloc"}, dir, {},
                            /*web=*/true, kJemalloc);
  REQUIRE(s.plain.Exited(0));
  CHECK_THAT(s.plain.out, Catch::Contains("errors 0"));
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO(Describe(v));
  REQUIRE(v.size() >= 5);
  CHECK(MaxBytes(v) >= 2 * kMiB);
  CHECK(MaxBytes(v) <= 512 * kMiB);
  // Counted in jemalloc's usable sizes, balanced: back near zero (no
  // baseline: glibc's mallinfo2 does not describe jemalloc's heap).
  CHECK(v.back().bytes <= 4 * kMiB);
  CheckNeverNegative(v);
}

TEST_CASE("C++ new and delete reach malloc and free", "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_cxx")}, dir);
  REQUIRE(s.plain.Exited(0));
  const uint64_t peak = Reported(s.traced.err, "peak_usable");
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO("peak_usable " << peak << "\n" << Describe(v));
  REQUIRE(!v.empty());
  CHECK(MaxBytes(v) >= peak * 95 / 100);
  CHECK(MaxBytes(v) <= peak * 105 / 100 + 8 * kMiB);  // + the map and strings
  CHECK(v.back().bytes <= 4 * kMiB);
  CheckNeverNegative(v);
}

TEST_CASE("memory allocated before our constructor and freed while traced: never below zero",
          "[heap]") {
  TempDir dir;
  // libheap_early_lib.so, after us in LD_PRELOAD, is initialized before us:
  // its constructor's 64 MiB are in the baseline, not in any thread's count.
  ScenarioRun s = RunTraced({Scenario("heap_early")}, dir, {}, /*web=*/true,
                            Scenario("libheap_early_lib.so"));
  REQUIRE(s.plain.Exited(0));
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO(Describe(v));
  REQUIRE(v.size() >= 3);
  CheckNeverNegative(v);
  // The early block shows (as the baseline), then its free, then the 16 MiB.
  const auto peak = std::max_element(v.begin(), v.end(),
                                     [](const HeapSample& a, const HeapSample& b) { return a.bytes < b.bytes; });
  CHECK(peak->bytes >= 64 * kMiB);
  CHECK(peak->bytes <= 70 * kMiB);
  const auto drop = std::find_if(peak, v.end(), [](const HeapSample& x) { return x.bytes < 8 * kMiB; });
  REQUIRE(drop != v.end());
  CHECK(std::any_of(drop, v.end(), [](const HeapSample& x) { return x.bytes >= 15 * kMiB; }));
  CHECK(v.back().bytes <= 4 * kMiB);
}

TEST_CASE("dlopen of a library with __thread variables touched from 8 threads (H5)", "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_dlopen_tls"), Scenario("libheap_tls_lib.so")}, dir);
  REQUIRE(s.plain.Exited(0));
  CHECK_THAT(s.plain.out, Catch::StartsWith("total "));
  CHECK(s.parsed.Count("GoCreate") == 9);
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO(Describe(v));
  CheckNeverNegative(v);
  // The loader allocated each thread's 256 KiB TLS block through malloc.
  CHECK(MaxBytes(v) >= 1 * kMiB);
  CHECK(MaxBytes(v) <= 64 * kMiB);
}

TEST_CASE("edge arguments: results and errno as untraced (H9, H31)", "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_edge")}, dir, {}, /*web=*/false);
  REQUIRE(s.plain.Exited(0));
  // RunTraced compared the outputs line by line; these lines make sure the
  // program exercised what it claims (glibc 2.36's answers).
  const std::string& o = s.plain.out;
  CHECK_THAT(o, Catch::Contains("calloc(SIZE_MAX/2, 4)              NULL errno=12"));
  CHECK_THAT(o, Catch::Contains("posix_memalign(align 3)            rc=22 errno=4242"));
  CHECK_THAT(o, Catch::Contains("out untouched 1"));
  CHECK_THAT(o, Catch::Contains("reallocarray(NULL, SIZE_MAX, 2)    NULL errno=12"));
  CHECK_THAT(o, Catch::Contains("malloc(0)                          ptr "));
  CHECK_THAT(o, Catch::Contains("realloc(p, SIZE_MAX)               NULL errno=12"));
  CHECK_THAT(o, Catch::Contains("kept 1"));
  CHECK_THAT(o, Catch::Contains("moved contents 1"));
  CHECK_THAT(o, Catch::Contains("free(NULL)                         NULL errno=4242"));
}

}  // namespace
}  // namespace gotrace::testing

namespace gotrace::testing {
namespace {

// What libc allocates inside an interposed call (getaddrinfo's result list)
// is the program's and counts, like its free outside any hook
// (freeaddrinfo): only the tracer's own scope (kTracerDepth) is uncounted.
TEST_CASE("libc allocates inside an interposed call, the program frees outside: no drift",
          "[heap]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("heap_gai")}, dir, {}, /*web=*/false);
  REQUIRE(s.plain.Exited(0));
  CHECK(s.plain.out == "lookups 20000\n");
  const std::vector<HeapSample> v = HeapSamples(s.parsed);
  INFO(Describe(v));
  REQUIRE(!v.empty());
  CHECK(MaxBytes(v) >= 20 * kMiB);
  for (const HeapSample& x : v) CHECK(x.bytes >= 19 * kMiB);
}

}  // namespace
}  // namespace gotrace::testing
