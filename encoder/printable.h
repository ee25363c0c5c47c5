// SPDX-License-Identifier: Apache-2.0
//===-- encoder/printable.h - text from a traced program, for people and JSON ===//
//
// Command lines and names come from the traced program: a `python3 -c`
// script has newlines, an argument may hold an escape sequence or bytes
// that are not UTF-8 (a file name in Latin-1). A line of a table or a report
// shows control characters as C escapes (\n, \t, \x1b), one line each;
// JSON (the run's index, gotrace report's --json and HTML) must be valid
// UTF-8: a byte that does not belong to a valid UTF-8 sequence is written
// as \udcXX, the lone surrogate Python's "surrogateescape" gives it
// (PEP 383), so that json.load and os.fsencode get the bytes back, and
// gotrace's own reader (encoder/report/run_index.cc) too.
//===----------------------------------------------------------------------===//
#pragma once

#include <cinttypes>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "encoder/shell_word.h"

namespace gotrace {

// A count with its thousands grouped (92,426), as the library's lines
// write it.
inline std::string Grouped(uint64_t v) {
  std::string d = std::to_string(v), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

// "1 thread", "2 threads", "1,024 events": a count and its noun (the
// plural is the noun with an s).
inline std::string Counted(uint64_t v, std::string_view noun) {
  std::string out = Grouped(v);
  out += ' ';
  out += noun;
  if (v != 1) out += 's';
  return out;
}

// A size for people: B, KB, MB, GB.
inline std::string HumanBytes(uint64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (b < 10 * 1024)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  else if (b < 10 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f KB", v / 1024);
  else if (b < 10ull * 1024 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.1f MB", v / 1048576);
  else
    std::snprintf(buf, sizeof buf, "%.1f GB", v / 1073741824);
  return buf;
}

// A duration for people: ns, us, ms, s.
inline std::string HumanDuration(int64_t ns) {
  char buf[32];
  const double v = static_cast<double>(ns);
  if (ns < 1000)
    std::snprintf(buf, sizeof buf, "%" PRId64 " ns", ns);
  else if (ns < 1000000)
    std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  else if (ns < 1000000000)
    std::snprintf(buf, sizeof buf, "%.1f ms", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.3f s", v / 1e9);
  return buf;
}

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

// A command line as a shell would take it back: each argument one word
// (quoted if it must be: `--save ''`, `-c 'import os'`).
inline std::string CommandLine(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    ShellWord(a, [&s](std::string_view piece) { s += piece; });
  }
  return s;
}

// A command line in at most `width` characters (the launcher's table):
// as CommandLine when it fits; else the program by its base name and each
// argument that is a path of more than 16 characters by `.../` and its
// last component, then cut with "...". Problem: the table cut a CI job's
// `node /work/proj/node_modules/.bin/jest --ci` and a build's
// `/usr/lib/gcc/x86_64-linux-gnu/12/cc1 -quiet ...` before the name that
// tells them apart.
inline std::string CompactCommandLine(const std::vector<std::string>& argv, size_t width) {
  std::string s = CommandLine(argv);
  if (s.size() <= width) return s;
  std::vector<std::string> words;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const size_t slash = a.find_last_of('/');
    if (slash == std::string::npos || slash + 1 == a.size() || (i > 0 && a.size() <= 16) ||
        a.find_first_of(" \t=") != std::string::npos) {
      words.push_back(a);
    } else {
      words.push_back((i == 0 ? "" : ".../") + a.substr(slash + 1));
    }
  }
  s = CommandLine(words);
  if (s.size() > width) s = s.substr(0, width >= 3 ? width - 3 : 0) + "...";
  return s;
}

// The length of the valid UTF-8 sequence that starts at s[i] (2 to 4: the
// shortest form of a code point up to U+10FFFF that is not a surrogate), or
// 0. (ASCII is the caller's.)
inline size_t Utf8Sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  const size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(k) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0)))
    return 0;  // overlong; surrogates
  if (n == 4 && ((c == 0xf0 && b(1) < 0x90) || (c == 0xf4 && b(1) >= 0x90)))
    return 0;  // overlong; > U+10FFFF
  return n;
}

// `text` as a JSON string, quotes included. `for_script`: also <, > and &
// as \u escapes (a string inside an HTML page's script never closes it).
inline std::string JsonString(std::string_view text, bool for_script = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string o = "\"";
  o.reserve(text.size() + 2);
  auto unicode = [&](unsigned v) {
    o += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) o += kHex[(v >> shift) & 15];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t n = Utf8Sequence(text, i);
      if (n == 0) {
        unicode(0xdc00 | c);
      } else {
        o.append(text.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\r':
        o += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f || (for_script && (c == '<' || c == '>' || c == '&')))
          unicode(c);
        else
          o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

}  // namespace gotrace
