// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_summary.cc - who a log's process was, and what it did -===//
#include "encoder/log_summary.h"

#include <algorithm>

#include "encoder/log_reader.h"

namespace gotrace {

bool LogSummary::quiet() const {
  const uint64_t heap_moved = heap_max >= heap_min ? heap_max - heap_min : 0;
  return threads <= 1 && blocking_waits == 0 && creates == 0 && annotations == 0 &&
         heap_moved < (uint64_t{1} << 20) && cpu_ns < log::kBusyCpuNs;
}

Status SummarizeLog(const std::string& path, uint64_t block_threshold_ns, LogSummary* out) {
  log::LogSet set;
  std::vector<std::string> paths = {path};
  Status st = set.Open(paths, log::ReadOptions{false});
  if (!st.ok()) return st;
  const log::LogFile& f = set.files()[0];
  out->pid = f.header.pid;
  out->ppid = f.header.ppid;
  out->start_ns = f.header.start_ns;
  out->end_ns = f.header.start_ns;
  // A system call counts as a block here from 1 ms (or the block threshold,
  // if higher), 10 ms of them in all (log::kQuietIoTotalNs): a short
  // process reading its input on a busy machine takes tens of microseconds
  // per call without being off its CPU, and `head` waits a millisecond for
  // `sort`; that alone is not worth a trace of its own.
  const uint64_t io_ns = log::QuietIoCallNs(block_threshold_ns);
  uint64_t io_block_ns = 0;  // system calls' waits of io_ns or more
  for (uint32_t s = 0; s < set.streams().size(); ++s) {
    const log::Stream& stream = set.streams()[s];
    const bool thread = stream.serial != log::kProcessSerial && stream.serial != log::kKernelSerial;
    if (thread) ++out->threads;
    log::StreamCursor cur(set, s);
    log::Record r;
    while (cur.Next(&r)) {
      ++out->records;
      if (stream.serial != log::kKernelSerial) out->end_ns = std::max(out->end_ns, r.ts);
      switch (r.type) {
        case log::kWait: {
          const auto kind = static_cast<log::WaitKind>(r.wait.kind);
          const bool io = kind == log::WaitKind::kSyscall || kind == log::WaitKind::kNet;
          // A wait for a child process (wait4, waitid: the call's number is
          // the wait's aux) is no reason of its own: the child is in the
          // index, with its own trace if it did something (a shell's
          // command substitution, a compiler driver).
          const bool child = kind == log::WaitKind::kSyscall && log::IsChildWaitCall(r.wait.aux);
          if (child) break;
          if (!io || (r.wait.flags & log::kWaitOpen)) {
            ++out->blocking_waits;
          } else if (r.wait.duration >= io_ns) {
            io_block_ns += r.wait.duration;
          }
          break;
        }
        case log::kThreadCreate:
          ++out->creates;
          break;
        case log::kHeap:
          out->heap_min = std::min(out->heap_min, r.heap.bytes);
          out->heap_max = std::max(out->heap_max, r.heap.bytes);
          break;
        case log::kTaskBegin:
        case log::kTaskEnd:
        case log::kRegion:
        case log::kUserLog:
          ++out->annotations;
          break;
        case log::kExitStatus:
          if (r.exit.status & log::kExitExec) out->exec_d = true;
          else out->exit_status = static_cast<int64_t>(r.exit.status & 0xffff);
          break;
        case log::kCpuTime:
          out->cpu_ns = std::max(out->cpu_ns, r.cputime.ns);
          break;
        case log::kThreadCpu: {
          log::ThreadCpuFields tc;
          if (log::ParseThreadCpu(r, &tc)) out->cpu_ns = std::max(out->cpu_ns, tc.ns);
          break;
        }
        case log::kChildExit:
          out->child_exits.push_back(log::ChildExit{static_cast<uint32_t>(r.child.pid),
                                                    static_cast<int>(r.child.status), r.ts});
          break;
        case log::kTraceEnd:
          out->complete = true;
          out->end_ns = std::max(out->end_ns, r.ts);
          break;
        case log::kProcessInfo: {
          log::ProcessInfoFields pi;
          if (log::ParseProcessInfo(r, &pi)) {
            out->argv = std::move(pi.argv);
            out->exe = std::move(pi.exe);
            out->descendant = (pi.flags & 1) != 0;
            if (pi.ppid != 0) out->ppid = static_cast<uint32_t>(pi.ppid);
            // A trace window's log starts with the window: the process
            // began before (the index's start and duration are its own).
            if (pi.began_ns != 0 && pi.began_ns < out->start_ns) out->start_ns = pi.began_ns;
          }
          break;
        }
        default:
          break;
      }
    }
  }
  if (io_block_ns >= log::QuietIoTotalNs(block_threshold_ns)) ++out->blocking_waits;
  return Status::Ok();
}

}  // namespace gotrace
