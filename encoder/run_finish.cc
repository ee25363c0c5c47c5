// SPDX-License-Identifier: Apache-2.0
//===-- encoder/run_finish.cc - a whole run's logs become its traces ------===//
#include "encoder/run_finish.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "encoder/encode.h"
#include "encoder/log_format.h"
#include "encoder/log_summary.h"
#include "encoder/printable.h"
#include "encoder/proc_files.h"
#include "encoder/quiet_journal.h"
#include "encoder/shell_word.h"
#include "preload/control_path.h"
#include "symbolizer/dw_symbolizer.h"

namespace gotrace {
namespace {

std::string Base(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The directory of a path ("" if none).
std::string DirOf(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

double NowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Item {
  std::string log;      // as found
  std::string claimed;  // renamed to, while we encode it
  std::string trace;    // the trace it becomes: log minus ".gtlog"
  LogSummary sum;
  bool readable = false;
  bool no_events = false;
  bool running = false;  // no end record, held open by a live process
  bool killed = false;   // no end record, held by nobody
  bool quiet = false;
  bool paused = false;         // ended paused: recorded only in its trace windows
  bool start_unknown = false;  // known only from its reaping (LostChildren)
  bool encoded = false;
  uint64_t killed_end_ns = 0;  // killed: its end, from its reaping (ModelOptions)
  std::string written;   // the trace actually written (a taken name gets .1, ...)
  std::string error;
  EncodeStats stats;
};

// Where the run's logs are.
std::string LogDir(const GotraceFinishRequest& req) { return req.log_dir != nullptr ? req.log_dir : req.outdir; }

// Whether a file of these times is not older than the run's stamp (null:
// none). File times are coarse (a jiffy): one made in the same tick as the
// stamp is the run's.
bool NotOlder(const struct stat& st, const struct stat* stamp) {
  return stamp == nullptr || st.st_mtim.tv_sec > stamp->st_mtim.tv_sec ||
         (st.st_mtim.tv_sec == stamp->st_mtim.tv_sec &&
          st.st_mtim.tv_nsec >= stamp->st_mtim.tv_nsec);
}

// Whether dir/name is a log of the run: PREFIX*.gtlog, a regular file not
// older than the stamp (`stamp` null: none). Then `it` names it and the
// trace it becomes, and *bytes (if asked) is the memory it takes.
bool RunLog(const GotraceFinishRequest& req, const std::string& dir, const std::string& name,
            const struct stat* stamp, Item* it, uint64_t* bytes = nullptr) {
  const std::string prefix = req.prefix != nullptr ? req.prefix : "";
  if (name.compare(0, prefix.size(), prefix) != 0 || !EndsWith(name, ".gtlog")) return false;
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (!NotOlder(st, stamp)) return false;
  it->log = path;
  it->trace = std::string(req.outdir) + "/" + name.substr(0, name.size() - 6);
  if (bytes != nullptr) *bytes = static_cast<uint64_t>(st.st_blocks) * 512;
  return true;
}

// The run's stamp (its marker's times), or null.
const struct stat* Stamp(const GotraceFinishRequest& req, struct stat* buf) {
  return req.stamp_path != nullptr && stat(req.stamp_path, buf) == 0 ? buf : nullptr;
}

// The run's logs: OUTDIR/PREFIX*.gtlog not older than the stamp.
std::vector<Item> FindLogs(const GotraceFinishRequest& req, const std::set<std::string>& seen) {
  std::vector<Item> items;
  struct stat stamp_buf {};
  const struct stat* stamp = Stamp(req, &stamp_buf);
  const std::string dir = LogDir(req);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return items;
  while (dirent* e = readdir(d)) {
    Item it;
    if (RunLog(req, dir, e->d_name, stamp, &it) && !seen.count(it.log)) items.push_back(std::move(it));
  }
  closedir(d);
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.log < b.log; });
  return items;
}

std::string StatusJson(int64_t status, bool exec_d) {
  if (exec_d) return "{\"exec\":true}";
  if (status < 0) return "null";
  const int st = static_cast<int>(status);
  if (WIFEXITED(st)) return "{\"code\":" + std::to_string(WEXITSTATUS(st)) + "}";
  if (WIFSIGNALED(st)) {
    const char* name = sigabbrev_np(WTERMSIG(st));
    return "{\"signal\":" + std::to_string(WTERMSIG(st)) + ",\"name\":\"SIG" +
           std::string(name ? name : "?") + "\"" + (WCOREDUMP(st) ? ",\"core\":true" : "") + "}";
  }
  return "null";
}

std::string StatusText(int64_t status, bool exec_d) {
  if (exec_d) return "exec";
  if (status < 0) return "?";
  const int st = static_cast<int>(status);
  if (WIFEXITED(st)) return std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    const char* name = sigabbrev_np(WTERMSIG(st));
    return std::string("SIG") + (name ? name : "?");
  }
  return "?";
}

// The journal of quiet processes (encoder/quiet_journal.h). A missing one
// is an empty one (a launcher of the run could not make it, or nothing was
// quiet); false if damaged (the entries before the damage are kept).
bool ReadQuietJournal(const std::string& path, std::vector<log::QuietEntry>* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  close(fd);
  return log::ParseQuietJournal(bytes.data(), bytes.size(), out);
}

// The run's encode settings, made once: its symbolizer's module cache
// (every object's symbol tables and DWARF, read once) serves every process
// of the run, the ones encoded ahead and the rest.
struct RunEncoder {
  EncodeOptions opts;
  std::unique_ptr<SharedSymbols> symbols;  // opts.symbolizer's files
  std::once_flag made;
};
RunEncoder g_encoder;

const EncodeOptions& RunOptions(const GotraceFinishRequest& req) {
  std::call_once(g_encoder.made, [&] {
    DwOptions dw;
    dw.offline = true;  // no network in a run's tail (debuginfod: gotrace encode)
    // As the exit-time encode (encoder/encode_capi.cc): system libraries'
    // separate DWARF only with GOTRACE_SYMBOLS=full.
    const char* symbols = std::getenv("GOTRACE_SYMBOLS");
    dw.system_dwarf = symbols != nullptr && std::strcmp(symbols, "full") == 0;
    EncodeOptions& opts = g_encoder.opts;
    opts.model.block_threshold_ns = req.block_threshold_ns;
    opts.model.check = CheckEventsByDefault();
    opts.strict = false;  // a killed process's log is incomplete; damage is skipped and said
    opts.output_mode = OutputMode::kUnique;
    opts.file_mode = 0600;
    g_encoder.symbols = std::make_unique<SharedSymbols>(dw);
    opts.symbolizer = g_encoder.symbols->Factory();
  });
  return g_encoder.opts;
}

// Encodes one claimed log into its trace.
void EncodeItem(Item& it, const EncodeOptions& run_opts) {
  const std::string log = it.claimed;
  EncodeOptions killed;
  if (it.killed_end_ns != 0) {
    killed = run_opts;
    killed.model.killed_end_ns = it.killed_end_ns;
  }
  const EncodeOptions& opts = it.killed_end_ns != 0 ? killed : run_opts;
  const Status st = Encode(std::span<const std::string>(&log, 1), it.trace, opts, &it.stats);
  if (st.ok()) {
    it.encoded = true;
    it.written = it.stats.output_path;
  } else {
    it.error = st.message();
    it.no_events = it.stats.no_events;
  }
}

// Encodes items[i] for every i in `jobs`, on every CPU.
void EncodeAll(std::vector<Item>& items, const std::vector<size_t>& jobs,
               const GotraceFinishRequest& req) {
  if (jobs.empty()) return;
  const EncodeOptions& opts = RunOptions(req);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < jobs.size();) EncodeItem(items[jobs[k]], opts);
  };
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const size_t n = std::min<size_t>(cpus, jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
}

