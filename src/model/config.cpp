#include "model/config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace sf {

namespace {

using nlohmann::json;

Status bad(const std::string& m) { return {ErrorCode::kBadFormat, "model config: " + m}; }

// Typed field readers: a missing optional field keeps the default; a wrong type is an error.
Status get_int(const json& j, const char* key, bool required, int lo, int* out) {
  const auto it = j.find(key);
  if (it == j.end()) return required ? bad(std::string("missing \"") + key + "\"") : Status::Ok();
  if (!it->is_number_integer() || it->get<long long>() < lo || it->get<long long>() > 1 << 24)
    return bad(std::string("\"") + key + "\" must be an integer >= " + std::to_string(lo));
  *out = it->get<int>();
  return Status::Ok();
}

Status get_double(const json& j, const char* key, double lo_exclusive, double* out) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > lo_exclusive))
    return bad(std::string("\"") + key + "\" must be a number > " + std::to_string(lo_exclusive));
  *out = it->get<double>();
  return Status::Ok();
}

Status get_bool(const json& j, const char* key, bool* out) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (!it->is_boolean()) return bad(std::string("\"") + key + "\" must be true or false");
  *out = it->get<bool>();
  return Status::Ok();
}

Status get_enum(const json& j, const char* key, const std::vector<std::string>& names, int* out) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  if (it->is_string())
    for (size_t i = 0; i < names.size(); ++i)
      if (it->get<std::string>() == names[i]) {
        *out = static_cast<int>(i);
        return Status::Ok();
      }
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return bad(std::string("\"") + key + "\" must be one of " + all);
}

}  // namespace

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kFlattened: return "flattened";
    case Layout::kTime: return "time";
    case Layout::kChannel: return "channel";
    case Layout::kFactorized: return "factorized";
  }
  return "?";
}

int ModelConfig::modality_index(const std::string& name) const {
  for (size_t i = 0; i < modalities.size(); ++i)
    if (modalities[i].name == name) return static_cast<int>(i);
  return -1;
}

int ModelConfig::placement_index(const std::string& name) const {
  for (size_t i = 0; i < placements.size(); ++i)
    if (placements[i] == name) return static_cast<int>(i);
  return -1;
}

int ModelConfig::rate_bucket(double rate_hz, bool event_driven) const {
  if (event_driven) return 0;
  int b = 1;
  for (double e : rate_bucket_edges_hz) b += rate_hz >= e ? 1 : 0;
  return b;
}

Status parse_model_config(const std::string& text, ModelConfig* out) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  ModelConfig c;
  const auto fmt = j.find("format");
  if (fmt == j.end() || !fmt->is_string() || fmt->get<std::string>() != "sensorformer-1")
    return bad("\"format\" must be \"sensorformer-1\"");
  SF_RETURN_IF_ERROR(get_int(j, "d_model", true, 2, &c.d_model));
  SF_RETURN_IF_ERROR(get_int(j, "n_heads", true, 1, &c.n_heads));
  SF_RETURN_IF_ERROR(get_int(j, "n_layers", true, 0, &c.n_layers));
  SF_RETURN_IF_ERROR(get_int(j, "dim_feedforward", true, 1, &c.dim_feedforward));
  SF_RETURN_IF_ERROR(get_int(j, "n_sensors", true, 1, &c.n_sensors));
  SF_RETURN_IF_ERROR(get_int(j, "n_outputs", false, 0, &c.n_outputs));
  if (c.d_model % 2 != 0) return bad("\"d_model\" must be even (sin and cos halves)");
  if (c.d_model % c.n_heads != 0) return bad("\"n_heads\" must divide \"d_model\"");
  int act = 0, layout = 0;
  SF_RETURN_IF_ERROR(get_enum(j, "activation", {"relu", "gelu"}, &act));
  SF_RETURN_IF_ERROR(get_enum(j, "layout", {"flattened", "time", "channel", "factorized"}, &layout));
  c.activation = static_cast<Activation>(act);
  c.layout = static_cast<Layout>(layout);
  SF_RETURN_IF_ERROR(get_bool(j, "norm_first", &c.norm_first));
  SF_RETURN_IF_ERROR(get_bool(j, "final_norm", &c.final_norm));
  SF_RETURN_IF_ERROR(get_bool(j, "causal", &c.causal));
  double eps = c.layer_norm_eps;
  SF_RETURN_IF_ERROR(get_double(j, "layer_norm_eps", 0.0, &eps));
  c.layer_norm_eps = static_cast<float>(eps);
  SF_RETURN_IF_ERROR(get_double(j, "time_bin", 0.0, &c.time_bin));
  SF_RETURN_IF_ERROR(get_double(j, "max_period", 0.0, &c.max_period));
  SF_RETURN_IF_ERROR(get_double(j, "min_present_fraction", 0.0, &c.min_present_fraction));
  if (c.min_present_fraction > 1.0) return bad("\"min_present_fraction\" must be in (0, 1]");

  const auto mods = j.find("modalities");
  if (mods == j.end() || !mods->is_array() || mods->empty()) return bad("\"modalities\" must be a non-empty array");
  for (const auto& m : *mods) {
    ModalityConfig mc;
    if (!m.is_object() || !m.contains("name") || !m["name"].is_string())
      return bad("every modality needs a \"name\"");
    mc.name = m["name"].get<std::string>();
    if (c.modality_index(mc.name) >= 0) return bad("modality \"" + mc.name + "\" is listed twice");
    SF_RETURN_IF_ERROR(get_int(m, "patch_len", true, 1, &mc.patch_len));
    double mean = 0.0, sd = 1.0;
    const auto mit = m.find("mean");
    if (mit != m.end()) {
      if (!mit->is_number()) return bad("modality \"" + mc.name + "\": \"mean\" must be a number");
      mean = mit->get<double>();
    }
    SF_RETURN_IF_ERROR(get_double(m, "std", 0.0, &sd));
    mc.mean = static_cast<float>(mean);
    mc.std = static_cast<float>(sd);
    c.modalities.push_back(mc);
  }
  const auto pl = j.find("placements");
  if (pl == j.end() || !pl->is_array() || pl->empty()) return bad("\"placements\" must be a non-empty array of names");
  for (const auto& p : *pl) {
    if (!p.is_string()) return bad("\"placements\" must hold strings");
    c.placements.push_back(p.get<std::string>());
  }
  const auto edges = j.find("rate_bucket_edges_hz");
  if (edges != j.end()) {
    if (!edges->is_array()) return bad("\"rate_bucket_edges_hz\" must be an array of numbers");
    for (const auto& e : *edges) {
      if (!e.is_number() || !(e.get<double>() > 0)) return bad("\"rate_bucket_edges_hz\" must hold positive numbers");
      if (!c.rate_bucket_edges_hz.empty() && e.get<double>() <= c.rate_bucket_edges_hz.back())
        return bad("\"rate_bucket_edges_hz\" must be increasing");
      c.rate_bucket_edges_hz.push_back(e.get<double>());
    }
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace sf
