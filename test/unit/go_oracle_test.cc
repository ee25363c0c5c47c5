// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/go_oracle_test.cc - self-tests of the Go trace oracle ---===//
//
// Runs the oracle (test/support/go_oracle.h) on the known-good 321-byte trace
// of GO_TRACE_FORMAT.md §3.1 and on broken variants of it, so a harness that
// always says "fine" (or always says "broken") fails here first. The variants
// come from a tiny encoder after the doc's Appendix A, checked byte for byte
// against the §3.1 hex listing.
//===----------------------------------------------------------------------===//
#include "test/support/go_oracle.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

using gotrace::testing::GoEvent;
using gotrace::testing::ParsedTrace;

// GO_TRACE_FORMAT.md §3.1, "Exact bytes (321 bytes)", copied verbatim (comments dropped).
constexpr std::string_view kGoodTraceListing = R"(
0000: 67 6f 20 31 2e 31 39 20 74 72 61 63 65 00 00 00
0010: 41 00 e8 07
0014: 25 01 09 6d 61 69 6e 2e 6d 61 69 6e
0020: 25 02 10 2f 73 72 63 2f 61 70 70 2f 6d 61 69 6e 2e 63 63
0033: 25 03 0b 6d 61 69 6e 2e 77 6f 72 6b 65 72
0041: 25 04 12 73 79 6e 63 2e 28 2a 4d 75 74 65 78 29 2e 4c 6f 63 6b
0056: 25 05 12 2f 73 72 63 2f 73 79 6e 63 2f 6d 75 74 65 78 2e 63 63
006b: 25 06 14 73 79 6e 63 2e 28 2a 4d 75 74 65 78 29 2e 55 6e 6c 6f 63 6b
0082: 25 07 0c 73 79 73 63 61 6c 6c 2e 72 65 61 64
0091: 25 08 0e 2f 73 72 63 2f 73 79 73 2f 69 6f 2e 63 63
00a2: 84 00 01 00
00a6: cd 04 00 01 01 00
00ac: 45 0a 07
00af: 8e 0a 01 01
00b3: cd 04 0a 02 02 03
00b9: 59 0a 04
00bc: 8e 0a 02 01
00c0: d5 04 32 01 02 05
00c6: 5c 0a 06
00c9: 1e 0a
00cb: 8e 0a 01 03
00cf: 0f 0a
00d1: dd 05 3c 02 02 a6 09
00d8: 8e 0a 02 03
00dc: 0f 0a
00de: 06 0a
00e0: 02 80 94 eb dc 03
00e6: 41 00 cf 09
00ea: c3 09 01 01 80 a0 80 02 01 02 0a
00f5: c3 09 02 01 80 c0 80 02 03 02 1e
0100: c3 09 03 01 90 a0 80 02 01 02 0c
010b: c3 10 04 02 80 e0 80 02 04 05 32 a0 a0 80 02 01 02 0e
011d: c3 10 05 02 80 e2 80 02 06 05 46 90 c0 80 02 03 02 21
012f: c3 10 06 02 80 80 81 02 07 08 05 a0 c0 80 02 03 02 23
)";

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decodes "OFFSET: b0 b1 ..." lines, checking each offset against the bytes so far. Returns ""
// if the listing is malformed.
std::string DecodeListing(std::string_view listing) {
  std::string bytes;
  while (!listing.empty()) {
    const size_t nl = listing.find('\n');
    std::string_view line = listing.substr(0, nl);
    listing.remove_prefix(nl == std::string_view::npos ? listing.size() : nl + 1);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return "";
    size_t offset = 0;
    for (char c : line.substr(0, colon)) {
      if (HexDigit(c) < 0) return "";
      offset = offset * 16 + static_cast<size_t>(HexDigit(c));
    }
    if (offset != bytes.size()) return "";
    line.remove_prefix(colon + 1);
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == ' ') continue;
      if (i + 1 >= line.size() || HexDigit(line[i]) < 0 || HexDigit(line[i + 1]) < 0) return "";
      bytes.push_back(static_cast<char>(HexDigit(line[i]) * 16 + HexDigit(line[i + 1])));
      ++i;
    }
  }
  return bytes;
}

// ---- a tiny "go 1.19 trace" encoder (GO_TRACE_FORMAT.md Appendix A) ---------------------------

