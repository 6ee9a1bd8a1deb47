// gelu uses the project's vector erf (activation_simd.hpp; xsimd::erf costs an exp and two
// rational pieces per lane, which made GELU slower than the matrix product feeding it); the twins
// keep std::erf. Tails shorter than a batch go through a padded batch, so every element of one
// call sees the same approximation.
#include "kernels/activation.hpp"

#include <cmath>

#include "kernels/activation_simd.hpp"
#include "kernels/simd.hpp"

namespace sf::kernels {

namespace detail {
float kErfP[7] = {7.882499735e-05f, -8.018857785e-04f, 5.189312534e-03f, -2.685432930e-02f,
                  1.128359748e-01f, -3.761262691e-01f, 1.128379166e+00f};
float kErfcQ[15] = {-2.598573912e-04f, -9.701878750e-05f, 2.039518840e-03f, -1.536253513e-03f,
                    -4.676663229e-03f, 1.040351418e-02f,  -6.630969114e-03f, -9.574301075e-03f,
                    3.186589611e-02f,  -4.639104527e-02f, 4.365193430e-02f,  -2.818722332e-02f,
                    1.225279947e-02f,  -3.267276898e-03f, 4.069523677e-04f};
float kGeluK[8] = {0.5f, 1.0f, 0.70710678118654752440f, 2.0f, 2.5f, 0.6666666666666666f, 4.0f, 0.0f};
}  // namespace detail

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;

template <class F>
void map_batches(const float* x, int n, float* y, F f) {
  const int end = simd_end(n, kFloatLanes);
  for (int i = 0; i < end; i += kFloatLanes) f(fbatch::load_unaligned(x + i)).store_unaligned(y + i);
  if (end == n) return;
  alignas(64) float tail[kFloatLanes] = {};
  for (int i = end; i < n; ++i) tail[i - end] = x[i];
  f(fbatch::load_aligned(tail)).store_aligned(tail);
  for (int i = end; i < n; ++i) y[i] = tail[i - end];
}
}  // namespace

void add_ref(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] += x[i];
}

void add(const float* x, int n, float* y) {
  const int end = simd_end(n, kFloatLanes);
  for (int i = 0; i < end; i += kFloatLanes)
    (fbatch::load_unaligned(y + i) + fbatch::load_unaligned(x + i)).store_unaligned(y + i);
  for (int i = end; i < n; ++i) y[i] += x[i];
}

void gelu_ref(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

void gelu(const float* x, int n, float* y) {
  // Two batches per iteration (detail::gelu_batch2), the rest through map_batches.
  const int end2 = simd_end(n, 2 * kFloatLanes);
  for (int i = 0; i < end2; i += 2 * kFloatLanes) {
    fbatch a, b;
    detail::gelu_batch2(fbatch::load_unaligned(x + i), fbatch::load_unaligned(x + i + kFloatLanes), &a, &b);
    a.store_unaligned(y + i);
    b.store_unaligned(y + i + kFloatLanes);
  }
  map_batches(x + end2, n - end2, y + end2, detail::gelu_batch);
}

void erf_ref(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

void erf(const float* x, int n, float* y) { map_batches(x, n, y, detail::erf_batch); }

void relu_ref(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu(const float* x, int n, float* y) {
  const int end = simd_end(n, kFloatLanes);
  const fbatch zero(0.0f);
  for (int i = 0; i < end; i += kFloatLanes)
    xsimd::max(fbatch::load_unaligned(x + i), zero).store_unaligned(y + i);
  for (int i = end; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace sf::kernels
