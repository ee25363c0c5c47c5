// SPDX-License-Identifier: Apache-2.0
// Scenario: what dlerror() says after the program's first fork. The tracer
// looks up the functions it interposes before a process's first fork, and
// a lookup that failed (a function this libc lacks: glibc 2.36 has no
// __isoc23_vfscanf) left its message for the program's next dlerror(): a
// program that reads dlerror() after a dlsym that succeeded, without
// clearing it first, took the tracer's failure for its own. Prints what
// dlerror() returns after the fork, and after a dlsym that succeeds.
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
  const pid_t p = fork();
  if (p < 0) return 2;
  if (p == 0) _exit(0);
  if (waitpid(p, NULL, 0) != p) return 2;
  const char* e = dlerror();
  printf("after fork: %s\n", e != NULL ? e : "(none)");
  void* f = dlsym(RTLD_DEFAULT, "printf");
  e = dlerror();
  printf("after dlsym: %s %s\n", f != NULL ? "found" : "missing", e != NULL ? e : "(none)");
  return 0;
}
