// SPDX-License-Identifier: Apache-2.0
//===-- encoder/stack_table.cc - log stacks to symbolized trace stacks ----===//
#include "encoder/stack_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace gotrace {
namespace {

std::string Key(uint32_t file, uint64_t a, uint64_t b, uint64_t c) {
  std::string k(sizeof file + 3 * sizeof a, '\0');
  char* p = k.data();
  std::memcpy(p, &file, sizeof file);
  std::memcpy(p + 4, &a, 8);
  std::memcpy(p + 12, &b, 8);
  std::memcpy(p + 20, &c, 8);
  return k;
}

}  // namespace

void StackTable::Define(uint32_t file, uint64_t log_id, uint32_t epoch, std::vector<uint64_t> pcs,
                        bool truncated) {
  if (log_id == 0) return;
  files_[file].first_epoch = std::min(files_[file].first_epoch, epoch);
  files_[file].defs.try_emplace(log_id, Def{epoch, std::move(pcs), truncated});
}

GoFrame StackTable::TruncatedFrame(GoTraceWriter* w) {
  GoFrame f;
  f.func = w->String(kTruncatedFrame);
  f.file = w->String("");
  f.line = 0;
  auto [syn, fresh] = synthetic_pc_.try_emplace(FrameKey{f.func, f.file, 0}, 0);
  if (fresh) syn->second = next_synthetic_pc_++;
  f.pc = syn->second;
  return f;
}

// A frame that only names (a start stack's): one synthetic PC per name, so
// that the goroutine list, which groups by PC, groups by it.
GoFrame StackTable::NamedFrame(GoTraceWriter* w, const std::string& func,
                               const std::string& file) {
  GoFrame f;
  f.func = w->String(func);
  f.file = w->String(file);
  f.line = 0;
  // File 0 is no string's id: these keys never meet a symbolized frame's.
  auto [syn, fresh] = synthetic_pc_.try_emplace(FrameKey{f.func, 0, 0}, 0);
  if (fresh) syn->second = next_synthetic_pc_++;
  f.pc = syn->second;
  return f;
}

uint32_t StackTable::NewRef(uint32_t file, uint64_t log_id) {
  used_.push_back(Used{file, false, log_id, 0, nullptr, 0});
  return static_cast<uint32_t>(used_.size());
}

uint64_t StackTable::RefSlow(uint32_t file, uint64_t log_id) {
  auto [it, inserted] = files_[file].overflow.try_emplace(log_id, 0);
  if (inserted) it->second = NewRef(file, log_id);
  return it->second;
}

uint64_t StackTable::StartStack(uint32_t file, uint64_t start_pc, uint64_t creator_stack,
                                const char* fallback, uint64_t thread) {
  // A thread's own key is unique already: the rest of the key only matters
  // for shared ones.
  const std::string key =
      thread != 0 ? Key(~uint32_t{0}, thread, 0, 0)
                  : Key(file, start_pc, start_pc ? creator_stack : 0,
                        reinterpret_cast<uintptr_t>(fallback));
  auto [it, inserted] = start_ids_.try_emplace(key, 0);
  if (inserted) {
    used_.push_back(Used{file, true, creator_stack, start_pc, fallback, thread});
    it->second = static_cast<uint32_t>(used_.size());
  }
  return it->second;
}

bool StackTable::IsAnnotateHeader(const std::string& file) {
  constexpr std::string_view kHeader = "gotrace/annotate.h";
  return file.size() >= kHeader.size() &&
         file.compare(file.size() - kHeader.size(), kHeader.size(), kHeader) == 0 &&
         (file.size() == kHeader.size() || file[file.size() - kHeader.size() - 1] == '/');
}

void StackTable::ThreadName(uint64_t thread, std::string name) {
  if (thread != 0 && !name.empty()) thread_names_[thread] = std::move(name);
}

std::string FoldThreadName(std::string_view name) {
  // A run of digits after a separator is a number in a series (pool-1-thread-3,
  // GC Thread#0, Thread-2 (worker)); one inside a word (C2, python3.11's 3) or
  // after a dot (its 11) is part of the name.
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const bool digit = name[i] >= '0' && name[i] <= '9';
    const bool after_separator =
        i > 0 && std::string_view("-#_ :/").find(name[i - 1]) != std::string_view::npos;
    if (digit && after_separator) {
      while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
      out += '*';
    } else {
      out += name[i++];
    }
  }
  return out;
}

const StackTable::Expanded* StackTable::Routine(GoTraceWriter* w,
                                                const std::vector<Symbolizer*>& syms, const Used& u,
                                                StackStats* stats) {
  if (u.start_pc == 0) return nullptr;
  Symbolizer* sym = u.file < syms.size() ? syms[u.file] : nullptr;
  // The runtime's convention: a start stack's PC is entry + 1, so that the
  // pc - 1 lookup every frame gets lands on the entry.
  return &Expand(w, sym, u.file, RoutineEpoch(u), u.start_pc + 1, true, true, stats);
}

