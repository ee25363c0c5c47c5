// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/report.cc - thread states, sites, wakers, output ---===//
//
// One pass over the merged events with a small state machine per goroutine
// (= OS thread): every interval is charged to running, runnable or a blocked
// kind when it ends; intervals still open at the end of the trace end there.
// The printers only format what Analyze computed.
//===----------------------------------------------------------------------===//
#include "encoder/report/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <unordered_map>

#include "encoder/go_trace_format.h"
#include "encoder/printable.h"

namespace gotrace::report {
namespace {

enum class St : uint8_t { kNone, kRunning, kRunnable, kBlocked, kDead };

struct GState {
  size_t index = 0;  // into Report::threads
  St st = St::kNone;
  int64_t since = 0;
  std::string kind;       // while blocked
  uint64_t site = 0;      // stack of the block event, while blocked
  uint64_t sys_stk = 0;   // stack of the last GoSysCall
};

int PercentDecode(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Unpercent(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() + 0 && PercentDecode(s[i + 1]) >= 0 &&
        PercentDecode(s[i + 2]) >= 0) {
      out += static_cast<char>(PercentDecode(s[i + 1]) * 16 + PercentDecode(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// "head k=v k=v": the words after head, split at '='.
std::vector<std::pair<std::string, std::string>> Words(const std::string& s, size_t from) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t i = from;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = s.find(' ', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) {
      const std::string w = s.substr(i, j - i);
      const size_t eq = w.find('=');
      if (eq != std::string::npos) out.emplace_back(w.substr(0, eq), Unpercent(w.substr(eq + 1)));
    }
    i = j;
  }
  return out;
}

bool StartsWith(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

uint64_t ToU64(const std::string& s) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// Kind of a block event without the encoder's gotrace-kinds strings.
const char* FallbackKind(uint8_t type, bool gotrace) {
  switch (type) {
    case go::kEvGoBlockSync: return "sync";
    case go::kEvGoBlockCond: return "cond";
    case go::kEvGoBlock: return gotrace ? "join" : "block";
    case go::kEvGoSleep: return "sleep";
    case go::kEvGoBlockNet: return "net";
    case go::kEvGoSysBlock: return "syscall";
    case 22: case 23: case 24: return "chan";  // GoBlockSend/Recv/Select
    case 42: return "gc";                      // GoBlockGC
    default: return "other";
  }
}

// Whether the encoder's kind for a stack fits the event that blocked there.
// The gotrace-kinds list has one kind per stack id, the first the encoder met,
// and one stack can be the site of several kinds of waits (a sleep and an
// off-CPU switch at the same call); the event type then decides.
bool KindFits(const std::string& kind, uint8_t type) {
  switch (type) {
    case go::kEvGoBlockSync:
      return kind != "cond" && kind != "sleep" && kind != "join" && kind != "net" && kind != "offcpu";
    case go::kEvGoBlockCond: return kind == "cond";
    case go::kEvGoSleep: return kind == "sleep";
    case go::kEvGoBlock: return kind == "join" || kind == "offcpu";
    case go::kEvGoBlockNet: return kind == "net";
    case go::kEvGoSysBlock: return kind == "syscall";
    default: return false;
  }
}

}  // namespace

const std::vector<std::string>& KnownKinds() {
  static const std::vector<std::string> kKinds = {
      "mutex", "rwlock", "cond", "sem", "futex", "barrier", "sync", "join", "sleep",
      "net", "syscall", "offcpu", "chan", "block", "gc", "waiting", "other"};
  return kKinds;
}

bool InSyncGroup(const std::string& k) {
  return k == "mutex" || k == "rwlock" || k == "cond" || k == "sem" || k == "futex" ||
         k == "barrier" || k == "sync";
}

int64_t ThreadReport::blocked_ns() const {
  int64_t s = 0;
  for (const auto& [k, v] : blocked) s += v.ns;
  return s;
}

const ThreadReport* Report::Thread(uint64_t goid) const {
  for (const auto& t : threads)
    if (t.goid == goid) return &t;
  return nullptr;
}

bool IdleThread(const Report& r, const ThreadReport& t) {
  for (const ProcessInfo& p : r.processes)
    if (ToU64(p.pid) == t.goid) return false;
  const int64_t life = t.life();
  return life > 0 && t.running.ns * 20 <= life && t.blocked_ns() * 10 >= life * 9;
}

Report Analyze(const Trace& trace, const std::string& file, bool keep_intervals) {
  Report r;
  r.file = file;
  r.events = trace.events.size();
  r.duration_ns = trace.end_ns;

  std::unordered_map<uint64_t, std::string> kinds;  // stack id -> kind
  std::unordered_map<uint64_t, int64_t> cpu;         // goid -> ns
  for (const auto& [id, s] : trace.strings) {
    if (StartsWith(s, "gotrace-meta:v1 ")) {
      ProcessInfo p;
      for (const auto& [k, v] : Words(s, 16)) {
        if (k == "pid") p.pid = v;
        else if (k == "cmd") p.cmd = v;
        else if (k == "sched") p.sched = v;
        else if (k == "cpu_hz") p.cpu_hz = v;
        else if (k == "lost") p.lost = v;
        else if (k == "dropped") p.dropped = v;
        else if (k == "why") p.why = v;
        else if (k == "full") p.full = v;
        else if (k == "full_at") p.full_at = v;
      }
      r.processes.push_back(p);
    } else if (StartsWith(s, "gotrace-kinds:v1 ")) {
      for (const auto& [k, v] : Words(s, 17)) kinds[ToU64(k)] = v;
    } else if (StartsWith(s, "gotrace-cpu:v1 ")) {
      for (const auto& [k, v] : Words(s, 15)) cpu[ToU64(k)] = static_cast<int64_t>(ToU64(v));
    }
  }
  std::sort(r.processes.begin(), r.processes.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return ToU64(a.pid) < ToU64(b.pid); });
  const bool gotrace = !r.processes.empty();

  std::unordered_map<uint64_t, GState> gs;
  std::map<std::pair<uint64_t, std::string>, size_t> site_of;
  std::map<std::pair<uint64_t, uint64_t>, size_t> pair_of;
  // Each site's waiting by thread: (site index << 32 | thread index) -> ns.
  std::unordered_map<uint64_t, int64_t> site_thread_ns;

  auto thread = [&](uint64_t g, int64_t ts) -> GState& {
    auto [it, fresh] = gs.try_emplace(g);
    if (fresh) {
      it->second.index = r.threads.size();
      ThreadReport t;
      t.goid = g;
      t.name = "thread";
      t.start_ns = ts;
      t.end_ns = ts;
      if (auto c = cpu.find(g); c != cpu.end()) t.cpu_ns = c->second;
      r.threads.push_back(std::move(t));
    }
    return it->second;
  };
  // Ends g's current interval at ts and charges it.
  auto close = [&](GState& s, int64_t ts) {
    ThreadReport& t = r.threads[s.index];
    const int64_t d = std::max<int64_t>(0, ts - s.since);
    if (keep_intervals && d > 0 && (s.st == St::kRunning || s.st == St::kRunnable || s.st == St::kBlocked)) {
      uint8_t code = s.st == St::kRunning ? 0 : 1;
      if (s.st == St::kBlocked) {
        const auto& ks = KnownKinds();
        auto it = std::find(ks.begin(), ks.end(), s.kind);
        code = static_cast<uint8_t>(2 + (it == ks.end() ? ks.size() - 1 : static_cast<size_t>(it - ks.begin())));
      }
      t.intervals.push_back(Interval{s.since, ts, code});
    }
    switch (s.st) {
      case St::kRunning: t.running.ns += d; break;
      case St::kRunnable: t.runnable.ns += d; break;
      case St::kBlocked: {
        t.blocked[s.kind].ns += d;
        auto key = std::make_pair(s.site, s.kind);
        auto [it, fresh] = site_of.try_emplace(key, r.sites.size());
        if (fresh) {
          BlockSite b;
          b.kind = s.kind;
          b.stk = s.site;
          r.sites.push_back(b);
        }
        BlockSite& b = r.sites[it->second];
        site_thread_ns[static_cast<uint64_t>(it->second) << 32 | s.index] += d;
        b.total_ns += d;
        b.max_ns = std::max(b.max_ns, d);
        ++b.count;
        break;
      }
      default: break;
    }
    s.since = ts;
  };
  auto enter = [&](GState& s, St st, int64_t ts, const std::string& kind = {}, uint64_t site = 0) {
    close(s, ts);
    s.st = st;
    s.kind = kind;
    s.site = site;
    ThreadReport& t = r.threads[s.index];
    if (st == St::kRunning) ++t.running.count;
    if (st == St::kRunnable) ++t.runnable.count;
    if (st == St::kBlocked) ++t.blocked[s.kind].count;
    if (st == St::kDead) {
      t.ended = true;
      t.end_ns = ts;
    }
  };
  auto block = [&](GState& s, const std::string& kind, uint64_t site, int64_t ts) {
    enter(s, St::kBlocked, ts, kind, site);
  };
  auto kind_of = [&](uint64_t stk, uint8_t type) -> std::string {
    if (stk != 0)
      if (auto it = kinds.find(stk); it != kinds.end() && KindFits(it->second, type)) return it->second;
    return FallbackKind(type, gotrace);
  };

  for (const Event& ev : trace.events) {
    switch (ev.type) {
      case go::kEvGoCreate: {
        GState& s = thread(ev.args[0], ev.ts);
        if (auto it = trace.stacks.find(ev.args[1]); it != trace.stacks.end() && !it->second.empty())
          r.threads[s.index].name = it->second.front().func;
        if (s.st == St::kNone || s.st == St::kDead) enter(s, St::kRunnable, ev.ts);
        break;
      }
      case go::kEvGoWaiting: block(thread(ev.g, ev.ts), "waiting", 0, ev.ts); break;
      case go::kEvGoInSyscall: block(thread(ev.g, ev.ts), "syscall", 0, ev.ts); break;
      case go::kEvGoStart: case 41: enter(thread(ev.g, ev.ts), St::kRunning, ev.ts); break;
      case go::kEvGoEnd: case go::kEvGoStop:
        if (ev.g) enter(thread(ev.g, ev.ts), St::kDead, ev.ts);
        break;
      case go::kEvGoSched: case go::kEvGoPreempt:
        if (ev.g) enter(thread(ev.g, ev.ts), St::kRunnable, ev.ts);
        break;
      case go::kEvGoSleep: case go::kEvGoBlock: case go::kEvGoBlockSync: case go::kEvGoBlockCond:
      case go::kEvGoBlockNet: case 22: case 23: case 24: case 42:
        if (ev.g) block(thread(ev.g, ev.ts), kind_of(ev.stk, ev.type), ev.stk, ev.ts);
        break;
      case go::kEvGoSysCall:
        if (ev.g) thread(ev.g, ev.ts).sys_stk = ev.stk;
        break;
      case go::kEvGoSysBlock:
        if (ev.g) {
          GState& s = thread(ev.g, ev.ts);
          block(s, kind_of(s.sys_stk, ev.type), s.sys_stk, ev.ts);
        }
        break;
      case go::kEvGoUnblock: case go::kEvGoSysExit: {
        GState& s = thread(ev.args[0], ev.ts);
        const int64_t waited = s.st == St::kBlocked ? ev.ts - s.since : 0;
        enter(s, St::kRunnable, ev.ts);
        if (ev.type == go::kEvGoUnblock && ev.g != 0 && ev.g != ev.args[0]) {
          auto [it, fresh] = pair_of.try_emplace({ev.g, ev.args[0]}, r.wakers.size());
          if (fresh) r.wakers.push_back(WakePair{ev.g, ev.args[0], 0, 0});
          ++r.wakers[it->second].count;
          r.wakers[it->second].ns += std::max<int64_t>(0, waited);
        }
        break;
      }
      case go::kEvCPUSample:
        ++r.cpu_samples;
        break;
      case go::kEvHeapAlloc:
        r.has_heap = true;
        r.heap_peak = std::max(r.heap_peak, ev.args[0]);
        r.heap_final = ev.args[0];
        r.heap.emplace_back(ev.ts, ev.args[0]);
        break;
      default: break;
    }
    if (ev.g != 0 && ev.type != go::kEvCPUSample) {
      auto it = gs.find(ev.g);
      if (it != gs.end() && !r.threads[it->second.index].ended)
        r.threads[it->second.index].end_ns = std::max(r.threads[it->second.index].end_ns, ev.ts);
    }
  }
  for (auto& [g, s] : gs) {
    ThreadReport& t = r.threads[s.index];
    if (t.ended) continue;
    close(s, trace.end_ns);  // alive at the end: its life runs to the end of the trace
    t.end_ns = trace.end_ns;
  }
  for (BlockSite& b : r.sites)
    if (auto it = trace.stacks.find(b.stk); it != trace.stacks.end()) b.frames = it->second;
  for (const auto& [key, ns] : site_thread_ns)
    r.sites[key >> 32].waiters.emplace_back(r.threads[key & 0xffffffffu].goid, ns);
  // Problem: node's thread pool and platform workers wait on a condition
  // variable for the whole run, its I/O threads in epoll: their waits were
  // the top sites of every node trace, above the main thread's, which are
  // the ones that hold the program up. A site only idle threads waited at
  // is listed apart, after the others, if it is also where they spent most
  // of their waiting (a pool thread's wait for a GC safepoint is work).
  // Lock waits are contention, never idle; nor is time off the CPU that no
  // wait explains.
  std::unordered_map<uint64_t, int64_t> idle_blocked;  // idle threads' blocked time
  for (const ThreadReport& t : r.threads)
    if (IdleThread(r, t)) idle_blocked[t.goid] = t.blocked_ns();
  for (BlockSite& b : r.sites) {
    if (b.kind == "mutex" || b.kind == "rwlock" || b.kind == "offcpu" || b.waiters.empty())
      continue;
    b.idle =
        std::all_of(b.waiters.begin(), b.waiters.end(), [&](const std::pair<uint64_t, int64_t>& w) {
          const auto it = idle_blocked.find(w.first);
          return it != idle_blocked.end() && w.second * 2 >= it->second;
        });
  }
  std::stable_sort(r.sites.begin(), r.sites.end(), [](const BlockSite& a, const BlockSite& b) {
    return a.idle != b.idle ? !a.idle : a.total_ns > b.total_ns;
  });
  std::stable_sort(r.wakers.begin(), r.wakers.end(),
                   [](const WakePair& a, const WakePair& b) { return a.count > b.count; });
  return r;
}

// ---------------------------------------------------------------------------
// Output

namespace {

std::string Pct(int64_t part, int64_t whole) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return b;
}

std::string Fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* f, ...) {
  char b[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(b, sizeof b, f, ap);
  va_end(ap);
  return b;
}

std::string Cut(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n > 3 ? n - 3 : n) + "...";
}

std::string Basename(const std::string& p) {
  const size_t i = p.rfind('/');
  return i == std::string::npos ? p : p.substr(i + 1);
}

std::string FrameText(const Frame& f) {
  std::string s = f.func.empty() ? Fmt("0x%" PRIx64, f.pc) : f.func;
  if (!f.file.empty() && f.file != "?") s += "  " + Basename(f.file) + ":" + std::to_string(f.line);
  return s;
}

std::string ThreadLabel(const Report& r, uint64_t goid) {
  const ThreadReport* t = r.Thread(goid);
  return (t ? t->name : std::string("?")) + " (" + std::to_string(goid) + ")";
}

// The same in at most `width` characters: the name is cut, never the tid
// (python3's threads, all "python3 [python3.11+0x6543a0]", were told apart
// by nothing else, and a cut label dropped it).
std::string ThreadLabel(const Report& r, uint64_t goid, size_t width) {
  const ThreadReport* t = r.Thread(goid);
  const std::string id = " (" + std::to_string(goid) + ")";
  const size_t room = width > id.size() + 8 ? width - id.size() : 8;
  return Cut(t ? t->name : std::string("?"), room) + id;
}

// The states of one thread as "running 12.0% (3)" items, in display order.
std::vector<std::string> StateItems(const ThreadReport& t) {
  std::vector<std::string> items;
  const int64_t life = t.life();
  auto add = [&](const std::string& name, const StateStat& s) {
    if (s.ns == 0 && s.count == 0) return;
    items.push_back(name + " " + Pct(s.ns, life) + " (" + std::to_string(s.count) + ")");
  };
  add("running", t.running);
  add("runnable", t.runnable);
  for (const std::string& k : KnownKinds())
    if (auto it = t.blocked.find(k); it != t.blocked.end()) add(k, it->second);
  for (const auto& [k, v] : t.blocked)
    if (std::find(KnownKinds().begin(), KnownKinds().end(), k) == KnownKinds().end()) add(k, v);
  return items;
}

ThreadReport Totals(const Report& r) {
  ThreadReport all;
  all.name = "all threads";
  for (const auto& t : r.threads) {
    all.end_ns += t.life();
    all.running.ns += t.running.ns;
    all.running.count += t.running.count;
    all.runnable.ns += t.runnable.ns;
    all.runnable.count += t.runnable.count;
    for (const auto& [k, v] : t.blocked) {
      all.blocked[k].ns += v.ns;
      all.blocked[k].count += v.count;
    }
  }
  return all;
}

std::string ProcessLine(const ProcessInfo& p) {
  std::string s = "process " + p.pid;
  if (!p.cmd.empty()) s += ": " + Printable(p.cmd);
  return s;
}

// `samples`: the CPU samples the trace holds. A rate alone claimed them
// where a process had none (a short command under tracewrap opens the
// kernel's sampling only after 10 ms of recorded calls: a compiler that
// computes without any has none).
std::string SchedLine(const ProcessInfo& p, uint64_t samples) {
  std::string s = "scheduling " + (p.sched.empty() ? std::string("?") : p.sched);
  if (!p.why.empty()) s += " (" + p.why + ")";
  const bool off = p.cpu_hz == "0" || p.cpu_hz.empty();
  s += ", CPU samples " + (off ? std::string("off") : p.cpu_hz + " Hz") +
       (off && samples == 0 ? std::string() : Fmt(" (%" PRIu64 " in the trace)", samples));
  s += ", lost " + (p.lost.empty() ? "0" : p.lost) + " kernel records, dropped " +
       (p.dropped.empty() ? "0" : p.dropped) + " records";
  if (ToU64(p.full) > 0) {
    s += Fmt("; %s still full at the end: records after %.3f s may be missing",
             ToU64(p.full) == 1 ? "a kernel ring was" : (p.full + " kernel rings were").c_str(),
             static_cast<double>(ToU64(p.full_at)) / 1e9);
  }
  return s;
}

void Wrap(std::string* out, const std::string& indent, const std::vector<std::string>& items) {
  std::string line = indent;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (line.size() > indent.size() && line.size() + 1 + item.size() > 80) {
      *out += line + "\n";
      line = indent;
    }
    line += (line.size() > indent.size() ? " " : "") + item;
  }
  if (line.size() > indent.size()) *out += line + "\n";
}

}  // namespace

