// SPDX-License-Identifier: Apache-2.0
//===-- test/unit/rust_demangle_test.cc - Rust legacy names ---------------===//
#include <cxxabi.h>

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

#include "symbolizer/rust_demangle.h"

namespace gotrace {
namespace {

std::string Cxa(const char* mangled) {
  int status = -1;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d != nullptr ? d : "";
  std::free(d);
  return s;
}

std::string Rust(const char* mangled) {
  const std::optional<std::string> r = RustLegacyName(mangled, Cxa(mangled));
  return r ? *r : "<none>";
}

TEST_CASE("Rust legacy names: escapes, paths and the hash", "[symbolizer]") {
  // Names rustc 1.95 emitted for a test program (trait impls, closures).
  CHECK(Rust("_ZN54_$LT$i32$u20$as$u20$core..iter..traits..accum..Sum$GT$3sum17hd648f988cd218b24E") ==
        "<i32 as core::iter::traits::accum::Sum>::sum");
  CHECK(Rust("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
             "closure$u7d$$u7d$$GT$17h0123456789abcdefE") ==
        "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
  CHECK(Rust("_ZN3std2rt10lang_start17h5c3a1e2f9b8d7c6aE") == "std::rt::lang_start");
  CHECK(Rust("_ZN4core3fmt5write17h9c3b2a1d0e0f1a2bE") == "core::fmt::write");
  CHECK(Rust("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$3fmt17habcdefabcdefabcdE") ==
        "<alloc::string::String as core::fmt::Display>::fmt");
  CHECK(Rust("_ZN5hello4main28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000001E") ==
        "hello::main::{{closure}}");
  CHECK(Rust("_ZN4test22RF$RF$BP$BP$SP$SP$C$C$17h0000000000000001E") == "test::RF&BP*SP@C,");
}

TEST_CASE("Rust legacy names: C++ and damaged names are left alone", "[symbolizer]") {
  // Each of these is a valid Itanium name: only the Rust layer declines.
  for (const char* m : {"_ZN3foo3barEv", "_ZN3foo3bar17hnothexnothexnothE",
                        "_ZN4test5a$ZZ$17h0000000000000001E", "_ZN4test6a$u20b17h0000000000000001E"})
    CHECK_FALSE(Cxa(m).empty());
  CHECK(Rust("_ZN3foo3barEv") == "<none>");                          // C++, no hash
  CHECK(Rust("_ZN3foo3bar17hnothexnothexnothE") == "<none>");        // not a hash
  CHECK(Rust("_ZN4test5a$ZZ$17h0000000000000001E") == "<none>");     // unknown escape
  CHECK(Rust("_ZN4test6a$u20b17h0000000000000001E") == "<none>");    // unterminated escape
  CHECK(Rust("_ZN4test3h1217h0000000000000001E") == "test::h12");
  CHECK(RustLegacyName("main", "main") == std::nullopt);
}

}  // namespace
}  // namespace gotrace
