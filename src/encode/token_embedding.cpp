#include "encode/token_embedding.hpp"

#include <algorithm>

#include "encode/time_encoding.hpp"
#include "kernels/activation.hpp"

namespace sf {

Status embed_tokens(const ModelConfig& c, const TokenEmbeddingWeights& w, const Tokens& t,
                    kernels::KernelSet kernels, float* out) {
  const int d = c.d_model, T = t.count;
  const bool ref = kernels == kernels::KernelSet::kReference;
  const auto linear = ref ? kernels::linear_ref : kernels::linear;
  // Value tokens, one projection per run of tokens from the same stream (same modality, so the
  // patches are contiguous rows of patch_len values); absent patches then take the mask token.
  for (int i = 0; i < T;) {
    int end = i + 1;
    while (end < T && t.stream[end] == t.stream[i]) ++end;
    const int m = t.modality[i], P = c.modalities[m].patch_len;
    if (!ref && !w.value_proj_packed.empty())
      kernels::gemm_packed(end - i, t.values.data() + t.value_offset[i], P, *w.value_proj_packed[m], 1.0f,
                           kernels::Act::kNone, false, out + static_cast<size_t>(i) * d, d);
    else
      linear(end - i, P, d, t.values.data() + t.value_offset[i], w.value_proj_weight[m],
             w.value_proj_bias[m], out + static_cast<size_t>(i) * d);
    for (int k = i; k < end; ++k)
      if (!t.present[k]) std::copy(w.mask_token, w.mask_token + d, out + static_cast<size_t>(k) * d);
    i = end;
  }
  std::vector<float> pe(static_cast<size_t>(T) * d);
  SF_RETURN_IF_ERROR(encode_time({d, c.max_period, w.inv_freq}, t.time.data(), T, t.reference_time, pe.data(), kernels));
  (kernels == kernels::KernelSet::kReference ? kernels::add_ref : kernels::add)(pe.data(), static_cast<int>(pe.size()), out);
  SF_RETURN_IF_ERROR(add_embedding(out, T, d, t.sensor.data(), w.sensor, c.n_sensors, kernels));
  SF_RETURN_IF_ERROR(add_embedding(out, T, d, t.modality.data(), w.modality, static_cast<int>(c.modalities.size()), kernels));
  SF_RETURN_IF_ERROR(add_embedding(out, T, d, t.placement.data(), w.placement, static_cast<int>(c.placements.size()), kernels));
  SF_RETURN_IF_ERROR(add_embedding(out, T, d, t.rate_bucket.data(), w.rate, c.rate_buckets(), kernels));
  return Status::Ok();
}

}  // namespace sf
