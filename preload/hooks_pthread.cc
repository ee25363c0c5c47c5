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
#include <semaphore.h>
#include <stdlib.h>
#include <sys/single_threaded.h>

#include "preload/lifecycle.h"
#include "preload/real.h"
#include "preload/runtime.h"
#include "preload/sys/clock.h"
#include "preload/sys/raw.h"

namespace gotrace {
namespace {

constexpr int kMutexKindMask = 0x7f;
constexpr int kMutexRobust = 16;       // PTHREAD_MUTEX_ROBUST_NORMAL_NP
constexpr int kMutexPrioInherit = 32;  // PTHREAD_MUTEX_PRIO_INHERIT_NP
constexpr int kMutexRecursive = 1;     // PTHREAD_MUTEX_RECURSIVE_NP (kind & 3)
constexpr int kMutexPshared = 128;     // PTHREAD_MUTEX_PSHARED_BIT

// A lock that cannot wait: a private mutex, free, in a process with one
// thread (no other thread or process can hold it or take it meanwhile).
// glibc (2.34+) takes such a lock with a plain store, where trylock always
// pays a locked compare-and-swap: sqlite3's mutexes spent 1.7% of its run
// there.
GT_ALWAYS_INLINE bool MutexCannotWait(pthread_mutex_t* m) {
  return __libc_single_threaded != 0 &&
         (__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) & kMutexPshared) == 0 &&
         __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0;
}

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
  void* (*fn)(void*) = nullptr;
  void* arg = nullptr;
  uint64_t create_id = 0;
  StackHint stack;
};

// The new thread's stack as its attributes (or the defaults) say.
StackHint StackOf(const pthread_attr_t* attr) {
  StackHint h;
  pthread_attr_t def;
  if (attr == nullptr) {
    if (pthread_getattr_default_np(&def) != 0) return h;
    attr = &def;
  }
  void* addr = nullptr;
  size_t size = 0;
  // (Without a stack of the program's, glibc's answer is 0 - size: its
  // top is 0.)
  if (pthread_attr_getstack(attr, &addr, &size) == 0 &&
      reinterpret_cast<uintptr_t>(addr) + size != 0) {
    h.user_lo = reinterpret_cast<uintptr_t>(addr);
    h.size = size;
  } else if (pthread_attr_getstacksize(attr, &size) == 0) {
    h.size = size;
    if (pthread_attr_getguardsize(attr, &h.guard) != 0) h.guard = 0;
  }
  if (attr == &def) pthread_attr_destroy(&def);
  return h;
}

// Problem: the context was malloc'ed by the creator and freed by the new
// thread, and a thread's first free sets up its malloc cache, which takes
// an arena: 64 MiB of address space reserved for every thread that never
// allocates otherwise. The program ran with more arenas than untraced, and
// under `ulimit -v` could no longer start threads. Contexts come from this
// pool, claimed and released with one atomic each; malloc only when all are
// in flight (as many threads created and not yet started).
constexpr uint32_t kContexts = 256;
constinit GT_LARGE_BSS StartContext g_contexts[kContexts];
constinit GT_LARGE_BSS std::atomic<uint8_t> g_context_busy[kContexts];
constinit std::atomic<uint32_t> g_context_next{0};

StartContext* NewContext() {
  const uint32_t from = g_context_next.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t k = 0; k < kContexts; ++k) {
    const uint32_t i = (from + k) % kContexts;
    if (g_context_busy[i].load(std::memory_order_relaxed) == 0 &&
        g_context_busy[i].exchange(1, std::memory_order_acquire) == 0)
      return &g_contexts[i];
  }
  TracerScope tracer;  // the tracer's block: not the program's heap
  return static_cast<StartContext*>(malloc(sizeof(StartContext)));
}

void FreeContext(StartContext* c) {
  if (c >= g_contexts && c < g_contexts + kContexts) {
    g_context_busy[c - g_contexts].store(0, std::memory_order_release);
    return;
  }
  TracerScope tracer;  // our free() is not the program's
  free(c);
}

