#include "model/config.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/limits.hpp"

namespace sf {

namespace {

using nlohmann::json;

Status bad(const std::string& m) { return {ErrorCode::kBadFormat, "model config: " + m}; }

// Typed field readers: a missing optional field keeps the default; a wrong type or a value outside
// [lo, hi] is an error naming the field and the range (limits.hpp says why the ranges exist).
Status get_int(const json& j, const char* key, bool required, int lo, int hi, int* out,
               const std::string& where = "") {
  const auto it = j.find(key);
  if (it == j.end()) return required ? bad(where + "missing \"" + key + "\"") : Status::Ok();
  // is_number_integer() also holds for unsigned values past int64: compare as double first.
  if (!it->is_number_integer() || it->get<double>() < lo || it->get<double>() > hi)
    return bad(where + "\"" + key + "\" must be an integer in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "], got " + it->dump());
  *out = static_cast<int>(it->get<long long>());
  return Status::Ok();
}

// A float that the core uses as float32 must survive the conversion: finite, and (for divisors
// and epsilons) a normal float32, since 1e-45 or 1e-300 round to a denormal or 0 and the first
// division then gives Inf, then NaN.
enum class F32Use { kAny, kPositiveNormal };

Status get_double(const json& j, const char* key, double lo, double hi, double* out,
                  const std::string& where = "", F32Use f32 = F32Use::kAny) {
  const auto it = j.find(key);
  if (it == j.end()) return Status::Ok();
  const double v = it->is_number() ? it->get<double>() : std::nan("");
  bool ok = std::isfinite(v) && v >= lo && v <= hi;
  if (ok && f32 == F32Use::kPositiveNormal) ok = static_cast<float>(v) >= std::numeric_limits<float>::min();
  if (!ok) {
    // %g is what an ostream prints by default; snprintf keeps <sstream> (and its ~70 KB of
    // locale code) out of the .wasm. Two %g of at most 13 characters each fit.
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    return bad(where + "\"" + key + "\" must be a finite number in " + range +
               (f32 == F32Use::kPositiveNormal ? " and a normal float32 (>= 1.18e-38)" : "") + ", got " +
               it->dump());
  }
  *out = v;
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
  namespace L = limits;
  // Parsed from a char range, as the safetensors header is: one instantiation of nlohmann's lexer
  // and parser in the .wasm instead of two (one per input type, about 12 KB each).
  const json j = json::parse(text.data(), text.data() + text.size(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  ModelConfig c;
  const auto fmt = j.find("format");
  if (fmt == j.end() || !fmt->is_string() || fmt->get<std::string>() != "sensorformer-1")
    return bad("\"format\" must be \"sensorformer-1\"");
  SF_RETURN_IF_ERROR(get_int(j, "d_model", true, 2, L::kMaxDModel, &c.d_model));
  SF_RETURN_IF_ERROR(get_int(j, "n_heads", true, 1, L::kMaxHeads, &c.n_heads));
  SF_RETURN_IF_ERROR(get_int(j, "n_layers", true, 0, L::kMaxLayers, &c.n_layers));
  SF_RETURN_IF_ERROR(get_int(j, "dim_feedforward", true, 1, L::kMaxFeedforward, &c.dim_feedforward));
  SF_RETURN_IF_ERROR(get_int(j, "n_sensors", true, 1, L::kMaxSensors, &c.n_sensors));
  SF_RETURN_IF_ERROR(get_int(j, "n_outputs", false, 0, L::kMaxOutputs, &c.n_outputs));
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
  // attention_lookback_s: absent or null = unlimited. The interval [t - W, t] ends at the query's
  // own time, so it is a causal notion: a non-causal model has no meaning for it (refused rather
  // than silently read as a symmetric window, which no streaming session could reproduce).
  const auto lookback = j.find("attention_lookback_s");
  if (lookback != j.end() && !lookback->is_null()) {
    const double w = lookback->is_number() ? lookback->get<double>() : std::nan("");
    if (!(std::isfinite(w) && w > 0))
      return bad("\"attention_lookback_s\" must be a finite number of seconds > 0 (or null: unlimited), got " +
                 lookback->dump());
    if (!c.causal)
      return bad("\"attention_lookback_s\" needs \"causal\": true (a query at time t attends to keys in "
                 "[t - W, t]); this config has \"causal\": false");
    c.attention_lookback_s = w;
  }
  double eps = c.layer_norm_eps;
  // layer norm divides by sqrt(var + eps) in float32: a zero eps (1e-300 as float32) makes a
  // constant token 0 / 0.
  SF_RETURN_IF_ERROR(get_double(j, "layer_norm_eps", 0.0, 1.0, &eps, "", F32Use::kPositiveNormal));
  c.layer_norm_eps = static_cast<float>(eps);
  // time_bin: bins are floor((t - reference) / time_bin) as 64-bit integers; with |t - reference|
  // <= 1e12 s a microsecond bin stays far below 2^63.
  SF_RETURN_IF_ERROR(get_double(j, "time_bin", 1e-6, 1e12, &c.time_bin));
  // max_period >= 1: inv_freq[i] = max_period^(-2i/d) <= 1 rad/s, so angles stay bounded by
  // |t - reference| (limits.hpp); the seeds use 10,000.
  SF_RETURN_IF_ERROR(get_double(j, "max_period", 1.0, 1e15, &c.max_period));
  SF_RETURN_IF_ERROR(get_double(j, "min_present_fraction", 1e-9, 1.0, &c.min_present_fraction));

  const auto name_ok = [](const json& v) {
    return v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().size() <= L::kMaxNameBytes;
  };
  const auto mods = j.find("modalities");
  if (mods == j.end() || !mods->is_array() || mods->empty() || mods->size() > static_cast<size_t>(L::kMaxModalities))
    return bad("\"modalities\" must be an array of 1 to " + std::to_string(L::kMaxModalities) + " modalities");
  for (const auto& m : *mods) {
    ModalityConfig mc;
    if (!m.is_object() || !m.contains("name") || !name_ok(m["name"]))
      return bad("every modality needs a \"name\" of 1 to " + std::to_string(L::kMaxNameBytes) + " bytes");
    mc.name = m["name"].get<std::string>();
    if (c.modality_index(mc.name) >= 0) return bad("modality \"" + mc.name + "\" is listed twice");
    const std::string where = "modality \"" + mc.name + "\": ";
    SF_RETURN_IF_ERROR(get_int(m, "patch_len", true, 1, L::kMaxPatchLen, &mc.patch_len, where));
    // Samples are normalised in float32 as (x - mean) / std: both must be float32 numbers, and std
    // a normal one (a std that is 0 as float32 would make every value Inf, then every output NaN).
    double mean = 0.0, sd = 1.0;
    const double big = std::numeric_limits<float>::max();
    SF_RETURN_IF_ERROR(get_double(m, "mean", -big, big, &mean, where));
    SF_RETURN_IF_ERROR(get_double(m, "std", 0.0, big, &sd, where, F32Use::kPositiveNormal));
    mc.mean = static_cast<float>(mean);
    mc.std = static_cast<float>(sd);
    const auto missing = m.find("missing_events");
    if (missing != m.end()) {
      const std::string v = missing->is_string() ? missing->get<std::string>() : "";
      if (v != "mask" && v != "leave-out") return bad(where + "\"missing_events\" must be \"mask\" or \"leave-out\"");
      mc.leave_out_missing_events = v == "leave-out";
    }
    SF_RETURN_IF_ERROR(get_double(m, "upsample_hz", 1e-6, 1e6, &mc.upsample_hz, where));
    c.modalities.push_back(mc);
  }
  const auto pl = j.find("placements");
  if (pl == j.end() || !pl->is_array() || pl->empty() || pl->size() > static_cast<size_t>(L::kMaxPlacements))
    return bad("\"placements\" must be an array of 1 to " + std::to_string(L::kMaxPlacements) + " names");
  for (const auto& p : *pl) {
    if (!name_ok(p)) return bad("\"placements\" must hold names of 1 to " + std::to_string(L::kMaxNameBytes) + " bytes");
    if (c.placement_index(p.get<std::string>()) >= 0) return bad("placement \"" + p.get<std::string>() + "\" is listed twice");
    c.placements.push_back(p.get<std::string>());
  }
  const auto edges = j.find("rate_bucket_edges_hz");
  if (edges != j.end()) {
    if (!edges->is_array() || edges->size() > static_cast<size_t>(L::kMaxRateEdges))
      return bad("\"rate_bucket_edges_hz\" must be an array of at most " + std::to_string(L::kMaxRateEdges) + " numbers");
    for (const auto& e : *edges) {
      if (!e.is_number() || !std::isfinite(e.get<double>()) || !(e.get<double>() > 0))
        return bad("\"rate_bucket_edges_hz\" must hold finite positive numbers");
      if (!c.rate_bucket_edges_hz.empty() && e.get<double>() <= c.rate_bucket_edges_hz.back())
        return bad("\"rate_bucket_edges_hz\" must be increasing");
      c.rate_bucket_edges_hz.push_back(e.get<double>());
    }
  }
  const auto labels = j.find("labels");
  if (labels != j.end()) {
    const std::string want = "\"labels\" must be an array of " + std::to_string(c.n_outputs) +
                             " distinct names of 1 to " + std::to_string(L::kMaxNameBytes) + " bytes (one per head output, \"n_outputs\")";
    if (c.n_outputs == 0) return bad("\"labels\" name the head's outputs, but \"n_outputs\" is 0 (no head)");
    if (!labels->is_array() || labels->size() != static_cast<size_t>(c.n_outputs))
      return bad(want + ", got " + (labels->is_array() ? std::to_string(labels->size()) + " entries" : std::string(labels->type_name())));
    // A set: n_outputs may be 2^20, and a pairwise check would take minutes on a hostile file.
    std::set<std::string> seen;
    for (size_t i = 0; i < labels->size(); ++i) {
      const json& v = (*labels)[i];
      if (!name_ok(v)) {
        std::string shown = v.dump();
        if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
        return bad(want + "; entry " + std::to_string(i) + " is " + shown);
      }
      if (!seen.insert(v.get<std::string>()).second)
        return bad(want + "; \"" + v.get<std::string>() + "\" is listed twice");
      c.labels.push_back(v.get<std::string>());
    }
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace sf
