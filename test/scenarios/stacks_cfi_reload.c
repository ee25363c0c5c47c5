// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): libunwind's cached unwind rules after dlclose. A
// long-lived thread waits inside stacks_cfi_call of a plugin whose unwind
// rule lies (stacks_cfi_lie.so), which is then unloaded; the truthful plugin
// (stacks_cfi_truth.so: the same code, mapped at the same address) is loaded
// and the same thread waits inside it again; then a new thread does. With
// GOTRACE_UNWIND=libunwind nothing may walk the truthful plugin with the lie
// that libunwind cached: the old thread falls back to frame pointers, the new
// one walks it with libunwind, up to its start routine.
//
// Each wait is in a callback of its own (cb_lie, cb_truth_old, cb_truth_new),
// so the profile tells them apart. x86_64 only (the plugins are assembly);
// elsewhere the program only prints what it would.
#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scenario_handoff.h"

static char dir[PATH_MAX];
static void* bases[3];

static void Wait(void) {
  pthread_mutex_lock(&mu);
  const unsigned g0 = gen;
  waiting = 1;
  while (gen == g0) pthread_cond_wait(&cv, &mu);
  waiting = 0;
  served++;
  pthread_mutex_unlock(&mu);
}

// The waits, each called from inside a plugin's stacks_cfi_call.
__attribute__((noinline)) static void cb_lie(void) { Wait(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void cb_truth_old(void) { Wait(); __asm__ volatile("" ::: "memory"); }
__attribute__((noinline)) static void cb_truth_new(void) { Wait(); __asm__ volatile("" ::: "memory"); }

// Loads plugin `name`, runs cb inside its stacks_cfi_call, unloads it.
static int InPlugin(const char* name, void (*cb)(void), int slot) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void (*call)(void (*)(void)) = h != NULL ? (void (*)(void (*)(void)))dlsym(h, "stacks_cfi_call") : NULL;
  Dl_info info;
  if (call == NULL || dladdr((void*)call, &info) == 0) {
    fprintf(stderr, "%s: %s\n", path, dlerror());
    return 0;
  }
  bases[slot] = info.dli_fbase;
  call(cb);
  return dlclose(h) == 0;
}

static void* old_thread(void* ok) {
  *(int*)ok = InPlugin("stacks_cfi_lie.so", cb_lie, 0) &&
              InPlugin("stacks_cfi_truth.so", cb_truth_old, 1);
  return NULL;
}

static void* new_thread(void* ok) {
  *(int*)ok = InPlugin("stacks_cfi_truth.so", cb_truth_new, 2);
  return NULL;
}

int main(int argc, char** argv) {
  (void)argc;
  snprintf(dir, sizeof dir, "%s", argv[0]);
  char* slash = strrchr(dir, '/');
  if (slash != NULL) *slash = '\0';
  else snprintf(dir, sizeof dir, ".");
#if defined(__x86_64__)
  int ok_old = 0, ok_new = 0;
  pthread_t t;
  pthread_create(&t, NULL, old_thread, &ok_old);
  release_waits(2);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, new_thread, &ok_new);
  release_waits(1);
  pthread_join(t, NULL);
  printf("cfi reload %s\n", ok_old && ok_new ? "ok" : "failed");
  fprintf(stderr, "same address: %s\n",
          bases[0] == bases[1] && bases[1] == bases[2] ? "yes" : "no");
  return ok_old && ok_new ? 0 : 1;
#else
  printf("cfi reload ok\n");
  fprintf(stderr, "same address: no (not x86_64)\n");
  return 0;
#endif
}
