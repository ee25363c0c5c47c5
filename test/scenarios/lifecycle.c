// SPDX-License-Identifier: Apache-2.0
// Scenarios for the process lifecycle (issue 6): each mode does some traced
// work in a function with a recognizable name, then leaves the process in a
// particular way. lifecycle_test.cc runs them plain and traced and checks
// that the trace is complete and valid and the program behaved the same.
//
//   lifecycle MODE [ARGS]
//     exit-return | exit-exit | exit-_exit | exit-_Exit | exit-quick |
//     exit-pthread | exit-abort |        ways to end, a worker thread running
//     exit-syscall                       (the last: syscall(SYS_exit_group))
//     blocked3                           exit() while 3 threads are blocked
//     crash-segv | crash-abort |         a worker thread crashes (with SIGCHLD
//     crash-abort-nocldwait              ignored, in the last one)
//     crash-segv4                        four workers fault at the same moment
//     kill-self                          1 s of work, then SIGKILL to itself
//     term-self | sigpipe | term-handled ended by SIGTERM (default action),
//                                        by writing to a closed pipe, or
//                                        SIGTERM caught by the program
//     fork-threads                       fork while a thread records; the
//                                        child runs threads of its own; also
//                                        vfork+exec and posix_spawn
//     short-threads N                    N short-lived threads, 8 at a time
//     fd-closer                          closes every descriptor (close,
//                                        closefrom, close_range), dup2s over
//                                        the high ones, chdirs, then works
//     exec-fail                          a failing execve, then more work
//     fork-storm                         100 forks while 4 threads spin in
//                                        malloc, mutexes and sleeps (H12)
//     sigwait                            SIGTERM blocked everywhere, taken by
//                                        the program's sigwait thread (H18)
//     alarm-at-exit                      30,000 recorded waits, then a
//                                        timer whose SIGALRM (default action)
//                                        fires 2 ms after main returns: while
//                                        the trace is being written
//     fd-limit                           lowers its soft descriptor limit to
//                                        64 and ends with 62 descriptors open
//     stderr-closed FILE [crash]         re-executes itself with descriptor 2
//                                        closed; the new image opens FILE
//                                        (it becomes 2), writes "data" to
//                                        it, then exits (or aborts)
//     stdout-closed                      re-executes itself with descriptor 1
//                                        closed and a descriptor limit of 100,
//                                        then prints 200 lines (to nowhere)
//     segv-recover                       3 faults its own SIGSEGV handler
//                                        recovers from (siglongjmp), with
//                                        recorded waits before and after
//     segv-handler-exit                  a fault whose handler calls _exit(42)
//     segv-ignored                       raise(SIGSEGV) with SIGSEGV ignored
//     abort-handler-returns              abort() with a SIGABRT handler that
//                                        returns (glibc then dies by SIGABRT)
//     raw-clone                          a thread made with clone() (no
//                                        pthread, no TLS of its own) sleeps
//                                        while the main thread sleeps (H15)
//     raw-fork                           a process made with a raw fork
//                                        system call (no atfork handlers run)
//                                        allocates, locks, sleeps and uses a
//                                        pipe while the parent's thread locks
//                                        and the parent sleeps
//     steady SECONDS RATE                about RATE recorded sleeps per
//                                        second for SECONDS; prints the count
//                                        and the RSS after 1 s and at the end
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int stop;

