// SPDX-License-Identifier: Apache-2.0
//===-- test/scenarios/annotate_raii.cc - C++ regions, and regions left open -===//
//
// gotrace::Region ends its region however the scope is left (here: by an
// exception, 3 times). A thread returns with its region "left-open" still
// open, and main exits inside its region "exit-open": the tracer must close
// both for the parser. Prints the same traced or not.
//===----------------------------------------------------------------------===//
#include <gotrace/annotate.h>

#include <cstdio>
#include <stdexcept>
#include <thread>

namespace {

int Step(uint64_t task, int i) {
  gotrace::Region r(task, "step");
  if (i % 3 == 0) throw std::runtime_error("odd step");
  return i * 2;
}

}  // namespace

int main() {
  const uint64_t task = gotrace_task_begin("raii");
  int sum = 0, failed = 0;
  for (int i = 0; i < 9; ++i) {
    try {
      gotrace::Region outer(task, "attempt");
      sum += Step(task, i);
    } catch (const std::exception& e) {
      ++failed;
      gotrace_log(task, "error", e.what());
    }
  }
  std::thread t([task] {
    gotrace_region_begin(task, "left-open");  // never ended: the thread ends inside it
  });
  t.join();
  gotrace_task_end(task);
  std::printf("sum %d, failed %d\n", sum, failed);
  gotrace_region_begin(0, "exit-open");  // never ended: the program exits inside it
  return 0;
}
