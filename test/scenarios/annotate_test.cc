// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/annotate_test.cc - gotrace/annotate.h end to end ---===//
//
// Issue 17: annotated programs run the same with and without the tracer;
// traced, their tasks, regions and log lines are Go user events that the
// 1.19 parser accepts and go tool trace lists on /usertasks and
// /userregions with the right counts.
//===----------------------------------------------------------------------===//
#include <cctype>
#include <map>
#include <set>

#include "test/scenarios/scenario_util.h"

using namespace gotrace::testing;

namespace {

// The count in each row of type `type` of a /usertasks or /userregions page:
// rows link to "/usertask?type=T" or "/userregion?type=T&pc=HEX" with the
// count as the link text (cmd/trace/annotations.go templates; the histogram
// links add &latmin=... and are not counted). Regions of one name begun at
// different places are rows of their own: summed.
size_t PageCount(const std::string& body, const std::string& link, const std::string& type) {
  size_t total = 0;
  const std::string key = link + "?type=" + type;
  for (size_t at = body.find(key); at != std::string::npos; at = body.find(key, at + 1)) {
    size_t i = at + key.size();
    if (body.compare(i, 4, "&pc=") == 0) {
      i += 4;
      while (i < body.size() && std::isxdigit(static_cast<unsigned char>(body[i]))) ++i;
    }
    if (body.compare(i, 2, "\">") != 0) continue;  // a histogram link, a longer name
    total += std::strtoul(body.c_str() + i + 2, nullptr, 10);
  }
  return total;
}

// The value of `key=` in a -d line's text (string arguments come last).
std::string StrArg(const GoEvent& e, const std::string& key) {
  const size_t at = e.text.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t b = at + key.size() + 2;
  const size_t end = e.text.find(' ', b);
  return e.text.substr(b, end == std::string::npos ? std::string::npos : end - b);
}

}  // namespace

TEST_CASE("annotated thread pool: tasks, nested regions and logs in go tool trace", "[annotate]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("annotate_pool")}, dir);
  CHECK(s.plain.exit_code == 0);
  CHECK(s.plain.out == "24 requests, total 16452\n");

  // 24 requests and the serve task; 4 regions per request and "wait".
  CHECK(s.parsed.Count("UserTaskCreate") == 25);
  CHECK(s.parsed.Count("UserTaskEnd") == 25);
  CHECK(s.parsed.Count("UserRegion") == 2 * (24 * 4 + 1));
  CHECK(s.parsed.Count("UserLog") == 48);

  // Requests begin on the main thread and end on the workers; each is a
  // subtask of "serve".
  std::map<uint64_t, uint64_t> begun_on;
  uint64_t serve = 0;
  for (const GoEvent* e : s.parsed.Find("UserTaskCreate")) {
    begun_on[e->args.at("taskid")] = e->g;
    if (StrArg(*e, "name") == "serve") serve = e->args.at("taskid");
  }
  REQUIRE(serve != 0);
  size_t cross = 0;
  for (const GoEvent* e : s.parsed.Find("UserTaskCreate"))
    if (e->args.at("taskid") != serve) CHECK(e->args.at("pid") == serve);
  for (const GoEvent* e : s.parsed.Find("UserTaskEnd")) {
    REQUIRE(begun_on.count(e->args.at("taskid")) == 1);
    if (begun_on[e->args.at("taskid")] != e->g) ++cross;
  }
  CHECK(cross == 24);
  // The requests' regions run on the workers.
  std::set<uint64_t> region_gs;
  for (const GoEvent* e : s.parsed.Find("UserRegion")) {
    if (e->args.at("mode") != 0) continue;
    if (StrArg(*e, "name") != "wait") region_gs.insert(e->g);
  }
  CHECK(region_gs.size() >= 1);
  CHECK(region_gs.count(begun_on[serve]) == 0);

  std::vector<std::string> pages;
  const std::string err = WebPages(s.trace, {"/usertasks", "/userregions"}, &pages);
  INFO(err);
  REQUIRE(err.empty());
  CHECK(PageCount(pages[0], "/usertask", "request") == 24);
  CHECK(PageCount(pages[0], "/usertask", "serve") == 1);
  for (const char* name : {"handle", "parse", "compute", "db"}) {
    INFO(name);
    CHECK(PageCount(pages[1], "/userregion", name) == 24);
  }
  CHECK(PageCount(pages[1], "/userregion", "wait") == 1);
  // The regions' row names the function that began them (the caller's stack).
  CHECK_THAT(pages[1], Catch::Contains("Handle"));
}

TEST_CASE("annotations from C++: RAII regions through exceptions, regions left open",
          "[annotate]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("annotate_raii")}, dir);
  CHECK(s.plain.out == "sum 54, failed 3\n");
  // 9 attempts and 9 steps, each begun and ended (3 ends by unwinding);
  // "left-open" is ended before its thread's GoEnd, "exit-open" at the end.
  size_t starts = 0, ends = 0;
  std::map<std::string, size_t> ended;
  for (const GoEvent* e : s.parsed.Find("UserRegion")) {
    if (e->args.at("mode") == 0) ++starts;
    else ++ended[StrArg(*e, "name")], ++ends;
  }
  CHECK(starts == 20);
  CHECK(ends == 20);
  CHECK(ended["step"] == 9);
  CHECK(ended["left-open"] == 1);
  CHECK(ended["exit-open"] == 1);
  CHECK(s.parsed.Count("UserLog") == 3);

  std::vector<std::string> pages;
  const std::string err = WebPages(s.trace, {"/userregions"}, &pages);
  INFO(err);
  REQUIRE(err.empty());
  CHECK(PageCount(pages[0], "/userregion", "step") == 9);
  CHECK(PageCount(pages[0], "/userregion", "attempt") == 9);
}

TEST_CASE("GOTRACE_EVENTS without annotate: the program's annotations are not recorded",
          "[annotate]") {
  TempDir dir;
  ScenarioRun s = RunTraced({Scenario("annotate_pool")}, dir, {"GOTRACE_EVENTS=sync"});
  CHECK(s.parsed.Count("UserTaskCreate") == 0);
  CHECK(s.parsed.Count("UserRegion") == 0);
  CHECK(s.parsed.Count("GoBlockCond") + s.parsed.Count("GoBlockSync") > 0);
}
