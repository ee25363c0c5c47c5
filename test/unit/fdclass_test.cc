// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/fdclass_test.cc - the descriptor-class cache ------------===//
#include "preload/fdclass.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace gotrace::fdclass {
namespace {

TEST_CASE("fd classes: high descriptors are cached, not fstat'ed on every call", "[fdclass]") {
  // A server's sockets above 65535: Set must be remembered (no descriptor
  // 70000 is open here, so a lookup that fell through to fstat would say
  // kUnknown).
  Set(70000, log::FdClass::kSocket);
  CHECK(Get(70000) == log::FdClass::kSocket);
  Copy(70000, 900000);
  CHECK(Get(900000) == log::FdClass::kSocket);
  ForgetRange(69999, 1u << 30);  // close_range(69999, ~0U)
  CHECK(Get(70000) == log::FdClass::kUnknown);
  CHECK(Get(900000) == log::FdClass::kUnknown);
}

TEST_CASE("fd classes: lazily classified and forgotten on close", "[fdclass]") {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  int p[2];
  REQUIRE(pipe(p) == 0);
  CHECK(Get(sv[0]) == log::FdClass::kSocket);
  CHECK(Get(p[0]) == log::FdClass::kPipe);
  for (int fd : {sv[0], sv[1], p[0], p[1]}) {
    close(fd);
    Forget(fd);
  }
  CHECK(Get(sv[0]) == log::FdClass::kUnknown);
}

TEST_CASE("fd classes: a fork child starts with the table empty and finds classes with fstat",
          "[fdclass]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  Set(p[0], log::FdClass::kPipe);
  Set(p[1], log::FdClass::kPipe);
  WipeOnFork();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    AfterForkChild();
    int bad = 0;
    if (g_table[p[0]].load() != 0) bad |= 1;  // the kernel gave the child the table empty
    Forget(p[0]);                             // nothing stored: nothing read or written
    Copy(p[0], p[1]);
    if (Get(p[0]) != log::FdClass::kPipe) bad |= 2;  // found again (fstat)
    if (Get(p[1]) != log::FdClass::kPipe) bad |= 4;
    _exit(bad);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(Get(p[0]) == log::FdClass::kPipe);  // the parent's classes are its own
  for (int fd : {p[0], p[1]}) {
    close(fd);
    Forget(fd);
  }
}

}  // namespace
}  // namespace gotrace::fdclass
