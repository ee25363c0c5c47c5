// SPDX-License-Identifier: Apache-2.0
// Scenario: a fork child blocked in poll that ends by _exit from its own
// signal handler (PostgreSQL's checkpointer, autovacuum launcher and
// logical replication launcher, SIGQUIT'd by the postmaster's crash
// restart, after seconds in epoll_wait). The parent lets it wait 300 ms,
// sends SIGQUIT, reaps it and prints "child 2".
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void OnQuit(int sig) {
  (void)sig;
  _exit(2);
}

int main(void) {
  const pid_t child = fork();
  if (child == 0) {
    signal(SIGQUIT, OnQuit);
    int p[2];
    if (pipe(p) != 0) _exit(1);
    struct pollfd f = {p[0], POLLIN, 0};
    poll(&f, 1, 60000);
    _exit(0);
  }
  const struct timespec nap = {0, 300 * 1000 * 1000};
  nanosleep(&nap, NULL);
  kill(child, SIGQUIT);
  int st = 0;
  waitpid(child, &st, 0);
  printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
  return 0;
}
