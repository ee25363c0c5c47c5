// SPDX-License-Identifier: Apache-2.0
//===-- symbolizer/rust_demangle.h - Rust's legacy symbol names ------------===//
//
// rustc's legacy mangling (the default of stable Rust) is an Itanium nested
// name whose components escape what C++ identifiers cannot hold ($LT$ for
// '<', $u20$ for ' ', ".." for "::") and whose last component is a hash
// ("h" and 16 hex digits). __cxa_demangle accepts it and leaves the escapes:
//   _ZN50_$LT$i32$u20$as$u20$core..iter..traits..accum..Sum$GT$3sum17h...E
//   -> _$LT$i32$u20$as$u20$core..iter..traits..accum..Sum$GT$::sum::h...
// RustLegacyName turns that into what Rust users read: "<i32 as
// core::iter::traits::accum::Sum>::sum". (The v0 scheme, "_R...", is not
// handled: such names are shown as they are.)
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gotrace {

// `mangled`: the symbol; `demangled`: what __cxa_demangle made of it.
// nullopt when the symbol is not a Rust legacy name (no hash component) or
// holds an escape this function does not know (then the caller keeps the
// Itanium rendering).
std::optional<std::string> RustLegacyName(std::string_view mangled, std::string_view demangled);

}  // namespace gotrace
