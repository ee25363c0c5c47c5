// SPDX-License-Identifier: Apache-2.0
//===-- preload/control.h - start/stop trace windows while a program runs -===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace {

// Opens the control channel (GOTRACE_START=paused or GOTRACE_CTL=1): a unix
// socket <dir>/<pid>.sock (preload/control_path.h) served by a thread of
// ours. False, after one line on stderr saying why, if it cannot be opened.
bool ControlStart();
namespace control {
// The user's private directory ($XDG_RUNTIME_DIR/gotrace, else
// /tmp/gotrace-<uid>: control_path.h), made 0700 if missing, its path in
// dir: an open descriptor of it (close-on-exec), or -1 with *why set when
// it cannot be made or is not a directory of this user's alone. Without
// `xdg`, always /tmp/gotrace-<uid> (a process that changed its user keeps
// the other user's $XDG_RUNTIME_DIR).
long OpenPrivateDir(char* dir, size_t cap, const char** why, bool xdg = true);
}  // namespace control
// The process is ending: no more requests (the socket file is removed).
void ControlStop();
// In a fork child: the channel is the parent's; let go of it.
void ControlAfterFork();
// The control thread's tid (0: none): never traced, never a stand-in.
uint32_t ControlTid();

}  // namespace gotrace
