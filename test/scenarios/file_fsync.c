// SPDX-License-Identifier: Apache-2.0
// Scenario: a file written in chunks and fsync'ed; -pprof=syscall must name
// write_and_sync. Also errno of failing calls, which must not change.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static int write_and_sync(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  char block[4096];
  memset(block, 'g', sizeof block);
  for (int i = 0; i < 64; i++) {
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block) return -1;
    if (i % 16 == 15 && fsync(fd) != 0) return -1;
  }
  int r = fdatasync(fd);
  close(fd);
  return r;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "fsync.out";
  int r = write_and_sync(path);
  char buf[8];
  errno = 0;
  ssize_t n = read(-1, buf, 1);
  int e1 = errno;
  errno = 0;
  int fd = open("/nonexistent/dir/file", O_RDONLY);
  int e2 = errno;
  errno = 0;
  ssize_t w = write(1000, buf, 1);
  int e3 = errno;
  printf("write_and_sync=%d read=%zd errno=%s open=%d errno=%s write=%zd errno=%s\n", r, n,
         strerrorname_np(e1), fd, strerrorname_np(e2), w, strerrorname_np(e3));
  unlink(path);
  return 0;
}