std::string Uv(uint64_t v) {  // unsigned LEB128
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

std::string Record(uint8_t type, const std::vector<uint64_t>& args, bool force_len = false) {
  std::string payload;
  for (uint64_t a : args) payload += Uv(a);
  if (args.size() <= 3 && !force_len) {
    return static_cast<char>(type | ((args.size() - 1) << 6)) + payload;
  }
  return static_cast<char>(type | 0xc0) + Uv(payload.size()) + payload;
}

std::string String(uint64_t id, std::string_view s) {
  return static_cast<char>(37) + Uv(id) + Uv(s.size()) + std::string(s);
}

struct Frame {
  uint64_t pc, fn, file, line;
};

std::string Stack(uint64_t id, const std::vector<Frame>& frames) {
  std::vector<uint64_t> args = {id, frames.size()};
  for (const Frame& f : frames) args.insert(args.end(), {f.pc, f.fn, f.file, f.line});
  return Record(3, args, /*force_len=*/true);
}

enum : uint8_t {
  kBatch = 1,
  kFrequency = 2,
  kGomaxprocs = 4,
  kProcStart = 5,
  kProcStop = 6,
  kGoCreate = 13,
  kGoStart = 14,
  kGoEnd = 15,
  kGoUnblock = 21,
  kGoBlockSync = 25,
  kGoSysCall = 28,
  kGoSysExit = 29,
  kGoSysBlock = 30,
  kUserTaskCreate = 45,
  kUserLog = 48,
};

// One EvBatch: absolute times in, deltas out.
class Batch {
 public:
  Batch(std::string* out, uint64_t p, uint64_t base) : out_(out), last_(base) {
    *out_ += Record(kBatch, {p, base});
  }
  // Appends a timed event; the record gets the long form when it has 4 or more arguments.
  Batch& Ev(uint8_t type, uint64_t ts, std::vector<uint64_t> args) {
    REQUIRE(ts >= last_);
    args.insert(args.begin(), ts - last_);
    last_ = ts;
    *out_ += Record(type, args);
    return *this;
  }
  // UserLog: the message string follows the length-prefixed part.
  Batch& Log(uint64_t ts, uint64_t task, uint64_t key, uint64_t stk, std::string_view msg) {
    REQUIRE(ts >= last_);
    *out_ += Record(kUserLog, {ts - last_, task, key, stk}, /*force_len=*/true) + Uv(msg.size()) +
             std::string(msg);
    last_ = ts;
    return *this;
  }

 private:
  std::string* out_;
  uint64_t last_;
};

struct Variant {
  std::string_view version = "19";  // the header's minor version
  bool end_g2 = true;               // g2's final GoEnd and the ProcStop (0x00dc..0x00df)
  bool gomaxprocs = true;           // the Gomaxprocs at 0x00a2
  bool user_log = false;            // a task and a two-line log message while g1 runs
};

// The §3.1 program: one P, g1 creates g2, blocks on a mutex, g2 unblocks it, g2 blocks in read().
std::string BuildTrace(const Variant& v) {
  std::string out = "go 1." + std::string(v.version) + " trace" + std::string(3, '\0');
  Batch b(&out, 0, 1000);
  const char* strings[] = {"main.main",          "/src/app/main.cc",   "main.worker",
                           "sync.(*Mutex).Lock", "/src/sync/mutex.cc", "sync.(*Mutex).Unlock",
                           "syscall.read",       "/src/sys/io.cc"};
  for (uint64_t i = 0; i < 8; ++i) out += String(i + 1, strings[i]);
  if (v.user_log) out += String(9, "mytask") + String(10, "mykey");
  if (v.gomaxprocs) b.Ev(kGomaxprocs, 1000, {1, 0});
  b.Ev(kGoCreate, 1000, {1, 1, 0});
  b.Ev(kProcStart, 1010, {7});
  b.Ev(kGoStart, 1020, {1, 1});
  if (v.user_log) {
    b.Ev(kUserTaskCreate, 1022, {1, 0, 9, 3});
    b.Log(1024, 1, 10, 3, "hello world x=5\nsecond=line");
  }
  b.Ev(kGoCreate, 1030, {2, 2, 3});
  b.Ev(kGoBlockSync, 1040, {4});
  b.Ev(kGoStart, 1050, {2, 1});
  b.Ev(kGoUnblock, 1100, {1, 2, 5});
  b.Ev(kGoSysCall, 1110, {6});
  b.Ev(kGoSysBlock, 1120, {});
  b.Ev(kGoStart, 1130, {1, 3});
  b.Ev(kGoEnd, 1140, {});
  b.Ev(kGoSysExit, 1200, {2, 2, 1190});
  b.Ev(kGoStart, 1210, {2, 3});
  if (v.end_g2) {
    b.Ev(kGoEnd, 1220, {});
    b.Ev(kProcStop, 1230, {});
  }
  out += Record(kFrequency, {1000000000});
  out += Record(kBatch, {0, 1231});  // the stack batch
  out += Stack(1, {{0x401000, 1, 2, 10}});
  out += Stack(2, {{0x402000, 3, 2, 30}});
  out += Stack(3, {{0x401010, 1, 2, 12}});
  out += Stack(4, {{0x403000, 4, 5, 50}, {0x401020, 1, 2, 14}});
  out += Stack(5, {{0x403100, 6, 5, 70}, {0x402010, 3, 2, 33}});
  out += Stack(6, {{0x404000, 7, 8, 5}, {0x402020, 3, 2, 35}});
  return out;
}

// A trace written to a unique temporary file, removed at scope exit.
class TraceFile {
 public:
  explicit TraceFile(std::string_view bytes) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") +
            "/gotrace-oracle-test-XXXXXX";
    const int fd = mkstemp(path_.data());
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    REQUIRE(close(fd) == 0);
  }
  ~TraceFile() { unlink(path_.c_str()); }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Sets or unsets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

TEST_CASE("the in-test encoder reproduces the 321-byte trace of GO_TRACE_FORMAT.md 3.1",
          "[oracle]") {
  const std::string listing = DecodeListing(kGoodTraceListing);
  REQUIRE(listing.size() == 321);
  REQUIRE(BuildTrace(Variant{}) == listing);
  // The variants differ only where intended.
  const std::string running = BuildTrace(Variant{.end_g2 = false});
  CHECK(running == listing.substr(0, 0xdc) + listing.substr(0xe0));
  const std::string no_gomaxprocs = BuildTrace(Variant{.gomaxprocs = false});
  CHECK(no_gomaxprocs == listing.substr(0, 0xa2) + listing.substr(0xa6));
}

TEST_CASE("go tool trace -d parses the known-good trace", "[oracle]") {
  const TraceFile file(DecodeListing(kGoodTraceListing));
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  REQUIRE(parsed.error.empty());
  REQUIRE(parsed.events.size() == 16);

  const std::vector<std::string> names = {"Gomaxprocs", "GoCreate",    "ProcStart", "GoStart",
                                          "GoCreate",   "GoBlockSync", "GoStart",   "GoUnblock",
                                          "GoSysCall",  "GoSysBlock",  "GoStart",   "GoEnd",
                                          "GoSysExit",  "GoStart",     "GoEnd",     "ProcStop"};
  const std::vector<int64_t> times = {0,   0,   10,  20,  30,  40,  50,  100,
                                      110, 120, 130, 140, 190, 210, 220, 230};
  for (size_t i = 0; i < names.size(); ++i) {
    INFO("event " << i << ": " << parsed.events[i].text);
    CHECK(parsed.events[i].name == names[i]);
    CHECK(parsed.events[i].ts == times[i]);
  }

  const GoEvent& gomaxprocs = parsed.events[0];
  CHECK(gomaxprocs.off == 162);
  CHECK(gomaxprocs.args == std::map<std::string, uint64_t>{{"procs", 1}});

  // GoSysExit is re-timed to its real time (1190 -> 190) and moved to SyscallP.
  const auto exits = parsed.Find("GoSysExit");
  REQUIRE(exits.size() == 1);
  CHECK(exits[0]->ts == 190);
  CHECK(exits[0]->p == 1000003);
  CHECK(exits[0]->g == 2);
  CHECK(exits[0]->off == 209);
  CHECK(exits[0]->args == std::map<std::string, uint64_t>{{"g", 2}, {"seq", 2}, {"ts", 1190}});

  const auto unblocks = parsed.Find("GoUnblock");
  REQUIRE(unblocks.size() == 1);
  CHECK(unblocks[0]->p == 0);
  CHECK(unblocks[0]->g == 2);  // attributed to the waker
  CHECK(unblocks[0]->args.at("g") == 1);
  CHECK(unblocks[0]->args.at("seq") == 2);

  const auto creates = parsed.Find("GoCreate");
  REQUIRE(creates.size() == 2);
  CHECK(creates[0]->g == 0);
  CHECK(creates[1]->g == 1);
  CHECK(creates[1]->args == std::map<std::string, uint64_t>{{"g", 2}, {"stack", 2}});

  CHECK(parsed.Count("GoStart") == 4);
  CHECK(parsed.Count("GoEnd") == 2);
  CHECK(parsed.Count("GoBlockSend") == 0);
  CHECK(parsed.events.back().text == "230 ProcStop p=0 g=0 off=222");
}

TEST_CASE("the web UI serves every page for the known-good trace", "[oracle]") {
  const TraceFile file(DecodeListing(kGoodTraceListing));
  CHECK(gotrace::testing::WebCheck(file.path()) == "");
  CHECK(gotrace::testing::ValidateTrace(file.path()) == "");
}

TEST_CASE("pprof profiles of the known-good trace carry the symbolized stacks", "[oracle]") {
  const TraceFile file(DecodeListing(kGoodTraceListing));

  const auto sync = gotrace::testing::Pprof(file.path(), "sync");
  INFO(sync.error);
  REQUIRE(sync.ok);
  CHECK(Contains(sync.traces, "sync.(*Mutex).Lock"));
  CHECK(Contains(sync.traces, "main.main"));
  CHECK(Contains(sync.raw, "/src/sync/mutex.cc:50"));
  CHECK(Contains(sync.raw, "/src/app/main.cc:14"));
  CHECK_FALSE(Contains(sync.raw, "syscall.read"));

  const auto syscall = gotrace::testing::Pprof(file.path(), "syscall");
  INFO(syscall.error);
  REQUIRE(syscall.ok);
  CHECK(Contains(syscall.traces, "syscall.read"));
  CHECK(Contains(syscall.raw, "/src/sys/io.cc:5"));

  const auto sched = gotrace::testing::Pprof(file.path(), "sched");
  REQUIRE(sched.ok);
  CHECK(Contains(sched.raw, "sync.(*Mutex).Unlock"));

  // No GoBlockNet: an empty but valid profile ("io" is an alias of "net").
  const auto io = gotrace::testing::Pprof(file.path(), "io");
  INFO(io.error);
  REQUIRE(io.ok);
  CHECK_FALSE(Contains(io.raw, "sync.(*Mutex)"));

  const auto bogus = gotrace::testing::Pprof(file.path(), "bogus");
  CHECK_FALSE(bogus.ok);
  CHECK(Contains(bogus.error, "unknown pprof type bogus"));
}

TEST_CASE("a goroutine left running parses but crashes the web UI at startup", "[oracle]") {
  // GO_TRACE_FORMAT.md §2.11 / §3.3 test 23: g2 never ends, the P never stops.
  const TraceFile file(BuildTrace(Variant{.end_g2 = false}));
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.events.size() == 14);
  CHECK(parsed.events.back().name == "GoStart");

  const std::string web = gotrace::testing::WebCheck(file.path());
  INFO(web);
  CHECK(Contains(web, "before listening"));
  CHECK(Contains(web, "nil pointer dereference"));
  CHECK(Contains(web, "makeSlice"));
  CHECK(Contains(gotrace::testing::ValidateTrace(file.path()), "before listening"));
}

