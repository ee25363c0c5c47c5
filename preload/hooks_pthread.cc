// SPDX-License-Identifier: Apache-2.0
//===-- preload/hooks_pthread.cc - threads, mutexes, condition variables --===//
//
// pthread_mutex_trylock and pthread_tryjoin_np never wait and are not
// interposed (there is nothing to record; the program calls libc directly).
//
// Contention only: an uncontended lock costs a trylock and records nothing; a
// lock that must wait records one kWait after it returns; an unlock or
// signal that may wake a waiter records a kRelease with a time taken before
// the real call, so the encoder can link waker and wakee. None of these
// allocate (except pthread_create, which allocates anyway), lock globally or
// touch errno; all may run in signal handlers (a nested call passes through).
//
// glibc internals read here, all stable since glibc 2.25 (G12 note: read, not
// written, and only to avoid recording releases nobody waits for):
//   pthread_mutex_t.__data.__lock: 0 free, 1 locked, 2 locked with waiters;
//     for robust and priority-inheritance mutexes, owner tid | FUTEX_WAITERS.
//   pthread_mutex_t.__data.__count: recursion depth of a recursive mutex.
//   pthread_cond_t.__data.__wrefs >> 3: the number of waiters.
//===----------------------------------------------------------------------===//
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>

#include "preload/real.h"
#include "preload/runtime.h"
#include "preload/sys/clock.h"

namespace gotrace {
namespace {

constexpr int kMutexKindMask = 0x7f;
constexpr int kMutexRobust = 16;       // PTHREAD_MUTEX_ROBUST_NORMAL_NP
constexpr int kMutexPrioInherit = 32;  // PTHREAD_MUTEX_PRIO_INHERIT_NP
constexpr int kMutexRecursive = 1;     // PTHREAD_MUTEX_RECURSIVE_NP (kind & 3)

// True if unlocking m now may wake a waiter.
GT_ALWAYS_INLINE bool MutexHasWaiters(pthread_mutex_t* m) {
  const int kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) & kMutexKindMask;
  const unsigned word = static_cast<unsigned>(__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED));
  if ((kind & 3) == kMutexRecursive && __atomic_load_n(&m->__data.__count, __ATOMIC_RELAXED) > 1)
    return false;  // only the recursion count drops
  if (kind & (kMutexRobust | kMutexPrioInherit)) return (word & FUTEX_WAITERS) != 0;
  return word > 1;
}

GT_ALWAYS_INLINE bool CondHasWaiters(pthread_cond_t* c) {
  return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
}

uint64_t Obj(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// --- Thread creation --------------------------------------------------------

struct StartContext {
  void* (*fn)(void*);
  void* arg;
  uint64_t create_id;
};

void* ThreadStart(void* p) {
  StartContext ctx = *static_cast<StartContext*>(p);
  {
    TracerScope tracer;  // our free() is not the program's
    free(p);
  }
  RegisterCurrentThreadSlow(ctx.create_id, reinterpret_cast<uintptr_t>(ctx.fn), 0);
  return ctx.fn(ctx.arg);
  // The thread's end is recorded by the pthread key destructor (H25), which
  // also covers pthread_exit and cancellation.
}

}  // namespace
}  // namespace gotrace

using namespace gotrace;

// pthread_create@@GLIBC_2.34 (and @GLIBC_2.2.5, the same function). May
// allocate (so does glibc's). Not async-signal-safe (neither is the real one).
GT_EXPORT int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                             void* (*start)(void*), void* arg) {
  HookScope scope(~0u);
  if (!scope.active()) return GT_REAL(pthread_create)(thread, attr, start, arg);
  auto* ctx = static_cast<StartContext*>(malloc(sizeof(StartContext)));  // inside the scope: untraced
  if (ctx == nullptr) return GT_REAL(pthread_create)(thread, attr, start, arg);
  ctx->fn = start;
  ctx->arg = arg;
  ctx->create_id = g.next_create_id.fetch_add(1, std::memory_order_relaxed);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();  // before the thread can record anything
  const int rc = GT_REAL(pthread_create)(thread, attr, ThreadStart, ctx);
  if (rc != 0) {
    free(ctx);
    return rc;
  }
  RecordCreate(scope, t, cpu, ctx->create_id, reinterpret_cast<uintptr_t>(start), GT_FRAME());
  return rc;
}

// --- Join: a wait whose waker is the exiting thread (its kThreadEnd) --------

GT_EXPORT int pthread_join(pthread_t th, void** ret) {
  const int rc = GT_REAL(pthread_tryjoin_np)(th, ret);
  if (rc != EBUSY) return rc;  // already exited, or an error: no wait
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_join)(th, ret);
  WaitRecorder w(scope, WaitKind::kJoin, Obj(reinterpret_cast<void*>(th)), GT_FRAME());
  const int r = GT_REAL(pthread_join)(th, ret);
  w.End(r == 0);
  return r;
}

