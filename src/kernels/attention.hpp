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
// The vector version is the tiled (flash-attention) form: queries in blocks against keys in tiles
// of kKeyBlock, scores and P.V as register-blocked small GEMMs, an online softmax per row, no (L,S)
// buffer. Key tiles masked for a whole query micro-tile (padding, or past every row's key_limit)
// are skipped. With weights requested it writes them from the same tiles (each tile's
// probabilities are rescaled to the row's final max and sum at the end of its query block).
// K (transposed, by tiles) and, when Dh is not a lane multiple, V are packed once per call into
// the workspace. The `_ref` twin is the plain definition: explicit scores, masked_softmax_ref row
// by row, then weights.v, with the scalar kernels (it ignores the workspace).
#pragma once

#include <cstdint>
#include <vector>

namespace sf::kernels {

// Keys per tile: 64 x Dh floats of K^T and of V (16 KB each at Dh 64) stay in L1 while a block of
// queries walks them.
constexpr int kKeyBlock = 64;
// Queries sharing one pass over K and V: each key tile (kKeyBlock x Dh, <= 16 KB at Dh 64) is
// reused by kQueryBlock / 4 micro-tiles while it is in L1, and K, V are streamed L / 64 times.
// Blocks start at query 0, so a call on queries [b * kQueryBlock, ...) of a longer sequence
// computes those rows exactly as the call on all of them does (how threads split a head).
constexpr int kQueryBlock = 64;

// Scratch for attention_head: (S rounded up to 64) * (Dh + 1) floats for K^T and the key mask,
// S * Dh more when Dh is not a lane multiple (V with padded rows), 128 * Dh for one query block,
// and S more when weights are requested (e.g. 1.1 MB at S = 16384, Dh = 16). Passing the same workspace to every
// head of a call (or to every call) makes it grow to the largest head and then allocate nothing;
// with none, attention_head allocates one for the call and frees it. One thread at a time.
struct AttentionWorkspace {
  std::vector<float> buffer;
};

//
// key_start (L) or null, last so that callers without a look-back are unchanged: key j is also
// masked for query i when j < key_start[i] (the model's time look-back over time-sorted keys,
// layout.hpp's time_lookback_starts). Key tiles below every row's start are skipped like tiles
// past every row's limit.
void attention_head(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                    int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                    const int* key_limit, float* out, int ldo, float* weights,
                    AttentionWorkspace* workspace = nullptr, const int* key_start = nullptr);
void attention_head_ref(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                        int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                        const int* key_limit, float* out, int ldo, float* weights,
                        AttentionWorkspace* workspace = nullptr, const int* key_start = nullptr);

// y = 2^x for x <= 0 (the softmax's exponential, in base 2), relative error <= 9.5e-8 (1.6 float32
// ulp) for x >= -126; x < -126.5 and -inf give exactly 0. Exposed for its test.
void exp2_nonpositive(const float* x, float* y, int n);

}  // namespace sf::kernels
