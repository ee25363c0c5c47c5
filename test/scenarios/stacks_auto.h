// SPDX-License-Identifier: Apache-2.0
// What the stacks_auto scenarios (issue 14) share: waiting until a thread is
// really blocked, so that a contended lock or a blocking read is recorded as
// one every time, and writing the program's executable mappings, against
// which the test checks every PC of every recorded stack.
#pragma once
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

// Yields until thread `tid` of this process sleeps ('S' in
// /proc/self/task/TID/stat): it has entered the wait the scenario set up.
static void wait_until_sleeping(int tid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  for (;;) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    const ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return;  // gone: nothing to wait for
    buf[n] = '\0';
    const char* paren = strrchr(buf, ')');  // "pid (comm) S ..."
    if (paren != NULL && paren[1] == ' ' && paren[2] == 'S') return;
    sched_yield();
  }
}

// Copies /proc/self/maps to $STACKS_MAPS_OUT, if set (the traced run only).
static void save_maps(void) {
  const char* out = getenv("STACKS_MAPS_OUT");
  if (out == NULL) return;
  const int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  const int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  char buf[4096];
  ssize_t n;
  while (in >= 0 && fd >= 0 && (n = read(in, buf, sizeof buf)) > 0) {
    if (write(fd, buf, (size_t)n) != n) break;
  }
  if (in >= 0) close(in);
  if (fd >= 0) close(fd);
}
