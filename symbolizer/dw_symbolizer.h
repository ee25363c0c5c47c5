// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/dw_symbolizer.h - PC to function/file/line with libdw --===//
//
// The Symbolizer (encoder/symbolizer.h) that reads DWARF through elfutils'
// libdw (Dwfl): inlined frames, demangled C++ names, the ELF symbol table
// when there is no debug info, and module+0xoffset when nothing else is
// known. Separate debug files are found the standard way (build-id,
// .gnu_debuglink). The module map is the one the log recorded, per epoch.
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>

#include "encoder/symbolizer.h"

namespace gotrace {

// A symbolizer for one recorded process. `offline`: never ask a debuginfod
// server (DEBUGINFOD_URLS) for debug info, only look in the standard local
// places; the preloaded library's exit-time encode uses this.
std::unique_ptr<Symbolizer> MakeDwSymbolizer(bool offline = false);

// What `gotrace encode` (online allowed) and the preloaded library (offline)
// use.
SymbolizerFactory DefaultSymbolizerFactory(bool offline = false);

}  // namespace gotrace
