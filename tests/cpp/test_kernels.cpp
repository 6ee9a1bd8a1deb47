// Each xsimd kernel against its scalar twin, at lengths that are and are not lane multiples.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/activation.hpp"
#include "kernels/attention.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"
#include "testing.hpp"

namespace sf::kernels {
namespace {

using sf::testing::AllClose;
using sf::testing::random_floats;

// Awkward on purpose: 1, primes, one below/above lane multiples, the PyTorch test lengths.
const int kLengths[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 267};

// Two summations of the same K products in different orders (lanes + FMA vs sequential) each lie
// within gamma_K * sum|a_k b_k| of the exact sum, gamma_K ~ K * FLT_EPSILON / 2; so they differ by
// at most K * FLT_EPSILON * sum|a_k b_k|.
double sum_order_bound(int K, double abs_sum) { return K * FLT_EPSILON * abs_sum + 1e-30; }

TEST(Simd, ReportsArch) {
  std::printf("[ simd     ] xsimd arch: %s, %d float lanes\n", simd_arch_name(), kFloatLanes);
  EXPECT_GE(kFloatLanes, 4) << "kernels built without a SIMD arch";
}

TEST(Matmul, GemmNtMatchesTwin) {
  for (int M : {1, 3, 7}) for (int N : {1, 4, 5, 13}) for (int K : kLengths) {
    const int lda = K + 3, ldb = K + 1, ldc = N + 2;  // strided rows, as for one head's columns
    auto A = random_floats(M * lda, 1 + K), B = random_floats(N * ldb, 2 + K), bias = random_floats(N, 3);
    std::vector<float> C(M * ldc, -7.0f), R(M * ldc, -7.0f);
    gemm_nt(M, N, K, 0.5f, A.data(), lda, B.data(), ldb, bias.data(), C.data(), ldc);
    gemm_nt_ref(M, N, K, 0.5f, A.data(), lda, B.data(), ldb, bias.data(), R.data(), ldc);
    for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
      double abs_sum = 0;
      for (int k = 0; k < K; ++k) abs_sum += std::fabs(A[i * lda + k] * B[j * ldb + k]);
      ASSERT_NEAR(C[i * ldc + j], R[i * ldc + j], sum_order_bound(K, abs_sum) + FLT_EPSILON)
          << "M=" << M << " N=" << N << " K=" << K << " at (" << i << "," << j << ")";
    }
    for (int i = 0; i < M; ++i)  // padding between rows untouched
      for (int j = N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], -7.0f);
  }
}

TEST(Matmul, GemmNtNullBias) {
  auto A = random_floats(2 * 9, 4), B = random_floats(3 * 9, 5);
  std::vector<float> C(6), R(6);
  gemm_nt(2, 3, 9, 1.0f, A.data(), 9, B.data(), 9, nullptr, C.data(), 3);
  gemm_nt_ref(2, 3, 9, 1.0f, A.data(), 9, B.data(), 9, nullptr, R.data(), 3);
  EXPECT_TRUE(AllClose(C.data(), R.data(), 6, 1e-6, 0, "gemm_nt no bias"));  // 9 products
}

TEST(Matmul, GemmNnMatchesTwin) {
  for (int M : {1, 4}) for (int N : kLengths) for (int K : {1, 7, 64, 267}) {
    const int lda = K + 1, ldb = N + 3, ldc = N + 5;
    auto A = random_floats(M * lda, 7 + N), B = random_floats(K * ldb, 8 + K);
    std::vector<float> C(M * ldc), R(M * ldc);
    gemm_nn(M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc);
    gemm_nn_ref(M, N, K, A.data(), lda, B.data(), ldb, R.data(), ldc);
    for (int i = 0; i < M; ++i) for (int j = 0; j < N; ++j) {
      double abs_sum = 0;
      for (int k = 0; k < K; ++k) abs_sum += std::fabs(A[i * lda + k] * B[k * ldb + j]);
      ASSERT_NEAR(C[i * ldc + j], R[i * ldc + j], sum_order_bound(K, abs_sum))
          << "M=" << M << " N=" << N << " K=" << K;
    }
  }
}

