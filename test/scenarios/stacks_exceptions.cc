// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 7): C++ exceptions thrown and caught in worker threads while
// the tracer unwinds stacks, in both unwinding modes. libunwind.so.8 defines
// the _Unwind_* functions of the exception ABI too; the tracer loads it with
// RTLD_LOCAL, so the program's exceptions must still go through libgcc_s (the
// program prints which library _Unwind_RaiseException resolves to) and behave
// exactly as untraced.
//
// Each worker throws from under a contended lock (the unlock runs during
// unwinding, in a landing pad, and wakes a waiter: the tracer records the
// release with its stack), rethrows through a catch(...), and destroys an
// object whose destructor waits for another lock while the exception is in
// flight.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 600;

std::mutex g_work;
std::mutex g_cleanup;
unsigned long g_worked = 0;   // guarded by g_work
unsigned long g_cleaned = 0;  // guarded by g_cleanup

// Its destructor runs during unwinding and takes a contended lock.
struct Cleanup {
  int i;
  ~Cleanup() {
    std::lock_guard<std::mutex> lock(g_cleanup);
    if (i % 16 == 0) usleep(100);
    ++g_cleaned;
  }
};

__attribute__((noinline)) void Work(int i) {
  Cleanup c{i};
  std::lock_guard<std::mutex> lock(g_work);
  ++g_worked;
  if (i % 8 == 0) usleep(100);  // others block on g_work meanwhile
  if (i % 3 == 0) throw std::runtime_error("work item " + std::to_string(i));
}

__attribute__((noinline)) void Rethrow(int i) {
  try {
    Work(i);
  } catch (...) {
    if (i % 2 == 0) throw;
    throw std::logic_error("odd item");
  }
}

void Worker(int id, int* caught_runtime, int* caught_logic) {
  for (int i = 0; i < kIterations; ++i) {
    try {
      Rethrow(i);
    } catch (const std::runtime_error& e) {
      if (std::strncmp(e.what(), "work item ", 10) == 0) ++*caught_runtime;
    } catch (const std::logic_error&) {
      ++*caught_logic;
    }
  }
  (void)id;
}

}  // namespace

int main() {
  std::vector<std::thread> threads;
  std::vector<int> runtime(kThreads, 0), logic(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(Worker, t, &runtime[t], &logic[t]);
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t)
    std::printf("thread %d caught %d runtime_error %d logic_error\n", t, runtime[t], logic[t]);
  // Where the program's exception ABI comes from (must be libgcc_s, traced or not).
  Dl_info info{};
  void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
  const char* lib = raise != nullptr && dladdr(raise, &info) != 0 && info.dli_fname != nullptr
                        ? std::strrchr(info.dli_fname, '/')
                        : nullptr;
  std::printf("unwinder %s\n", lib != nullptr ? lib + 1 : "?");
  std::printf("worked %lu cleaned %lu\n", g_worked, g_cleaned);
  const int per = (kIterations + 2) / 3;  // i % 3 == 0
  for (int t = 0; t < kThreads; ++t)
    if (runtime[t] + logic[t] != per) return 1;
  return 0;
}
