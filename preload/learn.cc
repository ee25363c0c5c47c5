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

// The slot holding key (whose state is its bits in `state`), else the first
// empty one (its state reads 0), else -1.
int Find(const Window& w, uint64_t key, uint64_t state) {
  for (uint32_t i = 0; i < log::kLearnProbe; ++i)
    if ((w.slot[i] & ~state) == key || w.slot[i] == 0) return static_cast<int>(i);
  return -1;
}

void Write(int fd, const Window& w, int i, uint64_t v) {
  (void)sys::Pwrite(fd, &v, sizeof v, (w.first + static_cast<uint64_t>(i)) * 8);
}

// The command's state moves to `state` (LearnState's rules); returns its
// state before (0: new; kLearnTrace when its window has no room).
uint64_t NoteCommand(int fd, uint64_t key, log::LearnState state) {
  Window w;
  const int i = ReadWindow(fd, key, &w) ? Find(w, key, 3) : -1;
  if (i < 0) return log::kLearnTrace;  // no room: nothing to count on
  const uint64_t old = w.slot[i] & 3;
  uint64_t next = state;
  if (state == log::kLearnQuietOnce) {
    // The second quiet end makes it quiet; a traced run stays traced.
    next = old == log::kLearnTrace       ? log::kLearnTrace
           : old >= log::kLearnQuietOnce ? log::kLearnQuiet
                                         : log::kLearnQuietOnce;
  }
  if (next != old) Write(fd, w, i, key | next);
  return old;
}

// The program's state: traced for good (`trace`), or one more of its
// commands quiet and small.
void NoteProgram(int fd, uint64_t program, bool trace) {
  Window w;
  const int i = ReadWindow(fd, program, &w) ? Find(w, program, log::kProgramStateMask) : -1;
  if (i < 0) return;
  const uint64_t old = w.slot[i] & log::kProgramStateMask;
  uint64_t next = log::kProgramTrace;
  if (!trace && old < log::kProgramQuiet)
    next = old + 1 >= log::kProgramLearnAt ? log::kProgramQuiet : old + 1;
  else if (!trace)
    next = old;  // learned quiet, or traced for good
  if (next != old) Write(fd, w, i, program | next);
}

}  // namespace

bool Quiet(const char* table, uint64_t key, uint64_t program, int* keep) {
  if (table == nullptr || table[0] == '\0') return false;
  long fd = keep != nullptr ? sys::OpenAt(-100, table, O_RDWR | O_CLOEXEC, 0) : -1;
  const bool writable = fd >= 0;
  if (!writable) fd = sys::OpenAt(-100, table, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  Window w;
  bool quiet = false;
  if (ReadWindow(static_cast<int>(fd), key, &w)) {
    const int i = Find(w, key, 3);
    quiet = i >= 0 && (w.slot[i] & 3) == log::kLearnQuiet;
    // A command traced once is traced, whatever its program learned.
    if (!quiet && program != 0 && (i < 0 || (w.slot[i] & 3) != log::kLearnTrace) &&
        ReadWindow(static_cast<int>(fd), program, &w)) {
      const int j = Find(w, program, log::kProgramStateMask);
      quiet = j >= 0 && (w.slot[j] & log::kProgramStateMask) == log::kProgramQuiet;
    }
  }
  if (quiet && writable) {
    *keep = static_cast<int>(fd);
  } else {
    sys::Close(static_cast<int>(fd));
  }
  return quiet;
}

void Note(const char* table, uint64_t key, uint64_t program, log::LearnState state, bool small) {
  if (table == nullptr || table[0] == '\0') return;
  const long fd = sys::OpenAt(-100, table, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return;  // no table: every process is traced
  const uint64_t old = NoteCommand(static_cast<int>(fd), key, state);
  if (program != 0) {
    if (state == log::kLearnTrace || !small)
      NoteProgram(static_cast<int>(fd), program, true);
    else if (old == 0)
      NoteProgram(static_cast<int>(fd), program, false);  // a new command of it
  }
  sys::Close(static_cast<int>(fd));
}

void NotePid(const char* table, int pid, const log::LearnPid& who, int open_fd) {
  if (table == nullptr || table[0] == '\0' || pid <= 0) return;
  const long fd = open_fd >= 0 ? open_fd : sys::OpenAt(-100, table, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  const log::LearnPid rec{static_cast<uint64_t>(pid), who.key, who.program};
  (void)sys::Pwrite(
      static_cast<int>(fd), &rec, sizeof rec,
      log::kLearnPidsAt + (static_cast<uint64_t>(pid) % log::kLearnPids) * sizeof rec);
  if (open_fd < 0) sys::Close(static_cast<int>(fd));
}

void ReapedBusy(const char* table, int pid) {
  if (table == nullptr || table[0] == '\0' || pid <= 0) return;
  const long fd = sys::OpenAt(-100, table, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return;
  log::LearnPid rec{};
  const uint64_t at =
      log::kLearnPidsAt + (static_cast<uint64_t>(pid) % log::kLearnPids) * sizeof rec;
  if (sys::Pread(static_cast<int>(fd), &rec, sizeof rec, at) == static_cast<long>(sizeof rec) &&
      rec.pid == static_cast<uint64_t>(pid)) {
    (void)NoteCommand(static_cast<int>(fd), rec.key, log::kLearnTrace);
    if (rec.program != 0) NoteProgram(static_cast<int>(fd), rec.program, true);
    const log::LearnPid none{};
    (void)sys::Pwrite(static_cast<int>(fd), &none, sizeof none, at);
  }
  sys::Close(static_cast<int>(fd));
}

}  // namespace gotrace::learn
