// gemm_packed is the fast path for nn.Linear: an MR x (2 lanes) tile of C held in registers, one
// broadcast of A(i,k) times two vectors of W's packed panel row k per step (the outer-product form:
// no horizontal adds), the epilogue (alpha, bias, activation, residual add) applied to the
// finished tile on its way out (through a 32-float buffer in L1). MR = 4 keeps 8 accumulators + 2 panel vectors + 1 broadcast =
// 11 live vectors, under the 16 registers V8 has for WebAssembly SIMD on x64. Rows are walked in
// blocks of kRowBlock, each packed once (pack_rows: a 4-row group k-major, so a step's broadcasts
// share one address) and staying in L1 (kRowBlock * K floats, 16 KB at K = 256) while every panel
// passes over it; one panel (K * 8 floats, 8 KB at K = 256) stays in L1 across the
// block's micro-tiles. gemm_nt packs B whole per call and takes the same path (for one row the
// copy costs about what the product does, microseconds; the Model packs its weights at load).
// gemm_nn broadcasts A(i,k) and sweeps B's row k, vectorized along N. All keep the scalar tails of the `_ref` loops.
#include "kernels/matmul.hpp"

#include <algorithm>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "core/parallel.hpp"
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

constexpr int kMR = 4;
constexpr int kNR = 2 * kFloatLanes;
constexpr int kRowBlock = 16;

// The activation over a finished tile, out of line on purpose: inlined into every micro-tile
// variant, the GELU polynomials made the module 26 KB larger for no measurable speed (the tile is
// in L1 and this runs once per K steps).
__attribute__((noinline)) void activate_tile(float* t, int n, Act act) {
  for (int i = 0; i < n; i += kFloatLanes) {
    const fbatch v = fbatch::load_aligned(t + i);
    (act == Act::kGelu ? detail::gelu_batch(v) : xsimd::max(v, fbatch(0.0f))).store_aligned(t + i);
  }
}

// A's rows [0, rows) in groups of kMR, each group k-major: ap[g * K * kMR + k * kMR + i] =
// A(g * kMR + i, k); a group's missing rows (rows % kMR) repeat its last row. The micro-kernel then
// reads its kMR broadcasts of step k at one address plus constant offsets: with one pointer per row
// of A instead, V8 computes four addresses per step, and the k loop ran at 39 GFLOP/s against 47
// with the packed group (a probe of the loop alone in L1, 2026-12-05, AMD EPYC: the loop is issue-
// bound, not FP-bound). A block is packed once and used by every panel, so the copy (rows * K
// floats) is 1 / (2 * panel count) of the block's multiply-adds.
void pack_rows(int rows, int K, const float* A, int lda, float* ap) {
  for (int g = 0; g < rows; g += kMR, ap += static_cast<size_t>(K) * kMR) {
    const float* a[kMR];
    for (int i = 0; i < kMR; ++i) a[i] = A + static_cast<size_t>(g + i < rows ? g + i : rows - 1) * lda;
    int k = 0;
#if defined(__SSE__)
    // Four steps at a time: a 4 x 4 transpose (SSE, which Emscripten lowers to WebAssembly SIMD).
    static_assert(kMR == 4, "the transpose packs groups of 4 rows");
    for (; k + 4 <= K; k += 4) {
      __m128 r0 = _mm_loadu_ps(a[0] + k), r1 = _mm_loadu_ps(a[1] + k), r2 = _mm_loadu_ps(a[2] + k),
             r3 = _mm_loadu_ps(a[3] + k);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(ap + k * kMR, r0);
      _mm_storeu_ps(ap + k * kMR + 4, r1);
      _mm_storeu_ps(ap + k * kMR + 8, r2);
      _mm_storeu_ps(ap + k * kMR + 12, r3);
    }
#endif
    SF_SMALL_LOOP
    for (; k < K; ++k)
      for (int i = 0; i < kMR; ++i) ap[k * kMR + i] = a[i][k];
  }
}

