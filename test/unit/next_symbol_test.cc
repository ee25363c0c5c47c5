// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/next_symbol_test.cc - dlsym(RTLD_NEXT) without dlsym -----===//
//
// sys::NextSymbol must give what dlsym(RTLD_NEXT) and dlvsym give, for every
// function the preloaded library forwards to, or leave it to them (nullptr);
// never a different address. From this test program, "next" is every
// object after the program itself.
//===----------------------------------------------------------------------===//
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <string>
#include <vector>

#include "preload/real.h"
#include "preload/sys/next_symbol.h"

namespace gotrace::sys {
namespace {

struct Name {
  const char* name;
  const char* version;
};

// The library's table (preload/real.h), the malloc family and a few more.
std::vector<Name> Names() {
  std::vector<Name> v = {
#define GT_TEST_NAME(name, version, required) {#name, version},
      GT_REAL_FUNCTIONS(GT_TEST_NAME)
#undef GT_TEST_NAME
  };
  for (const char* n : {"malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
                        "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
                        "__libc_start_main", "mallinfo2", "gnu_get_libc_version"}) {
    v.push_back({n, nullptr});
  }
  return v;
}

int InTheProgram() { return 1; }

TEST_CASE("NextSymbol: every interposed function, as dlsym(RTLD_NEXT) and dlvsym find it", "[next_symbol]") {
  size_t answered = 0, total = 0;
  for (const Name& n : Names()) {
    INFO(n.name << (n.version ? std::string("@") + n.version : std::string()));
    void* want = n.version != nullptr ? dlvsym(RTLD_NEXT, n.name, n.version) : dlsym(RTLD_NEXT, n.name);
    void* got = NextSymbolAfter(reinterpret_cast<const void*>(&InTheProgram), n.name, n.version);
    if (want == nullptr) {
      CHECK(got == nullptr);  // missing from this C library: missing here too
      continue;
    }
    ++total;
    if (got == nullptr) continue;  // left to dlsym (an IFUNC)
    ++answered;
    CHECK(got == want);
  }
  // (All but IFUNCs: the table has none on glibc 2.36 x86-64.)
  CHECK(answered * 10 >= total * 9);
}

TEST_CASE("NextSymbol: the default version, never a hidden compatibility one", "[next_symbol]") {
  const void* self = reinterpret_cast<const void*>(&InTheProgram);
  // pthread_cond_wait@GLIBC_2.2.5 (the old condition variable) is hidden;
  // @@GLIBC_2.3.2 is the default.
  void* old_abi = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.2.5");
  void* cur = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
  REQUIRE(cur != nullptr);
  CHECK(NextSymbolAfter(self, "pthread_cond_wait", nullptr) == cur);
  CHECK(NextSymbolAfter(self, "pthread_cond_wait", "GLIBC_2.3.2") == cur);
  if (old_abi != nullptr) {
    CHECK(old_abi != cur);
    CHECK(NextSymbolAfter(self, "pthread_cond_wait", "GLIBC_2.2.5") == old_abi);
  }
  CHECK(NextSymbolAfter(self, "pthread_cond_wait", "GLIBC_9.99") == nullptr);
  CHECK(NextSymbolAfter(self, "gotrace_no_such_function_anywhere", nullptr) == nullptr);
  // An IFUNC (its resolver must run): left to dlsym.
  CHECK(NextSymbolAfter(self, "memcpy", nullptr) == nullptr);
}

}  // namespace
}  // namespace gotrace::sys
