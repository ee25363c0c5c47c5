// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/quiet_journal_test.cc - the journal of quiet processes --===//
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "encoder/log_format.h"
#include "encoder/quiet_journal.h"

namespace gotrace::log {
namespace {

std::vector<uint8_t> Entry(const QuietHeader& h, const std::vector<QuietChild>& kids, const char* exe,
                           std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<uint8_t> buf(kQuietMaxBytes);
  const size_t n = BuildQuietEntry(buf.data(), buf.size(), h, kids.data(), exe, argv.data(), args.size());
  buf.resize(n);
  return buf;
}

TEST_CASE("quiet journal: entries round-trip, appended one after another", "[journal]") {
  QuietHeader a{};
  a.pid = 4242;
  a.ppid = 4241;
  a.image = 1;
  a.flags = kQuietDescendant;
  a.start_ns = 1'000;
  a.end_ns = 2'500'000;
  a.exit_status = 3 << 8;
  a.records = 17;
  a.nchild = 2;
  QuietHeader b{};
  b.pid = 4300;
  b.flags = kQuietDescendant | kQuietForked;
  b.exit_status = kExitExec;
  std::vector<uint8_t> journal = Entry(a, {{11, 0, 2'000'000}, {12, 9, 2'400'000}}, "/usr/bin/grep", {"grep", "-c", "", "beta x"});
  const std::vector<uint8_t> second = Entry(b, {}, nullptr, {});
  REQUIRE(journal.size() % 8 == 0);
  REQUIRE(second.size() == sizeof(QuietHeader));
  journal.insert(journal.end(), second.begin(), second.end());

  std::vector<QuietEntry> out;
  REQUIRE(ParseQuietJournal(journal.data(), journal.size(), &out));
  REQUIRE(out.size() == 2);
  CHECK(out[0].h.pid == 4242);
  CHECK(out[0].h.ppid == 4241);
  CHECK(out[0].h.image == 1);
  CHECK(out[0].h.start_ns == 1'000);
  CHECK(out[0].h.end_ns == 2'500'000);
  CHECK(out[0].h.exit_status == (3 << 8));
  CHECK(out[0].h.records == 17);
  CHECK(out[0].exe == "/usr/bin/grep");
  CHECK(out[0].argv == std::vector<std::string>{"grep", "-c", "", "beta x"});
  REQUIRE(out[0].children.size() == 2);
  CHECK(out[0].children[1].pid == 12);
  CHECK(out[0].children[1].status == 9);
  CHECK(out[0].children[1].end_ns == 2'400'000);
  CHECK(out[1].h.pid == 4300);
  CHECK(out[1].h.flags == (kQuietDescendant | kQuietForked));
  CHECK(out[1].h.exit_status == kExitExec);
  CHECK(out[1].argv.empty());
  CHECK(out[1].exe.empty());
}

TEST_CASE("quiet journal: a long command line is cut to one entry's size", "[journal]") {
  QuietHeader h{};
  h.pid = 7;
  std::vector<std::string> args;
  for (int i = 0; i < 100; ++i) args.push_back(std::string(100, static_cast<char>('a' + i % 26)));
  const std::vector<uint8_t> e = Entry(h, {}, "/bin/x", args);
  CHECK(e.size() <= kQuietMaxBytes);
  std::vector<QuietEntry> out;
  REQUIRE(ParseQuietJournal(e.data(), e.size(), &out));
  REQUIRE(out.size() == 1);
  // Whole arguments first, then as much of the last as fits.
  REQUIRE(out[0].argv.size() >= 30);
  CHECK(out[0].argv[0] == args[0]);
  CHECK(out[0].argv.size() < args.size());
  CHECK(out[0].argv.back().size() <= 100);
}

TEST_CASE("quiet journal: damage stops the reading, the entries before it are kept", "[journal]") {
  QuietHeader h{};
  h.pid = 1;
  std::vector<uint8_t> j = Entry(h, {}, "/bin/true", {"true"});
  const size_t first = j.size();
  h.pid = 2;
  const std::vector<uint8_t> e2 = Entry(h, {}, "/bin/true", {"true"});
  j.insert(j.end(), e2.begin(), e2.end());
  std::vector<QuietEntry> out;
  SECTION("a torn last entry (a process died in its write)") {
    j.resize(j.size() - 5);
    CHECK_FALSE(ParseQuietJournal(j.data(), j.size(), &out));
  }
  SECTION("a bad magic") {
    j[first] ^= 0xff;
    CHECK_FALSE(ParseQuietJournal(j.data(), j.size(), &out));
  }
  SECTION("a size beyond the file") {
    QuietHeader bad;
    std::memcpy(&bad, j.data() + first, sizeof bad);
    bad.size = 1 << 20;
    std::memcpy(j.data() + first, &bad, sizeof bad);
    CHECK_FALSE(ParseQuietJournal(j.data(), j.size(), &out));
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].h.pid == 1);
  out.clear();
  CHECK(ParseQuietJournal(nullptr, 0, &out));
  CHECK(out.empty());
}

TEST_CASE(
    "learn keys: a command is its directory, executable and arguments after argv[0], a program its "
    "path",
    "[journal]") {
  char a0[] = "sed", a0b[] = "/usr/bin/sed", a1[] = "-n", a2[] = "1p", a2b[] = "2p", a3[] = "1p2p";
  char* sed1[] = {a0, a1, a2, nullptr};
  char* sed1_by_path[] = {a0b, a1, a2, nullptr};
  char* sed2[] = {a0, a1, a2b, nullptr};
  char* joined[] = {a0, a1, a3, nullptr};
  char* two[] = {a0, a2, a2b, nullptr};
  const uint64_t k = LearnKey("/w", "/usr/bin/sed", sed1);
  CHECK((k & 3) == 0);
  CHECK(k != 0);
  CHECK(LearnKey("/w", "/usr/bin/sed", sed1_by_path) == k);  // argv[0] is not the command
  CHECK(LearnKey("/w", "/usr/bin/sed", sed2) != k);
  CHECK(LearnKey("/v", "/usr/bin/sed", sed1) != k);
  CHECK(LearnKey("/w", "/bin/sed", sed1) != k);
  CHECK(LearnKey("/w", "/usr/bin/sed", two) != LearnKey("/w", "/usr/bin/sed", joined));  // "1p" "2p" vs "1p2p"
  CHECK(kLearnBytes == (kLearnSlots + kLearnProbe) * 8 + kLearnPids * sizeof(LearnPid));
  // A program's key: its path alone, apart from any command's, with four
  // bits for its state.
  const uint64_t p = ProgramKey("/usr/bin/sed");
  CHECK((p & kProgramStateMask) == 0);
  CHECK(p != 0);
  CHECK(ProgramKey("/bin/sed") != p);
  CHECK(ProgramKey("/bin/sh") == 0);  // not a leaf: learned by its commands only
  // A build's assembler is a leaf, learned as a program (gcc runs it once
  // per object, with a new temporary file each time); the linker is not (an
  // LTO link runs gcc).
  CHECK(ProgramKey("/usr/bin/as") != 0);
  CHECK(ProgramKey("/usr/bin/ld") == 0);
  CHECK(ProgramKey("/usr/bin/collect2") == 0);
  CHECK(p != (LearnKey("", "/usr/bin/sed", nullptr) & ~kProgramStateMask));
  CHECK(kProgramLearnAt < kProgramQuiet);
  CHECK(kProgramQuiet < kProgramTrace);
  CHECK(kProgramTrace == kProgramStateMask);
}

}  // namespace
}  // namespace gotrace::log
