// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 18): the kernel's ring buffers a traced process maps, as
// it starts, after 30 ms of recorded calls (usleep) and once it has made a
// second thread. Prints "rings STAGE N PAGES" (N mappings of the perf event
// inode, PAGES pages in all, metadata pages included) for each stage, then
// spins 50 ms so that the trace has CPU samples after the last stage.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void show(const char* stage) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (f == NULL) {
    perror("/proc/self/maps");
    return;
  }
  char line[512];
  unsigned long pages = 0;
  int n = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, "perf_event") == NULL) continue;
    unsigned long a, b;
    if (sscanf(line, "%lx-%lx", &a, &b) != 2) continue;
    pages += (b - a) / 4096;
    n++;
  }
  fclose(f);
  printf("rings %s %d %lu\n", stage, n, pages);
}

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static void spin(uint64_t ms) {
  const uint64_t until = NowNs() + ms * 1000000u;
  uint64_t x = 1;
  while (NowNs() < until)
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005u + 1442695040888963407u;
  sink = x;
}

static void* worker(void* arg) {
  (void)arg;
  usleep(1000);
  return NULL;
}

int main(void) {
  show("start");
  for (int i = 0; i < 30; i++) usleep(1000);
  show("recorded");
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
  pthread_join(t, NULL);
  show("threads");
  spin(50);
  return 0;
}
