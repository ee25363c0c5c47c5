// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/encoder_test.cc - varints, records, strings, stacks -----===//
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <random>

#include "encoder/crc32c.h"
#include "encoder/go_trace_writer.h"
#include "encoder/log_reader.h"
#include "encoder/log_writer.h"
#include "encoder/printable.h"
#include "encoder/shell_word.h"
#include "encoder/stack_table.h"
#include "encoder/switch_value.h"
#include "encoder/trace_checker.h"
#include "encoder/varint.h"
#include "test/support/log_builder.h"

namespace gotrace {
namespace {

using testing::LogBuilder;
using testing::TempDir;
using log::Tick;
using log::WaitKind;

std::vector<uint8_t> Bytes(std::initializer_list<int> v) {
  std::vector<uint8_t> out;
  for (int b : v) out.push_back(static_cast<uint8_t>(b));
  return out;
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void WriteAll(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST_CASE("varints round-trip at every width", "[encoder][varint]") {
  std::vector<uint64_t> values = {0, 1, 127, 128, 255, 300, 16383, 16384, 1ull << 32,
                                  (1ull << 63) - 1, 1ull << 63, ~0ull};
  for (int shift = 0; shift < 64; ++shift) {
    values.push_back(1ull << shift);
    values.push_back((1ull << shift) - 1);
  }
  for (uint64_t v : values) {
    uint8_t buf[kMaxVarintBytes];
    uint8_t* end = PutUvarint(buf, v);
    CHECK(static_cast<size_t>(end - buf) == UvarintSize(v));
    const uint8_t* p = buf;
    uint64_t got = 0;
    REQUIRE(GetUvarint(&p, end, &got));
    CHECK(got == v);
    CHECK(p == end);
    // Any truncation fails.
    for (const uint8_t* cut = buf; cut < end; ++cut) {
      const uint8_t* q = buf;
      CHECK_FALSE(GetUvarint(&q, cut, &got));
    }
  }
  // 300 = ac 02, the LEB128 textbook example; 1e9 as in GO_TRACE_FORMAT.md.
  uint8_t buf[kMaxVarintBytes];
  CHECK(std::vector<uint8_t>(buf, PutUvarint(buf, 300)) == Bytes({0xac, 0x02}));
  CHECK(std::vector<uint8_t>(buf, PutUvarint(buf, 1'000'000'000)) ==
        Bytes({0x80, 0x94, 0xeb, 0xdc, 0x03}));
}

TEST_CASE("malformed varints are rejected", "[encoder][varint]") {
  const auto eleven = Bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01});
  const uint8_t* p = eleven.data();
  uint64_t v;
  CHECK_FALSE(GetUvarint(&p, eleven.data() + eleven.size(), &v));
  const auto overflow = Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
  p = overflow.data();
  CHECK_FALSE(GetUvarint(&p, overflow.data() + overflow.size(), &v));
}

TEST_CASE("zigzag maps signed deltas both ways", "[encoder][varint]") {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{-64}, int64_t{64},
                    INT64_MIN, INT64_MAX}) {
    CHECK(UnZigZag(ZigZag(v)) == v);
  }
  CHECK(ZigZag(-1) == 1);
  CHECK(ZigZag(1) == 2);
}

TEST_CASE("a traced program's text is shown one line each, control characters escaped",
          "[encoder]") {
  CHECK(Printable("python3 -c import os") == "python3 -c import os");
  CHECK(Printable("a\nb\tc") == "a\\nb\\tc");
  CHECK(Printable(std::string("\x1b[31mred\x7f\0", 10)) == "\\x1b[31mred\\x7f\\x00");
  CHECK(Printable("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 as it is
}

TEST_CASE("the launcher's table keeps a long command's program and its paths' names", "[encoder]") {
  CHECK(CompactCommandLine({"make", "-s", "-j2"}, 40) == "make -s -j2");
  CHECK(CompactCommandLine({"node", "/work/proj/node_modules/.bin/jest", "--ci", "--runInBand"},
                           40) == "node .../jest --ci --runInBand");
  CHECK(CompactCommandLine({"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", "-quiet", "-imultiarch",
                            "x86_64-linux-gnu", "unit3.c", "-O2", "-o", "/tmp/ccA1b2C3.s"},
                           40) == "cc1 -quiet -imultiarch x86_64-linux-g...");
  // Short paths and options with a path in them stay as they are; a word
  // that needs quoting is quoted.
  CHECK(CompactCommandLine({"/usr/bin/python3", "-c", "import os; print(os.getcwd())",
                            "--out=/var/tmp/results/run-1234/out.json", "./a.py"},
                           40) == "python3 -c 'import os; print(os.getcw...");
  CHECK(CompactCommandLine({"/bin/sh"}, 5) == "sh");
}

TEST_CASE("JSON strings are valid UTF-8: a byte that is not is \\udcXX, as surrogateescape",
          "[encoder]") {
  CHECK(JsonString("plain") == "\"plain\"");
  CHECK(JsonString("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
  CHECK(JsonString("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") ==
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  CHECK(JsonString("\xff\xfe") == "\"\\udcff\\udcfe\"");
  CHECK(JsonString("caf\xe9!") == "\"caf\\udce9!\"");                // Latin-1
  CHECK(JsonString("\xc3") == "\"\\udcc3\"");                        // cut short
  CHECK(JsonString("\xc0\xaf") == "\"\\udcc0\\udcaf\"");             // overlong
  CHECK(JsonString("\xed\xa0\x80") == "\"\\udced\\udca0\\udc80\"");  // a surrogate
  CHECK(JsonString("</script>&", true) == "\"\\u003c/script\\u003e\\u0026\"");
}

TEST_CASE("a path in the view-with hint is one shell word", "[encoder]") {
  auto word = [](std::string_view s) {
    std::string w;
    ShellWord(s, [&w](std::string_view piece) { w += piece; });
    return w;
  };
  CHECK(word("traces/app.trace") == "traces/app.trace");
  CHECK(word("gotrace.%p-1,2:3@x=y+z") == "gotrace.%p-1,2:3@x=y+z");
  CHECK(word("my trace") == "'my trace'");
  CHECK(word("it's") == "'it'\\''s'");
  CHECK(word("a$b`c") == "'a$b`c'");
  CHECK(word("") == "''");
}

TEST_CASE("CRC-32C matches the standard check value", "[encoder]") {
  const char* s = "123456789";
  CHECK(Crc32c(0, s, 9) == 0xe3069283u);
  // Incremental equals one-shot, and odd lengths take the byte tail.
  std::vector<uint8_t> data(1000);
  std::mt19937 rng(7);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const uint32_t whole = Crc32c(0, data.data(), data.size());
  CHECK(Crc32c(Crc32c(0, data.data(), 333), data.data() + 333, 667) == whole);
}

TEST_CASE("log records round-trip through chunks and cursors", "[encoder][log]") {
  TempDir dir;
  LogBuilder b(4, 5000, 42);
  b.set_chunk_bytes(100);  // many chunks per stream
  b.Stack(7, {0x401234, 0x401000, 0x7f0000001234});
  auto& t = b.Thread(43);
  t.Start(5000, 1, 9, 0x4010, log::kThreadExisted, 0xabc);
  for (int i = 0; i < 200; ++i) {
    t.Wait(6000 + i * 100, i % 4, WaitKind::kFutex, 0x1000 + i, 50, (i + 1) % 4, 7, 0, 202)
        .Release(6060 + i * 100, i % 4, WaitKind::kSem, 0x2000 + i, i % 3, 7)
        .Heap(6070 + i * 100, 3, 1ull << (i % 40));
  }
  t.Create(99'000, 2, 5, 0x5000, 7).End(99'999, 3);
  b.TraceEnd(100'000, 17);
  b.Write(dir.File("l"));

  log::LogSet set;
  const std::vector<std::string> paths{dir.File("l")};
  REQUIRE(set.Open(paths, log::ReadOptions{}).ok());
  REQUIRE(set.streams().size() == 2);
  CHECK(set.files()[0].header.pid == 42);
  CHECK(set.files()[0].header.ncpus == 4);
  const log::Stream& ts = set.streams()[1];
  CHECK(ts.serial == 1);
  CHECK(ts.tid == 43);
  CHECK(ts.chunks.size() > 10);
  CHECK(!ts.seq_gap);
  CHECK(ts.has_thread_start);
  CHECK(ts.start.create_id == 9);
  CHECK(ts.start.self == 0xabc);
  CHECK(ts.first_ts == 5000);

  log::StreamCursor c(set, 1);
  log::Record r;
  REQUIRE(c.Next(&r));
  CHECK(r.type == log::kThreadStart);
  CHECK(r.cpu == 1);
  CHECK(r.start.start_pc == 0x4010);
  for (int i = 0; i < 200; ++i) {
    REQUIRE(c.Next(&r));
    REQUIRE(r.type == log::kWait);
    CHECK(r.ts == static_cast<Tick>(6000 + i * 100));
    CHECK(r.wait.kind == static_cast<uint64_t>(WaitKind::kFutex));
    CHECK(r.wait.obj == static_cast<uint64_t>(0x1000 + i));
    CHECK(r.wait.aux == 202);
    CHECK(r.wait.duration == 50);
    CHECK(r.wait.cpu_end == static_cast<uint64_t>((i + 1) % 4));
    CHECK(r.wait.stack == 7);
    REQUIRE(c.Next(&r));
    REQUIRE(r.type == log::kRelease);
    CHECK(r.release.count == static_cast<uint64_t>(i % 3));
    REQUIRE(c.Next(&r));
    REQUIRE(r.type == log::kHeap);
    CHECK(r.heap.bytes == 1ull << (i % 40));
  }
  REQUIRE(c.Next(&r));
  CHECK(r.type == log::kThreadCreate);
  CHECK(r.create.create_id == 5);
  REQUIRE(c.Next(&r));
  CHECK(r.type == log::kThreadEnd);
  CHECK_FALSE(c.Next(&r));
  CHECK(c.status().ok());

  log::StreamCursor p(set, 0);
  REQUIRE(p.Next(&r));
  log::StackDefFields sd;
  REQUIRE(log::ParseStackDef(r, &sd));
  CHECK(sd.id == 7);
  CHECK(sd.pcs == std::vector<uint64_t>{0x401234, 0x401000, 0x7f0000001234});
  REQUIRE(p.Next(&r));
  log::TraceEndFields te;
  REQUIRE(log::ParseTraceEnd(r, &te));
  CHECK(te.dropped_records == 17);
  CHECK(r.ts == 100'000);
}

// ToNs keeps the segment it found last: the answers must be the
// interpolation's, whatever order the times come in (in time order as a
// replay asks, backwards, at random, at the syncs themselves, before the
// first and after the last), and after the syncs are replaced.
TEST_CASE("ticks to nanoseconds: piecewise linear between syncs, in any order", "[encoder][log]") {
  log::LogFile f;
  f.ns_per_tick = 0.5;
  f.header.start_ticks = 1000;
  f.header.start_ns = 5'000'000;
  f.syncs = {{1000, 5'000'000},
             {3'001'000, 6'400'000},
             {5'001'000, 7'500'000},
             {9'001'000, 9'600'000},
             {9'500'000, 9'900'000}};
  auto want = [&](Tick t) -> uint64_t {
    auto linear = [](Tick t0, uint64_t ns0, double rate, Tick at) {
      return ns0 + static_cast<uint64_t>(static_cast<int64_t>(
                       static_cast<double>(static_cast<int64_t>(at - t0)) * rate));
    };
    if (t < f.syncs.front().first) return linear(f.header.start_ticks, f.header.start_ns, 0.5, t);
    if (t >= f.syncs.back().first)
      return linear(f.syncs.back().first, f.syncs.back().second, 0.5, t);
    size_t i = 0;
    while (f.syncs[i + 1].first <= t) ++i;
    const auto& a = f.syncs[i];
    const auto& b = f.syncs[i + 1];
    return linear(a.first, a.second,
                  static_cast<double>(b.second - a.second) / static_cast<double>(b.first - a.first),
                  t);
  };
  std::vector<Tick> ts = {0,         999,       1000,      1001,      3'000'999, 3'001'000,
                          5'001'000, 9'000'999, 9'001'000, 9'499'999, 9'500'000, 20'000'000};
  for (Tick t = 0; t < 10'000'000; t += 97'003) ts.push_back(t);
  for (const Tick t : ts) CHECK(f.ToNs(t) == want(t));                                 // forwards
  for (auto it = ts.rbegin(); it != ts.rend(); ++it) CHECK(f.ToNs(*it) == want(*it));  // backwards
  std::mt19937_64 rng(7);
  std::shuffle(ts.begin(), ts.end(), rng);
  for (const Tick t : ts) CHECK(f.ToNs(t) == want(t));
  // New syncs (the same segment index, another rate): found anew.
  f.syncs = {{1000, 5'000'000}, {3'001'000, 8'000'000}, {9'500'000, 9'900'000}};
  f.seg = SIZE_MAX;
  for (const Tick t : ts) CHECK(f.ToNs(t) == want(t));
}

TEST_CASE("module records round-trip", "[encoder][log]") {
  std::vector<uint64_t> mem(512);
  log::ChunkWriter w;
  w.Init(reinterpret_cast<uint8_t*>(mem.data()), mem.size() * 8);
  w.ModuleLoad(10, 0, 3, 0x7f0000000000, 0x7f0000001000, 0x7f0000009000, "/usr/lib/libfoo.so");
  w.ModuleUnload(20, 0, 4, 0x7f0000001000, 0x7f0000009000);
  log::SealedChunk c = w.Seal(0, 0, 0);
  TempDir dir;
  log::FileHeader h;
  log::InitFileHeader(&h, 1'000'000'000, 0, 1, 0, 1);
  std::vector<uint8_t> file(reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h + 1));
  file.insert(file.end(), c.data, c.data + c.size);
  WriteAll(dir.File("m"), file);
  log::LogSet set;
  const std::vector<std::string> paths{dir.File("m")};
  REQUIRE(set.Open(paths, log::ReadOptions{false}).ok());  // no end record: lenient
  log::StreamCursor cur(set, 0);
  log::Record r;
  REQUIRE(cur.Next(&r));
  log::ModuleLoadFields ml;
  REQUIRE(log::ParseModuleLoad(r, &ml));
  CHECK(ml.epoch == 3);
  CHECK(ml.bias == 0x7f0000000000);
  CHECK(ml.lo == 0x7f0000001000);
  CHECK(ml.path == "/usr/lib/libfoo.so");
  REQUIRE(cur.Next(&r));
  log::ModuleUnloadFields mu;
  REQUIRE(log::ParseModuleUnload(r, &mu));
  CHECK(mu.epoch == 4);
  CHECK(mu.hi == 0x7f0000009000);
}

// A log with two streams, several chunks each, for the damage tests.
std::string GoodLog(const TempDir& dir) {
  LogBuilder b;
  b.set_chunk_bytes(120);
  auto& t = b.Thread(10).Start(1000, 0, 0, 0x1000, log::kThreadExisted);
  for (int i = 0; i < 40; ++i) t.Wait(2000 + i * 10, 0, WaitKind::kSleep, 0, 5, 0, 0);
  b.TraceEnd(10'000);
  const std::string p = dir.File("good.gtlog");
  b.Write(p);
  return p;
}

Status OpenOne(const std::string& path, bool strict, log::LogSet* set) {
  const std::vector<std::string> paths{path};
  return set->Open(paths, log::ReadOptions{strict});
}

TEST_CASE("damaged logs: one clear error in strict mode, skipped in lenient mode",
          "[encoder][log]") {
  TempDir dir;
  const std::string good = GoodLog(dir);
  const std::vector<uint8_t> bytes = ReadAll(good);
  REQUIRE(bytes.size() > 400);

  SECTION("empty file") {
    WriteAll(dir.File("e"), {});
    log::LogSet s;
    Status st = OpenOne(dir.File("e"), true, &s);
    CHECK_THAT(st.message(), Catch::Contains("empty file"));
  }
  SECTION("not a log") {
    WriteAll(dir.File("n"), std::vector<uint8_t>(200, 'x'));
    log::LogSet s;
    CHECK_THAT(OpenOne(dir.File("n"), true, &s).message(), Catch::Contains("not a gotrace event log"));
  }
  SECTION("short header") {
    WriteAll(dir.File("h"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + 30));
    log::LogSet s;
    CHECK_THAT(OpenOne(dir.File("h"), true, &s).message(), Catch::Contains("truncated file header"));
  }
  SECTION("header only: no events") {
    WriteAll(dir.File("ho"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + 64));
    log::LogSet s;
    CHECK_THAT(OpenOne(dir.File("ho"), true, &s).message(), Catch::Contains("contains no events"));
  }
  SECTION("truncated in the middle of a chunk") {
    for (size_t cut : {bytes.size() - 12, bytes.size() - 30, size_t{64 + 20}, size_t{200}}) {
      // (A cut inside the last chunk's zero padding loses no data and is accepted.)
      WriteAll(dir.File("t"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut));
      log::LogSet strict;
      Status st = OpenOne(dir.File("t"), true, &strict);
      INFO("cut at " << cut);
      CHECK_FALSE(st.ok());
      CHECK_THAT(st.message(), Catch::Contains("truncated") || Catch::Contains("corrupted") ||
                                   Catch::Contains("bad chunk magic") ||
                                   Catch::Contains("incomplete log"));
      CHECK(st.message().find('\n') == std::string::npos);
      log::LogSet lenient;
      (void)OpenOne(dir.File("t"), false, &lenient);
      CHECK(!lenient.warnings().empty());
      // A lenient read advises no --lenient: it is one.
      for (const std::string& w : lenient.warnings()) CHECK_THAT(w, !Catch::Contains("--lenient"));
    }
  }
  SECTION("a flipped bit anywhere after the header is detected") {
    std::mt19937 rng(3);
    for (int i = 0; i < 50; ++i) {
      std::vector<uint8_t> bad = bytes;
      const size_t at = 64 + rng() % (bytes.size() - 64);
      bad[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      WriteAll(dir.File("c"), bad);
      log::LogSet strict;
      Status st = OpenOne(dir.File("c"), true, &strict);
      INFO("flip at " << at);
      // A flip inside zero padding is harmless; everything else is caught.
      if (st.ok()) {
        CHECK(strict.total_records() == 42);
      } else {
        CHECK(st.message().find(dir.File("c")) == 0);
      }
      log::LogSet lenient;
      Status ls = OpenOne(dir.File("c"), false, &lenient);
      if (ls.ok()) CHECK(lenient.total_records() <= 42);
      for (const std::string& w : lenient.warnings()) CHECK_THAT(w, !Catch::Contains("--lenient"));
    }
  }
  SECTION("a garbled stretch is one warning, not one per 8 bytes scanned") {
    std::vector<uint8_t> bad = bytes;
    // Garbage over the first chunk's header and well into what follows.
    const size_t len = std::min<size_t>(300, bytes.size() - 64 - 16);
    for (size_t i = 0; i < len; ++i) bad[64 + i] = static_cast<uint8_t>(0xa5 ^ i);
    WriteAll(dir.File("g"), bad);
    log::LogSet lenient;
    (void)OpenOne(dir.File("g"), false, &lenient);
    size_t stretch = 0;
    for (const std::string& w : lenient.warnings())
      if (w.find("bytes skipped") != std::string::npos) ++stretch;
    INFO(lenient.warnings().size() << " warnings");
    CHECK(stretch == 1);
    CHECK(lenient.warnings().size() <= 4);
  }
  SECTION("lenient mode resynchronises after a damaged chunk") {
    std::vector<uint8_t> bad = bytes;
    bad[64 + 50] ^= 0xff;  // inside the first chunk's payload
    WriteAll(dir.File("r"), bad);
    log::LogSet lenient;
    REQUIRE(OpenOne(dir.File("r"), false, &lenient).ok());
    CHECK(lenient.warnings().size() >= 1);
    CHECK(lenient.total_records() > 0);
    CHECK(lenient.total_records() < 42);
  }
}

// ---------------------------------------------------------------------------
// Go trace writer

TEST_CASE("trace writer: header, batches and event encodings match Go's", "[encoder][writer]") {
  MemorySink sink;
  {
    GoTraceWriter w(&sink, 1, 1'000'000'000);
    // The events of GO_TRACE_FORMAT.md §3.1, same times and args.
    w.Event(0, go::kEvGomaxprocs, 1000, {1, 0});
    w.Event(0, go::kEvGoCreate, 1000, {1, 1, 0});
    w.Event(0, go::kEvProcStart, 1010, {7});
    w.Event(0, go::kEvGoStart, 1020, {1, 1});
    w.Event(0, go::kEvGoCreate, 1030, {2, 2, 3});
    w.Event(0, go::kEvGoBlockSync, 1040, {4});
    w.Event(0, go::kEvGoStart, 1050, {2, 1});
    w.Event(0, go::kEvGoUnblock, 1100, {1, 2, 5});
    w.Event(0, go::kEvGoSysCall, 1110, {6});
    w.Event(0, go::kEvGoSysBlock, 1120, {});
    REQUIRE(w.Finish(1231).ok());
  }
  const auto& b = sink.bytes;
  REQUIRE(b.size() > 16);
  CHECK(std::memcmp(b.data(), "go 1.19 trace\0\0\0", 16) == 0);
  const std::vector<uint8_t> events(b.begin() + 16, b.begin() + 16 + 43);
  CHECK(events == Bytes({0x41, 0x00, 0xe8, 0x07,              // Batch p=0 base=1000
                         0x84, 0x00, 0x01, 0x00,              // Gomaxprocs
                         0xcd, 0x04, 0x00, 0x01, 0x01, 0x00,  // GoCreate (long form)
                         0x45, 0x0a, 0x07,                    // ProcStart
                         0x8e, 0x0a, 0x01, 0x01,              // GoStart
                         0xcd, 0x04, 0x0a, 0x02, 0x02, 0x03,  // GoCreate
                         0x59, 0x0a, 0x04,                    // GoBlockSync
                         0x8e, 0x0a, 0x02, 0x01,              // GoStart
                         0xd5, 0x04, 0x32, 0x01, 0x02, 0x05,  // GoUnblock
                         0x5c, 0x0a, 0x06}));                 // GoSysCall
  // Then GoSysBlock, Frequency, the final batch.
  const std::vector<uint8_t> tail(b.begin() + 16 + 43, b.end());
  CHECK(tail == Bytes({0x1e, 0x0a,                            // GoSysBlock
                       0x02, 0x80, 0x94, 0xeb, 0xdc, 0x03,    // Frequency 1e9
                       0x41, 0x00, 0xcf, 0x09}));             // Batch p=0 base=1231
}

TEST_CASE("trace writer: a P's time never goes backwards", "[encoder][writer]") {
  MemorySink sink;
  GoTraceWriter w(&sink, 2, 1'000'000'000);
  w.Event(1, go::kEvProcStart, 500, {1});
  w.Event(1, go::kEvProcStop, 400, {});  // clamped to 500: delta 0
  CHECK(w.clamped() == 1);
  REQUIRE(w.Finish(600).ok());
  const std::vector<uint8_t> b(sink.bytes.begin() + 16, sink.bytes.begin() + 16 + 8);
  CHECK(b == Bytes({0x41, 0x01, 0xf4, 0x03, 0x45, 0x00, 0x01, 0x06}));
  CHECK(sink.bytes[16 + 8] == 0x00);  // ProcStop delta 0
}

TEST_CASE("trace writer: a CPU sample does not move its batch's clock (Go 1.21+ skip its delta)",
          "[encoder][writer]") {
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1'000'000'000);
  w.Event(0, go::kEvProcStart, 1000, {1});
  w.Event(0, go::kEvCPUSample, 1500, {1500, 0, 0, 0});  // time in its argument, delta 0
  w.Event(0, go::kEvProcStop, 2000, {});                 // delta from ProcStart: 1000
  REQUIRE(w.Finish(2100).ok());
  const std::vector<uint8_t> b(sink.bytes.begin() + 16, sink.bytes.begin() + 16 + 18);
  CHECK(b == Bytes({0x41, 0x00, 0xe8, 0x07,               // Batch p=0 base=1000
                    0x45, 0x00, 0x01,                     // ProcStart
                    0xf1, 0x06, 0x00, 0xdc, 0x0b, 0x00,   // CPUSample (long form), delta 0
                    0x00, 0x00,                           //   p=0 g=0 ... stack 0
                    0x06, 0xe8, 0x07}));                  // ProcStop, delta 1000
}

TEST_CASE("string table: dense ids, dedup, truncation, no empty strings", "[encoder][writer]") {
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  CHECK(w.String("main") == 1);
  CHECK(w.String("worker") == 2);
  CHECK(w.String("main") == 1);
  CHECK(w.String("") == 3);  // stored as "?"
  CHECK(w.String("?") == 3);
  std::string long_name(5000, 'x');
  long_name[1022] = '\xc3';  // a 2-byte UTF-8 sequence straddling the limit
  long_name[1023] = '\xa9';
  long_name[1024] = '\xc3';
  long_name[1025] = '\xa9';
  CHECK(w.String(long_name) == 4);
  w.Event(0, go::kEvHeapAlloc, 1, {1});
  REQUIRE(w.Finish(2).ok());
  // The last string record: 0x25 id=4 len=1024 ...
  const auto& b = sink.bytes;
  const uint8_t pat[] = {0x25, 0x04};
  auto it = std::search(b.begin(), b.end(), pat, pat + 2);
  REQUIRE(it != b.end());
  CHECK(*(it + 2) == 0x80);  // 1024 = 80 08
  CHECK(*(it + 3) == 0x08);
}

TEST_CASE("stack records are cut to 128 frames and 2048 payload bytes", "[encoder][writer]") {
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  std::vector<GoFrame> frames;
  for (int i = 0; i < 300; ++i) frames.push_back(GoFrame{0x400000u + i * 16u, 1, 2, 10});
  CHECK(w.Stack(1, frames) == 128);
  // Frames too fat for 128 to fit in 2048 bytes: 64-bit PCs and huge lines.
  std::vector<GoFrame> fat;
  for (int i = 0; i < 128; ++i) fat.push_back(GoFrame{~0ull - i, 1u << 20, 1u << 20, 1u << 30});
  const size_t kept = w.Stack(2, fat);
  CHECK(kept < 128);
  CHECK(StackPayloadSize(2, std::span<const GoFrame>(fat.data(), kept)) <= go::kMaxLongPayload);
  CHECK(StackPayloadSize(2, std::span<const GoFrame>(fat.data(), kept + 1)) > go::kMaxLongPayload);
  CHECK(w.Stack(0, frames) == 0);  // id 0 means "no stack"
}

// The stack records of a trace, parsed back: id -> [(pc, func, file, line)];
// `strings` gets the string table.
std::map<uint64_t, std::vector<GoFrame>> ParseStacks(const std::vector<uint8_t>& b,
                                                     std::map<uint64_t, std::string>* strings) {
  std::map<uint64_t, std::vector<GoFrame>> got;
  size_t i = 16;
  while (i < b.size()) {
    const uint8_t type = b[i] & 0x3f;
    const uint8_t nargs = b[i] >> 6;
    ++i;
    const uint8_t* p = b.data() + i;
    const uint8_t* end = b.data() + b.size();
    uint64_t v;
    if (type == go::kEvString) {
      uint64_t id = 0, len = 0;
      REQUIRE(GetUvarint(&p, end, &id));
      REQUIRE(GetUvarint(&p, end, &len));
      (*strings)[id] = std::string(reinterpret_cast<const char*>(p), len);
      i = static_cast<size_t>(p - b.data()) + len;
      continue;
    }
    if (nargs == 3) {
      uint64_t len = 0;
      REQUIRE(GetUvarint(&p, end, &len));
      const uint8_t* stop = p + len;
      if (type == go::kEvStack) {
        uint64_t id = 0, n = 0;
        REQUIRE(GetUvarint(&p, stop, &id));
        REQUIRE(GetUvarint(&p, stop, &n));
        for (uint64_t k = 0; k < n; ++k) {
          GoFrame f;
          REQUIRE(GetUvarint(&p, stop, &f.pc));
          REQUIRE(GetUvarint(&p, stop, &f.func));
          REQUIRE(GetUvarint(&p, stop, &f.file));
          REQUIRE(GetUvarint(&p, stop, &f.line));
          got[id].push_back(f);
        }
      }
      i = static_cast<size_t>(stop - b.data());
    } else {
      for (int k = 0; k <= nargs; ++k) REQUIRE(GetUvarint(&p, end, &v));
      i = static_cast<size_t>(p - b.data());
    }
  }
  return got;
}

TEST_CASE("stack table: every distinct frame gets a distinct PC", "[encoder][stacks]") {
  StackTable st(1);
  st.Define(0, 1, 0, {0x3011, 0x2005});   // lock <- worker
  st.Define(0, 2, 0, {0x3011, 0xd111});   // lock <- Queue::Pop (inlined) <- consumer
  st.Define(0, 3, 0, {0xd111});
  CHECK(st.Ref(0, 1) == 1);
  CHECK(st.Ref(0, 2) == 2);
  CHECK(st.Ref(0, 1) == 1);
  CHECK(st.Ref(0, 3) == 3);
  CHECK(st.Ref(0, 0) == 0);
  CHECK(st.Ref(0, 99) == 4);  // referenced, never defined
  const uint64_t start = st.StartStack(0, 0x2000, 1, "thread");
  CHECK(start == 5);
  CHECK(st.StartStack(0, 0x2000, 1, "thread") == start);
  CHECK(st.StartStack(0, 0, 0, "main") == 6);

  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  auto fake = testing::StandardFakeSymbolizer()(log::LogFile{});
  StackStats stats;
  st.WriteAll(&w, {fake.get()}, &stats);
  CHECK(stats.stacks == 5);
  CHECK(stats.undefined == 1);
  REQUIRE(w.Finish(1).ok());

  std::map<uint64_t, std::string> strings;
  std::map<uint64_t, std::vector<GoFrame>> got = ParseStacks(sink.bytes, &strings);
  REQUIRE(got.size() == 5);
  REQUIRE(got[1].size() == 2);
  CHECK(strings[got[1][0].func] == "pthread_mutex_lock");
  CHECK(got[1][0].pc == 0x3011);  // the real return address
  CHECK(strings[got[1][1].func] == "worker");
  CHECK(got[1][1].line == 101);
  REQUIRE(got[2].size() == 3);
  CHECK(strings[got[2][1].func] == "Queue::Pop");
  CHECK(strings[got[2][2].func] == "consumer");
  CHECK(got[2][1].pc >= (1ull << 47));  // inlined: synthetic PC
  CHECK(got[2][2].pc == 0xd111);
  CHECK(got[2][0].pc == got[1][0].pc);  // same frame, same PC
  // The same PC expands identically in another stack.
  REQUIRE(got[3].size() == 2);
  CHECK(got[3][0].pc == got[2][1].pc);
  CHECK(got[3][1].pc == got[2][2].pc);
  // Start stacks: the entry + 1, named by the function.
  REQUIRE(got[5].size() == 1);
  CHECK(got[5][0].pc == 0x2001);
  CHECK(strings[got[5][0].func] == "worker");
  REQUIRE(got[6].size() == 1);
  CHECK(strings[got[6][0].func] == "main");
  CHECK(got[6][0].pc != 0);
  // All PCs distinct across distinct frames.
  std::map<uint64_t, std::tuple<uint64_t, uint64_t, uint64_t>> owner;
  for (auto& [id, frames] : got) {
    for (auto& f : frames) {
      auto key = std::make_tuple(f.func, f.file, f.line);
      auto [it, fresh] = owner.try_emplace(f.pc, key);
      CHECK((fresh || it->second == key));
    }
  }
}

TEST_CASE("stack records: the truncated flag rides in the epoch's high bit (issue 14)",
          "[encoder][log]") {
  std::vector<uint64_t> mem(512);
  log::ChunkWriter w;
  w.Init(reinterpret_cast<uint8_t*>(mem.data()), mem.size() * 8);
  const uint64_t pcs[] = {0x401234, 0x401000};
  w.StackDef(10, 0, 1, 5 | log::kStackTruncated, pcs, 2);
  w.StackDef(11, 0, 2, 5, pcs, 2);
  const log::SealedChunk c = w.Seal(0, 0, 0);
  TempDir dir;
  log::FileHeader h;
  log::InitFileHeader(&h, 1'000'000'000, 0, 1, 0, 1);
  std::vector<uint8_t> file(reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h + 1));
  file.insert(file.end(), c.data, c.data + c.size);
  WriteAll(dir.File("s"), file);
  log::LogSet set;
  const std::vector<std::string> paths{dir.File("s")};
  REQUIRE(set.Open(paths, log::ReadOptions{false}).ok());  // no end record: lenient
  log::StreamCursor cur(set, 0);
  log::Record r;
  log::StackDefFields sd;
  REQUIRE(cur.Next(&r));
  REQUIRE(log::ParseStackDef(r, &sd));
  CHECK(sd.epoch == 5);
  CHECK(sd.truncated);
  CHECK(sd.pcs == std::vector<uint64_t>{0x401234, 0x401000});
  REQUIRE(cur.Next(&r));
  REQUIRE(log::ParseStackDef(r, &sd));
  CHECK(sd.epoch == 5);
  CHECK_FALSE(sd.truncated);
}

TEST_CASE("stack table: a truncated stack ends with a [truncated] frame, also when the format "
          "cuts it (issue 14)",
          "[encoder][stacks]") {
  StackTable st(1);
  st.Define(0, 1, 0, {0x3011, 0x2005}, true);   // cut by the tracer's walk
  st.Define(0, 2, 0, {0x3011, 0x2005}, false);  // the same PCs, complete
  std::vector<uint64_t> deep;
  for (uint64_t i = 0; i < 100; ++i) deep.push_back(0xd111);
  st.Define(0, 3, 0, deep, false);  // an inlined frame each: 200 frames, the format cuts it
  for (uint64_t id = 1; id <= 3; ++id) CHECK(st.Ref(0, id) == id);
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  auto fake = testing::StandardFakeSymbolizer()(log::LogFile{});
  StackStats stats;
  st.WriteAll(&w, {fake.get()}, &stats);
  CHECK(stats.cut == 1);
  CHECK(stats.truncated == 1);
  REQUIRE(w.Finish(1).ok());
  std::map<uint64_t, std::string> strings;
  std::map<uint64_t, std::vector<GoFrame>> got = ParseStacks(sink.bytes, &strings);
  REQUIRE(got[1].size() == 3);
  CHECK(strings[got[1][0].func] == "pthread_mutex_lock");
  CHECK(strings[got[1][1].func] == "worker");
  CHECK(strings[got[1][2].func] == StackTable::kTruncatedFrame);
  CHECK(got[1][2].pc >= (1ull << 47));  // a PC of its own
  REQUIRE(got[2].size() == 2);
  CHECK(strings[got[2][1].func] == "worker");
  REQUIRE(got[3].size() == go::kMaxStackFrames);
  CHECK(strings[got[3].back().func] == StackTable::kTruncatedFrame);
  CHECK(got[3].back().pc == got[1][2].pc);
}

// ---------------------------------------------------------------------------
// Checker: each rule of the parser we rely on, violated once.

std::string Run(TraceChecker& c, std::initializer_list<std::tuple<uint32_t, go::EvType,
                                                                  std::vector<uint64_t>>> evs) {
  uint64_t ts = 0;
  for (const auto& [p, t, args] : evs) {
    std::string e = c.Check(p, t, ++ts, args);
    if (!e.empty()) return e;
  }
  return "";
}


// Two plugins loaded in turn at the same address (dlclose, dlopen): the
// first to own the real PC keeps it, the other gets one synthetic PC, the
// same in every epoch it appears in (not one per epoch).
class AlternatingPlugins final : public Symbolizer {
 public:
  void Symbolize(uint64_t addr, uint32_t epoch, std::vector<SymFrame>* out) override {
    if (addr >= 0x5000 && addr < 0x6000)
      out->push_back(SymFrame{epoch % 2 == 0 ? "plugin_a_wait" : "plugin_b_wait",
                              epoch % 2 == 0 ? "a.c" : "b.c", 7});
    else
      out->push_back(SymFrame{"main", "main.c", 3});
  }
};

TEST_CASE("stack table: one PC per distinct frame across module epochs", "[encoder][stacks]") {
  StackTable st(1);
  for (uint32_t epoch = 0; epoch < 4; ++epoch) st.Define(0, epoch + 1, epoch, {0x5011, 0x1005});
  for (uint64_t id = 1; id <= 4; ++id) CHECK(st.Ref(0, id) == id);
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  AlternatingPlugins sym;
  StackStats stats;
  st.WriteAll(&w, {&sym}, &stats);
  REQUIRE(w.Finish(1).ok());
  std::map<uint64_t, std::string> strings;
  auto got = ParseStacks(sink.bytes, &strings);
  REQUIRE(got.size() == 4);
  for (uint64_t id = 1; id <= 4; ++id) REQUIRE(got[id].size() == 2);
  CHECK(strings[got[1][0].func] == "plugin_a_wait");
  CHECK(strings[got[2][0].func] == "plugin_b_wait");
  CHECK(got[1][0].pc == 0x5011);              // the first owner keeps the real PC
  CHECK(got[3][0].pc == 0x5011);              // ... also when loaded again
  CHECK(got[2][0].pc >= (1ull << 47));        // the other: synthetic
  CHECK(got[4][0].pc == got[2][0].pc);        // ... one PC, not one per epoch
  for (uint64_t id = 1; id <= 4; ++id) CHECK(got[id][1].pc == 0x1005);
}

// A stripped program: every routine is module+offset.
class StrippedRoutines final : public Symbolizer {
 public:
  void Symbolize(uint64_t addr, uint32_t, std::vector<SymFrame>* out) override {
    char name[32];
    std::snprintf(name, sizeof name, "prog+0x%llx", static_cast<unsigned long long>(addr));
    out->push_back(SymFrame{name, "", 0, false});
  }
};

TEST_CASE("stack table: threads that share a name but not a routine are groups of their own",
          "[encoder][stacks]") {
  // All of pigz's threads are "pigz" (none names itself) and its routines
  // have no names: named after the threads, the main thread and the
  // workers were one group, one PC. A name shared by two routines is
  // qualified by the routine; one routine's threads keep the plain name.
  StackTable st(1);
  const uint32_t main_start = st.StartStack(0, 0x3650, 0, "main", 1);
  const uint32_t worker1 = st.StartStack(0, 0x11250, 0, "worker", 2);
  const uint32_t worker2 = st.StartStack(0, 0x11250, 0, "worker", 3);
  const uint32_t other = st.StartStack(0, 0x20000, 0, "other", 4);
  for (uint64_t t : {1, 2, 3}) st.ThreadName(t, "prog");
  st.ThreadName(4, "logger");
  MemorySink sink;
  GoTraceWriter w(&sink, 1, 1000);
  StrippedRoutines sym;
  StackStats stats;
  st.WriteAll(&w, {&sym}, &stats);
  REQUIRE(w.Finish(1).ok());
  std::map<uint64_t, std::string> strings;
  auto got = ParseStacks(sink.bytes, &strings);
  for (uint32_t id : {main_start, worker1, worker2, other}) REQUIRE(got[id].size() == 1);
  CHECK(strings[got[main_start][0].func] == "prog [main]");  // the main thread's routine
  CHECK(strings[got[worker1][0].func] == "prog [prog+0x11250]");
  CHECK(got[main_start][0].pc != got[worker1][0].pc);
  CHECK(got[worker1][0].pc == got[worker2][0].pc);
  CHECK(strings[got[other][0].func] == "logger");
}

// The library and the launcher read switches by the same words.
TEST_CASE("switch values: 1 or 0 in words of any case, anything else -1", "[encoder]") {
  for (const char* on : {"1", "yes", "Yes", "TRUE", "on", "On"}) CHECK(SwitchValue(on) == 1);
  for (const char* off : {"0", "no", "NO", "false", "off", "Off"}) CHECK(SwitchValue(off) == 0);
  for (const char* bad : {"", "x", "2", "10", "yess", "ye", "of", "1 ", "on!"})
    CHECK(SwitchValue(bad) == -1);
}

TEST_CASE("thread names fold the numbers of a series, not digits inside words",
          "[encoder][stacks]") {
  CHECK(FoldThreadName("pool-1-thread-3") == "pool-*-thread-*");
  CHECK(FoldThreadName("GC Thread#0") == "GC Thread#*");
  CHECK(FoldThreadName("Thread-12 (worker)") == "Thread-* (worker)");
  CHECK(FoldThreadName("worker_7") == "worker_*");
  CHECK(FoldThreadName("rs:main 2") == "rs:main *");
  CHECK(FoldThreadName("C2 CompilerThre") == "C2 CompilerThre");
  CHECK(FoldThreadName("python3.11") == "python3.11");
  CHECK(FoldThreadName("42") == "42");
  CHECK(FoldThreadName("") == "");
}

TEST_CASE("trace checker accepts the §3.1 recipe and rejects each classic mistake",
          "[encoder][checker]") {
  using namespace go;
  {
    TraceChecker c(1);
    CHECK(Run(c, {{0, kEvGoCreate, {1, 1, 0}},
                  {0, kEvGomaxprocs, {1, 0}},
                  {0, kEvProcStart, {7}},
                  {0, kEvGoStart, {1, 1}},
                  {0, kEvGoCreate, {2, 2, 3}},
                  {0, kEvGoBlockSync, {4}},
                  {0, kEvGoStart, {2, 1}},
                  {0, kEvGoUnblock, {1, 2, 5}},
                  {0, kEvGoSysCall, {6}},
                  {0, kEvGoSysBlock, {}},
                  {0, kEvGoStart, {1, 3}},
                  {0, kEvGoEnd, {}},
                  {0, kEvGoSysExit, {2, 2, 0}},
                  {0, kEvGoStart, {2, 3}},
                  {0, kEvGoEnd, {}},
                  {0, kEvProcStop, {}}}) == "");
    CHECK(c.Finish() == "");
  }
  auto bad = [](std::initializer_list<std::tuple<uint32_t, go::EvType, std::vector<uint64_t>>> evs) {
    TraceChecker c(2);
    return Run(c, evs);
  };
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoStart, {1, 0}}}), Catch::Contains("seq"));
  CHECK_THAT(bad({{0, kEvGoBlockSync, {1}}}), Catch::Contains("g 0"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoUnblock, {1, 1, 0}}}),
             Catch::Contains("not blocked"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoCreate, {1, 1, 0}}}),
             Catch::Contains("twice"));
  CHECK_THAT(bad({{0, kEvGoCreate, {0, 1, 0}}}), Catch::Contains("g 0"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 0, 0}}}), Catch::Contains("start stack"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvProcStart, {1}}, {0, kEvGoStart, {1, 1}},
                  {0, kEvProcStop, {}}}),
             Catch::Contains("runs a goroutine"));
  CHECK_THAT(bad({{0, kEvProcStart, {1}}, {0, kEvProcStart, {1}}}), Catch::Contains("running P"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoCreate, {2, 1, 0}}, {0, kEvGoStart, {1, 1}},
                  {0, kEvGoStart, {2, 1}}}),
             Catch::Contains("already runs"));
  CHECK_THAT(bad({{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoStart, {1, 1}}, {0, kEvGoBlock, {0}},
                  {0, kEvGoSysExit, {1, 2, 0}}}),
             Catch::Contains("syscall"));
  CHECK_THAT(bad({{0, kEvGoStart, {9, 1}}}), Catch::Contains("before GoCreate"));
  CHECK_THAT(bad({{0, kEvGomaxprocs, {2, 0}}, {0, kEvGoCreate, {1, 1, 0}}, {0, kEvGoWaiting, {1}}}),
             Catch::Contains("after Gomaxprocs"));
  CHECK_THAT(bad({{2, kEvProcStart, {1}}}), Catch::Contains("out of range"));
  {
    TraceChecker c(1);
    REQUIRE(Run(c, {{0, kEvGoCreate, {1, 1, 0}}, {0, kEvGomaxprocs, {1, 0}},
                    {0, kEvGoStart, {1, 1}}}) == "");
    CHECK_THAT(c.Finish(), Catch::Contains("still running"));
  }
  {
    TraceChecker c(1);
    REQUIRE(c.Check(0, kEvProcStart, 10, std::vector<uint64_t>{1}).empty());
    CHECK_THAT(c.Check(0, kEvProcStop, 9, {}), Catch::Contains("backwards"));
  }
}

}  // namespace
}  // namespace gotrace