GT_EXPORT int pthread_timedjoin_np(pthread_t th, void** ret, const struct timespec* abstime) {
  const int rc = GT_REAL(pthread_tryjoin_np)(th, ret);
  if (rc != EBUSY) return rc;
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_timedjoin_np)(th, ret, abstime);
  WaitRecorder w(scope, WaitKind::kJoin, Obj(reinterpret_cast<void*>(th)), GT_FRAME());
  const int r = GT_REAL(pthread_timedjoin_np)(th, ret, abstime);
  w.End(r == 0 || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_clockjoin_np(pthread_t th, void** ret, clockid_t clock,
                                   const struct timespec* abstime) {
  auto real = GT_REAL(pthread_clockjoin_np);
  if (real == nullptr) return ENOSYS;  // H8: not in this libc
  const int rc = GT_REAL(pthread_tryjoin_np)(th, ret);
  if (rc != EBUSY) return rc;
  HookScope scope(kGroupSync);
  if (!scope.active()) return real(th, ret, clock, abstime);
  WaitRecorder w(scope, WaitKind::kJoin, Obj(reinterpret_cast<void*>(th)), GT_FRAME());
  const int r = real(th, ret, clock, abstime);
  w.End(r == 0 || r == ETIMEDOUT);
  return r;
}

// --- Mutexes ------------------------------------------------------------------

// The uncontended path is trylock and return: no TLS access, no event.
GT_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
  const int rc = GT_REAL(pthread_mutex_trylock)(m);
  if (GT_LIKELY(rc != EBUSY)) return rc;  // acquired (0, EOWNERDEAD) or an error
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_mutex_lock)(m);
  WaitRecorder w(scope, WaitKind::kMutex, Obj(m), GT_FRAME());
  const int r = GT_REAL(pthread_mutex_lock)(m);
  w.End(r == 0 || r == EOWNERDEAD);  // EDEADLK and friends did not wait
  return r;
}

GT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t* m, const struct timespec* abstime) {
  const int rc = GT_REAL(pthread_mutex_trylock)(m);
  if (GT_LIKELY(rc != EBUSY)) return rc;
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_mutex_timedlock)(m, abstime);
  WaitRecorder w(scope, WaitKind::kMutex, Obj(m), GT_FRAME());
  const int r = GT_REAL(pthread_mutex_timedlock)(m, abstime);
  w.End(r == 0 || r == EOWNERDEAD || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t* m, clockid_t clock,
                                      const struct timespec* abstime) {
  auto real = GT_REAL(pthread_mutex_clocklock);
  if (real == nullptr) return ENOSYS;
  const int rc = GT_REAL(pthread_mutex_trylock)(m);
  if (GT_LIKELY(rc != EBUSY)) return rc;
  HookScope scope(kGroupSync);
  if (!scope.active()) return real(m, clock, abstime);
  WaitRecorder w(scope, WaitKind::kMutex, Obj(m), GT_FRAME());
  const int r = real(m, clock, abstime);
  w.End(r == 0 || r == EOWNERDEAD || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_mutex_unlock(pthread_mutex_t* m) {
  if (GT_LIKELY(!MutexHasWaiters(m))) return GT_REAL(pthread_mutex_unlock)(m);
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_mutex_unlock)(m);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();  // before the waiter can be woken
  const int r = GT_REAL(pthread_mutex_unlock)(m);
  if (r == 0) RecordRelease(scope, WaitKind::kMutex, Obj(m), 1, t, cpu, GT_FRAME());
  return r;
}

// --- Condition variables: pthread_cond_*@@GLIBC_2.3.2 (H3) --------------------

GT_EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_wait)(c, m);
  // The wait releases m: a thread blocked on m is woken by glibc inside.
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME());
  const int r = GT_REAL(pthread_cond_wait)(c, m);
  w.End(r == 0);
  return r;
}

GT_EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                     const struct timespec* abstime) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_timedwait)(c, m, abstime);
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME());
  const int r = GT_REAL(pthread_cond_timedwait)(c, m, abstime);
  w.End(r == 0 || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                     const struct timespec* abstime) {
  auto real = GT_REAL(pthread_cond_clockwait);
  if (real == nullptr) return ENOSYS;
  HookScope scope(kGroupSync);
  if (!scope.active()) return real(c, m, clock, abstime);
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME());
  const int r = real(c, m, clock, abstime);
  w.End(r == 0 || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_cond_signal(pthread_cond_t* c) {
  if (GT_LIKELY(!CondHasWaiters(c))) return GT_REAL(pthread_cond_signal)(c);
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_signal)(c);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();
  const int r = GT_REAL(pthread_cond_signal)(c);
  if (r == 0) RecordRelease(scope, WaitKind::kCond, Obj(c), 1, t, cpu, GT_FRAME());
  return r;
}

GT_EXPORT int pthread_cond_broadcast(pthread_cond_t* c) {
  if (GT_LIKELY(!CondHasWaiters(c))) return GT_REAL(pthread_cond_broadcast)(c);
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_broadcast)(c);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();
  const int r = GT_REAL(pthread_cond_broadcast)(c);
  if (r == 0) RecordRelease(scope, WaitKind::kCond, Obj(c), 0, t, cpu, GT_FRAME());
  return r;
}
