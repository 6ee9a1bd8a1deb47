// Matrix products behind every projection and attention step, on row-major float32 buffers with
// explicit row strides (so one head's columns of a packed (T, E) buffer are used in place).
//
//   gemm_nt: C(M,N) = alpha * A(M,K) . B(N,K)^T + bias(N)    X*W^T + b (nn.Linear), Q*K^T
//   gemm_nn: C(M,N) = A(M,K) . B(K,N)                        P*V
//   gemm_packed: C(M,N) (= or +=) act(A(M,K) . W^T + bias) with W pre-packed (PackedWeights)
//
// `*_ref` twins have the same signatures and plain loops: they are the definition the tests hold
// the vector versions to. bias may be null.
#pragma once

#include <vector>

namespace sf::kernels {

void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             const float* bias, float* C, int ldc);
void gemm_nt_ref(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 const float* bias, float* C, int ldc);

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc);
void gemm_nn_ref(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc);

// The epilogue applied to each output element v = A(i,:) . W(j,:) + bias(j) before it is stored:
// kNone stores v, kRelu max(v, 0), kGelu the exact-erf GELU (activation.hpp); with accumulate the
// result is added to C(i,j) instead of replacing it (a residual x += f(x) in the same pass).
enum class Act { kNone, kRelu, kGelu };

// An nn.Linear weight W:(n, k) (and its bias, optional) rearranged once into the layout the
// micro-kernel streams: column panels of kPanelWidth output features, each stored k-major
// (panel p, row kk holds W(p*w .. p*w+w-1, kk)), the last panel and the bias zero-padded. The
// Model packs its projections at load; gemm_nt packs per call (matmul.cpp).
struct PackedWeights {
  int n = 0, k = 0;
  bool has_bias = false;
  std::vector<float> panels;  // ceil(n / w) * k * w
  std::vector<float> bias;    // ceil(n / w) * w, zero past n (and everywhere without a bias)
};
// Output features per panel: two vectors (8 floats in WebAssembly SIMD, 32 with AVX-512).
int packed_panel_width();
void pack_weights(const float* W, int n, int k, int ldw, const float* bias, PackedWeights* out);

// C(i, j) (+)= act(alpha * sum_k A(i,k) W(j,k) + bias(j)), i < M, j < W.n, K = W.k.
void gemm_packed(int M, const float* A, int lda, const PackedWeights& W, float alpha, Act act,
                 bool accumulate, float* C, int ldc);
// The twin, on the unpacked torch-layout W:(N, K) row stride ldw: gemm_nt_ref, then the
// activation's _ref twin, then the store or the add.
void linear_act_ref(int M, int N, int K, const float* A, int lda, const float* W, int ldw,
                    const float* bias, Act act, bool accumulate, float* C, int ldc);

// x:(rows, in) W:(out, in) b:(out) -> y:(rows, out), the nn.Linear weight layout.
inline void linear(int rows, int in, int out, const float* x, const float* W, const float* b,
                   float* y) {
  gemm_nt(rows, out, in, 1.0f, x, in, W, in, b, y, out);
}
inline void linear_ref(int rows, int in, int out, const float* x, const float* W, const float* b,
                       float* y) {
  gemm_nt_ref(rows, out, in, 1.0f, x, in, W, in, b, y, out);
}

// Dot product of two contiguous float vectors; shared by the gemms and attention.
float dot(const float* a, const float* b, int n);
float dot_ref(const float* a, const float* b, int n);

}  // namespace sf::kernels
