// The safetensors reader against hand-built byte layouts: the reference reader's acceptance rules
// and dtype conversions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "io/safetensors.hpp"

namespace sf {
namespace {

// u64 LE header length, header, data. Sized once and copied into: GCC 12 reports a false
// -Wstringop-overread inside std::vector::insert's reallocation path for the appending version.
std::vector<std::uint8_t> file(const std::string& header, const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> b(8 + header.size() + data.size());
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), b.begin() + 8);
  std::copy(data.begin(), data.end(), b.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return b;
}

std::vector<std::uint8_t> f32_bytes(std::initializer_list<float> v) {
  std::vector<std::uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

Status parse(const std::vector<std::uint8_t>& bytes) {
  SafetensorsFile f;
  return SafetensorsFile::parse(bytes, &f);
}

TEST(Safetensors, ReadsTensorsAndMetadata) {
  // Offsets deliberately out of key order: the reader sorts by begin.
  const std::string h =
      R"({"__metadata__":{"config":"{\"d\":2}"},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )";  // trailing spaces allowed
  SafetensorsFile f;
  const Status s = SafetensorsFile::parse(file(h, f32_bytes({1.5f, -2.0f, 3.25f})), &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.metadata().at("config"), R"({"d":2})");
  std::vector<float> a, b;
  ASSERT_TRUE(f.get_f32("a", &a).ok());
  ASSERT_TRUE(f.get_f32("b", &b).ok());
  EXPECT_EQ(a, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(b, (std::vector<float>{3.25f}));
  EXPECT_EQ(f.find("a")->shape, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(f.get_f32("c", &a).code(), ErrorCode::kMissingTensor);
}

TEST(Safetensors, ConvertsHalfAndBfloat16) {
  // F16: 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF (max), 2^-24 = 0x0001 (smallest subnormal),
  // -0 = 0x8000, inf = 0x7C00. BF16: 1.0 = 0x3F80, -3.0 = 0xC040.
  const std::vector<std::uint8_t> data = {0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00, 0x00, 0x80,
                                          0x00, 0x7C, 0x80, 0x3F, 0x40, 0xC0};
  const std::string h = R"({"h":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
                        R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[12,16]}})";
  SafetensorsFile f;
  ASSERT_TRUE(SafetensorsFile::parse(file(h, data), &f).ok());
  std::vector<float> v;
  ASSERT_TRUE(f.get_f32("h", &v).ok());
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 65504.0f);
  EXPECT_EQ(v[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(v[4] == 0.0f && std::signbit(v[4]));
  EXPECT_TRUE(std::isinf(v[5]));
  ASSERT_TRUE(f.get_f32("b", &v).ok());
  EXPECT_EQ(v, (std::vector<float>{1.0f, -3.0f}));
  std::vector<double> d;
  EXPECT_EQ(f.get_f64("h", &d).code(), ErrorCode::kUnsupportedDtype);
}

TEST(Safetensors, ReadsMisalignedData) {
  // A U8 tensor of 1 byte first puts the F32 tensor at an odd address.
  std::vector<std::uint8_t> data = {7};
  const auto f32 = f32_bytes({0.5f, 0.25f});
  data.insert(data.end(), f32.begin(), f32.end());
  const std::string h = R"({"m":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                        R"("w":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  SafetensorsFile f;
  ASSERT_TRUE(SafetensorsFile::parse(file(h, data), &f).ok());
  std::vector<float> w;
  std::vector<std::int32_t> m;
  ASSERT_TRUE(f.get_f32("w", &w).ok());
  ASSERT_TRUE(f.get_i32("m", &m).ok());
  EXPECT_EQ(w, (std::vector<float>{0.5f, 0.25f}));
  EXPECT_EQ(m, (std::vector<std::int32_t>{7}));
}

TEST(Safetensors, I64OutsideInt32IsAnError) {
  std::vector<std::uint8_t> data(8, 0);
  data[4] = 1;  // 2^32
  SafetensorsFile f;
  ASSERT_TRUE(SafetensorsFile::parse(file(R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", data), &f).ok());
  std::vector<std::int32_t> v;
  EXPECT_EQ(f.get_i32("i", &v).code(), ErrorCode::kIndexOutOfRange);
}

struct BadCase {
  const char* what;
  std::vector<std::uint8_t> bytes;
  const char* message_part;
};

std::vector<BadCase> bad_cases() {
  const auto four = f32_bytes({1.0f});
  std::vector<std::uint8_t> huge(8, 0);
  huge[3] = 0x10;  // header length 2^28 > 100,000,000
  std::vector<std::uint8_t> past = file("{}", {});
  past[0] = 50;  // claims 50 header bytes, file has 2
  return {
      {"empty file", {}, "not a safetensors file: it has 0 bytes, fewer than the 8"},
      {"header over 100 MB", huge, "not a safetensors file: its first 8 bytes give a header length of 268435456, more than the file's 8 bytes (or than 100,000,000)"},
      {"header past end", past, "not a safetensors file: its first 8 bytes give a header length of 50, more than the file's 10 bytes"},
      {"not an object", file("[1,2]", {}), "not a safetensors file: its header does not start with '{'"},
      {"broken json", file(R"({"a":{"dtype")", {}), "not a JSON object"},
      {"unknown dtype", file(R"({"a":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", four), "unknown dtype"},
      {"size mismatch", file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four), "need 8"},
      {"hole at start", file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", four), "contiguous"},
      {"overlap", file(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", four), "contiguous"},
      {"trailing bytes", file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", four), "data buffer has 4"},
      {"offsets past end", file(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", four), "data buffer has 4"},
      {"end before begin", file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", four), "end before begin"},
      {"negative dim", file(R"({"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}})", four), "non-integer dimension"},
      {"shape overflow", file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", four), "overflows"},
      {"metadata not strings", file(R"({"__metadata__":{"n":3}})", {}), "not a string"},
      {"missing offsets", file(R"({"a":{"dtype":"U8","shape":[4]}})", four), "data_offsets"},
  };
}

TEST(Safetensors, RejectsMalformedFilesWithClearErrors) {
  for (const auto& c : bad_cases()) {
    const Status s = parse(c.bytes);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << c.what;
    EXPECT_NE(s.message().find(c.message_part), std::string::npos) << c.what << ": " << s.message();
  }
}

std::vector<std::uint8_t> text(const std::string& t) { return {t.begin(), t.end()}; }

// Files that are something else: what a dev server's fallback page, a config file or a PyTorch
// checkpoint fed to the loader reads as. Before, an HTML page gave "header length
// 7378429055409851003 exceeds 16777216 bytes".
TEST(Safetensors, SaysWhatAFileThatIsNotSafetensorsLooksLike) {
  const struct {
    const char* what;
    std::vector<std::uint8_t> bytes;
    const char* message_part;
  } cases[] = {
      {"HTML", text("<!doctype html><html><head><title>app</title></head></html>"), "looks like an HTML page"},
      {"HTML, upper case, after a BOM and blank lines", text("\xEF\xBB\xBF\r\n  <!DOCTYPE HTML>\n<html>"), "looks like an HTML page"},
      {"HTML without doctype", text("<html lang=en>"), "looks like an HTML page"},
      {"short HTML", text("<html>"), "looks like an HTML page"},
      {"JSON", text(R"({"format": "sensorformer-1", "d_model": 16})"), "looks like a JSON document"},
      {"a ZIP (torch.save)", text("PK\x03\x04\x14\x00\x00\x00\x08\x00"), "looks like a ZIP archive"},
      {"random bytes", {0x13, 0x37, 0xde, 0xad, 0xbe, 0xef, 0x99, 0x42, 0x00, 0x01}, "more than the file's 10 bytes"},
  };
  for (const auto& c : cases) {
    const Status s = parse(c.bytes);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << c.what;
    EXPECT_NE(s.message().find("safetensors: not a safetensors file: "), std::string::npos) << c.what << ": " << s.message();
    EXPECT_NE(s.message().find(c.message_part), std::string::npos) << c.what << ": " << s.message();
  }
}

TEST(Safetensors, MissingFileIsIoError) {
  SafetensorsFile f;
  EXPECT_EQ(SafetensorsFile::read("/nonexistent/x.safetensors", &f).code(), ErrorCode::kIo);
}

}  // namespace
}  // namespace sf
