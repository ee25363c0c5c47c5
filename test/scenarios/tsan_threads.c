// SPDX-License-Identifier: Apache-2.0
// Scenario: a program built with -fsanitize=thread. ThreadSanitizer starts
// from the executable's preinit array, before any constructor of ours, and
// its dlsym calls malloc: our malloc's first look-up of the real one must
// not call a function TSan intercepts (its interceptors are not ready yet).
// Two threads take turns on a counter under a mutex (no race to report).
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_count;

static void* worker(void* arg) {
  (void)arg;
  for (int i = 0; i < 1000; ++i) {
    pthread_mutex_lock(&g_lock);
    ++g_count;
    pthread_mutex_unlock(&g_lock);
  }
  return NULL;
}

int main(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; ++i)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 2;
  for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
  printf("tsan ok %ld\n", g_count);
  return 0;
}
