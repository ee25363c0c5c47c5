// SPDX-License-Identifier: Apache-2.0
//===-- preload/real.cc - the libc functions our interposers forward to ---===//
#include "preload/real.h"

#include "preload/sys/next_symbol.h"

namespace gotrace::real {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // siginterrupt, sigset, sigignore
#define GT_REAL_DEFINE(name, version, required) decltype(&::name) name = nullptr;
GT_REAL_FUNCTIONS(GT_REAL_DEFINE)
#undef GT_REAL_DEFINE
#pragma GCC diagnostic pop
decltype(&::__libc_start_main) libc_start_main = nullptr;

namespace {

struct Entry {
  const char* name;
  const char* version;
  void** slot;
  bool required;
};

const Entry kTable[] = {
#define GT_REAL_ENTRY(name, version, required) \
  {#name, version, reinterpret_cast<void**>(&name), required},
    GT_REAL_FUNCTIONS(GT_REAL_ENTRY)
#undef GT_REAL_ENTRY
};

}  // namespace

// sys::NextSymbol first (no lock, async-signal-safe, tens of nanoseconds);
// what it cannot answer, dlvsym and dlsym do.
//
// Problem: a failed dlsym leaves its message for the next dlerror() of the
// thread. A function this libc lacks (glibc 2.36 has no __isoc23_vfscanf)
// was looked up by every traced process before its first fork
// (ResolveRest), and a program that reads dlerror() after a dlsym that
// succeeded found "undefined symbol: __isoc23_vfscanf" there: sandboxed
// chromium under tracewrap hung at its start. So a name no object of the
// start-up scope defines is not asked of dlsym ahead of need (`ahead`),
// and a dlsym or dlvsym that fails takes its message back (DlsymQuiet).
void* Lookup(const char* name, const char* version, bool ahead) {
  void* p = nullptr;
  bool missing = false;
  if (version != nullptr) p = sys::NextSymbol(name, version);
  if (p == nullptr) p = sys::NextSymbol(name, nullptr, &missing);
  if (p != nullptr || (ahead && missing)) return p;
  if (version != nullptr) {
    p = dlvsym(RTLD_NEXT, name, version);
    if (p == nullptr) (void)dlerror();
  }
  if (p == nullptr) p = sys::DlsymQuiet(RTLD_NEXT, name);
  return p;
}

void* Resolve(int index, bool ahead) {
  const Entry& e = kTable[index];
  void* p = __atomic_load_n(e.slot, __ATOMIC_RELAXED);
  if (p == nullptr) {
    p = Lookup(e.name, e.version, ahead);
    __atomic_store_n(e.slot, p, __ATOMIC_RELAXED);
  }
  return p;
}

void ResolveRest() {
  for (int i = 0; i < kCount; ++i) (void)Resolve(i, /*ahead=*/true);
}

bool ResolveAll(const char** missing) {
  // Issue 18: the required functions now (tracing needs them), the others
  // when first called (Get): a process calls a few of the ~175, and each
  // dlsym was 100 to 200 ns. Their lookup never locks or allocates
  // (sys::NextSymbol), so a first call in a signal handler is safe too.
  sys::NextSymbolsInit(reinterpret_cast<const void*>(&ResolveAll));
  bool ok = true;
  for (int i = 0; i < kCount; ++i) {
    if (kTable[i].required && Resolve(i) == nullptr) {
      if (ok) *missing = kTable[i].name;
      ok = false;
    }
  }
  if (libc_start_main == nullptr)
    libc_start_main = reinterpret_cast<decltype(libc_start_main)>(Lookup("__libc_start_main", nullptr));
  return ok;
}

}  // namespace gotrace::real
