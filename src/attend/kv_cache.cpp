#include "attend/kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/attention.hpp"
#include "kernels/matmul.hpp"

namespace sf {

void KeyValueCache::evict(double earliest_query, double lookback_s) {
  while (begin < time.size() && earliest_query - time[begin] > lookback_s) ++begin;
  if (begin == time.size()) {  // nothing live: give the storage back at once (clear() keeps it)
    begin = 0;
    kv = {};
    time = {};
    ignore = {};
    index = {};
  }
}

void KeyValueCache::truncate(std::size_t keep) {
  const std::size_t n = begin + keep;
  kv.resize(n * 2 * static_cast<std::size_t>(embed_dim));
  time.resize(n);
  ignore.resize(n);
  index.resize(n);
}

std::size_t KeyValueCache::bytes() const {
  return kv.capacity() * sizeof(float) + time.capacity() * sizeof(double) + ignore.capacity() +
         index.capacity() * sizeof(std::int64_t);
}

namespace {

// Moves the live rows to the front once the evicted ones are at least as many.
void compact(KeyValueCache* c) {
  if (c->begin == 0 || c->begin < c->live()) return;
  const std::size_t row = 2 * static_cast<std::size_t>(c->embed_dim), b = c->begin;
  c->kv.erase(c->kv.begin(), c->kv.begin() + b * row);
  c->time.erase(c->time.begin(), c->time.begin() + b);
  c->ignore.erase(c->ignore.begin(), c->ignore.begin() + b);
  c->index.erase(c->index.begin(), c->index.begin() + b);
  c->begin = 0;
  // After a burst (a backlog pushed at once) the storage is far larger than the look-back needs:
  // give it back, so that a session's memory follows its look-back again (docs/model.md).
  if (c->time.capacity() > 4 * c->time.size() + 64) {
    c->kv.shrink_to_fit();
    c->time.shrink_to_fit();
    c->ignore.shrink_to_fit();
    c->index.shrink_to_fit();
  }
}

}  // namespace

Status cached_attention(const MhaWeights& w, const float* in, int m, const double* times,
                        const std::uint8_t* ignore, const std::int64_t* index, double lookback_s,
                        kernels::KernelSet kernels, KeyValueCache* cache, MhaWorkspace* ws, float* out,
                        std::vector<int>* key_start, std::vector<int>* key_limit, float* weights) {
  const int E = w.embed_dim, H = w.num_heads;
  if (E <= 0 || H <= 0 || E % H != 0 || m < 0 || cache->embed_dim != E)
    return {ErrorCode::kInvalidArgument, "cached attention: embed_dim, num_heads or the cache's width do not agree"};
  if (m == 0) return Status::Ok();
  const int Dh = E / H;
  const bool ref = kernels == kernels::KernelSet::kReference;
  compact(cache);
  const std::size_t S = cache->live() + static_cast<std::size_t>(m);
  if (S > static_cast<std::size_t>(1) << 30) return {ErrorCode::kResourceExhausted, "cached attention: more than 2^30 keys"};
  SF_RETURN_IF_ERROR(check_mha_budget(E, H, m, static_cast<int>(S), weights ? AttentionWeights::kPerHead : AttentionWeights::kNone));
  const auto grow = [](auto& v, std::size_t n) { if (v.size() < n) v.resize(n); };
  grow(ws->qkv, static_cast<std::size_t>(m) * 3 * E);
  grow(ws->ctx, static_cast<std::size_t>(m) * E);
  float* qkv = ws->qkv.data();
  // The projections exactly as multihead_attention's self-attention path computes them.
  if (!ref && w.in_proj_packed)
    kernels::gemm_packed(m, in, E, *w.in_proj_packed, 1.0f, kernels::Act::kNone, false, qkv, 3 * E);
  else
    (ref ? kernels::gemm_nt_ref : kernels::gemm_nt)(m, 3 * E, E, 1.0f, in, E, w.in_proj_weight, E, w.in_proj_bias, qkv, 3 * E);
  const std::size_t row = 2 * static_cast<std::size_t>(E);
  const std::size_t old = cache->size();
  cache->kv.resize((old + m) * row);
  for (int i = 0; i < m; ++i)
    std::memcpy(cache->kv.data() + (old + i) * row, qkv + static_cast<std::size_t>(i) * 3 * E + E, row * sizeof(float));
  cache->time.insert(cache->time.end(), times, times + m);
  cache->ignore.insert(cache->ignore.end(), ignore, ignore + m);
  cache->index.insert(cache->index.end(), index, index + m);

  const double* kt = cache->time.data() + cache->begin;
  key_start->resize(m);
  key_limit->resize(m);
  for (int i = 0; i < m; ++i) {
    const double t = times[i];
    (*key_limit)[i] = static_cast<int>(std::upper_bound(kt, kt + S, t) - kt);
    (*key_start)[i] = std::isinf(lookback_s) ? 0 : static_cast<int>(std::partition_point(kt, kt + S, [&](double tj) { return t - tj > lookback_s; }) - kt);
  }
  const float* k = cache->kv.data() + cache->begin * row;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  const auto head = ref ? kernels::attention_head_ref : kernels::attention_head;
  float* ctx = ws->ctx.data();
  const std::size_t map = static_cast<std::size_t>(m) * S;
  for (int h = 0; h < H; ++h)
    head(m, static_cast<int>(S), Dh, scale, qkv + h * Dh, 3 * E, k + h * Dh, static_cast<int>(row), k + E + h * Dh,
         static_cast<int>(row), cache->ignore.data() + cache->begin, key_limit->data(), ctx + h * Dh, E,
         weights ? weights + h * map : nullptr, &ws->attention, key_start->data());
  if (!ref && w.out_proj_packed)
    kernels::gemm_packed(m, ctx, E, *w.out_proj_packed, 1.0f, kernels::Act::kNone, false, out, E);
  else
    (ref ? kernels::gemm_nt_ref : kernels::gemm_nt)(m, E, E, 1.0f, ctx, E, w.out_proj_weight, E, w.out_proj_bias, out, E);
  return Status::Ok();
}

}  // namespace sf
