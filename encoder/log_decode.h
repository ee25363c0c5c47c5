// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_decode.h - decoding one record (no allocation) --------===//
//
// Shared by the reader (encoder/log_reader.cc) and by the preloaded library's
// final flush, which must find the end of what a running thread committed.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

#include "encoder/log_format.h"
#include "encoder/varint.h"

namespace gotrace::log {

enum class Decode { kOk, kNeedMore, kCorrupt };

// The fields of one record, as stored (times not yet clamped or converted).
struct RawRecord {
  uint8_t type;
  Tick ts;
  uint32_t cpu;
  uint64_t f[7];
  const uint8_t* body;
  size_t body_len;
};

// Decodes one record from [p, end) into *r (a RawRecord or anything with the
// same members). *last_raw is the previous record's time (the delta base) and
// is advanced on success. *used receives the record's size.
template <typename R>
inline Decode DecodeRecord(const uint8_t* p, const uint8_t* end, Tick* last_raw, R* r,
                           size_t* used) {
  const uint8_t* q = p;
  if (q == end) return Decode::kNeedMore;
  const uint8_t type = *q++;
  const int nfixed = FixedFieldCount(type);
  uint64_t dts, cpu;
  if (nfixed >= 0 && end - p >= static_cast<ptrdiff_t>(kMaxFixedRecordBytes)) {
    // Fast path: the whole record is in the window, no per-byte bounds checks.
    if (!GetUvarintUnchecked(&q, &dts) || !GetUvarintUnchecked(&q, &cpu) || cpu > 0xffffffffu)
      return Decode::kCorrupt;
    for (int i = 0; i < nfixed; ++i)
      if (!GetUvarintUnchecked(&q, &r->f[i])) return Decode::kCorrupt;
    r->body = nullptr;
    r->body_len = 0;
  } else {
    if (!GetUvarint(&q, end, &dts) || !GetUvarint(&q, end, &cpu)) {
      return (end - p) >= static_cast<ptrdiff_t>(1 + 2 * kMaxVarintBytes) ? Decode::kCorrupt
                                                                           : Decode::kNeedMore;
    }
    if (cpu > 0xffffffffu) return Decode::kCorrupt;
    if (nfixed >= 0) {
      for (int i = 0; i < nfixed; ++i) {
        if (!GetUvarint(&q, end, &r->f[i])) {
          return (end - p) >= static_cast<ptrdiff_t>(kMaxFixedRecordBytes) ? Decode::kCorrupt
                                                                            : Decode::kNeedMore;
        }
      }
      r->body = nullptr;
      r->body_len = 0;
    } else if (type >= kFirstVarRecord) {
      uint64_t len;
      if (!GetUvarint(&q, end, &len)) {
        return (end - q) >= static_cast<ptrdiff_t>(kMaxVarintBytes) ? Decode::kCorrupt
                                                                     : Decode::kNeedMore;
      }
      if (len > kMaxChunkPayload) return Decode::kCorrupt;
      if (static_cast<uint64_t>(end - q) < len) return Decode::kNeedMore;
      r->body = q;
      r->body_len = len;
      q += len;
    } else {
      return Decode::kCorrupt;
    }
  }
  r->type = static_cast<decltype(r->type)>(type);
  *last_raw += static_cast<uint64_t>(UnZigZag(dts));
  r->ts = *last_raw;
  r->cpu = static_cast<uint32_t>(cpu);
  *used = static_cast<size_t>(q - p);
  return Decode::kOk;
}

// Walks a complete chunk payload: how many whole records it holds, how many
// bytes they span, and the raw time of the last one.
struct PayloadScan {
  uint32_t records = 0;
  size_t bytes = 0;
  Tick last_ts = 0;
};
inline PayloadScan ScanPayload(const uint8_t* p, size_t n, Tick base) {
  PayloadScan s;
  s.last_ts = base;
  Tick raw = base;
  while (s.bytes < n) {
    RawRecord r;
    size_t used;
    if (DecodeRecord(p + s.bytes, p + n, &raw, &r, &used) != Decode::kOk) break;
    s.bytes += used;
    s.last_ts = raw;
    ++s.records;
  }
  return s;
}

}  // namespace gotrace::log
