// Vector erf and GELU on one xsimd batch, for the activation kernels and the GEMM epilogue.
//
// erf(z), two polynomial pieces fitted for this project (Chebyshev least squares in float64 with
// numpy, coefficients rounded to float32; the fit is reproducible from the ranges and degrees):
//   |z| < 1:      erf(z) = z P(z^2),              P of degree 6 (fit error 1.2e-9)
//   1 <= |z| < 4: erfc(|z|) = Q((|z| - 2.5) / 1.5), Q of degree 14 (fit error 6.3e-9)
//   |z| >= 4:     erfc(|z|) = 0                    (erfc(4) = 1.5e-8, below half an ulp of 1)
// Evaluated in float32 (mul + add, no FMA in WebAssembly SIMD) the maximum absolute error against
// erf in float64 is 1.43e-7 (dense sweep of [0, 6], at z ~ 0.99, where erf ~ 0.84 and one ulp is
// 6e-8); std::erf in float is within 3e-8 (its own rounding). tests/cpp/test_kernels.cpp holds
// both to 1.5e-7.
//
// GELU uses the pieces directly: 1 + erf(z) = 2 - erfc(z) for z >= 1, erfc(-z) for z <= -1, so the
// negative tail is computed without the cancellation of 1 + (-0.9999...).
#pragma once

#include "kernels/simd.hpp"

namespace sf::kernels::detail {

// The coefficients, highest degree first (activation.cpp). Not const on purpose: the compiler
// would fold them into v128.const immediates, which V8 rebuilds from two 64-bit moves and a lane
// insert (4 instructions each, 22 per GELU batch); a splat load from memory is one.
extern float kErfP[7];
extern float kErfcQ[15];

// erf(z) / z for |z| < 1 (P above), evaluated at s = z^2.
inline fbatch erf_over_z(const fbatch& s) {
  fbatch p(kErfP[0]);
  for (int i = 1; i < 7; ++i) p = p * s + fbatch(kErfP[i]);
  return p;
}

// erfc(a) for a = |z| >= 1 (Q above; 0 from 4 on). Lanes below 1 get a meaningless value that
// the callers' select discards.
inline fbatch erfc_tail(const fbatch& a) {
  const fbatch u = (a - fbatch(2.5f)) * fbatch(0.6666666666666666f);
  fbatch q(kErfcQ[0]);
  for (int i = 1; i < 15; ++i) q = q * u + fbatch(kErfcQ[i]);
  return xsimd::select(a >= fbatch(4.0f), fbatch(0.0f), q);
}

// NaN propagates in both: comparisons with NaN are false, so NaN lanes take a polynomial.
inline fbatch erf_batch(const fbatch& z) {
  const fbatch a = xsimd::abs(z);
  const auto inner = a < fbatch(1.0f);
  const fbatch small = z * erf_over_z(z * z);
  if (xsimd::all(inner)) return small;
  const fbatch c = erfc_tail(a);
  const fbatch large = xsimd::select(z > fbatch(0.0f), fbatch(1.0f) - c, c - fbatch(1.0f));
  return xsimd::select(inner, small, large);
}

// 1 + erf(z): 2 - erfc(z) for z >= 1, erfc(-z) for z <= -1 (no cancellation in the negative tail).
// A batch whose lanes all lie on one side of 1 evaluates one polynomial (one branch per batch:
// the feed-forward's pre-activations mostly fall inside (-sqrt 2, sqrt 2), i.e. |z| < 1).
inline fbatch one_plus_erf(const fbatch& z) {
  const fbatch a = xsimd::abs(z);
  const auto inner = a < fbatch(1.0f);
  if (xsimd::all(inner)) return fbatch(1.0f) + z * erf_over_z(z * z);
  const fbatch c = erfc_tail(a);
  const fbatch large = xsimd::select(z > fbatch(0.0f), fbatch(2.0f) - c, c);
  if (!xsimd::any(inner)) return large;
  return xsimd::select(inner, fbatch(1.0f) + z * erf_over_z(z * z), large);
}

// 0.5 x (1 + erf(x / sqrt 2)), torch's exact GELU.
inline fbatch gelu_batch(const fbatch& x) {
  return fbatch(0.5f) * x * one_plus_erf(x * fbatch(0.70710678118654752440f));
}

}  // namespace sf::kernels::detail
