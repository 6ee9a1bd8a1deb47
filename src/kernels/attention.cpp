// The vector attention_head is the flash-attention form (Dao et al., "FlashAttention", 2022,
// algorithm 1): a block of queries walks the keys in tiles of kKeyBlock; per tile the scores are a
// register-blocked 4 x 2-vector GEMM (broadcast q(i,d), vector of K^T(d, j..)), the softmax is kept
// online per row (running max m, running sum l, output rescaled by 2^(m_old - m_new) when the max
// grows), and P.V is a second 4 x 2-vector GEMM (broadcast p(i,j), vector of V(j, d..)). No horizontal
// add sits in an inner loop and no (L,S) buffer is formed unless the caller asks for the weights.
//
// Scores are kept in base 2: the packed queries carry scale * log2(e), so every exponential is an
// exp2 (one polynomial, no range-reduction multiply); softmax is unchanged since
// 2^(log2(e) s) = e^s.
#include "kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

namespace sf::kernels {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int kW = kFloatLanes;
// Query rows per micro-tile: 4 rows x 2 vectors = 8 accumulators + 2 operands + 1 broadcast stay
// within the 16 registers V8 gives WebAssembly SIMD on x64 (no spills in the inner loop).
constexpr int kRows = 4;
static_assert(kKeyBlock % (2 * kW) == 0, "a key tile is a whole number of 2-vector column pairs");
static_assert(kQueryBlock % kRows == 0, "a query block is a whole number of micro-tiles");

// a < b ? b : a, lane-wise: one f32x4.pmax in WebAssembly (Emscripten's _mm_max_ps, which xsimd
// uses, emulates the x86 NaN rule with a compare and a bitselect). A NaN in `a` comes back as
// NaN, so NaN scores reach the output as NaN (as in torch) instead of being clamped to 0.
inline fbatch vmax(fbatch a, fbatch b) {
#ifdef __wasm_simd128__
  return fbatch(static_cast<__m128>(wasm_f32x4_pmax(static_cast<v128_t>(static_cast<__m128>(a)),
                                                    static_cast<v128_t>(static_cast<__m128>(b)))));
#else
  return xsimd::select(a < b, b, a);
#endif
}

int valid_keys(int i, int S, const int* key_limit) {
  return key_limit ? std::max(0, std::min(key_limit[i], S)) : S;
}

int first_key(int i, int S, const int* key_start) {
  return key_start ? std::max(0, std::min(key_start[i], S)) : 0;
}

// Explicit path of the twin: weights:(L,S) = masked_softmax(scale * q.k^T), out = weights.v.
// Keys before key_start[i] get weight exactly 0: the row's softmax runs over [start, S) only.
void attention_explicit_ref(int L, int S, int Dh, float scale, const float* q, int ldq,
                            const float* k, int ldk, const float* v, int ldv,
                            const std::uint8_t* key_ignore, const int* key_limit,
                            const int* key_start, float* out, int ldo, float* weights) {
  gemm_nt_ref(L, S, Dh, scale, q, ldq, k, ldk, nullptr, weights, S);
  for (int i = 0; i < L; ++i) {
    float* row = weights + static_cast<size_t>(i) * S;
    const int start = first_key(i, S, key_start);
    std::fill(row, row + start, 0.0f);
    masked_softmax_ref(row + start, S - start, std::max(0, valid_keys(i, S, key_limit) - start),
                       key_ignore ? key_ignore + start : nullptr);
  }
  gemm_nn_ref(L, Dh, S, weights, S, v, ldv, out, ldo);
}

// 2^x for x <= 0 (scores minus their running max), 4 or more lanes at once. x = n + f with n the
// nearest integer (rounded by the 1.5 * 2^23 addition, whose low mantissa bits then hold n) and
// f in [-1/2, 1/2]; 2^f is the degree-6 polynomial interpolating it at the 7 Chebyshev nodes of
// [-1/2, 1/2] (max relative error 1.9e-8 in exact arithmetic, <= 9.5e-8 ~ 1.6 float32 ulp with
// float32 coefficients and Horner steps), and 2^n is built in the exponent field. Arguments below
// -126.5 and -inf give exactly 0 (so masked scores vanish); between -126.5 and -126 the result is
// subnormal and only absolutely accurate; both are far below any probability that moves a float32
// sum. x > 0 is outside the contract.
fbatch exp2_nonpositive(fbatch x) {
  const fbatch magic(12582912.0f);  // 1.5 * 2^23
  x = vmax(x, fbatch(-127.0f));
  const fbatch t = x + magic;
  const fbatch f = x - (t - magic);
  fbatch p(1.54614449e-4f);
  p = xsimd::fma(p, f, fbatch(1.34004280e-3f));
  p = xsimd::fma(p, f, fbatch(9.61805694e-3f));
  p = xsimd::fma(p, f, fbatch(5.55032715e-2f));
  p = xsimd::fma(p, f, fbatch(2.40226507e-1f));
  p = xsimd::fma(p, f, fbatch(6.93147182e-1f));
  p = xsimd::fma(p, f, fbatch(1.0f));
  using ibatch = xsimd::batch<std::int32_t>;
  // bits(t) = bits(1.5 * 2^23) + n; the shift drops the constant's bits (all above bit 8), so
  // (bits(t) + 127) << 23 is the float 2^n for n in [-126, 0] and 0 for n = -127.
  const ibatch e = (xsimd::bitwise_cast<ibatch>(t) + ibatch(127)) << 23;
  return p * xsimd::bitwise_cast<fbatch>(e);
}

// Per-block state that lives on the stack: one micro-tile of scores (then probabilities), and the
// running max, sum and key limit of each query of the block.
struct BlockState {
  alignas(64) float s[kRows * kKeyBlock];
  float m[kQueryBlock], l[kQueryBlock];
  int lim[kQueryBlock], start[kQueryBlock];  // keys [start, lim) may be seen by each query
};

// s(kRows, nc) = q(kRows, Dh) . kt(Dh, nc), nc a multiple of 2 vectors <= kKeyBlock (s and kt
// have rows of kKeyBlock), with q stored interleaved as qs[d * kRows + r] so the four broadcasts
// of step d sit at constant offsets from one pointer. rmax(r) = max over the tile's row r, taken
// from the accumulators so an unmasked tile needs no second pass over s for its max (kMax false:
// a masked tile, whose max is taken after the mask, skips it).
template <bool kMax>
void tile_scores(const float* qs, int Dh, const float* kt, int nc, float* s, float* rmax) {
  fbatch m0(kNegInf), m1(kNegInf), m2(kNegInf), m3(kNegInf);
  for (int j = 0; j < nc; j += 2 * kW) {
    fbatch a00(0.0f), a01(0.0f), a10(0.0f), a11(0.0f), a20(0.0f), a21(0.0f), a30(0.0f), a31(0.0f);
    const float* b = kt + j;
    const float* qd = qs;
    for (int d = 0; d < Dh; ++d, b += kKeyBlock, qd += kRows) {
      const fbatch b0 = fbatch::load_unaligned(b), b1 = fbatch::load_unaligned(b + kW);
      const fbatch q0(qd[0]), q1(qd[1]), q2(qd[2]), q3(qd[3]);
      a00 = xsimd::fma(q0, b0, a00);
      a01 = xsimd::fma(q0, b1, a01);
      a10 = xsimd::fma(q1, b0, a10);
      a11 = xsimd::fma(q1, b1, a11);
      a20 = xsimd::fma(q2, b0, a20);
      a21 = xsimd::fma(q2, b1, a21);
      a30 = xsimd::fma(q3, b0, a30);
      a31 = xsimd::fma(q3, b1, a31);
    }
    a00.store_aligned(s + j);
    a01.store_aligned(s + j + kW);
    a10.store_aligned(s + kKeyBlock + j);
    a11.store_aligned(s + kKeyBlock + j + kW);
    a20.store_aligned(s + 2 * kKeyBlock + j);
    a21.store_aligned(s + 2 * kKeyBlock + j + kW);
    a30.store_aligned(s + 3 * kKeyBlock + j);
    a31.store_aligned(s + 3 * kKeyBlock + j + kW);
    if (kMax) {
      m0 = vmax(m0, vmax(a00, a01));
      m1 = vmax(m1, vmax(a10, a11));
      m2 = vmax(m2, vmax(a20, a21));
      m3 = vmax(m3, vmax(a30, a31));
    }
  }
  if (!kMax) return;
  alignas(64) float lanes[kRows * kW];
  m0.store_aligned(lanes);
  m1.store_aligned(lanes + kW);
  m2.store_aligned(lanes + 2 * kW);
  m3.store_aligned(lanes + 3 * kW);
  for (int r = 0; r < kRows; ++r) {
    float x = lanes[r * kW];
    for (int u = 1; u < kW; ++u) x = std::max(x, lanes[r * kW + u]);
    rmax[r] = x;
  }
}

// o(kRows, Dhp) = o * corr(row) + p(kRows, n) . v(n, Dhp); Dhp a lane multiple, v row stride ldv.
void tile_pv(const float* p, int n, const float* v, int ldv, int Dhp, const float* corr, float* o,
             int ldo) {
  const fbatch c0(corr[0]), c1(corr[1]), c2(corr[2]), c3(corr[3]);
  int d = 0;
  for (; d + 2 * kW <= Dhp; d += 2 * kW) {
    float* o0 = o + d;
    fbatch a00 = fbatch::load_unaligned(o0) * c0, a01 = fbatch::load_unaligned(o0 + kW) * c0;
    fbatch a10 = fbatch::load_unaligned(o0 + ldo) * c1,
           a11 = fbatch::load_unaligned(o0 + ldo + kW) * c1;
    fbatch a20 = fbatch::load_unaligned(o0 + 2 * ldo) * c2,
           a21 = fbatch::load_unaligned(o0 + 2 * ldo + kW) * c2;
    fbatch a30 = fbatch::load_unaligned(o0 + 3 * ldo) * c3,
           a31 = fbatch::load_unaligned(o0 + 3 * ldo + kW) * c3;
    const float* vj = v + d;
    for (int j = 0; j < n; ++j, vj += ldv) {
      const fbatch v0 = fbatch::load_unaligned(vj), v1 = fbatch::load_unaligned(vj + kW);
      const fbatch p0(p[j]), p1(p[kKeyBlock + j]), p2(p[2 * kKeyBlock + j]),
          p3(p[3 * kKeyBlock + j]);
      a00 = xsimd::fma(p0, v0, a00);
      a01 = xsimd::fma(p0, v1, a01);
      a10 = xsimd::fma(p1, v0, a10);
      a11 = xsimd::fma(p1, v1, a11);
      a20 = xsimd::fma(p2, v0, a20);
      a21 = xsimd::fma(p2, v1, a21);
      a30 = xsimd::fma(p3, v0, a30);
      a31 = xsimd::fma(p3, v1, a31);
    }
    a00.store_unaligned(o0);
    a01.store_unaligned(o0 + kW);
    a10.store_unaligned(o0 + ldo);
    a11.store_unaligned(o0 + ldo + kW);
    a20.store_unaligned(o0 + 2 * ldo);
    a21.store_unaligned(o0 + 2 * ldo + kW);
    a30.store_unaligned(o0 + 3 * ldo);
    a31.store_unaligned(o0 + 3 * ldo + kW);
  }
  if (d < Dhp) {  // one vector of columns left (Dhp is a lane multiple)
    float* o0 = o + d;
    fbatch a0 = fbatch::load_unaligned(o0) * c0, a1 = fbatch::load_unaligned(o0 + ldo) * c1,
           a2 = fbatch::load_unaligned(o0 + 2 * ldo) * c2,
           a3 = fbatch::load_unaligned(o0 + 3 * ldo) * c3;
    const float* vj = v + d;
    for (int j = 0; j < n; ++j, vj += ldv) {
      const fbatch v0 = fbatch::load_unaligned(vj);
      a0 = xsimd::fma(fbatch(p[j]), v0, a0);
      a1 = xsimd::fma(fbatch(p[kKeyBlock + j]), v0, a1);
      a2 = xsimd::fma(fbatch(p[2 * kKeyBlock + j]), v0, a2);
      a3 = xsimd::fma(fbatch(p[3 * kKeyBlock + j]), v0, a3);
    }
    a0.store_unaligned(o0);
    a1.store_unaligned(o0 + ldo);
    a2.store_unaligned(o0 + 2 * ldo);
    a3.store_unaligned(o0 + 3 * ldo);
  }
}

// dst[c * ldd + i] = scale * src[i * lds + c] for i, c < 4: a 4 x 4 block transposed (SSE, which
// Emscripten lowers to WebAssembly SIMD). Each value is the same one multiply as the scalar
// loops it replaces, so the packed K and Q are the same bits. Without SSE (kTranspose4 false) the
// callers take their scalar loops only.
#if defined(__SSE__)
constexpr bool kTranspose4 = true;
inline void transpose4(const float* src, std::size_t lds, float* dst, std::size_t ldd, float scale) {
  __m128 r0 = _mm_loadu_ps(src), r1 = _mm_loadu_ps(src + lds), r2 = _mm_loadu_ps(src + 2 * lds),
         r3 = _mm_loadu_ps(src + 3 * lds);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  if (scale != 1.0f) {
    const __m128 f = _mm_set1_ps(scale);
    r0 = _mm_mul_ps(r0, f), r1 = _mm_mul_ps(r1, f), r2 = _mm_mul_ps(r2, f), r3 = _mm_mul_ps(r3, f);
  }
  _mm_storeu_ps(dst, r0);
  _mm_storeu_ps(dst + ldd, r1);
  _mm_storeu_ps(dst + 2 * ldd, r2);
  _mm_storeu_ps(dst + 3 * ldd, r3);
}
#else
constexpr bool kTranspose4 = false;
inline void transpose4(const float*, std::size_t, float*, std::size_t, float) {}
#endif

float hmax(const float* x, int n) {  // n a lane multiple
  fbatch m = fbatch::load_aligned(x);
  for (int j = kW; j < n; j += kW) m = vmax(m, fbatch::load_aligned(x + j));
  alignas(64) float lanes[kW];
  m.store_aligned(lanes);
  float r = lanes[0];
  for (int u = 1; u < kW; ++u) r = std::max(r, lanes[u]);
  return r;
}

}  // namespace

