// SPDX-License-Identifier: Apache-2.0
// Scenario: 200 short-lived threads, created in waves of 20 and joined.
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void* short_lived(void* arg) {
  for (int i = 0; i < 100; i++) {
    pthread_mutex_lock(&mu);
    total += (long)arg;
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(void) {
  for (int wave = 0; wave < 10; wave++) {
    pthread_t t[20];
    for (int i = 0; i < 20; i++) pthread_create(&t[i], NULL, short_lived, (void*)1L);
    for (int i = 0; i < 20; i++) pthread_join(t[i], NULL);
  }
  printf("total %ld\n", total);
  return total == 200 * 100 ? 0 : 1;
}
