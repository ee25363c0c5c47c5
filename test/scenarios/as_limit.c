// SPDX-License-Identifier: Apache-2.0
// Scenario: threads that never call malloc, under an address-space limit
// (the test runs it after `ulimit -v`): three with glibc's default stack,
// three with a smaller one, one on a stack of the program's own. Each
// waits at a barrier (a recorded wait, with its stack) until the main
// thread has read its own size (VmSize), which it prints.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_barrier_t start, done;

static __attribute__((noinline)) void WaitHere(void) { pthread_barrier_wait(&done); }

static void* Worker(void* arg) {
  pthread_barrier_wait(&start);
  WaitHere();
  return arg;
}

static long VmSizeKb(void) {
  char buf[4096];
  const int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = strstr(buf, "VmSize:");
  return p != NULL ? strtol(p + 7, NULL, 10) : -1;
}

int main(void) {
  enum { kThreads = 7 };
  static char own_stack[1 << 18] __attribute__((aligned(4096)));
  pthread_barrier_init(&start, NULL, kThreads + 1);
  pthread_barrier_init(&done, NULL, kThreads + 1);
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (i >= 3 && i < 6) pthread_attr_setstacksize(&a, 1 << 18);
    if (i == 6) pthread_attr_setstack(&a, own_stack, sizeof own_stack);
    const int rc = pthread_create(&t[i], &a, Worker, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0) {
      printf("pthread_create: %s\n", strerror(rc));
      return 1;
    }
  }
  pthread_barrier_wait(&start);
  usleep(20000);  // (the waits at `done` begin)
  printf("vmsize %ld\n", VmSizeKb());
  pthread_barrier_wait(&done);
  for (int i = 0; i < kThreads; ++i) pthread_join(t[i], NULL);
  return 0;
}
