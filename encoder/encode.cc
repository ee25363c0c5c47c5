// SPDX-License-Identifier: Apache-2.0
//===-- encoder/encode.cc - event logs in, one Go trace file out ----------===//
#include "encoder/encode.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "encoder/go_trace_writer.h"
#include "encoder/log_reader.h"
#include "encoder/numbered_name.h"
#include "encoder/stack_table.h"

namespace gotrace {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

// Where the trace is written until it is complete: an unnamed file in the
// destination's directory (O_TMPFILE), so that a process killed while
// writing (SIGKILL, a CI timeout, an OOM kill) leaves nothing behind; or,
// where the filesystem has no O_TMPFILE or there is no /proc to name the
// file through, a named temporary file next to the destination.
struct TmpOut {
  int fd = -1;
  std::string path;  // empty: unnamed
};

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

TmpOut CreateTmp(const std::string& output, OutputMode mode, unsigned file_mode) {
  TmpOut t;
  if (mode != OutputMode::kOverwrite && ::access("/proc/thread-self/fd", X_OK) == 0) {
    t.fd = ::open(DirOf(output).c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, file_mode);
    if (t.fd >= 0) return t;
  }
  t.path = output + ".tmp.XXXXXX";
  t.fd = ::mkostemp(t.path.data(), O_CLOEXEC);
  return t;
}

// Gives the unnamed file `fd` the name `cand`; fails with EEXIST if taken.
// Through /proc/thread-self, not /proc/self: once the main thread has
// called pthread_exit, /proc/self/fd of the process is gone.
bool LinkUnnamed(int fd, const std::string& cand) {
  char proc[64];
  std::snprintf(proc, sizeof proc, "/proc/thread-self/fd/%d", fd);
  return ::linkat(AT_FDCWD, proc, AT_FDCWD, cand.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

// Gives a finished file its final name: `out`, else (kSuffix) the first of
// out.1, out.2, ... that is free. `link(cand)` names the file cand without
// ever replacing one (0, or the errno: EEXIST if the name is taken). On any
// other error `*link_failed` is set.
template <typename Link>
Status NameFile(const std::string& out, OutputMode mode, Link link, std::string* final_path,
                bool* link_failed) {
  *link_failed = false;
  for (unsigned n = 0; n < 10000; ++n) {
    const std::string cand = n == 0 ? out : WithSuffix(out, n);
    const int err = link(cand);
    if (err == 0) {
      *final_path = cand;
      return Status::Ok();
    }
    if (err != EEXIST) {
      *link_failed = true;
      return Status::Error(cand + ": cannot create: " + std::strerror(err));
    }
    if (mode == OutputMode::kExclusive)
      return Status::Error(out + ": already exists (not overwriting it)");
  }
  return Status::Error(out + ": too many existing files with this name");
}

// Copies all of `from` (read from offset 0) to `to`.
bool CopyFile(int from, int to) {
  char buf[1 << 16];
  off_t off = 0;
  for (;;) {
    const ssize_t n = ::pread(from, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += w;
    }
    off += n;
  }
}

// Moves the named temporary file to its final name; returns the name.
Status Publish(const std::string& tmp, const std::string& out, OutputMode mode,
               std::string* final_path) {
  if (mode == OutputMode::kOverwrite) {
    if (::rename(tmp.c_str(), out.c_str()) != 0)
      return Status::Error(out + ": cannot write: " + std::strerror(errno));
    *final_path = out;
    return Status::Ok();
  }
  bool link_failed;
  return NameFile(out, mode, [&](const std::string& cand) {
    // link() fails with EEXIST instead of replacing: exclusive creation.
    if (::link(tmp.c_str(), cand.c_str()) == 0) {
      ::unlink(tmp.c_str());
      return 0;
    }
    const int err = errno;
    // Filesystems without hard links: a checked rename.
    if (err != EEXIST && !Exists(cand) && ::rename(tmp.c_str(), cand.c_str()) == 0) return 0;
    return err;
  }, final_path, &link_failed);
}

}  // namespace

std::string KernelLossLine(const ModelStats& m) {
  if (m.kernel_lost == 0 && m.kernel_rings_full == 0) return "";
  std::string s = "the kernel's ring buffers overflowed: ";
  if (m.kernel_lost > 0) {
    s += std::to_string(m.kernel_lost) + " scheduling records and CPU samples lost";
    if (m.kernel_rings_full > 0) s += ", and ";
  }
  if (m.kernel_rings_full > 0) {
    char at[64];
    snprintf(at, sizeof at, "%.3f s", static_cast<double>(m.kernel_full_at) / 1e9);
    s += (m.kernel_rings_full == 1 ? std::string("a ring was")
                                   : std::to_string(m.kernel_rings_full) + " rings were") +
         " still full at the end (records after " + at + " may be missing)";
  }
  // A thread that records nothing is read only when another thread's
  // flusher runs, or at the end.
  return s + "; a lower GOTRACE_CPU_HZ needs less room";
}

bool CheckEventsByDefault() {
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

Status Encode(std::span<const std::string> logs, const std::string& output,
              const EncodeOptions& opts, EncodeStats* stats) {
  log::LogSet set;
  if (Status st = set.Open(logs, log::ReadOptions{opts.strict}); !st.ok()) {
    stats->no_events = set.no_events();
    return st;
  }
  stats->warnings = set.warnings();
  stats->notes = set.notes();
  stats->log_records = set.total_records();
  stats->log_chunks = set.total_chunks();
  if (opts.output_mode == OutputMode::kExclusive && Exists(output))
    return Status::Error(output + ": already exists (not overwriting it)");

  // Written next to the destination, so that naming it is a link in place.
  TmpOut tmp = CreateTmp(output, opts.output_mode, opts.file_mode);
  const int fd = tmp.fd;
  if (fd < 0) return Status::Error(output + ": cannot create: " + std::strerror(errno));
  ::fchmod(fd, opts.file_mode);
  struct TmpGuard {
    std::string path;
    int fd;
    bool keep = false;
    ~TmpGuard() {
      if (fd >= 0) ::close(fd);
      if (!keep && !path.empty()) ::unlink(path.c_str());
    }
  } guard{tmp.path, fd};

  uint32_t nprocs = 1;
  for (const auto& f : set.files()) nprocs = std::max(nprocs, f.header.ncpus);

  std::vector<std::unique_ptr<Symbolizer>> owned;
  std::vector<Symbolizer*> syms;
  for (const auto& f : set.files()) {
    owned.push_back(opts.symbolizer ? opts.symbolizer(f) : nullptr);
    syms.push_back(owned.back().get());
  }

  FdSink sink(fd, output);
  GoTraceWriter writer(&sink, nprocs, 1'000'000'000);  // the reader converts to ns
  StackTable stacks(set.files().size());
  GT_RETURN_IF_ERROR(ReplayModel(set, opts.model, &writer, &stacks, syms, &stats->model));
  if (const uint64_t n = stats->model.annotations.region_ends_dropped; n > 0)
    stats->warnings.push_back(std::to_string(n) +
                              " region ends named no open region of their thread (dropped: "
                              "gotrace_region_end must end the thread's innermost region)");
  stacks.WriteAll(&writer, syms, &stats->stacks);
  GT_RETURN_IF_ERROR(writer.Finish(stats->model.end_ns));
  GT_RETURN_IF_ERROR(sink.Flush());
  // No fsync: a trace needs no durability across power loss, and the exit
  // path's budget is milliseconds. close() still reports deferred errors.
  stats->events = writer.events();
  stats->bytes = sink.bytes_written();
  if (tmp.path.empty()) {
    // Named while still open (the name goes through /proc), then closed; a
    // deferred write error takes the name back.
    bool unnameable = false;
    Status st = NameFile(
        output, opts.output_mode,
        [fd](const std::string& cand) { return LinkUnnamed(fd, cand) ? 0 : errno; },
        &stats->output_path, &unnameable);
    if (unnameable) {
      // Could not be named (linkat refused it): a named copy instead.
      tmp.path = output + ".tmp.XXXXXX";
      const int named = ::mkostemp(tmp.path.data(), O_CLOEXEC);
      if (named < 0) return st;
      ::fchmod(named, opts.file_mode);
      guard.path = tmp.path;
      const bool copied = CopyFile(fd, named);
      ::close(fd);
      guard.fd = named;
      if (!copied) return Status::Error(output + ": cannot write: " + std::strerror(errno));
    } else {
      GT_RETURN_IF_ERROR(st);
      guard.fd = -1;
      if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(stats->output_path.c_str());
        return Status::Error(output + ": cannot write: " + std::strerror(err));
      }
      return Status::Ok();
    }
  }
  const int named_fd = guard.fd;
  guard.fd = -1;
  if (::close(named_fd) != 0)
    return Status::Error(output + ": cannot write: " + std::strerror(errno));
  GT_RETURN_IF_ERROR(Publish(tmp.path, output, opts.output_mode, &stats->output_path));
  guard.keep = true;  // moved away: nothing to clean up
  return Status::Ok();
}

}  // namespace gotrace
