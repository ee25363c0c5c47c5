// SPDX-License-Identifier: Apache-2.0
//===-- encoder/quiet_journal.h - the run's journal of quiet processes ----===//
//
// Issue 18: under the launcher, a descendant records into memory until it
// does something worth a trace of its own (preload/runtime.cc, staging);
// only then is its event log made. A process that never does leaves no log,
// only one entry in the run's journal: who it was, when it ran, how it
// ended. The launcher lists these in the run's index as quiet processes.
//
// The journal is the launcher's marker path plus kQuietJournalSuffix,
// created by the launcher before the program starts (a process never
// creates it: one that outlives the run finds it gone and writes nothing).
// Each entry is appended with one write(2) on an O_APPEND descriptor, so
// entries of concurrent processes never interleave. Host byte order.
//
//   QuietHeader, then `nchild` QuietChild, then the executable's path
//   (exe_len bytes), then the arguments (argv_len bytes: NUL-terminated
//   strings, one per argument), zero padding to a multiple of 8.
//
// Entries are also written for a program that was not traced at all
// (kQuietSkipped): the process that exec'd it writes one on its behalf
// just before the exec, because the program was learned quiet earlier in
// the run (the learn table below); its end and status come from whoever
// reaps it (QuietChild). An exec that then fails takes it back with an
// entry flagged kQuietRetract for the same pid and image.
//
// The learn table (issue 18: a command quiet twice is not traced again in
// the run, nor a small program quiet with three different argument lists):
// the marker path plus kLearnSuffix, kLearnBytes of zeros made by the
// launcher (absent when the user asked for every process,
// --every-process). First kLearnSlots + kLearnProbe little 64-bit slots. A
// slot holds a command's key (LearnKey of its working directory, its
// executable's path as exec'd, AT_EXECFN, and its arguments) with its low
// two bits replaced by a LearnState, or a program's key (ProgramKey of the
// executable's path alone) with its low four bits replaced by a
// ProgramState; 0 is an empty slot. A key lives in the first slot of its
// probe window [key % kLearnSlots, + kLearnProbe) that holds it or is
// empty. Slots are read and written with pread/pwrite of 8 aligned bytes;
// two processes racing for one slot may lose one update, which only ever
// means a program is traced once more (or once less, as a count).
//
// Then kLearnPids LearnPid records at kLearnPidsAt, one per pid modulo
// kLearnPids: the keys of the command a process runs untraced, written by
// its exec'er, so that whoever reaps it can take the lesson back when that
// run turned out busy (log::kBusyCpuNs of CPU time, from wait4's rusage):
// the command and its program are traced again from then on.
//
// The builder is allocation-free (the preloaded library uses it at exit and
// in signal handlers); the reader is the launcher's (allocates).
//===----------------------------------------------------------------------===//
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gotrace::log {

// The signals the launcher passes on to the run's first process when they
// are sent to it (encoder/run.cc; also SIGINT and SIGQUIT when a process,
// not a terminal, sent them). The library drops the launcher's copy of one
// the program got itself (preload/lifecycle.cc, TermRelay).
inline constexpr int kLauncherForwarded[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM};

inline constexpr char kQuietJournalSuffix[] = ".quiet";
inline constexpr uint32_t kQuietMagic = 0x32515447;  // "GTQ2" read little-endian
inline constexpr size_t kQuietMaxBytes = 4096;       // one entry, at most
inline constexpr uint32_t kQuietMaxChildren = 32;    // child exits kept per entry

// QuietHeader::flags
inline constexpr uint32_t kQuietDescendant = 1;  // not the launcher's own child
inline constexpr uint32_t kQuietForked = 2;      // an image that began at a fork (no exec)
inline constexpr uint32_t kQuietSkipped = 4;     // not traced: learned quiet (written by its exec'er)
inline constexpr uint32_t kQuietRetract = 8;     // the kQuietSkipped entry of (pid, image): exec failed
inline constexpr uint32_t kQuietForeign = 16;    // with kQuietSkipped: a static program or another
                                                 // ELF class, which LD_PRELOAD cannot reach
inline constexpr uint32_t kQuietNoPreload = 32;  // with kQuietSkipped: its exec'er's environment
                                                 // for it leaves the library out (env -i)
inline constexpr uint32_t kQuietPaused = 64;     // ended paused (--paused, gotrace ctl stop): it
                                                 // recorded only in its trace windows, if any
// QuietHeader::exit_status when the process could not tell (a signal that
// killed it outright is its parent's to say).
inline constexpr uint64_t kQuietNoStatus = ~uint64_t{0};

struct QuietHeader {
  uint32_t magic;     // kQuietMagic
  uint32_t size;      // the whole entry, this header included, a multiple of 8
  uint32_t pid;
  uint32_t ppid;
  uint32_t image;     // exec generation within the pid
  uint32_t flags;
  uint64_t start_ns;  // CLOCK_MONOTONIC
  uint64_t end_ns;
  uint64_t exit_status;  // wait(2) form, or log::kExitExec (replaced by exec), or kQuietNoStatus
  uint32_t records;      // records it made (in memory)
  uint32_t nchild;
  uint32_t exe_len;
  uint32_t argv_len;
};
static_assert(sizeof(QuietHeader) == 64);

struct QuietChild {
  uint32_t pid;
  uint32_t status;  // wait(2) form
  uint64_t end_ns;  // CLOCK_MONOTONIC when it was reaped
};
static_assert(sizeof(QuietChild) == 16);

// The run directory's file naming its launcher (encoder/run.cc: the sweep
// of runs whose launcher was killed, or whose processes outlived them; the
// last of those removes it, preload/lifecycle.cc).
inline constexpr char kLauncherFile[] = "launcher";

// The learn table (above).
inline constexpr char kLearnSuffix[] = ".learn";
inline constexpr uint32_t kLearnSlots = 8192;
inline constexpr uint32_t kLearnProbe = 16;
inline constexpr size_t kLearnPidsAt = size_t{kLearnSlots + kLearnProbe} * 8;
inline constexpr uint32_t kLearnPids = 4096;
struct LearnPid {
  uint64_t pid;      // 0: none
  uint64_t key;      // LearnKey
  uint64_t program;  // ProgramKey
};
static_assert(sizeof(LearnPid) == 24);
inline constexpr size_t kLearnBytes = kLearnPidsAt + size_t{kLearnPids} * sizeof(LearnPid);
enum LearnState : uint64_t {
  kLearnQuietOnce = 1,  // ended quiet once
  kLearnQuiet = 2,      // ended quiet twice or more: not traced again
  kLearnTrace = 3,      // traced, forked, exec'd or reaped a child once: always traced
};
// A program's state: how many different commands of it (argument lists,
// working directories) ended quiet and small (their process used less than
// kLearnSmallCpuNs of CPU time), 1 to kProgramLearnAt - 1; then learned
// quiet; or traced for good (a command of it was worth a trace, ran others,
// or used kLearnSmallCpuNs).
inline constexpr uint64_t kProgramStateMask = 15;
inline constexpr uint64_t kProgramLearnAt = 3;
inline constexpr uint64_t kProgramQuiet = 8;
inline constexpr uint64_t kProgramTrace = 15;
inline constexpr uint64_t kLearnSmallCpuNs = 5'000'000;

// A command's key: FNV-1a of its working directory, its executable's path
// and its arguments after argv[0], each ended by a NUL; its low two bits
// are the state's; never 0. A command is "the same" only with the same
// arguments in the same directory: `git rev-parse HEAD` quiet twice says
// nothing of `git fetch`, nor `cc --version` of `cc -c x.c`.
inline uint64_t LearnKey(const char* cwd, const char* exe, char* const* argv) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&h](const char* s) {
    for (const char* p = s; p != nullptr && *p != '\0'; ++p) {
      h ^= static_cast<uint8_t>(*p);
      h *= 0x100000001b3ull;
    }
    h *= 0x100000001b3ull;  // the NUL
  };
  add(cwd);
  add(exe);
  for (size_t i = 1; argv != nullptr && argv[0] != nullptr && argv[i] != nullptr; ++i) add(argv[i]);
  h &= ~uint64_t{3};
  return h != 0 ? h : 4;
}

