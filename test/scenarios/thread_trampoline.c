// SPDX-License-Identifier: Apache-2.0
// Scenario: threads of different roles started through one routine, as the
// JVM starts all of its own (thread_native_entry) and Rust's std does
// (thread_start): each names itself (pthread_setname_np) and then does its
// work. Two "gc" threads of a series (gc-0, gc-1), two compilers whose
// names differ by a digit inside a word (C1 comp, C2 comp), one "io". And a
// pool of two threads of its own routine that never name themselves.
#define _GNU_SOURCE  // pthread_setname_np
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void Work(void) {
  for (int i = 0; i < 50; ++i) {
    pthread_mutex_lock(&mu);
    usleep(10);
    pthread_mutex_unlock(&mu);
  }
}

static void* trampoline(void* arg) {
  pthread_setname_np(pthread_self(), (const char*)arg);
  Work();
  return NULL;
}

static void* lonely_pool(void* arg) {
  (void)arg;
  Work();
  return NULL;
}

int main(void) {
  static const char* kNames[] = {"gc-0", "gc-1", "C1 comp", "C2 comp", "io"};
  enum { kRoles = sizeof kNames / sizeof kNames[0] };
  pthread_t roles[kRoles], pool[2];
  for (int i = 0; i < kRoles; ++i)
    if (pthread_create(&roles[i], NULL, trampoline, (void*)kNames[i]) != 0) return 2;
  for (int i = 0; i < 2; ++i)
    if (pthread_create(&pool[i], NULL, lonely_pool, NULL) != 0) return 2;
  for (int i = 0; i < kRoles; ++i) pthread_join(roles[i], NULL);
  for (int i = 0; i < 2; ++i) pthread_join(pool[i], NULL);
  printf("%d roles, 2 pool threads\n", kRoles);
  return 0;
}
