// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/report.h - where the threads of a trace waited -----===//
//
// Turns a decoded trace into per-thread state times (running, runnable,
// blocked by kind), the top blocking sites, who woke whom and the heap, and
// prints that as text, markdown or JSON (README, "Reading a trace without
// Go"). Block kinds come from the encoder's gotrace-kinds strings when the
// trace has them, else from the event type.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "encoder/printable.h"
#include "encoder/report/trace_reader.h"

namespace gotrace::report {

struct StateStat {
  int64_t ns = 0;
  uint64_t count = 0;  // intervals that began in this state
};

// One state interval of a thread, for the HTML timeline: state 0 running,
// 1 runnable, 2 + i blocked with KnownKinds()[i].
struct Interval {
  int64_t start = 0, end = 0;
  uint8_t state = 0;
};

struct ThreadReport {
  uint64_t goid = 0;  // gotrace: the kernel thread id
  std::string name;   // the start routine (frame 0 of the creation stack)
  int64_t start_ns = 0, end_ns = 0;
  bool ended = false;
  int64_t cpu_ns = -1;  // CPU time the kernel counted (gotrace-cpu), -1 unknown
  StateStat running, runnable;
  std::map<std::string, StateStat> blocked;  // by kind
  std::vector<Interval> intervals;  // only with Analyze(..., keep_intervals)
  int64_t life() const { return end_ns - start_ns; }
  int64_t blocked_ns() const;
};

struct BlockSite {
  std::string kind;
  uint64_t stk = 0;
  int64_t total_ns = 0, max_ns = 0;
  uint64_t count = 0;
  std::vector<Frame> frames;
  // The threads that waited here (goid) and how long each did.
  std::vector<std::pair<uint64_t, int64_t>> waiters;
  // Every thread that waited here spent its life waiting, not working (a
  // pool or an event loop waiting for work: IdleThread), most of it here.
  // Listed after the others, apart; not a `top` gate's site.
  bool idle = false;
};

struct WakePair {
  uint64_t waker = 0, wakee = 0;
  uint64_t count = 0;
  int64_t ns = 0;  // the wakee's blocked time these wakeups ended
};

struct ProcessInfo {
  std::string pid, cmd, sched, cpu_hz, lost, dropped, why;
  // Kernel rings still full at the process's last read (their records after
  // full_at, ns into the trace, may be missing); empty: none.
  std::string full, full_at;
};

struct Report {
  std::string file;
  std::vector<ProcessInfo> processes;  // from gotrace-meta; empty for other traces
  int64_t duration_ns = 0;
  uint64_t events = 0;
  uint64_t cpu_samples = 0;  // CPUSample events: what the sampling rate took here
  bool has_heap = false;
  uint64_t heap_peak = 0, heap_final = 0;
  std::vector<std::pair<int64_t, uint64_t>> heap;  // (ts, bytes) at every HeapAlloc
  std::vector<ThreadReport> threads;               // in order of creation
  std::vector<BlockSite> sites;  // not idle, then idle; each by total_ns, largest first
  std::vector<WakePair> wakers;                    // by count, largest first
  const ThreadReport* Thread(uint64_t goid) const;
};

Report Analyze(const Trace& trace, const std::string& file, bool keep_intervals = false);

// A thread that spent its life waiting: at least 90% of it blocked and at
// most 5% running, and not a process's main thread (its tid is the pid).
bool IdleThread(const Report& r, const ThreadReport& t);

// Kinds in display order; "sync" is also the group of all lock-like kinds
// (mutex rwlock cond sem futex barrier sync), as Go's sync profile counts.
const std::vector<std::string>& KnownKinds();
bool InSyncGroup(const std::string& kind);

std::string FormatText(const std::vector<Report>& reports, size_t top);
std::string FormatMarkdown(const std::vector<Report>& reports, size_t top);
std::string FormatJson(const std::vector<Report>& reports, size_t top);
// One self-contained page (html.cc); the reports must keep their intervals.
std::string FormatHtml(const std::vector<Report>& reports, size_t top);

}  // namespace gotrace::report
