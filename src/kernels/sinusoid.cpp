// The vector version reduces each float64 angle to [-pi, pi] with a two-part 2*pi (Cody-Waite)
// before xsimd's float64 sincos (its sin and cos, bit for bit, sharing one reduction and one pair
// of polynomials), so its accuracy does not depend on how large t - t_ref is; the twin calls
// std::sin/std::cos on the unreduced angle.
#include "kernels/sinusoid.hpp"

#include <cmath>
#include <vector>

#include "kernels/simd.hpp"

namespace sf::kernels {

namespace {
// 2*pi split so that k * kTwoPiHi is exact for |k| < 2^20 (angles up to ~6.6e6 rad, 76 days at
// 1 rad/s); past that the reduction error stays near the ulp of the float64 angle itself.
constexpr double kTwoPiHi = 6.2831853069365025;     // 2*pi in float64 with the 20 low mantissa bits clear
constexpr double kTwoPiLo = 2.430840202602477e-10;  // 2*pi - kTwoPiHi
constexpr double kInvTwoPi = 0.15915494309189533577;
}  // namespace

void sinusoid_encoding_ref(const double* t, int n, double t_ref, int d, const double* inv,
                           float* out) {
  const int half = d / 2;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < half; ++i) {
      const double a = (t[r] - t_ref) * inv[i];
      out[r * d + i] = static_cast<float>(std::sin(a));
      out[r * d + half + i] = static_cast<float>(std::cos(a));
    }
}

void sinusoid_encoding(const double* t, int n, double t_ref, int d, const double* inv, float* out) {
  const int half = d / 2;
  const int end = simd_end(half, kDoubleLanes);
  alignas(64) double s[kDoubleLanes], c[kDoubleLanes];
  const dbatch hi(kTwoPiHi), lo(kTwoPiLo), inv2pi(kInvTwoPi);
  for (int r = 0; r < n; ++r) {
    const double dt = t[r] - t_ref;
    float* row = out + r * d;
    for (int i = 0; i < end; i += kDoubleLanes) {
      const dbatch a = dbatch(dt) * dbatch::load_unaligned(inv + i);
      const dbatch k = xsimd::nearbyint(a * inv2pi);
      const dbatch red = xsimd::fnma(k, lo, xsimd::fnma(k, hi, a));  // a - k*hi - k*lo
      const auto sc = xsimd::sincos(red);  // one reduction and one pair of polynomials for both
      sc.first.store_aligned(s);
      sc.second.store_aligned(c);
      for (int l = 0; l < kDoubleLanes; ++l) {
        row[i + l] = static_cast<float>(s[l]);
        row[half + i + l] = static_cast<float>(c[l]);
      }
    }
    for (int i = end; i < half; ++i) {
      const double a = dt * inv[i];
      row[i] = static_cast<float>(std::sin(a));
      row[half + i] = static_cast<float>(std::cos(a));
    }
  }
}

}  // namespace sf::kernels
