// SPDX-License-Identifier: Apache-2.0
// Scenario: four threads contend for one mutex. The holder sometimes sleeps
// inside the critical section, so the others block whatever the machine's
// load (contention by construction, not by timing luck): the threads start
// together (a barrier) and the sleeps are long enough (200 us, 100 per
// thread) for the others to reach the lock even on a loaded 2-cpu machine.
// -pprof=sync must name contended_section() with its file and line.
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

__attribute__((noinline)) static void contended_section(int i) {
  pthread_mutex_lock(&mu);  // CONTENDED_LINE (line 16)
  for (int k = 0; k < 200; k++) counter++;
  if (i % 8 == 0) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_unlock(&mu);
}

static pthread_barrier_t start;

static void* worker(void* arg) {
  (void)arg;
  pthread_barrier_wait(&start);
  for (int i = 0; i < 800; i++) contended_section(i);
  return NULL;
}

int main(void) {
  pthread_t t[4];
  pthread_barrier_init(&start, NULL, 4);
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  printf("counter %lu\n", counter);
  return counter == 4ul * 800 * 200 ? 0 : 1;
}
