// SPDX-License-Identifier: Apache-2.0
// Scenario: a detached thread that nobody joins; main waits for its signal
// on a condition variable, then exits while the thread is still finishing.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready = 0;
static int main_waiting = 0;

static void* detached_worker(void* arg) {
  (void)arg;
  // Signal only once main is inside pthread_cond_wait: it sets main_waiting
  // under the mutex, which it gives up only in the wait. (A fixed sleep here
  // lost the race on a loaded machine: main had not reached the wait yet.)
  for (;;) {
    pthread_mutex_lock(&mu);
    if (main_waiting) break;
    pthread_mutex_unlock(&mu);
    usleep(1000);
  }
  ready = 1;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  usleep(1000);
  return NULL;
}

int main(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &attr, detached_worker, NULL) != 0) return 2;
  pthread_mutex_lock(&mu);
  main_waiting = 1;
  while (!ready) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  printf("ready\n");
  return 0;
}
