// SPDX-License-Identifier: Apache-2.0
//===-- preload/real.h - the libc functions our interposers forward to ----===//
//
// STYLE.md G2: every real pointer is in one table, resolved in the
// constructor through dlsym(RTLD_NEXT) (dlvsym with an explicit version where
// glibc has two implementations, H3), with a lazy fallback for hooks that run
// before our constructor (H24). GT_REAL(name) has the exact type
// decltype(&::name), so a prototype change fails to compile.
//
// Problem: pthread_cond_* exist as @GLIBC_2.2.5 (the pre-2.3.2 condvar, a
// smaller pthread_cond_t) and @@GLIBC_2.3.2. Before glibc 2.36, dlsym returned
// the oldest version (BZ #14932, google/sanitizers#465), and mixing them
// corrupts memory. We always ask for the current ABI by version, for all the
// cond functions alike.
//===----------------------------------------------------------------------===//
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "preload/sys/platform.h"

// The interposed functions: X(name, version or nullptr, required).
#define GT_REAL_FUNCTIONS(X)                                          \
  X(pthread_create, nullptr, true)                                    \
  X(pthread_exit, nullptr, true)                                      \
  X(pthread_join, nullptr, true)                                      \
  X(pthread_tryjoin_np, nullptr, true)                                \
  X(pthread_timedjoin_np, nullptr, true)                              \
  X(pthread_clockjoin_np, nullptr, false)                             \
  X(pthread_mutex_lock, nullptr, true)                                \
  X(pthread_mutex_trylock, nullptr, true)                             \
  X(pthread_mutex_timedlock, nullptr, true)                           \
  X(pthread_mutex_clocklock, nullptr, false)                          \
  X(pthread_mutex_unlock, nullptr, true)                              \
  X(pthread_cond_wait, ::gotrace::kCondVersion, true)                 \
  X(pthread_cond_timedwait, ::gotrace::kCondVersion, true)            \
  X(pthread_cond_clockwait, nullptr, false)                           \
  X(pthread_cond_signal, ::gotrace::kCondVersion, true)               \
  X(pthread_cond_broadcast, ::gotrace::kCondVersion, true)            \
  X(nanosleep, nullptr, true)                                         \
  X(clock_nanosleep, nullptr, true)                                   \
  X(usleep, nullptr, true)                                            \
  X(sleep, nullptr, true)                                             \
  X(dlclose, nullptr, true)

extern "C" int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv,
                                 void (*init)(), void (*fini)(), void (*rtld_fini)(),
                                 void* stack_end);

namespace gotrace::real {

#define GT_REAL_DECLARE(name, version, required) extern decltype(&::name) name;
GT_REAL_FUNCTIONS(GT_REAL_DECLARE)
#undef GT_REAL_DECLARE
extern decltype(&::__libc_start_main) libc_start_main;

enum Index : int {
#define GT_REAL_INDEX(name, version, required) k_##name,
  GT_REAL_FUNCTIONS(GT_REAL_INDEX)
#undef GT_REAL_INDEX
  kCount
};

// Resolves entry `index` (idempotent); returns the pointer or nullptr.
void* Resolve(int index);
// Resolves the whole table. False if a required function is missing, with
// its name in *missing.
bool ResolveAll(const char** missing);

template <typename F>
__attribute__((always_inline)) inline F Get(F& slot, int index) {
  F f = __atomic_load_n(&slot, __ATOMIC_RELAXED);
  if (__builtin_expect(f != nullptr, 1)) return f;
  return reinterpret_cast<F>(Resolve(index));
}

}  // namespace gotrace::real

#define GT_REAL(name) (::gotrace::real::Get(::gotrace::real::name, ::gotrace::real::k_##name))
