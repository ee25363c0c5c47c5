// SPDX-License-Identifier: Apache-2.0
// Scenario: threads that name themselves (pthread_setname_np), as Python's,
// the JVM's and redis's do. Two "pool" threads share one start routine and
// end before the process; a "watcher" is still blocked in read() when the
// process exits, so its name can only come from the exit path.
#define _GNU_SOURCE  // pthread_setname_np, pthread_getname_np
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pipe_fds[2];

static void* pool_worker(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "pool");
  for (int i = 0; i < 100; ++i) {
    pthread_mutex_lock(&mu);
    usleep(10);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

static void* watcher(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "watcher");
  char c;
  for (;;) {
    if (read(pipe_fds[0], &c, 1) <= 0) usleep(1000);  // never written: blocks until exit
  }
  return NULL;
}

int main(void) {
  if (pipe(pipe_fds) != 0) return 2;
  pthread_t w, pool[2];
  if (pthread_create(&w, NULL, watcher, NULL) != 0) return 2;
  for (int i = 0; i < 2; ++i)
    if (pthread_create(&pool[i], NULL, pool_worker, NULL) != 0) return 2;
  for (int i = 0; i < 2; ++i) pthread_join(pool[i], NULL);
  // Let the watcher name itself before the process ends.
  char name[16] = "";
  for (int i = 0; i < 5000; ++i) {
    if (pthread_getname_np(w, name, sizeof name) == 0 && name[0] == 'w') break;
    usleep(1000);
  }
  printf("named %s\n", name);
  return 0;
}
