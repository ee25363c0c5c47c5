// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/stacks_test.cc - stacks users can trust (issue 7) --===//
//
// Each case runs a program built for it (test/scenarios/stacks.cmake) plain
// and traced, validates the trace with Go's parser and web UI (RunTraced),
// then reads the synchronization profile (-pprof=sync, `go tool pprof -raw`)
// and checks the frames of the waits it knows: inlined functions, plugins
// unloaded and replaced at the same addresses, code without frame pointers
// (GOTRACE_UNWIND=libunwind), separate and missing debug info, C++ exceptions
// in flight. Lines are found in the sources by their "// LINE:name" markers.
//===----------------------------------------------------------------------===//
#include <fstream>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

const std::string kSrc = GOTRACE_SCENARIO_SRC;

// The line of `file` (in the scenario sources) that carries "// LINE:name".
uint32_t MarkerLine(const std::string& file, const std::string& name) {
  std::ifstream in(kSrc + "/" + file);
  const std::string marker = "// LINE:" + name;
  std::string l;
  for (uint32_t n = 1; std::getline(in, l); ++n) {
    const size_t at = l.find(marker);
    if (at != std::string::npos && at + marker.size() == l.size()) return n;
  }
  FAIL("no marker " << marker << " in " << file);
  return 0;
}

struct Frame {
  std::string func;
  std::string file;
  uint32_t line = 0;
};

struct Sample {
  uint64_t count = 0;  // contentions
  std::vector<Frame> frames;  // innermost first
};

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(' ');
  const size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// "func file:line s=N" (func may contain spaces; file has none).
bool ParseLine(const std::string& text, Frame* f) {
  std::string t = Trim(text);
  const size_t s = t.rfind(" s=");
  if (s == std::string::npos) return false;
  t = t.substr(0, s);
  const size_t sp = t.rfind(' ');
  if (sp == std::string::npos) return false;
  const std::string where = t.substr(sp + 1);
  f->func = t.substr(0, sp);
  const size_t colon = where.rfind(':');
  f->file = where.substr(0, colon);
  f->line = colon == std::string::npos ? 0 : static_cast<uint32_t>(std::stoul(where.substr(colon + 1)));
  return true;
}

// `go tool pprof -raw` of a contention profile: the samples with their frames.
std::vector<Sample> ParseRaw(const std::string& raw) {
  std::istringstream in(raw);
  std::vector<std::pair<Sample, std::vector<uint64_t>>> samples;
  std::map<uint64_t, std::vector<Frame>> locations;
  enum { kNone, kSamples, kLocations } section = kNone;
  uint64_t last_loc = 0;
  for (std::string l; std::getline(in, l);) {
    if (l == "Samples:") {
      section = kSamples;
      continue;
    }
    if (l == "Locations") {
      section = kLocations;
      continue;
    }
    if (l == "Mappings") section = kNone;
    if (section == kSamples) {
      const size_t colon = l.find(':');
      if (colon == std::string::npos) continue;  // the header line
      std::istringstream head(l.substr(0, colon)), ids(l.substr(colon + 1));
      Sample s;
      uint64_t delay = 0;
      if (!(head >> s.count >> delay)) continue;
      std::vector<uint64_t> loc;
      for (uint64_t id; ids >> id;) loc.push_back(id);
      samples.emplace_back(s, loc);
    } else if (section == kLocations) {
      // "     3: 0xaddr M=1 func file:line s=0", or a continuation line
      // (an inlined call in the same location) with the text only.
      const std::string t = Trim(l);
      const size_t colon = t.find(": 0x");
      Frame f;
      if (colon != std::string::npos && t.find_first_not_of("0123456789") == colon) {
        last_loc = std::stoull(t.substr(0, colon));
        std::string rest = t.substr(colon + 2);
        rest = rest.substr(rest.find(' ') + 1);  // the address
        if (rest.rfind("M=", 0) == 0) rest = rest.substr(rest.find(' ') + 1);
        if (ParseLine(rest, &f)) locations[last_loc].push_back(f);
      } else if (ParseLine(t, &f)) {
        locations[last_loc].push_back(f);
      }
    }
  }
  std::vector<Sample> out;
  for (auto& [s, ids] : samples) {
    for (uint64_t id : ids) {
      const auto it = locations.find(id);
      if (it != locations.end()) s.frames.insert(s.frames.end(), it->second.begin(), it->second.end());
    }
    out.push_back(s);
  }
  return out;
}

