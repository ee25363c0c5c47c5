// SPDX-License-Identifier: Apache-2.0
//===-- encoder/encode.h - event logs in, one Go trace file out -----------===//
//
// The entry point used by `gotrace encode`, by crash recovery and by the
// preloaded library at exit. Reads and validates the logs, replays them
// through the scheduling model, symbolizes the stacks it used, and writes the
// trace to a temporary file that is moved into place only when complete, so a
// failed encode never leaves a half-written trace under the requested name.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "encoder/sched_model.h"
#include "encoder/status.h"
#include "encoder/symbolizer.h"

namespace gotrace {

enum class OutputMode {
  kExclusive,  // fail if the output exists
  kUnique,     // add ".1", ".2", ... before the extension on conflict
  kOverwrite,  // replace an existing file
};

struct EncodeOptions {
  ModelOptions model;
  bool strict = true;  // damaged logs are errors (false: skip damage, warn)
  OutputMode output_mode = OutputMode::kExclusive;
  unsigned file_mode = 0600;
  SymbolizerFactory symbolizer;  // null: frames are named by address
};

struct EncodeStats {
  std::string output_path;  // the file actually written
  uint64_t bytes = 0;
  uint64_t events = 0;
  ModelStats model;
  StackStats stacks;
  uint64_t log_records = 0;
  uint64_t log_chunks = 0;
  std::vector<std::string> warnings;  // lenient mode: damage that was skipped
  std::vector<std::string> notes;     // lenient mode: what is normal after a kill
  bool no_events = false;  // failed only because the logs hold no events
};

// One line for the user when the kernel's ring buffers lost records (its
// own count, or a ring still full at a process's last read), else "".
std::string KernelLossLine(const ModelStats& m);

// True when this build checks every emitted event by default (debug builds).
bool CheckEventsByDefault();

Status Encode(std::span<const std::string> logs, const std::string& output,
              const EncodeOptions& opts, EncodeStats* stats);

}  // namespace gotrace
