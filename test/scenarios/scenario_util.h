// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/scenario_util.h - run a program traced and untraced -===//
//
// Each scenario runs twice, plain and under LD_PRELOAD=libgotrace.so; output
// and exit status must match, and the trace must satisfy Go's parser and web
// UI before any assertion on its content.
//===----------------------------------------------------------------------===//
#pragma once

#include <dirent.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "test/support/go_oracle.h"
#include "test/support/goroutine_groups.h"
#include "test/support/log_builder.h"
#include "test/support/subprocess.h"

namespace gotrace::testing {

inline std::string Scenario(const std::string& name) {
  return std::string(GOTRACE_SCENARIO_DIR) + "/" + name;
}
inline std::string PreloadLib() { return std::string(GOTRACE_BUILD_DIR) + "/libgotrace.so"; }

// A file's bytes ("" if it cannot be read).
// How many times `what` occurs in `text`.
inline size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// In a run's index (TRACE.index.json): the entry of the first process whose
// argv starts with `argv0`, and an entry's trace file (relative to the
// index); "" when there is none.
inline std::string IndexEntry(const std::string& index, const std::string& argv0) {
  const size_t at = index.find("\"argv\": [\"" + argv0 + "\"");
  if (at == std::string::npos) return "";
  const size_t begin = index.rfind('{', at);
  return index.substr(begin, index.find('}', index.find("\"records\": ", at)) - begin + 1);
}
inline std::string EntryTrace(const std::string& entry) {
  const size_t t = entry.find("\"trace\": \"");
  if (t == std::string::npos) return "";
  return entry.substr(t + 10, entry.find('"', t + 10) - t - 10);
}

// Whether the traced program's stderr says the kernel's events were refused
// here (perf_event_paranoid, a seccomp filter): then a test of what they
// give warns and ends (`if (PerfDenied(r.err)) return;`).
inline bool PerfDenied(const std::string& err) {
  if (err.find("exact scheduling is off") == std::string::npos) return false;
  WARN("perf_event_open is not allowed here: " << err);
  return true;
}

// Files in dir whose names end with suffix.
inline std::vector<std::string> FilesEnding(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  return out;
}

struct ScenarioRun {
  ProcResult plain;
  ProcResult traced;
  std::string trace;
  ParsedTrace parsed;
};

// Runs argv plain and traced (trace into dir/NAME.trace), compares them and
// validates the trace. `extra_env` goes to the traced run only. `preload_after`:
// a library preloaded in both runs (after libgotrace.so in the traced one).
inline ScenarioRun RunTraced(const std::vector<std::string>& argv, const TempDir& dir,
                             std::vector<std::string> extra_env = {}, bool web = true,
                             const std::string& preload_after = "") {
  ScenarioRun s;
  ProcOptions plain;
  if (!preload_after.empty()) plain.env = {"LD_PRELOAD=" + preload_after};
  s.plain = RunProcess(argv, plain);
  INFO("plain run: " << s.plain.Describe() << "\n" << s.plain.err);
  REQUIRE_FALSE(s.plain.timed_out);
  const std::string out = dir.File("scenario.trace");
  ProcOptions o;
  o.env = {"LD_PRELOAD=" + PreloadLib() + (preload_after.empty() ? "" : ":" + preload_after),
           "GOTRACE_OUT=" + out};
  o.env.insert(o.env.end(), extra_env.begin(), extra_env.end());
  // The scenarios count exact blocks per wait, which is what the inferred
  // timeline shows; with the kernel's records a wait signalled before its
  // thread slept has no block, and counts depend on timing. The kernel's
  // timeline has tests of its own (sched_test.cc) that ask for it.
  if (std::none_of(extra_env.begin(), extra_env.end(),
                   [](const std::string& v) { return v.rfind("GOTRACE_SCHED=", 0) == 0; })) {
    o.env.push_back("GOTRACE_SCHED=infer");
  }
  s.traced = RunProcess(argv, o);
  INFO("traced run: " << s.traced.Describe() << "\nstderr:\n" << s.traced.err);
  REQUIRE_FALSE(s.traced.timed_out);
  CHECK(s.traced.out == s.plain.out);
  CHECK(s.traced.exit_code == s.plain.exit_code);
  CHECK(s.traced.term_signal == s.plain.term_signal);
  CHECK(FilesEnding(dir.path(), ".gtlog").empty());  // the log is removed after encoding
  s.trace = out;
  s.parsed = ParseWithGo(out);
  INFO("go tool trace -d: " << s.parsed.error);
  REQUIRE(s.parsed.ok);
  if (web) {
    const std::string w = WebCheck(out);
    INFO("web check: " << w);
    REQUIRE(w.empty());
  }
  return s;
}

// The second oracle on a representative trace (issue 19): Go 1.23's web UI must serve every
// page, and its -pprof=KIND must agree with Go 1.19's where the two versions are meant to:
// Go 1.23 counts a wait only from a GoBlock* with a stack and merges or drops the waits that
// g0 ended (README.md, "Compatibility"; test/model/go123_test.cc), so it never counts more
// waits than Go 1.19, and it counts some when Go 1.19 does. Returns Go 1.23's profile (ok ==
// false after a WARN when Go 1.23 is not installed).
inline PprofResult CheckWithGo123(const std::string& trace, const std::string& kind) {
  const std::string go123 = Go123Binary();
  if (go123.empty()) {
    WARN("Go 1.23 (" GOTRACE_GO123_BINARY ") is not installed: Go 1.23 checks skipped");
    return {};
  }
  const std::string web = WebCheck(trace, go123);
  INFO("Go 1.23 web check: " << web);
  CHECK(web.empty());
  const PprofResult old_profile = Pprof(trace, kind);
  PprofResult new_profile = Pprof(trace, kind, go123);
  INFO("Go 1.19: " << old_profile.error << "\nGo 1.23: " << new_profile.error);
  REQUIRE(old_profile.ok);
  REQUIRE(new_profile.ok);
  const ProfileTotals o = Totals(old_profile), n = Totals(new_profile);
  INFO(kind << ": Go 1.19 " << o.count << " waits, " << o.nanoseconds << " ns; Go 1.23 "
            << n.count << " waits, " << n.nanoseconds << " ns");
  REQUIRE(o.ok);
  REQUIRE(n.ok);
  CHECK(n.count <= o.count);
  CHECK((n.count > 0) == (o.count > 0));
  return new_profile;
}

// Each GoUnblock paired with the event that blocked its target.
struct Wake {
  const GoEvent* block;    // GoBlockSync, GoBlockCond, GoSleep, ...
  const GoEvent* unblock;
};
inline std::vector<Wake> Wakes(const ParsedTrace& t) {
  std::map<uint64_t, const GoEvent*> blocked;
  std::vector<Wake> out;
  for (const GoEvent& e : t.events) {
    if (e.name.rfind("GoBlock", 0) == 0 || e.name == "GoSleep") {
      blocked[e.g] = &e;
    } else if (e.name == "GoUnblock") {
      auto it = blocked.find(e.args.at("g"));
      if (it != blocked.end()) {
        out.push_back(Wake{it->second, &e});
        blocked.erase(it);
      }
    }
  }
  return out;
}


}  // namespace gotrace::testing