TEST_CASE("a trace without Gomaxprocs fails on /mmuPlot only", "[oracle]") {
  // §3.3 tests 22/35: the handler panics, net/http closes the connection without a response.
  const TraceFile file(BuildTrace(Variant{.gomaxprocs = false}));
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.events.size() == 15);

  const std::string web = gotrace::testing::WebCheck(file.path());
  INFO(web);
  CHECK(web.starts_with("WebCheck: GET /mmuPlot: connection closed without a response"));
  CHECK(Contains(web, "http: panic serving"));
  CHECK(Contains(web, "main.httpMMUPlot"));
}

TEST_CASE("a go 1.20 header is rejected by the 1.19 parser", "[oracle]") {
  const TraceFile file(BuildTrace(Variant{.version = "20"}));
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
  CHECK_FALSE(parsed.ok);
  CHECK(parsed.events.empty());
  CHECK(parsed.error ==
        "failed to parse trace: unsupported trace file version 1.20 (update Go toolchain) 1020");

  const std::string web = gotrace::testing::WebCheck(file.path());
  INFO(web);
  CHECK(Contains(web, "exited (exit status 1) before listening"));
  CHECK(Contains(web, "unsupported trace file version 1.20"));
  CHECK(Contains(gotrace::testing::ValidateTrace(file.path()), "unsupported trace file version"));
}