void* ThreadStart(void* p) {
  StartContext ctx = *static_cast<StartContext*>(p);
  FreeContext(static_cast<StartContext*>(p));
  {
    TracerScope tracer;
    AppThreadStarted();
  }
  SetStackHint(ctx.stack);
  if (RegisterCurrentThreadSlow(ctx.create_id, reinterpret_cast<uintptr_t>(ctx.fn), 0) == nullptr &&
      g.phase.load(std::memory_order_acquire) == Phase::kPaused) {
    ArmThreadEnd();  // recording paused: a window it lives in shows its end
  }
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
  // While recording is paused (issue 16) threads still start through us, so
  // that a trace window sees their end.
  const bool paused = !scope.active() && g.phase.load(std::memory_order_acquire) == Phase::kPaused &&
                      t_state.depth == 0;
  if (!scope.active() && !paused) return GT_REAL(pthread_create)(thread, attr, start, arg);
  StartContext* ctx = NewContext();
  if (ctx == nullptr) return GT_REAL(pthread_create)(thread, attr, start, arg);
  // The new thread frees ctx as it starts, maybe before the real
  // pthread_create returns here (and its block is soon another's: a worker
  // that mallocs at once wrote over the id, and the trace showed a thread
  // "created" with that garbage for its id that never ran): ours is a copy.
  const uint64_t create_id = paused ? 0 : g.next_create_id.fetch_add(1, std::memory_order_relaxed);
  ctx->fn = start;
  ctx->arg = arg;
  ctx->create_id = create_id;
  ctx->stack = StackOf(attr);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();  // before the thread can record anything
  AppThreadCreating();  // before it can start, end, and be counted down
  const int rc = GT_REAL(pthread_create)(thread, attr, ThreadStart, ctx);
  if (rc != 0) {
    AppThreadCreateFailed();
    FreeContext(ctx);
    return rc;
  }
  if (!paused)
    RecordCreate(scope, t, cpu, create_id, reinterpret_cast<uintptr_t>(start), GT_FRAME());
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

// The slow paths (contention, waiters) are functions of their own, so the
// uncontended interposers compile to a call and a branch with no saved
// registers (measured: the inlined slow path cost the unlock ~1 ns). Each
// unwinds from its own frame; the interposer's frame, if still there, is in
// our library and dropped.
namespace {

GT_NOINLINE int MutexLockSlow(pthread_mutex_t* m) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_mutex_lock)(m);
  WaitRecorder w(scope, WaitKind::kMutex, Obj(m), GT_FRAME());
  const int r = GT_REAL(pthread_mutex_lock)(m);
  w.End(r == 0 || r == EOWNERDEAD);  // EDEADLK and friends did not wait
  return r;
}

GT_NOINLINE int MutexUnlockSlow(pthread_mutex_t* m) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_mutex_unlock)(m);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();  // before the waiter can be woken
  const int r = GT_REAL(pthread_mutex_unlock)(m);
  if (r == 0) RecordRelease(scope, WaitKind::kMutex, Obj(m), 1, t, cpu, GT_FRAME());
  return r;
}

// A cond signal or broadcast that may wake someone (count 1 or 0 = all).
GT_NOINLINE int CondWakeSlow(pthread_cond_t* c, bool all) {
  auto real = all ? GT_REAL(pthread_cond_broadcast) : GT_REAL(pthread_cond_signal);
  HookScope scope(kGroupSync);
  if (!scope.active()) return real(c);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();
  const int r = real(c);
  if (r == 0) RecordRelease(scope, WaitKind::kCond, Obj(c), all ? 0 : 1, t, cpu, GT_FRAME());
  return r;
}

}  // namespace

// The uncontended path is trylock and return: no TLS access, no event.
GT_EXPORT int pthread_mutex_lock(pthread_mutex_t* m) {
  if (MutexCannotWait(m)) return GT_REAL(pthread_mutex_lock)(m);
  const int rc = GT_REAL(pthread_mutex_trylock)(m);
  if (GT_LIKELY(rc != EBUSY)) return rc;  // acquired (0, EOWNERDEAD) or an error
  return MutexLockSlow(m);
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
  return MutexUnlockSlow(m);
}

