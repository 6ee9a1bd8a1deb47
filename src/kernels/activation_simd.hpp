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

// The coefficients, highest degree first, and GELU's other constants (activation.cpp). Not const
// on purpose: the compiler would fold them into v128.const immediates, which V8 rebuilds in every
// loop iteration from two 64-bit moves and a lane insert (4 instructions each; V8 does not hoist
// them out of loops); a splat load from memory is one instruction. Natively the compiler keeps
// them in registers either way.
extern float kErfP[7];
extern float kErfcQ[15];
// 0.5, 1, 1 / sqrt 2, 2, and erfc_tail's 2.5, 1 / 1.5, 4, 0
extern float kGeluK[8];

inline fbatch splat(const float& c) { return fbatch(c); }

// erf(z) / z for |z| < 1 (P above), evaluated at s = z^2.
inline fbatch erf_over_z(const fbatch& s) {
  fbatch p = splat(kErfP[0]);
  for (int i = 1; i < 7; ++i) p = p * s + splat(kErfP[i]);
  return p;
}

// erfc(a) for a = |z| >= 1 (Q above; 0 from 4 on). Lanes below 1 get a meaningless value that
// the callers' select discards.
inline fbatch erfc_tail(const fbatch& a) {
  const fbatch u = (a - splat(kGeluK[4])) * splat(kGeluK[5]);
  fbatch q = splat(kErfcQ[0]);
  for (int i = 1; i < 15; ++i) q = q * u + splat(kErfcQ[i]);
  return xsimd::select(a >= splat(kGeluK[6]), splat(kGeluK[7]), q);
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

// 1 + erf(z), the lanes with |z| >= 1 (or NaN): 2 - erfc(z) for z >= 1, erfc(-z) for z <= -1 (no
// cancellation in the negative tail); `inner` (|z| < 1) lanes take 1 + z P(s), s = z^2.
inline fbatch one_plus_erf_mixed(const fbatch& z, const fbatch& s, const xsimd::batch_bool<float>& inner) {
  const fbatch c = erfc_tail(xsimd::abs(z));
  const fbatch large = xsimd::select(z > fbatch(0.0f), splat(kGeluK[3]) - c, c);
  if (!xsimd::any(inner)) return large;
  return xsimd::select(inner, splat(kGeluK[1]) + z * erf_over_z(s), large);
}

// gelu_batch with z = x / sqrt 2, s = z^2 and inner = (s < 1) already computed.
inline fbatch gelu_general(const fbatch& x, const fbatch& z, const fbatch& s,
                           const xsimd::batch_bool<float>& inner) {
  const fbatch ope = xsimd::all(inner) ? splat(kGeluK[1]) + z * erf_over_z(s)
                                       : one_plus_erf_mixed(z, s, inner);
  return splat(kGeluK[0]) * x * ope;
}

// 0.5 x (1 + erf(x / sqrt 2)), torch's exact GELU. |z| < 1 is tested as z^2 < 1 (the same set of
// floats: z^2 rounds to at most 1 - 2^-23 for |z| < 1, and to at least 1 for |z| >= 1), which
// reuses s and saves the abs. A batch whose lanes all lie inside evaluates one polynomial (one
// branch per batch: the feed-forward's pre-activations mostly fall inside (-sqrt 2, sqrt 2)).
inline fbatch gelu_batch(const fbatch& x) {
  const fbatch z = x * splat(kGeluK[2]);
  const fbatch s = z * z;
  return gelu_general(x, z, s, s < splat(kGeluK[1]));
}

// gelu_batch on two batches: when both lie inside, the two polynomials run interleaved and share
// each coefficient's splat (in WebAssembly one load serves both batches; V8 keeps few vectors in
// registers across a loop). Same operations per lane as gelu_batch, so the same results.
inline void gelu_batch2(const fbatch& x0, const fbatch& x1, fbatch* y0, fbatch* y1) {
  const fbatch k = splat(kGeluK[2]), one = splat(kGeluK[1]);
  const fbatch z0 = x0 * k, z1 = x1 * k;
  const fbatch s0 = z0 * z0, s1 = z1 * z1;
  const auto in0 = s0 < one, in1 = s1 < one;
  if (xsimd::all(in0 && in1)) {
    fbatch p0 = splat(kErfP[0]), p1 = p0;
    for (int i = 1; i < 7; ++i) {
      const fbatch c = splat(kErfP[i]);
      p0 = p0 * s0 + c;
      p1 = p1 * s1 + c;
    }
    const fbatch h = splat(kGeluK[0]);
    *y0 = h * x0 * (one + z0 * p0);
    *y1 = h * x1 * (one + z1 * p1);
    return;
  }
  *y0 = gelu_general(x0, z0, s0, in0);
  *y1 = gelu_general(x1, z1, s1, in1);
}

}  // namespace sf::kernels::detail
