// SPDX-License-Identifier: Apache-2.0
//===-- test/support/log_builder.cc - synthetic event logs for tests ------===//
#include "test/support/log_builder.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace gotrace::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/gotrace-test-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!::getenv("GOTRACE_KEEP_TEST_FILES")) std::filesystem::remove_all(path_, ec);
}
ThreadLog& ThreadLog::Name(Tick ts, uint32_t cpu, uint32_t serial, const std::string& name) {
  Room(log::ChunkWriter::VarRecordBound(log::ChunkWriter::StringBound(name.size()) + 10));
  w_.ThreadName(ts, cpu, serial, name);
  return *this;
}

// ---------------------------------------------------------------------------

ThreadLog::ThreadLog(LogBuilder* b, uint32_t serial, uint32_t tid, size_t chunk_bytes)
    : b_(b), serial_(serial), tid_(tid), mem_((chunk_bytes + 7) / 8 + 64) {
  w_.Init(reinterpret_cast<uint8_t*>(mem_.data()), mem_.size() * 8);
  w_.Begin(b->start_);
}

void ThreadLog::Flush() {
  if (w_.empty()) return;
  log::SealedChunk c = w_.Seal(serial_, tid_, seq_++);
  b_->sealed_[serial_].emplace_back(c.data, c.data + c.size);
  w_.Begin(b_->start_);
}

void ThreadLog::Room(size_t n) {
  if (!w_.Fits(n) || w_.payload_size() + n > b_->chunk_bytes_) Flush();
}

ThreadLog& ThreadLog::Start(Tick ts, uint32_t cpu, uint64_t create_id, uint64_t start_pc,
                            uint64_t flags, uint64_t self) {
  Room(log::kMaxFixedRecordBytes);
  w_.ThreadStart(ts, cpu, create_id, start_pc, self ? self : 0x10000 + tid_, flags);
  return *this;
}
ThreadLog& ThreadLog::End(Tick ts, uint32_t cpu) {
  Room(log::kMaxFixedRecordBytes);
  w_.ThreadEnd(ts, cpu);
  return *this;
}
ThreadLog& ThreadLog::Create(Tick ts, uint32_t cpu, uint64_t create_id, uint64_t start_pc,
                             uint64_t stack) {
  Room(log::kMaxFixedRecordBytes);
  w_.ThreadCreate(ts, cpu, create_id, start_pc, stack);
  return *this;
}
ThreadLog& ThreadLog::Wait(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, Tick duration,
                           uint32_t cpu_end, uint64_t stack, uint64_t flags, uint64_t aux) {
  Room(log::kMaxFixedRecordBytes);
  w_.Wait(ts, cpu, kind, flags, obj, aux, duration, cpu_end, stack);
  return *this;
}
ThreadLog& ThreadLog::OpenWait(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj,
                               uint64_t stack) {
  return Wait(ts, cpu, kind, obj, 0, cpu, stack, log::kWaitOpen);
}
ThreadLog& ThreadLog::Release(Tick ts, uint32_t cpu, WaitKind kind, uint64_t obj, uint64_t count,
                              uint64_t stack) {
  Room(log::kMaxFixedRecordBytes);
  w_.Release(ts, cpu, kind, obj, count, stack);
  return *this;
}
ThreadLog& ThreadLog::Heap(Tick ts, uint32_t cpu, uint64_t bytes) {
  Room(log::kMaxFixedRecordBytes);
  w_.Heap(ts, cpu, bytes);
  return *this;
}
ThreadLog& ThreadLog::StackDef(Tick ts, uint32_t cpu, uint64_t id, std::vector<uint64_t> pcs,
                               uint32_t epoch) {
  Room(log::ChunkWriter::StackDefBound(pcs.size()));
  w_.StackDef(ts, cpu, id, epoch, pcs.data(), pcs.size());
  return *this;
}

