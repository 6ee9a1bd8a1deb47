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
  // gemm_nt packs B per call and runs the packed micro-kernel: 1-3 rows are one short tile, 17 is
  // 4 tiles and a 1-row tail, 33 two row blocks and a tail.
  for (int M : {1, 3, 4, 7, 17, 33}) for (int N : {1, 4, 5, 13}) for (int K : kLengths) {
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

// The packed micro-kernel with every epilogue against linear_act_ref (gemm_nt_ref, then the
// activation's std::erf twin, then the store or add). Rows: tails of the 4-row tile and of the
// 16-row block; columns: tails of the 8-wide panel (32 with AVX-512); K: 1 to 267.
TEST(Matmul, GemmPackedEpiloguesMatchTwin) {
  for (int M : {1, 2, 3, 4, 5, 16, 19, 37}) for (int N : {1, 5, 8, 9, 13, 32, 33, 64, 96}) for (int K : {1, 7, 16, 64, 267})
    for (Act act : {Act::kNone, Act::kRelu, Act::kGelu}) for (bool acc : {false, true}) for (bool has_bias : {false, true}) {
      const int lda = K + 3, ldw = K + 1, ldc = N + 2;
      auto A = random_floats(M * lda, 1 + K + N), W = random_floats(N * ldw, 2 + K), bias = random_floats(N, 3 + N, -2.0f, 2.0f);
      auto C0 = random_floats(M * ldc, 4 + M, -3.0f, 3.0f);
      for (int i = 0; i < M; ++i) for (int j = N; j < ldc; ++j) C0[i * ldc + j] = -7.0f;
      std::vector<float> C = C0, R = C0;
      PackedWeights P;
      pack_weights(W.data(), N, K, ldw, has_bias ? bias.data() : nullptr, &P);
      gemm_packed(M, A.data(), lda, P, 1.0f, act, acc, C.data(), ldc);
      linear_act_ref(M, N, K, A.data(), lda, W.data(), ldw, has_bias ? bias.data() : nullptr, act, acc, R.data(), ldc);
      for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
          double abs_sum = has_bias ? std::fabs(bias[j]) : 0.0;
          for (int k = 0; k < K; ++k) abs_sum += std::fabs(A[i * lda + k] * W[j * ldw + k]);
          // The sums' order bound, carried through the activation (GELU's slope is below 1.13,
          // ReLU's 1); GELU adds the vector erf's 1.5e-7 (times 0.5|v|) plus std::erf's own 3e-8
          // and two roundings; the residual add one rounding of the result.
          const double r = R[i * ldc + j];
          double tol = 1.13 * (sum_order_bound(K, abs_sum) + FLT_EPSILON * abs_sum);
          if (act == Act::kGelu) tol += 0.5 * abs_sum * 1.8e-7 + 2 * FLT_EPSILON * std::fabs(r);
          if (acc) tol += FLT_EPSILON * std::fabs(r);
          ASSERT_NEAR(C[i * ldc + j], r, tol + 1e-30)
              << "M=" << M << " N=" << N << " K=" << K << " act=" << int(act) << " acc=" << acc
              << " bias=" << has_bias << " at (" << i << "," << j << ")";
        }
        for (int j = N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], -7.0f) << "padding between rows";
      }
    }
}

