// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/trace_reader.cc - "go 1.19 trace" decoder and merge -===//
//
// Three steps, as Go 1.19's internal/trace (parser.go, order.go) takes them:
// decode the records (strings and stacks into tables, timed events into one
// list per P with their implicit goroutine), merge the per-P lists under the
// sequence rules, then re-time GoSysExit and convert ticks to nanoseconds.
// Every length and count read from the file is bounded before it is used,
// so damaged input ends in an error line, never in a crash or a huge
// allocation.
//===----------------------------------------------------------------------===//
#include "encoder/report/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <queue>

#include "encoder/go_trace_format.h"
#include "encoder/log_format.h"
#include "encoder/varint.h"

namespace gotrace::report {
namespace {

// Event types Go 1.19 knows, beyond those gotrace writes (go_trace_format.h).
enum : uint8_t {
  kEvGCStart = 7, kEvGCDone = 8, kEvGCSTWStart = 9, kEvGCSTWDone = 10, kEvGCSweepStart = 11,
  kEvGCSweepDone = 12, kEvGoBlockSend = 22, kEvGoBlockRecv = 23, kEvGoBlockSelect = 24,
  kEvHeapGoal = 34, kEvTimerGoroutine = 35, kEvFutileWakeup = 36, kEvGoStartLocal = 38,
  kEvGoUnblockLocal = 39, kEvGoSysExitLocal = 40, kEvGoStartLabel = 41, kEvGoBlockGC = 42,
  kEvGCMarkAssistStart = 43, kEvGCMarkAssistDone = 44, kEvCount = 50,
};

struct Desc {
  const char* name;
  uint8_t nargs;  // arguments after ts, without the stack id
  bool stack;
};

// Go 1.19's EventDescriptions (parser.go), types 0..49.
constexpr Desc kDescs[kEvCount] = {
    {"None", 0, false},          {"Batch", 2, false},           {"Frequency", 1, false},
    {"Stack", 2, false},         {"Gomaxprocs", 1, true},       {"ProcStart", 1, false},
    {"ProcStop", 0, false},      {"GCStart", 1, true},          {"GCDone", 0, false},
    {"GCSTWStart", 1, false},    {"GCSTWDone", 0, false},       {"GCSweepStart", 0, true},
    {"GCSweepDone", 2, false},   {"GoCreate", 2, true},         {"GoStart", 2, false},
    {"GoEnd", 0, false},         {"GoStop", 0, true},           {"GoSched", 0, true},
    {"GoPreempt", 0, true},      {"GoSleep", 0, true},          {"GoBlock", 0, true},
    {"GoUnblock", 2, true},      {"GoBlockSend", 0, true},      {"GoBlockRecv", 0, true},
    {"GoBlockSelect", 0, true},  {"GoBlockSync", 0, true},      {"GoBlockCond", 0, true},
    {"GoBlockNet", 0, true},     {"GoSysCall", 0, true},        {"GoSysExit", 3, false},
    {"GoSysBlock", 0, false},    {"GoWaiting", 1, false},       {"GoInSyscall", 1, false},
    {"HeapAlloc", 1, false},     {"HeapGoal", 1, false},        {"TimerGoroutine", 1, false},
    {"FutileWakeup", 0, false},  {"String", 0, false},          {"GoStartLocal", 1, false},
    {"GoUnblockLocal", 1, true}, {"GoSysExitLocal", 2, false},  {"GoStartLabel", 3, false},
    {"GoBlockGC", 0, true},      {"GCMarkAssistStart", 0, true}, {"GCMarkAssistDone", 0, false},
    {"UserTaskCreate", 3, true}, {"UserTaskEnd", 1, true},      {"UserRegion", 3, true},
    {"UserLog", 2, true},        {"CPUSample", 3, true},
};

constexpr int64_t kProfileP = 1000005;  // Go's fake P of CPU samples

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

struct Cursor {
  const uint8_t* begin;
  const uint8_t* p;
  const uint8_t* end;
  uint64_t off() const { return static_cast<uint64_t>(p - begin); }
};

// Per-goroutine ordering state of order.go.
enum GStatus : uint8_t { kDead, kRunnable, kRunning, kWaiting };
constexpr uint64_t kNoSeq = ~uint64_t{0};
constexpr uint64_t kSeqInc = ~uint64_t{0} - 1;
constexpr uint64_t kUnordered = ~uint64_t{0};
constexpr uint64_t kGarbage = ~uint64_t{0} - 1;

struct GState {
  uint64_t seq = 0;
  GStatus status = kDead;
};

struct Transition {
  uint64_t g;
  GState init, next;
};

Transition StateTransition(const Event& ev) {
  switch (ev.type) {
    case go::kEvGoCreate: return {ev.args[0], {0, kDead}, {1, kRunnable}};
    case go::kEvGoWaiting: case go::kEvGoInSyscall: return {ev.g, {1, kRunnable}, {2, kWaiting}};
    case go::kEvGoStart: case kEvGoStartLabel:
      return {ev.g, {ev.args[1], kRunnable}, {ev.args[1] + 1, kRunning}};
    case kEvGoStartLocal: return {ev.g, {kNoSeq, kRunnable}, {kSeqInc, kRunning}};
    case go::kEvGoBlock: case kEvGoBlockSend: case kEvGoBlockRecv: case kEvGoBlockSelect:
    case go::kEvGoBlockSync: case go::kEvGoBlockCond: case go::kEvGoBlockNet:
    case go::kEvGoSleep: case go::kEvGoSysBlock: case kEvGoBlockGC:
      return {ev.g, {kNoSeq, kRunning}, {kNoSeq, kWaiting}};
    case go::kEvGoSched: case go::kEvGoPreempt:
      return {ev.g, {kNoSeq, kRunning}, {kNoSeq, kRunnable}};
    case go::kEvGoUnblock: case go::kEvGoSysExit:
      return {ev.args[0], {ev.args[1], kWaiting}, {ev.args[1] + 1, kRunnable}};
    case kEvGoUnblockLocal: case kEvGoSysExitLocal:
      return {ev.args[0], {kNoSeq, kWaiting}, {kSeqInc, kRunnable}};
    case kEvGCStart: return {kGarbage, {ev.args[0], kDead}, {ev.args[0] + 1, kDead}};
    default: return {kUnordered, {}, {}};
  }
}

bool TransitionReady(uint64_t g, const GState& cur, const GState& init) {
  return g == kUnordered || ((init.seq == kNoSeq || init.seq == cur.seq) && init.status == cur.status);
}

// kNoSeq keeps the goroutine's sequence number, kSeqInc adds one (order.go).
void ApplyTransition(GState* cur, const GState& next) {
  if (next.seq == kSeqInc) cur->seq += 1;
  else if (next.seq != kNoSeq) cur->seq = next.seq;
  cur->status = next.status;
}

struct RawStack {
  uint64_t id;
  std::vector<uint64_t> args;  // n x (pc, func, file, line)
};

class Decoder {
 public:
  Decoder(const uint8_t* data, size_t size, Trace* out) : c_{data, data, data + size}, out_(out) {}

