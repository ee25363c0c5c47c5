// SPDX-License-Identifier: Apache-2.0
// Scenario (H9, H31): edge arguments of every interposed function; results,
// usable sizes, alignments and errno are printed (never addresses) and must
// be the same traced and untraced. errno is set to a marker before each call
// so that a wrapper which clobbers it on success shows up too.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Usable sizes are printed exactly for malloc, calloc and realloc (a size
// class); an aligned block's depends on where the heap was carved, which the
// tracer's own allocations move, so for those only "at least n" is printed.
static void Show(const char* what, void* p, size_t align) {
  const int e = errno;
  printf("%-34s %s", what, p ? "ptr " : "NULL");
  if (p && align <= 16) printf(" usable=%zu", malloc_usable_size(p));
  if (p && align) printf(" aligned=%d", (uintptr_t)p % align == 0);
  printf(" errno=%d\n", e);
}

static void ShowAligned(const char* what, void* p, size_t align, size_t n) {
  const int e = errno;
  printf("%-34s %s", what, p ? "ptr " : "NULL");
  if (p) printf(" fits=%d aligned=%d", malloc_usable_size(p) >= n, (uintptr_t)p % align == 0);
  printf(" errno=%d\n", e);
}

static void ShowRc(const char* what, int rc, void* p, size_t align, size_t n) {
  const int e = errno;
  printf("%-34s rc=%d", what, rc);
  if (rc == 0 && p) printf(" fits=%d aligned=%d", malloc_usable_size(p) >= n, (uintptr_t)p % align == 0);
  printf(" errno=%d\n", e);
}

#define MARK() (errno = 4242)

// Opaque sizes: the compiler must not fold calls it can prove fail.
static volatile size_t kMax = SIZE_MAX;
#define SIZE_MAX_ (kMax)

int main(void) {
  void* p;
  void* q;
  MARK(); p = malloc(0); Show("malloc(0)", p, 16); free(p);
  MARK(); p = malloc(1); Show("malloc(1)", p, 16); free(p);
  MARK(); p = malloc(SIZE_MAX_); Show("malloc(SIZE_MAX)", p, 0);
  MARK(); p = malloc(SIZE_MAX_ / 2); Show("malloc(SIZE_MAX/2)", p, 0);
  MARK(); p = malloc((size_t)3 << 20); Show("malloc(3 MiB)", p, 16); free(p);  // folds: slow path
  MARK(); p = calloc(SIZE_MAX_ / 2, 4); Show("calloc(SIZE_MAX/2, 4)", p, 0);
  MARK(); p = calloc(0, 0); Show("calloc(0, 0)", p, 16); free(p);
  MARK(); p = calloc(1 << 20, 2); Show("calloc(1 Mi, 2)", p, 16);
  if (p) { size_t z = 0; for (size_t i = 0; i < (2u << 20); i += 4093) z += ((unsigned char*)p)[i]; printf("  nonzero %zu\n", z); }
  free(p);
  q = (void*)1;
  MARK(); ShowRc("posix_memalign(align 3)", posix_memalign(&q, 3, 16), NULL, 1, 0);
  printf("  out untouched %d\n", q == (void*)1);
  MARK(); ShowRc("posix_memalign(align 0)", posix_memalign(&q, 0, 16), NULL, 1, 0);
  MARK(); ShowRc("posix_memalign(align 4, ptr size)", posix_memalign(&q, 4, 16), NULL, 1, 16);
  q = NULL; MARK(); { int rc = posix_memalign(&q, 64, 0); ShowRc("posix_memalign(64, 0)", rc, q, 64, 0); if (rc == 0) free(q); }
  q = NULL; MARK(); { int rc = posix_memalign(&q, 4096, 100); ShowRc("posix_memalign(4096, 100)", rc, q, 4096, 100); if (rc == 0) free(q); }
  MARK(); ShowRc("posix_memalign(64, SIZE_MAX)", posix_memalign(&q, 64, SIZE_MAX_), NULL, 1, 0);
  MARK(); p = aligned_alloc(64, 100); ShowAligned("aligned_alloc(64, 100)", p, 64, 100); free(p);
  MARK(); p = aligned_alloc(64, 1); ShowAligned("aligned_alloc(64, 1)", p, 64, 1); free(p);
  MARK(); p = aligned_alloc(3, 16); ShowAligned("aligned_alloc(3, 16)", p, 4, 16); free(p);
  MARK(); p = aligned_alloc(0, 16); ShowAligned("aligned_alloc(0, 16)", p, 16, 16); free(p);
  MARK(); p = aligned_alloc(4096, 4097); ShowAligned("aligned_alloc(4096, 4097)", p, 4096, 4097); free(p);
  MARK(); p = aligned_alloc(64, SIZE_MAX_ - 10); ShowAligned("aligned_alloc(64, SIZE_MAX-10)", p, 1, 0);
  MARK(); p = memalign(3, 16); ShowAligned("memalign(3, 16)", p, 4, 16); free(p);
  MARK(); p = memalign(48, 100); ShowAligned("memalign(48, 100)", p, 64, 100); free(p);
  MARK(); p = memalign(kMax / 2 + 1, 1); ShowAligned("memalign(2^63, 1)", p, 1, 1); free(p);
  MARK(); p = valloc(0); ShowAligned("valloc(0)", p, 4096, 0); free(p);
  MARK(); p = valloc(5000); ShowAligned("valloc(5000)", p, 4096, 5000); free(p);
  MARK(); p = pvalloc(0); ShowAligned("pvalloc(0)", p, 4096, 4096); free(p);
  MARK(); p = pvalloc(1); ShowAligned("pvalloc(1)", p, 4096, 4096); free(p);
  MARK(); p = pvalloc(SIZE_MAX_ - 100); ShowAligned("pvalloc(SIZE_MAX-100)", p, 1, 4096);
  MARK(); p = reallocarray(NULL, SIZE_MAX_, 2); Show("reallocarray(NULL, SIZE_MAX, 2)", p, 0);
  MARK(); p = reallocarray(NULL, 10, 10); Show("reallocarray(NULL, 10, 10)", p, 16);
  MARK(); q = reallocarray(p, SIZE_MAX_ / 2, 3); Show("reallocarray(p, overflow)", q, 0);
  MARK(); q = reallocarray(p, 0, 10); Show("reallocarray(p, 0, 10)", q, 16); if (q) free(q);
  MARK(); p = realloc(NULL, 100); Show("realloc(NULL, 100)", p, 16);
  memset(p, 7, 100);
  MARK(); q = realloc(p, SIZE_MAX_); Show("realloc(p, SIZE_MAX)", q, 0);
  printf("  kept %d\n", ((unsigned char*)p)[99] == 7);
  MARK(); q = realloc(p, 1 << 20); Show("realloc(p, 1 MiB)", q, 16);
  printf("  moved contents %d\n", q && ((unsigned char*)q)[99] == 7);
  MARK(); p = realloc(q, 0); Show("realloc(p, 0)", p, 16); if (p) free(p);
  MARK(); free(NULL); Show("free(NULL)", NULL, 0);
  MARK(); printf("malloc_usable_size(NULL) %zu errno=%d\n", malloc_usable_size(NULL), errno);
  return 0;
}
