// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_lifecycle.cc - process start, dynamic loading -------===//
//
// __libc_start_main tells us main()'s address (the main thread's start
// routine in the trace) and is where the main thread registers. dlclose
// rescans the module map after the real call returns, outside the loader
// lock (H21), and starts a new module epoch.
//
// Problem: dlopen is deliberately NOT interposed. glibc resolves a bare
// library name against the RUNPATH and $ORIGIN of dlopen's caller, found from
// dlopen's return address; an interposer would make libgotrace.so the caller
// and change which library a program loads. New modules are found instead
// when a new stack holds a PC outside every known module (CaptureStack), and
// at exit.
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include "preload/real.h"
#include "preload/runtime.h"

using namespace gotrace;

// Called once by the executable's _start (any of its symbol versions binds
// here: an unversioned definition satisfies a versioned reference).
GT_EXPORT int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                void* stack_end) {
  g.main_pc.store(reinterpret_cast<uintptr_t>(main), std::memory_order_relaxed);
  RegisterMainThread();
  auto real = real::libc_start_main;
  if (real == nullptr) {
    real = reinterpret_cast<decltype(real)>(dlsym(RTLD_NEXT, "__libc_start_main"));
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

// dlclose@@GLIBC_2.34 (and 2.2.5). May take the loader lock (dl_iterate_phdr).
GT_EXPORT int dlclose(void* handle) {
  const int r = GT_REAL(dlclose)(handle);
  if (r == 0 && t_state.depth == 0) RescanModules(true);
  return r;
}
