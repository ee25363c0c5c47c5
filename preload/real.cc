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
void* Lookup(const char* name, const char* version) {
  void* p = nullptr;
  if (version != nullptr) p = sys::NextSymbol(name, version);
  if (p == nullptr) p = sys::NextSymbol(name, nullptr);
  if (p != nullptr) return p;
  if (version != nullptr) p = dlvsym(RTLD_NEXT, name, version);
  if (p == nullptr) p = dlsym(RTLD_NEXT, name);
  return p;
}

void* Resolve(int index) {
  const Entry& e = kTable[index];
  void* p = __atomic_load_n(e.slot, __ATOMIC_RELAXED);
  if (p == nullptr) {
    p = Lookup(e.name, e.version);
    __atomic_store_n(e.slot, p, __ATOMIC_RELAXED);
  }
  return p;
}

void ResolveRest() {
  for (int i = 0; i < kCount; ++i) (void)Resolve(i);
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