// How many of r.sites come before the idle ones.
size_t BusySites(const Report& r) {
  size_t n = 0;
  while (n < r.sites.size() && !r.sites[n].idle) ++n;
  return n;
}

std::string FormatText(const std::vector<Report>& reports, size_t top) {
  std::string o;
  for (const Report& r : reports) {
    o += Cut("== " + r.file, 80) + "\n";
    o += HumanDuration(r.duration_ns) + ", " + Counted(r.threads.size(), "thread") + ", " +
         Counted(r.events, "event") + "\n";
    for (const auto& p : r.processes) {
      o += Cut(ProcessLine(p), 80) + "\n";
      Wrap(&o, "  ", {SchedLine(p, r.cpu_samples)});
    }
    if (r.has_heap)
      o += "heap: peak " + HumanBytes(r.heap_peak) + ", final " + HumanBytes(r.heap_final) + "\n";
    o += "\nThreads: share of each thread's life (number of intervals)\n";
    auto thread_block = [&](const ThreadReport& t, const std::string& label) {
      o += Cut(Fmt("  %s, %s", label.c_str(), HumanDuration(t.life()).c_str()), 80) + "\n";
      Wrap(&o, "    ", StateItems(t));
    };
    for (const auto& t : r.threads)
      thread_block(t, Cut(t.name, 40) + " (tid " + std::to_string(t.goid) + ")");
    if (r.threads.size() > 1) thread_block(Totals(r), "all threads");

    const size_t busy = BusySites(r);
    auto site = [&](size_t n, const BlockSite& b) {
      o += Fmt("%3zu. %-8s %10s  %6" PRIu64 " %s  max %s\n", n, b.kind.c_str(),
               HumanDuration(b.total_ns).c_str(), b.count, b.count == 1 ? "wait " : "waits",
               HumanDuration(b.max_ns).c_str());
      if (b.frames.empty()) o += "       (no stack)\n";
      for (size_t f = 0; f < b.frames.size() && f < 6; ++f)
        o += Cut("       " + FrameText(b.frames[f]), 80) + "\n";
      if (b.frames.size() > 6) o += Fmt("       ... %zu more frames\n", b.frames.size() - 6);
    };
    o += "\nTop blocking sites by total time\n";
    if (busy == 0) o += "  (none)\n";
    for (size_t i = 0; i < busy && i < top; ++i) site(i + 1, r.sites[i]);
    if (busy < r.sites.size()) {
      o += "\nIdle waits (threads that spent their lives waiting: pools, event loops)\n";
      for (size_t i = busy; i < r.sites.size() && i - busy < top; ++i)
        site(i - busy + 1, r.sites[i]);
    }
    o += "\nTop wakers (waker -> wakee: wakeups, wait ended)\n";
    if (r.wakers.empty()) o += "  (none)\n";
    for (size_t i = 0; i < r.wakers.size() && i < top; ++i) {
      const WakePair& w = r.wakers[i];
      o += Fmt("  %s -> %s: %" PRIu64 ", %s", ThreadLabel(r, w.waker, 30).c_str(),
               ThreadLabel(r, w.wakee, 30).c_str(), w.count, HumanDuration(w.ns).c_str()) +
           "\n";
    }
    o += "\n";
  }
  return o;
}

