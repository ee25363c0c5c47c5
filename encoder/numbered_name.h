// SPDX-License-Identifier: Apache-2.0
//===-- encoder/numbered_name.h - the name a taken output name gives way to -===//
//
// "dir/name.ext" -> "dir/name.N.ext": the extension is kept last, so that
// tools that look at it still recognise the file. The encoder names a trace
// so when its name is taken (encode.cc); tracewrap names a whole run so
// when its program's trace or index is (run.cc).
#pragma once

#include <string>

namespace gotrace {

inline std::string WithSuffix(const std::string& path, unsigned n) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const std::string num = "." + std::to_string(n);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + num;
  }
  return path.substr(0, dot) + num + path.substr(dot);
}

}  // namespace gotrace
