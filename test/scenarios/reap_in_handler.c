// SPDX-License-Identifier: Apache-2.0
// Scenario: a parent that reaps its children in its SIGCHLD handler, which
// runs while the parent waits in a recorded call (PostgreSQL's postmaster
// reaps its backends so, while it sits in select; bash reaps a command
// substitution's child so, often while it reads the pipe). SIGCHLD is
// blocked but inside pselect, so the handler always runs there.
//   reap_in_handler            the child sleeps (a wait worth a trace)
//                              until the parent kills it with SIGKILL:
//                              the parent's reaping is the only word on
//                              how it ended. Prints the child's pid, then
//                              "reaped signal 9".
//   reap_in_handler PROG ARGS  the child execs PROG ARGS; prints
//                              "reaped exit N".
#include <signal.h>
#include <stdio.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t g_done;
static volatile sig_atomic_t g_status;

static void OnChild(int sig) {
  (void)sig;
  int st;
  while (waitpid(-1, &st, WNOHANG) > 0) {
    g_status = st;
    g_done = 1;
  }
}

int main(int argc, char** argv) {
  struct sigaction sa = {0};
  sa.sa_handler = OnChild;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);
  sigset_t chld, open_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &open_mask);
  sigdelset(&open_mask, SIGCHLD);
  const pid_t child = fork();
  if (child == 0) {
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    if (argc > 1) {
      execv(argv[1], argv + 1);
      _exit(127);
    }
    const struct timespec ts = {30, 0};
    nanosleep(&ts, NULL);
    _exit(0);
  }
  if (argc <= 1) {
    printf("%d\n", (int)child);
    fflush(stdout);
    const struct timespec nap = {0, 300 * 1000 * 1000};
    nanosleep(&nap, NULL);  // the child is in its sleep
    kill(child, SIGKILL);
  }
  while (!g_done) {
    const struct timespec ts = {1, 0};
    pselect(0, NULL, NULL, NULL, &ts, &open_mask);  // the handler runs in here
  }
  if (WIFSIGNALED(g_status))
    printf("reaped signal %d\n", WTERMSIG(g_status));
  else
    printf("reaped exit %d\n", WEXITSTATUS(g_status));
  return 0;
}
