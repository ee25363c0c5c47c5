// SPDX-License-Identifier: Apache-2.0
// Scenario: a program that counts the SIGTERMs it gets (its handler runs once
// for each delivery) for MS milliseconds of sleep, then prints "TERM n".
//   term_count MS [--oneshot | --quit]
// --oneshot installs the handler with SA_RESETHAND: the first SIGTERM runs
// it, a second one meets the default action and ends the process. --quit
// counts SIGQUIT instead ("QUIT n").
// tracewrap passes on a signal sent to it; one sent to the whole process
// group must still reach the program once (tracewrap_test.cc).
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t g_count;

static void OnTerm(int sig) {
  (void)sig;
  g_count = g_count + 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: term_count MS [--oneshot | --quit]\n");
    return 2;
  }
  const long ms = atol(argv[1]);
  const int quit = argc > 2 && strcmp(argv[2], "--quit") == 0;
  const int sig = quit ? SIGQUIT : SIGTERM;
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = OnTerm;
  sigemptyset(&a.sa_mask);
  a.sa_flags = SA_RESTART;
  if (argc > 2 && strcmp(argv[2], "--oneshot") == 0) a.sa_flags |= SA_RESETHAND;
  if (sigaction(sig, &a, NULL) != 0) {
    perror("sigaction");
    return 2;
  }
  struct timespec end, now;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += ms / 1000;
  end.tv_nsec += (ms % 1000) * 1000000L;
  if (end.tv_nsec >= 1000000000L) {
    end.tv_sec += 1;
    end.tv_nsec -= 1000000000L;
  }
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) break;
    const struct timespec tick = {0, 10 * 1000000L};
    nanosleep(&tick, NULL);  // (interrupted by each signal: the loop goes on)
  }
  printf("%s %d\n", quit ? "QUIT" : "TERM", (int)g_count);
  return 0;
}
