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
#include "encoder/stack_table.h"

namespace gotrace {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

// "dir/name.ext" -> "dir/name.N.ext" (the extension is kept last so that
// tools that look at it still recognise the file).
std::string WithSuffix(const std::string& path, unsigned n) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  const std::string num = "." + std::to_string(n);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + num;
  }
  return path.substr(0, dot) + num + path.substr(dot);
}

// Moves tmp to its final name according to the mode; returns the name.
Status Publish(const std::string& tmp, const std::string& out, OutputMode mode,
               std::string* final_path) {
  if (mode == OutputMode::kOverwrite) {
    if (::rename(tmp.c_str(), out.c_str()) != 0)
      return Status::Error(out + ": cannot write: " + std::strerror(errno));
    *final_path = out;
    return Status::Ok();
  }
  for (unsigned n = 0; n < 10000; ++n) {
    const std::string cand = n == 0 ? out : WithSuffix(out, n);
    // link() fails with EEXIST instead of replacing: exclusive creation.
    if (::link(tmp.c_str(), cand.c_str()) == 0) {
      ::unlink(tmp.c_str());
      *final_path = cand;
      return Status::Ok();
    }
    if (errno != EEXIST) {
      // Filesystems without hard links: fall back to a checked rename.
      if (!Exists(cand) && ::rename(tmp.c_str(), cand.c_str()) == 0) {
        *final_path = cand;
        return Status::Ok();
      }
      return Status::Error(cand + ": cannot create: " + std::strerror(errno));
    }
    if (mode == OutputMode::kExclusive)
      return Status::Error(out + ": already exists (not overwriting it)");
  }
  return Status::Error(out + ": too many existing files with this name");
}

}  // namespace

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
  GT_RETURN_IF_ERROR(set.Open(logs, log::ReadOptions{opts.strict}));
  stats->warnings = set.warnings();
  stats->log_records = set.total_records();
  stats->log_chunks = set.total_chunks();
  if (opts.output_mode == OutputMode::kExclusive && Exists(output))
    return Status::Error(output + ": already exists (not overwriting it)");

  // Write next to the destination so the final move is a rename in place.
  std::string tmp = output + ".tmp.XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Status::Error(output + ": cannot create: " + std::strerror(errno));
  ::fchmod(fd, opts.file_mode);
  struct TmpGuard {
    std::string path;
    int fd;
    bool keep = false;
    ~TmpGuard() {
      if (fd >= 0) ::close(fd);
      if (!keep) ::unlink(path.c_str());
    }
  } guard{tmp, fd};

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
  stacks.WriteAll(&writer, syms, &stats->stacks);
  GT_RETURN_IF_ERROR(writer.Finish(stats->model.end_ns));
  GT_RETURN_IF_ERROR(sink.Flush());
  // No fsync: a trace needs no durability across power loss, and the exit
  // path's budget is milliseconds. close() still reports deferred errors.
  guard.fd = -1;
  if (::close(fd) != 0) return Status::Error(output + ": cannot write: " + std::strerror(errno));
  stats->events = writer.events();
  stats->bytes = sink.bytes_written();
  GT_RETURN_IF_ERROR(Publish(tmp, output, opts.output_mode, &stats->output_path));
  guard.keep = true;  // moved away: nothing to clean up
  return Status::Ok();
}

}  // namespace gotrace
