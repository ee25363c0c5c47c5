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

#include <functional>
#include <memory>
#include <string>

#include "encoder/symbolizer.h"

namespace gotrace {

class DebuginfodLookup;

struct DwOptions {
  // Never ask a debuginfod server (DEBUGINFOD_URLS) for debug info, only
  // look in the standard local places; the preloaded library's exit-time
  // encode and the launcher's run tail use this.
  bool offline = false;
  // When not offline and DEBUGINFOD_URLS is set: a module whose debug info
  // is in none of the local places is asked of its servers by build-id
  // (symbolizer/debuginfod.h), all such lookups of one symbolizer factory
  // (one encode) sharing this many seconds; 0 asks nothing. Negative:
  // GOTRACE_DEBUGINFOD_TIMEOUT, else kDefaultDebuginfodBudget.
  double debuginfod_budget_s = -1;
  // The lookup to share (its budget, its answers per build-id); null: the
  // factory (or MakeDwSymbolizer) makes one from the fields above.
  std::shared_ptr<DebuginfodLookup> debuginfod;
  // Read the DWARF of system libraries and programs (see IsSystemLibraryPath)
  // that keep it in a separate debug file (libc6-dbg, python3.11-dbg, ...). When
  // false such a module is symbolized from its symbol table only (the debug
  // file's .symtab, which is not compressed, else the module's .dynsym):
  // function names, no file, no line, no inlined frames. Opening that DWARF
  // means decompressing megabytes of it (tens of milliseconds for libc
  // alone), which the exit-time encode of a short program cannot afford.
  // Modules with DWARF in the file itself and modules outside the system
  // directories are always symbolized from their DWARF, but for the
  // tracer's own library (DT_SONAME libgotrace.so), always named from its
  // symbol table.
  bool system_dwarf = true;
  // Per module, the first this many names taken from the symbol table come
  // from one pass over the table each; then the table is sorted once. A
  // short process's exit names a handful of PCs per module, and sorting
  // the 29,000 symbols of, say, gcc's cc1 cost 3 ms per process. (Tests set
  // 0 or a large number to compare the two ways.)
  int linear_symbol_lookups = 12;
};

// A symbolizer for one recorded process.
std::unique_ptr<Symbolizer> MakeDwSymbolizer(const DwOptions& options);
std::unique_ptr<Symbolizer> MakeDwSymbolizer(bool offline = false);  // system_dwarf = true

// What `gotrace encode` (online allowed) and the preloaded library (offline)
// use.
SymbolizerFactory DefaultSymbolizerFactory(const DwOptions& options);
SymbolizerFactory DefaultSymbolizerFactory(bool offline = false);  // system_dwarf = true
// Symbolizers that share their opened files and answers, for encoding many
// processes' logs (on several threads: the sharing is locked): each file is
// opened and indexed once for all of them.
SymbolizerFactory SharedSymbolizerFactory(const DwOptions& options);

// The same, with its files opened ahead of the logs that will ask for them:
// a launcher warms what its program has mapped while the program runs, so
// that the run's end, which waits for the encode, finds them read in and
// indexed (encoder/run_finish.cc). Warming changes no answer.
class SharedSymbols {
 public:
  explicit SharedSymbols(const DwOptions& options);
  const SymbolizerFactory& Factory() const { return factory_; }
  // Opens the ELF file at `path`, reads its DWARF where the options' policy
  // would, and indexes its symbol table. Thread-safe (the files' lock: an
  // encode on another thread waits for it).
  void Warm(const std::string& path) const { warm_(path); }

 private:
  SymbolizerFactory factory_;
  std::function<void(const std::string&)> warm_;
};

// Whether `path`, already resolved (realpath), is in a system library or
// program directory: /lib, /lib64, /usr/lib, /usr/lib64, /usr/libexec, /bin,
// /sbin, /usr/bin or /usr/sbin, or below.
bool IsSystemLibraryPath(const std::string& resolved);

// The per-module policy: whether the symbolizer reads DWARF (its own or a
// separate debug file's) for the ELF file at `path` (resolved here), given
// `options`. False for the tracer's own library (named from its symbol
// table in every mode: its frames need no line), and for a system library
// without .debug_info of its own when options.system_dwarf is false.
bool UsesDwarf(const std::string& path, const DwOptions& options);

}  // namespace gotrace
