// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/pprof.h - pprof profiles from a trace, without Go --===//
//
// `gotrace pprof --kind KIND`: the profiles `go tool trace -pprof=KIND`
// makes (sync, net, syscall, sched: the same records, cmd/trace/pprof.go of
// Go 1.19) and a CPU profile from the trace's CPUSample events, written as a
// gzipped profile.proto that `go tool pprof` and other pprof tools read.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "encoder/report/trace_reader.h"
#include "encoder/status.h"

namespace gotrace::report {

struct ProfileRecord {
  uint64_t stk = 0;    // stack id in the trace
  int64_t count = 0;   // waits (samples for cpu)
  int64_t value = 0;   // nanoseconds
};

struct Profile {
  std::string kind;
  std::vector<ProfileRecord> records;  // by stack id
  int64_t period = 1;                  // cpu: nanoseconds per sample
  int64_t total() const;
};

// kind: sync | net | syscall | sched | cpu. Errors are one line ("has no CPU
// samples ...", "unknown kind ...").
Status ComputeProfile(const Trace& trace, const std::string& kind, Profile* out);

// Writes `prof` with the stacks of `trace` as a gzipped profile.proto.
Status WritePprof(const Trace& trace, const Profile& prof, const std::string& path);

// Reads a gzipped (or plain) profile.proto and sums its sample values, for
// tests that compare with the profiles Go writes. values[i] = sum of value i.
Status ReadPprofTotals(const std::string& path, std::vector<int64_t>* values,
                       std::vector<std::string>* functions);

}  // namespace gotrace::report
