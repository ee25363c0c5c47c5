// SPDX-License-Identifier: Apache-2.0
//===-- preload/runtime.cc - per-thread recording and the process log -----===//
#include "preload/runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "encoder/log_decode.h"
#include "encoder/encode_api.h"
#include "encoder/quiet_journal.h"
#include "preload/heap.h"
#include "preload/kernel_sched.h"
#include "preload/lifecycle.h"
#include "preload/real.h"
#include "preload/runtime_internal.h"
#include "preload/sys/clock.h"
#include "preload/sys/raw.h"
#include "unwind/cfi_unwind.h"
#include "unwind/libunwind_unwind.h"
#include "unwind/stack_depot.h"

extern "C" void* __libc_stack_end;  // ld.so: the initial stack pointer

namespace gotrace {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));

// G7: global state lives in static storage, is never destroyed (exit paths
// and late threads may still use it), and holds only trivially destructible
// members.
alignas(64) GT_FORK_HOT_G Globals g;  // after GT_FORK_HOT variables (sys/raw.h)
static_assert(std::is_trivially_destructible_v<Globals>);

namespace internal {

constexpr int kDtorIterations = PTHREAD_DESTRUCTOR_ITERATIONS;

unwind::StackDepot g_depot;
pthread_key_t g_key;
// The process stream (modules, clock, end: "The process stream" below) and
// the kernel's (its writer is kernel_sched.cc). Their windows are in the
// region, like the threads'. The process stream's writer and its lock on
// g's first page (GT_FORK_HOT): a traced shell reaps each child into it
// (RecordNestedChildExit), and each other page written there was one more
// copy-on-write fault per fork (issue 18).
GT_FORK_HOT SlotStream g_proc;
SlotStream g_kern;

// --- Memory: the stream windows and the pool of thread records --------------
// One region, reserved once (MAP_NORESERVE) and committed as touched:
//   [process stream window][kernel stream window][pool slot 0][pool slot 1]...
// Pool slot i holds thread record i (page-rounded) and then its window, the
// slot_bytes of address space where the log slot it writes is mapped. A
// fork child replaces the whole region in one mmap (PoolResetForChild), so
// nothing it writes can reach the parent's log. Thread records of exited
// threads are reused through a lock-free free list whose head carries a tag
// against ABA.
uint8_t* g_region = nullptr;
size_t g_region_bytes = 0;
size_t g_rec_bytes = 0;   // a thread record, page-rounded
size_t g_pool_stride = 0;
std::atomic<uint32_t> g_pool_used{0};                 // high-water mark
uint32_t g_child_first_slot = 0;  // a fork child's first record (PoolForgetForChild)
std::atomic<uint64_t> g_free_head{0xffffffffull};     // tag << 32 | index
GT_LARGE_BSS std::atomic<uint32_t> g_free_next[kMaxThreads];       // next index in the free list
uint32_t g_max_threads = kMaxThreads;  // records the pool has room for (PoolInit)
size_t g_depot_slots =
    size_t{1} << 20;  // the stack depot's size (PoolInit: an address-space limit)
size_t g_depot_pc_bytes = size_t{64} << 20;

uint8_t* PoolBase() { return g_region + 2 * size_t{g.slot_bytes}; }
ThreadRec* Slot(uint32_t i) { return reinterpret_cast<ThreadRec*>(PoolBase() + size_t{i} * g_pool_stride); }

bool PoolInit(size_t buffer_kb) {
  if (g_region != nullptr) return true;
  g.slot_bytes = static_cast<uint32_t>((buffer_kb * 1024 + 4095) & ~size_t{4095});
  g_rec_bytes = (sizeof(ThreadRec) + 4095) & ~size_t{4095};
  g_pool_stride = g_rec_bytes + g.slot_bytes;
  // Problem: an address-space limit (ulimit -v, as test harnesses set)
  // counts reserved memory, and the room for kMaxThreads records (672 MiB
  // at the default buffer; 5 GiB when it was 65,536) can be more than such
  // a limit allows: every process
  // said "cannot reserve memory for the tracer" and ran untraced. Under a
  // limit the pool takes at most an eighth of it: fewer threads can record
  // at once (the others are counted, as beyond kMaxThreads).
  // The stack depot (EnsureDepot, about 100 MiB reserved) takes at most a
  // sixteenth: fewer distinct stacks fit (the others are recorded without).
  g_max_threads = kMaxThreads;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const size_t budget = static_cast<size_t>(as.rlim_cur / 8);
    const size_t fixed = 2 * size_t{g.slot_bytes};
    const size_t fit = budget > fixed + g_pool_stride ? (budget - fixed) / g_pool_stride : 1;
    g_max_threads = static_cast<uint32_t>(std::min<size_t>(fit, kMaxThreads));
    const size_t depot = budget / 2;
    constexpr size_t kPerSlot = unwind::StackDepot::kBytesPerSlot;
    while (g_depot_slots > 4096 && g_depot_slots * kPerSlot > depot / 3) g_depot_slots >>= 1;
    const size_t rest = depot > g_depot_slots * kPerSlot ? depot - g_depot_slots * kPerSlot : 0;
    g_depot_pc_bytes =
        std::clamp<size_t>(rest & ~size_t{4095}, size_t{256} << 10, g_depot_pc_bytes);
  }
  g_region_bytes = 2 * size_t{g.slot_bytes} + g_pool_stride * g_max_threads;
  // A fork child replaces all of it before use (PoolResetIfForked).
  g_region = static_cast<uint8_t*>(sys::MapForkFresh(nullptr, g_region_bytes));
  return g_region != nullptr;
}
uint32_t PoolUsed() { return std::min(g_pool_used.load(std::memory_order_acquire), g_max_threads); }
ThreadRec* PoolSlot(uint32_t i) { return Slot(i); }
void PoolForgetForChild(bool keep_slot) {
  // Only the calling thread survives a fork, and the region maps the
  // parent's log: nothing of it is the child's, and nothing may write it.
  // No path reaches it without a record of this thread's (cleared here) or
  // without recording (the caller unbound); the region itself is replaced
  // when the child starts a log (PoolResetIfForked): a shell's fork that
  // only execs, or exits, never pays for the mmap and what it unmaps.
  // (Written only then: a shell's fork child writes no page it need not.
  // By its address: the records are wiped in a fork child.)
  if (keep_slot && t_state.rec != nullptr) {
    g_child_first_slot = static_cast<uint32_t>(
        (reinterpret_cast<uint8_t*>(t_state.rec) - PoolBase()) / g_pool_stride);
  }
  t_state.rec = nullptr;
  t_state.status = kThreadNew;
  // A scope of the parent's that ends here before this thread records in
  // the child's log must find its log moved (LogMoved): kBoundNever is
  // neither a bind (odd) nor unbound (0, as a fork child's pending log
  // is). It wrote into the parent's slot, and the child died of it.
  constexpr uint32_t kBoundNever = 2;
  t_state.bound = keep_slot ? kBoundNever : 0;
  g.pool_reset_pending = true;
}

void PoolResetIfForked() {
  if (!g.pool_reset_pending) return;
  g.pool_reset_pending = false;
  PoolResetForChild();
  // The parent's kernel records (its rings are not mapped here: their
  // state was only copied) are forgotten too, as late (nothing reads them
  // before the child's log starts).
  kernel::ForgetForChild();
}

void PoolResetForChild() {
  // Only the calling thread survives a fork (or a failed exec's reset), and
  // the region maps the parent's (or the finished image's) log: nothing of
  // it is ours. One mmap replaces it with fresh memory.
  g.pool_reset_pending = false;
  sys::MapForkFresh(g_region, g_region_bytes);
  // (The slots below a kept one stay unused: untouched memory.)
  g_pool_used.store(g_child_first_slot, std::memory_order_relaxed);
  if (g_child_first_slot != 0) g_child_first_slot = 0;
  g_free_head.store(0xffffffffull, std::memory_order_relaxed);
  g_proc.file_gen = 0;
  g_kern.file_gen = 0;
  t_state.rec = nullptr;
  t_state.status = kThreadNew;
  t_state.bound = 0;
}
// A stream's window back to plain memory (staged, or no log slot mapped),
// the region's like the rest of it.
void AnonWindow(uint8_t* window) { sys::MapForkFresh(window, g.slot_bytes); }

// The stack depot and the unwinder's row cache are made at the first stack
// (EnsureDepot), not with the log: a staged process that stays quiet never
// walks a stack (three mappings and three pages it would map in for
// nothing). A log that is not staged makes them at its start.
enum : int { kDepotNone = 0, kDepotLater = 1, kDepotBusy = 2, kDepotReady = 3, kDepotFailed = 4 };
std::atomic<int> g_depot_state{kDepotNone};
static_assert(kDepotReady == 3, "EnsureDepot (runtime_internal.h) tests for 3");

void DepotInit() { g_depot_state.store(kDepotLater, std::memory_order_release); }

bool EnsureDepotSlow() {
  int s = g_depot_state.load(std::memory_order_acquire);
  // Made by another thread this instant: this stack goes without (a hook
  // never waits).
  if (s != kDepotLater ||
      !g_depot_state.compare_exchange_strong(s, kDepotBusy, std::memory_order_acq_rel)) {
    return g_depot_state.load(std::memory_order_acquire) == kDepotReady;
  }
  TracerScope tracer;
  ErrnoGuard errno_guard;
  // The unwinder's row cache (a fork child starts with it empty: it is
  // fork-fresh memory); without it walks still work, decoding every frame
  // anew.
  (void)unwind::UnwindInit();
  const bool ok = g_depot.Init(g_depot_slots, g_depot_pc_bytes);
  g_depot_state.store(ok ? kDepotReady : kDepotFailed, std::memory_order_release);
  return ok;
}

