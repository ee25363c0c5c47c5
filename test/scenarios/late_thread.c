// SPDX-License-Identifier: Apache-2.0
// Scenario: a thread that libc creates itself, not through pthread_create's
// public symbol (timer_create with SIGEV_THREAD: glibc starts the helper
// and notification threads internally). The main thread sleeps 100 ms,
// then arms a 10 ms timer whose notification sleeps 5 ms (a recorded
// wait) and prints "late" (its thread id on stderr: "late TID"); main
// waits for it.
#define _GNU_SOURCE
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t g_done;

static void Notify(union sigval v) {
  (void)v;
  const struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, NULL);
  fprintf(stderr, "late %d\n", (int)gettid());
  printf("late\n");
  fflush(stdout);
  sem_post(&g_done);
}

int main(void) {
  sem_init(&g_done, 0, 0);
  const struct timespec nap = {0, 100 * 1000 * 1000};
  nanosleep(&nap, NULL);
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD;
  ev.sigev_notify_function = Notify;
  timer_t t;
  if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) return 2;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  its.it_value.tv_nsec = 10 * 1000 * 1000;
  if (timer_settime(t, 0, &its, NULL) != 0) return 2;
  while (sem_wait(&g_done) != 0) {
  }
  timer_delete(t);
  return 0;
}
