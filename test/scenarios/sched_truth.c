// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 13): more runnable threads than CPUs, for the truth of
// the timeline. The process pins itself to one CPU (so the result does not
// depend on the machine), then runs four threads that compute and share one
// mutex, a thread that computes a little and sleeps, and a thread that
// waits on a futex through an inline `syscall` instruction (no interposer
// sees that wait; main wakes it the same way). When its work is done each
// thread parks on a condition variable; main then reads every thread's
// /proc/self/task/TID/schedstat and the thread's task-clock counter (off its
// CPU, so that the counts are complete: a running thread's own reading
// misses up to a tick), marks that moment in the trace (a UserLog,
// gotrace/annotate.h), and prints:
//   thread ROLE TID RUN_NS WAIT_NS CLOCK_NS
// then lets them end. RUN_NS and WAIT_NS are the scheduler's own accounting
// (time on a CPU, time runnable but waiting for one); CLOCK_NS is the
// thread's task clock (perf_event_open, PERF_COUNT_SW_TASK_CLOCK; 0 if it
// could not be opened). The two differ in a virtual machine: the
// scheduler's count leaves out the time the hypervisor took the CPU away
// from a running thread (steal time), the task clock and the kernel's
// context-switch records (what the trace is made of) both count it, as the
// wall-clock time between the thread's switch in and its switch out.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <gotrace/annotate.h>

enum { kCompute = 4, kThreads = kCompute + 2 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cv = PTHREAD_COND_INITIALIZER;
static int parked, released;
static volatile uint64_t sink;
static int raw_word, raw_waiting;

struct Result {
  const char* role;
  long tid;
  unsigned long long run_ns, wait_ns, clock_ns;
  int clock_fd;
};
static struct Result results[kThreads];

static long long ThreadCpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// Computes for about `us` microseconds of this thread's CPU time (however
// long that takes on a shared CPU).
static void Compute(int us) {
  const long long end = ThreadCpu() + us * 1000LL;
  while (ThreadCpu() < end)
    for (int i = 0; i < 2000; i++) sink += (uint64_t)i * 2654435761u;
}

// The calling thread's task clock: ns it was on a CPU, as the kernel's
// context switches delimit it. -1 if perf_event_open is refused.
static int OpenTaskClock(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  // perf_event_paranoid 2 allows user space only. The task clock counts
  // the time on a CPU whatever the flags say (they filter its samples).
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void ReadSchedstat(struct Result* r) {
  r->clock_ns = 0;
  unsigned long long v;
  if (r->clock_fd >= 0 && read(r->clock_fd, &v, sizeof v) == (ssize_t)sizeof v) r->clock_ns = v;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", r->tid);
  FILE* f = fopen(path, "r");
  if (f == NULL || fscanf(f, "%llu %llu", &r->run_ns, &r->wait_ns) != 2) r->run_ns = 0;
  if (f != NULL) fclose(f);
}

// Done: wait (off the CPU) until main has read everyone's schedstat.
static void Park(void) {
  pthread_mutex_lock(&park_mu);
  parked++;
  pthread_cond_broadcast(&park_cv);
  while (!released) pthread_cond_wait(&park_cv, &park_mu);
  pthread_mutex_unlock(&park_mu);
}

// A futex system call made with the instruction itself, not through libc.
static long RawFutex(int* word, int op, int val) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = 0;  // no timeout
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "0"((long)SYS_futex), "D"(word), "S"((long)op), "d"((long)val), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
#else
  return syscall(SYS_futex, word, op, val, 0, 0, 0);
#endif
}

static void* ComputeWorker(void* arg) {
  struct Result* r = arg;
  r->tid = syscall(SYS_gettid);
  r->clock_fd = OpenTaskClock();
  for (int i = 0; i < 120; i++) {
    Compute(300);
    pthread_mutex_lock(&mu);
    Compute(100);
    pthread_mutex_unlock(&mu);
  }
  Park();
  return NULL;
}

static void* Sleeper(void* arg) {
  struct Result* r = arg;
  r->tid = syscall(SYS_gettid);
  r->clock_fd = OpenTaskClock();
  for (int i = 0; i < 20; i++) {
    Compute(500);
    usleep(2000);
  }
  Park();
  return NULL;
}

static void* RawWaiter(void* arg) {
  struct Result* r = arg;
  r->tid = syscall(SYS_gettid);
  r->clock_fd = OpenTaskClock();
  Compute(4000);
  __atomic_store_n(&raw_waiting, 1, __ATOMIC_RELEASE);
  while (__atomic_load_n(&raw_word, __ATOMIC_ACQUIRE) == 0)
    RawFutex(&raw_word, FUTEX_WAIT_PRIVATE, 0);
  Compute(4000);
  Park();
  return NULL;
}

int main(void) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) perror("sched_setaffinity");
  pthread_t t[kThreads];
  for (int i = 0; i < kCompute; i++) {
    results[i].role = "compute";
    pthread_create(&t[i], NULL, ComputeWorker, &results[i]);
  }
  results[kCompute].role = "sleeper";
  pthread_create(&t[kCompute], NULL, Sleeper, &results[kCompute]);
  results[kCompute + 1].role = "rawfutex";
  pthread_create(&t[kCompute + 1], NULL, RawWaiter, &results[kCompute + 1]);
  // The raw waiter sleeps on its futex for 50 ms while the others work.
  const struct timespec ms1 = {0, 1000000}, ms50 = {0, 50000000};
  while (!__atomic_load_n(&raw_waiting, __ATOMIC_ACQUIRE)) nanosleep(&ms1, NULL);
  nanosleep(&ms50, NULL);
  __atomic_store_n(&raw_word, 1, __ATOMIC_RELEASE);
  RawFutex(&raw_word, FUTEX_WAKE_PRIVATE, 1);
  pthread_mutex_lock(&park_mu);
  while (parked < kThreads) pthread_cond_wait(&park_cv, &park_mu);
  // Every thread is parked, off its CPU: the moment of the counts in the
  // trace. What the threads run after it (their ends, where the tracer may
  // read the kernel's records) is in the trace but not in the counts.
  gotrace_log(0, "sched_truth", "schedstat read");
  for (int i = 0; i < kThreads; i++) ReadSchedstat(&results[i]);
  released = 1;
  pthread_cond_broadcast(&park_cv);
  pthread_mutex_unlock(&park_mu);
  for (int i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < kThreads; i++)
    printf("thread %s %ld %llu %llu %llu\n", results[i].role, results[i].tid, results[i].run_ns,
           results[i].wait_ns, results[i].clock_ns);
  return 0;
}
