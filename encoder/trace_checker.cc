// SPDX-License-Identifier: Apache-2.0
//===-- encoder/trace_checker.cc - the Go parser's rules, applied as we emit -===//
#include "encoder/trace_checker.h"

#include <string>

namespace gotrace {
namespace {

std::string Msg(const char* what, uint64_t g, go::EvType t, uint32_t p, uint64_t ts) {
  return std::string(what) + " (g " + std::to_string(g) + ", " + go::EvName(t) + " on p " +
         std::to_string(p) + " at " + std::to_string(ts) + ")";
}

}  // namespace

const char* go::EvName(EvType t) {
  switch (t) {
    case kEvBatch: return "Batch";
    case kEvFrequency: return "Frequency";
    case kEvStack: return "Stack";
    case kEvGomaxprocs: return "Gomaxprocs";
    case kEvProcStart: return "ProcStart";
    case kEvProcStop: return "ProcStop";
    case kEvGoCreate: return "GoCreate";
    case kEvGoStart: return "GoStart";
    case kEvGoEnd: return "GoEnd";
    case kEvGoStop: return "GoStop";
    case kEvGoSched: return "GoSched";
    case kEvGoPreempt: return "GoPreempt";
    case kEvGoSleep: return "GoSleep";
    case kEvGoBlock: return "GoBlock";
    case kEvGoUnblock: return "GoUnblock";
    case kEvGoBlockSync: return "GoBlockSync";
    case kEvGoBlockCond: return "GoBlockCond";
    case kEvGoBlockNet: return "GoBlockNet";
    case kEvGoSysCall: return "GoSysCall";
    case kEvGoSysExit: return "GoSysExit";
    case kEvGoSysBlock: return "GoSysBlock";
    case kEvGoWaiting: return "GoWaiting";
    case kEvGoInSyscall: return "GoInSyscall";
    case kEvHeapAlloc: return "HeapAlloc";
    case kEvString: return "String";
    case kEvUserTaskCreate: return "UserTaskCreate";
    case kEvUserTaskEnd: return "UserTaskEnd";
    case kEvUserRegion: return "UserRegion";
    case kEvUserLog: return "UserLog";
    case kEvCPUSample: return "CPUSample";
  }
  return "?";
}

TraceChecker::TraceChecker(uint32_t nprocs) : procs_(nprocs == 0 ? 1 : nprocs) {
  gs_[0].st = GSt::kRunning;  // g0 is always running
  gs_[0].created = true;
}

std::string TraceChecker::CheckRunning(uint32_t p, go::EvType type, bool allow_g0) {
  const uint64_t g = procs_[p].g;
  if (g == 0 && !allow_g0) return Msg("g 0 did an event only a goroutine may do", g, type, p, 0);
  if (Get(g).st != GSt::kRunning) return Msg("g is not running", g, type, p, 0);
  return "";
}

std::string TraceChecker::Check(uint32_t p, go::EvType type, uint64_t ts,
                                std::span<const uint64_t> args) {
  if (p >= procs_.size()) return Msg("P id out of range", 0, type, p, ts);
  if (static_cast<int>(args.size()) + 1 != go::TimedArgCount(type))
    return Msg("wrong number of arguments", 0, type, p, ts);
  if (ts < last_ts_) return Msg("time went backwards", procs_[p].g, type, p, ts);
  last_ts_ = ts;
  any_event_ = true;
  P& pr = procs_[p];
  std::string err;
  switch (type) {
    case go::kEvGomaxprocs:
      // Repeated (for Go 1.21+'s converter, sched_model.cc Snapshot), never changed: the
      // model's Ps are the CPUs, fixed for the whole trace.
      if (gomaxprocs_seen_ && args[0] != gomaxprocs_) {
        return Msg("Gomaxprocs changed", 0, type, p, ts);
      }
      gomaxprocs_seen_ = true;
      gomaxprocs_ = args[0];
      break;
    case go::kEvProcStart:
      if (pr.running) return Msg("ProcStart on a running P", 0, type, p, ts);
      pr.running = true;
      break;
    case go::kEvProcStop:
      if (!pr.running) return Msg("ProcStop on a stopped P", 0, type, p, ts);
      if (pr.g != 0) return Msg("ProcStop while the P runs a goroutine", pr.g, type, p, ts);
      pr.running = false;
      break;
    case go::kEvGoCreate: {
      if (!(err = CheckRunning(p, type, true)).empty()) return err;
      const uint64_t ng = args[0];
      if (ng == 0) return Msg("GoCreate of g 0", ng, type, p, ts);
      G& g = Get(ng);
      if (g.created) return Msg("goroutine id created twice", ng, type, p, ts);
      if (args[1] == 0) return Msg("GoCreate without a start stack", ng, type, p, ts);
      start_stacks_.insert(args[1]);
      g.created = true;
      g.st = GSt::kRunnable;
      g.seq = 1;
      break;
    }
    case go::kEvGoWaiting:
    case go::kEvGoInSyscall: {
      G& g = Get(args[0]);
      if (gomaxprocs_seen_) return Msg("start-snapshot event after Gomaxprocs", args[0], type, p, ts);
      if (!g.created || g.st != GSt::kRunnable || g.seq != 1)
        return Msg("GoWaiting/GoInSyscall not right after GoCreate", args[0], type, p, ts);
      g.st = GSt::kWaiting;
      g.in_syscall = type == go::kEvGoInSyscall;
      g.seq = 2;
      break;
    }
    case go::kEvGoStart: {
      G& g = Get(args[0]);
      if (!g.created) return Msg("GoStart before GoCreate", args[0], type, p, ts);
      if (g.st != GSt::kRunnable) return Msg("GoStart of a goroutine that is not runnable", args[0], type, p, ts);
      if (args[1] != g.seq) return Msg("GoStart with a wrong seq", args[0], type, p, ts);
      if (pr.g != 0) return Msg("GoStart on a P that already runs a goroutine", pr.g, type, p, ts);
      g.st = GSt::kRunning;
      g.seq = args[1] + 1;
      pr.g = args[0];
      break;
    }
    case go::kEvGoEnd:
    case go::kEvGoStop:
      if (!(err = CheckRunning(p, type, false)).empty()) return err;
      Get(pr.g).st = GSt::kDead;
      Get(pr.g).ended = true;
      pr.g = 0;
      break;
    case go::kEvGoSched:
    case go::kEvGoPreempt:
      if (!(err = CheckRunning(p, type, false)).empty()) return err;
      Get(pr.g).st = GSt::kRunnable;
      pr.g = 0;
      break;
    case go::kEvGoSleep:
    case go::kEvGoBlock:
    case go::kEvGoBlockSync:
    case go::kEvGoBlockCond:
    case go::kEvGoBlockNet:
    case go::kEvGoSysBlock:
      if (!(err = CheckRunning(p, type, false)).empty()) return err;
      Get(pr.g).st = GSt::kWaiting;
      Get(pr.g).in_syscall = type == go::kEvGoSysBlock;
      pr.g = 0;
      break;
    case go::kEvGoSysCall:
      if (!(err = CheckRunning(p, type, false)).empty()) return err;
      break;
    case go::kEvGoUnblock: {
      if (!(err = CheckRunning(p, type, true)).empty()) return err;
      G& g = Get(args[0]);
      if (!g.created) return Msg("GoUnblock before GoCreate", args[0], type, p, ts);
      if (g.st != GSt::kWaiting || g.in_syscall)
        return Msg("GoUnblock of a goroutine that is not blocked", args[0], type, p, ts);
      if (args[1] != g.seq) return Msg("GoUnblock with a wrong seq", args[0], type, p, ts);
      if (args[0] == pr.g) return Msg("goroutine unblocks itself", args[0], type, p, ts);
      g.st = GSt::kRunnable;
      g.seq = args[1] + 1;
      break;
    }
    case go::kEvGoSysExit: {
      G& g = Get(args[0]);
      if (!g.created) return Msg("GoSysExit before GoCreate", args[0], type, p, ts);
      if (g.st != GSt::kWaiting || !g.in_syscall)
        return Msg("GoSysExit of a goroutine not blocked in a syscall", args[0], type, p, ts);
      if (args[1] != g.seq) return Msg("GoSysExit with a wrong seq", args[0], type, p, ts);
      if (args[2] != 0) return Msg("GoSysExit with a real time (we always write 0)", args[0], type, p, ts);
      g.st = GSt::kRunnable;
      g.in_syscall = false;
      g.seq = args[1] + 1;
      break;
    }
    case go::kEvHeapAlloc:
      break;
    case go::kEvCPUSample: {
      // The goroutine it names (0: none) must exist already: the parser
      // treats a CPUSample of an unknown g as its creation, and the real
      // GoCreate then fails ("g already exists").
      if (args[1] >= procs_.size()) return Msg("CPUSample on a P out of range", 0, type, p, ts);
      if (args[2] != 0 && !Get(args[2]).created)
        return Msg("CPUSample of a goroutine not created yet", args[2], type, p, ts);
      break;
    }
    case go::kEvUserTaskCreate:
    case go::kEvUserTaskEnd:
    case go::kEvUserRegion:
    case go::kEvUserLog:
      if (!(err = CheckRunning(p, type, false)).empty()) return err;
      break;
    default:
      return Msg("event type gotrace never emits", 0, type, p, ts);
  }
  return "";
}

std::string TraceChecker::Finish() {
  if (!any_event_) return "no events";
  if (!gomaxprocs_seen_) return "no Gomaxprocs event";
  for (const auto& [id, g] : gs_)
    if (id != 0 && g.st == GSt::kRunning)
      return "goroutine " + std::to_string(id) + " is still running at the end of the trace";
  for (size_t p = 0; p < procs_.size(); ++p)
    if (procs_[p].running) return "P " + std::to_string(p) + " is not stopped at the end";
  return "";
}

}  // namespace gotrace
