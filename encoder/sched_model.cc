// SPDX-License-Identifier: Apache-2.0
//===-- encoder/sched_model.cc - OS threads as goroutines, CPUs as Ps -----===//
#include "encoder/sched_model.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "encoder/printable.h"
#include "encoder/trace_checker.h"

namespace gotrace {
namespace {

using log::Record;
using log::Tick;
using log::WaitKind;

// Model state of a thread (its goroutine). kWoken: a GoUnblock was emitted
// but the thread has not resumed yet (Go: runnable).
enum class TSt : uint8_t { kNotCreated, kRunnable, kRunning, kBlocked, kWoken, kSyscall, kDead };

constexpr uint32_t kNoThread = std::numeric_limits<uint32_t>::max();
// The frame of the stack of a thread the kernel switched out outside any
// wait an interposer recorded (README: "Reading the trace").
constexpr const char kOffCpuFrame[] = "[off-CPU outside an interposed call]";
constexpr uint8_t kKindOffCpu = 0xff;  // kinds_: beside the WaitKinds
// How far apart (ns) the kernel's switch times and the interposers' record
// times may be and still describe the same moment.
constexpr log::Tick kClockSlack = 50'000;
// How far apart they are at most in the common case (the TSC against the
// kernel's CLOCK_MONOTONIC, both converted to ns): a switch-in more than
// this before a record happened before it.
constexpr log::Tick kClockAgree = 2'000;
constexpr uint64_t kSyntheticGoidBase = uint64_t{1} << 22;  // above PID_MAX_LIMIT

enum : uint8_t { kWaitNone = 0, kWaitBlocks = 1, kWaitSyscall = 2 };

struct Thread {
  uint64_t goid = 0;
  uint32_t file = 0;
  uint32_t tid = 0;
  uint64_t seq = 0;  // the per-goroutine counter c of GO_TRACE_FORMAT.md §0 item 5
  TSt st = TSt::kNotCreated;
  uint32_t p = 0;    // valid while kRunning
  uint64_t self = 0;
  uint64_t start_pc = 0;
  bool is_main = false;
  // The current wait (kBlocked, kWoken, kSyscall).
  uint64_t wait_obj = 0;  // registered in waiters_ under (file, wait_obj) when != 0
  bool wait_registered = false;
  bool wait_open = false;
  Tick wait_end = 0;
  uint32_t wait_cpu_end = 0;
  uint32_t wait_gen = 0;
  // Kernel mode (the log has the kernel's context switches): a recorded
  // wait is only a reason; the kernel says whether and when the thread
  // left the CPU for it.
  uint8_t wait_mode = 0;     // kWaitNone, kWaitBlocks, kWaitSyscall
  uint64_t wait_stack = 0;   // trace stack id of the wait
  WaitKind wait_kind{};
  uint32_t pend_waker = kNoThread;  // released the awaited object while we still ran
  uint64_t pend_stack = 0;
  uint64_t wait_obj2 = 0;    // a condition wait's mutex (locked again inside the wait)
  bool wait_switched = false;  // the kernel switched it out during the wait
  bool in_wait_k() const { return wait_mode != kWaitNone; }
};

struct ObjKey {
  uint32_t file;
  uint64_t obj;
  bool operator==(const ObjKey&) const = default;
};
struct ObjKeyHash {
  size_t operator()(const ObjKey& k) const {
    return std::hash<uint64_t>()(k.obj * 0x9e3779b97f4a7c15ull ^ k.file);
  }
};

// Merge item. At equal times: waits begin (order 0) before other records
// (order 1), which come before wait ends (order 2), so that a waiter is
// registered before a release at the same tick and a release at the tick a
// waiter resumes is seen as its waker.
struct Item {
  Tick ts;
  uint8_t order;
  uint32_t index;  // stream (orders 0, 1) or thread (order 2)
  uint32_t gen;    // wait generation (order 2)
  bool operator>(const Item& o) const {
    if (ts != o.ts) return ts > o.ts;
    if (order != o.order) return order > o.order;
    return index > o.index;
  }
};

// A binary min-heap with replace-top: the merge's common step (a stream's
// record consumed, its next record takes its place) costs one sift-down.
class MinHeap {
 public:
  void Push(const Item& it) {
    v_.push_back(it);
    size_t i = v_.size() - 1;
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!(v_[parent] > it)) break;
      v_[i] = v_[parent];
      i = parent;
    }
    v_[i] = it;
  }
  const Item& top() const { return v_[0]; }
  bool empty() const { return v_.empty(); }
  void ReplaceTop(const Item& it) {
    const size_t n = v_.size();
    size_t i = 0;
    for (;;) {
      size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && v_[c] > v_[c + 1]) ++c;
      if (!(it > v_[c])) break;
      v_[i] = v_[c];
      i = c;
    }
    v_[i] = it;
  }
  void PopTop() {
    const Item last = v_.back();
    v_.pop_back();
    if (!v_.empty()) ReplaceTop(last);
  }

 private:
  std::vector<Item> v_;
};

bool IsWakeable(WaitKind k) {
  switch (k) {
    case WaitKind::kMutex: case WaitKind::kRwlock: case WaitKind::kCond: case WaitKind::kSem:
    case WaitKind::kFutex: case WaitKind::kBarrier: case WaitKind::kJoin:
      return true;
    default:
      return false;
  }
}

go::EvType BlockEvent(WaitKind k) {
  switch (k) {
    case WaitKind::kCond: return go::kEvGoBlockCond;
    case WaitKind::kSleep: return go::kEvGoSleep;
    case WaitKind::kJoin: return go::kEvGoBlock;
    case WaitKind::kNet: return go::kEvGoBlockNet;
    default: return go::kEvGoBlockSync;  // mutex, rwlock, sem, futex, barrier
  }
}

class Replay {
 public:
  Replay(const log::LogSet& logs, const ModelOptions& opts, GoTraceWriter* w, StackTable* stacks,
         const std::vector<Symbolizer*>& syms, ModelStats* stats)
      : logs_(logs), opts_(opts), w_(w), stacks_(stacks), syms_(syms), stats_(stats),
        nprocs_(w->nprocs()), procs_(nprocs_),
        checker_(opts.check ? std::make_unique<TraceChecker>(nprocs_) : nullptr),
        ann_(w, stacks, &stats->annotations,
             [this](uint32_t p, go::EvType type, std::initializer_list<uint64_t> args) {
               Emit(p, type, args);
             },
             [this](uint32_t p, uint64_t task, uint64_t key, uint64_t stack,
                    std::string_view msg) { EmitUserLog(p, task, key, stack, msg); }) {}

  Status Run();

