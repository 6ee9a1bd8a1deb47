#include "kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

namespace sf::kernels {

namespace {

int valid_keys(int i, int S, const int* key_limit) {
  return key_limit ? std::max(0, std::min(key_limit[i], S)) : S;
}

// Explicit path: weights:(L,S) = masked_softmax(scale * q.k^T), out = weights.v.
template <bool kRef>
void attention_explicit(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                        int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                        const int* key_limit, float* out, int ldo, float* weights) {
  if (kRef) {
    gemm_nt_ref(L, S, Dh, scale, q, ldq, k, ldk, nullptr, weights, S);
    for (int i = 0; i < L; ++i) masked_softmax_ref(weights + i * S, S, valid_keys(i, S, key_limit), key_ignore);
    gemm_nn_ref(L, Dh, S, weights, S, v, ldv, out, ldo);
  } else {
    gemm_nt(L, S, Dh, scale, q, ldq, k, ldk, nullptr, weights, S);
    for (int i = 0; i < L; ++i) masked_softmax(weights + i * S, S, valid_keys(i, S, key_limit), key_ignore);
    gemm_nn(L, Dh, S, weights, S, v, ldv, out, ldo);
  }
}

// Online-softmax path (no weights): per query, key blocks update (m, l, acc) so that at the end
// acc / l equals softmax(scores) . v without storing a row of S scores.
void attention_online(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                      int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                      const int* key_limit, float* out, int ldo) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  alignas(64) float s[kKeyBlock];
  std::vector<float> acc(Dh);
  const int dend = simd_end(Dh, kFloatLanes);
  const int bend = simd_end(kKeyBlock, kFloatLanes);
  for (int i = 0; i < L; ++i) {
    const float* qi = q + i * ldq;
    const int n_valid = valid_keys(i, S, key_limit);
    float m = kNegInf, l = 0.0f;
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int j0 = 0; j0 < n_valid; j0 += kKeyBlock) {
      const int jn = std::min(kKeyBlock, n_valid - j0);
      float mb = kNegInf;
      for (int jj = 0; jj < jn; ++jj) {
        const int j = j0 + jj;
        s[jj] = (key_ignore && key_ignore[j]) ? kNegInf : scale * dot(qi, k + j * ldk, Dh);
        mb = std::max(mb, s[jj]);
      }
      if (mb == kNegInf) continue;  // the whole block is masked
      for (int jj = jn; jj < kKeyBlock; ++jj) s[jj] = kNegInf;
      const float m_new = std::max(m, mb);
      const float corr = std::exp(m - m_new);  // 0 on the first unmasked block (m = -inf)
      const fbatch vm(m_new);
      fbatch vsum(0.0f);
      for (int jj = 0; jj < bend; jj += kFloatLanes) {
        const fbatch p = xsimd::exp(fbatch::load_aligned(s + jj) - vm);
        p.store_aligned(s + jj);
        vsum += p;
      }
      l = l * corr + xsimd::hadd(vsum);
      const fbatch vcorr(corr);
      for (int d = 0; d < dend; d += kFloatLanes)
        (fbatch::load_unaligned(acc.data() + d) * vcorr).store_unaligned(acc.data() + d);
      for (int d = dend; d < Dh; ++d) acc[d] *= corr;
      for (int jj = 0; jj < jn; ++jj) {
        const float p = s[jj];
        if (p == 0.0f) continue;  // masked key (exp(-inf)) or underflow: contributes nothing
        const float* vj = v + (j0 + jj) * ldv;
        const fbatch vp(p);
        for (int d = 0; d < dend; d += kFloatLanes)
          xsimd::fma(vp, fbatch::load_unaligned(vj + d), fbatch::load_unaligned(acc.data() + d))
              .store_unaligned(acc.data() + d);
        for (int d = dend; d < Dh; ++d) acc[d] += p * vj[d];
      }
      m = m_new;
    }
    float* oi = out + i * ldo;
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // l == 0: every key masked -> zero row
    for (int d = 0; d < Dh; ++d) oi[d] = acc[d] * inv;
  }
}

}  // namespace

void attention_head_ref(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                        int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                        const int* key_limit, float* out, int ldo, float* weights) {
  std::vector<float> scratch;
  if (!weights) {
    scratch.resize(static_cast<size_t>(L) * S);
    weights = scratch.data();
  }
  attention_explicit<true>(L, S, Dh, scale, q, ldq, k, ldk, v, ldv, key_ignore, key_limit, out, ldo,
                           weights);
}

void attention_head(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                    int ldk, const float* v, int ldv, const std::uint8_t* key_ignore, const int* key_limit,
                    float* out, int ldo, float* weights) {
  if (weights)
    attention_explicit<false>(L, S, Dh, scale, q, ldq, k, ldk, v, ldv, key_ignore, key_limit, out,
                              ldo, weights);
  else
    attention_online(L, S, Dh, scale, q, ldq, k, ldk, v, ldv, key_ignore, key_limit, out, ldo);
}

}  // namespace sf::kernels
