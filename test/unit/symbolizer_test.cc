// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/symbolizer_test.cc - the libdw symbolizer ---------------===//
//
// The fixtures (test/symbolizer/) are dlopen'ed; the addresses symbolized are
// return addresses the fixture code captured, minus one, as the encoder asks.
// Each fixture call also reports the source lines of the calls that led to
// the captured address, which the frames must carry.
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <cstring>

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "symbolizer/dw_symbolizer.h"
#include "test/symbolizer/fixture.h"

namespace gotrace {
namespace {

const std::string kFixtureSource = std::string(GT_SYMFIX_SOURCE_DIR) + "/fixture_a.cc";

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// A loaded object as the tracer would report it.
struct Object {
  std::string path;
  uint64_t bias = 0;
  uint64_t lo = 0, hi = 0;            // all PT_LOAD segments
  uint64_t text_lo = 0, text_hi = 0;  // the executable segment(s)
};

void FillSegments(const dl_phdr_info* info, Object* o) {
  o->bias = info->dlpi_addr;
  o->lo = o->text_lo = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t lo = info->dlpi_addr + ph.p_vaddr;
    const uint64_t hi = lo + ph.p_memsz;
    o->lo = std::min(o->lo, lo);
    o->hi = std::max(o->hi, hi);
    if (ph.p_flags & PF_X) {
      o->text_lo = std::min(o->text_lo, lo);
      o->text_hi = std::max(o->text_hi, hi);
    }
  }
}

// Every loaded object with a file name (not the executable, not the vDSO).
std::vector<Object> LoadedObjects() {
  std::vector<Object> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        if (info->dlpi_name == nullptr || info->dlpi_name[0] != '/') return 0;
        Object o;
        o.path = info->dlpi_name;
        FillSegments(info, &o);
        if (o.text_lo < o.text_hi) static_cast<std::vector<Object>*>(arg)->push_back(o);
        return 0;
      },
      &out);
  return out;
}

// A fixture library, dlopen'ed (and left loaded: the tests share it).
struct Fixture {
  Object obj;
  void* handle = nullptr;

  template <typename T>
  T Sym(const char* name) const {
    void* p = dlsym(handle, name);
    INFO(name << ": " << (p == nullptr ? dlerror() : "found"));
    REQUIRE(p != nullptr);
    return reinterpret_cast<T>(p);
  }
};

// libdwfl would ask a debuginfod server about files without debug info.
std::unique_ptr<Symbolizer> NewSymbolizer() {
  unsetenv("DEBUGINFOD_URLS");
  return MakeDwSymbolizer();
}

Fixture Load(const char* path) {
  Fixture f;
  f.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  INFO(path << ": " << (f.handle == nullptr ? dlerror() : "loaded"));
  REQUIRE(f.handle != nullptr);
  link_map* lm = nullptr;
  REQUIRE(dlinfo(f.handle, RTLD_DI_LINKMAP, &lm) == 0);
  bool found = false;
  for (const Object& o : LoadedObjects()) {
    if (o.bias == lm->l_addr && o.path == lm->l_name) {
      f.obj = o;
      found = true;
    }
  }
  REQUIRE(found);
  f.obj.path = path;
  REQUIRE(f.obj.lo < f.obj.hi);
  return f;
}

log::ModuleLoadFields LoadOf(const Object& o, uint32_t epoch) {
  return log::ModuleLoadFields{epoch, o.bias, o.lo, o.hi, o.path};
}

// Runs fixture_a's inlined path; returns what it captured.
GtFixResult RunInlined(const Fixture& f) {
  f.Sym<GtFixRunFn>("gt_fix_run")(5);
  return *f.Sym<const GtFixResult*>("gt_fix_result");
}

GtFixResult RunNamed(const Fixture& f, const char* fn) {
  f.Sym<GtFixRunFn>(fn)(5);
  return *f.Sym<const GtFixResult*>("gt_fix_result");
}

std::vector<SymFrame> Symbolize(Symbolizer* s, uint64_t addr, uint32_t epoch) {
  std::vector<SymFrame> out;
  s->Symbolize(addr, epoch, &out);
  return out;
}

std::string Describe(const std::vector<SymFrame>& frames) {
  std::string s;
  for (const SymFrame& f : frames) {
    s += f.func + " at " + f.file + ":" + std::to_string(f.line) + "\n";
  }
  return s;
}

// The full-debug-info expectation for fixture_a's captured pc.
void CheckInlinedFrames(const std::vector<SymFrame>& frames, const GtFixResult& r) {
  INFO(Describe(frames));
  REQUIRE(frames.size() == 3);
  // No linkage name (internal linkage): the scopes qualify the DWARF name.
  CHECK_THAT(frames[0].func, Catch::StartsWith("gt_fixture::(anonymous namespace)::Inner"));
  CHECK_THAT(frames[1].func, Catch::StartsWith("gt_fixture::(anonymous namespace)::Middle"));
  CHECK(frames[2].func == "gt_fixture::Outer(int)");
  for (int i = 0; i < 3; ++i) {
    CHECK(Basename(frames[i].file) == "fixture_a.cc");
    CHECK(frames[i].file == kFixtureSource);
    CHECK(frames[i].line == static_cast<uint32_t>(r.lines[i]));
  }
}

TEST_CASE("symbolizer: inlined frames, innermost first, with call-site lines", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  const GtFixResult r = RunInlined(a);
  REQUIRE(r.lines[0] < r.lines[1]);  // Inner, Middle, Outer: in this order in the file
  REQUIRE(r.lines[1] < r.lines[2]);
  auto s = NewSymbolizer();
  s->ModuleLoaded(LoadOf(a.obj, 0));
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
  // From the cache, the same again; at a later epoch too.
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 7), r);
}

