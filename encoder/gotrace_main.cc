// SPDX-License-Identifier: Apache-2.0
//===-- encoder/gotrace_main.cc - the `gotrace` command -------------------===//
//
//   gotrace encode [options] LOG... -o OUT   event logs -> Go trace
//   gotrace dump LOG...                      print the records of event logs
//   gotrace report [options] TRACE...        where the threads waited (no Go needed)
//   gotrace pprof --kind KIND TRACE -o OUT   a pprof profile of a trace (no Go needed)
//
// Errors are one line on stderr and a non-zero exit status.
//===----------------------------------------------------------------------===//
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "encoder/ctl_client.h"
#include "encoder/encode.h"
#include "encoder/log_reader.h"
#include "encoder/printable.h"
#include "encoder/report/gates.h"
#include "encoder/report/pprof.h"
#include "encoder/report/report.h"
#include "encoder/report/run_index.h"
#include "encoder/report/trace_reader.h"
#include "encoder/run.h"
#include "encoder/run_finish.h"
#include "encoder/varint.h"
#include "symbolizer/debuginfod.h"
#include "symbolizer/dw_symbolizer.h"

namespace gotrace {
namespace {

constexpr const char* kUsage =
    "usage: gotrace encode [options] LOG... -o OUT\n"
    "       gotrace recover [options] LOG... -o OUT\n"
    "       gotrace dump LOG...\n"
    "       gotrace run [options] [--] PROGRAM [ARGS...]   (tracewrap: see gotrace run --help)\n"
    "       gotrace report [options] TRACE...\n"
    "       gotrace pprof --kind sync|net|syscall|sched|cpu TRACE -o OUT.pb.gz\n"
    "       gotrace ctl [--tree] PID start|stop|snapshot|status   (see gotrace ctl --help)\n"
    "\n"
    "encode: turn gotrace event logs into a Go execution trace (go tool trace OUT)\n"
    "  -o, --output OUT          trace file to write (required)\n"
    "  -f, --force               replace OUT if it exists\n"
    "      --unique              if OUT exists, write OUT with .1, .2, ... before its extension\n"
    "      --block-threshold-us N\n"
    "                            syscalls shorter than N microseconds do not block\n"
    "                            their thread in the trace (default 20)\n"
    "      --lenient             skip damaged chunks instead of failing\n"
    "      --check               check every emitted event against Go's parser rules\n"
    "      --no-symbols          name frames by address, do not read debug info\n"
    "      --offline             never ask a debuginfod server for debug info\n"
    "      --debuginfod-timeout S\n"
    "                            seconds for all debuginfod lookups (DEBUGINFOD_URLS) of\n"
    "                            this encode; 0: none (default GOTRACE_DEBUGINFOD_TIMEOUT\n"
    "                            or 10)\n"
    "      --fast-symbols        system libraries and programs with separate debug files:\n"
    "                            names only\n"
    "  -q, --quiet               no summary line\n"
    "      --remove-logs         remove the LOGs once the trace is written\n"
    "recover: encode the log of a process that crashed or was killed (encode --lenient):\n"
    "  whatever reached the log is kept, damaged or missing parts are skipped and listed\n"
    "dump: print every record of the logs, one per line\n"
    "report: per thread running / runnable / blocked by kind, top blocking sites, wakers, heap\n"
    "  (a TRACE may be a run index, tracewrap's OUT.index.json: every trace it lists)\n"
    "  --format text|markdown|json   output format (default text, 80 columns)\n"
    "  -o, --output FILE             write the report to FILE instead of stdout\n"
    "  --top N                       blocking sites and waker pairs to list (default 10)\n"
    "  --html FILE                   also write a self-contained page: thread timeline,\n"
    "                                blocking sites as an icicle, the heap over time\n"
    "  --fail-if EXPR                exit 3 if EXPR holds, e.g. 'blocked.mutex > 20%',\n"
    "                                'runnable > 30%', 'sync.top.total > 50ms' (repeatable)\n"
    "  exit status: 0 done, 2 bad input or usage, 3 a --fail-if condition holds\n"
    "pprof: the profile go tool trace -pprof=KIND makes (cpu: from the trace's CPU samples),\n"
    "  gzipped profile.proto for go tool pprof and other pprof tools; exit 2 on bad input\n"
    "exit status: 0 written, 1 an error, 2 a usage error, 3 the logs are intact but hold\n"
    "  no events (a process killed before it recorded anything): there is no trace to write\n";

// The value after option argv[*i] (advancing *i), or nullptr after one line
// saying that `name` needs one.
const char* OptionValue(int argc, char** argv, int* i, const char* name) {
  if (*i + 1 >= argc) {
    std::fprintf(stderr, "gotrace: %s needs a value\n", name);
    return nullptr;
  }
  return argv[++*i];
}

double Seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int kExitNoEvents = 3;

int Fail(const std::string& msg) {
  std::fprintf(stderr, "gotrace: %s\n", msg.c_str());
  return 1;
}

bool ParseU64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  char* end;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return false;
  *out = v;
  return true;
}

int CmdEncode(int argc, char** argv, bool recover) {
  std::vector<std::string> logs;
  std::string out;
  EncodeOptions opts;
  opts.model.check = CheckEventsByDefault();
  opts.strict = !recover;
  bool quiet = false, symbols = true, remove_logs = false;
  DwOptions dw;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) { return OptionValue(argc, argv, &i, name); };
    if (a == "-o" || a == "--output") {
      const char* v = value("-o");
      if (!v) return 2;
      out = v;
    } else if (a == "-f" || a == "--force") {
      opts.output_mode = OutputMode::kOverwrite;
    } else if (a == "--unique") {
      opts.output_mode = OutputMode::kUnique;
    } else if (a == "--block-threshold-us") {
      const char* v = value("--block-threshold-us");
      uint64_t us;
      if (!v || !ParseU64(v, &us) || us > 3600ull * 1000 * 1000)
        return Fail("--block-threshold-us wants a number of microseconds"), 2;
      opts.model.block_threshold_ns = us * 1000;
    } else if (a == "--lenient") {
      opts.strict = false;
    } else if (a == "--check") {
      opts.model.check = true;
    } else if (a == "--no-symbols") {
      symbols = false;
    } else if (a == "--offline") {
      dw.offline = true;
    } else if (a == "--debuginfod-timeout") {
      const char* v = value("--debuginfod-timeout");
      if (!v || !ParseDebuginfodBudget(v, &dw.debuginfod_budget_s))
        return Fail("--debuginfod-timeout wants a number of seconds"), 2;
    } else if (a == "--fast-symbols") {
      dw.system_dwarf = false;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "--remove-logs") {
      remove_logs = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail("unknown option " + a + " (see gotrace --help)"), 2;
    } else {
      logs.push_back(a);
    }
  }
  const char* cmd = recover ? "recover" : "encode";
  if (out.empty()) return Fail(std::string(cmd) + " needs -o OUT (see gotrace --help)"), 2;
  if (logs.empty()) return Fail(std::string(cmd) + " needs at least one LOG (see gotrace --help)"), 2;
  if (symbols) opts.symbolizer = DefaultSymbolizerFactory(dw);

  const double t0 = Seconds();
  EncodeStats stats;
  Status st = gotrace::Encode(logs, out, opts, &stats);
  for (const auto& w : stats.warnings) std::fprintf(stderr, "gotrace: warning: %s\n", w.c_str());
  if (!quiet) for (const auto& n : stats.notes) std::fprintf(stderr, "gotrace: note: %s\n", n.c_str());
  if (!st.ok()) return Fail(st.message()), stats.no_events ? kExitNoEvents : 1;
  // (A crashed process's recovery: its log is gone with the trace written
  // even if the process was killed while it waited for us.)
  if (remove_logs)
    for (const std::string& l : logs) (void)unlink(l.c_str());
  if (!quiet) {
    std::fprintf(stderr, "gotrace: wrote %s (%s, %s, %s) in %.2f s\n", stats.output_path.c_str(),
                 Counted(stats.model.threads, "thread").c_str(),
                 Counted(stats.events, "event").c_str(), HumanBytes(stats.bytes).c_str(),
                 Seconds() - t0);
    if (stats.model.dropped_records > 0)
      std::fprintf(stderr, "gotrace: the recording dropped %" PRIu64 " records\n",
                   stats.model.dropped_records);
    if (const std::string k = KernelLossLine(stats.model); !k.empty())
      std::fprintf(stderr, "gotrace: %s\n", k.c_str());
  }
  return 0;
}

