// SPDX-License-Identifier: Apache-2.0
//===-- encoder/crc32c.h - CRC-32C (Castagnoli) for log chunk integrity ---===//
//
// Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise.
// No allocation, no locks: callable when a thread seals its chunk.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace {

// Continues a CRC-32C over [data, data+n). Start with crc = 0.
uint32_t Crc32c(uint32_t crc, const void* data, size_t n);

}  // namespace gotrace