TEST_CASE("symbolizer: a function without inlining", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  auto s = NewSymbolizer();
  s->ModuleLoaded(LoadOf(a.obj, 0));

  const GtFixResult r = RunNamed(a, "gt_fix_plain");
  auto frames = Symbolize(s.get(), r.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "gt_fix_plain");
  CHECK(frames[0].file == kFixtureSource);
  CHECK(frames[0].line == static_cast<uint32_t>(r.lines[0]));

  // The entry point: the function's own line, a little above the call.
  const uint64_t entry = reinterpret_cast<uintptr_t>(a.Sym<void*>("gt_fix_plain"));
  frames = Symbolize(s.get(), entry, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "gt_fix_plain");
  CHECK(frames[0].file == kFixtureSource);
  CHECK(frames[0].line > 0);
  CHECK(frames[0].line < static_cast<uint32_t>(r.lines[0]));
  CHECK(frames[0].line + 3 >= static_cast<uint32_t>(r.lines[0]));

  // A C++ function of hidden visibility (only in .symtab and DWARF).
  const GtFixResult h = RunNamed(a, "gt_fix_hidden");
  frames = Symbolize(s.get(), h.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "gt_fixture::Hidden(int)");
  CHECK(frames[0].line == static_cast<uint32_t>(h.lines[0]));
}

TEST_CASE("symbolizer: debug info found through .gnu_debuglink", "[symbolizer]") {
  const Fixture d = Load(GT_SYMFIX_DEBUGLINK);
  const GtFixResult r = RunInlined(d);
  auto s = NewSymbolizer();
  s->ModuleLoaded(LoadOf(d.obj, 0));
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
}

// Whether libdebuginfod is loaded in this process.
bool DebuginfodLoaded() {
  bool loaded = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* p) {
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libdebuginfod") != nullptr)
          *static_cast<bool*>(p) = true;
        return 0;
      },
      &loaded);
  return loaded;
}

TEST_CASE("symbolizer: offline mode finds debug files locally and never loads debuginfod",
          "[symbolizer]") {
  // An unreachable server: any attempt to use it would show up as a load of
  // libdebuginfod (and a delay). Unless an earlier test of this process
  // loaded it (the whole binary run at once, not by ctest's one case a run).
  const bool loaded_before = DebuginfodLoaded();
  setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
  const Fixture d = Load(GT_SYMFIX_DEBUGLINK);
  const GtFixResult r = RunInlined(d);
  auto s = MakeDwSymbolizer(/*offline=*/true);
  s->ModuleLoaded(LoadOf(d.obj, 0));
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
  // A library without any debug info: the offline search fails locally.
  const Fixture nd = Load(GT_SYMFIX_NODEBUG);
  s->ModuleLoaded(LoadOf(nd.obj, 0));
  const GtFixResult n = RunNamed(nd, "gt_fix_plain");
  auto frames = Symbolize(s.get(), n.pc - 1, 0);
  REQUIRE(!frames.empty());
  CHECK(frames[0].func == "gt_fix_plain");
  if (!loaded_before) CHECK_FALSE(DebuginfodLoaded());
  unsetenv("DEBUGINFOD_URLS");
}

TEST_CASE("symbolizer: without debug info, .symtab names the functions", "[symbolizer]") {
  const Fixture nd = Load(GT_SYMFIX_NODEBUG);
  auto s = NewSymbolizer();
  s->ModuleLoaded(LoadOf(nd.obj, 0));

  const GtFixResult r = RunInlined(nd);
  auto frames = Symbolize(s.get(), r.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);  // no inlined frames without DWARF
  CHECK(frames[0].func == "gt_fixture::Outer(int)");
  CHECK(frames[0].file.empty());
  CHECK(frames[0].line == 0);

  const GtFixResult h = RunNamed(nd, "gt_fix_hidden");
  frames = Symbolize(s.get(), h.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "gt_fixture::Hidden(int)");  // not in .dynsym
  CHECK(frames[0].file.empty());
  CHECK(frames[0].line == 0);
}

TEST_CASE("symbolizer: a stripped library falls back to .dynsym, then module+offset",
          "[symbolizer]") {
  const Fixture st = Load(GT_SYMFIX_STRIPPED);
  auto s = NewSymbolizer();
  s->ModuleLoaded(LoadOf(st.obj, 0));

  const GtFixResult r = RunInlined(st);
  auto frames = Symbolize(s.get(), r.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "gt_fixture::Outer(int)");
  CHECK(frames[0].file.empty());
  CHECK(frames[0].line == 0);

  const GtFixResult h = RunNamed(st, "gt_fix_hidden");
  frames = Symbolize(s.get(), h.pc - 1, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].func == "libgt_symfix_stripped.so+" + Hex(h.pc - 1 - st.obj.bias));
  CHECK_FALSE(frames[0].named);  // a stand-in: the encoder may name a start routine otherwise
  CHECK(frames[0].file.empty());
  CHECK(frames[0].line == 0);
}

