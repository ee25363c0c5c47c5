// SPDX-License-Identifier: Apache-2.0
// A process that loads a library, records, unloads it (the module map's
// epoch moves on, as Apache's unload and reload of its modules moves it) and
// then forks a child that sleeps: the child's log numbers its modules from
// that epoch. Prints the child's pid.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void Nap(long ns) {
  const struct timespec t = {0, ns};
  nanosleep(&t, NULL);
}

int main(void) {
  void* lib = dlopen("libz.so.1", RTLD_NOW);
  if (lib == NULL) lib = dlopen("libm.so.6", RTLD_NOW);
  if (lib == NULL) return 1;
  Nap(2000000);
  dlclose(lib);
  Nap(2000000);
  const pid_t p = fork();
  if (p == 0) {
    Nap(50000000);
    _exit(0);
  }
  int st = 0;
  if (waitpid(p, &st, 0) != p || !WIFEXITED(st)) return 1;
  printf("%d\n", (int)p);
  return 0;
}
