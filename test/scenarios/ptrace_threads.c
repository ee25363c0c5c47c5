// SPDX-License-Identifier: Apache-2.0
// Scenario: a debugger's wait loop, as strace -f and gdb run one. The parent
// forks a child that asks to be traced (PTRACE_TRACEME) and stops; the
// parent follows its threads (PTRACE_O_TRACECLONE) and resumes every stop
// from waitpid(-1, __WALL), which also reaps each of the child's threads
// as it ends, by its thread id. The child starts three threads that each
// take a mutex and sleep, joins them and exits with 0. Prints how many
// threads' ends the parent reaped and how the child ended; "ptrace
// unavailable" if this system does not allow it (a test skips then).
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kThreads = 3 };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  const struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, NULL);
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

static int child(int ready_fd) {
  const char ok = ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 'y' : 'n';
  if (write(ready_fd, &ok, 1) != 1 || ok != 'y') return 3;
  raise(SIGSTOP);  // the parent sets its options here
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
  return 0;
}

int main(void) {
  int ready[2];
  if (pipe(ready) != 0) return 2;
  const pid_t c = fork();
  if (c < 0) return 2;
  if (c == 0) {
    close(ready[0]);
    _exit(child(ready[1]));
  }
  close(ready[1]);
  char ok = 'n';
  if (read(ready[0], &ok, 1) != 1 || ok != 'y') {
    waitpid(c, NULL, 0);
    printf("ptrace unavailable\n");
    return 0;
  }
  int st = 0;
  if (waitpid(c, &st, 0) != c || !WIFSTOPPED(st)) return 2;
  if (ptrace(PTRACE_SETOPTIONS, c, NULL, (void*)(long)PTRACE_O_TRACECLONE) != 0) return 2;
  if (ptrace(PTRACE_CONT, c, NULL, NULL) != 0) return 2;
  int thread_ends = 0, child_status = -1;
  for (;;) {
    const pid_t r = waitpid(-1, &st, __WALL);
    if (r < 0) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      if (r == c) {
        child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        break;
      }
      ++thread_ends;
      continue;
    }
    // A stop: a clone event, a new thread's first stop, or a signal the
    // child gets (passed on).
    int sig = WSTOPSIG(st);
    if (sig == SIGTRAP || sig == SIGSTOP) sig = 0;
    ptrace(PTRACE_CONT, r, NULL, (void*)(long)sig);
  }
  // The tracer's own threads in the child (its flusher) end there too.
  printf("reaped %s %d threads' ends; child exited with %d\n",
         thread_ends >= kThreads ? "at least" : "only", kThreads, child_status);
  return child_status == 0 ? 0 : 1;
}
