// SPDX-License-Identifier: Apache-2.0
//===-- unwind/row_cache.cc - decoded unwind rows by return address -------===//
#include "unwind/row_cache.h"

#include <cstring>

#include "preload/sys/raw.h"

namespace gotrace::unwind {
namespace {

constinit RowCache g_rows;

}  // namespace

RowCache& ProcessRows() { return g_rows; }

bool RowCache::Init(unsigned log2_entries) {
  if (entries_.load(std::memory_order_acquire) != nullptr) return true;
  const size_t bytes = (size_t{1} << log2_entries) * sizeof(Entry);
  // Fork-fresh (a fork child sees it empty: all zeros is no entry). A shell
  // forks hundreds of times: the table's touched pages (76 KiB in the
  // shell job's bash) were copied into each child's page tables and were
  // copy-on-write in the parent until the child exec'd or ended; a child
  // that records stacks has its own rows to decode anyway.
  void* const p = sys::MapForkFresh(nullptr, bytes);
  if (p == nullptr) return false;
  shift_ = 64 - log2_entries;
  Entry* expected = nullptr;
  if (!entries_.compare_exchange_strong(expected, static_cast<Entry*>(p),
                                        std::memory_order_acq_rel)) {
    sys::Munmap(p, bytes);  // another thread won
  }
  return true;
}

void RowCache::Insert(uintptr_t pc, uint32_t gen, const UnwindRow& row) {
  Entry* t = entries_.load(std::memory_order_acquire);
  if (t == nullptr) return;
  Entry& e = t[Index(pc)];
  uint32_t s0 = e.seq.load(std::memory_order_relaxed);
  if ((s0 & 1) != 0 || !e.seq.compare_exchange_strong(s0, s0 + 1, std::memory_order_acquire))
    return;  // another writer is here: leave it the entry
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t w[2];
  std::memcpy(w, &row, sizeof w);
  e.pc.store(pc, std::memory_order_relaxed);
  e.gen.store(gen, std::memory_order_relaxed);
  e.row[0].store(w[0], std::memory_order_relaxed);
  e.row[1].store(w[1], std::memory_order_relaxed);
  e.seq.store(s0 + 2, std::memory_order_release);
}

}  // namespace gotrace::unwind
