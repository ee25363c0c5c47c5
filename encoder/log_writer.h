// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_writer.h - allocation-free event log record writer ----===//
//
// ChunkWriter appends records (log_format.h) to one chunk held in memory the
// caller owns: a thread's buffer in preload/, a test's vector elsewhere. Every
// method is a few stores and varint encodings; nothing allocates, locks or
// throws. The caller checks Fits() before a record and seals the chunk when it
// is full (G8: the inline fast path, the caller's ...Slow path to flush).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "encoder/log_format.h"
#include "encoder/varint.h"

namespace gotrace::log {

struct SealedChunk {
  const uint8_t* data;
  size_t size;  // header + payload + padding
};

class ChunkWriter {
 public:
  // mem must hold at least header_bytes + 256 bytes and be 8-aligned.
  // header_bytes: sizeof(ChunkHeader) for packed chunks (Seal), or
  // kSlotHeaderBytes for a version-2 slot written in place (OpenInPlace).
  void Init(uint8_t* mem, size_t capacity, size_t header_bytes = sizeof(ChunkHeader)) {
    mem_ = mem;
    end_ = mem + (capacity & ~size_t{7});
    header_bytes_ = header_bytes;
    Begin(0);
  }

  // Starts a new, empty chunk whose first record is relative to base_ticks.
  void Begin(Tick base_ticks) {
    pos_ = mem_ + header_bytes_;
    base_ticks_ = last_ticks_ = base_ticks;
    nrecords_ = 0;
  }

  // --- Version-2 slots: the chunk is written where a reader can find it ---
  // After Begin(): writes an open chunk header (kChunkOpen, size 0) and
  // clears the slot's wait fields.
  void OpenInPlace(uint32_t serial, uint32_t tid, uint32_t seq, uint32_t flags = 0) {
    auto* h = reinterpret_cast<SlotHeader*>(mem_);
    std::memset(h, 0, sizeof *h);
    h->chunk.size = 0;
    h->chunk.serial = serial;
    h->chunk.tid = tid;
    h->chunk.seq = seq;
    h->chunk.base_ticks = base_ticks_;
    h->chunk.flags = kChunkOpen | flags;
    __atomic_store_n(&h->chunk.magic, kChunkMagic, __ATOMIC_RELEASE);
  }
  // Makes every record written so far part of the open chunk (one store).
  void PublishSize() {
    __atomic_store_n(&reinterpret_cast<ChunkHeader*>(mem_)->size,
                     static_cast<uint32_t>(payload_size()), __ATOMIC_RELEASE);
  }
  // Seals the open chunk in place: record count and checksum first, the
  // flag last, so that a reader that sees it sealed sees them too.
  void SealInPlace();
  SlotHeader* slot_header() { return reinterpret_cast<SlotHeader*>(mem_); }

  bool empty() const { return nrecords_ == 0; }
  Tick last_ticks() const { return last_ticks_; }  // the time of the latest record
  uint32_t nrecords() const { return nrecords_; }
  size_t payload_size() const { return static_cast<size_t>(pos_ - mem_) - header_bytes_; }
  size_t capacity_left() const { return static_cast<size_t>(end_ - pos_); }
  // True when a record of n bytes still fits (leaving room for padding).
  bool Fits(size_t n) const { return capacity_left() >= n + 8; }

  void ThreadStart(Tick ts, uint32_t cpu, uint64_t create_id, uint64_t start_pc, uint64_t self,
                   uint64_t flags) {
    uint8_t* p = Head(kThreadStart, ts, cpu);
    p = PutUvarint(p, create_id);
    p = PutUvarint(p, start_pc);
    p = PutUvarint(p, self);
    pos_ = PutUvarint(p, flags);
  }
  void ThreadEnd(Tick ts, uint32_t cpu) { pos_ = Head(kThreadEnd, ts, cpu); }
  void ThreadCreate(Tick ts, uint32_t cpu, uint64_t create_id, uint64_t start_pc,
                    uint64_t stack) {
    uint8_t* p = Head(kThreadCreate, ts, cpu);
    p = PutUvarint(p, create_id);
    p = PutUvarint(p, start_pc);
    pos_ = PutUvarint(p, stack);
  }
  void Wait(Tick ts, uint32_t cpu, WaitKind kind, uint64_t flags, uint64_t obj, uint64_t aux,
            Tick duration, uint32_t cpu_end, uint64_t stack) {
    uint8_t* p = Head(kWait, ts, cpu);
    *p++ = static_cast<uint8_t>(kind);  // kinds are < 128: a one-byte varint
    p = PutUvarint(p, flags);
    p = PutUvarint(p, obj);
    p = PutUvarint(p, aux);
    p = PutUvarint(p, duration);
    p = PutUvarint(p, cpu_end);
    pos_ = PutUvarint(p, stack);
  }
  void Release(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, uint64_t count,
               uint64_t stack) {
    uint8_t* p = Head(kRelease, ts, cpu);
    *p++ = static_cast<uint8_t>(kind);
    p = PutUvarint(p, obj);
    p = PutUvarint(p, count);
    pos_ = PutUvarint(p, stack);
  }
  void Heap(Tick ts, uint32_t cpu, uint64_t bytes) {
    pos_ = PutUvarint(Head(kHeap, ts, cpu), bytes);
  }

