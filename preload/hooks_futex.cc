// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_futex.cc - futexes reached through syscall() --------===//
//
// C++20 std::atomic::wait/notify, std::counting_semaphore, std::barrier and
// std::latch (libstdc++), Rust's std locks and many hand-written locks reach
// the kernel as syscall(SYS_futex, ...), bypassing pthread. We interpose
// syscall() and look at futex operations only; every other system call is
// forwarded untouched (errno included).
//
//   waits  FUTEX_WAIT, FUTEX_WAIT_BITSET, FUTEX_LOCK_PI, FUTEX_LOCK_PI2,
//          FUTEX_WAIT_REQUEUE_PI: a kWait on the futex word, recorded only if
//          the call slept (EAGAIN: the word had changed, no wait).
//   wakes  FUTEX_WAKE, FUTEX_WAKE_BITSET, FUTEX_WAKE_OP, FUTEX_REQUEUE,
//          FUTEX_CMP_REQUEUE, FUTEX_CMP_REQUEUE_PI: a kRelease of the word for
//          as many waiters as the kernel reports woken; FUTEX_UNLOCK_PI: one,
//          if the word showed waiters. Requeued waiters keep waiting on the
//          first word in the trace (their eventual wake is then from g0).
//
// One other: SYS_exit_group, the process's end past exit(), writes the trace
// first, as _exit does.
//
// syscall() is variadic and takes up to six word arguments; reading all six
// is what glibc's own syscall() does (they are in registers), so it is
// harmless for calls with fewer.
//===----------------------------------------------------------------------===//
#include <errno.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "preload/lifecycle.h"
#include "preload/real.h"
#include "preload/runtime.h"

using namespace gotrace;

namespace {

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

// Unwinds from its own frame: syscall() may tail-call it (then its caller is
// the program) or call it (then the frame in between is ours and dropped).
// Passing syscall()'s frame down would point at a dead frame after a tail
// call.
GT_NOINLINE long FutexSlow(long a1, long a2, long a3, long a4, long a5, long a6) {
  const void* frame = GT_FRAME();
  auto real = GT_REAL(syscall);
  const int op = static_cast<int>(a2) & FUTEX_CMD_MASK;
  const uint64_t word = static_cast<uint64_t>(a1);
  switch (op) {
    case FUTEX_WAIT: case FUTEX_WAIT_BITSET: case FUTEX_LOCK_PI: case FUTEX_LOCK_PI2:
    case FUTEX_WAIT_REQUEUE_PI: {
      HookScope scope(kGroupSync);
      if (!scope.active()) return real(SYS_futex, a1, a2, a3, a4, a5, a6);
      WaitRecorder w(scope, WaitKind::kFutex, word, frame);
      const long r = real(SYS_futex, a1, a2, a3, a4, a5, a6);
      w.End(r == 0 || errno == ETIMEDOUT || errno == EINTR);
      return r;
    }
    case FUTEX_WAKE: case FUTEX_WAKE_BITSET: case FUTEX_WAKE_OP: case FUTEX_REQUEUE:
    case FUTEX_CMP_REQUEUE: case FUTEX_CMP_REQUEUE_PI: {
      HookScope scope(kGroupSync);
      if (!scope.active()) return real(SYS_futex, a1, a2, a3, a4, a5, a6);
      const uint32_t cpu = sys::CurrentCpu();
      const Tick t = sys::Ticks();
      const long r = real(SYS_futex, a1, a2, a3, a4, a5, a6);
      if (r > 0) {
        const int saved = errno;
        RecordRelease(scope, WaitKind::kFutex, word, static_cast<uint64_t>(r), t, cpu, frame);
        errno = saved;
      }
      return r;
    }
    case FUTEX_UNLOCK_PI: {
      const uint32_t v = __atomic_load_n(reinterpret_cast<uint32_t*>(a1), __ATOMIC_RELAXED);
      HookScope scope(kGroupSync);
      if (!scope.active() || (v & FUTEX_WAITERS) == 0) return real(SYS_futex, a1, a2, a3, a4, a5, a6);
      const uint32_t cpu = sys::CurrentCpu();
      const Tick t = sys::Ticks();
      const long r = real(SYS_futex, a1, a2, a3, a4, a5, a6);
      if (r == 0) {
        const int saved = errno;
        RecordRelease(scope, WaitKind::kFutex, word, 1, t, cpu, frame);
        errno = saved;
      }
      return r;
    }
    default:
      return real(SYS_futex, a1, a2, a3, a4, a5, a6);
  }
}

}  // namespace

// Ours (hooks_lifecycle.cc); glibc declares no capset.
extern "C" int capset(__user_cap_header_struct* header, __user_cap_data_struct* data);

// syscall@@GLIBC_2.2.5. Async-signal-safe; allocates nothing.
GT_EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  const long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  const long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
  if (GT_LIKELY(number != SYS_futex)) {
    // The process's end by the system call itself, past exit(): as _exit,
    // the trace first.
    if (GT_UNLIKELY(number == SYS_exit_group)) {
      if (!IsVforkChild()) SetExitStatus(static_cast<uint64_t>(a1 & 0xff) << 8);
      FinishProcess();  // (a vfork child passes straight through)
    }
    // A thread's credentials (capset, prctl's keepcaps, ...): mirrored in
    // the control thread, as the libc functions are (hooks_lifecycle.cc).
    if (GT_UNLIKELY(number == SYS_capset)) {
      return capset(reinterpret_cast<__user_cap_header_struct*>(a1),
                    reinterpret_cast<__user_cap_data_struct*>(a2));
    }
    if (GT_UNLIKELY(number == SYS_prctl)) {
      return prctl(static_cast<int>(a1), a2, a3, a4, a5);
    }
    return GT_REAL(syscall)(number, a1, a2, a3, a4, a5, a6);
  }
  return FutexSlow(a1, a2, a3, a4, a5, a6);
}
