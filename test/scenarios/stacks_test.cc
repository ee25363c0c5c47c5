// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/stacks_test.cc - stacks users can trust (issue 7) --===//
//
// Each case runs a program built for it (test/scenarios/stacks.cmake) plain
// and traced, validates the trace with Go's parser and web UI (RunTraced),
// then reads the synchronization profile (-pprof=sync, `go tool pprof -raw`)
// and checks the frames of the waits it knows: inlined functions, plugins
// unloaded and replaced at the same addresses, code without frame pointers
// (the default GOTRACE_UNWIND=auto, and libunwind; issue 14 also checks that
// no recorded PC is outside executable code, in C, C++ and Debian's
// python3), separate and missing debug info, C++ exceptions in flight.
// Lines are found in the sources by their "// LINE:name" markers.
//===----------------------------------------------------------------------===//
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "encoder/stack_table.h"
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
  ScenarioRun s = RunTraced({Scenario("stacks_inline")}, dir, {"GOTRACE_SCHED=infer"});
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
    CHECK(CountWith(prof, {{"plugin_a_wait", "stacks_plugin_a.c", line_a}, {worker, "stacks_dlclose.c"}}) >= 1);
    CHECK(CountWith(prof, {{"plugin_b_wait", "stacks_plugin_b.c", line_b}, {worker, "stacks_dlclose.c"}}) >= 1);
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

TEST_CASE("stacks: crt1's _start after an -O2 main has no line of main's CU", "[stacks]") {
  // main in .text.startup, _start right after it: the symbolizer gave
  // _start the row where main's CU ends (unique_lock.h:103); addr2line ??:?.
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("pool_o2")}, dir, {}, /*web=*/false);
  CHECK(s.plain.out == "sum=5135139 done=4000\n");
  PprofResult p = Pprof(s.trace, "sync");
  INFO(p.error << "\n" << p.raw);
  REQUIRE(p.ok);
  bool start = false, main_line = false;
  std::istringstream in(p.raw);
  for (std::string l; std::getline(in, l);) {
    if (l.find(" _start ") != std::string::npos) {
      start = true;
      CHECK(l.find(" _start ?:0") != std::string::npos);
    }
    if (l.find(" main ") != std::string::npos && l.find("pool_o2.cc:") != std::string::npos)
      main_line = true;
  }
  CHECK(start);
  CHECK(main_line);
}

TEST_CASE("stacks: plugins dlclose'd and replaced at the same addresses keep their names",
          "[stacks]") {
  SECTION("default (auto)") { CheckPlugins({}); }
  SECTION("frame pointers") { CheckPlugins({"GOTRACE_UNWIND=fp"}); }
  SECTION("libunwind") { CheckPlugins({"GOTRACE_UNWIND=libunwind"}); }
}

// --- Code without frame pointers ------------------------------------------------

TEST_CASE("stacks: code without frame pointers: auto and libunwind find every caller, fp stops "
          "short",
          "[stacks]") {
  const uint32_t leaf = MarkerLine("stacks_nofp.c", "nofp_leaf");
  TempDir dir;
  SECTION("GOTRACE_UNWIND=libunwind: the callers appear") {
    ScenarioRun s = RunTraced({Scenario("stacks_nofp")}, dir, {"GOTRACE_UNWIND=libunwind", "GOTRACE_SCHED=infer"});
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
  SECTION("GOTRACE_UNWIND=auto (the default): the callers appear") {
    ScenarioRun s = RunTraced({Scenario("stacks_nofp")}, dir, {"GOTRACE_SCHED=infer"});
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    CHECK(CountWith(prof, {{"nofp_leaf", "stacks_nofp.c", leaf},
                           {"nofp_middle", "stacks_nofp.c", MarkerLine("stacks_nofp.c", "nofp_middle")},
                           {"nofp_outer", "stacks_nofp.c", MarkerLine("stacks_nofp.c", "nofp_outer")},
                           {"nofp_worker", "stacks_nofp.c"}}) >= 4);
  }
  SECTION("frame pointers: a short stack, never a crash") {
    ScenarioRun s = RunTraced({Scenario("stacks_nofp")}, dir, {"GOTRACE_UNWIND=fp", "GOTRACE_SCHED=infer"});
    const std::vector<Sample> prof = SyncProfile(s.trace);
    INFO(Describe(prof));
    // The leaf is the caller of the interposer, whose own frame pointer is
    // sound; beyond it the chain is whatever rbp held. (Of the 4 rounds, the
    // profile holds those whose wait blocked: 3 on a busy CI host.)
    CHECK(CountWith(prof, {{"nofp_leaf", "stacks_nofp.c", leaf}}) >= 2);
    // And it says so: every stack that stops before the worker's start
    // ends in [truncated] (a chain that met a zero word in the middle of
    // the stack ended unmarked in some runs).
    for (const Sample& smp : prof) {
      INFO(Describe({smp}));
      if (smp.frames.empty() || CountWith({smp}, {{"nofp_worker", "stacks_nofp.c"}}) != 0) continue;
      CHECK(smp.frames.back().func == "[truncated]");
    }
  }
}

// The CPU samples of a trace (gotrace pprof --kind cpu, read back by go tool
// pprof -raw), with their frames.
std::vector<Sample> CpuProfile(const std::string& trace, const TempDir& dir) {
  const std::string pb = dir.File("cpu.pb.gz");
  const ProcResult p =
      RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "pprof", "--kind", "cpu", trace, "-o", pb});
  INFO(p.err);
  REQUIRE(p.Exited(0));
  const ProcResult raw = RunProcess({GoBinary(), "tool", "pprof", "-raw", pb});
  INFO(raw.err);
  REQUIRE(raw.Exited(0));
  return ParseRaw(raw.out);
}