// A condition wait with a timeout: a GoBlockCond whose stack names the
// caller, so tests find it in `-pprof=sync`.
__attribute__((noinline)) static void timed_wait_us(long us) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += us * 1000;
  while (ts.tv_nsec >= 1000000000L) {
    ts.tv_nsec -= 1000000000L;
    ts.tv_sec++;
  }
  pthread_mutex_lock(&mu);
  pthread_cond_timedwait(&cv, &mu, &ts);
  pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void marker_before_exit(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_in_worker(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_after_fork(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_after_close(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_after_failed_exec(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_before_crash(void) { timed_wait_us(500); }
__attribute__((noinline)) static void marker_before_kill(void) { timed_wait_us(500); }

static int worker_rounds;

static void* busy_worker(void* arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    marker_in_worker();
    __atomic_fetch_add(&worker_rounds, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

// Starts busy_worker and returns once it has recorded a wait: on a loaded
// machine a new thread may not run for milliseconds, and the tests look for
// its marker in the trace.
static void start_busy_worker(pthread_t* t) {
  pthread_create(t, NULL, busy_worker, NULL);
  while (__atomic_load_n(&worker_rounds, __ATOMIC_SEQ_CST) == 0) usleep(200);
}

static void no_core_dumps(void) {
  // The crash modes must not leave core files wherever the test runs.
  struct rlimit r = {0, 0};
  setrlimit(RLIMIT_CORE, &r);
}

// quick_exit flushes no stdio buffers: write directly.
static void at_quick_exit_handler(void) {
  static const char msg[] = "quick_exit handler\n";
  ssize_t n = write(1, msg, sizeof msg - 1);
  (void)n;
}

static int exit_mode(const char* how) {
  pthread_t t;
  start_busy_worker(&t);
  for (int i = 0; i < 10; i++) marker_before_exit();
  printf("leaving by %s\n", how);
  fflush(stdout);
  if (strcmp(how, "return") == 0) return 3;
  if (strcmp(how, "exit") == 0) exit(4);
  if (strcmp(how, "_exit") == 0) _exit(5);
  if (strcmp(how, "_Exit") == 0) _Exit(6);
  if (strcmp(how, "syscall") == 0) syscall(SYS_exit_group, 8);
  if (strcmp(how, "quick") == 0) {
    at_quick_exit(at_quick_exit_handler);
    quick_exit(7);
  }
  if (strcmp(how, "pthread") == 0) {
    // The worker ends the process: it stops after 20 ms, then the last
    // thread's exit ends the process with status 0.
    usleep(20000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_exit(NULL);
  }
  if (strcmp(how, "abort") == 0) {
    no_core_dumps();
    abort();
  }
  return 2;
}

static int blocked_pipe[2];
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int started;

__attribute__((noinline)) static void* blocked_in_cond(void* a) {
  (void)a;
  pthread_mutex_lock(&mu);
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  for (;;) pthread_cond_wait(&never, &mu);
  return NULL;
}
__attribute__((noinline)) static void* blocked_in_mutex(void* a) {
  (void)a;
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&held);
  return NULL;
}
__attribute__((noinline)) static void* blocked_in_read(void* a) {
  (void)a;
  char c;
  __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
  ssize_t n = read(blocked_pipe[0], &c, 1);
  (void)n;
  return NULL;
}

static int blocked3(void) {
  pthread_mutex_lock(&held);
  if (pipe(blocked_pipe) != 0) return 1;
  pthread_t t[3];
  pthread_create(&t[0], NULL, blocked_in_cond, NULL);
  pthread_create(&t[1], NULL, blocked_in_mutex, NULL);
  pthread_create(&t[2], NULL, blocked_in_read, NULL);
  while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < 3) usleep(1000);
  usleep(30000);  // let the waits begin
  printf("exiting with 3 threads blocked\n");
  exit(0);
}

__attribute__((noinline)) static void crash_now(const char* how) {
  if (strcmp(how, "segv") == 0) {
    volatile int* p = (volatile int*)(uintptr_t)16;
    *p = 1;
  }
  abort();
}

static const char* crash_how;
static pthread_barrier_t crash_together;
static void* crashing_worker(void* a) {
  for (int i = 0; i < 20; i++) marker_before_crash();
  if (a != NULL) pthread_barrier_wait(&crash_together);  // segv4: all at once
  crash_now(crash_how);
  return NULL;
}

static int crash_mode(const char* how) {
  no_core_dumps();
  // abort-nocldwait: children are reaped by the kernel (SIGCHLD ignored),
  // as in many daemons; the tracer's recovery child must still be waited for.
  if (strstr(how, "-nocldwait") != NULL) signal(SIGCHLD, SIG_IGN);
  printf("crashing by %s\n", how);
  fflush(stdout);
  // segv4: four workers fault at the same moment (the second fault must
  // wait for the first one's trace, not end the process under it).
  const int together = strcmp(how, "segv4") == 0 ? 4 : 0;
  crash_how = together ? "segv" : how;
  if (together) pthread_barrier_init(&crash_together, NULL, together);
  pthread_t t[5];
  start_busy_worker(&t[0]);
  for (int i = 1; i <= (together ? together : 1); i++)
    pthread_create(&t[i], NULL, crashing_worker, together ? &crash_together : NULL);
  pthread_join(t[1], NULL);
  return 0;  // not reached
}

static int kill_self(void) {
  pthread_t t;
  start_busy_worker(&t);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    marker_before_kill();
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 1000000000L);
  printf("killing myself\n");
  fflush(stdout);
  kill(getpid(), SIGKILL);
  return 1;
}

static volatile sig_atomic_t got_term;
static void on_term(int sig) {
  (void)sig;
  got_term = 1;
}

static int signal_mode(const char* how) {
  no_core_dumps();
  pthread_t t;
  start_busy_worker(&t);
  for (int i = 0; i < 10; i++) marker_before_exit();
  printf("ending by %s\n", how);
  fflush(stdout);
  if (strcmp(how, "sigpipe") == 0) {
    int p[2];
    if (pipe(p) != 0) return 1;
    close(p[0]);
    ssize_t n = write(p[1], "x", 1);  // SIGPIPE: the default action ends us
    (void)n;
    return 1;
  }
  if (strcmp(how, "term-handled") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction back;
    sigaction(SIGTERM, NULL, &back);
    if (back.sa_handler != on_term) printf("sigaction does not report our handler\n");
  } else {
    struct sigaction back;
    sigaction(SIGTERM, NULL, &back);
    if (back.sa_handler != SIG_DFL) printf("sigaction does not report SIG_DFL\n");
  }
  kill(getpid(), SIGTERM);
  for (int i = 0; i < 1000 && !got_term; i++) usleep(1000);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(t, NULL);
  printf("handled: %d\n", (int)got_term);
  return 0;
}

// H12: fork while other threads are inside malloc, a mutex or the tracer.
static void* storm_worker(void* a) {
  (void)a;
  while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
    void* p = malloc(64 + (rand() & 1023));
    pthread_mutex_lock(&mu);
    free(p);
    pthread_mutex_unlock(&mu);
    const struct timespec zero = {0, 0};
    nanosleep(&zero, NULL);  // a recorded event, often in progress at the fork
  }
  return NULL;
}

static int fork_storm(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, storm_worker, NULL);
  int ok = 0;
  for (int i = 0; i < 100; i++) {
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      // Another thread may have held `mu` at the fork: the child's copy is
      // useless. Its own mutex and malloc must work.
      pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
      void* q = malloc(100);
      pthread_mutex_lock(&own);
      ssize_t n = write(p[1], "x", 1);
      pthread_mutex_unlock(&own);
      free(q);
      _exit(n == 1 ? 0 : 1);
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) == 1) ok++;
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  printf("%d children answered\n", ok);
  return 0;
}

// H18: the program takes SIGTERM in a sigwait thread; every other thread
// (the tracer's too) must leave it to that one.
static void* sigwait_thread(void* a) {
  sigset_t* set = a;
  int sig = 0;
  sigwait(set, &sig);
  printf("sigwait got %s\n", sig == SIGTERM ? "SIGTERM" : "something else");
  return NULL;
}

static int sigwait_mode(void) {
  static sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);  // inherited by every thread made later
  pthread_t w, s;
  start_busy_worker(&w);
  pthread_create(&s, NULL, sigwait_thread, &set);
  for (int i = 0; i < 5; i++) marker_before_exit();
  kill(getpid(), SIGTERM);
  pthread_join(s, NULL);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(w, NULL);
  return 0;
}

// The child's threads: a short condvar ping-pong.
static int turn;
static void* child_pong(void* a) {
  (void)a;
  for (int i = 0; i < 20; i++) {
    pthread_mutex_lock(&mu);
    while (turn != 1) pthread_cond_wait(&cv, &mu);
    turn = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  return NULL;
}

__attribute__((noinline)) static void child_work(void) {
  marker_after_fork();
  pthread_t t;
  pthread_create(&t, NULL, child_pong, NULL);
  for (int i = 0; i < 20; i++) {
    pthread_mutex_lock(&mu);
    turn = 1;
    pthread_cond_broadcast(&cv);
    while (turn != 0) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
  }
  pthread_join(t, NULL);
}

static int fork_threads(void) {
  pthread_t t;
  start_busy_worker(&t);
  for (int i = 0; i < 5; i++) marker_before_exit();
  // The worker is recording while we fork (H12).
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    // Only this thread exists in the child; the mutex may have been held by
    // the parent's worker at the fork, so start from fresh ones.
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t fresh_cv = PTHREAD_COND_INITIALIZER;
    mu = fresh;
    cv = fresh_cv;
    child_work();
    printf("child %d done\n", 1);
    fflush(stdout);
    exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  // vfork + exec and posix_spawn (H14): programs that record something (a
  // sleep), so that each has a trace (one that records nothing has none).
  pid_t v = vfork();
  if (v == 0) {
    char* const argv[] = {"sleep", "0.001", NULL};
    execve("/bin/sleep", argv, environ);
    _exit(127);
  }
  int vstatus = 0;
  waitpid(v, &vstatus, 0);
  pid_t s = 0;
  char* const sargv[] = {"sleep", "0.001", NULL};
  int rc = posix_spawn(&s, "/bin/sleep", NULL, NULL, sargv, environ);
  int sstatus = 0;
  if (rc == 0) waitpid(s, &sstatus, 0);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(t, NULL);
  printf("fork child status %d, vfork %d, posix_spawn rc %d status %d\n", status, vstatus, rc,
         sstatus);
  return 0;
}

static pthread_mutex_t counter_mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void* short_lived(void* a) {
  (void)a;
  pthread_mutex_lock(&counter_mu);
  counter++;
  pthread_mutex_unlock(&counter_mu);
  return NULL;
}

static int short_threads(int n) {
  for (int done = 0; done < n;) {
    pthread_t t[8];
    int k = n - done < 8 ? n - done : 8;
    for (int i = 0; i < k; i++)
      if (pthread_create(&t[i], NULL, short_lived, NULL) != 0) return 1;
    for (int i = 0; i < k; i++) pthread_join(t[i], NULL);
    done += k;
  }
  printf("%ld threads ran\n", counter);
  return 0;
}

static int fd_closer(void) {
  // The classic daemon start: chdir to /, close everything, point 0-2 at
  // /dev/null. Every way of closing, and dup2 over the high numbers where a
  // tracer would keep its files.
  if (chdir("/") != 0) return 1;
  for (int fd = 3; fd < 1024; fd++) close(fd);
  closefrom(3);
  close_range(3, ~0U, 0);
  int null = open("/dev/null", O_RDWR);
  if (null < 0) return 1;
  for (int fd = 500; fd < 1024; fd++) dup2(null, fd);
  for (int fd = 500; fd < 1024; fd++) close(fd);
  int out = dup(1);  // keep a way to report
  dup2(null, 0);
  pthread_t t;
  start_busy_worker(&t);
  for (int i = 0; i < 10; i++) marker_after_close();
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(t, NULL);
  dprintf(out, "daemon work done\n");
  return 0;
}

static int count_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 4096; fd++) n += fcntl(fd, F_GETFD) != -1;
  return n;
}

