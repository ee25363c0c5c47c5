// SPDX-License-Identifier: Apache-2.0
//===-- preload/kernel_sched.cc - the kernel's context switches and samples -===//
#include "preload/kernel_sched.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "encoder/log_format.h"
#include "preload/runtime.h"
#include "preload/runtime_internal.h"
#include "preload/sys/clock.h"
#include "preload/sys/raw.h"
#include "unwind/cfi_unwind.h"

namespace gotrace::kernel {
namespace {

constexpr int kMaxCpus = 1024;
// Records younger than this stay in the rings at a periodic read: another
// CPU may still be writing an older one (the stream must be in time order).
constexpr uint64_t kHoldBackNs = 1'000'000;
// What a sample_id trailer holds with sample_type TID | TIME | CPU:
// {u32 pid, tid} {u64 time} {u32 cpu, res}.
constexpr size_t kSampleIdBytes = 24;

// Problem: the kernel's call chains follow frame pointers, and Debian's
// binaries and libraries keep none: a sample in libsqlite3 or python3 had
// one frame (its leaf), the next "return address" being data. So a sample
// can carry the thread's user registers (ip, sp, bp) and a copy of the top
// kStackDumpBytes of its stack instead, walked here by the same DWARF CFI
// unwinder as the interposers' stacks (the code is still mapped: the
// reader is this process), as `perf record --call-graph dwarf` does
// offline. 8 KiB, as perf's default: sqlite3's shell running a query
// (copies forced) reached main in 88% of its samples with it, in none with
// 4 KiB; a deeper stack is cut there and marked truncated. The price is
// room: a sample is then 8.3 KiB in the ring instead of about 100 bytes
// (UseStackCopies says when a process takes them). GOTRACE_UNWIND=fp keeps
// the kernel's chains.
constexpr uint32_t kStackDumpBytes = 8192;
// Such a sample in the ring: header, {pid, tid}, time, {cpu, res}, the
// registers (abi and three), the copy's size, the copy and its dyn_size.
constexpr uint64_t kCopyRecordBytes = 8 + 24 + 32 + 8 + kStackDumpBytes + 8;
// Problem (issue 18): the kernel allocates and zeroes a ring's pages when it
// is mapped, and on these machines that took 1.4 to 6.6 us a page: the 2 x
// 129 pages of a process's first rings cost it 0.4 to 1.7 ms, most of what
// tracing /bin/true adds, and a process that goes on to make a second thread
// maps new rings then anyway. So the rings a process opens as it starts
// (its first thread's, call chains) are 32 pages a CPU, and are replaced by
// full-size ones once it has run for 10 ms and makes a recorded call (Grow)
// or creates its second thread (UseStackCopies): a short command never pays
// for the rest. What 128 KiB holds: about 1,300 samples with a short call
// chain (13 s of CPU time at 100 Hz), 200 with a 64-frame one; a program
// that computes longer than that without any recorded call and without
// moving its heap by 1 MiB loses the samples after it, which its trace and
// summary say (a ring still full at the end). Switches: one thread's, read
// every 10 ms of its recording.
constexpr int kStartupPages = 32;
// x86_64's perf register numbers (arch/x86/include/uapi/asm/perf_regs.h).
constexpr int kPerfRegBp = 6, kPerfRegSp = 7, kPerfRegIp = 8;

struct Ring {
  uint8_t* base;        // the mapping: metadata page, then data
  size_t map_len;
  uint8_t* data;
  uint64_t size;        // data bytes, a power of two
  uint64_t tail;        // our read position (published to data_tail)
  uint64_t head;        // the kernel's write position, read once per Drain
  uint64_t last_ts;     // the time of the last record read from it
  uint32_t cpu;
  // Found with less room than the largest record at a read, and no
  // PERF_RECORD_LOST read from it since: the kernel may have dropped
  // records whose count it writes only once a record fits again.
  bool full;
  // The same, at this read's look at its head. A PERF_RECORD_LOST read
  // now was written before that look: it does not count what the ring,
  // full since, may have dropped after it. (With records of different
  // sizes a nearly full ring still takes a small one, a switch, and the
  // LOST record before it, while samples go on being dropped.)
  bool full_at_read;
  // Full when a trace window's start dropped what it held (Discard): the
  // first PERF_RECORD_LOST read from it since counts what the kernel
  // dropped before the window, while recording was paused.
  bool lost_before_window;
  perf_event_mmap_page* meta() const { return reinterpret_cast<perf_event_mmap_page*>(base); }
};

GT_LARGE_BSS constinit Ring g_rings[kMaxCpus] = {};
int g_nrings = 0;
std::atomic<bool> g_active{false};
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
int g_pid = 0;
uint64_t g_sample_type = 0;  // what the samples carry (Open)
bool g_upgrade_tried = false;  // UseStackCopies, once per image
bool g_user_only = false;      // the kernel refused samples of kernel time (Open)
// The rings are the start-up ones (kStartupPages, Open's `startup`): the
// first thread's, to be replaced by full-size ones (Grow, UseStackCopies).
bool g_startup = false;
uint64_t g_opened_ticks = 0;  // when the events were opened (sys::Ticks)
// The largest record the rings may hold (a sample with the longest call
// chain): a ring with less free room than this may have refused one.
uint64_t g_max_record = 0;
// Room for one record that wraps around the end of its ring.
GT_LARGE_BSS alignas(8) uint8_t g_scratch[65536 + 64];

long PerfEventOpen(perf_event_attr* attr, int pid, int cpu, int group, unsigned long flags) {
  return sys::Syscall6(SYS_perf_event_open, reinterpret_cast<long>(attr), pid, cpu, group,
                       static_cast<long>(flags));
}

void Copy(const Ring& r, uint64_t pos, void* dst, size_t n) {
  const uint64_t off = pos & (r.size - 1);
  const uint64_t first = n < r.size - off ? n : r.size - off;
  std::memcpy(dst, r.data + off, first);
  if (first < n) std::memcpy(static_cast<uint8_t*>(dst) + first, r.data, n - first);
}

// The time of the record at the ring's tail, or false if the ring holds
// nothing readable. Something malformed skips the ring to its head: its
// records are lost, never misread.
bool PeekTime(Ring& r, uint64_t* ts) {
  while (r.tail < r.head) {
    perf_event_header h;
    Copy(r, r.tail, &h, sizeof h);
    if (h.size < sizeof h || h.size > r.head - r.tail || (h.size & 7) != 0) {
      r.tail = r.head;
      return false;
    }
    if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + 32) {
      Copy(r, r.tail + sizeof h + 8, ts, 8);
      return true;
    }
    if (h.type != PERF_RECORD_SAMPLE && h.size >= sizeof h + kSampleIdBytes) {
      Copy(r, r.tail + h.size - kSampleIdBytes + 8, ts, 8);
      return true;
    }
    r.tail += h.size;  // too short to be ours
  }
  return false;
}

// The kernel stream (runtime.cc owns its window): written only under g_lock.
SlotStream& KStream() { return *internal::KernelStream(); }

bool Room(SlotStream* s, size_t n, bool final) {
  if (s->w.Fits(n)) return true;
  return s->open ? internal::StreamSpill(s, final) : internal::StreamBegin(s, sys::MonotonicNs(), final);
}

// A sample's stack from its user registers and stack copy (REGS_USER with
// bp, sp, ip; STACK_USER): walked by CFI over the copy (kStackDumpBytes).
// Returns the frames (pcs[0] the interrupted instruction + 1, as a call
// chain's); *cut when the walk stopped before the outermost frame.
size_t WalkSample(const uint8_t* q, const uint8_t* end, uint64_t* pcs, bool* cut) {
  uint64_t abi = 0, regs[3] = {}, size = 0, dyn = 0;
  if (q + 8 > end) return 0;
  std::memcpy(&abi, q, 8);
  q += 8;
  if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
    if (q + sizeof regs > end) return 0;
    std::memcpy(regs, q, sizeof regs);  // in register-number order: bp, sp, ip
    q += sizeof regs;
  }
  if (q + 8 > end) return 0;
  std::memcpy(&size, q, 8);
  q += 8;
  const uint8_t* data = q;
  if (size > static_cast<uint64_t>(end - q)) return 0;
  if (size > 0) {
    if (q + size + 8 > end) return 0;
    std::memcpy(&dyn, q + size, 8);
    if (dyn > size) dyn = size;
  }
  if (abi == PERF_SAMPLE_REGS_ABI_NONE) return 0;  // no user registers (a kernel thread)
  const uintptr_t bp = regs[0], sp = regs[1], ip = regs[2];
  if (ip < 4096) return 0;
  const unwind::Regs start{ip + 1, sp, bp, true};
  const unwind::FpBounds b{sp, sp + dyn, data};
  const unwind::WalkResult wr = unwind::Walk(unwind::ProcessUnwind(), unwind::WalkMode::kAuto,
                                             start, b, pcs, g.config.depth);
  *cut = wr.truncated();
  return wr.n;
}

