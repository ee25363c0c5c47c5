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

enum { kGotraceEncodeApiVersion = 2 };

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
};

// Returns 0 on success.
__attribute__((visibility("default"))) int gotrace_encode_v1(const GotraceEncodeRequest* req,
                                                             GotraceEncodeResult* res);
}
