// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/annotate_pool.c - an annotated request thread pool --===//
//
// Issue 17's scenario, in C99 through gotrace/annotate.h: the main thread
// receives kRequests requests, begins a task for each ("request") with a log
// line, and queues it; kWorkers threads handle them in a region "handle"
// holding the nested regions "parse", "compute" and, inside it, "db", log the
// result and end the task (a task begun on one thread and ended on another).
// The main thread waits for every result in a region "wait" of its own task
// "serve", then prints the total: the same output traced or not.
//===----------------------------------------------------------------------===//
#include <gotrace/annotate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kWorkers = 4, kRequests = 24 };

typedef struct {
  uint64_t task;
  int id;
} Request;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t have_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static Request queue[kRequests];
static int queued, taken, done;
static long total;

static long Work(int id, int rounds) {
  volatile long x = id;
  for (int i = 0; i < rounds; ++i) x = x * 31 + i;
  return x & 0xff;
}

__attribute__((noinline)) static long Handle(const Request* rq) {
  char msg[64];
  gotrace_region_begin(rq->task, "handle");
  gotrace_region_begin(rq->task, "parse");
  long v = Work(rq->id, 2000);
  gotrace_region_end(rq->task, "parse");
  gotrace_region_begin(rq->task, "compute");
  v += Work(rq->id + 1, 5000);
  gotrace_region_begin(rq->task, "db");
  v += Work(rq->id + 2, 3000);
  gotrace_region_end(rq->task, "db");
  gotrace_region_end(rq->task, "compute");
  snprintf(msg, sizeof msg, "request %d -> %ld", rq->id, v);
  gotrace_log(rq->task, "result", msg);
  gotrace_region_end(rq->task, "handle");
  return v;
}

static void* Worker(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (taken == queued && queued < kRequests) pthread_cond_wait(&have_work, &mu);
    if (taken == kRequests) {
      pthread_mutex_unlock(&mu);
      return NULL;
    }
    Request rq = queue[taken++];
    pthread_mutex_unlock(&mu);
    const long v = Handle(&rq);
    gotrace_task_end(rq.task);  // begun by the main thread
    pthread_mutex_lock(&mu);
    total += v;
    if (++done == kRequests) pthread_cond_signal(&all_done);
    pthread_mutex_unlock(&mu);
  }
}

int main(void) {
  pthread_t th[kWorkers];
  for (int i = 0; i < kWorkers; ++i) pthread_create(&th[i], NULL, Worker, NULL);
  const uint64_t serve = gotrace_task_begin("serve");
  for (int i = 0; i < kRequests; ++i) {
    char msg[32];
    Request rq = {gotrace_subtask_begin(serve, "request"), i};
    snprintf(msg, sizeof msg, "request %d", i);
    gotrace_log(rq.task, "", msg);
    pthread_mutex_lock(&mu);
    queue[queued++] = rq;
    pthread_cond_signal(&have_work);
    pthread_mutex_unlock(&mu);
  }
  gotrace_region_begin(serve, "wait");
  pthread_mutex_lock(&mu);
  while (done < kRequests) pthread_cond_wait(&all_done, &mu);
  pthread_cond_broadcast(&have_work);
  pthread_mutex_unlock(&mu);
  gotrace_region_end(serve, "wait");
  for (int i = 0; i < kWorkers; ++i) pthread_join(th[i], NULL);
  gotrace_task_end(serve);
  printf("%d requests, total %ld\n", kRequests, total);
  return 0;
}
