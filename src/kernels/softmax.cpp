// The vector version writes -inf into masked slots first so the max, exp and sum passes run
// branch-free over whole lanes (exp(-inf) = 0 exactly); the twin branches per element.
#include "kernels/softmax.hpp"

#include <cmath>
#include <limits>

#include "kernels/simd.hpp"

namespace sf::kernels {

namespace {
bool masked(int j, int n_valid, const std::uint8_t* ignore) {
  return j >= n_valid || (ignore && ignore[j]);
}
}  // namespace

void masked_softmax_ref(float* x, int n, int n_valid, const std::uint8_t* ignore) {
  float m = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j)
    if (!masked(j, n_valid, ignore) && x[j] > m) m = x[j];
  if (m == -std::numeric_limits<float>::infinity()) {  // every key masked
    for (int j = 0; j < n; ++j) x[j] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    x[j] = masked(j, n_valid, ignore) ? 0.0f : std::exp(x[j] - m);
    sum += x[j];
  }
  for (int j = 0; j < n; ++j) x[j] /= sum;
}

void masked_softmax(float* x, int n, int n_valid, const std::uint8_t* ignore) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (n_valid > n) n_valid = n;
  if (n_valid < 0) n_valid = 0;
  for (int j = n_valid; j < n; ++j) x[j] = kNegInf;
  if (ignore)
    for (int j = 0; j < n_valid; ++j)
      if (ignore[j]) x[j] = kNegInf;

  const int end = simd_end(n_valid, kFloatLanes);
  fbatch vmax(kNegInf);
  for (int j = 0; j < end; j += kFloatLanes) vmax = xsimd::max(vmax, fbatch::load_unaligned(x + j));
  float m = kNegInf;
  alignas(64) float lanes[kFloatLanes];
  vmax.store_aligned(lanes);
  for (int l = 0; l < kFloatLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (int j = end; j < n_valid; ++j) m = x[j] > m ? x[j] : m;
  if (m == kNegInf) {  // every key masked
    for (int j = 0; j < n; ++j) x[j] = 0.0f;
    return;
  }

  const fbatch vm(m);
  fbatch vsum(0.0f);
  for (int j = 0; j < end; j += kFloatLanes) {
    const fbatch e = xsimd::exp(fbatch::load_unaligned(x + j) - vm);
    e.store_unaligned(x + j);
    vsum += e;
  }
  float sum = xsimd::hadd(vsum);
  for (int j = end; j < n_valid; ++j) {
    x[j] = std::exp(x[j] - m);
    sum += x[j];
  }
  const fbatch vinv(1.0f / sum);
  for (int j = 0; j < end; j += kFloatLanes)
    (fbatch::load_unaligned(x + j) * vinv).store_unaligned(x + j);
  const float inv = 1.0f / sum;
  for (int j = end; j < n_valid; ++j) x[j] *= inv;
  for (int j = n_valid; j < n; ++j) x[j] = 0.0f;
}

}  // namespace sf::kernels
