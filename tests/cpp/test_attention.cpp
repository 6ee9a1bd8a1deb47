// Multi-head attention against torch.nn.MultiheadAttention (fixtures from
// tools/reference/make_fixtures.py, computed in float64 from float32 inputs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "kernels/attention.hpp"
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
      if (mode != AttentionWeights::kNone) {
        for (int i = 0; i < (mode == AttentionWeights::kPerHead ? H : 1) * L * S; ++i) EXPECT_EQ(attn[i], 0.0f);
      }
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


// --- the tiled kernel (kernels::attention_head) against its scalar twin ----------------------------

// Mask families for one (L, S) shape. Padding masks are per key; key_limit rows are per query.
enum class KeyMask { kNone, kPadding, kWholeTilePadding, kAllPadded, kCausal, kTimeCausal, kRandomLimit };

struct Masks {
  std::vector<std::uint8_t> ignore;
  std::vector<int> limit;
  const std::uint8_t* ignore_ptr() const { return ignore.empty() ? nullptr : ignore.data(); }
  const int* limit_ptr() const { return limit.empty() ? nullptr : limit.data(); }
};

Masks make_masks(KeyMask kind, int L, int S, unsigned seed) {
  Masks m;
  std::mt19937 rng(seed);
  switch (kind) {
    case KeyMask::kNone: break;
    case KeyMask::kPadding:  // ~30 % of keys, at random
      m.ignore.resize(S);
      for (auto& x : m.ignore) x = std::uniform_int_distribution<int>(0, 9)(rng) < 3;
      break;
    case KeyMask::kWholeTilePadding:  // the second key tile entirely, plus the last key
      m.ignore.resize(S);
      for (int j = kernels::kKeyBlock; j < std::min(S, 2 * kernels::kKeyBlock); ++j) m.ignore[j] = 1;
      m.ignore[S - 1] = 1;
      break;
    case KeyMask::kAllPadded: m.ignore.assign(S, 1); break;
    case KeyMask::kCausal:  // torch's causal mask, also for L != S (limits past S are clamped)
      m.limit.resize(L);
      for (int i = 0; i < L; ++i) m.limit[i] = i + 1;
      break;
    case KeyMask::kTimeCausal:  // ties in groups of 3; the first group sees no key at all
      m.limit.resize(L);
      for (int i = 0; i < L; ++i) m.limit[i] = std::min(S, (i / 3) * 3);
      break;
    case KeyMask::kRandomLimit:  // anything in [-1, S + 1], including 0 and out-of-range values
      m.limit.resize(L);
      for (auto& x : m.limit) x = std::uniform_int_distribution<int>(-1, S + 1)(rng);
      break;
  }
  return m;
}

bool sees_no_key(int i, int S, const Masks& m) {
  const int n = m.limit.empty() ? S : std::max(0, std::min(m.limit[i], S));
  for (int j = 0; j < n; ++j)
    if (m.ignore.empty() || !m.ignore[j]) return false;
  return true;
}

