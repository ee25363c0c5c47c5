// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_format.h - the raw per-thread event log (version 1) ---===//
//
// What preload/ records and encoder/ reads. The log is internal and versioned;
// the Go trace is the product. It is designed so that (1) a thread appends a
// record to its own buffer with a handful of stores and no allocation, (2) a
// whole buffer can be written with one pwrite at any offset, so threads spill
// without a global lock, and (3) a reader can recover everything that reached
// the disk after a crash, skipping torn or corrupted chunks.
//
// FILE LAYOUT, version 2 (host byte order; the magic numbers detect a
// foreign order)
//
//   FileHeader                    64 bytes, at offset 0
//   Slot*                         from FileHeader::slots_offset, each
//                                 FileHeader::slot_bytes long
//
//   Slot = SlotHeader (128 bytes: ChunkHeader + the wait in progress)
//          + payload (ChunkHeader::size bytes of records) + unused space.
//
// Each thread writes its records straight into a slot of the file, mapped
// into memory with MAP_SHARED (preload/runtime.cc): what a thread recorded is
// in the page cache the moment it is recorded, so a process killed with
// SIGKILL loses nothing that was complete (issue 20; LTTng-UST keeps its
// buffers in shared memory for the same reason). A slot being written is
// *open* (kChunkOpen): `size` is the committed payload, stored after each
// complete record, and there is no checksum. A full slot is *sealed* in
// place (checksum, record count, then the flag cleared) and the thread moves
// to a new slot. A slot whose magic is 0 was reserved but never used (the
// file grows ahead of need). The wait a thread is blocked in is published in
// its slot header, so that the log shows it even if the process dies there.
//
// Version 1 (still read): FileHeader, then chunks packed one after another,
// each ChunkHeader + payload + zero padding to a multiple of 8, all sealed.
//
// A chunk belongs to one stream: `serial` names a thread incarnation within the
// process (1, 2, ...; tids are reused, serials are not), and serial 0 is the
// process stream (module map, stacks written at flush time, trace end).
// Within a stream, chunks are numbered by `seq` (0, 1, 2, ...) and the records
// of a stream, in seq order, are in non-decreasing time order except for the
// clock noise the reader clamps. A gap in seq means lost data, never disorder.
// `checksum` is CRC-32C over the header (with checksum = 0) and the payload.
//
// RECORDS (the payload is a sequence of these, nothing else)
//
//   type:u8  dts:zigzag varint  cpu:varint  fields...
//
//   Times are clock ticks (the TSC on x86_64): FileHeader::ticks_per_second
//   and kClockSync records relate them to CLOCK_MONOTONIC. Durations are
//   ticks too.
//
//   dts is the signed tick delta from the previous record of the chunk (the
//   first record is relative to ChunkHeader::base_ticks). Signed, so that a
//   record whose clock reading is slightly behind its predecessor (TSC noise,
//   a begin time captured before a nested record) is represented faithfully
//   and clamped by the reader, not by the hot path. cpu is the CPU the thread
//   was on when the record's time was taken.
//
//   Types below 64 have a fixed number of varint fields (listed below).
//   Types 64 and above are variable: `len:varint` then `len` bytes, so a reader
//   can skip a variable record it does not know. All integers are varints.
//
//   kThreadStart   create_id start_pc self flags
//       First record of every thread stream. create_id links to the creator's
//       kThreadCreate (0: not created under tracing: the main thread or a thread
//       that existed when tracing began). start_pc: the start routine (main for
//       the main thread; 0 if unknown). self: pthread_self(), the object a
//       joiner waits on. flags: kThreadExisted, kThreadMain.
//   kThreadEnd     (no fields)
//       The thread is exiting. Implies a release of `self` to its joiners.
//   kThreadCreate  create_id start_pc stack
//       Recorded by the creator; the time is taken before the real call so it
//       precedes anything the new thread records.
//   kWait          kind flags obj aux duration cpu_end stack
//       The thread waited from ts to ts + duration (ticks) and resumed on
//       cpu_end. One record per wait, written after the wait returns (H30: a
//       cancelled or longjmp'd wait loses one record, never leaves a begin
//       without an end). flags & kWaitOpen: the thread was still waiting when
//       the log ended (duration is meaningless). flags >> kWaitFdClassShift:
//       FdClass of the descriptor for kNet/kSyscall. obj: the address waited
//       on (mutex, cond, futex word, pthread_t for join, fd for I/O). aux:
//       syscall number for kSyscall/kNet; for kCond the mutex, which the
//       wait locks again before it returns (and may block on); else 0.
//   kRelease       kind obj count stack
//       The thread released `obj` in a way that wakes waiters: unlock with
//       waiters, cond signal (count 1) or broadcast (count 0 = all), sem post,
//       futex wake (count = woken). ts is taken before the real call.
//   kHeap          bytes
//       Live heap bytes of the process at ts.
//
//   kStackDef      (var) id epoch n pc[0] zz(pc[1]-pc[0]) ... zz(pc[n-1]-pc[n-2])
//       Defines stack id (>= 1) as n return addresses, leaf first. epoch is
//       the module-map epoch the PCs belong to. May appear in any stream; ids
//       are process-wide. The epoch's high bit (kStackTruncated) says that
//       the walk stopped before the thread's first frame: a return address
//       outside executable code, a frame it could not unwind, a signal
//       frame, or the depth limit (issue 14); the PCs it holds are sound.
//   kModuleLoad    (var) epoch bias lo hi path_len path-bytes
//       A loaded object: PCs in [lo, hi) belong to the file at path, loaded
//       with bias (ELF l_addr). Valid from `epoch` on.
//   kModuleUnload  (var) epoch lo hi
//       The object covering [lo, hi) is unmapped from `epoch` on.
//   kClockSync     (var) ns
//       CLOCK_MONOTONIC read at the record's tick time. The reader converts
//       ticks to nanoseconds with the header's (start_ticks, start_ns) and
//       the latest sync point of the file, so the frequency estimate improves
//       with the length of the run even when the process never exits.
//   kTraceEnd      (var) dropped_records dropped_chunks chunks_before
//       Written once, in the last chunk of the log, by the final flush; its
//       time is the end of the trace. chunks_before counts the chunks written
//       before the one holding it, so a reader can prove that a log is
//       complete; a log without it was cut short (crash, kill).
//
//   Records added in log version 2 (all optional: a reader that does not
//   know one skips it; fixed ones by FixedFieldCount, variable ones by len):
//
//   kSwitch        tid flags                          (kernel stream)
//       The kernel switched thread tid in (flags & kSwitchOut == 0) or out
//       on cpu at ts (perf PERF_RECORD_SWITCH). kSwitchPreempt: the switch
//       out was involuntary (the thread was still runnable).
//   kCpuSample     tid stack                          (kernel stream)
//       A CPU-clock sample of thread tid on cpu at ts; stack: its user
//       call chain (a kStackDef id, 0: none).
//   kKernelLost    count                              (kernel stream)
//       The kernel dropped `count` records (a ring buffer was full), from
//       its PERF_RECORD_LOST. count == kRingFull instead: the ring of `cpu`
//       was still full when the process last read it, so the kernel's own
//       count never arrived; its records after ts (the last one read from
//       that ring) may be missing, how many is unknown.
//   kCpuTime       ns                                 (thread streams)
//       The thread's own CPU time (its kernel CPU clock) at ts: written as
//       it ends, so that its running total is known exactly even where the
//       timeline is inferred.
//   kExitStatus    status                             (process stream)
//       How this image ended, in wait(2) form: exit code << 8, or the
//       terminating signal; kExitExec: it exec'd another program.
//   kChildExit     pid status                         (thread streams)
//       A wait/waitpid of this thread reaped child pid with status.
//   kTaskEnd       task stack                         (thread streams)
//       gotrace_task_end(task) (gotrace/annotate.h).
//
//   kThreadName    (var) serial name_len name
//       The kernel name of a thread (pthread_setname_np, prctl, or read at
//       its end): serial 0 means the stream the record is in.
//   kProcessInfo   (var) ppid flags exe_len exe argc {len arg}... [began_ns]
//       Who this process is, for run indexes (process stream, once).
//   kThreadCpu     (var) serial ns
//       The CPU time the kernel counted for the thread of stream `serial`,
//       read by the exit path for threads still alive (process stream).
//   kThreadCpuBase (var) serial ns
//       The CPU time the kernel had counted for the thread of stream
//       `serial` when a trace window began (issue 16): the trace reports
//       its CPU time within the window, kThreadCpu's minus this.
//   kSchedInfo     (var) source cpu_hz why_len why
//       Where scheduling comes from (kSchedKernel, kSchedInfer) and, when
//       kernel records were wanted but refused, why (process stream).
//   kTaskBegin     (var) task parent stack name_len name
//   kRegion        (var) task mode stack name_len name        (mode 0 begin, 1 end)
//   kUserLog       (var) task stack cat_len cat msg_len msg
//       The annotation calls of gotrace/annotate.h, in the caller's stream.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/syscall.h>

