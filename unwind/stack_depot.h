// SPDX-License-Identifier: Apache-2.0
//===-- unwind/stack_depot.h - lock-free stack de-duplication -------------===//
//
// Maps a stack (PCs + module epoch) to a small id, the way the Go runtime's
// trace stack table does: an open-addressing hash table in fixed memory that
// threads probe without locks. Insertion claims an empty slot with one CAS,
// fills it, then publishes its hash; a reader that meets a slot being filled
// skips it, so at worst a stack gets two ids (harmless) and no thread ever
// waits on another. Entries are never removed. The caller that inserted a
// stack (fresh = true) writes its definition into its own log, so every id an
// event uses is defined in the log.
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gotrace::unwind {

class StackDepot {
 public:
  // Reserves memory for `slots` (a power of two) entries and `pc_bytes` of
  // PCs, lazily committed. False if the memory cannot be reserved.
  bool Init(size_t slots, size_t pc_bytes);
  // What Init reserves per slot, besides the PCs.
  static constexpr size_t kBytesPerSlot = 32 + sizeof(uint32_t);

  // The id (>= 1) of the stack, inserting it if needed; *fresh tells whether
  // the caller must define it: this call inserted it, or it was last defined
  // in another log than `log_gen` (a trace window's log defines again the
  // stacks it uses; ids stay the same for the whole process). 0 when the
  // depot is full (the event gets no stack).
  uint32_t Intern(const uint64_t* pcs, size_t n, uint32_t epoch, bool* fresh, uint32_t log_gen = 0);

  // A stack used in an earlier log (a trace window's) by its id: true, with
  // its PCs and epoch, if the caller must define it in log `log_gen` (the
  // first caller there does). Lock-free; false for an unknown id.
  bool Redefine(uint32_t id, uint32_t log_gen, const uint64_t** pcs, size_t* n, uint32_t* epoch);

  uint32_t size() const { return next_id_.load(std::memory_order_relaxed) - 1; }
  uint64_t full_misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;  // 0 empty, 1 being filled, else the stack's hash
    uint32_t id;
    uint32_t epoch;
    uint32_t len;
    std::atomic<uint32_t> log_gen;  // the log it was last defined in
    const uint64_t* pcs;
  };
  static_assert(sizeof(Slot) == 32);
  static_assert(kBytesPerSlot == sizeof(Slot) + sizeof(uint32_t));  // slots_ and by_id_

  // The result of looking at one slot for a stack (Intern's probe loop).
  enum class Probe { kFound, kInserted, kFull, kNext };
  Probe Try(Slot& s, uint64_t h, const uint64_t* pcs, size_t n, uint32_t epoch, uint32_t log_gen,
            uint32_t* id, bool* fresh);

  // Problem (issue 18): hashed over the whole table, a short process's few
  // stacks each landed on a page of their own (a read fault, then a write
  // fault, 13 to 20 us each on the VMs measured). The first probes go to
  // the table's first page (128 slots, mapped in at Init), the rest as
  // before, in the rest of the table (the front page, full once a process
  // has a hundred stacks, would otherwise crowd the probes that start in
  // it): a process with a few dozen stacks touches one page. Tables of
  // fewer than four pages have no front.
  static constexpr size_t kFrontSlots = 4096 / sizeof(Slot);
  static constexpr size_t kFrontProbes = 8;

  Slot* slots_ = nullptr;
  size_t nslots_ = 0;
  std::atomic<uint32_t>* by_id_ = nullptr;  // id -> slot index + 1 (0: not yet published)
  size_t front_ = 0;  // slots in the front page (0 or kFrontSlots)
  size_t rest_ = 0;   // slots after it
  uint64_t* arena_ = nullptr;
  size_t arena_words_ = 0;
  std::atomic<size_t> arena_used_{0};
  std::atomic<uint32_t> next_id_{1};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace gotrace::unwind
