// SPDX-License-Identifier: Apache-2.0
// Helper for heap_dlopen_tls (H5, H23): dlopened, with __thread variables too
// large for the static TLS surplus, so each thread's block is allocated by
// the loader (through malloc, glibc >= 2.25) on first use and freed at exit.
#include <string.h>

static __thread char tls_big[256 << 10];
static __thread long tls_counter;

long heap_tls_touch(long v) {
  tls_big[v % sizeof tls_big] = (char)v;
  memset(tls_big, (int)v, 1024);
  tls_counter += v;
  return tls_counter + tls_big[0];
}
