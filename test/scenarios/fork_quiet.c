// SPDX-License-Identifier: Apache-2.0
// Scenario: fork children that record nothing before they end, none by an
// exec: one by exit(5), one by _exit(6), one killed by SIGTERM (its default
// action). Each is still one of the run's processes, with how it ended.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
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

int main(void) {
  const int a = Child(0), b = Child(1), c = Child(2);
  printf("children %d %d %d\n", a, b, c);
  return 0;
}