 private:
  struct Proc {
    bool started = false;
    uint32_t running = kNoThread;  // thread index
  };

  // --- kernel mode
  bool Kernel(uint32_t file) const { return file < kernel_.size() && kernel_[file]; }
  Thread* ThreadForTid(uint32_t file, uint64_t tid);
  void OnKernelRecord(uint32_t file, uint32_t c, const Record& r);
  void SwitchIn(Thread& t, uint32_t c);
  void SwitchOut(Thread& t, bool preempt);
  void EnsureRunningK(Thread& t, uint32_t c);
  void OnWaitK(Thread& t, uint32_t c, const Record& r);
  void OnWaitEndK(Thread& t);
  Tick NextSwitchIn(uint32_t file, uint32_t tid);
  // --- merge
  void Advance(uint32_t stream, bool at_top);
  void IndexHead(uint32_t stream, bool add);
  // --- model
  void Snapshot(Tick t0);
  void OnRecord(uint32_t stream, const Record& r);
  void OnWait(Thread& t, uint32_t c, const Record& r);
  void OnRelease(Thread& u, uint32_t c, uint64_t obj, uint64_t count, uint64_t stack,
                 uint32_t already_woken);
  void OnCreate(Thread& u, uint32_t c, const Record& r);
  void FinishWait(Thread& t, uint32_t c);
  bool SkewWake(Thread& t);
  void EnsureOn(Thread& t, uint32_t c);
  void ClearProc(uint32_t c, const Thread* except);
  void StartProc(uint32_t c, const Thread& t);
  void StopIfIdle(uint32_t c);
  void Deschedule(Thread& t, go::EvType how);
  void Unregister(Thread& t);
  void Register(Thread& t, uint64_t obj);
  void EndOfTrace(Tick end);
  uint64_t StartStackOf(const Thread& t, uint64_t creator_stack);

  uint32_t Cpu(uint32_t cpu) const { return cpu < nprocs_ ? cpu : cpu % nprocs_; }
  uint32_t Index(const Thread& t) const { return static_cast<uint32_t>(&t - threads_.data()); }

  void Emit(uint32_t p, go::EvType type, std::initializer_list<uint64_t> args) {
    if (checker_ && error_.empty()) {
      std::string e = checker_->Check(p, type, now_,
                                      std::span<const uint64_t>(args.begin(), args.size()));
      if (!e.empty()) error_ = std::move(e);
    }
    w_->Event(p, type, now_, args);
    last_event_ = now_;
  }
  void EmitUserLog(uint32_t p, uint64_t task, uint64_t key, uint64_t stack, std::string_view msg) {
    if (checker_ && error_.empty()) {
      const uint64_t args[] = {task, key, stack};
      std::string e = checker_->Check(p, go::kEvUserLog, now_, args);
      if (!e.empty()) error_ = std::move(e);
    }
    w_->UserLog(p, now_, task, key, stack, msg);
    last_event_ = now_;
  }

  const log::LogSet& logs_;
  const ModelOptions& opts_;
  GoTraceWriter* w_;
  StackTable* stacks_;
  const std::vector<Symbolizer*>& syms_;
  ModelStats* stats_;
  const uint32_t nprocs_;
  std::vector<Proc> procs_;
  std::unique_ptr<TraceChecker> checker_;
  std::string error_;
  UserAnnotations ann_;  // the program's tasks, regions and logs

  std::vector<Thread> threads_;  // one per stream, then phantoms
  std::vector<std::unique_ptr<log::StreamCursor>> cursors_;
  std::vector<Record> heads_;
  std::vector<uint8_t> head_valid_;
  std::vector<uint32_t> head_consumed_;  // wakes given early by SkewWake
  std::vector<uint8_t> head_early_;      // a head processed before its turn (SwitchOut)
  // Streams whose head is a kRelease (unordered), and each stream's index in
  // it (or kNoThread): what SkewWake scans.
  std::vector<uint32_t> release_heads_;
  std::vector<uint32_t> release_pos_;
  std::unordered_map<ObjKey, std::vector<uint32_t>, ObjKeyHash> waiters_;
  std::unordered_map<uint64_t, uint32_t> creates_;  // (file << 48 ^ create_id) -> thread
  std::vector<uint8_t> kernel_;  // per file: scheduling from the kernel's records
  // Per file: the kernel's first record. The kernel's records start lazily
  // (at a second thread, or after 10 ms of recording): a wait that began
  // before has no switch-out of its own.
  std::vector<Tick> kernel_from_;
  // (file << 32 | tid) -> its threads' indices, in the order they started
  // (tids are reused; the first not yet ended is the one alive).
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_tid_;
  // Kernel mode: the switch-ins of the next few milliseconds, read ahead of
  // the merge (a second cursor on the kernel stream), so that a release
  // wakes the waiter the kernel actually ran next, not a guess.
  struct Ahead {
    uint32_t stream = 0;
    std::unique_ptr<log::StreamCursor> cur;
    bool done = false;
    Tick read_to = 0;
    std::deque<std::pair<Tick, uint32_t>> order;  // (ts, tid), in time order
    std::unordered_map<uint32_t, std::deque<Tick>> by_tid;
  };
  std::vector<Ahead> ahead_;  // per file (kernel mode only)
  // What the trace says about itself in strings no event refers to (Go's
  // tools ignore them; gotrace report reads them): see WriteMeta.
  struct FileMeta {
    std::string sched = "infer";
    uint64_t cpu_hz = 0;
    std::string why;
    std::vector<std::string> argv;
    uint64_t dropped = 0;
    uint64_t lost = 0;
    uint64_t rings_full = 0;  // rings still full at the last read (log::kRingFull)
    uint64_t full_at = 0;     // the earliest such ring's last record, ns into the trace
    bool ended = false;       // its end record (the kernel's rings read one last time)
  };
  std::vector<FileMeta> meta_;
  std::unordered_map<uint64_t, uint8_t> kinds_;      // trace stack id of a block -> its kind
  std::unordered_map<uint64_t, uint32_t> by_serial_;  // (file << 32 | serial) -> thread index
  std::unordered_map<uint64_t, uint64_t> cpu_ns_;     // goid -> CPU time the kernel counted
  std::unordered_map<uint64_t, uint64_t> cpu_base_;   // goid -> the same, at a window's start
  void NoteKind(uint64_t stack, uint8_t kind) {
    if (stack != 0) kinds_.emplace(stack, kind);
  }
  void WriteMeta();
  MinHeap heads_heap_;  // one item per stream with a valid head
  MinHeap ends_heap_;   // pending wait ends
  Tick now_ = 0;
  Tick end_ = 0;         // the latest end record's time
  Tick last_event_ = 0;  // the time of the last event written
  Tick threshold_ = 0;
  Tick skew_ = 0;
  uint64_t next_goid_ = kSyntheticGoidBase;
  std::vector<uint32_t> scratch_;
  std::unordered_map<uint32_t, Tick> next_in_;
};

