// SPDX-License-Identifier: Apache-2.0
//===-- encoder/tracewrap_main.cc - the `tracewrap` launcher binary -------===//
//
// Small on purpose: no libdw, no encoder linked in (libstdc++ static), so it
// starts in well under a millisecond. The encoder is loaded (dlopen) from
// beside the preloaded library once the program has started, on a thread
// that encodes ahead (ResolveAhead).
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "encoder/run.h"

namespace {

std::string EncoderPath(const char* lib) {
  const std::string l = lib;
  return l.substr(0, l.rfind('/') + 1) + "libgotrace_encode.so";
}

// The encoder is loaded while the program runs, on the launcher's encode
// ahead thread (libdw, libelf and their compression libraries: a few
// milliseconds of loading that a run's end used to wait for), which then
// encodes the logs of the processes that end (encoder/run.h). The program
// has started when this runs (a fork of a process with two threads stays
// clear of it). FinishWithEncoder may run before it has loaded it (the
// program ended first): it loads it itself then (dlopen of a loaded
// library, or of one being loaded, is that library).
std::atomic<void*> g_encoder{nullptr};

gotrace::AheadFn ResolveAhead(const char* lib) {
  void* h = dlopen(EncoderPath(lib).c_str(), RTLD_NOW | RTLD_LOCAL);
  g_encoder.store(h);
  if (h == nullptr) return nullptr;
  return reinterpret_cast<gotrace::AheadFn>(dlsym(h, "gotrace_finish_ahead_v1"));
}

int FinishWithEncoder(const GotraceFinishRequest& req, const char* lib) {
  const std::string enc = EncoderPath(lib);
  void* h = g_encoder.load();
  if (h == nullptr) h = dlopen(enc.c_str(), RTLD_NOW | RTLD_LOCAL);
  using Fn = int (*)(const GotraceFinishRequest*);
  Fn fn = h != nullptr ? reinterpret_cast<Fn>(dlsym(h, "gotrace_finish_run_v1")) : nullptr;
  if (fn == nullptr) {
    const char* err = dlerror();
    std::fprintf(stderr,
                 "%s: cannot load %s (%s): the run's event logs are kept in %s (gotrace encode LOG -o TRACE)\n",
                 req.prog_name, enc.c_str(), err != nullptr ? err : "no gotrace_finish_run_v1", req.outdir);
    return 0;
  }
  return fn(&req);
}

}  // namespace

int main(int argc, char** argv) {
  return gotrace::RunMain(argc, argv, "tracewrap", FinishWithEncoder, ResolveAhead);
}