int CmdDump(int argc, char** argv) {
  std::vector<std::string> logs(argv, argv + argc);
  if (logs.empty()) return Fail("dump needs at least one LOG"), 2;
  log::LogSet set;
  Status st = set.Open(logs, log::ReadOptions{false});
  for (const auto& w : set.warnings()) std::fprintf(stderr, "gotrace: warning: %s\n", w.c_str());
  for (const auto& n : set.notes()) std::fprintf(stderr, "gotrace: note: %s\n", n.c_str());
  if (!st.ok()) return Fail(st.message());
  for (const auto& f : set.files()) {
    std::printf("file %s pid=%u ppid=%u ncpus=%u freq=%" PRIu64 " start=%" PRIu64 "\n",
                f.path.c_str(), f.header.pid, f.header.ppid, f.header.ncpus,
                f.header.ticks_per_second, f.header.start_ticks);
  }
  for (uint32_t s = 0; s < set.streams().size(); ++s) {
    const auto& stream = set.streams()[s];
    std::printf("stream file=%u serial=%u tid=%u chunks=%zu records=%" PRIu64 "%s\n", stream.file,
                stream.serial, stream.tid, stream.chunks.size(), stream.nrecords,
                stream.seq_gap ? " (missing chunks)" : "");
    log::StreamCursor cur(set, s);
    log::Record r;
    while (cur.Next(&r)) {
      std::printf("  %" PRIu64 " cpu=%u ", r.ts, r.cpu);
      switch (r.type) {
        case log::kThreadStart:
          std::printf("ThreadStart create_id=%" PRIu64 " start_pc=0x%" PRIx64 " self=0x%" PRIx64
                      " flags=%" PRIu64 "\n", r.start.create_id, r.start.start_pc, r.start.self,
                      r.start.flags);
          break;
        case log::kThreadEnd: std::printf("ThreadEnd\n"); break;
        case log::kThreadCreate:
          std::printf("ThreadCreate create_id=%" PRIu64 " start_pc=0x%" PRIx64 " stack=%" PRIu64
                      "\n", r.create.create_id, r.create.start_pc, r.create.stack);
          break;
        case log::kWait:
          std::printf("Wait kind=%s flags=%" PRIu64 " obj=0x%" PRIx64 " aux=%" PRIu64
                      " duration=%" PRIu64 " cpu_end=%" PRIu64 " stack=%" PRIu64 "\n",
                      log::WaitKindName(static_cast<log::WaitKind>(r.wait.kind)), r.wait.flags,
                      r.wait.obj, r.wait.aux, r.wait.duration, r.wait.cpu_end, r.wait.stack);
          break;
        case log::kRelease:
          std::printf("Release kind=%s obj=0x%" PRIx64 " count=%" PRIu64 " stack=%" PRIu64 "\n",
                      log::WaitKindName(static_cast<log::WaitKind>(r.release.kind)),
                      r.release.obj, r.release.count, r.release.stack);
          break;
        case log::kHeap: std::printf("Heap bytes=%" PRIu64 "\n", r.heap.bytes); break;
        case log::kStackDef: {
          log::StackDefFields d;
          if (!log::ParseStackDef(r, &d)) { std::printf("StackDef (malformed)\n"); break; }
          std::printf("StackDef id=%" PRIu64 " epoch=%u", d.id, d.epoch);
          for (uint64_t pc : d.pcs) std::printf(" 0x%" PRIx64, pc);
          std::printf("%s\n", d.truncated ? " truncated" : "");
          break;
        }
        case log::kModuleLoad: {
          log::ModuleLoadFields m;
          if (!log::ParseModuleLoad(r, &m)) { std::printf("ModuleLoad (malformed)\n"); break; }
          std::printf("ModuleLoad epoch=%u bias=0x%" PRIx64 " [0x%" PRIx64 ",0x%" PRIx64 ") %s\n",
                      m.epoch, m.bias, m.lo, m.hi, m.path.c_str());
          break;
        }
        case log::kModuleUnload: {
          log::ModuleUnloadFields m;
          if (!log::ParseModuleUnload(r, &m)) { std::printf("ModuleUnload (malformed)\n"); break; }
          std::printf("ModuleUnload epoch=%u [0x%" PRIx64 ",0x%" PRIx64 ")\n", m.epoch, m.lo, m.hi);
          break;
        }
        case log::kTraceEnd: {
          log::TraceEndFields e;
          if (!log::ParseTraceEnd(r, &e)) { std::printf("TraceEnd (malformed)\n"); break; }
          std::printf("TraceEnd dropped_records=%" PRIu64 " dropped_chunks=%" PRIu64 "\n",
                      e.dropped_records, e.dropped_chunks);
          break;
        }
        case log::kClockSync: {
          const uint8_t* bp = r.body;
          uint64_t ns = 0;
          (void)GetUvarint(&bp, r.body + r.body_len, &ns);
          std::printf("ClockSync monotonic_ns=%" PRIu64 "\n", ns);
          break;
        }
        case log::kSwitch:
          std::printf("Switch %s tid=%" PRIu64 "%s\n", (r.sw.flags & log::kSwitchOut) ? "out" : "in",
                      r.sw.tid, (r.sw.flags & log::kSwitchPreempt) ? " preempted" : "");
          break;
        case log::kCpuSample:
          std::printf("CpuSample tid=%" PRIu64 " stack=%" PRIu64 "\n", r.sample.tid, r.sample.stack);
          break;
        case log::kKernelLost:
          std::printf("KernelLost count=%" PRIu64 "\n", r.lost.count);
          break;
        case log::kCpuTime:
          std::printf("CpuTime ns=%" PRIu64 "\n", r.cputime.ns);
          break;
        case log::kExitStatus:
          std::printf("ExitStatus status=0x%" PRIx64 "\n", r.exit.status);
          break;
        case log::kChildExit:
          std::printf("ChildExit pid=%" PRIu64 " status=0x%" PRIx64 "\n", r.child.pid, r.child.status);
          break;
        case log::kTaskEnd:
          std::printf("TaskEnd task=%" PRIu64 " stack=%" PRIu64 "\n", r.task_end.task, r.task_end.stack);
          break;
        case log::kThreadName: {
          log::ThreadNameFields n;
          if (!log::ParseThreadName(r, &n)) { std::printf("ThreadName (malformed)\n"); break; }
          std::printf("ThreadName serial=%u name=%s\n", n.serial, n.name.c_str());
          break;
        }
        case log::kProcessInfo: {
          log::ProcessInfoFields p;
          if (!log::ParseProcessInfo(r, &p)) { std::printf("ProcessInfo (malformed)\n"); break; }
          std::printf("ProcessInfo ppid=%" PRIu64 " flags=%" PRIu64 " exe=%s argv=", p.ppid, p.flags,
                      p.exe.c_str());
          for (const auto& a : p.argv) std::printf("[%s]", a.c_str());
          if (p.began_ns != 0) std::printf(" began=%" PRIu64, p.began_ns);
          std::printf("\n");
          break;
        }
        case log::kThreadCpu: {
          log::ThreadCpuFields tc;
          if (!log::ParseThreadCpu(r, &tc)) { std::printf("ThreadCpu (malformed)\n"); break; }
          std::printf("ThreadCpu serial=%u ns=%" PRIu64 "\n", tc.serial, tc.ns);
          break;
        }
        case log::kSchedInfo: {
          log::SchedInfoFields si;
          if (!log::ParseSchedInfo(r, &si)) { std::printf("SchedInfo (malformed)\n"); break; }
          std::printf("SchedInfo source=%s cpu_hz=%" PRIu64 "%s%s\n",
                      si.source == log::kSchedKernel ? "kernel" : "infer", si.cpu_hz,
                      si.why.empty() ? "" : " why=", si.why.c_str());
          break;
        }
        case log::kTaskBegin: {
          log::TaskBeginFields tb;
          if (!log::ParseTaskBegin(r, &tb)) { std::printf("TaskBegin (malformed)\n"); break; }
          std::printf("TaskBegin task=%" PRIu64 " parent=%" PRIu64 " stack=%" PRIu64 " name=%s\n",
                      tb.task, tb.parent, tb.stack, tb.name.c_str());
          break;
        }
        case log::kRegion: {
          log::RegionFields rg;
          if (!log::ParseRegion(r, &rg)) { std::printf("Region (malformed)\n"); break; }
          std::printf("Region %s task=%" PRIu64 " stack=%" PRIu64 " name=%s\n",
                      rg.mode == 0 ? "begin" : "end", rg.task, rg.stack, rg.name.c_str());
          break;
        }
        case log::kUserLog: {
          log::UserLogFields ul;
          if (!log::ParseUserLog(r, &ul)) { std::printf("UserLog (malformed)\n"); break; }
          std::printf("UserLog task=%" PRIu64 " stack=%" PRIu64 " category=%s message=%s\n", ul.task,
                      ul.stack, ul.category.c_str(), ul.message.c_str());
          break;
        }
        default:
          std::printf("record type %u (%zu bytes)\n", r.type, r.body_len);
      }
    }
    if (!cur.status().ok()) return Fail(cur.status().message());
  }
  return 0;
}

