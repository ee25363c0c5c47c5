// SPDX-License-Identifier: Apache-2.0
//===-- encoder/run_finish.h - a whole run's logs become its traces -------===//
//
// Issue 18: under the launcher (tracewrap, `gotrace run`) a traced process
// only ends its event log (GOTRACE_DEFER); once the program has ended, this
// turns every log of the run into a trace at once:
//   - the logs are the run's files OUTDIR/PREFIX*.gtlog newer than the
//     launcher's stamp; each is claimed (renamed) first, so that a process
//     that outlived the run and writes its own trace never races with us;
//   - a log with an end record is encoded; one without, held open by a live
//     process, belongs to a process still running (it encodes its own once
//     the marker is gone); one without, held by nobody, is a killed
//     process's: recovered (encode --lenient);
//   - a quiet descendant (LogSummary::quiet) gets no trace file;
//   - the encodes run on every CPU, with one symbolizer cache shared by all
//     (a build's compiler is indexed once, not once per compile);
//   - the run's index (OUT.index.json) lists every process, and a short
//     table is printed.
//===----------------------------------------------------------------------===//
#pragma once

#include "encoder/encode_api.h"

namespace gotrace {

// Returns the number of traces written.
int FinishRun(const GotraceFinishRequest& req);

// gotrace_finish_ahead_v1 (encoder/encode_api.h).
void FinishAhead(const GotraceFinishRequest& req, const int* stop, int wake_fd);

}  // namespace gotrace
