// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/clock.h - timestamps and CPU numbers for records ------===//
//
// Measured on the development machine (DESIGN.md §3.4): rdtsc 11.6 ns,
// clock_gettime(CLOCK_MONOTONIC) 29 ns (vDSO); the kernel's clocksource is
// the TSC, so it is synchronized across CPUs. Records carry raw TSC ticks; the
// log header pairs a tick reading with CLOCK_MONOTONIC and kClockSync records
// refine the frequency, so the encoder converts ticks to nanoseconds. The CPU
// comes from the rseq area glibc >= 2.35 registers (0.65 ns), else from
// sched_getcpu (4.3 ns via the vDSO).
//===----------------------------------------------------------------------===//
#pragma once

#include <time.h>

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "preload/sys/raw.h"

namespace gotrace::sys {

inline uint64_t Ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#endif
}

uint64_t MonotonicNs();

// The clock `clock` (any clockid, a CPU clock's too) in ns; 0 if the
// kernel refuses it. One raw system call.
inline uint64_t ClockNs(long clock) {
  struct timespec ts {};
  if (Syscall6(SYS_clock_gettime, clock, reinterpret_cast<long>(&ts)) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Ticks per second: an estimate from the calibration points taken so far
// (InitClock, then every call measures against it).
uint64_t EstimateTicksPerSecond(uint64_t start_ticks, uint64_t start_ns);

extern long g_rseq_cpu_offset;  // offset of rseq.cpu_id from the thread pointer, or -1

uint32_t CurrentCpuSlow();

inline uint32_t CurrentCpu() {
  if (__builtin_expect(g_rseq_cpu_offset >= 0, 1)) {
    const int32_t c = *reinterpret_cast<volatile int32_t*>(
        static_cast<char*>(__builtin_thread_pointer()) + g_rseq_cpu_offset);
    if (__builtin_expect(c >= 0, 1)) return static_cast<uint32_t>(c);
  }
  return CurrentCpuSlow();
}

// Locates glibc's rseq area (runtime detection: the library may run on a
// glibc other than the one it was built against, G12).
void InitClock();

}  // namespace gotrace::sys
