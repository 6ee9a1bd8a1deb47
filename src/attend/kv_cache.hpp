// Attention of new tokens over a group's cached keys and values: the attend stage of a streaming
// session (src/stream/). A time-causal model never lets a token see a later one, so the keys and
// values a token contributes at a layer are computed once, when the token becomes final, and kept
// for the queries that come after it, until the look-back leaves them behind.
#pragma once

#include <cstdint>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "core/status.hpp"

namespace sf {

// One group's keys and values at one layer and block, in time order (appended in time order:
// a session's final tokens only ever come later than the ones before them). Rows [begin, size())
// are live; evicted rows stay until they are half the storage, then the live rows move to the front
// (amortised O(1) per row; storage stays within twice the live rows plus one batch).
struct KeyValueCache {
  int embed_dim = 0;
  std::size_t begin = 0;
  std::vector<float> kv;  // rows of [k (E) | v (E)]
  std::vector<double> time;
  std::vector<std::uint8_t> ignore;  // 1 = absent token: masked as a key
  std::vector<std::int64_t> index;   // the tokens' session indices

  std::size_t size() const { return time.size(); }
  std::size_t live() const { return time.size() - begin; }
  // Drops keys no query at time >= earliest_query can attend to: earliest_query - t > lookback_s
  // (float64, the expression of time_lookback_starts; subtraction is monotone in the query time).
  void evict(double earliest_query, double lookback_s);
  // Keeps the first `live` live rows (a push refused after its keys were appended: they go).
  void truncate(std::size_t live);
  std::size_t bytes() const;
};

// For the m new rows `in` (m, E) of one group (already normed as the layer needs), at times `times`
// (non-decreasing, none earlier than the cache's last key): appends their keys and values to the
// cache, then computes out (m, E) = attention of each row over the live keys with time in
// [t_i - lookback_s, t_i] (absent keys masked), with the projections and kernels of
// multihead_attention. key_start / key_limit (m) receive each query's live key range, relative to
// the cache's `begin`. weights, when not null, receives (H, m, live keys) per-head weights.
Status cached_attention(const MhaWeights& w, const float* in, int m, const double* times,
                        const std::uint8_t* ignore, const std::int64_t* index, double lookback_s,
                        kernels::KernelSet kernels, KeyValueCache* cache, MhaWorkspace* ws, float* out,
                        std::vector<int>* key_start, std::vector<int>* key_limit, float* weights);

}  // namespace sf
