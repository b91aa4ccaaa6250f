// Status and Result<T>: expected failures are values, never exceptions.
//
// A Status is either OK or carries a code and a human-readable message. Functions that can fail in
// expected ways (bad input files, invalid model specs, shape mismatches) return Status or Result<T>
// and never throw. Both are [[nodiscard]] so an ignored failure is a compiler warning.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace trainingd::engine {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed (spec, shape, option)
  kNotFound,         // a named file, variable or dataset does not exist
  kDataLoss,         // a file exists but is truncated or corrupt
  kIoError,          // the OS failed an operation (open, read, write, fsync)
  kFailedPrecondition,
  kUnavailable,        // transient; retrying may succeed
  kAborted,            // transient conflict (TF's AbortedError); retrying may succeed
  kOutOfRange,         // the input is exhausted (num_epochs done)
  kDeadlineExceeded,   // a wait ran out of time
  kCancelled,          // given up because a stop was requested
  kResourceExhausted,  // no space left (a full disk or quota), or over a budget
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class Status;
// The status for a system call that failed with `err` (errno): ResourceExhausted for a full disk
// or quota (ENOSPC, EDQUOT), so callers can tell it apart, IoError otherwise. `message` should
// already name the file, the call and strerror(err).
Status ErrnoStatus(int err, std::string message);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
  static Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "InvalidArgument: message", or "OK".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.ok() && "Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace trainingd::engine

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define TRAININGD_RETURN_IF_ERROR(expr)       \
  do {                                        \
    ::trainingd::engine::Status _st = (expr); \
    if (!_st.ok()) return _st;                \
  } while (0)
