// SPDX-License-Identifier: Apache-2.0
// close_range(3, ~0U) and closefrom(3), as python's subprocess children and
// many daemons call them before exec, and a loop of close() over every
// descriptor, must cost the traced process no more
// than the untraced one: the tracer's per-descriptor table is 1 MiB, and
// reading all of it touched 256 pages never used (a page fault each).
// Prints "ok", or the page faults the calls took.
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static long MinorFaults(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

int main(void) {
  for (int round = 0; round < 3; ++round) {
    int p[2];
    if (pipe(p) != 0) return 2;
    const long before = MinorFaults();
    close_range(3, ~0U, 0);
    const long faults = MinorFaults() - before;
    if (faults > 16) {
      printf("faults %ld\n", faults);
      return 1;
    }
    if (pipe(p) != 0) return 2;
    const long before2 = MinorFaults();
    closefrom(3);
    const long faults2 = MinorFaults() - before2;
    if (faults2 > 16) {
      printf("closefrom faults %ld\n", faults2);
      return 1;
    }
  }
  // An old daemon's loop over every descriptor up to its limit.
  int p[2];
  if (pipe(p) != 0) return 2;
  const long before = MinorFaults();
  for (int fd = 3; fd < (1 << 18); ++fd) close(fd);
  const long faults = MinorFaults() - before;
  if (faults > 16) {
    printf("close loop faults %ld\n", faults);
    return 1;
  }
  printf("ok\n");
  return 0;
}
