// SPDX-License-Identifier: Apache-2.0
//===-- encoder/switch_value.h - what a GOTRACE_* switch variable says -----===//
//
// One vocabulary for the switches the library reads (GOTRACE_DISABLE,
// GOTRACE_QUIET, ...) and the ones the launcher reads
// (GOTRACE_EVERY_PROCESS): 1 or 0, or yes/no, true/false, on/off in any
// case. No libc: the preloaded library reads it in its constructor.
//===----------------------------------------------------------------------===//
#pragma once

namespace gotrace {

// 1 or 0 for a switch's value; -1 for anything else (the caller says so in
// one line and keeps the default).
inline int SwitchValue(const char* v) {
  auto is = [v](const char* word) {
    const char* p = v;
    for (; *word != '\0'; ++p, ++word) {
      const char c = *p >= 'A' && *p <= 'Z' ? static_cast<char>(*p - 'A' + 'a') : *p;
      if (c != *word) return false;
    }
    return *p == '\0';
  };
  if (is("1") || is("yes") || is("true") || is("on")) return 1;
  if (is("0") || is("no") || is("false") || is("off")) return 0;
  return -1;
}

}  // namespace gotrace
