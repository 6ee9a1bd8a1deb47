// Encode stage: tokens -> embeddings (seeds 000 and 002).
//
//   x_i = (present_i ? value_proj[m_i](patch_i) : mask_token)
//         + time_encoding(t_i - reference_time)
//         + sensor[s_i] + modality[m_i] + placement[p_i] + rate[r_i]
#pragma once

#include <vector>

#include "core/status.hpp"
#include "kernels/kernel_set.hpp"
#include "kernels/matmul.hpp"
#include "model/config.hpp"
#include "tokenize/tokenizer.hpp"

namespace sf {

struct TokenEmbeddingWeights {
  std::vector<const float*> value_proj_weight;  // per modality: (d, patch_len)
  std::vector<const float*> value_proj_bias;    // per modality: (d)
  // per modality, packed by kernels::pack_weights (the Model packs them at load); empty: the
  // vector path packs per call. The reference path never reads them.
  std::vector<const kernels::PackedWeights*> value_proj_packed;
  const float* mask_token = nullptr;            // (d)
  const float* sensor = nullptr;                // (n_sensors, d)
  const float* modality = nullptr;              // (n_modalities, d)
  const float* placement = nullptr;             // (n_placements, d)
  const float* rate = nullptr;                  // (rate_buckets, d)
  const double* inv_freq = nullptr;             // (d / 2) time encoding; null: from max_period
};

// tokens -> out:(tokens.count, d_model)
Status embed_tokens(const ModelConfig& config, const TokenEmbeddingWeights& w, const Tokens& tokens,
                    kernels::KernelSet kernels, float* out);

}  // namespace sf