std::string Describe(const std::vector<Sample>& samples) {
  std::ostringstream o;
  for (const Sample& s : samples) {
    o << s.count << ":";
    for (const Frame& f : s.frames) o << "\n    " << f.func << " " << f.file << ":" << f.line;
    o << "\n";
  }
  return o.str();
}

// What a frame must be; file "" and line 0 match anything.
struct Want {
  std::string func;
  std::string file;
  uint32_t line = 0;
  bool Matches(const Frame& f) const {
    return f.func == func && (file.empty() || f.file == kSrc + "/" + file) &&
           (line == 0 || f.line == line);
  }
};

// The contentions of the samples whose frames contain `want` consecutively.
uint64_t CountWith(const std::vector<Sample>& samples, const std::vector<Want>& want) {
  uint64_t n = 0;
  for (const Sample& s : samples) {
    for (size_t i = 0; i + want.size() <= s.frames.size(); ++i) {
      bool all = true;
      for (size_t k = 0; k < want.size() && all; ++k) all = want[k].Matches(s.frames[i + k]);
      if (all) {
        n += s.count;
        break;
      }
    }
  }
  return n;
}

std::vector<Sample> SyncProfile(const std::string& trace) {
  PprofResult p = Pprof(trace, "sync");
  INFO(p.error);
  REQUIRE(p.ok);
  return ParseRaw(p.raw);
}

// readelf -S's section names of a file.
std::string Sections(const std::string& path) {
  ProcResult r = RunProcess({"readelf", "-S", "-W", path});
  REQUIRE(r.Exited(0));
  return r.out;
}

// --- Inlined frames -----------------------------------------------------------

TEST_CASE("stacks: a wait inside an inlined function shows it, with its line", "[stacks]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("stacks_inline")}, dir);
  CHECK(s.plain.out == "inline rounds 5 served 5\n");
  const std::vector<Sample> prof = SyncProfile(s.trace);
  INFO(Describe(prof));
  // inlined_wait has no code of its own: only the inlined-subroutine entry in
  // the debug info names it, and gives outer_caller's line of the call.
  CHECK(CountWith(prof, {{"inlined_wait", "stacks_inline.c", MarkerLine("stacks_inline.c", "inlined_wait")},
                         {"outer_caller", "stacks_inline.c", MarkerLine("stacks_inline.c", "outer_caller")},
                         {"worker", "stacks_inline.c"}}) >= 5);
}

// --- The module map over time -------------------------------------------------

void CheckPlugins(const std::vector<std::string>& env) {
  TempDir dir;
  // Inferred scheduling: one contention per wait (with the kernel's, a
  // wait that was signalled before it slept shows no block at all).
  std::vector<std::string> e = env;
  e.push_back("GOTRACE_SCHED=infer");
  ScenarioRun s = RunTraced({Scenario("stacks_dlclose")}, dir, e);
  CHECK(s.plain.out == "plugin rounds 3 waits 6\n");
  // The premise: the loader put plugins where the other one had been.
  const size_t at = s.traced.err.find("reused ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(s.traced.err.substr(at + 7)) >= 1);
  const std::vector<Sample> prof = SyncProfile(s.trace);
  INFO(Describe(prof));
  const uint32_t line_a = MarkerLine("stacks_plugin_a.c", "plugin_a_wait");
  const uint32_t line_b = MarkerLine("stacks_plugin_b.c", "plugin_b_wait");
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    const std::string worker = "round" + std::to_string(round) + "_worker";
    CHECK(CountWith(prof, {{"plugin_a_wait", "stacks_plugin_a.c", line_a}, {worker, "stacks_dlclose.c"}}) == 1);
    CHECK(CountWith(prof, {{"plugin_b_wait", "stacks_plugin_b.c", line_b}, {worker, "stacks_dlclose.c"}}) == 1);
  }
  // Never the other plugin's name or file, never an unsymbolized plugin PC.
  for (const Sample& smp : prof) {
    for (const Frame& f : smp.frames) {
      INFO(f.func << " " << f.file << ":" << f.line);
      if (f.func == "plugin_a_wait") CHECK(f.file == kSrc + "/stacks_plugin_a.c");
      if (f.func == "plugin_b_wait") CHECK(f.file == kSrc + "/stacks_plugin_b.c");
      CHECK(f.func.find("stacks_plugin_") == std::string::npos);  // module+offset
      CHECK(f.func.rfind("0x", 0) != 0);                          // no module at all
    }
  }
}

TEST_CASE("stacks: plugins dlclose'd and replaced at the same addresses keep their names",
          "[stacks]") {
  SECTION("frame pointers") { CheckPlugins({}); }
  SECTION("libunwind") { CheckPlugins({"GOTRACE_UNWIND=libunwind"}); }
}

