// SPDX-License-Identifier: Apache-2.0
//===-- test/symbolizer/fixture.h - what the fixture libraries export -----===//
//
// The fixtures are loaded with dlopen; the test finds these by dlsym.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

extern "C" {

// What the last call into a fixture captured.
struct GtFixResult {
  uintptr_t pc;  // a return address: pc - 1 is in the call instruction
  int lines[3];  // innermost first: the lines of the calls on the way to it
};

// fixture_a: the captured pc is in Inner, inlined into Middle, inlined into
// gt_fixture::Outer(int). lines = {Inner's call of Capture, Middle's call
// of Inner, Outer's call of Middle}.
using GtFixRunFn = int (*)(int);
// gt_fix_plain: the captured pc is in gt_fix_plain itself; lines[0] is the
// call. gt_fix_hidden: in gt_fixture::Hidden(int), of hidden visibility.

}  // extern "C"
