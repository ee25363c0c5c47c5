// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/unwind_test.cc - the frame-pointer walk and the depot ---===//
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "unwind/fp_unwind.h"
#include "unwind/stack_depot.h"

namespace gotrace::unwind {
namespace {

// A fake stack: frame k at words [2k, 2k+1] = {next fp, return address}.
struct FakeStack {
  alignas(16) uintptr_t words[64] = {};
  uintptr_t Addr(size_t word) const { return reinterpret_cast<uintptr_t>(&words[word]); }
  FpBounds Bounds() const { return FpBounds{Addr(0), Addr(64)}; }
  void Chain(size_t frames) {
    for (size_t k = 0; k < frames; ++k) {
      words[2 * k] = Addr(2 * (k + 1));
      words[2 * k + 1] = 0x400000 + k * 0x10;
    }
    words[2 * frames] = 0;  // end of chain
    words[2 * frames + 1] = 0;
  }
};

TEST_CASE("fp unwind follows a valid chain to its end", "[unwind]") {
  FakeStack s;
  s.Chain(10);
  uint64_t pcs[64];
  const size_t n = FpUnwind(&s.words[0], s.Bounds(), pcs, 64);
  REQUIRE(n == 10);
  for (size_t k = 0; k < n; ++k) CHECK(pcs[k] == 0x400000 + k * 0x10);
  CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 3) == 3);  // depth limit
}

TEST_CASE("fp unwind stops at a corrupted frame pointer without reading it", "[unwind]") {
  uint64_t pcs[64];
  SECTION("pointer outside the stack") {
    FakeStack s;
    s.Chain(10);
    s.words[2 * 4] = 0x10;  // frame 4 points at page zero
    CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 64) == 5);
  }
  SECTION("pointer far above the stack") {
    FakeStack s;
    s.Chain(10);
    s.words[2 * 2] = ~uintptr_t{0} - 64;
    CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 64) == 3);
  }
  SECTION("misaligned pointer") {
    FakeStack s;
    s.Chain(10);
    s.words[2 * 3] = s.Addr(2 * 4) + 3;
    CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 64) == 4);
  }
  SECTION("a loop") {
    FakeStack s;
    s.Chain(10);
    s.words[2 * 5] = s.Addr(2 * 5);  // points at itself
    CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 64) == 6);
    s.words[2 * 5] = s.Addr(2 * 1);  // points back down
    CHECK(FpUnwind(&s.words[0], s.Bounds(), pcs, 64) == 6);
  }
  SECTION("start frame outside the bounds") {
    FakeStack s;
    s.Chain(10);
    CHECK(FpUnwind(reinterpret_cast<void*>(0x1000), s.Bounds(), pcs, 64) == 0);
    CHECK(FpUnwind(&s.words[63], s.Bounds(), pcs, 64) == 0);  // last frame would cross hi
  }
  SECTION("random garbage never faults") {
    std::mt19937_64 rng(1);
    for (int round = 0; round < 2000; ++round) {
      FakeStack s;
      for (auto& w : s.words) {
        switch (rng() % 4) {
          case 0: w = rng(); break;
          case 1: w = s.Addr(rng() % 64) + (rng() % 2 ? 0 : rng() % 8); break;
          case 2: w = 0; break;
          default: w = 0x400000 + rng() % 0x10000;
        }
      }
      const size_t n = FpUnwind(&s.words[rng() % 64], s.Bounds(), pcs, 64);
      CHECK(n <= 32);  // the chain must strictly increase inside 64 words
    }
  }
}

__attribute__((noinline)) size_t Depth3(uint64_t* pcs) {
  int here;
  const FpBounds b{reinterpret_cast<uintptr_t>(&here), reinterpret_cast<uintptr_t>(&here) + (1 << 20)};
  return FpUnwind(__builtin_frame_address(0), b, pcs, 64);
}
__attribute__((noinline)) size_t Depth2(uint64_t* pcs) {
  const size_t n = Depth3(pcs);
  asm volatile("" ::: "memory");  // not a tail call
  return n;
}
__attribute__((noinline)) size_t Depth1(uint64_t* pcs) {
  const size_t n = Depth2(pcs);
  asm volatile("" ::: "memory");  // not a tail call
  return n;
}

TEST_CASE("fp unwind on this thread's real stack", "[unwind]") {
  uint64_t pcs[64] = {};
  const size_t n = Depth1(pcs);
  CHECK(n >= 3);  // Depth3's caller chain: Depth2, Depth1, this test, ...
  for (size_t i = 0; i < n; ++i) CHECK(pcs[i] >= 4096);
}

TEST_CASE("stack depot: same stack same id, epochs and lengths distinguish", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 10, 1 << 20));
  const uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
  bool fresh;
  const uint32_t ia = d.Intern(a, 3, 0, &fresh);
  CHECK(fresh);
  CHECK(ia == 1);
  CHECK(d.Intern(a, 3, 0, &fresh) == ia);
  CHECK_FALSE(fresh);
  CHECK(d.Intern(b, 3, 0, &fresh) != ia);
  CHECK(d.Intern(a, 2, 0, &fresh) != ia);
  CHECK(d.Intern(a, 3, 1, &fresh) != ia);  // another module epoch
  CHECK(d.size() == 4);
}

TEST_CASE("stack depot: full tables fail softly", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 4, 1 << 12));
  uint64_t pcs[2];
  bool fresh;
  size_t zeros = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    pcs[0] = i;
    pcs[1] = i * 7;
    if (d.Intern(pcs, 2, 0, &fresh) == 0) ++zeros;
  }
  CHECK(zeros >= 100 - 16);
  CHECK(d.full_misses() == zeros);
}

TEST_CASE("stack depot: concurrent interning is consistent", "[unwind]") {
  StackDepot d;
  REQUIRE(d.Init(1 << 14, 16 << 20));
  constexpr int kThreads = 4, kStacks = 2000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::atomic<int> go{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < kThreads) {
      }
      uint64_t pcs[8];
      bool fresh;
      for (int r = 0; r < 3; ++r) {
        for (int i = 0; i < kStacks; ++i) {
          static const int kMul[] = {1, 3, 7, 11};  // coprime with kStacks: permutations
          const int k = (i * kMul[t]) % kStacks;
          for (int j = 0; j < 8; ++j) pcs[j] = 0x1000 + static_cast<uint64_t>(k) * 8 + j;
          const uint32_t id = d.Intern(pcs, 8, 0, &fresh);
          if (r == 2) ids[t][k] = id;
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  // After the first rounds every stack is published and found again. Threads
  // may disagree only where an insert raced: a thread that found a slot
  // still being filled (preempted mid-insert) inserted the stack again
  // further on, and keeps finding its own copy while the other is busy.
  // That takes a preemption inside a few instructions: rare.
  int disagree = 0;
  for (int k = 0; k < kStacks; ++k) {
    bool same = true;
    for (int t = 0; t < kThreads; ++t) {
      CHECK(ids[t][k] != 0);
      same = same && ids[t][k] == ids[0][k];
    }
    disagree += same ? 0 : 1;
  }
  CHECK(disagree <= 64);
  // A racing insert may give a stack a second id, never more than a few.
  CHECK(d.size() >= static_cast<uint32_t>(kStacks));
  CHECK(d.size() <= static_cast<uint32_t>(kStacks) + 64);
}

}  // namespace
}  // namespace gotrace::unwind
