// SPDX-License-Identifier: Apache-2.0
// Catch2 (v2, Debian's catch2 package) main for the test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
