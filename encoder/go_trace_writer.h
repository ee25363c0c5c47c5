// SPDX-License-Identifier: Apache-2.0
//===-- encoder/go_trace_writer.h - binary "go 1.19 trace" output ---------===//
//
// Follows the Go runtime's own layout (G9, GO_TRACE_FORMAT.md §1.7, §6):
// events are appended to a per-P buffer as tick deltas and written out as an
// EvBatch when the buffer fills, so a P's batches are in file order and time
// order; at the end come Frequency and one batch holding the string table and
// the stack table. Memory is one buffer per P plus the two tables.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <memory>
#include <unordered_map>
#include <vector>

#include "encoder/go_trace_format.h"
#include "encoder/status.h"

namespace gotrace {

// Where the encoded bytes go. Errors are sticky: after the first failure
// further writes are ignored and status() reports it.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void Write(const uint8_t* data, size_t n) = 0;
  virtual Status status() const = 0;
};

class MemorySink final : public ByteSink {
 public:
  void Write(const uint8_t* data, size_t n) override { bytes.insert(bytes.end(), data, data + n); }
  Status status() const override { return Status::Ok(); }
  std::vector<uint8_t> bytes;
};

// Buffered writer to a file descriptor it does not own; retries EINTR and
// short writes.
class FdSink final : public ByteSink {
 public:
  explicit FdSink(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  ~FdSink() override;
  void Write(const uint8_t* data, size_t n) override;
  Status Flush();
  Status status() const override { return status_; }
  uint64_t bytes_written() const { return written_; }

 private:
  void Drain();
  int fd_;
  std::string name_;
  std::vector<uint8_t> buf_;
  uint64_t written_ = 0;
  Status status_;
};

struct GoFrame {
  uint64_t pc;
  uint64_t func;  // string id
  uint64_t file;  // string id
  uint64_t line;
};

class GoTraceWriter {
 public:
  GoTraceWriter(ByteSink* sink, uint32_t nprocs, uint64_t ticks_per_second);

  uint32_t nprocs() const { return static_cast<uint32_t>(procs_.size()); }

  // Appends a timed event to P p's batch. args exclude the time (and include
  // the stack id where the event has one). Times of one P must not decrease;
  // a smaller time is clamped (and counted) rather than written as a negative
  // delta.
  void Event(uint32_t p, go::EvType type, uint64_t ts, std::span<const uint64_t> args);
  void Event(uint32_t p, go::EvType type, uint64_t ts, std::initializer_list<uint64_t> args) {
    Event(p, type, ts, std::span<const uint64_t>(args.begin(), args.size()));
  }

  // UserLog: the event and, after it, the message as an inline string (the
  // only event that carries one). The message is cut at go::kMaxStringBytes.
  void UserLog(uint32_t p, uint64_t ts, uint64_t task, uint64_t key_string, uint64_t stack,
               std::string_view message);

  // Interns a string for the final string table; ids are dense from 1.
  // Strings longer than go::kMaxStringBytes are truncated (at a UTF-8
  // boundary) and the empty string becomes "?" (the parser rejects length 0).
  uint64_t String(std::string_view s);

  // Adds a stack record (leaf first). Frames beyond go::kMaxStackFrames or
  // beyond the 2048-byte payload limit are dropped from the outer end.
  // Returns the number of frames kept.
  size_t Stack(uint64_t id, std::span<const GoFrame> frames);
  // How many of `frames` Stack would keep.
  size_t StackFit(uint64_t id, std::span<const GoFrame> frames) const;

  // Flushes the P batches and writes Frequency, strings and stacks.
  Status Finish(uint64_t end_ticks);

  uint64_t events() const { return events_; }
  uint64_t clamped() const { return clamped_; }

 private:
  struct Proc {
    std::unique_ptr<uint8_t[]> buf;  // kBatchBytes + one maximal event
    size_t len = 0;
    uint64_t base = 0;
    uint64_t last = 0;
    bool open = false;
  };
  void FlushProc(uint32_t p);

  ByteSink* sink_;
  uint64_t freq_;
  std::vector<Proc> procs_;
  std::unordered_map<std::string, uint64_t> string_ids_;
  std::vector<uint8_t> strings_;  // encoded String records
  std::vector<uint8_t> stacks_;   // encoded Stack records
  uint64_t events_ = 0;
  uint64_t clamped_ = 0;
  bool header_written_ = false;
};

// Encoded size of a Stack record's payload (what the 2048-byte rule limits).
size_t StackPayloadSize(uint64_t id, std::span<const GoFrame> frames);

}  // namespace gotrace
