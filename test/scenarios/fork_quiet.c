// SPDX-License-Identifier: Apache-2.0
// Scenario: fork children that record nothing before they end, none by an
// exec: one by exit(5), one by _exit(6), one killed by SIGTERM (its default
// action). Each is still one of the run's processes, with how it ended.
// Then a double fork (a daemon's): a child that records nothing forks a
// grandchild that sleeps (a wait: worth a trace) and exits 3; the child
// waits for it and exits 4. Both are listed, each with its own parent.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int Child(int how) {
  const pid_t p = fork();
  if (p < 0) exit(2);
  if (p == 0) {
    if (how == 0) exit(5);
    if (how == 1) _exit(6);
    raise(SIGTERM);
    _exit(7);  // (not reached)
  }
  int st = 0;
  if (waitpid(p, &st, 0) != p) exit(2);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int DoubleFork(pid_t* middle, pid_t* grandchild) {
  int fds[2];
  if (pipe(fds) != 0) exit(2);
  const pid_t p = fork();
  if (p < 0) exit(2);
  if (p == 0) {
    const pid_t q = fork();
    if (q < 0) _exit(2);
    if (q == 0) {
      const struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
      _exit(3);
    }
    int st = 0;
    // (The pipe's write is a system call of the middle process's own, but a
    // short one: it stays quiet.)
    if (write(fds[1], &q, sizeof q) != sizeof q) _exit(2);
    if (waitpid(q, &st, 0) != q) _exit(2);
    _exit(WIFEXITED(st) && WEXITSTATUS(st) == 3 ? 4 : 2);
  }
  close(fds[1]);
  if (read(fds[0], grandchild, sizeof *grandchild) != sizeof *grandchild) exit(2);
  int st = 0;
  if (waitpid(p, &st, 0) != p) exit(2);
  *middle = p;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void) {
  const int a = Child(0), b = Child(1), c = Child(2);
  pid_t middle = 0, grandchild = 0;
  const int d = DoubleFork(&middle, &grandchild);
  printf("children %d %d %d %d\n", a, b, c, d);
  fprintf(stderr, "double fork %d %d %d\n", (int)getpid(), (int)middle, (int)grandchild);
  return 0;
}