  Status Run() {
    GT_RETURN_IF_ERROR(Header());
    GT_RETURN_IF_ERROR(Records());
    if (streams_.empty()) return Status::Error("holds no events (the trace is empty)");
    if (out_->ticks_per_second == 0) return Status::Error("has no Frequency record (truncated?)");
    ResolveStacks();
    GT_RETURN_IF_ERROR(Merge());
    return Retime();
  }

 private:
  Status Header() {
    const size_t n = static_cast<size_t>(c_.end - c_.p);
    if (n == 0) return Status::Error("empty file");
    if (n >= sizeof(log::kFileMagic) && std::memcmp(c_.p, log::kFileMagic, sizeof log::kFileMagic) == 0)
      return Status::Error("a gotrace event log, not a trace (turn it into one with gotrace encode)");
    if (n < 16) {
      if (std::memcmp(c_.p, "go 1.", std::min<size_t>(n, 5)) == 0)
        return Status::Error("truncated in the header (" + std::to_string(n) + " bytes)");
      return Status::Error("not a Go execution trace (no \"go 1.x trace\" header)");
    }
    if (std::memcmp(c_.p, go::kHeader, 16) == 0) {
      c_.p += 16;
      return Status::Ok();
    }
    const char* h = reinterpret_cast<const char*>(c_.p);
    if (std::memcmp(h, "go 1.", 5) == 0 && std::memchr(h, ' ', 16) != nullptr) {
      std::string ver(h + 3, strnlen(h + 3, 13));
      ver = ver.substr(0, ver.find(' '));
      return Status::Error("a Go " + ver +
                           " trace: only the go 1.19 format (what gotrace writes) is read");
    }
    return Status::Error("not a Go execution trace (no \"go 1.x trace\" header)");
  }

