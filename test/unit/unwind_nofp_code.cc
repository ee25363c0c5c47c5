// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/unwind_nofp_code.cc - real code without frame pointers --===//
//
// Compiled -O2 -fomit-frame-pointer (test/CMakeLists.txt), so the unwinders
// meet what Debian's libraries are: functions that do not keep rbp as a frame
// pointer, one that uses rbp as a general register across a call, and a path
// through libc's qsort (also built without frame pointers). unwind_test.cc
// calls NofpChain and compares the walks taken from inside it.
//===----------------------------------------------------------------------===//
#include "test/unit/unwind_nofp_code.h"

#include <cstdlib>

namespace gotrace::unwind::testing {
namespace {

struct Ctx {
  CaptureFn fn;
  void* arg;
  bool done;
};

Ctx* g_ctx = nullptr;  // qsort's comparator has no context argument

int Compare(const void* a, const void* b) {
  if (!g_ctx->done) {
    g_ctx->done = true;
    g_ctx->fn(g_ctx->arg);
  }
  const int x = *static_cast<const int*>(a), y = *static_cast<const int*>(b);
  return (x > y) - (x < y);
}

__attribute__((noinline)) void ThroughQsort(Ctx* c) {
  int v[16];
  for (int i = 0; i < 16; ++i) v[i] = (i * 7) % 16;
  g_ctx = c;
  qsort(v, 16, sizeof v[0], Compare);
  g_ctx = nullptr;
  __asm__ volatile("" ::"r"(v[3]) : "memory");
}

#if defined(__x86_64__)
// rbp holds a value that is no frame pointer (an odd number) across the
// call: a frame-pointer walk from below meets it.
__attribute__((noinline)) void ClobbersRbp(Ctx* c) {
  register unsigned long junk __asm__("rbp") = 0x5bd1e995u;
  __asm__ volatile("" : "+r"(junk));
  ThroughQsort(c);
  __asm__ volatile("" ::"r"(junk));
}
#else
__attribute__((noinline)) void ClobbersRbp(Ctx* c) { ThroughQsort(c); }
#endif

__attribute__((noinline)) void Recurse(int depth, Ctx* c) {
  if (depth == 0) {
    ClobbersRbp(c);
  } else {
    Recurse(depth - 1, c);
  }
  __asm__ volatile("" ::: "memory");  // not a tail call
}

}  // namespace

void NofpChain(int depth, CaptureFn fn, void* arg) {
  Ctx c{fn, arg, false};
  Recurse(depth, &c);
  __asm__ volatile("" ::: "memory");
}

}  // namespace gotrace::unwind::testing
