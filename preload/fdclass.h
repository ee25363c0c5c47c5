// SPDX-License-Identifier: Apache-2.0
//===-- preload/fdclass.h - what kind of file each descriptor is ----------===//
//
// A wait on a socket, pipe, tty or eventfd is a network wait in the trace;
// one on a regular file is a system call. The class of every descriptor is
// cached in a table indexed by fd (one atomic byte each, no locks), set when
// our interposers create a descriptor (socket, accept, pipe, eventfd, dup...),
// forgotten when they close it, and otherwise found lazily with one fstat
// (the descriptor was opened before tracing or through a path we do not
// interpose, e.g. fopen) and cached.
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstdint>

#include "encoder/log_format.h"

namespace gotrace::fdclass {

// Every descriptor Linux can hand out (fs.nr_open is at most 2^20 by
// default): a server's sockets above 65535 are cached too, not fstat'ed on
// every call. 1 MiB of zero-fill-on-demand memory: only pages of
// descriptors in use are ever touched.
inline constexpr int kTableSize = 1 << 20;
// Stores class + 1; 0 means "not known yet".
extern std::atomic<uint8_t> g_table[kTableSize];
// One past the highest descriptor ever stored: ForgetRange reads no
// further. close_range(3, ~0U) (python's subprocess children, systemd,
// closefrom) read the whole table before, and each of its 256 pages never
// touched was a page fault: about 1 ms of every such process's time here.
extern std::atomic<uint32_t> g_end;

inline void NoteEnd(int fd) {
  const uint32_t e = static_cast<uint32_t>(fd) + 1;
  if (__builtin_expect(e > g_end.load(std::memory_order_relaxed), 0)) {
    uint32_t cur = g_end.load(std::memory_order_relaxed);
    while (e > cur && !g_end.compare_exchange_weak(cur, e, std::memory_order_relaxed)) {
    }
  }
}

log::FdClass ClassifySlow(int fd);

// Nothing is stored at or beyond g_end: the table is not read there. A
// page of it read before it is first written was two faults, not one (the
// zero page mapped, then replaced), in every process that classified a
// descriptor (issue 18).
inline log::FdClass Get(int fd) {
  if (static_cast<unsigned>(fd) < g_end.load(std::memory_order_relaxed)) {
    const uint8_t v = g_table[fd].load(std::memory_order_relaxed);
    if (__builtin_expect(v != 0, 1)) return static_cast<log::FdClass>(v - 1);
  }
  return ClassifySlow(fd);
}
// These store only a change: a shell's fork child opens, closes and dup2s
// a few descriptors before each exec, and a store of what was there already
// was a copy-on-write fault of the table's page (issue 18).
inline void Set(int fd, log::FdClass c) {
  const uint8_t v = static_cast<uint8_t>(static_cast<uint8_t>(c) + 1);
  if (static_cast<unsigned>(fd) < static_cast<unsigned>(kTableSize) &&
      (static_cast<unsigned>(fd) >= g_end.load(std::memory_order_relaxed) ||
       g_table[fd].load(std::memory_order_relaxed) != v)) {
    NoteEnd(fd);
    g_table[fd].store(v, std::memory_order_relaxed);
  }
}
// Below g_end only: a program that closes every descriptor up to its limit
// one by one (an old daemon's loop to 1048576, a container's nofile) must
// not read every page of the table either.
inline void Forget(int fd) {
  if (static_cast<unsigned>(fd) < g_end.load(std::memory_order_relaxed) &&
      g_table[fd].load(std::memory_order_relaxed) != 0)
    g_table[fd].store(0, std::memory_order_relaxed);
}
void ForgetRange(unsigned lo, unsigned hi);
// Before a process's first fork: its children get the table empty (and
// find classes again with fstat as they need them), so that neither side
// copies the table's page when it next writes it. A shell's fork child
// closes and dup2s before each exec, and the shell itself opens and closes
// pipes between forks: two copy-on-write faults per fork (issue 18).
void WipeOnFork();
// In a fork child: the table is empty (WipeOnFork), no descriptor stored.
inline void AfterForkChild() {
  if (g_end.load(std::memory_order_relaxed) != 0) g_end.store(0, std::memory_order_relaxed);
}
// Nothing stored for `from` (or beyond g_end): `to` is forgotten, without
// reading the table (a fork child's table is empty: see WipeOnFork).
inline void Copy(int from, int to) {
  const uint8_t c = static_cast<unsigned>(from) < g_end.load(std::memory_order_relaxed)
                        ? g_table[from].load(std::memory_order_relaxed)
                        : 0;
  if (c == 0 || static_cast<unsigned>(to) >= static_cast<unsigned>(kTableSize)) {
    Forget(to);
  } else if (static_cast<unsigned>(to) >= g_end.load(std::memory_order_relaxed) ||
             g_table[to].load(std::memory_order_relaxed) != c) {
    NoteEnd(to);
    g_table[to].store(c, std::memory_order_relaxed);
  }
}

// Waits on these are network waits (GoBlockNet) rather than system calls.
inline bool IsNet(log::FdClass c) {
  return c == log::FdClass::kSocket || c == log::FdClass::kPipe || c == log::FdClass::kTty ||
         c == log::FdClass::kEvent;
}

}  // namespace gotrace::fdclass
