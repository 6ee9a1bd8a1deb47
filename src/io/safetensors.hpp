// The one reader of safetensors files (model weights, test fixtures).
//
// Layout: u64 little-endian header length N, N bytes of UTF-8 JSON, then the data buffer. Each
// entry is {dtype, shape, data_offsets: [begin, end)} relative to the buffer; the optional
// "__metadata__" maps strings to strings. Validation follows the reference reader
// (huggingface/safetensors): header at most 16 MiB (see kMaxHeaderBytes), offsets contiguous from 0 with no
// hole and ending exactly at the end of the file, byte size = element count x dtype size, no
// overflow. Every violation is a kBadFormat Status naming the tensor; nothing aborts.
// Tensors are copied out on access (third-party writers do not align them), converting F16 and
// BF16 to float32.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace sf {

enum class Dtype { kBool, kU8, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF16, kBF16, kF32, kF64 };

const char* dtype_name(Dtype d);

struct TensorInfo {
  Dtype dtype;
  std::vector<std::int64_t> shape;
  std::size_t begin = 0;  // byte offsets into the data buffer
  std::size_t end = 0;
  std::int64_t numel() const;
};

class SafetensorsFile {
 public:
  // The reference reader allows 100,000,000 header bytes; a JSON DOM of that size would not fit in
  // a WebAssembly heap (about 10 bytes of DOM per header byte), and a sensorformer header is a few
  // KB (2.4 MB at 1024 factorized layers), so 16 MiB.
  static constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t(16) << 20;
  // Past the reference reader's limit, or past the end of the file, a header length means the
  // file is not safetensors at all (an HTML page's first 8 bytes read as 7.4e18).
  static constexpr std::uint64_t kPlausibleHeaderBytes = 100'000'000;

  // Takes the whole file's bytes.
  static Status parse(std::vector<std::uint8_t> bytes, SafetensorsFile* out);
  static Status read(const std::string& path, SafetensorsFile* out);

  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find(const std::string& name) const;
  std::size_t data_bytes() const { return bytes_.size() - data_start_; }  // the tensors' buffer

  // Copies a tensor out as float32 (from F32, F16, BF16), float64 (from F64, F32) or int32 (from
  // I32, I64 in range, U8, BOOL). kMissingTensor / kUnsupportedDtype otherwise.
  Status get_f32(const std::string& name, std::vector<float>* out) const;
  Status get_f64(const std::string& name, std::vector<double>* out) const;
  Status get_i32(const std::string& name, std::vector<std::int32_t>* out) const;

 private:
  Status lookup(const std::string& name, const TensorInfo** info) const;
  const std::uint8_t* data(const TensorInfo& t) const { return bytes_.data() + data_start_ + t.begin; }

  std::vector<std::uint8_t> bytes_;
  std::size_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, TensorInfo> tensors_;
};

// IEEE binary16 and bfloat16 bit patterns to float32 (exact: both are subsets of float32).
float half_to_float(std::uint16_t h);
float bfloat16_to_float(std::uint16_t b);

}  // namespace sf
