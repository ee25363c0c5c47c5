// SPDX-License-Identifier: Apache-2.0
//===-- preload/control_path.h - where a process's control socket lives ---===//
//
// Issue 16. Shared by the traced process (preload/control.cc) and the client
// (`gotrace ctl`, encoder/ctl_client.cc), so both name the same file: a
// directory private to the user, $XDG_RUNTIME_DIR/gotrace when the session
// has one (systemd makes it 0700 and the user's), else /tmp/gotrace-<uid>;
// in it, <pid>.sock. Plain character work: callable from the constructor.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace::control {

// Writes the directory for `uid` into out (NUL-terminated); `xdg` is
// $XDG_RUNTIME_DIR or nullptr (ignored unless an absolute path). False if
// it does not fit.
inline bool DirFor(const char* xdg, uint32_t uid, char* out, size_t cap) {
  size_t n = 0;
  auto put = [&](const char* s) {
    for (; *s != '\0'; ++s) {
      if (n + 1 >= cap) return false;
      out[n++] = *s;
    }
    return true;
  };
  bool ok;
  if (xdg != nullptr && xdg[0] == '/') {
    ok = put(xdg) && put("/gotrace");
  } else {
    char digits[12];
    size_t k = 0;
    do {
      digits[k++] = static_cast<char>('0' + uid % 10);
      uid /= 10;
    } while (uid != 0);
    char rev[12];
    for (size_t i = 0; i < k; ++i) rev[i] = digits[k - 1 - i];
    rev[k] = '\0';
    ok = put("/tmp/gotrace-") && put(rev);
  }
  out[ok ? n : 0] = '\0';
  return ok && n < 80;  // room for "/<pid>.sock" in a sockaddr_un (108 bytes)
}

// The pid that a socket's file name, <pid>.sock, names; 0 if the name is
// not one.
inline uint64_t SocketPid(const char* name) {
  uint64_t pid = 0;
  size_t i = 0;
  for (; name[i] >= '0' && name[i] <= '9' && i < 10; ++i)
    pid = pid * 10 + static_cast<uint64_t>(name[i] - '0');
  const char kSuffix[] = ".sock";
  for (size_t k = 0; k < sizeof kSuffix; ++k)
    if (name[i + k] != kSuffix[k]) return 0;
  return i == 0 ? 0 : pid;
}

}  // namespace gotrace::control
