// SPDX-License-Identifier: Apache-2.0
// Scenario: threads that allocate at once. Each of 64 threads, created one
// after another while the others run, takes small blocks and writes over
// them from its start; the
// block the tracer's pthread_create hook handed the new thread is freed as
// the thread starts, so it is the first such block glibc gives back. The
// hook read its creation id from that block after the real pthread_create
// returned: a worker quick enough had written over it, and the trace showed
// a thread created under a garbage id (4194304) that never ran.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kThreads = 64 };

static void* worker(void* arg) {
  unsigned long v = (unsigned long)arg;
  for (int i = 0; i < 2000; i++) {
    unsigned char* p = malloc(24);
    memset(p, 0x40, 24);
    v += p[i % 24];
    free(p);
  }
  return (void*)v;
}

int main(void) {
  pthread_t t[kThreads];
  for (long i = 0; i < kThreads; i++)
    if (pthread_create(&t[i], NULL, worker, (void*)i) != 0) return 2;
  unsigned long sum = 0;
  for (int i = 0; i < kThreads; i++) {
    void* r;
    if (pthread_join(t[i], &r) != 0) return 2;
    sum += (unsigned long)r;
  }
  printf("sum %lu\n", sum);
  return 0;
}
