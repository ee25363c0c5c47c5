// SPDX-License-Identifier: Apache-2.0
//===-- encoder/go_trace_writer.cc - binary "go 1.19 trace" output --------===//
#include "encoder/go_trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "encoder/varint.h"

namespace gotrace {
namespace {

constexpr size_t kBatchFlushBytes = 64 << 10;  // as the Go runtime's trace buffers
// The largest event: a UserLog with its longest message.
constexpr size_t kMaxEventBytes = 2 + kMaxVarintBytes * 10 + go::kMaxStringBytes;
constexpr size_t kSinkBuffer = 1 << 20;

void PutVarint(std::vector<uint8_t>* out, uint64_t v) {
  uint8_t tmp[kMaxVarintBytes];
  uint8_t* e = PutUvarint(tmp, v);
  out->insert(out->end(), tmp, e);
}

// Record header + args, in the runtime's form: up to 3 args inline (the count
// in the top two bits), otherwise bits = 3 and a varint byte length.
void PutRecord(std::vector<uint8_t>* out, uint8_t type, std::span<const uint64_t> args) {
  if (args.size() <= 3) {
    const size_t at = out->size();
    out->resize(at + 1 + args.size() * kMaxVarintBytes);
    uint8_t* p = out->data() + at;
    *p++ = static_cast<uint8_t>(type | ((args.size() - 1) << 6));
    for (uint64_t a : args) p = PutUvarint(p, a);
    out->resize(static_cast<size_t>(p - out->data()));
    return;
  }
  size_t len = 0;
  for (uint64_t a : args) len += UvarintSize(a);
  out->push_back(static_cast<uint8_t>(type | (3 << 6)));
  PutVarint(out, len);
  for (uint64_t a : args) PutVarint(out, a);
}

}  // namespace

// ---------------------------------------------------------------------------
// FdSink

FdSink::~FdSink() { (void)Flush(); }

void FdSink::Write(const uint8_t* data, size_t n) {
  if (!status_.ok()) return;
  if (buf_.capacity() < kSinkBuffer) buf_.reserve(kSinkBuffer);
  if (buf_.size() + n > kSinkBuffer) Drain();
  if (n >= kSinkBuffer) {
    buf_.assign(data, data + n);
    Drain();
    return;
  }
  buf_.insert(buf_.end(), data, data + n);
}

void FdSink::Drain() {
  const uint8_t* p = buf_.data();
  size_t n = buf_.size();
  while (n > 0 && status_.ok()) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      status_ = Status::Error(name_ + ": write failed: " +
                              std::strerror(w < 0 ? errno : ENOSPC));
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  buf_.clear();
}

Status FdSink::Flush() {
  if (!buf_.empty()) Drain();
  return status_;
}

// ---------------------------------------------------------------------------
// GoTraceWriter

GoTraceWriter::GoTraceWriter(ByteSink* sink, uint32_t nprocs, uint64_t ticks_per_second)
    : sink_(sink), freq_(ticks_per_second), procs_(nprocs == 0 ? 1 : nprocs) {
  sink_->Write(reinterpret_cast<const uint8_t*>(go::kHeader), sizeof go::kHeader);
  header_written_ = true;
}

void GoTraceWriter::Event(uint32_t p, go::EvType type, uint64_t ts,
                          std::span<const uint64_t> args) {
  Proc& pr = procs_[p];
  if (!pr.open) {
    pr.open = true;
    pr.base = pr.last = ts;
    if (!pr.buf) pr.buf.reset(new uint8_t[kBatchFlushBytes + kMaxEventBytes]);
  }
  if (ts < pr.last) {
    ts = pr.last;
    ++clamped_;
  }
  // A CPU sample carries its time as an argument (Go's runtime writes them
  // into batches of their own). Go 1.21+'s converter skips these events
  // without adding their time delta, so a sample among a P's events must
  // not move the batch's clock: delta 0, and the next event's delta runs
  // from the event before it (Go 1.19 reads the same times either way).
  const bool sample = type == go::kEvCPUSample;
  const uint64_t delta = sample ? 0 : ts - pr.last;
  uint8_t* out = pr.buf.get() + pr.len;
  const size_t nargs = args.size() + 1;  // + the time delta
  if (nargs <= 3) {
    *out++ = static_cast<uint8_t>(type | ((nargs - 1) << 6));
    out = PutUvarint(out, delta);
    for (uint64_t a : args) out = PutUvarint(out, a);
  } else {
    // Long form: the payload's byte length first (it is < 128 here).
    uint8_t payload[kMaxVarintBytes * 8];
    uint8_t* q = PutUvarint(payload, delta);
    for (uint64_t a : args) q = PutUvarint(q, a);
    const size_t len = static_cast<size_t>(q - payload);
    *out++ = static_cast<uint8_t>(type | (3 << 6));
    out = PutUvarint(out, len);
    std::memcpy(out, payload, len);
    out += len;
  }
  pr.len = static_cast<size_t>(out - pr.buf.get());
  if (!sample) pr.last = ts;
  ++events_;
  if (pr.len >= kBatchFlushBytes) FlushProc(p);
}

void GoTraceWriter::UserLog(uint32_t p, uint64_t ts, uint64_t task, uint64_t key_string,
                            uint64_t stack, std::string_view message) {
  // The message must follow its event in the same batch: flush first if
  // the event could fill this one.
  if (procs_[p].open && procs_[p].len + 2 + kMaxVarintBytes * 5 >= kBatchFlushBytes) FlushProc(p);
  Event(p, go::kEvUserLog, ts, {task, key_string, stack});
  if (message.size() > go::kMaxStringBytes) {
    size_t n = go::kMaxStringBytes;
    while (n > 0 && (static_cast<uint8_t>(message[n]) & 0xc0) == 0x80) --n;  // UTF-8 boundary
    message = message.substr(0, n);
  }
  // The buffer holds kBatchFlushBytes + kMaxEventBytes: the message fits.
  Proc& pr = procs_[p];
  uint8_t* out = pr.buf.get() + pr.len;
  out = PutUvarint(out, message.size());
  std::memcpy(out, message.data(), message.size());
  pr.len = static_cast<size_t>(out + message.size() - pr.buf.get());
  if (pr.len >= kBatchFlushBytes) FlushProc(p);
}

void GoTraceWriter::FlushProc(uint32_t p) {
  Proc& pr = procs_[p];
  if (!pr.open) return;
  std::vector<uint8_t> head;
  const uint64_t batch[2] = {p, pr.base};
  PutRecord(&head, go::kEvBatch, batch);
  sink_->Write(head.data(), head.size());
  sink_->Write(pr.buf.get(), pr.len);
  pr.len = 0;
  // The next batch of this P starts at the last time written, so batches of
  // one P stay in non-decreasing time order across the split.
  pr.base = pr.last;
}

uint64_t GoTraceWriter::String(std::string_view s) {
  if (s.empty()) s = "?";
  if (s.size() > go::kMaxStringBytes) {
    size_t n = go::kMaxStringBytes;
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xc0) == 0x80) --n;  // UTF-8 boundary
    s = s.substr(0, n);
  }
  auto [it, inserted] = string_ids_.try_emplace(std::string(s), string_ids_.size() + 1);
  if (inserted) {
    strings_.push_back(go::kEvString);
    PutVarint(&strings_, it->second);
    PutVarint(&strings_, s.size());
    strings_.insert(strings_.end(), s.begin(), s.end());
  }
  return it->second;
}