TEST_CASE("truncated traces are rejected", "[oracle]") {
  const std::string good = DecodeListing(kGoodTraceListing);
  {
    // Cut inside the GoCreate at 0xb3 (§3.3 test 66).
    const TraceFile file(good.substr(0, 180));
    const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
    CHECK_FALSE(parsed.ok);
    CHECK(Contains(parsed.error, "failed to read trace at offset 180: read 0, error EOF"));
    CHECK_FALSE(gotrace::testing::ValidateTrace(file.path()).empty());
  }
  {
    const TraceFile file(good.substr(0, 15));
    const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
    CHECK_FALSE(parsed.ok);
    CHECK(Contains(parsed.error, "failed to read header: read 15"));
  }
  {
    // Everything but the Frequency record and the stack batch.
    const TraceFile file(good.substr(0, 0xe0));
    const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
    CHECK_FALSE(parsed.ok);
    CHECK(parsed.error == "failed to parse trace: no EvFrequency event");
  }
}

TEST_CASE("string arguments in -d output do not confuse the line parser", "[oracle]") {
  // UserLog prints "category=mykey message=<text>", and <text> may hold spaces, '=' and newlines.
  const TraceFile file(BuildTrace(Variant{.user_log = true}));
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
  INFO(parsed.error);
  REQUIRE(parsed.ok);
  CHECK(parsed.events.size() == 18);

  const auto logs = parsed.Find("UserLog");
  REQUIRE(logs.size() == 1);
  CHECK(logs[0]->g == 1);
  CHECK(logs[0]->args == std::map<std::string, uint64_t>{{"id", 1}, {"keyid", 10}});
  CHECK(Contains(logs[0]->text, "category=mykey message=hello world x=5\nsecond=line"));

  const auto tasks = parsed.Find("UserTaskCreate");
  REQUIRE(tasks.size() == 1);
  CHECK(tasks[0]->args ==
        std::map<std::string, uint64_t>{{"taskid", 1}, {"pid", 0}, {"typeid", 9}});
  CHECK(Contains(tasks[0]->text, "name=mytask"));
  // The events after the two-line message are still there.
  CHECK(parsed.Count("GoStart") == 4);
  CHECK(parsed.events.back().name == "ProcStop");
}

