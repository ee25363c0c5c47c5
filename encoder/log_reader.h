// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_reader.h - indexing and streaming event logs ----------===//
//
// LogSet opens one or more log files, validates every chunk (magic, bounds,
// CRC-32C), groups chunks into per-thread streams and decodes each stream's
// first record (the pre-pass the model needs to link creators and threads).
// StreamCursor then reads one stream's records in order through a small
// window, so memory does not grow with the size of the log.
//
// Strict mode (gotrace encode) turns any damage into one clear error. Lenient
// mode (crash recovery) skips damaged or torn chunks, resynchronising on the
// next valid chunk header, and reports what it skipped as warnings.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "encoder/log_format.h"
#include "encoder/status.h"

namespace gotrace::log {

struct ThreadStartFields { uint64_t create_id, start_pc, self, flags; };
struct ThreadCreateFields { uint64_t create_id, start_pc, stack; };
struct WaitFields { uint64_t kind, flags, obj, aux, duration, cpu_end, stack; };
struct ReleaseFields { uint64_t kind, obj, count, stack; };
struct HeapFields { uint64_t bytes; };
struct SwitchFields { uint64_t tid, flags; };
struct CpuSampleFields { uint64_t tid, stack; };
struct KernelLostFields { uint64_t count; };
struct CpuTimeFields { uint64_t ns; };
struct ExitStatusFields { uint64_t status; };
struct ChildExitFields { uint64_t pid, status; };
struct TaskEndFields { uint64_t task, stack; };

// One decoded record. Fixed records fill the union member named after their
// type; variable records expose their raw body (valid until the cursor moves).
// StreamCursor converts times and wait durations to nanoseconds.
struct Record {
  RecordType type;
  Tick ts;       // ns (CLOCK_MONOTONIC), clamped so that a stream never goes back in time
  uint32_t cpu;
  union {
    uint64_t f[7];
    ThreadStartFields start;
    ThreadCreateFields create;
    WaitFields wait;
    ReleaseFields release;
    HeapFields heap;
    SwitchFields sw;
    CpuSampleFields sample;
    KernelLostFields lost;
    CpuTimeFields cputime;
    ExitStatusFields exit;
    ChildExitFields child;
    TaskEndFields task_end;
  };
  const uint8_t* body;
  size_t body_len;
};

// Parsed variable records.
struct StackDefFields {
  uint64_t id;
  uint32_t epoch;  // without kStackTruncated
  std::vector<uint64_t> pcs;
  bool truncated = false;  // kStackTruncated was set
};
struct ModuleLoadFields { uint32_t epoch; uint64_t bias, lo, hi; std::string path; };
struct ModuleUnloadFields { uint32_t epoch; uint64_t lo, hi; };
struct TraceEndFields { uint64_t dropped_records, dropped_chunks, chunks_before; };
struct ThreadNameFields { uint32_t serial; std::string name; };
struct ProcessInfoFields {
  uint64_t ppid, flags;
  std::string exe;
  std::vector<std::string> argv;
  uint64_t began_ns = 0;  // when the process began, if before its log (a window's); 0: unsaid
};
struct SchedInfoFields { uint64_t source, cpu_hz; std::string why; };
struct ThreadCpuFields { uint32_t serial; uint64_t ns; };
bool ParseThreadCpu(const Record& r, ThreadCpuFields* out);
struct TaskBeginFields { uint64_t task, parent, stack; std::string name; };
struct RegionFields { uint64_t task, mode, stack; std::string name; };
struct UserLogFields { uint64_t task, stack; std::string category, message; };
bool ParseThreadName(const Record& r, ThreadNameFields* out);
bool ParseProcessInfo(const Record& r, ProcessInfoFields* out);
bool ParseSchedInfo(const Record& r, SchedInfoFields* out);
bool ParseTaskBegin(const Record& r, TaskBeginFields* out);
bool ParseRegion(const Record& r, RegionFields* out);
bool ParseUserLog(const Record& r, UserLogFields* out);
bool ParseStackDef(const Record& r, StackDefFields* out);
bool ParseModuleLoad(const Record& r, ModuleLoadFields* out);
bool ParseModuleUnload(const Record& r, ModuleUnloadFields* out);
bool ParseTraceEnd(const Record& r, TraceEndFields* out);

struct ChunkRef {
  uint64_t offset;   // of the payload in the file
  uint32_t size;     // payload bytes
  uint32_t seq;
  uint32_t nrecords;
  Tick base_ticks;
  uint32_t flags;    // kChunkSnapshot
};

struct LogFile {
  std::string path;
  int fd = -1;
  FileHeader header{};
  uint64_t file_size = 0;
  // A flight recorder's log (kFileFlight): the time (ns) from which every
  // stream has its records; the cursor drops what comes before it (0: none).
  Tick cut_ns = 0;
  // Ticks to CLOCK_MONOTONIC nanoseconds. The log pairs ticks with the
  // clock at its start and at kClockSync records (written by every thread
  // that records, every few milliseconds): times are interpolated between
  // the pairs that surround them (piecewise linear, so a clock that the
  // system slews, or a tick rate estimated early, costs no accuracy), and
  // extrapolated with the whole log's average rate beyond the last one.
  double ns_per_tick = 1.0;  // the average rate (the header's estimate without pairs)
  std::vector<std::pair<Tick, uint64_t>> syncs;  // (ticks, ns), >= 1 ms apart, increasing
  uint64_t ToNs(Tick t) const;
  // ToNs's own: the segment [syncs[seg], syncs[seg + 1]) it found last, and
  // its rate. The records come in time order, and most fall in it or the
  // next (a binary search and a division per record were 13% of an encode). One
  // thread reads a log (each encode has its own LogSet): no lock.
  mutable size_t seg = SIZE_MAX;
  mutable double seg_rate = 0;
  uint64_t DurationNs(Tick d) const { return static_cast<uint64_t>(static_cast<double>(d) * ns_per_tick); }
};

struct Stream {
  uint32_t file = 0;    // index into LogSet::files()
  uint32_t serial = 0;  // 0: the process stream
  uint32_t tid = 0;
  std::vector<ChunkRef> chunks;  // by seq
  uint64_t nrecords = 0;
  bool seq_gap = false;  // a chunk is missing (lost data)
  // Pre-pass: the stream's first record (time in ns).
  Tick first_ts = 0;
  bool has_thread_start = false;  // first record is kThreadStart
  ThreadStartFields start{};
  // Version 2: the wait the thread was blocked in when the log was last
  // written (published in its newest slot, not yet recorded): a kWait with
  // kWaitOpen, returned by the cursor after the stream's records.
  bool has_open_wait = false;
  Record open_wait{};
};

struct ReadOptions {
  bool strict = true;
};

class LogSet {
 public:
  LogSet() = default;
  LogSet(const LogSet&) = delete;
  LogSet& operator=(const LogSet&) = delete;
  ~LogSet();

