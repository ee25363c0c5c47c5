// SPDX-License-Identifier: Apache-2.0
//===-- encoder/encode_api.h - libgotrace.so -> libgotrace_encode.so ------===//
//
// The preloaded library stays small (hooks and recording, libc only); the
// encoder, libdw and libstdc++ are loaded only at exit, with dlopen, from
// libgotrace_encode.so next to it. This is the C interface between the two.
//===----------------------------------------------------------------------===//
#pragma once

#include <stdint.h>

extern "C" {

enum { kGotraceEncodeApiVersion = 3 };

struct GotraceEncodeRequest {
  uint32_t version;  // kGotraceEncodeApiVersion
  const char* log_path;
  const char* out_path;         // never overwritten: ".1", ".2"... on conflict
  uint64_t block_threshold_ns;
  int offline;                  // no network lookups for debug info
  int lenient;                  // the log has known gaps (writes failed): encode what is there
};

struct GotraceEncodeResult {
  char path[4096];  // the trace written
  char error[1024];
  uint64_t threads;
  uint64_t events;
  uint64_t bytes;
  uint64_t dropped_records;
  char kernel_loss[512];  // KernelLossLine (encode.h): "" or a line for the user
};

// Returns 0 on success.
__attribute__((visibility("default"))) int gotrace_encode_v1(const GotraceEncodeRequest* req,
                                                             GotraceEncodeResult* res);

// --- The launcher (tracewrap, gotrace run) -> libgotrace_encode.so -----------
// After the program ended: every log of the run becomes its trace (killed
// processes' too), encoded on every CPU with one symbol cache, quiet
// processes get none, and the run's index is written (encoder/run_finish.h).
enum { kGotraceFinishApiVersion = 2 };

struct GotraceFinishRequest {
  uint32_t version;            // kGotraceFinishApiVersion
  const char* outdir;          // the directory of the run's files (absolute)
  const char* prefix;          // the run's file names start with this
  const char* stamp_path;      // files older than this are not the run's
  const char* alive_path;      // the deferral marker (GOTRACE_DEFER); removed here
  const char* index_path;      // the run's index (NULL: none); beside a renamed root trace if taken
  const char* const* argv;     // the command run (NULL-terminated), for the index
  int root_pid;                // the program the launcher started
  int root_status;             // its wait(2) status
  uint64_t start_ns;           // CLOCK_MONOTONIC when it was started
  uint64_t end_ns;             // and when it ended
  uint64_t block_threshold_ns;
  int quiet;                   // only errors
  int follow;                  // child processes were traced
  int keep_logs;               // GOTRACE_KEEP_LOG
  const char* prog_name;       // "tracewrap": the prefix of the launcher's own lines
  int relative_paths;          // the user named the output relative to the working directory
  const char* log_dir;         // where the logs are (GOTRACE_LOG_DIR), NULL: next to the traces
  int control;                 // the run's processes may open control channels (windows)
};

// Prints its own lines. Returns the number of traces written.
__attribute__((visibility("default"))) int gotrace_finish_run_v1(const GotraceFinishRequest* req);

// While the program runs (issue 18: a long job's logs all waited for its
// end, in memory): once the logs of processes of the run that have ended
// (complete and closed) add up to GOTRACE_ENCODE_AHEAD MiB (default 64),
// encodes and removes them, on the calling thread, until *stop is nonzero
// (read atomically; `wake_fd`, an eventfd or -1, becomes readable when it
// is set). What it did is the next
// gotrace_finish_run_v1's, in the same process: same traces, same index.
// `req` as for gotrace_finish_run_v1, without root_status and end_ns; it
// must stay valid until this returns.
__attribute__((visibility("default"))) void gotrace_finish_ahead_v1(const GotraceFinishRequest* req,
                                                                   const int* stop, int wake_fd);
}
