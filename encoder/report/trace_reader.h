// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/trace_reader.h - read a "go 1.19 trace" without Go -===//
//
// Decodes a Go 1.19 execution trace (GO_TRACE_FORMAT.md §1) into one list of
// events in the order Go 1.19's internal/trace gives them: per-P streams
// merged by time under the goroutine sequence rules of order.go (§2.4),
// GoSysExit moved to its real exit time, ticks turned into nanoseconds from
// the first event. Anything the format forbids is refused with one line.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "encoder/status.h"

namespace gotrace::report {

struct Frame {
  uint64_t pc = 0;
  std::string func;
  std::string file;
  uint64_t line = 0;
};

struct Event {
  int64_t ts = 0;      // nanoseconds since the first event (after ReadTrace)
  uint64_t g = 0;      // the goroutine (OS thread) the event belongs to, 0 = none
  uint64_t args[4] = {0, 0, 0, 0};  // wire arguments without ts and stack id
  uint64_t stk = 0;    // stack id, 0 = none
  int64_t p = 0;       // P of the batch (CPUSample: its own argument)
  uint8_t type = 0;    // go::EvType
};

struct Trace {
  std::vector<Event> events;       // merged, time order
  std::unordered_map<uint64_t, std::vector<Frame>> stacks;  // leaf first
  std::unordered_map<uint64_t, std::string> strings;
  std::vector<std::string> user_logs;  // UserLog messages; args[3] of the event indexes here
  uint64_t ticks_per_second = 0;
  int64_t end_ns = 0;              // time of the last event
};

// Reads `path`. Errors are one line without the path ("truncated at offset
// 0x..", "not a Go trace file", ...); the caller prefixes the file name.
Status ReadTrace(const std::string& path, Trace* out);
Status ParseTrace(const uint8_t* data, size_t size, Trace* out);

// Name of an event type (the names Go uses), "?" for unknown numbers.
const char* EventName(uint8_t type);

}  // namespace gotrace::report
