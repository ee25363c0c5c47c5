// SPDX-License-Identifier: Apache-2.0
//===-- preload/runtime.h - per-thread recording and the process log ------===//
//
// Each traced thread owns a ThreadRec and writes its records straight into
// a slot of the process's event log file, mapped into memory with
// MAP_SHARED (encoder/log_format.h, version 2): no lock, no allocation, and
// nothing to copy later. After each complete record the thread stores the
// chunk's new size in the slot header, so what it recorded is in the page
// cache at once: a process killed with SIGKILL loses nothing complete, and
// the exit path has nothing to collect (issue 20). A full slot is sealed in
// place and the thread maps a fresh one (one mmap at a fixed address).
//
// Concurrency protocol (exit vs. new slots): a thread taking a new slot
// increments `writers`, then checks the phase; the final flush sets the
// phase, then waits for `writers` to drain (sequentially consistent, so one
// of the two always sees the other). After that no thread takes a slot, and
// the final flush can count them and end the log.
//===----------------------------------------------------------------------===//
#pragma once

#include <errno.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "encoder/log_format.h"
#include "encoder/log_writer.h"
#include "preload/config.h"
#include "preload/sys/clock.h"
#include "unwind/cfi_unwind.h"

#define GT_ALWAYS_INLINE __attribute__((always_inline)) inline
#define GT_NOINLINE __attribute__((noinline))
#define GT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GT_EXPORT extern "C" __attribute__((visibility("default")))
// An exported function whose C++ name cannot be its symbol's (a name
// <stdio.h> renames, like fscanf): declared with GT_EXPORT_AS(symbol) after
// its parameters, then defined under its C++ name. preload/gen_exports.cmake
// exports `symbol`.
#define GT_EXPORT_AS(symbol) __asm__(#symbol) __attribute__((visibility("default")))

