// SPDX-License-Identifier: Apache-2.0
//===-- encoder/sched_model.cc - OS threads as goroutines, CPUs as Ps -----===//
#include "encoder/sched_model.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

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
constexpr uint64_t kSyntheticGoidBase = uint64_t{1} << 22;  // above PID_MAX_LIMIT

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
        checker_(opts.check ? std::make_unique<TraceChecker>(nprocs_) : nullptr) {}

  Status Run();

 private:
  struct Proc {
    bool started = false;
    uint32_t running = kNoThread;  // thread index
  };

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

  std::vector<Thread> threads_;  // one per stream, then phantoms
  std::vector<std::unique_ptr<log::StreamCursor>> cursors_;
  std::vector<Record> heads_;
  std::vector<uint8_t> head_valid_;
  std::vector<uint32_t> head_consumed_;  // wakes given early by SkewWake
  // Streams whose head is a kRelease (unordered), and each stream's index in
  // it (or kNoThread): what SkewWake scans.
  std::vector<uint32_t> release_heads_;
  std::vector<uint32_t> release_pos_;
  std::unordered_map<ObjKey, std::vector<uint32_t>, ObjKeyHash> waiters_;
  std::unordered_map<uint64_t, uint32_t> creates_;  // (file << 48 ^ create_id) -> thread
  MinHeap heads_heap_;  // one item per stream with a valid head
  MinHeap ends_heap_;   // pending wait ends
  Tick now_ = 0;
  Tick end_ = 0;
  Tick threshold_ = 0;
  Tick skew_ = 0;
  uint64_t next_goid_ = kSyntheticGoidBase;
  std::vector<uint32_t> scratch_;
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
  release_pos_.assign(streams.size(), kNoThread);
  std::unordered_map<uint64_t, bool> goid_used;
  Tick t0 = std::numeric_limits<Tick>::max();
  for (const auto& f : files) t0 = std::min(t0, f.header.start_ns);
  for (uint32_t s = 0; s < streams.size(); ++s) {
    const log::Stream& st = streams[s];
    t0 = std::min(t0, st.first_ts);
    if (st.serial == log::kProcessSerial || st.serial == log::kKernelSerial) continue;
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
          (t.st != TSt::kBlocked && t.st != TSt::kWoken && t.st != TSt::kSyscall)) {
        continue;  // stale: the wait was already finished by a later record
      }
      now_ = std::max(now_, it.ts);
      FinishWait(t, Cpu(t.wait_cpu_end));
      continue;
    }
    const uint32_t s = heads_heap_.top().index;
    IndexHead(s, false);
    head_valid_[s] = 0;
    now_ = std::max(now_, heads_[s].ts);
    ++stats_->records;
    OnRecord(s, heads_[s]);
    Advance(s, true);  // OnRecord never touches heads_heap_, so s is still on top
  }
  if (!error_.empty()) return Status::Error(error_);

  EndOfTrace(std::max(now_, end_));
  stats_->end_ns = now_;
  if (checker_) {
    std::string e = checker_->Finish();
    if (!e.empty()) return Status::Error("internal error: invalid trace at the end: " + e);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Model

uint64_t Replay::StartStackOf(const Thread& t, uint64_t creator_stack) {
  const char* fallback = t.is_main ? "main" : "thread";
  return stacks_->StartStack(t.file, t.start_pc, creator_stack, fallback);
}

void Replay::Snapshot(Tick t0) {
  const auto& streams = logs_.streams();
  for (uint32_t s = 0; s < streams.size(); ++s) {
    const log::Stream& st = streams[s];
    if (st.serial == log::kProcessSerial || st.serial == log::kKernelSerial) continue;
    const bool existed = !st.has_thread_start || st.start.create_id == 0 ||
                         (st.start.flags & log::kThreadExisted) != 0;
    if (!existed) continue;
    Thread& t = threads_[s];
    Emit(0, go::kEvGoCreate, {t.goid, StartStackOf(t, 0), 0});
    t.st = TSt::kRunnable;
    t.seq = 0;
    ++stats_->threads;
    ++stats_->snapshot_threads;
  }
  (void)t0;
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
  for (uint32_t ti : it->second)
    if (threads_[ti].st == TSt::kBlocked && ti != Index(u)) scratch_.push_back(ti);
  std::sort(scratch_.begin(), scratch_.end(), [this](uint32_t a, uint32_t b) {
    return threads_[a].wait_end != threads_[b].wait_end ? threads_[a].wait_end < threads_[b].wait_end
                                                        : a < b;
  });
  const uint64_t stk = stacks_->Ref(u.file, stack);
  for (uint32_t ti : scratch_) {
    if (budget-- == 0) break;
    Thread& t = threads_[ti];
    Emit(c, go::kEvGoUnblock, {t.goid, ++t.seq, stk});
    t.st = TSt::kWoken;
    Unregister(t);
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
      if (log::ParseTraceEnd(r, &e)) stats_->dropped_records += e.dropped_records;
      end_ = std::max(end_, r.ts);
      return;
    }
    default:
      break;
  }
  if (r.type >= log::kFirstVarRecord) return;  // a variable record of a newer writer
  if (st.serial == log::kProcessSerial || st.serial == log::kKernelSerial) {
    ++stats_->ignored_records;  // thread records belong to thread streams
    return;
  }
  Thread& t = threads_[s];
  if (t.st == TSt::kDead) {
    ++stats_->ignored_records;
    return;
  }
  const uint32_t c = Cpu(r.cpu);
  EnsureOn(t, c);
  switch (r.type) {
    case log::kThreadStart:
      if (r.start.self != 0) t.self = r.start.self;
      break;
    case log::kThreadEnd:
      OnRelease(t, c, t.self, 0, 0, 0);  // joiners wake from the exiting thread
      Emit(c, go::kEvGoEnd, {});
      procs_[c].running = kNoThread;
      t.st = TSt::kDead;
      StopIfIdle(c);
      break;
    case log::kThreadCreate:
      OnCreate(t, c, r);
      break;
    case log::kWait:
      OnWait(t, c, r);
      break;
    case log::kRelease:
      OnRelease(t, c, r.release.obj, r.release.count, r.release.stack, head_consumed_[s]);
      break;
    case log::kHeap:
      Emit(c, go::kEvHeapAlloc, {r.heap.bytes});
      break;
    default:
      break;
  }
}

void Replay::EndOfTrace(Tick end) {
  now_ = std::max(now_, end);
  for (uint32_t c = 0; c < nprocs_; ++c) {
    const uint32_t v = procs_[c].running;
    if (v != kNoThread) Deschedule(threads_[v], go::kEvGoSched);
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
