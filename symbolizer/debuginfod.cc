// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/debuginfod.cc - debuginfod lookups on a time budget ----===//
//
// libdebuginfod is dlopened, not linked: it pulls in curl, gnutls, libcrypto
// and Kerberos (about 30 libraries and their constructors), which neither a
// machine without DEBUGINFOD_URLS nor one without libdebuginfod1 should pay
// for, and the gotrace command must run where the library is not installed.
//
// Problem: libdebuginfod bounds a request only by DEBUGINFOD_TIMEOUT (90 s
// without progress, per request) and DEBUGINFOD_MAXTIME; a server that
// accepts and then trickles or never answers could hold an encode for
// minutes per module. Its progress callback is called from the transfer
// loop at least once a second whether or not bytes arrive (the loop waits
// at most 1 s for the socket), and a non-zero return ends the transfer, so
// a deadline checked there bounds a lookup to the budget plus about a
// second. The budget is shared by every lookup of the encode; once spent,
// or once a server fails other than by not having the file (connection
// refused, host unreachable, ...), no more questions are asked: a dead URL
// then costs one failed connection, not one per module.
//===----------------------------------------------------------------------===//
#include "symbolizer/debuginfod.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// libdebuginfod's C interface (elfutils/debuginfod.h, unchanged since
// 0.179), declared here rather than included: the library is dlopened, and
// building gotrace should not need libdebuginfod-dev.
extern "C" {
struct debuginfod_client;
using debuginfod_progressfn_t = int (*)(debuginfod_client*, long, long);
}

namespace gotrace {
namespace {

constexpr const char kSoname[] = "libdebuginfod.so.1";

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

// libdebuginfod's cache directory, chosen as it chooses it (0.188):
// DEBUGINFOD_CACHE_PATH; else the old $HOME/.debuginfod_client_cache if it
// exists; else $XDG_CACHE_HOME/debuginfod_client; else
// $HOME/.cache/debuginfod_client.
std::string CacheDir() {
  if (const char* p = std::getenv("DEBUGINFOD_CACHE_PATH"); p != nullptr && *p != '\0')
    return p;
  const char* home = std::getenv("HOME");
  const std::string h = home != nullptr && *home != '\0' ? home : "/";
  const std::string legacy = h + "/.debuginfod_client_cache";
  if (access(legacy.c_str(), F_OK) == 0) return legacy;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/debuginfod_client";
  return h + "/.cache/debuginfod_client";
}

// Problem: when the progress callback ends a transfer, libdebuginfod 0.188
// returns -ENOENT and records the build-id as missing (an empty file in
// its cache, believed for cache_miss_s, 10 minutes): the next encode would
// not ask even a server that has since recovered. The entry is removed;
// a real answer's file is never empty.
void ForgetCutMiss(const std::string& build_id_hex) {
  const std::string f = CacheDir() + "/" + build_id_hex + "/debuginfo";
  struct stat st;
  if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) unlink(f.c_str());
}

}  // namespace

// The functions of libdebuginfod.so.1 we call (all present since 0.179).
struct DebuginfodLookup::Api {
  void* so = nullptr;
  debuginfod_client* (*begin)() = nullptr;
  void (*end)(debuginfod_client*) = nullptr;
  // (client, build-id bytes, their count, &path): a descriptor or -errno.
  int (*find_debuginfo)(debuginfod_client*, const unsigned char*, int, char**) = nullptr;
  void (*set_progressfn)(debuginfod_client*, debuginfod_progressfn_t) = nullptr;
  void (*set_user_data)(debuginfod_client*, void*) = nullptr;
  void* (*get_user_data)(debuginfod_client*) = nullptr;
};

// The library's functions, loaded once per process and never unloaded
// (curl's and gnutls's exit handlers may still refer to it); null if it
// cannot be loaded.
const DebuginfodLookup::Api* LoadApi() {
  static const DebuginfodLookup::Api* const api = []() -> const DebuginfodLookup::Api* {
    auto* a = new DebuginfodLookup::Api;
    a->so = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (a->so == nullptr) {
      delete a;
      return nullptr;
    }
    a->begin = reinterpret_cast<decltype(a->begin)>(dlsym(a->so, "debuginfod_begin"));
    a->end = reinterpret_cast<decltype(a->end)>(dlsym(a->so, "debuginfod_end"));
    a->find_debuginfo =
        reinterpret_cast<decltype(a->find_debuginfo)>(dlsym(a->so, "debuginfod_find_debuginfo"));
    a->set_progressfn =
        reinterpret_cast<decltype(a->set_progressfn)>(dlsym(a->so, "debuginfod_set_progressfn"));
    a->set_user_data =
        reinterpret_cast<decltype(a->set_user_data)>(dlsym(a->so, "debuginfod_set_user_data"));
    a->get_user_data =
        reinterpret_cast<decltype(a->get_user_data)>(dlsym(a->so, "debuginfod_get_user_data"));
    if (a->begin == nullptr || a->end == nullptr || a->find_debuginfo == nullptr ||
        a->set_progressfn == nullptr || a->set_user_data == nullptr ||
        a->get_user_data == nullptr) {
      return nullptr;
    }
    return a;
  }();
  return api;
}