TEST(Softmax, MatchesTwinWithMasks) {
  for (int n : {1, 3, 4, 7, 17, 64, 267, 1030}) {
    auto x = random_floats(n, 11 + n, -20.0f, 20.0f);
    std::vector<std::uint8_t> ignore(n);
    for (int j = 0; j < n; ++j) ignore[j] = (j % 3 == 1);
    for (int n_valid : {n, (n + 1) / 2}) {
      for (const std::uint8_t* ig : {static_cast<const std::uint8_t*>(nullptr),
                                     static_cast<const std::uint8_t*>(ignore.data())}) {
        auto a = x, r = x;
        masked_softmax(a.data(), n, n_valid, ig);
        masked_softmax_ref(r.data(), n, n_valid, ig);
        // exp differs by a few ulp (xsimd vs libm) and the sums by order: 1e-6 relative on
        // weights that sum to 1.
        ASSERT_TRUE(AllClose(a.data(), r.data(), n, 1e-7, 1e-6, "softmax n=" + std::to_string(n)));
        double sum = 0;
        for (int j = 0; j < n; ++j) {
          if (j >= n_valid || (ig && ig[j])) ASSERT_EQ(a[j], 0.0f) << "masked slot " << j;
          sum += a[j];
        }
        ASSERT_NEAR(sum, 1.0, 1e-5);  // key 0 is never masked here
      }
    }
  }
}

TEST(Softmax, FullyMaskedRowIsZeroNotNaN) {
  for (int n : {1, 5, 9}) {
    std::vector<std::uint8_t> all(n, 1);
    auto a = random_floats(n, 3), r = a, c = a;
    masked_softmax(a.data(), n, n, all.data());
    masked_softmax_ref(r.data(), n, n, all.data());
    masked_softmax(c.data(), n, 0, nullptr);  // causal cut before the first key
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(a[j], 0.0f);
      EXPECT_EQ(r[j], 0.0f);
      EXPECT_EQ(c[j], 0.0f);
    }
  }
}

TEST(Softmax, LargeScoresDoNotOverflow) {
  std::vector<float> x = {1000.0f, 999.0f, -1000.0f, 80.0f, 1000.0f};
  masked_softmax(x.data(), 5, 5, nullptr);
  const double e1 = std::exp(-1.0), z = 2 + e1;  // hand-computed: exp(s - 1000)
  const double want[] = {1 / z, e1 / z, 0, 0, 1 / z};
  EXPECT_TRUE(AllClose(x.data(), want, 5, 1e-7, 1e-6, "softmax of large scores"));
}

TEST(LayerNorm, MatchesTwin) {
  for (int d : kLengths) {
    const int rows = 3;
    auto x = random_floats(rows * d, 21 + d, -3.0f, 5.0f);
    auto g = random_floats(d, 22), b = random_floats(d, 23);
    std::vector<float> y(rows * d), r(rows * d);
    layer_norm(x.data(), rows, d, g.data(), b.data(), kLayerNormEps, y.data());
    layer_norm_ref(x.data(), rows, d, g.data(), b.data(), kLayerNormEps, r.data());
    // normalised values are O(1); mean and variance summed in another order: 2e-6.
    ASSERT_TRUE(AllClose(y.data(), r.data(), rows * d, 2e-6, 1e-6, "layer_norm d=" + std::to_string(d)));
  }
}

