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

namespace control {
// A per-thread credential change the program made, to be made in the
// control thread too: capset(2) (capabilities are a thread's own) or a
// prctl(2) of keepcaps, securebits, the bounding or the ambient set.
// glibc changes a process's uids and gids in every thread it knows of
// (SIGSETXID) and aborts the process when the threads' results differ:
// `setpriv --reuid=U --regid=G` (keepcaps, setresuid, capset, setresgid)
// died of SIGABRT with the control thread beside it. Waits (at most 2 s)
// until the control thread has made the change. Called after the
// program's own call succeeded; a no-op without a control thread.
void MirrorCapset(const void* header, const void* data);
void MirrorPrctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
                 unsigned long a5);
// Whether a prctl option changes a thread's credentials (MirrorPrctl).
bool IsCredPrctl(int option);
}  // namespace control

}  // namespace gotrace