// Problem: a sample's stack is walked from wherever the thread was, and our
// library's frames were in it: every worker thread's samples had our thread
// start trampoline (ThreadStart) between the program's start routine and
// libc's start_thread, which the waits' stacks leave out (pigz: in 154 of
// 154 samples), and a sample taken while an interposer recorded its call
// read AutoWalk, Walk, CaptureStack, SyscallRecorder::End, pwrite64, then
// the program. Now our frames are left out, but for one: of a sample taken
// inside the tracer, the outermost of ours, the interposed function the
// program called (pwrite64), whose cost this is. Returns the frames kept.
size_t DropOwnFrames(uint64_t* pcs, size_t n) {
  size_t lead = 0;
  while (lead < n && OwnPc(pcs[lead])) ++lead;
  size_t out = 0;
  if (lead > 0) pcs[out++] = pcs[lead - 1];
  for (size_t i = lead; i < n; ++i)
    if (!OwnPc(pcs[i])) pcs[out++] = pcs[i];
  return out;
}

// Appends one kernel record to the stream (a copy of it, whole, at `p`).
void Emit(SlotStream* s, const uint8_t* p, bool final) {
  perf_event_header h;
  std::memcpy(&h, p, sizeof h);
  const uint8_t* body = p + sizeof h;
  uint32_t pid, tid, cpu;
  uint64_t ts;
  if (h.type == PERF_RECORD_SAMPLE) {
    std::memcpy(&pid, body, 4);
    std::memcpy(&tid, body + 4, 4);
    std::memcpy(&ts, body + 8, 8);
    std::memcpy(&cpu, body + 16, 4);
  } else {
    const uint8_t* id = p + h.size - kSampleIdBytes;
    std::memcpy(&pid, id, 4);
    std::memcpy(&tid, id + 4, 4);
    std::memcpy(&ts, id + 8, 8);
    std::memcpy(&cpu, id + 16, 4);
  }
  // A fork child made without inherit_thread (an older kernel) reports
  // through our rings: its records are its own trace's business.
  if (static_cast<int>(pid) != g_pid) return;
  switch (h.type) {
    case PERF_RECORD_SWITCH: {
      uint64_t flags = 0;
      if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) flags |= log::kSwitchOut;
      if (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) flags |= log::kSwitchPreempt;
      if (!Room(s, log::kMaxFixedRecordBytes, final)) return;
      s->w.Switch(ts, cpu, tid, flags);
      break;
    }
    case PERF_RECORD_SAMPLE: {
      if (IsTracerThread(tid)) return;  // the flusher's, the control thread's: not the program's
      uint64_t pcs[log::kMaxStackDepth];
      size_t n = 0;
      bool cut = false;
      const uint8_t* q = body + 24;  // after {pid, tid}, time, {cpu, res}
      const uint8_t* const end = p + h.size;
      if (g_sample_type & PERF_SAMPLE_CALLCHAIN) {
        uint64_t nr = 0;
        if (q + 8 <= end) std::memcpy(&nr, q, 8);
        if (nr > static_cast<uint64_t>(end - q - 8) / 8) nr = 0;
        for (uint64_t i = 0; i < nr && n < g.config.depth; ++i) {
          uint64_t ip;
          std::memcpy(&ip, q + 8 + 8 * i, 8);
          if (ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // a context marker
          if (ip < 4096) break;
          // The first entry is where the thread was, not a return address:
          // +1, because every frame is looked up at pc - 1.
          pcs[n] = n == 0 ? ip + 1 : ip;
          ++n;
        }
        // The kernel follows frame pointers, which Debian's code does not
        // keep: the chain runs into data. Cut it at the first address that
        // is not code (issue 14: no frame outside executable code), as cut.
        const unwind::WalkResult code =
            unwind::CheckCode(unwind::ProcessUnwind(), pcs, n, g.config.depth + 1);
        cut = code.n < n;
        n = code.n;
        // The kernel's walk stops at a zero or bad frame pointer, the ABI's
        // end and a garbage one alike (sqlite3's one-frame samples were
        // marked in 56 cases of 108): whole only if it reached our
        // trampoline (OwnStartFrame; CaptureStack's rule with frame
        // pointers only).
        cut = cut || OwnStartFrame(pcs, n) == n;
      } else if (g_sample_type & PERF_SAMPLE_REGS_USER) {
        n = WalkSample(q, end, pcs, &cut);
      }
      n = DropOwnFrames(pcs, n);
      uint32_t stack = 0;
      if (n > 0) {
        bool fresh = false;
        const uint32_t epoch =
            g.epoch.load(std::memory_order_relaxed) | (cut ? log::kStackTruncated : 0);
        stack = internal::InternStack(pcs, n, epoch, &fresh);
        if (fresh && stack != 0) {
          if (!Room(s, log::ChunkWriter::StackDefBound(n), final)) return;
          s->w.StackDef(ts, cpu, stack, epoch, pcs, n);
        }
      }
      if (!Room(s, log::kMaxFixedRecordBytes, final)) return;
      s->w.CpuSample(ts, cpu, tid, stack);
      break;
    }
    case PERF_RECORD_LOST:
    case PERF_RECORD_LOST_SAMPLES: {
      uint64_t lost = 0;
      std::memcpy(&lost, body + (h.type == PERF_RECORD_LOST ? 8 : 0), 8);
      if (!Room(s, log::kMaxFixedRecordBytes, final)) return;
      s->w.KernelLost(ts, cpu, lost);
      break;
    }
    default:
      return;  // throttling, and what we did not ask for
  }
  s->w.PublishSize();
}

