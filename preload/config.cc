// SPDX-License-Identifier: Apache-2.0
//===-- preload/config.cc - GOTRACE_* settings, read once at start --------===//
#include "preload/config.h"

#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "encoder/quiet_journal.h"
#include "encoder/switch_value.h"
#include "preload/sys/raw.h"

namespace gotrace {
namespace {

void Invalid(const char* var, const char* value, const char* expected) {
  char buf[512];
  sys::Line l(buf, sizeof buf);
  l.Str("ignoring ").Str(var).Str("='").Str(value).Str("': expected ").Str(expected);
  sys::Log(l.c_str());
}

// A switch variable (SwitchValue). An empty value leaves the default;
// anything else prints one line and leaves it too (GOTRACE_DISABLE=x
// disabled tracing, silently).
void Switch(const char* name, bool* out) {
  const char* v = Var(name);
  if (v == nullptr || *v == '\0') return;
  if (const int on = SwitchValue(v); on >= 0) {
    *out = on == 1;
  } else {
    char full[64];
    sys::Line(full, sizeof full).Str("GOTRACE_").Str(name);
    Invalid(full, v, "1 or 0");
  }
}

// Matches the comma-separated list item [s, e) against a name.
bool ItemIs(const char* s, const char* e, const char* name) {
  const char* n = name;
  while (s < e && *n != '\0' && *s == *n) {
    ++s;
    ++n;
  }
  return s == e && *n == '\0';
}

// The GOTRACE_* variables, found in one pass over the environment (one
// getenv per variable scanned all of it each time: 8 us of every traced
// process's start, issue 18).
constexpr int kMaxVars = 64;
const char* g_var_names[kMaxVars];   // after "GOTRACE_", up to '='
const char* g_var_values[kMaxVars];  // after '='
int g_nvars = 0;

void ReadVars() {
  g_nvars = 0;
  for (char** e = environ; e != nullptr && *e != nullptr && g_nvars < kMaxVars; ++e) {
    const char* s = *e;
    if (!sys::StartsWith(s, "GOTRACE_")) continue;
    const char* v = s + 8;
    while (*v != '\0' && *v != '=') ++v;
    if (*v != '=') continue;
    g_var_names[g_nvars] = s + 8;
    g_var_values[g_nvars] = v + 1;
    ++g_nvars;
  }
}

}  // namespace

const char* Var(const char* name) {
  // The first definition, as getenv.
  for (int i = 0; i < g_nvars; ++i) {
    // The name, then its '=' (one byte before the value).
    if (sys::StartsWith(g_var_names[i], name) && g_var_names[i] + sys::StrLen(name) + 1 == g_var_values[i])
      return g_var_values[i];
  }
  return nullptr;
}

void ReadConfig(Config* c) {
  if (getauxval(AT_SECURE) != 0) {
    c->enabled = false;  // H29: setuid/setgid/capabilities: never trace
    return;
  }
  ReadVars();
  const char* v;
  bool disable = false;
  Switch("DISABLE", &disable);
  if (disable) c->enabled = false;
  Switch("QUIET", &c->quiet);
  Switch("KEEP_LOG", &c->keep_log);
  if ((v = Var("DEFER")) && *v) {
    const size_t n = sys::StrLen(v);
    if (v[0] == '/' && n < sizeof c->defer_path) {
      for (size_t i = 0; i <= n; ++i) c->defer_path[i] = v[i];
      c->defer = true;
      // The marker's neighbours: they fit (the paths are 16 bytes longer).
      static_assert(sizeof c->journal_path >= sizeof c->defer_path + sizeof log::kQuietJournalSuffix);
      static_assert(sizeof c->learn_path >= sizeof c->defer_path + sizeof log::kLearnSuffix);
      sys::Line(c->journal_path, sizeof c->journal_path).Str(v).Str(log::kQuietJournalSuffix);
      sys::Line(c->learn_path, sizeof c->learn_path).Str(v).Str(log::kLearnSuffix);
    } else {
      Invalid("GOTRACE_DEFER", v, "the absolute path of the launcher's marker file");
    }
  }
  if ((v = Var("LOG_DIR")) && *v) {
    const size_t n = sys::StrLen(v);
    if (v[0] == '/' && n < sizeof c->log_dir) {
      for (size_t i = 0; i <= n; ++i) c->log_dir[i] = v[i];
    } else {
      Invalid("GOTRACE_LOG_DIR", v, "the absolute path of the launcher's log directory");
    }
  }
  Switch("FOLLOW", &c->follow);
  Switch("STAGE", &c->stage);
  Switch("CRASH", &c->crash);
  if ((v = Var("FLUSH_MS")) && *v) {
    uint64_t ms;
    if (sys::ParseU64(v, &ms) && ms <= 3'600'000) c->flush_ms = static_cast<uint32_t>(ms);
    else Invalid("GOTRACE_FLUSH_MS", v, "a number of milliseconds (0: only when buffers fill)");
  }
  if ((v = Var("SYMBOLS")) && *v && !sys::StrEq(v, "fast") && !sys::StrEq(v, "full"))
    Invalid("GOTRACE_SYMBOLS", v, "fast or full");
  if ((v = Var("UNWIND")) && *v) {
    if (sys::StrEq(v, "auto")) c->unwind = UnwindMode::kAuto;
    else if (sys::StrEq(v, "fp")) c->unwind = UnwindMode::kFp;
    else if (sys::StrEq(v, "libunwind")) c->unwind = UnwindMode::kLibunwind;
    else if (sys::StrEq(v, "none")) c->unwind = UnwindMode::kNone;
    else Invalid("GOTRACE_UNWIND", v, "auto, fp, libunwind or none");
  }
  if ((v = Var("DEPTH")) && *v) {
    uint64_t d;
    if (sys::ParseU64(v, &d) && d >= 1 && d <= 128) c->depth = static_cast<uint32_t>(d);
    else Invalid("GOTRACE_DEPTH", v, "a number of frames from 1 to 128");
  }
  if ((v = Var("BUFFER_KB")) && *v) {
    uint64_t kb;
    if (sys::ParseU64(v, &kb) && kb >= 4 && kb <= 65536) c->buffer_kb = static_cast<uint32_t>(kb);
    else Invalid("GOTRACE_BUFFER_KB", v, "a size in KiB from 4 to 65536");
  }
  if ((v = Var("SCHED")) && *v) {
    if (sys::StrEq(v, "auto")) c->sched = SchedMode::kAuto;
    else if (sys::StrEq(v, "kernel")) c->sched = SchedMode::kKernel;
    else if (sys::StrEq(v, "infer")) c->sched = SchedMode::kInfer;
    else Invalid("GOTRACE_SCHED", v, "auto, kernel or infer");
  }
  if ((v = Var("CPU_HZ")) && *v) {
    uint64_t hz;
    if (sys::ParseU64(v, &hz) && hz <= 100000) c->cpu_hz = static_cast<uint32_t>(hz);
    else Invalid("GOTRACE_CPU_HZ", v, "samples per second, 0 to 100000 (0: none)");
  }
  if ((v = Var("MAX_MB")) && *v) {
    uint64_t mb;
    if (sys::ParseU64(v, &mb) && mb <= (uint64_t{1} << 30)) c->max_mb = static_cast<uint32_t>(mb);
    else Invalid("GOTRACE_MAX_MB", v, "a size in MiB (0: no limit)");
  }
  if ((v = Var("BLOCK_US")) && *v) {
    uint64_t us;
    if (sys::ParseU64(v, &us) && us <= 3'600'000'000ull) c->block_threshold_ns = us * 1000;
    else Invalid("GOTRACE_BLOCK_US", v, "a number of microseconds");
  }
  if ((v = Var("EVENTS")) && *v) {
    uint32_t groups = 0;
    bool ok = true;
    for (const char* s = v; ok;) {
      const char* e = s;
      while (*e != '\0' && *e != ',') ++e;
      if (ItemIs(s, e, "all")) groups |= kGroupAll;
      else if (ItemIs(s, e, "none")) groups |= 0;
      else if (ItemIs(s, e, "sync")) groups |= kGroupSync;
      else if (ItemIs(s, e, "sleep")) groups |= kGroupSleep;
      else if (ItemIs(s, e, "io")) groups |= kGroupIo;
      else if (ItemIs(s, e, "heap")) groups |= kGroupHeap;
      else if (ItemIs(s, e, "annotate")) groups |= kGroupAnnotate;
      else ok = false;
      if (*e == '\0') break;
      s = e + 1;
    }
    if (ok) c->events = groups;
    else Invalid("GOTRACE_EVENTS", v,
                 "a comma-separated list of all, none, sync, sleep, io, heap, annotate");
  }
  if ((v = Var("START")) && *v) {
    if (sys::StrEq(v, "paused")) c->start_paused = true;
    else if (sys::StrEq(v, "running")) c->start_paused = false;
    else Invalid("GOTRACE_START", v, "paused or running");
  }
  bool mode_given = false;
  if ((v = Var("MODE")) && *v) {
    mode_given = sys::StrEq(v, "flight") || sys::StrEq(v, "full");
    if (sys::StrEq(v, "flight")) c->flight = true;
    else if (!sys::StrEq(v, "full")) Invalid("GOTRACE_MODE", v, "full or flight");
  }
  if ((v = Var("FLIGHT")) && *v) {
    // GOTRACE_FLIGHT alone asks for a flight recorder (it was ignored
    // without GOTRACE_MODE=flight: a full trace, no channel, no word);
    // with GOTRACE_MODE=full it is ignored, and one line says so.
    if (!mode_given)
      c->flight = true;
    else if (!c->flight) {
      char buf[256];
      sys::Line l(buf, sizeof buf);
      l.Str("ignoring GOTRACE_FLIGHT='").Str(v).Str("': GOTRACE_MODE=full records the whole run");
      sys::Log(l.c_str());
    }
    // 30s, 500ms, 64MiB, 64MB
    const size_t n = sys::StrLen(v);
    char num[32] = {0};
    size_t k = 0;
    while (k < n && k + 1 < sizeof num && v[k] >= '0' && v[k] <= '9') {
      num[k] = v[k];
      ++k;
    }
    uint64_t x = 0;
    const char* unit = v + k;
    const bool ok_num = k > 0 && sys::ParseU64(num, &x) && x > 0 && x < (uint64_t{1} << 32);
    if (ok_num && (sys::StrEq(unit, "s") || sys::StrEq(unit, ""))) {
      c->flight_ns = x * 1'000'000'000ull;
      c->flight_bytes = 0;
    } else if (ok_num && sys::StrEq(unit, "ms")) {
      c->flight_ns = x * 1'000'000ull;
      c->flight_bytes = 0;
    } else if (ok_num && (sys::StrEq(unit, "MiB") || sys::StrEq(unit, "MB") || sys::StrEq(unit, "M"))) {
      c->flight_bytes = x << 20;
      c->flight_ns = ~uint64_t{0};
    } else {
      Invalid("GOTRACE_FLIGHT", v, "a span like 30s or 500ms, or a size like 64MiB");
    }
  }
  // A paused process is only ever started through its control channel, and
  // a flight recorder is read through it (snapshot).
  bool ctl = false;
  Switch("CTL", &ctl);
  c->control = c->start_paused || c->flight || ctl;
  if ((v = Var("OUT")) && *v) {
    const size_t n = sys::StrLen(v);
    if (n < sizeof c->out_template) {
      for (size_t i = 0; i <= n; ++i) c->out_template[i] = v[i];
    } else {
      Invalid("GOTRACE_OUT", "...", "a path shorter than 1024 bytes");
    }
  }
}

bool ExpandOutputPath(const char* tmpl, int pid, const char* exe, const char* cwd, char* out,
                      unsigned long cap) {
  sys::Line l(out, cap);
  if (tmpl[0] != '/') l.Str(cwd).Char('/');
  for (const char* p = tmpl; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') {
      l.U64(static_cast<uint64_t>(pid));
      ++p;
    } else if (p[0] == '%' && p[1] == 'e') {
      l.Str(exe);
      ++p;
    } else if (p[0] == '%' && p[1] == '%') {
      l.Char('%');
      ++p;
    } else {
      l.Char(*p);
    }
  }
  return l.size() + 1 < cap;
}

}  // namespace gotrace
