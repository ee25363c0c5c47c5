// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5, H9): an allocation storm in several threads through every
// interposed function: malloc, calloc, realloc, reallocarray, memalign,
// posix_memalign, aligned_alloc, valloc, pvalloc, malloc_usable_size, free.
// Each thread keeps a ring of live blocks (a few of them large enough to be
// mmapped by glibc) and checks what it gets: calloc's zeroes, alignments,
// usable sizes, contents kept by realloc. The output depends only on the
// arguments, never on timing.
//
//   heap_storm [THREADS [OPS [--no-pvalloc]]]
//
// --no-pvalloc: glibc's pvalloc does not go through malloc and jemalloc has
// none, so under LD_PRELOAD=libjemalloc.so.2 pvalloc returns a glibc block
// that jemalloc's free cannot take (untraced as well): leave it out there.
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kRing = 512, kMaxThreads = 32 };
static long g_ops = 200000;
static int g_pvalloc = 1;

struct Block {
  unsigned char* p;
  size_t n;
  unsigned char tag;
};

struct Result {
  unsigned seed;
  long calls[10];
  long errors;
};

static uint64_t Next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static size_t SizeOf(uint64_t r) {
  switch ((r >> 40) % 64) {
    case 0: return 200000 + (r >> 20) % 300000;  // mmapped by glibc (first ones)
    case 1: case 2: case 3: return 4096 + (r >> 20) % 60000;
    default: return (r >> 20) % 700;              // includes 0
  }
}

static int Check(struct Block* b) {
  if (b->p == NULL) return b->n == 0 ? 0 : 1;
  if (malloc_usable_size(b->p) < b->n) return 1;
  size_t k = b->n < 64 ? b->n : 64;
  for (size_t i = 0; i < k; i++)
    if (b->p[i] != b->tag) return 1;
  return 0;
}

static void Fill(struct Block* b, unsigned char tag) {
  b->tag = tag;
  if (b->p != NULL) memset(b->p, tag, b->n < 64 ? b->n : 64);
}

static void* Run(void* arg) {
  struct Result* res = arg;
  uint64_t s = 0x9E3779B97F4A7C15ull * res->seed;
  struct Block ring[kRing];
  memset(ring, 0, sizeof ring);
  for (long i = 0; i < g_ops; i++) {
    const uint64_t r = Next(&s);
    struct Block* b = &ring[r % kRing];
    const size_t n = SizeOf(r);
    const unsigned char tag = (unsigned char)(r >> 8);
    int op = (int)((r >> 16) % 10);
    if (op == 8 && !g_pvalloc) op = 0;
    res->errors += Check(b);
    res->calls[op]++;
    void* q = NULL;
    switch (op) {
      case 0:  // malloc
        free(b->p);
        b->p = malloc(n);
        b->n = n;
        break;
      case 1: {  // calloc: zeroed
        free(b->p);
        const size_t count = n / 8 + 1;
        b->p = calloc(count, 8);
        b->n = count * 8;
        for (size_t k = 0; b->p && k < b->n; k += 61)
          if (b->p[k] != 0) res->errors++;
        break;
      }
      case 2:  // realloc: keeps the contents
        q = realloc(b->p, n + 1);
        if (q == NULL) { res->errors++; break; }
        b->p = q;
        if (n + 1 < b->n) b->n = n + 1;
        res->errors += Check(b);
        b->n = n + 1;
        break;
      case 3:  // reallocarray
        q = reallocarray(b->p, n / 4 + 1, 4);
        if (q == NULL) { res->errors++; break; }
        b->p = q;
        if (n / 4 * 4 + 4 < b->n) b->n = n / 4 * 4 + 4;
        res->errors += Check(b);
        b->n = n / 4 * 4 + 4;
        break;
      case 4:  // memalign
        free(b->p);
        b->p = memalign(64, n);
        b->n = n;
        if (b->p && (uintptr_t)b->p % 64) res->errors++;
        break;
      case 5:  // posix_memalign
        free(b->p);
        b->p = NULL;
        if (posix_memalign(&q, 256, n) != 0) res->errors++;
        b->p = q;
        b->n = n;
        if (b->p && (uintptr_t)b->p % 256) res->errors++;
        break;
      case 6:  // aligned_alloc
        free(b->p);
        b->p = aligned_alloc(32, n);
        b->n = n;
        if (b->p && (uintptr_t)b->p % 32) res->errors++;
        break;
      case 7:  // valloc
        free(b->p);
        b->p = valloc(n);
        b->n = n;
        // (jemalloc's valloc(0) is not page-aligned: only n > 0 is checked)
        if (b->p && n > 0 && (uintptr_t)b->p % 4096) res->errors++;
        break;
      case 8:  // pvalloc
        free(b->p);
        b->p = pvalloc(n);
        b->n = n;
        if (b->p && ((uintptr_t)b->p % 4096 || (n > 0 && malloc_usable_size(b->p) < 4096))) res->errors++;
        break;
      case 9:  // free
        free(b->p);
        b->p = NULL;
        b->n = 0;
        break;
    }
    if (b->p == NULL && b->n != 0 && op != 9) res->errors++;
    Fill(b, tag);
  }
  for (int i = 0; i < kRing; i++) {
    res->errors += Check(&ring[i]);
    free(ring[i].p);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 4;
  if (argc > 2) g_ops = atol(argv[2]);
  if (argc > 3 && strcmp(argv[3], "--no-pvalloc") == 0) g_pvalloc = 0;
  if (threads < 1 || threads > kMaxThreads) return 2;
  pthread_t t[kMaxThreads];
  struct Result res[kMaxThreads];
  memset(res, 0, sizeof res);
  for (int i = 0; i < threads; i++) {
    res[i].seed = (unsigned)i + 1;
    if (pthread_create(&t[i], NULL, Run, &res[i]) != 0) return 3;
  }
  static const char* names[10] = {"malloc", "calloc", "realloc", "reallocarray", "memalign",
                                  "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "free"};
  long calls[10] = {0}, errors = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    for (int k = 0; k < 10; k++) calls[k] += res[i].calls[k];
    errors += res[i].errors;
  }
  for (int k = 0; k < 10; k++) printf("%s %ld\n", names[k], calls[k]);
  printf("errors %ld\n", errors);
  return errors == 0 ? 0 : 1;
}