  Status Open(std::span<const std::string> paths, const ReadOptions& opts);

  const std::vector<LogFile>& files() const { return files_; }
  const std::vector<Stream>& streams() const { return streams_; }
  uint64_t total_records() const { return total_records_; }
  uint64_t total_chunks() const { return total_chunks_; }
  // Lenient mode: what was skipped, one line each.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Lenient mode: what is normal for the log of a killed process (no end
  // record), said once per file, not as damage.
  const std::vector<std::string>& notes() const { return notes_; }
  bool strict() const { return strict_; }
  // After Open failed: whether only because the logs, intact, hold no
  // events (a process killed before it recorded anything).
  bool no_events() const { return no_events_; }

 private:
  Status IndexFile(uint32_t index);
  Status Damage(const LogFile& f, uint64_t offset, const std::string& what);

  std::vector<LogFile> files_;
  std::vector<Stream> streams_;
  bool no_events_ = false;
  std::vector<std::string> warnings_;
  std::vector<std::string> notes_;
  uint64_t total_records_ = 0;
  uint64_t total_chunks_ = 0;
  bool strict_ = true;
};

// Reads the records of one stream in order. Holds at most one window of the
// current chunk (16 KiB unless a single record is larger).
class StreamCursor {
 public:
  StreamCursor(const LogSet& set, uint32_t stream);

  // Decodes the next record into *r. Returns false at the end of the stream
  // or on damage; status() tells which.
  bool Next(Record* r);
  const Status& status() const { return status_; }
  // Releases the window (called when the stream ends).
  void Release();

 private:
  bool LoadChunk(size_t index);
  bool Refill();
  bool Fail(const std::string& what);

  const LogSet& set_;
  const Stream& stream_;
  const LogFile& file_;
  std::vector<uint8_t> buf_;
  size_t chunk_ = 0;        // index into stream_.chunks of the loaded chunk
  bool loaded_ = false;
  uint64_t chunk_pos_ = 0;  // payload bytes of the chunk already in buf_ (consumed + window)
  size_t win_begin_ = 0;    // next undecoded byte in buf_
  size_t win_end_ = 0;
  uint32_t records_left_ = 0;
  Tick last_raw_ = 0;       // previous record's unclamped time (delta base)
  Tick floor_ = 0;          // clamp: records never go below this
  bool open_wait_done_ = false;
  Status status_;
};

}  // namespace gotrace::log
