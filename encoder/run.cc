// SPDX-License-Identifier: Apache-2.0
//===-- encoder/run.cc - the launcher: tracewrap and `gotrace run` --------===//
//
// What scripts/tracewrap did in bash (33 ms of forks: readlink, od, stat,
// getcap, find, mktemp, then one `gotrace recover` per killed process), in
// one process with no child of its own but the program (encoder/run.h).
//===----------------------------------------------------------------------===//
#include "encoder/run.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "encoder/ctl_client.h"
#include "encoder/numbered_name.h"
#include "encoder/proc_files.h"
#include "encoder/quiet_journal.h"
#include "encoder/switch_value.h"

extern char** environ;

namespace gotrace {
namespace {

const char* g_prog = "tracewrap";

constexpr const char* kUsage =
    "usage: %s [options] [--] program [args...]\n"
    "\n"
    "Runs program with libgotrace.so preloaded. Every process of the run leaves\n"
    "its event log; when the program has ended, %s writes their traces (default\n"
    "gotrace.<pid>.trace in the current directory; an existing file is never\n"
    "overwritten), prints the program's and writes the run's index next to it\n"
    "(TRACE.index.json). Open a trace with 'go tool trace PATH'. Child processes\n"
    "that did something worth showing get PATH.<pid>; quiet ones get none. The\n"
    "exit status and signals of the program pass through. A process killed\n"
    "before it ended its log is recovered from it.\n"
    "\n"
    "options:\n"
    "  -o, --output PATH    where to write the trace; %%p = pid, %%e = executable name\n"
    "                       (child processes write PATH.<pid>)          [GOTRACE_OUT]\n"
    "      --unwind MODE    stack unwinding: auto (default), fp, libunwind or none\n"
    "                                                                [GOTRACE_UNWIND]\n"
    "      --sched MODE     where scheduling comes from: auto (the kernel's context\n"
    "                       switches where allowed, else inferred), kernel, infer\n"
    "                                                                  [GOTRACE_SCHED]\n"
    "      --cpu-hz N       CPU samples per second of CPU time, 0 for none\n"
    "                       (default 100)                            [GOTRACE_CPU_HZ]\n"
    "      --depth N        frames per stack, 1 to 128                [GOTRACE_DEPTH]\n"
    "      --events LIST    comma-separated groups to record: all, none, sync, sleep,\n"
    "                       io, heap                                 [GOTRACE_EVENTS]\n"
    "  -q, --quiet          no summary lines at exit                  [GOTRACE_QUIET]\n"
    "      --no-follow      do not trace child processes             [GOTRACE_FOLLOW]\n"
    "      --every-process  trace every child process: by default a command that\n"
    "                       ended quiet twice, or a small program quiet with three\n"
    "                       argument lists, is not traced again in the run (it\n"
    "                       is still listed in the index)   [GOTRACE_EVERY_PROCESS]\n"
    "      --exec           replace %s by the program (exec): each process\n"
    "                       writes its own trace at exit; no recovery after a kill,\n"
    "                       no index\n"
    "      --force          run a static, setuid, setgid or capability-carrying\n"
    "                       program anyway; it runs, but is not traced\n"
    "      --paused         start without recording; open and close trace windows\n"
    "                       (PATH.w1, PATH.w2, ...) with 'gotrace ctl PID start|stop'\n"
    "                       (a forked worker's: PATH.<pid>.w1, ...; 'gotrace ctl --tree'\n"
    "                       reaches a server's workers too)\n"
    "                                                    [GOTRACE_START=paused]\n"
    "      --ctl            record from the start, with the control channel open\n"
    "                       ('gotrace ctl PID stop|snapshot|start')     [GOTRACE_CTL]\n"
    "      --signal SIG     each SIG sent to %s starts or stops a trace window\n"
    "                       in the program (SIG is then not passed on to it); implies\n"
    "                       --ctl unless --paused (e.g. --signal USR2)\n"
    "      --report[=FILE]  after the program ended, 'gotrace report' on the run's\n"
    "                       traces (its index): to stderr, or into FILE (not with\n"
    "                       --exec); the exit status stays the program's\n"
    "  -h, --help           this help\n"
    "\n"
    "environment: GOTRACE_LIB names the libgotrace.so to use; the other GOTRACE_*\n"
    "variables (README.md) are passed through.\n";

[[noreturn]] void UsageError(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", g_prog, msg.c_str(), g_prog);
  std::exit(2);
}

[[noreturn]] void Die(int code, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", g_prog, msg.c_str());
  std::exit(code);
}

// A switch in the environment, as the library reads its own
// (SwitchValue): false when unset or empty; anything else says so in one
// line and is false.
bool EnvSwitch(const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return false;
  const int on = SwitchValue(v);
  if (on < 0) std::fprintf(stderr, "%s: ignoring %s='%s': expected 1 or 0\n", g_prog, name, v);
  return on == 1;
}

std::string Dir(const std::string& p) {
  const size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

bool IsFile(const std::string& p) {  // bash's [ -f ]: follows symlinks
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The directory of this binary (its real path: symlinks resolved).
std::string SelfDir() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? Dir(std::string(self, static_cast<size_t>(n))) : ".";
}

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

// A decimal number without sign, leading zeros stripped, or "" if it is not
// one or has more than `max_digits` digits.
std::string Decimal(const std::string& v, size_t max_digits) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return "";
  const size_t nz = v.find_first_not_of('0');
  const std::string d = nz == std::string::npos ? "0" : v.substr(nz);
  return d.size() > max_digits ? "" : d;
}

// --- options -----------------------------------------------------------------

// A signal by name (USR2, SIGUSR2) or number, for --signal: one that stops,
// kills or is already ours to pass on or ignore is refused.
int SignalNumber(const std::string& v) {
  std::string n = v;
  for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (n.rfind("SIG", 0) == 0) n = n.substr(3);
  static const std::pair<const char*, int> kNames[] = {
      {"HUP", SIGHUP}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"TERM", SIGTERM},
      {"WINCH", SIGWINCH}, {"URG", SIGURG}, {"PWR", SIGPWR}, {"INT", SIGINT}, {"QUIT", SIGQUIT},
      {"KILL", SIGKILL}, {"STOP", SIGSTOP}, {"CHLD", SIGCHLD}, {"TSTP", SIGTSTP}, {"CONT", SIGCONT}};
  int sig = 0;
  for (const auto& [name, num] : kNames)
    if (n == name) sig = num;
  if (sig == 0) {
    const std::string d = Decimal(n, 2);
    if (!d.empty()) sig = std::stoi(d);
  }
  if (sig <= 0 || sig >= NSIG)
    UsageError("--signal: '" + v + "' is not a signal name (e.g. USR2) or number");
  if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGINT || sig == SIGQUIT ||
      sig == SIGTSTP || sig == SIGCONT || sig == SIGTERM) {
    UsageError("--signal: " + v + " cannot be used: it stops, kills, ends or is the terminal's");
  }
  return sig;
}

struct Options {
  std::string out, unwind, sched, cpu_hz, depth, events;
  std::string report;  // --report: "-" (stderr) or a file
  bool quiet = false, force = false, follow = true, exec = false, every_process = false;
  bool paused = false, ctl = false;
  int toggle_signal = 0;  // --signal: starts/stops windows (issue 16)
};

