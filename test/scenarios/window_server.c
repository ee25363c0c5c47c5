// SPDX-License-Identifier: Apache-2.0
// A small service for trace windows (issue 16): a thread blocked on a
// condition variable for the whole run ("blocker"), two workers that take a
// shared lock and sleep 2 ms in a loop, each round announced with
// gotrace_log("tick", N) (N counts up across the process, so a window's
// ticks tell which part of the run it holds), and a main thread blocked in
// read(0) until its input closes. Prints the number of ticks at the end.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gotrace/annotate.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static atomic_int g_done;
static atomic_long g_ticks;
static volatile unsigned long g_sink;

static void* blocker(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "blocker");
  pthread_mutex_lock(&g_lock);
  while (!atomic_load(&g_done)) pthread_cond_wait(&g_cond, &g_lock);
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

static void* worker(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "worker");
  while (!atomic_load(&g_done)) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < 20000; ++i) g_sink += (unsigned long)i * 7;
    const long n = atomic_fetch_add(&g_ticks, 1) + 1;
    pthread_mutex_unlock(&g_lock);
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", n);
    gotrace_log(0, "tick", buf);
    const struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(void) {
  pthread_t b, w[2];
  pthread_create(&b, NULL, blocker, NULL);
  for (int i = 0; i < 2; ++i) pthread_create(&w[i], NULL, worker, NULL);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  atomic_store(&g_done, 1);
  pthread_mutex_lock(&g_lock);
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
  pthread_join(b, NULL);
  for (int i = 0; i < 2; ++i) pthread_join(w[i], NULL);
  printf("done\n");
  return 0;
}
