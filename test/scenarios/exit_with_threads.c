// SPDX-License-Identifier: Apache-2.0
// Scenario: main returns while one thread is blocked forever in a condition
// wait, one is blocked on a mutex main holds, and one is computing. In the
// trace the blocked ones must end blocked (with their stacks) and the busy
// one descheduled, never left running.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int started;

__attribute__((noinline)) static void* waits_forever(void* arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  for (;;) pthread_cond_wait(&never, &mu);
  return NULL;
}

__attribute__((noinline)) static void* blocks_on_mutex(void* arg) {
  (void)arg;
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&held);  // main holds it until exit
  return NULL;
}

__attribute__((noinline)) static void* computes(void* arg) {
  (void)arg;
  usleep(100);  // one recorded event, then it only computes
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  volatile unsigned long x = 0;
  for (;;) x++;
  return NULL;
}

int main(void) {
  pthread_mutex_lock(&held);
  pthread_t t[3];
  pthread_create(&t[0], NULL, waits_forever, NULL);
  pthread_create(&t[1], NULL, blocks_on_mutex, NULL);
  pthread_create(&t[2], NULL, computes, NULL);
  while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 3) usleep(1000);
  usleep(20000);  // let the waits begin
  printf("exiting\n");
  return 0;
}