// Rows longer than a 16-row block fits on the stack (K > 512) are packed 8 or 4 at a time, and past
// K = 2048 into an allocation (matmul.cpp, gemm_packed_rows): against the twin, and each row bit
// for bit what a one-row call gives it (a row's outputs are the same multiply-adds in the same order
// whichever tile and pack it lands in).
TEST(Matmul, GemmPackedLongRowsMatchTwinAndSingleRows) {
  for (int K : {512, 513, 1024, 1030, 2048, 2100}) for (int M : {1, 6, 19, 37}) {
    const int N = 13, lda = K + 3, ldc = N + 2;
    auto A = random_floats(M * lda, 60 + K), W = random_floats(N * K, 61 + K), b = random_floats(N, 62);
    PackedWeights P;
    pack_weights(W.data(), N, K, K, b.data(), &P);
    std::vector<float> C(M * ldc, -7.0f), R(M * ldc, -7.0f), one(N);
    gemm_packed(M, A.data(), lda, P, 1.0f, Act::kNone, false, C.data(), ldc);
    gemm_nt_ref(M, N, K, 1.0f, A.data(), lda, W.data(), K, b.data(), R.data(), ldc);
    for (int i = 0; i < M; ++i) {
      gemm_packed(1, A.data() + i * lda, lda, P, 1.0f, Act::kNone, false, one.data(), N);
      for (int j = 0; j < N; ++j) {
        double abs_sum = std::fabs(b[j]);
        for (int k = 0; k < K; ++k) abs_sum += std::fabs(A[i * lda + k] * W[j * K + k]);
        ASSERT_NEAR(C[i * ldc + j], R[i * ldc + j], sum_order_bound(K, abs_sum) + FLT_EPSILON * abs_sum)
            << "K=" << K << " M=" << M << " at (" << i << "," << j << ")";
        ASSERT_EQ(C[i * ldc + j], one[j]) << "K=" << K << " M=" << M << " row " << i << " differs from its one-row call";
      }
      for (int j = N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], -7.0f) << "padding between rows";
    }
  }
}

