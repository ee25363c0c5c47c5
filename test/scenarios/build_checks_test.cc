// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/build_checks_test.cc - what libgotrace.so must not be -===//
//
// Properties of the built library that code review alone does not keep:
// G6 (exports only the interposed functions), H23 (initial-exec TLS only),
// H32/H20 (no C++ runtime, no exceptions, no stdio in the preloaded code),
// and the fork path's code in one 64 KiB window (preload/fork_path.ld).
//===----------------------------------------------------------------------===//
#include <dirent.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

// nm's lines, without symbol versions ("malloc@GLIBC_2.2.5" -> "malloc").
std::set<std::string> Lines(const std::string& s) {
  std::set<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    l = l.substr(0, l.find('@'));
    if (!l.empty()) out.insert(l);
  }
  return out;
}

TEST_CASE("libgotrace.so exports exactly the functions defined with GT_EXPORT", "[build]") {
  ProcResult nm = RunProcess({"nm", "-D", "--defined-only", "--format=just-symbols", PreloadLib()});
  REQUIRE(nm.Exited(0));
  const std::set<std::string> exported = Lines(nm.out);
  std::set<std::string> defined;
  const std::string dir = std::string(GOTRACE_SOURCE_DIR) + "/preload";
  const std::regex def(R"(GT_EXPORT\s+[\w\s\*]+?\b(\w+)\()");
  // A function exported under another name than its C++ one (stdio.h's
  // renamed scanf family): declared with GT_EXPORT_AS(symbol).
  const std::regex renamed(R"(GT_EXPORT_AS\((\w+)\))");
  for (const std::string& f : FilesEnding(dir, ".cc")) {
    const std::string src = Slurp(f);
    for (std::sregex_iterator it(src.begin(), src.end(), def), end; it != end; ++it)
      defined.insert((*it)[1]);
    for (std::sregex_iterator it(src.begin(), src.end(), renamed), end; it != end; ++it)
      defined.insert((*it)[1]);
  }
  CHECK(defined.size() >= 19);
  CHECK(exported == defined);
}

TEST_CASE("libgotrace.so needs only libc and uses no dynamic TLS", "[build]") {
  ProcResult d = RunProcess({"readelf", "-d", "-r", "-W", PreloadLib()});
  REQUIRE(d.Exited(0));
  CHECK(d.out.find("libstdc++") == std::string::npos);
  CHECK(d.out.find("libdw") == std::string::npos);
  CHECK(d.out.find("DTPMOD64") == std::string::npos);  // H23: no general-dynamic TLS
  CHECK(d.out.find("TLSGD") == std::string::npos);
}

TEST_CASE("libgotrace.so calls no stdio, iostream or C++ exception machinery", "[build]") {
  ProcResult nm = RunProcess({"nm", "-D", "--undefined-only", "--format=just-symbols", PreloadLib()});
  REQUIRE(nm.Exited(0));
  const std::set<std::string> undefined = Lines(nm.out);
  CHECK(undefined.count("dlvsym") == 1);  // the check sees real imports (libc is reached via dlsym)
  // (malloc is allowed: pthread_create's interposer allocates, as glibc's does.)
  for (const char* bad : {"fopen", "fprintf", "printf", "fscanf", "fwrite", "fputs", "puts",
                          "__cxa_throw", "__cxa_begin_catch", "_ZSt4cout",
                          "__gxx_personality_v0", "_Unwind_Resume"}) {
    INFO(bad);
    CHECK(undefined.count(bad) == 0);
  }
}

TEST_CASE("libgotrace.so registers no static destructors (G7, H32)", "[build]") {
  // __cxa_atexit has exactly one caller: atexit() (libc_nonshared's shim,
  // which tail-jumps to it) for our deliberate exit handler. Every static
  // object with a destructor would add a call site.
  ProcResult d = RunProcess({"objdump", "-d", "--no-show-raw-insn", PreloadLib()});
  REQUIRE(d.Exited(0));
  size_t calls = 0;
  for (size_t at = 0; (at = d.out.find("<__cxa_atexit@plt>", at)) != std::string::npos; ++at) {
    const size_t bol = d.out.rfind('\n', at);
    const std::string insn = d.out.substr(bol + 1, at - bol - 1);
    if (insn.find("call") != std::string::npos || insn.find("jmp ") != std::string::npos) ++calls;
  }
  CHECK(calls == 1);
}

TEST_CASE("libgotrace.so has no dynamic initializers (G7)", "[build]") {
  // A namespace-scope object that is not constant-initialized gets a
  // _GLOBAL__sub_I_<file> initializer, which runs at the default priority:
  // after our constructor (101) has started tracing, wiping what it set up.
  // (The module table once lost every module this way.) constinit makes the
  // compiler refuse such objects; this catches the ones without it.
  ProcResult nm = RunProcess({"nm", "--format=just-symbols", PreloadLib()});
  REQUIRE(nm.Exited(0));
  CHECK(nm.out.find("_GLOBAL__sub_I") == std::string::npos);
  CHECK(nm.out.find("_Z41__static_initialization_and_destruction") == std::string::npos);
}