ThreadRec* AllocRec() {
  uint64_t head = g_free_head.load(std::memory_order_acquire);
  while (static_cast<uint32_t>(head) != 0xffffffffu) {
    const uint32_t i = static_cast<uint32_t>(head);
    const uint64_t next = ((head >> 32) + 1) << 32 | g_free_next[i].load(std::memory_order_relaxed);
    if (g_free_head.compare_exchange_weak(head, next, std::memory_order_acq_rel)) {
      Slot(i)->exit_named.store(false, std::memory_order_relaxed);
      return Slot(i);
    }
  }
  const uint32_t i = g_pool_used.fetch_add(1, std::memory_order_relaxed);
  if (i >= g_max_threads) {
    g_pool_used.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  // A fresh record: its first page (all but the stack cache) is written at
  // once; mapped in by one system call rather than a page fault. The stack
  // cache's pages are touched by the first stacks, if any (a staged
  // process records none).
  (void)sys::PopulateWrite(Slot(i), 4096);
  ThreadRec* r = new (Slot(i)) ThreadRec;  // default-init: see ThreadRec::stack_cache
  r->index = i;
  r->s.window = reinterpret_cast<uint8_t*>(r) + g_rec_bytes;
  return r;
}

void FreeRec(ThreadRec* r) {
  r->in_use.store(0, std::memory_order_release);
  uint64_t head = g_free_head.load(std::memory_order_relaxed);
  for (;;) {
    g_free_next[r->index].store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    const uint64_t next = ((head >> 32) + 1) << 32 | r->index;
    if (g_free_head.compare_exchange_weak(head, next, std::memory_order_release)) return;
  }
}

// --- The log file: slots written in place -------------------------------------
// The file is FileHeader (in a page of its own), then slots of slot_bytes.
// A slot is handed out with one atomic add; the file grows ahead of need, in
// steps, with fallocate, so that a full disk is an error here (ENOSPC), never
// a SIGBUS in a thread writing its mapped slot.

std::atomic_flag g_grow_lock = ATOMIC_FLAG_INIT;
std::atomic<long> g_grow_owner{0};  // the thread holding g_grow_lock

void StopRecording(const char* why) {
  if (g.stopped.exchange(true, std::memory_order_acq_rel)) return;
  g.events = 0;  // hooks pass straight through from now on
  char buf[1400];
  sys::Line l(buf, sizeof buf);
  l.Str(why).Str("; recording stopped, the trace will hold what was recorded until now");
  sys::Log(l.c_str());
}

// Makes the file long enough for `need` slots, with blocks allocated.
//
// Problem: a termination signal that arrives while this thread grows the
// file runs the trace's final flush, which may need a slot in turn: it spun
// here for ever on the lock its own interrupted frame held (a flight
// recorder's process at 100% CPU after a SIGTERM, SIGTERM blocked). The
// holder's own thread does not wait: the growth fails for the flush (what
// it would have written is lost), and the process ends as it would have.
bool GrowFile(uint64_t need) {
  const long me = sys::GetTid();
  if (g_grow_owner.load(std::memory_order_acquire) == me) return false;
  while (g_grow_lock.test_and_set(std::memory_order_acquire)) sys::Syscall6(SYS_sched_yield);
  g_grow_owner.store(me, std::memory_order_release);
  bool ok = true;
  uint64_t have = g.file_slots.load(std::memory_order_acquire);
  if (have < need) {
    // Steps of 1 MiB (at least one slot, at most 16): few system calls, and
    // little allocated ahead of a process that records little.
    // Doubling from one slot up to 1 MiB a step: a short process uses two
    // or three slots, and a large fallocate, and the truncation that gives
    // it back at exit, cost a tenth of a millisecond each here.
    const uint64_t step = std::max<uint64_t>(
        1, std::min<uint64_t>(have, std::min<uint64_t>(16, (1u << 20) / g.slot_bytes)));
    uint64_t want = std::max(need, have + step);
    if (want > g.max_slots) want = std::max(need, g.max_slots);
    const int fd = __atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE);
    const uint64_t from = log::kSlotsOffset + have * g.slot_bytes;
    long rc = sys::Syscall6(SYS_fallocate, fd, 0, static_cast<long>(from), static_cast<long>((want - have) * g.slot_bytes));
    if (rc == -ENOSPC && want > need) {
      // Not a whole step left: just what is needed now.
      want = need;
      rc = sys::Syscall6(SYS_fallocate, fd, 0, static_cast<long>(from),
                         static_cast<long>((want - have) * g.slot_bytes));
    }
    if (rc == -EOPNOTSUPP || rc == -ENOSYS) {
      // A filesystem without fallocate: write the zeros ourselves (the
      // blocks are then allocated just the same).
      static const uint8_t kZeros[16384] = {};
      const uint64_t end = from + (want - have) * g.slot_bytes;
      rc = 0;
      for (uint64_t off = from; rc == 0 && off < end; off += sizeof kZeros)
        rc = sys::PwriteAll(fd, kZeros, std::min<uint64_t>(sizeof kZeros, end - off), off);
    }
    if (rc == 0) {
      g.file_slots.store(want, std::memory_order_release);
    } else {
      ok = false;
      char buf[1400];
      sys::Line l(buf, sizeof buf);
      l.Str("cannot extend the event log ").Str(g.log_path).Str(" (");
      l.Str(strerrordesc_np(static_cast<int>(-rc))).Str(")");
      StopRecording(l.c_str());
    }
  }
  g_grow_owner.store(0, std::memory_order_release);
  g_grow_lock.clear(std::memory_order_release);
  return ok;
}

// A fresh slot for a stream, or -1 (recording stopped).
int64_t FlightReuseSlot();

int64_t NewSlot() {
  if (g.stopped.load(std::memory_order_acquire)) return -1;
  if (g.config.flight) {
    const int64_t again = FlightReuseSlot();
    if (again >= 0) return again;
  }
  const uint64_t i = g.next_slot.fetch_add(1, std::memory_order_acq_rel);
  if (i >= g.max_slots) {
    g.next_slot.fetch_sub(1, std::memory_order_acq_rel);
    char buf[200];
    sys::Line l(buf, sizeof buf);
    l.Str("the event log reached GOTRACE_MAX_MB (");
    l.U64(g.config.max_mb).Str(" MiB)");
    StopRecording(l.c_str());
    return -1;
  }
  if (i >= g.file_slots.load(std::memory_order_acquire) && !GrowFile(i + 1)) return -1;
  return static_cast<int64_t>(i);
}

// Opens a new chunk in the stream's home slot (mapping it first if the
// stream has none in this log). On failure the stream writes nothing (its
// writer has no room) and its window is plain memory, so that a wait
// published in it lands somewhere harmless. `final_flush`: the exit path
// itself, after the phase moved.
//
// Problem: a page fault on a shared file mapping costs 35 us on the VMs
// this was measured on (12 us anonymous), so a stream that moved to fresh
// file pages for every chunk paid about 200 ns per record. A stream keeps
// one home slot instead, mapped once, and copies each full chunk out with
// one pwrite (StreamSpill): its pages are faulted once per log, and a kill
// still loses nothing, since every record is in the page cache the moment
// it is complete, in the home slot or in a copy.
bool StreamBegin(SlotStream* s, Tick base, bool final_flush) {
  if (s->window == nullptr) return false;
  // The home slot again (after a spill): what the last chunk wrote there.
  const size_t stale = s->log_gen == g.log_gen ? s->w.payload_size() : 0;
  g.writers.fetch_add(1, std::memory_order_seq_cst);
  bool ok = final_flush || g.phase.load(std::memory_order_seq_cst) == Phase::kReady;
  if (ok && s->log_gen != g.log_gen && g.staged.load(std::memory_order_acquire)) {
    // Staged: the window is the home slot, in plain memory, until the log
    // is made (MaterializeSlow). One that still maps an earlier log's slot
    // (a failed exec's) gets fresh memory first.
    if (s->file_gen != 0) {
      AnonWindow(s->window);
      s->file_gen = 0;
    }
    s->log_gen = g.log_gen;
  } else if (ok && s->log_gen != g.log_gen) {
    const int64_t slot = NewSlot();
    ok = slot >= 0;
    if (ok) {
      const int fd = __atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE);
      const uint64_t at = log::kSlotsOffset + uint64_t(slot) * g.slot_bytes;
      // The slot's first page into the page cache first: the page fault
      // that maps it then finds it there (a fault that has to read it costs
      // 50 us here, a 4 KiB pwrite 5).
      static const uint8_t kZeroPage[4096] = {};
      (void)sys::PwriteAll(fd, kZeroPage, sizeof kZeroPage, at);
      const long m = sys::Mmap(s->window, g.slot_bytes, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_FIXED, fd, static_cast<long>(at));
      ok = m == reinterpret_cast<long>(s->window);
      // The chunk header and first records go there at once (OpenInPlace):
      // map it in now rather than by a page fault.
      if (ok) (void)sys::PopulateWrite(s->window, 4096);
      if (ok) {
        s->log_gen = g.log_gen;
        s->file_gen = g.log_gen;
      } else {
        char buf[200];
        sys::Line l(buf, sizeof buf);
        l.Str("cannot map the event log (").Str(strerrordesc_np(static_cast<int>(-m))).Str(")");
        StopRecording(l.c_str());
      }
    }
  }
  if (ok) {
    s->w.Init(s->window, g.slot_bytes, log::kSlotHeaderBytes);
    s->w.Begin(base);
    s->w.OpenInPlace(s->serial, s->tid, s->seq++, s->chunk_flags);
    // The last chunk's records (copied out already) would otherwise lie
    // after this one's committed size, where a reader of a chunk left open
    // (a thread's last, at exit or after a kill) takes nonzero bytes for a
    // record being written when the process stopped. About 2 us for a
    // full 64 KiB slot, once per slot of records.
    if (stale > 0)
      std::memset(s->window + log::kSlotHeaderBytes, 0,
                  std::min<size_t>(stale, g.slot_bytes - log::kSlotHeaderBytes));
    s->open = true;
  } else {
    s->open = false;
    if (s->log_gen != g.log_gen) {
      AnonWindow(s->window);
      s->file_gen = 0;
    }
    s->w.Init(s->window, log::kSlotHeaderBytes, log::kSlotHeaderBytes);  // no room
  }
  g.writers.fetch_sub(1, std::memory_order_release);
  return ok;
}

// Seals the stream's chunk in place (if it has one).
void StreamSeal(SlotStream* s) {
  if (s->log_gen != g.log_gen || s->log_gen == 0 || !s->open) return;
  s->w.SealInPlace();
  s->open = false;
  // Sealed thread chunks: a thread that filled a slot, or ended, recorded
  // something worth a trace (FlushEverything).
  if (s->serial != log::kProcessSerial && s->serial != log::kKernelSerial)
    g.chunks_written.fetch_add(1, std::memory_order_relaxed);
}

// Seals the stream's chunk and copies it to a slot of its own, so that the
// home slot can take the next chunk. False (the chunk stays sealed in the
// home slot, nothing is lost) when the copy cannot be written.
bool StreamCopyOut(SlotStream* s, bool final_flush) {
  if (s->log_gen != g.log_gen || s->log_gen == 0 || !s->open) return false;
  // A full buffer (or a thread's end) in a staged process: it has its log
  // from now on.
  if (g.staged.load(std::memory_order_acquire) && !MaterializeSlow(/*worthy=*/false)) return false;
  StreamSeal(s);
  g.writers.fetch_add(1, std::memory_order_seq_cst);
  bool ok = final_flush || g.phase.load(std::memory_order_seq_cst) == Phase::kReady;
  const int64_t slot = ok ? NewSlot() : -1;
  ok = slot >= 0;
  if (ok) {
    const size_t n = log::kSlotHeaderBytes + s->w.payload_size();
    const long rc = sys::PwriteAll(__atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE), s->window, n,
                                   log::kSlotsOffset + uint64_t(slot) * g.slot_bytes);
    ok = rc == 0;
    // The flight recorder drops thread and kernel chunks once they are old
    // (FlightTrim); the process stream's (modules, definitions) stay.
    if (ok && g.config.flight && s->serial != log::kProcessSerial)
      FlightPush(static_cast<uint32_t>(slot), sys::MonotonicNs());
    if (!ok) {
      g.chunks_dropped.fetch_add(1, std::memory_order_relaxed);
      char buf[1400];
      sys::Line l(buf, sizeof buf);
      l.Str("cannot write the event log ").Str(g.log_path).Str(" (");
      l.Str(strerrordesc_np(static_cast<int>(-rc))).Str(")");
      StopRecording(l.c_str());
    }
  }
  g.writers.fetch_sub(1, std::memory_order_release);
  return ok;
}

// Staging (issue 18): a stream written in plain memory moves to a slot of
// the log just made. Its records so far are copied there with one pwrite,
// then the slot is mapped over the same window: the writer's pointers stay
// valid and it goes on where it was. Only with no other thread recording
// (a staged process has one thread; its signal handlers record nothing
// while it is in here).
bool MaterializeStream(SlotStream* s) {
  if (s->window == nullptr || s->log_gen != g.log_gen || s->file_gen == g.log_gen) return true;
  const int64_t slot = NewSlot();
  if (slot < 0) return false;
  const int fd = __atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE);
  const uint64_t at = log::kSlotsOffset + uint64_t(slot) * g.slot_bytes;
  // The header and everything written (a stream without an open chunk, one
  // that never had room, copies its header: a reader skips it).
  const size_t n = log::kSlotHeaderBytes + (s->open ? s->w.payload_size() : 0);
  const long w = sys::PwriteAll(fd, s->window, n, at);
  if (w != 0) {
    char buf[1400];
    sys::Line l(buf, sizeof buf);
    l.Str("cannot write the event log ").Str(g.log_path).Str(" (");
    l.Str(strerrordesc_np(static_cast<int>(-w))).Str(")");
    StopRecording(l.c_str());
    return false;
  }
  const long m = sys::Mmap(s->window, g.slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                           fd, static_cast<long>(at));
  if (m != reinterpret_cast<long>(s->window)) {
    char buf[200];
    sys::Line l(buf, sizeof buf);
    l.Str("cannot map the event log (").Str(strerrordesc_np(static_cast<int>(-m))).Str(")");
    StopRecording(l.c_str());
    // The window must stay usable memory whatever happened.
    AnonWindow(s->window);
    s->w.Init(s->window, log::kSlotHeaderBytes, log::kSlotHeaderBytes);  // no room
    s->open = false;
    return false;
  }
  s->file_gen = g.log_gen;
  return true;
}

