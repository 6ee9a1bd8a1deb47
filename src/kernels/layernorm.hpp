// Layer norm over the last axis, torch.nn.LayerNorm semantics: biased variance, eps inside the
// square root (default 1e-5, as nn.LayerNorm and nn.TransformerEncoderLayer use).
//
// x:(rows, d) gamma:(d) beta:(d) -> y:(rows, d). gamma/beta may be null (1 and 0); y may alias x.
// Two passes (mean, then centred sum of squares) rather than E[x^2] - E[x]^2, which cancels badly
// for inputs with a large mean.
#pragma once

namespace sf::kernels {

constexpr float kLayerNormEps = 1e-5f;

void layer_norm(const float* x, int rows, int d, const float* gamma, const float* beta, float eps,
                float* y);
void layer_norm_ref(const float* x, int rows, int d, const float* gamma, const float* beta,
                    float eps, float* y);

// Residual + layer norm in one pass over each row: x += r (stored: the residual stream), then
// y = layer_norm(x). Pre-norm layers use it as `x += sa; y = LN2(x)`; post-norm layers as
// `x = LN(x + sa)` by passing y = x. r must not alias x; y may.
void add_layer_norm(float* x, const float* r, int rows, int d, const float* gamma, const float* beta,
                    float eps, float* y);
void add_layer_norm_ref(float* x, const float* r, int rows, int d, const float* gamma,
                        const float* beta, float eps, float* y);

}  // namespace sf::kernels
