// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/package_test.cc - fresh-machine build and .deb ------===//
//
// Issue 19 items 1 and 4: scripts/build (tracewrap's first-use build) must need
// only what tracing needs, so it is run on a fresh build directory with Catch2
// made unfindable and its result must trace a program; and the Debian package
// `cpack -G DEB` makes from this build must hold every command, library and
// man page, declare its dependencies, and trace a program from a tree
// extracted with `dpkg -x` (no root, no dpkg database).
//
// Both compile or package a whole tree, so they have their own CTest timeout
// and run serially (test/scenarios/CMakeLists.txt).
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/scenarios/scenario_util.h"

namespace gotrace::testing {
namespace {

namespace fs = std::filesystem;

// Variables of the test's own environment that would change what tracewrap or
// the traced program does.
const std::vector<std::string> kUnset = {"LD_PRELOAD",      "GOTRACE_OUT",    "GOTRACE_UNWIND",
                                         "GOTRACE_DEPTH",   "GOTRACE_EVENTS", "GOTRACE_QUIET",
                                         "GOTRACE_DISABLE", "GOTRACE_KEEP_LOG", "GOTRACE_LIB"};

// Traces the sleepers scenario with `tracewrap` (GOTRACE_LIB as given, or
// unset so the script finds its own library) and checks the trace with Go.
void TraceSleepersWith(const std::string& tracewrap, const std::string& lib, const TempDir& dir) {
  const std::string out = dir.File("sleepers.trace");
  ProcOptions o;
  o.cwd = dir.path();
  o.unset_env = kUnset;
  if (!lib.empty()) o.env = {"GOTRACE_LIB=" + lib};
  // Inferred scheduling: the count below is the interposers'. From the
  // kernel, a sleep that never left its CPU (sleep(0), sometimes) is no
  // block (README), which made this check fail one run in twenty.
  const ProcResult r = RunProcess({tracewrap, "--sched=infer", "-o", out, Scenario("sleepers")}, o);
  INFO(tracewrap << ": " << r.Describe() << "\n" << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::StartsWith("gotrace: wrote "));
  const ParsedTrace t = ParseWithGo(out);
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 45);  // as in tracewrap_test: 3 threads x 15 sleeps
}

TEST_CASE("first-use build: scripts/build needs no Catch2 and its result traces", "[package]") {
  TempDir dir;
  const std::string build = dir.File("build");
  ProcOptions o;
  o.timeout_s = 1200;  // a whole build of the runtime on a shared 2-core machine
  o.unset_env = kUnset;
  // Build type None (no -O, no -g): the same sources, compiled fastest.
  o.env = {"BUILD_DIR=" + build, "JOBS=2", "GOTRACE_BUILD_TYPE=None"};
  const ProcResult r = RunProcess({std::string(GOTRACE_SOURCE_DIR) + "/scripts/build",
                                   "-DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON"},
                                  o);
  INFO(r.Describe() << "\n" << r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0));
  REQUIRE(r.Exited(0));
  CHECK(r.out.empty());  // tracewrap runs it before the program writes to stdout
  CHECK_THAT(r.err, Catch::Contains("Catch2 v2 not found: tests not built"));
  CHECK_FALSE(fs::exists(build + "/test"));  // nothing of test/ was configured
  CHECK(Slurp(build + "/CMakeCache.txt").find("GOTRACE_BUILD_TESTS:STRING=AUTO") !=
        std::string::npos);
  for (const char* f : {"libgotrace.so", "libgotrace_encode.so", "gotrace"}) {
    INFO(f);
    CHECK(fs::exists(build + "/" + f));
  }
  TraceSleepersWith(std::string(GOTRACE_SOURCE_DIR) + "/scripts/tracewrap",
                    build + "/libgotrace.so", dir);
}

// `dpkg-deb -f DEB FIELD`.
std::string DebField(const std::string& deb, const std::string& field) {
  const ProcResult r = RunProcess({"dpkg-deb", "-f", deb, field});
  return r.Exited(0) ? r.out : "";
}

TEST_CASE("Debian package: cpack -G DEB, dpkg -x, trace with the extracted copy", "[package]") {
  TempDir dir;
  const std::string pkgdir = dir.File("pkg");
  fs::create_directories(pkgdir);
  ProcOptions o;
  o.timeout_s = 600;
  o.cwd = GOTRACE_BUILD_DIR;
  const ProcResult c = RunProcess(
      {"cpack", "-G", "DEB", "-B", pkgdir, "--config",
       std::string(GOTRACE_BUILD_DIR) + "/CPackConfig.cmake"},
      o);
  INFO(c.Describe() << "\n" << c.out << c.err);
  REQUIRE(c.Exited(0));

  const ProcResult arch = RunProcess({"dpkg", "--print-architecture"});
  REQUIRE(arch.Exited(0));
  std::string a = arch.out;
  while (!a.empty() && a.back() == '\n') a.pop_back();
  const std::string deb = pkgdir + "/gotrace_" + GOTRACE_VERSION + "_" + a + ".deb";
  REQUIRE(fs::exists(deb));

  CHECK(DebField(deb, "Package") == "gotrace\n");
  CHECK(DebField(deb, "Version") == std::string(GOTRACE_VERSION) + "\n");
  const std::string depends = DebField(deb, "Depends");
  INFO("Depends: " << depends);
  for (const char* d : {"libc6", "libdw1", "libelf1", "libunwind8"}) {
    CHECK_THAT(depends, Catch::Contains(d));
  }

  const std::string root = dir.File("root");
  const ProcResult x = RunProcess({"dpkg", "-x", deb, root});
  INFO(x.Describe() << "\n" << x.err);
  REQUIRE(x.Exited(0));
  std::string libdir;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().filename() == "libgotrace.so") libdir = e.path().parent_path().string();
  }
  REQUIRE_FALSE(libdir.empty());
  CHECK(libdir.starts_with(root + "/usr/lib"));
  CHECK(fs::exists(libdir + "/libgotrace_encode.so"));
  for (const char* f : {"usr/bin/gotrace", "usr/bin/tracewrap", "usr/share/man/man1/gotrace.1",
                        "usr/share/man/man1/tracewrap.1"}) {
    INFO(f);
    CHECK(fs::exists(root + "/" + f));
  }
  // The annotation header ships exactly when the source tree has it (and no empty directory
  // when it does not).
  const bool has_header =
      fs::exists(std::string(GOTRACE_SOURCE_DIR) + "/preload/include/gotrace/annotate.h");
  CHECK(fs::exists(root + "/usr/include/gotrace/annotate.h") == has_header);
  CHECK(fs::exists(root + "/usr/include") == has_header);
  // Man pages are the commands' --help text.
  CHECK_THAT(Slurp(root + "/usr/share/man/man1/gotrace.1"),
             Catch::StartsWith(".TH GOTRACE 1") && Catch::Contains("gotrace encode"));
  CHECK_THAT(Slurp(root + "/usr/share/man/man1/tracewrap.1"),
             Catch::StartsWith(".TH TRACEWRAP 1") && Catch::Contains("--output"));

  // The extracted tracewrap finds the extracted library (its installed-layout
  // lookup, relative to itself), and the extracted gotrace runs.
  TraceSleepersWith(root + "/usr/bin/tracewrap", "", dir);
  const ProcResult h = RunProcess({root + "/usr/bin/gotrace", "--help"});
  CHECK(h.Exited(0));
}

}  // namespace
}  // namespace gotrace::testing
