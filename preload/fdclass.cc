// SPDX-License-Identifier: Apache-2.0
//===-- preload/fdclass.cc - what kind of file each descriptor is ---------===//
#include "preload/fdclass.h"

#include <sys/stat.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "preload/sys/raw.h"

namespace gotrace::fdclass {

// Page-aligned: WipeOnFork marks exactly its pages.
GT_LARGE_BSS alignas(4096) std::atomic<uint8_t> g_table[kTableSize];
alignas(64) GT_FORK_HOT std::atomic<uint32_t> g_end{0};  // a fork child resets it
namespace {
bool g_wiped = false;  // this table is WIPEONFORK (inherited by fork children)
}  // namespace

void WipeOnFork() {
  if (g_wiped) return;
  g_wiped = true;
  // Linux 4.14; on an older kernel the table is copied as before.
  constexpr long kMadvWipeOnFork = 18;
  (void)sys::Syscall6(SYS_madvise, reinterpret_cast<long>(g_table), sizeof g_table,
                      kMadvWipeOnFork);
}

log::FdClass ClassifySlow(int fd) {
  if (fd < 0) return log::FdClass::kUnknown;
  struct stat st;
  if (sys::Syscall6(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0)
    return log::FdClass::kUnknown;  // not open (EBADF): do not cache
  log::FdClass c;
  switch (st.st_mode & S_IFMT) {
    case S_IFSOCK: c = log::FdClass::kSocket; break;
    case S_IFIFO: c = log::FdClass::kPipe; break;
    case S_IFREG: case S_IFBLK: c = log::FdClass::kFile; break;
    case S_IFCHR: {
      // A terminal answers TCGETS; /dev/null and friends do not.
      struct termios t;
      c = sys::Syscall6(SYS_ioctl, fd, TCGETS, reinterpret_cast<long>(&t)) == 0
              ? log::FdClass::kTty
              : log::FdClass::kOther;
      break;
    }
    case 0: c = log::FdClass::kEvent; break;  // anon inodes: eventfd, timerfd, epoll, signalfd
    default: c = log::FdClass::kOther; break;
  }
  Set(fd, c);
  return c;
}

void ForgetRange(unsigned lo, unsigned hi) {
  // Up to the highest descriptor stored (g_end), and reads first: a write
  // to a page is a fault of its own after a fork.
  const unsigned end = g_end.load(std::memory_order_relaxed);
  for (unsigned fd = lo; fd <= hi && fd < end; ++fd)
    if (g_table[fd].load(std::memory_order_relaxed) != 0) g_table[fd].store(0, std::memory_order_relaxed);
}

}  // namespace gotrace::fdclass
