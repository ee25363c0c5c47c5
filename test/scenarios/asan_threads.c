// SPDX-License-Identifier: Apache-2.0
// Scenario: a program built with -fsanitize=address, as CI jobs build their
// tests. ASan's runtime refuses to start when a preloaded library comes
// before it in the initial library list, unless ASAN_OPTIONS says
// verify_asan_link_order=0, which tracewrap and the exec hooks add.
//   asan_threads          a thread allocates, waits on a mutex, frees: "asan ok"
//   asan_threads overflow  writes past a heap block: ASan reports and exits 1
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  char* p = malloc(64);
  memset(p, 1, 64);
  free(p);
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "overflow") == 0) {
    volatile char* p = malloc(8);
    p[8] = 1;  // one past the end: ASan's heap-buffer-overflow
    free((void*)p);
    return 0;
  }
  pthread_t t;
  pthread_mutex_lock(&g_lock);
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 2;
  const struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);  // the worker waits for the lock meanwhile
  pthread_mutex_unlock(&g_lock);
  pthread_join(t, NULL);
  puts("asan ok");
  return 0;
}
