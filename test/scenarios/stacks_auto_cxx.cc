// SPDX-License-Identifier: Apache-2.0
// Scenario (issue 14): the C++ side of stacks_auto.c, built -O2
// -fomit-frame-pointer: std::thread workers go through a class template's
// member function, a lambda called through std::function and a virtual call
// into a contended std::mutex, or into a blocking read of a pipe. main holds
// the mutex, and writes the pipe, only once each worker sleeps in its wait.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <thread>

extern "C" {
#include "stacks_auto.h"
}

namespace {

std::mutex mu;
int pipefd[2];
std::atomic<int> tids[2];
std::atomic<unsigned long> sink;  // keeps the work from being optimised away

struct Waiter {
  virtual ~Waiter() = default;
  virtual void Wait() = 0;
};

struct LockWaiter final : Waiter {
  __attribute__((noinline)) void Wait() override {
    std::lock_guard<std::mutex> g(mu);  // LINE:cxx_lock_wait
    sink++;
  }
};

struct ReadWaiter final : Waiter {
  __attribute__((noinline)) void Wait() override {
    char c;
    if (read(pipefd[0], &c, 1) == 1) sink += static_cast<unsigned char>(c);  // LINE:cxx_read_wait
  }
};

template <class W>
class Pipeline {
 public:
  __attribute__((noinline)) void Run() {
    W w;
    Waiter* base = &w;
    std::function<void()> step = [base] {
      base->Wait();  // LINE:cxx_lambda
      sink++;
    };
    step();  // LINE:cxx_run
    sink++;
  }
};

template <class W>
void Worker(int who) {
  tids[who] = static_cast<int>(syscall(SYS_gettid));
  Pipeline<W>().Run();
  sink++;
}

}  // namespace

int main() {
  if (pipe(pipefd) != 0) return 2;
  std::thread t0, t1;
  {
    std::lock_guard<std::mutex> g(mu);
    t0 = std::thread(Worker<LockWaiter>, 0);
    t1 = std::thread(Worker<ReadWaiter>, 1);
    for (auto& tid : tids) {
      while (tid.load() == 0) sched_yield();
      wait_until_sleeping(tid.load());
    }
  }
  if (write(pipefd[1], "x", 1) != 1) return 2;
  t0.join();
  t1.join();
  save_maps();
  std::printf("auto cxx waits 2\n");
  return 0;
}
