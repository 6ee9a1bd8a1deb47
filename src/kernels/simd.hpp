// The one place the kernels meet xsimd. Natively xsimd picks the widest arch the compiler enables
// (-march=native: AVX2/FMA or AVX-512); under Emscripten, -msimd128 -msse4.1 makes it pick sse4_1,
// whose intrinsics Emscripten lowers to WebAssembly SIMD (xsimd 8.1 has no wasm arch of its own).
#pragma once

#include <cstddef>
// GCC 12's AVX-512 intrinsics pass `_mm512_undefined_*()` (a self-initialised `__Y`) as the
// ignored merge source of all-ones-masked builtins, and -Wmaybe-uninitialized reports it wherever
// xsimd's AVX-512 code is inlined into a kernel (GCC bug 105593; later GCC releases fix the
// header). The warning is about GCC's header, so it is silenced for the headers pulled in here
// only; our own code after the pop keeps it.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <xsimd/xsimd.hpp>
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif

namespace sf::kernels {

using fbatch = xsimd::batch<float>;
using dbatch = xsimd::batch<double>;
constexpr int kFloatLanes = static_cast<int>(fbatch::size);
constexpr int kDoubleLanes = static_cast<int>(dbatch::size);

// Before a scalar loop that is a packing loop's tail or runs once per row or call: clang's
// vectorized, unrolled versions of such loops cost kilobytes of WebAssembly for no measurable time
// (4 KB for the GEMM's packing loops alone).
#if defined(__clang__)
#define SF_SMALL_LOOP _Pragma("clang loop vectorize(disable) unroll(disable)")
#else
#define SF_SMALL_LOOP
#endif

// Largest multiple of `lanes` not above n: the vector loop runs to it, the scalar tail after it.
constexpr int simd_end(int n, int lanes) { return n - n % lanes; }

// Name of the instruction set the vector kernels were compiled for ("avx2", "sse4.1", ...).
inline const char* simd_arch_name() { return xsimd::default_arch::name(); }

}  // namespace sf::kernels
