// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/debuginfod_test.cc - the debuginfod lookup's rules ------===//
//
// symbolizer/debuginfod.h without a server: when it asks nothing at all,
// one question per build-id, and no more questions once a server failed.
// The lookups against a real server are in test/scenarios/debuginfod_test.cc.
//===----------------------------------------------------------------------===//
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "symbolizer/debuginfod.h"
#include "test/support/log_builder.h"

namespace gotrace::testing {
namespace {

// Sets an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A port on 127.0.0.1 that refuses connections (just handed out, closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

TEST_CASE("debuginfod lookup: nothing to ask without DEBUGINFOD_URLS or with a budget of 0",
          "[debuginfod]") {
  {
    ScopedEnv urls("DEBUGINFOD_URLS", "");
    CHECK(DebuginfodLookup::Create(10) == nullptr);
  }
  {
    ScopedEnv urls("DEBUGINFOD_URLS", "  ");
    CHECK(DebuginfodLookup::Create(10) == nullptr);
  }
  ScopedEnv urls("DEBUGINFOD_URLS", "http://127.0.0.1:1");
  CHECK(DebuginfodLookup::Create(0) == nullptr);
  CHECK(DebuginfodLookup::Create(10) != nullptr);
  {
    ScopedEnv budget("GOTRACE_DEBUGINFOD_TIMEOUT", "0");
    CHECK(DebuginfodLookup::Create(-1) == nullptr);  // negative: the variable's budget
  }
  ScopedEnv budget("GOTRACE_DEBUGINFOD_TIMEOUT", "2.5");
  CHECK(DebuginfodBudgetFromEnv() == 2.5);
}

TEST_CASE("debuginfod lookup: budgets in seconds", "[debuginfod]") {
  double s = -1;
  CHECK(ParseDebuginfodBudget("10", &s));
  CHECK(s == 10);
  CHECK(ParseDebuginfodBudget("0.5", &s));
  CHECK(s == 0.5);
  CHECK(ParseDebuginfodBudget("0", &s));
  CHECK(s == 0);
  for (const char* bad : {"", "-1", "1s", "nan", "inf", "100000"}) {
    INFO(bad);
    CHECK_FALSE(ParseDebuginfodBudget(bad, &s));
  }
  CHECK_FALSE(ParseDebuginfodBudget(nullptr, &s));
}

TEST_CASE("debuginfod lookup: a refused connection stops the lookups, one question per build-id",
          "[debuginfod]") {
  if (void* so = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL); so == nullptr) {
    WARN("SKIP: libdebuginfod.so.1 cannot be loaded (Debian package libdebuginfod1)");
    return;
  }
  TempDir dir;
  ScopedEnv urls("DEBUGINFOD_URLS", "http://127.0.0.1:" + std::to_string(ClosedPort()));
  ScopedEnv cache("DEBUGINFOD_CACHE_PATH", dir.File("cache"));
  auto lookup = DebuginfodLookup::Create(10);
  REQUIRE(lookup != nullptr);
  const unsigned char a[20] = {0xa1, 0x02, 0x03};
  const unsigned char b[20] = {0xb2, 0x02, 0x03};
  std::string path;
  CHECK(lookup->FindDebuginfo(a, sizeof a, &path) == -1);
  CHECK(lookup->queries() == 1);
  CHECK(lookup->stopped());
  CHECK(lookup->FindDebuginfo(a, sizeof a, &path) == -1);  // answered from memory
  CHECK(lookup->FindDebuginfo(b, sizeof b, &path) == -1);  // not asked: stopped
  CHECK(lookup->queries() == 1);
  CHECK(path.empty());
  CHECK(lookup->FindDebuginfo(nullptr, 0, &path) == -1);
}

}  // namespace
}  // namespace gotrace::testing
