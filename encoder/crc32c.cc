// SPDX-License-Identifier: Apache-2.0
//===-- encoder/crc32c.cc - CRC-32C, hardware or slice-by-8 ---------------===//
#include "encoder/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <sys/platform/x86.h>
#endif

namespace gotrace {
namespace {

constexpr uint32_t kPoly = 0x82f63b78;  // reflected Castagnoli polynomial

constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  return t;
}
constexpr auto kTables = MakeTables();

uint32_t Crc32cSoftware(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= crc;
    crc = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
          kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^
          kTables[2][(w >> 40) & 0xff] ^ kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const uint8_t* p,
                                                           size_t n) {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

// From the CPU features the dynamic loader has already read (glibc >= 2.33).
// Not __builtin_cpu_supports: it links libgcc's __cpu_indicator_init, a
// constructor that runs a dozen cpuid instructions in every traced process,
// each one a trap to the hypervisor in a virtual machine.
bool HaveSse42() {
  // Cached; a racy first initialization computes the same value twice.
  static int have = -1;
  int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
  if (h < 0) {
    h = CPU_FEATURE_ACTIVE(SSE4_2) ? 1 : 0;
    __atomic_store_n(&have, h, __ATOMIC_RELAXED);
  }
  return h == 1;
}
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (HaveSse42()) return Crc32cHardware(crc, p, n);
#endif
  return Crc32cSoftware(crc, p, n);
}

}  // namespace gotrace
