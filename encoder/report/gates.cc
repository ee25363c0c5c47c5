// SPDX-License-Identifier: Apache-2.0
//===-- encoder/report/gates.cc - parse and evaluate --fail-if gates ------===//
//
// Metrics are sums over every thread of every trace given, so one gate
// covers a whole CI run; shares are of the summed thread lives.
//===----------------------------------------------------------------------===//
#include "encoder/report/gates.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "encoder/printable.h"

namespace gotrace::report {
namespace {

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

bool KnownKind(const std::string& k) {
  const auto& ks = KnownKinds();
  return std::find(ks.begin(), ks.end(), k) != ks.end();
}

bool KindMatches(const std::string& want, const std::string& kind) {
  return want == "sync" ? InSyncGroup(kind) : want == kind;
}

std::string KindList() {
  std::string s;
  for (const auto& k : KnownKinds()) s += (s.empty() ? "" : " ") + k;
  return s;
}

enum class Metric { kShare, kCountOf, kTop, kHeapPeak, kHeapFinal, kThreads, kLost, kDropped };

// Splits a metric name into what it measures and the kind it is about
// ("" = all, "running", "runnable", "blocked" or a block kind).
Status Classify(const std::string& m, Metric* what, std::string* kind) {
  auto state_or_kind = [&](const std::string& s) -> bool {
    if (s == "running" || s == "runnable" || s == "blocked") { *kind = s; return true; }
    if (s.rfind("blocked.", 0) == 0 && KnownKind(s.substr(8))) { *kind = s.substr(8); return true; }
    return false;
  };
  if (m == "heap.peak") { *what = Metric::kHeapPeak; return Status::Ok(); }
  if (m == "heap.final") { *what = Metric::kHeapFinal; return Status::Ok(); }
  if (m == "threads") { *what = Metric::kThreads; return Status::Ok(); }
  if (m == "lost") { *what = Metric::kLost; return Status::Ok(); }
  if (m == "dropped") { *what = Metric::kDropped; return Status::Ok(); }
  if (m == "top.total") { *what = Metric::kTop; kind->clear(); return Status::Ok(); }
  if (m.size() > 10 && m.compare(m.size() - 10, 10, ".top.total") == 0) {
    *kind = m.substr(0, m.size() - 10);
    if (!KnownKind(*kind))
      return Status::Error("unknown kind '" + *kind + "' in " + m + " (kinds: " + KindList() + ")");
    *what = Metric::kTop;
    return Status::Ok();
  }
  if (m.size() > 6 && m.compare(m.size() - 6, 6, ".count") == 0) {
    if (!state_or_kind(m.substr(0, m.size() - 6)))
      return Status::Error("unknown metric '" + m + "'");
    *what = Metric::kCountOf;
    return Status::Ok();
  }
  if (state_or_kind(m)) { *what = Metric::kShare; return Status::Ok(); }
  if (m.rfind("blocked.", 0) == 0)
    return Status::Error("unknown kind '" + m.substr(8) + "' (kinds: " + KindList() + ")");
  return Status::Error("unknown metric '" + m + "' (see gotrace report --help)");
}

std::string Show(double v, Gate::Unit u) {
  char b[64];
  switch (u) {
    case Gate::Unit::kPercent: std::snprintf(b, sizeof b, "%.1f%%", v); return b;
    case Gate::Unit::kTime: return HumanDuration(static_cast<int64_t>(v));
    case Gate::Unit::kBytes:
      return HumanBytes(static_cast<uint64_t>(v));
    case Gate::Unit::kCount: std::snprintf(b, sizeof b, "%.0f", v); return b;
  }
  return "?";
}

}  // namespace

Status ParseGate(const std::string& expr, Gate* out) {
  *out = Gate{};
  out->text = expr;
  static const char* kOps[] = {">=", "<=", "==", "!=", ">", "<"};
  size_t at = std::string::npos;
  std::string op;
  for (const char* o : kOps) {
    const size_t i = expr.find(o);
    if (i != std::string::npos && (at == std::string::npos || i < at ||
                                   (i == at && std::string(o).size() > op.size()))) {
      at = i;
      op = o;
    }
  }
  if (at == std::string::npos)
    return Status::Error("--fail-if '" + expr + "': no comparison (want METRIC OP VALUE, OP one of > >= < <= == !=)");
  out->op = op;
  out->metric = Trim(expr.substr(0, at));
  const std::string v = Trim(expr.substr(at + op.size()));
  if (out->metric.empty()) return Status::Error("--fail-if '" + expr + "': no metric before " + op);
  Metric what;
  std::string kind;
  Status st = Classify(out->metric, &what, &kind);
  if (!st.ok()) return Status::Error("--fail-if '" + expr + "': " + st.message());

  char* end = nullptr;
  const double num = std::strtod(v.c_str(), &end);
  if (v.empty() || end == v.c_str() || !std::isfinite(num) || num < 0)
    return Status::Error("--fail-if '" + expr + "': '" + v + "' is not a number with a unit");
  const std::string unit = Trim(end);
  struct U { const char* name; Gate::Unit unit; double scale; };
  static const U kUnits[] = {
      {"%", Gate::Unit::kPercent, 1},  {"ns", Gate::Unit::kTime, 1},
      {"us", Gate::Unit::kTime, 1e3},  {"ms", Gate::Unit::kTime, 1e6},
      {"s", Gate::Unit::kTime, 1e9},   {"B", Gate::Unit::kBytes, 1},
      {"KB", Gate::Unit::kBytes, 1024}, {"MB", Gate::Unit::kBytes, 1048576},
      {"GB", Gate::Unit::kBytes, 1073741824}, {"", Gate::Unit::kCount, 1}};
  const U* u = nullptr;
  for (const U& c : kUnits)
    if (unit == c.name) u = &c;
  if (!u) return Status::Error("--fail-if '" + expr + "': unknown unit '" + unit + "' (% ns us ms s B KB MB GB)");
  bool fits = false;
  switch (what) {
    case Metric::kShare: fits = u->unit == Gate::Unit::kPercent || u->unit == Gate::Unit::kTime; break;
    case Metric::kTop: fits = u->unit == Gate::Unit::kTime; break;
    case Metric::kHeapPeak: case Metric::kHeapFinal:
      fits = u->unit == Gate::Unit::kBytes || u->unit == Gate::Unit::kCount;
      break;
    default: fits = u->unit == Gate::Unit::kCount; break;
  }
  if (!fits)
    return Status::Error("--fail-if '" + expr + "': " + out->metric + " cannot be compared with '" +
                         (unit.empty() ? std::string("a plain number") : unit) + "'");
  out->unit = (what == Metric::kHeapPeak || what == Metric::kHeapFinal) ? Gate::Unit::kBytes : u->unit;
  out->value = num * u->scale;
  return Status::Ok();
}

bool GateHolds(const Gate& g, const std::vector<Report>& reports, std::string* actual) {
  Metric what = Metric::kThreads;
  std::string kind;
  (void)Classify(g.metric, &what, &kind);  // ParseGate accepted it
  double v = 0;
  int64_t life = 0, ns = 0;
  uint64_t count = 0;
  for (const Report& r : reports) {
    for (const ThreadReport& t : r.threads) {
      life += t.life();
      if (kind == "running") { ns += t.running.ns; count += t.running.count; }
      else if (kind == "runnable") { ns += t.runnable.ns; count += t.runnable.count; }
      else {
        for (const auto& [k, s] : t.blocked)
          if (kind == "blocked" || KindMatches(kind, k)) { ns += s.ns; count += s.count; }
      }
    }
    switch (what) {
      case Metric::kTop:
        for (const BlockSite& b : r.sites)
          if (!b.idle && (kind.empty() || KindMatches(kind, b.kind)))
            v = std::max(v, static_cast<double>(b.total_ns));
        break;
      case Metric::kHeapPeak: v = std::max(v, static_cast<double>(r.heap_peak)); break;
      case Metric::kHeapFinal: v += static_cast<double>(r.heap_final); break;
      case Metric::kThreads: v += static_cast<double>(r.threads.size()); break;
      case Metric::kLost: case Metric::kDropped:
        for (const ProcessInfo& p : r.processes)
          v += std::strtod((what == Metric::kLost ? p.lost : p.dropped).c_str(), nullptr);
        break;
      default: break;
    }
  }
  if (what == Metric::kShare)
    v = g.unit == Gate::Unit::kPercent
            ? (life > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(life) : 0.0)
            : static_cast<double>(ns);
  if (what == Metric::kCountOf) v = static_cast<double>(count);
  *actual = Show(v, g.unit);
  if (g.op == ">") return v > g.value;
  if (g.op == ">=") return v >= g.value;
  if (g.op == "<") return v < g.value;
  if (g.op == "<=") return v <= g.value;
  if (g.op == "==") return v == g.value;
  return v != g.value;
}

}  // namespace gotrace::report
