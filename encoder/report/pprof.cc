// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/pprof.cc - trace -> profile.proto (protobuf + zlib) -===//
//
// The records follow cmd/trace/pprof.go (Go 1.19) with its command-line
// (unfiltered) durations, so totals equal `go tool trace -pprof=KIND`:
//   sync    GoBlockSync/Cond/Send/Recv/Select/GC until the GoUnblock that ends it
//   net     GoBlockNet until its GoUnblock
//   syscall GoSysCall until its GoSysExit (a syscall that blocked)
//   sched   GoUnblock and GoCreate until the goroutine's next GoStart
// each keyed by the event's stack id; events without a stack, or whose link
// never came, are left out, as Go does. The "link" is what Go 1.19's
// postProcessTrace sets: per goroutine the last event that it waits on (g.ev).
// The encoding is the protobuf library's and the gzip is zlib's, rather than
// hand-written encoders.
//===----------------------------------------------------------------------===//
#include "encoder/report/pprof.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "encoder/go_trace_format.h"
#include "encoder/report/report.h"
#include "profile.pb.h"

namespace gotrace::report {
namespace {

bool IsSyncBlock(uint8_t t) {
  return t == go::kEvGoBlockSync || t == go::kEvGoBlockCond || t == 22 || t == 23 || t == 24 ||
         t == 42;  // GoBlockSend, Recv, Select, GC
}

bool Counts(const std::string& kind, uint8_t t) {
  if (kind == "sync") return IsSyncBlock(t);
  if (kind == "net") return t == go::kEvGoBlockNet;
  if (kind == "syscall") return t == go::kEvGoSysCall;
  return t == go::kEvGoUnblock || t == go::kEvGoCreate;  // sched
}

// The first sampling rate (cpu_hz, 1 Hz to 1 GHz) in the encoder's
// gotrace-meta strings; `kernel_only`: of a process whose scheduling (and
// samples) came from the kernel. 0 if none.
uint64_t MetaCpuHz(const Trace& trace, bool kernel_only) {
  for (const auto& [id, s] : trace.strings) {
    if (s.rfind("gotrace-meta:v1 ", 0) != 0) continue;
    if (kernel_only && s.find(" sched=kernel") == std::string::npos) continue;
    const size_t at = s.find(" cpu_hz=");
    if (at == std::string::npos) continue;
    const uint64_t hz = std::strtoull(s.c_str() + at + 8, nullptr, 10);
    if (hz > 0 && hz <= 1000000000) return hz;
  }
  return 0;
}

// CPU sample period from the encoder's gotrace-meta, else the Go runtime's
// own 100 Hz.
int64_t CpuPeriod(const Trace& trace) {
  const uint64_t hz = MetaCpuHz(trace, false);
  return hz != 0 ? static_cast<int64_t>(1000000000 / hz) : 10000000;
}

}  // namespace

int64_t Profile::total() const {
  int64_t t = 0;
  for (const auto& r : records) t += r.value;
  return t;
}

Status ComputeProfile(const Trace& trace, const std::string& kind, Profile* out) {
  *out = Profile{};
  out->kind = kind;
  std::map<uint64_t, ProfileRecord> by_stack;
  auto has_stack = [&](uint64_t stk) {
    if (stk == 0) return false;
    auto it = trace.stacks.find(stk);
    return it != trace.stacks.end() && !it->second.empty();
  };
  if (kind == "cpu") {
    out->period = CpuPeriod(trace);
    uint64_t samples = 0;
    for (const Event& ev : trace.events) {
      if (ev.type != go::kEvCPUSample) continue;
      ++samples;
      if (!has_stack(ev.stk)) continue;
      ProfileRecord& r = by_stack[ev.stk];
      r.stk = ev.stk;
      ++r.count;
      r.value += out->period;
    }
    if (samples == 0) {
      const uint64_t hz = MetaCpuHz(trace, /*kernel_only=*/true);
      if (hz == 0)
        return Status::Error(
            "has no CPU samples (the kernel's sampling was off or unavailable "
            "when it was recorded)");
      // Sampling was on: nothing ran long enough for a sample.
      return Status::Error("has no CPU samples: sampling was on (" + std::to_string(hz) +
                           " Hz, a sample per " +
                           HumanDuration(static_cast<int64_t>(1'000'000'000 / hz)) +
                           " of a thread's CPU time) and no thread used that much");
    }
  } else if (kind == "sync" || kind == "net" || kind == "syscall" || kind == "sched") {
    // g -> index of the event it waits on to be linked (Go's g.ev).
    std::unordered_map<uint64_t, size_t> pending;
    const auto& evs = trace.events;
    auto link = [&](uint64_t g, const Event& end, bool (*accept)(uint8_t)) {
      auto it = pending.find(g);
      if (it == pending.end()) return;
      const Event& start = evs[it->second];
      pending.erase(it);
      if (!accept(start.type) || !Counts(kind, start.type) || !has_stack(start.stk)) return;
      const int64_t d = end.ts - start.ts;
      if (d <= 0) return;  // Go keeps only positive overlaps
      ProfileRecord& r = by_stack[start.stk];
      r.stk = start.stk;
      ++r.count;
      r.value += d;
    };
    auto any = [](uint8_t) { return true; };
    for (size_t i = 0; i < evs.size(); ++i) {
      const Event& ev = evs[i];
      switch (ev.type) {
        case go::kEvGoCreate: pending[ev.args[0]] = i; break;
        case go::kEvGoWaiting: case go::kEvGoInSyscall: case go::kEvGoSched:
        case go::kEvGoPreempt: case go::kEvGoSysCall:
          pending[ev.g] = i;
          break;
        case go::kEvGoStart: case 41:  // GoStartLabel
          link(ev.g, ev, any);          // ends an unblock, a create, a sched, a sysexit
          break;
        case go::kEvGoUnblock:
          link(ev.args[0], ev, any);  // ends a block
          pending[ev.args[0]] = i;
          break;
        case go::kEvGoSysExit:
          link(ev.g, ev, [](uint8_t t) { return t == go::kEvGoSysCall; });
          pending[ev.g] = i;
          break;
        case go::kEvGoSleep: case go::kEvGoBlock: case 22: case 23: case 24:
        case go::kEvGoBlockSync: case go::kEvGoBlockCond: case go::kEvGoBlockNet: case 42:
          pending[ev.g] = i;
          break;
        default: break;
      }
    }
  } else {
    return Status::Error("unknown profile kind '" + kind + "' (sync, net, syscall, sched or cpu)");
  }
  for (auto& [stk, r] : by_stack) out->records.push_back(r);
  return Status::Ok();
}

Status WritePprof(const Trace& trace, const Profile& prof, const std::string& path) {
  perftools::profiles::Profile p;
  std::unordered_map<std::string, int64_t> strings;
  auto str = [&](const std::string& s) -> int64_t {
    auto [it, fresh] = strings.try_emplace(s, p.string_table_size());
    if (fresh) p.add_string_table(s);
    return it->second;
  };
  str("");
  auto value_type = [&](perftools::profiles::ValueType* v, const char* type, const char* unit) {
    v->set_type(str(type));
    v->set_unit(str(unit));
  };
  if (prof.kind == "cpu") {
    value_type(p.add_sample_type(), "samples", "count");
    value_type(p.add_sample_type(), "cpu", "nanoseconds");
    value_type(p.mutable_period_type(), "cpu", "nanoseconds");
    p.set_period(prof.period);
  } else {
    // As Go's buildProfile: contentions and delay.
    value_type(p.add_sample_type(), "contentions", "count");
    value_type(p.add_sample_type(), "delay", "nanoseconds");
    value_type(p.mutable_period_type(), "trace", "count");
    p.set_period(1);
  }
  p.set_duration_nanos(trace.end_ns);
  std::unordered_map<std::string, uint64_t> functions, locations;
  for (const ProfileRecord& r : prof.records) {
    auto* sample = p.add_sample();
    sample->add_value(r.count);
    sample->add_value(r.value);
    for (const Frame& f : trace.stacks.at(r.stk)) {
      // One location per distinct frame (Go keys them by PC alone, which
      // would merge inlined frames that share a PC; totals are the same).
      const std::string fkey = f.file + '\n' + f.func;
      const std::string lkey = std::to_string(f.pc) + '\n' + fkey + '\n' + std::to_string(f.line);
      auto [fit, ffresh] = functions.try_emplace(fkey, p.function_size() + 1);
      if (ffresh) {
        auto* fn = p.add_function();
        fn->set_id(fit->second);
        fn->set_name(str(f.func));
        fn->set_system_name(str(f.func));
        fn->set_filename(str(f.file));
      }
      auto [lit, lfresh] = locations.try_emplace(lkey, p.location_size() + 1);
      if (lfresh) {
        auto* loc = p.add_location();
        loc->set_id(lit->second);
        loc->set_address(f.pc);
        auto* line = loc->add_line();
        line->set_function_id(fit->second);
        line->set_line(static_cast<int64_t>(f.line));
      }
      sample->add_location_id(lit->second);
    }
  }
  std::string bytes;
  if (!p.SerializeToString(&bytes)) return Status::Error("cannot encode the profile");
  gzFile gz = gzopen(path.c_str(), "wb");
  if (!gz) return Status::Error(path + ": " + std::strerror(errno ? errno : EIO));
  const bool ok = bytes.empty() || gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                                       static_cast<int>(bytes.size());
  const int rc = gzclose(gz);
  if (!ok || rc != Z_OK) return Status::Error(path + ": write failed");
  return Status::Ok();
}

Status ReadPprofTotals(const std::string& path, std::vector<int64_t>* values,
                       std::vector<std::string>* functions) {
  gzFile gz = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!gz) return Status::Error(path + ": cannot open");
  std::string bytes;
  char buf[1 << 16];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  gzclose(gz);
  if (n < 0) return Status::Error(path + ": bad gzip data");
  perftools::profiles::Profile p;
  if (!p.ParseFromString(bytes)) return Status::Error(path + ": not a profile.proto");
  values->assign(static_cast<size_t>(p.sample_type_size()), 0);
  for (const auto& s : p.sample())
    for (int i = 0; i < s.value_size() && i < p.sample_type_size(); ++i) (*values)[static_cast<size_t>(i)] += s.value(i);
  functions->clear();
  for (const auto& f : p.function())
    if (f.name() >= 0 && f.name() < p.string_table_size()) functions->push_back(p.string_table(static_cast<int>(f.name())));
  return Status::Ok();
}

}  // namespace gotrace::report