uint64_t StagedSummary(log::QuietChild* kids, uint32_t* nkids) {
  uint64_t records = 0;
  uint64_t tps = sys::EstimateTicksPerSecond(g.start_ticks, g.start_ns);
  if (tps == 0) tps = 1'000'000'000;
  auto scan = [&](const SlotStream& s) {
    if (s.window == nullptr || s.log_gen != g.log_gen || !s.open) return;
    const uint8_t* p = s.window + log::kSlotHeaderBytes;
    const uint8_t* end = p + s.w.payload_size();
    Tick raw = s.hdr()->chunk.base_ticks;
    while (p < end) {
      log::RawRecord rec;
      size_t used;
      if (log::DecodeRecord(p, end, &raw, &rec, &used) != log::Decode::kOk) break;
      ++records;
      if (rec.type == log::kChildExit && *nkids < log::kQuietMaxChildren) {
        // Its time, from the ticks as the encoder converts them (here from
        // the process's start and the current estimate of the frequency).
        const uint64_t d = raw > g.start_ticks ? raw - g.start_ticks : 0;
        const uint64_t ns = g.start_ns + static_cast<uint64_t>(static_cast<long double>(d) * 1e9L /
                                                               static_cast<long double>(tps));
        kids[(*nkids)++] = log::QuietChild{static_cast<uint32_t>(rec.f[0]),
                                           static_cast<uint32_t>(rec.f[1]), ns};
      }
      p += used;
    }
  };
  scan(g_proc);
  const uint32_t used = PoolUsed();
  for (uint32_t i = 0; i < used; ++i) {
    const ThreadRec* r = PoolSlot(i);
    if (r->in_use.load(std::memory_order_acquire) != 0) scan(r->s);
  }
  return records;
}

bool MaterializeStreams() {
  bool ok = MaterializeStream(&g_proc) && MaterializeStream(&g_kern);
  const uint32_t used = PoolUsed();
  for (uint32_t i = 0; ok && i < used; ++i) {
    ThreadRec* r = PoolSlot(i);
    if (r->in_use.load(std::memory_order_acquire) != 0) ok = MaterializeStream(&r->s);
  }
  return ok;
}

// --- The flight recorder (issue 16) -------------------------------------------
// GOTRACE_MODE=flight keeps the last GOTRACE_FLIGHT of the log. Every chunk
// a thread (or the kernel stream) copies out of its home slot is queued with
// the time it was full; FlightTrim, run by the flusher (or, without one,
// every 10 ms by the recording thread), drops the oldest while they are
// older than the span (or while the queue holds more than the size): their
// stack definitions are copied into the process stream first (later events
// may use those stacks), then the slot is punched out of the file
// (FALLOC_FL_PUNCH_HOLE: its blocks are freed) and handed out again by
// NewSlot. So the log's disk use and the slots in use stay bounded however
// long the run; what remains is the home slots (one per live thread, the
// newest records of each) and the process stream.
namespace {
constexpr uint64_t kFlightCap = 1u << 16;
struct FlightEntry {
  std::atomic<uint64_t> seq;  // Vyukov's bounded queue: pos + 1 when filled
  uint32_t slot;
  uint32_t log_gen;
  uint64_t end_ns;
};
FlightEntry* g_fq = nullptr;            // kFlightCap entries
std::atomic<uint64_t> g_fq_tail{0};
uint64_t g_fq_head = 0;                 // under g_trim_lock
std::atomic<uint64_t> g_fq_overflow{0};
uint32_t* g_free_ring = nullptr;        // kFlightCap slot numbers, punched, to reuse
std::atomic<uint64_t> g_reuse_head{0};   // taken by NewSlot (any thread)
std::atomic<uint64_t> g_reuse_tail{0};   // given by FlightTrim (one at a time)
std::atomic_flag g_trim_lock = ATOMIC_FLAG_INIT;
uint8_t* g_trim_buf = nullptr;          // a slot's worth, for reading a chunk back
}  // namespace

void FlightReset() {
  if (!g.config.flight) return;
  if (g_fq == nullptr) {
    g_fq = static_cast<FlightEntry*>(sys::MapMemory(sizeof(FlightEntry) * kFlightCap));
    g_free_ring = static_cast<uint32_t*>(sys::MapMemory(sizeof(uint32_t) * kFlightCap));
    g_trim_buf = static_cast<uint8_t*>(sys::MapMemory(g.slot_bytes));
    if (g_fq == nullptr || g_free_ring == nullptr || g_trim_buf == nullptr) {
      g_fq = nullptr;
      return;
    }
  }
  while (g_trim_lock.test_and_set(std::memory_order_acquire)) sched_yield();
  for (uint64_t i = 0; i < kFlightCap; ++i) g_fq[i].seq.store(i, std::memory_order_relaxed);
  g_fq_tail.store(0, std::memory_order_relaxed);
  g_fq_head = 0;
  g_reuse_head.store(0, std::memory_order_relaxed);
  g_reuse_tail.store(0, std::memory_order_relaxed);
  g.flight_free.store(0, std::memory_order_relaxed);
  g_trim_lock.clear(std::memory_order_release);
}

void FlightPush(uint32_t slot, uint64_t end_ns) {
  if (g_fq == nullptr) return;
  uint64_t pos = g_fq_tail.load(std::memory_order_relaxed);
  for (;;) {
    FlightEntry& e = g_fq[pos % kFlightCap];
    const uint64_t seq = e.seq.load(std::memory_order_acquire);
    if (seq == pos) {
      if (g_fq_tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        e.slot = slot;
        e.log_gen = g.log_gen;
        e.end_ns = end_ns;
        e.seq.store(pos + 1, std::memory_order_release);
        return;
      }
    } else if (seq < pos) {
      // Full (the trimmer is far behind): this chunk is kept for good.
      g_fq_overflow.fetch_add(1, std::memory_order_relaxed);
      return;
    } else {
      pos = g_fq_tail.load(std::memory_order_relaxed);
    }
  }
}

int64_t FlightReuseSlot() {
  if (g_free_ring == nullptr) return -1;
  uint64_t h = g_reuse_head.load(std::memory_order_acquire);
  while (h < g_reuse_tail.load(std::memory_order_acquire)) {
    const uint32_t slot = g_free_ring[h % kFlightCap];
    if (g_reuse_head.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel)) {
      g.flight_free.fetch_sub(1, std::memory_order_relaxed);
      return slot;
    }
  }
  return -1;
}

// Copies the stack definitions of the chunk in `slot` into the process
// stream, then punches the slot out. False (the slot stays) if the process
// lock could not be had without waiting, or the file refused.
bool FlightDrop(uint32_t slot, bool can_wait) {
  const int fd = __atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE);
  const uint64_t at = log::kSlotsOffset + uint64_t{slot} * g.slot_bytes;
  log::SlotHeader h;
  if (sys::Pread(fd, &h, sizeof h, at) != static_cast<long>(sizeof h)) return false;
  if (h.chunk.magic == log::kChunkMagic && h.chunk.size <= g.slot_bytes - log::kSlotHeaderBytes &&
      h.chunk.size > 0) {
    const long got = sys::Pread(fd, g_trim_buf, h.chunk.size, at + log::kSlotHeaderBytes);
    if (got == static_cast<long>(h.chunk.size)) {
      ProcLock lock{ProcLock::Try{}};
      std::optional<ProcLock> waited;
      if (!lock.held()) {
        if (!can_wait) return false;
        waited.emplace();
      }
      const uint8_t* p = g_trim_buf;
      const uint8_t* end = p + h.chunk.size;
      Tick raw = h.chunk.base_ticks;
      while (p < end) {
        log::RawRecord rec;
        size_t used;
        if (log::DecodeRecord(p, end, &raw, &rec, &used) != log::Decode::kOk) break;
        if (rec.type == log::kStackDef) {
          ProcReserve(log::ChunkWriter::VarRecordBound(rec.body_len), false);
          if (ProcWriter().Fits(log::ChunkWriter::VarRecordBound(rec.body_len))) {
            ProcWriter().RawVar(log::kStackDef, sys::Ticks(), 0, rec.body, rec.body_len);
            ProcCommit();
          }
        }
        p += used;
      }
    }
  }
  if (sys::Syscall6(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<long>(at), g.slot_bytes) != 0) {
    return false;
  }
  const uint64_t t = g_reuse_tail.load(std::memory_order_relaxed);
  g_free_ring[t % kFlightCap] = slot;
  g.flight_free.fetch_add(1, std::memory_order_relaxed);
  g_reuse_tail.store(t + 1, std::memory_order_release);
  return true;
}

void FlightTrim(bool can_wait) {
  if (g_fq == nullptr || g.phase.load(std::memory_order_acquire) != Phase::kReady) return;
  if (g_trim_lock.test_and_set(std::memory_order_acquire)) return;
  const uint64_t now = sys::MonotonicNs();
  for (;;) {
    FlightEntry& e = g_fq[g_fq_head % kFlightCap];
    if (e.seq.load(std::memory_order_acquire) != g_fq_head + 1) break;  // empty
    const uint64_t queued = g_fq_tail.load(std::memory_order_relaxed) - g_fq_head;
    const bool over = g.config.flight_bytes != 0 && queued * g.slot_bytes > g.config.flight_bytes;
    const bool old = g.config.flight_ns != ~uint64_t{0} && e.end_ns + g.config.flight_ns < now;
    if (e.log_gen == g.log_gen && !over && !old) break;
    if (e.log_gen == g.log_gen && !FlightDrop(e.slot, can_wait)) break;
    e.seq.store(g_fq_head + kFlightCap, std::memory_order_release);
    ++g_fq_head;
  }
  g_trim_lock.clear(std::memory_order_release);
}

// A full chunk: copy it out and start the next one in the home slot.
bool StreamSpill(SlotStream* s, bool final_flush) {
  if (s->log_gen == g.log_gen && s->open && !StreamCopyOut(s, final_flush)) {
    s->w.Init(s->window, log::kSlotHeaderBytes, log::kSlotHeaderBytes);  // no room
    return false;
  }
  if (g.stopped.load(std::memory_order_acquire)) {
    s->w.Init(s->window, log::kSlotHeaderBytes, log::kSlotHeaderBytes);  // no room
    return false;
  }
  return StreamBegin(s, (s->chunk_flags & log::kChunkNsTime) ? sys::MonotonicNs() : sys::Ticks(),
                     final_flush);
}

// Gives back the slots the file was grown by but never used.
void TruncateLog() {
  const uint64_t used = g.next_slot.load(std::memory_order_acquire);
  if (g.file_slots.load(std::memory_order_acquire) <= used) return;  // nothing to give back
  const uint64_t len = log::kSlotsOffset + used * g.slot_bytes;
  if (sys::Syscall6(SYS_ftruncate, __atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE),
                    static_cast<long>(len)) == 0) {
    g.file_slots.store(used, std::memory_order_release);
  }
}

void FlightReset();

void ResetLogState() {
  g.next_slot.store(0, std::memory_order_relaxed);
  g.file_slots.store(0, std::memory_order_relaxed);
  g.stopped.store(false, std::memory_order_relaxed);
  g.max_slots = g.config.max_mb == 0
                    ? ~uint64_t{0}
                    : std::max<uint64_t>(2, (uint64_t{g.config.max_mb} << 20) / g.slot_bytes);
  g.writers.store(0, std::memory_order_relaxed);
  g.chunks_written.store(0, std::memory_order_relaxed);
  g.chunks_dropped.store(0, std::memory_order_relaxed);
  g.records_dropped.store(0, std::memory_order_relaxed);
  g.heap_records.store(0, std::memory_order_relaxed);
  g.next_serial.store(1, std::memory_order_relaxed);
  ++g.log_gen;
  FlightReset();
}

// A clock sync point: lets the encoder refine the tick frequency from the
// longest interval available, even when the process never reaches its exit.
void AppendClockSync(log::ChunkWriter* w, uint32_t cpu) {
  const Tick t = sys::Ticks();
  const uint64_t ns = sys::MonotonicNs();
  w->ClockSync(t, cpu, ns);
}

// This image's executable, as the kernel names it (/proc/self/exe), read
// once: the module list and the process record both need it, and each
// readlink of /proc is a path walk (issue 18). Async-signal-safe; two
// threads racing to fill it write the same bytes.
const char* ExePath() {
  GT_LARGE_BSS static char exe[1024];
  static std::atomic<bool> known{false};
  if (!known.load(std::memory_order_acquire)) {
    const long n = sys::Readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    known.store(true, std::memory_order_release);
  }
  return exe;
}