void attention_head_ref(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                        int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                        const int* key_limit, float* out, int ldo, float* weights,
                        AttentionWorkspace* /* unused: the twin keeps its own (L,S) scores */,
                        const int* key_start) {
  std::vector<float> scratch;
  if (!weights) {
    scratch.resize(static_cast<size_t>(L) * S);
    weights = scratch.data();
  }
  attention_explicit_ref(L, S, Dh, scale, q, ldq, k, ldk, v, ldv, key_ignore, key_limit, key_start,
                         out, ldo, weights);
}

void attention_head(int L, int S, int Dh, float scale, const float* q, int ldq, const float* k,
                    int ldk, const float* v, int ldv, const std::uint8_t* key_ignore,
                    const int* key_limit, float* out, int ldo, float* weights,
                    AttentionWorkspace* workspace, const int* key_start) {
  if (L <= 0 || Dh <= 0) return;
  const int tiles = (S + kKeyBlock - 1) / kKeyBlock;
  const int Sp = tiles * kKeyBlock;
  const int Dhp = (Dh + kW - 1) / kW * kW;
  const bool pack_v = Dhp != Dh;  // V is read in place when its rows are whole vectors

  // One buffer, carved: K^T by tiles (tiles, Dh, kKeyBlock), zeroed past S to the next column pair
  // (columns after that are never read); the key mask as an additive 0 / -inf bias (also -inf
  // past S); per tile 0 (no key masked), 1 (some) or 2 (all); the query block times scale * log2(e), interleaved (micro-tile, Dh, kRows); the block's
  // unnormalized output (kQueryBlock, Dhp); V with zero-padded columns (S, Dhp) if packed; and for
  // the maps path the max each (row, tile) was exponentiated against (kQueryBlock, tiles).
  const size_t n_kt = static_cast<size_t>(Sp) * Dh, n_qs = static_cast<size_t>(kQueryBlock) * Dh,
               n_o = static_cast<size_t>(kQueryBlock) * Dhp,
               n_vp = pack_v ? static_cast<size_t>(S) * Dhp : 0,
               n_tm = weights ? static_cast<size_t>(kQueryBlock) * tiles : 0;
  AttentionWorkspace local;
  std::vector<float>& buffer = (workspace ? *workspace : local).buffer;
  const size_t need = n_kt + Sp + tiles + n_qs + n_o + n_vp + n_tm;
  if (buffer.size() < need) buffer.resize(need);
  float* kt = buffer.data();
  float* bias = kt + n_kt;
  float* tile_mask = bias + Sp;
  float* qs = tile_mask + tiles;
  float* o = qs + n_qs;
  float* vp = o + n_o;
  float* tile_m = weights ? vp + n_vp : nullptr;
  BlockState blk;

  // Pack once per head.
  for (int t = 0; t < tiles; ++t) {
    float* kt_t = kt + static_cast<size_t>(t) * Dh * kKeyBlock;
    // Columns past S are read only up to the next whole column pair (see nc below).
    const int cols = std::min(kKeyBlock, (S - t * kKeyBlock + 2 * kW - 1) / (2 * kW) * (2 * kW));
    int masked = 0;
    // Four keys at a time where all four are in S and Dh is a multiple of 4: 4 x 4 transposes.
    int jv = 0;
    if (kTranspose4 && Dh % 4 == 0)
      for (; jv + 4 <= cols && t * kKeyBlock + jv + 4 <= S; jv += 4) {
        const float* kj = k + static_cast<size_t>(t * kKeyBlock + jv) * ldk;
        for (int d = 0; d < Dh; d += 4) transpose4(kj + d, ldk, kt_t + d * kKeyBlock + jv, kKeyBlock, 1.0f);
      }
    SF_SMALL_LOOP
    for (int jj = jv; jj < cols; ++jj) {
      const int j = t * kKeyBlock + jj;
      const bool in = j < S;
      SF_SMALL_LOOP
      for (int d = 0; d < Dh; ++d) kt_t[d * kKeyBlock + jj] = in ? k[j * ldk + d] : 0.0f;
    }
    SF_SMALL_LOOP
    for (int jj = 0; jj < cols; ++jj) {
      const int j = t * kKeyBlock + jj;
      const bool off = j >= S || (key_ignore && key_ignore[j]);
      bias[j] = off ? kNegInf : 0.0f;
      masked += off;
    }
    tile_mask[t] = masked == 0 ? 0 : masked == cols ? 2 : 1;
  }
  const float* vsrc = v;
  int ldvs = ldv;
  if (pack_v) {
    for (int j = 0; j < S; ++j)
      for (int d = 0; d < Dhp; ++d) vp[j * Dhp + d] = d < Dh ? v[j * ldv + d] : 0.0f;
    vsrc = vp;
    ldvs = Dhp;
  }

  const float qscale = scale * 1.44269504088896341f;  // log2(e): scores in base 2
  float* s = blk.s;

  for (int i0 = 0; i0 < L; i0 += kQueryBlock) {
    const int nq = std::min(kQueryBlock, L - i0);
    const int nr = (nq + kRows - 1) / kRows * kRows;  // rows past nq: zero queries, no keys
    int kmax = 0, kmin = S;
    for (int r = 0; r < nr; ++r) {
      blk.lim[r] = r < nq ? valid_keys(i0 + r, S, key_limit) : 0;
      // Rows past nq see no key; start = S keeps them out of the block's lowest start.
      blk.start[r] = r < nq ? first_key(i0 + r, S, key_start) : S;
      kmax = std::max(kmax, blk.lim[r]);
      kmin = std::min(kmin, blk.start[r]);
      blk.m[r] = kNegInf;
      blk.l[r] = 0.0f;
    }
    // The queries, scaled, interleaved by micro-tile: four whole rows at a time by 4 x 4
    // transposes when Dh is a multiple of 4, the rest (and rows past nq, zero) one by one.
    for (int r0 = 0; r0 < nr; r0 += kRows) {
      if (kTranspose4 && r0 + kRows <= nq && Dh % 4 == 0) {
        for (int d = 0; d < Dh; d += 4)
          transpose4(q + static_cast<size_t>(i0 + r0) * ldq + d, ldq, qs + r0 * Dh + d * kRows, 4, qscale);
        continue;
      }
      SF_SMALL_LOOP
      for (int r = r0; r < r0 + kRows; ++r) {
        float* qr = qs + r0 * Dh + r % kRows;
        SF_SMALL_LOOP
        for (int dd = 0; dd < Dh; ++dd) qr[dd * kRows] = r < nq ? qscale * q[(i0 + r) * ldq + dd] : 0.0f;
      }
    }
    std::fill(o, o + nr * Dhp, 0.0f);
    if (tile_m) std::fill(tile_m, tile_m + static_cast<size_t>(nr) * tiles, kNegInf);

    // Tiles past every row's key limit, and wholly before every row's look-back start: skipped.
    for (int t = kmin / kKeyBlock; t * kKeyBlock < kmax; ++t) {
      if (tile_mask[t] == 2) continue;
      const int j0 = t * kKeyBlock;
      const int nk = std::min(kKeyBlock, S - j0);
      const float* kt_t = kt + static_cast<size_t>(t) * Dh * kKeyBlock;
      for (int r0 = 0; r0 < nr; r0 += kRows) {
        const int* lim = blk.lim + r0;
        const int* st = blk.start + r0;
        const int lim_hi = std::max(std::max(lim[0], lim[1]), std::max(lim[2], lim[3]));
        const int lim_lo = std::min(std::min(lim[0], lim[1]), std::min(lim[2], lim[3]));
        const int st_hi = std::max(std::max(st[0], st[1]), std::max(st[2], st[3]));
        const int st_lo = std::min(std::min(st[0], st[1]), std::min(st[2], st[3]));
        if (lim_hi <= j0) continue;  // all four rows are causally cut before this tile
        if (st_lo >= j0 + nk) continue;  // all four rows look back no further than past this tile
        // Columns that any row may see, in whole column pairs: a short sequence (the demo's groups
        // of 1-51 tokens) or a causal diagonal tile does not pay for a full tile of 64.
        const int nv = std::min(nk, lim_hi - j0);
        const int nc = std::min(kKeyBlock, (nv + 2 * kW - 1) / (2 * kW) * (2 * kW));
        // The fused max holds only when no column of the tile is masked for these rows.
        const bool unmasked = tile_mask[t] == 0 && lim_lo >= j0 + nc && st_hi <= j0;
        float rmax[kRows];
        if (unmasked)
          tile_scores<true>(qs + r0 * Dh, Dh, kt_t, nc, s, rmax);
        else
          tile_scores<false>(qs + r0 * Dh, Dh, kt_t, nc, s, rmax);
        float corr[kRows];
        for (int rr = 0; rr < kRows; ++rr) {
          float* sr = s + rr * kKeyBlock;
          if (tile_mask[t] == 1)
            for (int j = 0; j < nc; j += kW)
              (fbatch::load_aligned(sr + j) + fbatch::load_unaligned(bias + j0 + j))
                  .store_aligned(sr + j);
          if (lim_lo < j0 + nc)
            for (int j = std::max(0, lim[rr] - j0); j < nc; ++j) sr[j] = kNegInf;
          if (st_hi > j0)
            for (int j = 0, end = std::min(nc, st[rr] - j0); j < end; ++j) sr[j] = kNegInf;
          const int r = r0 + rr;
          const float mt = unmasked ? rmax[rr] : hmax(sr, nc);
          const float m_new = std::max(blk.m[r], mt);
          // Rows that have seen no unmasked key keep m = -inf; exponentiating against 0 instead
          // keeps their probabilities at exactly 0 (never -inf - -inf = NaN).
          const float m_use = m_new == kNegInf ? 0.0f : m_new;
          // 1 when the max did not grow, 0 at the row's first tile: exp2 gives exactly those, so
          // they skip its libm call (one per row and key tile before; BENCHMARKS.md, "Small windows").
          corr[rr] = blk.m[r] == m_use ? 1.0f : blk.m[r] == kNegInf ? 0.0f : std::exp2(blk.m[r] - m_use);
          const fbatch vm(m_use);
          fbatch sum(0.0f);
          for (int j = 0; j < nc; j += kW) {
            const fbatch p = exp2_nonpositive(fbatch::load_aligned(sr + j) - vm);
            p.store_aligned(sr + j);
            sum += p;
          }
          blk.l[r] = blk.l[r] * corr[rr] + xsimd::hadd(sum);
          blk.m[r] = m_new;
          if (tile_m && r < nq) {
            tile_m[r * tiles + t] = mt == kNegInf ? kNegInf : m_use;
            float* wr = weights + static_cast<size_t>(i0 + r) * S + j0;
            std::copy(sr, sr + std::min(nk, nc), wr);
            std::fill(wr + std::min(nk, nc), wr + nk, 0.0f);  // past every row's key limit
          }
        }
        tile_pv(s, nv, vsrc + static_cast<size_t>(j0) * ldvs, ldvs, Dhp,
                corr, o + r0 * Dhp, Dhp);
      }
    }

    for (int r = 0; r < nq; ++r) {
      const float inv = blk.l[r] > 0.0f ? 1.0f / blk.l[r] : 0.0f;  // l = 0: every key masked
      float* orow = out + (i0 + r) * ldo;
      const int dv = simd_end(Dh, kW);
      for (int d = 0; d < dv; d += kW) (fbatch::load_unaligned(o + r * Dhp + d) * fbatch(inv)).store_unaligned(orow + d);
      SF_SMALL_LOOP
      for (int d = dv; d < Dh; ++d) orow[d] = o[r * Dhp + d] * inv;
      if (!weights) continue;
      // Each tile's probabilities were taken against the running max of their time; one factor
      // per (row, tile) brings them to the final max and divides by the sum.
      float* wrow = weights + static_cast<size_t>(i0 + r) * S;
      for (int t = 0; t < tiles; ++t) {
        const int j0 = t * kKeyBlock, nk = std::min(kKeyBlock, S - j0);
        const float mt = tile_m[r * tiles + t];
        if (mt == kNegInf || inv == 0.0f) {
          std::fill(wrow + j0, wrow + j0 + nk, 0.0f);
          continue;
        }
        const float f = std::exp2(mt - blk.m[r]) * inv;
        const fbatch vf(f);
        const int end = simd_end(nk, kW);
        for (int j = 0; j < end; j += kW)
          (fbatch::load_unaligned(wrow + j0 + j) * vf).store_unaligned(wrow + j0 + j);
        for (int j = end; j < nk; ++j) wrow[j0 + j] *= f;
      }
    }
  }
}

void exp2_nonpositive(const float* x, float* y, int n) {
  const int end = simd_end(n, kW);
  for (int j = 0; j < end; j += kW)
    exp2_nonpositive(fbatch::load_unaligned(x + j)).store_unaligned(y + j);
  if (end == n) return;
  alignas(64) float tail[kW];
  for (int u = 0; u < kW; ++u) tail[u] = end + u < n ? x[end + u] : 0.0f;
  exp2_nonpositive(fbatch::load_aligned(tail)).store_aligned(tail);
  for (int u = 0; end + u < n; ++u) y[end + u] = tail[u];
}

}  // namespace sf::kernels
