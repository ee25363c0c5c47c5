// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 18, staging): a process that first makes only short
// system calls, which alone are worth no trace of its own (under the
// launcher it records them into memory), and then sleeps, which is: its
// trace must hold the early calls as well as the sleep, with its stack.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

static void nap(void) {
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, 0);  // the sleep's stack: nap <- main
}

int main(void) {
  char buf[64];
  int fd = open("/dev/zero", O_RDONLY);
  for (int i = 0; i < 8; i++) {
    if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) return 1;
  }
  close(fd);
  nap();
  return write(1, "done\n", 5) == 5 ? 0 : 1;
}
