#include "model/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/format.hpp"
#include "core/limits.hpp"
#include "core/parallel.hpp"
#include "encode/time_encoding.hpp"
#include "io/safetensors.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"
#include "pool/pooling.hpp"

namespace sf {

// Loading runs once per model: compiled for size (clang's minsize; ignored by GCC), while the
// forward below stays -O3 (BENCHMARKS.md, "Size").
#if defined(__clang__)
#define SF_MINSIZE __attribute__((minsize))
#else
#define SF_MINSIZE
#endif

namespace {

using Shape = std::vector<std::int64_t>;

// Every tensor the config implies, with its shape (docs/model.md, "Weights file").
SF_MINSIZE std::vector<std::pair<std::string, Shape>> expected_tensors(const ModelConfig& c) {
  const std::int64_t d = c.d_model, ff = c.dim_feedforward;
  std::vector<std::pair<std::string, Shape>> t;
  for (const auto& m : c.modalities) {
    t.push_back({"tokenizer.value_proj." + m.name + ".weight", {d, m.patch_len}});
    t.push_back({"tokenizer.value_proj." + m.name + ".bias", {d}});
  }
  t.push_back({"tokenizer.mask_token", {d}});
  t.push_back({"tokenizer.sensor_embedding.weight", {c.n_sensors, d}});
  t.push_back({"tokenizer.modality_embedding.weight", {static_cast<std::int64_t>(c.modalities.size()), d}});
  t.push_back({"tokenizer.placement_embedding.weight", {static_cast<std::int64_t>(c.placements.size()), d}});
  t.push_back({"tokenizer.rate_embedding.weight", {c.rate_buckets(), d}});
  const auto layer = [&](const std::string& p) {
    t.push_back({p + "self_attn.in_proj_weight", {3 * d, d}});
    t.push_back({p + "self_attn.in_proj_bias", {3 * d}});
    t.push_back({p + "self_attn.out_proj.weight", {d, d}});
    t.push_back({p + "self_attn.out_proj.bias", {d}});
    t.push_back({p + "linear1.weight", {ff, d}});
    t.push_back({p + "linear1.bias", {ff}});
    t.push_back({p + "linear2.weight", {d, ff}});
    t.push_back({p + "linear2.bias", {d}});
    for (const char* n : {"norm1", "norm2"}) {
      t.push_back({p + n + ".weight", {d}});
      t.push_back({p + n + ".bias", {d}});
    }
  };
  for (int i = 0; i < c.n_layers; ++i) layer("encoder.layers." + std::to_string(i) + ".");
  if (c.layout == Layout::kFactorized)
    for (int i = 0; i < c.n_layers; ++i) layer("encoder.channel_layers." + std::to_string(i) + ".");
  if (c.final_norm) {
    t.push_back({"encoder.norm.weight", {d}});
    t.push_back({"encoder.norm.bias", {d}});
  }
  if (c.n_outputs > 0) {
    t.push_back({"head.weight", {c.n_outputs, d}});
    t.push_back({"head.bias", {c.n_outputs}});
  }
  return t;
}

std::string shape_text(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

}  // namespace

SF_MINSIZE Status Model::load_file(const std::string& path, Model* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {ErrorCode::kIo, "cannot open model file " + path};
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return load(std::move(bytes), out);
}

namespace {

// Parameters the config implies, counted without building anything: bounded config fields
// (limits.hpp) keep this far below 2^63.
SF_MINSIZE std::uint64_t implied_parameters(const ModelConfig& c) {
  const std::uint64_t d = c.d_model, ff = c.dim_feedforward;
  std::uint64_t n = d;  // mask token
  for (const auto& m : c.modalities) n += d * m.patch_len + d;
  n += (static_cast<std::uint64_t>(c.n_sensors) + c.modalities.size() + c.placements.size() + c.rate_buckets()) * d;
  const std::uint64_t layer = 3 * d * d + 3 * d + d * d + d + ff * d + ff + d * ff + d + 4 * d;
  n += layer * c.n_layers * (c.layout == Layout::kFactorized ? 2 : 1);
  if (c.final_norm) n += 2 * d;
  if (c.n_outputs > 0) n += static_cast<std::uint64_t>(c.n_outputs) * (d + 1);
  return n;
}

Status check_finite(const std::string& name, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      return {ErrorCode::kNonFinite, "tensor '" + name + "' holds " + (std::isnan(v[i]) ? "NaN" : "Inf") +
                                         " at element " + std::to_string(i) + ": weights must be finite"};
  return Status::Ok();
}

}  // namespace

SF_MINSIZE Status Model::load(std::vector<std::uint8_t> bytes, Model* out) {
  SafetensorsFile file;
  SF_RETURN_IF_ERROR(SafetensorsFile::parse(std::move(bytes), &file));
  const auto cfg = file.metadata().find("config");
  if (cfg == file.metadata().end())
    return {ErrorCode::kBadFormat, "model file has no __metadata__[\"config\"]: not a sensorformer weights file"};
  Model m;
  SF_RETURN_IF_ERROR(parse_model_config(cfg->second, &m.config_));
  m.config_json_ = cfg->second;

  // Before anything is allocated for the weights: the file must be able to hold them (2 bytes a
  // parameter at least, F16/BF16), and their float32 copies must fit the memory budget. A 26 KB
  // file claiming 16 million layers stops here.
  const std::uint64_t params = implied_parameters(m.config_);
  if (params > file.data_bytes() / 2)
    return {ErrorCode::kBadFormat, "the config implies " + std::to_string(params) + " parameters (at least " +
                                       std::to_string(2 * params) + " bytes) but the file holds " +
                                       std::to_string(file.data_bytes()) + " bytes of tensors"};
  const std::size_t limit = limits::budget(limits::kMaxModelBytes);
  if (params > limit / 4)
    return {ErrorCode::kResourceExhausted, "the model has " + std::to_string(params) + " parameters: " +
                                               std::to_string(params * 4 >> 20) + " MiB as float32, over the " +
                                               std::to_string(limit >> 20) + " MiB limit"};

  const auto expected = expected_tensors(m.config_);
  for (const auto& [name, shape] : expected) {
    const TensorInfo* info = file.find(name);
    if (!info) return {ErrorCode::kMissingTensor, "model file lacks tensor '" + name + "' " + shape_text(shape)};
    if (info->shape != shape)
      return {ErrorCode::kBadFormat, "tensor '" + name + "' has shape " + shape_text(info->shape) +
                                         ", the config needs " + shape_text(shape)};
    if (info->dtype != Dtype::kF32 && info->dtype != Dtype::kF16 && info->dtype != Dtype::kBF16)
      return {ErrorCode::kUnsupportedDtype, "tensor '" + name + "' is " + dtype_name(info->dtype) + "; weights must be F32, F16 or BF16"};
    SF_RETURN_IF_ERROR(file.get_f32(name, &m.params_[name]));
    SF_RETURN_IF_ERROR(check_finite(name, m.params_[name]));
  }
  SF_RETURN_IF_ERROR(m.load_time_encoding(file));
  for (const auto& [name, info] : file.tensors())
    if (!m.params_.count(name) && name != kInvFreqTensor)
      return {ErrorCode::kBadFormat, "model file has tensor '" + name + "' that the config (layout " +
                                         layout_name(m.config_.layout) + ") does not use"};
  SF_RETURN_IF_ERROR(m.bind());
  *out = std::move(m);
  return Status::Ok();
}

std::uint64_t Model::parameter_count() const {
  std::uint64_t n = 0;
  for (const auto& [name, values] : params_) n += values.size();
  return n;
}

std::uint64_t Model::weight_bytes() const {
  std::uint64_t bytes = 4 * parameter_count() + sizeof(double) * inv_freq_.size();
  for (const auto& [name, packed] : packed_) bytes += 4 * (packed.panels.size() + packed.bias.size());
  return bytes;
}

// The time encoding's inverse frequencies: the file's `time_encoding.inv_freq` when present, used
// exactly as stored (a module trained with a float32 table, as in seed 000, saw those values, and
// 1 / max_period^(2i/d) rounded to float32 is up to 2.6e-3 away after 24 h at d_model 128);
// otherwise computed in float64 from max_period.
SF_MINSIZE Status Model::load_time_encoding(const SafetensorsFile& file) {
  const int half = config_.d_model / 2;
  const TensorInfo* info = file.find(kInvFreqTensor);
  if (!info) {
    inv_freq_ = inverse_frequencies(config_.d_model, config_.max_period);
    return Status::Ok();
  }
  if (info->shape != Shape{half})
    return {ErrorCode::kBadFormat, std::string("tensor '") + kInvFreqTensor + "' has shape " + shape_text(info->shape) +
                                       ", the config needs " + shape_text({half})};
  if (info->dtype != Dtype::kF32 && info->dtype != Dtype::kF64)
    return {ErrorCode::kUnsupportedDtype, std::string("tensor '") + kInvFreqTensor + "' is " + dtype_name(info->dtype) +
                                              "; it must be F32 or F64 (F16 would move the encoding by 1e-3 per rad)"};
  SF_RETURN_IF_ERROR(file.get_f64(kInvFreqTensor, &inv_freq_));
  for (int i = 0; i < half; ++i)
    if (!std::isfinite(inv_freq_[i]) || std::fabs(inv_freq_[i]) > 1.0)
      return {ErrorCode::kBadFormat, std::string("tensor '") + kInvFreqTensor + "' element " + std::to_string(i) +
                                         " is " + shortest(inv_freq_[i]) + ": inverse frequencies must be finite and in [-1, 1] rad/s"};
  return Status::Ok();
}

SF_MINSIZE Status Model::bind() {
  const ModelConfig& c = config_;
  for (const auto& m : c.modalities) {
    embedding_.value_proj_weight.push_back(param("tokenizer.value_proj." + m.name + ".weight"));
    embedding_.value_proj_bias.push_back(param("tokenizer.value_proj." + m.name + ".bias"));
  }
  embedding_.mask_token = param("tokenizer.mask_token");
  embedding_.sensor = param("tokenizer.sensor_embedding.weight");
  embedding_.modality = param("tokenizer.modality_embedding.weight");
  embedding_.placement = param("tokenizer.placement_embedding.weight");
  embedding_.rate = param("tokenizer.rate_embedding.weight");
  embedding_.inv_freq = inv_freq_.data();
  // Packed copies repeat every layer matrix and patch projection (panels padded to
  // packed_panel_width() columns): made only when they keep the model's float32 memory within
  // limits::kMaxModelBytes.
  const double pad = kernels::packed_panel_width();
  const auto padded = [&](double rows) { return std::ceil(rows / pad) * pad; };
  const double d = c.d_model, ff = c.dim_feedforward;
  const double per_layer = padded(3 * d) * (d + 1) + padded(d) * (d + 1) + padded(ff) * (d + 1) + padded(d) * (ff + 1);
  double held = 0;
  for (const auto& [name, v] : params_) held += static_cast<double>(v.size());
  double projections = padded(c.n_outputs) * (d + 1);  // the head's and the patch projections' copies
  for (const auto& m : c.modalities) projections += padded(d) * (m.patch_len + 1);
  const double layers = static_cast<double>(c.n_layers) * (c.layout == Layout::kFactorized ? 2 : 1);
  const bool pack_copies = 4.0 * (held + projections + layers * per_layer) <= static_cast<double>(limits::kMaxModelBytes);
  if (pack_copies) {
    for (const auto& m : c.modalities)
      embedding_.value_proj_packed.push_back(
          pack("tokenizer.value_proj." + m.name + ".weight", "tokenizer.value_proj." + m.name + ".bias"));
    if (c.n_outputs > 0) head_packed_ = pack("head.weight", "head.bias");
  }
  const auto layer = [&](const std::string& p) {
    EncoderLayerWeights w;
    w.self_attn = {c.d_model, c.n_heads, param(p + "self_attn.in_proj_weight"), param(p + "self_attn.in_proj_bias"),
                   param(p + "self_attn.out_proj.weight"), param(p + "self_attn.out_proj.bias")};
    w.dim_feedforward = c.dim_feedforward;
    w.linear1_weight = param(p + "linear1.weight");
    w.linear1_bias = param(p + "linear1.bias");
    w.linear2_weight = param(p + "linear2.weight");
    w.linear2_bias = param(p + "linear2.bias");
    w.norm1_weight = param(p + "norm1.weight");
    w.norm1_bias = param(p + "norm1.bias");
    w.norm2_weight = param(p + "norm2.weight");
    w.norm2_bias = param(p + "norm2.bias");
    if (pack_copies) {
      w.self_attn.in_proj_packed = pack(p + "self_attn.in_proj_weight", p + "self_attn.in_proj_bias");
      w.self_attn.out_proj_packed = pack(p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias");
      w.linear1_packed = pack(p + "linear1.weight", p + "linear1.bias");
      w.linear2_packed = pack(p + "linear2.weight", p + "linear2.bias");
    }
    return w;
  };
  for (int i = 0; i < c.n_layers; ++i) {
    layers_.push_back(layer("encoder.layers." + std::to_string(i) + "."));
    if (c.layout == Layout::kFactorized)
      channel_layers_.push_back(layer("encoder.channel_layers." + std::to_string(i) + "."));
  }
  return Status::Ok();
}

void Model::apply_head(const float* pooled, bool reference, float* out) const {
  const int d = config_.d_model, n = config_.n_outputs;
  if (!reference && head_packed_)
    kernels::gemm_packed(1, pooled, d, *head_packed_, 1.0f, kernels::Act::kNone, false, out, n);
  else
    (reference ? kernels::linear_ref : kernels::linear)(1, d, n, pooled, param("head.weight"), param("head.bias"), out);
}

SF_MINSIZE const kernels::PackedWeights* Model::pack(const std::string& weight, const std::string& bias) {
  const std::vector<float>& w = params_.at(weight);
  const std::vector<float>& b = params_.at(bias);
  const int n = static_cast<int>(b.size()), k = static_cast<int>(w.size() / b.size());
  kernels::PackedWeights& p = packed_[weight];
  kernels::pack_weights(w.data(), n, k, k, b.data(), &p);
  return &p;
}

namespace {
// Tokens first, first + 1, ...: such a group's rows are already together in the embeddings.
bool consecutive(const std::vector<int>& members) {
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] != members[0] + static_cast<int>(i)) return false;
  return !members.empty();
}
}  // namespace

void Model::size_workspace(Workspace* ws, std::size_t largest, std::size_t gathered, bool reference) const {
  const std::size_t d = config_.d_model;
  const auto grow = [](auto& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
  };
  grow(ws->group, gathered * d);
  grow(ws->ignore, largest);
  grow(ws->layer.y, largest * d);
  grow(ws->layer.sa, largest * d);
  grow(ws->layer.hidden, (reference ? largest : std::min<std::size_t>(largest, kFeedForwardRows)) * config_.dim_feedforward);
  grow(ws->layer.mha.qkv, largest * 3 * d);
  grow(ws->layer.mha.ctx, largest * d);
}

Status Model::run_group(int layer, AttentionBlock block, int g, const std::vector<int>& members, const int* limit,
                        const int* start, const EncoderLayerWeights& w, const Tokens& t, const ForwardOptions& options,
                        float* x, AttentionMap* map, Workspace* ws) const {
  const int d = config_.d_model, H = config_.n_heads, n = static_cast<int>(members.size());
  const EncoderLayerOptions lo{config_.norm_first, config_.activation, config_.layer_norm_eps, options.kernels};
  // A group of consecutive tokens (the flattened layout's one group; a time group, one stream's
  // tokens) runs in place; any other is gathered into the workspace's buffer and scattered back.
  const bool in_place = consecutive(members);
  float* buf = in_place ? x + static_cast<size_t>(members[0]) * d : ws->group.data();
  for (int i = 0; i < n; ++i) {
    if (!in_place)
      std::memcpy(buf + static_cast<size_t>(i) * d, x + static_cast<size_t>(members[i]) * d, d * sizeof(float));
    ws->ignore[i] = !t.present[members[i]];
  }
  if (map) map->weights.resize(static_cast<size_t>(H) * n * n);
  SF_RETURN_IF_ERROR(encoder_layer(w, lo, buf, n, ws->ignore.data(), limit, map ? map->weights.data() : nullptr,
                                   &ws->layer, start));
  if (!in_place)
    for (int i = 0; i < n; ++i)
      std::memcpy(x + static_cast<size_t>(members[i]) * d, buf + static_cast<size_t>(i) * d, d * sizeof(float));
  if (map) {
    map->layer = layer;
    map->block = block;
    map->group = g;
    map->tokens = members;
  }
  return Status::Ok();
}

Status Model::run_block(int layer, AttentionBlock block, const TokenGroups& groups,
                        const std::vector<std::vector<int>>& limits, const std::vector<std::vector<int>>& starts,
                        const EncoderLayerWeights& w, const Tokens& t,
                        const ForwardOptions& options, float* x, std::vector<AttentionMap>* maps, Workspace* ws) const {
  const double d = config_.d_model, ff = config_.dim_feedforward;
  const int G = static_cast<int>(groups.size());
  const auto limit = [&](int g) { return limits.empty() ? nullptr : limits[g].data(); };
  const auto start = [&](int g) { return starts.empty() ? nullptr : starts[g].data(); };
  // Groups are independent. When none is large (its largest product at most
  // parallel::kGroupGrain: the channel attention of the channel and factorized layouts, one small
  // group per time bin, and the demo's time groups), the groups themselves are spread over the
  // threads, whole groups in order, each thread with its own buffers: every group goes through
  // the same instructions as on one thread, so results stay bit-identical. Otherwise the groups
  // run one after another and their steps split (core/parallel.hpp).
  std::size_t largest = 0, gathered = 0;
  double work = 0;  // multiply-adds of the block's layer
  for (const auto& members : groups) {
    const double n = static_cast<double>(members.size());
    largest = std::max(largest, members.size());
    if (!consecutive(members)) gathered = std::max(gathered, members.size());
    work += n * (4 * d * d + 2 * d * ff + 2 * n * d);
  }
  const bool small = static_cast<double>(largest) * d * std::max(ff, 3 * d) <= parallel::kGroupGrain;
  const int tasks = G > 1 && small && options.kernels != kernels::KernelSet::kReference
                        ? std::min(G, parallel::split(work, parallel::kGroupGrain)) : 1;
  size_workspace(ws, largest, gathered, options.kernels == kernels::KernelSet::kReference);
  const std::size_t first_map = maps->size();
  if (options.attention_maps) maps->resize(first_map + G);
  const auto map = [&](int g) { return options.attention_maps ? &(*maps)[first_map + g] : nullptr; };
  if (tasks == 1) {
    for (int g = 0; g < G; ++g)
      SF_RETURN_IF_ERROR(run_group(layer, block, g, groups[g], limit(g), start(g), w, t, options, x, map(g), ws));
    return Status::Ok();
  }
  if (ws->slots.size() < static_cast<std::size_t>(parallel::threads())) ws->slots.resize(parallel::threads());
  std::vector<Status> status(tasks);
  auto task = [&](int k, int slot) {
    Workspace* own = slot == 0 ? ws : &ws->slots[slot];
    if (slot != 0) size_workspace(own, largest, gathered, false);
    const parallel::Part part = parallel::part(G, k, tasks);
    for (int g = part.begin; g < part.end && status[k].ok(); ++g)
      status[k] = run_group(layer, block, g, groups[g], limit(g), start(g), w, t, options, x, map(g), own);
  };
  parallel::run(tasks, task);
  for (const Status& s : status) SF_RETURN_IF_ERROR(s);
  return Status::Ok();
}

double Model::forward_gflop(const Tokens& t, const std::vector<TokenGroups>& block_groups) const {
  const ModelConfig& c = config_;
  const double d = c.d_model, ff = c.dim_feedforward, T = t.count;
  double macs = 0;
  for (int i = 0; i < t.count; ++i) macs += static_cast<double>(c.modalities[t.modality[i]].patch_len) * d;
  for (const TokenGroups& groups : block_groups) {
    double per_layer = T * (4 * d * d + 2 * d * ff);
    for (const auto& g : groups) {
      // Query-key pairs in reach: every key of the group, or for a causal model the keys in
      // [t - W, t] (the attention kernel skips key tiles outside each row's range; a streaming
      // session counts its pushes the same way, so both refuse the same work).
      double pairs = static_cast<double>(g.size()) * g.size();
      if (c.causal) {
        std::vector<double> times(g.size());
        for (std::size_t i = 0; i < g.size(); ++i) times[i] = t.time[g[i]];
        const std::vector<int> limits = time_causal_limits(times);
        const std::vector<int> starts = c.has_lookback() ? time_lookback_starts(times, c.attention_lookback_s) : std::vector<int>(g.size(), 0);
        pairs = 0;
        for (std::size_t i = 0; i < g.size(); ++i) pairs += limits[i] - starts[i];
      }
      per_layer += 2 * d * pairs;
    }
    macs += per_layer * c.n_layers;
  }
  return 2 * macs / 1e9;
}

// Refused before anything large is allocated or computed: maps past their budget, work memory
// past limits::kMaxWorkBytes (a failed allocation aborts WebAssembly), cost past max_gflop.
SF_MINSIZE Status Model::check_budgets(const Tokens& t, const std::vector<TokenGroups>& block_groups,
                            const ForwardOptions& options) const {
  const ModelConfig& c = config_;
  const std::string tokens = "a window of " + std::to_string(t.count) + " tokens";
  double map_bytes = 0;  // allocated beside the working memory
  if (options.attention_maps) {
    double& bytes = map_bytes;
    for (const TokenGroups& groups : block_groups)
      for (const auto& g : groups) bytes += 4.0 * c.n_heads * static_cast<double>(g.size()) * g.size() * c.n_layers;
    if (bytes > ForwardOptions::kMaxAttentionMapBytes)
      return {ErrorCode::kResourceExhausted,
              "attention maps for " + tokens + " would take " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                  " MiB (limit 256 MiB): ask for maps on shorter windows, or use the time, channel or "
                  "factorized layout; embeddings alone need no maps"};
  }
  // Embeddings and the time encoding (T d each), the largest group's layer buffers (input, norm,
  // attention output, q, k and v, context: 7 d, plus the feed-forward's ff).
  std::size_t largest = 0;
  for (const TokenGroups& groups : block_groups)
    for (const auto& g : groups) largest = std::max(largest, g.size());
  const double work = 4.0 * (2.0 * t.count * c.d_model + static_cast<double>(largest) * (7.0 * c.d_model + c.dim_feedforward));
  const std::size_t limit = limits::budget(limits::kMaxWorkBytes, map_bytes);
  if (work > limit)
    return {ErrorCode::kResourceExhausted, tokens + " needs about " + std::to_string(static_cast<long long>(work / (1 << 20))) +
                                               " MiB of working memory (limit " + std::to_string(limit >> 20) +
                                               " MiB): use shorter windows"};
  const double gflop = forward_gflop(t, block_groups);
  if (!(gflop <= options.max_gflop)) {
    // %.4g: what an ostream with precision(4) printed; snprintf keeps <sstream> out of the .wasm.
    char numbers[2][32];
    std::snprintf(numbers[0], sizeof numbers[0], "%.4g", gflop);
    std::snprintf(numbers[1], sizeof numbers[1], "%.4g", options.max_gflop);
    return {ErrorCode::kResourceExhausted, tokens + " needs about " + numbers[0] + " GFLOP in the " + layout_name(c.layout) +
                                               " layout, over the limit of " + numbers[1] +
                                               " GFLOP: use shorter windows, or raise the limit (forward option maxGflop, CLI --max-gflop)"};
  }
  return Status::Ok();
}

Status Model::forward(const Window& window, const ForwardOptions& options, ForwardResult* out) const {
  const ModelConfig& c = config_;
  ForwardResult r;
  SF_RETURN_IF_ERROR(tokenize(c, window, &r.tokens));
  const Tokens& t = r.tokens;
  const int d = c.d_model, T = t.count;
  // The layout's blocks and their token groups: the same for every layer, so computed once.
  const std::vector<AttentionBlock> blocks = layout_blocks(c.layout);
  std::vector<TokenGroups> groups;
  for (AttentionBlock b : blocks) groups.push_back(group_tokens(t, b, c.time_bin));
  SF_RETURN_IF_ERROR(check_budgets(t, groups, options));
  r.embeddings.assign(static_cast<size_t>(T) * d, 0.0f);
  SF_RETURN_IF_ERROR(embed_tokens(c, embedding_, t, options.kernels, r.embeddings.data()));

  // The layer buffers, grown by run_block to each block's largest group (check_budgets counted
  // them) and reused by every group, block and layer.
  Workspace ws;
  const bool ref = options.kernels == kernels::KernelSet::kReference;
  // A causal model's key range per block and group, [starts, limits): the same for every layer.
  // Without a look-back, starts stay empty (no lower limit).
  std::vector<std::vector<std::vector<int>>> limits(blocks.size()), starts(blocks.size());
  if (c.causal)
    for (size_t b = 0; b < blocks.size(); ++b)
      for (const std::vector<int>& members : groups[b]) {
        std::vector<double> times(members.size());
        for (size_t i = 0; i < members.size(); ++i) times[i] = t.time[members[i]];
        limits[b].push_back(time_causal_limits(times));
        if (c.has_lookback()) starts[b].push_back(time_lookback_starts(times, c.attention_lookback_s));
      }
  for (int l = 0; l < c.n_layers; ++l)
    for (size_t b = 0; b < blocks.size(); ++b)  // factorized: layers.{l} (time), channel_layers.{l}
      SF_RETURN_IF_ERROR(run_block(l, blocks[b], groups[b], limits[b], starts[b],
                                   b == 0 ? layers_[l] : channel_layers_[l], t, options, r.embeddings.data(),
                                   &r.attention, &ws));
  if (c.final_norm && T > 0)
    (ref ? kernels::layer_norm_ref : kernels::layer_norm)(r.embeddings.data(), T, d, param("encoder.norm.weight"),
                                                          param("encoder.norm.bias"), c.layer_norm_eps, r.embeddings.data());
  r.pooled.resize(d);
  masked_mean(r.embeddings.data(), T, d, t.present.data(), r.pooled.data());
  if (c.n_outputs > 0) {
    r.head.resize(c.n_outputs);
    apply_head(r.pooled.data(), ref, r.head.data());
  }
  // Finite weights, bounded times and normalised values keep this from happening with sane
  // weights; extreme ones (1e38 everywhere) can still overflow float32 inside a layer. A NaN never
  // leaves the core: such a forward is an error.
  const auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  };
  if (!finite(r.embeddings) || !finite(r.pooled) || !finite(r.head))
    return {ErrorCode::kNonFinite, "the forward overflowed float32 (an output is not finite): the weights or inputs "
                                   "are too large for float32"};
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace sf
