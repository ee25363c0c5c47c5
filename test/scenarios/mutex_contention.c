// SPDX-License-Identifier: Apache-2.0
// Scenario: four threads contend for one mutex around a short critical
// section. -pprof=sync must name contended_section() with its file and line.
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

__attribute__((noinline)) static void contended_section(void) {
  pthread_mutex_lock(&mu);  // CONTENDED_LINE
  for (int i = 0; i < 2000; i++) counter++;
  pthread_mutex_unlock(&mu);
}

static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 3000; i++) contended_section();
  return NULL;
}

int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  printf("counter %lu\n", counter);
  return counter == 4ul * 3000 * 2000 ? 0 : 1;
}
