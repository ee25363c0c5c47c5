// SPDX-License-Identifier: Apache-2.0
// Scenario: a process-shared mutex contended across processes by a process
// with one thread. The library skips its trylock for a free private mutex
// when the process has one thread (nothing else can take it); a shared one
// can be held by another process: the child holds it for 150 ms, the parent
// (one thread) locks it and must be seen waiting in lock_shared().
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static int lock_shared(pthread_mutex_t* mu) {
  const int rc = pthread_mutex_lock(mu);  // the parent waits here
  if (rc == 0) pthread_mutex_unlock(mu);
  return rc;
}

int main(void) {
  pthread_mutex_t* mu =
      mmap(NULL, sizeof *mu, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mu == MAP_FAILED) return 2;
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(mu, &attr);
  int held[2];
  if (pipe(held) != 0) return 2;
  const pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    pthread_mutex_lock(mu);
    if (write(held[1], "x", 1) != 1) _exit(3);
    const struct timespec ts = {0, 150000000};
    nanosleep(&ts, NULL);
    pthread_mutex_unlock(mu);
    _exit(0);
  }
  char c;
  if (read(held[0], &c, 1) != 1) return 2;
  const int rc = lock_shared(mu);
  int status = 0;
  waitpid(pid, &status, 0);
  printf("locked %d child %d\n", rc, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
