// SPDX-License-Identifier: Apache-2.0
//===-- preload/learn.h - programs learned quiet in a launcher's run ------===//
//
// Issue 18: every process of a CI job paying to load the tracer (an empty
// preloaded library alone costs a shell job 4 to 9% here) is more than a
// job of short commands can afford. Under tracewrap, a command (program,
// arguments and working directory) whose runs ended quiet twice (one
// thread, nothing worth a trace, no child, no exec) is not traced again in
// the same run: whoever execs it leaves our library
// out of its LD_PRELOAD and writes its entry in the run's journal for it
// (encoder/quiet_journal.h has the table and the entries). Raw system calls
// and stack memory only: these run in vfork children and before exec.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

#include "encoder/quiet_journal.h"

namespace gotrace::learn {

// Whether the command of `key` (log::LearnKey) was learned quiet in this
// run: the table says so. False without a table.
bool Quiet(const char* table, uint64_t key);

// Notes how a run of the command of `key` ended: kLearnQuietOnce for a
// quiet end (promoted to kLearnQuiet at the second),
// kLearnTrace for a traced one (which sticks).
void Note(const char* table, uint64_t key, log::LearnState state);

}  // namespace gotrace::learn