// Parsed by hand, stopping at the first non-option (`tracewrap ls -l` passes
// -l to ls). Returns the index of the program's name.
int ParseOptions(int argc, char** argv, Options* o) {
  int i = 1;
  // The value of "--opt=value" or of the next argument; an empty value is
  // refused too: it would silently mean "not given".
  auto value = [&](const std::string& a, size_t eq) -> std::string {
    if (eq != std::string::npos) {
      const std::string v = a.substr(eq + 1);
      if (v.empty()) UsageError("option '" + a.substr(0, eq) + "' needs a value");
      return v;
    }
    if (i + 1 >= argc || argv[i + 1][0] == '\0') UsageError("option '" + a + "' needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    const std::string name = a.substr(0, eq);
    if (a == "-h" || a == "--help") {
      std::printf(kUsage, g_prog, g_prog, g_prog, g_prog);
      std::exit(0);
    } else if (a == "-o" || name == "--output") {
      o->out = value(a, eq);
    } else if (a.size() > 2 && a.compare(0, 2, "-o") == 0) {
      o->out = a.substr(2);
    } else if (name == "--unwind") {
      o->unwind = value(a, eq);
    } else if (name == "--sched") {
      o->sched = value(a, eq);
    } else if (name == "--cpu-hz") {
      o->cpu_hz = value(a, eq);
    } else if (name == "--depth") {
      o->depth = value(a, eq);
    } else if (name == "--events") {
      o->events = value(a, eq);
    } else if (a == "-q" || a == "--quiet") {
      o->quiet = true;
    } else if (a == "--no-follow") {
      o->follow = false;
    } else if (a == "--every-process") {
      o->every_process = true;
    } else if (a == "--exec") {
      o->exec = true;
    } else if (a == "--force") {
      o->force = true;
    } else if (a == "--paused") {
      o->paused = true;
    } else if (a == "--ctl") {
      o->ctl = true;
    } else if (name == "--signal") {
      o->toggle_signal = SignalNumber(value(a, eq));
    } else if (a == "--report") {
      o->report = "-";
    } else if (name == "--report") {
      o->report = a.substr(eq + 1);
      if (o->report.empty()) UsageError("option '--report' needs a value after '='");
    } else if (a == "--") {
      ++i;
      break;
    } else if (a.size() > 1 && a[0] == '-') {
      UsageError("unknown option '" + a + "'");
    } else {
      break;
    }
  }
  if (i >= argc) UsageError("no program given");
  if (!o->report.empty() && o->exec)
    UsageError("--report needs " + std::string(g_prog) + " to outlive the program: not with --exec");
  if (o->toggle_signal != 0 && o->exec)
    UsageError("--signal needs " + std::string(g_prog) + " to outlive the program: not with --exec");
  return i;
}

// The library ignores an invalid value with a warning (DESIGN.md §6); here
// we can still stop before the program runs. The accepted values match
// preload/config.cc.
void Validate(Options* o) {
  if (!o->unwind.empty() && o->unwind != "auto" && o->unwind != "fp" && o->unwind != "libunwind" &&
      o->unwind != "none") {
    UsageError("--unwind: '" + o->unwind + "' is not auto, fp, libunwind or none");
  }
  if (!o->sched.empty() && o->sched != "auto" && o->sched != "kernel" && o->sched != "infer")
    UsageError("--sched: '" + o->sched + "' is not auto, kernel or infer");
  if (!o->cpu_hz.empty()) {
    const std::string d = Decimal(o->cpu_hz, 6);
    if (d.empty() || std::stoul(d) > 100000)
      UsageError("--cpu-hz: '" + o->cpu_hz + "' is not a number from 0 to 100000");
    o->cpu_hz = d;
  }
  if (!o->depth.empty()) {
    const std::string d = Decimal(o->depth, 3);
    if (d.empty() || std::stoul(d) < 1 || std::stoul(d) > 128)
      UsageError("--depth: '" + o->depth + "' is not a number from 1 to 128");
    o->depth = d;
  }
  if (!o->events.empty()) {
    // Every comma-separated item a known group; an empty one ("sync,") too.
    const std::string all = o->events + ",";
    for (size_t at = 0; at < all.size();) {
      const size_t comma = all.find(',', at);
      const std::string item = all.substr(at, comma - at);
      if (item != "all" && item != "none" && item != "sync" && item != "sleep" && item != "io" &&
          item != "heap") {
        UsageError("--events: '" + item + "' in '" + o->events +
                   "' is not one of all, none, sync, sleep, io, heap");
      }
      at = comma + 1;
    }
  }
  if (!o->out.empty()) {
    // The library keeps templates shorter than 1024 bytes (preload/config.cc).
    if (o->out.size() >= 1024) UsageError("--output: the path must be shorter than 1024 bytes");
    struct stat out_st {};
    // (An existing directory named without its slash too: its traces went
    // next to it, named after it, odir.PID.)
    if (o->out.back() == '/' || (stat(o->out.c_str(), &out_st) == 0 && S_ISDIR(out_st.st_mode)))
      UsageError("--output: '" + o->out + "' names a directory; give a file name (e.g. " +
                 (o->out.back() == '/' ? o->out : o->out + "/") + "run.trace)");
    // The directory must exist: the library creates the file, not its
    // parents, and would only say so after the program has run. A '%' in the
    // directory part is expanded per process: not checked here.
    const std::string dir = Dir(o->out);
    if (dir.find('%') == std::string::npos) {
      struct stat st;
      if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        UsageError("--output: directory '" + dir + "' does not exist");
      if (access(dir.c_str(), W_OK) != 0) UsageError("--output: directory '" + dir + "' is not writable");
    }
  }
}

// --- the library ----------------------------------------------------------------

#ifndef GOTRACE_BIN_TO_LIBDIR
#define GOTRACE_BIN_TO_LIBDIR "../lib"
#endif

std::string FindLibrary() {
  std::string lib;
  if (const char* v = getenv("GOTRACE_LIB"); v != nullptr && *v != '\0') {
    // An explicit choice that does not exist is an error, not a reason to
    // fall back to another copy the user did not ask for.
    if (!IsFile(v)) Die(2, std::string("GOTRACE_LIB=") + v + ": no such file");
    lib = v;
  } else {
    // Next to this binary (the build directory), or where the installed
    // layout puts it relative to the bin directory.
    const std::string here = SelfDir();
    const std::vector<std::string> candidates = {here + "/libgotrace.so",
                                                 here + "/" GOTRACE_BIN_TO_LIBDIR "/libgotrace.so"};
    for (const std::string& c : candidates) {
      if (IsFile(c)) {
        lib = c;
        break;
      }
    }
    if (lib.empty()) {
      Die(2, "cannot find libgotrace.so (looked for " + candidates[0] + " " + candidates[1] +
                 "); build it with scripts/build or set GOTRACE_LIB");
    }
  }
  // Absolute: a relative LD_PRELOAD entry is resolved against the program's
  // working directory, and child processes may chdir (G15).
  const std::string real = RealPath(lib);
  if (real.empty()) Die(2, "cannot resolve " + lib);
  // ld.so splits LD_PRELOAD at spaces and colons (ld.so(8)).
  if (real.find_first_of(" :") != std::string::npos) {
    Die(2, "the library path '" + real +
               "' contains a space or ':', which LD_PRELOAD cannot express; set GOTRACE_LIB to a copy elsewhere");
  }
  // libgotrace.so and this launcher load the encoder from the same directory.
  const std::string enc = Dir(real) + "/libgotrace_encode.so";
  if (!IsFile(enc)) std::fprintf(stderr, "%s: warning: %s is missing; no trace will be written\n", g_prog, enc.c_str());
  return real;
}

// --- the program ---------------------------------------------------------------

// Like the shell: a name with a slash is a path, anything else is looked up
// in PATH (an empty entry is the current directory); the first executable
// file wins, else the first file found (which then fails as not executable).
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* p = getenv("PATH");
  std::string path = p != nullptr ? p : "/usr/local/bin:/usr/bin:/bin";
  std::string first_file;
  for (size_t at = 0; at <= path.size();) {
    size_t colon = path.find(':', at);
    if (colon == std::string::npos) colon = path.size();
    std::string dir = path.substr(at, colon - at);
    if (dir.empty()) dir = ".";
    const std::string c = dir + "/" + name;
    struct stat st;
    if (stat(c.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      if (access(c.c_str(), X_OK) == 0) return c;
      if (first_file.empty()) first_file = c;
    }
    at = colon + 1;
  }
  if (first_file.empty()) Die(127, name + ": command not found");
  return first_file;
}

// 1 if the ELF file has a PT_INTERP program header (the kernel starts ld.so
// for it, which reads LD_PRELOAD), 0 if it has none (static, including
// static-pie), -1 if it cannot tell.
int ElfHasInterp(int fd) {
  unsigned char h[64];
  if (pread(fd, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return -1;
  const bool big = h[EI_DATA] == ELFDATA2MSB;
  if (h[EI_DATA] != ELFDATA2LSB && !big) return -1;
  auto uint = [big](const unsigned char* p, int width) {
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v = (v << 8) | p[big ? i : width - 1 - i];
    return v;
  };
  uint64_t phoff, phentsize, phnum;
  if (h[EI_CLASS] == ELFCLASS32) {
    phoff = uint(h + 28, 4), phentsize = uint(h + 42, 2), phnum = uint(h + 44, 2);
  } else if (h[EI_CLASS] == ELFCLASS64) {
    phoff = uint(h + 32, 8), phentsize = uint(h + 54, 2), phnum = uint(h + 56, 2);
  } else {
    return -1;
  }
  // PN_XNUM moves the real count elsewhere; no executable has that many.
  if (phnum == 0 || phnum >= 0xffff || phentsize < 4) return -1;
  std::vector<unsigned char> ph(phnum * phentsize);
  if (pread(fd, ph.data(), ph.size(), static_cast<off_t>(phoff)) != static_cast<ssize_t>(ph.size())) return -1;
  for (uint64_t i = 0; i < phnum; ++i)
    if (uint(ph.data() + i * phentsize, 4) == PT_INTERP) return 1;
  return 0;
}

// A file's capabilities as getcap(8) writes them ("cap_net_raw=ep"), or "".
std::string FileCaps(const std::string& path) {
  uint32_t d[5] = {};
  const ssize_t n = getxattr(path.c_str(), "security.capability", d, sizeof d);
  if (n < 12) return "";
  static const char* const kNames[] = {
      "chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid", "setuid",
      "setpcap", "linux_immutable", "net_bind_service", "net_broadcast", "net_admin", "net_raw",
      "ipc_lock", "ipc_owner", "sys_module", "sys_rawio", "sys_chroot", "sys_ptrace", "sys_pacct",
      "sys_admin", "sys_boot", "sys_nice", "sys_resource", "sys_time", "sys_tty_config", "mknod",
      "lease", "audit_write", "audit_control", "setfcap", "mac_override", "mac_admin", "syslog",
      "wake_alarm", "block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore"};
  const bool effective = (d[0] & 1) != 0;
  const uint64_t permitted = d[1] | (n >= 20 ? static_cast<uint64_t>(d[3]) << 32 : 0);
  const uint64_t inheritable = d[2] | (n >= 20 ? static_cast<uint64_t>(d[4]) << 32 : 0);
  // Capabilities with the same flags are listed together.
  std::string out;
  for (int flags = 1; flags < 4; ++flags) {
    std::string names;
    for (int c = 0; c < 64; ++c) {
      const int f = ((permitted >> c) & 1) | (((inheritable >> c) & 1) << 1);
      if (f != flags) continue;
      if (!names.empty()) names += ',';
      names += c < static_cast<int>(sizeof kNames / sizeof kNames[0]) ? std::string("cap_") + kNames[c]
                                                                      : "cap_" + std::to_string(c);
    }
    if (names.empty()) continue;
    std::string set = "=";
    if (effective) set += 'e';
    if (flags & 2) set += 'i';
    if (flags & 1) set += 'p';
    out += (out.empty() ? "" : " ") + names + set;
  }
  return out.empty() ? "=" : out;
}

// This program's ELF header.
extern "C" const char __ehdr_start[] __attribute__((visibility("hidden")));

// A program LD_PRELOAD cannot reach: refused (status 2) with `reason` and
// what to do instead; with --force it runs untraced, and one line says why
// (the run's end then says no trace was written, "a line above says why").
void Unreachable(const std::string& reason, const std::string& remedy, bool force, bool quiet) {
  if (!force)
    Die(2, reason + (remedy.empty() ? "" : "; " + remedy) + " (or use --force to run it untraced)");
  if (!quiet) std::fprintf(stderr, "%s: %s; it runs untraced (--force)\n", g_prog, reason.c_str());
}

void CheckProgram(const std::string& path, bool force, bool quiet) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) Die(127, path + ": no such file or directory");
    Die(126, path + ": " + strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) Die(126, path + ": is a directory");
  if (access(path.c_str(), X_OK) != 0) Die(126, path + ": permission denied");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;  // exec says what is wrong, as the shell would
  unsigned char magic[4] = {};
  const bool have = pread(fd, magic, 4, 0) == 4;
  // A '#!' script: the kernel runs its interpreter, which ld.so loads as
  // usual, and ignores set-id bits and capabilities on scripts (execve(2)).
  if (!have || (magic[0] == '#' && magic[1] == '!')) {
    close(fd);
    return;
  }
  const bool elf = magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' && magic[3] == 'F';
  // A program of another class or machine than the library (a 32-bit
  // build): its loader cannot load libgotrace.so and said so on the
  // program's stderr ("wrong ELF class: ELFCLASS64"), then we said it
  // recorded nothing.
  unsigned char ident[20] = {};
  if (elf && pread(fd, ident, sizeof ident, 0) == static_cast<ssize_t>(sizeof ident)) {
    const auto* ours = reinterpret_cast<const unsigned char*>(&__ehdr_start);
    if (ident[EI_CLASS] != ours[EI_CLASS] || ident[EI_DATA] != ours[EI_DATA] ||
        std::memcmp(ident + 18, ours + 18, 2) != 0) {  // e_machine
      close(fd);
      Unreachable(
          path + " is " + (ident[EI_CLASS] == ELFCLASS32 ? "a 32-bit" : "another machine's") +
              " program: LD_PRELOAD cannot load this libgotrace.so into it, so it cannot be "
              "traced",
          "", force, quiet);
      return;
    }
  }
  // H28: without PT_INTERP no dynamic loader runs and LD_PRELOAD is ignored.
  if (elf && ElfHasInterp(fd) == 0) {
    close(fd);
    Unreachable(path +
                    " is statically linked: LD_PRELOAD cannot load libgotrace.so into it, so it "
                    "cannot be traced",
                "link it dynamically", force, quiet);
    return;
  }
  close(fd);
  // H29: set-id and file capabilities put ld.so in secure-execution mode,
  // where it ignores preload entries containing a slash (ld.so(8)). The
  // kernel honours set-gid only together with group execute. Secure mode is
  // what the kernel sets when the exec changes the ids or gains
  // capabilities (AT_SECURE): a setuid-root program run by root (su, sudo in
  // a root CI job) changes nothing, gains nothing, and is traced as any
  // other.
  const bool changes_uid = (st.st_mode & S_ISUID) && st.st_uid != getuid();
  const bool changes_gid =
      (st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && st.st_gid != getgid();
  const bool root = getuid() == 0 && geteuid() == 0;
  if (changes_uid) {
    Unreachable(path +
                    " is setuid: the dynamic loader ignores LD_PRELOAD for it (secure-execution "
                    "mode), so it cannot be traced",
                "trace a copy without the setuid bit", force, quiet);
    return;
  }
  if (changes_gid) {
    Unreachable(path +
                    " is setgid: the dynamic loader ignores LD_PRELOAD for it (secure-execution "
                    "mode), so it cannot be traced",
                "trace a copy without the setgid bit", force, quiet);
    return;
  }
  const std::string caps = root ? std::string() : FileCaps(path);
  if (!caps.empty()) {
    Unreachable(
        path + " has file capabilities (" + caps +
            "): the dynamic loader ignores LD_PRELOAD for it (secure-execution mode), so it "
            "cannot be traced",
        "trace a copy without them", force, quiet);
  }
}

// --- running it ------------------------------------------------------------------

// exec, then what a shell does when that fails: a file that is not an
// executable format runs as a shell script.
[[noreturn]] void Exec(const std::string& path, std::vector<char*>& args) {
  execv(path.c_str(), args.data());
  const int err = errno;
  if (err == ENOEXEC) {
    std::vector<char*> sh = {const_cast<char*>("sh"), const_cast<char*>(path.c_str())};
    sh.insert(sh.end(), args.begin() + 1, args.end());
    execv("/bin/sh", sh.data());
  }
  std::fprintf(stderr, "%s: %s: %s\n", g_prog, path.c_str(), strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

constexpr auto& kForwarded = log::kLauncherForwarded;  // the library knows them too
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_toggles = 0;  // --signal: requests not yet served

void Toggle(int) { g_toggles = g_toggles + 1; }

// --signal: start a window if the program is paused, else stop the current
// one (its trace is written), and say what happened.
void ToggleWindow(pid_t child) {
  std::string reply, error;
  if (!CtlRequest(child, "status", 30, &reply, &error)) {
    std::fprintf(stderr, "%s: %s\n", g_prog, error.c_str());
    return;
  }
  const bool recording = reply.find("recording") != std::string::npos;
  if (!CtlRequest(child, recording ? "stop" : "start", 600, &reply, &error)) {
    std::fprintf(stderr, "%s: %s\n", g_prog, error.c_str());
    return;
  }
  std::fprintf(stderr, "%s: %s\n", g_prog, reply.c_str());
}

void Forward(int sig) {
  const int saved = errno;
  if (g_child > 0) kill(g_child, sig);
  errno = saved;
}

// INT and QUIT: a terminal's (the kernel's, si_code > 0) reach the whole
// process group, the program too: not passed on. One a process sent to us
// (kill, a CI runner or supervisor signalling our pid: si_code <= 0) is
// passed on, as TERM is (the program never got it: ^C from a script or a
// runner was lost, and tracewrap exited 0).
void ForwardSent(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code <= 0) Forward(sig);
}

// Job control: a TSTP sent to us (`kill -TSTP` of our pid; a terminal's ^Z
// reaches the program itself) is passed on, and we stop too, so that the
// shell sees the job stopped; a CONT that resumes us resumes the program.
// (The program kept running while tracewrap was stopped.) A stop signal
// the program gets twice (a group's and ours) is harmless: a CONT discards
// the stop signals still pending. We stop by the same signal, its default
// action for the moment, as the program untraced would have: stopped by
// SIGSTOP instead, the shell said "Stopped (signal)" and `wait` returned 147
// where 148 was due. Once continued, the handler is back.
void ForwardStop(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  if (info != nullptr && info->si_code <= 0 && g_child > 0) kill(g_child, sig);
  struct sigaction dfl = {};
  struct sigaction mine = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, &mine);
  sigset_t just;
  sigemptyset(&just);
  sigaddset(&just, sig);
  raise(sig);                                // pending: blocked while its handler runs
  sigprocmask(SIG_UNBLOCK, &just, nullptr);  // stops here (an orphaned group discards it)
  sigaction(sig, &mine, nullptr);
  errno = saved;  // (returning restores the handler's mask: the signal blocked again)
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Problem (issue 13): on an idle machine, the first per-task perf event
// turns on the kernel's perf scheduling hooks (a static key, then
// synchronize_rcu): 5 to 25 ms measured here, spent in the perf_event_open
// of the process that opens it, inside the program's own time: the run's
// first process opens its events as it starts, a descendant at its second
// thread or after 10 ms of recording (a thread's creation took 13 ms
// longer; a 0.4 s zstd run was 3% slower).
// The kernel keeps the hooks on while any such event exists (it is freed
// when its last descriptor closes, whether or not its task still runs),
// and for about a second after. So a thread of ours opens a dummy event on
// itself when the run starts, in parallel with the program's start, and
// ends; the descriptor stays open until we exit. Nothing waits for it.
//
// A thread, not a process: a helper process was our second child, and a
// job that finds the program with `pgrep -P <tracewrap's pid>` (a CI
// script, the README's `gotrace ctl` example) found two; it also cost a
// fork per run.
void* HoldPerfHooksThread(void*) {
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = PERF_COUNT_SW_DUMMY;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  // Refused (perf_event_paranoid 3, a seccomp filter): so are the traced
  // processes' own; nothing to hold.
  (void)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  return nullptr;
}

void HoldPerfHooks() {
  const char* sched = getenv("GOTRACE_SCHED");
  if (sched != nullptr && std::strcmp(sched, "infer") == 0) return;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  // No signal of the program's or of a user's is ever handled on it.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  (void)pthread_create(&t, &attr, HoldPerfHooksThread, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
}

// --report (issue 15): `gotrace report` on the run's index, which lists
// every trace of the run. Never changes the exit status; a failure is
// gotrace's own one-line message.
void Report(const std::string& where, const std::string& index, const std::string& lib) {
  std::string gotrace = Dir(lib) + "/gotrace";
  if (access(gotrace.c_str(), X_OK) != 0) gotrace = SelfDir() + "/gotrace";
  if (access(gotrace.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "%s: --report: the gotrace command was not found next to %s\n", g_prog, lib.c_str());
    return;
  }
  if (access(index.c_str(), F_OK) != 0) {
    std::fprintf(stderr, "%s: --report: this run wrote no trace\n", g_prog);
    return;
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    unsetenv("LD_PRELOAD");
    setenv("GOTRACE_DISABLE", "1", 1);
    std::vector<std::string> a = {gotrace, "report"};
    if (where == "-") dup2(2, 1);
    else a.insert(a.end(), {"-o", where});
    a.insert(a.end(), {"--", index});
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    execv(gotrace.c_str(), argv.data());
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

// --- The encode ahead: a thread of ours while the program runs -------------
struct Ahead {
  ResolveAheadFn resolve = nullptr;
  const char* lib = nullptr;
  const GotraceFinishRequest* req = nullptr;
  pthread_t thread{};
  bool started = false;
  int stop = 0;           // read by the encoder with __atomic_load_n
  int wake_fd = -1;       // an eventfd: readable once stop is set
  std::atomic<int> tid{0};
  std::atomic<bool> idle{false};  // SCHED_IDLE, to be left at the program's end
};
Ahead g_ahead;

// Whether this process may leave SCHED_IDLE again (the kernel treats it as
// nice 20: going back to nice 0 needs CAP_SYS_NICE or RLIMIT_NICE 20).
bool MayLeaveIdle() {
  rlimit r{};
  return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &r) == 0 && r.rlim_cur >= 20);
}

void* AheadMain(void*) {
  g_ahead.tid.store(static_cast<int>(syscall(SYS_gettid)));
  // The encoder first, at the normal priority: the end needs it anyway,
  // and loading it is a few milliseconds the end would otherwise wait for.
  const AheadFn ahead = g_ahead.resolve(g_ahead.lib);
  // Then only on CPUs the program leaves idle (SCHED_IDLE): the program's
  // processes never wait for the encode ahead, and what it could not do is
  // the end's. Where it could not leave that class at the end
  // (unprivileged), nice 19 instead: its last log must not starve behind
  // other work on the machine while the end waits for it.
  const sched_param none{};
  if (MayLeaveIdle() && pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) == 0)
    g_ahead.idle.store(true);
  else
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(g_ahead.tid.load()), 19);
  if (ahead != nullptr && __atomic_load_n(&g_ahead.stop, __ATOMIC_ACQUIRE) == 0)
    ahead(g_ahead.req, &g_ahead.stop, g_ahead.wake_fd);
  return nullptr;
}

void StartAhead(ResolveAheadFn resolve, const char* lib, const GotraceFinishRequest* req) {
  if (resolve == nullptr) return;
  g_ahead.resolve = resolve;
  g_ahead.lib = lib;
  g_ahead.req = req;
  g_ahead.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // Signals are the main thread's (waitpid returns to serve --signal): the
  // thread starts with every signal blocked.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_ahead.started = pthread_create(&g_ahead.thread, nullptr, AheadMain, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// The program has ended: the encode ahead claims no more logs (the end's
// now), and the one it is encoding runs on at the normal priority where we
// may raise it (the machine is the run's end's now), beside the end's.
void StopAhead() {
  if (!g_ahead.started) return;
  __atomic_store_n(&g_ahead.stop, 1, __ATOMIC_RELEASE);
  if (g_ahead.wake_fd >= 0) {
    const uint64_t one = 1;
    (void)!write(g_ahead.wake_fd, &one, sizeof one);
  }
  const sched_param none{};
  if (g_ahead.idle.load())
    (void)pthread_setschedparam(g_ahead.thread, SCHED_OTHER, &none);
  else if (const int tid = g_ahead.tid.load(); tid != 0)
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0);  // from nice 19, where allowed
}

// After the end (which waited for the logs in flight): the thread is done.
void JoinAhead() {
  if (!g_ahead.started) return;
  pthread_join(g_ahead.thread, nullptr);
  g_ahead.started = false;
  if (g_ahead.wake_fd >= 0) close(g_ahead.wake_fd);
  g_ahead.wake_fd = -1;
}

// --- runs whose launcher was killed ----------------------------------------------
//
// Problem: a launcher killed by SIGKILL (a CI step's timeout) leaves its
// run's directory on tmpfs (/dev/shm/tracewrap.*) with the event logs in
// it: memory held until reboot, and traces nobody is told about (a machine
// that ran tracewrap under timeouts had 579 MB of them). Each run's
// directory names its launcher (pid and start time: pids are reused) and
// its output directory; the next run into the same output directory (a CI
// job's traces/) moves the logs of a run whose launcher is gone there,
// next to where their traces would have gone, says so in one line, and
// removes the directory. (Runs into other directories are theirs: two
// jobs running side by side never take each other's logs.)
//
// The same for a run that ended while some of its processes still ran (a
// daemon started by the job, a background job): each writes its own trace
// when it ends, but one killed by SIGKILL left its log there for good (a
// PostgreSQL backend of a server the job restarted). Its launcher file
// stays, marked `ended`, and the sweep moves such logs once their
// processes are gone. A run whose output directory no longer exists (the
// user removed it; a test's temporary directory) has nowhere to put them:
// any run sweeps them away, with one line.

constexpr char kMarkerName[] = "marker";

// A process's start time (clock ticks after boot), or 0 if there is no such
// process.
uint64_t StartTime(pid_t pid) { return std::strtoull(ProcStatField(pid, 22).c_str(), nullptr, 10); }

void WriteLauncherFile(const std::string& run_dir, const std::string& outdir) {
  const std::string path = run_dir + "/" + log::kLauncherFile;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // The output directory as the kernel names it: `X/.`, `//X` and a
  // symbolic link to X are X.
  const std::string real = RealPath(outdir);
  const std::string text = std::to_string(getpid()) + " " + std::to_string(StartTime(getpid())) +
                           "\n" + (real.empty() ? outdir : real) + "\n";
  (void)!write(fd, text.data(), text.size());
  close(fd);
}

// At the run's end, with logs of processes that still run left in
// run_dir's logs/: the launcher file stays for the sweep, marked ended.
void MarkLauncherEnded(const std::string& run_dir) {
  const std::string path = run_dir + "/" + log::kLauncherFile;
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, "ended\n", 6);
  close(fd);
}

