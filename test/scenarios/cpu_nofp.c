// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 14 for CPU samples): two threads compute, for MS
// milliseconds, three calls deep in code built without frame pointers
// (-O2 -fomit-frame-pointer), calling nothing gotrace records (the clock is
// read through the vDSO). cpu_nofp_middle keeps rbp busy as a general
// register, so the kernel's frame-pointer chain meets a value that is not
// a frame pointer. A CPU sample's stack copy, walked by CFI, finds every
// caller; the kernel's chain (GOTRACE_UNWIND=fp) stops at the leaf.
//   cpu_nofp [MS]   (default 400)
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;
static uint64_t g_until;

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t cpu_nofp_leaf(uint64_t x) {
  for (int i = 0; i < 20000; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  return x;
}

__attribute__((noinline)) static uint64_t cpu_nofp_middle(uint64_t x) {
  // Enough live values that the compiler also allocates rbp.
  uint64_t a = x * 3, b = x ^ 0x5555, c = x + 7, d = x * x, e = x >> 3, f = ~x, h = x * 11;
  __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(h));
  const uint64_t r = cpu_nofp_leaf(x);
  return r + a + b + c + d + e + f + h;
}

__attribute__((noinline)) static uint64_t cpu_nofp_outer(void) {
  uint64_t x = 1, rounds = 0;
  while (NowNs() < g_until) {
    x = cpu_nofp_middle(x);
    ++rounds;
  }
  sink += x;
  return rounds;
}

static void* cpu_nofp_worker(void* arg) {
  *(uint64_t*)arg = cpu_nofp_outer();
  sink++;
  return NULL;
}

int main(int argc, char** argv) {
  const uint64_t ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 400;
  g_until = NowNs() + ms * 1000000u;
  uint64_t rounds[2] = {0, 0};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, cpu_nofp_worker, &rounds[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("cpu_nofp: %s\n", rounds[0] > 0 && rounds[1] > 0 ? "both computed" : "a thread did nothing");
  return 0;
}