TEST_CASE("symbolizer: the module map follows epochs", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  const Fixture b = Load(GT_SYMFIX_B);
  const GtFixResult ra = RunInlined(a);
  b.Sym<GtFixRunFn>("gt_fixb_run")(3);
  const GtFixResult rb = *b.Sym<const GtFixResult*>("gt_fixb_result");
  const uint64_t pc = ra.pc - 1;
  // fixture_b as if dlopen'ed where fixture_a was, its gt_fixb_func at pc.
  Object b_at_a = b.obj;
  b_at_a.bias = pc - (rb.pc - 1 - b.obj.bias);
  b_at_a.lo = b.obj.lo - b.obj.bias + b_at_a.bias;
  b_at_a.hi = b.obj.hi - b.obj.bias + b_at_a.bias;
  REQUIRE(b_at_a.lo <= pc);
  REQUIRE(pc < b_at_a.hi);

  auto check_b = [&](const std::vector<SymFrame>& frames) {
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gt_fixb_func");
    CHECK(Basename(frames[0].file) == "fixture_b.cc");
    CHECK(frames[0].line == static_cast<uint32_t>(rb.lines[0]));
  };

  SECTION("dlclose, then another library at the same addresses") {
    auto s = NewSymbolizer();
    s->ModuleLoaded(LoadOf(a.obj, 1));
    s->ModuleUnloaded(log::ModuleUnloadFields{2, a.obj.lo, a.obj.hi});
    s->ModuleLoaded(LoadOf(b_at_a, 2));
    s->ModuleUnloaded(log::ModuleUnloadFields{3, b_at_a.lo, b_at_a.hi});

    CHECK(Symbolize(s.get(), pc, 0).empty());  // before the first load
    check_b(Symbolize(s.get(), pc, 2));
    CheckInlinedFrames(Symbolize(s.get(), pc, 1), ra);
    check_b(Symbolize(s.get(), pc, 2));
    CHECK(Symbolize(s.get(), pc, 3).empty());  // after the last unload
    CHECK(Symbolize(s.get(), pc, 100).empty());
  }

  SECTION("the latest load wins") {
    auto s = NewSymbolizer();
    s->ModuleLoaded(LoadOf(a.obj, 1));
    s->ModuleLoaded(LoadOf(b_at_a, 2));
    CheckInlinedFrames(Symbolize(s.get(), pc, 1), ra);
    check_b(Symbolize(s.get(), pc, 2));
    check_b(Symbolize(s.get(), pc, 9));
  }

  SECTION("the load of the later epoch wins, whatever the record order") {
    auto s = NewSymbolizer();
    s->ModuleLoaded(LoadOf(b_at_a, 5));
    s->ModuleLoaded(LoadOf(a.obj, 3));
    CheckInlinedFrames(Symbolize(s.get(), pc, 4), ra);
    check_b(Symbolize(s.get(), pc, 5));
    auto t = NewSymbolizer();
    t->ModuleLoaded(LoadOf(a.obj, 5));
    t->ModuleLoaded(LoadOf(b_at_a, 3));
    check_b(Symbolize(t.get(), pc, 4));
    CheckInlinedFrames(Symbolize(t.get(), pc, 5), ra);
  }

  SECTION("in one epoch, the later record wins") {
    auto s = NewSymbolizer();
    s->ModuleLoaded(LoadOf(b_at_a, 4));
    s->ModuleLoaded(LoadOf(a.obj, 4));
    CheckInlinedFrames(Symbolize(s.get(), pc, 4), ra);
    CHECK(Symbolize(s.get(), pc, 3).empty());
  }

  SECTION("an unload leaves other objects mapped") {
    auto s = NewSymbolizer();
    s->ModuleLoaded(LoadOf(a.obj, 0));
    s->ModuleLoaded(LoadOf(b.obj, 0));
    s->ModuleUnloaded(log::ModuleUnloadFields{1, b.obj.lo, b.obj.hi});
    CheckInlinedFrames(Symbolize(s.get(), pc, 1), ra);
    CHECK(Symbolize(s.get(), rb.pc - 1, 1).empty());
    check_b(Symbolize(s.get(), rb.pc - 1, 0));
  }
}

TEST_CASE("symbolizer: unknown addresses append nothing", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  auto s = NewSymbolizer();
  std::vector<SymFrame> out;
  s->Symbolize(a.obj.text_lo, 0, &out);  // no module yet
  CHECK(out.empty());
  s->ModuleLoaded(LoadOf(a.obj, 0));
  s->Symbolize(0, 0, &out);
  s->Symbolize(16, 0, &out);
  s->Symbolize(a.obj.lo - 1, 0, &out);
  s->Symbolize(a.obj.hi, 0, &out);
  s->Symbolize(UINT64_MAX, 0, &out);
  CHECK(out.empty());
  // Appends: what was there stays.
  out.push_back(SymFrame{"caller", "", 0});
  s->Symbolize(RunInlined(a).pc - 1, 0, &out);
  REQUIRE(out.size() == 4);
  CHECK(out[0].func == "caller");
}

