// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 14): stacks through code built without frame pointers
// (-O2 -fomit-frame-pointer), under the default unwinding. Two workers go
// three calls deep (auto_worker -> auto_outer -> auto_middle -> a leaf); one
// waits for a contended mutex, the other in a blocking read of a pipe. Both
// waits happen every time: main holds the mutex, and writes the pipe, only
// once the worker sleeps in its wait.
//
// auto_middle uses rbp as a general register across its call: it points rbp
// at a fake frame record on its own stack whose "return address" is the
// address of a global variable. A frame-pointer walk from the leaf reads it
// and must stop there (a return address outside executable code, issue 14);
// a DWARF walk restores rbp from auto_middle's CFI and goes on. The leaves
// check that rbp really holds that value when they are called, and the
// program says so ("rbp busy: yes").
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stacks_auto.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile int tids[2];
static volatile unsigned long sink;
static volatile int rbp_busy[2];
static const uintptr_t not_code = 0x6e6f7420636f6465;  // the fake record's "return address" points here

typedef void (*leaf_fn)(int who, uintptr_t expected_rbp);

__attribute__((noinline)) static void auto_lock_leaf(int who, uintptr_t expected_rbp) {
  uintptr_t rbp;
  __asm__ volatile("mov %%rbp, %0" : "=r"(rbp));
  rbp_busy[who] = rbp == expected_rbp;
  pthread_mutex_lock(&lock);  // LINE:auto_lock_leaf
  sink++;
  pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void auto_read_leaf(int who, uintptr_t expected_rbp) {
  uintptr_t rbp;
  __asm__ volatile("mov %%rbp, %0" : "=r"(rbp));
  rbp_busy[who] = rbp == expected_rbp;
  char c;
  if (read(pipefd[0], &c, 1) == 1) sink += (unsigned char)c;  // LINE:auto_read_leaf
}

__attribute__((noinline)) static void auto_middle(int who, leaf_fn leaf) {
  volatile uintptr_t fake[2];
  fake[0] = 0;
  fake[1] = (uintptr_t)&not_code;
#if defined(__x86_64__)
  register uintptr_t rbp __asm__("rbp") = (uintptr_t)&fake[0];
  __asm__ volatile("" : "+r"(rbp));
  leaf(who, (uintptr_t)&fake[0]);  // LINE:auto_middle
  __asm__ volatile("" ::"r"(rbp));
#else
  leaf(who, 0);
#endif
  sink += fake[0];
}

__attribute__((noinline)) static void auto_outer(int who, leaf_fn leaf) {
  auto_middle(who, leaf);  // LINE:auto_outer
  sink++;
}

static void* auto_worker(void* arg) {
  const int who = (int)(intptr_t)arg;
  tids[who] = (int)syscall(SYS_gettid);
  auto_outer(who, who == 0 ? auto_lock_leaf : auto_read_leaf);
  sink++;
  return NULL;
}

int main(void) {
  if (pipe(pipefd) != 0) return 2;
  pthread_t t[2];
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, auto_worker, (void*)(intptr_t)i);
  for (int i = 0; i < 2; i++) {
    while (tids[i] == 0) sched_yield();
    wait_until_sleeping(tids[i]);
  }
  pthread_mutex_unlock(&lock);
  if (write(pipefd[1], "x", 1) != 1) return 2;
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  save_maps();
  printf("auto waits 2 rbp busy: %s\n", rbp_busy[0] && rbp_busy[1] ? "yes" : "no");
  return 0;
}
