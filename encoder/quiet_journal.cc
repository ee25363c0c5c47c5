// SPDX-License-Identifier: Apache-2.0
//===-- encoder/quiet_journal.cc - reading the journal of quiet processes -===//
#include "encoder/quiet_journal.h"

#include <cstring>

namespace gotrace::log {

bool ParseQuietJournal(const uint8_t* p, size_t n, std::vector<QuietEntry>* out) {
  size_t pos = 0;
  while (pos + sizeof(QuietHeader) <= n) {
    QuietEntry e;
    std::memcpy(&e.h, p + pos, sizeof e.h);
    const QuietHeader& h = e.h;
    const uint64_t body = uint64_t{h.nchild} * sizeof(QuietChild) + h.exe_len + h.argv_len;
    if (h.magic != kQuietMagic || h.size % 8 != 0 || h.size < sizeof(QuietHeader) ||
        h.size > kQuietMaxBytes || pos + h.size > n || h.nchild > kQuietMaxChildren ||
        sizeof(QuietHeader) + body > h.size) {
      return false;
    }
    const uint8_t* q = p + pos + sizeof(QuietHeader);
    for (uint32_t i = 0; i < h.nchild; ++i, q += sizeof(QuietChild)) {
      QuietChild c;
      std::memcpy(&c, q, sizeof c);
      e.children.push_back(ChildExit{c.pid, static_cast<int>(c.status), c.end_ns});
    }
    e.exe.assign(reinterpret_cast<const char*>(q), h.exe_len);
    q += h.exe_len;
    const char* a = reinterpret_cast<const char*>(q);
    const char* end = a + h.argv_len;
    while (a < end) {
      const char* z = static_cast<const char*>(std::memchr(a, '\0', static_cast<size_t>(end - a)));
      if (z == nullptr) return false;
      e.argv.emplace_back(a, z);
      a = z + 1;
    }
    out->push_back(std::move(e));
    pos += h.size;
  }
  return pos == n;
}

}  // namespace gotrace::log
