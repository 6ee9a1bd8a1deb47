// The model: weights from one safetensors file, and the forward pass that wires the stages
//   tokenize -> encode (token embedding) -> attend (encoder layers over the layout's groups)
//   -> pool (masked mean, head)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attend/encoder_layer.hpp"
#include "attend/layout.hpp"
#include "core/limits.hpp"
#include "core/status.hpp"
#include "encode/token_embedding.hpp"
#include "kernels/kernel_set.hpp"
#include "model/config.hpp"
#include "tokenize/tokenizer.hpp"

namespace sf {

class SafetensorsFile;

struct AttentionMap {
  int layer = 0;
  AttentionBlock block = AttentionBlock::kFlattened;
  int group = 0;
  std::vector<int> tokens;     // (g) token indices, in the order of the map's rows and columns
  std::vector<float> weights;  // (H, g, g)
};

struct ForwardOptions {
  // Maps cost H * g^2 floats per group and layer: refused (kResourceExhausted) above this, since a
  // failed allocation would abort the WebAssembly module (no exceptions there).
  static constexpr std::size_t kMaxAttentionMapBytes = limits::kMaxAttentionMapBytes;
  bool attention_maps = false;
  // Compute limit: a forward whose estimated cost (forward_gflop) exceeds this is refused with
  // kResourceExhausted before any layer runs. +Inf disables the limit.
  double max_gflop = limits::kDefaultMaxGflop;
  kernels::KernelSet kernels = kernels::KernelSet::kSimd;
};

struct ForwardResult {
  Tokens tokens;                  // labels: stream, modality, time, present (and more) per token
  std::vector<float> embeddings;  // (T, d_model)
  std::vector<float> pooled;      // (d_model)
  std::vector<float> head;        // (n_outputs), empty without a head
  std::vector<AttentionMap> attention;
};

class Model {
 public:
  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model(Model&&) = default;
  Model& operator=(Model&&) = default;

  // Reads the safetensors bytes: config from __metadata__["config"], every tensor checked against
  // it (missing, extra, misshaped -> kBadFormat / kMissingTensor naming the tensor); F16 and BF16
  // are converted to float32.
  static Status load(std::vector<std::uint8_t> bytes, Model* out);
  static Status load_file(const std::string& path, Model* out);

  const ModelConfig& config() const { return config_; }
  const std::string& config_json() const { return config_json_; }  // as stored in the file

  // Weights in the file that the model uses (time_encoding.inv_freq, a buffer, not counted), and
  // the bytes the loaded model holds in memory for them: float32 weights, their packed copies and
  // the time-encoding table (containers' own overhead excluded, a few KB).
  std::uint64_t parameter_count() const;
  std::uint64_t weight_bytes() const;

  Status forward(const Window& window, const ForwardOptions& options, ForwardResult* out) const;

  // Multiply-adds x 2 of a forward over these tokens and per-block groups, in GFLOP: the embedding
  // (T P d), per layer and block the projections and feed-forward (T (4 d^2 + 2 d ff)) and
  // attention (2 d g^2 per group, causal masks counted in full).
  double forward_gflop(const Tokens& tokens, const std::vector<TokenGroups>& block_groups) const;

  // The optional weights-file tensor holding the time encoding's inverse frequencies (d_model/2).
  static constexpr const char* kInvFreqTensor = "time_encoding.inv_freq";
  const std::vector<double>& inv_freq() const { return inv_freq_; }

 private:
  // The streaming session (src/stream/session.cpp) runs the same stages on the same weights, a
  // batch of final tokens at a time.
  friend class StreamSession;
  Status bind();
  Status load_time_encoding(const SafetensorsFile& file);
  Status check_budgets(const Tokens& tokens, const std::vector<TokenGroups>& block_groups,
                       const ForwardOptions& options) const;
  const float* param(const std::string& name) const { return params_.at(name).data(); }
  const kernels::PackedWeights* pack(const std::string& weight, const std::string& bias);
  // out:(n_outputs) = head.weight . pooled + head.bias, the packed copy when there is one.
  void apply_head(const float* pooled, bool reference, float* out) const;
  // One forward's buffers, sized once for its largest group and reused across all groups, blocks
  // and layers (the demo's factorized layout runs dozens of groups of 1-51 tokens per layer).
  // Local to the forward, not kept in the Model: forward() stays const and reentrant, and the heap
  // returns to where it was after every forward (tests/js/memory.test.js holds it to that).
  struct Workspace {
    LayerWorkspace layer;
    std::vector<float> group;          // (g, d) the group's rows, gathered
    std::vector<std::uint8_t> ignore;  // (g)
    std::vector<Workspace> slots;      // [slot] the buffers of helper thread `slot` (run_block)
  };
  // Sizes ws for groups of up to `largest` tokens, gathered ones up to `gathered` (only grows).
  void size_workspace(Workspace* ws, std::size_t largest, std::size_t gathered, bool reference) const;
  // limits: per group, its time-causal key limits (causal models; empty otherwise); starts: per
  // group, its look-back key starts (models with attention_lookback_s; empty otherwise). Computed
  // once per forward since every layer sees the same groups.
  Status run_block(int layer, AttentionBlock block, const TokenGroups& groups,
                   const std::vector<std::vector<int>>& limits, const std::vector<std::vector<int>>& starts,
                   const EncoderLayerWeights& w, const Tokens& t,
                   const ForwardOptions& options, float* x, std::vector<AttentionMap>* maps, Workspace* ws) const;
  // One group of a block through the layer; map (when not null) receives its attention weights.
  Status run_group(int layer, AttentionBlock block, int g, const std::vector<int>& members, const int* limit,
                   const int* start, const EncoderLayerWeights& w, const Tokens& t, const ForwardOptions& options,
                   float* x, AttentionMap* map, Workspace* ws) const;

  ModelConfig config_;
  std::string config_json_;
  std::map<std::string, std::vector<float>> params_;  // nodes never move: pointers stay valid
  // The layers' projections packed for kernels::gemm_packed at load, keyed by weight name (map
  // nodes never move, so the layer weights' pointers stay valid when the Model moves). Empty when
  // the copies would take the model past limits::kMaxModelBytes: the kernels then pack per call.
  std::map<std::string, kernels::PackedWeights> packed_;

  const kernels::PackedWeights* head_packed_ = nullptr;  // in packed_ too; null: packed per call
  TokenEmbeddingWeights embedding_;
  std::vector<EncoderLayerWeights> layers_, channel_layers_;
  std::vector<double> inv_freq_;  // (d_model/2) rad/s
};

}  // namespace sf