uint64_t CreateKey(uint32_t file, uint64_t create_id) {
  return (static_cast<uint64_t>(file) << 48) ^ create_id;
}

// ---------------------------------------------------------------------------
// Merge

void Replay::IndexHead(uint32_t s, bool add) {
  if (heads_[s].type != log::kRelease) return;
  if (add) {
    release_pos_[s] = static_cast<uint32_t>(release_heads_.size());
    release_heads_.push_back(s);
  } else if (release_pos_[s] != kNoThread) {
    const uint32_t last = release_heads_.back();
    release_heads_[release_pos_[s]] = last;
    release_pos_[last] = release_pos_[s];
    release_heads_.pop_back();
    release_pos_[s] = kNoThread;
  }
}

// Reads stream s's next record into its head. `at_top`: s's previous head is
// the top of heads_heap_ (the merge step), else s is not in the heap yet.
void Replay::Advance(uint32_t s, bool at_top) {
  if (!cursors_[s]) cursors_[s] = std::make_unique<log::StreamCursor>(logs_, s);
  if (cursors_[s]->Next(&heads_[s])) {
    head_valid_[s] = 1;
    head_consumed_[s] = 0;
    IndexHead(s, true);
    const Item it{heads_[s].ts, static_cast<uint8_t>(heads_[s].type == log::kWait ? 0 : 1), s, 0};
    if (at_top) heads_heap_.ReplaceTop(it);
    else heads_heap_.Push(it);
  } else {
    head_valid_[s] = 0;
    if (at_top) heads_heap_.PopTop();
    if (!cursors_[s]->status().ok() && error_.empty()) error_ = cursors_[s]->status().message();
    cursors_[s].reset();  // frees the window
  }
}