int CmdReport(int argc, char** argv) {
  std::vector<std::string> traces;
  std::vector<report::Gate> gates;
  std::string format = "text", out, html;
  uint64_t top = 10;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) { return OptionValue(argc, argv, &i, name); };
    if (a == "--format") {
      const char* v = value("--format");
      if (!v) return 2;
      format = v;
      if (format != "text" && format != "markdown" && format != "json")
        return Fail("--format wants text, markdown or json, not '" + format + "'"), 2;
    } else if (a == "-o" || a == "--output") {
      const char* v = value("-o");
      if (!v) return 2;
      out = v;
    } else if (a == "--html") {
      const char* v = value("--html");
      if (!v) return 2;
      html = v;
    } else if (a == "--top") {
      const char* v = value("--top");
      if (!v || !ParseU64(v, &top) || top == 0 || top > 1000)
        return Fail("--top wants a number from 1 to 1000"), 2;
    } else if (a == "--fail-if") {
      const char* v = value("--fail-if");
      if (!v) return 2;
      report::Gate g;
      Status st = report::ParseGate(v, &g);
      if (!st.ok()) return Fail(st.message()), 2;
      gates.push_back(g);
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--") {
      traces.insert(traces.end(), argv + i + 1, argv + argc);
      break;
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail("unknown option " + a + " (see gotrace --help)"), 2;
    } else {
      traces.push_back(a);
    }
  }
  if (traces.empty()) return Fail("report needs at least one TRACE (see gotrace --help)"), 2;
  // A run index (tracewrap's OUT.index.json) stands for the traces it lists.
  std::vector<std::string> inputs;
  for (const std::string& path : traces) {
    std::string head;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      char b[64];
      head.assign(b, std::fread(b, 1, sizeof b, f));
      std::fclose(f);
    }
    if (!report::LooksLikeJson(head)) {
      inputs.push_back(path);
      continue;
    }
    std::vector<report::IndexedProcess> procs;
    Status st = report::ReadRunIndex(path, &procs);
    if (!st.ok()) return Fail(path + ": " + st.message()), 2;
    const size_t before = inputs.size();
    // A trace the index lists but that is gone (removed since, or the run
    // moved without it) is said once and left out: the others are reported.
    size_t missing = 0;
    auto add = [&](const std::string& t) {
      if (access(t.c_str(), F_OK) == 0) {
        inputs.push_back(t);
      } else {
        ++missing;
        std::fprintf(stderr,
                     "gotrace: warning: %s is missing (listed by %s); reporting the others\n",
                     t.c_str(), path.c_str());
      }
    };
    for (const auto& p : procs) {
      for (const std::string& w : p.windows) add(w);
      if (!p.trace.empty() &&
          std::find(p.windows.begin(), p.windows.end(), p.trace) == p.windows.end())
        add(p.trace);
    }
    if (inputs.size() == before)
      return Fail(path + (missing > 0 ? ": every trace the run index lists is missing"
                                      : ": the run index lists no trace")),
             2;
  }
  traces.swap(inputs);
  std::vector<report::Report> reports;
  for (const std::string& path : traces) {
    report::Trace trace;
    Status st = report::ReadTrace(path, &trace);
    if (!st.ok()) return Fail(path + ": " + st.message()), 2;
    reports.push_back(report::Analyze(trace, path, !html.empty()));
  }
  const size_t n = static_cast<size_t>(top);
  const std::string text = format == "json"       ? report::FormatJson(reports, n)
                           : format == "markdown" ? report::FormatMarkdown(reports, n)
                                                  : report::FormatText(reports, n);
  if (out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) return Fail(std::string("stdout: ") + std::strerror(errno));
  } else {
    FILE* f = std::fopen(out.c_str(), "w");
    if (!f) return Fail(out + ": " + std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) return Fail(out + ": " + std::strerror(errno));
  }
  if (!html.empty()) {
    const std::string page = report::FormatHtml(reports, n);
    FILE* f = std::fopen(html.c_str(), "w");
    if (!f) return Fail(html + ": " + std::strerror(errno));
    const bool ok = std::fwrite(page.data(), 1, page.size(), f) == page.size();
    if (std::fclose(f) != 0 || !ok) return Fail(html + ": " + std::strerror(errno));
  }
  int rc = 0;
  for (const report::Gate& g : gates) {
    std::string actual;
    if (report::GateHolds(g, reports, &actual)) {
      std::fprintf(stderr, "gotrace: --fail-if '%s' holds: %s is %s\n", g.text.c_str(),
                   g.metric.c_str(), actual.c_str());
      rc = 3;
    }
  }
  return rc;
}

