// Matrix products behind every projection and attention step, on row-major float32 buffers with
// explicit row strides (so one head's columns of a packed (T, E) buffer are used in place).
//
//   gemm_nt: C(M,N) = alpha * A(M,K) . B(N,K)^T + bias(N)    X*W^T + b (nn.Linear), Q*K^T
//   gemm_nn: C(M,N) = A(M,K) . B(K,N)                        P*V
//
// `*_ref` twins have the same signatures and plain loops: they are the definition the tests hold
// the vector versions to. bias may be null.
#pragma once

namespace sf::kernels {

void gemm_nt(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             const float* bias, float* C, int ldc);
void gemm_nt_ref(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                 const float* bias, float* C, int ldc);

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc);
void gemm_nn_ref(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc);

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
