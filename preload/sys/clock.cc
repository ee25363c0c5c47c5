// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/clock.cc - timestamps and CPU numbers for records -----===//
#include "preload/sys/clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>

#include <cstddef>

#include "preload/sys/next_symbol.h"
#include "preload/sys/raw.h"

namespace gotrace::sys {

long g_rseq_cpu_offset = -1;

// A system call, not the vDSO: the vDSO's first use maps three pages (its
// code's page of libc and the two vvar pages), a page fault each, 12 to 35 us
// apiece on the VMs measured, and a short process reads this clock only a
// few times (start, frequency estimates, exit); a system call is about 1 us.
// Never on the per-record path: records carry TSC ticks (Ticks); this is
// read per chunk, per clock sync (10 ms) and by the flusher.
uint64_t MonotonicNs() {
  timespec ts;
  if (Syscall6(SYS_clock_gettime, CLOCK_MONOTONIC, reinterpret_cast<long>(&ts)) != 0)
    clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t EstimateTicksPerSecond(uint64_t start_ticks, uint64_t start_ns) {
#if defined(__aarch64__)
  uint64_t f;
  __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
  (void)start_ticks;
  (void)start_ns;
  return f;
#else
  // Pair a fresh reading with the start; read the TSC between two clock
  // readings so that the pair brackets it.
  const uint64_t n0 = MonotonicNs();
  const uint64_t t = Ticks();
  const uint64_t n1 = MonotonicNs();
  const uint64_t ns = (n0 + n1) / 2;
  if (ns <= start_ns || t <= start_ticks) return 1'000'000'000;
  const long double f = static_cast<long double>(t - start_ticks) * 1e9L /
                        static_cast<long double>(ns - start_ns);
  return f < 1e6L ? 1'000'000'000 : static_cast<uint64_t>(f);
#endif
}

uint32_t CurrentCpuSlow() {
  const int saved = errno;  // H31: sched_getcpu sets errno on failure
  const int c = sched_getcpu();
  errno = saved;
  return c < 0 ? 0 : static_cast<uint32_t>(c);
}

void InitClock() {
  // glibc >= 2.35 exports the offset of its registered struct rseq from the
  // thread pointer (__rseq_offset) and its size (__rseq_size; 0 when rseq is
  // not registered, e.g. glibc.pthread.rseq=0). cpu_id is at offset 4.
  const auto* off = static_cast<const ptrdiff_t*>(DlsymQuiet(RTLD_DEFAULT, "__rseq_offset"));
  const auto* size = static_cast<const unsigned*>(DlsymQuiet(RTLD_DEFAULT, "__rseq_size"));
  if (off != nullptr && size != nullptr && *size >= 8) {
    const int32_t c = *reinterpret_cast<volatile int32_t*>(
        static_cast<char*>(__builtin_thread_pointer()) + *off + 4);
    if (c >= 0) g_rseq_cpu_offset = static_cast<long>(*off + 4);
  }
}

}  // namespace gotrace::sys
