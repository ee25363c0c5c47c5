// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_annotate.cc - the entry points of gotrace/annotate.h -===//
//
// The program's own annotations (issue 17): tasks, regions and log lines,
// recorded in the calling thread's stream with the caller's stack
// (kTaskBegin, kRegion, kUserLog, kTaskEnd; encoder/log_format.h) and turned
// into Go user events by the encoder (sched_model.cc, OnAnnotation). The
// header's inline functions call these through weak references, so they
// exist only when libgotrace.so is loaded.
//
// Hot path: no allocation, lock or stdio; strings are copied into the record,
// each cut at ChunkWriter::kMaxStringBytes. Task ids come from one atomic
// counter (unique in the process, never 0) and are handed out even while
// nothing is recorded (the group is off, tracing has not started or has
// stopped), so a program sees the same kind of value either way. Calls from
// inside a hook or the tracer (a signal handler interrupting one) record
// nothing, as every hook does.
//===----------------------------------------------------------------------===//
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "preload/runtime.h"
#include "preload/sys/clock.h"

namespace gotrace {
namespace {

constinit std::atomic<uint64_t> g_next_task{1};

// name, or "" for NULL; at most kMaxStringBytes bytes are looked at.
std::string_view Str(const char* s) {
  if (s == nullptr) return {};
  size_t n = 0;
  while (n < log::ChunkWriter::kMaxStringBytes && s[n] != '\0') ++n;
  return {s, n};
}

// Room for an annotation record with strings of a and b bytes.
constexpr size_t RecordBound(size_t a, size_t b) {
  return log::ChunkWriter::VarRecordBound(log::ChunkWriter::AnnotationBound(a, b));
}

}  // namespace
}  // namespace gotrace

using namespace gotrace;

GT_EXPORT uint64_t gotrace_annotate_task_begin_v1(uint64_t parent, const char* name) {
  const uint64_t id = g_next_task.fetch_add(1, std::memory_order_relaxed);
  HookScope scope(kGroupAnnotate);
  if (!scope.active()) return id;
  Materialize();  // an annotated process is worth a trace (staging, issue 18)
  const Tick t = sys::Ticks();
  const uint32_t cpu = sys::CurrentCpu();
  const uint32_t stack = CaptureStack(scope, GT_FRAME(), t);
  const std::string_view n = Str(name);
  ThreadRec* r = scope.rec();
  if (Reserve(r, RecordBound(n.size(), 0))) {
    r->s.w.TaskBegin(t, cpu, id, parent, stack, n);
    Commit(r);
  }
  return id;
}

GT_EXPORT void gotrace_annotate_task_end_v1(uint64_t task) {
  if (task == 0) return;  // an untraced gotrace_task_begin's id: nothing began
  HookScope scope(kGroupAnnotate);
  if (!scope.active()) return;
  Materialize();
  const Tick t = sys::Ticks();
  const uint32_t cpu = sys::CurrentCpu();
  const uint32_t stack = CaptureStack(scope, GT_FRAME(), t);
  ThreadRec* r = scope.rec();
  if (Reserve(r, log::kMaxFixedRecordBytes)) {
    r->s.w.TaskEnd(t, cpu, task, stack);
    Commit(r);
  }
}

GT_EXPORT void gotrace_annotate_region_v1(uint64_t task, int mode, const char* name) {
  if (mode != 0 && mode != 1) return;  // not a call the header makes
  HookScope scope(kGroupAnnotate);
  if (!scope.active()) return;
  Materialize();
  const Tick t = sys::Ticks();
  const uint32_t cpu = sys::CurrentCpu();
  const uint32_t stack = CaptureStack(scope, GT_FRAME(), t);
  const std::string_view n = Str(name);
  ThreadRec* r = scope.rec();
  if (Reserve(r, RecordBound(n.size(), 0))) {
    r->s.w.Region(t, cpu, task, static_cast<uint64_t>(mode), stack, n);
    Commit(r);
  }
}

GT_EXPORT void gotrace_annotate_log_v1(uint64_t task, const char* category, const char* message) {
  HookScope scope(kGroupAnnotate);
  if (!scope.active()) return;
  Materialize();
  const Tick t = sys::Ticks();
  const uint32_t cpu = sys::CurrentCpu();
  const uint32_t stack = CaptureStack(scope, GT_FRAME(), t);
  const std::string_view c = Str(category);
  const std::string_view m = Str(message);
  ThreadRec* r = scope.rec();
  if (Reserve(r, RecordBound(c.size(), m.size()))) {
    r->s.w.UserLog(t, cpu, task, stack, c, m);
    Commit(r);
  }
}
