#include "kernels/layernorm.hpp"

#include <cmath>

#include "kernels/simd.hpp"

namespace sf::kernels {

void layer_norm_ref(const float* x, int rows, int d, const float* gamma, const float* beta,
                    float eps, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    float mean = 0.0f;
    for (int i = 0; i < d; ++i) mean += xr[i];
    mean /= d;
    float var = 0.0f;
    for (int i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= d;
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (int i = 0; i < d; ++i)
      yr[i] = (xr[i] - mean) * rstd * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
  }
}

void layer_norm(const float* x, int rows, int d, const float* gamma, const float* beta, float eps,
                float* y) {
  const int end = simd_end(d, kFloatLanes);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    fbatch vs(0.0f);
    for (int i = 0; i < end; i += kFloatLanes) vs += fbatch::load_unaligned(xr + i);
    float sum = xsimd::hadd(vs);
    for (int i = end; i < d; ++i) sum += xr[i];
    const float mean = sum / d;

    const fbatch vmean(mean);
    fbatch vq(0.0f);
    for (int i = 0; i < end; i += kFloatLanes) {
      const fbatch c = fbatch::load_unaligned(xr + i) - vmean;
      vq = xsimd::fma(c, c, vq);
    }
    float sq = xsimd::hadd(vq);
    for (int i = end; i < d; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = 1.0f / std::sqrt(sq / d + eps);

    const fbatch vr(rstd);
    for (int i = 0; i < end; i += kFloatLanes) {
      fbatch v = (fbatch::load_unaligned(xr + i) - vmean) * vr;
      if (gamma) v *= fbatch::load_unaligned(gamma + i);
      if (beta) v += fbatch::load_unaligned(beta + i);
      v.store_unaligned(yr + i);
    }
    for (int i = end; i < d; ++i)
      yr[i] = (xr[i] - mean) * rstd * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
  }
}

}  // namespace sf::kernels
