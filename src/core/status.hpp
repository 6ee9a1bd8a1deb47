// Status: how every fallible call in the core reports failure. The core never throws and never
// aborts; bindings turn a non-ok Status into a JavaScript SensorformerError with the same code.
#pragma once

#include <string>
#include <utility>

namespace sf {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,   // a size, count or option outside its valid range
  kShapeMismatch,     // buffers whose lengths do not agree with the stated shapes
  kIndexOutOfRange,   // an id (sensor, modality, ...) past the end of its table
  kNonFinite,         // NaN or Inf where a finite number is required (timestamps, ...)
  kBadFormat,         // a weights/fixture file that breaks the safetensors rules
  kUnsupportedDtype,  // a tensor dtype the reader cannot convert
  kMissingTensor,     // a tensor the caller asked for is not in the file
  kIo,                // a file that cannot be read
  kResourceExhausted, // a request whose memory would not fit (refused before allocating)
};

// Stable names: the `code` a JavaScript caller sees on SensorformerError.
inline const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kShapeMismatch: return "SHAPE_MISMATCH";
    case ErrorCode::kIndexOutOfRange: return "INDEX_OUT_OF_RANGE";
    case ErrorCode::kNonFinite: return "NON_FINITE";
    case ErrorCode::kBadFormat: return "BAD_FORMAT";
    case ErrorCode::kUnsupportedDtype: return "UNSUPPORTED_DTYPE";
    case ErrorCode::kMissingTensor: return "MISSING_TENSOR";
    case ErrorCode::kIo: return "IO";
    case ErrorCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
  }
  return "UNKNOWN";
}

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

#define SF_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::sf::Status sf_status_ = (expr);       \
    if (!sf_status_.ok()) return sf_status_; \
  } while (0)

}  // namespace sf
