// Scaled dot-product attention for one head, the inner step of multi-head attention:
//
//   out = softmax(scale * q . k^T  masked) . v
//
// q:(L,Dh) row stride ldq, k:(S,Dh) ldk, v:(S,Dh) ldv -> out:(L,Dh) ldo; weights:(L,S) or null.
// Key j is masked for query i when key_ignore[j] != 0 (torch key_padding_mask, True = ignore) or
// when j >= key_limit[i]: causal masks are prefixes of the keys (torch's causal mask is
// key_limit[i] = i + 1; a time-causal mask over time-sorted keys is the count of keys not later
// than query i). key_ignore and key_limit may be null. A query with every key masked gets a zero
// output row and a zero weight row (never NaN).
//
// With weights == null the vector version never forms the (L,S) score matrix: it walks keys in
// blocks of kKeyBlock with an online softmax (running max m, running sum l, rescaled accumulator),
// which is the form a tiled/fused fast path extends. With weights requested it forms the scores,
// applies masked_softmax row by row and multiplies by v. The `_ref` twin always takes the
// explicit path with the scalar kernels.
#pragma once

#include <cstdint>

namespace sf::kernels {

constexpr int kKeyBlock = 64;

void attention_head(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                    int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                    const int* key_limit, float* out, int ldo, float* weights);
void attention_head_ref(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                        int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                        const int* key_limit, float* out, int ldo, float* weights);

}  // namespace sf::kernels
