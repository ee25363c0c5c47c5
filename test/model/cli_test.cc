// SPDX-License-Identifier: Apache-2.0
//===-- test/model/cli_test.cc - `gotrace encode` on good and bad input ---===//
//
// Bad input must give one clear line on stderr and a non-zero exit status,
// never a crash, and must never leave a trace file behind.
//===----------------------------------------------------------------------===//
#include <sys/stat.h>

#include <fstream>
#include <random>

#include "test/model/model_util.h"
#include "test/support/subprocess.h"

namespace gotrace::testing {
namespace {

const std::string kGotrace = std::string(GOTRACE_BUILD_DIR) + "/gotrace";

std::vector<uint8_t> ReadFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
void WriteFile(const std::string& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string MakeLog(const TempDir& dir) {
  LogBuilder b;
  b.set_chunk_bytes(200);
  DefineStandardStacks(b);
  auto& t = b.Thread(100).Start(1000, 0, 0, 0x1000, log::kThreadExisted | log::kThreadMain);
  for (int i = 0; i < 30; ++i) t.Wait(2000 + i * 100'000, i % 2, WaitKind::kSleep, 0, 50'000, 0, kStkSleep);
  b.TraceEnd(4'000'000);
  const std::string p = dir.File("app.gtlog");
  b.Write(p);
  return p;
}

// One line, prefixed "gotrace: ", non-zero exit, no signal, no output file.
void ExpectCleanFailure(const ProcResult& r, const std::string& out, const std::string& needle) {
  INFO("status: " << r.Describe() << "\nstderr: " << r.err);
  CHECK(r.term_signal == 0);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code != 0);
  CHECK(r.err.rfind("gotrace: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains(needle));
  CHECK_FALSE(Exists(out));
}

// A crashed process's recovery runs `gotrace recover --remove-logs`: the
// log goes with the trace written, even if the process that asked was
// killed meanwhile; a failed encode keeps it.
TEST_CASE("gotrace recover --remove-logs removes the log once the trace is written", "[cli]") {
  TempDir dir;
  const std::string log = MakeLog(dir);
  const std::string out = dir.File("app.trace");
  ProcResult r = RunProcess({kGotrace, "recover", "--remove-logs", log, "-o", out});
  INFO(r.Describe() << " " << r.err);
  REQUIRE(r.Exited(0));
  CHECK(access(out.c_str(), F_OK) == 0);
  CHECK(access(log.c_str(), F_OK) != 0);
  // The output's directory is missing: nothing written, the log stays.
  const std::string again = MakeLog(dir);
  r = RunProcess({kGotrace, "recover", "--remove-logs", again, "-o", dir.File("no/such.trace")});
  CHECK_FALSE(r.Exited(0));
  CHECK(access(again.c_str(), F_OK) == 0);
}

TEST_CASE("gotrace encode writes a valid trace and says so in one line", "[cli]") {
  TempDir dir;
  const std::string log = MakeLog(dir);
  const std::string out = dir.File("app.trace");
  ProcResult r = RunProcess({kGotrace, "encode", log, "-o", out, "--check"});
  INFO(r.Describe() << " " << r.err);
  REQUIRE(r.Exited(0));
  CHECK_THAT(r.err, Catch::StartsWith("gotrace: wrote " + out));
  CHECK_THAT(r.err, Catch::Contains("(1 thread, "));
  struct stat st;
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  ParsedTrace t = ParseWithGo(out);
  INFO(t.error);
  REQUIRE(t.ok);
  CHECK(t.Count("GoSleep") == 30);

  // Never overwrites unless asked.
  ProcResult again = RunProcess({kGotrace, "encode", log, "-o", out});
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("already exists"));
  ProcResult forced = RunProcess({kGotrace, "encode", log, "-o", out, "-f", "-q"});
  CHECK(forced.Exited(0));
  CHECK(forced.err.empty());
}

TEST_CASE("gotrace encode rejects bad logs with one clear line", "[cli]") {
  TempDir dir;
  const std::string good = MakeLog(dir);
  const std::vector<uint8_t> bytes = ReadFile(good);
  const std::string out = dir.File("bad.trace");
  const std::string bad = dir.File("bad.gtlog");

  SECTION("empty") {
    WriteFile(bad, {});
    ExpectCleanFailure(RunProcess({kGotrace, "encode", bad, "-o", out}), out, "empty file");
  }
  SECTION("header only") {
    WriteFile(bad, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 64));
    ExpectCleanFailure(RunProcess({kGotrace, "encode", bad, "-o", out}), out, "contains no events");
  }
  SECTION("not a log") {
    WriteFile(bad, std::vector<uint8_t>(bytes.size(), 'z'));
    ExpectCleanFailure(RunProcess({kGotrace, "encode", bad, "-o", out}), out,
                       "not a gotrace event log");
  }
  SECTION("missing") {
    ExpectCleanFailure(RunProcess({kGotrace, "encode", dir.File("nope"), "-o", out}), out,
                       "cannot open");
  }
  SECTION("truncated at many points") {
    for (size_t cut = 64 + 7; cut < bytes.size(); cut += 97) {
      WriteFile(bad, std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut));
      INFO("cut at " << cut);
      ProcResult r = RunProcess({kGotrace, "encode", bad, "-o", out});
      ExpectCleanFailure(r, out, bad);
    }
  }
  SECTION("corrupted bytes") {
    std::mt19937 rng(11);
    int failures = 0;
    for (int i = 0; i < 20; ++i) {
      std::vector<uint8_t> b = bytes;
      const size_t at = 64 + rng() % (bytes.size() - 64);
      b[at] ^= static_cast<uint8_t>(1 + rng() % 255);
      WriteFile(bad, b);
      ProcResult r = RunProcess({kGotrace, "encode", bad, "-o", out, "-f", "-q"});
      INFO("byte " << at << ": " << r.Describe() << " " << r.err);
      CHECK(r.term_signal == 0);
      if (r.exit_code != 0) {
        ++failures;
        CHECK_THAT(r.err, Catch::Contains("corrupted") || Catch::Contains("bad chunk magic") ||
                              Catch::Contains("truncated") || Catch::Contains("chunk too large") ||
                              Catch::Contains("incomplete log"));
        CHECK_FALSE(Exists(out));
      } else {
        ::unlink(out.c_str());  // the flip landed in padding
      }
      // --lenient always produces something Go accepts (or says why not).
      ProcResult l = RunProcess({kGotrace, "encode", "--lenient", bad, "-o", out, "-f", "-q"});
      CHECK(l.term_signal == 0);
      if (l.exit_code == 0) {
        ParsedTrace t = ParseWithGo(out);
        INFO(t.error);
        CHECK(t.ok);
        ::unlink(out.c_str());
      }
    }
    CHECK(failures >= 15);
  }
  SECTION("usage errors") {
    ProcResult r = RunProcess({kGotrace, "encode", good});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("-o OUT"));
    ProcResult u = RunProcess({kGotrace, "frobnicate"});
    CHECK(u.exit_code == 2);
    CHECK_THAT(u.err, Catch::Contains("unknown command"));
  }
}

TEST_CASE("gotrace dump prints every record", "[cli]") {
  TempDir dir;
  const std::string log = MakeLog(dir);
  ProcResult r = RunProcess({kGotrace, "dump", log});
  REQUIRE(r.Exited(0));
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') > 30);
  CHECK_THAT(r.out, Catch::Contains("Wait kind=sleep"));
  CHECK_THAT(r.out, Catch::Contains("TraceEnd"));
}

}  // namespace
}  // namespace gotrace::testing
