// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/run_index.h - tracewrap's run index as input -------===//
//
// `tracewrap` writes OUT.index.json (issue 18): {"version":1, "processes":
// [{"pid":N, "ppid":N, "argv":[...], "trace":"path relative to the index, or
// null", "windows":["path", ...], ...}]}. `gotrace report INDEX` reports every
// process's trace and trace windows; unknown keys are ignored.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "encoder/status.h"

namespace gotrace::report {

struct IndexedProcess {
  int64_t pid = 0, ppid = 0;
  std::vector<std::string> argv;
  std::string trace;  // resolved against the index's directory; "" = none
  // Its trace windows ("windows": --paused, --ctl, flight snapshots), in
  // order, resolved likewise; the last may be `trace` too.
  std::vector<std::string> windows;
};

// Whether `bytes` (the start of a file) look like JSON rather than a trace.
bool LooksLikeJson(const std::string& head);

// Errors are one line without the path ("bad JSON at offset 12", ...).
Status ReadRunIndex(const std::string& path, std::vector<IndexedProcess>* out);

}  // namespace gotrace::report