// Where a trace window's name, NAME.w<n>, has its ".w" (npos: not one).
size_t WindowSuffix(const std::string& name) {
  const size_t w = name.rfind(".w");
  return w != std::string::npos && w + 2 < name.size() &&
                 name.find_first_not_of("0123456789", w + 2) == std::string::npos
             ? w
             : std::string::npos;
}

bool WindowName(const std::string& trace) { return WindowSuffix(trace) != std::string::npos; }

// The users' private directories, /tmp/gotrace-<uid> (control::DirFor's
// name without XDG_RUNTIME_DIR), but `except`.
std::vector<std::string> PrivateTmpDirs(const std::string& except) {
  std::vector<std::string> out;
  if (DIR* t = opendir("/tmp")) {
    for (dirent* e; (e = readdir(t)) != nullptr;) {
      const std::string name = e->d_name;
      if (name.compare(0, 8, "gotrace-") == 0 && name.size() > 8 &&
          name.find_first_not_of("0123456789", 8) == std::string::npos && "/tmp/" + name != except)
        out.push_back("/tmp/" + name);
    }
    closedir(t);
  }
  return out;
}

// Whether a complete, readable log's process recorded nothing worth a trace.
// The root's last image is never quiet (the run's own trace); an image of
// it that exec'd another program may be. Nor is a trace window, which a
// user opened (gotrace ctl start) and which ended with its process: idle
// prefork workers, blocked in accept for the whole window, lost theirs.
bool QuietLog(const Item& it, const GotraceFinishRequest& req) {
  return it.readable && it.sum.complete && it.sum.quiet() && !WindowName(it.trace) &&
         (static_cast<int>(it.sum.pid) != req.root_pid || it.sum.exec_d);
}

// Whether a claimed log stays (GOTRACE_KEEP_LOG, or it could not be
// encoded): it goes next to its trace at the end.
bool KeepLog(const Item& it, const GotraceFinishRequest& req) {
  return req.keep_logs || (!it.encoded && !it.quiet && !it.no_events);
}

// Claims a log: a process that outlived the run may be about to encode its
// own; the one that renames it first does.
bool Claim(Item& it) {
  it.claimed = it.log + ".run";
  if (rename(it.log.c_str(), it.claimed.c_str()) == 0) return true;
  it.claimed.clear();
  return false;
}

// The pid in a log's file header, or -1.
int LogPid(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  log::FileHeader h{};
  const bool ok = pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
  close(fd);
  return ok ? static_cast<int>(h.pid) : -1;
}

// The logs encoded ahead (while the program ran: FinishAhead), for the end
// (FinishRun). One run per launcher process. The end closes it: from then
// on the encode ahead claims no log (what it has not claimed is the end's),
// and the end waits for the ones in flight only once its own are done.
struct AheadLogs {
  std::mutex mu;
  std::condition_variable idle;
  std::vector<Item> items;
  bool closed = false;
  int in_flight = 0;
};
AheadLogs g_ahead;

// The encode ahead's items, once none is in flight (FinishRun closed it).
std::vector<Item> TakeAheadItems() {
  std::unique_lock lock(g_ahead.mu);
  g_ahead.idle.wait(lock, [] { return g_ahead.in_flight == 0; });
  return std::move(g_ahead.items);
}

}  // namespace

// A killed process's log stops at its last record: a process killed in a
// wait (SIGKILL, a test's timeout) showed a trace, and an index duration,
// as long as its life up to that wait. Its end is when a traced parent
// reaped it (a ChildExit record: the first after it started, pids are
// reused), or, for the program, when the launcher's wait returned: later
// than the kill by the reaper's latency (a few ms on a loaded machine), so
// only where the log fell silent for longer (kKilledSilentNs) than that
// error: a process killed while it recorded keeps the end its records give.
constexpr uint64_t kKilledSilentNs = 100'000'000;

// The children the run's traced processes reaped, by pid (pids are reused:
// there may be several).
using Reapings = std::map<uint32_t, std::vector<log::ChildExit>>;
void AddReapings(const Item& it, Reapings* reaped) {
  for (const log::ChildExit& c : it.sum.child_exits) (*reaped)[c.pid].push_back(c);
}

// The reaping of the process `it` is: the first after it started.
const log::ChildExit* ReapingOf(const Reapings& reaped, const Item& it) {
  auto r = reaped.find(it.sum.pid);
  if (r == reaped.end()) return nullptr;
  const log::ChildExit* best = nullptr;
  for (const log::ChildExit& c : r->second) {
    if (c.end_ns != 0 && c.end_ns < it.sum.start_ns) continue;  // an earlier process of that pid
    if (best == nullptr || (c.end_ns != 0 && (best->end_ns == 0 || c.end_ns < best->end_ns)))
      best = &c;
  }
  return best;
}

void SetKilledEnds(std::vector<Item>& found, const std::vector<Item>& items,
                   const GotraceFinishRequest& req) {
  Reapings reaped;
  for (const Item& it : items) AddReapings(it, &reaped);
  for (const Item& it : found) AddReapings(it, &reaped);
  {
    std::lock_guard lock(g_ahead.mu);
    for (const Item& it : g_ahead.items) AddReapings(it, &reaped);
  }
  for (Item& it : found) {
    if (!it.killed) continue;
    uint64_t end = 0;
    if (static_cast<int>(it.sum.pid) == req.root_pid && !it.sum.exec_d) {
      end = req.end_ns;
    } else if (const log::ChildExit* c = ReapingOf(reaped, it); c != nullptr) {
      end = c->end_ns;
    }
    if (end > it.sum.end_ns + kKilledSilentNs) {
      it.killed_end_ns = end;
      it.sum.end_ns = end;
    }
  }
}

// WindowTraces' search of one directory, into *out.
void WindowTracesIn(const GotraceFinishRequest& req, const std::string& dir,
                    const struct stat* stamp, const std::set<std::string>& written,
                    std::vector<std::string>* out) {
  const std::string prefix = req.prefix != nullptr ? req.prefix : "";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  for (dirent* e; (e = readdir(d)) != nullptr;) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0 || EndsWith(name, ".gtlog") ||
        EndsWith(name, ".json"))
      continue;
    const std::string path = dir + "/" + name;
    if (written.count(path) != 0) continue;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !NotOlder(st, stamp)) continue;
    char head[16] = {0};
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(head, 1, sizeof head, f);
      std::fclose(f);
      // "go 1.19 trace\0\0\0": a Go trace's header.
      const std::string_view h(head, n);
      if (h.substr(0, 5) == "go 1." && h.find(" trace") != std::string_view::npos)
        out->push_back(path);
    }
  }
  closedir(d);
}