TEST_CASE("symbolizer: missing, corrupt and non-regular files give module+offset", "[symbolizer]") {
  char dir[] = "/tmp/gotrace-symbolizer-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string garbage = std::string(dir) + "/libgarbage.so";
  const std::string truncated = std::string(dir) + "/libtruncated.so";
  {
    // An ELF magic followed by noise; and the first 300 bytes of a real ELF
    // file (a valid header whose tables lie past the end).
    std::string noise = "\x7f";
    noise += "ELF\x02\x01\x01";
    for (int i = 0; i < 4000; ++i) noise += static_cast<char>((i * 131 + 7) & 0xff);
    FILE* f = std::fopen(garbage.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(noise.data(), 1, noise.size(), f);
    std::fclose(f);
    FILE* in = std::fopen(GT_SYMFIX_A, "rb");
    REQUIRE(in != nullptr);
    char head[300];
    const size_t n = std::fread(head, 1, sizeof head, in);
    std::fclose(in);
    f = std::fopen(truncated.c_str(), "wb");
    REQUIRE(f != nullptr);
    std::fwrite(head, 1, n, f);
    std::fclose(f);
  }

  const uint64_t bias = 0x7f1200000000;
  auto s = NewSymbolizer();
  s->ModuleLoaded({0, bias, bias + 0x1000, bias + 0x9000, "/nonexistent/dir/libnope.so"});
  s->ModuleLoaded({1, bias, bias + 0x1000, bias + 0x9000, garbage});
  s->ModuleLoaded({2, bias, bias + 0x1000, bias + 0x9000, truncated});
  s->ModuleLoaded({3, bias, bias + 0x1000, bias + 0x9000, dir});  // a directory
  s->ModuleLoaded({4, bias, bias + 0x1000, bias + 0x9000, ""});
  const std::string names[] = {"libnope.so", "libgarbage.so", "libtruncated.so", Basename(dir),
                               "?"};
  for (uint32_t epoch = 0; epoch < 5; ++epoch) {
    const auto frames = Symbolize(s.get(), bias + 0x1234, epoch);
    INFO("epoch " << epoch << ": " << Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == names[epoch] + "+0x1234");
    CHECK(frames[0].file.empty());
    CHECK(frames[0].line == 0);
  }
  unlink(garbage.c_str());
  unlink(truncated.c_str());
  rmdir(dir);
}

TEST_CASE("symbolizer: the default factory makes a libdw symbolizer", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  const GtFixResult r = RunInlined(a);
  SymbolizerFactory factory = DefaultSymbolizerFactory();
  REQUIRE(factory);
  unsetenv("DEBUGINFOD_URLS");
  auto s = factory(log::LogFile{});
  REQUIRE(s != nullptr);
  s->ModuleLoaded(LoadOf(a.obj, 0));
  CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
}

TEST_CASE("symbolizer: many PCs across many modules", "[symbolizer]") {
  const Fixture a = Load(GT_SYMFIX_A);
  auto s = NewSymbolizer();
  // fixture_a at 20 load addresses (20 Dwfls), then every other loaded
  // library of this process as it is mapped.
  std::vector<Object> objects;
  for (uint64_t k = 1; k <= 20; ++k) {
    Object o = a.obj;
    const uint64_t shift = k << 40;
    o.bias += shift;
    o.lo += shift;
    o.hi += shift;
    o.text_lo += shift;
    o.text_hi += shift;
    objects.push_back(o);
  }
  for (const Object& o : LoadedObjects()) {
    if (o.path.find("gt_symfix") == std::string::npos) objects.push_back(o);
  }
  for (const Object& o : objects) s->ModuleLoaded(LoadOf(o, 0));

  std::vector<uint64_t> pcs;
  for (const Object& o : objects) {
    const uint64_t n = 500, size = o.text_hi - o.text_lo;
    for (uint64_t i = 0; i < n; ++i) pcs.push_back(o.text_lo + (i * size / n));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<SymFrame>> first(pcs.size()), again(pcs.size());
  for (size_t i = 0; i < pcs.size(); ++i) s->Symbolize(pcs[i], 0, &first[i]);
  const auto mid = std::chrono::steady_clock::now();
  for (size_t i = 0; i < pcs.size(); ++i) s->Symbolize(pcs[i], 0, &again[i]);
  const auto end = std::chrono::steady_clock::now();
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  size_t with_line = 0;
  for (size_t i = 0; i < pcs.size(); ++i) {
    INFO(Hex(pcs[i]));
    REQUIRE(!first[i].empty());  // every PC is in a module
    REQUIRE(again[i].size() == first[i].size());
    CHECK(again[i].back().func == first[i].back().func);
    if (first[i][0].line != 0) ++with_line;
  }
  WARN(pcs.size() << " PCs in " << objects.size() << " modules: " << ms(mid - start)
                  << " ms; again, from the cache: " << ms(end - mid) << " ms; " << with_line
                  << " with a line");
  // Most of fixture_a's code (not the padding, not the crt functions) has lines.
  CHECK(with_line >= 20 * 500 / 2);
}

// --- DwOptions::system_dwarf: system libraries by symbol table only ------

DwOptions Fast(bool offline = true) {
  DwOptions o;
  o.offline = offline;
  o.system_dwarf = false;
  return o;
}

DwOptions Full(bool offline = true) {
  DwOptions o;
  o.offline = offline;
  o.system_dwarf = true;
  return o;
}

// This process's libc as the tracer would report it, and where libc6-dbg
// would have put its separate debug file (by build-id); "" if it has none.
struct Libc {
  Object obj;
  std::string debug_file;
};

std::string BuildIdDebugFile(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof *nh;
      const auto* desc = reinterpret_cast<const unsigned char*>(name + ((nh->n_namesz + 3) & ~3u));
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          nh->n_descsz > 1) {
        std::string path = "/usr/lib/debug/.build-id/";
        char hex[3];
        for (uint32_t k = 0; k < nh->n_descsz; ++k) {
          std::snprintf(hex, sizeof hex, "%02x", desc[k]);
          path += hex;
          if (k == 0) path += '/';
        }
        return path + ".debug";
      }
      p = reinterpret_cast<const char*>(desc) + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return std::string();
}

Libc FindLibc() {
  Libc libc;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) {
        if (info->dlpi_name == nullptr || info->dlpi_name[0] != '/') return 0;
        if (Basename(info->dlpi_name).rfind("libc.so", 0) != 0) return 0;
        auto* out = static_cast<Libc*>(arg);
        out->obj.path = info->dlpi_name;
        FillSegments(info, &out->obj);
        const std::string debug = BuildIdDebugFile(info);
        struct stat st;
        if (!debug.empty() && stat(debug.c_str(), &st) == 0) out->debug_file = debug;
        return 1;
      },
      &libc);
  REQUIRE(!libc.obj.path.empty());
  return libc;
}

// A fresh directory under /tmp (not a system directory), removed with what
// was put in it.
struct TempDir {
  std::string path;
  std::vector<std::string> files;
  TempDir() {
    char dir[] = "/tmp/gotrace-symbolizer-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    path = dir;
  }
  ~TempDir() {
    for (const std::string& f : files) unlink(f.c_str());
    rmdir(path.c_str());
  }
  std::string Copy(const std::string& from, const std::string& name) {
    const std::string to = path + "/" + name;
    std::ifstream in(from, std::ios::binary);
    std::ofstream out(to, std::ios::binary);
    out << in.rdbuf();
    out.close();
    REQUIRE(out.good());
    files.push_back(to);
    return to;
  }
  std::string Symlink(const std::string& target, const std::string& name) {
    const std::string link = path + "/" + name;
    REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
    files.push_back(link);
    return link;
  }
};

