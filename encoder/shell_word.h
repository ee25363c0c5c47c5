// SPDX-License-Identifier: Apache-2.0
//===-- encoder/shell_word.h - a path as one word of a shell command ------===//
//
// The "view with: go tool trace PATH" hint is meant to be pasted into a
// shell: a path with a space or a quote in it must come out as one word.
// Header-only, no allocation and nothing that throws (no substr: its
// out_of_range would link the C++ exception machinery, and stdio with it,
// into libgotrace.so, which prints the hint too, through `put`, one piece
// at a time).
//===----------------------------------------------------------------------===//
#pragma once

#include <string_view>

namespace gotrace {

// Calls put(std::string_view) with `word` as the shell reads it back: as it
// is when every byte is harmless, else in single quotes (each ' as '\'').
template <typename Put>
void ShellWord(std::string_view word, Put put) {
  bool plain = !word.empty();
  for (const char c : word) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
                    c == ':' || c == '@' || c == '%' || c == '=';
    plain = plain && ok;
  }
  if (plain) {
    put(word);
    return;
  }
  put("'");
  size_t from = 0;
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '\'') continue;
    put(std::string_view(word.data() + from, i - from));
    put("'\\''");
    from = i + 1;
  }
  put(std::string_view(word.data() + from, word.size() - from));
  put("'");
}

}  // namespace gotrace