static int exec_fail(void) {
  pthread_t t;
  start_busy_worker(&t);
  for (int i = 0; i < 3; i++) marker_before_exit();
  char* const argv[] = {"nothing", NULL};
  int rc = execve("/nonexistent/nothing", argv, environ);
  int err = errno;
  rc = execvp("no-such-command-anywhere", argv) == -1 ? rc : 0;
  int err2 = errno;
  // An exec that can only fail in the kernel (executable, but no format it
  // knows): the tracer expects it to work, finishes this image's trace and
  // starts a new one when it fails, and must not leave a descriptor behind.
  char bad[64];
  snprintf(bad, sizeof bad, "/tmp/gotrace-noexec-%d", (int)getpid());
  const int bfd = open(bad, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (bfd >= 0) {
    if (write(bfd, "not a program\n", 14) != 14) return 1;
    close(bfd);
  }
  const int fds_before = count_fds();
  char* const bad_argv[] = {bad, NULL};
  execve(bad, bad_argv, environ);
  const int err3 = errno;
  const int fds_after = count_fds();
  unlink(bad);
  for (int i = 0; i < 10; i++) marker_after_failed_exec();
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  pthread_join(t, NULL);
  printf("execve returned %d errno %s, execvp errno %s\n", rc, strerrorname_np(err),
         strerrorname_np(err2));
  printf("exec of a non-program: errno %s, descriptors %+d\n", strerrorname_np(err3),
         fds_after - fds_before);
  return 0;
}

// About `rate` recorded sleeps per second from 4 threads, paced against the
// clock: a thread ahead of its schedule sleeps until its next one is due, a
// thread behind catches up with zero-length sleeps (recorded all the same).
static long steady_rate;
static double steady_seconds;
static void* steady_worker(void* a) {
  (void)a;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const double per_thread = steady_rate / 4.0 > 1 ? steady_rate / 4.0 : 1;
  long done = 0;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double el = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
    if (el >= steady_seconds) break;
    struct timespec ts = {0, 0};
    const double ahead = (done + 1) / per_thread - el;
    if (ahead > 0) ts.tv_nsec = (long)(ahead * 1e9) % 1000000000L;
    nanosleep(&ts, NULL);
    done++;
  }
  return (void*)done;
}

