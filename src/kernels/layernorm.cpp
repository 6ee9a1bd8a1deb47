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

namespace {

// One row, the vector kernel: with r, x is first replaced by x + r (while summing for the mean,
// so the row is read once from memory; the second and third passes find it in L1).
inline void norm_row(float* xr, const float* rr, int d, const float* gamma, const float* beta,
                     float eps, float* yr) {
  const int end = simd_end(d, kFloatLanes);
  fbatch vs(0.0f);
  for (int i = 0; i < end; i += kFloatLanes) {
    fbatch v = fbatch::load_unaligned(xr + i);
    if (rr) {
      v += fbatch::load_unaligned(rr + i);
      v.store_unaligned(xr + i);
    }
    vs += v;
  }
  float sum = xsimd::hadd(vs);
  for (int i = end; i < d; ++i) sum += rr ? (xr[i] += rr[i]) : xr[i];
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

}  // namespace

void layer_norm(const float* x, int rows, int d, const float* gamma, const float* beta, float eps,
                float* y) {
  // x is only read when no residual is given.
  for (int r = 0; r < rows; ++r)
    norm_row(const_cast<float*>(x + static_cast<size_t>(r) * d), nullptr, d, gamma, beta, eps,
             y + static_cast<size_t>(r) * d);
}

void add_layer_norm(float* x, const float* r, int rows, int d, const float* gamma, const float* beta,
                    float eps, float* y) {
  for (int i = 0; i < rows; ++i)
    norm_row(x + static_cast<size_t>(i) * d, r + static_cast<size_t>(i) * d, d, gamma, beta, eps,
             y + static_cast<size_t>(i) * d);
}

void add_layer_norm_ref(float* x, const float* r, int rows, int d, const float* gamma,
                        const float* beta, float eps, float* y) {
  for (size_t i = 0; i < static_cast<size_t>(rows) * d; ++i) x[i] += r[i];
  layer_norm_ref(x, rows, d, gamma, beta, eps, y);
}

}  // namespace sf::kernels