// --- The process stream: modules, clock, end ------------------------------
// Rare writers (init, dlopen/dlclose, exit) serialise on a spinlock; its
// slot window is the first of the region.
GT_FORK_HOT std::atomic_flag g_proc_lock = ATOMIC_FLAG_INIT;

SlotStream* KernelStream() { return &g_kern; }

ProcLock::ProcLock() {
  while (g_proc_lock.test_and_set(std::memory_order_acquire)) sched_yield();
}
ProcLock::~ProcLock() {
  if (held_) g_proc_lock.clear(std::memory_order_release);
}
// Hooks never wait for the lock (a holder may be waiting for the loader lock
// that this thread holds, H21), nor do signal handlers: they try once.
ProcLock::ProcLock(Try) : held_(!g_proc_lock.test_and_set(std::memory_order_acquire)) {}

// In a fork child, before anything of the tracer runs there (H12): a lock
// another thread of the parent held at the fork (growing the log, trimming
// the flight recorder's queue, the process stream) stays held in the
// child, whose only thread would wait for it for ever: the fork-storm
// scenario hung once in a CI run, its child spinning in GrowFile. Read
// first: no store, and so no copy of the page, in the usual fork.
void UnlockAfterFork() {
  for (std::atomic_flag* f : {&g_grow_lock, &g_trim_lock, &g_proc_lock})
    if (f->test(std::memory_order_relaxed)) f->clear(std::memory_order_relaxed);
}

void ProcInit(Tick base) {
  g_proc.window = g_region;
  g_proc.serial = log::kProcessSerial;
  g_proc.tid = 0;
  g_proc.seq = 0;
  g_proc.log_gen = 0;
  g_proc.open = false;
  StreamBegin(&g_proc, base, false);
  // The kernel stream takes a home slot when it first has records.
  g_kern.window = g_region + g.slot_bytes;
  g_kern.serial = log::kKernelSerial;
  g_kern.tid = 0;
  g_kern.seq = 0;
  g_kern.log_gen = 0;
  g_kern.open = false;
  g_kern.chunk_flags = log::kChunkNsTime;
  g_kern.w.Init(g_kern.window, log::kSlotHeaderBytes, log::kSlotHeaderBytes);  // no room yet
}
log::ChunkWriter& ProcWriter() { return g_proc.w; }

void ProcCommit() { g_proc.w.PublishSize(); }

void ProcFlush(bool final_flush) {
  if (g_proc.w.empty()) return;
  StreamSpill(&g_proc, final_flush);
}

void ProcEnd() { StreamSeal(&g_proc); }

// Room is kept for the end record: when the log can grow no more (a full
// disk, GOTRACE_MAX_MB), the final flush still ends it.
void ProcReserve(size_t n, bool final_flush) {
  if (!g_proc.w.Fits(n + (final_flush ? 0 : 256))) ProcFlush(final_flush);
}

// Known modules, to report loads and unloads as differences. Written under
// the process lock; read without it by PcKnown (entries are appended and
// published by g_nmodules; `alive` is atomic).
// Every member has an initializer, so that the table is constant-initialized
// (constinit): a dynamic initializer would run after our constructor (101)
// had filled it, and mark every module dead (G7).
struct Module {
  uintptr_t bias = 0, lo = 0, hi = 0;
  bool seen = false;
  std::atomic<bool> alive{false};
  std::atomic<bool> walked{false};  // its code was in a captured stack
};
constexpr size_t kMaxModules = 4096;
GT_LARGE_BSS alignas(4096) constinit Module g_modules[kMaxModules];
std::atomic<size_t> g_nmodules{0};
// A captured stack held a PC outside every known module (a library loaded
// and not yet recorded): its unload must make libunwind forget too.
std::atomic<bool> g_unknown_walked{false};
unsigned long long g_seen_adds = ~0ull, g_seen_subs = ~0ull;
bool g_rescan_final = false;  // the rescan in progress is the exit path's

void ModulesReset(bool populate) {
  // The table's first page is written at once (a log's module list, unless
  // staged: then later, if ever): mapped in by one system call rather than
  // a fault (sys::PopulateWrite).
  if (populate) (void)sys::PopulateWrite(g_modules, 4096);
  g_nmodules.store(0, std::memory_order_release);
  g_seen_adds = g_seen_subs = ~0ull;
}

// Whether pc is in a known module, which is then marked as walked: libunwind
// may now cache unwind rules of its code (LibunwindUnloaded when it goes).
bool PcKnown(uintptr_t pc) {
  const size_t n = g_nmodules.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    Module& m = g_modules[i];
    if (pc >= m.lo && pc < m.hi && m.alive.load(std::memory_order_relaxed)) {
      if (!m.walked.load(std::memory_order_relaxed)) m.walked.store(true, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

struct ScanState {
  bool only_if_changed;
  bool first = true;
  bool changed = false;
  bool subs_changed = false;  // something was unloaded since the last scan
};

int OnModule(dl_phdr_info* info, size_t, void* arg) {
  auto* scan = static_cast<ScanState*>(arg);
  // dlpi_adds/dlpi_subs count objects loaded and unloaded since start: when
  // they did not move, the list did not change and the first callback
  // suffices. (Only the first: the others see the counters just stored.)
  if (scan->first) {
    scan->first = false;
    const bool same = info->dlpi_adds == g_seen_adds && info->dlpi_subs == g_seen_subs;
    if (same && scan->only_if_changed) return 1;
    scan->changed = !same;
    scan->subs_changed = info->dlpi_subs != g_seen_subs && g_seen_subs != ~0ull;
    g_seen_adds = info->dlpi_adds;
    g_seen_subs = info->dlpi_subs;
  }
  uintptr_t lo = ~uintptr_t{0}, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (hi == 0) return 0;
  const size_t known = g_nmodules.load(std::memory_order_relaxed);
  for (size_t i = 0; i < known; ++i) {
    Module& m = g_modules[i];
    if (m.alive.load(std::memory_order_relaxed) && m.bias == info->dlpi_addr && m.lo == lo &&
        m.hi == hi) {
      m.seen = true;
      return 0;
    }
  }
  if (known == kMaxModules) return 0;
  Module& nm = g_modules[known];
  nm.bias = info->dlpi_addr;
  nm.lo = lo;
  nm.hi = hi;
  nm.seen = true;
  nm.alive.store(true, std::memory_order_relaxed);
  g_nmodules.store(known + 1, std::memory_order_release);
  // The main executable has an empty name; the kernel knows its path.
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') path = ExePath();
  const size_t len = std::min<size_t>(sys::StrLen(path), 4000);
  ProcReserve(log::ChunkWriter::VarRecordBound(60 + len), g_rescan_final);
  g_proc.w.ModuleLoad(sys::Ticks(), 0, g.epoch.load(), info->dlpi_addr, lo, hi,
                      std::string_view(path, len));
  ProcCommit();
  return 0;
}

// `only_if_changed`: return at once when the loader's counters show no change.
// Staging: a staged log starts without its module list and the unwinder's
// code map (a quiet process never needs them: reading every loaded
// object's program headers and unwind table locations was a quarter of a
// short grep's cost); the first stack walk, or the log's materialization,
// builds them (EnsureModules).
std::atomic<bool> g_modules_pending{false};

void ModulesLater() { g_modules_pending.store(true, std::memory_order_release); }

void EnsureModules() {
  if (GT_LIKELY(!g_modules_pending.load(std::memory_order_acquire))) return;
  // Never waiting (a hook; or the caller itself holds it, inside a write
  // of the process stream): a later call does it then.
  ProcLock lock{ProcLock::Try{}};
  if (!lock.held() || !g_modules_pending.load(std::memory_order_acquire)) return;
  ErrnoGuard errno_guard;  // dl_iterate_phdr, readlink
  RescanLocked(false, false, false, true);
}

void RescanLocked(bool after_unload, bool only_if_changed, bool final_flush, bool force_code_map) {
  g_rescan_final = final_flush;
  if (!final_flush) g_modules_pending.store(false, std::memory_order_release);
  // The unwinder's map of executable code (it keeps its own loader
  // counters, so it is brought up to date even when this scan is not).
  if (g.config.unwind != UnwindMode::kNone && !final_flush)
    unwind::ProcessCode().Update(!only_if_changed && force_code_map);
  const size_t known = g_nmodules.load(std::memory_order_relaxed);
  for (size_t i = 0; i < known; ++i) g_modules[i].seen = false;
  ScanState scan{only_if_changed};
  dl_iterate_phdr(OnModule, &scan);
  if (only_if_changed && !scan.changed) return;
  if (after_unload) ++g.epoch;  // stacks captured from now on may differ
  bool died = false, walked = false;
  for (size_t i = 0; i < g_nmodules.load(std::memory_order_relaxed); ++i) {
    Module& m = g_modules[i];
    if (m.alive.load(std::memory_order_relaxed) && !m.seen) {
      m.alive.store(false, std::memory_order_relaxed);
      died = true;
      walked = walked || m.walked.load(std::memory_order_relaxed);
      ProcReserve(log::ChunkWriter::VarRecordBound(40), g_rescan_final);
      g_proc.w.ModuleUnload(sys::Ticks(), 0, g.epoch.load(), m.lo, m.hi);
      ProcCommit();
    }
  }
  // Something was unloaded: libunwind must forget the unwind rules of its
  // code before anything else is loaded there (no-op unless
  // GOTRACE_UNWIND=libunwind). Also code never recorded as a module, if a
  // stack walked a PC outside every known module meanwhile.
  if (died || scan.subs_changed)
    unwind::LibunwindUnloaded(walked || g_unknown_walked.exchange(false, std::memory_order_relaxed));
}

void ThreadKeyDestructor(void* v);
bool KeyCreate() { return pthread_key_create(&g_key, ThreadKeyDestructor) == 0; }

void ThreadKeyDestructor(void* v) {
  const auto iter = reinterpret_cast<uintptr_t>(v);
  if (iter > 1) {
    // Re-arm so that we run after every other TSD destructor (H25).
    pthread_setspecific(g_key, reinterpret_cast<void*>(iter - 1));
    return;
  }
  FinishCurrentThread();
}

thread_local StackHint t_stack_hint;
}  // namespace internal
void SetStackHint(const StackHint& h) { internal::t_stack_hint = h; }
namespace internal {

// A thread created through our pthread_create: its bounds from its
// creator's attributes. glibc maps a stack block of the size asked for
// (the guard pages below it, at the block's bottom) and puts the thread's
// descriptor, pthread_self(), in its last page: the block ends at that
// page's end. The guard's size and a page more are left off the bottom
// (glibc before 2.27 counted the guard in the size; rounding).
// False (pthread_getattr_np decides) if the stack pointer is not inside.
bool StackBoundsFromHint(ThreadRec* r) {
  const StackHint h = t_stack_hint;
  t_stack_hint = StackHint{};
  if (h.size == 0) return false;
  uintptr_t lo, hi;
  if (h.user_lo != 0) {
    lo = h.user_lo;
    hi = h.user_lo + h.size;
  } else {
    hi = (static_cast<uintptr_t>(pthread_self()) | 4095) + 1;
    const size_t off = h.guard + 4096;
    if (h.size <= off + 4096 || hi < h.size) return false;
    lo = hi - h.size + off;
  }
  const auto sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (sp < lo || sp >= hi) return false;
  r->stack_lo = lo;
  r->stack_hi = hi;
  return true;
}

void StackBoundsOf(ThreadRec* r, bool main_thread) {
  if (main_thread && __libc_stack_end != nullptr) {
    // The main stack grows on demand below the initial stack pointer, up to
    // RLIMIT_STACK; every frame lies between. (pthread_getattr_np would read
    // and parse /proc/self/maps to say the same: a tenth of a millisecond
    // of every traced process's start.)
    struct rlimit rl {};
    uint64_t size = 8u << 20;
    if (sys::Syscall6(SYS_prlimit64, 0, RLIMIT_STACK, 0, reinterpret_cast<long>(&rl)) == 0 &&
        rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 0) {
      size = rl.rlim_cur;
    } else if (rl.rlim_cur == RLIM_INFINITY) {
      size = uint64_t{1} << 30;
    }
    // The top: above the initial stack pointer lie argv, envp, auxv and
    // their strings, up to the page that holds the executable's name
    // (AT_EXECFN, which the kernel copies to the top); both ends of that
    // stretch are mapped, and a walk may read up to the top.
    const auto end = reinterpret_cast<uintptr_t>(__libc_stack_end);
    const uintptr_t execfn = getauxval(AT_EXECFN);
    uintptr_t top = (end | 4095) + 1;
    if (execfn > end && execfn - end < (uintptr_t{16} << 20)) top = std::max(top, (execfn | 4095) + 1);
    r->stack_hi = top;
    r->stack_lo = r->stack_hi > size ? r->stack_hi - size : 0;
    return;
  }
  if (StackBoundsFromHint(r)) return;
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  // pthread_getattr_np allocates (the affinity mask): we are inside the
  // tracer (depth > 0), so that is not traced.
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  r->stack_lo = reinterpret_cast<uintptr_t>(addr);
  r->stack_hi = r->stack_lo + size;
  if (r->stack_hi <= r->stack_lo) r->stack_lo = r->stack_hi = 0;
}

// --- Stack walks (CaptureStack, SnapshotRec) ---------------------------------

// libunwind's walk starts inside the tracer: room for our own frames.
constexpr size_t kOwnFrames = 8;

// The built-in unwinder's mode. GOTRACE_UNWIND=libunwind uses it too where
// libunwind cannot walk (another thread's stack, a signal stack, stale rules).
unwind::WalkMode BuiltinMode() {
  return g.config.unwind == UnwindMode::kFp ? unwind::WalkMode::kFp : unwind::WalkMode::kAuto;
}

// The calling thread's stack from its interposer's frame, inside b. *way:
// the walk memo's entry it used, nullptr if none.
unwind::WalkResult WalkOwn(ThreadRec* r, const void* frame, unwind::FpBounds b, uint64_t* pcs,
                           ThreadRec::WalkWay** way) {
  *way = nullptr;
  const unwind::UnwindContext cx = unwind::ProcessUnwind();
  if (g.config.unwind == UnwindMode::kLibunwind) {
    // It refuses (0) a thread whose cached unwind rules may be stale (a
    // walked library was unloaded): the built-in unwinder then.
    const size_t max = g.config.depth + kOwnFrames;
    const size_t n = unwind::LibunwindBacktrace(pcs, max, &r->unw_gen);
    if (n > 0) return unwind::CheckCode(cx, pcs, n, max);
  }
  unwind::Regs regs;
  if (!unwind::RegsFromFrame(frame, b, &regs)) return unwind::WalkResult{};
  // The memo of the walk from this frame, else the next in turn: the same
  // place at several depths (python's GIL waits, a function two callers
  // use) keeps one memo each.
  size_t i = 0;
  while (i < kWalkMemoWays && (r->walk_way[i].pc != regs.pc || r->walk_way[i].sp != regs.sp)) ++i;
  if (i == kWalkMemoWays) {
    i = r->walk_next++ % kWalkMemoWays;
    r->walk_way[i] = ThreadRec::WalkWay{regs.pc, regs.sp, 0, 0, 0};
  }
  *way = &r->walk_way[i];
  return unwind::Walk(cx, BuiltinMode(), regs, b, pcs, g.config.depth, &r->walk_memo[i]);
}

}  // namespace internal

bool ObjectOf(const void* addr, uintptr_t* base, const char** name) {
  struct Ctx {
    uintptr_t addr;
    bool found;
    uintptr_t base;
    const char* name;
  } ctx{reinterpret_cast<uintptr_t>(addr), false, 0, nullptr};
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* p) {
        auto* c = static_cast<Ctx*>(p);
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const ElfW(Phdr)& ph = i->dlpi_phdr[k];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t lo = i->dlpi_addr + ph.p_vaddr;
          if (c->addr >= lo && c->addr < lo + ph.p_memsz) {
            c->found = true;
            c->base = i->dlpi_addr;
            c->name = i->dlpi_name;
            return 1;
          }
        }
        return 0;
      },
      &ctx);
  if (ctx.found) {
    *base = ctx.base;
    *name = ctx.name;
  }
  return ctx.found;
}