// A start routine is dated by the stack of its creation; else (a thread
// there at the log's start: the main thread, a fork child's) by the log's
// first module map. A fork child's log numbers its modules from its
// parent's epoch (Apache unloads and reloads its modules before it forks
// its workers): looked up at epoch 0, where that log had no module, an
// event worker's main thread was named by its raw start address.
uint32_t StackTable::RoutineEpoch(const Used& u) const {
  const FileStacks& f = files_[u.file];
  if (auto d = f.defs.find(u.log_id); d != f.defs.end()) return d->second.epoch;
  return f.first_epoch != ~uint32_t{0} ? f.first_epoch : 0;
}

// Problem: a start routine is a thread's role in most programs (one group in
// go tool trace per routine), but some runtimes start every thread through
// one trampoline (the JVM's thread_native_entry, Rust's std thread_start,
// GLib's g_thread_proxy): all their threads were one group named after it,
// the GC, the compilers and the program's pools alike, while the names the
// threads gave themselves said which was which. A routine whose threads go
// by two or more names (digits in a series folded: pool-1 and pool-2 are one
// name) is taken for a trampoline, and its threads go by their names.
std::unordered_set<const StackTable::Expanded*> StackTable::Trampolines(
    GoTraceWriter* w, const std::vector<Symbolizer*>& syms, StackStats* stats) {
  std::unordered_map<const Expanded*, std::string> first_name;
  std::unordered_set<const Expanded*> out;
  for (const Used& u : used_) {
    if (!u.start || u.thread == 0) continue;
    const auto name = thread_names_.find(u.thread);
    if (name == thread_names_.end()) continue;
    const Expanded* routine = Routine(w, syms, u, stats);
    if (routine == nullptr || !routine->named) continue;
    const std::string folded = FoldThreadName(name->second);
    auto [it, fresh] = first_name.try_emplace(routine, folded);
    if (!fresh && it->second != folded) out.insert(routine);
  }
  return out;
}

const StackTable::Expanded& StackTable::Expand(GoTraceWriter* w, Symbolizer* sym, uint32_t file,
                                               uint32_t epoch, uint64_t pc, bool return_address,
                                               bool physical_only, StackStats* stats) {
  const std::string key = Key(file, epoch, pc, (return_address ? 1 : 0) | (physical_only ? 2 : 0));
  auto [it, inserted] = expanded_.try_emplace(key);
  if (!inserted) return it->second;

  std::vector<SymFrame> sf;
  const uint64_t addr = return_address && pc > 0 ? pc - 1 : pc;
  if (sym != nullptr) sym->Symbolize(addr, epoch, &sf);
  if (sf.empty()) {
    char name[32];
    std::snprintf(name, sizeof name, "0x%" PRIx64, addr);
    sf.push_back(SymFrame{name, "", 0, false});
    ++stats->unknown_pcs;
  }
  if (physical_only) sf.erase(sf.begin(), sf.end() - 1);

  it->second.named = sf.back().named;
  it->second.stand_in = sf.back().func;
  std::vector<GoFrame>& out = it->second.frames;
  out.reserve(sf.size());
  for (size_t i = 0; i < sf.size(); ++i) {
    GoFrame f;
    f.func = w->String(sf[i].func.empty() ? std::string("?") : sf[i].func);
    f.file = w->String(sf[i].file.empty() ? std::string("?") : sf[i].file);
    f.line = sf[i].line;
    if (IsAnnotateHeader(sf[i].file)) annotate_files_.insert(f.file);
    const FrameKey fk{f.func, f.file, f.line};
    f.pc = 0;
    if (i + 1 == sf.size() && pc != 0 && pc < (uint64_t{1} << 47)) {
      auto [owner, fresh] = pc_owner_.try_emplace(pc, fk);
      if (fresh || owner->second == fk) f.pc = pc;
    }
    if (f.pc == 0) {
      auto [syn, fresh] = synthetic_pc_.try_emplace(fk, 0);
      if (fresh) syn->second = next_synthetic_pc_++;
      f.pc = syn->second;
    }
    out.push_back(f);
  }
  return it->second;
}