// --- Condition variables: pthread_cond_*@@GLIBC_2.3.2 (H3) --------------------

GT_EXPORT int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_wait)(c, m);
  // The wait releases m: a thread blocked on m is woken by glibc inside.
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME(), Obj(m));
  const int r = GT_REAL(pthread_cond_wait)(c, m);
  w.End(r == 0);
  return r;
}

GT_EXPORT int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                     const struct timespec* abstime) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_cond_timedwait)(c, m, abstime);
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME(), Obj(m));
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
  WaitRecorder w(scope, WaitKind::kCond, Obj(c), GT_FRAME(), Obj(m));
  const int r = real(c, m, clock, abstime);
  w.End(r == 0 || r == ETIMEDOUT);
  return r;
}

GT_EXPORT int pthread_cond_signal(pthread_cond_t* c) {
  if (GT_LIKELY(!CondHasWaiters(c))) return GT_REAL(pthread_cond_signal)(c);
  return CondWakeSlow(c, false);
}

GT_EXPORT int pthread_cond_broadcast(pthread_cond_t* c) {
  if (GT_LIKELY(!CondHasWaiters(c))) return GT_REAL(pthread_cond_broadcast)(c);
  return CondWakeSlow(c, true);
}

// --- Read-write locks ------------------------------------------------------------
// glibc >= 2.25 rwlock words (read only, to skip releases nobody waits for):
// __readers & 4 (PTHREAD_RWLOCK_RWAITING): readers are waiting;
// __writers_futex & 2 and __wrphase_futex & 2 (PTHREAD_RWLOCK_FUTEX_USED):
// someone may sleep on that futex. (Checked on glibc 2.36: a writer holding
// the lock with a reader asleep shows __wrphase_futex == 3.)

namespace {

GT_ALWAYS_INLINE bool RwlockHasWaiters(pthread_rwlock_t* l) {
  const unsigned readers = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
  const unsigned wf = __atomic_load_n(&l->__data.__writers_futex, __ATOMIC_RELAXED);
  const unsigned pf = __atomic_load_n(&l->__data.__wrphase_futex, __ATOMIC_RELAXED);
  return (readers & 4u) != 0 || (wf & 2u) != 0 || (pf & 2u) != 0;
}

template <typename Try, typename Lock>
GT_ALWAYS_INLINE int RwLock(const void* frame, pthread_rwlock_t* l, Try try_fn, Lock lock_fn,
                            bool timed) {
  const int rc = try_fn();
  if (GT_LIKELY(rc != EBUSY)) return rc;  // acquired, or an error (EDEADLK, EAGAIN)
  HookScope scope(kGroupSync);
  if (!scope.active()) return lock_fn();
  WaitRecorder w(scope, WaitKind::kRwlock, reinterpret_cast<uintptr_t>(l), frame);
  const int r = lock_fn();
  w.End(r == 0 || (timed && r == ETIMEDOUT));
  return r;
}

}  // namespace

GT_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_tryrdlock)(l); },
                [&] { return GT_REAL(pthread_rwlock_rdlock)(l); }, false);
}
GT_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_trywrlock)(l); },
                [&] { return GT_REAL(pthread_rwlock_wrlock)(l); }, false);
}
GT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const struct timespec* t) {
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_tryrdlock)(l); },
                [&] { return GT_REAL(pthread_rwlock_timedrdlock)(l, t); }, true);
}
GT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const struct timespec* t) {
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_trywrlock)(l); },
                [&] { return GT_REAL(pthread_rwlock_timedwrlock)(l, t); }, true);
}
GT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  auto real = GT_REAL(pthread_rwlock_clockrdlock);
  if (real == nullptr) return ENOSYS;
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_tryrdlock)(l); },
                [&] { return real(l, c, t); }, true);
}
GT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t* l, clockid_t c, const struct timespec* t) {
  auto real = GT_REAL(pthread_rwlock_clockwrlock);
  if (real == nullptr) return ENOSYS;
  return RwLock(GT_FRAME(), l, [&] { return GT_REAL(pthread_rwlock_trywrlock)(l); },
                [&] { return real(l, c, t); }, true);
}
GT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t* l) {
  if (GT_LIKELY(!RwlockHasWaiters(l))) return GT_REAL(pthread_rwlock_unlock)(l);
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_rwlock_unlock)(l);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();
  const int r = GT_REAL(pthread_rwlock_unlock)(l);
  // A writer's unlock may admit every waiting reader: wake all.
  if (r == 0) RecordRelease(scope, WaitKind::kRwlock, Obj(l), 0, t, cpu, GT_FRAME());
  return r;
}

