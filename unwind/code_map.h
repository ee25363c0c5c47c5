// SPDX-License-Identifier: Apache-2.0
//===-- unwind/code_map.h - executable ranges and unwind tables of the process -===//
//
// What a stack walk may trust: the executable segments (PT_LOAD with PF_X)
// of every loaded object, the vDSO included, each with its object's
// .eh_frame_hdr and readable segments. A return address outside every
// executable range ends a stack (issue 14: no garbage frame, in any mode).
// Lookups are lock-free and O(log n): a sorted array in static memory,
// rebuilt from dl_iterate_phdr by one writer at a time (under the caller's
// lock) into the half that readers are not using, and published with a
// version that readers check after reading (a seqlock with two copies).
//
// Problem: dlclose while another thread unwinds. A walk reads three kinds of
// memory: its own thread's stack (bounded by the stack, never unmapped while
// the thread runs), this map (static), and an object's .eh_frame_hdr and
// .eh_frame on a row-cache miss. Only the last can be unmapped under it. Two
// things keep that read from faulting:
//  1. It stays inside the object's PT_LOAD segments as this map recorded
//     them (CodeModule::Readable), whatever the bytes say.
//  2. The object is still mapped: the program's dlclose (interposed) calls
//     UnloadBegin before the real dlclose and UnloadEnd after. UnloadBegin
//     raises `unloading_` and waits until no module read is in progress;
//     a module read (ModuleReadScope) announces itself in `readers_` and
//     gives up if an unload is in progress (sequentially consistent on both
//     sides: one of the two always sees the other). After UnloadEnd, the map
//     is not trusted for module reads until it has been rebuilt
//     (`valid_for_` == `unmapped_`), so an unloaded object's memory is never
//     read through a stale entry. Reads given up are not lost: the frame
//     falls back to frame pointers and nothing is cached.
// What remains: an object that glibc unloads by itself (iconv's gconv
// modules, through __libc_dlclose, which is not interposable) is seen only
// at the next rebuild. Its memory can be read meanwhile only for a PC in its
// old code that did not come from a correct unwind (a live return address
// cannot be in unloaded code: the program would crash on return), i.e. a
// frame-pointer guess through code without unwind tables, landing in that
// object at the moment it goes away.
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gotrace::unwind {

inline constexpr size_t kMaxCodeRanges = 4096;
inline constexpr size_t kMaxCodeModules = 2048;
inline constexpr size_t kMaxModuleSegments = 8;

// A loaded object, as much as unwinding needs of it.
struct CodeModule {
  uintptr_t bias = 0;          // ELF l_addr
  uintptr_t eh_frame_hdr = 0;  // address of .eh_frame_hdr (PT_GNU_EH_FRAME), 0: none
  size_t eh_frame_hdr_len = 0;
  uint32_t nseg = 0;  // readable PT_LOAD segments
  uintptr_t seg_lo[kMaxModuleSegments] = {};
  uintptr_t seg_hi[kMaxModuleSegments] = {};

  // Whether [a, a + n) lies inside one readable segment.
  bool Readable(uintptr_t a, size_t n) const {
    for (uint32_t i = 0; i < nseg; ++i)
      if (a >= seg_lo[i] && n <= seg_hi[i] - seg_lo[i] && a - seg_lo[i] <= seg_hi[i] - seg_lo[i] - n)
        return true;
    return false;
  }
};

struct CodeRange {
  uintptr_t lo = 0, hi = 0;  // [lo, hi): an executable segment
  uint32_t module = 0;       // index into the snapshot's modules
};

// The last range a walk matched (consecutive frames are often in the same
// object). Valid for one map version.
struct CodeMemo {
  uint32_t version = ~0u;
  uintptr_t lo = 0, hi = 0;
};

class CodeMap {
 public:
  // Re-reads the loaded objects with dl_iterate_phdr when the loader's
  // counters moved since the last rebuild, or always when `force`. One
  // writer at a time (the caller serialises). Not async-signal-safe (the
  // loader's lock). Returns whether the map changed.
  bool Update(bool force);

  // Replaces the map with the given ranges and modules (tests).
  void SetForTest(const CodeRange* ranges, size_t nranges, const CodeModule* modules,
                  size_t nmodules);

  // Whether pc lies in an executable segment. Lock-free, async-signal-safe.
  // With a memo, a PC in the range that matched last costs one load.
  bool IsCode(uintptr_t pc, CodeMemo* memo = nullptr) const {
    if (memo != nullptr && pc >= memo->lo && pc < memo->hi &&
        version_.load(std::memory_order_acquire) == memo->version)
      return true;
    return IsCodeSlow(pc, memo);
  }

  // Copies the object whose executable segment holds pc. False if none, or
  // if the map moved while it was read.
  bool ModuleOf(uintptr_t pc, CodeModule* out) const;

  // Bumped whenever code may have gone away (an unload seen by UnloadEnd or
  // by a rebuild): unwind rows cached under an older generation are stale.
  uint32_t generation() const { return gen_.load(std::memory_order_acquire); }

  // Around the program's dlclose (see "Problem:" above). Async-signal-safe;
  // UnloadBegin waits (yielding) for module reads in progress, which take
  // microseconds and never wait themselves; but a thread can be kept from
  // finishing one (a signal handler that never returns, or longjmps out of
  // the read and leaves it counted), so the wait gives up after a second or
  // two: a read still going then reads the object its thread is executing,
  // which is not the one being unloaded unless its walk went astray.
  void UnloadBegin();
  void UnloadEnd();
  // In a fork child: the parent's other threads, and their module reads and
  // unloads in progress, are gone.
  void AfterFork();

  size_t ranges() const;   // executable ranges in the current map
  // Whether any executable range starts in [lo, hi) (an object's mapping).
  bool HasCodeIn(uintptr_t lo, uintptr_t hi) const;
  uint32_t version() const { return version_.load(std::memory_order_acquire); }

  // A module read: while one is alive, no dlclose unmaps anything. ok() is
  // false if an unload is in progress or the map is older than the last
  // unload: then read nothing.
  class ModuleReadScope {
   public:
    explicit ModuleReadScope(CodeMap& m);
    ~ModuleReadScope();
    bool ok() const { return ok_; }
    bool stale_map() const { return stale_; }  // a rebuild would help
    ModuleReadScope(const ModuleReadScope&) = delete;
    ModuleReadScope& operator=(const ModuleReadScope&) = delete;

   private:
    CodeMap& m_;
    bool prev_reading_;
    bool ok_ = false;
    bool stale_ = false;
  };

 private:
  struct Snapshot {
    size_t nranges = 0;
    CodeRange ranges[kMaxCodeRanges];
    size_t nmodules = 0;
    CodeModule modules[kMaxCodeModules];
  };
  // Finds the range holding pc in snapshot s (read with relaxed loads: the
  // writer may be rewriting it; the caller validates the version).
  static const CodeRange* Find(const Snapshot& s, uintptr_t pc);
  bool IsCodeSlow(uintptr_t pc, CodeMemo* memo) const;
  void Publish(Snapshot& next);

  Snapshot snap_[2];
  std::atomic<uint32_t> version_{0};  // snap_[version_ & 1] is current
  // Every member starts at zero: the map is in .bss, not in the library's file.
  std::atomic<uint32_t> gen_{0};
  std::atomic<uint32_t> readers_{0};
  std::atomic<uint32_t> unloading_{0};
  std::atomic<uint32_t> unmapped_{0};   // UnloadEnd calls so far
  std::atomic<uint32_t> valid_for_{0};  // unmapped_ as of the last rebuild's start
  bool built_ = false;  // seen_* hold the loader's counters of the last rebuild
  unsigned long long seen_adds_ = 0, seen_subs_ = 0;
};

// The process's map (static storage, G7).
CodeMap& ProcessCode();

// Whether pc lies in an object the loader has mapped (glibc's lock-free
// _dl_find_object, 2.35 and later) and of which `map` knows no code: a
// library loaded since the map's last rebuild, worth a rebuild. A PC in the
// data of a known object, or in no object, is not. Without _dl_find_object
// (glibc 2.34), always true. Async-signal-safe. LoaderLookupInit resolves
// the function (once, at start: dlsym may allocate).
bool LoaderHasNewObjectAt(const CodeMap& map, uintptr_t pc);
void LoaderLookupInit();

}  // namespace gotrace::unwind