// C tile (mr <= kMR rows, nc <= kNR columns) from K steps over one packed group of A (pack_rows)
// and one packed panel; only mr rows are stored: one kernel for every shape (three more
// instantiations would add 6 KB of WebAssembly).
void micro_tile(int K, const float* ap, int mr, const float* panel, const float* bias, float alpha, Act act,
                bool accumulate, float* C, int ldc, int nc) {
  fbatch c0[kMR], c1[kMR];
  for (int i = 0; i < kMR; ++i) c0[i] = c1[i] = fbatch(0.0f);
  // Pointers that step, not k * stride: Emscripten turns LLVM's loop strength reduction off
  // (-disable-lsr), and indexed loads cost V8 a shift and an add per address per step.
  const float* pa = ap;
  const float* pb = panel;
  if (mr == 1) {  // single rows (one-token groups, a pooled vector): a quarter of the work
    SF_SMALL_LOOP
    for (int k = 0; k < K; ++k, pa += kMR, pb += kNR) {
      const fbatch av(pa[0]);
      c0[0] = xsimd::fma(av, fbatch::load_unaligned(pb), c0[0]);
      c1[0] = xsimd::fma(av, fbatch::load_unaligned(pb + kFloatLanes), c1[0]);
    }
  } else {
    SF_SMALL_LOOP  // the body is already 8 multiply-adds; unrolled copies only grow the module
    for (int k = 0; k < K; ++k, pa += kMR, pb += kNR) {
      const fbatch b0 = fbatch::load_unaligned(pb);
      const fbatch b1 = fbatch::load_unaligned(pb + kFloatLanes);
      for (int i = 0; i < kMR; ++i) {
        const fbatch av(pa[i]);
        c0[i] = xsimd::fma(av, b0, c0[i]);
        c1[i] = xsimd::fma(av, b1, c1[i]);
      }
    }
  }
  const fbatch va(alpha), bias0 = fbatch::load_unaligned(bias),
               bias1 = fbatch::load_unaligned(bias + kFloatLanes);
  alignas(64) float t[kMR * kNR];
  for (int i = 0; i < kMR; ++i) {
    xsimd::fma(c0[i], va, bias0).store_aligned(t + i * kNR);
    xsimd::fma(c1[i], va, bias1).store_aligned(t + i * kNR + kFloatLanes);
  }
  if (act != Act::kNone) activate_tile(t, mr * kNR, act);
  for (int i = 0; i < mr; ++i) {
    float* c = C + static_cast<size_t>(i) * ldc;
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

// Every row of a packed block (rows <= kRowBlock, pack_rows) against one packed panel (nc of its
// kNR columns are real).
void panel_rows(int rows, int K, const float* ap, const float* panel, const float* bias, float alpha, Act act,
                bool accumulate, float* C, int ldc, int nc) {
  for (int i = 0; i < rows; i += kMR)
    micro_tile(K, ap + static_cast<size_t>(i) * K, rows - i < kMR ? rows - i : kMR, panel, bias, alpha, act,
               accumulate, C + static_cast<size_t>(i) * ldc, ldc, nc);
}

// Rows of A packed at a time: a whole row block (16) up to K = 512, 8 rows up to K = 1024, 4 past
// that (divisors of kRowBlock, so a thread's share of row blocks splits evenly). Up to K = 2048 the
// packed rows live on the stack (kStackFloats: 32 KB); past it, in one allocation per call (a
// feed-forward wider than 2048).
constexpr int kStackFloats = kRowBlock * 512;
int rows_per_pack(int K) { return K <= kStackFloats / kRowBlock ? kRowBlock : K <= kStackFloats / 8 ? 8 : kMR; }

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
      const float* w = j < n ? W + static_cast<size_t>(j) * ldw : W;  // padding columns read nothing
      SF_SMALL_LOOP
      for (int kk = 0; kk < k; ++kk) dst[kk * kNR + jj] = j < n ? w[kk] : 0.0f;
    }
  }
  if (bias)
    for (int j = 0; j < n; ++j) out->bias[j] = bias[j];
}

// Rows [i_begin, i_end) of the product, by blocks of kRowBlock rows counted from row 0 (packed
// rows_per_pack rows at a time).
static void gemm_packed_rows(int i_begin, int i_end, const float* A, int lda, const PackedWeights& W, float alpha,
                             Act act, bool accumulate, float* C, int ldc) {
  const int N = W.n, K = W.k, panels = (N + kNR - 1) / kNR;
  const int pr = rows_per_pack(K);
  alignas(64) float stack_rows[kStackFloats];
  std::vector<float> heap_rows(static_cast<size_t>(pr) * K > kStackFloats ? static_cast<size_t>(pr) * K : 0);
  float* ap = heap_rows.empty() ? stack_rows : heap_rows.data();
  for (int i0 = i_begin; i0 < i_end; i0 += pr) {
    const int rows = i0 + pr < i_end ? pr : i_end - i0;
    pack_rows(rows, K, A + static_cast<size_t>(i0) * lda, lda, ap);
    for (int p = 0; p < panels; ++p)
      panel_rows(rows, K, ap, W.panels.data() + static_cast<size_t>(p) * K * kNR, W.bias.data() + p * kNR, alpha,
                 act, accumulate, C + static_cast<size_t>(i0) * ldc + p * kNR, ldc, N - p * kNR < kNR ? N - p * kNR : kNR);
  }
}

void gemm_packed(int M, const float* A, int lda, const PackedWeights& W, float alpha, Act act,
                 bool accumulate, float* C, int ldc) {
  const int blocks = (M + kRowBlock - 1) / kRowBlock;
  const int tasks = std::min(blocks, parallel::split(static_cast<double>(M) * W.n * W.k, parallel::kGrain));
  // Threads take whole row blocks, so each output row goes through the same tiles and the same
  // instructions as on one thread: bit-identical results (core/parallel.hpp).
  auto task = [&](int t, int) {
    const parallel::Part b = parallel::part(blocks, t, tasks);
    gemm_packed_rows(b.begin * kRowBlock, std::min(M, b.end * kRowBlock), A, lda, W, alpha, act, accumulate, C, ldc);
  };
  parallel::run(tasks, task);
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

// B packed whole, once per call, then the packed path: the same tiles, the same instructions per
// output element, threads included. The packed copy goes to a per-thread buffer that only grows
// (pack_weights keeps capacity), so calls after a thread's largest allocate nothing (with an
// allocation per call instead, the native -march=native build ran the bench's products at 54
// GFLOP/s against 76; not traced further). It keeps the largest B a thread has packed;
// callers that run the same weights often pack them once instead (the Model at load; an
// attention or feed-forward given unpacked weights, into its workspace), so a Model never comes
// here. The buffer serves one call at a time on its thread: the helpers of that call's
// gemm_packed read it, and gemm_packed returns before the next call can repack it.
void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             const float* bias, float* C, int ldc) {
  thread_local PackedWeights packed;
  pack_weights(B, N, K, ldb, bias, &packed);
  gemm_packed(M, A, lda, packed, alpha, Act::kNone, false, C, ldc);
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
