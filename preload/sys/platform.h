// SPDX-License-Identifier: Apache-2.0
//===-- preload/sys/platform.h - per-architecture and glibc specifics -----===//
//
// G12: platform and glibc-version specifics live here and nowhere else.
//===----------------------------------------------------------------------===//
#pragma once

namespace gotrace {

// The symbol version of glibc's current pthread_cond_* ABI (tsan's
// PTHREAD_ABI_BASE).
#if defined(__x86_64__)
inline constexpr const char* kCondVersion = "GLIBC_2.3.2";
#elif defined(__aarch64__)
inline constexpr const char* kCondVersion = "GLIBC_2.17";
#else
#error "gotrace: add this architecture's pthread_cond_* symbol version"
#endif

}  // namespace gotrace
