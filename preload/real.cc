// SPDX-License-Identifier: Apache-2.0
//===-- preload/real.cc - the libc functions our interposers forward to ---===//
#include "preload/real.h"

namespace gotrace::real {

#define GT_REAL_DEFINE(name, version, required) decltype(&::name) name = nullptr;
GT_REAL_FUNCTIONS(GT_REAL_DEFINE)
#undef GT_REAL_DEFINE
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

void* Lookup(const char* name, const char* version) {
  void* p = nullptr;
  if (version != nullptr) p = dlvsym(RTLD_NEXT, name, version);
  if (p == nullptr) p = dlsym(RTLD_NEXT, name);
  return p;
}

}  // namespace

void* Resolve(int index) {
  const Entry& e = kTable[index];
  void* p = __atomic_load_n(e.slot, __ATOMIC_RELAXED);
  if (p == nullptr) {
    p = Lookup(e.name, e.version);
    __atomic_store_n(e.slot, p, __ATOMIC_RELAXED);
  }
  return p;
}

bool ResolveAll(const char** missing) {
  bool ok = true;
  for (int i = 0; i < kCount; ++i) {
    if (Resolve(i) == nullptr && kTable[i].required) {
      if (ok) *missing = kTable[i].name;
      ok = false;
    }
  }
  if (libc_start_main == nullptr)
    libc_start_main = reinterpret_cast<decltype(libc_start_main)>(dlsym(RTLD_NEXT, "__libc_start_main"));
  return ok;
}

}  // namespace gotrace::real
