// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 5): the heap grows to 100 MiB in 1 MiB steps, then all of
// it is freed. The memory is never touched: the counter follows malloc and
// free, not RSS. stderr gets what the test compares the trace against: the
// live bytes before the first step (glibc's mallinfo2) and the total usable
// size of the 100 blocks.
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  enum { kSteps = 100 };
  static void* blocks[kSteps];
  const struct mallinfo2 mi = mallinfo2();
  size_t usable = 0;
  for (int i = 0; i < kSteps; i++) {
    blocks[i] = malloc((size_t)1 << 20);
    if (blocks[i] == NULL) return 1;
    usable += malloc_usable_size(blocks[i]);
  }
  for (int i = 0; i < kSteps; i++) free(blocks[i]);
  fprintf(stderr, "baseline=%zu usable=%zu\n", mi.uordblks + mi.hblkhd, usable);
  printf("grew to %d MiB and freed it\n", kSteps);
  return 0;
}