namespace gotrace {

using log::Tick;
using log::WaitKind;

enum class Phase : uint32_t {
  kUninit = 0,    // before the constructor: hooks pass through
  kReady = 1,     // recording
  kShutdown = 2,  // final flush done or in progress: hooks pass through
  kDisabled = 3,  // tracing off (configuration or an internal failure)
  kPaused = 4,    // ready, but not recording: between trace windows (issue 16)
};

// A stream of the log written in place: its current slot is mapped at
// `window` (slot_bytes of address space of its own, MAP_SHARED|MAP_FIXED).
struct SlotStream {
  log::ChunkWriter w;
  uint8_t* window = nullptr;
  uint32_t serial = 0;
  uint32_t tid = 0;
  uint32_t seq = 0;      // next chunk number
  uint32_t log_gen = 0;  // the log (g.log_gen) its home slot is in; 0: none mapped
  uint32_t file_gen = 0;  // the log whose file is mapped at `window` (0: plain memory)
  bool open = false;     // a chunk is open in the home slot
  uint32_t chunk_flags = 0;  // log::kChunkNsTime: the stream's times are ns, not ticks
  log::SlotHeader* hdr() const { return reinterpret_cast<log::SlotHeader*>(window); }
};

// A thread's recently captured stacks, by call site: a loop that waits at
// the same place again skips hashing and the shared depot (a direct-mapped
// cache indexed by the innermost return address).
struct StackCacheEntry {
  uint32_t n;
  uint32_t id;
  uint32_t epoch;
  uint32_t log_gen;  // the log whose stream the entry's id was used in
  uint64_t pcs[log::kMaxStackDepth];
};
inline constexpr size_t kStackCacheWays = 8;
inline constexpr size_t kWalkMemoWays = 4;

struct ThreadRec {
  SlotStream s;
  uint32_t index = 0;   // slot in the pool
  uintptr_t stack_lo = 0, stack_hi = 0;
  // A stack outside [stack_lo, stack_hi) that this thread was seen to run on
  // (a fiber, a signal stack): its 1 MiB window + 1, or 0. See OwnStack.
  uintptr_t foreign_window = 0;
  std::atomic<uint32_t> in_use{0};
  // The interposer's frame while the thread waits (the wait itself is
  // published in its slot header): the final flush unwinds a thread still
  // blocked in a system call from it.
  const void* wait_frame = nullptr;
  // Where the wait family's hook has the kernel write a reaped child's
  // usage when the caller asked for none (hooks_syscalls.cc, OnChildWait):
  // 144 more bytes on the stack took a traced shell's waitpid onto one more
  // stack page, a copy-on-write fault after each of its forks; the pool is
  // never copied on fork (issue 18).
  struct rusage reap_usage;
  Tick next_sync = 0;  // after this tick, the next record is followed by a clock sync
  uint32_t unw_gen = 0;  // libunwind: this thread's frame cache generation (0: none)
  // Who the thread is, from its first registration: a thread that moves to
  // a trace window's log (issue 16) starts its stream there with them.
  uintptr_t start_pc = 0;
  uint64_t self = 0;          // pthread_self()
  uint64_t thread_flags = 0;  // log::kThreadMain
  // Its kernel name as it ended while the process was ending (its own end
  // record is then the final flush's to write, by which time its /proc
  // entry may be gone): exit_named says exit_name holds it.
  char exit_name[16] = {};
  std::atomic<bool> exit_named{false};
  // Which walk each memo below last held (its start pc and sp), so that a
  // walk finds its memo, if any, without touching the others' pages (a
  // hint: each memo checks itself), and the stack id CaptureStack got for
  // that walk (0: none), in which log and epoch; then the next memo to
  // replace.
  struct WalkWay {
    uintptr_t pc, sp;
    uint32_t id, id_log_gen, id_epoch;
  };
  WalkWay walk_way[kWalkMemoWays] = {};
  uint32_t walk_next = 0;
  // Last, so that the fields above share one page. Not value-initialised:
  // a fresh record's memory is zero already (mmap), and zeroing 8 KiB cost
  // every process three page faults (12 us each on the VM measured). A
  // reused record's entries stay valid: a stack id stands for the same PCs
  // in the same epoch for the whole process.
  StackCacheEntry stack_cache[kStackCacheWays];
  // The thread's last walks (unwind::WalkMemo), by start pc and sp
  // (walk_way): a loop that waits or calls the kernel from the same frames
  // again reads its stack words instead of walking. Not initialised either
  // (see above).
  unwind::WalkMemo walk_memo[kWalkMemoWays];
};

// The single per-thread state: POD, initial-exec TLS (G4, H23).
struct ThreadState {
  ThreadRec* rec;
  uint32_t depth;   // > 0: inside a hook (1) or the tracer (kTracerDepth each): pass through
  uint32_t status;  // kThreadNew / kThreadTraced / kThreadUntraced / kThreadExited
  uint32_t bound;   // g.bind when `status` was decided (see HookScope)
  int64_t heap_delta;  // heap bytes allocated minus freed, not yet folded (hooks_malloc.cc)
  Tick heap_emit;      // when this thread last recorded a heap sample
  uintptr_t scope_frame;  // frame of the outermost active HookScope (H30)
};
static_assert(sizeof(ThreadState) <= 64, "H23: keep the static TLS small");
enum : uint32_t { kThreadNew = 0, kThreadTraced = 1, kThreadUntraced = 2, kThreadExited = 3 };
extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

struct Globals {
  std::atomic<Phase> phase{Phase::kUninit};
  // Nonzero only while recording (phase kReady): (log_gen << 1) | 1. A
  // thread compares it with the value it last bound to (t_state.bound): one
  // load and compare on every hook tells both "recording" and "this
  // thread's records go to the current log" (a fork child's, a failed
  // exec's, a new window's log moves the generation).
  std::atomic<uint32_t> bind{0};
  uint32_t log_gen = 0;     // the current log file's generation (1, 2, ...)
  uint32_t events = 0;  // enabled EventGroups (0 until ready)
  int pid = 0;
  int log_fd = -1;
  int control_fd = -1;  // the control channel's listening socket (issue 16)
  Tick start_ticks = 0;
  uint64_t start_ns = 0;  // the current log's start (a trace window's, if one)
  uint64_t began_ns = 0;  // this process image's start (its exec or fork)
  uint32_t ncpus = 1;
  Tick stack_min_ticks = 0;  // system calls shorter than this get no stack
  // System and network calls that waited this long (log::kQuietIoCallNs)
  // count towards making a process worth a trace, once they add up to
  // quiet_io_total_ticks (log::kQuietIoTotalNs; NoteIoBlock).
  Tick quiet_io_ticks = ~Tick{0};
  Tick quiet_io_total_ticks = ~Tick{0};
  Tick sync_ticks = ~Tick{0} / 4;  // how often each recording thread writes a clock sync
  Tick busy_ticks = ~Tick{0} / 4;  // log::kBusyCpuNs in ticks (lifecycle.cc, ProveIfBusy)
  bool descendant = false;   // a child of the traced root (fork, exec'd, spawned)
  bool forked_image = false;  // this image began at a fork (not at an exec)
  int root_pid = 0;
  uint32_t image = 0;        // exec generation within this pid (GOTRACE_IMAGE)
  std::atomic<uint32_t> epoch{0};  // module map epoch (bumped by dlclose)
  uintptr_t self_lo = 0, self_hi = 0;  // our own code: frames there are skipped
  uint32_t slot_bytes = 0;                 // bytes per slot of the log
  std::atomic<uint64_t> next_slot{0};      // slots handed out in this log
  std::atomic<uint64_t> file_slots{0};     // slots the file has room for
  uint64_t max_slots = ~uint64_t{0};       // GOTRACE_MAX_MB
  // Recording stopped for good in this log (disk budget reached, disk full,
  // a slot that could not be mapped): records are dropped and counted, the
  // trace of what came before is written at exit as usual.
  std::atomic<bool> stopped{false};
  std::atomic<uint32_t> writers{0};
  // Issue 18 (staging): the current log has no file yet; every stream
  // writes into plain memory until MaterializeSlow makes the file. Only in
  // a one-thread descendant under the launcher (StagingAllowed).
  std::atomic<bool> staged{false};
  // Nothing worth a trace yet (Materialize): while staged, and after a log
  // made only to be safe from a kill (a wait that may not end, the
  // kernel's records, a full buffer). Such a process may still end quiet
  // and count as such in the run's learn table (preload/learn.h).
  std::atomic<bool> unproven{false};
  uint64_t staged_heap_lo = ~uint64_t{0};  // the heap's range while staged
  std::atomic<Tick> io_block_ticks{0};     // quiet_io_ticks calls' time while unproven
  uint64_t staged_heap_hi = 0;
  uint32_t ppid = 0;  // the parent when this image's log began
  std::atomic<uint64_t> chunks_written{0};
  std::atomic<uint64_t> chunks_dropped{0};
  // Flight recorder: slots punched out of the log and not yet handed out
  // again (the reader finds no chunk there).
  std::atomic<uint64_t> flight_free{0};
  std::atomic<uint64_t> records_dropped{0};
  // Heap samples recorded by this image: a fork child whose only records
  // are its final heap sample has nothing worth a trace of its own.
  std::atomic<uint64_t> heap_records{0};
  std::atomic<uint64_t> untraced_threads{0};
  std::atomic<uint32_t> next_serial{1};
  std::atomic<uint64_t> next_create_id{1};
  // The program's threads still alive (the main thread included; the
  // flusher is not one): when the last one ends, the flusher must end too,
  // or it would keep a process whose main thread called pthread_exit alive.
  std::atomic<int> app_threads{1};
  std::atomic<uintptr_t> main_pc{0};
  int argc = 0;  // main's arguments, a copy (NoteProcessArgs)
  char** argv = nullptr;
  uint32_t info_log_gen = 0;  // the log (log_gen) the process record went to last
  // This image's command in the run's learn table (preload/learn.h), from
  // main's arguments before main ran; 0: not known (NoteOwnCommand).
  uint64_t learn_key = 0;
  uint64_t learn_program = 0;  // its program's (log::ProgramKey)
  // Trace windows opened so far (issue 16): window n writes OUT.w<n>.
  uint32_t window = 0;
  // A fork child whose log is not started yet (lifecycle.cc, AtForkChild):
  // its first recording hook starts it (StartForkChildLog).
  std::atomic<bool> fork_log_pending{false};
  // How this image ends (kExitStatus), known before the final flush:
  // wait(2)-style status | kExitKnown; 0 while unknown.
  std::atomic<uint64_t> exit_status{0};
  // Lifecycle flags (lifecycle.cc). Here with the fields a fork child
  // writes, so that they share a page: each page the child writes is a
  // copy-on-write fault in every fork of a traced shell (issue 18).
  std::atomic<bool> flusher_running{false};
  std::atomic<bool> flusher_retired{false};  // the program's threads are gone: no flusher again
  std::atomic<bool> ending{false};           // Finalize has begun
  std::atomic<bool> kernel_tried{false};     // the kernel's records were asked for (StartKernelSched)
  bool forked_once = false;                  // BeforeFork has resolved the rest of the table
  std::atomic<int> daemon_tid{0};  // the thread inside daemon(3) (its parent ends in AtForkParent)
  std::atomic<bool> reaped_child{false};     // the current log recorded a child's exit
  std::atomic<bool> made_child{false};       // forked, spawned or vforked: never learned quiet
  bool pool_reset_pending = false;           // a fork child's region is still its parent's
  // Read-mostly from here on: the configuration and the paths.
  Config config;
  char log_path[1100] = {0};
  char out_path[1100] = {0};
  char cwd[1024] = {0};
  char self_path[1024] = {0};  // directory of libgotrace.so
};
extern Globals g;

// --- Staging (issue 18) -------------------------------------------------------
// A descendant under the launcher records into memory, not into a file,
// until it does something that is worth a trace of its own (README, "Quiet
// processes"): a wait other than a short system call, one about to block
// on a pipe, socket or child, a thread, a heap that moved 1 MiB, an
// annotation, a full buffer, a crash. Then the log file is made, what was
// recorded is copied into it, and recording goes on there (kill-safe as
// before). A process that never does leaves one journal entry at exit
// (encoder/quiet_journal.h) instead of a log that the launcher would read
// only to find it quiet: no file created, mapped, read and removed.
//
// Makes the log file of a staged process now. False if it could not (the
// process is then not traced any more: one line said why). `worthy`: the
// process did something worth a trace (else g.unproven, above).
GT_NOINLINE bool MaterializeSlow(bool worthy = true);
// The process did something worth a trace: a staged one makes its log, an
// unproven one is proven (the run's learn table says so).
GT_NOINLINE void ProveWorthy();
GT_ALWAYS_INLINE void Materialize() {
  if (GT_UNLIKELY(g.unproven.load(std::memory_order_relaxed))) ProveWorthy();
}
// A staged process about to do I/O on a descriptor of class `cls` (system
// call `sysno`): makes its log first if the call may wait without bound (a
// pipe, socket or tty that is not ready: poll with a zero timeout says), so
// that a kill while it waits finds the wait in a log.
GT_NOINLINE void MaterializeIfWouldBlock(int fd, long sysno);

// --- Hook scope (G5) --------------------------------------------------------

// t_state.depth counts hook scopes in its low bits and tracer scopes in
// units of kTracerDepth, so that "inside the tracer" (its own allocations,
// locks, writes) can be told from "inside a traced call" (where what libc
// allocates is the program's, and counts: hooks_malloc.cc).
constexpr uint32_t kTracerDepth = 1u << 16;
GT_ALWAYS_INLINE bool InTracer() { return t_state.depth >= kTracerDepth; }

// `since`: when the thread's start is to be dated, if earlier than now (a
// fork child's log that starts late: the child ran from its fork).
ThreadRec* RegisterCurrentThreadSlow(uint64_t create_id, uintptr_t start_pc, uint64_t flags,
                                     Tick since = 0);
// What a thread's creator knew of its stack (pthread_create's attributes),
// set by the new thread before it registers: its bounds without
// pthread_getattr_np, whose allocation gave every thread that never calls
// malloc itself a malloc arena (64 MiB of address space each).
struct StackHint {
  uintptr_t user_lo = 0;  // the program's own stack: its lowest address, or 0
  size_t size = 0;        // its size, or glibc's stack block's (0: unknown)
  size_t guard = 0;       // its guard's size (glibc's stack)
};
void SetStackHint(const StackHint& h);
// A fork child's log, started at its first recording hook rather than at
// the fork (lifecycle.cc): returns the new g.bind, or 0 (nothing to record).
GT_NOINLINE uint32_t StartForkChildLog();

// A thread whose records still go to an earlier log than the current one
// (a trace window opened while it waited): its stream moves to the current
// log, continuing the stand-in the window's start wrote for it. Returns the
// record (the same one) or nullptr when it cannot record.
// `own_wait_follows`: the caller records the wait the thread was in (its
// stand-in's wait is that one).
GT_NOINLINE ThreadRec* MoveToCurrentLog(bool own_wait_follows = false);
// RegisterCurrentThreadSlow's flags: not a log flag (see MoveToCurrentLog).
inline constexpr uint64_t kOwnWaitFollows = uint64_t{1} << 40;
// A thread started while recording is paused: its end is still seen (the
// thread-exit key), so that a window it lived in shows it ending.
void ArmThreadEnd();
GT_ALWAYS_INLINE bool LogMoved() {
  return GT_UNLIKELY(t_state.bound != g.bind.load(std::memory_order_relaxed));
}

// H30: a hook entered while depth > 0 is normally nested (a signal handler,
// the tracer's own calls) and passes through. But if it is entered from a
// shallower frame of the thread's own stack than the outermost active scope,
// that scope was abandoned (longjmp/siglongjmp out of a handler, or a
// cancellation that skipped our epilogue) and the depth is stale: recover.
// Frames on an alternate signal stack are never taken as proof.
GT_NOINLINE bool AbandonedScope(uintptr_t frame);

// Whether the code at `frame`, outside r's stack, runs on r's own thread (a
// fiber, a signal stack) rather than on a thread made with a raw clone()
// that shares r's thread-local state: that one must record nothing, or it
// would write into r's buffer at the same time as r. One gettid per 1 MiB
// stack window (cached for r's own windows). Async-signal-safe.
GT_NOINLINE bool ForeignStackIsOwn(ThreadRec* r, uintptr_t frame);

// The calling thread's record, unless the caller is on a stack that is not
// its own thread's (see ForeignStackIsOwn): then nullptr. Reads only.
GT_ALWAYS_INLINE bool OnOwnThread(ThreadRec* r, uintptr_t frame) {
  return r == nullptr || (frame >= r->stack_lo && frame < r->stack_hi) ||
         ForeignStackIsOwn(r, frame);
}

// Entered at the top of every recording hook. Inactive (pass through) when
// tracing is not ready, the group is off, or the thread is already inside a
// hook or the tracer (nested call, signal handler, H2/H17).
class HookScope {
 public:
  GT_ALWAYS_INLINE explicit HookScope(uint32_t group) {
    uint32_t bind = g.bind.load(std::memory_order_relaxed);
    if (GT_UNLIKELY((g.events & group) == 0)) return;
    if (GT_UNLIKELY(bind == 0)) {
      // Not recording; or a fork child that has not recorded yet.
      if (GT_LIKELY(!g.fork_log_pending.load(std::memory_order_relaxed))) return;
      bind = StartForkChildLog();
      if (bind == 0) return;
    }
    const auto frame = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
    // Before anything is written to the thread-local state: a raw clone()
    // child shares it with the thread that made it (H15).
    if (GT_UNLIKELY(!OnOwnThread(t_state.rec, frame))) return;
    if (GT_UNLIKELY(t_state.depth != 0) && !AbandonedScope(frame)) return;
    t_state.depth = 1;
    t_state.scope_frame = frame;
    entered_ = true;
    rec_ = t_state.rec;
    // A thread not yet seen in this log: a new thread, or one whose records
    // went to an earlier log (a fork child's, a failed exec's, a window's).
    if (GT_UNLIKELY(t_state.bound != bind)) rec_ = RegisterCurrentThreadSlow(0, 0, log::kThreadExisted);
  }
  GT_ALWAYS_INLINE ~HookScope() {
    // (At zero: a scope of the parent's, ended in a child forked by a
    // signal handler that interrupted it; AtForkChild.)
    if (entered_ && GT_LIKELY(t_state.depth != 0)) --t_state.depth;
  }
  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