// The traces the run's processes wrote themselves while it ran (issue 16),
// in its output directory since it started (not older than its stamp),
// sorted: their trace windows (OUT.w<n>, OUT.<pid>.w<n>), and what a
// process recorded from its start until a `gotrace ctl stop` or `snapshot`
// (--ctl, the flight recorder: OUT, OUT.<pid>). Not those the launcher
// wrote (`written`), and only files that are traces (a user's OUT.txt is
// not).
//
// Also in the users' private directories, /tmp/gotrace-<uid>: a worker that
// gave up root (nginx's nobody, Apache's www-data, a postgres started by
// setpriv) may not write into the output directory, and wrote its windows
// there ("wrote /tmp/gotrace-65534/OUT.<pid>.w1 instead"), where neither
// the index nor the last lines found them.
std::vector<std::string> WindowTraces(const GotraceFinishRequest& req, const struct stat* stamp,
                                      const std::set<std::string>& written) {
  std::vector<std::string> out;
  WindowTracesIn(req, req.outdir, stamp, written, &out);
  for (const std::string& dir : PrivateTmpDirs(req.outdir))
    WindowTracesIn(req, dir, stamp, written, &out);
  std::sort(out.begin(), out.end());
  return out;
}

// Each process's trace windows, by pid, in window order: a window is named
// after its process's trace, OUT.w<n> for the run's first process,
// OUT.<pid>.w<n> for the others (OUT.<pid>.<image>.w<n> for an exec'd
// image), the pid where the template puts it with %p. So a window is the
// process's whose pid is the first number in its name (after the run's
// prefix) that is the pid of a process of the run; the first process's if
// none is.
std::map<uint32_t, std::vector<std::string>> WindowsByPid(const std::vector<std::string>& windows,
                                                          const std::string& prefix,
                                                          const std::set<uint32_t>& pids,
                                                          uint32_t root) {
  std::map<uint32_t, std::vector<std::pair<uint64_t, std::string>>> numbered;
  for (const std::string& path : windows) {
    const std::string name = Base(path);
    // OUT....w<n>: window n; otherwise the recording from the start (0).
    const size_t suffix = WindowSuffix(name);
    const size_t w = suffix != std::string::npos ? suffix : name.size();
    const uint64_t n = w < name.size() ? std::strtoull(name.c_str() + w + 2, nullptr, 10) : 0;
    uint32_t pid = root;
    for (size_t i = std::min(prefix.size(), w); i < w;) {
      if (name[i] < '0' || name[i] > '9') {
        ++i;
        continue;
      }
      const size_t end = name.find_first_not_of("0123456789", i);
      const uint64_t v = std::strtoull(name.substr(i, end - i).c_str(), nullptr, 10);
      if (v <= 0xffffffffu && pids.count(static_cast<uint32_t>(v)) != 0) {
        pid = static_cast<uint32_t>(v);
        break;
      }
      i = end;
    }
    numbered[pid].emplace_back(n, path);
  }
  std::map<uint32_t, std::vector<std::string>> out;
  for (auto& [pid, v] : numbered) {
    std::sort(v.begin(), v.end());
    for (auto& [n, path] : v) out[pid].push_back(std::move(path));
  }
  return out;
}