ThreadLog& ThreadLog::TaskBegin(Tick ts, uint32_t cpu, uint64_t task, uint64_t parent,
                                const std::string& name, uint64_t stack) {
  Room(log::ChunkWriter::VarRecordBound(log::ChunkWriter::AnnotationBound(name.size(), 0)));
  w_.TaskBegin(ts, cpu, task, parent, stack, name);
  return *this;
}
ThreadLog& ThreadLog::TaskEnd(Tick ts, uint32_t cpu, uint64_t task, uint64_t stack) {
  Room(log::kMaxFixedRecordBytes);
  w_.TaskEnd(ts, cpu, task, stack);
  return *this;
}
ThreadLog& ThreadLog::Region(Tick ts, uint32_t cpu, uint64_t task, uint64_t mode,
                             const std::string& name, uint64_t stack) {
  Room(log::ChunkWriter::VarRecordBound(log::ChunkWriter::AnnotationBound(name.size(), 0)));
  w_.Region(ts, cpu, task, mode, stack, name);
  return *this;
}
ThreadLog& ThreadLog::UserLog(Tick ts, uint32_t cpu, uint64_t task, const std::string& category,
                              const std::string& message, uint64_t stack) {
  Room(log::ChunkWriter::VarRecordBound(
      log::ChunkWriter::AnnotationBound(category.size(), message.size())));
  w_.UserLog(ts, cpu, task, stack, category, message);
  return *this;
}

ThreadLog& ThreadLog::SwitchIn(Tick ts, uint32_t cpu, uint32_t tid) {
  Room(log::kMaxFixedRecordBytes);
  w_.Switch(ts, cpu, tid, 0);
  return *this;
}
ThreadLog& ThreadLog::SwitchOut(Tick ts, uint32_t cpu, uint32_t tid, bool preempt) {
  Room(log::kMaxFixedRecordBytes);
  w_.Switch(ts, cpu, tid, log::kSwitchOut | (preempt ? log::kSwitchPreempt : 0));
  return *this;
}
ThreadLog& ThreadLog::Sample(Tick ts, uint32_t cpu, uint32_t tid, uint64_t stack) {
  Room(log::kMaxFixedRecordBytes);
  w_.CpuSample(ts, cpu, tid, stack);
  return *this;
}

// ---------------------------------------------------------------------------

LogBuilder::LogBuilder(uint32_t ncpus, Tick start, uint32_t pid)
    : ncpus_(ncpus), start_(start), pid_(pid) {
  process_.reset(new ThreadLog(this, log::kProcessSerial, 0, chunk_bytes_));
}

ThreadLog& LogBuilder::Thread(uint32_t tid) {
  threads_.emplace_back(
      new ThreadLog(this, static_cast<uint32_t>(threads_.size() + 1), tid, chunk_bytes_));
  return *threads_.back();
}

ThreadLog& LogBuilder::Kernel() {
  if (!kernel_) kernel_.reset(new ThreadLog(this, log::kKernelSerial, 0, chunk_bytes_));
  return *kernel_;
}

void LogBuilder::Stack(uint64_t id, std::vector<uint64_t> pcs, uint32_t epoch) {
  process_->StackDef(start_, 0, id, std::move(pcs), epoch);
}

void LogBuilder::TraceEnd(Tick ts, uint64_t dropped_records) {
  has_end_ = true;
  end_ts_ = ts;
  end_dropped_ = dropped_records;
}

