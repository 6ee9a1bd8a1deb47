#include "pool/pooling.hpp"

#include <algorithm>

namespace sf {

void masked_mean(const float* x, int T, int d, const std::uint8_t* present, float* out) {
  std::fill(out, out + d, 0.0f);
  int count = 0;
  for (int i = 0; i < T; ++i) {
    if (!present[i]) continue;
    ++count;
    for (int j = 0; j < d; ++j) out[j] += x[static_cast<size_t>(i) * d + j];
  }
  if (count > 0)
    for (int j = 0; j < d; ++j) out[j] /= static_cast<float>(count);
}

}  // namespace sf