// The control sockets (<pid>.sock) that processes which are gone left: a
// process cannot remove the one it made before it gave up root (setpriv
// and su exec their program as another user, which makes its own in its
// own directory), nor one killed by SIGKILL (a killed worker's, in
// /tmp/gotrace-65534). They stayed until another channel's sweep. At the
// run's end every such socket this user may remove goes: in its
// XDG_RUNTIME_DIR/gotrace and in every /tmp/gotrace-<uid>, a <pid>.sock of
// a pid that is gone and that nobody answers on (a process in another pid
// namespace sharing the directory would).
void RemoveDeadChannels() {
  std::vector<std::string> dirs;
  char dir[256];
  if (control::DirFor(getenv("XDG_RUNTIME_DIR"), static_cast<uint32_t>(geteuid()), dir, sizeof dir))
    dirs.emplace_back(dir);
  for (std::string& d : PrivateTmpDirs(dirs.empty() ? "" : dirs[0])) dirs.push_back(std::move(d));
  for (const std::string& d : dirs) {
    DIR* dd = opendir(d.c_str());
    if (dd == nullptr) continue;  // another user's, and we are not root
    for (dirent* e; (e = readdir(dd)) != nullptr;) {
      const std::string name = e->d_name;
      const uint64_t pid = control::SocketPid(e->d_name);
      if (pid == 0 || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
      const std::string path = d + "/" + name;
      struct stat st {};
      if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
      struct sockaddr_un addr {};
      addr.sun_family = AF_UNIX;
      if (path.size() >= sizeof addr.sun_path) continue;
      std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
      const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (c < 0) continue;
      const bool refused = connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 &&
                           errno == ECONNREFUSED;
      close(c);
      if (refused) unlink(path.c_str());
    }
    closedir(dd);
  }
}

int FinishRun(const GotraceFinishRequest& req) {
  const double t0 = NowSeconds();
  // The run's stamp, before the marker goes (the first pass below).
  struct stat run_stamp_buf {};
  const struct stat* run_stamp = Stamp(req, &run_stamp_buf);
  const char* prog = req.prog_name != nullptr ? req.prog_name : "tracewrap";
  // No log is claimed ahead from now on; those claimed are renamed (.run),
  // out of FindLogs' sight, and join the items below.
  {
    std::lock_guard lock(g_ahead.mu);
    g_ahead.closed = true;
  }
  std::vector<Item> items;
  std::set<std::string> seen;
  int running = 0, empty_killed = 0, unwritten = 0;
  // Twice: once while the marker exists (every process that ends now leaves
  // its log to us), once after it is gone, for the logs of processes that
  // ended in between (a process that ends after that encodes its own).
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      if (req.alive_path != nullptr) unlink(req.alive_path);
    }
    std::vector<Item> found = FindLogs(req, seen);
    if (found.empty()) continue;
    std::vector<Status> read(found.size(), Status::Ok());
    bool incomplete = false;
    for (size_t i = 0; i < found.size(); ++i) {
      read[i] = SummarizeLog(found[i].log, req.block_threshold_ns, &found[i].sum);
      incomplete = incomplete || !found[i].sum.complete;
    }
    // A log without its end record is a killed process's, or a live one's
    // (still running): the live ones hold their logs open. Processes killed
    // with the program may take a moment to close theirs: held open is live
    // only if it stays open. (Only then: scanning every process's
    // descriptors was a fifth of a short run's finish.)
    // A process that was still ending may have written its end (or, having
    // just made its log, its header) since it was read: each scan of the
    // open files is followed by a new read of the logs still incomplete.
    // Read before the scan only, a log its process finished and closed in
    // between was neither complete nor open: a killed process's, "recovered"
    // with no exit status (a group SIGTERM of `yes | cat` under load, 4 runs
    // of 8), or with pid 0 when its header came late.
    auto reread = [&] {
      for (size_t i = 0; i < found.size(); ++i) {
        if (found[i].sum.complete) continue;
        found[i].sum = LogSummary{};
        read[i] = SummarizeLog(found[i].log, req.block_threshold_ns, &found[i].sum);
      }
    };
    std::set<std::string> open;
    if (incomplete) {
      open = OpenFiles("", ".gtlog");
      reread();
    }
    for (int tries = 0; tries < 5 && pass == 0 && incomplete; ++tries) {
      bool any = false;
      for (const Item& it : found) {
        if (it.sum.complete) continue;
        char real[4096];
        const std::string resolved = realpath(it.log.c_str(), real) ? real : it.log;
        any = any || open.count(resolved) > 0;
      }
      if (!any) break;
      usleep(100'000);
      open = OpenFiles("", ".gtlog");
      reread();
    }
    std::vector<size_t> jobs;
    for (size_t i = 0; i < found.size(); ++i) {
      Item& it = found[i];
      const Status& st = read[i];
      seen.insert(it.log);
      it.readable = st.ok();
      if (!it.sum.complete) {
        char real[4096];
        const std::string resolved = realpath(it.log.c_str(), real) ? real : it.log;
        if (open.count(resolved) || open.count(it.log)) {
          it.running = true;  // a live process's: it writes its own trace when it ends
          continue;
        }
        it.killed = true;
      }
      if (!it.readable && !it.killed) {
        it.error = st.message();
      }
      // A descendant that recorded nothing worth showing: no trace file.
      it.quiet = QuietLog(it, req);
      if (!Claim(it) || it.quiet) continue;
      jobs.push_back(items.size() + (&it - found.data()));
    }
    SetKilledEnds(found, items, req);
    const size_t base = items.size();
    for (Item& it : found) items.push_back(std::move(it));
    (void)base;
    EncodeAll(items, jobs, req);
  }

  // The quiet processes that never made a log (staging): the journal's
  // entries, read once every process of the run that ended has written its
  // own (the marker is gone).
  if (req.alive_path != nullptr) {
    const std::string journal = std::string(req.alive_path) + log::kQuietJournalSuffix;
    std::vector<log::QuietEntry> entries;
    if (!ReadQuietJournal(journal, &entries) && !req.quiet)
      std::fprintf(stderr, "%s: warning: %s is damaged: the quiet processes after the damage are not listed\n",
                   prog, journal.c_str());
    unlink(journal.c_str());
    // An exec that failed takes its kQuietSkipped entry back.
    std::set<std::pair<uint32_t, uint32_t>> retracted;
    for (const log::QuietEntry& e : entries)
      if (e.h.flags & log::kQuietRetract) retracted.emplace(e.h.pid, e.h.image);
    for (log::QuietEntry& e : entries) {
      if (e.h.flags & log::kQuietRetract) continue;
      const bool skipped = (e.h.flags & log::kQuietSkipped) != 0;
      if (skipped && retracted.count({e.h.pid, e.h.image})) continue;
      Item it;
      it.readable = true;
      // Ended paused: not quiet, not recording; its windows are its traces.
      it.paused = (e.h.flags & log::kQuietPaused) != 0;
      it.quiet = !it.paused;
      it.no_events = it.paused;  // no log: nothing to encode, nothing failed
      LogSummary& m = it.sum;
      m.pid = e.h.pid;
      m.ppid = e.h.ppid;
      m.start_ns = e.h.start_ns;
      m.end_ns = std::max(e.h.end_ns, e.h.start_ns);
      m.complete = true;
      m.argv = std::move(e.argv);
      m.exe = std::move(e.exe);
      m.descendant = (e.h.flags & log::kQuietDescendant) != 0;
      if (e.h.exit_status == log::kQuietNoStatus) {
        m.exit_status = -1;
      } else if (e.h.exit_status & log::kExitExec) {
        m.exec_d = true;
      } else {
        m.exit_status = static_cast<int64_t>(e.h.exit_status & 0xffff);
      }
      m.child_exits = std::move(e.children);
      m.skipped = skipped;
      m.foreign = skipped && (e.h.flags & log::kQuietForeign) != 0;
      m.no_preload = skipped && (e.h.flags & log::kQuietNoPreload) != 0;
      if (skipped) m.end_ns = 0;  // its reaping, found below
      m.threads = skipped ? 0 : 1;
      m.records = e.h.records;
      items.push_back(std::move(it));
    }
  }

  // The logs encoded ahead, the last of them finished meanwhile.
  for (Item& it : TakeAheadItems()) items.push_back(std::move(it));

  // Give back or remove the logs. A log that stays (GOTRACE_KEEP_LOG, or one
  // that could not be encoded) goes next to its trace, out of the
  // launcher's log directory.
  for (Item& it : items) {
    if (it.claimed.empty()) continue;
    const bool keep = KeepLog(it, req);
    if (!keep) {
      unlink(it.claimed.c_str());
      continue;
    }
    const std::string dest = it.trace + ".gtlog";
    if (req.log_dir == nullptr || rename(it.claimed.c_str(), dest.c_str()) == 0) {
      if (req.log_dir == nullptr) rename(it.claimed.c_str(), it.log.c_str());
      if (req.log_dir != nullptr) it.log = dest;
      continue;
    }
    if (CopyFile(it.claimed, dest)) {
      unlink(it.claimed.c_str());
      it.log = dest;
    } else {
      rename(it.claimed.c_str(), it.log.c_str());
    }
  }

  // The program itself is always one of the run's processes, even with no
  // log of its own to say so: recording paused (--paused: its windows are
  // traces it wrote itself), or a library that turned itself off.
  if (req.root_pid > 0 && std::none_of(items.begin(), items.end(), [&](const Item& it) {
        return static_cast<int>(it.sum.pid) == req.root_pid;
      })) {
    Item it;
    it.readable = true;
    it.no_events = true;  // no log: nothing to encode, nothing failed
    it.sum.pid = static_cast<uint32_t>(req.root_pid);
    it.sum.ppid = static_cast<uint32_t>(getpid());
    it.sum.start_ns = req.start_ns;
    it.sum.end_ns = std::max(req.end_ns, req.start_ns);
    it.sum.complete = true;
    for (const char* const* a = req.argv; a != nullptr && *a != nullptr; ++a)
      it.sum.argv.emplace_back(*a);
    it.sum.exit_status = req.root_status;
    items.insert(items.begin(), std::move(it));
  }

  // Exit statuses a process could not record itself (killed, or not traced
  // at all): its parent's; and a program that was not traced ended when it
  // was reaped (the first reaping after it started: pids are reused).
  // A child a traced parent reaped that left nothing of its own: killed
  // by SIGKILL before it recorded anything (staged, in memory) or before it
  // could write its journal entry (a sweep's `sh -c 'sh -c "kill -9 $$"'`:
  // "2 processes ran" where 3 did, and the children of such a process had
  // a parent the index did not list). Listed from its reaping: its status,
  // its parent, no start.
  if (req.follow) {
    std::vector<Item> lost;
    for (const Item& parent : items) {
      for (const log::ChildExit& c : parent.sum.child_exits) {
        if (c.end_ns == 0) continue;
        auto same = [&c](const Item& it) {
          return it.sum.pid == c.pid && it.sum.start_ns <= c.end_ns;
        };
        if (std::any_of(items.begin(), items.end(), same) ||
            std::any_of(lost.begin(), lost.end(), same))
          continue;
        Item it;
        it.readable = true;
        it.no_events = true;  // no log: nothing to encode, nothing failed
        it.start_unknown = true;
        it.killed = WIFSIGNALED(c.status);
        it.quiet = !it.killed;
        it.sum.pid = c.pid;
        it.sum.ppid = parent.sum.pid;
        it.sum.start_ns = c.end_ns;
        it.sum.end_ns = c.end_ns;
        it.sum.complete = true;
        it.sum.descendant = true;
        it.sum.exit_status = c.status;
        lost.push_back(std::move(it));
      }
    }
    for (Item& it : lost) items.push_back(std::move(it));
  }

  Reapings reaped;
  for (const Item& it : items) AddReapings(it, &reaped);
  auto reaping = [&reaped](const Item& it) { return ReapingOf(reaped, it); };
  for (Item& it : items) {
    if (!it.sum.skipped) continue;
    if (const log::ChildExit* c = reaping(it); c != nullptr && c->end_ns != 0) it.sum.end_ns = c->end_ns;
  }
  auto status_of = [&](const Item& it) -> int64_t {
    if (it.sum.exit_status >= 0) return it.sum.exit_status;
    if (it.sum.exec_d) return -1;
    if (static_cast<int>(it.sum.pid) == req.root_pid) return req.root_status;
    const log::ChildExit* c = reaping(it);
    return c != nullptr ? c->status : -1;
  };
  // A fork child with a trace says its command line at its end (its title,
  // as a server's workers set it); one killed first (SIGKILL, a CI
  // timeout), or still running when the run ends (a daemon's fork), has
  // said nothing yet: its parent's, as README promises when the child's
  // own cannot be read (the latest parent of that pid that began before
  // it: pids are reused).
  for (Item& it : items) {
    if (!it.sum.argv.empty() || it.quiet || it.sum.skipped || !(it.killed || it.running)) continue;
    const Item* parent = nullptr;
    for (const Item& p : items) {
      if (p.sum.pid != it.sum.ppid || p.sum.argv.empty() || p.sum.start_ns > it.sum.start_ns)
        continue;
      if (parent == nullptr || p.sum.start_ns > parent->sum.start_ns) parent = &p;
    }
    if (parent != nullptr) {
      it.sum.argv = parent->sum.argv;
      if (it.sum.exe.empty()) it.sum.exe = parent->sum.exe;
    }
  }
  // A duration is known unless the process was not traced and nobody traced
  // reaped it.
  auto duration_of = [&](const Item& it) -> int64_t {
    if ((it.sum.skipped && it.sum.end_ns == 0) || it.start_unknown) return -1;
    return static_cast<int64_t>(it.sum.end_ns - std::min(it.sum.end_ns, it.sum.start_ns));
  };

  // The trace windows (--paused, --ctl, the flight recorder's snapshots),
  // which the processes wrote themselves, by process.
  std::set<std::string> written;
  for (const Item& it : items)
    if (it.encoded) written.insert(it.written);
  const std::vector<std::string> window_files =
      req.control ? WindowTraces(req, run_stamp, written) : std::vector<std::string>();
  std::map<uint32_t, std::vector<std::string>> windows;
  if (!window_files.empty()) {
    std::set<uint32_t> pids;
    for (const Item& it : items) pids.insert(it.sum.pid);
    windows = WindowsByPid(window_files, req.prefix != nullptr ? req.prefix : "", pids,
                           static_cast<uint32_t>(req.root_pid));
  }

  // Lines.
  int traces = 0, quiet = 0, killed_traces = 0;
  // Not traced: learned quiet (skipped_items), beyond LD_PRELOAD's reach
  // (foreign_items), started without the library (no_preload_items).
  std::vector<const Item*> quiet_items, skipped_items, foreign_items, no_preload_items;
  for (const Item& it : items) {
    if (it.encoded) ++traces;
    if (it.sum.foreign) {
      foreign_items.push_back(&it);
    } else if (it.sum.no_preload) {
      no_preload_items.push_back(&it);
    } else if (it.sum.skipped) {  // quiet too (no trace), counted apart
      skipped_items.push_back(&it);
    } else if (it.quiet) {
      ++quiet;
      quiet_items.push_back(&it);
    }
    if (it.running) ++running;
  }
  // Paths as the user named the output: relative to the working directory
  // if the name was.
  char cwd[4096];
  const std::string here =
      req.relative_paths && getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" : "";
  auto shown = [&](const std::string& p) {
    return !here.empty() && p.compare(0, here.size(), here) == 0 ? p.substr(here.size()) : p;
  };
  for (const Item& it : items) {
    if (it.running || it.quiet) continue;
    if (it.killed) {
      if (it.encoded) {
        ++killed_traces;
        // A process whose log has no end but that exited with a status (its
        // parent's wait, or ours for the program) was not killed: it ended
        // by the exit_group system call itself, past libc's exit and its
        // handlers, as Go's runtime ends every Go program.
        const int64_t st = status_of(it);
        const bool exited = st >= 0 && !it.sum.exec_d && WIFEXITED(static_cast<int>(st));
        if (req.quiet) {
          // (nothing to say)
        } else if (exited) {
          // Not "recovered": nothing went wrong (a Go program's every run).
          std::fprintf(stderr,
                       "%s: wrote %s (%s events) from the log of a process that ended by a raw "
                       "exit_group system call (status %d), as Go programs end; view with: go "
                       "tool trace %s\n",
                       prog, shown(it.written).c_str(), Grouped(it.stats.events).c_str(),
                       WEXITSTATUS(static_cast<int>(st)), shown(it.written).c_str());
        } else {
          std::fprintf(stderr, "%s: recovered %s (%s events) from the log of a process killed before it could write it\n",
                       prog, it.written.c_str(), Grouped(it.stats.events).c_str());
        }
      } else if (it.no_events) {
        ++empty_killed;
      } else {
        std::fprintf(stderr, "%s: could not recover a trace from %s (try: gotrace recover %s -o %s)\n",
                     prog, it.log.c_str(), it.log.c_str(), it.trace.c_str());
      }
      continue;
    }
    if (!it.encoded && !it.no_events) {
      ++unwritten;
      std::fprintf(stderr, "%s: could not write %s: %s (the log is kept: gotrace encode %s -o %s)\n",
                   prog, it.trace.c_str(), it.error.c_str(), it.log.c_str(), it.trace.c_str());
    }
    for (const auto& w : it.stats.warnings)
      if (!req.quiet) std::fprintf(stderr, "gotrace: warning: %s\n", w.c_str());
  }
  // The program's own trace: the line the process itself printed before.
  const double secs = NowSeconds() - t0;
  if (!req.quiet) {
    for (const Item& it : items) {
      if (!it.encoded || it.killed || static_cast<int>(it.sum.pid) != req.root_pid || it.sum.exec_d)
        continue;
      const std::string p = shown(it.written);
      std::string word;
      ShellWord(p, [&word](std::string_view piece) { word += piece; });
      std::fprintf(stderr,
                   "gotrace: wrote %s (%s %s, %s events, %s; scheduling %s) in %.2f s; view with: "
                   "go tool trace %s\n",
                   p.c_str(), Grouped(it.stats.model.threads).c_str(),
                   it.stats.model.threads == 1 ? "thread" : "threads",
                   Grouped(it.stats.events).c_str(), HumanBytes(it.stats.bytes).c_str(),
                   it.stats.model.kernel_processes > 0 ? "from the kernel" : "inferred", secs,
                   word.c_str());
      if (it.stats.model.dropped_records > 0)
        std::fprintf(
            stderr,
            "gotrace: the trace has gaps: %s records dropped (recording stopped, or the log "
            "could not be written: the process said which)\n",
            Grouped(it.stats.model.dropped_records).c_str());
      if (const std::string k = KernelLossLine(it.stats.model); !k.empty())
        std::fprintf(stderr, "gotrace: %s\n", k.c_str());
    }
  }

  if (req.control) RemoveDeadChannels();

  // The index: every process of the run.
  std::vector<const Item*> procs;
  for (const Item& it : items)
    if (it.readable || it.killed) procs.push_back(&it);
  std::sort(procs.begin(), procs.end(), [](const Item* a, const Item* b) {
    return a->sum.start_ns != b->sum.start_ns ? a->sum.start_ns < b->sum.start_ns : a->log < b->log;
  });
  // Next to the program's own trace: TRACE.index.json (its numbered name
  // if the name was taken).
  std::string index_path = req.index_path != nullptr ? req.index_path : "";
  for (const Item& it : items) {
    // (Only an index named after that trace: with %e in the name it is
    // the started program's, not the image it exec'd, README's -o.)
    if (!index_path.empty() && static_cast<int>(it.sum.pid) == req.root_pid && !it.sum.exec_d &&
        it.encoded && it.written != it.trace && index_path == it.trace + ".index.json") {
      index_path = it.written + ".index.json";
    }
  }
  if (!index_path.empty()) {
    std::string j = "{\n  \"version\": 1,\n  \"command\": [";
    for (const char* const* a = req.argv; a != nullptr && *a != nullptr; ++a)
      j += (a == req.argv ? "" : ", ") + JsonString(*a);
    j += "],\n  \"duration_ns\": " + std::to_string(req.end_ns - req.start_ns) +
         ",\n  \"exit\": " + StatusJson(req.root_status, false) +
         ",\n  \"traces\": " + std::to_string(traces) + ",\n  \"quiet\": " + std::to_string(quiet) +
         ",\n  \"not_traced\": " +
         std::to_string(skipped_items.size() + foreign_items.size() + no_preload_items.size()) +
         ",\n  \"running\": " + std::to_string(running) + ",\n  \"processes\": [";
    for (size_t i = 0; i < procs.size(); ++i) {
      const Item& it = *procs[i];
      const uint64_t start = it.sum.start_ns > req.start_ns ? it.sum.start_ns - req.start_ns : 0;
      j += i == 0 ? "\n" : ",\n";
      j += "    {\"pid\": " + std::to_string(it.sum.pid) + ", \"ppid\": " + std::to_string(it.sum.ppid);
      j += ", \"argv\": [";
      for (size_t a = 0; a < it.sum.argv.size(); ++a)
        j += (a ? ", " : "") + JsonString(it.sum.argv[a]);
      j += "], \"exe\": " + JsonString(it.sum.exe);
      j += ", \"start_ns\": " + (it.start_unknown ? std::string("null") : std::to_string(start));
      const int64_t duration = duration_of(it);
      j += ", \"duration_ns\": " + (duration >= 0 ? std::to_string(duration) : std::string("null"));
      j += ", \"exit\": " + StatusJson(status_of(it), it.sum.exec_d);
      j += ", \"trace\": " + (it.encoded ? JsonString(Base(it.written)) : std::string("null"));
      j += ", \"quiet\": " + std::string(it.quiet && !it.sum.skipped ? "true" : "false");
      j += ", \"traced\": " + std::string(it.sum.skipped ? "false" : "true");
      j += ", \"recovered\": " + std::string(it.killed && it.encoded ? "true" : "false");
      j += ", \"running\": " + std::string(it.running ? "true" : "false");
      j += ", \"threads\": " + std::to_string(it.encoded ? it.stats.model.threads : it.sum.threads);
      j += ", \"events\": " + std::to_string(it.encoded ? it.stats.events : 0);
      j += ", \"records\": " + std::to_string(it.sum.records);
      // Its trace windows, in order (the last one may be its trace, written
      // from the log it left recording).
      j += ", \"windows\": [";
      if (const auto w = windows.find(it.sum.pid); w != windows.end() && !it.sum.exec_d) {
        for (size_t k = 0; k < w->second.size(); ++k)
          j += (k ? ", " : "") +
               JsonString(DirOf(w->second[k]) == req.outdir ? Base(w->second[k]) : w->second[k]);
      }
      j += "]";
      j += "}";
    }
    j += "\n  ]\n}\n";
    const std::string tmp = index_path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f != nullptr && std::fwrite(j.data(), 1, j.size(), f) == j.size() && std::fclose(f) == 0) {
      chmod(tmp.c_str(), 0600);
      rename(tmp.c_str(), index_path.c_str());
    } else {
      if (f != nullptr) std::fclose(f);
      unlink(tmp.c_str());
      std::fprintf(stderr, "%s: cannot write %s: %s\n", prog, index_path.c_str(), std::strerror(errno));
    }
  }

  if (!req.quiet) {
    if (running > 0)
      std::fprintf(stderr, "%s: %d process(es) of the run are still running; each writes its trace when it ends\n",
                   prog, running);
    if (empty_killed > 0)
      std::fprintf(stderr, "%s: %d killed process(es) had recorded nothing yet and left no trace\n",
                   prog, empty_killed);
    // (A trace that could not be written has its line above, with the
    // command that writes it: it recorded something.)
    // Recording paused (--paused, --ctl): the windows are the run's traces,
    // written by the processes themselves as each closed.
    auto say_windows = [&] {
      if (window_files.empty()) return;
      std::string list;
      for (size_t i = 0; i < window_files.size() && i < 4; ++i)
        list += (i ? ", " : "") + shown(window_files[i]);
      if (window_files.size() > 4)
        list += ", ... (" + std::to_string(window_files.size()) + " in all)";
      std::fprintf(stderr, "%s: the run's trace windows: %s\n", prog, list.c_str());
    };
    const auto ended_paused =
        std::count_if(items.begin(), items.end(), [](const Item& it) { return it.paused; });
    auto say_no_trace = [&] {
      if (traces != 0 || empty_killed != 0 || running != 0 || unwritten != 0 ||
          !window_files.empty())
        return;
      if (ended_paused != 0) {
        // (Paused processes recorded nothing but windows, and none was
        // opened: "recorded nothing ... a line above says why" misled.)
        std::fprintf(stderr,
                     "%s: no trace was written: the run's processes were paused and no trace "
                     "window was opened (gotrace ctl PID start, or --signal, opens one)\n",
                     prog);
        return;
      }
      std::fprintf(stderr,
                   "%s: no trace was written to %s/%s*: the tracer recorded nothing (a line above "
                   "says why if it turned itself off; or the program ran another with LD_PRELOAD "
                   "removed from its environment, as env -i does, before recording anything)\n",
                   prog, req.outdir, req.prefix);
    };
    if (procs.size() > 1 && req.follow) {
      // The table: the processes that did the most, then the quiet ones.
      std::vector<const Item*> shown_procs;
      for (const Item* it : procs)
        if (it->encoded) shown_procs.push_back(it);
      std::stable_sort(shown_procs.begin(), shown_procs.end(), [](const Item* a, const Item* b) {
        return a->stats.events > b->stats.events;
      });
      std::string not_traced;
      if (ended_paused > 0) {
        not_traced = ", " + std::to_string(ended_paused) + " ended paused (" +
                     (window_files.empty() ? "no trace window was opened"
                                           : "their trace windows are below") +
                     ")";
      }
      if (!skipped_items.empty())
        not_traced += ", " + std::to_string(skipped_items.size()) +
                      " not traced (learned quiet earlier in the run; --every-process traces them)";
      if (!no_preload_items.empty())
        not_traced += ", " + std::to_string(no_preload_items.size()) +
                      " not traced (started with an environment without the library: env -i, "
                      "or a program's own environment for it)";
      if (!foreign_items.empty())
        not_traced +=
            ", " + std::to_string(foreign_items.size()) +
            " not traceable (static, or of another ELF class: LD_PRELOAD cannot reach them)";
      // Processes, not the rows (a process that execs has a row per image:
      // `sh -c 'exec env true'` is one process, three images).
      std::set<uint32_t> pids;
      for (const Item* it : procs) pids.insert(it->sum.pid);
      // The counts that follow are of program images (an exec'd image is
      // traced or not on its own): "3 processes ran, 5 program images: ...".
      const std::string images = pids.size() == procs.size()
                                     ? ""
                                     : ", " + std::to_string(procs.size()) + " program images";
      std::fprintf(stderr, "%s: %zu %s ran%s: %d traced, %d quiet (no trace of their own)%s%s%s\n",
                   prog, pids.size(), pids.size() == 1 ? "process" : "processes", images.c_str(),
                   traces, quiet, not_traced.c_str(),
                   index_path.empty() ? "" : "; index: ", shown(index_path).c_str());
      const size_t rows = std::min<size_t>(shown_procs.size(), 8);
      if (rows > 0)
        std::fprintf(stderr, "  %7s %7s %6s %9s %10s  %s\n", "pid", "ppid", "exit", "time",
                     "events", "command");
      for (size_t i = 0; i < rows; ++i) {
        const Item& it = *shown_procs[i];
        std::string cmd = Printable(CompactCommandLine(it.sum.argv, 40));
        if (cmd.empty()) cmd = Printable(Base(it.sum.exe));
        if (cmd.size() > 40) cmd = cmd.substr(0, 37) + "...";
        // (A short process's time is "400.0 us", not "0.000s".)
        std::fprintf(stderr, "  %7u %7u %6s %9s %10s  %s\n", it.sum.pid, it.sum.ppid,
                     StatusText(status_of(it), it.sum.exec_d).c_str(),
                     HumanDuration(std::max<int64_t>(0, duration_of(it))).c_str(),
                     Grouped(it.stats.events).c_str(), cmd.c_str());
      }
      if (shown_procs.size() > rows)
        std::fprintf(stderr, "  ... and %zu more %s\n", shown_procs.size() - rows,
                     shown_procs.size() - rows == 1 ? "trace" : "traces");
      auto by_name = [](const std::vector<const Item*>& v) {
        std::map<std::string, int> counts;
        // A fork's image (a subshell, a shell's child before its exec) has
        // no command line of its own.
        for (const Item* it : v) {
          const std::string name =
              Printable(it->sum.argv.empty() ? Base(it->sum.exe) : Base(it->sum.argv[0]));
          ++counts[name.empty() ? "(fork)" : name];
        }
        std::string list;
        for (const auto& [name, n] : counts)
          list += (list.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
        if (list.size() > 200) list = list.substr(0, 197) + "...";
        return list;
      };
      if (!quiet_items.empty()) std::fprintf(stderr, "  quiet: %s\n", by_name(quiet_items).c_str());
      if (!skipped_items.empty())
        std::fprintf(stderr, "  not traced: %s\n", by_name(skipped_items).c_str());
      if (!foreign_items.empty())
        std::fprintf(stderr, "  not traceable: %s\n", by_name(foreign_items).c_str());
      if (!no_preload_items.empty())
        std::fprintf(stderr, "  without the library: %s\n", by_name(no_preload_items).c_str());
      say_no_trace();
      say_windows();
    } else if (!window_files.empty()) {
      say_windows();
    } else if (const char* start = getenv("GOTRACE_START");
               traces == 0 && start != nullptr && std::strcmp(start, "paused") == 0) {
      // (The program started paused and no window was opened: nothing was
      // meant to be recorded; "recorded nothing ... LD_PRELOAD removed"
      // misled.)
      std::fprintf(stderr,
                   "%s: no trace was written: the program started paused and no trace window was "
                   "opened (gotrace ctl PID start, or --signal, opens one)\n",
                   prog);
    } else {
      say_no_trace();
    }
  }
  return traces;
}

