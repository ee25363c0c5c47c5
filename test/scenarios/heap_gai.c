// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5): memory that libc allocates inside an interposed call
// (getaddrinfo's result list) and that the program frees outside of one
// (freeaddrinfo). 20 MiB stay live throughout (never freed), so the heap
// counter must stay near 20 MiB however many lookups run.
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* volatile g_sink;  // keeps the compiler from eliding allocations

int main(void) {
  g_sink = malloc((size_t)20 << 20);
  long ok = 0;
  for (int i = 0; i < 20000; i++) {
    struct addrinfo hints, *r = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo("127.0.0.1", "80", &hints, &r) == 0) {
      ok++;
      freeaddrinfo(r);
    }
    if (i % 1000 == 999) {  // a 2 MiB blip: a sample of the total every 1000 lookups
      void* p = malloc((size_t)2 << 20);
      g_sink = p;
      free(p);
    }
  }
  printf("lookups %ld\n", ok);
  return 0;
}