void LogBuilder::Write(const std::string& path) {
  process_->Flush();
  if (kernel_) kernel_->Flush();
  for (auto& t : threads_) t->Flush();
  log::FileHeader h;
  log::InitFileHeader(&h, 1'000'000'000, start_, pid_, 1, ncpus_);
  std::vector<uint8_t> out(reinterpret_cast<uint8_t*>(&h), reinterpret_cast<uint8_t*>(&h + 1));
  // Interleave streams' chunks round-robin, newest stream first, so readers
  // never rely on file order.
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (auto it = sealed_.rbegin(); it != sealed_.rend(); ++it) {
      if (round < it->second.size()) {
        out.insert(out.end(), it->second[round].begin(), it->second[round].end());
        any = true;
      }
    }
    if (!any) break;
  }
  if (has_end_) {
    if (end_chunk_.empty()) {
      uint64_t chunks = 0;
      for (const auto& [serial, list] : sealed_) chunks += list.size();
      process_->w_.TraceEnd(end_ts_, 0, end_dropped_, 0, chunks);
      log::SealedChunk c = process_->w_.Seal(log::kProcessSerial, 0, process_->seq_++);
      end_chunk_.assign(c.data, c.data + c.size);
      process_->w_.Begin(start_);
    }
    out.insert(out.end(), end_chunk_.begin(), end_chunk_.end());
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  size_t off = 0;
  while (off < out.size()) {
    ssize_t w = ::write(fd, out.data() + off, out.size() - off);
    if (w <= 0) throw std::runtime_error("write failed");
    off += static_cast<size_t>(w);
  }
  ::close(fd);
}

// ---------------------------------------------------------------------------

void FakeSymbolizer::AddFunc(uint64_t lo, uint64_t hi, std::string func, std::string file,
                             uint32_t line) {
  fns_.push_back(Fn{lo, hi, std::move(func), std::move(file), line});
}

void FakeSymbolizer::Symbolize(uint64_t addr, uint32_t, std::vector<SymFrame>* out) {
  // Innermost (smallest) range first.
  std::vector<const Fn*> hits;
  for (const Fn& f : fns_)
    if (addr >= f.lo && addr < f.hi) hits.push_back(&f);
  std::sort(hits.begin(), hits.end(),
            [](const Fn* a, const Fn* b) { return a->hi - a->lo < b->hi - b->lo; });
  for (const Fn* f : hits)
    out->push_back(SymFrame{f->func, f->file, f->line + static_cast<uint32_t>((addr - f->lo) / 4)});
}

SymbolizerFactory StandardFakeSymbolizer() {
  return [](const log::LogFile&) {
    auto s = std::make_unique<FakeSymbolizer>();
    s->AddFunc(0x1000, 0x2000, "main", "/src/app/main.cc", 10);
    s->AddFunc(0x2000, 0x3000, "worker", "/src/app/worker.cc", 100);
    s->AddFunc(0x3000, 0x4000, "pthread_mutex_lock", "/glibc/nptl/pthread_mutex_lock.c", 60);
    s->AddFunc(0x4000, 0x5000, "pthread_mutex_unlock", "/glibc/nptl/pthread_mutex_unlock.c", 300);
    s->AddFunc(0x5000, 0x6000, "pthread_cond_wait", "/glibc/nptl/pthread_cond_wait.c", 600);
    s->AddFunc(0x6000, 0x7000, "pthread_cond_signal", "/glibc/nptl/pthread_cond_signal.c", 30);
    s->AddFunc(0x7000, 0x8000, "read", "/glibc/io/read.c", 25);
    s->AddFunc(0x8000, 0x9000, "nanosleep", "/glibc/time/nanosleep.c", 25);
    s->AddFunc(0x9000, 0xa000, "recv", "/glibc/socket/recv.c", 25);
    s->AddFunc(0xa000, 0xb000, "pthread_create", "/glibc/nptl/pthread_create.c", 620);
    s->AddFunc(0xb000, 0xc000, "pthread_join", "/glibc/nptl/pthread_join.c", 20);
    s->AddFunc(0xc000, 0xd000, "producer", "/src/app/queue.cc", 40);
    s->AddFunc(0xd000, 0xe000, "consumer", "/src/app/queue.cc", 80);
    s->AddFunc(0xd100, 0xd200, "Queue::Pop", "/src/app/queue.h", 15);  // inlined into consumer
    return std::unique_ptr<Symbolizer>(std::move(s));
  };
}

EncodeRun EncodeForTest(const std::vector<std::string>& logs, const std::string& out,
                        ModelOptions model, SymbolizerFactory sym, bool strict) {
  EncodeOptions opts;
  opts.model = model;
  opts.model.check = true;
  opts.symbolizer = std::move(sym);
  opts.output_mode = OutputMode::kOverwrite;
  opts.strict = strict;
  EncodeRun r;
  r.status = Encode(logs, out, opts, &r.stats);
  r.trace = r.stats.output_path;
  return r;
}

}  // namespace gotrace::testing
