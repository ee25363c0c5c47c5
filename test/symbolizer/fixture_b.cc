// SPDX-License-Identifier: Apache-2.0
//===-- test/symbolizer/fixture_b.cc - a second, different library --------===//
//
// For the epoch tests: another library whose code is reported at addresses
// that fixture_a occupied in an earlier epoch.
//===----------------------------------------------------------------------===//
#include <cstdint>

#include "test/symbolizer/fixture.h"

extern "C" {

__attribute__((visibility("default"))) GtFixResult gt_fixb_result;

__attribute__((noinline, noipa)) static void Record(int line) {
  gt_fixb_result.pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  gt_fixb_result.lines[0] = line;
}

__attribute__((noinline, noipa, visibility("default"))) int gt_fixb_func(int x) {
  Record(__LINE__);
  return x * 7 + 1;
}

__attribute__((noinline, noipa, visibility("default"))) int gt_fixb_run(int x) {
  return gt_fixb_func(x) + 2;
}

}  // extern "C"
