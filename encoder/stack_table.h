// SPDX-License-Identifier: Apache-2.0
//===-- encoder/stack_table.h - log stacks to symbolized trace stacks -----===//
//
// During the replay, events refer to stacks by the log's ids; Ref() turns
// them into dense trace stack ids on first use (an array lookup). At the end,
// WriteAll() symbolizes each used stack once, expanding inlined frames, and
// gives every distinct (function, file, line) frame its own PC: pprof merges
// locations by PC, so two frames sharing one would lose a name. Physical
// frames keep their real return address when it is not already taken by a
// different frame; inlined frames get synthetic PCs above the user address
// space (>= 2^47), which never collide with real ones.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "encoder/go_trace_writer.h"
#include "encoder/symbolizer.h"

namespace gotrace {

// A thread's kernel name as a group label: each run of digits after a
// separator (- # _ space : /) becomes `*` (pool-1-thread-3 -> pool-*-thread-*,
// GC Thread#0 -> GC Thread#*; C2 and python3.11 stay as they are).
std::string FoldThreadName(std::string_view name);

struct StackStats {
  uint64_t stacks = 0;          // Stack records written
  uint64_t frames = 0;          // frames written
  uint64_t undefined = 0;       // referenced log stacks never defined in the log
  uint64_t unknown_pcs = 0;     // PCs the symbolizer could not name
  uint64_t truncated = 0;       // stacks cut to the format's limits
  uint64_t cut = 0;             // stacks the tracer marked truncated (kStackTruncated)
};

class StackTable {
 public:
  explicit StackTable(size_t nfiles) : files_(nfiles) {}

  // A kStackDef record. Redefinitions of an id are ignored. `truncated`: the
  // walk that recorded it stopped before the thread's first frame.
  void Define(uint32_t file, uint64_t log_id, uint32_t epoch, std::vector<uint64_t> pcs,
              bool truncated = false);

  // The name of the frame that ends a stack known to be incomplete: cut by
  // the tracer's walk (a return address outside code, a frame it could not
  // unwind, the depth limit) or by the trace format's limits. A frame of its
  // own, rather than a flag no viewer shows, so that pprof and the trace
  // viewer say that the callers are missing, and group all such stacks
  // under one root instead of under whatever frame happened to be last.
  static constexpr const char kTruncatedFrame[] = "[truncated]";

  // Trace stack id for a log stack id; 0 stays 0.
  uint64_t Ref(uint32_t file, uint64_t log_id) {
    if (log_id == 0) return 0;
    FileStacks& f = files_[file];
    if (log_id < kDirect) {
      if (log_id >= f.direct.size()) f.direct.resize(std::max<size_t>(log_id + 1, f.direct.size() * 2), 0);
      uint32_t& slot = f.direct[log_id];
      if (slot == 0) slot = NewRef(file, log_id);
      return slot;
    }
    return RefSlow(file, log_id);
  }

  // Whether log stack log_id of `file` was defined with at least one frame
  // (an event whose stack is not would show none).
  bool Has(uint32_t file, uint64_t log_id) const {
    if (log_id == 0) return false;
    auto d = files_[file].defs.find(log_id);
    return d != files_[file].defs.end() && !d->second.pcs.empty();
  }

  // The main thread's `fallback`: its routine is main, named or not (a
  // stripped program's main is shown so beside workers of its name).
  static constexpr const char* kMainRoutine = "main";

  // Trace stack id of the one-frame start stack of a thread whose start
  // routine is start_pc (0: unknown, named `fallback`). `creator_stack` is the
  // log stack of the creation, whose epoch locates start_pc (0: epoch 0).
  // `thread` (nonzero: the caller's key for one thread) gives the thread a
  // start stack of its own, which ThreadName can still name until WriteAll.
  uint64_t StartStack(uint32_t file, uint64_t start_pc, uint64_t creator_stack,
                      const char* fallback, uint64_t thread = 0);

