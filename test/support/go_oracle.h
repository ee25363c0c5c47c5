// SPDX-License-Identifier: Apache-2.0
//===-- test/support/go_oracle.h - Go's own tools as the trace oracle -----===//
//
// Runs `go tool trace` (-d, -pprof, web mode) and `go tool pprof` on a trace
// file with Go 1.19 (the format's own parser) and, for web mode and -pprof, a
// current Go (1.23, which converts the file to its own event model first),
// and returns what they said, so tests can check gotrace's output against
// the real parser rather than against our own reading of the format
// (GO_TRACE_FORMAT.md §2.11, §6 item 9; STYLE.md G9, H33).
//
// Test-only code: it spawns processes, allocates and blocks. Every tool run
// has a 60 s timeout after which its process group is killed.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gotrace::testing {

// One line of `go tool trace -d` output:
//   <ns> <Name> p=<P> g=<G> off=<off> <arg>=<val>... <sarg>=<text>...
// (internal/trace/parser.go, func (ev *Event) String).
struct GoEvent {
  int64_t ts = 0;    // ns since the first event, as printed (GoSysExit already re-timed)
  std::string name;  // e.g. "GoStart", "GoUnblock"
  int64_t p = 0;     // P, including the fake ones (1000003 = SyscallP, 1000004 = GCP, ...)
  uint64_t g = 0;    // goroutine the event is attributed to
  uint64_t off = 0;  // byte offset of the record in the file
  // The numeric arguments after off=, e.g. {"g",5},{"seq",2},{"stack",3}. String arguments
  // (label=, name=, category=, message=) are not here: parsing stops at the first value that is
  // not a number, because string values may contain spaces and '='.
  std::map<std::string, uint64_t> args;
  std::string text;  // the whole printed line (continuation lines of multi-line strings appended)
};

struct ParsedTrace {
  bool ok = false;
  std::string error;  // the parser's error (stderr, trimmed) when !ok
  std::vector<GoEvent> events;

  size_t Count(std::string_view name) const;  // events with that name
  std::vector<const GoEvent*> Find(std::string_view name) const;
};

// `go tool trace -d FILE`.
ParsedTrace ParseWithGo(const std::string& trace_path);

// The web-mode check (GO_TRACE_FORMAT.md Appendix A and §6 item 9). Starts
// `go tool trace -http=127.0.0.1:0 FILE`, waits for "Trace viewer is listening on http://…", then
// GETs every page the UI links to and requires HTTP 200 with a non-empty body for each. Go 1.19:
// /, /goroutines, /goroutine?id=<first group on /goroutines>, /jsontrace, /block?raw=1, the
// profile pages /io, /block, /syscall and /sched (SVG drawn by Graphviz's dot), /usertasks,
// /userregions, /mmu and /mmuPlot (also Go 1.22's pages for this format). Go 1.23 and later
// (another UI over the same file, converted from the 1.19 format by internal/trace's oldtrace
// converter): /, /trace, /jsontrace and /jsontrace?view=thread, /goroutines,
// /goroutine?name=<first group>, /block?raw=1, the four profile pages, /usertasks,
// /userregions, /mmu and /mmu?mode=plot (system and per goroutine). Returns "" if all pass.
// Otherwise returns a first line naming the failing page (or saying that the server exited
// before listening) followed by an excerpt of the server's stderr: handler panics close the
// connection without a response, startup crashes exit before listening.
std::string WebCheck(const std::string& trace_path);  // with GoBinary()
std::string WebCheck(const std::string& trace_path, const std::string& go);

// The bodies of `pages` of `go tool trace -http` on trace_path, in order (to
// check what a page lists, e.g. /usertasks). Returns "" or the first problem
// (a page that does not answer HTTP 200).
std::string WebPages(const std::string& trace_path, const std::vector<std::string>& pages,
                     std::vector<std::string>* bodies);

struct PprofResult {
  bool ok = false;
  std::string error;
  std::string traces;  // `go tool pprof -traces PROFILE` output (samples with their frames)
  std::string raw;     // `go tool pprof -raw PROFILE` output (locations with file:line)
};

// `go tool trace -pprof=KIND FILE > tmp`, then `go tool pprof -traces` and `-raw` on tmp.
// kind: sync | syscall | net | sched; "io" is accepted as a synonym of "net" (Go 1.19's CLI has
// no -pprof=io; its web page /io serves the same profile as -pprof=net).
PprofResult Pprof(const std::string& trace_path, const std::string& kind);  // with GoBinary()
PprofResult Pprof(const std::string& trace_path, const std::string& kind, const std::string& go);

// The sums over a profile's samples, from PprofResult::raw: every trace profile has two sample
// values, a count and a time in nanoseconds. ok is false if raw has no sample table.
struct ProfileTotals {
  bool ok = false;
  uint64_t count = 0;
  uint64_t nanoseconds = 0;
  size_t stacks = 0;  // sample rows (distinct stacks)
};
ProfileTotals Totals(const PprofResult& profile);

// $GOTRACE_GO if set and non-empty, else the compile definition GOTRACE_GO_BINARY (Go 1.19).
std::string GoBinary();

// The second oracle, a current Go: $GOTRACE_GO123 if set, else the compile definition
// GOTRACE_GO123_BINARY (CMake's GOTRACE_GO123, /usr/lib/go-1.23/bin/go from bookworm-backports).
// "" when that is empty or not an executable: callers skip their Go 1.23 checks then (with a
// WARN line), since scripts/test installs it only where bookworm-backports can be reached.
std::string Go123Binary();

// The minor version of a Go toolchain (`go env GOVERSION`: go1.23.1 -> 23), -1 if unknown.
int GoMinorVersion(const std::string& go);
// A Go 1.21+ toolchain, for checks that Go's newer trace tools read our traces
// as 1.19 does: $GOTRACE_GO_NEW if set, else Debian's golang-1.23-go
// (/usr/lib/go-1.23/bin/go); "" if it is not there (the caller says it skipped).
std::string NewerGoBinary();

// The goroutine groups of `go tool trace`'s /goroutines page, as served by the
// Go toolchain `go_binary` (1.19 groups by start PC, 1.21+ by name; both pages
// show name and count): group name -> number of goroutines. Groups of the same
// name are added up (1.19 may show two PCs under one name); unnamed groups
// (1.21+: "(Inactive, no stack trace sampled)") are left out.
struct GoroutineGroups {
  std::string error;  // empty on success
  std::map<std::string, uint64_t> groups;
};
GoroutineGroups ReadGoroutineGroups(const std::string& trace_path, const std::string& go_binary);

// ParseWithGo, then WebCheck. Returns "" or the first problem.
std::string ValidateTrace(const std::string& trace_path);

}  // namespace gotrace::testing
