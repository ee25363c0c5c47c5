// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 13): a one-thread program that only computes, calling
// nothing gotrace records (the clock is read through the vDSO), as an
// in-memory database query or a numeric loop does.
//   cpu_spin MS [--pin] [--io MS2] [--silent]
// Spins for MS milliseconds of wall time in a chain of three functions;
// --pin first pins the process to the CPU it runs on, so that every record
// of the kernel's goes to one ring buffer; --io first writes to /dev/null
// for MS2 milliseconds (recorded calls: a script's imports, then its loop);
// --silent prints nothing (a write to a pipe is a recorded call, whose
// 10 ms tick would read the kernel's rings once more before the end).
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t spin_inner(uint64_t until) {
  uint64_t x = 1, n = 0;
  while (NowNs() < until) {
    for (int i = 0; i < 1000; i++) x = x * 6364136223846793005u + 1442695040888963407u;
    ++n;
  }
  sink = x;
  return n;
}

__attribute__((noinline)) static uint64_t spin_middle(uint64_t until) { return spin_inner(until) + 1; }

__attribute__((noinline)) static uint64_t spin_outer(uint64_t ms) {
  return spin_middle(NowNs() + ms * 1000000u) + 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpu_spin MS [--pin] [--io MS2] [--silent]\n");
    return 2;
  }
  int silent = 0;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--pin") == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(sched_getcpu(), &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) perror("sched_setaffinity");
    } else if (strcmp(argv[i], "--silent") == 0) {
      silent = 1;
    } else if (strcmp(argv[i], "--io") == 0 && i + 1 < argc) {
      const uint64_t until = NowNs() + strtoull(argv[++i], NULL, 10) * 1000000u;
      const int fd = open("/dev/null", O_WRONLY);
      char byte = 0;
      while (NowNs() < until) (void)!write(fd, &byte, 1);
      close(fd);
    }
  }
  const uint64_t rounds = spin_outer(strtoull(argv[1], NULL, 10));
  if (!silent) printf("spun %s ms: %s\n", argv[1], rounds > 1 ? "ok" : "no rounds");
  return 0;
}