// --- Code without frame pointers ------------------------------------------------

TEST_CASE("stacks: code without frame pointers: libunwind finds every caller, fp stops short",
          "[stacks]") {
  const uint32_t leaf = MarkerLine("stacks_nofp.c", "nofp_leaf");
  TempDir dir;
  SECTION("GOTRACE_UNWIND=libunwind: the callers appear") {
    ScenarioRun s = RunTraced({Scenario("stacks_nofp")}, dir, {"GOTRACE_UNWIND=libunwind"});
    // The same descriptor traced as plain (RunTraced compares the output):
    // libunwind's pipe did not take it.
    CHECK_THAT(s.plain.out, Catch::StartsWith("first descriptor ") &&
                                Catch::EndsWith("\nnofp rounds 4 served 4\n"));
    CHECK(s.traced.err.find("using frame pointers") == std::string::npos);  // no fallback
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    CHECK(CountWith(prof, {{"nofp_leaf", "stacks_nofp.c", leaf},
                           {"nofp_middle", "stacks_nofp.c", MarkerLine("stacks_nofp.c", "nofp_middle")},
                           {"nofp_outer", "stacks_nofp.c", MarkerLine("stacks_nofp.c", "nofp_outer")},
                           {"nofp_worker", "stacks_nofp.c"}}) >= 4);
  }
  SECTION("frame pointers (the default): a short stack, never a crash") {
    ScenarioRun s = RunTraced({Scenario("stacks_nofp")}, dir, {"GOTRACE_UNWIND=fp"});
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    // The leaf is the caller of the interposer, whose own frame pointer is
    // sound; beyond it the chain is whatever rbp held.
    CHECK(CountWith(prof, {{"nofp_leaf", "stacks_nofp.c", leaf}}) >= 4);
  }
}

TEST_CASE("stacks: after a dlclose, libunwind never walks new code with the old code's rules",
          "[stacks]") {
  // stacks_cfi_lie.so and stacks_cfi_truth.so: the same code at the same
  // address, a lying and a true unwind rule. libunwind caches rules by
  // address and never forgets them by itself.
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("stacks_cfi_reload")}, dir,
                            {"GOTRACE_UNWIND=libunwind", "GOTRACE_SCHED=infer"});
  CHECK(s.plain.out == "cfi reload ok\n");
  if (s.traced.err.find("same address: yes") == std::string::npos) {
    WARN("the plugins were not mapped at the same address (or not x86_64): nothing to check");
    return;
  }
  const std::vector<Sample> prof = SyncProfile(s.trace);
  INFO(Describe(prof));
  // The thread that walked the lie: frame pointers from then on (no garbage
  // frame: every frame is a named function).
  uint64_t old_waits = 0;
  for (const Sample& smp : prof) {
    if (CountWith({smp}, {{"cb_truth_old", "stacks_cfi_reload.c"}, {"stacks_cfi_call", ""}}) == 0) continue;
    old_waits += smp.count;
    for (const Frame& f : smp.frames) {
      INFO(f.func);
      CHECK(f.func.rfind("0x", 0) != 0);
      CHECK(f.func.find("+0x") == std::string::npos);
    }
  }
  CHECK(old_waits == 1);
  // A new thread: libunwind, the whole stack.
  CHECK(CountWith(prof, {{"cb_truth_new", "stacks_cfi_reload.c"},
                         {"stacks_cfi_call", ""},
                         {"InPlugin", "stacks_cfi_reload.c"},
                         {"new_thread", "stacks_cfi_reload.c"}}) == 1);
}

// --- C++ exceptions ----------------------------------------------------------------