// VmRSS of this process in KiB, or -1.
static long rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static int steady(double seconds, long rate) {
  steady_seconds = seconds;
  steady_rate = rate;
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, steady_worker, NULL);
  struct timespec one = {1, 0};
  nanosleep(&one, NULL);
  const long rss_1s = rss_kib();
  long sleeps = 0;
  for (int i = 0; i < 4; i++) {
    void* r;
    pthread_join(t[i], &r);
    sleeps += (long)r;
  }
  // stderr: the plain and traced runs differ here.
  fprintf(stderr, "sleeps %ld rss_kib_1s %ld rss_kib_end %ld\n", sleeps, rss_1s, rss_kib());
  return 0;
}

__attribute__((noinline)) static void marker_expired_waits(int n) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  const struct timespec past = {0, 0};
  pthread_mutex_lock(&mu);
  for (int i = 0; i < n; i++) pthread_cond_timedwait(&cv, &mu, &past);
  pthread_mutex_unlock(&mu);
}

static atomic_int raw_done;
static int raw_tid_word = 1;

static int raw_worker(void* arg) {
  (void)arg;
  const struct timespec ts = {0, 20000};
  for (int i = 0; i < 2000; i++) nanosleep(&ts, NULL);
  atomic_store(&raw_done, 1);
  return 0;
}

