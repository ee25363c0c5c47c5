// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/symbolize_bench.cc - the libdw symbolizer's cost -------===//
//
// Issue 7's budget: 10,000 distinct PCs across 20 libraries symbolized in at
// most 1 s, as the exit-time encode does it (a fresh symbolizer, offline,
// system libraries by symbol table: DwOptions{offline, !system_dwarf}).
//
// This file is also the source of the 20 libraries: compiled with
// GT_SYMBENCH_LIB=k (test/bench/CMakeLists.txt) it is libgt_symbench_k.so,
// about 170 C++ functions (template instances with loops and inlined calls,
// -g -O2) in a namespace of its own. The benchmark dlopen()s the 20, takes
// 500 PCs spread evenly over each one's code, and symbolizes them all:
//   BM_SymbolizeCold   a new symbolizer each time (open every module's DWARF,
//                      index it, resolve): what the budget is about;
//   BM_SymbolizeCached the same PCs again on a symbolizer that has seen them.
//===----------------------------------------------------------------------===//

#if defined(GT_SYMBENCH_LIB)

// --- A fixture library ------------------------------------------------------

#define GT_CAT2(a, b) a##b
#define GT_CAT(a, b) GT_CAT2(a, b)

namespace GT_CAT(gt_symbench_, GT_SYMBENCH_LIB) {
namespace {

volatile int g_sink = GT_SYMBENCH_LIB;

__attribute__((always_inline)) inline int Mix(int a, int b) {
  return a * (31 + GT_SYMBENCH_LIB) + (b ^ g_sink);
}

template <int N>
struct Shape {
  __attribute__((always_inline)) static int Area(int x) {
    int s = 0;
    for (int i = 0; i < N % 5 + 1; ++i) s += Mix(x, i);
    return s;
  }
};

template <int N>
__attribute__((noinline)) int Step(int x);

template <>
__attribute__((noinline)) int Step<0>(int x) {
  return x + g_sink;
}

template <int N>
__attribute__((noinline)) int Step(int x) {
  int s = Shape<N>::Area(x);
  for (int i = 0; i < N % 7 + 2; ++i) s = Mix(s, i * N);
  if (s % 3 == 0) s += Step<N - 1>(s / 3);
  else s -= Step<N - 1>(s + N);
  g_sink = s;
  return s;
}

}  // namespace
}  // namespace GT_CAT(gt_symbench_, GT_SYMBENCH_LIB)

extern "C" __attribute__((visibility("default"))) int gt_symbench_entry(int x) {
  return GT_CAT(gt_symbench_, GT_SYMBENCH_LIB)::Step<170>(x);
}

#else  // !GT_SYMBENCH_LIB

// --- The benchmark ------------------------------------------------------------

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "symbolizer/dw_symbolizer.h"

namespace gotrace {
namespace {

constexpr int kLibraries = 20;
constexpr uint64_t kPcsPerLibrary = 500;

struct Library {
  std::string path;
  uint64_t bias = 0, lo = UINT64_MAX, hi = 0;  // all PT_LOAD segments
  uint64_t text_lo = UINT64_MAX, text_hi = 0;  // the executable ones
};

struct Fixture {
  std::vector<Library> libs;
  std::vector<uint64_t> pcs;  // distinct, 500 per library

  static const Fixture& Get() {
    static const Fixture* f = new Fixture();  // loaded once, never unloaded
    return *f;
  }

 private:
  Fixture() {
    for (int k = 1; k <= kLibraries; ++k) {
      Library lib;
      lib.path = std::string(GT_SYMBENCH_DIR) + "/libgt_symbench_" + std::to_string(k) + ".so";
      void* h = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL);
      link_map* lm = nullptr;
      if (h == nullptr || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) {
        std::fprintf(stderr, "cannot load %s: %s\n", lib.path.c_str(), dlerror());
        std::exit(1);
      }
      lib.bias = lm->l_addr;
      dl_iterate_phdr(
          [](dl_phdr_info* info, size_t, void* arg) {
            auto* l = static_cast<Library*>(arg);
            if (info->dlpi_addr != l->bias || info->dlpi_name == nullptr ||
                l->path != info->dlpi_name) {
              return 0;
            }
            for (int i = 0; i < info->dlpi_phnum; ++i) {
              const ElfW(Phdr)& ph = info->dlpi_phdr[i];
              if (ph.p_type != PT_LOAD) continue;
              const uint64_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
              l->lo = std::min(l->lo, lo);
              l->hi = std::max(l->hi, hi);
              if (ph.p_flags & PF_X) {
                l->text_lo = std::min(l->text_lo, lo);
                l->text_hi = std::max(l->text_hi, hi);
              }
            }
            return 1;
          },
          &lib);
      if (lib.text_lo >= lib.text_hi) {
        std::fprintf(stderr, "%s: no code segment found\n", lib.path.c_str());
        std::exit(1);
      }
      const uint64_t size = lib.text_hi - lib.text_lo;
      for (uint64_t i = 0; i < kPcsPerLibrary; ++i) pcs.push_back(lib.text_lo + i * size / kPcsPerLibrary);
      libs.push_back(lib);
    }
  }
};

// The exit-time encode's options.
std::unique_ptr<Symbolizer> NewSymbolizer(const Fixture& f) {
  DwOptions options;
  options.offline = true;
  options.system_dwarf = false;
  std::unique_ptr<Symbolizer> s = MakeDwSymbolizer(options);
  for (const Library& l : f.libs) s->ModuleLoaded(log::ModuleLoadFields{0, l.bias, l.lo, l.hi, l.path});
  return s;
}

// Symbolizes every PC; returns how many got a source line.
size_t SymbolizeAll(Symbolizer* s, const Fixture& f) {
  std::vector<SymFrame> frames;
  size_t with_line = 0;
  for (uint64_t pc : f.pcs) {
    frames.clear();
    s->Symbolize(pc, 0, &frames);
    if (!frames.empty() && frames.front().line != 0) ++with_line;
  }
  return with_line;
}

void Report(benchmark::State& state, const Fixture& f, size_t with_line) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * f.pcs.size()));
  state.counters["pcs"] = static_cast<double>(f.pcs.size());
  state.counters["libraries"] = static_cast<double>(f.libs.size());
  state.counters["with_line"] = static_cast<double>(with_line);
}

