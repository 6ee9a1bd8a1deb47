// gemm_packed is the fast path for nn.Linear: an MR x (2 lanes) tile of C held in registers, one
// broadcast of A(i,k) times two vectors of W's packed panel row k per step (the outer-product form:
// no horizontal adds), the epilogue (alpha, bias, activation, residual add) applied to the tile in
// registers before its only store. MR = 4 keeps 8 accumulators + 2 panel vectors + 1 broadcast =
// 11 live vectors, under the 16 registers V8 has for WebAssembly SIMD on x64. Rows are walked in
// blocks of kRowBlock so the block of A (kRowBlock * K floats, 16 KB at K = 256) stays in L1 while
// every panel passes over it; one panel (K * 8 floats, 8 KB at K = 256) stays in L1 across the
// block's micro-tiles. gemm_nt packs B one panel at a time on the stack when M is large enough to
// repay the copy, else it keeps the dot-product form below. gemm_nn broadcasts A(i,k)
// and sweeps B's row k, vectorized along N. All keep the scalar tails of the `_ref` loops.
#include "kernels/matmul.hpp"

#include "kernels/activation.hpp"
#include "kernels/activation_simd.hpp"
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

namespace {

// Small M: four rows of B per pass so each load of A's row feeds four dot products.
void gemm_nt_dots(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
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


constexpr int kMR = 4;
constexpr int kNR = 2 * kFloatLanes;
constexpr int kRowBlock = 16;
// Below this many rows packing B costs as much as the product it serves.
constexpr int kPackMinRows = 4;

// The activation over a finished tile, out of line on purpose: inlined into every micro-tile
// variant, the GELU polynomials made the module 26 KB larger for no measurable speed (the tile is
// in L1 and this runs once per K steps).
__attribute__((noinline)) void activate_tile(float* t, int n, Act act) {
  for (int i = 0; i < n; i += kFloatLanes) {
    const fbatch v = fbatch::load_aligned(t + i);
    (act == Act::kGelu ? detail::gelu_batch(v) : xsimd::max(v, fbatch(0.0f))).store_aligned(t + i);
  }
}

// C tile (MR rows, nc <= kNR columns) from K steps over A's rows and one packed panel.
template <int MR>
inline void micro_tile(int K, const float* A, int lda, const float* panel, const float* bias,
                       float alpha, Act act, bool accumulate, float* C, int ldc, int nc) {
  fbatch c0[MR], c1[MR];
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = fbatch(0.0f);
  for (int k = 0; k < K; ++k) {
    const fbatch b0 = fbatch::load_unaligned(panel + k * kNR);
    const fbatch b1 = fbatch::load_unaligned(panel + k * kNR + kFloatLanes);
    for (int i = 0; i < MR; ++i) {
      const fbatch a(A[i * lda + k]);
      c0[i] = xsimd::fma(a, b0, c0[i]);
      c1[i] = xsimd::fma(a, b1, c1[i]);
    }
  }
  const fbatch va(alpha), bias0 = fbatch::load_unaligned(bias),
               bias1 = fbatch::load_unaligned(bias + kFloatLanes);
  alignas(64) float t[MR * kNR];
  for (int i = 0; i < MR; ++i) {
    xsimd::fma(c0[i], va, bias0).store_aligned(t + i * kNR);
    xsimd::fma(c1[i], va, bias1).store_aligned(t + i * kNR + kFloatLanes);
  }
  if (act != Act::kNone) activate_tile(t, MR * kNR, act);
  for (int i = 0; i < MR; ++i) {
    float* c = C + i * ldc;
    const float* r = t + i * kNR;
    if (nc == kNR) {
      fbatch r0 = fbatch::load_aligned(r), r1 = fbatch::load_aligned(r + kFloatLanes);
      if (accumulate) {
        r0 += fbatch::load_unaligned(c);
        r1 += fbatch::load_unaligned(c + kFloatLanes);
      }
      r0.store_unaligned(c);
      r1.store_unaligned(c + kFloatLanes);
    } else {
      for (int j = 0; j < nc; ++j) c[j] = accumulate ? c[j] + r[j] : r[j];
    }
  }
}

// Every row of C against one packed panel (nc of its kNR columns are real).
void panel_rows(int M, int K, const float* A, int lda, const float* panel, const float* bias,
                float alpha, Act act, bool accumulate, float* C, int ldc, int nc) {
  int i = 0;
  for (; i + kMR <= M; i += kMR)
    micro_tile<kMR>(K, A + static_cast<size_t>(i) * lda, lda, panel, bias, alpha, act, accumulate,
                    C + static_cast<size_t>(i) * ldc, ldc, nc);
  const float* a = A + static_cast<size_t>(i) * lda;
  float* c = C + static_cast<size_t>(i) * ldc;
  switch (M - i) {
    case 3: micro_tile<3>(K, a, lda, panel, bias, alpha, act, accumulate, c, ldc, nc); break;
    case 2: micro_tile<2>(K, a, lda, panel, bias, alpha, act, accumulate, c, ldc, nc); break;
    case 1: micro_tile<1>(K, a, lda, panel, bias, alpha, act, accumulate, c, ldc, nc); break;
    default: break;
  }
}

// gemm_nt packs one panel at a time on the stack (16 KB in WebAssembly, 64 KB with AVX-512), so it
// keeps no state and allocates nothing; longer rows take the dot-product form.
constexpr int kStackPanelMaxK = 512;

}  // namespace

int packed_panel_width() { return kNR; }

void pack_weights(const float* W, int n, int k, int ldw, const float* bias, PackedWeights* out) {
  const int panels = (n + kNR - 1) / kNR;
  out->n = n;
  out->k = k;
  out->has_bias = bias != nullptr;
  // resize keeps capacity: repacking a same-size or smaller matrix allocates nothing.
  out->panels.resize(static_cast<size_t>(panels) * k * kNR);
  out->bias.assign(static_cast<size_t>(panels) * kNR, 0.0f);
  for (int p = 0; p < panels; ++p) {
    float* dst = out->panels.data() + static_cast<size_t>(p) * k * kNR;
    for (int jj = 0; jj < kNR; ++jj) {
      const int j = p * kNR + jj;
      if (j < n)
        for (int kk = 0; kk < k; ++kk) dst[kk * kNR + jj] = W[static_cast<size_t>(j) * ldw + kk];
      else
        for (int kk = 0; kk < k; ++kk) dst[kk * kNR + jj] = 0.0f;
    }
  }
  if (bias)
    for (int j = 0; j < n; ++j) out->bias[j] = bias[j];
}

void gemm_packed(int M, const float* A, int lda, const PackedWeights& W, float alpha, Act act,
                 bool accumulate, float* C, int ldc) {
  const int N = W.n, K = W.k, panels = (N + kNR - 1) / kNR;
  for (int i0 = 0; i0 < M; i0 += kRowBlock) {
    const int rows = i0 + kRowBlock < M ? kRowBlock : M - i0;
    for (int p = 0; p < panels; ++p)
      panel_rows(rows, K, A + static_cast<size_t>(i0) * lda, lda, W.panels.data() + static_cast<size_t>(p) * K * kNR,
                 W.bias.data() + p * kNR, alpha, act, accumulate, C + static_cast<size_t>(i0) * ldc + p * kNR, ldc,
                 N - p * kNR < kNR ? N - p * kNR : kNR);
  }
}

void linear_act_ref(int M, int N, int K, const float* A, int lda, const float* W, int ldw,
                    const float* bias, Act act, bool accumulate, float* C, int ldc) {
  std::vector<float> row(N);
  for (int i = 0; i < M; ++i) {
    gemm_nt_ref(1, N, K, 1.0f, A + static_cast<size_t>(i) * lda, lda, W, ldw, bias, row.data(), N);
    if (act == Act::kRelu) relu_ref(row.data(), N, row.data());
    if (act == Act::kGelu) gelu_ref(row.data(), N, row.data());
    float* c = C + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < N; ++j) c[j] = accumulate ? c[j] + row[j] : row[j];
  }
}

void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             const float* bias, float* C, int ldc) {
  if (M < kPackMinRows || K > kStackPanelMaxK)
    return gemm_nt_dots(M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
  alignas(64) float panel[kStackPanelMaxK * kNR];
  alignas(64) float pbias[kNR];
  for (int j0 = 0; j0 < N; j0 += kNR) {
    const int nc = N - j0 < kNR ? N - j0 : kNR;
    for (int jj = 0; jj < kNR; ++jj) {
      const float* b = B + static_cast<size_t>(j0 + jj) * ldb;
      if (jj < nc)
        for (int k = 0; k < K; ++k) panel[k * kNR + jj] = b[k];
      else
        for (int k = 0; k < K; ++k) panel[k * kNR + jj] = 0.0f;
      pbias[jj] = bias && jj < nc ? bias[j0 + jj] : 0.0f;
    }
    panel_rows(M, K, A, lda, panel, pbias, alpha, Act::kNone, false, C + j0, ldc, nc);
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
