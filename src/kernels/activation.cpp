// gelu uses xsimd's vector erf (a rational/exp approximation accurate to a few ulp over the whole
// float range); the twin uses std::erf.
#include "kernels/activation.hpp"

#include <cmath>

#include "kernels/simd.hpp"

namespace sf::kernels {

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752440f;
}

void gelu_ref(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

void gelu(const float* x, int n, float* y) {
  const int end = simd_end(n, kFloatLanes);
  const fbatch half(0.5f), one(1.0f), k(kInvSqrt2);
  for (int i = 0; i < end; i += kFloatLanes) {
    const fbatch v = fbatch::load_unaligned(x + i);
    (half * v * (one + xsimd::erf(v * k))).store_unaligned(y + i);
  }
  for (int i = end; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
}

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