  // Kernel stream (log_format.h, version 2).
  void Switch(Tick ts, uint32_t cpu, uint64_t tid, uint64_t flags) {
    uint8_t* p = Head(kSwitch, ts, cpu);
    p = PutUvarint(p, tid);
    pos_ = PutUvarint(p, flags);
  }
  void CpuSample(Tick ts, uint32_t cpu, uint64_t tid, uint64_t stack) {
    uint8_t* p = Head(kCpuSample, ts, cpu);
    p = PutUvarint(p, tid);
    pos_ = PutUvarint(p, stack);
  }
  void KernelLost(Tick ts, uint32_t cpu, uint64_t count) {
    pos_ = PutUvarint(Head(kKernelLost, ts, cpu), count);
  }
  void CpuTime(Tick ts, uint32_t cpu, uint64_t ns) { pos_ = PutUvarint(Head(kCpuTime, ts, cpu), ns); }
  void ExitStatus(Tick ts, uint32_t cpu, uint64_t status) {
    pos_ = PutUvarint(Head(kExitStatus, ts, cpu), status);
  }
  void ChildExit(Tick ts, uint32_t cpu, uint64_t pid, uint64_t status) {
    uint8_t* p = Head(kChildExit, ts, cpu);
    p = PutUvarint(p, pid);
    pos_ = PutUvarint(p, status);
  }
  void TaskEnd(Tick ts, uint32_t cpu, uint64_t task, uint64_t stack) {
    uint8_t* p = Head(kTaskEnd, ts, cpu);
    p = PutUvarint(p, task);
    pos_ = PutUvarint(p, stack);
  }

  // Variable records. Room needed: VarRecordBound(body bound).
  static constexpr size_t VarRecordBound(size_t body) { return 1 + 10 + 10 + 5 + body; }
  static constexpr size_t StackDefBound(size_t n) { return VarRecordBound(30 + 10 * n); }

  void StackDef(Tick ts, uint32_t cpu, uint64_t id, uint32_t epoch, const uint64_t* pcs,
                size_t n) {
    uint8_t body[StackDefBound(kMaxStackDepth)];
    uint8_t* b = PutUvarint(body, id);
    b = PutUvarint(b, epoch);
    b = PutUvarint(b, n);
    for (size_t i = 0; i < n; ++i)
      b = PutUvarint(b, i == 0 ? pcs[0] : ZigZag(static_cast<int64_t>(pcs[i] - pcs[i - 1])));
    PutVar(kStackDef, ts, cpu, body, static_cast<size_t>(b - body));
  }
  void ModuleLoad(Tick ts, uint32_t cpu, uint32_t epoch, uint64_t bias, uint64_t lo, uint64_t hi,
                  std::string_view path) {
    uint8_t head[60];
    uint8_t* b = PutUvarint(head, epoch);
    b = PutUvarint(b, bias);
    b = PutUvarint(b, lo);
    b = PutUvarint(b, hi);
    b = PutUvarint(b, path.size());
    const size_t hn = static_cast<size_t>(b - head);
    uint8_t* p = Head(static_cast<RecordType>(kModuleLoad), ts, cpu);
    p = PutUvarint(p, hn + path.size());
    std::memcpy(p, head, hn);
    std::memcpy(p + hn, path.data(), path.size());
    pos_ = p + hn + path.size();
  }
  void ModuleUnload(Tick ts, uint32_t cpu, uint32_t epoch, uint64_t lo, uint64_t hi) {
    uint8_t body[30];
    uint8_t* b = PutUvarint(body, epoch);
    b = PutUvarint(b, lo);
    b = PutUvarint(b, hi);
    PutVar(kModuleUnload, ts, cpu, body, static_cast<size_t>(b - body));
  }
  void TraceEnd(Tick ts, uint32_t cpu, uint64_t dropped_records, uint64_t dropped_chunks,
                uint64_t chunks_before) {
    uint8_t body[30];
    uint8_t* b = PutUvarint(body, dropped_records);
    b = PutUvarint(b, dropped_chunks);
    b = PutUvarint(b, chunks_before);
    PutVar(kTraceEnd, ts, cpu, body, static_cast<size_t>(b - body));
  }

