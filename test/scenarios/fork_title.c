// SPDX-License-Identifier: Apache-2.0
// Scenario: a server's workers, forked without exec. The first rewrites its
// command line as setproctitle does (over the argument strings, padded with
// NULs: "worker: busy"), the second keeps its parent's; each sleeps (worth
// a trace of its own), then ends, by exit and by _exit.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const pid_t a = fork();
  if (a < 0) return 2;
  if (a == 0) {
    const size_t room = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
    memset(argv[0], 0, room);
    strncpy(argv[0], "worker: busy", room);
    usleep(30000);
    exit(0);
  }
  const pid_t b = fork();
  if (b < 0) return 2;
  if (b == 0) {
    usleep(30000);
    _exit(0);
  }
  int sa = 0, sb = 0;
  if (waitpid(a, &sa, 0) != a || waitpid(b, &sb, 0) != b) return 2;
  printf("workers %d %d\n", WEXITSTATUS(sa), WEXITSTATUS(sb));
  return 0;
}
