// SPDX-License-Identifier: Apache-2.0
//===-- test/symbolizer/fixture_a.cc - code with known lines and inlining -===//
//
// Built -g -O2 into a shared library (and copies without debug info, fully
// stripped, and with a .gnu_debuglink) for test/unit/symbolizer_test.cc.
// gt_fix_run() calls Outer, a real function, into which Middle and Inner are
// inlined; Inner calls Capture, which records its return address (inside the
// inlined Inner) and the source lines each level passed down with __LINE__
// on the line of its call.
//===----------------------------------------------------------------------===//
#include <cstdint>

#include "test/symbolizer/fixture.h"

extern "C" {
__attribute__((visibility("default"))) GtFixResult gt_fix_result;
}

namespace gt_fixture {
namespace {

volatile int g_sink = 1;

// Not inlined, not cloned, no interprocedural assumptions: a real call.
__attribute__((noinline, noipa)) void Capture(int l0, int l1, int l2) {
  gt_fix_result.pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  gt_fix_result.lines[0] = l0;
  gt_fix_result.lines[1] = l1;
  gt_fix_result.lines[2] = l2;
  g_sink = g_sink + 1;
}

__attribute__((always_inline)) inline int Inner(int x, int middle_line, int outer_line) {
  Capture(__LINE__, middle_line, outer_line);
  return x + g_sink;
}

__attribute__((always_inline)) inline int Middle(int x, int outer_line) {
  const int r = Inner(x * 3, __LINE__, outer_line);
  return r * g_sink;
}

}  // namespace

// Hidden: not in .dynsym, so a stripped copy has no name for it.
__attribute__((noinline, noipa, visibility("hidden"))) int Hidden(int x) {
  Capture(__LINE__, 0, 0);
  return x - g_sink;
}

__attribute__((noinline, noipa, visibility("default"))) int Outer(int x) {
  const int r = Middle(x + 1, __LINE__);
  return r + g_sink;
}

}  // namespace gt_fixture

extern "C" {

__attribute__((visibility("default"))) int gt_fix_run(int x) { return gt_fixture::Outer(x); }

__attribute__((noinline, noipa, visibility("default"))) int gt_fix_plain(int x) {
  gt_fixture::Capture(__LINE__, 0, 0);
  return x + gt_fixture::g_sink;
}

__attribute__((visibility("default"))) int gt_fix_hidden(int x) { return gt_fixture::Hidden(x); }

// Padding so that the library has enough code for the performance test to
// find many distinct addresses.
#define GT_FIX_FILLER(n)                                                                \
  __attribute__((noinline, noipa, visibility("default"))) int gt_fix_filler##n(int x) { \
    int acc = x;                                                                        \
    for (int i = 0; i < (n % 7) + 3; ++i) acc = acc * 31 + gt_fixture::g_sink;          \
    return acc ^ n;                                                                     \
  }
// clang-format off
GT_FIX_FILLER(0) GT_FIX_FILLER(1) GT_FIX_FILLER(2) GT_FIX_FILLER(3) GT_FIX_FILLER(4)
GT_FIX_FILLER(5) GT_FIX_FILLER(6) GT_FIX_FILLER(7) GT_FIX_FILLER(8) GT_FIX_FILLER(9)
GT_FIX_FILLER(10) GT_FIX_FILLER(11) GT_FIX_FILLER(12) GT_FIX_FILLER(13) GT_FIX_FILLER(14)
GT_FIX_FILLER(15) GT_FIX_FILLER(16) GT_FIX_FILLER(17) GT_FIX_FILLER(18) GT_FIX_FILLER(19)
// clang-format on

}  // extern "C"

// Assembly labels: symbols without a size (one global with a type, one
// local and one global without), which extend to the next symbol, here a
// sized global one that ends them in .dynsym too. The symbol-table tests
// compare both ways of looking them up.
__asm__(
    ".text\n"
    ".globl gt_fix_asm_sized_not\n"
    ".type gt_fix_asm_sized_not, STT_FUNC\n"
    "gt_fix_asm_sized_not:\n"
    "  nop\n  nop\n  nop\n  nop\n"
    "gt_fix_asm_local_label:\n"
    "  nop\n  nop\n  nop\n  ret\n"
    ".globl gt_fix_asm_tail\n"
    "gt_fix_asm_tail:\n"
    "  nop\n  nop\n  ret\n"
    ".globl gt_fix_asm_end\n"
    ".type gt_fix_asm_end, STT_FUNC\n"
    "gt_fix_asm_end:\n"
    "  ret\n"
    ".size gt_fix_asm_end, 1\n");

// A sized symbol around two others, with code of its own between them: an
// address past an inner one is the outer one's (SymbolIndex::Find jumps
// from a symbol that ends below it to the nearest earlier one that ends
// after it).
__asm__(
    ".text\n"
    ".globl gt_fix_outer\n"
    ".type gt_fix_outer, STT_FUNC\n"
    "gt_fix_outer:\n"
    "  nop\n"
    ".globl gt_fix_inner_a\n"
    ".type gt_fix_inner_a, STT_FUNC\n"
    "gt_fix_inner_a:\n"
    "  nop\n  nop\n"
    ".size gt_fix_inner_a, 2\n"
    "  nop\n"
    ".globl gt_fix_inner_b\n"
    ".type gt_fix_inner_b, STT_FUNC\n"
    "gt_fix_inner_b:\n"
    "  nop\n  nop\n"
    ".size gt_fix_inner_b, 2\n"
    "  nop\n  ret\n"
    ".size gt_fix_outer, .-gt_fix_outer\n");

// One function under three local names, as glibc's full symbol table has
// clone3, __clone3 and __GI___clone3 (the name with the fewest leading
// underscores names it), and one under a versioned name as a full table
// keeps it (pthread_mutex_lock@@GLIBC_2.2.5: named without the version).
// Their addresses are exported as data: dlsym finds no local symbol.
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".type gt_fix_aliased, STT_FUNC\n"
    ".type __gt_fix_aliased, STT_FUNC\n"
    ".type __GI___gt_fix_aliased, STT_FUNC\n"
    "gt_fix_aliased:\n"
    "__gt_fix_aliased:\n"
    "__GI___gt_fix_aliased:\n"
    "  nop\n  nop\n  ret\n"
    ".size gt_fix_aliased, 3\n"
    ".size __gt_fix_aliased, 3\n"
    ".size __GI___gt_fix_aliased, 3\n"
    ".p2align 4\n"
    ".type gt_fix_versioned_impl, STT_FUNC\n"
    ".type \"gt_fix_versioned@@GT_2\", STT_FUNC\n"
    "gt_fix_versioned_impl:\n"
    "\"gt_fix_versioned@@GT_2\":\n"
    "  nop\n  ret\n"
    ".size gt_fix_versioned_impl, 2\n"
    ".size \"gt_fix_versioned@@GT_2\", 2\n");

extern "C" {
void gt_fix_aliased_fn() __asm__("gt_fix_aliased");
void gt_fix_versioned_fn() __asm__("gt_fix_versioned_impl");
__attribute__((visibility("default"))) void* gt_fix_aliased_addr =
    reinterpret_cast<void*>(&gt_fix_aliased_fn);
__attribute__((visibility("default"))) void* gt_fix_versioned_addr =
    reinterpret_cast<void*>(&gt_fix_versioned_fn);
}  // extern "C"