namespace {
std::string MdEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>' || c == '[' || c == ']')
      o += '\\';
    o += c == '\n' ? ' ' : c;
  }
  return o;
}
}  // namespace

std::string FormatMarkdown(const std::vector<Report>& reports, size_t top) {
  std::string o;
  for (const Report& r : reports) {
    o += "### gotrace report: " + MdEscape(r.file) + "\n\n";
    o += HumanDuration(r.duration_ns) + ", " + Counted(r.threads.size(), "thread") + ", " +
         Counted(r.events, "event");
    if (r.has_heap)
      o += "; heap peak " + HumanBytes(r.heap_peak) + ", final " + HumanBytes(r.heap_final);
    o += "\n\n";
    for (const auto& p : r.processes)
      o += "- " + MdEscape(ProcessLine(p)) + ": " + MdEscape(SchedLine(p, r.cpu_samples)) + "\n";
    if (!r.processes.empty()) o += "\n";
    o += "| thread | tid | life | running | runnable | blocked |\n|---|---:|---:|---:|---:|---|\n";
    auto row = [&](const ThreadReport& t, const std::string& name, const std::string& tid) {
      std::vector<std::string> items = StateItems(t);
      std::string blocked;
      for (size_t i = 0; i < items.size(); ++i) {
        if (StartsWith(items[i], "running ") || StartsWith(items[i], "runnable ")) continue;
        blocked += (blocked.empty() ? "" : ", ") + items[i];
      }
      o += "| " + name + " | " + tid + " | " + HumanDuration(t.life()) + " | " +
           Pct(t.running.ns, t.life()) + " (" + std::to_string(t.running.count) + ") | " +
           Pct(t.runnable.ns, t.life()) + " (" + std::to_string(t.runnable.count) + ") | " +
           (blocked.empty() ? "-" : blocked) + " |\n";
    };
    for (const auto& t : r.threads) row(t, MdEscape(t.name), std::to_string(t.goid));
    if (r.threads.size() > 1) row(Totals(r), "**all threads**", "");
    const size_t busy = BusySites(r);
    auto sites = [&](const char* title, size_t from, size_t to) {
      o += std::string("\n**") + title + "**\n\n| # | kind | total | waits | max | stack |\n" +
           "|---:|---|---:|---:|---:|---|\n";
      for (size_t i = from; i < to && i - from < top; ++i) {
        const BlockSite& b = r.sites[i];
        std::string stack;
        for (size_t f = 0; f < b.frames.size() && f < 4; ++f)
          stack += (f ? "<br>" : "") + MdEscape(FrameText(b.frames[f]));
        o += Fmt("| %zu | %s | %s | %" PRIu64 " | %s | ", i - from + 1, b.kind.c_str(),
                 HumanDuration(b.total_ns).c_str(), b.count, HumanDuration(b.max_ns).c_str()) +
             (stack.empty() ? "-" : stack) + " |\n";
      }
    };
    sites("Top blocking sites", 0, busy);
    if (busy < r.sites.size())
      sites("Idle waits (threads that spent their lives waiting: pools, event loops)", busy,
            r.sites.size());
    o += "\n**Top wakers**\n\n| waker | wakee | wakeups | wait ended |\n|---|---|---:|---:|\n";
    for (size_t i = 0; i < r.wakers.size() && i < top; ++i) {
      const WakePair& w = r.wakers[i];
      o += "| " + MdEscape(ThreadLabel(r, w.waker)) + " | " + MdEscape(ThreadLabel(r, w.wakee)) +
           " | " + std::to_string(w.count) + " | " + HumanDuration(w.ns) + " |\n";
    }
    o += "\n";
  }
  return o;
}