// --- Barriers ------------------------------------------------------------------
// The round ends when the last thread arrives, and glibc returns
// PTHREAD_BARRIER_SERIAL_THREAD to that last arriver (checked on glibc 2.36:
// 50 of 50 rounds). It never waited; it released everyone at its arrival.

GT_EXPORT int pthread_barrier_wait(pthread_barrier_t* b) {
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(pthread_barrier_wait)(b);
  const uint32_t cpu = sys::CurrentCpu();
  WaitRecorder w(scope, WaitKind::kBarrier, Obj(b), GT_FRAME());
  const Tick arrival = sys::Ticks();
  const int r = GT_REAL(pthread_barrier_wait)(b);
  const bool last = r == PTHREAD_BARRIER_SERIAL_THREAD;
  w.End(r == 0);
  if (last) RecordRelease(scope, WaitKind::kBarrier, Obj(b), 0, arrival, cpu, GT_FRAME());
  return r;
}

// --- POSIX semaphores (sem_wait@@GLIBC_2.34 and 2.2.5 alike) -------------------
// glibc's 64-bit semaphore word: value in the low 32 bits, waiters above.

namespace {

GT_ALWAYS_INLINE bool SemHasWaiters(sem_t* s) {
  uint64_t word;
  __atomic_load(reinterpret_cast<uint64_t*>(s), &word, __ATOMIC_RELAXED);
  return (word >> 32) != 0;
}

template <typename Wait>
GT_ALWAYS_INLINE int SemWait(const void* frame, sem_t* s, Wait wait_fn, bool timed) {
  const int saved = errno;
  if (GT_REAL(sem_trywait)(s) == 0) return 0;  // a token was there: no wait
  if (errno != EAGAIN) return wait_fn();       // let the real call report the error
  errno = saved;
  HookScope scope(kGroupSync);
  if (!scope.active()) return wait_fn();
  WaitRecorder w(scope, WaitKind::kSem, Obj(s), frame);
  const int r = wait_fn();
  // Interrupted or timed out, it still waited; EINVAL and friends did not.
  w.End(r == 0 || errno == EINTR || (timed && errno == ETIMEDOUT));
  return r;
}

}  // namespace

GT_EXPORT int sem_wait(sem_t* s) {
  return SemWait(GT_FRAME(), s, [&] { return GT_REAL(sem_wait)(s); }, false);
}
GT_EXPORT int sem_timedwait(sem_t* s, const struct timespec* t) {
  return SemWait(GT_FRAME(), s, [&] { return GT_REAL(sem_timedwait)(s, t); }, true);
}
GT_EXPORT int sem_clockwait(sem_t* s, clockid_t c, const struct timespec* t) {
  auto real = GT_REAL(sem_clockwait);
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return SemWait(GT_FRAME(), s, [&] { return real(s, c, t); }, true);
}
GT_EXPORT int sem_post(sem_t* s) {
  if (GT_LIKELY(!SemHasWaiters(s))) return GT_REAL(sem_post)(s);
  HookScope scope(kGroupSync);
  if (!scope.active()) return GT_REAL(sem_post)(s);
  const uint32_t cpu = sys::CurrentCpu();
  const Tick t = sys::Ticks();
  const int r = GT_REAL(sem_post)(s);
  if (r == 0) RecordRelease(scope, WaitKind::kSem, Obj(s), 1, t, cpu, GT_FRAME());
  return r;
}
