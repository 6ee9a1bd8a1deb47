#include "attend/multihead_attention.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/limits.hpp"
#include "core/parallel.hpp"
#include "kernels/attention.hpp"
#include "kernels/matmul.hpp"

namespace sf {

namespace {

Status validate(const MhaWeights& w, const float* query, int L, const float* kv, int S,
                const MhaOptions& options, const float* out, const float* attn) {
  const auto bad = [](const std::string& m) {
    return Status(ErrorCode::kInvalidArgument, "multihead attention: " + m);
  };
  if (w.embed_dim <= 0) return bad("embed_dim must be > 0");
  if (w.num_heads <= 0 || w.embed_dim % w.num_heads != 0)
    return bad("num_heads (" + std::to_string(w.num_heads) + ") must divide embed_dim (" +
               std::to_string(w.embed_dim) + ")");
  if (L < 0 || S < 0) return bad("negative sequence length");
  if (!w.in_proj_weight || !w.out_proj_weight) return bad("missing projection weights");
  if ((L > 0 && (!query || !out)) || (S > 0 && !kv)) return bad("missing input or output buffer");
  if (options.weights != AttentionWeights::kNone && !attn && L > 0 && S > 0)
    return bad("attention weights requested without a buffer");
  return Status::Ok();
}

}  // namespace

Status check_mha_budget(int E, int H, int L, int S, AttentionWeights weights) {
  const double map = 4.0 * L * S;
  const double maps = weights == AttentionWeights::kNone ? 0 : map * (weights == AttentionWeights::kPerHead ? H : 1);
  if (maps > limits::kMaxAttentionMapBytes)
    return {ErrorCode::kResourceExhausted, "multihead attention: attention weights for " + std::to_string(L) + " x " +
                                               std::to_string(S) + (weights == AttentionWeights::kPerHead ? " x " + std::to_string(H) + " heads" : "") +
                                               " would take " + std::to_string(static_cast<long long>(maps / (1 << 20))) +
                                               " MiB (limit 256 MiB): ask for none, or for shorter sequences"};
  const double work = 4.0 * (2.0 * L * E + 2.0 * S * E) + (weights == AttentionWeights::kAveraged ? map : 0);
  const std::size_t limit = limits::budget(limits::kMaxWorkBytes, maps);
  if (work > limit)
    return {ErrorCode::kResourceExhausted, "multihead attention: " + std::to_string(L) + " queries and " + std::to_string(S) +
                                               " keys of " + std::to_string(E) + " need " +
                                               std::to_string(static_cast<long long>(work / (1 << 20))) + " MiB of working memory (limit " +
                                               std::to_string(limit >> 20) + " MiB)"};
  return Status::Ok();
}

Status multihead_attention(const MhaWeights& w, const float* query, int L, const float* kv, int S,
                           const MhaOptions& options, float* out, float* attn) {
  SF_RETURN_IF_ERROR(validate(w, query, L, kv, S, options, out, attn));
  SF_RETURN_IF_ERROR(check_mha_budget(w.embed_dim, w.num_heads, L, S, options.weights));
  if (L == 0) return Status::Ok();
  const bool ref = options.kernels == kernels::KernelSet::kReference;
  const auto gemm_nt = ref ? kernels::gemm_nt_ref : kernels::gemm_nt;
  const auto head = ref ? kernels::attention_head_ref : kernels::attention_head;

  const int E = w.embed_dim, H = w.num_heads, Dh = E / H;
  const float* bias = w.in_proj_bias;
  MhaWorkspace local;
  MhaWorkspace& ws = options.workspace ? *options.workspace : local;
  // Grow-only: resize never gives capacity back, so a reused workspace allocates only for a call
  // larger than every earlier one.
  const auto grow = [](auto& v, size_t n) { if (v.size() < n) v.resize(n); };
  // Self-attention (the encoder's case): Q, K and V from one (L, 3E) product, row i holding
  // [q_i | k_i | v_i]. Otherwise q:(L,E) and kv:(S,2E), K in columns [0,E) and V in [E,2E).
  const bool self = query == kv && L == S;
  grow(ws.qkv, self ? static_cast<size_t>(L) * 3 * E : static_cast<size_t>(L) * E + static_cast<size_t>(S) * 2 * E);
  grow(ws.ctx, static_cast<size_t>(L) * E);
  const float *qp, *kp, *vp;
  int ldq, ldkv;
  // Unpacked weights (a caller of this function; the Model packs at load) are packed into the
  // workspace, as encoder_layer packs its feed-forward's: after the largest call, none allocates.
  const kernels::PackedWeights* in_packed = w.in_proj_packed;
  const kernels::PackedWeights* out_packed = w.out_proj_packed;
  if (!ref && self && !in_packed) {
    kernels::pack_weights(w.in_proj_weight, 3 * E, E, E, bias, &ws.in_proj);
    in_packed = &ws.in_proj;
  }
  if (!ref && self && !out_packed) {
    kernels::pack_weights(w.out_proj_weight, E, E, E, w.out_proj_bias, &ws.out_proj);
    out_packed = &ws.out_proj;
  }
  if (self) {
    if (!ref)
      kernels::gemm_packed(L, query, E, *in_packed, 1.0f, kernels::Act::kNone, false, ws.qkv.data(), 3 * E);
    else
      gemm_nt(L, 3 * E, E, 1.0f, query, E, w.in_proj_weight, E, bias, ws.qkv.data(), 3 * E);
    qp = ws.qkv.data(), kp = qp + E, vp = qp + 2 * E, ldq = ldkv = 3 * E;
  } else {
    float* q = ws.qkv.data();
    float* kvp = q + static_cast<size_t>(L) * E;
    gemm_nt(L, E, E, 1.0f, query, E, w.in_proj_weight, E, bias, q, E);
    if (S > 0)
      gemm_nt(S, 2 * E, E, 1.0f, kv, E, w.in_proj_weight + E * E, E, bias ? bias + E : nullptr, kvp, 2 * E);
    qp = q, kp = kvp, vp = kvp + E, ldq = E, ldkv = 2 * E;
  }
  std::vector<float>& ctx = ws.ctx;

  std::vector<int>& causal_limit = ws.causal_limit;
  const int* key_limit = options.key_limit;
  if (!key_limit && options.causal) {
    grow(causal_limit, L);
    for (int i = 0; i < L; ++i) causal_limit[i] = i + 1;
    key_limit = causal_limit.data();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  const size_t map = static_cast<size_t>(L) * S;
  const bool averaged = options.weights == AttentionWeights::kAveraged;
  std::vector<float>& head_map = ws.head_map;
  if (averaged) grow(head_map, map);

  // Work units: (head, block of kQueryBlock queries) pairs, head-major; with averaged weights a
  // unit is a query block over every head in order, so each map element sums its heads in the
  // same order as on one thread. A thread takes a contiguous run of units and calls the head
  // kernel once per head on its rows: blocks start at query 0 whatever the split, so every row is
  // computed exactly as on one thread (kernels/attention.hpp, kQueryBlock).
  const int qblocks = (L + kernels::kQueryBlock - 1) / kernels::kQueryBlock;
  const int units = averaged ? qblocks : H * qblocks;
  // ~2 L S E multiply-adds (scores and P.V).
  const int tasks = ref ? 1 : std::min(units, parallel::split(2.0 * L * S * E, parallel::kGrain));
#ifdef SF_THREADS
  if (static_cast<int>(ws.helper_attention.size()) < parallel::threads() - 1) ws.helper_attention.resize(parallel::threads() - 1);
#endif
  const auto rows = [&](int h, int r0, int r1, kernels::AttentionWorkspace* scratch) {
    float* weights = nullptr;
    if (options.weights == AttentionWeights::kPerHead) weights = attn + h * map + static_cast<size_t>(r0) * S;
    if (averaged) weights = head_map.data() + static_cast<size_t>(r0) * S;
    head(r1 - r0, S, Dh, scale, qp + static_cast<size_t>(r0) * ldq + h * Dh, ldq, kp + h * Dh, ldkv, vp + h * Dh, ldkv,
         options.key_padding_mask, key_limit ? key_limit + r0 : nullptr, ctx.data() + static_cast<size_t>(r0) * E + h * Dh, E,
         weights, scratch, options.key_start ? options.key_start + r0 : nullptr);
    if (averaged) {
      float* a = attn + static_cast<size_t>(r0) * S;
      const float* m = head_map.data() + static_cast<size_t>(r0) * S;
      const size_t n = static_cast<size_t>(r1 - r0) * S;
      for (size_t i = 0; i < n; ++i) a[i] = (h == 0 ? 0.0f : a[i]) + m[i] / H;
    }
  };
  auto task = [&](int t, int slot) {
#ifdef SF_THREADS
    kernels::AttentionWorkspace* scratch = slot == 0 ? &ws.attention : &ws.helper_attention[slot - 1];
#else
    kernels::AttentionWorkspace* scratch = &ws.attention;
    (void)slot;
#endif
    const auto [u0, u1] = parallel::part(units, t, tasks);
    const auto row = [&](int block) { return std::min(L, block * kernels::kQueryBlock); };
    if (averaged) {
      for (int h = 0; h < H; ++h) rows(h, row(u0), row(u1), scratch);
      return;
    }
    for (int h = u0 / qblocks; h <= (u1 - 1) / qblocks; ++h) {
      const int b0 = std::max(u0, h * qblocks) - h * qblocks, b1 = std::min(u1, (h + 1) * qblocks) - h * qblocks;
      rows(h, row(b0), row(b1), scratch);
    }
  };
  parallel::run(tasks, task);
  if (!ref && out_packed)
    kernels::gemm_packed(L, ctx.data(), E, *out_packed, 1.0f, kernels::Act::kNone, false, out, E);
  else
    gemm_nt(L, E, E, 1.0f, ctx.data(), E, w.out_proj_weight, E, w.out_proj_bias, out, E);
  return Status::Ok();
}

}  // namespace sf
