// SPDX-License-Identifier: Apache-2.0
// Scenario: what sigaction and signal report as a termination or crash
// signal's old action (the library stands in for SIG_DFL there), printed
// field by field as the kernel keeps them: the handler, the flags (glibc's
// SA_RESTORER included), the mask's 64 signals, whether there is a
// restorer. Traced and untraced must print the same, in the parent and in
// a fork child that resets its signals as a shell's children do; and
// glibc's other ways to set one (ssignal, sysv_signal, siginterrupt then
// signal, whose read must then end with EINTR; System V's sigset, with
// SIG_HOLD, and sigignore).
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// siginterrupt is deprecated in glibc's header; programs still call it.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void h1(int sig) { (void)sig; }
static void h2(int sig, siginfo_t* info, void* uc) { (void)sig, (void)info, (void)uc; }

static const char* HandlerName(void (*h)(int)) {
  if (h == SIG_DFL) return "DFL";
  if (h == SIG_IGN) return "IGN";
  if (h == SIG_HOLD) return "HOLD";
  if (h == SIG_ERR) return "ERR";
  if (h == h1) return "h1";
  return "other";
}

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

// siginterrupt(sig, 1) then signal(sig, handler): a read the signal
// interrupts ends with EINTR (without SA_RESTART). The child writes a byte
// after the signal, so that a restarted read ends too.
static void InterruptedRead(void) {
  siginterrupt(SIGTERM, 1);
  signal(SIGTERM, h1);
  struct sigaction q;
  sigaction(SIGTERM, NULL, &q);
  Print("siginterrupt then signal", &q);
  int p[2];
  if (pipe(p) != 0) return;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    usleep(100000);
    kill(parent, SIGTERM);
    usleep(200000);
    if (write(p[1], "x", 1) != 1) _exit(1);
    _exit(0);
  }
  char c;
  const ssize_t n = read(p[0], &c, 1);
  printf("read=%zd%s\n", n, n < 0 ? " EINTR" : " restarted");
  waitpid(pid, NULL, 0);
  siginterrupt(SIGTERM, 0);
  sigaction(SIGTERM, NULL, &q);
  Print("siginterrupt off", &q);
  signal(SIGTERM, SIG_DFL);
}

int main(void) {
  printf("ssignal(INT, h1) gave %s\n", ssignal(SIGINT, h1) == SIG_DFL ? "DFL" : "other");
  printf("ssignal(INT, DFL) gave %s\n", ssignal(SIGINT, SIG_DFL) == h1 ? "h1" : "other");
  printf("sysv_signal(TERM, h1) gave %s\n", sysv_signal(SIGTERM, h1) == SIG_DFL ? "DFL" : "other");
  struct sigaction q0;
  sigaction(SIGTERM, NULL, &q0);
  Print("after sysv_signal", &q0);
  printf("sysv_signal(TERM, IGN) gave %s\n", sysv_signal(SIGTERM, SIG_IGN) == h1 ? "h1" : "other");
  // SIG_DFL through sysv_signal: glibc's flags include SA_INTERRUPT, which
  // the kernel (5.11+) does not keep.
  sysv_signal(SIGUSR2, SIG_DFL);
  sigaction(SIGUSR2, NULL, &q0);
  Print("after sysv_signal DFL", &q0);
  signal(SIGTERM, SIG_DFL);
  // System V: sigset (SIG_HOLD blocks the signal, anything else unblocks
  // it; SIG_HOLD is returned while it was blocked) and sigignore.
  const int sv[] = {SIGTERM, SIGSEGV, SIGUSR1};
  for (size_t i = 0; i < sizeof sv / sizeof sv[0]; ++i) {
    const int sig = sv[i];
    char what[64];
    struct sigaction q;
    printf("sigset(%d, h1) gave %s\n", sig, HandlerName(sigset(sig, h1)));
    snprintf(what, sizeof what, "after sigset %d", sig);
    sigaction(sig, NULL, &q);
    Print(what, &q);
    printf("sigset(%d, HOLD) gave %s\n", sig, HandlerName(sigset(sig, SIG_HOLD)));
    printf("sigset(%d, HOLD) again gave %s\n", sig, HandlerName(sigset(sig, SIG_HOLD)));
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("%d blocked: %d\n", sig, sigismember(&now, sig));
    printf("sigset(%d, DFL) gave %s\n", sig, HandlerName(sigset(sig, SIG_DFL)));
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("%d blocked: %d\n", sig, sigismember(&now, sig));
    printf("sigignore(%d) gave %d\n", sig, sigignore(sig));
    snprintf(what, sizeof what, "after sigignore %d", sig);
    sigaction(sig, NULL, &q);
    Print(what, &q);
    printf("signal(%d, DFL) gave %s\n", sig, HandlerName(signal(sig, SIG_DFL)));
  }
  InterruptedRead();
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGSEGV, SIGABRT};
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
