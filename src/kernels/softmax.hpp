// Numerically stable masked softmax over one row, in place.
//
// x:(n). Entries at index >= n_valid (the causal cut) or with ignore[j] != 0 (key padding, torch's
// True = ignore) get weight exactly 0. The max is taken over the unmasked entries only, so
// exp() never sees a positive argument. A row with no unmasked entry becomes all zeros (PyTorch
// 1.13 returns NaN there, >= 2.5 returns zeros; we document and test zeros). ignore may be null.
#pragma once

#include <cstdint>

namespace sf::kernels {

void masked_softmax(float* x, int n, int n_valid, const std::uint8_t* ignore);
void masked_softmax_ref(float* x, int n, int n_valid, const std::uint8_t* ignore);

}  // namespace sf::kernels