void StackTable::WriteAll(GoTraceWriter* w, const std::vector<Symbolizer*>& syms,
                          StackStats* stats) {
  std::vector<GoFrame> frames;
  // What will be asked of each symbolizer (Symbolizer::Expect): node's
  // symbol table (109,000 symbols) was scanned twelve times, 0.75 ms each,
  // before being sorted for the 228 addresses a short run named in it.
  for (const Used& u : used_) {
    Symbolizer* sym = u.file < syms.size() ? syms[u.file] : nullptr;
    if (sym == nullptr) continue;
    if (u.start) {
      if (u.start_pc != 0) sym->Expect(u.start_pc, RoutineEpoch(u));
    } else if (auto d = files_[u.file].defs.find(u.log_id); d != files_[u.file].defs.end()) {
      for (uint64_t pc : d->second.pcs)
        if (pc > 0) sym->Expect(pc - 1, d->second.epoch);
    }
  }
  const std::unordered_set<const Expanded*> trampolines = Trampolines(w, syms, stats);
  // The start stacks named after their threads: by the name, and the
  // routine where it has none of its own (module+offset).
  auto by_thread_name = [&](const Used& u, const Expanded** routine) {
    *routine = Routine(w, syms, u, stats);
    const bool by_name =
        *routine == nullptr || !(*routine)->named || trampolines.count(*routine) != 0;
    return u.thread != 0 && by_name ? thread_names_.find(u.thread) : thread_names_.end();
  };
  // Problem: threads that never named themselves share the process's name
  // (all of pigz's are "pigz"): named after it, the main thread and the
  // workers, whose routines have no names in a stripped program, were one
  // group with one PC. A name that threads of different routines share is
  // qualified by the routine, so that each routine is a group of its own.
  std::unordered_map<std::string, std::unordered_set<const Expanded*>> routines_of_name;
  for (const Used& u : used_) {
    if (!u.start) continue;
    const Expanded* routine = nullptr;
    const auto name = by_thread_name(u, &routine);
    if (name != thread_names_.end() && routine != nullptr)
      routines_of_name[FoldThreadName(name->second)].insert(routine);
  }
  for (size_t i = 0; i < used_.size(); ++i) {
    const Used& u = used_[i];
    Symbolizer* sym = u.file < syms.size() ? syms[u.file] : nullptr;
    const auto& defs = files_[u.file].defs;
    frames.clear();
    if (u.start) {
      const Expanded* routine = nullptr;
      const auto name = by_thread_name(u, &routine);
      if (name != thread_names_.end()) {
        // Named after the thread (digits in a series folded), with one PC
        // per name (the 1.19 goroutine list groups by it); the routine, if
        // any, stays visible as the frame's file.
        std::string group = FoldThreadName(name->second);
        if (routine != nullptr && routines_of_name[group].size() > 1) {
          // (A stripped program's main thread was "python3
          // [python3.11+0x627ca0]" beside its workers.)
          const bool main_thread =
              u.fallback != nullptr && std::strcmp(u.fallback, kMainRoutine) == 0;
          group +=
              " [" +
              (main_thread && !routine->named ? std::string(kMainRoutine) : routine->stand_in) +
              "]";
        }
        frames.push_back(NamedFrame(w, group, routine != nullptr ? routine->stand_in : "?"));
      } else if (routine != nullptr) {
        frames.insert(frames.end(), routine->frames.begin(), routine->frames.end());
      } else {
        // Unknown start routine: a named frame with a PC of its own (the
        // goroutine list groups by the start PC, which must not be 0).
        frames.push_back(NamedFrame(w, u.fallback, "?"));
      }
    } else {
      auto d = defs.find(u.log_id);
      if (d == defs.end()) {
        ++stats->undefined;  // the parser treats it as an empty stack
        continue;
      }
      for (uint64_t pc : d->second.pcs) {
        const auto& f = Expand(w, sym, u.file, d->second.epoch, pc, true, false, stats).frames;
        frames.insert(frames.end(), f.begin(), f.end());
      }
      if (frames.empty()) continue;
      // An annotation's stack begins in gotrace/annotate.h's inline
      // wrappers (inlined or not): the caller is the frame that matters,
      // and go tool trace names a region's row after the innermost frame.
      size_t wrappers = 0;
      while (wrappers + 1 < frames.size() && annotate_files_.count(frames[wrappers].file) != 0)
        ++wrappers;
      frames.erase(frames.begin(), frames.begin() + static_cast<ptrdiff_t>(wrappers));
      if (d->second.truncated) {
        frames.push_back(TruncatedFrame(w));
        ++stats->cut;
      }
    }
    if (w->StackFit(i + 1, frames) < frames.size()) {
      // Cut to the format's limits: the marker ends what is kept (it may be
      // longer than the frame it replaces, hence the loop).
      ++stats->truncated;
      const GoFrame marker = TruncatedFrame(w);
      if (frames.back().pc == marker.pc) frames.pop_back();
      frames.resize(w->StackFit(i + 1, frames));
      frames.push_back(marker);
      while (frames.size() > 1 && w->StackFit(i + 1, frames) < frames.size())
        frames.erase(frames.end() - 2);
    }
    const size_t kept = w->Stack(i + 1, frames);
    ++stats->stacks;
    stats->frames += kept;
  }
}

}  // namespace gotrace
