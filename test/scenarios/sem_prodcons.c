// SPDX-License-Identifier: Apache-2.0
// Scenario: a producer posts a semaphore with pauses; a consumer waits on it.
// The consumer's waits must be ended by the producer's posts.
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <unistd.h>

static sem_t items;
static long consumed;

__attribute__((noinline)) static void* consumer(void* arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    sem_wait(&items);
    consumed++;
  }
  return NULL;
}

__attribute__((noinline)) static void* producer(void* arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    usleep(200);
    sem_post(&items);
  }
  return NULL;
}

int main(void) {
  sem_init(&items, 0, 0);
  pthread_t c, p;
  pthread_create(&c, NULL, consumer, NULL);
  pthread_create(&p, NULL, producer, NULL);
  pthread_join(p, NULL);
  pthread_join(c, NULL);
  struct timespec t = {0, 0};
  int r = sem_timedwait(&items, &t);  // expired at once: -1, ETIMEDOUT either way
  printf("consumed %ld timedwait %d\n", consumed, r);
  return consumed == 100 ? 0 : 1;
}
