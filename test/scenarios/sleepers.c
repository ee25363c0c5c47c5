// SPDX-License-Identifier: Apache-2.0
// Scenario: three threads sleep through every sleep function: the trace
// must hold exactly one GoSleep per call (15 per thread, 45 in all).
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void* sleeper(void* arg) {
  (void)arg;
  struct timespec ts = {0, 200000};
  for (int i = 0; i < 5; i++) nanosleep(&ts, NULL);
  for (int i = 0; i < 5; i++) usleep(200);
  for (int i = 0; i < 4; i++) clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
  sleep(0);
  return NULL;
}

int main(void) {
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, sleeper, NULL);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("slept\n");
  return 0;
}