  Status Truncated(uint64_t off, const char* what) {
    return Status::Error(std::string("truncated or damaged at offset ") + Hex(off) + " (" + what + ")");
  }

  Status Records() {
    std::vector<uint64_t> args;
    int64_t last_ts = 0, last_p = 0;
    uint64_t last_g = 0;
    std::unordered_map<int64_t, uint64_t> last_gs;
    // Timed events take 3 to 5 bytes each in gotrace's traces: reserving
    // for that avoids most regrowth copies of a large list.
    raw_.reserve(static_cast<size_t>(c_.end - c_.p) / 4);
    while (c_.p < c_.end) {
      const uint64_t off0 = c_.off();
      const uint8_t b = *c_.p++;
      const uint8_t typ = b & 0x3f;
      const unsigned narg = (b >> 6) + 1u;
      if (typ == 0 || typ >= kEvCount)
        return Status::Error("unknown event type " + std::to_string(typ) + " at offset " + Hex(off0) +
                             " (damaged, or not a go 1.19 trace)");
      if (typ == go::kEvString) {
        uint64_t id, len;
        if (!GetUvarint(&c_.p, c_.end, &id) || !GetUvarint(&c_.p, c_.end, &len))
          return Truncated(off0, "string record");
        if (id == 0) return Status::Error("string at offset " + Hex(off0) + " has id 0");
        if (len == 0 || len > 1000000)
          return Status::Error("string at offset " + Hex(off0) + " has a bad length " + std::to_string(len));
        if (len > static_cast<uint64_t>(c_.end - c_.p)) return Truncated(off0, "string record");
        auto [it, fresh] = out_->strings.try_emplace(id, reinterpret_cast<const char*>(c_.p), len);
        if (!fresh)
          return Status::Error("string at offset " + Hex(off0) + " has duplicate id " + std::to_string(id));
        c_.p += len;
        continue;
      }
      args.clear();
      if (narg < 4) {
        for (unsigned i = 0; i < narg; ++i) {
          uint64_t v;
          if (!GetUvarint(&c_.p, c_.end, &v)) return Truncated(off0, kDescs[typ].name);
          args.push_back(v);
        }
      } else {
        uint64_t len;
        if (!GetUvarint(&c_.p, c_.end, &len)) return Truncated(off0, kDescs[typ].name);
        if (len > static_cast<uint64_t>(c_.end - c_.p)) return Truncated(off0, kDescs[typ].name);
        const uint8_t* stop = c_.p + len;
        while (c_.p < stop) {
          uint64_t v;
          if (!GetUvarint(&c_.p, stop, &v))
            return Status::Error(std::string(kDescs[typ].name) + " at offset " + Hex(off0) +
                                 " has the wrong length");
          args.push_back(v);
        }
      }
      std::string user_log;
      if (typ == go::kEvUserLog) {
        uint64_t len;
        if (!GetUvarint(&c_.p, c_.end, &len) || len > static_cast<uint64_t>(c_.end - c_.p))
          return Truncated(off0, "UserLog message");
        if (len > 1000000) return Status::Error("UserLog at offset " + Hex(off0) + " is too large");
        user_log.assign(reinterpret_cast<const char*>(c_.p), len);
        c_.p += len;
      }
      const Desc& d = kDescs[typ];
      if (typ == go::kEvStack) {
        if (args.size() < 2 || args[1] > 1000 || args.size() != 2 + 4 * args[1])
          return Status::Error("Stack record at offset " + Hex(off0) + " is malformed");
        if (args[0] != 0 && args[1] != 0)
          stacks_.push_back(RawStack{args[0], std::vector<uint64_t>(args.begin() + 2, args.end())});
        continue;
      }
      const size_t want = (typ == go::kEvBatch || typ == go::kEvFrequency || typ == kEvTimerGoroutine)
                              ? d.nargs
                              : 1u + d.nargs + (d.stack ? 1u : 0u);
      if (args.size() != want)
        return Status::Error(std::string(d.name) + " at offset " + Hex(off0) + " has " +
                             std::to_string(args.size()) + " arguments, want " + std::to_string(want));
      if (typ == go::kEvBatch) {
        last_gs[last_p] = last_g;
        last_p = static_cast<int64_t>(args[0]);
        last_g = last_gs[last_p];
        last_ts = static_cast<int64_t>(args[1]);
        continue;
      }
      if (typ == go::kEvFrequency) {
        if (static_cast<int64_t>(args[0]) <= 0)
          return Status::Error("Frequency at offset " + Hex(off0) + " is not positive");
        out_->ticks_per_second = args[0];
        continue;
      }
      if (typ == kEvTimerGoroutine) continue;
      Event e;
      e.type = typ;
      e.p = last_p;
      e.g = last_g;
      e.ts = last_ts + static_cast<int64_t>(args[0]);
      last_ts = e.ts;
      for (size_t i = 1; i < args.size(); ++i) {
        if (i == args.size() - 1 && d.stack) e.stk = args[i];
        else e.args[i - 1] = args[i];
      }
      switch (typ) {
        case go::kEvGoStart: case kEvGoStartLocal: case kEvGoStartLabel:
          last_g = e.args[0];
          e.g = last_g;
          break;
        case kEvGCSTWStart:
          if (e.args[0] > 1)
            return Status::Error("GCSTWStart at offset " + Hex(off0) + " has an unknown kind");
          e.g = 0;
          break;
        case kEvGCStart: case kEvGCDone: case kEvGCSTWDone:
          e.g = 0;
          break;
        case go::kEvGoEnd: case go::kEvGoStop: case go::kEvGoSched: case go::kEvGoPreempt:
        case go::kEvGoSleep: case go::kEvGoBlock: case kEvGoBlockSend: case kEvGoBlockRecv:
        case kEvGoBlockSelect: case go::kEvGoBlockSync: case go::kEvGoBlockCond:
        case go::kEvGoBlockNet: case go::kEvGoSysBlock: case kEvGoBlockGC:
          last_g = 0;
          break;
        case go::kEvGoSysExit: case go::kEvGoWaiting: case go::kEvGoInSyscall:
          e.g = e.args[0];
          break;
        case go::kEvUserLog:
          e.args[3] = out_->user_logs.size();
          out_->user_logs.push_back(std::move(user_log));
          break;
        case go::kEvCPUSample:
          e.ts = static_cast<int64_t>(e.args[0]);
          e.p = static_cast<int64_t>(e.args[1]);
          e.g = e.args[2];
          e.args[0] = 0;
          break;
        default: break;
      }
      const int64_t key = typ == go::kEvCPUSample ? kProfileP : last_p;
      auto [it, fresh] = stream_of_.try_emplace(key, streams_.size());
      if (fresh) streams_.emplace_back();
      streams_[it->second].push_back(static_cast<uint32_t>(raw_.size()));
      raw_.push_back(e);
      if (raw_.size() >= 0xffffffffu) return Status::Error("has more than 2^32 events");
    }
    return Status::Ok();
  }

