// SPDX-License-Identifier: Apache-2.0
//===-- encoder/tracewrap_main.cc - the `tracewrap` launcher binary -------===//
//
// Small on purpose: no libdw, no encoder linked in (libstdc++ static), so it
// starts in well under a millisecond. The encoder is loaded (dlopen) from
// beside the preloaded library only once the program has ended.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "encoder/run.h"

namespace {

int FinishWithEncoder(const GotraceFinishRequest& req, const char* lib) {
  std::string enc = lib;
  enc = enc.substr(0, enc.rfind('/') + 1) + "libgotrace_encode.so";
  void* h = dlopen(enc.c_str(), RTLD_NOW | RTLD_LOCAL);
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

int main(int argc, char** argv) { return gotrace::RunMain(argc, argv, "tracewrap", FinishWithEncoder); }