Status Replay::Run() {
  const auto& streams = logs_.streams();
  const auto& files = logs_.files();
  threshold_ = opts_.block_threshold_ns;  // record times are in ns
  skew_ = opts_.skew_tolerance_ns;

  // Pre-pass: one thread per stream, goroutine ids, creation links.
  threads_.resize(streams.size());
  cursors_.resize(streams.size());
  heads_.resize(streams.size());
  head_valid_.assign(streams.size(), 0);
  head_consumed_.assign(streams.size(), 0);
  head_early_.assign(streams.size(), 0);
  release_pos_.assign(streams.size(), kNoThread);
  std::unordered_map<uint64_t, bool> goid_used;
  Tick t0 = std::numeric_limits<Tick>::max();
  for (const auto& f : files) t0 = std::min(t0, f.cut_ns != 0 ? f.cut_ns : f.header.start_ns);
  kernel_.assign(files.size(), 0);
  meta_.assign(files.size(), FileMeta{});
  for (uint32_t s = 0; s < streams.size(); ++s) {
    const log::Stream& st = streams[s];
    t0 = std::min(t0, st.first_ts);
    if (st.serial == log::kKernelSerial) {
      kernel_[st.file] = 1;
      if (kernel_from_.size() < files.size()) kernel_from_.resize(files.size(), 0);
      kernel_from_[st.file] = st.first_ts;
      if (ahead_.size() < files.size()) ahead_.resize(files.size());
      ahead_[st.file].stream = s;
      continue;
    }
    if (st.serial == log::kProcessSerial) continue;
    by_tid_[(uint64_t{st.file} << 32) | st.tid].push_back(s);
    by_serial_[(uint64_t{st.file} << 32) | st.serial] = s;
    Thread& t = threads_[s];
    t.file = st.file;
    t.tid = st.tid;
    t.goid = (st.tid != 0 && goid_used.emplace(st.tid, true).second) ? st.tid : next_goid_++;
    if (st.has_thread_start) {
      t.self = st.start.self;
      t.start_pc = st.start.start_pc;
      t.is_main = (st.start.flags & log::kThreadMain) != 0;
      if (st.start.create_id != 0) creates_.emplace(CreateKey(st.file, st.start.create_id), s);
    }
  }
  for (auto& [key, list] : by_tid_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return streams[a].first_ts < streams[b].first_ts;
    });
  }
  stats_->start_ns = t0;
  now_ = t0;
  Snapshot(t0);
  now_ = t0 + 1;  // nothing else shares the snapshot's tick (Go >= 1.23 reads it as "at start")

  for (uint32_t s = 0; s < streams.size(); ++s) Advance(s, false);
  while (error_.empty()) {
    const bool have_head = !heads_heap_.empty();
    const bool have_end = !ends_heap_.empty();
    if (!have_head && !have_end) break;
    if (have_end && (!have_head || heads_heap_.top() > ends_heap_.top())) {
      const Item it = ends_heap_.top();
      ends_heap_.PopTop();
      Thread& t = threads_[it.index];
      if (it.gen != t.wait_gen ||
          (!Kernel(t.file) && t.st != TSt::kBlocked && t.st != TSt::kWoken &&
           t.st != TSt::kSyscall)) {
        continue;  // stale: the wait was already finished by a later record
      }
      now_ = std::max(now_, it.ts);
      if (Kernel(t.file)) OnWaitEndK(t);
      else FinishWait(t, Cpu(t.wait_cpu_end));
      continue;
    }
    const uint32_t s = heads_heap_.top().index;
    IndexHead(s, false);
    head_valid_[s] = 0;
    now_ = std::max(now_, heads_[s].ts);
    if (head_early_[s]) {
      head_early_[s] = 0;  // processed already (SwitchOut)
    } else {
      ++stats_->records;
      OnRecord(s, heads_[s]);
    }
    Advance(s, true);  // OnRecord never touches heads_heap_, so s is still on top
  }
  if (!error_.empty()) return Status::Error(error_);

  Tick end = std::max(now_, end_);
  const bool killed_end =
      opts_.killed_end_ns > end &&
      std::none_of(meta_.begin(), meta_.end(), [](const FileMeta& m) { return m.ended; });
  if (killed_end) end = opts_.killed_end_ns;
  EndOfTrace(end);
  // A trace lasts to its last event. Where every thread was blocked at the
  // end, there is none then: a process killed so, or a window or flight
  // snapshot of an idle service, which would end at its last record, not
  // when it was taken. The same Gomaxprocs once more marks the end (an event
  // no reader checks; the model's Ps never change).
  if (last_event_ < end) Emit(0, go::kEvGomaxprocs, {nprocs_, 0});
  stats_->end_ns = now_;
  // Scheduling came from the kernel where its records are in the log, and
  // also where the process had the kernel's events open, read them at its
  // end, and the kernel had nothing to say (a run of a few ms that never
  // left its CPU: the model's timeline is then the kernel's, and the
  // summary said "inferred"). A killed process never read them at its end.
  for (size_t f = 0; f < kernel_.size(); ++f)
    stats_->kernel_processes += kernel_[f] || (meta_[f].sched == "kernel" && meta_[f].ended) ? 1 : 0;
  WriteMeta();
  if (checker_) {
    std::string e = checker_->Finish();
    if (!e.empty()) return Status::Error("internal error: invalid trace at the end: " + e);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Model

uint64_t Replay::StartStackOf(const Thread& t, uint64_t creator_stack) {
  const char* fallback = t.is_main ? StackTable::kMainRoutine : "thread";
  return stacks_->StartStack(t.file, t.start_pc, creator_stack, fallback, Index(t) + 1);
}

void Replay::Snapshot(Tick t0) {
  // Gomaxprocs first, so that the threads that exist at the start are
  // created after it: Go 1.21+ (internal/trace's oldtrace converter) drops
  // the start stack of goroutines created before it and names them by the
  // outermost frame of a later stack instead, where 1.19 names them by
  // their start stack. Created after it, every version reads the same name.
  Emit(0, go::kEvGomaxprocs, {nprocs_, 0});
  const auto& streams = logs_.streams();
  for (uint32_t s = 0; s < streams.size(); ++s) {
    const log::Stream& st = streams[s];
    if (st.serial == log::kProcessSerial || st.serial == log::kKernelSerial) continue;
    const bool existed =
        !st.has_thread_start ||
        ((st.start.create_id == 0 || (st.start.flags & log::kThreadExisted) != 0) &&
         (st.start.flags & log::kThreadLate) == 0);
    if (!existed) continue;
    Thread& t = threads_[s];
    Emit(0, go::kEvGoCreate, {t.goid, StartStackOf(t, 0), 0});
    t.st = TSt::kRunnable;
    t.seq = 0;
    ++stats_->threads;
    ++stats_->snapshot_threads;
  }
  (void)t0;
  // Go 1.21+ read this format through internal/trace's oldtrace converter, which takes the
  // first Gomaxprocs as the end of the start snapshot and drops it, so without a second one
  // their MMU (/mmu?mode=plot: MutatorUtilizationV2) sees no GOMAXPROCS and panics. The same
  // value again changes nothing for Go 1.19.
  Emit(0, go::kEvGomaxprocs, {nprocs_, 0});
}

void Replay::Deschedule(Thread& t, go::EvType how) {
  const uint32_t p = t.p;
  Emit(p, how, {0});
  procs_[p].running = kNoThread;
  t.st = TSt::kRunnable;
}

void Replay::ClearProc(uint32_t c, const Thread* except) {
  const uint32_t v = procs_[c].running;
  if (v == kNoThread || (except != nullptr && v == Index(*except))) return;
  Deschedule(threads_[v], go::kEvGoPreempt);
  ++stats_->preemptions;
}

void Replay::StartProc(uint32_t c, const Thread& t) {
  if (procs_[c].started) return;
  Emit(c, go::kEvProcStart, {t.tid});
  procs_[c].started = true;
}

void Replay::StopIfIdle(uint32_t c) {
  if (procs_[c].started && procs_[c].running == kNoThread) {
    Emit(c, go::kEvProcStop, {});
    procs_[c].started = false;
  }
}

void Replay::EnsureOn(Thread& t, uint32_t c) {
  switch (t.st) {
    case TSt::kRunning:
      if (t.p == c) return;
      {
        const uint32_t old = t.p;  // migration
        Deschedule(t, go::kEvGoPreempt);
        StopIfIdle(old);
        ++stats_->migrations;
      }
      break;
    case TSt::kNotCreated:
      // First seen without a creation we could link: created by g0 here.
      ClearProc(c, nullptr);
      StartProc(c, t);
      Emit(c, go::kEvGoCreate, {t.goid, StartStackOf(t, 0), 0});
      t.st = TSt::kRunnable;
      t.seq = 0;
      ++stats_->threads;
      break;
    case TSt::kBlocked:
    case TSt::kWoken:
    case TSt::kSyscall:
      // A record while we believe the thread waits: the wait is over (its
      // end record was lost, or it is open). FinishWait starts it on c.
      FinishWait(t, c);
      return;
    case TSt::kRunnable:
      break;
    case TSt::kDead:
      return;
  }
  ClearProc(c, &t);
  StartProc(c, t);
  Emit(c, go::kEvGoStart, {t.goid, ++t.seq});
  procs_[c].running = Index(t);
  t.st = TSt::kRunning;
  t.p = c;
}

void Replay::Register(Thread& t, uint64_t obj) {
  Unregister(t);
  t.wait_obj = obj;
  if (obj == 0) return;
  waiters_[ObjKey{t.file, obj}].push_back(Index(t));
  t.wait_registered = true;
}

void Replay::Unregister(Thread& t) {
  if (!t.wait_registered) return;
  t.wait_registered = false;
  auto it = waiters_.find(ObjKey{t.file, t.wait_obj});
  if (it == waiters_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), Index(t)), v.end());
  if (v.empty()) waiters_.erase(it);
}

// The thread resumes on P c: whoever woke it (if anyone) already emitted the
// GoUnblock; otherwise g0 does, on c, just before the start.
void Replay::FinishWait(Thread& t, uint32_t c) {
  if (t.st == TSt::kBlocked && t.wait_registered) SkewWake(t);
  Unregister(t);
  ++t.wait_gen;  // any pending end entry is now stale
  if (t.st == TSt::kBlocked || t.st == TSt::kSyscall) {
    ClearProc(c, nullptr);
    StartProc(c, t);
    if (t.st == TSt::kBlocked) {
      Emit(c, go::kEvGoUnblock, {t.goid, ++t.seq, 0});
      ++stats_->wakeups_g0;
    } else {
      Emit(c, go::kEvGoSysExit, {t.goid, ++t.seq, 0});
    }
  }
  t.st = TSt::kRunnable;
  EnsureOn(t, c);
}

