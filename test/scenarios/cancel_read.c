// SPDX-License-Identifier: Apache-2.0
// Scenario (H30): a thread blocked in read() is cancelled. The trace must stay
// well formed and the other threads keep being recorded.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int fds[2];

__attribute__((noinline)) static void* blocked_reader(void* arg) {
  (void)arg;
  char c;
  read(fds[0], &c, 1);  // never returns: cancelled here
  return NULL;
}

int main(void) {
  if (pipe(fds) != 0) return 2;
  pthread_t t;
  pthread_create(&t, NULL, blocked_reader, NULL);
  usleep(20000);
  pthread_cancel(t);
  void* ret;
  pthread_join(t, &ret);
  for (int i = 0; i < 5; i++) usleep(500);  // still recorded after the cancel
  printf("cancelled %d\n", ret == PTHREAD_CANCELED);
  return 0;
}