TEST_CASE("stacks: CPU samples in code without frame pointers: every caller by default, the leaf "
          "with fp",
          "[stacks][sched]") {
  const std::vector<Want> whole = {{"cpu_nofp_leaf", "cpu_nofp.c"}, {"cpu_nofp_middle", "cpu_nofp.c"},
                                   {"cpu_nofp_outer", "cpu_nofp.c"}, {"cpu_nofp_worker", "cpu_nofp.c"}};
  for (const char* unwind : {"auto", "fp"}) {
    INFO("GOTRACE_UNWIND=" << unwind);
    TempDir dir;
    ProcOptions o;
    o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("d.trace"),
             std::string("GOTRACE_UNWIND=") + unwind};
    o.unset_env = {"GOTRACE_SCHED", "GOTRACE_CPU_HZ"};
    const ProcResult r = RunProcess({Scenario("cpu_nofp"), "400"}, o);
    INFO(r.Describe() << "\n" << r.err);
    REQUIRE(r.Exited(0));
    CHECK(r.out == "cpu_nofp: both computed\n");
    if (PerfDenied(r.err)) return;
    const std::vector<Sample> prof = CpuProfile(dir.File("d.trace"), dir);
    INFO(Describe(prof));
    uint64_t in_leaf = 0;
    for (const Sample& smp : prof)
      if (!smp.frames.empty() && smp.frames[0].func == "cpu_nofp_leaf") in_leaf += smp.count;
    CHECK(in_leaf >= 20);  // 2 threads, 0.4 s, 100 Hz: about 80
    const uint64_t walked = CountWith(prof, whole);
    // No frame of the library's but a leaf in its own work: with the stack
    // copy's walk, the worker's routine is called by libc's start_thread,
    // as untraced (our thread start trampoline was in every worker sample).
    const bool copies = std::string(unwind) == "auto";
    for (const Sample& smp : prof) {
      for (size_t i = 0; i < smp.frames.size(); ++i) {
        INFO(smp.frames[i].func);
        if (i > 0) CHECK(smp.frames[i].func.find("gotrace::") == std::string::npos);
        if (copies && smp.frames[i].func == "cpu_nofp_worker" && i + 1 < smp.frames.size())
          CHECK(smp.frames[i + 1].func == "start_thread");
      }
    }
    // A stack that stops before the thread's routine (or main) says so:
    // the kernel's chain ends at the first bad frame pointer, the ABI's end
    // and a stray one alike. (A new thread sampled on its way out of the
    // kernel, before start_thread, has clone3 alone: its whole stack. With
    // samples of kernel time, CI saw one.)
    for (const Sample& smp : prof) {
      INFO(Describe({smp}));
      if (smp.frames.empty() || CountWith({smp}, {{"cpu_nofp_worker", ""}}) != 0 ||
          CountWith({smp}, {{"main", ""}}) != 0 ||
          (smp.frames.size() == 1 && smp.frames[0].func == "clone3"))
        continue;
      CHECK(smp.frames.back().func == "[truncated]");
    }
    if (std::string(unwind) == "auto") {
      CHECK(walked * 10 >= in_leaf * 9);  // the stack copy's walk reaches the thread's start
    } else {
      CHECK(walked * 10 <= in_leaf);  // the kernel's chain: rbp is not a frame pointer here
    }
  }
  // The tracer's own threads are sampled too (the flusher, reading the
  // rings every millisecond here): their samples are not the program's
  // (gotrace::FlusherMain, start_thread was in a CI run's profile).
  TempDir dir;
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("f.trace"), "GOTRACE_FLUSH_MS=1",
           "GOTRACE_CPU_HZ=5000"};
  o.unset_env = {"GOTRACE_SCHED", "GOTRACE_UNWIND"};
  const ProcResult r = RunProcess({Scenario("cpu_nofp"), "400"}, o);
  INFO(r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  if (PerfDenied(r.err)) return;
  const std::vector<Sample> prof = CpuProfile(dir.File("f.trace"), dir);
  INFO(Describe(prof));
  // (A program thread's sample in the tracer's own work, its thread's end
  // or the exit's trace, keeps that one frame of ours, as its leaf.)
  for (const Sample& smp : prof) {
    for (size_t i = 0; i < smp.frames.size(); ++i) {
      INFO(smp.frames[i].func);
      CHECK(smp.frames[i].func.find("FlusherMain") == std::string::npos);
      if (i > 0) CHECK(smp.frames[i].func.find("gotrace::") == std::string::npos);
    }
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
  // A cond wait may show twice: its block, and its mutex taken back after the
  // wake-up when that is contended (the kernel sees the second wait too).
  CHECK(old_waits >= 1);
  // A new thread: libunwind, the whole stack.
  CHECK(CountWith(prof, {{"cb_truth_new", "stacks_cfi_reload.c"},
                         {"stacks_cfi_call", ""},
                         {"InPlugin", "stacks_cfi_reload.c"},
                         {"new_thread", "stacks_cfi_reload.c"}}) >= 1);
}

TEST_CASE("stacks: after a dlclose, the default unwinder never walks new code with the old "
          "code's rules (issue 14)",
          "[stacks]") {
  // The same plugins: the built-in unwinder caches decoded rows by address
  // too; an unload must make it forget them (CodeMap::generation).
  TempDir dir;
  // Inferred scheduling: a wait signalled before it slept still shows.
  ScenarioRun s = RunTraced({Scenario("stacks_cfi_reload")}, dir, {"GOTRACE_SCHED=infer"});
  CHECK(s.plain.out == "cfi reload ok\n");
  if (s.traced.err.find("same address: yes") == std::string::npos) {
    WARN("the plugins were not mapped at the same address (or not x86_64): nothing to check");
    return;
  }
  const std::vector<Sample> prof = SyncProfile(s.trace);
  INFO(Describe(prof));
  // The lie is followed where it is the rule (a wrong frame address): the
  // walk stops there, without a frame outside code.
  for (const Sample& smp : prof) {
    for (const Frame& f : smp.frames) {
      INFO(f.func);
      CHECK(f.func.rfind("0x", 0) != 0);
    }
  }
  // The truth, on the thread that walked the lie and on a new one: whole.
  for (const char* cb : {"cb_truth_old", "cb_truth_new"}) {
    INFO(cb);
    const std::string thread = std::string(cb) == "cb_truth_old" ? "old_thread" : "new_thread";
    CHECK(CountWith(prof, {{cb, "stacks_cfi_reload.c"},
                           {"stacks_cfi_call", ""},
                           {"InPlugin", "stacks_cfi_reload.c"},
                           {thread, "stacks_cfi_reload.c"}}) >= 1);
  }
}

// --- C++ exceptions ----------------------------------------------------------------

TEST_CASE("stacks: C++ exceptions in worker threads behave as untraced, in every mode",
          "[stacks]") {
  for (const char* mode : {"auto", "fp", "libunwind"}) {
    INFO("GOTRACE_UNWIND=" << mode);
    TempDir dir;
    ScenarioRun s = RunTraced({Scenario("stacks_exceptions")}, dir,
                              {std::string("GOTRACE_UNWIND=") + mode, "GOTRACE_SCHED=infer"});
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
    if (std::string(mode) != "fp") {
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
    ScenarioRun s = RunTraced({Scenario(name)}, dir, {"GOTRACE_SCHED=infer"});
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
    ScenarioRun s = RunTraced({Scenario(name)}, dir, {"GOTRACE_SCHED=infer"});
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

// --- The default unwinding on code without frame pointers (issue 14) ---------------

// The executable mappings in a copy of /proc/PID/maps.
std::vector<std::pair<uint64_t, uint64_t>> ExecRanges(const std::string& maps_file) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::ifstream in(maps_file);
  for (std::string l; std::getline(in, l);) {
    std::istringstream f(l);
    std::string range, perms;
    f >> range >> perms;
    const size_t dash = range.find('-');
    if (dash == std::string::npos || perms.size() < 3 || perms[2] != 'x') continue;
    out.emplace_back(std::stoull(range.substr(0, dash), nullptr, 16),
                     std::stoull(range.substr(dash + 1), nullptr, 16));
  }
  return out;
}

bool InRanges(const std::vector<std::pair<uint64_t, uint64_t>>& r, uint64_t pc) {
  for (const auto& [lo, hi] : r)
    if (pc >= lo && pc < hi) return true;
  return false;
}

// Every stack the log defines (`gotrace dump`): its PCs, and whether the
// walk marked it truncated.
struct LoggedStack {
  std::vector<uint64_t> pcs;
  bool truncated = false;
};
std::vector<LoggedStack> LoggedStacks(const std::string& log) {
  ProcResult d = RunProcess({std::string(GOTRACE_BUILD_DIR) + "/gotrace", "dump", log});
  INFO(d.Describe() << "\n" << d.err);
  REQUIRE(d.Exited(0));
  std::vector<LoggedStack> out;
  std::istringstream in(d.out);
  for (std::string l; std::getline(in, l);) {
    const size_t at = l.find(" StackDef id=");
    if (at == std::string::npos) continue;
    std::istringstream f(l.substr(at));
    LoggedStack st;
    for (std::string w; f >> w;) {
      if (w.rfind("0x", 0) == 0) st.pcs.push_back(std::stoull(w, nullptr, 16));
      if (w == "truncated") st.truncated = true;
    }
    out.push_back(st);
  }
  return out;
}

// The location addresses of a `go tool pprof -raw` profile, with the name of
// the (last, physical) frame at each.
std::vector<std::pair<uint64_t, std::string>> RawLocations(const std::string& raw) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::istringstream in(raw);
  bool locations = false;
  for (std::string l; std::getline(in, l);) {
    if (l == "Locations") locations = true;
    if (l == "Mappings") locations = false;
    const std::string t = Trim(l);
    const size_t colon = t.find(": 0x");
    if (!locations || colon == std::string::npos || t.find_first_not_of("0123456789") != colon) continue;
    std::istringstream f(t.substr(colon + 2));
    std::string addr, m, func;
    f >> addr >> m >> func;
    out.emplace_back(std::stoull(addr, nullptr, 16), func);
  }
  return out;
}

// Issue 14's "no frame outside executable code": every PC of every stack
// the log defines is in an executable mapping of the program (its
// /proc/PID/maps at the end: these programs unload nothing), and so is every
// real PC of the profiles (synthetic ones, >= 2^47, name inlined frames and
// the [truncated] marker: never an unnamed address).
void CheckEveryPcIsCode(const std::vector<LoggedStack>& logged, const std::string& maps,
                        const std::vector<std::string>& profiles_raw, const std::string& maps_of_profiles) {
  const auto code = ExecRanges(maps);
  REQUIRE(code.size() >= 3);
  REQUIRE_FALSE(logged.empty());
  for (const LoggedStack& st : logged) {
    for (uint64_t pc : st.pcs) {
      INFO("logged PC 0x" << std::hex << pc);
      CHECK(InRanges(code, pc));
    }
  }
  const auto code2 = ExecRanges(maps_of_profiles);
  REQUIRE(code2.size() >= 3);
  for (const std::string& raw : profiles_raw) {
    for (const auto& [addr, func] : RawLocations(raw)) {
      INFO("profile location 0x" << std::hex << addr << " " << func);
      CHECK(func.rfind("0x", 0) != 0);
      if (addr < (uint64_t{1} << 47)) CHECK(InRanges(code2, addr));
    }
  }
}

struct AutoRun {
  std::vector<Sample> sync, net;
  std::string sync_raw, net_raw;
  std::vector<LoggedStack> logged;
};

// Runs a stacks_auto program traced twice: once through RunTraced (plain vs
// traced, Go's parser and web UI; its profiles), once keeping the log (every
// stack it defines); each writes its own /proc/PID/maps.
AutoRun RunAuto(const std::string& program, const std::vector<std::string>& env,
                const std::string& expect_out) {
  AutoRun a;
  TempDir dir;
  std::vector<std::string> e = env;
  e.push_back("STACKS_MAPS_OUT=" + dir.File("maps1"));
  e.push_back("GOTRACE_SCHED=infer");  // one block per wait (see stacks_dlclose)
  ScenarioRun s = RunTraced({Scenario(program)}, dir, e);
  CHECK(s.plain.out == expect_out);
  PprofResult sync = Pprof(s.trace, "sync"), net = Pprof(s.trace, "net");
  INFO(sync.error << net.error);
  REQUIRE(sync.ok);
  REQUIRE(net.ok);
  a.sync = ParseRaw(sync.raw);
  a.net = ParseRaw(net.raw);
  ProcOptions o;
  // No CPU samples in the kept log: their call chains are the kernel's
  // frame-pointer walk, cut where it leaves code, not this unwinder's.
  o.env = {"LD_PRELOAD=" + PreloadLib(), "GOTRACE_OUT=" + dir.File("kept.trace"), "GOTRACE_KEEP_LOG=1",
           "GOTRACE_CPU_HZ=0", "STACKS_MAPS_OUT=" + dir.File("maps2")};
  o.env.insert(o.env.end(), env.begin(), env.end());
  ProcResult kept = RunProcess({Scenario(program)}, o);
  INFO(kept.Describe() << "\n" << kept.err);
  REQUIRE(kept.Exited(0));
  a.logged = LoggedStacks(dir.File("kept.trace.gtlog"));
  CheckEveryPcIsCode(a.logged, dir.File("maps2"), {sync.raw, net.raw}, dir.File("maps1"));
  return a;
}

bool HasFrame(const Sample& s, const std::string& func) {
  for (const Frame& f : s.frames)
    if (f.func == func) return true;
  return false;
}

TEST_CASE("stacks: default unwinding through C without frame pointers: whole stacks, nothing "
          "outside code (issue 14)",
          "[stacks]") {
  const std::string src = "stacks_auto.c";
  const std::vector<Want> callers = {{"auto_middle", src, MarkerLine(src, "auto_middle")},
                                     {"auto_outer", src, MarkerLine(src, "auto_outer")},
                                     {"auto_worker", src}};
  // The premise, said by the program itself: rbp held its fake frame
  // record's address when the leaves were called.
  const std::string out = "auto waits 2 rbp busy: yes\n";
  SECTION("default (auto)") {
    const AutoRun a = RunAuto("stacks_auto", {}, out);
    INFO("sync:\n" << Describe(a.sync) << "net:\n" << Describe(a.net));
    std::vector<Want> lock = {{"auto_lock_leaf", src, MarkerLine(src, "auto_lock_leaf")}};
    lock.insert(lock.end(), callers.begin(), callers.end());
    std::vector<Want> rd = {{"auto_read_leaf", src, MarkerLine(src, "auto_read_leaf")}};
    rd.insert(rd.end(), callers.begin(), callers.end());
    CHECK(CountWith(a.sync, lock) >= 1);
    CHECK(CountWith(a.net, rd) >= 1);
    // Down to the thread's first frame: libc's thread start, no marker.
    for (const Sample& smp : a.sync) {
      if (CountWith({smp}, lock) == 0) continue;
      CHECK(HasFrame(smp, "start_thread"));
      CHECK_FALSE(HasFrame(smp, StackTable::kTruncatedFrame));
    }
    // Every stack of this program reaches its thread's first frame.
    for (const LoggedStack& st : a.logged) CHECK_FALSE(st.truncated);
  }
  SECTION("fp: the fake frame record ends the stack after the leaf, marked truncated") {
    const AutoRun a = RunAuto("stacks_auto", {"GOTRACE_UNWIND=fp"}, out);
    INFO("sync:\n" << Describe(a.sync));
    CHECK(CountWith(a.sync, {{"auto_lock_leaf", src, MarkerLine(src, "auto_lock_leaf")},
                             {StackTable::kTruncatedFrame, ""}}) == 1);
    size_t truncated = 0;
    for (const LoggedStack& st : a.logged) truncated += st.truncated ? 1 : 0;
    CHECK(truncated > 0);
  }
  SECTION("libunwind: whole stacks, nothing outside code") {
    const AutoRun a = RunAuto("stacks_auto", {"GOTRACE_UNWIND=libunwind"}, out);
    INFO("sync:\n" << Describe(a.sync));
    std::vector<Want> lock = {{"auto_lock_leaf", src, MarkerLine(src, "auto_lock_leaf")}};
    lock.insert(lock.end(), callers.begin(), callers.end());
    CHECK(CountWith(a.sync, lock) >= 1);
  }
}

TEST_CASE("stacks: default unwinding through C++ without frame pointers: templates, lambdas, "
          "std::function, virtual calls (issue 14)",
          "[stacks]") {
  const std::string src = "stacks_auto_cxx.cc";
  const AutoRun a = RunAuto("stacks_auto_cxx", {}, "auto cxx waits 2\n");
  INFO("sync:\n" << Describe(a.sync) << "net:\n" << Describe(a.net));
  // pprof shortens C++ names ("(anonymous namespace)::LockWaiter::Wait()" is
  // "::LockWaiter::Wait", a lambda's operator() "::operator").
  const std::vector<Want> tail = {{"::operator", src, MarkerLine(src, "cxx_lambda")}};
  auto path = [&](const std::string& wait, const std::string& marker) {
    std::vector<Want> w = {{wait, src, MarkerLine(src, marker)}};
    w.insert(w.end(), tail.begin(), tail.end());
    return w;
  };
  CHECK(CountWith(a.sync, path("::LockWaiter::Wait", "cxx_lock_wait")) >= 1);
  CHECK(CountWith(a.net, path("::ReadWaiter::Wait", "cxx_read_wait")) >= 1);
  for (const std::vector<Sample>* prof : {&a.sync, &a.net}) {
    uint64_t whole = 0;
    for (const Sample& smp : *prof) {
      if (!HasFrame(smp, "::LockWaiter::Wait") && !HasFrame(smp, "::ReadWaiter::Wait")) continue;
      CHECK(CountWith({smp}, {{"::Pipeline::Run", src, MarkerLine(src, "cxx_run")}}) == smp.count);
      CHECK(HasFrame(smp, "::Worker"));
      CHECK(HasFrame(smp, "start_thread"));
      whole += smp.count;
    }
    CHECK(whole == 1);
  }
  for (const LoggedStack& st : a.logged) CHECK_FALSE(st.truncated);
}

TEST_CASE("stacks: Debian's python3, threads contending for the interpreter lock: the sync "
          "profile reaches Py_BytesMain (issue 14)",
          "[stacks]") {
  const std::string python = "/usr/bin/python3";  // scripts/test installs it
  REQUIRE(access(python.c_str(), X_OK) == 0);
  TempDir dir;
  const std::string script = dir.File("gil.py");
  {
    std::ofstream f(script);
    f << "import os, shutil, threading\n"
         "def spin(n):\n"
         "    x = 0\n"
         "    for i in range(n):\n"
         "        x += i\n"
         "    return x\n"
         "ts = [threading.Thread(target=spin, args=(400000,)) for _ in range(3)]\n"
         "for t in ts:\n"
         "    t.start()\n"
         "spin(400000)\n"
         "for t in ts:\n"
         "    t.join()\n"
         "out = os.environ.get('STACKS_MAPS_OUT')\n"
         "if out:\n"
         "    shutil.copyfile('/proc/self/maps', out)\n"
         "print('gil done')\n";
  }
  ScenarioRun s = RunTraced({python, script}, dir, {"STACKS_MAPS_OUT=" + dir.File("maps")});
  CHECK(s.plain.out == "gil done\n");
  PprofResult p = Pprof(s.trace, "sync");
  INFO(p.error);
  REQUIRE(p.ok);
  const std::vector<Sample> prof = ParseRaw(p.raw);
  INFO(Describe(prof));
  // The main thread's waits (for the interpreter lock, for its threads'
  // ends) through the interpreter to its start: Py_BytesMain is exported
  // (.dynsym), so it is named without python's debug symbols; so is
  // _PyEval_EvalFrameDefault's caller PyEval_EvalCode.
  uint64_t to_main = 0;
  for (const Sample& smp : prof)
    if (HasFrame(smp, "Py_BytesMain") && HasFrame(smp, "PyEval_EvalCode")) to_main += smp.count;
  CHECK(to_main >= 1);
  // And no frame outside executable code, in any stack of the profile.
  const auto code = ExecRanges(dir.File("maps"));
  REQUIRE(code.size() >= 3);
  for (const auto& [addr, func] : RawLocations(p.raw)) {
    INFO("0x" << std::hex << addr << " " << func);
    CHECK(func.rfind("0x", 0) != 0);
    if (addr < (uint64_t{1} << 47)) CHECK(InRanges(code, addr));
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
