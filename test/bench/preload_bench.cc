// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/preload_bench.cc - cost the interposers add ------------===//
//
// DESIGN.md §7 budgets, measured as a difference: this program links no
// gotrace code and is run twice, plain and under LD_PRELOAD=libgotrace.so
// (scripts/bench-preload interleaves the runs and prints traced - plain).
//
//   BM_MutexLockUnlock          uncontended lock + unlock: no event (<= 3 ns)
//   BM_CondSignalNoWaiters      signal nobody waits for: no event (~0 ns)
//   BM_CondTimedwaitExpired/N   a wait with an absolute CLOCK_REALTIME time in
//                               the past: returns ETIMEDOUT at once (no system
//                               call, see Expired) but is always recorded, called N
//                               noinline frames deep, so the tracer unwinds
//                               about N frames (16: <= 50 ns)
//   BM_Nanosleep0               nanosleep({0, 0}): one recorded sleep; a system
//                               call of ~20 us on a VM, whose jitter hides the
//                               recording cost (the budget is checked above)
//
// The `frames` counter is the length of the frame-pointer chain at the call
// site, walked the way the tracer does (its default depth limit is 64). Build
// with -fno-omit-frame-pointer, or the chain is cut short.
//
// Every benchmark is single-threaded and deterministic: the same stack on
// every call (the steady state: the stack is interned once, then found).
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr double kMinTime = 0.3;  // seconds per benchmark run (the script repeats runs)

// --- Call chains of a fixed depth -------------------------------------------

// Calls fn() `depth` frames below the caller: Chain itself is one frame per
// level. The empty asm after the call keeps the compiler from turning it
// into a tail call (which would reuse the frame).
template <typename Fn>
__attribute__((noinline)) int Chain(int depth, Fn& fn) {
  int r;
  if (depth <= 1) {
    r = fn();
  } else {
    r = Chain(depth - 1, fn);
  }
  __asm__ volatile("" : "+r"(r)::"memory");
  return r;
}

// The frame-pointer chain length from the caller's frame, with the tracer's
// checks (aligned, strictly increasing, inside the thread's stack).
__attribute__((noinline)) int CountFrames(int limit) {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  const auto hi = reinterpret_cast<uintptr_t>(addr) + size;
  auto f = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t lo = f;
  // Start at our own frame, as the tracer starts at the interposer's: its
  // return address is the call site.
  int n = 0;
  while (n < limit) {
    if (f < lo || f + 16 > hi || (f & 7) != 0) break;
    const auto* frame = reinterpret_cast<const uintptr_t*>(f);
    if (frame[1] < 4096) break;
    ++n;
    if (frame[0] <= f) break;
    f = frame[0];
  }
  return n;
}

// An absolute CLOCK_REALTIME time in the past. Before the epoch on purpose:
// glibc's futex wrapper answers ETIMEDOUT for a negative tv_sec without
// entering the kernel (the kernel rejects negative timeouts), whereas a
// positive past time costs a futex system call, about 20 us on this VM
// (hrtimer setup under virtualization), whose jitter would bury the ~50 ns
// being measured. The wait is recorded either way.
timespec Expired() {
  timespec ts;
  ts.tv_sec = -1;  // 1969-12-31T23:59:59Z
  ts.tv_nsec = 0;
  return ts;
}

// --- Benchmarks -----------------------------------------------------------

void BM_MutexLockUnlock(benchmark::State& state) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  for (auto _ : state) {
    benchmark::DoNotOptimize(&mu);
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
  }
}
BENCHMARK(BM_MutexLockUnlock)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

void BM_CondSignalNoWaiters(benchmark::State& state) {
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  for (auto _ : state) {
    benchmark::DoNotOptimize(&cv);
    pthread_cond_signal(&cv);
  }
}
BENCHMARK(BM_CondSignalNoWaiters)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

void BM_CondTimedwaitExpired(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  const timespec abstime = Expired();
  auto wait = [&] { return pthread_cond_timedwait(&cv, &mu, &abstime); };
  auto count = [] { return CountFrames(1000); };
  pthread_mutex_lock(&mu);
  const int rc = Chain(depth, wait);
  if (rc != ETIMEDOUT) {
    pthread_mutex_unlock(&mu);
    state.SkipWithError("pthread_cond_timedwait did not return ETIMEDOUT");
    return;
  }
  int bad = 0;
  for (auto _ : state) bad += Chain(depth, wait) != ETIMEDOUT;
  pthread_mutex_unlock(&mu);
  if (bad != 0) state.SkipWithError("pthread_cond_timedwait did not return ETIMEDOUT");
  state.counters["frames"] = Chain(depth, count);
}
BENCHMARK(BM_CondTimedwaitExpired)
    ->Arg(4)
    ->Arg(16)
    ->Arg(64)
    ->MinTime(kMinTime)
    ->Unit(benchmark::kNanosecond);

void BM_Nanosleep0(benchmark::State& state) {
  const timespec zero{0, 0};
  for (auto _ : state) benchmark::DoNotOptimize(nanosleep(&zero, nullptr));
  auto count = [] { return CountFrames(1000); };
  state.counters["frames"] = Chain(1, count);
}
BENCHMARK(BM_Nanosleep0)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

// Issue 4's budget: a non-blocking 1-byte read from a pipe that always has
// data (the fd-class lookup and a short-syscall record). The byte is written
// back each time, so an iteration is a read and a write, both recorded: the
// added time per call is half of the added time per iteration.
void BM_PipeReadWrite1(benchmark::State& state) {
  int fds[2];
  if (pipe(fds) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  char c = 'x';
  if (write(fds[1], &c, 1) != 1) state.SkipWithError("write");
  for (auto _ : state) {
    benchmark::DoNotOptimize(read(fds[0], &c, 1));
    benchmark::DoNotOptimize(write(fds[1], &c, 1));
  }
  close(fds[0]);
  close(fds[1]);
}
BENCHMARK(BM_PipeReadWrite1)->MinTime(kMinTime)->Unit(benchmark::kNanosecond);

}  // namespace

int main(int argc, char** argv) {
  // The default 50 us timer slack would make nanosleep({0, 0}) a 50 us sleep;
  // with 1 ns it is as short as the kernel allows (still ~20 us on a VM).
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