TEST_CASE("stacks: C++ exceptions in worker threads behave as untraced, in both modes",
          "[stacks]") {
  for (const char* mode : {"fp", "libunwind"}) {
    INFO("GOTRACE_UNWIND=" << mode);
    TempDir dir;
    ScenarioRun s = RunTraced({Scenario("stacks_exceptions")}, dir,
                              {std::string("GOTRACE_UNWIND=") + mode});
    CHECK(s.plain.exit_code == 0);
    CHECK_THAT(s.plain.out, Catch::Contains("thread 3 caught 100 runtime_error 100 logic_error"));
    CHECK_THAT(s.plain.out, Catch::Contains("unwinder libgcc_s.so.1"));  // also traced (RunTraced)
    CHECK(s.traced.err.find("using frame pointers") == std::string::npos);
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    // A wait in a destructor that runs while an exception is in flight.
    // (pprof shortens C++ names: "(anonymous namespace)::Work(int)" is
    // "::Work".)
    const Want cleanup{"::Cleanup::~Cleanup", "stacks_exceptions.cc"};
    CHECK(CountWith(prof, {cleanup}) > 0);
    if (std::string(mode) == "libunwind") {
      // DWARF unwinding through the landing pad, up to the thread's loop.
      CHECK(CountWith(prof, {cleanup, {"::Work", "stacks_exceptions.cc"}}) > 0);
      uint64_t to_worker = 0;
      for (const Sample& smp : prof) {
        bool c = false, w = false;
        for (const Frame& f : smp.frames) {
          c = c || cleanup.Matches(f);
          w = w || f.func == "::Worker";
        }
        if (c && w) to_worker += smp.count;
      }
      CHECK(to_worker > 0);
    }
  }
}

// --- Debug info lookup ----------------------------------------------------------------

TEST_CASE("stacks: debug info found through .gnu_debuglink, PIE and non-PIE", "[stacks]") {
  for (const char* kind : {"pie", "nopie"}) {
    const std::string name = std::string("stacks_debuglink_") + kind;
    INFO(name);
    // The premise: no symbols or DWARF in the program, a debuglink to them.
    const std::string sections = Sections(Scenario(name));
    CHECK(sections.find(".debug_info") == std::string::npos);
    CHECK(sections.find(".symtab") == std::string::npos);
    CHECK(sections.find(".gnu_debuglink") != std::string::npos);
    TempDir dir;
    ScenarioRun s = RunTraced({Scenario(name)}, dir);
    CHECK(s.plain.out == "symbols rounds 3 served 3\n");
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    CHECK(CountWith(prof, {{"symbols_wait", "stacks_symbols.c", MarkerLine("stacks_symbols.c", "symbols_wait")},
                           {"symbols_caller", "stacks_symbols.c",
                            MarkerLine("stacks_symbols.c", "symbols_caller")},
                           {"symbols_worker", "stacks_symbols.c"}}) >= 3);
  }
}

TEST_CASE("stacks: a fully stripped program gives module+offset frames, PIE and non-PIE",
          "[stacks]") {
  for (const char* kind : {"pie", "nopie"}) {
    const std::string name = std::string("stacks_stripped_") + kind;
    INFO(name);
    const std::string sections = Sections(Scenario(name));
    CHECK(sections.find(".symtab") == std::string::npos);
    CHECK(sections.find(".debug_info") == std::string::npos);
    TempDir dir;
    ScenarioRun s = RunTraced({Scenario(name)}, dir);
    CHECK(s.plain.out == "symbols rounds 3 served 3\n");
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    // The executable's functions are in no symbol table: module+0xoffset;
    // libc's still have names.
    uint64_t waits = 0;
    for (const Sample& smp : prof) {
      if (smp.frames.empty() || smp.frames[0].func.rfind(name + "+0x", 0) != 0) continue;
      bool libc = false;
      for (const Frame& f : smp.frames) libc = libc || f.func == "start_thread";
      if (libc) waits += smp.count;
    }
    CHECK(waits >= 3);
  }
}

// --- The libunwind unwinder itself ----------------------------------------------------

TEST_CASE("stacks: libunwind is dlopen'ed, never linked, and keeps out of the program's scope",
          "[stacks]") {
  // H32: Debian's libunwind.so.8 defines _Unwind_*; linked into
  // libgotrace.so it would take over the program's C++ exceptions.
  ProcResult d = RunProcess({"readelf", "-d", "-W", PreloadLib()});
  REQUIRE(d.Exited(0));
  CHECK(d.out.find("libunwind") == std::string::npos);
  ProcResult nm = RunProcess({"nm", "-D", "--undefined-only", "--format=just-symbols", PreloadLib()});
  REQUIRE(nm.Exited(0));
  CHECK(nm.out.find("unw_") == std::string::npos);
  CHECK(nm.out.find("_ULx86_64") == std::string::npos);
  CHECK(nm.out.find("_ULaarch64") == std::string::npos);
  // unwind/libunwind_unwind.h's promises, in a process of its own.
  ProcResult p = RunProcess({Scenario("stacks_libunwind_probe")});
  INFO(p.Describe() << "\n" << p.out << p.err);
  CHECK(p.Exited(0));
  CHECK_THAT(p.out, Catch::EndsWith("0 failed\n"));
}

}  // namespace
}  // namespace gotrace::testing
