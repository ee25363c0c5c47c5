// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_writer.cc - sealing chunks, file headers --------------===//
#include "encoder/log_writer.h"

#include "encoder/crc32c.h"

namespace gotrace::log {

void ChunkWriter::SealInPlace() {
  auto* live = reinterpret_cast<ChunkHeader*>(mem_);
  const size_t payload = payload_size();
  ChunkHeader h = *live;
  h.size = static_cast<uint32_t>(payload);
  h.nrecords = nrecords_;
  h.flags = live->flags & ~kChunkOpen;
  h.checksum = 0;
  const uint32_t crc = Crc32c(Crc32c(0, &h, sizeof h), mem_ + header_bytes_, payload);
  __atomic_store_n(&live->size, h.size, __ATOMIC_RELAXED);
  __atomic_store_n(&live->nrecords, h.nrecords, __ATOMIC_RELAXED);
  __atomic_store_n(&live->checksum, crc, __ATOMIC_RELAXED);
  __atomic_store_n(&live->flags, h.flags, __ATOMIC_RELEASE);
}

SealedChunk ChunkWriter::Seal(uint32_t serial, uint32_t tid, uint32_t seq, uint32_t flags) {
  const size_t payload = payload_size();
  const size_t total = AlignChunk(sizeof(ChunkHeader) + payload);
  std::memset(pos_, 0, static_cast<size_t>(mem_ + total - pos_));  // padding
  ChunkHeader h{};
  h.magic = kChunkMagic;
  h.size = static_cast<uint32_t>(payload);
  h.serial = serial;
  h.tid = tid;
  h.seq = seq;
  h.checksum = 0;
  h.base_ticks = base_ticks_;
  h.nrecords = nrecords_;
  h.flags = flags;
  uint32_t crc = Crc32c(0, &h, sizeof h);
  h.checksum = Crc32c(crc, mem_ + sizeof h, payload);
  std::memcpy(mem_, &h, sizeof h);
  return SealedChunk{mem_, total};
}

void InitFileHeader(FileHeader* h, uint64_t ticks_per_second, Tick start_ticks, uint32_t pid,
                    uint32_t ppid, uint32_t ncpus, uint32_t slot_bytes) {
  std::memset(h, 0, sizeof *h);
  std::memcpy(h->magic, kFileMagic, sizeof h->magic);
  h->version = slot_bytes != 0 ? kLogVersion : kLogVersionPacked;
  h->slot_bytes = slot_bytes;
  h->slots_offset = slot_bytes != 0 ? kSlotsOffset : 0;
  h->header_size = sizeof(FileHeader);
  h->ticks_per_second = ticks_per_second;
  h->start_ticks = start_ticks;
  h->pid = pid;
  h->ppid = ppid;
  h->ncpus = ncpus;
  h->start_ns = start_ticks;  // callers with a real clock overwrite it
}

const char* WaitKindName(WaitKind k) {
  switch (k) {
    case WaitKind::kMutex: return "mutex";
    case WaitKind::kRwlock: return "rwlock";
    case WaitKind::kCond: return "cond";
    case WaitKind::kSem: return "sem";
    case WaitKind::kFutex: return "futex";
    case WaitKind::kBarrier: return "barrier";
    case WaitKind::kJoin: return "join";
    case WaitKind::kSleep: return "sleep";
    case WaitKind::kNet: return "net";
    case WaitKind::kSyscall: return "syscall";
  }
  return "?";
}

}  // namespace gotrace::log