TEST_CASE("symbolizer: which paths are system library directories", "[symbolizer]") {
  for (const char* p : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
                        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libfoo.so",
                        "/usr/libexec/foo/helper", "/usr/lib/jvm/java/lib/server/libjvm.so",
                        "/usr/bin/python3.11", "/bin/bash", "/usr/sbin/nginx", "/sbin/init"}) {
    INFO(p);
    CHECK(IsSystemLibraryPath(p));
  }
  for (const char* p : {"/usr/local/lib/libfoo.so", "/opt/app/lib/libfoo.so",
                        "/home/u/usr/lib/x.so", "/usr/libfoo/x.so", "/library/x.so", "/lib64x/x.so",
                        "/usr/local/bin/app", "/opt/bin/app", "/usr/binx/app", "lib/x.so",
                        "usr/lib/x.so", "usr/bin/x", "/tmp/lib/x.so", ""}) {
    INFO(p);
    CHECK_FALSE(IsSystemLibraryPath(p));
  }
}

TEST_CASE("symbolizer: the DWARF policy per module", "[symbolizer]") {
  const Libc libc = FindLibc();
  INFO("libc: " << libc.obj.path);
  TempDir tmp;
  const std::string copy = tmp.Copy(GT_SYMFIX_A, "libgt_symfix_copy.so");
  const std::string libc_link = tmp.Symlink(libc.obj.path, "libc-link.so.6");

  // Full symbolization reads every module's DWARF.
  for (const std::string& p : {libc.obj.path, libc_link, copy, std::string(GT_SYMFIX_A),
                               std::string(GT_SYMFIX_DEBUGLINK), std::string(GT_SYMFIX_NODEBUG)}) {
    INFO(p);
    CHECK(UsesDwarf(p, Full()));
    CHECK(UsesDwarf(p, Full(/*offline=*/false)));
    CHECK(UsesDwarf(p, DwOptions{}));
  }
  // Fast: outside the system directories, DWARF as before, also when it is
  // found through .gnu_debuglink.
  for (const std::string& p : {copy, std::string(GT_SYMFIX_A), std::string(GT_SYMFIX_DEBUGLINK),
                               std::string(GT_SYMFIX_NODEBUG)}) {
    INFO(p);
    CHECK(UsesDwarf(p, Fast()));
  }
  // A system library that keeps its DWARF in a separate file: none, also
  // when reached through a symbolic link from elsewhere (the policy looks at
  // the real path).
  CHECK(IsSystemLibraryPath(realpath(libc.obj.path.c_str(), nullptr)));
  if (UsesDwarf(libc.obj.path, Fast())) {
    WARN(libc.obj.path << " has DWARF of its own (not a distribution's libc?)");
  } else {
    CHECK_FALSE(UsesDwarf(libc.obj.path, Fast(/*offline=*/false)));
    CHECK_FALSE(UsesDwarf(libc_link, Fast()));
  }
  // A system library with DWARF inside (Debian's libsframe keeps it).
  const std::string sframe = "/usr/lib/x86_64-linux-gnu/libsframe.so.0";
  struct stat st;
  if (stat(sframe.c_str(), &st) != 0) {
    WARN(sframe << " is not installed: no system library with DWARF of its own to check");
  } else {
    CHECK(UsesDwarf(sframe, Fast()));
  }
}

// A code address in libc: the entry of a plain C function (not an IFUNC),
// and an address a few bytes into it.
uint64_t LibcFunction(const Libc& libc) {
  void* h = dlopen(Basename(libc.obj.path).c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  void* fn = dlsym(h, "qsort");
  dlclose(h);
  REQUIRE(fn != nullptr);
  const uint64_t addr = reinterpret_cast<uintptr_t>(fn);
  REQUIRE(libc.obj.text_lo <= addr);
  REQUIRE(addr < libc.obj.text_hi);
  return addr;
}

// The address of `name` in the ELF file at `path` (its symbol value), 0 if
// the file has no such function in .symtab or .dynsym.
uint64_t SymbolValue(const std::string& path, const char* name) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t value = 0;
  if (Elf* elf = elf_begin(fd, ELF_C_READ, nullptr); elf != nullptr) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr && value == 0;
         scn = elf_nextscn(elf, scn)) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      for (size_t i = 0; data != nullptr && sh.sh_entsize != 0 && i < sh.sh_size / sh.sh_entsize; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
        const char* n = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (n != nullptr && std::strcmp(n, name) == 0 && sym.st_value != 0) {
          value = sym.st_value;
          break;
        }
      }
    }
    elf_end(elf);
  }
  close(fd);
  return value;
}

// A CPU sample taken inside an interposer has the tracer's own frames. They
// are named from its symbol table in every mode: no file, no line, and its
// megabyte of DWARF is never read (it cost the launcher's end of a build
// 6 ms for three addresses).
TEST_CASE("symbolizer: the tracer's own library is named from its symbol table", "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const std::string self = std::string(GOTRACE_BUILD_DIR) + "/libgotrace.so";
  CHECK_FALSE(UsesDwarf(self, Full()));
  CHECK_FALSE(UsesDwarf(self, Fast()));
  const uint64_t fn = SymbolValue(self, "gotrace_annotate_log_v1");
  REQUIRE(fn != 0);
  struct stat st;
  REQUIRE(stat(self.c_str(), &st) == 0);
  const uint64_t bias = 0x7f0000000000;
  for (const DwOptions& o : {Full(), Fast()}) {
    auto s = MakeDwSymbolizer(o);
    s->ModuleLoaded(log::ModuleLoadFields{0, bias, bias, bias + static_cast<uint64_t>(st.st_size), self});
    const auto frames = Symbolize(s.get(), bias + fn + 1, 0);
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gotrace_annotate_log_v1");
    CHECK(frames[0].file.empty());
    CHECK(frames[0].line == 0);
  }
}

