// SPDX-License-Identifier: Apache-2.0
//===-- encoder/tracewrap_main.cc - the `tracewrap` launcher binary -------===//
//
// Small on purpose: no libdw, no encoder linked in (libstdc++ static), so it
// starts in well under a millisecond. The encoder is loaded (dlopen) from
// beside the preloaded library only once the program has ended.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include <pthread.h>

#include <cstdio>
#include <string>

#include "encoder/run.h"

namespace {

std::string EncoderPath(const char* lib) {
  const std::string l = lib;
  return l.substr(0, l.rfind('/') + 1) + "libgotrace_encode.so";
}

// The encoder is loaded while the program runs, on a thread of its own
// (libdw, libelf and their compression libraries: a few milliseconds of
// loading that a run's end used to wait for). The program has started
// when this runs (a fork of a process with two threads stays clear of it).
pthread_t g_loader;
bool g_loading = false;
std::string g_encoder_path;
void* g_encoder = nullptr;

void* LoadEncoder(void*) {
  g_encoder = dlopen(g_encoder_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  return nullptr;
}

void PrepareEncoder(const char* lib) {
  g_encoder_path = EncoderPath(lib);
  // (No thread: it is loaded at the end, as before.)
  g_loading = pthread_create(&g_loader, nullptr, LoadEncoder, nullptr) == 0;
}

int FinishWithEncoder(const GotraceFinishRequest& req, const char* lib) {
  const std::string enc = EncoderPath(lib);
  if (g_loading) pthread_join(g_loader, nullptr);
  void* h = g_encoder != nullptr ? g_encoder : dlopen(enc.c_str(), RTLD_NOW | RTLD_LOCAL);
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
  return gotrace::RunMain(argc, argv, "tracewrap", FinishWithEncoder, PrepareEncoder);
}