int CmdPprof(int argc, char** argv) {
  std::string kind, out, path;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--kind" || a == "-o" || a == "--output") && i + 1 >= argc)
      return Fail(a + " needs a value"), 2;
    if (a == "--kind") {
      kind = argv[++i];
    } else if (a == "-o" || a == "--output") {
      out = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a.size() > 1 && a[0] == '-') {
      return Fail("unknown option " + a + " (see gotrace --help)"), 2;
    } else if (!path.empty()) {
      return Fail("pprof reads one TRACE"), 2;
    } else {
      path = a;
    }
  }
  if (kind != "sync" && kind != "net" && kind != "syscall" && kind != "sched" && kind != "cpu")
    return Fail("pprof needs --kind sync, net, syscall, sched or cpu"), 2;
  if (path.empty()) return Fail("pprof needs a TRACE (see gotrace --help)"), 2;
  if (out.empty()) return Fail("pprof needs -o OUT (see gotrace --help)"), 2;
  report::Trace trace;
  Status st = report::ReadTrace(path, &trace);
  if (!st.ok()) return Fail(path + ": " + st.message()), 2;
  report::Profile prof;
  st = report::ComputeProfile(trace, kind, &prof);
  if (!st.ok()) return Fail(path + ": " + st.message()), 2;
  st = report::WritePprof(trace, prof, out);
  if (!st.ok()) return Fail(st.message());
  return 0;
}

}  // namespace
}  // namespace gotrace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    std::fputs(gotrace::kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "run") {
    // tracewrap's work (encoder/run.h), with the encoder linked in.
    return gotrace::RunMain(
        argc - 1, argv + 1, "gotrace run",
        [](const GotraceFinishRequest& req, const char*) { return gotrace::FinishRun(req); },
        [](const char*) -> gotrace::AheadFn {
          return [](const GotraceFinishRequest* req, const int* stop, int wake_fd) {
            gotrace::FinishAhead(*req, stop, wake_fd);
          };
        });
  }
  if (cmd == "encode") return gotrace::CmdEncode(argc - 2, argv + 2, false);
  if (cmd == "recover") return gotrace::CmdEncode(argc - 2, argv + 2, true);
  if (cmd == "dump") return gotrace::CmdDump(argc - 2, argv + 2);
  if (cmd == "report") return gotrace::CmdReport(argc - 2, argv + 2);
  if (cmd == "pprof") return gotrace::CmdPprof(argc - 2, argv + 2);
  if (cmd == "ctl") return gotrace::CmdCtl(argc - 2, argv + 2);
  std::fprintf(stderr, "gotrace: unknown command '%s' (see gotrace --help)\n", cmd.c_str());
  return 2;
}
