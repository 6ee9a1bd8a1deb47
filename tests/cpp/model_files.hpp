// Builds sensorformer weight files in memory for tests: a config, random tensors with the shapes
// docs/model.md gives, and a small safetensors writer (so a test can drop, add, reshape or
// re-type one tensor and check the loader's error).
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sf::testing {

struct RawTensor {
  std::string dtype = "F32";
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
};
using RawTensors = std::map<std::string, RawTensor>;

inline std::vector<std::uint8_t> write_safetensors(const RawTensors& tensors, const std::string& config_json) {
  nlohmann::json header;
  header["__metadata__"] = {{"config", config_json}};
  std::vector<std::uint8_t> data;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  const std::string h = header.dump();
  // Sized once and copied into: GCC 12 reports a false -Wstringop-overread inside
  // std::vector::insert's reallocation path for the appending version.
  std::vector<std::uint8_t> out(8 + h.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(h.size()) >> (8 * i));
  std::copy(h.begin(), h.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(h.size()));
  return out;
}

inline RawTensor random_f32(std::vector<std::int64_t> shape, std::mt19937& rng, float scale = 0.3f) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::vector<float> v(n);
  std::normal_distribution<float> g(0.0f, scale);
  for (auto& x : v) x = g(rng);
  RawTensor t{"F32", std::move(shape), std::vector<std::uint8_t>(n * 4)};
  std::memcpy(t.bytes.data(), v.data(), n * 4);
  return t;
}

// A small model of any layout: modalities ecg (patch 4) and hr (patch 2), two placements.
inline nlohmann::json small_config(const std::string& layout, bool causal = false) {
  return {{"format", "sensorformer-1"}, {"d_model", 8}, {"n_heads", 2}, {"n_layers", 2}, {"dim_feedforward", 12},
          {"activation", "gelu"}, {"norm_first", true}, {"final_norm", true}, {"layout", layout},
          {"causal", causal}, {"time_bin", 1.0}, {"n_sensors", 3}, {"n_outputs", 2},
          {"modalities", {{{"name", "ecg"}, {"patch_len", 4}, {"mean", 0.0}, {"std", 1.0}},
                          {{"name", "hr"}, {"patch_len", 2}, {"mean", 70.0}, {"std", 15.0}}}},
          {"placements", {"chest", "wrist"}}, {"rate_bucket_edges_hz", {1.0, 100.0}}};
}

inline RawTensors small_tensors(const nlohmann::json& c, unsigned seed = 7) {
  std::mt19937 rng(seed);
  const std::int64_t d = c["d_model"], ff = c["dim_feedforward"];
  RawTensors t;
  for (const auto& m : c["modalities"]) {
    const std::string n = m["name"];
    t["tokenizer.value_proj." + n + ".weight"] = random_f32({d, m["patch_len"].get<std::int64_t>()}, rng);
    t["tokenizer.value_proj." + n + ".bias"] = random_f32({d}, rng);
  }
  t["tokenizer.mask_token"] = random_f32({d}, rng);
  t["tokenizer.sensor_embedding.weight"] = random_f32({c["n_sensors"].get<std::int64_t>(), d}, rng);
  t["tokenizer.modality_embedding.weight"] = random_f32({static_cast<std::int64_t>(c["modalities"].size()), d}, rng);
  t["tokenizer.placement_embedding.weight"] = random_f32({static_cast<std::int64_t>(c["placements"].size()), d}, rng);
  t["tokenizer.rate_embedding.weight"] = random_f32({static_cast<std::int64_t>(c["rate_bucket_edges_hz"].size()) + 2, d}, rng);
  const auto layer = [&](const std::string& p) {
    t[p + "self_attn.in_proj_weight"] = random_f32({3 * d, d}, rng);
    t[p + "self_attn.in_proj_bias"] = random_f32({3 * d}, rng);
    t[p + "self_attn.out_proj.weight"] = random_f32({d, d}, rng);
    t[p + "self_attn.out_proj.bias"] = random_f32({d}, rng);
    t[p + "linear1.weight"] = random_f32({ff, d}, rng);
    t[p + "linear1.bias"] = random_f32({ff}, rng);
    t[p + "linear2.weight"] = random_f32({d, ff}, rng);
    t[p + "linear2.bias"] = random_f32({d}, rng);
    for (const char* n : {"norm1", "norm2"}) {
      t[p + n + ".weight"] = random_f32({d}, rng, 1.0f);
      t[p + n + ".bias"] = random_f32({d}, rng);
    }
  };
  for (int i = 0; i < c["n_layers"].get<int>(); ++i) {
    layer("encoder.layers." + std::to_string(i) + ".");
    if (c["layout"] == "factorized") layer("encoder.channel_layers." + std::to_string(i) + ".");
  }
  if (c["final_norm"].get<bool>()) {
    t["encoder.norm.weight"] = random_f32({d}, rng, 1.0f);
    t["encoder.norm.bias"] = random_f32({d}, rng);
  }
  if (c["n_outputs"].get<int>() > 0) {
    t["head.weight"] = random_f32({c["n_outputs"].get<std::int64_t>(), d}, rng);
    t["head.bias"] = random_f32({c["n_outputs"].get<std::int64_t>()}, rng);
  }
  return t;
}

}  // namespace sf::testing