__attribute__((noinline)) static void marker_main_sleeps(int n) {
  const struct timespec ts = {0, 20000};
  for (int i = 0; i < n; i++) nanosleep(&ts, NULL);
}

static int raw_clone(void) {
  const size_t size = 1 << 20;
  char* stack = malloc(size);
  const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                    CLONE_SYSVSEM | CLONE_CHILD_CLEARTID;
  if (clone(raw_worker, stack + size, flags, NULL, NULL, NULL, &raw_tid_word) < 0) {
    perror("clone");
    return 1;
  }
  marker_main_sleeps(2000);
  while (!atomic_load(&raw_done)) sched_yield();
  // The kernel clears the word when the thread is gone: then its stack is free.
  while (__atomic_load_n(&raw_tid_word, __ATOMIC_SEQ_CST) != 0)
    syscall(SYS_futex, &raw_tid_word, FUTEX_WAIT, 1, NULL, NULL, 0);
  free(stack);
  printf("raw clone done\n");
  return 0;
}

static void* raw_fork_spinner(void* arg) {
  for (int i = 0; i < 20000; i++) {
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
  }
  return arg;
}

static int raw_fork(void) {
  pthread_t t;
  pthread_create(&t, NULL, raw_fork_spinner, NULL);
  marker_main_sleeps(50);
  fflush(stdout);
  // The child of a raw fork runs with the parent's recording state and no
  // atfork handler to reset it: whatever it records must go nowhere.
  const long pid = syscall(SYS_fork);
  if (pid < 0) return 1;
  if (pid == 0) {
    for (int i = 0; i < 1000; i++) {
      char* p = malloc(100000);
      memset(p, 1, 100);
      free(p);
      pthread_mutex_lock(&mu);
      pthread_mutex_unlock(&mu);
    }
    marker_main_sleeps(20);
    int fds[2];
    char c;
    if (pipe(fds) != 0 || write(fds[1], "x", 1) != 1 || read(fds[0], &c, 1) != 1) _exit(1);
    printf("child done\n");
    fflush(stdout);
    _exit(7);
  }
  marker_main_sleeps(50);
  int st;
  while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR) {
  }
  pthread_join(t, NULL);
  printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return 0;
}