TEST_CASE("symbolizer: fast mode names system library frames from the symbol table only",
          "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const Libc libc = FindLibc();
  const uint64_t fn = LibcFunction(libc);
  for (const uint64_t addr : {fn, fn + 4}) {
    auto s = MakeDwSymbolizer(Fast());
    s->ModuleLoaded(LoadOf(libc.obj, 0));
    const auto frames = Symbolize(s.get(), addr, 0);
    INFO(libc.obj.path << " at " << Hex(addr) << ":\n" << Describe(frames));
    if (UsesDwarf(libc.obj.path, Fast())) {
      WARN(libc.obj.path << " has DWARF of its own: nothing to check");
      return;
    }
    REQUIRE(frames.size() == 1);  // no inlined frames
    CHECK(frames[0].func.find("qsort") != std::string::npos);
    CHECK(frames[0].file.empty());
    CHECK(frames[0].line == 0);
  }
  // The same through the factory.
  auto s = DefaultSymbolizerFactory(Fast())(log::LogFile{});
  s->ModuleLoaded(LoadOf(libc.obj, 0));
  const auto frames = Symbolize(s.get(), fn, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].line == 0);
}

TEST_CASE("symbolizer: of several names of one function, the public one, without a version",
          "[symbolizer]") {
  // libc6-dbg's full symbol table: clone3, __clone3 and __GI___clone3 at one
  // address (__GI___clone3 was shown), pthread_mutex_lock@@GLIBC_2.2.5 (shown
  // with its version). Both ways of looking names up (one pass over the
  // table for a few addresses, the sorted index for many).
  const Fixture nd = Load(GT_SYMFIX_NODEBUG);
  const auto aliased = reinterpret_cast<uint64_t>(*nd.Sym<void* const*>("gt_fix_aliased_addr"));
  const auto versioned = reinterpret_cast<uint64_t>(*nd.Sym<void* const*>("gt_fix_versioned_addr"));
  for (const int linear : {1 << 30, 0}) {
    INFO("linear lookups " << linear);
    DwOptions o = Fast();
    o.linear_symbol_lookups = linear;
    auto s = MakeDwSymbolizer(o);
    s->ModuleLoaded(LoadOf(nd.obj, 0));
    auto frames = Symbolize(s.get(), aliased + 1, 0);
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gt_fix_aliased");
    frames = Symbolize(s.get(), versioned, 0);
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gt_fix_versioned");
  }
}

// The few-lookups path (one pass over the symbol table per address) and the
// sorted index must name every address alike: every 97th byte of libc's
// code (symbol table only: fast mode), and of the fixtures without debug
// info (.symtab) and stripped (.dynsym).
TEST_CASE("symbolizer: a pass over the symbol table and the sorted index agree",
          "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  std::vector<Object> objects = {FindLibc().obj, Load(GT_SYMFIX_NODEBUG).obj,
                                 Load(GT_SYMFIX_STRIPPED).obj};
  size_t named = 0, compared = 0;
  for (const Object& o : objects) {
    DwOptions linear = Fast(), sorted = Fast();
    linear.linear_symbol_lookups = 1 << 30;
    sorted.linear_symbol_lookups = 0;
    auto a = MakeDwSymbolizer(linear);
    auto b = MakeDwSymbolizer(sorted);
    a->ModuleLoaded(LoadOf(o, 0));
    b->ModuleLoaded(LoadOf(o, 0));
    const uint64_t step = std::max<uint64_t>(97, (o.text_hi - o.text_lo) / 3000);
    for (uint64_t addr = o.text_lo; addr < o.text_hi; addr += step) {
      const auto fa = Symbolize(a.get(), addr, 0);
      const auto fb = Symbolize(b.get(), addr, 0);
      INFO(o.path << " at " << Hex(addr));
      REQUIRE(fa.size() == fb.size());
      for (size_t i = 0; i < fa.size(); ++i) CHECK(fa[i].func == fb[i].func);
      ++compared;
      if (!fa.empty() && fa[0].func.find(".so+0x") == std::string::npos) ++named;
    }
  }
  CHECK(compared > 1000);
  CHECK(named > compared / 2);  // mostly real names, not module+offset

  // Every byte of the fixture's assembly labels (symbols without a size):
  // each extends to the next symbol the table has.
  struct Expect {
    const char* fixture;
    const char* sized_not;  // at gt_fix_asm_sized_not + 5 (after the local label)
  };
  for (const Expect& e : {Expect{GT_SYMFIX_NODEBUG, "gt_fix_asm_local_label"},
                          Expect{GT_SYMFIX_STRIPPED, "gt_fix_asm_sized_not"}}) {
    const Fixture f = Load(e.fixture);
    const auto lo = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_asm_sized_not"));
    const auto tail = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_asm_tail"));
    const auto end = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_asm_end"));
    for (const int n : {0, 1 << 30}) {
      DwOptions o = Fast();
      o.linear_symbol_lookups = n;
      auto s = MakeDwSymbolizer(o);
      s->ModuleLoaded(LoadOf(f.obj, 0));
      INFO(e.fixture << (n == 0 ? " (sorted index)" : " (one pass)"));
      CHECK(Symbolize(s.get(), lo + 1, 0).at(0).func == "gt_fix_asm_sized_not");
      CHECK(Symbolize(s.get(), lo + 5, 0).at(0).func == e.sized_not);
      CHECK(Symbolize(s.get(), tail + 1, 0).at(0).func == "gt_fix_asm_tail");
      CHECK(Symbolize(s.get(), end, 0).at(0).func == "gt_fix_asm_end");
      // Symbols inside a sized one: each names its own bytes, the outer
      // one the bytes between and after them.
      const auto outer = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_outer"));
      const auto a = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_inner_a"));
      const auto b = reinterpret_cast<uint64_t>(f.Sym<void*>("gt_fix_inner_b"));
      CHECK(Symbolize(s.get(), outer, 0).at(0).func == "gt_fix_outer");
      CHECK(Symbolize(s.get(), a + 1, 0).at(0).func == "gt_fix_inner_a");
      CHECK(Symbolize(s.get(), a + 2, 0).at(0).func == "gt_fix_outer");
      CHECK(Symbolize(s.get(), b, 0).at(0).func == "gt_fix_inner_b");
      CHECK(Symbolize(s.get(), b + 2, 0).at(0).func == "gt_fix_outer");
      CHECK(Symbolize(s.get(), b + 3, 0).at(0).func == "gt_fix_outer");
    }
  }
}