// Whether a program may be learned quiet as a program, whatever its
// arguments (its key, ProgramKey): only the utilities that never run
// another program (sed, grep, cut, sha256sum, ...; binutils' as, ar, nm,
// strip, ..., which a build runs once per object), by the basename of the
// path it is exec'd by. Learned as a program after three quiet
// commands, a program runs later commands without the library, and what
// they start is neither traced nor listed: `sh -c 'echo step'` three times
// left `sh -c 'cd sub && make'` and its whole build out of the index;
// three quiet `git add` the `git gc` that runs repack and pack-objects;
// `find` the `find -exec gcc`. Any other program is learned by its
// commands only (the same arguments, twice quiet). Excluded on purpose:
// shells and interpreters, env, nice, nohup, timeout, stdbuf, xargs, find,
// make, tar (-z runs gzip), install (-s runs strip), awk (system()), git,
// ld and collect2 (an LTO link runs lto-wrapper, which runs gcc).
// FNV-1a of a name (LeafProgram's, computed at compile time for its list).
constexpr uint64_t NameHash(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s != '\0'; ++s) {
    h ^= static_cast<uint8_t>(*s);
    h *= 0x100000001b3ull;
  }
  return h;
}

// (The list is a switch on the name's hash, compiled to code: a table of
// names in our read-only data was one more page fault in every fork child
// of a traced shell that execs, where this runs.)
inline bool LeafProgram(const char* exe) {
  if (exe == nullptr) return false;
  const char* base = exe;
  for (const char* p = exe; *p != '\0'; ++p)
    if (*p == '/') base = p + 1;
  switch (NameHash(base)) {
    case NameHash("["):
    case NameHash("addr2line"):
    case NameHash("ar"):
    case NameHash("as"):
    case NameHash("b2sum"):
    case NameHash("base32"):
    case NameHash("base64"):
    case NameHash("basename"):
    case NameHash("bzip2"):
    case NameHash("cat"):
    case NameHash("chgrp"):
    case NameHash("chmod"):
    case NameHash("chown"):
    case NameHash("cksum"):
    case NameHash("cmp"):
    case NameHash("column"):
    case NameHash("comm"):
    case NameHash("cp"):
    case NameHash("csplit"):
    case NameHash("cut"):
    case NameHash("date"):
    case NameHash("dd"):
    case NameHash("df"):
    case NameHash("diff"):
    case NameHash("dirname"):
    case NameHash("du"):
    case NameHash("echo"):
    case NameHash("egrep"):
    case NameHash("expand"):
    case NameHash("expr"):
    case NameHash("factor"):
    case NameHash("false"):
    case NameHash("fgrep"):
    case NameHash("file"):
    case NameHash("fmt"):
    case NameHash("fold"):
    case NameHash("getent"):
    case NameHash("grep"):
    case NameHash("gzip"):
    case NameHash("head"):
    case NameHash("hexdump"):
    case NameHash("hostname"):
    case NameHash("iconv"):
    case NameHash("id"):
    case NameHash("join"):
    case NameHash("jq"):
    case NameHash("link"):
    case NameHash("ln"):
    case NameHash("ls"):
    case NameHash("md5sum"):
    case NameHash("mkdir"):
    case NameHash("mkfifo"):
    case NameHash("mknod"):
    case NameHash("mktemp"):
    case NameHash("mv"):
    case NameHash("nl"):
    case NameHash("nm"):
    case NameHash("nproc"):
    case NameHash("numfmt"):
    case NameHash("objcopy"):
    case NameHash("objdump"):
    case NameHash("od"):
    case NameHash("paste"):
    case NameHash("pathchk"):
    case NameHash("pr"):
    case NameHash("printenv"):
    case NameHash("printf"):
    case NameHash("pwd"):
    case NameHash("ranlib"):
    case NameHash("readelf"):
    case NameHash("readlink"):
    case NameHash("realpath"):
    case NameHash("rm"):
    case NameHash("rmdir"):
    case NameHash("sed"):
    case NameHash("seq"):
    case NameHash("sha1sum"):
    case NameHash("sha224sum"):
    case NameHash("sha256sum"):
    case NameHash("sha384sum"):
    case NameHash("sha512sum"):
    case NameHash("shuf"):
    case NameHash("size"):
    case NameHash("sleep"):
    case NameHash("sort"):
    case NameHash("split"):
    case NameHash("stat"):
    case NameHash("strings"):
    case NameHash("strip"):
    case NameHash("sum"):
    case NameHash("sync"):
    case NameHash("tac"):
    case NameHash("tail"):
    case NameHash("tee"):
    case NameHash("test"):
    case NameHash("touch"):
    case NameHash("tr"):
    case NameHash("true"):
    case NameHash("truncate"):
    case NameHash("tsort"):
    case NameHash("tty"):
    case NameHash("uname"):
    case NameHash("unexpand"):
    case NameHash("uniq"):
    case NameHash("unlink"):
    case NameHash("wc"):
    case NameHash("whoami"):
    case NameHash("xxd"):
    case NameHash("xz"):
    case NameHash("yes"):
    case NameHash("zstd"):
      return true;
    default:
      return false;
  }
}

