// SPDX-License-Identifier: Apache-2.0
// Scenario: four readers and a writer on a rwlock, started together by a
// barrier, round after round. The writer holds the lock a while: readers
// block on it and are woken by its unlock.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t start;
static long shared_value, reads;

__attribute__((noinline)) static void* reader(void* arg) {
  (void)arg;
  for (int r = 0; r < 20; r++) {
    pthread_barrier_wait(&start);
    usleep(100);  // the writer gets the lock first
    pthread_rwlock_rdlock(&lock);
    __atomic_add_fetch(&reads, shared_value >= 0, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&lock);
  }
  return NULL;
}

__attribute__((noinline)) static void* writer(void* arg) {
  (void)arg;
  for (int r = 0; r < 20; r++) {
    pthread_barrier_wait(&start);
    pthread_rwlock_wrlock(&lock);
    shared_value++;
    usleep(1000);  // readers pile up behind the write lock
    pthread_rwlock_unlock(&lock);
  }
  return NULL;
}

int main(void) {
  pthread_barrier_init(&start, NULL, 5);
  pthread_t t[5];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, reader, NULL);
  pthread_create(&t[4], NULL, writer, NULL);
  for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
  printf("value %ld reads %ld\n", shared_value, reads);
  return shared_value == 20 && reads == 80 ? 0 : 1;
}
