// SPDX-License-Identifier: Apache-2.0
// Scenario: heap blocks held while the tracer works beside the program. The
// test takes flight-recorder snapshots while this waits: each is encoded on
// the tracer's control thread, which allocates and keeps memory of its own
// (the encoder, libdw and their caches) that must never reach the program's
// heap counter. stderr gets what the test compares the trace against: the
// live bytes before the first block (glibc's mallinfo2) and the total
// usable size of the blocks, none of which is freed before the exit.
//
//   heap_snapshot
//
// Allocates 16 MiB in 64 KiB heap blocks, writes "ready" on stdout, waits
// for its stdin to end, allocates 16 MiB more, reports and exits.
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
  enum { kStep = 64 << 10, kSteps = 256, kWarmUp = 200 };
  static void* blocks[2 * kSteps];
  static void* warm[kWarmUp];
  // Small blocks first: the tracer trusts glibc's chunk header after 64 of
  // them, and the steps take the wrappers' short paths (hooks_malloc.cc).
  for (int i = 0; i < kWarmUp; i++) warm[i] = malloc(16 + (size_t)i % 200);
  for (int i = 0; i < kWarmUp; i++) free(warm[i]);
  const struct mallinfo2 mi = mallinfo2();
  size_t usable = 0;
  for (int i = 0; i < kSteps; i++) {
    if ((blocks[i] = malloc(kStep)) == NULL) return 1;
    usable += malloc_usable_size(blocks[i]);
  }
  printf("ready\n");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  for (int i = kSteps; i < 2 * kSteps; i++) {
    if ((blocks[i] = malloc(kStep)) == NULL) return 1;
    usable += malloc_usable_size(blocks[i]);
  }
  fprintf(stderr, "baseline=%zu usable=%zu\n", mi.uordblks + mi.hblkhd, usable);
  return 0;
}
