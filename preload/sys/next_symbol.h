// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/next_symbol.h - dlsym(RTLD_NEXT) without dlsym ---------===//
//
// Finds a function the way dlsym(RTLD_NEXT, name) and dlvsym(RTLD_NEXT,
// name, version) do from our library: in the objects loaded after it, in
// load order (at start-up that is the global search order: the program's
// other preloads, then its libraries breadth first), reading each object's
// GNU hash table, symbol table and version tables in memory.
//
// Problem (issue 18): resolving our ~175 interposed functions with dlsym at
// every process start cost 18 to 40 us (its lock, its error handling, its
// search for the caller's object, per call), a tenth of a short process's
// whole added cost. Here one dl_iterate_phdr at start (Init) records the
// tables, and each function is looked up when it is first called: a few
// dozen loads, no lock, no allocation, async-signal-safe, so a hook first
// called from a signal handler may resolve its function there. What this
// cannot answer (no GNU hash table, an IFUNC whose resolver must run, a
// symbol not found) it leaves to dlsym (Lookup returns nullptr).
//===----------------------------------------------------------------------===//
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>

namespace gotrace::sys {

// Records the objects loaded after the one holding `self` (an address of
// ours). Before any other thread runs; false if none was found.
bool NextSymbolsInit(const void* self);

// The address of `name` (at `version`, or the default version if nullptr)
// in the first object after ours that defines it; nullptr if not found or
// not answerable here (see above). *missing (if given) is set when no
// object of the scope recorded at start defines `name` at all, each of them
// read: then dlsym(RTLD_NEXT) would fail too, unless a library loaded since
// (dlopen, RTLD_GLOBAL) defines it.
void* NextSymbol(const char* name, const char* version, bool* missing = nullptr);

// dlsym, and when it fails, dlerror() to take back the error it left: a
// program that calls dlerror() after a dlsym of its own that succeeded (or
// checks it without clearing it first) must not find our failed lookup's
// message there. (A message the program had not read yet is gone either
// way once dlsym fails: glibc keeps one.)
inline void* DlsymQuiet(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) (void)dlerror();
  return p;
}

// Whether ThreadSanitizer's runtime (libtsan) was among the objects
// NextSymbolsInit saw: it takes the tracer's own memory for the program's
// and reports races in it (the program then exits 66), so tracing stays off.
bool TsanLoaded();

// For tests: the same lookup over the objects loaded after the one holding
// `start`, recorded anew (not thread-safe; the tables of NextSymbolsInit are
// replaced).
void* NextSymbolAfter(const void* start, const char* name, const char* version);

}  // namespace gotrace::sys