__attribute__((noinline)) static void marker_fd_work(void) { timed_wait_us(500); }

static int fd_limit(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_max < 128) {
    printf("hard limit too low\n");
    return 0;
  }
  rl.rlim_cur = 64;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
  for (int i = 0; i < 10; i++) marker_fd_work();
  int opened = 0;
  while (opened < 59 && open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) opened++;
  printf("opened %d\n", opened);
  return 0;
}

static int stderr_closed(int argc, char** argv, int child) {
  if (argc < 3) return 2;
  const int crash = argc > 3 && strcmp(argv[3], "crash") == 0;
  if (!child) {
    char* const args[] = {argv[0], "stderr-closed-child", argv[2], crash ? "crash" : NULL, NULL};
    close(2);
    execv("/proc/self/exe", args);
    return 127;
  }
  no_core_dumps();
  const int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int i = 0; i < 5; i++) marker_before_exit();
  if (write(fd, "data\n", 5) != 5) return 1;
  printf("data on descriptor %d\n", fd);
  fflush(stdout);
  if (crash) abort();
  return 0;
}

static int stdout_closed(char** argv, int child) {
  if (!child) {
    struct rlimit r = {100, 100};
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) return 2;
    char* const args[] = {argv[0], "stdout-closed-child", NULL};
    close(1);
    execv("/proc/self/exe", args);
    return 127;
  }
  int failed = 0;
  for (int i = 0; i < 200; i++) {
    if (printf("line %d\n", i) < 0 || fflush(stdout) != 0) failed++;
    marker_fd_work();
  }
  fprintf(stderr, "%d writes failed\n", failed);
  return 0;
}

static sigjmp_buf probe_jump;
static void probe_fault(int sig) {
  (void)sig;
  siglongjmp(probe_jump, 1);
}
__attribute__((noinline)) static void marker_after_fault(void) { timed_wait_us(500); }

static void fault_exit(int sig) {
  (void)sig;
  static const char msg[] = "handler exits\n";
  ssize_t n = write(1, msg, sizeof msg - 1);
  (void)n;
  _exit(42);
}