using Clock = std::chrono::steady_clock;

// Waits until `ms` milliseconds after `start`, or until wake_fd is readable
// (the program ended).
void WaitUntil(Clock::time_point start, int ms, int wake_fd) {
  for (;;) {
    const auto left =
        ms - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    pollfd w = {wake_fd, POLLIN, 0};
    if (left <= 0 || wake_fd < 0 || poll(&w, 1, static_cast<int>(left)) >= 0 || errno != EINTR)
      return;
  }
}

// The program and libraries the run's program has mapped now (executable
// mappings of files, from /proc/PID/maps), less those in `seen`, which
// gains them.
std::vector<std::string> MappedFiles(int pid, std::set<std::string>* seen) {
  std::vector<std::string> files;
  const std::string maps = "/proc/" + std::to_string(pid) + "/maps";
  FILE* f = std::fopen(maps.c_str(), "re");
  if (f == nullptr) return files;
  char line[PATH_MAX + 128];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    // "lo-hi perms offset dev inode   path"
    char perms[8] = "";
    int path_at = 0;
    if (std::sscanf(line, "%*s %7s %*s %*s %*s %n", perms, &path_at) != 1 || path_at == 0 ||
        perms[2] != 'x' || line[path_at] != '/') {
      continue;
    }
    std::string path = line + path_at;
    if (!path.empty() && path.back() == '\n') path.pop_back();
    if (EndsWith(path, " (deleted)")) continue;
    if (seen->insert(path).second) files.push_back(std::move(path));
  }
  std::fclose(f);
  return files;
}

