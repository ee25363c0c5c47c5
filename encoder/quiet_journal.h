// SPDX-License-Identifier: Apache-2.0
//===-- encoder/quiet_journal.h - the run's journal of quiet processes ----===//
//
// Issue 18: under the launcher, a descendant records into memory until it
// does something worth a trace of its own (preload/runtime.cc, staging);
// only then is its event log made. A process that never does leaves no log,
// only one entry in the run's journal: who it was, when it ran, how it
// ended. The launcher lists these in the run's index as quiet processes.
//
// The journal is the launcher's marker path plus kQuietJournalSuffix,
// created by the launcher before the program starts (a process never
// creates it: one that outlives the run finds it gone and writes nothing).
// Each entry is appended with one write(2) on an O_APPEND descriptor, so
// entries of concurrent processes never interleave. Host byte order.
//
//   QuietHeader, then `nchild` QuietChild, then the executable's path
//   (exe_len bytes), then the arguments (argv_len bytes: NUL-terminated
//   strings, one per argument), zero padding to a multiple of 8.
//
// The builder is allocation-free (the preloaded library uses it at exit and
// in signal handlers); the reader is the launcher's (allocates).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gotrace::log {

inline constexpr char kQuietJournalSuffix[] = ".quiet";
inline constexpr uint32_t kQuietMagic = 0x31515447;  // "GTQ1" read little-endian
inline constexpr size_t kQuietMaxBytes = 4096;       // one entry, at most
inline constexpr uint32_t kQuietMaxChildren = 32;    // child exits kept per entry

// QuietHeader::flags
inline constexpr uint32_t kQuietDescendant = 1;  // not the launcher's own child
inline constexpr uint32_t kQuietForked = 2;      // an image that began at a fork (no exec)
// QuietHeader::exit_status when the process could not tell (a signal that
// killed it outright is its parent's to say).
inline constexpr uint64_t kQuietNoStatus = ~uint64_t{0};

struct QuietHeader {
  uint32_t magic;     // kQuietMagic
  uint32_t size;      // the whole entry, this header included, a multiple of 8
  uint32_t pid;
  uint32_t ppid;
  uint32_t image;     // exec generation within the pid
  uint32_t flags;
  uint64_t start_ns;  // CLOCK_MONOTONIC
  uint64_t end_ns;
  uint64_t exit_status;  // wait(2) form, or log::kExitExec (replaced by exec), or kQuietNoStatus
  uint32_t records;      // records it made (in memory)
  uint32_t nchild;
  uint32_t exe_len;
  uint32_t argv_len;
};
static_assert(sizeof(QuietHeader) == 64);

struct QuietChild {
  uint32_t pid;
  uint32_t status;  // wait(2) form
};

// Writes one entry into buf (cap >= kQuietMaxBytes); returns its size. The
// arguments are cut (whole ones first, then the last one's end) to fit.
inline size_t BuildQuietEntry(uint8_t* buf, size_t cap, QuietHeader h, const QuietChild* kids,
                              const char* exe, char* const* argv, size_t argc) {
  if (cap < sizeof(QuietHeader) + 16) return 0;
  if (h.nchild > kQuietMaxChildren) h.nchild = kQuietMaxChildren;
  size_t pos = sizeof(QuietHeader);
  auto put = [&](const void* p, size_t n) {
    const auto* s = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) buf[pos + i] = s[i];
    pos += n;
  };
  const size_t room = cap - 8;  // the padding's worst case
  if (pos + h.nchild * sizeof(QuietChild) > room) h.nchild = 0;
  put(kids, h.nchild * sizeof(QuietChild));
  size_t exe_len = 0;
  while (exe != nullptr && exe[exe_len] != '\0') ++exe_len;
  if (pos + exe_len > room) exe_len = 0;
  put(exe, exe_len);
  h.exe_len = static_cast<uint32_t>(exe_len);
  const size_t argv_at = pos;
  for (size_t a = 0; a < argc && argv != nullptr && argv[a] != nullptr; ++a) {
    size_t n = 0;
    while (argv[a][n] != '\0') ++n;
    if (pos + 1 >= room) break;
    if (pos + n + 1 > room) n = room - pos - 1;  // the last one that fits, cut
    put(argv[a], n);
    buf[pos++] = '\0';
  }
  h.argv_len = static_cast<uint32_t>(pos - argv_at);
  while (pos % 8 != 0) buf[pos++] = 0;
  h.magic = kQuietMagic;
  h.size = static_cast<uint32_t>(pos);
  for (size_t i = 0; i < sizeof h; ++i) buf[i] = reinterpret_cast<const uint8_t*>(&h)[i];
  return pos;
}

struct QuietEntry {
  QuietHeader h{};
  std::vector<std::pair<uint32_t, int>> children;  // (pid, wait status)
  std::string exe;
  std::vector<std::string> argv;
};

// Reads every whole entry of a journal's bytes into *out. False if a
// damaged entry was met (the entries before it are kept).
bool ParseQuietJournal(const uint8_t* p, size_t n, std::vector<QuietEntry>* out);

}  // namespace gotrace::log
