// SPDX-License-Identifier: Apache-2.0
// Scenario: a work queue of 8 threads on a std::mutex and two
// std::condition_variables, built as distributions build (-O2 -g): main is
// placed in .text.startup, right before crt1's _start, which has no debug
// info. The symbolizer gave _start the line where main's CU ends (its line
// table's last row, past the end of the CU's code); addr2line says ??:?.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

int main() {
  std::mutex m;
  std::condition_variable work, finished;
  std::queue<int> q;
  bool stop = false;
  int done = 0;
  std::atomic<long> sum{0};
  constexpr int kTasks = 4000;
  std::vector<std::thread> workers;
  for (int i = 0; i < 8; i++) {
    workers.emplace_back([&] {
      for (;;) {
        int t;
        {
          std::unique_lock<std::mutex> l(m);
          work.wait(l, [&] { return stop || !q.empty(); });
          if (q.empty()) return;
          t = q.front();
          q.pop();
        }
        long s = 0;
        for (int k = 0; k < 500; k++) s += (t * k) % 7;
        sum += s;
        std::lock_guard<std::mutex> l(m);
        if (++done == kTasks) finished.notify_one();
      }
    });
  }
  for (int i = 0; i < kTasks; i++) {
    {
      std::lock_guard<std::mutex> l(m);
      q.push(i);
    }
    work.notify_one();
  }
  {
    std::unique_lock<std::mutex> l(m);
    finished.wait(l, [&] { return done == kTasks; });
    stop = true;
  }
  work.notify_all();
  for (auto& t : workers) t.join();
  std::printf("sum=%ld done=%d\n", sum.load(), done);
  return 0;
}
