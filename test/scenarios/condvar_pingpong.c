// SPDX-License-Identifier: Apache-2.0
// Scenario: two threads hand a turn back and forth through one condition
// variable. Under the tracer, most unblocks must come from the other thread.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn = 0;
static int rounds = 2000;
static long hits[2];

static void* player(void* arg) {
  const int me = (int)(long)arg;
  for (int i = 0; i < rounds; i++) {
    pthread_mutex_lock(&mu);
    while (turn != me) pthread_cond_wait(&cv, &mu);
    hits[me]++;
    turn = 1 - me;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  pthread_t a, b;
  pthread_create(&a, NULL, player, (void*)0L);
  pthread_create(&b, NULL, player, (void*)1L);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("pingpong %ld %ld\n", hits[0], hits[1]);
  return hits[0] == rounds && hits[1] == rounds ? 0 : 1;
}