void CloseAll() {
  for (int i = 0; i < g_nrings; ++i) {
    if (g_rings[i].base != nullptr) sys::Munmap(g_rings[i].base, g_rings[i].map_len);
    g_rings[i] = Ring{};
  }
  g_nrings = 0;
}

// Maps the ring of event `fd`: data pages shrink until the locked-memory
// limit allows them (kernel.perf_event_mlock_kb per CPU per user, then
// RLIMIT_MEMLOCK). Returns the errno of the last try, 0 on success.
int MapRing(int fd, int want_pages, Ring* r) {
  const size_t page = 4096;
  long m = -ENOMEM;
  for (int pages = want_pages; pages >= 2; pages /= 2) {
    const size_t len = page * (1 + static_cast<size_t>(pages));
    m = sys::Mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m >= 0 || m < -4095) {
      r->base = reinterpret_cast<uint8_t*>(m);
      r->map_len = len;
      const perf_event_mmap_page* meta = r->meta();
      r->data = r->base + (meta->data_offset != 0 ? meta->data_offset : page);
      r->size = meta->data_size != 0 ? meta->data_size : page * static_cast<size_t>(pages);
      r->tail = meta->data_tail;
      // Not inherited by fork children: the parent's rings are not theirs.
      sys::Syscall6(SYS_madvise, m, static_cast<long>(len), MADV_DONTFORK);
      return 0;
    }
    if (m != -EPERM && m != -ENOMEM) break;
  }
  return static_cast<int>(-m);
}