  // Strings in variable records are cut to this many bytes.
  static constexpr size_t kMaxStringBytes = 1024;
  static constexpr size_t StringBound(size_t n) {
    return kMaxVarintBytes + (n < kMaxStringBytes ? n : kMaxStringBytes);
  }

  // serial 0: the thread of the stream the record is written to.
  void ThreadName(Tick ts, uint32_t cpu, uint32_t serial, std::string_view name) {
    uint8_t body[kMaxVarintBytes + StringBound(kMaxStringBytes)];
    uint8_t* b = PutUvarint(body, serial);
    b = PutString(b, name);
    PutVar(kThreadName, ts, cpu, body, static_cast<size_t>(b - body));
  }
  void ThreadCpu(Tick ts, uint32_t cpu, uint32_t serial, uint64_t ns, bool base = false) {
    uint8_t body[2 * kMaxVarintBytes];
    uint8_t* b = PutUvarint(body, serial);
    b = PutUvarint(b, ns);
    PutVar(base ? kThreadCpuBase : kThreadCpu, ts, cpu, body, static_cast<size_t>(b - body));
  }
  // A variable record copied as it is (its body already encoded): a stack
  // definition moved out of a chunk the flight recorder drops. Room:
  // VarRecordBound(n).
  void RawVar(RecordType type, Tick ts, uint32_t cpu, const uint8_t* body, size_t n) {
    PutVar(type, ts, cpu, body, n);
  }
  // Room: VarRecordBound(SchedInfoBound(why.size())).
  static constexpr size_t SchedInfoBound(size_t why) { return 2 * kMaxVarintBytes + StringBound(why); }
  void SchedInfo(Tick ts, uint32_t cpu, uint64_t source, uint64_t cpu_hz, std::string_view why) {
    uint8_t body[SchedInfoBound(kMaxStringBytes)];
    uint8_t* b = PutUvarint(body, source);
    b = PutUvarint(b, cpu_hz);
    b = PutString(b, why);
    PutVar(kSchedInfo, ts, cpu, body, static_cast<size_t>(b - body));
  }
  // Room: VarRecordBound(ProcessInfoBound(exe.size(), argv bytes + argc)).
  // argv holds argc strings; the total is cut at kMaxArgvBytes.
  static constexpr size_t kMaxArgvBytes = 4096;
  static constexpr size_t ProcessInfoBound() {
    return 5 * kMaxVarintBytes + StringBound(kMaxStringBytes) + kMaxArgvBytes +
           kMaxVarintBytes * 64;
  }
  // began_ns: when the process began (CLOCK_MONOTONIC), if before this
  // log's start (a trace window's log); 0: not written.
  void ProcessInfo(Tick ts, uint32_t cpu, uint64_t ppid, uint64_t flags, std::string_view exe,
                   const char* const* argv, size_t argc, uint8_t* scratch /* ProcessInfoBound() */,
                   uint64_t began_ns = 0) {
    uint8_t* b = PutUvarint(scratch, ppid);
    b = PutUvarint(b, flags);
    b = PutString(b, exe);
    size_t room = kMaxArgvBytes, n = 0;
    for (; n < argc && n < 64; ++n) {
      size_t len = 0;
      while (argv[n][len] != '\0') ++len;
      if (len > room) break;
      room -= len;
    }
    b = PutUvarint(b, n);
    for (size_t i = 0; i < n; ++i) {
      size_t len = 0;
      while (argv[i][len] != '\0') ++len;
      b = PutUvarint(b, len);
      std::memcpy(b, argv[i], len);
      b += len;
    }
    if (began_ns != 0) b = PutUvarint(b, began_ns);
    PutVar(kProcessInfo, ts, cpu, scratch, static_cast<size_t>(b - scratch));
  }
  // Annotations. Room: VarRecordBound(AnnotationBound(a.size(), b.size())).
  static constexpr size_t AnnotationBound(size_t a, size_t b) {
    return 3 * kMaxVarintBytes + StringBound(a) + StringBound(b);
  }
  void TaskBegin(Tick ts, uint32_t cpu, uint64_t task, uint64_t parent, uint64_t stack,
                 std::string_view name) {
    uint8_t body[AnnotationBound(kMaxStringBytes, 0)];
    uint8_t* b = PutUvarint(body, task);
    b = PutUvarint(b, parent);
    b = PutUvarint(b, stack);
    b = PutString(b, name);
    PutVar(kTaskBegin, ts, cpu, body, static_cast<size_t>(b - body));
  }
  void Region(Tick ts, uint32_t cpu, uint64_t task, uint64_t mode, uint64_t stack,
              std::string_view name) {
    uint8_t body[AnnotationBound(kMaxStringBytes, 0)];
    uint8_t* b = PutUvarint(body, task);
    b = PutUvarint(b, mode);
    b = PutUvarint(b, stack);
    b = PutString(b, name);
    PutVar(kRegion, ts, cpu, body, static_cast<size_t>(b - body));
  }
  void UserLog(Tick ts, uint32_t cpu, uint64_t task, uint64_t stack, std::string_view category,
               std::string_view message) {
    uint8_t body[AnnotationBound(kMaxStringBytes, kMaxStringBytes)];
    uint8_t* b = PutUvarint(body, task);
    b = PutUvarint(b, stack);
    b = PutString(b, category);
    b = PutString(b, message);
    PutVar(kUserLog, ts, cpu, body, static_cast<size_t>(b - body));
  }

