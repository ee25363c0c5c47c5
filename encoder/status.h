// SPDX-License-Identifier: Apache-2.0
//===-- encoder/status.h - error values for code built without exceptions -===//
//
// The encoder runs inside the traced process (compiled -fno-exceptions), so
// fallible functions return a Status carrying one human-readable line.
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>

namespace gotrace {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string msg) { return Status(std::move(msg)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string msg) : failed_(true), msg_(std::move(msg)) {}
  bool failed_ = false;
  std::string msg_;
};

#define GT_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::gotrace::Status gt_status_ = (expr);  \
    if (!gt_status_.ok()) return gt_status_; \
  } while (0)

}  // namespace gotrace