size_t StackPayloadSize(uint64_t id, std::span<const GoFrame> frames) {
  size_t n = UvarintSize(id) + UvarintSize(frames.size());
  for (const GoFrame& f : frames)
    n += UvarintSize(f.pc) + UvarintSize(f.func) + UvarintSize(f.file) + UvarintSize(f.line);
  return n;
}

size_t GoTraceWriter::StackFit(uint64_t id, std::span<const GoFrame> frames) const {
  size_t n = std::min(frames.size(), go::kMaxStackFrames);
  while (n > 1 && StackPayloadSize(id, frames.first(n)) > go::kMaxLongPayload) --n;
  return n;
}

size_t GoTraceWriter::Stack(uint64_t id, std::span<const GoFrame> frames) {
  if (id == 0 || id > go::kMaxStackId || frames.empty()) return 0;
  const size_t n = StackFit(id, frames);
  std::vector<uint64_t> args;
  args.reserve(2 + 4 * n);
  args.push_back(id);
  args.push_back(n);
  for (size_t i = 0; i < n; ++i) {
    args.push_back(frames[i].pc);
    args.push_back(frames[i].func);
    args.push_back(frames[i].file);
    args.push_back(frames[i].line);
  }
  // Always the long form, as the runtime writes it.
  size_t len = 0;
  for (uint64_t a : args) len += UvarintSize(a);
  stacks_.push_back(static_cast<uint8_t>(go::kEvStack | (3 << 6)));
  PutVarint(&stacks_, len);
  for (uint64_t a : args) PutVarint(&stacks_, a);
  return n;
}

Status GoTraceWriter::Finish(uint64_t end_ticks) {
  for (uint32_t p = 0; p < procs_.size(); ++p)
    if (procs_[p].open && procs_[p].len > 0) FlushProc(p);
  std::vector<uint8_t> tail;
  const uint64_t freq[1] = {freq_};
  PutRecord(&tail, go::kEvFrequency, freq);
  // The string and stack tables go into a batch of their own (as the runtime
  // does), so that Go >= 1.23, which reads strings only inside batches, sees
  // them.
  const uint64_t batch[2] = {0, end_ticks};
  PutRecord(&tail, go::kEvBatch, batch);
  sink_->Write(tail.data(), tail.size());
  sink_->Write(strings_.data(), strings_.size());
  sink_->Write(stacks_.data(), stacks_.size());
  return sink_->status();
}

}  // namespace gotrace
