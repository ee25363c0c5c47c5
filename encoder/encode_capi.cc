// SPDX-License-Identifier: Apache-2.0
//===-- encoder/encode_capi.cc - libgotrace_encode.so's entry point -------===//
//
// Loaded by the preloaded library at exit (encoder/encode_api.h). Runs inside
// the traced process, after its atexit handlers, so it must not throw, must
// not touch the network (offline symbolization) and reports errors in the
// result instead of printing them.
//
// GOTRACE_SYMBOLS picks how much of the debug info is read: `fast` (the
// default) names the frames of system libraries whose DWARF is in a separate
// debug file (libc6-dbg, ...) from their symbol table only, without file and
// line, because decompressing that DWARF would cost a short program more than
// the rest of tracing; `full` reads all DWARF, as `gotrace encode` does.
// Anything else is the default.
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "encoder/encode.h"
#include "encoder/encode_api.h"
#include "encoder/run_finish.h"
#include "symbolizer/dw_symbolizer.h"

namespace {

// GOTRACE_SYMBOLS: whether to read the DWARF of system libraries.
bool SystemDwarf() {
  const char* v = std::getenv("GOTRACE_SYMBOLS");
  return v != nullptr && std::strcmp(v, "full") == 0;
}

void Copy(char* dst, size_t cap, const std::string& s) {
  const size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int gotrace_encode_v1(
    const GotraceEncodeRequest* req, GotraceEncodeResult* res) {
  std::memset(res, 0, sizeof *res);
  if (req == nullptr || req->version != kGotraceEncodeApiVersion) {
    Copy(res->error, sizeof res->error, "libgotrace_encode.so does not match libgotrace.so");
    return 1;
  }
  gotrace::EncodeOptions opts;
  opts.model.block_threshold_ns = req->block_threshold_ns;
  opts.output_mode = gotrace::OutputMode::kUnique;
  opts.file_mode = 0600;
  opts.strict = req->lenient == 0;
  gotrace::DwOptions sym;
  sym.offline = req->offline != 0;
  sym.system_dwarf = SystemDwarf();
  opts.symbolizer = gotrace::DefaultSymbolizerFactory(sym);
  gotrace::EncodeStats stats;
  const std::string log = req->log_path;
  const gotrace::Status st =
      gotrace::Encode(std::span<const std::string>(&log, 1), req->out_path, opts, &stats);
  if (!st.ok()) {
    Copy(res->error, sizeof res->error, st.message());
    return 1;
  }
  Copy(res->path, sizeof res->path, stats.output_path);
  res->threads = stats.model.threads;
  res->events = stats.events;
  res->bytes = stats.bytes;
  res->dropped_records = stats.model.dropped_records;
  Copy(res->kernel_loss, sizeof res->kernel_loss, gotrace::KernelLossLine(stats.model));
  return 0;
}

extern "C" __attribute__((visibility("default"))) int gotrace_finish_run_v1(
    const GotraceFinishRequest* req) {
  if (req == nullptr || req->version != kGotraceFinishApiVersion) {
    std::fprintf(stderr, "gotrace: libgotrace_encode.so does not match the launcher\n");
    return 0;
  }
  return gotrace::FinishRun(*req);
}

extern "C" __attribute__((visibility("default"))) void gotrace_finish_ahead_v1(
    const GotraceFinishRequest* req, const int* stop, int wake_fd) {
  if (req == nullptr || req->version != kGotraceFinishApiVersion || stop == nullptr) return;
  gotrace::FinishAhead(*req, stop, wake_fd);
}
