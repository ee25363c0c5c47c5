// SPDX-License-Identifier: Apache-2.0
//===-- encoder/run.h - the launcher: tracewrap and `gotrace run` ---------===//
//
// Runs a program with libgotrace.so preloaded (issue 18: the work the shell
// script did, in a compiled binary that starts in a fraction of a
// millisecond). Every option, check, message, signal and exit-status rule of
// the former scripts/tracewrap holds:
//   - options become GOTRACE_* variables, checked before the program runs
//     (one error line, a hint, exit 2);
//   - the program is found like a shell finds it (127 not found, 126 not
//     executable); static, setuid, setgid and capability-carrying programs
//     are refused (the loader would ignore LD_PRELOAD: H28, H29);
//   - --exec replaces the launcher by the program; otherwise the program
//     runs as its child: INT and QUIT reach it from the terminal, TERM HUP
//     USR1 USR2 ALRM sent to the launcher are passed on, and the launcher
//     exits as the program did (dying of the same signal, without a core);
//   - supervised processes only end their event logs (GOTRACE_DEFER names a
//     marker file that exists while the launcher will read them); once the
//     program has ended, a `finish` function encodes the run's logs (all
//     CPUs, one symbol cache), recovers killed processes' logs, leaves quiet
//     processes without a trace file and writes the run's index.
//===----------------------------------------------------------------------===//
#pragma once

#include "encoder/encode_api.h"

namespace gotrace {

// Encodes a run's logs (gotrace_finish_run_v1, or FinishRun linked in).
// `lib` is the libgotrace.so the run preloaded (its encoder is next to it).
using FinishFn = int (*)(const GotraceFinishRequest& req, const char* lib);

// The encode ahead (gotrace_finish_ahead_v1, or FinishAhead linked in).
using AheadFn = void (*)(const GotraceFinishRequest* req, const int* stop, int wake_fd);

// Called once the program has started, on a thread of the launcher's own
// that then encodes the logs of the run's ended processes once they add up
// to a backlog (on idle CPUs: the program comes first), until the program
// has ended: finds the encode ahead (tracewrap loads its encoder here, off
// the run's end). May be null, or return null: no encode ahead.
using ResolveAheadFn = AheadFn (*)(const char* lib);

// argv[0] is the launcher's name; returns the exit status (or dies of the
// program's signal).
int RunMain(int argc, char** argv, const char* prog_name, FinishFn finish,
            ResolveAheadFn resolve_ahead = nullptr);

}  // namespace gotrace
