// SPDX-License-Identifier: Apache-2.0
// Scenario: a daemon that points its stderr elsewhere inside glibc, where no
// dup2 hook sees it: `daemonize daemon3 MARKER` calls daemon(3) (which
// reopens 0 to 2 on /dev/null), `daemonize freopen MARKER` forks, calls
// setsid and freopen()s stdout and stderr on /dev/null. Either way the
// daemon then sleeps 2 s and creates MARKER; the caller's pipe must close
// when the program's first process exits, not when the daemon does.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  if (strcmp(argv[1], "daemon3") == 0) {
    if (daemon(1, 0) != 0) return 1;
  } else {
    if (fork() != 0) return 0;
    setsid();
    if (freopen("/dev/null", "w", stderr) == NULL || freopen("/dev/null", "w", stdout) == NULL)
      return 1;
  }
  sleep(2);
  const int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
  return fd >= 0 ? 0 : 1;
}
