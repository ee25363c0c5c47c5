// SPDX-License-Identifier: Apache-2.0
// Scenario: a program that rewrites its own arguments in main, as perf's
// option parser does (it moves them and ends the array early: argv[1] is
// NULL afterwards, argc unchanged for the caller) and as setproctitle does
// (it writes a new title over the strings). Under tracewrap a descendant
// records into memory until it does something worth a trace, and writes
// its command line later: from what it was given, not from this.
//   argv_rewrite thread ARGS...  rewrites, then waits 2 ms in a thread
//   argv_rewrite quiet ARGS...   rewrites, then exits at once, silent (quiet)
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void* nap(void* arg) {
  (void)arg;
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, 0);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int thread = strcmp(argv[1], "thread") == 0;
  // setproctitle: the strings, one contiguous area, overwritten.
  char* end = argv[argc - 1] + strlen(argv[argc - 1]);
  memset(argv[0], 0, (size_t)(end - argv[0]));
  strcpy(argv[0], "rewritten");
  // perf's parse_options: the array ended early.
  for (int i = 1; i < argc; i++) argv[i] = 0;
  if (!thread) return 0;  // no system call at all: quiet however loaded the machine
  pthread_t t;
  if (pthread_create(&t, 0, nap, 0) != 0 || pthread_join(t, 0) != 0) return 1;
  return write(1, "done\n", 5) == 5 ? 0 : 1;
}
