// SPDX-License-Identifier: Apache-2.0
// Scenario for kill recovery (issue 20): two threads hand a turn back and
// forth through a condition variable, and one of them writes the time
// (CLOCK_MONOTONIC, ns) to stdout every 16 turns, so that a test that kills
// the process knows what it did last. Modes:
//   kill_pingpong pingpong [ROUNDS]  ROUNDS turns each (0: until killed)
//   kill_pingpong burst N            N one-byte writes to /dev/null on the
//                                    main thread (a large log), then "exiting"
// First line: "start PID NS", written with write(2) right after reading the
// clock: that system call (the main thread's second, after an empty write)
// anchors the trace's relative times to the clock.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn = 0;
static long rounds = 0;

static long long Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void* Player(void* arg) {
  const int me = (int)(long)arg;
  for (long i = 0; rounds == 0 || i < rounds; i++) {
    pthread_mutex_lock(&mu);
    while (turn != me) pthread_cond_wait(&cv, &mu);
    turn = 1 - me;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    if (me == 0 && i % 16 == 0) {
      char line[40];
      const int n = snprintf(line, sizeof line, "t %lld\n", Now());
      if (write(1, line, (size_t)n) != n) return NULL;
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "pingpong";
  // write(), not stdio: glibc's stdio writes through an internal call the
  // tracer does not see, and this write is the trace's anchor. A first,
  // empty write binds write() (lazy binding takes tens of microseconds).
  if (write(1, "", 0) != 0) return 1;
  char line[64];
  const int len = snprintf(line, sizeof line, "start %d %lld\n", (int)getpid(), Now());
  if (write(1, line, (size_t)len) != len) return 1;
  usleep(1000);
  if (strcmp(mode, "burst") == 0) {
    const long n = argc > 2 ? atol(argv[2]) : 100000;
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (long i = 0; i < n; i++)
      if (write(null, "x", 1) != 1) return 1;
    close(null);
  } else {
    rounds = argc > 2 ? atol(argv[2]) : 0;
    pthread_t a, b;
    pthread_create(&a, NULL, Player, (void*)0L);
    pthread_create(&b, NULL, Player, (void*)1L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
  }
  printf("exiting %lld\n", Now());
  fflush(stdout);
  return 0;
}
