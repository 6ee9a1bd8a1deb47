// Continuous-time encoding against a float64 evaluation of the seed formula (fixtures), and the
// sensor-identity sum.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <vector>

#include "encode/time_encoding.hpp"
#include "kernels/sinusoid.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using sf::testing::AllClose;
using sf::testing::Closeness;
using sf::testing::fixture;
using sf::testing::tensor;

// The bound for |t - t_ref| up to a day; the float32 formula misses it by 20x at 6,000 s.
constexpr double kTimeAtol = 1e-5;

struct Case {
  std::string name;
  int n, d;
  double max_period;
  bool identity;
};

std::vector<Case> time_cases() {
  const auto& f = fixture("time_encoding.safetensors");
  std::vector<Case> cases;
  const auto meta = f.metadata().find("cases");
  if (meta == f.metadata().end()) return cases;
  for (const auto& c : nlohmann::json::parse(meta->second))
    cases.push_back({c["name"], c["n"], c["d"], c["max_period"], c["identity"]});
  return cases;
}

class TimeParity : public ::testing::TestWithParam<Case> {};

TEST_P(TimeParity, MatchesFloat64Formula) {
  const Case& c = GetParam();
  const auto& f = fixture("time_encoding.safetensors");
  const auto t = tensor<double>(f, c.name + ".t"), t_ref = tensor<double>(f, c.name + ".t_ref"),
             want = tensor<double>(f, c.name + ".enc");
  ASSERT_EQ(static_cast<int>(t.size()), c.n);
  const TimeEncodingConfig cfg{c.d, c.max_period};
  for (auto kset : {kernels::KernelSet::kSimd, kernels::KernelSet::kReference}) {
    std::vector<float> out(c.n * c.d);
    const Status s = encode_time(cfg, t.data(), c.n, t_ref[0], out.data(), kset);
    ASSERT_TRUE(s.ok()) << s.message();
    Closeness cl;
    const std::string tag = c.name + (kset == kernels::KernelSet::kSimd ? " simd" : " ref");
    ASSERT_TRUE(AllClose(out.data(), want.data(), out.size(), kTimeAtol, 0, tag, &cl));
    sf::testing::report(tag, cl);
    if (c.identity) {
      const auto ids = tensor<std::int32_t>(f, c.name + ".sensor_ids");
      const auto table = tensor<float>(f, c.name + ".identity_table");
      const auto want_sum = tensor<double>(f, c.name + ".enc_plus_identity");
      ASSERT_TRUE(add_embedding(out.data(), c.n, c.d, ids.data(), table.data(),
                               static_cast<int>(table.size()) / c.d).ok());
      // identity values are N(0,1) floats: their float32 sum adds one ulp of ~4 (5e-7).
      ASSERT_TRUE(AllClose(out.data(), want_sum.data(), out.size(), kTimeAtol, 0, tag + " + identity", &cl));
      sf::testing::report(tag + " + identity", cl);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TimeParity, ::testing::ValuesIn(time_cases()),
                         [](const auto& info) { return info.param.name; });

// The fixture is sharp enough to catch the float32 formula: evaluated the seed's way (float32
// angle), day_d64 is off by far more than the tolerance.
TEST(TimeParity, Float32FormulaWouldFail) {
  const auto& f = fixture("time_encoding.safetensors");
  const auto t = tensor<double>(f, "day_d64.t"), want = tensor<double>(f, "day_d64.enc");
  const int d = 64;
  double worst = 0;
  for (size_t r = 0; r < t.size(); ++r)
    for (int i = 0; i < d / 2; ++i) {
      const float inv = 1.0f / std::pow(10000.0f, float(2 * i) / d);
      const float a = static_cast<float>(t[r]) * inv;
      worst = std::max(worst, std::fabs(std::sin(a) - want[r * d + i]));
    }
  std::printf("[ parity   ] float32 seed formula on day_d64: max|diff| = %.3g\n", worst);
  EXPECT_GT(worst, 100 * kTimeAtol);
}

TEST(TimeEncoding, SimdMatchesTwinAtAwkwardWidths) {
  std::vector<double> t;
  for (int i = 0; i < 37; ++i) t.push_back(1764460800.0 + i * 2345.678);
  for (int d : {2, 4, 6, 10, 64, 130}) {
    std::vector<float> a(t.size() * d), r(t.size() * d);
    ASSERT_TRUE(encode_time({d, 10000.0}, t.data(), t.size(), 1764460800.0, a.data()).ok());
    ASSERT_TRUE(encode_time({d, 10000.0}, t.data(), t.size(), 1764460800.0, r.data(), kernels::KernelSet::kReference).ok());
    // both round a float64 sin/cos to float32: at most one float32 ulp apart
    ASSERT_TRUE(AllClose(a.data(), r.data(), a.size(), 1.2e-7, 0, "d=" + std::to_string(d)));
  }
}

TEST(TimeEncoding, LayoutIsSinBlockThenCosBlock) {
  const double t = 2.0;
  float out[4];
  ASSERT_TRUE(encode_time({4, 100.0}, &t, 1, 0.0, out).ok());
  // inv_freq = [1, 1/100^(2/4)] = [1, 0.1]
  const double want[4] = {std::sin(2.0), std::sin(0.2), std::cos(2.0), std::cos(0.2)};
  EXPECT_TRUE(AllClose(out, want, 4, 1e-7, 0, "hand-computed layout"));
}

TEST(TimeEncoding, RejectsBadInput) {
  std::vector<double> t = {0.0, NAN};
  std::vector<float> out(2 * 4);
  EXPECT_EQ(encode_time({4, 10000.0}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kNonFinite);
  t[1] = INFINITY;
  EXPECT_EQ(encode_time({4, 10000.0}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kNonFinite);
  t[1] = 1.0;
  EXPECT_EQ(encode_time({4, 10000.0}, t.data(), 2, NAN, out.data()).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(encode_time({3, 10000.0}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_time({0, 10000.0}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_time({4, 0.0}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(encode_time({4, NAN}, t.data(), 2, 0.0, out.data()).code(), ErrorCode::kInvalidArgument);
}

TEST(SensorIdentity, RejectsOutOfRangeIds) {
  std::vector<float> x(2 * 3), table(2 * 3, 1.0f);
  const std::int32_t ids[2] = {1, 2};
  const Status s = add_embedding(x.data(), 2, 3, ids, table.data(), 2);
  EXPECT_EQ(s.code(), ErrorCode::kIndexOutOfRange);
  for (float v : x) EXPECT_EQ(v, 0.0f) << "nothing is added when an id is bad";
  const std::int32_t neg[1] = {-1};
  EXPECT_EQ(add_embedding(x.data(), 1, 3, neg, table.data(), 2).code(), ErrorCode::kIndexOutOfRange);
}

}  // namespace
}  // namespace sf
