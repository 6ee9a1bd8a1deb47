// Elementwise activations of the encoder's feed-forward block, x:(n) -> y:(n), y may alias x.
//   gelu: exact erf form 0.5 * x * (1 + erf(x / sqrt(2))), what torch's "gelu" (approximate="none")
//         and nn.TransformerEncoderLayer(activation="gelu") compute; not the tanh approximation.
//   relu: max(x, 0).
//   erf:  the vector erf behind gelu (activation_simd.hpp: |error| <= 1.5e-7 over all floats),
//         exposed so tests can sweep it against std::erf; erf_ref is std::erf.
#pragma once

namespace sf::kernels {

void gelu(const float* x, int n, float* y);
void gelu_ref(const float* x, int n, float* y);
void relu(const float* x, int n, float* y);
void relu_ref(const float* x, int n, float* y);
void erf(const float* x, int n, float* y);
void erf_ref(const float* x, int n, float* y);

}  // namespace sf::kernels