  void ResolveStacks() {
    auto str = [this](uint64_t id) -> std::string {
      auto it = out_->strings.find(id);
      return it == out_->strings.end() ? std::string() : it->second;
    };
    for (RawStack& s : stacks_) {
      std::vector<Frame> frames;
      frames.reserve(s.args.size() / 4);
      for (size_t i = 0; i + 3 < s.args.size(); i += 4)
        frames.push_back(Frame{s.args[i], str(s.args[i + 1]), str(s.args[i + 2]), s.args[i + 3]});
      out_->stacks[s.id] = std::move(frames);  // a redefinition replaces, as in Go
    }
    stacks_.clear();
  }

  // order1007: the head of each per-P stream joins the frontier once its
  // goroutine is in the state the event needs; the earliest frontier event is
  // merged next. A stream whose head is not ready waits on that goroutine
  // and is looked at again only when the goroutine's state changes.
  Status Merge() {
    const size_t n = raw_.size();
    if (auto it = stream_of_.find(kProfileP); it != stream_of_.end()) {
      auto& s = streams_[it->second];
      std::stable_sort(s.begin(), s.end(),
                       [this](uint32_t a, uint32_t b) { return raw_[a].ts < raw_[b].ts; });
    }
    std::vector<size_t> head(streams_.size(), 0);
    std::unordered_map<uint64_t, GState> gs;
    std::unordered_map<uint64_t, std::vector<uint32_t>> waiting;  // g -> streams
    using Item = std::pair<int64_t, uint32_t>;                      // (ts, stream)
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> frontier;
    auto offer = [&](uint32_t s) {
      if (head[s] >= streams_[s].size()) return;
      const Event& ev = raw_[streams_[s][head[s]]];
      const Transition t = StateTransition(ev);
      if (TransitionReady(t.g, gs[t.g], t.init)) frontier.push({ev.ts, s});
      else waiting[t.g].push_back(s);
    };
    for (uint32_t s = 0; s < streams_.size(); ++s) offer(s);
    std::vector<uint32_t> again;
    out_->events.reserve(n);
    while (out_->events.size() < n) {
      if (frontier.empty())
        return Status::Error("has no consistent order of events (damaged, or not written by "
                             "gotrace or Go)");
      const uint32_t s = frontier.top().second;
      frontier.pop();
      Event ev = raw_[streams_[s][head[s]]];
      ++head[s];
      const Transition t = StateTransition(ev);
      if (t.g != kUnordered) ApplyTransition(&gs[t.g], t.next);
      switch (ev.type) {  // the Local forms become the plain ones, as in order.go
        case kEvGoStartLocal: ev.type = go::kEvGoStart; break;
        case kEvGoUnblockLocal: ev.type = go::kEvGoUnblock; break;
        case kEvGoSysExitLocal: ev.type = go::kEvGoSysExit; break;
        default: break;
      }
      out_->events.push_back(ev);
      offer(s);
      if (t.g != kUnordered) {
        auto it = waiting.find(t.g);
        if (it != waiting.end()) {
          again.swap(it->second);
          waiting.erase(it);
          for (uint32_t w : again) offer(w);
          again.clear();
        }
      }
    }
    std::vector<Event>().swap(raw_);
    return Status::Ok();
  }