static int segv_handler_exit(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fault_exit;
  sigaction(SIGSEGV, &sa, NULL);
  for (int i = 0; i < 3; i++) marker_before_crash();
  volatile int* p = (volatile int*)16;
  *p = 1;
  return 0;
}

static void abort_returns(int sig) {
  (void)sig;
  static const char msg[] = "abort handler returns\n";
  ssize_t n = write(1, msg, sizeof msg - 1);
  (void)n;
}

static int abort_handler_returns(void) {
  no_core_dumps();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = abort_returns;
  sigaction(SIGABRT, &sa, NULL);
  for (int i = 0; i < 3; i++) marker_before_crash();
  abort();
}

static int segv_ignored(void) {
  signal(SIGSEGV, SIG_IGN);
  for (int i = 0; i < 3; i++) marker_before_crash();
  raise(SIGSEGV);
  for (int i = 0; i < 3; i++) marker_after_fault();
  printf("SIGSEGV ignored\n");
  return 0;
}

static int segv_recover(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = probe_fault;
  sigaction(SIGSEGV, &sa, NULL);
  int handled = 0;
  for (int i = 0; i < 3; i++) {
    marker_before_crash();
    if (sigsetjmp(probe_jump, 1) == 0) {
      volatile int* p = (volatile int*)16;
      *p = 1;
    } else {
      handled++;
    }
    marker_after_fault();
  }
  printf("faults handled: %d\n", handled);
  return 0;
}

static int alarm_at_exit(void) {
  marker_expired_waits(30000);
  printf("armed\n");
  fflush(stdout);
  const struct itimerval it = {{0, 0}, {0, 2000}};
  setitimer(ITIMER_REAL, &it, NULL);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: lifecycle MODE [ARGS]\n");
    return 2;
  }
  const char* m = argv[1];
  if (strncmp(m, "exit-", 5) == 0) return exit_mode(m + 5);
  if (strcmp(m, "blocked3") == 0) return blocked3();
  if (strncmp(m, "crash-", 6) == 0) return crash_mode(m + 6);
  if (strcmp(m, "kill-self") == 0) return kill_self();
  if (strcmp(m, "term-self") == 0 || strcmp(m, "sigpipe") == 0 || strcmp(m, "term-handled") == 0)
    return signal_mode(m);
  if (strcmp(m, "fork-threads") == 0) return fork_threads();
  if (strcmp(m, "short-threads") == 0) return short_threads(argc > 2 ? atoi(argv[2]) : 2000);
  if (strcmp(m, "fd-closer") == 0) return fd_closer();
  if (strcmp(m, "fork-storm") == 0) return fork_storm();
  if (strcmp(m, "sigwait") == 0) return sigwait_mode();
  if (strcmp(m, "exec-fail") == 0) return exec_fail();
  if (strcmp(m, "alarm-at-exit") == 0) return alarm_at_exit();
  if (strcmp(m, "raw-clone") == 0) return raw_clone();
  if (strcmp(m, "raw-fork") == 0) return raw_fork();
  if (strcmp(m, "segv-recover") == 0) return segv_recover();
  if (strcmp(m, "segv-handler-exit") == 0) return segv_handler_exit();
  if (strcmp(m, "segv-ignored") == 0) return segv_ignored();
  if (strcmp(m, "abort-handler-returns") == 0) return abort_handler_returns();
  if (strcmp(m, "stderr-closed") == 0) return stderr_closed(argc, argv, 0);
  if (strcmp(m, "stdout-closed") == 0) return stdout_closed(argv, 0);
  if (strcmp(m, "stdout-closed-child") == 0) return stdout_closed(argv, 1);
  if (strcmp(m, "stderr-closed-child") == 0) return stderr_closed(argc, argv, 1);
  if (strcmp(m, "fd-limit") == 0) return fd_limit();
  if (strcmp(m, "steady") == 0)
    return steady(argc > 2 ? atof(argv[2]) : 60, argc > 3 ? atol(argv[3]) : 100000);
  fprintf(stderr, "lifecycle: unknown mode %s\n", m);
  return 2;
}