  bool active() const { return rec_ != nullptr; }
  ThreadRec* rec() const { return rec_; }

 private:
  bool entered_ = false;
  ThreadRec* rec_ = nullptr;
};

// Restores the program's errno at the end of a tracer slow path (H31).
class ErrnoGuard {
 public:
  ErrnoGuard() : saved_(errno) {}
  ~ErrnoGuard() { errno = saved_; }
  ErrnoGuard(const ErrnoGuard&) = delete;
  ErrnoGuard& operator=(const ErrnoGuard&) = delete;

 private:
  int saved_;
};

// Marks the calling thread as inside the tracer for the lifetime of the
// object (the tracer's own mallocs, locks and writes are not traced).
//
// It also puts the thread's heap delta back as it was: malloc's and free's
// short paths (hooks_malloc.cc) count every block without asking whether
// they run inside the tracer, and what the tracer allocated and freed in
// the scope is dropped here instead (issue 18's allocation storm: one
// thread-local load and branch less on each side of every pair).
class TracerScope {
 public:
  TracerScope() : heap_delta_(t_state.heap_delta) { t_state.depth += kTracerDepth; }
  ~TracerScope() {
    t_state.depth -= kTracerDepth;
    t_state.heap_delta = heap_delta_;
  }
  TracerScope(const TracerScope&) = delete;
  TracerScope& operator=(const TracerScope&) = delete;

