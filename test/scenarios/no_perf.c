// SPDX-License-Identifier: Apache-2.0
// Test helper (issue 13): runs a program where perf_event_open is denied, as
// a container's seccomp profile does: a seccomp filter makes the system call
// fail with EACCES (or, with --enosys, ENOSYS), then the program is exec'd.
//   no_perf [--enosys] PROGRAM [ARGS...]
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char** argv) {
  int first = 1;
  unsigned err = EACCES;
  if (argc > 1 && strcmp(argv[1], "--enosys") == 0) {
    err = ENOSYS;
    first = 2;
  }
  if (argc <= first) {
    fprintf(stderr, "usage: no_perf [--enosys] PROGRAM [ARGS...]\n");
    return 2;
  }
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("no_perf: seccomp");
    return 2;
  }
  execvp(argv[first], argv + first);
  perror("no_perf: exec");
  return 127;
}