// libdebuginfod's progress callback: non-zero ends the transfer.
struct DebuginfodProgress {
  static int Call(debuginfod_client* c, long, long) {
    auto* self = static_cast<DebuginfodLookup*>(LoadApi()->get_user_data(c));
    if (self == nullptr || Now() < self->deadline_) return 0;
    self->cut_ = true;
    return 1;
  }
};

bool ParseDebuginfodBudget(const char* text, double* seconds) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0 || v > 86400) return false;
  *seconds = v;
  return true;
}

double DebuginfodBudgetFromEnv() {
  const char* env = std::getenv("GOTRACE_DEBUGINFOD_TIMEOUT");
  if (env == nullptr || *env == '\0') return kDefaultDebuginfodBudget;
  double v;
  if (ParseDebuginfodBudget(env, &v)) return v;
  std::fprintf(stderr,
               "gotrace: GOTRACE_DEBUGINFOD_TIMEOUT=%s is not a number of seconds; using %g\n",
               env, kDefaultDebuginfodBudget);
  return kDefaultDebuginfodBudget;
}

std::shared_ptr<DebuginfodLookup> DebuginfodLookup::Create(double budget_seconds) {
  const char* urls = std::getenv("DEBUGINFOD_URLS");
  if (urls == nullptr || urls[strspn(urls, " \t")] == '\0') return nullptr;
  if (budget_seconds < 0) budget_seconds = DebuginfodBudgetFromEnv();
  if (!(budget_seconds > 0)) return nullptr;
  return std::make_shared<DebuginfodLookup>(urls, budget_seconds);
}

DebuginfodLookup::DebuginfodLookup(std::string urls, double budget_seconds)
    : urls_(std::move(urls)), budget_(budget_seconds), remaining_(budget_seconds) {}

DebuginfodLookup::~DebuginfodLookup() {
  if (client_ != nullptr) api_->end(static_cast<debuginfod_client*>(client_));
}

int DebuginfodLookup::queries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queries_;
}

bool DebuginfodLookup::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopped_;
}

void DebuginfodLookup::StopLocked(const std::string& why) {
  stopped_ = true;
  std::fprintf(stderr,
               "gotrace: debuginfod (%s): %s; no more lookups in this encode, frames without "
               "local debug info keep module+offset names\n",
               urls_.c_str(), why.c_str());
}

bool DebuginfodLookup::LoadLocked() {
  if (tried_load_) return client_ != nullptr;
  tried_load_ = true;
  const Api* api = LoadApi();
  if (api == nullptr) {
    StopLocked(std::string("cannot load ") + kSoname + " (install libdebuginfod1)");
    return false;
  }
  debuginfod_client* c = api->begin();
  if (c == nullptr) {
    StopLocked("cannot start a client");
    return false;
  }
  api->set_user_data(c, this);
  api->set_progressfn(c, &DebuginfodProgress::Call);  // also replaces DEBUGINFOD_PROGRESS's
  client_ = c;
  api_ = api;
  return true;
}

int DebuginfodLookup::FindDebuginfo(const unsigned char* build_id, size_t len,
                                    std::string* path) {
  if (build_id == nullptr || len == 0) return -1;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = Hex(build_id, len);
  if (auto it = answers_.find(key); it != answers_.end()) {
    if (it->second.empty()) return -1;
    const int fd = open(it->second.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) *path = it->second;
    return fd;
  }
  if (stopped_ || !LoadLocked()) return -1;
  std::string& answer = answers_[key];
  ++queries_;
  const double start = Now();
  deadline_ = start + remaining_;
  cut_ = false;
  char* found = nullptr;
  const int rc = api_->find_debuginfo(static_cast<debuginfod_client*>(client_), build_id,
                                      static_cast<int>(len), &found);
  remaining_ -= Now() - start;
  char spent[160];
  std::snprintf(spent, sizeof spent,
                "the %g s budget is spent (--debuginfod-timeout, GOTRACE_DEBUGINFOD_TIMEOUT)",
                budget_);
  if (rc >= 0) {
    if (found != nullptr) answer = found;
    *path = answer;
    std::free(found);
    // A download that used up the budget still counts; the next would be
    // cut at once.
    if (remaining_ <= 0) StopLocked(spent);
    return rc;
  }
  std::free(found);
  if (cut_) ForgetCutMiss(key);
  if (cut_ || remaining_ <= 0) {
    StopLocked(spent);
  } else if (rc != -ENOENT) {
    // Not "the server has no such file": it cannot be reached or failed;
    // asking again for every module would only repeat that.
    StopLocked(std::strerror(-rc));
  }
  return -1;
}

}  // namespace gotrace