namespace internal {

uint32_t InternStack(const uint64_t* pcs, size_t n, uint32_t epoch, bool* fresh) {
  if (!EnsureDepot()) return 0;
  return g_depot.Intern(pcs, n, epoch, fresh, g.log_gen);
}

void FindSelf() {
  uintptr_t self_base = 0;
  const char* path = nullptr;
  if (!ObjectOf(reinterpret_cast<void*>(&FindSelf), &self_base, &path) || path == nullptr) return;
  size_t n = sys::StrLen(path), slash = 0;
  for (size_t i = 0; i < n; ++i)
    if (path[i] == '/') slash = i;
  sys::Line l(g.self_path, sizeof g.self_path);
  // Absolute (LD_PRELOAD=build/libgotrace.so names it relative to where the
  // program started, and the gotrace command beside it is looked for only
  // when needed, after the program may have changed directory).
  if (path[0] != '/' && g.cwd[0] == '/') l.Str(g.cwd).Char('/');
  if (slash == 0) l.Str(path[0] == '/' ? "/" : ".");
  else l.Str(path, slash);
  // Our code's address range, to cut tracer frames out of stacks.
  struct Ctx {
    uintptr_t base, lo, hi;
  } ctx{self_base, ~uintptr_t{0}, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* p) {
        auto* c = static_cast<Ctx*>(p);
        if (i->dlpi_addr != c->base) return 0;
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const ElfW(Phdr)& ph = i->dlpi_phdr[k];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          c->lo = std::min<uintptr_t>(c->lo, i->dlpi_addr + ph.p_vaddr);
          c->hi = std::max<uintptr_t>(c->hi, i->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        return 1;
      },
      &ctx);
  if (ctx.hi > ctx.lo) {
    g.self_lo = ctx.lo;
    g.self_hi = ctx.hi;
  }
}

}  // namespace internal

using namespace internal;

// --- Stand-ins (issue 16) ---------------------------------------------------
// A trace window begins with every thread of the process, also those that
// record nothing in it (blocked all along, computing, or started while
// recording was paused). The window's start writes, for each, a stream of
// one chunk in the new log: its start (an existing thread), its kernel name
// and, in the slot header, the wait it is blocked in. The thread itself
// continues that stream (same serial, next chunk) if it records later.
namespace internal {
namespace {
struct StandIn {
  uint32_t tid;
  uint32_t serial;
  uint32_t wait_kind;  // the wait its stand-in shows it blocked in (0: none)
  uint32_t wait_stack;
  Tick ts;
  uint64_t wait_obj, wait_aux, wait_flags;
};
StandIn* g_stand_ins = nullptr;  // kMaxThreads entries, mapped at the first window
std::atomic<uint32_t> g_nstand_ins{0};
uint32_t g_stand_in_gen = 0;  // the log they belong to
}  // namespace

void StandInsReset() {
  if (g_stand_ins == nullptr)
    g_stand_ins = static_cast<StandIn*>(sys::MapMemory(sizeof(StandIn) * kMaxThreads));
  g_nstand_ins.store(0, std::memory_order_relaxed);
  g_stand_in_gen = g.log_gen;
}

const StandIn* FindStandIn(uint32_t tid) {
  if (g_stand_ins == nullptr || g_stand_in_gen != g.log_gen) return nullptr;
  const uint32_t n = g_nstand_ins.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i)
    if (g_stand_ins[i].tid == tid) return &g_stand_ins[i];
  return nullptr;
}

uint32_t StandInSerial(uint32_t tid) {
  const StandIn* si = FindStandIn(tid);
  return si != nullptr ? si->serial : 0;
}

uint32_t StandInCount() {
  return g_stand_in_gen == g.log_gen ? g_nstand_ins.load(std::memory_order_acquire) : 0;
}
void StandInAt(uint32_t i, uint32_t* tid, uint32_t* serial) {
  *tid = g_stand_ins[i].tid;
  *serial = g_stand_ins[i].serial;
}

ThreadRec* FindRecordOf(uint32_t tid) {
  const uint32_t used = PoolUsed();
  for (uint32_t i = 0; i < used; ++i) {
    ThreadRec* r = PoolSlot(i);
    if (r->in_use.load(std::memory_order_acquire) != 0 && r->s.tid == tid) return r;
  }
  return nullptr;
}

bool WriteStandIn(const StandInThread& t) {
  const uint32_t n = g_nstand_ins.load(std::memory_order_relaxed);
  if (g_stand_ins == nullptr || n >= kMaxThreads) return false;
  const int64_t slot = NewSlot();
  if (slot < 0) return false;
  const uint32_t serial = g.next_serial.fetch_add(1, std::memory_order_relaxed);
  alignas(64) uint8_t buf[4096] = {};
  log::ChunkWriter w;
  w.Init(buf, std::min<size_t>(sizeof buf, g.slot_bytes), log::kSlotHeaderBytes);
  w.Begin(t.ts);
  w.OpenInPlace(serial, t.tid, 0, 0);
  // The thread's start first: the reader takes a stream's start from its
  // first record only. (After the wait's stack definition, a thread blocked
  // in a recorded wait at a window's start lost its routine, its pthread_t
  // and its role: redis's main thread was "main" in its first window and
  // "redis-server" in the next.)
  w.ThreadStart(t.ts, t.cpu, 0, t.start_pc, t.self, t.flags | log::kThreadExisted);
  if (t.name_len > 0)
    w.ThreadName(t.ts, t.cpu, 0, std::string_view(t.name, t.name_len));
  if (t.stack_n > 0 && w.Fits(log::ChunkWriter::StackDefBound(t.stack_n)))
    w.StackDef(t.ts, t.cpu, t.wait_stack, t.stack_epoch, t.stack_pcs, t.stack_n);
  w.PublishSize();
  auto* h = reinterpret_cast<log::SlotHeader*>(buf);
  if (t.wait_kind != 0) {
    h->wait_cpu = t.cpu;
    h->wait_t0 = t.ts;
    h->wait_obj = t.wait_obj;
    h->wait_aux = t.wait_aux;
    h->wait_flags = t.wait_flags;
    h->wait_stack = t.wait_stack;
    h->wait_kind = t.wait_kind;
  }
  const size_t bytes = log::kSlotHeaderBytes + w.payload_size();
  if (sys::PwriteAll(__atomic_load_n(&g.log_fd, __ATOMIC_ACQUIRE), buf, bytes,
                     log::kSlotsOffset + uint64_t(slot) * g.slot_bytes) != 0) {
    return false;
  }
  g_stand_ins[n] = StandIn{t.tid, serial, t.wait_kind, t.wait_stack, t.ts, t.wait_obj, t.wait_aux,
                           t.wait_flags};
  g_nstand_ins.store(n + 1, std::memory_order_release);
  return true;
}

