// SPDX-License-Identifier: Apache-2.0
// Scenario: what sigaction and signal report as a termination signal's old
// action (the library stands in for SIG_DFL there), printed field by field
// as the kernel keeps them: the handler, the flags (glibc's SA_RESTORER
// included) and the mask's 64 signals. Traced and untraced must print the
// same, in the parent and in a fork child that resets its signals as a
// shell's children do.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void h1(int sig) { (void)sig; }
static void h2(int sig, siginfo_t* info, void* uc) { (void)sig, (void)info, (void)uc; }

static const char* Name(const struct sigaction* a) {
  if (a->sa_handler == SIG_DFL) return "DFL";
  if (a->sa_handler == SIG_IGN) return "IGN";
  if (a->sa_handler == h1) return "h1";
  if ((void*)a->sa_sigaction == (void*)h2) return "h2";
  return "other";
}

static void Print(const char* what, const struct sigaction* a) {
  uint64_t mask;
  memcpy(&mask, &a->sa_mask, sizeof mask);
  printf("%s: %s flags %#x mask %#llx restorer %s\n", what, Name(a), (unsigned)a->sa_flags,
         (unsigned long long)mask, a->sa_restorer != NULL ? "set" : "none");
}

static void Set(int sig, const char* what, void (*h)(int), int flags, int masked) {
  struct sigaction a, old;
  memset(&a, 0, sizeof a);
  memset(&old, 0x5a, sizeof old);
  a.sa_handler = h;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  if (masked) sigaddset(&a.sa_mask, masked);
  if (sigaction(sig, &a, &old) != 0) perror("sigaction");
  Print(what, &old);
}

static void Sequence(int sig, const char* who) {
  char what[64];
  struct sigaction q;
  sigaction(sig, NULL, &q);
  snprintf(what, sizeof what, "%s %d start", who, sig);
  Print(what, &q);
  snprintf(what, sizeof what, "%s %d before h1", who, sig);
  Set(sig, what, h1, SA_RESTART, SIGUSR1);
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_sigaction = h2;
  a.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(sig, &a, &q);
  snprintf(what, sizeof what, "%s %d before h2", who, sig);
  Print(what, &q);
  snprintf(what, sizeof what, "%s %d before DFL", who, sig);
  Set(sig, what, SIG_DFL, SA_RESTART, SIGUSR2);
  snprintf(what, sizeof what, "%s %d before IGN", who, sig);
  Set(sig, what, SIG_IGN, 0, 0);
  snprintf(what, sizeof what, "%s %d before DFL again", who, sig);
  Set(sig, what, SIG_DFL, 0, 0);
  sigaction(sig, NULL, &q);
  snprintf(what, sizeof what, "%s %d now", who, sig);
  Print(what, &q);
  printf("%s %d signal(h1) gave %s\n", who, sig, signal(sig, h1) == SIG_DFL ? "DFL" : "other");
  printf("%s %d signal(DFL) gave %s\n", who, sig, signal(sig, SIG_DFL) == h1 ? "h1" : "other");
}

int main(void) {
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) Sequence(sigs[i], "parent");
  // A shell: SIGINT to one handler before the fork, another after it; the
  // child resets its signals.
  Set(SIGINT, "parent before fork", h1, 0, 0);
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    Sequence(SIGINT, "child");
    fflush(stdout);
    _exit(0);
  }
  int status;
  waitpid(pid, &status, 0);
  Set(SIGINT, "parent after fork", SIG_DFL, 0, 0);
  struct sigaction q;
  sigaction(SIGINT, NULL, &q);
  Print("parent end", &q);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
