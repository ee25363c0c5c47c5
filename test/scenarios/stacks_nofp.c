// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): code built without frame pointers (-O2
// -fomit-frame-pointer). A worker waits in nofp_leaf, called by nofp_middle,
// called by nofp_outer. With GOTRACE_UNWIND=auto (the default) or libunwind
// (DWARF CFI) the wait's stack holds all three and the thread's start
// routine; with GOTRACE_UNWIND=fp it is short, the leaf and whatever the
// frame-pointer chain still reaches, and tracing must never crash.
//
// The functions do work after their calls (no tail calls) and are not
// inlined; nofp_middle also keeps rbp busy as a general register, so a walk
// by frame pointers meets a value that is not a frame pointer.
//
// It also prints the descriptor its first open() gets: libunwind opens a pipe
// when it initialises, which must not take the program's low descriptors.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "scenario_handoff.h"

enum { kRounds = 4 };

static volatile unsigned long sink;

__attribute__((noinline)) static void nofp_leaf(void) {
  pthread_mutex_lock(&mu);
  const unsigned g0 = gen;
  waiting = 1;
  while (gen == g0) pthread_cond_wait(&cv, &mu);  // LINE:nofp_leaf
  waiting = 0;
  served++;
  pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void nofp_middle(unsigned long x) {
  // Enough live values that the compiler also allocates rbp.
  unsigned long a = x * 3, b = x ^ 0x5555, c = x + 7, d = x * x, e = x >> 3, f = ~x, h = x * 11;
  __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(h));
  nofp_leaf();  // LINE:nofp_middle
  sink += a + b + c + d + e + f + h;
}

__attribute__((noinline)) static void nofp_outer(int rounds) {
  for (int i = 0; i < rounds; i++) {
    nofp_middle((unsigned long)i);  // LINE:nofp_outer
    sink++;
  }
}

static void* nofp_worker(void* arg) {
  nofp_outer(*(const int*)arg);
  sink++;
  return NULL;
}

int main(void) {
  const int fd = open("/dev/null", O_RDONLY);
  printf("first descriptor %d\n", fd);
  close(fd);
  int rounds = kRounds;
  pthread_t t;
  pthread_create(&t, NULL, nofp_worker, &rounds);
  release_waits(rounds);
  pthread_join(t, NULL);
  printf("nofp rounds %d served %d\n", rounds, served);
  return served == rounds ? 0 : 1;
}