// Clock skew: the releaser's record may carry a time slightly after the
// waiter's resumption. If another running thread's next record releases the
// awaited object within the tolerance, it is the waker.
bool Replay::SkewWake(Thread& t) {
  for (uint32_t s : release_heads_) {
    if (s == Index(t) || !head_valid_[s]) continue;
    const Record& h = heads_[s];
    if (h.release.obj != t.wait_obj || logs_.streams()[s].file != t.file) continue;
    if (h.ts > now_ + skew_) continue;
    Thread& u = threads_[s];
    if (u.st != TSt::kRunning) continue;
    if (h.release.count != 0 && head_consumed_[s] >= h.release.count) continue;
    Emit(u.p, go::kEvGoUnblock, {t.goid, ++t.seq, stacks_->Ref(u.file, h.release.stack)});
    ++head_consumed_[s];
    t.st = TSt::kWoken;
    ++stats_->wakeups_linked;
    ++stats_->wakeups_skewed;
    return true;
  }
  return false;
}

void Replay::OnWait(Thread& t, uint32_t c, const Record& r) {
  const auto kind = static_cast<WaitKind>(r.wait.kind);
  const bool open = (r.wait.flags & log::kWaitOpen) != 0;
  const uint64_t stk = stacks_->Ref(t.file, r.wait.stack);
  const bool io = kind == WaitKind::kSyscall || kind == WaitKind::kNet;
  if (io && !open && r.wait.duration < threshold_) {
    Emit(c, go::kEvGoSysCall, {stk});  // short: the thread keeps its P
    return;
  }
  NoteKind(stk, static_cast<uint8_t>(kind));
  if (kind == WaitKind::kSyscall) {
    Emit(c, go::kEvGoSysCall, {stk});
    Emit(c, go::kEvGoSysBlock, {});
    t.st = TSt::kSyscall;
  } else {
    Emit(c, BlockEvent(kind), {stk});
    t.st = TSt::kBlocked;
  }
  procs_[c].running = kNoThread;
  StopIfIdle(c);
  t.wait_obj = r.wait.obj;
  t.wait_open = open;
  t.wait_end = open ? std::numeric_limits<Tick>::max() : r.ts + r.wait.duration;
  t.wait_cpu_end = static_cast<uint32_t>(r.wait.cpu_end);
  ++t.wait_gen;
  if (IsWakeable(kind) && r.wait.obj != 0) {
    waiters_[ObjKey{t.file, r.wait.obj}].push_back(Index(t));
    t.wait_registered = true;
  }
  if (!open) ends_heap_.Push(Item{t.wait_end, 2, Index(t), t.wait_gen});
}

void Replay::OnRelease(Thread& u, uint32_t c, uint64_t obj, uint64_t count, uint64_t stack,
                       uint32_t already_woken) {
  auto it = waiters_.find(ObjKey{u.file, obj});
  if (it == waiters_.end()) return;
  uint64_t budget = count == 0 ? std::numeric_limits<uint64_t>::max()
                               : (count > already_woken ? count - already_woken : 0);
  if (budget == 0) return;
  // Wake the waiters that resume first: a mutex handoff or a cond signal
  // releases one waiter, and it is the one whose wait ends next.
  scratch_.clear();
  const bool kernel = Kernel(u.file);
  for (uint32_t ti : it->second) {
    const Thread& w = threads_[ti];
    if (ti == Index(u)) continue;
    // Kernel mode: a waiter still on its CPU (about to sleep) is woken too,
    // once it sleeps (SwitchOut); one already woken is not woken again.
    if (w.st == TSt::kBlocked || (kernel && w.st == TSt::kRunning && w.pend_waker == kNoThread))
      scratch_.push_back(ti);
  }
  // Kernel mode: those asleep first, the one the kernel runs next first
  // (read ahead). Otherwise the one whose wait ends first.
  if (kernel) {
    next_in_.clear();
    for (uint32_t ti : scratch_) next_in_[ti] = NextSwitchIn(u.file, threads_[ti].tid);
  }
  std::sort(scratch_.begin(), scratch_.end(), [this, kernel](uint32_t a, uint32_t b) {
    const Thread& x = threads_[a];
    const Thread& y = threads_[b];
    if ((x.st == TSt::kBlocked) != (y.st == TSt::kBlocked)) return x.st == TSt::kBlocked;
    if (kernel && next_in_[a] != next_in_[b]) return next_in_[a] < next_in_[b];
    return x.wait_end != y.wait_end ? x.wait_end < y.wait_end : a < b;
  });
  const uint64_t stk = stacks_->Ref(u.file, stack);
  for (uint32_t ti : scratch_) {
    if (budget-- == 0) break;
    Thread& t = threads_[ti];
    if (t.st == TSt::kRunning) {
      t.pend_waker = Index(u);
      t.pend_stack = stk;
      continue;
    }
    Emit(c, go::kEvGoUnblock, {t.goid, ++t.seq, stk});
    t.st = TSt::kWoken;
    // Kernel mode keeps the waiter registered until its wait ends: woken,
    // it may sleep again in the same call (a mutex taken by another thread
    // first) and be woken by the next release.
    if (!kernel) Unregister(t);
    ++stats_->wakeups_linked;
  }
}

void Replay::OnCreate(Thread& u, uint32_t c, const Record& r) {
  const uint64_t stk = stacks_->Ref(u.file, r.create.stack);
  auto it = creates_.find(CreateKey(u.file, r.create.create_id));
  if (it != creates_.end()) {
    Thread& child = threads_[it->second];
    if (child.st != TSt::kNotCreated) return;  // already started (clock skew)
    if (child.start_pc == 0) child.start_pc = r.create.start_pc;
    Emit(c, go::kEvGoCreate, {child.goid, StartStackOf(child, r.create.stack), stk});
    child.st = TSt::kRunnable;
    child.seq = 0;
    ++stats_->threads;
    return;
  }
  // The new thread left no log (it never ran, or its log was lost): a
  // goroutine that stays runnable, so the creation is still visible.
  Thread phantom;
  phantom.goid = next_goid_++;
  phantom.file = u.file;
  phantom.start_pc = r.create.start_pc;
  phantom.st = TSt::kRunnable;
  Emit(c, go::kEvGoCreate, {phantom.goid, StartStackOf(phantom, r.create.stack), stk});
  ++stats_->threads;
}

