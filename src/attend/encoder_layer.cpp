#include "attend/encoder_layer.hpp"

#include <vector>

#include "kernels/activation.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace sf {

Status encoder_layer(const EncoderLayerWeights& w, const EncoderLayerOptions& o, float* x, int n,
                     const std::uint8_t* key_ignore, const int* key_limit, float* attn) {
  const bool ref = o.kernels == kernels::KernelSet::kReference;
  const auto layer_norm = ref ? kernels::layer_norm_ref : kernels::layer_norm;
  const auto linear = ref ? kernels::linear_ref : kernels::linear;
  const auto act = o.activation == Activation::kGelu ? (ref ? kernels::gelu_ref : kernels::gelu)
                                                     : (ref ? kernels::relu_ref : kernels::relu);
  const int d = w.self_attn.embed_dim, ff = w.dim_feedforward;
  const size_t nd = static_cast<size_t>(n) * d;
  std::vector<float> y(nd), sa(nd), hidden(static_cast<size_t>(n) * ff);

  MhaOptions mha;
  mha.key_padding_mask = key_ignore;
  mha.key_limit = key_limit;
  mha.weights = attn ? AttentionWeights::kPerHead : AttentionWeights::kNone;
  mha.kernels = o.kernels;
  const auto self_attention = [&](const float* in) {
    return multihead_attention(w.self_attn, in, n, in, n, mha, sa.data(), attn);
  };
  const auto feed_forward = [&](const float* in, float* out) {
    linear(n, d, ff, in, w.linear1_weight, w.linear1_bias, hidden.data());
    act(hidden.data(), n * ff, hidden.data());
    linear(n, ff, d, hidden.data(), w.linear2_weight, w.linear2_bias, out);
  };

  if (o.norm_first) {
    layer_norm(x, n, d, w.norm1_weight, w.norm1_bias, o.layer_norm_eps, y.data());
    SF_RETURN_IF_ERROR(self_attention(y.data()));
    for (size_t i = 0; i < nd; ++i) x[i] += sa[i];
    layer_norm(x, n, d, w.norm2_weight, w.norm2_bias, o.layer_norm_eps, y.data());
    feed_forward(y.data(), sa.data());
    for (size_t i = 0; i < nd; ++i) x[i] += sa[i];
  } else {
    SF_RETURN_IF_ERROR(self_attention(x));
    for (size_t i = 0; i < nd; ++i) y[i] = x[i] + sa[i];
    layer_norm(y.data(), n, d, w.norm1_weight, w.norm1_bias, o.layer_norm_eps, x);
    feed_forward(x, sa.data());
    for (size_t i = 0; i < nd; ++i) y[i] = x[i] + sa[i];
    layer_norm(y.data(), n, d, w.norm2_weight, w.norm2_bias, o.layer_norm_eps, x);
  }
  return Status::Ok();
}

}  // namespace sf
