// SPDX-License-Identifier: Apache-2.0
//===-- encoder/user_annotations.h - the program's tasks, regions, logs ---===//
//
// Turns the annotation records of gotrace/annotate.h (kTaskBegin, kRegion,
// kUserLog, kTaskEnd) into Go user events on the calling thread's P, with
// the caller's stack (issue 17; GO_TRACE_FORMAT.md §1.6 for the parser's
// rules). The scheduling model (sched_model.cc) owns the goroutine state
// and calls in while the thread runs; this keeps the rest:
//
//   - task ids: unique per process (the library's counter), made unique
//     per trace by the log file's index in the high bits, so that a trace
//     of several processes has no "task id conflicts";
//   - regions nest per thread. An end names the innermost open region, or
//     one further out: the inner ones are ended first (counted in
//     regions_closed). An end that names no open region of the thread is
//     dropped (counted in region_ends_dropped: the parser would reject it as
//     "misuse of region"), unless the thread has no open region at all: then
//     it ends a region begun before the trace (a window, GOTRACE_DEFER), which
//     the parser and go tool trace accept;
//   - open regions are ended before the thread's GoEnd and, for a thread
//     running at the trace's end, before it is descheduled (CloseAll); one
//     still open on a thread that waits at the end stays open, which the
//     parser accepts (go tool trace shows it lasting to the trace's end);
//   - stacks: a region start without one would crash go tool trace's
//     /usertasks and /userregions pages, so a one-frame synthetic stack
//     stands in for a missing one, on every event.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "encoder/go_trace_format.h"
#include "encoder/go_trace_writer.h"
#include "encoder/log_reader.h"
#include "encoder/stack_table.h"

namespace gotrace {

struct AnnotationStats {
  uint64_t tasks = 0;                // UserTaskCreate
  uint64_t task_ends = 0;            // UserTaskEnd
  uint64_t regions = 0;              // region starts
  uint64_t logs = 0;                 // UserLog
  uint64_t regions_closed = 0;       // ends it made: inner regions, thread ends, trace end
  uint64_t region_ends_dropped = 0;  // ends naming no open region of their thread
};

class UserAnnotations {
 public:
  // How events reach the trace (the model's emitter, which also checks them).
  using EventFn = std::function<void(uint32_t p, go::EvType, std::initializer_list<uint64_t>)>;
  using LogFn = std::function<void(uint32_t p, uint64_t task, uint64_t key, uint64_t stack,
                                   std::string_view message)>;

  UserAnnotations(GoTraceWriter* w, StackTable* stacks, AnnotationStats* stats, EventFn event,
                  LogFn log)
      : w_(w), stacks_(stacks), stats_(stats), event_(std::move(event)), log_(std::move(log)) {}

  static bool Handles(uint8_t type) {
    return type == log::kTaskBegin || type == log::kRegion || type == log::kUserLog ||
           type == log::kTaskEnd;
  }
  // An annotation record of goroutine `goid` (a thread of log `file`), which
  // runs on P p.
  void OnRecord(uint32_t file, uint64_t goid, uint32_t p, const log::Record& r);
  // Ends goroutine goid's open regions, innermost first; it runs on P p.
  void CloseAll(uint64_t goid, uint32_t p);
  bool HasOpen(uint64_t goid) const {
    auto it = open_.find(goid);
    return it != open_.end() && !it->second.empty();
  }

  // The trace's task id for the library's id `task` in log `file` (0 stays 0).
  static uint64_t TaskId(uint32_t file, uint64_t task);

  // The function name of the synthetic frame of an event recorded without a stack.
  static constexpr const char kNoStackFrame[] = "[annotation without a stack]";

 private:
  struct OpenRegion {
    uint64_t task;   // trace task id
    uint64_t name;   // string id
    uint64_t stack;  // trace stack id of the start
  };
  uint64_t StackOf(uint32_t file, uint64_t log_stack);
  void EndRegion(uint32_t file, uint64_t goid, uint32_t p, const log::RegionFields& f);

  GoTraceWriter* w_;
  StackTable* stacks_;
  AnnotationStats* stats_;
  EventFn event_;
  LogFn log_;
  std::unordered_map<uint64_t, std::vector<OpenRegion>> open_;  // goid -> its open regions
};

}  // namespace gotrace