// alpha scales the product before the bias, as gemm_nt's definition says; packing the same
// matrix twice (smaller after larger) reuses the buffers and gives the same panels.
TEST(Matmul, GemmPackedAlphaAndRepack) {
  const int M = 9, N = 11, K = 20;
  auto A = random_floats(M * K, 51), W = random_floats(N * K, 52), b = random_floats(N, 53);
  const auto big = random_floats(40 * K, 54);
  std::vector<float> C(M * N), R(M * N);
  PackedWeights P;
  pack_weights(big.data(), 40, K, K, big.data(), &P);  // a larger matrix with a bias first
  pack_weights(W.data(), N, K, K, b.data(), &P);
  EXPECT_EQ(P.n, N);
  gemm_packed(M, A.data(), K, P, 0.25f, Act::kNone, false, C.data(), N);
  gemm_nt_ref(M, N, K, 0.25f, A.data(), K, W.data(), K, b.data(), R.data(), N);
  EXPECT_TRUE(AllClose(C.data(), R.data(), M * N, 1e-6, 1e-6, "alpha 0.25, repacked"));  // 20 products of |.|<=1
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
          if (j >= n_valid || (ig && ig[j])) {
            ASSERT_EQ(a[j], 0.0f) << "masked slot " << j;
          }
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

// Rows: the vector kernel normalises 4 rows at a time and the rest one by one; 3 rows take only
// the single-row path, 37 = 9 x 4 + 1 both.
const int kLayerNormRows[] = {3, 37};

TEST(LayerNorm, MatchesTwin) {
  for (int rows : kLayerNormRows) for (int d : kLengths) {
    auto x = random_floats(rows * d, 21 + d, -3.0f, 5.0f);
    auto g = random_floats(d, 22), b = random_floats(d, 23);
    std::vector<float> y(rows * d), r(rows * d);
    layer_norm(x.data(), rows, d, g.data(), b.data(), kLayerNormEps, y.data());
    layer_norm_ref(x.data(), rows, d, g.data(), b.data(), kLayerNormEps, r.data());
    // normalised values are O(1); mean and variance summed in another order: 2e-6.
    ASSERT_TRUE(AllClose(y.data(), r.data(), rows * d, 2e-6, 1e-6,
                         "layer_norm rows=" + std::to_string(rows) + " d=" + std::to_string(d)));
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

// Residual + norm in one pass against the twin (x += r, then layer_norm_ref): the stored sum is
// the same single rounding (bit-exact), y as close as layer_norm's own test; y aliasing x (the
// post-norm use) gives the same values.
TEST(LayerNorm, AddLayerNormMatchesTwin) {
  for (int rows : {5, 37}) for (int d : {1, 3, 4, 7, 8, 17, 32, 64, 65}) for (bool alias : {false, true}) {
    auto x0 = random_floats(rows * d, 61 + d, -3.0f, 3.0f), r = random_floats(rows * d, 62 + d);
    auto g = random_floats(d, 63 + d), b = random_floats(d, 64 + d);
    std::vector<float> x = x0, xr = x0, y(rows * d), yr(rows * d);
    add_layer_norm(x.data(), r.data(), rows, d, g.data(), b.data(), 1e-5f, alias ? x.data() : y.data());
    add_layer_norm_ref(xr.data(), r.data(), rows, d, g.data(), b.data(), 1e-5f, alias ? xr.data() : yr.data());
    const std::string tag = "rows=" + std::to_string(rows) + " d=" + std::to_string(d) + (alias ? " in place" : "");
    if (alias) {
      ASSERT_TRUE(AllClose(x.data(), xr.data(), rows * d, 2e-6, 1e-6, "add_layer_norm " + tag));
    } else {
      for (int i = 0; i < rows * d; ++i) ASSERT_EQ(x[i], x0[i] + r[i]) << "residual sum " << tag;
      ASSERT_TRUE(AllClose(y.data(), yr.data(), rows * d, 2e-6, 1e-6, "add_layer_norm " + tag));
    }
  }
}

TEST(LayerNorm, InPlace) {
  for (int rows : {2, 37}) {
    auto x = random_floats(rows * 33, 5), r = std::vector<float>(rows * 33);
    layer_norm_ref(x.data(), rows, 33, nullptr, nullptr, kLayerNormEps, r.data());
    layer_norm(x.data(), rows, 33, nullptr, nullptr, kLayerNormEps, x.data());
    EXPECT_TRUE(AllClose(x.data(), r.data(), rows * 33, 2e-6, 1e-5, "layer_norm in place rows=" + std::to_string(rows)));
  }
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

// gelu runs two batches at a time where both lie inside |x| < sqrt 2 and one batch elsewhere (the
// tail, mixed pairs): every element must get the same value whichever path it took, i.e. a long
// call equals calls on one element each (the single-batch padded tail), bit for bit. Values mix
// inside and outside lanes, NaN and +-inf (GELU(inf) = inf; GELU(-inf) is NaN, 0.5 * -inf * 0, in
// the std::erf twin as well).
TEST(Activation, GeluPairedBatchesEqualSingleElementCalls) {
  auto x = random_floats(4099, 71, -1.3f, 1.3f);  // mostly inside pairs
  auto wide = random_floats(1000, 72, -6.0f, 6.0f);
  x.insert(x.end(), wide.begin(), wide.end());
  x[17] = std::numeric_limits<float>::quiet_NaN();
  x[40] = std::numeric_limits<float>::infinity();
  x[41] = -std::numeric_limits<float>::infinity();
  const int n = static_cast<int>(x.size());
  std::vector<float> y(n);
  gelu(x.data(), n, y.data());
  for (int i = 0; i < n; ++i) {
    float one;
    gelu(&x[i], 1, &one);
    if (std::isnan(one)) {
      ASSERT_TRUE(std::isnan(y[i])) << i;
    } else {
      ASSERT_EQ(y[i], one) << "gelu(" << x[i] << ") at " << i;
    }
  }
  EXPECT_TRUE(std::isnan(y[17]));
  EXPECT_EQ(y[40], std::numeric_limits<float>::infinity());
}

// The vector erf over a dense sweep against erf in float64 (the independent reference): |error|
// <= 1.5e-7, the bound activation_simd.hpp states (1.43e-7 measured when it was fitted; std::erf
// in float is within 3e-8, its rounding). Includes 0, -0, subnormals, the piece boundaries 1 and
// 4 from both sides, huge values and infinities; NaN stays NaN.
TEST(Activation, VectorErfWithinBoundOverDenseSweep) {
  std::vector<float> x;
  for (int i = -600000; i <= 600000; ++i) x.push_back(i * 1e-5f);  // [-6, 6], step 1e-5
  for (float v : {0.0f, -0.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40f, FLT_MIN, 1e-20f, 1e-8f,
                  std::nextafter(1.0f, 0.0f), 1.0f, std::nextafter(1.0f, 2.0f), std::nextafter(4.0f, 0.0f),
                  4.0f, -4.0f, 10.0f, -1e30f, 1e30f, FLT_MAX, -FLT_MAX,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()})
    x.push_back(v);
  std::vector<float> y(x.size()), r(x.size());
  erf(x.data(), static_cast<int>(x.size()), y.data());
  erf_ref(x.data(), static_cast<int>(x.size()), r.data());
  double worst = 0, worst_libm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::erf(static_cast<double>(x[i]));
    worst = std::max(worst, std::fabs(y[i] - want));
    worst_libm = std::max(worst_libm, std::fabs(r[i] - want));
    ASSERT_LE(std::fabs(y[i] - want), 1.5e-7) << "erf(" << x[i] << ") = " << y[i] << ", want " << want;
  }
  std::printf("[ erf      ] max |vector erf - erf(double)| = %.3g (std::erf float: %.3g)\n", worst, worst_libm);
  // Odd, exact at 0 (sign kept) and saturated past 4.
  EXPECT_EQ(y[x.size() - 21 + 0], 0.0f);
  EXPECT_TRUE(std::signbit(y[x.size() - 21 + 1]));
  EXPECT_EQ(y[x.size() - 2], 1.0f);
  EXPECT_EQ(y[x.size() - 1], -1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float yn;
  erf(&nan, 1, &yn);
  EXPECT_TRUE(std::isnan(yn));
}

// GELU against the float64 definition 0.5 x (1 + erf(x / sqrt 2)): the erf bound times 0.5|x|,
// plus a few float32 roundings of the result. The negative tail (x < -5.7, where 1 + erf
// underflows float's resolution near -1) must give -0 or tiny values, never a wrong sign or NaN.
TEST(Activation, GeluAgainstFloat64OverDenseSweep) {
  std::vector<float> x;
  for (int i = -1000000; i <= 1000000; ++i) x.push_back(i * 1e-5f);  // [-10, 10]
  for (float v : {FLT_TRUE_MIN, -FLT_TRUE_MIN, -1e30f, 1e30f, -FLT_MAX, 3e38f}) x.push_back(v);
  std::vector<float> y(x.size());
  gelu(x.data(), static_cast<int>(x.size()), y.data());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i], want = 0.5 * xd * (1.0 + std::erf(xd / std::sqrt(2.0)));
    const double tol = 0.5 * std::fabs(xd) * 1.5e-7 + 3 * FLT_EPSILON * std::fabs(want) + 1e-44;
    worst = std::max(worst, std::fabs(y[i] - want) / (std::fabs(xd) + 1e-30));
    ASSERT_NEAR(y[i], want, tol) << "gelu(" << x[i] << ")";
  }
  std::printf("[ gelu     ] max |gelu - gelu(double)| / |x| = %.3g\n", worst);
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

// One rounding per element in both: the vector add equals the twin bit for bit, and x + y exactly
// where the sum is representable (small integers).
TEST(Activation, AddMatchesTwinBitForBit) {
  for (int n : kLengths) {
    const auto x = random_floats(n, 43 + n), y0 = random_floats(n, 47 + n);
    std::vector<float> y = y0, r = y0;
    add(x.data(), n, y.data());
    add_ref(x.data(), n, r.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], r[i]) << "n " << n << " i " << i;
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = static_cast<float>(2 * i + 1);
    add(a.data(), n, b.data());
    for (int i = 0; i < n; ++i) ASSERT_EQ(b[i], static_cast<float>(3 * i + 1));
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