// The end of a ring's read: full if it was at this read's look at its head,
// whatever LOST records the read met (full_at_read, above).
void ReadEnds(Ring& r) {
  r.full = r.full || r.full_at_read;
  r.full_at_read = false;
}

// At the last read: a ring still full never gets to say what it dropped (a
// one-thread program that computes without a recorded call is read only
// then). Its records after the last one read may be missing.
void SayIfFull(SlotStream* s, Ring& r) {
  if (!r.full) return;
  r.full = false;
  if (!Room(s, log::kMaxFixedRecordBytes, true)) return;
  s->w.KernelLost(r.last_ts != 0 ? r.last_ts : sys::MonotonicNs(), r.cpu, log::kRingFull);
  s->w.PublishSize();
}

// `all`: every record, none held back (the last read, or the events are
// about to be replaced); a ring still full is then said (SayIfFull).
// Returns whether the rings were read.
bool DrainRings(bool final, bool all) {
  if (!g_active.load(std::memory_order_acquire)) return false;
  // Not recording (the exit path has begun: its own final read comes):
  // leave the records where they are.
  if (!final && g.bind.load(std::memory_order_acquire) == 0) return false;
  // A periodic read gives way to one in progress. The final one waits for
  // it (the flusher's reads are short), but never without bound: a crash
  // inside a read on this very thread must not hang the process.
  int tries = final ? 20000 : 1;
  while (g_lock.test_and_set(std::memory_order_acquire)) {
    if (--tries <= 0) return false;
    sys::Syscall6(SYS_sched_yield);
  }
  SlotStream* s = &KStream();
  const uint64_t limit = all ? ~uint64_t{0} : sys::MonotonicNs() - kHoldBackNs;
  for (int i = 0; i < g_nrings; ++i) {
    Ring& r = g_rings[i];
    r.head = __atomic_load_n(&r.meta()->data_head, __ATOMIC_ACQUIRE);
    r.full_at_read = r.size - (r.head - r.tail) < g_max_record;
  }
  // Each ring is in time order: merge them. (Static, under the lock: 9 KiB
  // of stack would cost page faults in every process.)
  GT_LARGE_BSS static uint64_t next[kMaxCpus];
  GT_LARGE_BSS static bool have[kMaxCpus];
  for (int i = 0; i < g_nrings; ++i) have[i] = PeekTime(g_rings[i], &next[i]);
  for (;;) {
    int best = -1;
    for (int i = 0; i < g_nrings; ++i)
      if (have[i] && (best < 0 || next[i] < next[best])) best = i;
    if (best < 0 || next[best] > limit) break;
    Ring& r = g_rings[best];
    perf_event_header h;
    Copy(r, r.tail, &h, sizeof h);
    const uint64_t off = r.tail & (r.size - 1);
    const uint8_t* p = r.data + off;
    if (off + h.size > r.size) {
      Copy(r, r.tail, g_scratch, h.size);
      p = g_scratch;
    }
    // The kernel's count of what it dropped: the loss is known.
    if (h.type == PERF_RECORD_LOST) r.full = false;
    r.last_ts = next[best];
    if (h.type == PERF_RECORD_LOST && r.lost_before_window) {
      r.lost_before_window = false;  // the paused time's, not this window's
    } else {
      Emit(s, p, final);
    }
    r.tail += h.size;
    have[best] = PeekTime(r, &next[best]);
    if (all && !have[best]) {  // in time order: right after its last record
      ReadEnds(r);
      SayIfFull(s, r);
    }
  }
  for (int i = 0; i < g_nrings; ++i) {
    ReadEnds(g_rings[i]);
    if (all) SayIfFull(s, g_rings[i]);  // the rings with nothing to read
  }
  for (int i = 0; i < g_nrings; ++i)
    __atomic_store_n(&g_rings[i].meta()->data_tail, g_rings[i].tail, __ATOMIC_RELEASE);
  g_lock.clear(std::memory_order_release);
  return true;
}

