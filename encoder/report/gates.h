// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/gates.h - `gotrace report --fail-if EXPR` ----------===//
//
// A gate is one comparison "METRIC OP VALUE" over the reports of a run
// (grammar in README, "CI gates"); the job fails when it holds. Parsing
// checks the metric, the operator and that the value's unit fits the metric.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

#include "encoder/report/report.h"
#include "encoder/status.h"

namespace gotrace::report {

struct Gate {
  enum class Unit { kPercent, kTime, kBytes, kCount };
  std::string text;    // as written
  std::string metric;  // e.g. "blocked.mutex", "sync.top.total", "heap.peak"
  std::string op;      // > >= < <= == !=
  double value = 0;    // percent, nanoseconds, bytes or a count
  Unit unit = Unit::kCount;
};

Status ParseGate(const std::string& expr, Gate* out);

// True when the gate's condition holds for `reports` (all traces together);
// *actual is the measured value as text ("45.3%", "120.0 ms").
bool GateHolds(const Gate& gate, const std::vector<Report>& reports, std::string* actual);

}  // namespace gotrace::report
