// SPDX-License-Identifier: Apache-2.0
//===-- encoder/printable.h - text from a traced program, for a terminal --===//
//
// Command lines and names come from the traced program: a `python3 -c`
// script has newlines, an argument may hold an escape sequence. A line of a
// table or a report shows them as C escapes (\n, \t, \x1b), one line each.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace gotrace {

inline std::string Printable(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      s += ch;
    } else if (c == '\n') {
      s += "\\n";
    } else if (c == '\t') {
      s += "\\t";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      s += "\\x";
      s += kHex[c >> 4];
      s += kHex[c & 15];
    }
  }
  return s;
}

}  // namespace gotrace
