// SPDX-License-Identifier: Apache-2.0
//===-- test/bench/fdclass_bench.cc - the descriptor class lookup ---------===//
//
// Every recorded I/O call asks preload/fdclass.h what its descriptor is (a
// socket, pipe or tty makes a network wait). This is all added cost, so it is
// measured directly, not as traced - plain:
//   BM_FdClassCached       the usual case: one relaxed byte load
//   BM_FdClassFirstLookup  a descriptor the tracer has not seen (opened before
//                          tracing, or by a call it does not interpose): one
//                          fstat (plus an ioctl for a character device), then
//                          cached
//===----------------------------------------------------------------------===//
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload/fdclass.h"

namespace {

void BM_FdClassCached(benchmark::State& state) {
  int fds[2];
  if (pipe(fds) != 0) {
    state.SkipWithError("pipe");
    return;
  }
  gotrace::fdclass::Forget(fds[0]);
  (void)gotrace::fdclass::Get(fds[0]);  // cached from now on
  for (auto _ : state) benchmark::DoNotOptimize(gotrace::fdclass::Get(fds[0]));
  close(fds[0]);
  close(fds[1]);
}
BENCHMARK(BM_FdClassCached);

void BM_FdClassFirstLookup(benchmark::State& state) {
  const int fd = static_cast<int>(state.range(0)) == 0 ? open("/dev/null", O_RDONLY)
                                                      : socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) {
    state.SkipWithError("open");
    return;
  }
  for (auto _ : state) {
    gotrace::fdclass::Forget(fd);
    benchmark::DoNotOptimize(gotrace::fdclass::Get(fd));
  }
  close(fd);
  state.SetLabel(state.range(0) == 0 ? "/dev/null (fstat + ioctl)" : "socket (fstat)");
}
BENCHMARK(BM_FdClassFirstLookup)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