  void ClockSync(Tick ts, uint32_t cpu, uint64_t ns) {
    uint8_t body[10];
    uint8_t* b = PutUvarint(body, ns);
    PutVar(kClockSync, ts, cpu, body, static_cast<size_t>(b - body));
  }

  // Continues a chunk whose payload (payload_bytes, holding nrecords records,
  // the last at last_ticks) was already placed in this writer's memory.
  void Resume(Tick base_ticks, size_t payload_bytes, uint32_t nrecords, Tick last_ticks) {
    pos_ = mem_ + sizeof(ChunkHeader) + payload_bytes;
    base_ticks_ = base_ticks;
    last_ticks_ = last_ticks;
    nrecords_ = nrecords;
  }

  // Completes the chunk header, pads and checksums. The result stays valid
  // until the next Begin().
  SealedChunk Seal(uint32_t serial, uint32_t tid, uint32_t seq, uint32_t flags = 0);

 private:
  uint8_t* Head(RecordType type, Tick ts, uint32_t cpu) {
    uint8_t* p = pos_;
    *p++ = type;
    p = PutUvarint(p, ZigZag(static_cast<int64_t>(ts - last_ticks_)));
    last_ticks_ = ts;
    ++nrecords_;
    return PutUvarint(p, cpu);
  }
  static uint8_t* PutString(uint8_t* b, std::string_view v) {
    const size_t n = v.size() < kMaxStringBytes ? v.size() : kMaxStringBytes;
    b = PutUvarint(b, n);
    std::memcpy(b, v.data(), n);
    return b + n;
  }
  void PutVar(RecordType type, Tick ts, uint32_t cpu, const uint8_t* body, size_t n) {
    uint8_t* p = PutUvarint(Head(type, ts, cpu), n);
    std::memcpy(p, body, n);
    pos_ = p + n;
  }

  uint8_t* mem_ = nullptr;
  size_t header_bytes_ = sizeof(ChunkHeader);
  uint8_t* pos_ = nullptr;
  uint8_t* end_ = nullptr;
  Tick base_ticks_ = 0;
  Tick last_ticks_ = 0;
  uint32_t nrecords_ = 0;
};

// Fills a FileHeader: version 2 with slots of slot_bytes, or, with
// slot_bytes 0, version 1 (packed chunks, as ChunkWriter::Seal writes them).
void InitFileHeader(FileHeader* h, uint64_t ticks_per_second, Tick start_ticks, uint32_t pid,
                    uint32_t ppid, uint32_t ncpus, uint32_t slot_bytes = 0);

}  // namespace gotrace::log
