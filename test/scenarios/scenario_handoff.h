// SPDX-License-Identifier: Apache-2.0
// The hand-off the stacks_* scenarios share: a worker waits on `cv` (in the
// frames each scenario is about, so the waiting side stays in each program:
// lock mu, note gen, set waiting, wait until gen moves, served++) and main
// releases its waits one at a time, each only once the worker is really
// waiting, so every wait is recorded with main as its waker. One scenario
// per executable: the state is static here.
#pragma once
#include <pthread.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int waiting;    // the worker is in pthread_cond_wait (set under mu)
static unsigned gen;   // bumped to release it
static int served;     // waits completed

// Releases `waits` waits, one at a time, each once the worker waits.
static void release_waits(int waits) {
  for (int i = 0; i < waits; i++) {
    for (;;) {
      pthread_mutex_lock(&mu);
      if (waiting) {
        waiting = 0;
        gen++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        break;
      }
      pthread_mutex_unlock(&mu);
      usleep(1000);
    }
  }
}
