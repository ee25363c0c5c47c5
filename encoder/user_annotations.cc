// SPDX-License-Identifier: Apache-2.0
//===-- encoder/user_annotations.cc - the program's tasks, regions, logs --===//
#include "encoder/user_annotations.h"

namespace gotrace {

namespace {
// Task ids of log file f are f << kFileShift | the library's id: the
// library's counter stays far below 2^40 (a trillion tasks per process).
constexpr int kFileShift = 40;
constexpr uint64_t kTaskMask = (uint64_t{1} << kFileShift) - 1;
}  // namespace

uint64_t UserAnnotations::TaskId(uint32_t file, uint64_t task) {
  if (task == 0) return 0;
  return (uint64_t{file} << kFileShift) | (task & kTaskMask);
}

uint64_t UserAnnotations::StackOf(uint32_t file, uint64_t log_stack) {
  if (stacks_->Has(file, log_stack)) return stacks_->Ref(file, log_stack);
  return stacks_->StartStack(file, 0, 0, kNoStackFrame);
}

void UserAnnotations::OnRecord(uint32_t file, uint64_t goid, uint32_t p, const log::Record& r) {
  switch (r.type) {
    case log::kTaskBegin: {
      log::TaskBeginFields f;
      if (!log::ParseTaskBegin(r, &f)) return;
      event_(p, go::kEvUserTaskCreate,
             {TaskId(file, f.task), TaskId(file, f.parent), w_->String(f.name),
              StackOf(file, f.stack)});
      ++stats_->tasks;
      return;
    }
    case log::kTaskEnd:
      event_(p, go::kEvUserTaskEnd,
             {TaskId(file, r.task_end.task), StackOf(file, r.task_end.stack)});
      ++stats_->task_ends;
      return;
    case log::kRegion: {
      log::RegionFields f;
      if (!log::ParseRegion(r, &f)) return;
      if (f.mode == 1) {
        EndRegion(file, goid, p, f);
        return;
      }
      if (f.mode != 0) return;  // the library writes only 0 and 1
      const OpenRegion o{TaskId(file, f.task), w_->String(f.name), StackOf(file, f.stack)};
      open_[goid].push_back(o);
      event_(p, go::kEvUserRegion, {o.task, 0, o.name, o.stack});
      ++stats_->regions;
      return;
    }
    case log::kUserLog: {
      log::UserLogFields f;
      if (!log::ParseUserLog(r, &f)) return;
      // An empty category is string 0, which the parser reads as "" (the
      // Go runtime does the same for an empty key).
      const uint64_t key = f.category.empty() ? 0 : w_->String(f.category);
      log_(p, TaskId(file, f.task), key, StackOf(file, f.stack), f.message);
      ++stats_->logs;
      return;
    }
    default:
      return;
  }
}

void UserAnnotations::EndRegion(uint32_t file, uint64_t goid, uint32_t p,
                                const log::RegionFields& f) {
  const uint64_t task = TaskId(file, f.task);
  const uint64_t name = w_->String(f.name);
  auto it = open_.find(goid);
  if (it == open_.end() || it->second.empty()) {
    // Begun before this trace: the parser and go tool trace take an end
    // without a start as such a region.
    event_(p, go::kEvUserRegion, {task, 1, name, StackOf(file, f.stack)});
    return;
  }
  std::vector<OpenRegion>& regions = it->second;
  size_t i = regions.size();
  while (i > 0 && !(regions[i - 1].task == task && regions[i - 1].name == name)) --i;
  if (i == 0) {
    ++stats_->region_ends_dropped;
    return;
  }
  // Regions begun inside it and not ended: they end first, where it ends.
  while (regions.size() > i) {
    const OpenRegion& o = regions.back();
    event_(p, go::kEvUserRegion, {o.task, 1, o.name, o.stack});
    ++stats_->regions_closed;
    regions.pop_back();
  }
  event_(p, go::kEvUserRegion, {task, 1, name, StackOf(file, f.stack)});
  regions.pop_back();
}

void UserAnnotations::CloseAll(uint64_t goid, uint32_t p) {
  auto it = open_.find(goid);
  if (it == open_.end()) return;
  std::vector<OpenRegion>& regions = it->second;
  while (!regions.empty()) {
    const OpenRegion& o = regions.back();
    event_(p, go::kEvUserRegion, {o.task, 1, o.name, o.stack});
    ++stats_->regions_closed;
    regions.pop_back();
  }
  open_.erase(it);
}

}  // namespace gotrace