void Replay::OnRecord(uint32_t s, const Record& r) {
  const log::Stream& st = logs_.streams()[s];
  switch (r.type) {
    case log::kStackDef: {
      log::StackDefFields d;
      if (log::ParseStackDef(r, &d))
        stacks_->Define(st.file, d.id, d.epoch, std::move(d.pcs), d.truncated);
      return;
    }
    case log::kModuleLoad: {
      log::ModuleLoadFields m;
      if (log::ParseModuleLoad(r, &m) && syms_[st.file]) syms_[st.file]->ModuleLoaded(m);
      return;
    }
    case log::kModuleUnload: {
      log::ModuleUnloadFields m;
      if (log::ParseModuleUnload(r, &m) && syms_[st.file]) syms_[st.file]->ModuleUnloaded(m);
      return;
    }
    case log::kTraceEnd: {
      log::TraceEndFields e;
      if (log::ParseTraceEnd(r, &e)) {
        stats_->dropped_records += e.dropped_records;
        meta_[st.file].dropped += e.dropped_records;
      }
      meta_[st.file].ended = true;
      end_ = std::max(end_, r.ts);
      return;
    }
    case log::kSchedInfo: {
      log::SchedInfoFields si;
      if (log::ParseSchedInfo(r, &si)) {
        meta_[st.file].sched = si.source == log::kSchedKernel ? "kernel" : "infer";
        meta_[st.file].cpu_hz = si.cpu_hz;
        meta_[st.file].why = si.why;
      }
      return;
    }
    case log::kProcessInfo: {
      log::ProcessInfoFields pi;
      if (log::ParseProcessInfo(r, &pi)) meta_[st.file].argv = std::move(pi.argv);
      return;
    }
    case log::kThreadName: {
      // Serial 0: this stream's thread. It may come after the thread's
      // GoCreate (written as it ends): the stack table names at the end.
      log::ThreadNameFields tn;
      if (!log::ParseThreadName(r, &tn)) return;
      uint32_t idx = s;
      if (tn.serial != 0) {
        auto it = by_serial_.find((uint64_t{st.file} << 32) | tn.serial);
        if (it == by_serial_.end()) return;
        idx = it->second;
      } else if (st.serial == log::kProcessSerial || st.serial == log::kKernelSerial) {
        return;
      }
      stacks_->ThreadName(idx + 1, std::move(tn.name));
      return;
    }
    case log::kThreadCpu:
    case log::kThreadCpuBase: {
      log::ThreadCpuFields tc;
      if (!log::ParseThreadCpu(r, &tc)) return;
      auto it = by_serial_.find((uint64_t{st.file} << 32) | tc.serial);
      if (it == by_serial_.end()) return;
      if (r.type == log::kThreadCpuBase) cpu_base_[threads_[it->second].goid] = tc.ns;
      else cpu_ns_[threads_[it->second].goid] = tc.ns;
      return;
    }
    default:
      break;
  }
  // A variable record of a newer writer, or one not about the thread's state.
  if (r.type >= log::kFirstVarRecord && !UserAnnotations::Handles(r.type)) return;
  if (st.serial == log::kKernelSerial) {
    OnKernelRecord(st.file, Cpu(r.cpu), r);
    return;
  }
  if (st.serial == log::kProcessSerial) {
    ++stats_->ignored_records;  // thread records belong to thread streams
    return;
  }
  Thread& t = threads_[s];
  if (t.st == TSt::kDead) {
    ++stats_->ignored_records;
    return;
  }
  const uint32_t c = Cpu(r.cpu);
  const bool kernel = Kernel(t.file);
  if (kernel) EnsureRunningK(t, c);
  else EnsureOn(t, c);
  const uint32_t here = kernel ? t.p : c;  // in kernel mode the kernel knows the CPU
  switch (r.type) {
    case log::kThreadStart:
      if (r.start.self != 0) t.self = r.start.self;
      break;
    case log::kThreadEnd:
      OnRelease(t, here, t.self, 0, 0, 0);  // joiners wake from the exiting thread
      if (t.in_wait_k()) Unregister(t);
      ann_.CloseAll(t.goid, here);
      Emit(here, go::kEvGoEnd, {});
      procs_[here].running = kNoThread;
      t.st = TSt::kDead;
      StopIfIdle(here);
      break;
    case log::kThreadCreate:
      OnCreate(t, here, r);
      break;
    case log::kWait:
      if (kernel) OnWaitK(t, here, r);
      else OnWait(t, c, r);
      break;
    case log::kRelease:
      OnRelease(t, here, r.release.obj, r.release.count, r.release.stack, head_consumed_[s]);
      break;
    case log::kHeap:
      Emit(here, go::kEvHeapAlloc, {r.heap.bytes});
      break;
    case log::kCpuTime:
      cpu_ns_[t.goid] = r.cputime.ns;
      break;
    default:
      if (UserAnnotations::Handles(r.type)) ann_.OnRecord(t.file, t.goid, here, r);
      break;
  }
}

// ---------------------------------------------------------------------------
// The trace's notes about itself

namespace {
// Percent-encodes what is not a plain word character (values of key=value).
std::string Pct(const std::string& v) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : v) {
    if (std::isalnum(ch) || ch == '.' || ch == '_' || ch == '/' || ch == '-' || ch == ':' ||
        ch == ',' || ch == '+') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

const char* KindWord(uint8_t k) {
  if (k == kKindOffCpu) return "offcpu";
  return log::WaitKindName(static_cast<WaitKind>(k));
}
}  // namespace

// Strings in the string table that no event names: Go's tools ignore them,
// `gotrace report` reads them (README, "Reading a trace without Go"):
//   gotrace-meta:v1 pid=N sched=kernel|infer cpu_hz=N lost=N dropped=N
//                   [full=N full_at=NS] cmd=.. why=..
//     full: rings the process found still full at its last read, whose
//     records after full_at (ns into the trace) may be missing
//   gotrace-kinds:v1 STACK=KIND ...   the wait behind each block event's stack
//   gotrace-cpu:v1 G=NS ...           each goroutine's CPU time, by the kernel
// Lists are cut into strings of at most ~900 bytes.
void Replay::WriteMeta() {
  const auto& files = logs_.files();
  for (size_t f = 0; f < files.size(); ++f) {
    const FileMeta& m = meta_[f];
    const std::string cmd = CommandLine(m.argv);
    std::string line = "gotrace-meta:v1 pid=" + std::to_string(files[f].header.pid) +
                       " sched=" + m.sched + " cpu_hz=" + std::to_string(m.cpu_hz) +
                       " lost=" + std::to_string(m.lost) + " dropped=" + std::to_string(m.dropped);
    if (m.rings_full > 0)
      line += " full=" + std::to_string(m.rings_full) + " full_at=" + std::to_string(m.full_at);
    if (!cmd.empty()) line += " cmd=" + Pct(cmd.size() > 600 ? cmd.substr(0, 600) : cmd);
    if (!m.why.empty()) line += " why=" + Pct(m.why);
    w_->String(line);
  }
  auto lists = [this](const char* head, auto&& items) {
    std::string line = head;
    for (const std::string& item : items) {
      if (line.size() + item.size() + 1 > 900) {
        w_->String(line);
        line = head;
      }
      line += " " + item;
    }
    if (line.size() > std::string(head).size()) w_->String(line);
  };
  std::vector<std::string> kinds;
  for (const auto& [stk, k] : kinds_) kinds.push_back(std::to_string(stk) + "=" + KindWord(k));
  std::sort(kinds.begin(), kinds.end());
  lists("gotrace-kinds:v1", kinds);
  // A flight recorder's snapshot keeps the last span of the run: a thread
  // that existed at its cut used CPU time before it, which its count
  // (since the thread began) cannot tell apart. Unknown, rather than a
  // count larger than the trace shows it running (68 ms of CPU time for 0.2
  // ms running in a 2 s snapshot).
  std::unordered_set<uint64_t> before_cut;
  const auto& streams = logs_.streams();
  for (uint32_t i = 0; i < threads_.size() && i < streams.size(); ++i) {
    const Thread& t = threads_[i];
    if (t.file < files.size() && files[t.file].cut_ns != 0 &&
        streams[i].first_ts <= files[t.file].cut_ns)
      before_cut.insert(t.goid);
  }
  std::vector<std::string> cpu;
  for (const auto& [goid, ns] : cpu_ns_) {
    // A trace window's: the CPU time within it (kThreadCpuBase).
    const auto base = cpu_base_.find(goid);
    if (base == cpu_base_.end() && before_cut.count(goid) != 0) continue;
    const uint64_t in = base == cpu_base_.end() ? ns : ns - std::min(ns, base->second);
    cpu.push_back(std::to_string(goid) + "=" + std::to_string(in));
  }
  std::sort(cpu.begin(), cpu.end());
  lists("gotrace-cpu:v1", cpu);
}