  Status Retime() {
    auto& evs = out_->events;
    for (size_t i = 1; i < evs.size(); ++i)
      if (evs[i].ts < evs[i - 1].ts) return Status::Error("has time stamps out of order");
    std::unordered_map<uint64_t, int64_t> last_block;
    for (Event& ev : evs) {
      if (ev.type == go::kEvGoSysBlock || ev.type == go::kEvGoInSyscall) {
        last_block[ev.g] = ev.ts;
      } else if (ev.type == go::kEvGoSysExit && ev.args[2] != 0) {
        const int64_t ts = static_cast<int64_t>(ev.args[2]);
        auto it = last_block.find(ev.g);
        if (it == last_block.end() || it->second == 0)
          return Status::Error("has a syscall exit without a syscall");
        if (ts < it->second) return Status::Error("has time stamps out of order");
        ev.ts = ts;
      }
    }
    auto by_time = [](const Event& a, const Event& b) { return a.ts < b.ts; };
    if (!std::is_sorted(evs.begin(), evs.end(), by_time))
      std::stable_sort(evs.begin(), evs.end(), by_time);
    const int64_t min_ts = evs.front().ts;
    const double scale = 1e9 / static_cast<double>(out_->ticks_per_second);
    for (Event& ev : evs) ev.ts = static_cast<int64_t>(static_cast<double>(ev.ts - min_ts) * scale);
    out_->end_ns = evs.back().ts;
    return Status::Ok();
  }

  Cursor c_;
  Trace* out_;
  std::vector<Event> raw_;
  std::vector<std::vector<uint32_t>> streams_;
  std::unordered_map<int64_t, size_t> stream_of_;
  std::vector<RawStack> stacks_;
};

}  // namespace

const char* EventName(uint8_t type) { return type < kEvCount ? kDescs[type].name : "?"; }

Status ParseTrace(const uint8_t* data, size_t size, Trace* out) {
  *out = Trace{};
  Decoder d(data, size, out);
  return d.Run();
}

Status ReadTrace(const std::string& path, Trace* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::Error(std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::Error("is a directory, not a trace");
  }
  std::vector<uint8_t> buf;
  if (S_ISREG(st.st_mode)) buf.reserve(static_cast<size_t>(st.st_size));
  uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return Status::Error(std::string("cannot read: ") + std::strerror(e));
    }
    if (n == 0) break;
    buf.insert(buf.end(), chunk, chunk + n);
  }
  ::close(fd);
  return ParseTrace(buf.data(), buf.size(), out);
}

}  // namespace gotrace::report