bool RedefineStack(uint32_t id, uint32_t log_gen, const uint64_t** pcs, size_t* n, uint32_t* epoch) {
  if (!EnsureDepot()) return false;
  return g_depot.Redefine(id, log_gen, pcs, n, epoch);
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Registration

bool ForeignStackIsOwn(ThreadRec* r, uintptr_t frame) {
  const uintptr_t window = (frame >> 20) + 1;
  if (__atomic_load_n(&r->foreign_window, __ATOMIC_RELAXED) == window) return true;
  if (static_cast<uint32_t>(sys::GetTid()) != r->s.tid) return false;
  __atomic_store_n(&r->foreign_window, window, __ATOMIC_RELAXED);
  return true;
}

bool AbandonedScope(uintptr_t frame) {
  const ThreadRec* r = t_state.rec;
  // Inside the tracer, nesting is by construction (the tracer never runs
  // program code that could longjmp out of it).
  return !InTracer() && r != nullptr && t_state.scope_frame != 0 && frame > t_state.scope_frame &&
         frame >= r->stack_lo && frame < r->stack_hi;
}

namespace {
// Whether the calling thread began after this image's log did
// (its kernel start time, /proc/thread-self/stat's 22nd field, in clock
// ticks since boot: 10 ms here; within the log's first tick it counts as
// older). A thread first seen recording, not made through our
// pthread_create, is either older than the log (a window's, a constructor
// of a library loaded before ours) or libc's own (kThreadLate). Raw system
// calls; once per such thread.
bool StartedSinceLog() {
  char buf[512];
  const long fd = sys::OpenAt(-100, "/proc/thread-self/stat", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  const long n = sys::Read(static_cast<int>(fd), buf, sizeof buf - 1);
  sys::Close(static_cast<int>(fd));
  if (n <= 0) return false;
  buf[n] = '\0';
  // After the command's closing parenthesis: field 3 (state) on; the start
  // time is the 20th of those.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return false;
  for (int field = 2; field < 22 && *p != '\0'; ++p)
    if (*p == ' ') ++field;
  uint64_t jiffies = 0;
  for (; *p >= '0' && *p <= '9'; ++p) jiffies = jiffies * 10 + static_cast<uint64_t>(*p - '0');
  const uint64_t hz = getauxval(AT_CLKTCK);
  if (jiffies == 0 || hz == 0) return false;
  struct timespec boot {};
  if (clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return false;
  const uint64_t mono = sys::MonotonicNs();
  const uint64_t boot_ns =
      static_cast<uint64_t>(boot.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(boot.tv_nsec);
  if (mono < g.start_ns || boot_ns < mono - g.start_ns) return false;
  const uint64_t log_start_boot = boot_ns - (mono - g.start_ns);
  return jiffies * (1'000'000'000ull / hz) >= log_start_boot;
}
}  // namespace

ThreadRec* RegisterCurrentThreadSlow(uint64_t create_id, uintptr_t start_pc, uint64_t flags,
                                     Tick since) {
  const uint32_t bind = g.bind.load(std::memory_order_acquire);
  if (bind == 0) return nullptr;
  if (t_state.bound == bind) return t_state.rec;  // already decided in this log
  ThreadRec* prev = t_state.rec;
  t_state.rec = nullptr;
  if (t_state.status == kThreadExited) {
    t_state.bound = bind;
    return nullptr;
  }
  TracerScope tracer;
  ErrnoGuard errno_guard;  // pthread_getattr_np allocates
  const auto tid = static_cast<uint32_t>(sys::GetTid());
  // A thread whose records went to an earlier log of this image (a trace
  // window's, a failed exec's) keeps its record and who it is; its home
  // slot moves to the new log (StreamBegin). A fork child's pool was reset
  // with its log: nothing of it is the child's.
  const bool moving = prev != nullptr && prev->in_use.load(std::memory_order_acquire) != 0 &&
                      prev->s.tid == tid && prev->s.log_gen != g.log_gen;
  ThreadRec* r = moving ? prev : AllocRec();
  t_state.bound = bind;
  // The process's main thread is its main thread however it comes to be
  // registered: by a hook, in a trace window's log, it came with no role,
  // and the next window's stand-in took it for a thread like any other
  // (named after the process, where the first window said main).
  if (!moving && static_cast<int>(tid) == g.pid) {
    flags |= log::kThreadMain;
    if (start_pc == 0) start_pc = g.main_pc.load(std::memory_order_relaxed);
  }
  if (r == nullptr) {
    t_state.status = kThreadUntraced;
    if (g.untraced_threads.fetch_add(1, std::memory_order_relaxed) == 0)
      sys::Log("too many threads at once: some threads are not traced");
    return nullptr;
  }
  if (!moving) {
    r->start_pc = start_pc;
    r->self = static_cast<uint64_t>(pthread_self());
    r->thread_flags = flags & log::kThreadMain;
    r->foreign_window = 0;
    StackBoundsOf(r, (flags & log::kThreadMain) != 0);
    // A new thread: libunwind's frame cache is its first walk's (slots are
    // reused). Not prepared here (LibunwindPrepareThread): 256 KiB and ~0.1 ms
    // for every thread, also those that never record a stack.
    r->unw_gen = 0;
  }
  // A trace window's start wrote a stand-in stream for every thread alive
  // then (WriteStandIn): the thread continues it, after its first chunk.
  const StandIn* si = FindStandIn(tid);
  const uint32_t stand_in = si != nullptr ? si->serial : 0;
  r->s.serial = stand_in != 0 ? stand_in : g.next_serial.fetch_add(1, std::memory_order_relaxed);
  r->s.tid = tid;
  r->s.seq = stand_in != 0 ? 1 : 0;
  r->wait_frame = nullptr;
  r->next_sync = 0;  // its first record pairs the clocks
  const Tick t = sys::Ticks();
  const Tick now = since != 0 && since < t ? since : t;
  StreamBegin(&r->s, now, false);  // on failure the thread records nothing
  r->in_use.store(1, std::memory_order_release);
  if (si != nullptr && si->wait_kind != 0 && (flags & kOwnWaitFollows) == 0 &&
      r->s.w.Fits(log::kMaxFixedRecordBytes)) {
    // Its stand-in shows it blocked since the window began; this is the
    // first the thread does since: that wait ended now. (A wait of ours the
    // thread returns from says when it began itself: MoveWait.)
    const uint32_t cpu = sys::CurrentCpu();
    r->s.w.Wait(si->ts, cpu, static_cast<WaitKind>(si->wait_kind), si->wait_flags, si->wait_obj,
                si->wait_aux, now > si->ts ? now - si->ts : 0, cpu, si->wait_stack);
    Commit(r);
  }
  flags &= ~kOwnWaitFollows;
  if (stand_in == 0 && r->s.w.Fits(log::kMaxFixedRecordBytes)) {
    if (moving) {
      create_id = 0;
      start_pc = r->start_pc;
      flags = r->thread_flags | log::kThreadExisted;
    } else if ((flags & (log::kThreadExisted | log::kThreadMain)) == log::kThreadExisted &&
               StartedSinceLog()) {
      flags |= log::kThreadLate;
    }
    r->s.w.ThreadStart(now, sys::CurrentCpu(), create_id, start_pc, r->self, flags);
    Commit(r);
  }
  pthread_setspecific(g_key, reinterpret_cast<void*>(uintptr_t{kDtorIterations}));
  t_state.rec = r;
  t_state.status = kThreadTraced;
  return r;
}

ThreadRec* MoveToCurrentLog(bool own_wait_follows) {
  if (g.bind.load(std::memory_order_acquire) == 0) return nullptr;
  return RegisterCurrentThreadSlow(0, 0, log::kThreadExisted | (own_wait_follows ? kOwnWaitFollows : 0));
}

void ArmThreadEnd() {
  pthread_setspecific(g_key, reinterpret_cast<void*>(uintptr_t{kDtorIterations}));
}

// Main's arguments as they were before main ran. Programs rewrite theirs:
// perf's option parser moves them and ends the array early (argv[argc]
// NULL at a smaller argc), setproctitle writes over the strings. A staged
// log's process record, the journal entry at a quiet end and a trace
// window's new log (issue 16) are written later, from this copy. Cut as
// the process record cuts them: 64 arguments, 4096 bytes.
namespace {
constexpr size_t kArgMax = internal::kMaxArgs;
constexpr size_t kArgBytes = log::ChunkWriter::kMaxArgvBytes;
GT_LARGE_BSS char g_arg_bytes[kArgBytes + kArgMax];  // the strings, each ended by a NUL
char* g_arg_ptrs[kArgMax + 1];                       // into g_arg_bytes, ended by nullptr
}  // namespace

int internal::SnapshotArgs(int argc, char** argv) {
  size_t used = 0;
  int n = 0;
  for (; n < argc && static_cast<size_t>(n) < kArgMax && argv[n] != nullptr; ++n) {
    size_t len = std::strlen(argv[n]);
    if (used + len > kArgBytes) {
      if (used == kArgBytes) break;
      len = kArgBytes - used;  // the last one that fits, cut
    }
    g_arg_ptrs[n] = g_arg_bytes + used + static_cast<size_t>(n);
    std::memcpy(g_arg_ptrs[n], argv[n], len);
    g_arg_ptrs[n][len] = '\0';
    used += len;
  }
  g_arg_ptrs[n] = nullptr;
  return n;
}

void NoteProcessArgs(int argc, char** argv) {
  if (g.argv != nullptr || argv == nullptr || argc < 0) return;
  NoteOwnCommand(argv);  // the learn table's key, from all of them
  g.argc = internal::SnapshotArgs(argc, argv);
  g.argv = g_arg_ptrs;
}

bool RecordProcessInfo() {
  const Phase phase = g.phase.load(std::memory_order_acquire);
  if (phase != Phase::kReady && phase != Phase::kPaused) return false;
  // Staged: written when the log is made, if ever (WriteProcessInfo): a
  // quiet process's journal entry says who it was without it, and
  // /proc/self/exe's first reading costs a new process 15 to 25 us. Once
  // per log.
  if (g.staged.load(std::memory_order_acquire) || g.argv == nullptr || g.info_log_gen == g.log_gen)
    return false;
  WriteProcessInfo(g.argc, g.argv, /*wait=*/true);
  return g.info_log_gen == g.log_gen;
}

void internal::WriteProcessInfo(int argc, char** argv, bool wait) {
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady || argv == nullptr || argc < 0)
    return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  std::optional<ProcLock> lock;
  if (wait) {
    lock.emplace();
  } else {
    lock.emplace(ProcLock::Try{});
    if (!lock->held()) return;  // this thread holds it itself, further up
  }
  WriteProcessInfoLocked(argc, argv);
}

void internal::WriteProcessInfoLocked(int argc, char** argv) {
  // (A log with slots too small for it goes without: GOTRACE_BUFFER_KB=4.)
  constexpr size_t kNeed = log::ChunkWriter::VarRecordBound(log::ChunkWriter::ProcessInfoBound());
  if (kNeed + 512 > g.slot_bytes - log::kSlotHeaderBytes) return;
  const char* exe = ExePath();
  GT_LARGE_BSS static uint8_t scratch[log::ChunkWriter::ProcessInfoBound()];  // under the lock
  ProcReserve(kNeed, false);
  if (!ProcWriter().Fits(kNeed)) return;
  // Its parent when it began (see WriteHeader), getppid's only if unknown.
  const uint64_t ppid = g.ppid != 0 ? g.ppid : static_cast<uint64_t>(sys::GetPPid());
  // A trace window's log: when the process began, for the run's index.
  const uint64_t began = g.began_ns != 0 && g.began_ns < g.start_ns ? g.began_ns : 0;
  ProcWriter().ProcessInfo(sys::Ticks(), 0, ppid, g.descendant ? 1 : 0, exe, argv,
                           static_cast<size_t>(argc), scratch, began);
  ProcCommit();
  g.info_log_gen = g.log_gen;
}

void RegisterMainThread() {
  if (t_state.rec != nullptr || g.phase.load(std::memory_order_acquire) != Phase::kReady) return;
  RegisterCurrentThreadSlow(0, g.main_pc.load(std::memory_order_relaxed),
                            log::kThreadMain | log::kThreadExisted);
}

// The calling thread's kernel name (prctl: one system call), as a record.
static void RecordOwnName(ThreadRec* r) {
  char name[17] = {0};
  if (sys::Syscall6(SYS_prctl, PR_GET_NAME, reinterpret_cast<long>(name)) != 0) return;
  const size_t n = sys::StrLen(name);
  if (n > 0 && Reserve(r, log::ChunkWriter::VarRecordBound(kMaxVarintBytes + 1 + 16))) {
    r->s.w.ThreadName(sys::Ticks(), sys::CurrentCpu(), 0, std::string_view(name, n));
    Commit(r);
  }
}

void FinishCurrentThread() {
  FoldHeapDelta();  // while this thread may still record its last sample
  ThreadRec* r = t_state.rec;
  // A trace window opened since the thread last recorded (or it never did:
  // it started while recording was paused): its end belongs to the window.
  if (LogMoved() && t_state.status != kThreadExited &&
      g.phase.load(std::memory_order_acquire) == Phase::kReady) {
    r = MoveToCurrentLog();
  } else if (r != nullptr && g.phase.load(std::memory_order_acquire) == Phase::kPaused) {
    // Recording is paused: the record goes back to the pool (a window's
    // start must not take the thread for alive).
    UnpublishWait(r);
    t_state.rec = nullptr;
    t_state.status = kThreadExited;
    FreeRec(r);
    return;
  }
  if (r == nullptr || t_state.bound != g.bind.load(std::memory_order_acquire)) {
    t_state.rec = nullptr;
    t_state.status = kThreadExited;
    return;
  }
  TracerScope tracer;
  t_state.rec = nullptr;
  t_state.status = kThreadExited;
  if (g.phase.load(std::memory_order_acquire) == Phase::kReady) {
    RecordOwnName(r);
    RecordCpuTime(r, sys::Ticks(), sys::CurrentCpu());
    if (Reserve(r, log::kMaxFixedRecordBytes + 64)) {
      r->s.w.ThreadEnd(sys::Ticks(), sys::CurrentCpu());
      Commit(r);
    }
    // The home slot goes to the next thread that takes this record: the
    // chunk is copied out first (if that fails it stays where it is, and
    // the record is not reused).
    const bool had_chunk = r->s.open;
    if (!StreamCopyOut(&r->s, false) && had_chunk) return;
    FreeRec(r);
    return;
  }
  // After shutdown the final flush owns the record: leave it in place, with
  // the thread's name, which the flush read from /proc, where the entry of
  // a thread that has ended is gone (a Python thread that renamed itself
  // was named after its routine in 2 runs of 9).
  if (sys::Syscall6(SYS_prctl, PR_GET_NAME, reinterpret_cast<long>(r->exit_name)) == 0)
    r->exit_named.store(true, std::memory_order_release);
}

// ---------------------------------------------------------------------------
// Recording

void ClockSyncSlow(ThreadRec* r) {
  const Tick t = sys::Ticks();
  r->next_sync = t + g.sync_ticks;
  if (r->s.w.Fits(32)) {  // else the next chunk starts with one (SpillSlow)
    AppendClockSync(&r->s.w, sys::CurrentCpu());
    r->s.w.PublishSize();
  }
  KernelSchedTick(t);
  // A flight recorder without the flusher drops its old chunks here.
  if (g.config.flight && !FlusherRunning()) {
    TracerScope tracer;
    ErrnoGuard errno_guard;
    FlightTrim(false);
  }
  // A program without the flusher thread (one thread: see
  // MaybeStartFlusher) has its kernel records read here, every 10 ms of
  // its recording.
  if (kernel::Active() && !FlusherRunning()) {
    TracerScope tracer;
    ErrnoGuard errno_guard;
    // Start-up rings (kernel::Grow): full-size ones once they have been
    // open 10 ms (not since the start: the machine's first perf event may
    // take that long to open) and the process still has one thread, which
    // is this one.
    const uint64_t opened = kernel::StartupRingsOpened();
    if (opened != 0 && t - opened >= g.sync_ticks &&
        g.app_threads.load(std::memory_order_relaxed) <= 1) {
      kernel::Grow(g.config);
    } else {
      kernel::Drain(false);
    }
  }
}

bool SpillSlow(ThreadRec* r) {
  TracerScope tracer;
  ErrnoGuard errno_guard;  // H31: clock_gettime, sched_getcpu, mmap
  MaybeStartFlusher();     // a forked child's first spill (if it has threads)
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady || g.stopped.load() ||
      r != t_state.rec || t_state.bound != g.bind.load(std::memory_order_acquire)) {
    // Shut down, stopped, or a record of an earlier log (the thread entered
    // its hook before the log changed): nowhere to write.
    g.records_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (r->s.log_gen == g.log_gen && r->s.w.Fits(64)) {
    AppendClockSync(&r->s.w, sys::CurrentCpu());
    Commit(r);
  }
  const bool ok = StreamSpill(&r->s, false);
  if (!ok) g.records_dropped.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

uint32_t CaptureStack(const HookScope& s, const void* frame, Tick ts) {
  if (g.config.unwind == UnwindMode::kNone || !EnsureDepot()) return 0;
  EnsureModules();
  ThreadRec* r = s.rec();
  uint64_t pcs[log::kMaxStackDepth + kOwnFrames];
  const auto f = reinterpret_cast<uintptr_t>(frame);
  const unwind::FpBounds b{f, r->stack_hi};
  unwind::WalkResult w;
  ThreadRec::WalkWay* way = nullptr;
  if (f >= r->stack_lo && f < r->stack_hi) {
    // libunwind only on the thread's own stack: a hook on a sigaltstack runs
    // in a signal handler (H17).
    for (int attempt = 0;; ++attempt) {
      w = WalkOwn(r, frame, b, pcs, &way);
      // A return address that the code map does not know but the loader
      // does is in a library loaded since (dlopen is not interposed); a
      // stale map is one that a dlclose left unchecked. Either way: rebuild
      // and walk again, once, never waiting for the lock (a holder may be
      // waiting for the loader lock this thread holds, H21).
      const bool new_code = w.end == unwind::WalkEnd::kNotCode &&
                            unwind::LoaderHasNewObjectAt(unwind::ProcessCode(), w.bad_pc);
      if (attempt > 0 || (!new_code && !w.stale_map)) break;
      ProcLock lock{ProcLock::Try{}};
      if (!lock.held()) break;
      ErrnoGuard errno_guard;  // dl_iterate_phdr
      RescanLocked(false, true, false);
    }
  } else {
    // Not on the thread's stack (sigaltstack, a fiber): only our own frame,
    // which we know is readable, gives the caller, if it is code; the stack
    // is cut there.
    pcs[0] = reinterpret_cast<const uint64_t*>(frame)[1];
    w.n = unwind::ProcessCode().IsCode(pcs[0]) ? 1 : 0;
    w.end = unwind::WalkEnd::kBadFrame;
  }
  // A walk its memo answered is the walk that memo held, and the id noted
  // for it in this log and epoch is what the rest below would find again
  // (the thread's stack cache or the depot). Any other walk is not.
  const uint32_t base_epoch = g.epoch.load(std::memory_order_relaxed);
  if (way != nullptr) {
    if (!w.from_memo) {
      way->id = 0;
    } else if (way->id != 0 && way->id_log_gen == r->s.log_gen && way->id_epoch == base_epoch) {
      return way->id;
    }
  }
  size_t n = w.n;
  // Our frames left out (OwnStartFrame says where they are).
  const uint64_t* p = pcs;
  while (n > 0 && OwnPc(p[0])) {
    ++p;
    --n;
  }
  const size_t start = OwnStartFrame(p, n);
  const bool reached_start = start < n;
  if (reached_start) {
    for (size_t i = start; i + 1 < n; ++i) pcs[(p - pcs) + i] = p[i + 1];
    --n;
  }
  const size_t k = std::min<size_t>(n, g.config.depth);
  if (k == 0) return 0;
  // Issue 14: a stack that does not reach the thread's first frame says so
  // (the high bit of its epoch: log::kStackTruncated), so it is kept apart
  // from a complete stack with the same PCs and shown as cut. With frame
  // pointers only, a chain can end at a zero frame pointer that is not the
  // ABI's end (a function without one left a stack address in rbp, where a
  // zero word was): pigz's one-frame stacks were marked in 875 cases and
  // not in 605. There a stack is whole only if it reached our trampoline
  // below main or the thread's routine.
  const bool fp_cut = g.config.unwind == UnwindMode::kFp && !reached_start;
  const uint32_t epoch = base_epoch | (w.truncated() || k < n || fp_cut ? log::kStackTruncated : 0);
  StackCacheEntry& e = r->stack_cache[((p[0] >> 4) ^ (p[0] >> 11)) & (kStackCacheWays - 1)];
  // (A window's log defines its stacks anew: an entry of an earlier log's
  // is a miss, and the depot says whether this log has the definition.)
  auto remember = [&](uint32_t id) {
    if (way != nullptr) *way = ThreadRec::WalkWay{way->pc, way->sp, id, r->s.log_gen, base_epoch};
    return id;
  };
  if (e.n == k && e.epoch == epoch && e.log_gen == r->s.log_gen &&
      std::memcmp(e.pcs, p, k * sizeof(uint64_t)) == 0)
    return remember(e.id);
  bool fresh;
  const uint32_t id = g_depot.Intern(p, k, epoch, &fresh, r->s.log_gen);
  if (id != 0) {
    e.n = static_cast<uint32_t>(k);
    e.id = id;
    e.epoch = epoch;
    e.log_gen = r->s.log_gen;
    std::memcpy(e.pcs, p, k * sizeof(uint64_t));
    remember(id);
  }
  if (fresh) {
    // A PC outside every known module: something was loaded (dlopen is not
    // interposed). Rescan if the loader's counters moved and nobody else is.
    // Every walked PC (also those past the depth cut) marks its module as
    // walked (PcKnown): libunwind may cache unwind rules of its code.
    bool rescanned = false;
    for (size_t i = 0; i < n; ++i) {
      if (PcKnown(p[i])) continue;
      if (!rescanned) {
        rescanned = true;
        ProcLock lock{ProcLock::Try{}};
        ErrnoGuard errno_guard;  // dl_iterate_phdr
        if (lock.held()) RescanLocked(false, true, false);
        if (PcKnown(p[i])) continue;
      }
      g_unknown_walked.store(true, std::memory_order_relaxed);
    }
  }
  if (fresh && Reserve(r, log::ChunkWriter::StackDefBound(k))) {
    r->s.w.StackDef(ts, sys::CurrentCpu(), id, epoch, p, k);
    Commit(r);
  }
  return id;
}

WaitRecorder::WaitRecorder(const HookScope& s, WaitKind kind, uint64_t obj, const void* frame,
                           uint64_t aux)
    : rec_(s.rec()), kind_(kind), obj_(obj), aux_(aux) {
  // A lock, condition, sleep, join: worth a trace; and the wait must be in
  // the log (PublishWait) in case the process is killed in it.
  Materialize();
  cpu0_ = sys::CurrentCpu();
  t0_ = sys::Ticks();
  stack_ = CaptureStack(s, frame, t0_);
  PublishWait(rec_, kind, cpu0_, stack_, obj, aux, 0, t0_, frame);
}

void MaterializeIfWouldBlock(int fd, long sysno) {
  short events;
  switch (sysno) {
    case SYS_openat: case SYS_fsync: case SYS_fdatasync: case SYS_sync_file_range:
      return;  // files and disks: they wait, but not without bound
    case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv: case SYS_preadv2:
    case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg: case SYS_accept: case SYS_accept4:
      events = POLLIN;
      break;
    case SYS_write: case SYS_writev: case SYS_pwrite64: case SYS_pwritev: case SYS_pwritev2:
    case SYS_sendto: case SYS_sendmsg: case SYS_sendmmsg:
      events = POLLOUT;
      break;
    default:
      // poll, select, epoll, a child, a signal, a lock, a message queue, a
      // connection, DNS: it may wait as long as it likes.
      (void)MaterializeSlow(/*worthy=*/false);
      return;
  }
  if (fd < 0) return;
  // Ready (or closed, or an error: the call returns at once): no wait.
  struct pollfd p = {fd, events, 0};
  if (sys::Syscall6(SYS_poll, reinterpret_cast<long>(&p), 1, 0) == 0)
    (void)MaterializeSlow(/*worthy=*/false);
}

uint64_t ThreadCpuNs(uint32_t tid) {
  // The kernel's per-thread CPU clock of any thread of this process:
  // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) (include/linux/posix-timers.h).
  return sys::ClockNs(static_cast<long>((~static_cast<uint64_t>(tid) << 3) | 6));
}

void RecordCpuTime(ThreadRec* r, Tick ts, uint32_t cpu) {
  const uint64_t ns = ThreadCpuNs(r->s.tid);
  if (ns == 0 || !Reserve(r, log::kMaxFixedRecordBytes)) return;
  r->s.w.CpuTime(ts, cpu, ns);
  Commit(r);
}

// A wait that began in an earlier log (a trace window opened meanwhile)
// ends in the current one, with its stack defined there; while recording is
// paused it is not recorded (and no longer published).
GT_NOINLINE bool MoveWait(ThreadRec* r, uint32_t stack, Tick t0) {
  if (MoveToCurrentLog(/*own_wait_follows=*/true) != r) {
    if (g.phase.load(std::memory_order_acquire) == Phase::kPaused) UnpublishWait(r);
    return false;
  }
  const uint64_t* pcs;
  size_t n;
  uint32_t epoch;
  if (stack != 0 && RedefineStack(stack, r->s.log_gen, &pcs, &n, &epoch) &&
      Reserve(r, log::ChunkWriter::StackDefBound(n))) {
    r->s.w.StackDef(t0, sys::CurrentCpu(), stack, epoch, pcs, n);
    Commit(r);
  }
  return true;
}

void WaitRecorder::End(bool keep, uint64_t aux, uint64_t flags) {
  const Tick t1 = sys::Ticks();
  if (LogMoved() && !MoveWait(rec_, stack_, t0_)) return;
  UnpublishWait(rec_);
  if (keep && Reserve(rec_, log::kMaxFixedRecordBytes)) {
    rec_->s.w.Wait(t0_, cpu0_, kind_, flags, obj_, aux != 0 ? aux : aux_, t1 - t0_,
                   sys::CurrentCpu(), stack_);
    Commit(rec_);
  }
}

void NoteIoBlock(Tick d) {
  if (!g.staged.load(std::memory_order_relaxed) && !g.unproven.load(std::memory_order_relaxed))
    return;
  // (Relaxed: a second thread has proven the process already.)
  const Tick total = g.io_block_ticks.fetch_add(d, std::memory_order_relaxed) + d;
  if (total >= g.quiet_io_total_ticks) Materialize();
}

namespace {
// (Inline in End, every recorded system call's; out of line for the probe.)
GT_ALWAYS_INLINE void WriteSyscall(const HookScope& s, WaitKind kind, uint64_t flags, uint64_t obj,
                                   uint64_t sysno, const void* frame, Tick t0, uint32_t cpu0,
                                   Tick d) {
  ThreadRec* r = s.rec();
  // Long ones are worth a trace, 10 ms of them in all; not a wait for a
  // child (log_summary.cc).
  if (GT_UNLIKELY(d >= g.quiet_io_ticks) && !log::IsChildWaitCall(sysno)) NoteIoBlock(d);
  // Staged (still quiet after the check above): most such processes end
  // quiet, and a first stack walk costs the module list, the unwinder's map
  // of code and the program's unwind tables read in (50 to 60 us of a short
  // grep's run): the call goes without a stack (README, "Quiet processes
  // cost little").
  const uint32_t stack = d >= g.stack_min_ticks && !g.staged.load(std::memory_order_relaxed)
                             ? CaptureStack(s, frame, t0)
                             : 0;
  if (GT_LIKELY(Reserve(r, log::kMaxFixedRecordBytes))) {
    r->s.w.Wait(t0, cpu0, kind, flags, obj, sysno, d, sys::CurrentCpu(), stack);
    Commit(r);
  }
}
}  // namespace

void RecordSyscallAt(const HookScope& s, WaitKind kind, uint64_t flags, uint64_t obj,
                     uint64_t sysno, const void* frame, Tick t0, uint32_t cpu0, Tick d) {
  WriteSyscall(s, kind, flags, obj, sysno, frame, t0, cpu0, d);
}

// H31: errno is the program's. The fast paths here touch only memory and the
// rseq area; the slow paths that can change errno (SpillSlow, the stack
// capture's rescan, CurrentCpuSlow) save and restore it themselves.
void SyscallRecorder::End() {
  const Tick t1 = sys::Ticks();
  ThreadRec* r = scope_.rec();
  if (LogMoved() && !MoveWait(r, 0, t0_)) return;
  UnpublishWait(r);
  WriteSyscall(scope_, kind_, flags_, obj_, sysno_, frame_, t0_, cpu0_, t1 - t0_);
}

void RecordRelease(const HookScope& s, WaitKind kind, uint64_t obj, uint64_t count, Tick t,
                   uint32_t cpu, const void* frame) {
  const uint32_t stack = CaptureStack(s, frame, t);
  ThreadRec* r = s.rec();
  if (Reserve(r, log::kMaxFixedRecordBytes)) {
    r->s.w.Release(t, cpu, kind, obj, count, stack);
    Commit(r);
  }
}

void RecordCreate(const HookScope& s, Tick t, uint32_t cpu, uint64_t create_id, uintptr_t start_pc,
                  const void* frame) {
  const uint32_t stack = CaptureStack(s, frame, t);
  ThreadRec* r = s.rec();
  if (Reserve(r, log::kMaxFixedRecordBytes)) {
    r->s.w.ThreadCreate(t, cpu, create_id, start_pc, stack);
    Commit(r);
  }
}

void RecordChildExit(const HookScope& s, long pid, int status) {
  if (!s.active() || pid <= 0) return;
  ThreadRec* r = s.rec();
  if (Reserve(r, log::kMaxFixedRecordBytes)) {
    r->s.w.ChildExit(sys::Ticks(), sys::CurrentCpu(), static_cast<uint64_t>(pid),
                     static_cast<uint32_t>(status));
    Commit(r);
    // Read first: a shell reaps after every fork, and a store is a
    // copy-on-write fault of the page after each.
    if (!g.reaped_child.load(std::memory_order_relaxed))
      g.reaped_child.store(true, std::memory_order_relaxed);
  }
}

bool NestedInHook() {
  // Recording, on a thread of ours, inside a hook or the tracer's own code
  // (which waits for its children with raw system calls, never through
  // the wait family's hooks: the call is the program's, from a handler).
  if (g.bind.load(std::memory_order_relaxed) == 0 || (g.events & kGroupIo) == 0) return false;
  return t_state.depth != 0 && t_state.rec != nullptr &&
         OnOwnThread(t_state.rec, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
}

void RecordNestedChildExit(long pid, int status) {
  // The thread's stream may be in the middle of a record the interrupted
  // code is writing: the process stream takes it, if its lock is free now
  // (never waited for: the interrupted code may hold it). A staged process
  // keeps its children in its thread's records (StagedSummary): not here.
  if (pid <= 0 || g.staged.load(std::memory_order_acquire)) return;
  TracerScope tracer;
  ErrnoGuard errno_guard;
  ProcLock lock{ProcLock::Try{}};
  if (!lock.held()) return;
  // No spill to make room (it may wait for the file's grow lock, which the
  // interrupted code may hold): only into the chunk as it is, keeping
  // ProcReserve's room for the end.
  if (!ProcWriter().Fits(log::kMaxFixedRecordBytes + 256)) return;
  ProcWriter().ChildExit(sys::Ticks(), sys::CurrentCpu(), static_cast<uint64_t>(pid),
                         static_cast<uint32_t>(status));
  ProcCommit();
  if (!g.reaped_child.load(std::memory_order_relaxed))
    g.reaped_child.store(true, std::memory_order_relaxed);
}

void RecordHeap(uint64_t live_bytes) {
  const uint32_t bind = g.bind.load(std::memory_order_relaxed);
  if (bind == 0 || t_state.depth != 0) return;
  ThreadRec* r = t_state.rec;
  if (!OnOwnThread(r, reinterpret_cast<uintptr_t>(__builtin_frame_address(0)))) return;
  if (t_state.bound != bind) {
    r = RegisterCurrentThreadSlow(0, 0, log::kThreadExisted);
    if (r == nullptr) return;
  }
  if (r == nullptr) return;
  TracerScope tracer;
  if (g.unproven.load(std::memory_order_relaxed)) {
    // A heap that moved 1 MiB from where it began is worth a trace
    // (log_summary.cc: LogSummary::quiet).
    g.staged_heap_lo = std::min(g.staged_heap_lo, live_bytes);
    g.staged_heap_hi = std::max(g.staged_heap_hi, live_bytes);
    if (g.staged_heap_hi - g.staged_heap_lo >= (uint64_t{1} << 20)) Materialize();
  }
  if (Reserve(r, log::kMaxFixedRecordBytes)) {
    const Tick t = sys::Ticks();
    r->s.w.Heap(t, sys::CurrentCpu(), live_bytes);
    Commit(r);
    g.heap_records.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---------------------------------------------------------------------------
// The tracer's descriptors

bool IsTracerFd(int fd) {
  return fd >= 0 && (fd == __atomic_load_n(&g.log_fd, __ATOMIC_RELAXED) ||
                     fd == __atomic_load_n(&sys::g_log_fd, __ATOMIC_RELAXED) ||
                     fd == __atomic_load_n(&g.control_fd, __ATOMIC_RELAXED) ||
                     unwind::IsLibunwindFd(fd));
}

void ProtectFd(int fd) {
  if (unwind::IsLibunwindFd(fd)) {
    // libunwind keeps its pipe's numbers: it cannot be moved, so libunwind
    // is not used from now on (unwind/libunwind_unwind.h).
    unwind::LibunwindFdLost();
    char buf[160];
    sys::Line l(buf, sizeof buf);
    l.Str("the program replaces descriptor ").U64(static_cast<uint64_t>(fd));
    l.Str(", libunwind's: stacks use frame pointers from now on");
    sys::Log(l.c_str());
    return;
  }
  if (!IsTracerFd(fd) || fd == 2) return;
  // Duplicate ours to another high number first, then switch: the program's
  // dup2 then closes the old number, which we no longer use.
  const long moved = sys::Fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
  if (moved < 0) return;
  if (fd == g.log_fd) __atomic_store_n(&g.log_fd, static_cast<int>(moved), __ATOMIC_RELEASE);
  if (fd == sys::g_log_fd) __atomic_store_n(&sys::g_log_fd, static_cast<int>(moved), __ATOMIC_RELEASE);
  if (fd == g.control_fd) __atomic_store_n(&g.control_fd, static_cast<int>(moved), __ATOMIC_RELEASE);
}

void StderrGone() {
  const int fd = __atomic_exchange_n(&sys::g_log_fd, -1, __ATOMIC_ACQ_REL);
  if (fd > 2) sys::Close(fd);
}

int CloseRangeAround(unsigned lo, unsigned hi, int flags, CloseRangeFn real) {
  int ours[5] = {__atomic_load_n(&g.log_fd, __ATOMIC_RELAXED),
                 __atomic_load_n(&sys::g_log_fd, __ATOMIC_RELAXED),
                 __atomic_load_n(&g.control_fd, __ATOMIC_RELAXED), -1, -1};
  unwind::LibunwindFds(ours + 3);  // libunwind's pipe, if it is loaded
  std::sort(ours, ours + 5);
  unsigned from = lo;
  for (int fd : ours) {
    if (fd < 0 || static_cast<unsigned>(fd) < from || static_cast<unsigned>(fd) > hi) continue;
    if (static_cast<unsigned>(fd) > from) {
      const int r = real(from, static_cast<unsigned>(fd) - 1, flags);
      if (r != 0) return r;
    }
    from = static_cast<unsigned>(fd) + 1;
  }
  if (from > hi || from == 0) return 0;  // nothing left (or wrapped past ~0u)
  return real(from, hi, flags);
}

// ---------------------------------------------------------------------------
// Lifecycle

int StartTracerThread(void* (*fn)(void*), size_t stack_bytes, const char* name) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t t;
  const int rc = GT_REAL(pthread_create)(&t, &attr, fn, nullptr);
  if (rc == 0) pthread_setname_np(t, name);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

namespace {
constexpr int kTracerThreads = 8;
std::atomic<uint32_t> g_tracer_tids[kTracerThreads];
}  // namespace

void NoteTracerThread() {
  const auto tid = static_cast<uint32_t>(sys::GetTid());
  for (std::atomic<uint32_t>& slot : g_tracer_tids) {
    uint32_t v = slot.load(std::memory_order_relaxed);
    // A slot of a thread that has ended (its tid gone) is taken again.
    if ((v == 0 || sys::Syscall6(SYS_tgkill, sys::GetPid(), v, 0) == -ESRCH) &&
        slot.compare_exchange_strong(v, tid, std::memory_order_release))
      return;
  }
}

bool IsTracerThread(uint32_t tid) {
  for (const std::atomic<uint32_t>& slot : g_tracer_tids)
    if (slot.load(std::memory_order_acquire) == tid) return true;
  return false;
}

void RescanModules(bool after_unload, bool force_code_map) {
  if (g.phase.load(std::memory_order_acquire) != Phase::kReady) return;
  TracerScope tracer;
  ProcLock lock;
  RescanLocked(after_unload, false, false, force_code_map);
}

void Disable(const char* why) {
  Phase p = g.phase.load(std::memory_order_acquire);
  while (p == Phase::kReady || p == Phase::kUninit || p == Phase::kPaused) {
    if (g.phase.compare_exchange_weak(p, Phase::kDisabled)) {
      char buf[512];
      sys::Line l(buf, sizeof buf);
      l.Str(why).Str("; tracing is off, the program continues");
      sys::Log(l.c_str());
      return;
    }
  }
}

}  // namespace gotrace
