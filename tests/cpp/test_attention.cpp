// Multi-head attention against torch.nn.MultiheadAttention (fixtures from
// tools/reference/make_fixtures.py, computed in float64 from float32 inputs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <set>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using sf::testing::AllClose;
using sf::testing::Closeness;
using sf::testing::fixture;
using sf::testing::random_floats;
using sf::testing::tensor;

// PyTorch's own float32 attention tolerances (test/test_transformers.py, math path).
constexpr double kOutAtol = 1e-5, kOutRtol = 5e-6;
// Weights are probabilities in [0, 1]: same bound.
constexpr double kWeightAtol = 1e-5, kWeightRtol = 5e-6;

struct Case {
  std::string name;
  int n, e, heads, batch;
  bool causal, key_padding;
};

std::vector<Case> attention_cases() {
  const auto& f = fixture("attention.safetensors");
  std::vector<Case> cases;
  const auto meta = f.metadata().find("cases");
  if (meta == f.metadata().end()) return cases;
  for (const auto& c : nlohmann::json::parse(meta->second))
    cases.push_back({c["name"], c["n"], c["e"], c["heads"], c["batch"], c["causal"], c["key_padding"]});
  return cases;
}

class TorchParity : public ::testing::TestWithParam<Case> {};

TEST_P(TorchParity, MatchesMultiheadAttention) {
  const Case& c = GetParam();
  const auto& f = fixture("attention.safetensors");
  const std::string p = c.name + ".";
  const auto x = tensor<float>(f, p + "x"), ipw = tensor<float>(f, p + "in_proj_weight"),
             ipb = tensor<float>(f, p + "in_proj_bias"), opw = tensor<float>(f, p + "out_proj_weight"),
             opb = tensor<float>(f, p + "out_proj_bias"), want = tensor<float>(f, p + "out"),
             want_heads = tensor<float>(f, p + "attn_per_head"), want_avg = tensor<float>(f, p + "attn_avg");
  const auto rows = tensor<std::int32_t>(f, p + "weight_rows");
  std::vector<std::int32_t> kpm;
  if (c.key_padding) kpm = tensor<std::int32_t>(f, p + "key_padding_mask");
  const int N = c.n, E = c.e, H = c.heads, R = static_cast<int>(rows.size());
  const MhaWeights w{E, H, ipw.data(), ipb.data(), opw.data(), opb.data()};

  Closeness worst_out, worst_w, c1;
  for (int b = 0; b < c.batch; ++b) {
    const float* xb = x.data() + b * N * E;
    std::vector<std::uint8_t> mask;
    if (c.key_padding) mask.assign(kpm.begin() + b * N, kpm.begin() + (b + 1) * N);
    for (auto kset : {kernels::KernelSet::kSimd, kernels::KernelSet::kReference})
      for (auto mode : {AttentionWeights::kNone, AttentionWeights::kPerHead, AttentionWeights::kAveraged}) {
        const std::string tag = c.name + " b" + std::to_string(b) +
                                (kset == kernels::KernelSet::kSimd ? " simd" : " ref") +
                                (mode == AttentionWeights::kNone ? " online" : mode == AttentionWeights::kPerHead ? " per-head" : " avg");
        MhaOptions opt;
        opt.key_padding_mask = mask.empty() ? nullptr : mask.data();
        opt.causal = c.causal;
        opt.weights = mode;
        opt.kernels = kset;
        std::vector<float> out(N * E), attn(mode == AttentionWeights::kPerHead ? H * N * N : N * N);
        const Status s = multihead_attention(w, xb, N, xb, N, opt, out.data(), attn.data());
        ASSERT_TRUE(s.ok()) << s.message();
        ASSERT_TRUE(AllClose(out.data(), want.data() + b * N * E, N * E, kOutAtol, kOutRtol, "out " + tag, &c1));
        worst_out.max_abs = std::max(worst_out.max_abs, c1.max_abs);
        for (int r = 0; r < R; ++r) {
          const int i = rows[r];
          if (mode == AttentionWeights::kPerHead)
            for (int h = 0; h < H; ++h) {
              ASSERT_TRUE(AllClose(attn.data() + (h * N + i) * N, want_heads.data() + ((b * H + h) * R + r) * N, N,
                                   kWeightAtol, kWeightRtol, "weights " + tag + " h" + std::to_string(h) + " row " + std::to_string(i), &c1));
              worst_w.max_abs = std::max(worst_w.max_abs, c1.max_abs);
            }
          if (mode == AttentionWeights::kAveraged) {
            ASSERT_TRUE(AllClose(attn.data() + i * N, want_avg.data() + (b * R + r) * N, N, kWeightAtol,
                                 kWeightRtol, "avg weights " + tag + " row " + std::to_string(i), &c1));
            worst_w.max_abs = std::max(worst_w.max_abs, c1.max_abs);
          }
        }
      }
  }
  sf::testing::report(c.name + " output", worst_out);
  sf::testing::report(c.name + " weights", worst_w);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchParity, ::testing::ValuesIn(attention_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(TorchParity, FixtureHasTheIssueCases) {
  // N = 1, 7, 267, 1030; 1, 4 and 8 heads; key padding; causal.
  std::set<int> ns, hs;
  bool kpm = false, causal = false;
  for (const auto& c : attention_cases()) {
    ns.insert(c.n);
    hs.insert(c.heads);
    kpm |= c.key_padding;
    causal |= c.causal;
  }
  EXPECT_EQ(ns, (std::set<int>{1, 7, 267, 1030}));
  EXPECT_EQ(hs, (std::set<int>{1, 4, 8}));
  EXPECT_TRUE(kpm && causal);
}

MhaWeights random_weights(int E, int H, std::vector<float>* store) {
  *store = random_floats(3 * E * E + 3 * E + E * E + E, 99, -0.5f, 0.5f);
  float* p = store->data();
  return {E, H, p, p + 3 * E * E, p + 3 * E * E + 3 * E, p + 4 * E * E + 3 * E};
}

// torch 1.13 gives NaN here, so no fixture: by hand, a query with no visible key has a zero
// attention context, hence output = out_proj_bias, and zero weights.
TEST(MultiheadAttention, FullyMaskedQueryGivesOutProjBias) {
  const int E = 8, H = 2, S = 3, L = 2;
  std::vector<float> store;
  const MhaWeights w = random_weights(E, H, &store);
  auto q = random_floats(L * E, 5), kv = random_floats(S * E, 6);
  const std::uint8_t all[S] = {1, 1, 1};
  for (auto kset : {kernels::KernelSet::kSimd, kernels::KernelSet::kReference})
    for (auto mode : {AttentionWeights::kNone, AttentionWeights::kPerHead, AttentionWeights::kAveraged}) {
      MhaOptions opt;
      opt.key_padding_mask = all;
      opt.weights = mode;
      opt.kernels = kset;
      std::vector<float> out(L * E), attn(H * L * S, 7.0f);
      ASSERT_TRUE(multihead_attention(w, q.data(), L, kv.data(), S, opt, out.data(), attn.data()).ok());
      for (int i = 0; i < L; ++i)
        for (int e = 0; e < E; ++e) EXPECT_EQ(out[i * E + e], w.out_proj_bias[e]);
      if (mode != AttentionWeights::kNone)
        for (int i = 0; i < (mode == AttentionWeights::kPerHead ? H : 1) * L * S; ++i) EXPECT_EQ(attn[i], 0.0f);
    }
}

TEST(MultiheadAttention, CrossAttentionWithDifferentLengths) {
  const int E = 12, H = 3, L = 5, S = 9;
  std::vector<float> store;
  const MhaWeights w = random_weights(E, H, &store);
  auto q = random_floats(L * E, 7), kv = random_floats(S * E, 8);
  std::vector<float> a(L * E), r(L * E);
  MhaOptions simd, ref;
  ref.kernels = kernels::KernelSet::kReference;
  ASSERT_TRUE(multihead_attention(w, q.data(), L, kv.data(), S, simd, a.data(), nullptr).ok());
  ASSERT_TRUE(multihead_attention(w, q.data(), L, kv.data(), S, ref, r.data(), nullptr).ok());
  EXPECT_TRUE(AllClose(a.data(), r.data(), L * E, 1e-6, 1e-5, "cross attention simd vs ref"));
}

TEST(MultiheadAttention, RejectsBadShapes) {
  std::vector<float> store;
  MhaWeights w = random_weights(8, 3, &store);  // 3 does not divide 8
  std::vector<float> x(8), out(8);
  Status s = multihead_attention(w, x.data(), 1, x.data(), 1, {}, out.data(), nullptr);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("num_heads"), std::string::npos) << s.message();
  w.num_heads = 2;
  w.in_proj_weight = nullptr;
  EXPECT_EQ(multihead_attention(w, x.data(), 1, x.data(), 1, {}, out.data(), nullptr).code(), ErrorCode::kInvalidArgument);
  w = random_weights(8, 2, &store);
  MhaOptions opt;
  opt.weights = AttentionWeights::kPerHead;
  EXPECT_EQ(multihead_attention(w, x.data(), 1, x.data(), 1, opt, out.data(), nullptr).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(multihead_attention(w, x.data(), -1, x.data(), 1, {}, out.data(), nullptr).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace sf
