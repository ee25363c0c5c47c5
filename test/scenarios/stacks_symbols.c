// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): where function names come from. stacks.cmake builds
// this program as PIE and as non-PIE (-no-pie), and copies each twice:
// stripped of its debug info with the DWARF in a separate file named by
// .gnu_debuglink (next to it), and stripped of everything (no .symtab, no
// DWARF; the executable's functions are not in .dynsym either). The first
// must be symbolized from the debug file (names, files, lines); the second
// gives module+0xoffset frames, and must not crash anything.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "scenario_handoff.h"

enum { kRounds = 3 };

static volatile unsigned long sink;

__attribute__((noinline)) static void symbols_wait(void) {
  pthread_mutex_lock(&mu);
  const unsigned g0 = gen;
  waiting = 1;
  while (gen == g0) pthread_cond_wait(&cv, &mu);  // LINE:symbols_wait
  waiting = 0;
  served++;
  pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void symbols_caller(int rounds) {
  for (int i = 0; i < rounds; i++) {
    symbols_wait();  // LINE:symbols_caller
    sink++;
  }
}

static void* symbols_worker(void* arg) {
  symbols_caller(*(const int*)arg);
  sink++;
  return NULL;
}

int main(void) {
  int rounds = kRounds;
  pthread_t t;
  pthread_create(&t, NULL, symbols_worker, &rounds);
  release_waits(rounds);
  pthread_join(t, NULL);
  printf("symbols rounds %d served %d\n", rounds, served);
  return served == rounds ? 0 : 1;
}