 private:
  int64_t heap_delta_;
};

// --- Recording (hot path: no locks, no allocation, no stdio) ----------------

// Unwinds from `frame` (the interposer's __builtin_frame_address(0)) and
// returns the stack id, defining it in this thread's log if new. `ts` is the
// time of the event the stack belongs to: a definition must not carry a later
// time than its event, which follows it in the log.
uint32_t CaptureStack(const HookScope& s, const void* frame, Tick ts);

// Spills the current chunk and starts a new one. Returns false when the
// record must be dropped (shutdown, write failure).
bool SpillSlow(ThreadRec* r);

GT_ALWAYS_INLINE bool Reserve(ThreadRec* r, size_t n) {
  if (GT_LIKELY(r->s.w.Fits(n))) return true;
  return SpillSlow(r);
}
// Appends a clock sync point to r's stream (see Commit).
GT_NOINLINE void ClockSyncSlow(ThreadRec* r);

// Makes the records written since the last Commit part of the log (one
// store into the mapped slot header). Every g.sync_ticks of recorded time a
// thread also pairs the tick counter with the clock (kClockSync), so that
// the reader converts times exactly even in a log cut short by a kill.
GT_ALWAYS_INLINE void Commit(ThreadRec* r) {
  r->s.w.PublishSize();
  if (GT_UNLIKELY(r->s.w.last_ticks() > r->next_sync)) ClockSyncSlow(r);
}

// Publishes the wait a thread is about to block in, in its slot header:
// the final flush, and recovery after a kill, show the thread blocked there.
// The kind is stored last; Unpublish clears it before the wait's record.
GT_ALWAYS_INLINE void PublishWait(ThreadRec* r, WaitKind kind, uint32_t cpu, uint64_t stack,
                                  uint64_t obj, uint64_t aux, uint64_t flags, Tick t0,
                                  const void* frame) {
  log::SlotHeader* h = r->s.hdr();
  h->wait_cpu = cpu;
  h->wait_stack = stack;
  h->wait_obj = obj;
  h->wait_aux = aux;
  h->wait_flags = flags;
  h->wait_t0 = t0;
  r->wait_frame = frame;
  __atomic_store_n(&h->wait_kind, static_cast<uint32_t>(kind), __ATOMIC_RELEASE);
}
GT_ALWAYS_INLINE void UnpublishWait(ThreadRec* r) {
  __atomic_store_n(&r->s.hdr()->wait_kind, 0u, __ATOMIC_RELAXED);
}

// A blocking call in progress: captures the start time, CPU and stack, and
// publishes the wait (PublishWait) until End().
class WaitRecorder {
 public:
  // aux: a second object the wait may block on (a condition wait's mutex,
  // which glibc locks again inside the wait), published and recorded.
  WaitRecorder(const HookScope& s, WaitKind kind, uint64_t obj, const void* frame,
               uint64_t aux = 0);
  // Records the wait, unless `keep` is false (the call failed without waiting).
  void End(bool keep = true, uint64_t aux = 0, uint64_t flags = 0);

