// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/rust_demangle.cc - Rust's legacy symbol names -----------===//
#include "symbolizer/rust_demangle.h"

#include <cctype>

namespace gotrace {
namespace {

bool IsHash(std::string_view s) {  // "h" and 16 lowercase hex digits
  if (s.size() != 17 || s[0] != 'h') return false;
  for (char c : s.substr(1))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The character an escape ("LT", "u20", ...) stands for, or 0.
char Unescape(std::string_view code) {
  if (code == "SP") return '@';
  if (code == "BP") return '*';
  if (code == "RF") return '&';
  if (code == "LT") return '<';
  if (code == "GT") return '>';
  if (code == "LP") return '(';
  if (code == "RP") return ')';
  if (code == "C") return ',';
  if (code.size() >= 2 && code.size() <= 3 && code[0] == 'u') {
    unsigned v = 0;
    for (char c : code.substr(1)) {
      if (!std::isxdigit(static_cast<unsigned char>(c))) return 0;
      v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c))
                                             ? c - '0'
                                             : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    }
    if (v >= 0x20 && v < 0x7f) return static_cast<char>(v);
  }
  return 0;
}

// One path component, unescaped, appended to out. False on an unknown escape.
bool AppendComponent(std::string_view c, std::string* out) {
  if (c.size() > 1 && c[0] == '_' && c[1] == '$') c.remove_prefix(1);
  for (size_t i = 0; i < c.size();) {
    if (c[i] == '$') {
      const size_t end = c.find('$', i + 1);
      if (end == std::string_view::npos) return false;
      const char ch = Unescape(c.substr(i + 1, end - i - 1));
      if (ch == 0) return false;
      out->push_back(ch);
      i = end + 1;
    } else if (c.compare(i, 2, "..") == 0) {
      out->append("::");
      i += 2;
    } else {
      out->push_back(c[i]);
      ++i;
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> RustLegacyName(std::string_view mangled, std::string_view demangled) {
  // _ZN ... 17h<16 hex>E
  if (mangled.size() < 3 + 19 + 1 || mangled.substr(0, 3) != "_ZN" || mangled.back() != 'E')
    return std::nullopt;
  const std::string_view tail = mangled.substr(mangled.size() - 20, 19);
  if (tail.substr(0, 3) != "17h" || !IsHash(tail.substr(2))) return std::nullopt;
  const size_t last = demangled.rfind("::");
  if (last == std::string_view::npos || !IsHash(demangled.substr(last + 2))) return std::nullopt;
  demangled = demangled.substr(0, last);

  std::string out;
  out.reserve(demangled.size());
  size_t begin = 0;
  for (;;) {
    const size_t sep = demangled.find("::", begin);
    if (!AppendComponent(demangled.substr(begin, sep - begin), &out)) return std::nullopt;
    if (sep == std::string_view::npos) break;
    out.append("::");
    begin = sep + 2;
  }
  return out;
}

}  // namespace gotrace
