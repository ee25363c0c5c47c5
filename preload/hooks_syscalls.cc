// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_syscalls.cc - sleeping and blocking system calls ----===//
//
// Each call that can block is recorded as one kWait after it returns (H30: a
// cancelled or interrupted call loses one record, never leaves a half-open
// wait). errno is preserved (H31); return values pass through unchanged.
// glibc's sleep() and usleep() call nanosleep internally without the PLT, so
// each user call is recorded exactly once.
//===----------------------------------------------------------------------===//
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "preload/real.h"
#include "preload/runtime.h"

using namespace gotrace;

// nanosleep@@GLIBC_2.2.5: async-signal-safe, no allocation.
GT_EXPORT int nanosleep(const struct timespec* req, struct timespec* rem) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(nanosleep)(req, rem);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(nanosleep)(req, rem);
  w.End();
  return r;
}

GT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec* req,
                              struct timespec* rem) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(clock_nanosleep)(clock, flags, req, rem);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(clock_nanosleep)(clock, flags, req, rem);
  w.End();
  return r;
}

GT_EXPORT int usleep(useconds_t usec) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(usleep)(usec);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const int r = GT_REAL(usleep)(usec);
  w.End();
  return r;
}

GT_EXPORT unsigned sleep(unsigned seconds) {
  HookScope scope(kGroupSleep);
  if (!scope.active()) return GT_REAL(sleep)(seconds);
  WaitRecorder w(scope, WaitKind::kSleep, 0, GT_FRAME());
  const unsigned r = GT_REAL(sleep)(seconds);
  w.End();
  return r;
}
