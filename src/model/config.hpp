// The model's hyper-parameters, read from the weights file's __metadata__["config"] JSON
// (docs/model.md). Parsing validates every field and names the one that is wrong.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace sf {

enum class Layout { kFlattened, kTime, kChannel, kFactorized };
enum class Activation { kRelu, kGelu };

struct ModalityConfig {
  std::string name;
  int patch_len = 0;  // samples (regular) or events (event-driven) per token
  float mean = 0.0f;  // value normalisation: (x - mean) / std
  float std = 1.0f;
  // "missing_events": "leave-out" (docs/model.md, "Tokenizer"): the model was trained without the
  // missing events of an event-driven stream of this modality (an RR interval across a gap), so
  // the tokenizer and a session drop them before patching; "mask" (the default) keeps them as
  // missing values in their patch.
  bool leave_out_missing_events = false;
  // "upsample_hz": R (docs/model.md, "Tokenizer"): a regular stream of this modality slower than R
  // is read at R, interpolated (src/tokenize/upsample.hpp), so that a model trained at R reads a
  // slower device's samples as it was trained; 0 (the key absent): every stream at its own rate.
  double upsample_hz = 0.0;
  bool upsamples(double rate_hz) const { return rate_hz > 0.0 && rate_hz < upsample_hz; }
};

struct ModelConfig {
  int d_model = 0;
  int n_heads = 0;
  int n_layers = 0;
  int dim_feedforward = 0;
  Activation activation = Activation::kRelu;
  bool norm_first = false;
  float layer_norm_eps = 1e-5f;
  bool final_norm = false;
  Layout layout = Layout::kFlattened;
  bool causal = false;
  // attention_lookback_s W (seconds): a query at time t attends only to keys with t - t_key <= W
  // (float64), on top of the causal cut t_key <= t. +Inf (the config's key absent or null): no
  // lower limit. Finite and > 0 when given, and only with causal (docs/model.md, "Encoder").
  double attention_lookback_s = std::numeric_limits<double>::infinity();
  double time_bin = 1.0;              // seconds, channel grouping
  double max_period = 10000.0;
  double min_present_fraction = 0.5;  // a patch needs this share of present samples
  int n_sensors = 0;
  std::vector<ModalityConfig> modalities;
  std::vector<std::string> placements;
  std::vector<double> rate_bucket_edges_hz;
  int n_outputs = 0;
  // Optional class names, one per head output (n_outputs of them, distinct, 1 to kMaxNameBytes
  // bytes each); empty when the config has none. With them the package reports probabilities and
  // the arg-max's name.
  std::vector<std::string> labels;

  bool has_lookback() const { return attention_lookback_s != std::numeric_limits<double>::infinity(); }
  int rate_buckets() const { return static_cast<int>(rate_bucket_edges_hz.size()) + 2; }
  int modality_index(const std::string& name) const;   // -1 when unknown
  int placement_index(const std::string& name) const;  // -1 when unknown
  // Bucket 0: event-driven; else 1 + number of edges <= rate.
  int rate_bucket(double rate_hz, bool event_driven) const;
};

Status parse_model_config(const std::string& json, ModelConfig* out);
const char* layout_name(Layout l);

}  // namespace sf
