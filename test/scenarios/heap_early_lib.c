// SPDX-License-Identifier: Apache-2.0
// Helper for heap_early (issue 5): a library whose constructor allocates
// 64 MiB before libgotrace.so's constructor runs (listed after it in
// LD_PRELOAD, it is initialized first). The program frees the block.
#include <stdlib.h>

void* heap_early_block;

__attribute__((constructor)) static void AllocateEarly(void) {
  heap_early_block = malloc((size_t)64 << 20);
}