 private:
  ThreadRec* rec_;
  WaitKind kind_;
  uint64_t obj_;
  uint64_t aux_;
  Tick t0_;
  uint32_t cpu0_;
  uint32_t stack_;
};

// A system call that may block. Two clock reads and one record when it is
// short: its stack is captured after it returns, and only if it lasted at
// least g.stack_min_ticks (the stack is the same before and after). While it
// waits, the thread record holds the interposer's frame, so the final flush
// can unwind a thread still blocked in it.
class SyscallRecorder {
 public:
  GT_ALWAYS_INLINE SyscallRecorder(const HookScope& s, WaitKind kind, log::FdClass cls,
                                   uint64_t obj, uint64_t sysno, const void* frame)
      : scope_(s), kind_(kind), flags_(static_cast<uint64_t>(cls) << log::kWaitFdClassShift),
        obj_(obj), sysno_(sysno), frame_(frame) {
    cpu0_ = sys::CurrentCpu();
    t0_ = sys::Ticks();
    PublishWait(s.rec(), kind, cpu0_, 0, obj, sysno, flags_, t0_, frame);
  }
  void End();

 private:
  const HookScope& scope_;
  WaitKind kind_;
  uint64_t flags_;
  uint64_t obj_;
  uint64_t sysno_;
  const void* frame_;
  Tick t0_;
  uint32_t cpu0_;
};

// A system or network call (not a wait for a child) that waited `d` >=
// g.quiet_io_ticks: an unproven process whose such calls add up to
// g.quiet_io_total_ticks is worth a trace (Materialize). Out of line: rare.
GT_NOINLINE void NoteIoBlock(Tick d);

// A system call made `d` ticks from t0 on cpu0 (its wait flags: the class
// of its descriptor), recorded: SyscallRecorder::End's, and a pending fork
// child's probe's (hooks_syscalls.cc) after the fact.
void RecordSyscallAt(const HookScope& s, WaitKind kind, uint64_t flags, uint64_t obj,
                     uint64_t sysno, const void* frame, Tick t0, uint32_t cpu0, Tick d);

// A fork child that has recorded nothing yet (its log starts at its first
// recorded call: StartForkChildLog), outside any hook, recording I/O: a
// call of `group` is to be timed first (hooks_syscalls.cc, PendingForkCall).
// Not in a process with a control channel (a service's worker): its
// channel opens at its first call, before it, or a worker whose first call
// is a pause() or a sigsuspend() that lasts could not be reached.
GT_ALWAYS_INLINE bool ForkLogPending(uint32_t group) {
  return GT_UNLIKELY(g.bind.load(std::memory_order_relaxed) == 0) &&
         g.fork_log_pending.load(std::memory_order_relaxed) && (g.events & group) != 0 &&
         t_state.depth == 0 && !g.config.control;
}

// The CPU time the kernel counted for thread `tid` of this process (ns; 0
// if unknown). A system call: about 1.6 us on the VM this was measured on.
uint64_t ThreadCpuNs(uint32_t tid);
// This process's CPU time (all its threads, since the fork that made it),
// in ns; 0 if unknown. One system call. (Inline: a quiet command's exit
// asks, from the code laid out for it, preload/fork_path.ld.)
GT_ALWAYS_INLINE uint64_t ProcessCpuNs() { return sys::ClockNs(CLOCK_PROCESS_CPUTIME_ID); }
// r's thread's CPU time as a kCpuTime record at `ts`, by r's own thread:
// at its end, so that each thread's running total is known exactly even
// where the timeline is inferred.
void RecordCpuTime(ThreadRec* r, Tick ts, uint32_t cpu);

// A release that may wake waiters: `t`/`cpu` were taken before the real call.
void RecordRelease(const HookScope& s, WaitKind kind, uint64_t obj, uint64_t count, Tick t,
                   uint32_t cpu, const void* frame);
void RecordCreate(const HookScope& s, Tick t, uint32_t cpu, uint64_t create_id, uintptr_t start_pc,
                  const void* frame);
// A heap size sample (kHeap) in the calling thread's log, if it is traced and
// not inside the tracer. Never allocates; safe inside malloc hooks.
void RecordHeap(uint64_t live_bytes);

// --- The tracer's own descriptors (H27) --------------------------------------

// The log and our copy of stderr: programs that close every descriptor or
// dup2 over them must not take them away.
bool IsTracerFd(int fd);
// Before a dup2/dup3 onto `fd`: if it is ours, move ours elsewhere first.
void ProtectFd(int fd);
// The program replaced its stderr (dup2 onto 2: a daemon pointing 0 to 2
// at /dev/null, a shell's `2>file`; close_range over it): our copy of it
// is closed, and our lines go nowhere from now on. Kept, it held the caller's pipe open for as long
// as a daemon lived (`tracewrap -- memcached -d | cat` never ended).
void StderrGone();
// close_range(lo, hi, flags) that skips the tracer's descriptors.
using CloseRangeFn = int (*)(unsigned, unsigned, int);
int CloseRangeAround(unsigned lo, unsigned hi, int flags, CloseRangeFn real);

// --- Lifecycle --------------------------------------------------------------

// Starts a detached thread of the tracer's (the flusher, the control
// channel's) with every signal blocked, `stack_bytes` of stack, named `name`
// for tools that list threads. Returns pthread_create's result.
// The calling thread is one of the tracer's own (the flusher, the control
// thread, the encoder): never traced, and its CPU samples are not the
// program's (kernel_sched.cc). IsTracerThread: whether `tid` is one.
void NoteTracerThread();
bool IsTracerThread(uint32_t tid);
int StartTracerThread(void* (*fn)(void*), size_t stack_bytes, const char* name);

// Registers the main thread (from __libc_start_main, which knows main()).
void RegisterMainThread();
// The program's arguments, copied once (g.argc, g.argv), and its key in the
// run's learn table: from the library's constructor (glibc gives it main's
// arguments), so that an image that never calls __libc_start_main (Go's
// runtime starts itself) has its command line too.
void NoteProcessArgs(int argc, char** argv);
// Who this process is (its command line, for run indexes): kProcessInfo,
// once per log; true if written now.
bool RecordProcessInfo();
// Sets g.learn_key from main's arguments (deferred mode, an exec'd image).
void NoteOwnCommand(char* const* argv);
// A child this process reaped had used log::kBusyCpuNs of CPU time: if it
// ran a learned command untraced, the run traces it again
// (learn::ReapedBusy). Rare: out of line.
GT_NOINLINE void NoteReapedBusy(long pid);
// Whether pc is in our own library's code (g.self_lo..self_hi).
inline bool OwnPc(uint64_t pc) { return pc >= g.self_lo && pc < g.self_hi; }
// Frames of our own library occur only at a stack's ends: innermost when an
// interposer's slow path is a function of its own, outermost as our
// trampoline below main or a thread's routine (MainWithStatus,
// ThreadStart), among the last three of a walk that reached it (below it
// only libc's start remains). Its index in pcs[0, n), or n if none: a walk
// that reached it is whole, one that did not may have met a stray zero
// frame pointer (frame-pointer chains, ours and the kernel's).
inline size_t OwnStartFrame(const uint64_t* pcs, size_t n) {
  for (size_t tail = 1; tail <= 3 && tail <= n; ++tail)
    if (OwnPc(pcs[n - tail])) return n - tail;
  return n;
}
// How this image is ending, in wait(2) form (or log::kExitExec), for the
// final flush's kExitStatus. The first one set wins.
inline constexpr uint64_t kExitKnown = uint64_t{1} << 40;
inline void SetExitStatus(uint64_t status) {
  uint64_t unknown = 0;
  g.exit_status.compare_exchange_strong(unknown, status | kExitKnown, std::memory_order_acq_rel);
}
// A wait for a child that reaped it (pid > 0, status in wait(2) form).
void RecordChildExit(const HookScope& s, long pid, int status);
// A wait-family call whose HookScope was not active: whether it runs nested
// in a hook or in the tracer's code (a signal handler that interrupted
// them: PostgreSQL's postmaster reaps in its SIGCHLD handler while it
// waits in select, bash a command substitution's child while its read of
// the pipe is recorded), and then records the child's exit all the same,
// in the process stream (RecordNestedChildExit; out of line, the wait's
// slow path).
bool NestedInHook();
GT_NOINLINE void RecordNestedChildExit(long pid, int status);
// Called by the pthread key destructor on the thread's last TSD round.
void FinishCurrentThread();
// Re-reads the module list (after dlopen / dlclose).
void RescanModules(bool after_unload, bool force_code_map = true);

// The loaded object (executable or library) whose segments hold addr: its
// load bias and path ("" for the executable). False if none does. Walks the
// loader's list (dl_iterate_phdr): far cheaper than dladdr, which scans
// every symbol of the object for the nearest one.
bool ObjectOf(const void* addr, uintptr_t* base, const char** name);
// Stops tracing with one line on stderr; the program runs on.
void Disable(const char* why);

}  // namespace gotrace

#define GT_FRAME() __builtin_frame_address(0)
