// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5): memory allocated before tracing began (by
// libheap_early_lib.so's constructor, LD_PRELOADed after libgotrace.so) and
// freed while traced. The heap counter must not go below zero. Then 16 MiB
// allocated in 1 MiB steps and freed, which the trace must show.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void* volatile g_sink;  // keeps the compiler from eliding malloc/free pairs

int main(void) {
  void** early = (void**)dlsym(RTLD_DEFAULT, "heap_early_block");
  if (early == NULL || *early == NULL) {
    printf("no early block: run with LD_PRELOAD=.../libheap_early_lib.so\n");
    return 1;
  }
  free(*early);
  *early = NULL;
  void* blocks[16];
  for (int i = 0; i < 16; i++) g_sink = blocks[i] = malloc((size_t)1 << 20);
  for (int i = 0; i < 16; i++) free(blocks[i]);
  printf("freed the early block\n");
  return 0;
}