// A program's key: FNV-1a of its executable's path alone (as exec'd), set
// apart from LearnKey's; its low four bits are the state's. The loop's `sed
// -n "s/alpha/A$i/p" data.txt` is a new command every time, and the same
// small program. 0 for a program that is not a LeafProgram: it is learned
// by its commands only.
inline uint64_t ProgramKey(const char* exe) {
  if (!LeafProgram(exe)) return 0;
  uint64_t h = 0x84222325cbf29ce4ull;
  for (const char* p = exe; p != nullptr && *p != '\0'; ++p) {
    h ^= static_cast<uint8_t>(*p);
    h *= 0x100000001b3ull;
  }
  h &= ~kProgramStateMask;
  return h != 0 ? h : 16;
}

// Writes one entry into buf (cap >= kQuietMaxBytes); returns its size. The
// arguments are cut (whole ones first, then the last one's end) to fit.
inline size_t BuildQuietEntry(uint8_t* buf, size_t cap, QuietHeader h, const QuietChild* kids,
                              const char* exe, char* const* argv, size_t argc) {
  if (cap < sizeof(QuietHeader) + 16) return 0;
  if (h.nchild > kQuietMaxChildren) h.nchild = kQuietMaxChildren;
  size_t pos = sizeof(QuietHeader);
  auto put = [&](const void* p, size_t n) {
    const auto* s = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) buf[pos + i] = s[i];
    pos += n;
  };
  const size_t room = cap - 8;  // the padding's worst case
  if (pos + h.nchild * sizeof(QuietChild) > room) h.nchild = 0;
  put(kids, h.nchild * sizeof(QuietChild));
  size_t exe_len = 0;
  while (exe != nullptr && exe[exe_len] != '\0') ++exe_len;
  if (pos + exe_len > room) exe_len = 0;
  put(exe, exe_len);
  h.exe_len = static_cast<uint32_t>(exe_len);
  const size_t argv_at = pos;
  for (size_t a = 0; a < argc && argv != nullptr && argv[a] != nullptr; ++a) {
    size_t n = 0;
    while (argv[a][n] != '\0') ++n;
    if (pos + 1 >= room) break;
    if (pos + n + 1 > room) n = room - pos - 1;  // the last one that fits, cut
    put(argv[a], n);
    buf[pos++] = '\0';
  }
  h.argv_len = static_cast<uint32_t>(pos - argv_at);
  while (pos % 8 != 0) buf[pos++] = 0;
  h.magic = kQuietMagic;
  h.size = static_cast<uint32_t>(pos);
  for (size_t i = 0; i < sizeof h; ++i) buf[i] = reinterpret_cast<const uint8_t*>(&h)[i];
  return pos;
}

struct ChildExit {
  uint32_t pid;
  int status;       // wait(2) form
  uint64_t end_ns;  // CLOCK_MONOTONIC when reaped; 0 if unknown
};

struct QuietEntry {
  QuietHeader h{};
  std::vector<ChildExit> children;
  std::string exe;
  std::vector<std::string> argv;
};

// Reads every whole entry of a journal's bytes into *out. False if a
// damaged entry was met (the entries before it are kept).
bool ParseQuietJournal(const uint8_t* p, size_t n, std::vector<QuietEntry>* out);

}  // namespace gotrace::log
