// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): the module map over time. Three rounds; in each, plugin
// A is dlopen'ed, a thread waits inside plugin_a_wait, main releases it, joins
// it and dlclose's A; then the same with plugin B. The plugins have the same
// shape, so the loader maps each where the other was (reported on stderr as
// "reused N"). Every wait must be symbolized with the plugin that was mapped
// when it was recorded: -pprof=sync shows each round's thread start routine
// (round0_worker ... round2_worker) above plugin_a_wait (stacks_plugin_a.c)
// once and above plugin_b_wait (stacks_plugin_b.c) once.
//
// The tracer does not interpose dlopen: it finds each plugin when a stack
// first holds a PC in it, and starts a new module epoch on dlclose.
#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stacks_plugin.h"

enum { kRounds = 3 };

struct job {
  plugin_wait_fn fn;
  struct plugin_wait* w;
};

#define ROUND_WORKER(k)                                  \
  __attribute__((noinline)) static void* round##k##_worker(void* arg) { \
    struct job* j = arg;                                 \
    j->fn(j->w);                                         \
    __asm__ volatile("" ::: "memory");                   \
    return NULL;                                         \
  }
ROUND_WORKER(0)
ROUND_WORKER(1)
ROUND_WORKER(2)
static void* (*const kWorkers[kRounds])(void*) = {round0_worker, round1_worker, round2_worker};

// Loads `lib`, waits in its `sym` on another thread, unloads it. Returns the
// plugin's load address, or NULL on failure.
static void* RunPlugin(const char* lib, const char* sym, int round) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", lib, dlerror());
    return NULL;
  }
  struct plugin_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
  struct job j = {(plugin_wait_fn)dlsym(h, sym), &w};
  Dl_info info;
  void* base = j.fn != NULL && dladdr((void*)j.fn, &info) != 0 ? info.dli_fbase : NULL;
  if (base == NULL) {
    fprintf(stderr, "%s: no %s\n", lib, sym);
    return NULL;
  }
  pthread_t t;
  pthread_create(&t, NULL, kWorkers[round], &j);
  for (;;) {
    pthread_mutex_lock(&w.mu);
    if (w.waiting) {
      w.gen++;
      pthread_cond_broadcast(&w.cv);
      pthread_mutex_unlock(&w.mu);
      break;
    }
    pthread_mutex_unlock(&w.mu);
    usleep(1000);
  }
  pthread_join(t, NULL);
  if (dlclose(h) != 0) {
    fprintf(stderr, "dlclose %s: %s\n", lib, dlerror());
    return NULL;
  }
  // Gone: a new dlopen with RTLD_NOLOAD finds nothing.
  if (dlopen(lib, RTLD_NOW | RTLD_NOLOAD) != NULL) {
    fprintf(stderr, "%s is still loaded\n", lib);
    return NULL;
  }
  return base;
}

int main(int argc, char** argv) {
  (void)argc;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", argv[0]);
  char* slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
  char a[PATH_MAX + 32], b[PATH_MAX + 32];
  snprintf(a, sizeof a, "%s/stacks_plugin_a.so", dir);
  snprintf(b, sizeof b, "%s/stacks_plugin_b.so", dir);
  int waits = 0, reused = 0;
  void* last = NULL;
  for (int r = 0; r < kRounds; r++) {
    void* base_a = RunPlugin(a, "plugin_a_wait", r);
    if (base_a == NULL) return 1;
    void* base_b = RunPlugin(b, "plugin_b_wait", r);
    if (base_b == NULL) return 1;
    waits += 2;
    if (base_a == last) reused++;  // A where B was in the previous round
    if (base_b == base_a) reused++;
    last = base_b;
  }
  printf("plugin rounds %d waits %d\n", kRounds, waits);
  fprintf(stderr, "reused %d\n", reused);
  return 0;
}