// Moves `from` to `to` (across file systems: a copy), not over an existing
// file. False if it stays.
bool MoveFile(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno != EXDEV || !CopyFile(from, to)) return false;
  unlink(from.c_str());
  return true;
}

void SweepKilledRuns(const std::string& our_outdir, bool quiet) {
  const std::string real = RealPath(our_outdir);
  const std::string& ours = real.empty() ? our_outdir : real;
  DIR* shm = opendir("/dev/shm");
  if (shm == nullptr) return;
  std::vector<std::string> runs;
  for (dirent* e; (e = readdir(shm)) != nullptr;)
    if (std::strncmp(e->d_name, "tracewrap.", 10) == 0)
      runs.push_back(std::string("/dev/shm/") + e->d_name);
  closedir(shm);
  for (const std::string& run : runs) {
    const std::string launcher = run + "/" + log::kLauncherFile;
    const int fd = open(launcher.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // not ours to judge (another user's, an older tracewrap's, being swept)
    char buf[4200];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    char* end = nullptr;
    const long pid = std::strtol(buf, &end, 10);
    const uint64_t start = std::strtoull(end, &end, 10);
    if (pid <= 0 || end == nullptr || *end != '\n') continue;
    const char* line = end + 1;
    const char* nl = std::strchr(line, '\n');
    const std::string outdir(line, nl != nullptr ? nl - line : std::strlen(line));
    const bool ended = nl != nullptr && std::strncmp(nl + 1, "ended\n", 6) == 0;
    if (outdir.empty()) continue;
    struct stat od;
    const bool gone = outdir != ours && stat(outdir.c_str(), &od) != 0 && errno == ENOENT;
    if (outdir != ours && !gone) continue;
    if (start != 0 && StartTime(static_cast<pid_t>(pid)) == start) continue;  // still running
    // One sweeper per run: the one that renames the launcher file away (two
    // runs starting together moved logs twice and miscounted).
    const std::string claimed = launcher + ".swept." + std::to_string(getpid());
    if (rename(launcher.c_str(), claimed.c_str()) != 0) continue;
    const std::string logs = run + "/logs";
    std::vector<std::string> names;
    if (DIR* d = opendir(logs.c_str()); d != nullptr) {
      for (dirent* e; (e = readdir(d)) != nullptr;)
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
          names.push_back(e->d_name);
      closedir(d);
    }
    // The logs listed first, then who holds them: a log made after the list
    // is not touched, one held open is a live process's (it ends it; the
    // next sweep moves it).
    const std::set<std::string> held = OpenFiles(logs + "/", "");
    int moved = 0, left = 0, live = 0, dropped = 0;
    for (const std::string& name : names) {
      const std::string from = logs + "/" + name;
      if (held.count(from)) {
        ++live;
        continue;
      }
      // NAME.gtlog, or NAME.gtlog.run: claimed by the launcher's end, which
      // was killed while it encoded; its trace may be written already.
      const bool run_claimed = EndsWith(name, ".gtlog.run");
      const bool gtlog = run_claimed || EndsWith(name, ".gtlog");
      const std::string base = name.substr(0, name.size() - (run_claimed ? 10 : gtlog ? 6 : 0));
      if ((run_claimed && access((outdir + "/" + base).c_str(), F_OK) == 0) || gone) {
        unlink(from.c_str());
        if (gone) ++dropped;
        continue;
      }
      // A name taken there (a later run's log of the same name): .1, .2, ...
      bool ok = false;
      for (int k = 0; k < 100 && !ok; ++k) {
        const std::string to =
            outdir + "/" + base + (k ? "." + std::to_string(k) : "") + (gtlog ? ".gtlog" : "");
        ok = MoveFile(from, to);
        if (!ok && errno != EEXIST) break;
      }
      ++(ok ? moved : left);
    }
    const std::string who =
        ended ? "processes that outlived a run (launcher pid " + std::to_string(pid) +
                    ") and were killed"
              : "a run whose launcher was killed (pid " + std::to_string(pid) + ")";
    if (!quiet && moved > 0)
      std::fprintf(stderr,
                   "%s: %s left %d event log(s): moved to %s "
                   "(make their traces with: gotrace recover LOG -o TRACE)\n",
                   g_prog, who.c_str(), moved, outdir.c_str());
    if (!quiet && dropped > 0)
      std::fprintf(stderr, "%s: %s left %d event log(s) for %s, which no longer exists: removed\n",
                   g_prog, who.c_str(), dropped, outdir.c_str());
    if (left > 0 && !quiet)
      std::fprintf(stderr, "%s: %s left %d event log(s) in %s\n", g_prog, who.c_str(), left,
                   logs.c_str());
    if (left > 0 || live > 0) {
      (void)rename(claimed.c_str(), launcher.c_str());  // for the next sweep
      continue;
    }
    const std::string marker = run + "/" + kMarkerName;
    for (const char* suffix : {"", log::kQuietJournalSuffix, log::kLearnSuffix})
      unlink((marker + suffix).c_str());
    unlink(claimed.c_str());
    rmdir(logs.c_str());
    rmdir(run.c_str());
  }
}

// A process that made its log after its run had ended (a daemon the job
// started, staged until its first wait) keeps it next to its trace and
// writes the trace itself when it ends; one killed by SIGKILL leaves only
// the log, which no run lists. The next run into that directory says so in
// one line, for each such log: NAME.gtlog with no NAME beside it, held
// open by no process. (Logs kept by GOTRACE_KEEP_LOG have their traces.)
void RemindLeftLogs(const std::string& our_outdir, bool quiet) {
  if (quiet) return;
  // (As /proc names the files held open.)
  const std::string real = RealPath(our_outdir);
  const std::string& outdir = real.empty() ? our_outdir : real;
  std::vector<std::string> left;
  if (DIR* d = opendir(outdir.c_str()); d != nullptr) {
    for (dirent* e; (e = readdir(d)) != nullptr;) {
      const std::string name = e->d_name;
      if (!EndsWith(name, ".gtlog")) continue;
      const std::string trace = outdir + "/" + name.substr(0, name.size() - 6);
      if (access(trace.c_str(), F_OK) != 0) left.push_back(outdir + "/" + name);
    }
    closedir(d);
  }
  if (left.empty()) return;
  const std::set<std::string> held = OpenFiles(outdir + "/", ".gtlog");
  std::vector<std::string> dead;
  for (const std::string& l : left)
    if (held.count(l) == 0) dead.push_back(l);
  if (dead.empty()) return;
  std::sort(dead.begin(), dead.end());
  std::fprintf(stderr,
               "%s: %s holds %zu event log(s) of processes that ended without writing their traces "
               "(killed after their run?), e.g. %s: make their traces with: gotrace recover LOG -o "
               "TRACE\n",
               g_prog, outdir.c_str(), dead.size(), dead[0].c_str());
}

// Started with stdin, stdout or stderr closed (`prog >&- 2>&-`), the
// launcher's own descriptors would take those numbers: the run's eventfd
// became descriptor 1, a pipe descriptor 2, and the summary line written
// there killed the launcher with SIGPIPE (status 141 for the program's 7, no
// index). Each closed one holds /dev/null, close-on-exec: the program still
// starts with it closed, as untraced, and the launcher's lines go nowhere,
// as the user asked.
void HoldClosedStandardDescriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0 && null != fd) {
      (void)dup3(null, fd, O_CLOEXEC);
      close(null);
    }
  }
}