// Every shape the issue names (head dims 1..64 incl. tails; lengths around the 64-key tile and the
// 4-row micro-tile; L != S), every mask family, with and without weights. Strided rows (ld > Dh)
// with sentinels in the gaps check that nothing outside the (L, Dh) output and the (L, S) map is
// written. One workspace serves every call, so each runs on scratch left over from a different
// shape (nothing may depend on it being zeroed or sized for this call).
TEST(TiledAttention, MatchesTwinOnEveryShapeAndMask) {
  const float kSentinel = 12345.0f;
  kernels::AttentionWorkspace workspace;
  int cases = 0;
  for (int Dh : {1, 3, 8, 16, 17, 64})
    for (int L : {1, 2, 5, 63, 64, 65, 300})
      for (int S : {1, 2, 5, 63, 64, 65, 300})
        for (KeyMask kind : {KeyMask::kNone, KeyMask::kPadding, KeyMask::kWholeTilePadding, KeyMask::kAllPadded,
                             KeyMask::kCausal, KeyMask::kTimeCausal, KeyMask::kRandomLimit}) {
          if (kind == KeyMask::kWholeTilePadding && S < 2 * kernels::kKeyBlock) continue;
          const unsigned seed = 1000u * Dh + 10u * L + S;
          const int ldq = Dh + 3, ldk = Dh + 1, ldv = Dh + 2, ldo = Dh + 5;
          const auto q = random_floats(L * ldq, seed, -1, 1), k = random_floats(S * ldk, seed + 1, -1, 1),
                     v = random_floats(S * ldv, seed + 2, -1, 1);
          const Masks m = make_masks(kind, L, S, seed + 3);
          const float scale = 1.0f / std::sqrt(float(Dh));
          std::vector<float> ref(L * ldo, kSentinel), wref(L * S);
          kernels::attention_head_ref(L, S, Dh, scale, q.data(), ldq, k.data(), ldk, v.data(), ldv, m.ignore_ptr(),
                                      m.limit_ptr(), ref.data(), ldo, wref.data());
          for (bool with_weights : {false, true}) {
            std::vector<float> out(L * ldo, kSentinel), w(L * S + 16, kSentinel);
            kernels::attention_head(L, S, Dh, scale, q.data(), ldq, k.data(), ldk, v.data(), ldv, m.ignore_ptr(),
                                    m.limit_ptr(), out.data(), ldo, with_weights ? w.data() : nullptr, &workspace);
            const std::string tag = "Dh=" + std::to_string(Dh) + " L=" + std::to_string(L) + " S=" +
                                    std::to_string(S) + " mask " + std::to_string(int(kind)) +
                                    (with_weights ? " weights" : " online");
            // Outputs are convex combinations of |v| <= 1 and |scores| <= sqrt(Dh): 2e-6 absolute
            // covers the exp2 polynomial (1.6 ulp), the log2(e) pre-scaling of q (1 ulp of each
            // score) and a different summation order over up to 300 keys.
            for (int i = 0; i < L; ++i) {
              ASSERT_TRUE(AllClose(out.data() + i * ldo, ref.data() + i * ldo, Dh, 2e-6, 1e-5, "out row " + std::to_string(i) + " " + tag));
              for (int d = Dh; d < ldo; ++d) ASSERT_EQ(out[i * ldo + d], kSentinel) << "wrote past Dh " << tag;
              if (sees_no_key(i, S, m)) {
                for (int d = 0; d < Dh; ++d) ASSERT_EQ(out[i * ldo + d], 0.0f) << "masked row " << i << " " << tag;
              }
            }
            if (with_weights) {
              // Probabilities: 1e-7 absolute (below one float32 ulp of 1) plus 1e-5 relative for
              // the per-tile rescale by 2^(m_tile - m_final) / l.
              ASSERT_TRUE(AllClose(w.data(), wref.data(), L * S, 1e-7, 1e-5, "weights " + tag));
              for (int x = L * S; x < L * S + 16; ++x) ASSERT_EQ(w[x], kSentinel) << "wrote past the map " << tag;
              for (int i = 0; i < L; ++i) {
                if (sees_no_key(i, S, m)) {
                  for (int j = 0; j < S; ++j) ASSERT_EQ(w[i * S + j], 0.0f) << "masked row " << i << " " << tag;
                }
              }
            }
            ++cases;
          }
        }
  EXPECT_EQ(cases, 6 * 7 * 7 * 2 * 6 + 6 * 7 * 1 * 2);  // S = 300 alone has a second whole tile
}

