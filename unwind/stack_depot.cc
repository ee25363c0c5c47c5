// SPDX-License-Identifier: Apache-2.0
//===-- unwind/stack_depot.cc - lock-free stack de-duplication ------------===//
#include "unwind/stack_depot.h"

#include <algorithm>

#include "preload/sys/raw.h"

namespace gotrace::unwind {
namespace {

constexpr uint64_t kEmpty = 0;
constexpr uint64_t kBusy = 1;
constexpr size_t kMaxProbes = 64;

// A fork child never uses its parent's depot (it makes its own with its
// log: DepotInit), so fork copies none of it: the three tables' pages cost
// the traced parent of many forks no page-table walk and no copy-on-write
// faults after each.
void* Reserve(size_t bytes) { return sys::MapForkFresh(nullptr, bytes); }

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

}  // namespace

bool StackDepot::Init(size_t slots, size_t pc_bytes) {
  slots_ = static_cast<Slot*>(Reserve(slots * sizeof(Slot)));
  arena_ = static_cast<uint64_t*>(Reserve(pc_bytes));
  by_id_ = static_cast<std::atomic<uint32_t>*>(Reserve(slots * sizeof(uint32_t)));
  if (slots_ == nullptr || arena_ == nullptr || by_id_ == nullptr) return false;
  nslots_ = slots;
  front_ = slots >= 4 * kFrontSlots ? kFrontSlots : 0;
  rest_ = slots - front_;
  arena_words_ = pc_bytes / sizeof(uint64_t);
  // The front page and the arena's first page are written by the first
  // stack: mapped in now, one system call each, rather than by faults.
  (void)sys::PopulateWrite(slots_, 4096);
  (void)sys::PopulateWrite(arena_, 4096);
  (void)sys::PopulateWrite(by_id_, 4096);
  return true;
}

StackDepot::Probe StackDepot::Try(Slot& s, uint64_t h, const uint64_t* pcs, size_t n,
                                  uint32_t epoch, uint32_t log_gen, uint32_t* id, bool* fresh) {
  uint64_t cur = s.hash.load(std::memory_order_acquire);
  if (cur == kEmpty) {
    if (!s.hash.compare_exchange_strong(cur, kBusy, std::memory_order_acquire)) {
      if (cur == kBusy) return Probe::kNext;  // another thread is filling it: look further
    } else {
      const size_t at = arena_used_.fetch_add(n, std::memory_order_relaxed);
      if (at + n > arena_words_) {
        s.hash.store(kEmpty, std::memory_order_release);  // give the slot back
        return Probe::kFull;
      }
      for (size_t i = 0; i < n; ++i) arena_[at + i] = pcs[i];
      s.pcs = arena_ + at;
      s.len = static_cast<uint32_t>(n);
      s.epoch = epoch;
      s.log_gen.store(log_gen, std::memory_order_relaxed);
      s.id = next_id_.fetch_add(1, std::memory_order_relaxed);
      s.hash.store(h, std::memory_order_release);
      if (s.id < nslots_)
        by_id_[s.id].store(static_cast<uint32_t>(&s - slots_) + 1, std::memory_order_release);
      *id = s.id;
      *fresh = true;
      return Probe::kInserted;
    }
  }
  if (cur != h) return Probe::kNext;
  if (s.len != n || s.epoch != epoch) return Probe::kNext;
  for (size_t i = 0; i < n; ++i)
    if (s.pcs[i] != pcs[i]) return Probe::kNext;
  // Defined in an earlier log: the first user in this one defines it.
  uint32_t was = s.log_gen.load(std::memory_order_relaxed);
  if (was != log_gen && s.log_gen.compare_exchange_strong(was, log_gen, std::memory_order_relaxed))
    *fresh = true;
  *id = s.id;
  return Probe::kFound;
}

uint32_t StackDepot::Intern(const uint64_t* pcs, size_t n, uint32_t epoch, bool* fresh,
                           uint32_t log_gen) {
  *fresh = false;
  if (slots_ == nullptr) return 0;
  uint64_t h = Mix(0x243f6a8885a308d3ull ^ n, epoch);
  for (size_t i = 0; i < n; ++i) h = Mix(h, pcs[i]);
  if (h <= kBusy) h += 2;

  // The same sequence of slots for the same stack, always: kFrontProbes in
  // the front page from h, then kMaxProbes in the rest of the table from h.
  uint32_t id = 0;
  for (size_t pass = 0; pass < 2; ++pass) {
    const size_t base = pass == 0 ? 0 : front_;
    const size_t size = pass == 0 ? front_ : rest_;
    const size_t probes = std::min(pass == 0 ? kFrontProbes : kMaxProbes, size);
    size_t i = pass == 0 ? (h & (front_ - 1)) : h % size;
    for (size_t probe = 0; probe < probes; ++probe, i = i + 1 == size ? 0 : i + 1) {
      switch (Try(slots_[base + i], h, pcs, n, epoch, log_gen, &id, fresh)) {
        case Probe::kFound:
        case Probe::kInserted: return id;
        case Probe::kFull: misses_.fetch_add(1, std::memory_order_relaxed); return 0;
        case Probe::kNext: break;
      }
    }
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

bool StackDepot::Redefine(uint32_t id, uint32_t log_gen, const uint64_t** pcs, size_t* n,
                          uint32_t* epoch) {
  if (by_id_ == nullptr || id == 0 || id >= nslots_) return false;
  const uint32_t at = by_id_[id].load(std::memory_order_acquire);
  if (at == 0) return false;
  Slot& s = slots_[at - 1];
  uint32_t was = s.log_gen.load(std::memory_order_relaxed);
  if (was == log_gen || !s.log_gen.compare_exchange_strong(was, log_gen, std::memory_order_relaxed))
    return false;
  *pcs = s.pcs;
  *n = s.len;
  *epoch = s.epoch;
  return true;
}

}  // namespace gotrace::unwind
