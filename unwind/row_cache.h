// SPDX-License-Identifier: Apache-2.0
//===-- unwind/row_cache.h - decoded unwind rows by return address --------===//
//
// Parsing an FDE costs a microsecond or two; a stack walk meets the same
// return addresses again and again. This cache keeps the decoded row of each
// return address seen, process-wide, in a fixed direct-mapped table of
// mmap'ed memory: no malloc, no lock on any path. Each entry is a tiny
// seqlock: a writer claims it with one CAS (or gives up: the cache is a
// cache), readers copy it and check that its sequence did not move, so a
// torn entry is a miss, never a wrong row. Entries carry the code map's
// generation (CodeMap::generation): an entry made before code was unloaded
// is a miss afterwards, so code loaded at the same addresses is never walked
// with the unloaded code's rules. A hit also proves that the PC was in an
// executable segment when the entry was made (rows are only computed for
// such PCs): the walk needs no other check.
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "unwind/cfi.h"

namespace gotrace::unwind {

class RowCache {
 public:
  // Reserves 2^log2_entries entries (32 bytes each, committed as touched).
  // Idempotent; false if the memory cannot be mapped (every lookup then
  // misses).
  bool Init(unsigned log2_entries);

  // The row cached for pc under generation gen. Lock-free, async-signal-safe.
  bool Find(uintptr_t pc, uint32_t gen, UnwindRow* row) const {
    const Entry* t = entries_.load(std::memory_order_acquire);
    if (t == nullptr) return false;
    const Entry& e = t[Index(pc)];
    const uint32_t s0 = e.seq.load(std::memory_order_acquire);
    const uint64_t epc = e.pc.load(std::memory_order_relaxed);
    const uint32_t egen = e.gen.load(std::memory_order_relaxed);
    const uint64_t w0 = e.row[0].load(std::memory_order_relaxed);
    const uint64_t w1 = e.row[1].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    // An odd sequence is an entry being written; a moved one was rewritten
    // while we read it.
    if ((s0 & 1) != 0 || e.seq.load(std::memory_order_relaxed) != s0 || epc != pc || egen != gen)
      return false;
    const uint64_t w[2] = {w0, w1};
    std::memcpy(row, w, sizeof *row);
    return row->kind != 0;
  }
  void Insert(uintptr_t pc, uint32_t gen, const UnwindRow& row);

 private:
  struct Entry {
    std::atomic<uint32_t> seq;  // odd while being written
    std::atomic<uint32_t> gen;
    std::atomic<uint64_t> pc;
    std::atomic<uint64_t> row[2];
  };
  static_assert(sizeof(Entry) == 32);
  static_assert(sizeof(UnwindRow) == 2 * sizeof(uint64_t));

  // Problem (issue 18): with the whole address hashed, each return address
  // of a short process landed on a page of the table of its own: a read
  // fault and a write fault per row (15 per grep, 13 to 20 us each on the
  // VMs measured). Rows of code within 16 KiB of each other now share one
  // page of the table (128 entries), placed within it by the whole address:
  // a walk's few dozen addresses, in a handful of objects, touch a few pages.
  // (Tables smaller than a few pages: the whole address only.)
  static constexpr unsigned kPageLog2 = 7;  // 128 entries of 32 bytes: 4 KiB
  size_t Index(uintptr_t pc) const {
    const uint64_t mix = pc * 0x9e3779b97f4a7c15ull;
    if (shift_ + kPageLog2 >= 62) return static_cast<size_t>(mix >> shift_);
    const uint64_t page = ((pc >> 14) * 0x9e3779b97f4a7c15ull) >> (shift_ + kPageLog2);
    return static_cast<size_t>((page << kPageLog2) | (mix >> (64 - kPageLog2)));
  }

  std::atomic<Entry*> entries_{nullptr};
  unsigned shift_ = 64;
};

// The process's cache (static storage, G7).
RowCache& ProcessRows();

}  // namespace gotrace::unwind
