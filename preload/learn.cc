// SPDX-License-Identifier: Apache-2.0
//===-- preload/learn.cc - programs learned quiet in a launcher's run -----===//
#include "preload/learn.h"

#include <fcntl.h>

#include "preload/sys/raw.h"

namespace gotrace::learn {
namespace {

struct Window {
  uint64_t slot[log::kLearnProbe];
  uint64_t first;  // the window's first slot index
};

// Reads key's probe window; false if there is no table (or it is short).
bool ReadWindow(int fd, uint64_t key, Window* w) {
  w->first = key % log::kLearnSlots;
  return sys::Pread(fd, w->slot, sizeof w->slot, w->first * 8) == static_cast<long>(sizeof w->slot);
}

// The slot holding key, else the first empty one (its state reads 0), else -1.
int Find(const Window& w, uint64_t key) {
  for (uint32_t i = 0; i < log::kLearnProbe; ++i)
    if ((w.slot[i] & ~uint64_t{3}) == key || w.slot[i] == 0) return static_cast<int>(i);
  return -1;
}

}  // namespace

bool Quiet(const char* table, uint64_t key) {
  if (table == nullptr || table[0] == '\0') return false;
  const long fd = sys::OpenAt(-100, table, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  Window w;
  const bool ok = ReadWindow(static_cast<int>(fd), key, &w);
  sys::Close(static_cast<int>(fd));
  if (!ok) return false;
  const int i = Find(w, key);
  return i >= 0 && (w.slot[i] & 3) == log::kLearnQuiet;
}

void Note(const char* table, uint64_t key, log::LearnState state) {
  if (table == nullptr || table[0] == '\0') return;
  const long fd = sys::OpenAt(-100, table, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return;  // no table: every process is traced
  Window w;
  const int i = ReadWindow(static_cast<int>(fd), key, &w) ? Find(w, key) : -1;
  if (i >= 0) {
    const uint64_t old = w.slot[i] & 3;
    uint64_t next = state;
    if (state == log::kLearnQuietOnce) {
      // The second quiet end makes it quiet; a traced run stays traced.
      next = old == log::kLearnTrace ? log::kLearnTrace
             : old >= log::kLearnQuietOnce ? log::kLearnQuiet
                                           : log::kLearnQuietOnce;
    }
    if (next != old) {
      const uint64_t v = key | next;
      (void)sys::Pwrite(static_cast<int>(fd), &v, sizeof v, (w.first + static_cast<uint64_t>(i)) * 8);
    }
  }
  sys::Close(static_cast<int>(fd));
}

}  // namespace gotrace::learn
