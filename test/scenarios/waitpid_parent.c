// SPDX-License-Identifier: Apache-2.0
// Scenario: a parent blocked in waitpid for a child that sleeps, then exits
// with status 3. The parent's wait is a blocking system call.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static int wait_for_child(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

int main(void) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    usleep(50000);
    _exit(3);
  }
  printf("child exited with %d\n", wait_for_child(pid));
  return 0;
}
