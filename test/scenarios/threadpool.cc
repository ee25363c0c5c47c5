// SPDX-License-Identifier: Apache-2.0
// Scenario: a C++ thread pool (std::thread, std::mutex,
// std::condition_variable) whose tasks throw and catch exceptions; the
// tracer must not change results or exception handling.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <thread>
#include <vector>

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Run(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  void Submit(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return done_ || !q_.empty(); });
        if (q_.empty()) return;
        f = std::move(q_.front());
        q_.pop();
      }
      f();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::queue<std::function<void()>> q_;
  std::vector<std::thread> workers_;
  bool done_ = false;
};

__attribute__((noinline)) long Task(int i) {
  if (i % 7 == 0) throw std::runtime_error("task " + std::to_string(i) + " failed");
  long s = 0;
  for (int k = 0; k <= i; ++k) s += k;
  return s;
}

int main() {
  std::mutex result_mu;
  long sum = 0;
  int failures = 0;
  {
    Pool pool(4);
    for (int i = 0; i < 2000; ++i) {
      // Batches with pauses: the workers drain the queue and wait on the
      // condition variable between them, whatever the machine's load.
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      pool.Submit([i, &result_mu, &sum, &failures] {
        try {
          const long v = Task(i);
          std::lock_guard<std::mutex> l(result_mu);
          sum += v;
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> l(result_mu);
          ++failures;
        }
      });
    }
  }
  std::printf("sum %ld failures %d\n", sum, failures);
  return failures == 286 ? 0 : 1;
}