namespace {
std::string JState(const StateStat& s, int64_t life) {
  return Fmt("{\"ns\":%" PRId64 ",\"count\":%" PRIu64 ",\"pct\":%.3f}", s.ns, s.count,
             life > 0 ? 100.0 * static_cast<double>(s.ns) / static_cast<double>(life) : 0.0);
}

std::string JStates(const ThreadReport& t) {
  std::string o = "{\"running\":" + JState(t.running, t.life()) +
                  ",\"runnable\":" + JState(t.runnable, t.life()) + ",\"blocked\":{";
  bool first = true;
  for (const auto& [k, v] : t.blocked) {
    o += (first ? "" : ",") + JsonString(k) + ":" + JState(v, t.life());
    first = false;
  }
  return o + "}}";
}
}  // namespace

std::string FormatJson(const std::vector<Report>& reports, size_t top) {
  std::string o = "{\"version\":1,\"traces\":[";
  for (size_t ri = 0; ri < reports.size(); ++ri) {
    const Report& r = reports[ri];
    o += (ri ? "," : "") + std::string("{\"file\":") + JsonString(r.file) +
         Fmt(",\"duration_ns\":%" PRId64 ",\"events\":%" PRIu64, r.duration_ns, r.events);
    o += ",\"processes\":[";
    for (size_t i = 0; i < r.processes.size(); ++i) {
      const ProcessInfo& p = r.processes[i];
      o += (i ? "," : "") + std::string("{\"pid\":") + std::to_string(ToU64(p.pid)) +
           ",\"cmd\":" + JsonString(p.cmd) + ",\"sched\":" + JsonString(p.sched) +
           ",\"cpu_hz\":" + std::to_string(ToU64(p.cpu_hz)) +
           ",\"lost\":" + std::to_string(ToU64(p.lost)) +
           ",\"dropped\":" + std::to_string(ToU64(p.dropped)) +
           ",\"rings_full\":" + std::to_string(ToU64(p.full)) +
           ",\"full_at_ns\":" + std::to_string(ToU64(p.full_at)) + ",\"why\":" + JsonString(p.why) +
           "}";
    }
    o += "],\"heap\":";
    o += r.has_heap ? Fmt("{\"peak\":%" PRIu64 ",\"final\":%" PRIu64 "}", r.heap_peak, r.heap_final)
                    : std::string("null");
    o += ",\"threads\":[";
    for (size_t i = 0; i < r.threads.size(); ++i) {
      const ThreadReport& t = r.threads[i];
      o += (i ? "," : "") + Fmt("{\"tid\":%" PRIu64 ",\"name\":", t.goid) + JsonString(t.name) +
           Fmt(",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"life_ns\":%" PRId64
               ",\"ended\":%s,\"cpu_ns\":",
               t.start_ns, t.end_ns, t.life(), t.ended ? "true" : "false") +
           (t.cpu_ns < 0 ? std::string("null") : std::to_string(t.cpu_ns)) +
           ",\"states\":" + JStates(t) + "}";
    }
    const ThreadReport all = Totals(r);
    o += "],\"totals\":{\"life_ns\":" + std::to_string(all.life()) + ",\"states\":" + JStates(all) + "}";
    o += ",\"sites\":[";
    for (size_t i = 0; i < r.sites.size() && i < top; ++i) {
      const BlockSite& b = r.sites[i];
      o += (i ? "," : "") + std::string("{\"kind\":") + JsonString(b.kind) +
           Fmt(",\"stack_id\":%" PRIu64 ",\"total_ns\":%" PRId64 ",\"count\":%" PRIu64
               ",\"max_ns\":%" PRId64 ",\"idle\":%s,\"frames\":[",
               b.stk, b.total_ns, b.count, b.max_ns, b.idle ? "true" : "false");
      for (size_t f = 0; f < b.frames.size(); ++f)
        o += (f ? "," : "") + std::string("{\"func\":") + JsonString(b.frames[f].func) +
             ",\"file\":" + JsonString(b.frames[f].file) +
             Fmt(",\"line\":%" PRIu64 ",\"pc\":%" PRIu64 "}", b.frames[f].line, b.frames[f].pc);
      o += "]}";
    }
    o += "],\"wakers\":[";
    for (size_t i = 0; i < r.wakers.size() && i < top; ++i) {
      const WakePair& w = r.wakers[i];
      o += (i ? "," : "") +
           Fmt("{\"waker\":%" PRIu64 ",\"wakee\":%" PRIu64 ",\"count\":%" PRIu64
               ",\"wait_ended_ns\":%" PRId64 "}",
               w.waker, w.wakee, w.count, w.ns);
    }
    o += "]}";
  }
  return o + "]}\n";
}

}  // namespace gotrace::report