TEST_CASE("the oracle reports tools and files that are not there", "[oracle]") {
  {
    const ScopedEnv unset("GOTRACE_GO", nullptr);
    CHECK(gotrace::testing::GoBinary() == GOTRACE_GO_BINARY);
  }
  const TraceFile file(DecodeListing(kGoodTraceListing));
  {
    const ScopedEnv go("GOTRACE_GO", "/nonexistent/go");
    CHECK(gotrace::testing::GoBinary() == "/nonexistent/go");
    const ParsedTrace parsed = gotrace::testing::ParseWithGo(file.path());
    CHECK_FALSE(parsed.ok);
    CHECK(Contains(parsed.error, "cannot run /nonexistent/go"));
    CHECK(Contains(gotrace::testing::WebCheck(file.path()), "cannot run /nonexistent/go"));
    const auto prof = gotrace::testing::Pprof(file.path(), "sync");
    CHECK_FALSE(prof.ok);
    CHECK(Contains(prof.error, "cannot run /nonexistent/go"));
  }
  const std::string missing = file.path() + ".does-not-exist";
  const ParsedTrace parsed = gotrace::testing::ParseWithGo(missing);
  CHECK_FALSE(parsed.ok);
  CHECK(Contains(parsed.error, "no such file or directory"));
  CHECK(Contains(gotrace::testing::WebCheck(missing), "before listening"));
}
