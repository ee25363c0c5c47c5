// SPDX-License-Identifier: Apache-2.0
// What stacks_dlclose.c shares with its plugins (stacks_plugin_a.c,
// stacks_plugin_b.c): the state of one wait.
#pragma once
#include <pthread.h>

struct plugin_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int waiting;   // the waiter is in pthread_cond_wait (set under mu)
  unsigned gen;  // bumped by main to release it
};

typedef void (*plugin_wait_fn)(struct plugin_wait*);