// SharedSymbols::Warm (a launcher reading its running program's files
// before any log asks, by the names /proc/PID/maps gives) changes no
// answer: a file warmed under another name of it with the same last
// component is the module the log's name opens; one warmed under a name
// with another last component is not (an address no symbol covers is
// named after the log's name).
TEST_CASE("symbolizer: files warmed ahead answer as files opened on demand", "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const Fixture a = Load(GT_SYMFIX_A);
  const GtFixResult r = RunInlined(a);
  const Fixture stripped = Load(GT_SYMFIX_STRIPPED);
  const Libc libc = FindLibc();
  TempDir tmp;
  const std::string stripped_base = Basename(stripped.obj.path);
  const std::string unnamed = stripped_base + "+0x" + [&] {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%" PRIx64, stripped.obj.text_lo - stripped.obj.bias);
    return std::string(hex);
  }();
  struct Way {
    const char* what;
    std::vector<std::string> warm;
  };
  const std::vector<Way> ways = {
      {"not warmed", {}},
      {"warmed under the log's names", {a.obj.path, stripped.obj.path, libc.obj.path}},
      {"warmed under other names, same last components",
       {tmp.Symlink(a.obj.path, Basename(a.obj.path)),
        tmp.Symlink(stripped.obj.path, stripped_base),
        tmp.Symlink(libc.obj.path, Basename(libc.obj.path))}},
      {"warmed under other last components",
       {tmp.Symlink(a.obj.path, "other-a.so"), tmp.Symlink(stripped.obj.path, "other-b.so"),
        tmp.Symlink(libc.obj.path, "other-c.so")}},
      {"warmed with files that are not there or not ELF",
       {tmp.path + "/missing.so", kFixtureSource}},
  };
  for (const Way& way : ways) {
    INFO(way.what);
    SharedSymbols shared(Fast());
    for (const std::string& path : way.warm) shared.Warm(path);
    auto s = shared.Factory()(log::LogFile{});
    auto fresh = MakeDwSymbolizer(Fast());
    for (Symbolizer* each : {s.get(), fresh.get()}) {
      each->ModuleLoaded(LoadOf(a.obj, 0));
      each->ModuleLoaded(LoadOf(stripped.obj, 0));
      each->ModuleLoaded(LoadOf(libc.obj, 0));
    }
    CheckInlinedFrames(Symbolize(s.get(), r.pc - 1, 0), r);
    CHECK(Symbolize(s.get(), stripped.obj.text_lo, 0).at(0).func == unnamed);
    size_t compared = 0;
    for (const Object* o : {&a.obj, &stripped.obj, &libc.obj}) {
      const uint64_t step = std::max<uint64_t>(61, (o->text_hi - o->text_lo) / 500);
      for (uint64_t addr = o->text_lo; addr < o->text_hi; addr += step, ++compared) {
        const auto got = Symbolize(s.get(), addr, 0);
        const auto want = Symbolize(fresh.get(), addr, 0);
        INFO(o->path << " at " << Hex(addr));
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          CHECK(got[i].func == want[i].func);
          CHECK(got[i].file == want[i].file);
          CHECK(got[i].line == want[i].line);
        }
      }
    }
    CHECK(compared > 500);
  }
}

TEST_CASE("symbolizer: full mode reads a system library's separate debug file", "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const Libc libc = FindLibc();
  if (libc.debug_file.empty()) {
    WARN("no separate debug file for " << libc.obj.path << " (libc6-dbg is not installed)");
    return;
  }
  const uint64_t fn = LibcFunction(libc);
  for (bool offline : {true, false}) {
    std::vector<std::unique_ptr<Symbolizer>> all;
    all.push_back(MakeDwSymbolizer(Full(offline)));
    all.push_back(MakeDwSymbolizer(offline));  // the old signatures: full
    all.push_back(DefaultSymbolizerFactory(Full(offline))(log::LogFile{}));
    all.push_back(DefaultSymbolizerFactory(offline)(log::LogFile{}));
    for (const auto& s : all) {
      s->ModuleLoaded(LoadOf(libc.obj, 0));
      const auto frames = Symbolize(s.get(), fn + 4, 0);
      INFO((offline ? "offline" : "online") << ", " << libc.debug_file << ":\n"
                                            << Describe(frames));
      REQUIRE(!frames.empty());
      CHECK(frames.back().func.find("qsort") != std::string::npos);
      CHECK(!frames[0].file.empty());
      CHECK(frames[0].line > 0);
    }
  }
}

TEST_CASE("symbolizer: fast mode keeps full DWARF outside the system directories", "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const Fixture a = Load(GT_SYMFIX_A);
  const Fixture d = Load(GT_SYMFIX_DEBUGLINK);
  const GtFixResult ra = RunInlined(a);
  const GtFixResult rd = RunInlined(d);
  TempDir tmp;
  // fixture_a's file copied elsewhere, described as mapped where fixture_a is.
  Object copy = a.obj;
  copy.path = tmp.Copy(GT_SYMFIX_A, "libgt_symfix_copy.so");
  for (const DwOptions& options : {Fast(), Fast(/*offline=*/false), Full()}) {
    INFO("offline " << options.offline << ", system_dwarf " << options.system_dwarf);
    {
      auto s = MakeDwSymbolizer(options);
      s->ModuleLoaded(LoadOf(a.obj, 0));
      CheckInlinedFrames(Symbolize(s.get(), ra.pc - 1, 0), ra);
    }
    {
      auto s = MakeDwSymbolizer(options);
      s->ModuleLoaded(LoadOf(copy, 0));
      CheckInlinedFrames(Symbolize(s.get(), ra.pc - 1, 0), ra);
    }
    {
      auto s = DefaultSymbolizerFactory(options)(log::LogFile{});
      s->ModuleLoaded(LoadOf(d.obj, 0));  // debug info through .gnu_debuglink
      CheckInlinedFrames(Symbolize(s.get(), rd.pc - 1, 0), rd);
    }
  }
}