void BM_SymbolizeCold(benchmark::State& state) {
  unsetenv("DEBUGINFOD_URLS");
  const Fixture& f = Fixture::Get();
  size_t with_line = 0;
  for (auto _ : state) {
    std::unique_ptr<Symbolizer> s = NewSymbolizer(f);
    with_line = SymbolizeAll(s.get(), f);
    benchmark::DoNotOptimize(with_line);
    s.reset();  // freeing the Dwfls is part of the encode's cost
  }
  Report(state, f, with_line);
}
BENCHMARK(BM_SymbolizeCold)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SymbolizeCached(benchmark::State& state) {
  unsetenv("DEBUGINFOD_URLS");
  const Fixture& f = Fixture::Get();
  std::unique_ptr<Symbolizer> s = NewSymbolizer(f);
  size_t with_line = SymbolizeAll(s.get(), f);
  for (auto _ : state) {
    with_line = SymbolizeAll(s.get(), f);
    benchmark::DoNotOptimize(with_line);
  }
  Report(state, f, with_line);
}
BENCHMARK(BM_SymbolizeCached)->Unit(benchmark::kMillisecond)->UseRealTime();

// A large symbol table without DWARF, the way a build's compiler is named
// at tracewrap's end: cc1's .dynsym, 29,000 symbols on Debian 12 (or the file
// in GT_SYMBENCH_TABLE). 64 distinct PCs over its code: more than the linear
// look-ups (DwOptions::linear_symbol_lookups), so the table is indexed once
// per iteration, a fresh symbolizer each time.
void BM_SymbolTableIndex(benchmark::State& state) {
  unsetenv("DEBUGINFOD_URLS");
  const char* env = std::getenv("GT_SYMBENCH_TABLE");
  const std::string path = env != nullptr ? env : "/usr/lib/gcc/x86_64-linux-gnu/12/cc1";
  Library lib;
  lib.path = path;
  FILE* f = std::fopen(path.c_str(), "rb");
  ElfW(Ehdr) eh{};
  if (f == nullptr || std::fread(&eh, sizeof eh, 1, f) != 1) {
    if (f != nullptr) std::fclose(f);
    state.SkipWithError(("cannot read " + path + " (set GT_SYMBENCH_TABLE)").c_str());
    return;
  }
  for (int i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph{};
    if (std::fseek(f, static_cast<long>(eh.e_phoff + i * sizeof ph), SEEK_SET) != 0 ||
        std::fread(&ph, sizeof ph, 1, f) != 1 || ph.p_type != PT_LOAD) {
      continue;
    }
    lib.lo = std::min<uint64_t>(lib.lo, ph.p_vaddr);
    lib.hi = std::max<uint64_t>(lib.hi, ph.p_vaddr + ph.p_memsz);
    if (ph.p_flags & PF_X) {
      lib.text_lo = std::min<uint64_t>(lib.text_lo, ph.p_vaddr);
      lib.text_hi = std::max<uint64_t>(lib.text_hi, ph.p_vaddr + ph.p_memsz);
    }
  }
  std::fclose(f);
  if (lib.text_lo >= lib.text_hi) {
    state.SkipWithError((path + ": no code segment").c_str());
    return;
  }
  lib.bias = eh.e_type == ET_DYN ? 0x7f0000000000ull : 0;
  std::vector<uint64_t> pcs;
  for (uint64_t i = 0; i < 64; ++i)
    pcs.push_back(lib.bias + lib.text_lo + (2 * i + 1) * (lib.text_hi - lib.text_lo) / 128);
  size_t named = 0;
  for (auto _ : state) {
    DwOptions options;
    options.offline = true;
    options.system_dwarf = false;
    std::unique_ptr<Symbolizer> s = MakeDwSymbolizer(options);
    s->ModuleLoaded(log::ModuleLoadFields{0, lib.bias, lib.bias + lib.lo, lib.bias + lib.hi, path});
    std::vector<SymFrame> frames;
    named = 0;
    for (uint64_t pc : pcs) s->Expect(pc, 0);
    for (uint64_t pc : pcs) {
      frames.clear();
      s->Symbolize(pc, 0, &frames);
      if (!frames.empty() && !frames.front().func.empty()) ++named;
    }
    benchmark::DoNotOptimize(named);
  }
  state.counters["named"] = static_cast<double>(named);
}
BENCHMARK(BM_SymbolTableIndex)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gotrace

BENCHMARK_MAIN();

#endif  // GT_SYMBENCH_LIB
