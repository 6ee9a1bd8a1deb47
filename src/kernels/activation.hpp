// Elementwise kernels: the activations of the encoder's feed-forward block, x:(n) -> y:(n), y may
// alias x; and add.
//   gelu: exact erf form 0.5 * x * (1 + erf(x / sqrt(2))), what torch's "gelu" (approximate="none")
//         and nn.TransformerEncoderLayer(activation="gelu") compute; not the tanh approximation.
//   relu: max(x, 0).
//   add:  y += x, the embeddings' sum of a token's tables (each add rounds once, as in torch's
//         `y + x`, so the vector form equals the twin bit for bit).
//   erf:  the vector erf behind gelu (activation_simd.hpp: |error| <= 1.5e-7 over all floats),
//         exposed so tests can sweep it against std::erf; erf_ref is std::erf.
#pragma once

namespace sf::kernels {

void gelu(const float* x, int n, float* y);
void gelu_ref(const float* x, int n, float* y);
void relu(const float* x, int n, float* y);
void relu_ref(const float* x, int n, float* y);
void add(const float* x, int n, float* y);
void add_ref(const float* x, int n, float* y);
void erf(const float* x, int n, float* y);
void erf_ref(const float* x, int n, float* y);

}  // namespace sf::kernels
