// Attend stage: multi-head attention with torch.nn.MultiheadAttention semantics and weight layout.
//
//   Q = query W_q^T + b_q,  K = kv W_k^T + b_k,  V = kv W_v^T + b_v     (packed in_proj, [q; k; v])
//   head h uses columns h*Dh .. (h+1)*Dh, Dh = E / H, scores scaled by 1 / sqrt(Dh)
//   out = concat_h(softmax(Q_h K_h^T / sqrt(Dh), masked) V_h) W_o^T + b_o
//
// Masks: key_padding_mask (S), nonzero = ignore that key (torch's bool True); causal masks key j
// for query i when j > i (torch's triu(ones, 1) attn_mask); key_limit (L), when given instead,
// masks keys j >= key_limit[i] (the model's time-causal mask over time-sorted keys). A query whose keys are all masked has
// a zero attention context, so its output row is out_proj_bias, and its weights are zero: what
// torch >= 2.5 computes with need_weights=False (torch 1.13 returns NaN there). Never NaN.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "kernels/attention.hpp"
#include "kernels/kernel_set.hpp"
#include "kernels/matmul.hpp"

namespace sf {

struct MhaWeights {
  int embed_dim = 0;                      // E
  int num_heads = 0;                      // H, divides E
  const float* in_proj_weight = nullptr;  // (3E, E)
  const float* in_proj_bias = nullptr;    // (3E) or null (bias=False)
  const float* out_proj_weight = nullptr; // (E, E)
  const float* out_proj_bias = nullptr;   // (E) or null
  // Optional copies of in_proj (with its bias) and out_proj packed by kernels::pack_weights (the
  // Model packs them at load). Null: the vector path packs them per call (self-attention's into
  // the workspace, so a reused one allocates nothing). The reference path never reads them.
  const kernels::PackedWeights* in_proj_packed = nullptr;
  const kernels::PackedWeights* out_proj_packed = nullptr;
};

// Buffers a call reuses when the caller keeps them across calls (grow-only: after the largest
// call, no allocation). Not shared between threads: one workspace per thread, like the Model
// that owns one.
struct MhaWorkspace {
  std::vector<float> qkv;  // (L, 3E) self-attention; (L, E) then (S, 2E) otherwise
  std::vector<float> ctx;  // (L, E)
  std::vector<float> head_map;
  std::vector<int> causal_limit;
  kernels::AttentionWorkspace attention;  // the calling thread's (parallel slot 0)
  std::vector<kernels::AttentionWorkspace> helper_attention;  // slots 1.. when heads run on threads
  kernels::PackedWeights in_proj, out_proj;  // unpacked weights' per-call packing (self-attention)
};

enum class AttentionWeights { kNone, kPerHead, kAveraged };

struct MhaOptions {
  const std::uint8_t* key_padding_mask = nullptr;  // (S) or null
  bool causal = false;
  const int* key_limit = nullptr;                  // (L) or null; overrides causal
  const int* key_start = nullptr;                  // (L) or null: keys j < key_start[i] masked (look-back)
  AttentionWeights weights = AttentionWeights::kNone;  // kNone takes the online-softmax path
  kernels::KernelSet kernels = kernels::KernelSet::kSimd;
  MhaWorkspace* workspace = nullptr;  // null: the call allocates its own buffers
};

// The memory a call needs besides its inputs and output: projections (2 L E + 2 S E floats), the
// averaged map's per-head scratch (L S), and the weights it returns ((H or 1) L S). Over
// limits::kMaxWorkBytes or limits::kMaxAttentionMapBytes: kResourceExhausted. Callers that
// allocate `attn` check this first (a failed allocation aborts WebAssembly).
Status check_mha_budget(int E, int H, int L, int S, AttentionWeights weights);

// query:(L, E), kv:(S, E) (pass the same pointer for self-attention) -> out:(L, E);
// attn:(H, L, S) for kPerHead, (L, S) for kAveraged (mean over heads), unused for kNone.
// Errors: kInvalidArgument for E, H, L, S out of range or a missing buffer; kResourceExhausted
// past check_mha_budget.
Status multihead_attention(const MhaWeights& w, const float* query, int L, const float* kv, int S,
                           const MhaOptions& options, float* out, float* attn);

}  // namespace sf
