// SPDX-License-Identifier: Apache-2.0
// Scenario (H5, H23): dlopen a library with __thread variables and touch them
// from 8 threads, each allocating and freeing as well; then dlclose. The
// loader allocates and frees the TLS blocks through malloc and free.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long (*touch)(long);
static void* volatile g_sink;  // keeps the compiler from eliding malloc/free pairs

static void* Run(void* arg) {
  long sum = 0;
  for (long i = 1; i <= 1000; i++) {
    void* p = malloc((size_t)(i % 300) * 16);
    g_sink = p;
    sum += touch(i + (long)(size_t)arg) & 0xffff;
    free(p);
  }
  return (void*)sum;
}

int main(int argc, char** argv) {
  (void)argc;
  const char* lib = argc > 1 ? argv[1] : "libheap_tls_lib.so";
  void* h = dlopen(lib, RTLD_NOW);
  if (h == NULL) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  touch = (long (*)(long))dlsym(h, "heap_tls_touch");
  if (touch == NULL) return 1;
  pthread_t t[8];
  for (long i = 0; i < 8; i++) pthread_create(&t[i], NULL, Run, (void*)i);
  long total = 0;
  for (int i = 0; i < 8; i++) {
    void* r;
    pthread_join(t[i], &r);
    total += (long)r;
  }
  dlclose(h);
  printf("total %ld\n", total);
  return 0;
}