#if defined(__x86_64__)
// The address range of one of the library's sections, from readelf -S.
std::pair<uint64_t, uint64_t> SectionRange(const std::string& readelf, const std::string& name) {
  std::smatch m;
  const std::regex row("\\" + name + R"(\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+))");
  if (!std::regex_search(readelf, m, row)) return {0, 0};
  const uint64_t lo = std::stoull(m[1].str(), nullptr, 16);
  return {lo, lo + std::stoull(m[2].str(), nullptr, 16)};
}

// Each name's address is in [lo, hi).
void CheckIn(const std::string& nm, std::initializer_list<const char*> names, uint64_t lo,
             uint64_t hi) {
  for (const char* fn : names) {
    INFO(fn);
    const std::regex sym("(^|\n)([0-9a-f]+) [tTwW] " + std::string(fn) + "(\n|$)");
    std::smatch a;
    REQUIRE(std::regex_search(nm, a, sym));
    const uint64_t at = std::stoull(a[2].str(), nullptr, 16);
    CHECK(at >= lo);
    CHECK(at < hi);
  }
}

TEST_CASE("libgotrace.so: what a fork child runs before exec is in one 64 KiB window of code",
          "[build]") {
  // A fork child has no page-table entries for file-backed code: each 64 KiB
  // window it runs is a page fault (issue 18). preload/fork_path.ld gathers
  // the functions into .text.gt_fork; scripts/fork-path lists them again
  // after renames (a stale list would leave them in .text: this fails).
  ProcResult sec = RunProcess({"readelf", "-S", "-W", PreloadLib()});
  REQUIRE(sec.Exited(0));
  const auto [lo, hi] = SectionRange(sec.out, ".text.gt_fork");
  REQUIRE(hi > lo);
  CHECK(lo >> 16 == (hi - 1) >> 16);
  ProcResult nm = RunProcess({"nm", "--defined-only", PreloadLib()});
  REQUIRE(nm.Exited(0));
  CheckIn(nm.out,
          {"_ZN7gotrace12_GLOBAL__N_111AtForkChildEv",
           "execve",
           "close",
           "dup2",
           "malloc",
           "free",
           "sigaction",
           "_ZN7gotrace14CrashSigactionEiPK9sigactionPS0_",
           "_ZN7gotrace12_GLOBAL__N_117InstallTermActionEiRK9sigactionPS1_",
           "_ZN7gotrace12_GLOBAL__N_117TermSigactionSlowEiPK9sigactionPS1_",
           "_ZN7gotrace12_GLOBAL__N_14KeepEiRK9sigaction",
           "_ZN12_GLOBAL__N_16DoExecIZ6execveEUlPKPcE_EEiS3_NS_10ExecTargetES3_T_",
           "_ZN7gotrace15ExecEnvironmentEPKPcPNS_7ExecEnvEbb",
           "_ZN7gotrace14EnvLeavesUsOutEPKPc",
           "_ZN7gotrace3log11LeafProgramEPKc",
           "_ZN7gotrace12_GLOBAL__N_110PreloadsUsEPKPc",
           "_ZN7gotrace12NoteUntracedEiijmjPKcPKPcPKNS_3log8LearnPidEPNS_7ExecFdsE",
           "_ZN7gotrace11SkipTracingEPKcPKPcPNS_3log8LearnPidEPNS_7ExecFdsE",
           "_ZN7gotrace12CloseExecFdsEPNS_7ExecFdsE",
           "_ZN7gotrace5learn5QuietEPKcmmPi",
           "_ZN7gotrace5learn7NotePidEPKciRKNS_3log8LearnPidEi",
           "_ZN7gotrace8internal18PoolForgetForChildEb",
           "__do_global_dtors_aux",
           "_ZN7gotrace12_GLOBAL__N_14FiniEv",
           "_ZN12_GLOBAL__N_111PreloadableEPKci",
           "_ZN7gotrace3sys17AccessAsEffectiveEPKci",
           "_ZN7gotrace9ParentPidEv",
           "gotrace_fini"},
          lo, hi);
}