TEST_CASE("symbolizer: one symbolizer, fast mode, user and system frames", "[symbolizer]") {
  unsetenv("DEBUGINFOD_URLS");
  const Fixture a = Load(GT_SYMFIX_A);
  const GtFixResult ra = RunInlined(a);
  const Libc libc = FindLibc();
  const uint64_t fn = LibcFunction(libc);
  auto s = MakeDwSymbolizer(Fast());
  s->ModuleLoaded(LoadOf(a.obj, 0));
  s->ModuleLoaded(LoadOf(libc.obj, 0));
  CheckInlinedFrames(Symbolize(s.get(), ra.pc - 1, 0), ra);
  const auto frames = Symbolize(s.get(), fn + 4, 0);
  INFO(Describe(frames));
  REQUIRE(frames.size() == 1);
  CHECK(!frames[0].func.empty());
  if (!UsesDwarf(libc.obj.path, Fast())) CHECK(frames[0].line == 0);
}

// --- Names for stripped binaries (issue 14 item 3) ----------------------------------------

// The build-id of an ELF file, as lowercase hex ("" if none).
std::string BuildIdHex(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::string hex;
  const void* bits = nullptr;
  const ssize_t n = elf != nullptr ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
  for (ssize_t i = 0; i < n; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", static_cast<const unsigned char*>(bits)[i]);
    hex += b;
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return hex;
}

// The names of an ELF file's sections.
std::vector<std::string> SectionNames(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  REQUIRE(elf != nullptr);
  std::vector<std::string> names;
  size_t shstrndx = 0;
  REQUIRE(elf_getshdrstrndx(elf, &shstrndx) == 0);
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    if (const char* n = elf_strptr(elf, shstrndx, sh.sh_name)) names.push_back(n);
  }
  elf_end(elf);
  close(fd);
  return names;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_CASE("symbolizer: debug files by build-id under the debug root (Debian's -dbgsym layout)",
          "[symbolizer][stripped]") {
  // The fully stripped fixture (no .symtab, no .gnu_debuglink) and its debug
  // file, placed where a -dbgsym package would put it, under a root of our
  // own ($GOTRACE_DEBUG_ROOT; tests do not write to /usr/lib/debug).
  const std::vector<std::string> sections = SectionNames(GT_SYMFIX_STRIPPED);
  REQUIRE_FALSE(Has(sections, ".symtab"));
  REQUIRE_FALSE(Has(sections, ".gnu_debuglink"));
  const std::string id = BuildIdHex(GT_SYMFIX_STRIPPED);
  REQUIRE(id.size() > 2);
  REQUIRE(BuildIdHex(GT_SYMFIX_DEBUGFILE) == id);
  char tmpl[] = "/tmp/gotrace-debugroot-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::filesystem::path root = tmpl;
  const std::filesystem::path dir = root / ".build-id" / id.substr(0, 2);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(GT_SYMFIX_DEBUGFILE, dir / (id.substr(2) + ".debug"));

  const Fixture st = Load(GT_SYMFIX_STRIPPED);
  const GtFixResult h = RunNamed(st, "gt_fix_hidden");
  // Without the root: the hidden function has no name anywhere.
  {
    auto s = MakeDwSymbolizer(/*offline=*/true);
    s->ModuleLoaded(LoadOf(st.obj, 0));
    auto frames = Symbolize(s.get(), h.pc - 1, 0);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "libgt_symfix_stripped.so+" + Hex(h.pc - 1 - st.obj.bias));
    CHECK_FALSE(frames[0].named);
  }
  setenv("GOTRACE_DEBUG_ROOT", root.c_str(), 1);
  unsetenv("DEBUGINFOD_URLS");
  for (const bool offline : {true, false}) {
    INFO((offline ? "offline (the exit-time encode)" : "online (gotrace encode)"));
    auto s = MakeDwSymbolizer(offline);
    s->ModuleLoaded(LoadOf(st.obj, 0));
    CheckInlinedFrames(Symbolize(s.get(), RunInlined(st).pc - 1, 0), RunInlined(st));
    auto frames = Symbolize(s.get(), h.pc - 1, 0);
    INFO(Describe(frames));
    REQUIRE(!frames.empty());
    CHECK(frames.back().func == "gt_fixture::Hidden(int)");
    CHECK(frames.back().named);
    CHECK(frames.back().line > 0);
  }
  unsetenv("GOTRACE_DEBUG_ROOT");
  std::filesystem::remove_all(root);
}

TEST_CASE("symbolizer: MiniDebugInfo (.gnu_debugdata) names what .dynsym lacks",
          "[symbolizer][stripped]") {
  const std::vector<std::string> sections = SectionNames(GT_SYMFIX_MINIDEBUG);
  REQUIRE(Has(sections, ".gnu_debugdata"));
  REQUIRE_FALSE(Has(sections, ".symtab"));
  REQUIRE_FALSE(Has(sections, ".debug_info"));
  const Fixture md = Load(GT_SYMFIX_MINIDEBUG);
  unsetenv("DEBUGINFOD_URLS");
  for (const bool offline : {true, false}) {
    INFO((offline ? "offline" : "online"));
    auto s = MakeDwSymbolizer(offline);
    s->ModuleLoaded(LoadOf(md.obj, 0));
    const GtFixResult r = RunInlined(md);
    auto frames = Symbolize(s.get(), r.pc - 1, 0);
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gt_fixture::Outer(int)");
    // Hidden: in no .dynsym, only in the compressed table.
    const GtFixResult h = RunNamed(md, "gt_fix_hidden");
    frames = Symbolize(s.get(), h.pc - 1, 0);
    INFO(Describe(frames));
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].func == "gt_fixture::Hidden(int)");
    CHECK(frames[0].named);
  }
}

}  // namespace
}  // namespace gotrace
