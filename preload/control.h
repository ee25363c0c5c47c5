// SPDX-License-Identifier: Apache-2.0
//===-- preload/control.h - start/stop trace windows while a program runs -===//
#pragma once

#include <cstdint>

namespace gotrace {

// Opens the control channel (GOTRACE_START=paused or GOTRACE_CTL=1): a unix
// socket <dir>/<pid>.sock (preload/control_path.h) served by a thread of
// ours. False, after one line on stderr saying why, if it cannot be opened.
bool ControlStart();
// The process is ending: no more requests (the socket file is removed).
void ControlStop();
// In a fork child: the channel is the parent's; let go of it.
void ControlAfterFork();
// The control thread's tid (0: none): never traced, never a stand-in.
uint32_t ControlTid();

}  // namespace gotrace
