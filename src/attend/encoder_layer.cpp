// The vector path fuses what the layer's definition runs as separate steps: linear1's bias and
// activation in its GEMM epilogue, linear2's bias and the residual add in its epilogue (x += FF),
// the attention residual with the following layer norm (add_layer_norm). The reference path runs
// the same sequence with the `_ref` twins, unfused.
#include "attend/encoder_layer.hpp"

#include <algorithm>

#include "core/parallel.hpp"
#include "kernels/activation.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace sf {

Status encoder_layer(const EncoderLayerWeights& w, const EncoderLayerOptions& o, float* x, int n,
                     const std::uint8_t* key_ignore, const int* key_limit, float* attn,
                     LayerWorkspace* workspace, const int* key_start) {
  LayerWorkspace local;
  LayerWorkspace& ws = workspace ? *workspace : local;
  MhaOptions mha;
  mha.key_padding_mask = key_ignore;
  mha.key_limit = key_limit;
  mha.key_start = key_start;
  mha.weights = attn ? AttentionWeights::kPerHead : AttentionWeights::kNone;
  mha.kernels = o.kernels;
  mha.workspace = &ws.mha;
  return encoder_layer_with(
      w, o, x, n, [&](const float* in, float* out) { return multihead_attention(w.self_attn, in, n, in, n, mha, out, attn); },
      &ws);
}

Status encoder_layer_with(const EncoderLayerWeights& w, const EncoderLayerOptions& o, float* x, int n,
                          const SelfAttention& attend, LayerWorkspace* workspace) {
  const bool ref = o.kernels == kernels::KernelSet::kReference;
  const auto layer_norm = ref ? kernels::layer_norm_ref : kernels::layer_norm;
  const auto add_layer_norm = ref ? kernels::add_layer_norm_ref : kernels::add_layer_norm;
  const kernels::Act act = o.activation == Activation::kGelu ? kernels::Act::kGelu : kernels::Act::kRelu;
  const int d = w.self_attn.embed_dim, ff = w.dim_feedforward;
  LayerWorkspace local;
  LayerWorkspace& ws = workspace ? *workspace : local;
  const size_t nd = static_cast<size_t>(n) * d;
  const size_t nff = static_cast<size_t>(ref ? n : std::min(n, kFeedForwardRows)) * ff;
  if (ws.y.size() < nd) ws.y.resize(nd);
  if (ws.sa.size() < nd) ws.sa.resize(nd);
  if (ws.hidden.size() < nff) ws.hidden.resize(nff);
  float* y = ws.y.data();
  float* sa = ws.sa.data();
  float* hidden = ws.hidden.data();

  const auto self_attention = [&](const float* in) { return attend(in, sa); };
  // out += linear2(act(linear1(in))): in and out may be the same buffer (a block's hidden rows are
  // complete before linear2 writes that block).
  const auto feed_forward_add = [&](const float* in, float* out) {
    if (ref) {
      kernels::linear_act_ref(n, ff, d, in, d, w.linear1_weight, d, w.linear1_bias, act, false, hidden, ff);
      kernels::linear_act_ref(n, d, ff, hidden, ff, w.linear2_weight, ff, w.linear2_bias, kernels::Act::kNone,
                              true, out, d);
      return;
    }
    const kernels::PackedWeights* l1 = w.linear1_packed;
    const kernels::PackedWeights* l2 = w.linear2_packed;
    if (!l1) {
      kernels::pack_weights(w.linear1_weight, ff, d, d, w.linear1_bias, &ws.linear1);
      l1 = &ws.linear1;
    }
    if (!l2) {
      kernels::pack_weights(w.linear2_weight, d, ff, ff, w.linear2_bias, &ws.linear2);
      l2 = &ws.linear2;
    }
    // Threads take whole blocks of kFeedForwardRows rows (each with its own hidden block), so a
    // row's products are the same instructions as on one thread. One block (n <= 64) is left to
    // gemm_packed, which splits its rows itself.
    const int blocks = (n + kFeedForwardRows - 1) / kFeedForwardRows;
    const int tasks = std::min(blocks, parallel::split(2.0 * n * d * ff, parallel::kGrain));
    const size_t block_hidden = static_cast<size_t>(std::min(n, kFeedForwardRows)) * ff;
    if (tasks > 1 && ws.hidden.size() < parallel::threads() * block_hidden) ws.hidden.resize(parallel::threads() * block_hidden);
    float* hidden_blocks = ws.hidden.data();
    auto task = [&](int t, int slot) {
      float* h = hidden_blocks + slot * block_hidden;
      const parallel::Part b = parallel::part(blocks, t, tasks);
      for (int r = b.begin * kFeedForwardRows; r < std::min(n, b.end * kFeedForwardRows); r += kFeedForwardRows) {
        const int rows = std::min(kFeedForwardRows, n - r);
        const size_t at = static_cast<size_t>(r) * d;
        kernels::gemm_packed(rows, in + at, d, *l1, 1.0f, act, false, h, ff);
        kernels::gemm_packed(rows, h, ff, *l2, 1.0f, kernels::Act::kNone, true, out + at, d);
      }
    };
    parallel::run(tasks, task);
  };

  if (o.norm_first) {  // x = x + SA(LN1(x)); x = x + FF(LN2(x))
    layer_norm(x, n, d, w.norm1_weight, w.norm1_bias, o.layer_norm_eps, y);
    SF_RETURN_IF_ERROR(self_attention(y));
    add_layer_norm(x, sa, n, d, w.norm2_weight, w.norm2_bias, o.layer_norm_eps, y);
    feed_forward_add(y, x);
  } else {  // x = LN1(x + SA(x)); x = LN2(x + FF(x))
    SF_RETURN_IF_ERROR(self_attention(x));
    add_layer_norm(x, sa, n, d, w.norm1_weight, w.norm1_bias, o.layer_norm_eps, x);
    feed_forward_add(x, x);
    layer_norm(x, n, d, w.norm2_weight, w.norm2_bias, o.layer_norm_eps, x);
  }
  return Status::Ok();
}

}  // namespace sf