// Whether samples may carry stack copies: our unwinder follows CFI here, and
// GOTRACE_UNWIND asks for more than frame pointers.
bool CopiesAllowed(const Config& config) {
  return config.cpu_hz > 0 && config.unwind != UnwindMode::kFp &&
         config.unwind != UnwindMode::kNone && unwind::CfiSupported();
}

}  // namespace

bool Open(const Config& config, bool stack_copies, bool startup, const char** why, int* err) {
  *why = nullptr;
  *err = 0;
  CloseAll();
  g_active.store(false, std::memory_order_release);
  g_pid = sys::GetPid();
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  // The kernel's call chains, instead of stack copies.
  auto chains = [&a](uint16_t max_stack) {
    a.sample_type &= ~uint64_t{PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER};
    a.sample_regs_user = 0;
    a.sample_stack_user = 0;
    a.sample_type |= PERF_SAMPLE_CALLCHAIN;
    a.exclude_callchain_kernel = 1;
    a.sample_max_stack = max_stack;
  };
  if (config.cpu_hz > 0) {
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 1'000'000'000ull / config.cpu_hz;  // ns of CPU time
    if (stack_copies && CopiesAllowed(config)) {
      a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
      a.sample_regs_user = (1ull << kPerfRegBp) | (1ull << kPerfRegSp) | (1ull << kPerfRegIp);
      a.sample_stack_user = kStackDumpBytes;
    } else {
      chains(static_cast<uint16_t>(config.depth));
    }
  } else {
    a.config = PERF_COUNT_SW_DUMMY;
  }
  a.sample_id_all = 1;
  a.context_switch = 1;
  // Samples of the time in the kernel too, where that is allowed (root,
  // CAP_PERFMON, perf_event_paranoid 1 or less): a system call's CPU time is
  // charged to the user stack that made it, as perf does. Under paranoid 2
  // (user space only) the kernel refuses that, and the samples are of user
  // time alone: redis-server, whose CPU time is three quarters in its
  // system calls, had 7 samples for 267 ms of CPU time.
  a.exclude_kernel = g_user_only ? 1 : 0;
  a.exclude_hv = 1;
  a.inherit = 1;
  a.inherit_thread = 1;  // Linux 5.13: threads inherit, fork children do not
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  const int ncpus = static_cast<int>(g.ncpus < kMaxCpus ? g.ncpus : kMaxCpus);
  // About 2 MiB of rings per process in all, 8 KiB to 512 KiB per CPU.
  int pages = 128;
  while (pages > 2 && static_cast<long>(pages) * 4096 * ncpus > (2l << 20)) pages /= 2;
  // Start-up rings (call chains only): see kStartupPages.
  if (startup && (a.sample_type & PERF_SAMPLE_STACK_USER) == 0 && pages > kStartupPages)
    pages = kStartupPages;
  if (a.sample_type & PERF_SAMPLE_STACK_USER) {
    // With stack copies, room for twice the samples one CPU takes between
    // two of the flusher's reads (a CPU runs at most a second of threads'
    // CPU time per second): 128 KiB per CPU at 100 Hz and 50 ms, more than
    // the 2 MiB on a machine of more than 16 CPUs; up to the 512 KiB per
    // CPU the kernel allows without the locked-memory limit
    // (perf_event_mlock_kb).
    const uint64_t flush_ms = config.flush_ms != 0 ? config.flush_ms : 50;
    const uint64_t want = (config.cpu_hz * flush_ms / 1000 + 1) * 2 * kCopyRecordBytes;
    int need = 2;
    while (need < 128 && static_cast<uint64_t>(need) * 4096 < want) need *= 2;
    if (need > pages) pages = need;
  }
  bool retried = false;
  for (int c = 0; c < ncpus; ++c) {
    long fd = PerfEventOpen(&a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
    if ((fd == -EACCES || fd == -EPERM) && c == 0 && a.exclude_kernel == 0) {
      g_user_only = true;  // and in this process's later opens (Grow, windows)
      a.exclude_kernel = 1;
      fd = PerfEventOpen(&a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd == -EINVAL && c == 0 && !retried) {
      // An older kernel: without inherit_thread (fork children then report
      // into our rings and are told apart by pid), the kernel's call chains
      // and no stack limit.
      retried = true;
      a.inherit_thread = 0;
      if (config.cpu_hz > 0) chains(0);
      fd = PerfEventOpen(&a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd == -EOVERFLOW && c == 0 && (a.sample_type & PERF_SAMPLE_CALLCHAIN) != 0 &&
        a.sample_max_stack != 0) {
      // GOTRACE_DEPTH above the kernel's kernel.perf_event_max_stack (127
      // by default; our limit is 128): the kernel's limit (max_stack 0).
      // Refused, exact scheduling was off with a wrong reason.
      chains(0);
      fd = PerfEventOpen(&a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (fd == -ENODEV || fd == -ENXIO) continue;  // an offline CPU
    if (fd < 0) {
      *err = static_cast<int>(-fd);
      switch (*err) {
        case EACCES: case EPERM:
          *why = "perf_event_open is not permitted";
          break;
        case ENOSYS:
          *why = "perf_event_open is not available (a seccomp filter, or a kernel without perf events)";
          break;
        case EMFILE: case ENFILE:
          *why = "no descriptor is free for perf_event_open";
          break;
        default:
          *why = "the kernel lacks the events needed (context-switch records, Linux 4.3)";
      }
      CloseAll();
      return false;
    }
    Ring& r = g_rings[g_nrings];
    const int merr = MapRing(static_cast<int>(fd), pages, &r);
    r.cpu = static_cast<uint32_t>(c);
    sys::Close(static_cast<int>(fd));  // the mapping keeps the event
    if (merr != 0) {
      *err = merr;
      *why = "cannot map the kernel's ring buffers (the locked-memory limit: ulimit -l, "
             "kernel.perf_event_mlock_kb)";
      CloseAll();
      return false;
    }
    ++g_nrings;
  }
  if (g_nrings == 0) {
    *why = "no CPU accepted the events";
    return false;
  }
  if (a.sample_type & PERF_SAMPLE_STACK_USER) {
    // The locked-memory limit cut a ring below two copies: call chains.
    for (int i = 0; i < g_nrings; ++i) {
      if (g_rings[i].size < 2 * kCopyRecordBytes) return Open(config, false, false, why, err);
    }
  }
  // A sample: header, {pid, tid}, time, {cpu, res}, then either nr and the
  // chain (up to sample_max_stack entries, without it the kernel's own
  // limit, perf_event_max_stack, 127 by default, and its context markers)
  // or the registers (abi and three) and the stack copy (size, bytes,
  // dyn_size).
  const uint64_t chain = a.sample_max_stack != 0 ? a.sample_max_stack : 127;
  g_sample_type = a.sample_type;
  g_startup = startup && (a.sample_type & PERF_SAMPLE_STACK_USER) == 0;
  g_opened_ticks = sys::Ticks();
  g_max_record = config.cpu_hz == 0 ? sizeof(perf_event_header) + kSampleIdBytes
                 : (a.sample_type & PERF_SAMPLE_STACK_USER)
                     ? kCopyRecordBytes
                     : sizeof(perf_event_header) + 32 + 8 * (chain + 4);
  g_active.store(true, std::memory_order_release);
  return true;
}

bool Active() { return g_active.load(std::memory_order_acquire); }

// Reads the rings out and opens the events anew with full-size rings,
// stack copies if `copies`; refused (the locked-memory limit, say): call
// chains. Only while the process has one thread, the calling one: events
// opened now reach it and the threads created after it, no other.
void Reopen(const Config& config, bool copies) {
  // Everything recorded so far into the log (none of it is younger than
  // what the new events will record), then the new events. Not if the
  // rings cannot be read now (the exit path has begun): they stay.
  if (!DrainRings(/*final=*/false, /*all=*/true)) return;
  const char* why = nullptr;
  int err = 0;
  if (!Open(config, copies, false, &why, &err) && copies)
    (void)Open(config, false, false, &why, &err);
}

void UseStackCopies(const Config& config) {
  if (!Active()) return;
  // Copies once per image: a refusal is not asked again.
  const bool copies =
      (g_sample_type & PERF_SAMPLE_STACK_USER) == 0 && !g_upgrade_tried && CopiesAllowed(config);
  if (!copies && !g_startup) return;
  if (copies) g_upgrade_tried = true;
  Reopen(config, copies);
}

uint64_t StartupRingsOpened() { return g_startup && Active() ? g_opened_ticks : 0; }

void Grow(const Config& config) {
  if (StartupRingsOpened() != 0) Reopen(config, /*copies=*/false);
}

void ForgetForChild() {
  // The rings are not mapped in the child (MADV_DONTFORK): forget them.
  for (int i = 0; i < g_nrings; ++i) g_rings[i] = Ring{};
  g_nrings = 0;
  g_upgrade_tried = false;
  g_startup = false;
  g_active.store(false, std::memory_order_release);
  g_lock.clear(std::memory_order_release);  // a drain may have been running in the parent
}

void Drain(bool final) { (void)DrainRings(final, final); }

void Discard() {
  if (!g_active.load(std::memory_order_acquire)) return;
  for (int tries = 20000; g_lock.test_and_set(std::memory_order_acquire);) {
    if (--tries <= 0) return;
    sys::Syscall6(SYS_sched_yield);
  }
  for (int i = 0; i < g_nrings; ++i) {
    Ring& r = g_rings[i];
    const uint64_t head = __atomic_load_n(&r.meta()->data_head, __ATOMIC_ACQUIRE);
    // Full (or nearly: the largest record no longer fit): the kernel may
    // have dropped records while recording was paused, and says how many
    // once there is room again, in this window's time.
    r.lost_before_window = r.size - (head - r.tail) < g_max_record;
    r.tail = head;
    r.full = false;
    __atomic_store_n(&r.meta()->data_tail, r.tail, __ATOMIC_RELEASE);
  }
  g_lock.clear(std::memory_order_release);
}

}  // namespace gotrace::kernel
