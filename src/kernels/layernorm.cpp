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

// Rows per block of the vector kernel.
constexpr int kBlockRows = 4;

// R rows at once, the vector kernel. R = kBlockRows (a full block) or 1 (the rows left over).
// Why blocks: per row, the mean and the variance each end in a horizontal add, and WebAssembly
// SIMD has none (each costs shuffles and adds on a dependency chain), and the row's 1 / sqrt is a
// scalar division and square root. With 4-lane batches (WebAssembly, SSE4.1) a block's 4
// accumulators reduce together (xsimd::haddp: one vector of 4 sums for the price of about one
// horizontal add), and the means, variances and 1 / sqrt(var + eps) are computed 4 at a time in
// one vector. Wider batches (AVX2, AVX-512) reduce row by row: their haddp wants a row per lane,
// and xsimd 8.1's AVX-512 haddp gave wrong sums in this kernel's tests when tried (not
// investigated). Either way the block's rows interleave, so R independent add chains overlap.
// Every operation on a row's statistics is the same IEEE operation the per-row form did (sum / d,
// q / d + eps, 1 / sqrt), so only the summation order differs from the single-row path.
// With r, x is first replaced by x + r (while summing for the mean, so each row is read once from
// memory; the second and third passes find it in L1).
template <int R>
inline void norm_rows(float* x, const float* r, int d, const float* gamma, const float* beta,
                      float eps, float* y) {
  constexpr bool kVectorStats = R == kFloatLanes;
  const int end = simd_end(d, kFloatLanes);
  fbatch acc[R];
  for (int j = 0; j < R; ++j) acc[j] = fbatch(0.0f);
  for (int i = 0; i < end; i += kFloatLanes) {
    for (int j = 0; j < R; ++j) {
      float* xr = x + static_cast<size_t>(j) * d;
      fbatch v = fbatch::load_unaligned(xr + i);
      if (r) {
        v += fbatch::load_unaligned(r + static_cast<size_t>(j) * d + i);
        v.store_unaligned(xr + i);
      }
      acc[j] += v;
    }
  }
  alignas(64) float mean[kFloatLanes];
  alignas(64) float rstd[kFloatLanes];
  const auto reduce = [&](float* out) {
    if constexpr (kVectorStats) {
      xsimd::haddp(acc).store_aligned(out);
    } else {
      for (int j = 0; j < R; ++j) out[j] = xsimd::hadd(acc[j]);
    }
  };
  reduce(mean);
  for (int j = 0; j < R; ++j) {
    float* xr = x + static_cast<size_t>(j) * d;
    for (int i = end; i < d; ++i) mean[j] += r ? (xr[i] += r[static_cast<size_t>(j) * d + i]) : xr[i];
    mean[j] /= d;
  }

  for (int j = 0; j < R; ++j) acc[j] = fbatch(0.0f);
  for (int i = 0; i < end; i += kFloatLanes) {
    for (int j = 0; j < R; ++j) {
      const fbatch c = fbatch::load_unaligned(x + static_cast<size_t>(j) * d + i) - fbatch(mean[j]);
      acc[j] = xsimd::fma(c, c, acc[j]);
    }
  }
  reduce(rstd);
  for (int j = 0; j < R; ++j) {
    const float* xr = x + static_cast<size_t>(j) * d;
    for (int i = end; i < d; ++i) rstd[j] += (xr[i] - mean[j]) * (xr[i] - mean[j]);
  }
  if constexpr (kVectorStats) {
    const fbatch q = fbatch::load_aligned(rstd);
    (fbatch(1.0f) / xsimd::sqrt(q / fbatch(static_cast<float>(d)) + fbatch(eps))).store_aligned(rstd);
  } else {
    for (int j = 0; j < R; ++j) rstd[j] = 1.0f / std::sqrt(rstd[j] / d + eps);
  }

  for (int j = 0; j < R; ++j) {
    const float* xr = x + static_cast<size_t>(j) * d;
    float* yr = y + static_cast<size_t>(j) * d;
    const fbatch vmean(mean[j]), vr(rstd[j]);
    for (int i = 0; i < end; i += kFloatLanes) {
      fbatch v = (fbatch::load_unaligned(xr + i) - vmean) * vr;
      if (gamma) v *= fbatch::load_unaligned(gamma + i);
      if (beta) v += fbatch::load_unaligned(beta + i);
      v.store_unaligned(yr + i);
    }
    for (int i = end; i < d; ++i)
      yr[i] = (xr[i] - mean[j]) * rstd[j] * (gamma ? gamma[i] : 1.0f) + (beta ? beta[i] : 0.0f);
  }
}

// y may alias x: a block reads its rows' x completely (passes one and two, and each row's third
// pass reads x[i] before writing y[i]) before writing them, and touches no other rows.
void norm_all(float* x, const float* r, int rows, int d, const float* gamma, const float* beta,
              float eps, float* y) {
  int i = 0;
  for (; i + kBlockRows <= rows; i += kBlockRows) {
    const size_t o = static_cast<size_t>(i) * d;
    norm_rows<kBlockRows>(x + o, r ? r + o : nullptr, d, gamma, beta, eps, y + o);
  }
  for (; i < rows; ++i) {
    const size_t o = static_cast<size_t>(i) * d;
    norm_rows<1>(x + o, r ? r + o : nullptr, d, gamma, beta, eps, y + o);
  }
}

}  // namespace

void layer_norm(const float* x, int rows, int d, const float* gamma, const float* beta, float eps,
                float* y) {
  // x is only written when a residual is given.
  norm_all(const_cast<float*>(x), nullptr, rows, d, gamma, beta, eps, y);
}

void add_layer_norm(float* x, const float* r, int rows, int d, const float* gamma, const float* beta,
                    float eps, float* y) {
  norm_all(x, r, rows, d, gamma, beta, eps, y);
}

void add_layer_norm_ref(float* x, const float* r, int rows, int d, const float* gamma,
                        const float* beta, float eps, float* y) {
  for (size_t i = 0; i < static_cast<size_t>(rows) * d; ++i) x[i] += r[i];
  layer_norm_ref(x, rows, d, gamma, beta, eps, y);
}

}  // namespace sf::kernels