// With a large common offset (mean 100, spread 1) the float32 mean itself carries ~1e-5 of
// rounding, which the normalisation divides by the spread: both versions are held to a float64
// evaluation with 1e-4, and the vector one (lane-wise partial sums) must not be worse.
TEST(LayerNorm, LargeMeanAgainstFloat64) {
  const int d = 267;
  auto x = random_floats(d, 24, -1.0f, 1.0f);
  for (float& v : x) v += 100.0f;
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= d;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= d;
  std::vector<double> want(d);
  for (int i = 0; i < d; ++i) want[i] = (x[i] - mean) / std::sqrt(var + 1e-5);
  std::vector<float> y(d), r(d);
  layer_norm(x.data(), 1, d, nullptr, nullptr, kLayerNormEps, y.data());
  layer_norm_ref(x.data(), 1, d, nullptr, nullptr, kLayerNormEps, r.data());
  sf::testing::Closeness cy, cr;
  EXPECT_TRUE(AllClose(y.data(), want.data(), d, 1e-4, 0, "simd vs float64", &cy));
  EXPECT_TRUE(AllClose(r.data(), want.data(), d, 1e-4, 0, "ref vs float64", &cr));
  EXPECT_LE(cy.max_abs, 2 * cr.max_abs + 1e-6);
}

TEST(LayerNorm, AgainstHandComputed) {
  const float x[4] = {1, 2, 3, 4};  // mean 2.5, biased variance 1.25
  float y[4];
  layer_norm(x, 1, 4, nullptr, nullptr, kLayerNormEps, y);
  const double s = 1.0 / std::sqrt(1.25 + 1e-5);
  const double want[4] = {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s};
  EXPECT_TRUE(AllClose(y, want, 4, 1e-6, 1e-6, "layer_norm [1,2,3,4]"));
}

TEST(LayerNorm, InPlace) {
  auto x = random_floats(2 * 33, 5), r = std::vector<float>(2 * 33);
  layer_norm_ref(x.data(), 2, 33, nullptr, nullptr, kLayerNormEps, r.data());
  layer_norm(x.data(), 2, 33, nullptr, nullptr, kLayerNormEps, x.data());
  EXPECT_TRUE(AllClose(x.data(), r.data(), 66, 2e-6, 1e-5, "layer_norm in place"));
}

TEST(Activation, GeluMatchesTwinAndErfForm) {
  for (int n : kLengths) {
    auto x = random_floats(n, 31 + n, -6.0f, 6.0f);
    std::vector<float> y(n), r(n);
    gelu(x.data(), n, y.data());
    gelu_ref(x.data(), n, r.data());
    // xsimd erf vs std::erf: a few float ulp.
    ASSERT_TRUE(AllClose(y.data(), r.data(), n, 1e-7, 2e-6, "gelu n=" + std::to_string(n)));
  }
  // Exact erf GELU, not the tanh approximation: at x = 1 they differ by 1.6e-4.
  const float x[3] = {1.0f, -1.0f, 3.0f};
  float y[3];
  gelu(x, 3, y);
  const double want[3] = {0.8413447460685429, -0.15865525393145707, 2.9959502669066};
  EXPECT_TRUE(AllClose(y, want, 3, 1e-6, 1e-6, "gelu hand values (0.5x(1+erf(x/sqrt2)))"));
}

TEST(Activation, Relu) {
  for (int n : kLengths) {
    auto x = random_floats(n, 41 + n);
    std::vector<float> y(n), r(n);
    relu(x.data(), n, y.data());
    relu_ref(x.data(), n, r.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], r[i]);
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
  }
}