namespace gotrace::log {

using Tick = uint64_t;

inline constexpr char kFileMagic[8] = {'G', 'O', 'T', 'R', 'L', 'O', 'G', '\n'};
inline constexpr uint32_t kLogVersion = 2;
inline constexpr uint32_t kLogVersionPacked = 1;  // packed chunks (still read)
inline constexpr uint32_t kChunkMagic = 0x4b435447;  // "GTCK" read little-endian
inline constexpr uint32_t kMaxChunkPayload = 64u << 20;
inline constexpr uint32_t kProcessSerial = 0;

struct FileHeader {
  char magic[8];              // kFileMagic
  uint32_t version;           // kLogVersion
  uint32_t header_size;       // sizeof(FileHeader)
  uint64_t ticks_per_second;  // clock frequency (an estimate; kClockSync refines it)
  uint64_t start_ticks;       // clock reading when tracing began
  uint32_t pid;
  uint32_t ppid;
  uint32_t ncpus;             // configured CPUs: P ids are 0..ncpus-1
  uint32_t flags;
  uint64_t start_ns;          // CLOCK_MONOTONIC (ns) at start_ticks
  uint32_t slot_bytes;        // version 2: bytes per slot (a multiple of 4096)
  uint32_t slots_offset;      // version 2: file offset of slot 0
};
static_assert(sizeof(FileHeader) == 64);
// FileHeader::flags. kFileFlight: a flight recorder's log (issue 16): its
// oldest chunks are dropped as it goes (their slots punched out and
// reused), so streams may begin past their first chunks; the reader starts
// the trace where every such stream has its records (LogFile::cut_ns).
inline constexpr uint32_t kFileFlight = 1;

struct ChunkHeader {
  uint32_t magic;       // kChunkMagic
  uint32_t size;        // payload bytes, excluding header and padding
  uint32_t serial;      // stream: thread incarnation (>= 1) or kProcessSerial
  uint32_t tid;         // kernel thread id of the stream (0 for the process)
  uint32_t seq;         // chunk number within the stream
  uint32_t checksum;    // CRC-32C of header (checksum = 0) + payload
  uint64_t base_ticks;  // the first record's dts is relative to this
  uint32_t nrecords;    // records in the payload
  uint32_t flags;       // kChunkSnapshot
};
// A copy of a chunk still being filled, written so that a killed process
// loses little; the same (serial, seq) appears again, longer or equal, later.
// Readers keep the version with the most records, a non-snapshot on ties.
inline constexpr uint32_t kChunkSnapshot = 1;
// Version 2: the chunk is still being written in its slot (see FILE LAYOUT).
inline constexpr uint32_t kChunkOpen = 2;
// The chunk's times (base_ticks, record times) are CLOCK_MONOTONIC
// nanoseconds, not ticks: the kernel stream's, as the kernel gives them.
inline constexpr uint32_t kChunkNsTime = 4;
static_assert(sizeof(ChunkHeader) == 40);

// The head of a version-2 slot. The wait fields describe the wait the
// stream's thread is blocked in (wait_kind != 0), written before the thread
// blocks and cleared before the wait's record is written; only the stream's
// newest slot's are meaningful.
struct SlotHeader {
  ChunkHeader chunk;
  uint32_t wait_kind;   // WaitKind, 0: none; stored last (release)
  uint32_t wait_cpu;
  uint64_t wait_t0;     // ticks
  uint64_t wait_obj;
  uint64_t wait_aux;
  uint64_t wait_flags;  // kWait flags (fd class)
  uint64_t wait_stack;  // 0: none captured
  uint8_t reserved[128 - 40 - 48];
};
static_assert(sizeof(SlotHeader) == 128);
inline constexpr uint32_t kSlotHeaderBytes = sizeof(SlotHeader);
inline constexpr uint32_t kSlotsOffset = 4096;  // slot 0 (the header page before it)

inline constexpr size_t AlignChunk(size_t n) { return (n + 7) & ~size_t{7}; }

enum RecordType : uint8_t {
  kThreadStart = 1,
  kThreadEnd = 2,
  kThreadCreate = 3,
  kWait = 4,
  kRelease = 5,
  kHeap = 6,
  kSwitch = 7,
  kCpuSample = 8,
  kKernelLost = 9,
  kCpuTime = 10,
  kExitStatus = 11,
  kChildExit = 12,
  kTaskEnd = 13,
  kFirstVarRecord = 64,
  kStackDef = 64,
  kModuleLoad = 65,
  kModuleUnload = 66,
  kTraceEnd = 67,
  kClockSync = 68,
  kThreadName = 69,
  kProcessInfo = 70,
  kSchedInfo = 71,
  kTaskBegin = 72,
  kRegion = 73,
  kUserLog = 74,
  kThreadCpu = 75,
  kThreadCpuBase = 76,
};

// kKernelLost's count for "a ring was full at the last read" (see above).
constexpr uint64_t kRingFull = uint64_t{1} << 63;

// Number of varint fields after (dts, cpu) of each fixed record type; -1 for
// types that are not fixed records.
constexpr int FixedFieldCount(uint8_t type) {
  switch (type) {
    case kThreadStart: return 4;
    case kThreadEnd: return 0;
    case kThreadCreate: return 3;
    case kWait: return 7;
    case kRelease: return 4;
    case kHeap: return 1;
    case kSwitch: return 2;
    case kCpuSample: return 2;
    case kKernelLost: return 1;
    case kCpuTime: return 1;
    case kExitStatus: return 1;
    case kChildExit: return 2;
    case kTaskEnd: return 2;
    default: return -1;
  }
}

// The largest fixed record: type byte + dts + cpu + 7 fields.
inline constexpr size_t kMaxFixedRecordBytes = 1 + 10 * (2 + 7);

// What a thread waits for. The encoder maps these to Go block reasons.
enum class WaitKind : uint8_t {
  kMutex = 1,
  kRwlock = 2,
  kCond = 3,
  kSem = 4,
  kFutex = 5,
  kBarrier = 6,
  kJoin = 7,
  kSleep = 8,
  kNet = 9,      // socket / pipe / tty / eventfd I/O, poll, select, epoll
  kSyscall = 10, // any other system call (file I/O, waitpid, ...)
};
inline constexpr uint8_t kMaxWaitKind = 10;
const char* WaitKindName(WaitKind k);

enum class FdClass : uint8_t {
  kUnknown = 0,
  kSocket = 1,
  kPipe = 2,    // pipe or FIFO
  kTty = 3,
  kEvent = 4,   // eventfd, timerfd, signalfd, inotify, epoll
  kFile = 5,    // regular file or block device
  kOther = 6,
};

inline constexpr uint64_t kWaitOpen = 1;         // kWait flags
inline constexpr unsigned kWaitFdClassShift = 4;

inline constexpr uint64_t kExitExec = uint64_t{1} << 32;  // kExitStatus: replaced by exec

// A kWait of kind kSyscall holds the system call's number in aux: the
// waits for a child process (wait4, waitid on x86-64) are told apart from
// the others by it (the launcher's judgement of quiet processes; the log is
// read on the machine that wrote it).
inline constexpr bool IsChildWaitCall(uint64_t sysno) { return sysno == SYS_wait4 || sysno == SYS_waitid; }
// A process that used this much CPU time is worth a trace of its own (its
// CPU samples say where the time went), whatever else it did: a long
// `sha256sum`, `sort` or `xz` of one thread that never waits (README,
// "Quiet processes stay quiet"). The launcher's judgement and the
// process's own (preload/lifecycle.cc, ProveIfBusy) use the same figure.
inline constexpr uint64_t kBusyCpuNs = 20'000'000;
// System and network calls (not waits for a child) that waited
// kQuietIoCallNs or longer (or the block threshold, if higher) make a
// process worth a trace once they add up to kQuietIoTotalNs: `head` at the
// end of `sort | head` waits a millisecond or two for `sort`, which is
// nothing a trace of `head` would show, and a reader that waited 10 ms in
// all is worth one. Both judgements use these (log_summary.cc,
// preload/runtime.cc: NoteIoBlock).
inline constexpr uint64_t kQuietIoCallNs = 1'000'000;
inline constexpr uint64_t kQuietIoTotalNs = 10'000'000;
// The two, given the block threshold (GOTRACE_BLOCK_US) that may raise them.
inline constexpr uint64_t QuietIoCallNs(uint64_t block_threshold_ns) {
  return block_threshold_ns > kQuietIoCallNs ? block_threshold_ns : kQuietIoCallNs;
}
inline constexpr uint64_t QuietIoTotalNs(uint64_t block_threshold_ns) {
  return QuietIoCallNs(block_threshold_ns) > kQuietIoTotalNs ? QuietIoCallNs(block_threshold_ns)
                                                             : kQuietIoTotalNs;
}
inline constexpr uint64_t kSwitchOut = 1;        // kSwitch flags
inline constexpr uint64_t kSwitchPreempt = 2;

// The stream of records that come from the kernel (perf_event_open):
// context switches and CPU samples of every thread of the process.
inline constexpr uint32_t kKernelSerial = 0xffffffffu;

enum SchedSource : uint8_t {
  kSchedInfer = 0,   // from the interposers only (DESIGN.md §4)
  kSchedKernel = 1,  // from the kernel's context-switch records
};

inline constexpr uint64_t kThreadExisted = 1;    // kThreadStart flags
inline constexpr uint64_t kThreadMain = 2;
// With kThreadExisted: the thread began after the log did, not through the
// interposed pthread_create (libc's own: timer_create's SIGEV_THREAD
// helpers, aio; a raw clone): it is shown from its first record, not as
// runnable since the trace began.
inline constexpr uint64_t kThreadLate = 4;

inline constexpr uint32_t kMaxStackDepth = 128;  // PCs per kStackDef
// kStackDef's epoch field: the stack was cut short (see kStackDef).
inline constexpr uint32_t kStackTruncated = 1u << 31;

}  // namespace gotrace::log
