// SPDX-License-Identifier: Apache-2.0
// Scenario: a child forked by a signal handler that interrupted a recorded
// wait (PostgreSQL 15's postmaster starts its walwriter, autovacuum and
// startup processes from its SIGCHLD and SIGUSR1 handlers while it sits
// in select). A thread blocks in a read of an empty pipe; a SIGALRM
// handler on that thread forks; the child sleeps 30 ms (a wait worth a
// trace) and exits 7 without returning from the handler. The parent's
// handler wakes the read. Prints "child 7".
//   fork_in_handler [--return]
// --return: the thread is a second one (its record is not the first), and
// the child sleeps 5 ms in the handler, returns into the interrupted read
// (EINTR), then sleeps 30 ms and exits 8.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_pipe[2];
static int g_return;
static volatile pid_t g_child = -1;
static volatile sig_atomic_t g_in_child;

__attribute__((noinline)) static void ChildMain(int code) {
  const struct timespec ts = {0, 30 * 1000 * 1000};
  nanosleep(&ts, NULL);
  exit(code);
}

static void OnAlarm(int sig) {
  (void)sig;
  const pid_t p = fork();
  if (p == 0) {
    if (!g_return) ChildMain(7);
    // Records in its log (the thread's record there) before the read's
    // end does.
    const struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    g_in_child = 1;
    return;
  }
  g_child = p;
  (void)!write(g_pipe[1], "x", 1);
}

static void* Reader(void* arg) {
  (void)arg;
  char c;
  for (;;) {
    const ssize_t n = read(g_pipe[0], &c, 1);
    if (g_in_child) ChildMain(8);
    if (n == 1) break;
    if (n < 0 && errno != EINTR) exit(2);
  }
  return NULL;
}

int main(int argc, char** argv) {
  g_return = argc > 1 && strcmp(argv[1], "--return") == 0;
  if (pipe(g_pipe) != 0) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnAlarm;  // no SA_RESTART: the read ends with EINTR
  sigaction(SIGALRM, &sa, NULL);
  pthread_t t = pthread_self();
  if (g_return && pthread_create(&t, NULL, Reader, NULL) != 0) return 2;
  const struct timespec wait = {0, 20 * 1000 * 1000};
  if (g_return) {
    nanosleep(&wait, NULL);
    pthread_kill(t, SIGALRM);
    pthread_join(t, NULL);
  } else {
    ualarm(20 * 1000, 0);  // the main thread reads; the timer's signal comes to it
    Reader(NULL);
  }
  int st = 0;
  if (g_child <= 0 || waitpid(g_child, &st, 0) != g_child) return 2;
  printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return 0;
}
