// SPDX-License-Identifier: Apache-2.0
//===-- preload/learn.h - programs learned quiet in a launcher's run ------===//
//
// Issue 18: every process of a CI job paying to load the tracer (an empty
// preloaded library alone costs a shell job 4 to 9% here) is more than a
// job of short commands can afford. Under tracewrap, a command (program,
// arguments and working directory) whose runs ended quiet twice (one
// thread, nothing worth a trace, no child, no exec) is not traced again in
// the same run, nor is a program three of whose different commands ended
// quiet and small (each process used less than log::kLearnSmallCpuNs of
// CPU time: a loop's `sed "s/x/$i/"`): whoever execs it leaves our library
// out of its LD_PRELOAD and writes its entry in the run's journal for it
// (encoder/quiet_journal.h has the table and the entries), and its pid's
// record in the table, so that whoever reaps it takes the lesson back if
// that run used log::kBusyCpuNs of CPU time (ReapedBusy).
// Raw system calls and stack memory only: these run in vfork children and
// before exec.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

#include "encoder/quiet_journal.h"

namespace gotrace::learn {

// Whether the command of `key` (log::LearnKey) or its program (`program`,
// log::ProgramKey; 0: not asked) was learned quiet in this run: the table
// says so. False without a table.
// `keep` (may be null): when the answer is yes, the table's descriptor
// (read-write, close-on-exec) is left open there, for NotePid.
bool Quiet(const char* table, uint64_t key, uint64_t program, int* keep = nullptr);

// Notes how a run of the command of `key` (of the program `program`, 0:
// unknown) ended: kLearnQuietOnce for a quiet end (promoted to kLearnQuiet
// at the second), kLearnTrace for a traced one (which sticks, for its
// program too). `small`: a quiet end whose process used less than
// log::kLearnSmallCpuNs of CPU time; its command's first such end counts
// towards its program's learning, a quiet end that was not small makes the
// program traced for good.
void Note(const char* table, uint64_t key, uint64_t program, log::LearnState state, bool small);

// Process `pid` runs the command `who` untraced (who.pid is ignored).
// `fd`: the table's descriptor, read-write, if one is open (else -1).
void NotePid(const char* table, int pid, const log::LearnPid& who, int fd = -1);

// A child reaped after it used log::kBusyCpuNs of CPU time: if it ran a
// learned command untraced, that command and its program are traced again.
void ReapedBusy(const char* table, int pid);

}  // namespace gotrace::learn
