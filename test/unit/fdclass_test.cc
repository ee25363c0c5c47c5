// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/fdclass_test.cc - the descriptor-class cache ------------===//
#include "preload/fdclass.h"

#include <sys/socket.h>
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

}  // namespace
}  // namespace gotrace::fdclass
