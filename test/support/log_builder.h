// SPDX-License-Identifier: Apache-2.0
//===-- test/support/log_builder.h - synthetic event logs for tests -------===//
//
// Builds event logs (encoder/log_format.h) through the same ChunkWriter that
// preload/ uses, with small chunks so that tests cross chunk boundaries, and
// encodes them with the fake symbolizer. Times are absolute ticks (1 tick =
// 1 ns).
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "encoder/encode.h"
#include "encoder/log_format.h"
#include "encoder/log_writer.h"
#include "encoder/symbolizer.h"

namespace gotrace::testing {

using log::Tick;
using log::WaitKind;

// A directory under /tmp removed (recursively) at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class LogBuilder;

class ThreadLog {
 public:
  ThreadLog& Start(Tick ts, uint32_t cpu, uint64_t create_id = 0, uint64_t start_pc = 0,
                   uint64_t flags = 0, uint64_t self = 0);
  ThreadLog& End(Tick ts, uint32_t cpu);
  ThreadLog& Create(Tick ts, uint32_t cpu, uint64_t create_id, uint64_t start_pc,
                    uint64_t stack = 0);
  ThreadLog& Wait(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, Tick duration,
                  uint32_t cpu_end, uint64_t stack = 0, uint64_t flags = 0, uint64_t aux = 0);
  ThreadLog& OpenWait(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, uint64_t stack = 0);
  ThreadLog& Release(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, uint64_t count = 1,
                     uint64_t stack = 0);
  ThreadLog& Heap(Tick ts, uint32_t cpu, uint64_t bytes);
  ThreadLog& StackDef(Tick ts, uint32_t cpu, uint64_t id, std::vector<uint64_t> pcs,
                      uint32_t epoch = 0);
  // Annotations (gotrace/annotate.h): mode 0 begins a region, 1 ends it.
  ThreadLog& TaskBegin(Tick ts, uint32_t cpu, uint64_t task, uint64_t parent,
                       const std::string& name, uint64_t stack = 0);
  ThreadLog& TaskEnd(Tick ts, uint32_t cpu, uint64_t task, uint64_t stack = 0);
  ThreadLog& Region(Tick ts, uint32_t cpu, uint64_t task, uint64_t mode, const std::string& name,
                    uint64_t stack = 0);
  ThreadLog& UserLog(Tick ts, uint32_t cpu, uint64_t task, const std::string& category,
                     const std::string& message, uint64_t stack = 0);
  // kThreadName: serial 0 names this stream's thread, else the thread stream
  // with that serial (written in the process stream).
  ThreadLog& Name(Tick ts, uint32_t cpu, uint32_t serial, const std::string& name);
  // The kernel stream's records (LogBuilder::Kernel()): context switches of
  // thread tid on cpu, and CPU samples.
  ThreadLog& SwitchIn(Tick ts, uint32_t cpu, uint32_t tid);
  ThreadLog& SwitchOut(Tick ts, uint32_t cpu, uint32_t tid, bool preempt = false);
  ThreadLog& Sample(Tick ts, uint32_t cpu, uint32_t tid, uint64_t stack);

  uint32_t tid() const { return tid_; }
  uint32_t serial() const { return serial_; }

 private:
  friend class LogBuilder;
  ThreadLog(LogBuilder* b, uint32_t serial, uint32_t tid, size_t chunk_bytes);
  void Room(size_t n);
  void Flush();

  LogBuilder* b_;
  uint32_t serial_;
  uint32_t tid_;
  uint32_t seq_ = 0;
  std::vector<uint64_t> mem_;  // 8-aligned chunk memory
  log::ChunkWriter w_;
  bool began_ = false;
};

class LogBuilder {
 public:
  explicit LogBuilder(uint32_t ncpus = 2, Tick start = 1000, uint32_t pid = 100);

  // Chunk size for streams created after this call (default 512 bytes).
  void set_chunk_bytes(size_t n) { chunk_bytes_ = n; }

  // A new thread stream. The serial is assigned in creation order.
  ThreadLog& Thread(uint32_t tid);
  // The process stream: stack definitions, modules, trace end.
  ThreadLog& Process() { return *process_; }
  // The kernel stream (perf's context switches and samples, log_format.h
  // kKernelSerial), made at the first call: with it the log is encoded in
  // kernel mode (the switches decide where threads run).
  ThreadLog& Kernel();
  // Shorthand for Process().StackDef(start, 0, id, pcs, epoch).
  void Stack(uint64_t id, std::vector<uint64_t> pcs, uint32_t epoch = 0);
  // The end record, written in the log's last chunk with the count of the
  // chunks before it. A log without one is incomplete (strict encode fails).
  void TraceEnd(Tick ts, uint64_t dropped_records = 0);

  // Writes header + all chunks (chunks of different streams interleaved
  // round-robin, to mimic concurrent spills) and then the end record.
  void Write(const std::string& path);

 private:
  friend class ThreadLog;
  uint32_t ncpus_;
  Tick start_;
  uint32_t pid_;
  size_t chunk_bytes_ = 512;
  std::unique_ptr<ThreadLog> process_;
  std::unique_ptr<ThreadLog> kernel_;
  std::vector<std::unique_ptr<ThreadLog>> threads_;
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> sealed_;  // serial -> chunks
  bool has_end_ = false;
  std::vector<uint8_t> end_chunk_;  // built once, so Write() can be repeated
  Tick end_ts_ = 0;
  uint64_t end_dropped_ = 0;
};

// Function table symbolizer: an address in [lo, hi) belongs to `func`, at
// line + (addr - lo) / 4 of `file` unless a fixed line is given. Ranges may
// nest to model inlining: the innermost range comes first in the output.
class FakeSymbolizer final : public Symbolizer {
 public:
  void AddFunc(uint64_t lo, uint64_t hi, std::string func, std::string file, uint32_t line);
  void Symbolize(uint64_t addr, uint32_t epoch, std::vector<SymFrame>* out) override;

 private:
  struct Fn {
    uint64_t lo, hi;
    std::string func, file;
    uint32_t line;
  };
  std::vector<Fn> fns_;
};

// Test programs use PCs from this layout:
//   0x1000.. main            0x2000.. worker        0x3000.. pthread_mutex_lock
//   0x4000.. pthread_mutex_unlock  0x5000.. pthread_cond_wait  0x6000.. pthread_cond_signal
//   0x7000.. read            0x8000.. nanosleep     0x9000.. recv   0xa000.. pthread_create
//   0xb000.. pthread_join    0xc000.. producer      0xd000.. consumer
SymbolizerFactory StandardFakeSymbolizer();

struct EncodeRun {
  Status status;
  EncodeStats stats;
  std::string trace;  // path of the written trace
};
// Encodes with the fake symbolizer and every event checked (TraceChecker).
EncodeRun EncodeForTest(const std::vector<std::string>& logs, const std::string& out,
                        ModelOptions model = {}, SymbolizerFactory sym = StandardFakeSymbolizer(),
                        bool strict = true);

}  // namespace gotrace::testing
