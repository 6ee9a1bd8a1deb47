// gemm_nt walks four rows of B per pass so each load of A's row feeds four products (K is the
// contiguous axis of both operands); gemm_nn broadcasts A(i,k) and sweeps B's row k, vectorized
// along N. Both keep the scalar tail of the `_ref` loop for lengths that are not lane multiples.
// This is the plain register-blocked form; cache tiling is left to the performance work.
#include "kernels/matmul.hpp"

#include "kernels/simd.hpp"

namespace sf::kernels {

float dot_ref(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

float dot(const float* a, const float* b, int n) {
  const int end = simd_end(n, kFloatLanes);
  fbatch acc(0.0f);
  for (int i = 0; i < end; i += kFloatLanes)
    acc = xsimd::fma(fbatch::load_unaligned(a + i), fbatch::load_unaligned(b + i), acc);
  float s = xsimd::hadd(acc);
  for (int i = end; i < n; ++i) s += a[i] * b[i];
  return s;
}

void gemm_nt_ref(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 const float* bias, float* C, int ldc) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      C[i * ldc + j] = alpha * dot_ref(A + i * lda, B + j * ldb, K) + (bias ? bias[j] : 0.0f);
}

void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             const float* bias, float* C, int ldc) {
  const int kend = simd_end(K, kFloatLanes);
  for (int i = 0; i < M; ++i) {
    const float* a = A + i * lda;
    float* c = C + i * ldc;
    int j = 0;
    for (; j + 4 <= N; j += 4) {
      const float* b0 = B + (j + 0) * ldb;
      const float* b1 = B + (j + 1) * ldb;
      const float* b2 = B + (j + 2) * ldb;
      const float* b3 = B + (j + 3) * ldb;
      fbatch s0(0.0f), s1(0.0f), s2(0.0f), s3(0.0f);
      for (int k = 0; k < kend; k += kFloatLanes) {
        const fbatch av = fbatch::load_unaligned(a + k);
        s0 = xsimd::fma(av, fbatch::load_unaligned(b0 + k), s0);
        s1 = xsimd::fma(av, fbatch::load_unaligned(b1 + k), s1);
        s2 = xsimd::fma(av, fbatch::load_unaligned(b2 + k), s2);
        s3 = xsimd::fma(av, fbatch::load_unaligned(b3 + k), s3);
      }
      float r[4] = {xsimd::hadd(s0), xsimd::hadd(s1), xsimd::hadd(s2), xsimd::hadd(s3)};
      for (int k = kend; k < K; ++k) {
        r[0] += a[k] * b0[k];
        r[1] += a[k] * b1[k];
        r[2] += a[k] * b2[k];
        r[3] += a[k] * b3[k];
      }
      for (int u = 0; u < 4; ++u) c[j + u] = alpha * r[u] + (bias ? bias[j + u] : 0.0f);
    }
    for (; j < N; ++j) c[j] = alpha * dot(a, B + j * ldb, K) + (bias ? bias[j] : 0.0f);
  }
}

void gemm_nn_ref(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int k = 0; k < K; ++k) s += A[i * lda + k] * B[k * ldb + j];
      C[i * ldc + j] = s;
    }
}

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc) {
  const int nend = simd_end(N, kFloatLanes);
  for (int i = 0; i < M; ++i) {
    const float* a = A + i * lda;
    float* c = C + i * ldc;
    for (int j = 0; j < N; ++j) c[j] = 0.0f;
    for (int k = 0; k < K; ++k) {
      const float aik = a[k];
      const float* b = B + k * ldb;
      const fbatch av(aik);
      for (int j = 0; j < nend; j += kFloatLanes)
        xsimd::fma(av, fbatch::load_unaligned(b + j), fbatch::load_unaligned(c + j))
            .store_unaligned(c + j);
      for (int j = nend; j < N; ++j) c[j] += aik * b[j];
    }
  }
}

}  // namespace sf::kernels
