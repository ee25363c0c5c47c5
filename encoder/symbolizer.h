// SPDX-License-Identifier: Apache-2.0
//===-- encoder/symbolizer.h - what the encoder asks of a symbolizer ------===//
//
// The encoder symbolizes once, at the end, every PC that a written stack uses.
// symbolizer/ implements this with libdw; tests use a fake. A symbolizer is
// per log file (one process): it is told the module map as the log recorded
// it, in order, and then asked for frames.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "encoder/log_reader.h"

namespace gotrace {

struct SymFrame {
  std::string func;  // demangled; empty if unknown
  std::string file;  // source file; empty if unknown
  uint32_t line = 0;
  // False when func is only a stand-in for a name (`module+0xoffset`: a
  // stripped module): the encoder may then prefer another name, such as a
  // thread's, for a start routine.
  bool named = true;
};

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;
  // The module map, in log order.
  virtual void ModuleLoaded(const log::ModuleLoadFields&) {}
  virtual void ModuleUnloaded(const log::ModuleUnloadFields&) {}
  // Appends the frames at code address `addr` in the module map of `epoch`,
  // innermost first: functions inlined at addr, then the function that
  // contains it. Callers pass pc - 1 for return addresses. Appends nothing if
  // addr is unknown; the encoder then names the frame by its address.
  virtual void Symbolize(uint64_t addr, uint32_t epoch, std::vector<SymFrame>* out) = 0;
  // A hint, before the Symbolize calls: `addr` (as Symbolize will be given
  // it) will be asked for. A module that will name many addresses from its
  // symbol table sorts it at once rather than scanning it for the first few.
  virtual void Expect(uint64_t /*addr*/, uint32_t /*epoch*/) {}
};

using SymbolizerFactory = std::function<std::unique_ptr<Symbolizer>(const log::LogFile&)>;

// Knows nothing: every frame is named by its address.
class NullSymbolizer final : public Symbolizer {
 public:
  void Symbolize(uint64_t, uint32_t, std::vector<SymFrame>*) override {}
};

}  // namespace gotrace