// Scores that grow along the keys move the running max in every key tile: the output accumulator
// and (with weights) every earlier tile's probabilities must be rescaled, by factors down to e^-18.
// Reference: the definition evaluated in double from the same float inputs.
TEST(TiledAttention, RunningMaxGrowsInEveryTile) {
  const int L = 9, S = 5 * kernels::kKeyBlock + 7;
  for (int Dh : {3, 16, 64}) {
    std::vector<float> q(L * Dh), k(S * Dh), v = random_floats(S * Dh, 77);
    for (int i = 0; i < L; ++i)
      for (int d = 0; d < Dh; ++d) q[i * Dh + d] = (i + 1) / float(L * Dh);
    for (int j = 0; j < S; ++j)
      for (int d = 0; d < Dh; ++d) k[j * Dh + d] = 0.05f * j;  // row max grows by 3.2 per tile
    std::vector<double> want(L * Dh, 0.0), wwant(L * S);
    for (int i = 0; i < L; ++i) {
      double m = -1e300, l = 0;
      std::vector<double> sc(S);
      for (int j = 0; j < S; ++j) {
        for (int d = 0; d < Dh; ++d) sc[j] += double(q[i * Dh + d]) * k[j * Dh + d];
        m = std::max(m, sc[j]);
      }
      for (int j = 0; j < S; ++j) l += std::exp(sc[j] - m);
      for (int j = 0; j < S; ++j) {
        wwant[i * S + j] = std::exp(sc[j] - m) / l;
        for (int d = 0; d < Dh; ++d) want[i * Dh + d] += wwant[i * S + j] * v[j * Dh + d];
      }
    }
    std::vector<float> out(L * Dh), w(L * S);
    // Scores reach 18.5, where a float32 ulp is 1.9e-6, and each is a float32 sum of Dh products
    // (rounding of several ulp at Dh 64, in the twin too): that is the relative error of its
    // weight, 3e-5 at most, and the output (a combination of |v| <= 1) moves by as much absolutely.
    const double atol = 3e-5, rtol = 3e-5;
    sf::testing::Closeness c;
    kernels::attention_head(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr, nullptr, out.data(), Dh, w.data());
    ASSERT_TRUE(AllClose(out.data(), want.data(), L * Dh, atol, rtol, "out Dh=" + std::to_string(Dh), &c));
    sf::testing::report("growing max, tiled, Dh " + std::to_string(Dh), c);
    ASSERT_TRUE(AllClose(w.data(), wwant.data(), L * S, 1e-7, rtol, "weights Dh=" + std::to_string(Dh), &c));
    sf::testing::report("growing max, tiled weights, Dh " + std::to_string(Dh), c);
    kernels::attention_head(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr, nullptr, out.data(), Dh, nullptr);
    ASSERT_TRUE(AllClose(out.data(), want.data(), L * Dh, atol, rtol, "online out Dh=" + std::to_string(Dh)));
    kernels::attention_head_ref(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr, nullptr, out.data(), Dh, w.data());
    ASSERT_TRUE(AllClose(out.data(), want.data(), L * Dh, atol, rtol, "twin out Dh=" + std::to_string(Dh), &c));
    sf::testing::report("growing max, twin, Dh " + std::to_string(Dh), c);
    ASSERT_TRUE(AllClose(w.data(), wwant.data(), L * S, 1e-7, rtol, "twin weights Dh=" + std::to_string(Dh), &c));
    sf::testing::report("growing max, twin weights, Dh " + std::to_string(Dh), c);
  }
}

// No keys at all (S = 0, e.g. cross-attention to an empty stream): every query sees nothing, so
// a zero row, as for a fully masked query; k and v are never read.
TEST(TiledAttention, NoKeysGivesZeroRows) {
  const int L = 5, Dh = 16;
  const auto q = random_floats(L * Dh, 8);
  std::vector<float> out(L * Dh, 7.0f), ref(L * Dh, 7.0f);
  float w_sentinel = 7.0f;
  kernels::attention_head(L, 0, Dh, 0.25f, q.data(), Dh, nullptr, Dh, nullptr, Dh, nullptr, nullptr, out.data(), Dh, &w_sentinel);
  kernels::attention_head_ref(L, 0, Dh, 0.25f, q.data(), Dh, nullptr, Dh, nullptr, Dh, nullptr, nullptr, ref.data(), Dh, nullptr);
  for (int i = 0; i < L * Dh; ++i) {
    ASSERT_EQ(out[i], 0.0f) << i;
    ASSERT_EQ(ref[i], 0.0f) << i;
  }
  EXPECT_EQ(w_sentinel, 7.0f);  // an (L, 0) map has no element to write
}