// Both attention paths (online softmax without weights, explicit with weights) against the twin.
TEST(Attention, HeadMatchesTwin) {
  // mask 0: key padding only; 1: + torch causal (i + 1); 2: + time-causal with ties (groups of 3
  // equal times see each other), including queries that see no key at all.
  for (int L : {1, 7, 65, 267}) for (int Dh : {1, 5, 8, 16}) for (int mask : {0, 1, 2}) {
    const bool causal = mask > 0;
    const int S = L + (causal ? 0 : 3), ld = Dh + 2;
    auto q = random_floats(L * ld, 51 + L + Dh, -2, 2), k = random_floats(S * ld, 52, -2, 2),
         v = random_floats(S * ld, 53);
    std::vector<std::uint8_t> ignore(S);
    for (int j = 1; j < S; ++j) ignore[j] = (j % 4 == 2);
    const float scale = 1.0f / std::sqrt(float(Dh));
    std::vector<int> limit(L);
    for (int i = 0; i < L; ++i) limit[i] = mask == 1 ? i + 1 : std::min(S, (i / 3 + 1) * 3) - (i < 3 ? 3 : 0);
    const int* key_limit = causal ? limit.data() : nullptr;
    std::vector<float> on(L * ld), ex(L * ld), ref(L * ld), w(L * S), wref(L * S);
    attention_head(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(), key_limit, on.data(), ld, nullptr);
    attention_head(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(), key_limit, ex.data(), ld, w.data());
    attention_head_ref(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(), key_limit, ref.data(), ld, wref.data());
    const std::string tag = "L=" + std::to_string(L) + " Dh=" + std::to_string(Dh) + (mask == 1 ? " causal" : mask == 2 ? " time-causal" : "");
    // Outputs are convex combinations of |v| <= 1: 1e-6 absolute covers exp ulps and sum order
    // over up to 270 keys.
    for (int i = 0; i < L; ++i) {
      ASSERT_TRUE(AllClose(on.data() + i * ld, ref.data() + i * ld, Dh, 1e-6, 1e-5, "online " + tag));
      ASSERT_TRUE(AllClose(ex.data() + i * ld, ref.data() + i * ld, Dh, 1e-6, 1e-5, "explicit " + tag));
    }
    ASSERT_TRUE(AllClose(w.data(), wref.data(), L * S, 1e-7, 1e-5, "weights " + tag));
  }
}

TEST(Attention, FullyMaskedQueryIsZero) {
  const int L = 3, S = 4, Dh = 5;
  auto q = random_floats(L * Dh, 1), k = random_floats(S * Dh, 2), v = random_floats(S * Dh, 3);
  const std::uint8_t all[S] = {1, 1, 1, 1};
  std::vector<float> out(L * Dh, 9.0f), w(L * S, 9.0f), ref(L * Dh, 9.0f);
  attention_head(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, all, nullptr, out.data(), Dh, nullptr);
  for (float x : out) EXPECT_EQ(x, 0.0f);
  attention_head(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, all, nullptr, out.data(), Dh, w.data());
  for (float x : out) EXPECT_EQ(x, 0.0f);
  for (float x : w) EXPECT_EQ(x, 0.0f);
  attention_head_ref(L, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, all, nullptr, ref.data(), Dh, nullptr);
  for (float x : ref) EXPECT_EQ(x, 0.0f);
}

TEST(Attention, OnlineSoftmaxSpansKeyBlocks) {
  // One dominant key in the last block: the running max must be rescaled across blocks.
  const int S = 3 * kKeyBlock + 5, Dh = 4;
  std::vector<float> q(Dh, 1.0f), k(S * Dh, 0.0f), v(S * Dh);
  for (int j = 0; j < S; ++j) for (int d = 0; d < Dh; ++d) v[j * Dh + d] = float(j);
  for (int d = 0; d < Dh; ++d) k[(S - 2) * Dh + d] = 10.0f;  // score 40 vs 0 elsewhere
  float out[Dh];
  attention_head(1, S, Dh, 1.0f, q.data(), Dh, k.data(), Dh, v.data(), Dh, nullptr, nullptr, out, Dh, nullptr);
  // hand-computed: weight e^40 on key S-2, 1 on each of the other S-1 keys
  const double big = std::exp(40.0), z = big + (S - 1);
  double others = 0;
  for (int j = 0; j < S; ++j) if (j != S - 2) others += j;
  const double want = (big * (S - 2) + others) / z;
  for (int d = 0; d < Dh; ++d) EXPECT_NEAR(out[d], want, 1e-4 * want);
}

}  // namespace
}  // namespace sf::kernels
