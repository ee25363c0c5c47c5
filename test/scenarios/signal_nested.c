// SPDX-License-Identifier: Apache-2.0
// Scenario (H17): signal handlers call interposed functions (write, nanosleep,
// mutex lock) while their thread is inside one (blocked in read, or in a
// sleep). Nothing deadlocks, results are unchanged, the trace stays valid.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t handled;

static void on_signal(int sig) {
  (void)sig;
  int saved = errno;
  struct timespec ts = {0, 1000};
  nanosleep(&ts, NULL);
  pthread_mutex_lock(&mu);
  handled++;
  pthread_mutex_unlock(&mu);
  char c = 'h';
  write(fds[1], &c, 1);  // wakes the reader eventually
  errno = saved;
}

__attribute__((noinline)) static void* reader(void* arg) {
  (void)arg;
  char c;
  int eintr = 0;
  for (int got = 0; got < 5;) {
    ssize_t n = read(fds[0], &c, 1);
    if (n == 1) got++;
    else if (n < 0 && errno == EINTR) eintr++;
  }
  return (void*)(long)eintr;
}

int main(void) {
  if (pipe(fds) != 0) return 2;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;  // no SA_RESTART: read returns EINTR
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, reader, NULL);
  // One signal at a time: a second SIGUSR1 sent while the first is still
  // pending is merged with it (standard signals do not queue), and the
  // reader then waited for ever for its fifth byte (a busy machine, where
  // the reader did not run within the 5 ms between two sends).
  for (int i = 0; i < 5; i++) {
    usleep(5000);
    pthread_kill(t, SIGUSR1);
    while (handled <= i) usleep(500);
  }
  void* eintr;
  pthread_join(t, &eintr);
  printf("handled %d\n", (int)handled);
  return handled == 5 ? 0 : 1;
}
