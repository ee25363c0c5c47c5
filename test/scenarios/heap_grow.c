// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5): the heap grows to 100 MiB in steps, then all of it is
// freed. The memory is never touched: the counter follows malloc and free,
// not RSS. stderr gets what the test compares the trace against: the live
// bytes before the first step (glibc's mallinfo2) and the total usable size
// of the blocks.
//
//   heap_grow [KIB]
//
// KIB: the step, 1024 by default (blocks glibc mmaps); 64 makes them heap
// blocks (brk), every other one past the tracer's per-thread fold. A warm-up
// of small blocks first lets the tracer trust glibc's chunk header, so that
// the steps take the wrappers' short paths (hooks_malloc.cc).
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  enum { kTotalKib = 100 * 1024, kMaxSteps = 1600, kWarmUp = 200 };
  const long kib = argc > 1 ? atol(argv[1]) : 1024;
  if (kib <= 0 || kTotalKib / kib > kMaxSteps) return 2;
  const int steps = (int)(kTotalKib / kib);
  static void* blocks[kMaxSteps];
  static void* warm[kWarmUp];
  for (int i = 0; i < kWarmUp; i++) warm[i] = malloc(16 + (size_t)i % 200);
  for (int i = 0; i < kWarmUp; i++) free(warm[i]);
  const struct mallinfo2 mi = mallinfo2();
  size_t usable = 0;
  for (int i = 0; i < steps; i++) {
    blocks[i] = malloc((size_t)kib << 10);
    if (blocks[i] == NULL) return 1;
    usable += malloc_usable_size(blocks[i]);
  }
  for (int i = 0; i < steps; i++) free(blocks[i]);
  fprintf(stderr, "baseline=%zu usable=%zu\n", mi.uordblks + mi.hblkhd, usable);
  printf("grew to 100 MiB in %ld KiB steps and freed it\n", kib);
  return 0;
}
