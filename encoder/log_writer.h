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
  // mem must hold at least sizeof(ChunkHeader) + 256 bytes and be 8-aligned.
  void Init(uint8_t* mem, size_t capacity) {
    mem_ = mem;
    end_ = mem + (capacity & ~size_t{7});
    Begin(0);
  }

  // Starts a new, empty chunk whose first record is relative to base_ticks.
  void Begin(Tick base_ticks) {
    pos_ = mem_ + sizeof(ChunkHeader);
    base_ticks_ = last_ticks_ = base_ticks;
    nrecords_ = 0;
  }

  bool empty() const { return nrecords_ == 0; }
  uint32_t nrecords() const { return nrecords_; }
  size_t payload_size() const { return static_cast<size_t>(pos_ - mem_) - sizeof(ChunkHeader); }
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
  void PutVar(RecordType type, Tick ts, uint32_t cpu, const uint8_t* body, size_t n) {
    uint8_t* p = PutUvarint(Head(type, ts, cpu), n);
    std::memcpy(p, body, n);
    pos_ = p + n;
  }

  uint8_t* mem_ = nullptr;
  uint8_t* pos_ = nullptr;
  uint8_t* end_ = nullptr;
  Tick base_ticks_ = 0;
  Tick last_ticks_ = 0;
  uint32_t nrecords_ = 0;
};

// Fills a FileHeader.
void InitFileHeader(FileHeader* h, uint64_t ticks_per_second, Tick start_ticks, uint32_t pid,
                    uint32_t ppid, uint32_t ncpus);

}  // namespace gotrace::log
