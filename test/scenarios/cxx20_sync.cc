// SPDX-License-Identifier: Apache-2.0
// Scenario: C++20 std::atomic wait/notify, std::counting_semaphore,
// std::barrier and std::latch. libstdc++ reaches the kernel through
// syscall(SYS_futex, ...): futex waits, woken by the notifying thread.
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>

std::atomic<int> turn{0};
std::counting_semaphore<16> slots{0};

// atomic::wait spins a little before it sleeps on the futex: the pause before
// handing the turn over makes the other side really sleep (1 ms: long enough
// also on a loaded machine, where 100 us often ended inside the spin).
__attribute__((noinline)) void AtomicPingPong(int me, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    int t;
    while ((t = turn.load()) != me) turn.wait(t);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    turn.store(1 - me);
    turn.notify_one();
  }
}

int main() {
  std::thread a(AtomicPingPong, 0, 100), b(AtomicPingPong, 1, 100);
  a.join();
  b.join();

  long got = 0;
  std::thread consumer([&] {
    for (int i = 0; i < 50; ++i) {
      slots.acquire();
      ++got;
    }
  });
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    slots.release();
  }
  consumer.join();

  std::barrier phase(4);
  std::latch done(4);
  std::vector<std::thread> workers;
  std::atomic<int> work{0};
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      for (int r = 0; r < 10; ++r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(w + 1));
        work.fetch_add(1);
        phase.arrive_and_wait();
      }
      done.count_down();
    });
  }
  done.wait();
  for (auto& t : workers) t.join();
  std::printf("turn %d got %ld work %d\n", turn.load(), got, work.load());
  return got == 50 && work == 40 ? 0 : 1;
}