// ---------------------------------------------------------------------------
// Kernel mode: the kernel's context switches decide where threads run; the
// interposers' records say why a thread left its CPU and who woke it.

Tick Replay::NextSwitchIn(uint32_t file, uint32_t tid) {
  constexpr Tick kHorizon = 5'000'000;  // ns
  Ahead& a = ahead_[file];
  while (!a.done && a.read_to <= now_ + kHorizon) {
    if (!a.cur) a.cur = std::make_unique<log::StreamCursor>(logs_, a.stream);
    Record r;
    if (!a.cur->Next(&r)) {
      a.done = true;
      a.cur.reset();
      break;
    }
    a.read_to = r.ts;
    if (r.type == log::kSwitch && !(r.sw.flags & log::kSwitchOut)) {
      const auto t = static_cast<uint32_t>(r.sw.tid);
      a.order.emplace_back(r.ts, t);
      a.by_tid[t].push_back(r.ts);
    }
  }
  while (!a.order.empty() && a.order.front().first < now_) {
    auto it = a.by_tid.find(a.order.front().second);
    if (it != a.by_tid.end() && !it->second.empty()) {
      it->second.pop_front();
      if (it->second.empty()) a.by_tid.erase(it);
    }
    a.order.pop_front();
  }
  auto it = a.by_tid.find(tid);
  return it == a.by_tid.end() || it->second.empty() ? std::numeric_limits<Tick>::max()
                                                    : it->second.front();
}

Thread* Replay::ThreadForTid(uint32_t file, uint64_t tid) {
  auto it = by_tid_.find((uint64_t{file} << 32) | (tid & 0xffffffffu));
  if (it == by_tid_.end()) return nullptr;  // not a thread we trace (ours, a raw clone)
  for (uint32_t ti : it->second) {
    Thread& t = threads_[ti];
    if (t.st != TSt::kDead) return t.st == TSt::kNotCreated ? nullptr : &t;
  }
  return nullptr;
}

void Replay::SwitchIn(Thread& t, uint32_t c) {
  if (t.st == TSt::kRunning) {
    if (t.p == c) return;
    const uint32_t old = t.p;  // its switch out was lost
    Deschedule(t, go::kEvGoPreempt);
    StopIfIdle(old);
    ++stats_->migrations;
  }
  ClearProc(c, &t);
  StartProc(c, t);
  if (t.st == TSt::kBlocked) {
    if (!(t.wait_registered && SkewWake(t))) {
      Emit(c, go::kEvGoUnblock, {t.goid, ++t.seq, 0});
      ++stats_->wakeups_g0;
    }
  } else if (t.st == TSt::kSyscall) {
    Emit(c, go::kEvGoSysExit, {t.goid, ++t.seq, 0});
  }
  Emit(c, go::kEvGoStart, {t.goid, ++t.seq});
  procs_[c].running = Index(t);
  t.st = TSt::kRunning;
  t.p = c;
  // Woken in a condition wait (signalled, or timed out): what it may wait
  // for next, inside the same call, is the mutex.
  if (t.in_wait_k() && t.wait_obj2 != 0 && t.wait_obj != t.wait_obj2) Register(t, t.wait_obj2);
}

void Replay::SwitchOut(Thread& t, bool preempt) {
  if (t.st != TSt::kRunning) return;  // its switch in was lost, or it was never started
  const uint32_t p = t.p;
  if (preempt) {
    Deschedule(t, go::kEvGoPreempt);
    ++stats_->preemptions;
    StopIfIdle(p);
    return;
  }
  // The kernel's clock and the interposers' agree to a microsecond or so,
  // and a wait's record is taken just before the call: a voluntary switch
  // a hair before the thread's next record, a wait, belongs to that wait,
  // unless the kernel ran the thread again before that wait began: then it
  // left its CPU for something else first (a page fault, a lock of the
  // kernel's; seen on a new thread's first record), and was back in time
  // to make the call (the sleepers scenario showed such a 7 us trip as a
  // second sleep).
  const uint32_t s = Index(t);
  if (!t.in_wait_k() && s < heads_.size() && head_valid_[s] && !head_early_[s] &&
      heads_[s].type == log::kWait && heads_[s].ts <= now_ + kClockSlack &&
      NextSwitchIn(t.file, t.tid) + kClockAgree >= heads_[s].ts) {
    head_early_[s] = 1;
    ++stats_->records;
    OnWaitK(t, p, heads_[s]);
  }
  t.wait_switched = t.in_wait_k();
  if (t.wait_mode == kWaitSyscall) {
    NoteKind(t.wait_stack, static_cast<uint8_t>(WaitKind::kSyscall));
    Emit(p, go::kEvGoSysBlock, {});
    t.st = TSt::kSyscall;
  } else if (t.wait_mode == kWaitBlocks) {
    NoteKind(t.wait_stack, static_cast<uint8_t>(t.wait_kind));
    Emit(p, BlockEvent(t.wait_kind), {t.wait_stack});
    t.st = TSt::kBlocked;
  } else {
    // Off the CPU outside any wait an interposer recorded: an uninterposed
    // futex, a page fault that reads the disk, a raw syscall instruction.
    const uint64_t off = stacks_->StartStack(t.file, 0, 0, kOffCpuFrame);
    NoteKind(off, kKindOffCpu);
    Emit(p, go::kEvGoBlock, {off});
    t.st = TSt::kBlocked;
    ++stats_->offcpu_blocks;
  }
  procs_[p].running = kNoThread;
  // Released while it was still on its CPU: its waker wakes it now, if the
  // waker still runs (else the kernel's switch in is unblocked by g0).
  if (t.st == TSt::kBlocked && t.pend_waker != kNoThread) {
    Thread& u = threads_[t.pend_waker];
    if (u.st == TSt::kRunning) {
      Emit(u.p, go::kEvGoUnblock, {t.goid, ++t.seq, t.pend_stack});
      t.st = TSt::kWoken;
      ++stats_->wakeups_linked;
    }
    t.pend_waker = kNoThread;
  }
  StopIfIdle(p);
}

