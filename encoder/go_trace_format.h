// SPDX-License-Identifier: Apache-2.0
//===-- encoder/go_trace_format.h - the "go 1.19 trace" wire vocabulary ---===//
//
// Event type numbers, argument counts and limits of the Go 1.19 execution
// trace format (../shared/docs/GO_TRACE_FORMAT.md §1.6), kept in one place so
// the writer, the checker and the tests agree. Only the events gotrace emits
// are listed with arguments; FutileWakeup and GoSysExitLocal are deliberately
// absent (§0 item 7: Go >= 1.23 rejects the first, 1.19 mis-parses the second).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace::go {

inline constexpr int kGoTraceVersion = 19;
inline constexpr char kHeader[16] = {'g', 'o', ' ', '1', '.', '1', '9', ' ',
                                     't', 'r', 'a', 'c', 'e', '\0', '\0', '\0'};

enum EvType : uint8_t {
  kEvBatch = 1,         // [p, baseTicks] (no ts)
  kEvFrequency = 2,     // [ticksPerSec] (no ts)
  kEvStack = 3,         // [id, n, n x (pc, func, file, line)] (no ts)
  kEvGomaxprocs = 4,    // [ts, procs, stk]
  kEvProcStart = 5,     // [ts, threadID]
  kEvProcStop = 6,      // [ts]
  kEvGoCreate = 13,     // [ts, newG, newGStartStack, stk]
  kEvGoStart = 14,      // [ts, g, seq]
  kEvGoEnd = 15,        // [ts]
  kEvGoStop = 16,       // [ts, stk]
  kEvGoSched = 17,      // [ts, stk]
  kEvGoPreempt = 18,    // [ts, stk]
  kEvGoSleep = 19,      // [ts, stk]
  kEvGoBlock = 20,      // [ts, stk]
  kEvGoUnblock = 21,    // [ts, g, seq, stk]
  kEvGoBlockSync = 25,  // [ts, stk]
  kEvGoBlockCond = 26,  // [ts, stk]
  kEvGoBlockNet = 27,   // [ts, stk]
  kEvGoSysCall = 28,    // [ts, stk]
  kEvGoSysExit = 29,    // [ts, g, seq, realExitTicks]
  kEvGoSysBlock = 30,   // [ts]
  kEvGoWaiting = 31,    // [ts, g]
  kEvGoInSyscall = 32,  // [ts, g]
  kEvHeapAlloc = 33,    // [ts, bytes]
  kEvString = 37,       // special: id, len, bytes
  kEvUserTaskCreate = 45,  // [ts, taskID, parentTaskID, nameString, stk]
  kEvUserTaskEnd = 46,     // [ts, taskID, stk]
  kEvUserRegion = 47,      // [ts, taskID, mode (0 start, 1 end), nameString, stk]
  kEvUserLog = 48,         // [ts, taskID, keyString, stk] + inline string (GoTraceWriter::UserLog)
  kEvCPUSample = 49,       // [ts, realTicks, p, g, stk]
};

// Number of wire arguments of a timed event, counting the ts delta and the
// trailing stack id (the count the parser checks). 0 for types we never emit.
constexpr int TimedArgCount(EvType t) {
  switch (t) {
    case kEvProcStop: case kEvGoEnd: case kEvGoSysBlock:
      return 1;
    case kEvProcStart: case kEvGoStop: case kEvGoSched: case kEvGoPreempt: case kEvGoSleep:
    case kEvGoBlock: case kEvGoBlockSync: case kEvGoBlockCond: case kEvGoBlockNet:
    case kEvGoSysCall: case kEvGoWaiting: case kEvGoInSyscall: case kEvHeapAlloc:
      return 2;
    case kEvGomaxprocs: case kEvGoStart: case kEvUserTaskEnd:
      return 3;
    case kEvGoCreate: case kEvGoUnblock: case kEvGoSysExit: case kEvUserLog:
      return 4;
    case kEvUserTaskCreate: case kEvUserRegion: case kEvCPUSample:
      return 5;
    default:
      return 0;
  }
}

const char* EvName(EvType t);

// Limits that keep a trace readable by Go 1.19 and by Go >= 1.23's converter
// (GO_TRACE_FORMAT.md §4.2).
inline constexpr size_t kMaxStackFrames = 128;
inline constexpr size_t kMaxLongPayload = 2048;  // length-prefixed argument bytes
inline constexpr size_t kMaxStringBytes = 1024;  // we truncate names beyond this
inline constexpr uint64_t kMaxStackId = 0xffffffffu;

}  // namespace gotrace::go
