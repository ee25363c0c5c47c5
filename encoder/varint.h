// SPDX-License-Identifier: Apache-2.0
//===-- encoder/varint.h - LEB128 varints shared by the log and the trace --===//
//
// Unsigned LEB128 (low 7 bits first) as used by Go's trace format, plus the
// zigzag mapping for signed deltas in the event log. Header-only, no
// allocation, safe on the recording hot path.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace gotrace {

inline constexpr size_t kMaxVarintBytes = 10;

// Writes v at p and returns the byte after it. p must have kMaxVarintBytes room.
inline uint8_t* PutUvarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

inline constexpr size_t UvarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Reads one varint from [*p, end). On success advances *p and returns true.
// Fails on truncation and on encodings longer than 10 bytes or above 2^64-1.
inline bool GetUvarint(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  const uint8_t* q = *p;
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (q == end) return false;
    const uint8_t b = *q++;
    if (shift == 63 && b > 1) return false;  // would overflow 64 bits
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) {
      *p = q;
      *out = v;
      return true;
    }
  }
  return false;
}

// As GetUvarint, for callers that know kMaxVarintBytes are readable at *p.
inline bool GetUvarintUnchecked(const uint8_t** p, uint64_t* out) {
  const uint8_t* q = *p;
  uint64_t b = *q++;
  if (b < 0x80) {
    *p = q;
    *out = b;
    return true;
  }
  uint64_t v = b & 0x7f;
  for (unsigned shift = 7; shift < 64; shift += 7) {
    b = *q++;
    if (shift == 63 && b > 1) return false;
    v |= (b & 0x7f) << shift;
    if (b < 0x80) {
      *p = q;
      *out = v;
      return true;
    }
  }
  return false;
}

inline constexpr uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline constexpr int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

}  // namespace gotrace