TEST_CASE("libgotrace.so: what a traced shell writes around each fork is on g's first page",
          "[build]") {
  // A fork write-protects every page of ours on both sides: the first write
  // to each is a copy-on-write fault, in the child and in the shell (issue
  // 18: 12 faults per fork more than untraced, 9 since). The child writes
  // its state (g's first fields, fdclass's end, the signal actions it
  // resets); the shell reaps it into its process stream, under its lock,
  // and sets SIGINT again. All on one page (GT_FORK_HOT).
  ProcResult nm = RunProcess({"nm", "-S", "--defined-only", PreloadLib()});
  REQUIRE(nm.Exited(0));
  auto range = [&](const std::string& sym) {
    const std::regex line("([0-9a-f]+) ([0-9a-f]+) [a-zA-Z] " + sym + "\n");
    std::smatch m;
    REQUIRE(std::regex_search(nm.out, m, line));
    const uint64_t at = std::stoull(m[1].str(), nullptr, 16);
    return std::make_pair(at, at + std::stoull(m[2].str(), nullptr, 16));
  };
  const uint64_t page = range("_ZN7gotrace1gE").first >> 12;
  // g's fields up to the lifecycle flags a fork child sets.
  CHECK((range("_ZN7gotrace1gE").first + 512 - 1) >> 12 == page);
  for (const char* sym : {"_ZN7gotrace12_GLOBAL__N_112g_app_actionE",
                          "_ZN7gotrace8internal11g_proc_lockE", "_ZN7gotrace8internal6g_procE",
                          "_ZN7gotrace7fdclass5g_endE", "_ZN7gotrace3sys8g_log_fdE"}) {
    INFO(sym);
    const auto [lo, hi] = range(sym);
    CHECK(lo >> 12 == page);
    CHECK((hi - 1) >> 12 == page);
  }
}

TEST_CASE("libgotrace.so: the exec path of a fork child loads no constant from .rodata",
          "[build]") {
  // A page of .rodata read is a fault in every exec'ing fork child of a
  // traced shell: the environment's literals sit on g's first page
  // (GT_FORK_HOT), our ELF class and machine are constants, and the
  // builder's fields are not set from a vector constant (no SLP).
  ProcResult sec = RunProcess({"readelf", "-S", "-W", PreloadLib()});
  REQUIRE(sec.Exited(0));
  std::smatch m;
  REQUIRE(std::regex_search(
      sec.out, m, std::regex(R"(\.rodata\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+))")));
  const uint64_t lo = std::stoull(m[1].str(), nullptr, 16);
  const uint64_t hi = lo + std::stoull(m[2].str(), nullptr, 16);
  for (const char* fn :
       {"_ZN7gotrace15ExecEnvironmentEPKPcPNS_7ExecEnvEbb", "_ZN12_GLOBAL__N_111PreloadableEPKci",
        "_ZN7gotrace11ExecEnvRoomEPKPcPmS3_"}) {
    INFO(fn);
    ProcResult d = RunProcess(
        {"objdump", "-d", "--no-show-raw-insn", std::string("--disassemble=") + fn, PreloadLib()});
    REQUIRE(d.Exited(0));
    REQUIRE(d.out.find(std::string("<") + fn + ">:") != std::string::npos);
    // rip-relative operands: "# ADDR <sym>" comments.
    const std::regex ref(R"(# ([0-9a-f]+) <)");
    for (auto it = std::sregex_iterator(d.out.begin(), d.out.end(), ref);
         it != std::sregex_iterator(); ++it) {
      const uint64_t at = std::stoull((*it)[1].str(), nullptr, 16);
      INFO("reference to " << std::hex << at);
      CHECK((at < lo || at >= hi));
    }
  }
}

TEST_CASE("libgotrace.so: what a quiet command runs from start to exit is in two 64 KiB windows",
          "[build]") {
  // An exec'd command starts with no page-table entries for our code either:
  // its start (Init, the configuration, the real functions' lookup, the
  // stubs of libc_nonshared.a it calls), common hooks and its quiet end come
  // right after the fork path (.text.gt_quiet), and the loader's call at
  // exit (DT_FINI) goes to a function among them, not to crti's _fini after
  // all of the text.
  ProcResult sec = RunProcess({"readelf", "-S", "-W", PreloadLib()});
  REQUIRE(sec.Exited(0));
  const auto [fork_lo, fork_hi] = SectionRange(sec.out, ".text.gt_fork");
  const auto [lo, hi] = SectionRange(sec.out, ".text.gt_quiet");
  REQUIRE(hi > lo);
  CHECK(lo == ((fork_hi + 63) & ~uint64_t{63}));
  CHECK((hi - 1) >> 16 <= (fork_lo >> 16) + 1);
  ProcResult nm = RunProcess({"nm", "--defined-only", PreloadLib()});
  REQUIRE(nm.Exited(0));
  CheckIn(
      nm.out,
      {"_ZN7gotrace12_GLOBAL__N_14InitEiPPcS2_", "_ZN7gotrace10ReadConfigEPNS_6ConfigE", "atexit",
       "pthread_atfork", "read", "write", "fread_unlocked", "getdelim", "__libc_start_main"},
      fork_lo, hi);
  ProcResult dyn = RunProcess({"readelf", "-d", "-W", PreloadLib()});
  REQUIRE(dyn.Exited(0));
  std::smatch m;
  REQUIRE(std::regex_search(dyn.out, m, std::regex(R"(\(FINI\)\s+0x([0-9a-f]+))")));
  const std::regex fini(R"((^|\n)([0-9a-f]+) t gotrace_fini(\n|$))");
  std::smatch f;
  REQUIRE(std::regex_search(nm.out, f, fini));
  CHECK(std::stoull(m[1].str(), nullptr, 16) == std::stoull(f[2].str(), nullptr, 16));
}
#endif

}  // namespace
}  // namespace gotrace::testing