void Replay::EnsureRunningK(Thread& t, uint32_t c) {
  if (t.st == TSt::kRunning) return;
  if (t.st == TSt::kNotCreated) {
    EnsureOn(t, c);  // first seen without a creation we could link
    return;
  }
  // A record while the kernel had the thread off its CPU: a switch record
  // lost, or clocks a hair apart. It ran here.
  ++stats_->implicit_starts;
  SwitchIn(t, c);
}

void Replay::OnKernelRecord(uint32_t file, uint32_t c, const Record& r) {
  switch (r.type) {
    case log::kSwitch: {
      Thread* t = ThreadForTid(file, r.sw.tid);
      if (t == nullptr) return;
      ++stats_->switches;
      if (r.sw.flags & log::kSwitchOut) SwitchOut(*t, (r.sw.flags & log::kSwitchPreempt) != 0);
      else SwitchIn(*t, c);
      return;
    }
    case log::kCpuSample: {
      const Thread* t = ThreadForTid(file, r.sample.tid);
      const uint64_t g = t != nullptr ? t->goid : 0;
      Emit(c, go::kEvCPUSample, {now_, c, g, stacks_->Ref(file, r.sample.stack)});
      ++stats_->cpu_samples;
      return;
    }
    case log::kKernelLost: {
      FileMeta& m = meta_[file];
      if (r.lost.count == log::kRingFull) {
        const uint64_t at = r.ts > stats_->start_ns ? r.ts - stats_->start_ns : 0;
        m.full_at = m.rings_full == 0 ? at : std::min(m.full_at, at);
        stats_->kernel_full_at =
            stats_->kernel_rings_full == 0 ? at : std::min(stats_->kernel_full_at, at);
        ++m.rings_full;
        ++stats_->kernel_rings_full;
        return;
      }
      stats_->kernel_lost += r.lost.count;
      m.lost += r.lost.count;
      return;
    }
    default:
      return;
  }
}

void Replay::OnWaitK(Thread& t, uint32_t c, const Record& r) {
  const auto kind = static_cast<WaitKind>(r.wait.kind);
  const bool open = (r.wait.flags & log::kWaitOpen) != 0;
  const uint64_t stk = stacks_->Ref(t.file, r.wait.stack);
  // A system call (or a short network wait) is a GoSysCall whether or not
  // it blocks; it blocks the goroutine only if the kernel switches the
  // thread out during it. Every other wait blocks it then, with its reason.
  // A network wait is a network call too: a GoSysCall, then, if it sleeps
  // for long enough, GoBlockNet (the net profile, woken by the netpoller).
  const bool syscall = kind == WaitKind::kSyscall ||
                       (kind == WaitKind::kNet && !open && r.wait.duration < threshold_);
  if (syscall || kind == WaitKind::kNet) Emit(c, go::kEvGoSysCall, {stk});
  Unregister(t);
  t.wait_mode = syscall ? kWaitSyscall : kWaitBlocks;
  t.wait_kind = kind;
  t.wait_stack = stk;
  t.wait_obj = r.wait.obj;
  t.wait_obj2 = kind == WaitKind::kCond ? r.wait.aux : 0;
  t.wait_switched = false;
  t.wait_open = open;
  t.wait_end = open ? std::numeric_limits<Tick>::max() : r.ts + r.wait.duration;
  t.wait_cpu_end = static_cast<uint32_t>(r.wait.cpu_end);
  t.pend_waker = kNoThread;
  ++t.wait_gen;
  if (IsWakeable(kind)) Register(t, r.wait.obj);
  if (!open) ends_heap_.Push(Item{t.wait_end, 2, Index(t), t.wait_gen});
  // Begun before the kernel's records did: it went off the CPU (as the
  // inferred model judges it: long enough) with no switch-out to say so.
  // So did one that began before a flight recorder's cut (the reader moved
  // its start to the cut): its switch-out went with the older chunks, and
  // the thread, runnable since the trace's start, was blocked all along
  // (redis's idle threads read runnable 100% in a snapshot).
  const bool before_kernel = t.file < kernel_from_.size() && r.ts < kernel_from_[t.file];
  const Tick cut = t.file < logs_.files().size() ? logs_.files()[t.file].cut_ns : 0;
  const bool at_cut = cut != 0 && r.ts <= cut;
  if ((before_kernel || at_cut) && (open || r.wait.duration >= threshold_)) {
    if (at_cut && t.st == TSt::kRunnable) SwitchIn(t, c);
    if (t.st == TSt::kRunning) SwitchOut(t, false);
  }
}

// The wait's end: the thread is back in the program. If the kernel did not
// report it running again (a lost record), it runs from here.
void Replay::OnWaitEndK(Thread& t) {
  Unregister(t);
  t.wait_mode = kWaitNone;
  t.pend_waker = kNoThread;
  ++t.wait_gen;
  if (t.st == TSt::kBlocked || t.st == TSt::kSyscall || t.st == TSt::kWoken) {
    ++stats_->implicit_starts;
    SwitchIn(t, Cpu(t.wait_cpu_end));
  }
}

void Replay::EndOfTrace(Tick end) {
  now_ = std::max(now_, end);
  for (uint32_t c = 0; c < nprocs_; ++c) {
    const uint32_t v = procs_[c].running;
    if (v != kNoThread) {
      ann_.CloseAll(threads_[v].goid, c);  // the trace ends them where it ends
      Deschedule(threads_[v], go::kEvGoSched);
    }
    StopIfIdle(c);
  }
}

}  // namespace

Status ReplayModel(const log::LogSet& logs, const ModelOptions& opts, GoTraceWriter* writer,
                   StackTable* stacks, const std::vector<Symbolizer*>& syms, ModelStats* stats) {
  Replay r(logs, opts, writer, stacks, syms, stats);
  return r.Run();
}

}  // namespace gotrace
