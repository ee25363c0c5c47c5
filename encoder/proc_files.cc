// SPDX-License-Identifier: Apache-2.0
//===-- encoder/proc_files.cc - files and processes, as the launcher sees them ===//
#include "encoder/proc_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace gotrace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::set<std::string> OpenFiles(const std::string& prefix, const std::string& suffix) {
  std::set<std::string> open;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return open;
  while (dirent* p = readdir(proc)) {
    if (p->d_name[0] < '0' || p->d_name[0] > '9') continue;
    const std::string fds = std::string("/proc/") + p->d_name + "/fd";
    DIR* d = opendir(fds.c_str());
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[4096];
      const ssize_t n = readlink((fds + "/" + e->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      const std::string path(target, static_cast<size_t>(n));
      if (path.compare(0, prefix.size(), prefix) == 0 && EndsWith(path, suffix)) open.insert(path);
    }
    closedir(d);
  }
  closedir(proc);
  return open;
}

std::string ProcStatField(pid_t pid, int n) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[1024];
  const ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return "";
  buf[got] = '\0';
  // Field 2, the command, is in parentheses and may hold spaces: count
  // from its closing one.
  const char* p = std::strrchr(buf, ')');
  for (int field = 2; p != nullptr && field < n; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return "";
  ++p;
  return std::string(p, std::strcspn(p, " \n"));
}

bool CopyFile(const std::string& src, const std::string& dst) {
  const int in = open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  const int out = open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    return false;
  }
  char buf[1 << 16];
  bool ok = true;
  for (;;) {
    const ssize_t n = read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0 || write(out, buf, static_cast<size_t>(n)) != n) {
      ok = false;
      break;
    }
  }
  close(in);
  if (close(out) != 0) ok = false;
  if (!ok) unlink(dst.c_str());
  return ok;
}

}  // namespace gotrace