// Whether the program's environment (the options applied) lets a process of
// the run open a control channel (preload/config.cc: GOTRACE_START=paused,
// GOTRACE_CTL, the flight recorder), and so write trace windows of its own
// and leave sockets: only then does the run's end look for them, in the
// output directory and in every /tmp/gotrace-<uid>. Listing those cost
// every run (tracewrap -- /bin/true read /tmp twice, 600 entries here). Any
// value other than the ones that say no counts, as an invalid one may
// still be a typo of yes.
bool ControlPossible() {
  auto set = [](const char* name, const char* no) {
    const char* v = getenv(name);
    return v != nullptr && v[0] != '\0' && (no == nullptr || std::strcmp(v, no) != 0);
  };
  const char* mode = getenv("GOTRACE_MODE");
  return set("GOTRACE_START", "running") || set("GOTRACE_CTL", "0") ||
         set("GOTRACE_FLIGHT", nullptr) || (mode != nullptr && std::strcmp(mode, "flight") == 0);
}

}  // namespace

int RunMain(int argc, char** argv, const char* prog_name, FinishFn finish, ResolveAheadFn resolve_ahead) {
  g_prog = prog_name;
  HoldClosedStandardDescriptors();
  Options o;
  const int first = ParseOptions(argc, argv, &o);
  Validate(&o);
  const std::string lib = FindLibrary();
  const std::string name = argv[first];
  const std::string path = FindProgram(name);
  CheckProgram(path, o.force, o.quiet);

  if (!o.out.empty()) setenv("GOTRACE_OUT", o.out.c_str(), 1);
  if (!o.unwind.empty()) setenv("GOTRACE_UNWIND", o.unwind.c_str(), 1);
  if (!o.sched.empty()) setenv("GOTRACE_SCHED", o.sched.c_str(), 1);
  if (!o.cpu_hz.empty()) setenv("GOTRACE_CPU_HZ", o.cpu_hz.c_str(), 1);
  if (!o.depth.empty()) setenv("GOTRACE_DEPTH", o.depth.c_str(), 1);
  if (!o.events.empty()) setenv("GOTRACE_EVENTS", o.events.c_str(), 1);
  if (o.quiet) setenv("GOTRACE_QUIET", "1", 1);
  if (!o.follow) setenv("GOTRACE_FOLLOW", "0", 1);
  if (o.paused) setenv("GOTRACE_START", "paused", 1);
  if (o.ctl || (o.toggle_signal != 0 && !o.paused)) setenv("GOTRACE_CTL", "1", 1);
  // The CPUs (the trace's Ps), once for the run: each process would read
  // them from sysfs (10 to 15 us of a new process's start).
  if (const long ncpus = sysconf(_SC_NPROCESSORS_CONF); ncpus > 0)
    setenv("GOTRACE_NCPUS", std::to_string(ncpus).c_str(), 1);
  // A program built with -fsanitize=address exits at once with a preloaded
  // library before its runtime, unless told otherwise; the exec hooks do the
  // same for every traced child (preload/lifecycle.cc, AsanOptions).
  if (const char* asan = getenv("ASAN_OPTIONS"); asan == nullptr || *asan == '\0') {
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
  } else if (std::strstr(asan, "verify_asan_link_order") == nullptr) {
    setenv("ASAN_OPTIONS", (std::string(asan) + ":verify_asan_link_order=0").c_str(), 1);
  }
  // The program is the root of the traced tree: it writes the requested path.
  unsetenv("GOTRACE_ROOT_PID");
  unsetenv("GOTRACE_IMAGE");
  unsetenv("GOTRACE_DEFER");
  unsetenv("GOTRACE_LOG_DIR");
  // Prepend, so a user's own preload (a malloc replacement) still loads,
  // after ours (G15).
  const char* old_preload = getenv("LD_PRELOAD");
  const std::string preload =
      lib + (old_preload != nullptr && *old_preload != '\0' ? std::string(":") + old_preload : "");
  // argv[0] as the user typed it, as a shell would.
  std::vector<char*> args(argv + first, argv + argc);
  args.push_back(nullptr);

  if (o.exec) {
    // The program's exit status and a fatal signal reach our caller
    // unchanged, and signals sent to us go to it.
    setenv("LD_PRELOAD", preload.c_str(), 1);
    Exec(path, args);
  }

  // --- supervise: the run's files, the marker, the program as our child ----
  HoldPerfHooks();  // (its descriptor closes when we exit)
  const char* tv = getenv("GOTRACE_OUT");
  std::string tmpl = tv != nullptr && *tv != '\0' ? tv : "gotrace.%p.trace";
  const bool relative = tmpl[0] != '/';
  if (relative) {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) {
      // A directory removed under the job (or unreadable): a relative trace
      // name has nowhere to go. The program runs all the same, untraced, as
      // when a traced process cannot make its log.
      const int err = errno;
      std::fprintf(stderr,
                   "%s: cannot write a trace relative to the current directory (%s%s); give -o "
                   "an absolute path; running %s untraced\n",
                   g_prog, strerror(err), err == ENOENT ? ": it was removed" : "", name.c_str());
      Exec(path, args);
    }
    tmpl = std::string(cwd) + "/" + tmpl;
  }
  // A rerun into the same name: the program's trace would take the first
  // free number by itself (NAME.1.trace), but its children's traces kept
  // NAME.trace.PID among the earlier run's. The whole run takes the number:
  // the program's, its children's and the index's names.
  // Runs started together into the same name (CI jobs in parallel) all
  // found it free: the program's trace took the first free number at the
  // end, but every run's children were NAME.trace.PID. The name is taken
  // now, by creating its index (replaced at the end, removed if the run
  // writes none): a run that finds it made takes the next number.
  std::string reserved_index;
  const std::string placeholder = "{\"version\": 1, \"running\": \"tracewrap (pid " +
                                  std::to_string(getpid()) +
                                  ") writes this index when its program ends\"}\n";
  if (tmpl.find('%') == std::string::npos) {
    for (unsigned n = 0; n < 10000; ++n) {
      const std::string cand = n == 0 ? tmpl : WithSuffix(tmpl, n);
      struct stat st;
      if (lstat(cand.c_str(), &st) == 0) continue;  // a trace of that name
      const std::string idx = cand + ".index.json";
      const int fd = open(idx.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 && errno == EEXIST) continue;
      if (fd >= 0) {
        (void)!write(fd, placeholder.data(), placeholder.size());
        close(fd);
        reserved_index = idx;
      }
      if (cand != tmpl) {
        tmpl = cand;
        setenv("GOTRACE_OUT", tmpl.c_str(), 1);
      }
      break;
    }
  }
  const std::string outdir = Dir(tmpl);
  const std::string base = tmpl.substr(tmpl.rfind('/') + 1);
  const std::string prefix = base.substr(0, base.find('%'));
  // The run's event logs go to a directory of our own on tmpfs (/dev/shm):
  // a short process creates and removes its log there for next to nothing,
  // where a disk filesystem's inode allocation cost a shell job's processes
  // more than anything else of tracing (ext4's search for an inode not
  // recently deleted). Not when the output directory is per process (a '%'
  // in it): logs are then named after their traces, next to them.
  // The logs themselves in its subdirectory logs/, the only files there:
  // the encode ahead watches it (inotify), and the quiet processes' journal
  // entries (next to the marker) wake nothing.
  RemindLeftLogs(outdir, o.quiet);  // (before the sweep, which says what it moves itself)
  SweepKilledRuns(outdir, o.quiet);
  std::string run_dir, log_dir;
  // Problem: a container's /dev/shm is small (64 MiB by default in Docker
  // and Kubernetes), and a build's logs filled it: every process said
  // "cannot extend the event log ... (No space left on device)" on its
  // stderr (into configure's config.log), logs were cut before their
  // headers, the journal was damaged, the index had empty rows. With less
  // than kShmMinFree free there (four times what the run holds before it
  // encodes ahead, GOTRACE_ENCODE_AHEAD's 64 MiB), the logs go next to the
  // traces (as with a '%' in the directory).
  constexpr uint64_t kShmMinFree = uint64_t{256} << 20;
  struct stat shm;
  struct statvfs shm_fs {};
  const bool shm_roomy = statvfs("/dev/shm", &shm_fs) == 0 &&
                         static_cast<uint64_t>(shm_fs.f_bavail) * shm_fs.f_frsize >= kShmMinFree;
  if (outdir.find('%') == std::string::npos && shm_roomy && stat("/dev/shm", &shm) == 0 &&
      S_ISDIR(shm.st_mode) && access("/dev/shm", W_OK | X_OK) == 0) {
    std::string d = "/dev/shm/tracewrap.XXXXXX";
    if (mkdtemp(d.data()) != nullptr) {
      if (mkdir((d + "/logs").c_str(), 0700) == 0) {
        run_dir = d;
        log_dir = d + "/logs";
        WriteLauncherFile(run_dir, outdir);
      } else {
        rmdir(d.c_str());
      }
    }
  }
  // The marker: while it exists, processes of the run leave their logs to
  // us; its time stamps the run (logs older than it are not ours). In the
  // run's directory when there is one (tmpfs: the two files made here cost a
  // disk filesystem's inode search, a few milliseconds of a run there).
  std::string marker;
  if (!run_dir.empty()) {
    marker = run_dir + "/" + kMarkerName;
    const int mfd = open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (mfd >= 0) close(mfd);
    else marker.clear();
  }
  if (marker.empty()) {
    const char* tmpdir = getenv("TMPDIR");
    marker = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/tracewrap.XXXXXX";
    const int mfd = mkstemp(marker.data());
    if (mfd < 0) Die(2, "cannot create a temporary file");
    close(mfd);
  }
  const std::string marker_real = RealPath(marker);
  if (!marker_real.empty()) marker = marker_real;
  // The journal of quiet processes (issue 18, encoder/quiet_journal.h): the
  // processes append to it and never create it, so one that outlives the
  // run writes nothing once it is gone. If it cannot be made, processes
  // make their logs at start (GOTRACE_STAGE=0), as before staging.
  const std::string journal = marker + log::kQuietJournalSuffix;
  const int jfd = open(journal.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const bool staging = jfd >= 0;
  if (jfd >= 0) close(jfd);
  // The learn table (issue 18): programs that ended quiet twice are not
  // traced again in this run. Without it (--every-process, or it cannot be
  // made) every process is traced.
  const std::string learn = marker + log::kLearnSuffix;
  const bool every = o.every_process || EnvSwitch("GOTRACE_EVERY_PROCESS");
  if (staging && !every) {
    const int lfd = open(learn.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (lfd >= 0) {
      if (ftruncate(lfd, static_cast<off_t>(log::kLearnBytes)) != 0) unlink(learn.c_str());
      close(lfd);
    }
  }
  // Run as root, the program may give up its privileges (setpriv, su, a
  // database server or a web server's workers): such a process could not
  // make its log in our directory (mode 0700, root's), said "cannot create
  // ...; tracing is off" and was missing from the index. So the run's
  // directory lets every user in without listing it (0711), its logs/ take
  // anyone's new files but only their owners may remove them (01733, as
  // /tmp), the journal takes anyone's entries (0622) and the learn table
  // anyone's notes (0666). Their names stay unlisted. Not needed otherwise:
  // an unprivileged run's processes cannot change user (set-id programs
  // are not traced, H29).
  if (geteuid() == 0 && !run_dir.empty()) {
    (void)chmod(run_dir.c_str(), 0711);
    (void)chmod(log_dir.c_str(), 01733);
    (void)chmod(journal.c_str(), 0622);
    (void)chmod(learn.c_str(), 0666);
  }

  // A terminal's INT and QUIT reach the whole process group: the program
  // gets them itself; we wait for it. Signals sent to us are passed on,
  // INT and QUIT too (ForwardSent). Where they were ignored (a background
  // job of a script) the program still starts with them ignored, but one
  // sent to us is passed on all the same: untraced it would have reached
  // the program, which may have a handler of its own by then (`tracewrap --
  // nginx &` then `kill -QUIT $!`, nginx's graceful stop, waited forever).
  struct sigaction old_int {};
  struct sigaction old_quit {};
  struct sigaction old_fwd[std::size(kForwarded)];
  struct sigaction sent {};
  struct sigaction fwd {};
  sent.sa_sigaction = ForwardSent;
  sent.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sent.sa_mask);
  sigaction(SIGINT, nullptr, &old_int);
  sigaction(SIGQUIT, nullptr, &old_quit);
  sigaction(SIGINT, &sent, nullptr);
  sigaction(SIGQUIT, &sent, nullptr);
  fwd.sa_handler = Forward;
  sigemptyset(&fwd.sa_mask);
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], kForwarded[i] == o.toggle_signal ? nullptr : &fwd, &old_fwd[i]);
    sigaddset(&block, kForwarded[i]);
  }
  // --signal: ours, never the program's (no SA_RESTART: waitpid returns to
  // serve it).
  struct sigaction tog {}, old_tog {};
  if (o.toggle_signal != 0) {
    tog.sa_handler = Toggle;
    sigemptyset(&tog.sa_mask);
    sigaction(o.toggle_signal, &tog, &old_tog);
    sigaddset(&block, o.toggle_signal);
  }
  struct sigaction old_tstp = {};
  struct sigaction old_cont = {};
  sigaction(SIGTSTP, nullptr, &old_tstp);
  sigaction(SIGCONT, nullptr, &old_cont);
  if (old_tstp.sa_handler != SIG_IGN) {  // ignored (an orphaned group): by the program too
    struct sigaction stop {};
    stop.sa_sigaction = ForwardStop;
    stop.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&stop.sa_mask);
    sigaction(SIGTSTP, &stop, nullptr);
    struct sigaction cont {};
    cont.sa_handler = Forward;
    cont.sa_flags = SA_RESTART;
    sigemptyset(&cont.sa_mask);
    sigaction(SIGCONT, &cont, nullptr);
    sigaddset(&block, SIGTSTP);
    sigaddset(&block, SIGCONT);
  }
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  const uint64_t start_ns = NowNs();
  const pid_t launcher = getpid();
  const pid_t child = fork();
  if (child < 0) Die(2, std::string("cannot start the program: ") + strerror(errno));
  if (child == 0) {
    // The dispositions and mask we started with.
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    for (size_t i = 0; i < std::size(kForwarded); ++i)
      sigaction(kForwarded[i], &old_fwd[i], nullptr);
    if (o.toggle_signal != 0) sigaction(o.toggle_signal, &old_tog, nullptr);
    sigaction(SIGTSTP, &old_tstp, nullptr);
    sigaction(SIGCONT, &old_cont, nullptr);
    // A SIGKILL of our pid alone (a runner that kills the pid it started)
    // ends the program too, as it would have untraced, where the program
    // was that pid: the kernel's parent-death signal (this thread, the
    // main one, lives until the program ends). Kept across its exec; a
    // set-user-ID program drops it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) raise(SIGKILL);  // killed before the line above
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("GOTRACE_DEFER", marker.c_str(), 1);
    if (!staging) setenv("GOTRACE_STAGE", "0", 1);
    if (!log_dir.empty()) setenv("GOTRACE_LOG_DIR", log_dir.c_str(), 1);
    Exec(path, args);
  }
  g_child = child;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  // Our lines to a pipe nobody reads any more (`tracewrap ... 2>&1 | head
  // -1`) fail with EPIPE instead of killing us: the exit status is the
  // program's. (A death by SIGPIPE of the program's is passed on below,
  // with the default action put back.)
  signal(SIGPIPE, SIG_IGN);

  // The run's traces.
  GotraceFinishRequest req{};
  req.version = kGotraceFinishApiVersion;
  req.outdir = outdir.c_str();
  req.prefix = prefix.c_str();
  req.stamp_path = marker.c_str();
  req.alive_path = marker.c_str();
  // The root's trace name (as the library expands it: %p its pid, %e the
  // name it was started by) and .index.json.
  std::string index;
  const std::string& exe = name;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == 'p') {
      index += std::to_string(child);
      ++i;
    } else if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == 'e') {
      index += exe.substr(exe.rfind('/') + 1);
      ++i;
    } else if (tmpl[i] == '%' && i + 1 < tmpl.size() && tmpl[i + 1] == '%') {
      index += '%';
      ++i;
    } else {
      index += tmpl[i];
    }
  }
  // With a '%' in the name nothing was reserved at the start: an index of
  // an earlier run of the same program (%e) or pid (%p) gives way to the
  // first free number (and stays named after the program started, whatever
  // it execs: README), as the program's trace does.
  if (tmpl.find('%') != std::string::npos) {
    const std::string trace = index;
    for (unsigned n = 1; n < 10000 && access((index + ".index.json").c_str(), F_OK) == 0; ++n)
      index = WithSuffix(trace, n);
  }
  index += ".index.json";
  req.index_path = index.c_str();
  req.argv = argv + first;
  req.root_pid = child;
  req.start_ns = start_ns;
  req.block_threshold_ns = 20'000;
  if (const char* b = getenv("GOTRACE_BLOCK_US"); b != nullptr) {
    // As the library reads it; an invalid value is ignored there too.
    const std::string d = Decimal(b, 10);
    if (!d.empty() && std::stoull(d) <= 3'600'000'000ull) req.block_threshold_ns = std::stoull(d) * 1000;
  }
  const char* quiet_env = getenv("GOTRACE_QUIET");
  req.quiet = o.quiet || (quiet_env != nullptr && quiet_env[0] != '\0' && quiet_env[0] != '0');
  req.follow = o.follow;
  const char* keep = getenv("GOTRACE_KEEP_LOG");
  req.keep_logs = keep != nullptr && keep[0] != '\0' && keep[0] != '0';
  req.prog_name = g_prog;
  req.relative_paths = relative;
  req.log_dir = log_dir.empty() ? nullptr : log_dir.c_str();
  req.control = ControlPossible();
  // Encoded ahead while the program runs: the logs of processes that end.
  StartAhead(resolve_ahead, lib.c_str(), &req);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    while (g_toggles > 0) {
      g_toggles = g_toggles - 1;
      ToggleWindow(child);
    }
  }
  const uint64_t end_ns = NowNs();
  g_child = 0;
  StopAhead();
  req.root_status = status;
  req.end_ns = end_ns;
  finish(req, lib.c_str());
  // The reservation, if the run wrote its index elsewhere or none.
  if (!reserved_index.empty()) {
    char head[512];
    const int fd = open(reserved_index.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = read(fd, head, sizeof head);
      close(fd);
      if (n == static_cast<ssize_t>(placeholder.size()) &&
          std::memcmp(head, placeholder.data(), placeholder.size()) == 0)
        unlink(reserved_index.c_str());
    }
  }
  JoinAhead();
  unlink(marker.c_str());
  unlink(journal.c_str());  // read by finish (a failed finish leaves it)
  unlink(learn.c_str());
  // Empty unless a process of the run still runs (it removes its log when
  // it has written its own trace; one killed leaves it: the launcher file
  // stays, marked, for the next run's sweep).
  const bool outlived = !log_dir.empty() && rmdir(log_dir.c_str()) != 0 && errno == ENOTEMPTY;
  if (!run_dir.empty() && outlived) {
    MarkLauncherEnded(run_dir);
  } else if (!run_dir.empty()) {
    unlink((run_dir + "/" + log::kLauncherFile).c_str());
    rmdir(run_dir.c_str());
  }
  if (!o.report.empty()) Report(o.report, index, lib);

  // Exit as the program did: a death by signal is passed on by dying of it
  // (without a core: the program dumped its own, if any).
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::fflush(nullptr);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, nullptr);
    kill(getpid(), sig);
    return 128 + sig;
  }
  // Everything is written: no destructors. Those of the encoder's symbol
  // cache (every module's libdwfl state, its indexes) took 0.38 ms of
  // `tracewrap -- /bin/true`'s 2.9 ms (issue 18: the launcher's own cost).
  std::fflush(nullptr);
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace gotrace
