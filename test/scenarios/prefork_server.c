// SPDX-License-Identifier: Apache-2.0
// A prefork service (nginx, Apache's prefork, PostgreSQL's backends): the
// master forks two workers without exec and hands each a job every 2 ms
// through a pipe of its own; a worker blocks in read(2) for the next job,
// works a little under a lock (pthread mutex, private to it) and sleeps
// 1 ms. The master ends when its input closes: it closes the workers'
// pipes, waits for them and prints "done N" (N: the jobs handed out).
// Each worker prints "worker I: J jobs" as it ends.
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kWorkers = 2 };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long g_sink;

static int Worker(int index, int in) {
  long jobs = 0;
  char c;
  while (read(in, &c, 1) == 1) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < 20000; ++i) g_sink += (unsigned long)i * 7;
    pthread_mutex_unlock(&g_lock);
    const struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    ++jobs;
  }
  printf("worker %d: %ld jobs\n", index, jobs);
  return 0;
}

int main(void) {
  int to[kWorkers];
  pid_t pids[kWorkers];
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 0; i < kWorkers; ++i) {
    int p[2];
    if (pipe(p) != 0) return 1;
    pids[i] = fork();
    if (pids[i] < 0) return 1;
    if (pids[i] == 0) {
      close(p[1]);
      for (int j = 0; j < i; ++j) close(to[j]);
      return Worker(i, p[0]);
    }
    close(p[0]);
    to[i] = p[1];
  }
  long handed = 0;
  for (;;) {
    struct pollfd in = {0, POLLIN, 0};
    const int r = poll(&in, 1, 2);
    if (r > 0) {
      char buf[64];
      if (read(0, buf, sizeof buf) <= 0) break;
      continue;
    }
    for (int i = 0; i < kWorkers; ++i) {
      if (write(to[i], "j", 1) == 1) ++handed;
    }
  }
  for (int i = 0; i < kWorkers; ++i) close(to[i]);
  int failed = 0;
  for (int i = 0; i < kWorkers; ++i) {
    int st = 0;
    if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
  }
  printf("done %ld\n", handed);
  return failed;
}