// The run's end waits for the program's trace, and for a program that runs
// long enough most of that wait was reading its files (python3's symbol
// table indexed, libc's, a C++ program's DWARF decompressed): 4 of the 7 ms
// a traced python3 waited after it ended. So while the program runs, on this
// thread's idle CPU time, the files it has mapped are read in and indexed
// for the end (SharedSymbols::Warm; the traces do not change). Looked at a
// few times in the first two seconds (a shim that execs the real program
// maps other files later), each time only what is new.
void WarmProgramFiles(const GotraceFinishRequest& req, Clock::time_point start,
                      const std::function<bool()>& stopped, int wake_fd) {
  if (wake_fd < 0) return;  // nothing to wait with
  constexpr int kLookAtMs[] = {25, 50, 100, 200, 400, 800, 1600};
  std::set<std::string> seen;
  for (const int at : kLookAtMs) {
    WaitUntil(start, at, wake_fd);
    if (stopped()) return;
    const std::vector<std::string> files = MappedFiles(req.root_pid, &seen);
    if (files.empty()) continue;
    (void)RunOptions(req);  // makes the run's symbols
    for (const std::string& file : files) {
      if (stopped()) return;
      g_encoder.symbols->Warm(file);
    }
  }
}

// Problem (issue 18): the launcher encoded every log once the program had
// ended, so a long job's logs all waited in the log directory (tmpfs:
// memory) and its end waited for all of their encodes. Each log is complete
// when its process ends, and then nothing writes it again: the kernel says
// when (inotify: the last writer's descriptor and mappings are gone,
// IN_CLOSE_WRITE). Encoding each one at once, on CPUs the program left idle,
// cost a build that keeps every CPU busy more than it saved (make -j2 on 2
// CPUs: 1.096 of untraced against 1.078, 25 interleaved rounds: the
// encoder's work beside the compilers', the traces' files written
// meanwhile). So ended logs wait until they add up to the backlog
// (GOTRACE_ENCODE_AHEAD MiB, default 64), and then are encoded together,
// with the run's symbol cache, and removed: a build's logs (10 MB) stay for
// the end as before, a long job's are bounded. A log that is not complete
// then (a killed process's) is left for the end, which recovers it as
// before; so is everything after *stop.
void FinishAhead(const GotraceFinishRequest& req, const int* stop, int wake_fd) {
  const Clock::time_point start = Clock::now();
  auto stopped = [&] { return __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0; };
  WarmProgramFiles(req, start, stopped, wake_fd);
  uint64_t backlog_limit = uint64_t{64} << 20;
  if (const char* v = std::getenv("GOTRACE_ENCODE_AHEAD"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(v, &end, 10);
    if (end != v && *end == '\0' && mb <= (uint64_t{1} << 30)) {
      backlog_limit = mb << 20;
    } else {
      std::fprintf(stderr, "%s: ignoring GOTRACE_ENCODE_AHEAD='%s': expected a number of MiB\n",
                   req.prog_name != nullptr ? req.prog_name : "tracewrap", v);
    }
  }
  if (backlog_limit == 0) return;
  // Not in a short run: closing an inotify instance waits for the kernel's
  // fsnotify grace period (synchronize_srcu), 2 to 18 ms here, which the
  // end of `tracewrap -- /bin/true` (5 ms) then waited for. A run that ends
  // within kWatchAfterMs never makes one (and never has a backlog worth
  // it); a longer one watches from then on (what ended before is the end's).
  constexpr int kWatchAfterMs = 2000;
  WaitUntil(start, kWatchAfterMs, wake_fd);
  if (stopped()) return;
  const std::string dir = LogDir(req);
  const int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (in < 0) return;
  if (inotify_add_watch(in, dir.c_str(), IN_CLOSE_WRITE) < 0) {
    close(in);
    return;
  }
  struct stat stamp_buf {};
  const struct stat* stamp = Stamp(req, &stamp_buf);
  std::map<std::string, Item> waiting;  // ended logs (by name), not yet encoded
  uint64_t backlog = 0;                 // their bytes in memory
  alignas(inotify_event) char buf[16 * 1024];
  while (!stopped()) {
    pollfd fds[2] = {{in, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int n = poll(fds, wake_fd >= 0 ? 2 : 1, wake_fd >= 0 ? -1 : 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0 || !(fds[0].revents & POLLIN)) continue;
    for (;;) {
      const ssize_t got = read(in, buf, sizeof buf);
      if (got <= 0) break;
      for (ssize_t at = 0; at < got;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
        Item it;
        uint64_t bytes = 0;
        if (e->len == 0 || waiting.count(e->name) || !RunLog(req, dir, e->name, stamp, &it, &bytes))
          continue;
        waiting.emplace(e->name, std::move(it));
        backlog += bytes;
      }
    }
    if (backlog < backlog_limit) continue;
    const EncodeOptions& opts = RunOptions(req);
    for (auto& [name, it] : waiting) {
      if (stopped()) break;
      // The program's own logs: its last image's ends with the run, and the
      // end encodes it.
      if (LogPid(it.log) == req.root_pid) continue;
      // Its process ended with it; a killed one's is left for the end.
      const Status st = SummarizeLog(it.log, req.block_threshold_ns, &it.sum);
      if (!st.ok() || !it.sum.complete) continue;
      it.readable = true;
      it.quiet = QuietLog(it, req);
      {
        std::lock_guard lock(g_ahead.mu);
        if (g_ahead.closed) break;
        ++g_ahead.in_flight;
      }
      const bool claimed = Claim(it);
      if (claimed && !it.quiet) EncodeItem(it, opts);
      // Its log is gone now rather than at the end (the end's unlink of it
      // finds nothing). One that stays is the end's to move next to its
      // trace.
      if (claimed && !KeepLog(it, req)) unlink(it.claimed.c_str());
      std::lock_guard lock(g_ahead.mu);
      if (claimed) g_ahead.items.push_back(std::move(it));
      --g_ahead.in_flight;
      g_ahead.idle.notify_all();
    }
    waiting.clear();
    backlog = 0;
  }
  close(in);
}

}  // namespace gotrace
