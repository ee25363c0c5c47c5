// SPDX-License-Identifier: Apache-2.0
// Plugin A of stacks_dlclose.c (issue 7): loaded, waited in, and unloaded
// three times, alternating with the other plugin, which has the same shape
// and size so that the loader maps each at the addresses the other just left.
#include "stacks_plugin.h"

__attribute__((visibility("default"), noinline)) void plugin_a_wait(struct plugin_wait* w) {
  pthread_mutex_lock(&w->mu);
  const unsigned g0 = w->gen;
  w->waiting = 1;
  while (w->gen == g0) pthread_cond_wait(&w->cv, &w->mu);  // LINE:plugin_a_wait
  w->waiting = 0;
  pthread_mutex_unlock(&w->mu);
}
