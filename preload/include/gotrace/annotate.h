/* SPDX-License-Identifier: Apache-2.0 */
/*===-- gotrace/annotate.h - tasks, regions and log lines in the trace ----===//
 *
 * A program marks its own work for `go tool trace` (README, "Annotations"):
 *
 *   uint64_t task = gotrace_task_begin("request");    -> UserTaskCreate
 *   gotrace_region_begin(task, "parse");              -> UserRegion start
 *   gotrace_log(task, "path", "/index.html");         -> UserLog
 *   gotrace_region_end(task, "parse");                -> UserRegion end
 *   gotrace_task_end(task);                           -> UserTaskEnd
 *
 * C99 and C++. Nothing is needed at link time: the entry points are weak
 * references to functions that libgotrace.so exports, so a program built
 * with this header runs unchanged without the tracer, where each call costs
 * a load and a branch, and gotrace_task_begin returns 0. Every call accepts
 * task 0 (no task). Task ids are made by the tracer (unique in the process,
 * never 0); a task may end on another thread than the one that began it.
 * Regions nest per thread: end them in reverse order on the thread that
 * began them. Strings are copied (each cut at 1 KiB); NULL is "".
 * Annotations are recorded in the event group `annotate` (GOTRACE_EVENTS).
 *===----------------------------------------------------------------------===*/
#ifndef GOTRACE_ANNOTATE_H
#define GOTRACE_ANNOTATE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's entry points (version 1). Call the inline functions below:
 * these are null when libgotrace.so is not loaded. */
extern uint64_t gotrace_annotate_task_begin_v1(uint64_t parent, const char* name)
    __attribute__((weak));
extern void gotrace_annotate_task_end_v1(uint64_t task) __attribute__((weak));
/* mode 0: begin, 1: end. */
extern void gotrace_annotate_region_v1(uint64_t task, int mode, const char* name)
    __attribute__((weak));
extern void gotrace_annotate_log_v1(uint64_t task, const char* category, const char* message)
    __attribute__((weak));

/* Begins a task (a UserTaskCreate); returns its id, 0 when untraced. */
static inline uint64_t gotrace_task_begin(const char* name) {
  return gotrace_annotate_task_begin_v1 ? gotrace_annotate_task_begin_v1(0, name) : 0;
}
/* Begins a task that is a subtask of `parent`. */
static inline uint64_t gotrace_subtask_begin(uint64_t parent, const char* name) {
  return gotrace_annotate_task_begin_v1 ? gotrace_annotate_task_begin_v1(parent, name) : 0;
}
/* Ends a task (a UserTaskEnd), on any thread. */
static inline void gotrace_task_end(uint64_t task) {
  if (gotrace_annotate_task_end_v1) gotrace_annotate_task_end_v1(task);
}
/* Begins a region of the calling thread, in `task` (0: none). */
static inline void gotrace_region_begin(uint64_t task, const char* name) {
  if (gotrace_annotate_region_v1) gotrace_annotate_region_v1(task, 0, name);
}
/* Ends the calling thread's innermost region, which must be named `name`. */
static inline void gotrace_region_end(uint64_t task, const char* name) {
  if (gotrace_annotate_region_v1) gotrace_annotate_region_v1(task, 1, name);
}
/* A log line (a UserLog): a category (may be "") and a message. */
static inline void gotrace_log(uint64_t task, const char* category, const char* message) {
  if (gotrace_annotate_log_v1) gotrace_annotate_log_v1(task, category, message);
}

#ifdef __cplusplus
}  /* extern "C" */

namespace gotrace {

/* A region for the lifetime of the object:
 *   { gotrace::Region r(task, "parse"); ... }
 * `name` must outlive the object (a string literal, typically). */
class Region {
 public:
  Region(uint64_t task, const char* name) : task_(task), name_(name) {
    gotrace_region_begin(task, name);
  }
  ~Region() { gotrace_region_end(task_, name_); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  uint64_t task_;
  const char* name_;
};

}  /* namespace gotrace */
#endif /* __cplusplus */

#endif /* GOTRACE_ANNOTATE_H */
