// SPDX-License-Identifier: Apache-2.0
//===-- encoder/log_reader.cc - indexing and streaming event logs ---------===//
#include "encoder/log_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "encoder/crc32c.h"
#include "encoder/log_decode.h"
#include "encoder/varint.h"

namespace gotrace::log {
namespace {

constexpr size_t kWindow = 16 << 10;

std::string Hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

bool PreadFull(int fd, void* buf, size_t n, uint64_t off) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

// Record-level sanity for fixed records whose fields have bounded domains.
bool FieldsValid(const Record& r) {
  switch (r.type) {
    case kWait:
      return r.wait.kind >= 1 && r.wait.kind <= kMaxWaitKind && r.wait.cpu_end <= 0xffffffffu;
    case kRelease:
      return r.release.kind >= 1 && r.release.kind <= kMaxWaitKind;
    default:
      return true;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Variable record bodies.

bool ParseStackDef(const Record& r, StackDefFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t id, epoch, n;
  if (r.type != kStackDef || !GetUvarint(&p, end, &id) || !GetUvarint(&p, end, &epoch) ||
      !GetUvarint(&p, end, &n) || id == 0 || n > kMaxStackDepth || epoch > 0xffffffffu) {
    return false;
  }
  out->id = id;
  out->epoch = static_cast<uint32_t>(epoch) & ~kStackTruncated;
  out->truncated = (epoch & kStackTruncated) != 0;
  out->pcs.resize(n);
  uint64_t prev = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v;
    if (!GetUvarint(&p, end, &v)) return false;
    prev = i == 0 ? v : prev + static_cast<uint64_t>(UnZigZag(v));
    out->pcs[i] = prev;
  }
  return p == end;
}

bool ParseModuleLoad(const Record& r, ModuleLoadFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t epoch, len;
  if (r.type != kModuleLoad || !GetUvarint(&p, end, &epoch) || !GetUvarint(&p, end, &out->bias) ||
      !GetUvarint(&p, end, &out->lo) || !GetUvarint(&p, end, &out->hi) ||
      !GetUvarint(&p, end, &len) || static_cast<uint64_t>(end - p) != len ||
      epoch > 0xffffffffu) {
    return false;
  }
  out->epoch = static_cast<uint32_t>(epoch);
  out->path.assign(reinterpret_cast<const char*>(p), len);
  return true;
}

bool ParseModuleUnload(const Record& r, ModuleUnloadFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t epoch;
  if (r.type != kModuleUnload || !GetUvarint(&p, end, &epoch) || !GetUvarint(&p, end, &out->lo) ||
      !GetUvarint(&p, end, &out->hi) || p != end || epoch > 0xffffffffu) {
    return false;
  }
  out->epoch = static_cast<uint32_t>(epoch);
  return true;
}

bool ParseTraceEnd(const Record& r, TraceEndFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  return r.type == kTraceEnd && GetUvarint(&p, end, &out->dropped_records) &&
         GetUvarint(&p, end, &out->dropped_chunks) && GetUvarint(&p, end, &out->chunks_before) &&
         p == end;
}

namespace {
bool GetString(const uint8_t** p, const uint8_t* end, std::string* out) {
  uint64_t len;
  if (!GetUvarint(p, end, &len) || static_cast<uint64_t>(end - *p) < len) return false;
  out->assign(reinterpret_cast<const char*>(*p), len);
  *p += len;
  return true;
}
}  // namespace

bool ParseThreadName(const Record& r, ThreadNameFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t serial;
  if (r.type != kThreadName || !GetUvarint(&p, end, &serial) || serial > 0xffffffffu ||
      !GetString(&p, end, &out->name)) {
    return false;
  }
  out->serial = static_cast<uint32_t>(serial);
  return p == end;
}

bool ParseProcessInfo(const Record& r, ProcessInfoFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t argc;
  if (r.type != kProcessInfo || !GetUvarint(&p, end, &out->ppid) ||
      !GetUvarint(&p, end, &out->flags) || !GetString(&p, end, &out->exe) ||
      !GetUvarint(&p, end, &argc) || argc > 4096) {
    return false;
  }
  out->argv.resize(argc);
  for (auto& a : out->argv)
    if (!GetString(&p, end, &a)) return false;
  out->began_ns = 0;
  if (p != end && !GetUvarint(&p, end, &out->began_ns)) return false;
  return p == end;
}

bool ParseThreadCpu(const Record& r, ThreadCpuFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  uint64_t serial;
  if ((r.type != kThreadCpu && r.type != kThreadCpuBase) || !GetUvarint(&p, end, &serial) || serial > 0xffffffffu ||
      !GetUvarint(&p, end, &out->ns)) {
    return false;
  }
  out->serial = static_cast<uint32_t>(serial);
  return p == end;
}

bool ParseSchedInfo(const Record& r, SchedInfoFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  return r.type == kSchedInfo && GetUvarint(&p, end, &out->source) &&
         GetUvarint(&p, end, &out->cpu_hz) && GetString(&p, end, &out->why) && p == end;
}

bool ParseTaskBegin(const Record& r, TaskBeginFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  return r.type == kTaskBegin && GetUvarint(&p, end, &out->task) &&
         GetUvarint(&p, end, &out->parent) && GetUvarint(&p, end, &out->stack) &&
         GetString(&p, end, &out->name) && p == end;
}

bool ParseRegion(const Record& r, RegionFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  return r.type == kRegion && GetUvarint(&p, end, &out->task) && GetUvarint(&p, end, &out->mode) &&
         GetUvarint(&p, end, &out->stack) && GetString(&p, end, &out->name) && p == end &&
         out->mode <= 1;
}

bool ParseUserLog(const Record& r, UserLogFields* out) {
  const uint8_t* p = r.body;
  const uint8_t* end = r.body + r.body_len;
  return r.type == kUserLog && GetUvarint(&p, end, &out->task) &&
         GetUvarint(&p, end, &out->stack) && GetString(&p, end, &out->category) &&
         GetString(&p, end, &out->message) && p == end;
}

// ---------------------------------------------------------------------------
// LogFile

uint64_t LogFile::ToNs(Tick t) const {
  auto linear = [](Tick t0, uint64_t ns0, double rate, Tick at) {
    const double d = static_cast<double>(static_cast<int64_t>(at - t0)) * rate;
    return ns0 + static_cast<uint64_t>(static_cast<int64_t>(d));
  };
  if (syncs.size() < 2 || t < syncs.front().first)
    return linear(header.start_ticks, header.start_ns, ns_per_tick, t);
  if (t >= syncs.back().first) return linear(syncs.back().first, syncs.back().second, ns_per_tick, t);
  // The segment [a, b) holding t: the last one, the one after it, or found.
  auto holds = [&](size_t i) {
    return i < syncs.size() - 1 && syncs[i].first <= t && t < syncs[i + 1].first;
  };
  if (!holds(seg)) {
    size_t i = seg + 1;  // (SIZE_MAX + 1: the first)
    if (!holds(i)) {
      auto b =
          std::upper_bound(syncs.begin(), syncs.end(), t,
                           [](Tick v, const std::pair<Tick, uint64_t>& p) { return v < p.first; });
      i = static_cast<size_t>(b - syncs.begin()) - 1;
    }
    const auto& a = syncs[i];
    const auto& b = syncs[i + 1];
    seg = i;
    seg_rate = static_cast<double>(b.second - a.second) / static_cast<double>(b.first - a.first);
  }
  return linear(syncs[seg].first, syncs[seg].second, seg_rate, t);
}

// ---------------------------------------------------------------------------
// LogSet

LogSet::~LogSet() {
  for (auto& f : files_)
    if (f.fd >= 0) ::close(f.fd);
}

Status LogSet::Damage(const LogFile& f, uint64_t offset, const std::string& what) {
  std::string msg = f.path + ": " + what + " at offset " + Hex(offset);
  if (strict_) return Status::Error(msg);
  warnings_.push_back(msg + "; skipped");
  return Status::Ok();
}

Status LogSet::Open(std::span<const std::string> paths, const ReadOptions& opts) {
  strict_ = opts.strict;
  if (paths.empty()) return Status::Error("no log files given");
  for (const auto& p : paths) {
    LogFile f;
    f.path = p;
    f.fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) return Status::Error(p + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(f.fd);
      return Status::Error(p + ": not a regular file");
    }
    f.file_size = static_cast<uint64_t>(st.st_size);
    files_.push_back(std::move(f));
    LogFile& lf = files_.back();
    if (lf.file_size == 0) return Status::Error(p + ": empty file (not a gotrace log)");
    if (lf.file_size < sizeof(FileHeader) || !PreadFull(lf.fd, &lf.header, sizeof lf.header, 0)) {
      return Status::Error(p + ": truncated file header (" + std::to_string(lf.file_size) +
                           " bytes; not a gotrace log?)");
    }
    if (std::memcmp(lf.header.magic, kFileMagic, sizeof kFileMagic) != 0)
      return Status::Error(p + ": not a gotrace event log (bad magic)");
    if (lf.header.version != kLogVersion && lf.header.version != kLogVersionPacked) {
      return Status::Error(p + ": unsupported log version " + std::to_string(lf.header.version) +
                           " (this gotrace reads versions " + std::to_string(kLogVersionPacked) +
                           " and " + std::to_string(kLogVersion) + ")");
    }
    const bool slots_ok =
        lf.header.version == kLogVersionPacked ||
        (lf.header.slot_bytes >= 4096 && lf.header.slot_bytes % 4096 == 0 &&
         lf.header.slot_bytes <= kMaxChunkPayload && lf.header.slots_offset >= sizeof(FileHeader));
    if (lf.header.header_size != sizeof(FileHeader) || lf.header.ticks_per_second == 0 ||
        lf.header.ncpus == 0 || lf.header.ncpus > 65536 || !slots_ok) {
      return Status::Error(p + ": corrupted file header");
    }
    lf.ns_per_tick = 1e9 / static_cast<double>(lf.header.ticks_per_second);
    GT_RETURN_IF_ERROR(IndexFile(static_cast<uint32_t>(files_.size() - 1)));
  }
  if (total_records_ == 0) {
    no_events_ = true;
    std::string which = paths.size() == 1 ? paths[0] : std::string("the logs");
    return Status::Error(which + ": contains no events");
  }
  return Status::Ok();
}

Status LogSet::IndexFile(uint32_t index) {
  LogFile& f = files_[index];
  struct PendingChunk {
    uint32_t serial, tid;
    ChunkRef ref;
    bool has_first;
    Record first;
    bool has_wait;  // version 2: the slot publishes a wait in progress
    Record wait;
  };
  std::vector<PendingChunk> chunks;
  std::vector<uint8_t> payload;
  uint64_t valid_chunks = 0;
  bool have_end = false;
  TraceEndFields end_rec{};
  Tick sync_ticks = 0;
  uint64_t sync_ns = 0;
  std::vector<std::pair<Tick, uint64_t>> syncs;
  // Lenient mode resynchronises through damage: one warning per damaged
  // stretch, not one per step.
  uint64_t damage_at = 0;
  std::string damage_what;
  auto end_damage = [&](uint64_t upto) {
    if (damage_what.empty()) return;
    warnings_.push_back(f.path + ": " + damage_what + " at offset " + Hex(damage_at) + "; " +
                        std::to_string(upto - damage_at) + " bytes skipped");
    damage_what.clear();
  };
  // Validates every record boundary of a chunk's payload (so that damage is
  // reported before any output is written), remembers its first record for
  // the pre-pass and picks up clock syncs and the end record. Returns the
  // number of whole records, and in *bytes how far they reach (all of the
  // payload unless a record is damaged).
  auto scan = [&](const ChunkHeader& h, PendingChunk* pc, size_t* bytes, bool* ok) {
    const uint8_t* p = payload.data();
    const uint8_t* end = p + h.size;
    Tick raw = h.base_ticks;
    uint32_t n = 0;
    *ok = true;
    while (p < end) {
      Record r;
      size_t used;
      if (DecodeRecord(p, end, &raw, &r, &used) != Decode::kOk || !FieldsValid(r)) {
        *ok = false;
        break;
      }
      if (r.type == kTraceEnd) {
        if (!ParseTraceEnd(r, &end_rec)) {
          *ok = false;
          break;
        }
        have_end = true;
      }
      if (n == 0) {
        pc->has_first = true;
        pc->first = r;
        pc->first.body = nullptr;
      }
      if (r.type == kClockSync) {
        const uint8_t* bp = r.body;
        uint64_t ns;
        if (GetUvarint(&bp, r.body + r.body_len, &ns)) {
          syncs.emplace_back(r.ts, ns);
          if (r.ts > sync_ticks) {
            sync_ticks = r.ts;
            sync_ns = ns;
          }
        }
      }
      p += used;
      ++n;
    }
    *bytes = static_cast<size_t>(p - payload.data());
    return n;
  };

  if (f.header.version == kLogVersion) {
    // Slots: each holds at most one chunk, open or sealed; unused ones are 0.
    const uint64_t slot = f.header.slot_bytes;
    const uint64_t first = f.header.slots_offset;
    bool warned_torn = false;
    for (uint64_t off = first; off + kSlotHeaderBytes <= f.file_size; off += slot) {
      SlotHeader sh;
      if (!PreadFull(f.fd, &sh, sizeof sh, off)) return Status::Error(f.path + ": read error");
      const ChunkHeader& h = sh.chunk;
      if (h.magic == 0) continue;  // reserved ahead of need, never used
      const bool open = (h.flags & kChunkOpen) != 0;
      const uint64_t room = std::min<uint64_t>(slot, f.file_size - off) - kSlotHeaderBytes;
      std::string bad;
      if (h.magic != kChunkMagic) {
        bad = h.magic == __builtin_bswap32(kChunkMagic) ? "log written with a foreign byte order"
                                                        : "bad chunk magic";
      } else if (h.size > room) {
        bad = "truncated chunk (" + std::to_string(h.size) + " payload bytes declared, " +
              std::to_string(room) + " present)";
      }
      if (bad.empty()) {
        payload.resize(h.size);
        if (!PreadFull(f.fd, payload.data(), h.size, off + kSlotHeaderBytes))
          return Status::Error(f.path + ": read error");
        if (!open) {
          ChunkHeader z = h;
          z.checksum = 0;
          const uint32_t crc = Crc32c(Crc32c(0, &z, sizeof z), payload.data(), h.size);
          if (crc != h.checksum) bad = "corrupted chunk (checksum mismatch)";
        }
      }
      if (!bad.empty()) {
        if (strict_) return Damage(f, off, bad);
        warnings_.push_back(f.path + ": " + bad + " in the slot at offset " + Hex(off) +
                            "; skipped");
        continue;
      }
      PendingChunk pc{};
      pc.serial = h.serial;
      pc.tid = h.tid;
      size_t bytes = 0;
      bool ok = false;
      const uint32_t n = scan(h, &pc, &bytes, &ok);
      if (!ok || (!open && n != h.nrecords)) {
        // An open chunk's size is stored only after whole records, so
        // damage there is damage, not a record being written.
        GT_RETURN_IF_ERROR(Damage(f, off, "corrupted records in chunk"));
        if (!open || n == 0) continue;
      }
      if (open && !strict_ && !warned_torn) {
        // A record being written when the process stopped lies after the
        // committed size: it is lost, and said once.
        uint8_t after[16] = {0};
        const uint64_t at = off + kSlotHeaderBytes + bytes;
        const uint64_t left = std::min<uint64_t>(sizeof after, off + std::min<uint64_t>(slot, f.file_size - off) - at);
        if (ok && left > 0 && PreadFull(f.fd, after, left, at)) {
          bool torn = false;
          for (uint64_t i = 0; i < left; ++i) torn = torn || after[i] != 0;
          if (torn) {
            warned_torn = true;
            warnings_.push_back(f.path + ": a record being written when the process stopped (" +
                                (h.tid != 0 ? "thread " + std::to_string(h.tid)
                                            : std::string("the process stream")) +
                                ") is incomplete; skipped");
          }
        }
      }
      pc.ref = ChunkRef{off + kSlotHeaderBytes, static_cast<uint32_t>(bytes), h.seq, n,
                        h.base_ticks, h.flags};
      const uint32_t kind = sh.wait_kind;
      if (kind >= 1 && kind <= kMaxWaitKind) {
        pc.has_wait = true;
        Record& w = pc.wait;
        w.type = kWait;
        w.ts = sh.wait_t0;
        w.cpu = sh.wait_cpu;
        w.wait = WaitFields{kind, kWaitOpen | sh.wait_flags, sh.wait_obj, sh.wait_aux, 0,
                            sh.wait_cpu, sh.wait_stack};
        w.body = nullptr;
        w.body_len = 0;
      }
      ++valid_chunks;
      if (n > 0 || pc.has_wait) chunks.push_back(pc);
    }
  } else {
    uint64_t off = sizeof(FileHeader);
    while (off < f.file_size) {
      ChunkHeader h;
      if (f.file_size - off < sizeof h) {
        if (!damage_what.empty()) break;  // the tail of a damaged stretch
        GT_RETURN_IF_ERROR(Damage(f, off, "truncated chunk header"));
        break;
      }
      if (!PreadFull(f.fd, &h, sizeof h, off)) return Status::Error(f.path + ": read error");
      std::string bad;
      if (h.magic != kChunkMagic) {
        bad = h.magic == __builtin_bswap32(kChunkMagic) ? "log written with a foreign byte order"
                                                        : "bad chunk magic";
      } else if (h.size > kMaxChunkPayload) {
        bad = "chunk too large";
      } else if (f.file_size - off - sizeof h < h.size) {
        bad = "truncated chunk (" + std::to_string(h.size) + " payload bytes declared, " +
              std::to_string(f.file_size - off - sizeof h) + " present)";
      }
      if (bad.empty()) {
        payload.resize(h.size);
        if (!PreadFull(f.fd, payload.data(), h.size, off + sizeof h))
          return Status::Error(f.path + ": read error");
        ChunkHeader z = h;
        z.checksum = 0;
        const uint32_t crc = Crc32c(Crc32c(0, &z, sizeof z), payload.data(), h.size);
        if (crc != h.checksum) bad = "corrupted chunk (checksum mismatch)";
      }
      if (!bad.empty()) {
        if (strict_) return Damage(f, off, bad);
        if (damage_what.empty()) {
          damage_at = off;
          damage_what = bad;
        }
        // Resynchronise on the next 8-aligned position holding a valid header.
        off += 8;
        continue;
      }
      end_damage(off);
      PendingChunk pc{};
      pc.serial = h.serial;
      pc.tid = h.tid;
      pc.ref = ChunkRef{off + sizeof h, h.size, h.seq, h.nrecords, h.base_ticks, h.flags};
      size_t bytes = 0;
      bool ok = false;
      const uint32_t n = scan(h, &pc, &bytes, &ok);
      if (!ok || n != h.nrecords) {
        GT_RETURN_IF_ERROR(Damage(f, off, "corrupted records in chunk"));
        off += AlignChunk(sizeof h + h.size);
        continue;
      }
      ++valid_chunks;
      if (n > 0) chunks.push_back(pc);
      off += AlignChunk(sizeof h + h.size);
    }
    end_damage(std::min<uint64_t>(off, f.file_size));
  }

  // Completeness: the final flush ends the log with a kTraceEnd that counts
  // the chunks before it. Without it the process did not finish the log.
  if (valid_chunks == 0) {
    // Nothing at all: reported as "contains no events" by Open().
  } else if (!have_end) {
    if (strict_) {
      return Status::Error(f.path + ": incomplete log: no end record (the traced process did "
                                    "not finish it; --lenient encodes what is there)");
    }
    notes_.push_back(f.path + ": the process did not finish its log (killed?): the trace ends "
                              "with its last record");
  } else if (valid_chunks != end_rec.chunks_before + 1) {
    const std::string msg = f.path + ": incomplete log: " + std::to_string(valid_chunks) +
                            " chunks present, " + std::to_string(end_rec.chunks_before + 1) +
                            " written";
    // (The advice is for a strict read; a lenient one is already doing it.)
    if (strict_) return Status::Error(msg + " (--lenient encodes what is there)");
    warnings_.push_back(msg + "; encoded what is there");
  }

  // The clock: the longest interval between the start and a sync point.
  const FileHeader& fh = f.header;
  if (sync_ticks > fh.start_ticks && sync_ns > fh.start_ns + 1'000'000) {
    f.ns_per_tick = static_cast<double>(sync_ns - fh.start_ns) /
                    static_cast<double>(sync_ticks - fh.start_ticks);
  }
  // The pairs for interpolation: the start, then syncs at least 1 ms apart
  // (closer ones would carry their read jitter into the rate), both clocks
  // increasing (a pair that goes back is noise or damage: dropped).
  std::sort(syncs.begin(), syncs.end());
  f.syncs.clear();
  f.seg = SIZE_MAX;  // ToNs finds its segment anew
  f.syncs.emplace_back(fh.start_ticks, fh.start_ns);
  for (const auto& p : syncs) {
    const auto& last = f.syncs.back();
    if (p.first > last.first && p.second >= last.second + 1'000'000) f.syncs.push_back(p);
  }

  // Group into streams by serial, order by seq.
  std::map<uint32_t, std::vector<const PendingChunk*>> by_serial;
  for (const auto& c : chunks) by_serial[c.serial].push_back(&c);
  for (auto& [serial, list] : by_serial) {
    // A chunk may be present more than once: snapshots of a thread's buffer
    // (written periodically, so that a killed process loses little) share
    // their (stream, seq) with later, longer versions of the same chunk, and
    // all versions hold the same prefix. The longest wins.
    // Version 2 has each chunk twice while it is copied out of its
    // thread's home slot (the copy is sealed; the home slot's is sealed,
    // or open if the copy was cut short by a kill): the same records.
    std::sort(list.begin(), list.end(), [](const PendingChunk* a, const PendingChunk* b) {
      if (a->ref.seq != b->ref.seq) return a->ref.seq < b->ref.seq;
      if (a->ref.nrecords != b->ref.nrecords) return a->ref.nrecords > b->ref.nrecords;
      const uint32_t fa = a->ref.flags & (kChunkSnapshot | kChunkOpen);
      const uint32_t fb = b->ref.flags & (kChunkSnapshot | kChunkOpen);
      return fa < fb;
    });
    Stream s;
    s.file = index;
    s.serial = serial;
    s.tid = list.front()->tid;
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0 && list[i]->ref.seq == list[i - 1]->ref.seq) continue;  // a shorter snapshot
      const uint32_t want = s.chunks.empty() ? 0 : s.chunks.back().seq + 1;
      if (list[i]->ref.seq != want) s.seq_gap = true;
      s.chunks.push_back(list[i]->ref);
      s.nrecords += list[i]->ref.nrecords;
    }
    // The wait in progress, if the newest chunk's slot publishes one: the
    // thread was blocked there when the log was last written.
    if (list.back()->has_wait && list.back()->ref.seq == s.chunks.back().seq) {
      s.has_open_wait = true;
      s.open_wait = list.back()->wait;
    }
    if (s.has_open_wait) ++s.nrecords;
    const Record& first = list.front()->has_first ? list.front()->first : list.front()->wait;
    s.first_ts = (list.front()->ref.flags & kChunkNsTime) ? first.ts : f.ToNs(first.ts);
    if (serial != kProcessSerial && first.type == kThreadStart && list.front()->ref.seq == 0) {
      s.has_thread_start = true;
      s.start = first.start;
    }
    // A flight recorder drops a stream's oldest chunks: a gap before its
    // first chunk is no loss there (a gap after it still is).
    bool dropped_head = false;
    if ((f.header.flags & kFileFlight) && !s.chunks.empty() && s.chunks.front().seq > 0) {
      dropped_head = true;
      s.seq_gap = false;
      for (size_t i = 1; i < s.chunks.size(); ++i)
        if (s.chunks[i].seq != s.chunks[i - 1].seq + 1) s.seq_gap = true;
    }
    if (s.seq_gap && !strict_) {
      warnings_.push_back(f.path + ": stream " + std::to_string(serial) + " (tid " +
                          std::to_string(s.tid) + ") has missing chunks");
    }
    if (dropped_head && serial != kProcessSerial) f.cut_ns = std::max(f.cut_ns, s.first_ts);
    total_records_ += s.nrecords;
    total_chunks_ += s.chunks.size();
    streams_.push_back(std::move(s));
  }
  // The trace of a flight recorder starts where every stream has its records:
  // what began before is known only as a thread that existed then.
  if (f.cut_ns != 0) {
    for (Stream& st : streams_) {
      if (st.file != index || st.first_ts >= f.cut_ns) continue;
      st.first_ts = f.cut_ns;
      if (st.has_thread_start) {
        st.start.flags |= kThreadExisted;
        st.start.create_id = 0;
      }
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// StreamCursor

StreamCursor::StreamCursor(const LogSet& set, uint32_t stream)
    : set_(set), stream_(set.streams()[stream]), file_(set.files()[stream_.file]),
      floor_(file_.cut_ns) {}

bool StreamCursor::Fail(const std::string& what) {
  status_ = Status::Error(file_.path + ": " + what);
  Release();
  return false;
}

void StreamCursor::Release() {
  std::vector<uint8_t>().swap(buf_);
  win_begin_ = win_end_ = 0;
}

bool StreamCursor::LoadChunk(size_t index) {
  const ChunkRef& c = stream_.chunks[index];
  chunk_ = index;
  loaded_ = true;
  chunk_pos_ = 0;
  win_begin_ = win_end_ = 0;
  records_left_ = c.nrecords;
  last_raw_ = c.base_ticks;
  return Refill();
}

// Moves the undecoded tail of the window to the front and reads more of the
// chunk behind it.
bool StreamCursor::Refill() {
  const ChunkRef& c = stream_.chunks[chunk_];
  const size_t tail = win_end_ - win_begin_;
  const uint64_t remaining = c.size - chunk_pos_;
  if (remaining == 0) return true;
  size_t want = std::max(kWindow, tail * 2);
  if (buf_.size() < want) buf_.resize(want);
  if (tail > 0 && win_begin_ > 0) std::memmove(buf_.data(), buf_.data() + win_begin_, tail);
  win_begin_ = 0;
  win_end_ = tail;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining, buf_.size() - tail));
  if (!PreadFull(file_.fd, buf_.data() + tail, n, c.offset + chunk_pos_))
    return Fail("read error");
  chunk_pos_ += n;
  win_end_ += n;
  return true;
}

bool StreamCursor::Next(Record* r) {
  for (;;) {
    if (!loaded_ || records_left_ == 0) {
      const size_t next = loaded_ ? chunk_ + 1 : 0;
      if (next >= stream_.chunks.size()) {
        Release();
        if (stream_.has_open_wait && !open_wait_done_) {
          // Published in the slot, not recorded: the thread was blocked
          // there when the log was last written.
          open_wait_done_ = true;
          *r = stream_.open_wait;
          r->ts = std::max(file_.ToNs(r->ts), floor_);
          floor_ = r->ts;
          return true;
        }
        return false;
      }
      if (!LoadChunk(next)) return false;
      continue;
    }
    size_t used;
    const Decode d =
        DecodeRecord(buf_.data() + win_begin_, buf_.data() + win_end_, &last_raw_, r, &used);
    if (d == Decode::kOk) {
      win_begin_ += used;
      --records_left_;
      if (!(stream_.chunks[chunk_].flags & kChunkNsTime)) {
        r->ts = file_.ToNs(r->ts);
        if (r->type == kWait) r->wait.duration = file_.DurationNs(r->wait.duration);
      }
      // Definitions (stacks, modules, clock syncs) take the time of the
      // stream's previous record and never move its clock: only events order
      // a stream, and a definition written with a late time must not delay
      // the event it precedes.
      if (r->type == kStackDef || r->type == kModuleLoad || r->type == kModuleUnload ||
          r->type == kClockSync) {
        r->ts = floor_;
        return true;
      }
      // A flight recorder's log starts at its cut (LogFile::cut_ns): of what
      // comes before, a thread's start says it existed, a wait that ends
      // after the cut is shortened to it, and the rest is dropped (the
      // process stream's records are kept, at the cut).
      if (r->ts < file_.cut_ns && stream_.serial != kProcessSerial) {
        if (r->type == kThreadStart) {
          r->start.flags |= kThreadExisted;
          r->start.create_id = 0;
          r->ts = file_.cut_ns;
        } else if (r->type == kThreadName) {
          r->ts = file_.cut_ns;
        } else if (r->type == kWait && !(r->wait.flags & kWaitOpen)) {
          const Tick end = r->ts + r->wait.duration;
          if (end <= file_.cut_ns) continue;
          r->wait.duration = end - file_.cut_ns;
          r->ts = file_.cut_ns;
        } else if (r->type == kWait) {
          r->ts = file_.cut_ns;
        } else {
          continue;
        }
      }
      if (r->ts < file_.cut_ns) r->ts = file_.cut_ns;
      // Clamp: a stream never goes back in time, and nothing a thread records
      // can precede the end of its previous wait (it was not running).
      if (r->ts < floor_) {
        // A wait that began before the stream's previous record (one that
        // spans the start of a trace window's log, or clock noise) keeps
        // its end: it is shortened, not moved.
        if (r->type == kWait && !(r->wait.flags & kWaitOpen)) {
          const Tick end = r->ts + r->wait.duration;
          r->wait.duration = end > floor_ ? end - floor_ : 0;
        }
        r->ts = floor_;
      }
      floor_ = r->ts;
      if (r->type == kWait && !(r->wait.flags & kWaitOpen)) {
        const Tick end = r->ts + r->wait.duration;
        if (end >= r->ts) floor_ = end;  // ignore overflowing durations
        else r->wait.duration = 0;
      }
      return true;
    }
    if (d == Decode::kNeedMore && chunk_pos_ < stream_.chunks[chunk_].size) {
      if (!Refill()) return false;
      continue;
    }
    // The index pass validated every record, so this means the file changed.
    return Fail("chunk changed while reading (offset " + Hex(stream_.chunks[chunk_].offset) + ")");
  }
}

}  // namespace gotrace::log