  // The kernel's name of `thread` (the last one given wins). Go's tools name
  // and group goroutines by frame 0 of their start stack: where the start
  // routine has no name (unknown, or `module+0xoffset` in a stripped module),
  // or is a trampoline (its threads go by two or more names: the JVM's
  // thread_native_entry), that frame becomes the thread's name, digits in a
  // series folded (FoldThreadName), so that threads read and group by what
  // the program called them; other named routines keep their name.
  void ThreadName(uint64_t thread, std::string name);

  // Symbolizes and writes every referenced stack. syms[file] may be null.
  void WriteAll(GoTraceWriter* w, const std::vector<Symbolizer*>& syms, StackStats* stats);

 private:
  static constexpr uint64_t kDirect = 1u << 22;
  struct Def {
    uint32_t epoch;
    std::vector<uint64_t> pcs;
    bool truncated;
  };
  struct FileStacks {
    std::vector<uint32_t> direct;                      // log id -> trace id
    std::unordered_map<uint64_t, uint32_t> overflow;   // for huge log ids
    std::unordered_map<uint64_t, Def> defs;
    // The smallest epoch of its stacks (UINT32_MAX: none): the module map
    // of its log's start, for a routine no creation stack dates.
    uint32_t first_epoch = ~uint32_t{0};
  };
  struct Used {
    uint32_t file;
    bool start;            // start stack rather than a log stack
    uint64_t log_id;       // log stack, or for start stacks the creator's log stack
    uint64_t start_pc;
    const char* fallback;
    uint64_t thread;       // start stacks: the thread's key, or 0
  };
  struct FrameKey {
    uint64_t func, file, line;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const {
      return std::hash<uint64_t>()(k.func * 0x9e3779b97f4a7c15ull ^ k.file * 0xbf58476d1ce4e5b9ull ^
                                   k.line);
    }
  };
  struct Expanded {
    std::vector<GoFrame> frames;
    bool named = true;  // the outermost frame has a real name
    std::string stand_in;  // the outermost frame's name (`module+0xoffset` where it has none)
  };

  static bool IsAnnotateHeader(const std::string& file);
  // A start stack's routine (nullptr: unknown), symbolized.
  const Expanded* Routine(GoTraceWriter* w, const std::vector<Symbolizer*>& syms, const Used& u,
                          StackStats* stats);
  // The module map a start stack's routine is looked up in.
  uint32_t RoutineEpoch(const Used& u) const;
  // The routines that start threads of several names (trampolines).
  std::unordered_set<const Expanded*> Trampolines(GoTraceWriter* w,
                                                  const std::vector<Symbolizer*>& syms,
                                                  StackStats* stats);
  uint32_t NewRef(uint32_t file, uint64_t log_id);
  GoFrame TruncatedFrame(GoTraceWriter* w);
  GoFrame NamedFrame(GoTraceWriter* w, const std::string& func, const std::string& file);
  uint64_t RefSlow(uint32_t file, uint64_t log_id);
  const Expanded& Expand(GoTraceWriter* w, Symbolizer* sym, uint32_t file,
                                     uint32_t epoch, uint64_t pc, bool return_address,
                                     bool physical_only, StackStats* stats);

  std::vector<FileStacks> files_;
  std::vector<Used> used_;  // index = trace id - 1
  std::unordered_map<std::string, uint32_t> start_ids_;
  std::unordered_map<uint64_t, std::string> thread_names_;
  // Symbolization caches (WriteAll only).
  std::unordered_map<std::string, Expanded> expanded_;
  std::unordered_map<uint64_t, FrameKey> pc_owner_;
  // One synthetic PC per distinct frame (DESIGN.md §5): an inlined frame, or
  // a frame whose real PC another frame owns (a library unloaded and another
  // loaded at its addresses), gets the same PC wherever it appears again.
  std::unordered_map<FrameKey, uint64_t, FrameKeyHash> synthetic_pc_;
  uint64_t next_synthetic_pc_ = uint64_t{1} << 47;
  // File string ids of gotrace/annotate.h: its inline wrappers' frames are
  // dropped from the start of a stack (WriteAll).
  std::unordered_set<uint64_t> annotate_files_;
};

}  // namespace gotrace
