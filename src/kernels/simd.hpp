// The one place the kernels meet xsimd. Natively xsimd picks the widest arch the compiler enables
// (-march=native: AVX2/FMA or AVX-512); under Emscripten, -msimd128 -msse4.1 makes it pick sse4_1,
// whose intrinsics Emscripten lowers to WebAssembly SIMD (xsimd 8.1 has no wasm arch of its own).
#pragma once

#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace sf::kernels {

using fbatch = xsimd::batch<float>;
using dbatch = xsimd::batch<double>;
constexpr int kFloatLanes = static_cast<int>(fbatch::size);
constexpr int kDoubleLanes = static_cast<int>(dbatch::size);

// Largest multiple of `lanes` not above n: the vector loop runs to it, the scalar tail after it.
constexpr int simd_end(int n, int lanes) { return n - n % lanes; }

// Name of the instruction set the vector kernels were compiled for ("avx2", "sse4.1", ...).
inline const char* simd_arch_name() { return xsimd::default_arch::name(); }

}  // namespace sf::kernels
