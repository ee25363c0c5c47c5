// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): a wait inside a function the compiler inlined. Built
// -O2 -g -fno-omit-frame-pointer: inlined_wait() has no frame of its own, so
// only the debug info's inlined-subroutine entries can name it. -pprof=sync
// must show inlined_wait at the line of its pthread_cond_wait, then
// outer_caller at the line where inlined_wait was inlined.
//
// The waits are deterministic: the worker announces that it waits while
// holding the mutex, and main releases it only after seeing that, so every
// round is one real pthread_cond_wait (GoBlockCond).
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "scenario_handoff.h"

enum { kRounds = 5 };


static inline __attribute__((always_inline)) void inlined_wait(void) {
  pthread_mutex_lock(&mu);
  const unsigned g0 = gen;
  waiting = 1;
  while (gen == g0) pthread_cond_wait(&cv, &mu);  // LINE:inlined_wait
  waiting = 0;
  served++;
  pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void outer_caller(int rounds) {
  for (int i = 0; i < rounds; i++) {
    inlined_wait();  // LINE:outer_caller
    __asm__ volatile("" ::: "memory");
  }
}

static void* worker(void* arg) {
  outer_caller(*(const int*)arg);
  return NULL;
}

int main(void) {
  int rounds = kRounds;
  pthread_t t;
  pthread_create(&t, NULL, worker, &rounds);
  release_waits(rounds);
  pthread_join(t, NULL);
  printf("inline rounds %d served %d\n", rounds, served);
  return served == rounds ? 0 : 1;
}
