// One torch.nn.TransformerEncoderLayer (batch_first, dropout off) over a group of n tokens:
//   post-norm (norm_first = false): x = LN1(x + SA(x));  x = LN2(x + FF(x))
//   pre-norm  (norm_first = true):  x = x + SA(LN1(x));  x = x + FF(LN2(x))
//   FF(x) = linear2(act(linear1(x))), act = relu or exact-erf gelu
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "core/status.hpp"
#include "kernels/kernel_set.hpp"
#include "model/config.hpp"

namespace sf {

struct EncoderLayerWeights {
  MhaWeights self_attn;
  int dim_feedforward = 0;
  const float* linear1_weight = nullptr;  // (ff, d)
  const float* linear1_bias = nullptr;    // (ff)
  const float* linear2_weight = nullptr;  // (d, ff)
  const float* linear2_bias = nullptr;    // (d)
  const float* norm1_weight = nullptr;    // (d)
  const float* norm1_bias = nullptr;
  const float* norm2_weight = nullptr;
  const float* norm2_bias = nullptr;
  // Optional packed copies of linear1 / linear2 with their biases (Model::bind); null: packed per
  // call into the workspace. self_attn carries its own.
  const kernels::PackedWeights* linear1_packed = nullptr;
  const kernels::PackedWeights* linear2_packed = nullptr;
};

// The vector path runs the feed-forward this many rows at a time: the (rows, ff) hidden block stays
// in cache between its two products, and a 16384-token group needs 64 KiB of it instead of 16 MiB
// at ff 256. Rows are independent, so the blocking changes no result.
constexpr int kFeedForwardRows = 64;

// The layer's buffers, reused across groups, layers and forwards when the caller keeps one
// (grow-only: nothing is allocated once it has seen the largest group). One per thread.
struct LayerWorkspace {
  std::vector<float> y, sa, hidden;  // (n, d), (n, d), (min(n, kFeedForwardRows), ff); (n, ff) for the twins
  kernels::PackedWeights linear1, linear2;  // per-call packing when the weights carry none
  MhaWorkspace mha;
};

struct EncoderLayerOptions {
  bool norm_first = false;
  Activation activation = Activation::kRelu;
  float layer_norm_eps = 1e-5f;
  kernels::KernelSet kernels = kernels::KernelSet::kSimd;
};

// x:(n, d) updated in place. key_ignore (n), key_limit (n) and key_start (n) as in
// multihead_attention; attn (H, n, n) receives the per-head attention weights when not null.
// workspace may be null (the call allocates its own buffers).
Status encoder_layer(const EncoderLayerWeights& w, const EncoderLayerOptions& options, float* x,
                     int n, const std::uint8_t* key_ignore, const int* key_limit, float* attn,
                     LayerWorkspace* workspace = nullptr, const int* key_start = nullptr);

// The same layer with the self-attention sublayer supplied by the caller: attend(in, out) writes
// SA(in) for the n rows of `in` into out (n, d). The streaming session (src/stream/) passes its
// attention over cached keys and values; everything else in the layer is shared with the forward.
using SelfAttention = std::function<Status(const float* in, float* out)>;
Status encoder_layer_with(const EncoderLayerWeights& w, const EncoderLayerOptions& options, float* x,
                          int n, const SelfAttention& attend, LayerWorkspace* workspace = nullptr);

}  // namespace sf