// A NaN in a query reaches that query's output as NaN (as in torch), so the model's finiteness
// checks see it; neither the max nor the exponential's clamp may turn it into a probability or a
// masked row. (The twin's masked_softmax_ref skips NaN scores when taking the max and so returns
// a zero row here: it is not the reference for this case.)
TEST(TiledAttention, NanInAQueryIsNotHidden) {
  const int L = 6, S = 70, Dh = 8;
  auto q = random_floats(L * Dh, 3), k = random_floats(S * Dh, 4), v = random_floats(S * Dh, 5);
  q[2 * Dh + 1] = std::numeric_limits<float>::quiet_NaN();
  for (bool with_weights : {false, true}) {
    std::vector<float> out(L * Dh), w(L * S);
    kernels::attention_head(L, S, Dh, 0.5f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr, nullptr, out.data(), Dh,
                            with_weights ? w.data() : nullptr);
    for (int i = 0; i < L; ++i)
      for (int d = 0; d < Dh; ++d) {
        ASSERT_EQ(std::isnan(out[i * Dh + d]), i == 2) << "row " << i << " col " << d;
      }
  }
}

// A NaN in one key, inside a whole unmasked tile (whose max is taken from the score GEMM's
// registers, not from a second pass) and in a partial masked one, reaches every query's output
// as NaN (as in torch: each row's softmax sees a NaN score). Lane-wise max may drop a NaN lane,
// so this holds only if the exponential keeps it.
TEST(TiledAttention, NanInAKeyIsNotHidden) {
  const int L = 9, S = 100, Dh = 64;
  for (int bad : {5, 63, 70}) {  // first tile (unmasked), its last column, second tile (masked past S)
    auto q = random_floats(L * Dh, 3), k = random_floats(S * Dh, 4), v = random_floats(S * Dh, 5);
    k[bad * Dh + 7] = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> out(L * Dh);
    kernels::attention_head(L, S, Dh, 0.125f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr,
                            nullptr, out.data(), Dh, nullptr);
    for (int i = 0; i < L * Dh; ++i) ASSERT_TRUE(std::isnan(out[i])) << "key " << bad << " at " << i;
  }
}

// The softmax's exponential against std::exp2 in double: relative error <= 2e-7 (the polynomial's
// 9.5e-8 bound with margin for the final scaling) over [-126, 0] (a 1/1024 grid and 100000
// random points), exactly 1 at 0, and exactly 0 below -126.5 and for -inf.
TEST(TiledAttention, Exp2AgainstLibm) {
  std::vector<float> x;
  for (double t = -126.0; t <= 0.0; t += 1.0 / 1024) x.push_back(float(t));
  const auto r = random_floats(100000, 11, -126.0f, 0.0f);
  x.insert(x.end(), r.begin(), r.end());
  for (float t : {-0.5f, -0.49999997f, -1e-30f, -1e-7f, -0.0f}) x.push_back(t);
  std::vector<float> y(x.size());
  kernels::exp2_nonpositive(x.data(), y.data(), static_cast<int>(x.size()));
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp2(double(x[i])), rel = std::fabs(y[i] - want) / want;
    if (rel > worst) worst = rel, at = i;
  }
  EXPECT_LE(worst, 2e-7) << "at x = " << x[at] << ": " << y[at] << " vs " << std::exp2(double(x[at]));
  std::printf("[ exp2     ] max relative error %.3g over %zu points\n", worst, x.size());
  const float zero = 0.0f, inf = std::numeric_limits<float>::infinity();
  const float edge[] = {zero, -126.51f, -127.0f, -200.0f, -1e30f, -inf, -3.0f};  // odd count: tail lanes
  float got[7];
  kernels::exp2_nonpositive(edge, got, 7);
  EXPECT_EQ(got[0], 1.0f);
  for (int i = 1; i < 6; ++i) EXPECT_EQ(got[i], 0.0f) << "x = " << edge[i];
  EXPECT_NEAR(got[6], 0.125f, 0.125f * 2e-7);
}

}  // namespace
}  // namespace sf
