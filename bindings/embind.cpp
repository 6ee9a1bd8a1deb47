// The Embind surface of the core: typed arrays in, typed arrays out, no state. Every function
// returns a plain object: { ok: true, ... } or { ok: false, code, message }, which the JS package
// (web/src) turns into values or a SensorformerError; nothing here throws or aborts. Lengths are
// checked against the stated shapes before any pointer reaches the core.
#include <emscripten/bind.h>
#include <emscripten/val.h>
#include <malloc.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "core/limits.hpp"
#include "core/parallel.hpp"
#include "encode/time_encoding.hpp"
#include "kernels/simd.hpp"
#include "model/model.hpp"
#include "stream/session.hpp"

using emscripten::val;

namespace {

// Glue that runs once per model (load, info) or converts a few small arrays per call (the stream
// session's, core.timeEncoding's) is compiled for size: -O3 inlined every val access into tens of KB of code
// (BENCHMARKS.md, "Size"). forward() keeps -O3.
#define SF_GLUE_MINSIZE __attribute__((minsize))

val failure(const sf::Status& s) {
  val r = val::object();
  r.set("ok", false);
  r.set("code", std::string(sf::error_code_name(s.code())));
  r.set("message", s.message());
  return r;
}

val ok_object() {
  val r = val::object();
  r.set("ok", true);
  return r;
}

sf::Status check_length(const std::string& name, size_t got, size_t want) {
  if (got == want) return sf::Status::Ok();
  return {sf::ErrorCode::kShapeMismatch,
          name + " has " + std::to_string(got) + " elements, expected " + std::to_string(want)};
}

bool given(const val& v) { return !v.isUndefined() && !v.isNull(); }

// A copy into the heap past what it has left aborts the module, so the arrays' bytes are checked
// first: `bytes` is their total (web/src makes them typed arrays of the element types copy_in
// reads). `what`: "the window's arrays", "the model file", ...
SF_GLUE_MINSIZE sf::Status check_copy(double bytes, const char* what) {
  // budget(n) is n when n bytes fit, found without walking the allocator's free blocks when the
  // heap has room above its break (every call's usual case); what is left is computed for the message.
  if (bytes < static_cast<double>(SIZE_MAX) && static_cast<double>(sf::limits::budget(static_cast<std::size_t>(bytes))) >= bytes)
    return sf::Status::Ok();
  const std::size_t left = sf::limits::budget(SIZE_MAX);
  if (bytes <= static_cast<double>(left)) return sf::Status::Ok();
  return {sf::ErrorCode::kResourceExhausted, std::string(what) + " would take " + std::to_string(static_cast<long long>(bytes / (1 << 20))) +
                                                 " MiB, more than the " + std::to_string(left >> 20) + " MiB the heap has left"};
}

SF_GLUE_MINSIZE double length_of(const val& array) { return given(array) ? array["length"].as<double>() : 0.0; }

// The bytes a window's or chunk's streams copy in (samples float32, timestamps float64, present
// uint8; a null stream of a chunk copies nothing).
SF_GLUE_MINSIZE sf::Status check_stream_copies(const val& streams, const char* what) {
  double bytes = 0;
  const int n = streams["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const val s = streams[i];
    if (given(s)) bytes += 4.0 * length_of(s["samples"]) + 8.0 * length_of(s["timestamps"]) + length_of(s["present"]);
  }
  return check_copy(bytes, what);
}

template <class T>
std::vector<T> copy_in(const val& typed_array) {
  if (typed_array.isNull() || typed_array.isUndefined()) return {};
  return emscripten::convertJSArrayToNumberVector<T>(typed_array);
}

// The typed array that holds a copy of a std::vector<T>.
template <class T>
constexpr const char* typed_array_name() {
  if constexpr (std::is_same_v<T, float>) return "Float32Array";
  else if constexpr (std::is_same_v<T, double>) return "Float64Array";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "Int32Array";
  else {
    static_assert(std::is_same_v<T, std::uint8_t>, "copy_out: no typed array for this element type");
    return "Uint8Array";
  }
}

// Copies out of the wasm heap: the caller's array stays valid when the heap grows. (The
// constructor is looked up by name on every call: a handle kept across calls would stay alive
// for good, and tests/js/memory.test.js counts the live ones.)
template <class T>
val copy_out(const std::vector<T>& v) {
  return val::global(typed_array_name<T>()).new_(val(emscripten::typed_memory_view(v.size(), v.data())));
}

// times: Float64Array (n) seconds; inv_freq: null (computed from max_period) or Float64Array
// (d_model / 2), checked by web/src/core.js (values: a model file's rule, finite and in [-1, 1]);
// the length is checked here too, since it guards the read. A non-finite value is also refused
// by encode_time (its angle bound) -> { ok, data: Float32Array (n * dModel) }
SF_GLUE_MINSIZE val time_encoding(val times, double t_ref, int d_model, double max_period, val inv_freq) {
  if (const sf::Status c = check_copy(8.0 * (length_of(times) + length_of(inv_freq)), "the times"); !c.ok()) return failure(c);
  const auto t = copy_in<double>(times);
  const auto table = copy_in<double>(inv_freq);
  const bool has_table = !inv_freq.isNull() && !inv_freq.isUndefined();
  if (has_table) {
    if (d_model < 2 || d_model % 2 != 0 || table.size() != static_cast<size_t>(d_model / 2))
      return failure({sf::ErrorCode::kInvalidArgument, "time encoding: invFreq has " + std::to_string(table.size()) +
                                                           " values; d_model " + std::to_string(d_model) + " needs d_model / 2"});
  }
  const std::size_t limit = sf::limits::budget(sf::limits::kMaxWorkBytes);
  if (4.0 * t.size() * d_model > limit)  // checked before the output exists
    return failure({sf::ErrorCode::kResourceExhausted, "time encoding: " + std::to_string(t.size()) + " x " +
                                                           std::to_string(d_model) + " floats exceed the " +
                                                           std::to_string(limit >> 20) + " MiB limit"});
  std::vector<float> out(t.size() * static_cast<size_t>(d_model > 0 ? d_model : 0));
  const sf::Status s = sf::encode_time({d_model, max_period, has_table ? table.data() : nullptr}, t.data(),
                                       static_cast<int>(t.size()), t_ref, out.data());
  if (!s.ok()) return failure(s);
  val r = val::object();
  r.set("ok", true);
  r.set("data", copy_out(out));
  return r;
}

// The projections' lengths for embed_dim E: in_proj (3E, E) [+ (3E)], out_proj (E, E) [+ (E)].
sf::Status check_mha_weights(int E, int H, const std::vector<float>& ipw, const std::vector<float>& ipb,
                             const std::vector<float>& opw, const std::vector<float>& opb) {
  if (E <= 0 || H <= 0) return {sf::ErrorCode::kInvalidArgument, "multihead attention: bad sizes"};
  if (E % H != 0)
    return {sf::ErrorCode::kInvalidArgument, "multihead attention: num_heads (" + std::to_string(H) +
                                                 ") must divide embed_dim (" + std::to_string(E) + ")"};
  const size_t e = E;
  for (const sf::Status& s :
       {check_length("in_proj_weight", ipw.size(), 3 * e * e), check_length("out_proj_weight", opw.size(), e * e),
        ipb.empty() ? sf::Status() : check_length("in_proj_bias", ipb.size(), 3 * e),
        opb.empty() ? sf::Status() : check_length("out_proj_bias", opb.size(), e)})
    if (!s.ok()) return s;
  return sf::Status::Ok();
}

// One call on weights already checked: query (L, E), kv (S, E); weightsMode 0 none, 1 per head
// (H, L, S), 2 averaged (L, S).
val run_mha(const sf::MhaWeights& w, val query, int L, val kv, int S, val key_padding_mask, bool causal,
            int weights_mode) {
  if (L < 0 || S < 0 || weights_mode < 0 || weights_mode > 2)
    return failure({sf::ErrorCode::kInvalidArgument, "multihead attention: bad sizes or weights mode"});
  const size_t e = w.embed_dim;
  if (const sf::Status c = check_copy(4.0 * (length_of(query) + length_of(kv)) + length_of(key_padding_mask), "the query and key/value arrays"); !c.ok())
    return failure(c);
  const auto q = copy_in<float>(query), x = copy_in<float>(kv);
  const auto kpm = copy_in<std::uint8_t>(key_padding_mask);
  for (const sf::Status& s : {check_length("query", q.size(), L * e), check_length("key/value", x.size(), S * e),
                              kpm.empty() ? sf::Status() : check_length("key_padding_mask", kpm.size(), S)})
    if (!s.ok()) return failure(s);
  if (const sf::Status s = sf::check_mha_budget(w.embed_dim, w.num_heads, L, S, static_cast<sf::AttentionWeights>(weights_mode)); !s.ok())
    return failure(s);
  sf::MhaOptions opt;
  opt.key_padding_mask = kpm.empty() ? nullptr : kpm.data();
  opt.causal = causal;
  opt.weights = static_cast<sf::AttentionWeights>(weights_mode);
  std::vector<float> out(L * e);
  std::vector<float> attn(weights_mode == 0 ? 0 : static_cast<size_t>(weights_mode == 1 ? w.num_heads : 1) * L * S);
  // A self-attention call passes the same array twice: one copy, so the core sees query == kv
  // and computes Q, K and V in one product.
  const bool self = query.strictlyEquals(kv);
  const sf::Status s = sf::multihead_attention(w, q.data(), L, self ? q.data() : x.data(), S, opt, out.data(), attn.data());
  if (!s.ok()) return failure(s);
  val r = val::object();
  r.set("ok", true);
  r.set("output", copy_out(out));
  if (weights_mode != 0) r.set("attention", copy_out(attn));
  return r;
}

// One-shot: the weights are copied (and packed by the core) on every call.
val multihead_attention(val query, int L, val kv, int S, int E, int H, val in_proj_weight,
                        val in_proj_bias, val out_proj_weight, val out_proj_bias,
                        val key_padding_mask, bool causal, int weights_mode) {
  const auto ipw = copy_in<float>(in_proj_weight), ipb = copy_in<float>(in_proj_bias),
             opw = copy_in<float>(out_proj_weight), opb = copy_in<float>(out_proj_bias);
  if (const sf::Status s = check_mha_weights(E, H, ipw, ipb, opw, opb); !s.ok()) return failure(s);
  const sf::MhaWeights w{E, H, ipw.data(), ipb.empty() ? nullptr : ipb.data(), opw.data(),
                         opb.empty() ? nullptr : opb.data()};
  return run_mha(w, query, L, kv, S, key_padding_mask, causal, weights_mode);
}

// Prepared: the weights are copied and packed for the matrix-product kernel once, at load (the
// package's prepareMultiheadAttention; delete() frees them).
class AttentionHandle {
 public:
  val load(int E, int H, val in_proj_weight, val in_proj_bias, val out_proj_weight, val out_proj_bias) {
    ipw_ = copy_in<float>(in_proj_weight), ipb_ = copy_in<float>(in_proj_bias);
    opw_ = copy_in<float>(out_proj_weight), opb_ = copy_in<float>(out_proj_bias);
    if (const sf::Status s = check_mha_weights(E, H, ipw_, ipb_, opw_, opb_); !s.ok()) return failure(s);
    const float* ipb = ipb_.empty() ? nullptr : ipb_.data();
    const float* opb = opb_.empty() ? nullptr : opb_.data();
    sf::kernels::pack_weights(ipw_.data(), 3 * E, E, E, ipb, &in_packed_);
    sf::kernels::pack_weights(opw_.data(), E, E, E, opb, &out_packed_);
    w_ = {E, H, ipw_.data(), ipb, opw_.data(), opb, &in_packed_, &out_packed_};
    return ok_object();
  }

  val forward(val query, int L, val kv, int S, val key_padding_mask, bool causal, int weights_mode) const {
    return run_mha(w_, query, L, kv, S, key_padding_mask, causal, weights_mode);
  }

 private:
  std::vector<float> ipw_, ipb_, opw_, opb_;
  sf::kernels::PackedWeights in_packed_, out_packed_;
  sf::MhaWeights w_;
};

std::string simd_arch() { return sf::kernels::simd_arch_name(); }

// Bytes currently malloc'ed inside the module: what the memory tests watch for leaks.
double heap_used() { return static_cast<double>(mallinfo().uordblks); }

// Streams arrive normalised by web/src/window.js: typed arrays only (null samples already NaN),
// sensor ids integers in [0, 2^31 - 1].
sf::Window window_from_js(const val& w) {
  sf::Window window;
  const val ref = w["referenceTime"];
  if (!ref.isUndefined() && !ref.isNull()) {
    window.has_reference_time = true;
    window.reference_time = ref.as<double>();
  }
  const val streams = w["streams"];
  const int n = streams["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const val s = streams[i];
    sf::StreamInput in;
    in.sensor = s["sensor"].as<int>();
    in.modality = s["modality"].as<std::string>();
    in.placement = s["placement"].as<std::string>();
    in.rate_hz = s["rateHz"].as<double>();
    in.start_time = s["startTime"].as<double>();
    in.samples = copy_in<float>(s["samples"]);
    in.timestamps = copy_in<double>(s["timestamps"]);
    in.has_timestamps = !s["timestamps"].isNull() && !s["timestamps"].isUndefined();
    in.present = copy_in<std::uint8_t>(s["present"]);
    window.streams.push_back(std::move(in));
  }
  return window;
}

// Per token: the input stream's index, modality index, time and presence (forward and stream push).
void set_token_labels(const sf::Tokens& t, val* out) {
  out->set("tokenStream", copy_out(t.stream));
  out->set("tokenModality", copy_out(t.modality));
  out->set("tokenTime", copy_out(t.time));
  out->set("tokenPresent", copy_out(t.present));
}

// A model instance owned by JavaScript (delete() frees it; the package wraps that in dispose()).
class ModelHandle {
 public:
  SF_GLUE_MINSIZE val load(val bytes) {
    if (const sf::Status c = check_copy(length_of(bytes), "the model file"); !c.ok()) return failure(c);
    const sf::Status s = sf::Model::load(copy_in<std::uint8_t>(bytes), &model_);
    return s.ok() ? ok_object() : failure(s);
  }

  std::string config_json() const { return model_.config_json(); }

  // The parsed config as the model uses it (defaults filled in, float fields as float32), in the
  // package's camelCase: web/src/model.js freezes it as model.info (web/index.d.ts, ModelInfo).
  SF_GLUE_MINSIZE val info() const {
    const sf::ModelConfig& c = model_.config();
    const auto strings = [](const std::vector<std::string>& v) {
      val a = val::array();
      for (size_t i = 0; i < v.size(); ++i) a.set(i, v[i]);
      return a;
    };
    val modalities = val::array();
    for (size_t i = 0; i < c.modalities.size(); ++i) {
      val m = val::object();
      m.set("name", c.modalities[i].name);
      m.set("patchLen", c.modalities[i].patch_len);
      m.set("mean", c.modalities[i].mean);
      m.set("std", c.modalities[i].std);
      modalities.set(i, m);
    }
    val edges = val::array();
    for (size_t i = 0; i < c.rate_bucket_edges_hz.size(); ++i) edges.set(i, c.rate_bucket_edges_hz[i]);
    val inputs = val::object();
    inputs.set("modalities", modalities);
    inputs.set("placements", strings(c.placements));
    inputs.set("sensorCount", c.n_sensors);
    inputs.set("rateBucketEdgesHz", edges);
    inputs.set("minPresentFraction", c.min_present_fraction);
    val outputs = val::object();
    outputs.set("embeddingSize", c.d_model);
    outputs.set("headSize", c.n_outputs);
    outputs.set("labels", c.labels.empty() ? val::null() : strings(c.labels));
    // Doubles, exact below 2^53 (the model's limit is 2^28 floats).
    val size = val::object();
    size.set("parameters", static_cast<double>(model_.parameter_count()));
    size.set("weightBytes", static_cast<double>(model_.weight_bytes()));
    val r = val::object();
    r.set("format", std::string("sensorformer-1"));
    r.set("inputs", inputs);
    r.set("outputs", outputs);
    r.set("layout", std::string(sf::layout_name(c.layout)));
    r.set("causal", c.causal);
    // null: unlimited (the config's key absent or null).
    r.set("attentionLookbackS", c.has_lookback() ? val(c.attention_lookback_s) : val::null());
    r.set("dModel", c.d_model);
    r.set("nHeads", c.n_heads);
    r.set("nLayers", c.n_layers);
    r.set("dimFeedforward", c.dim_feedforward);
    r.set("activation", std::string(c.activation == sf::Activation::kGelu ? "gelu" : "relu"));
    r.set("normFirst", c.norm_first);
    r.set("finalNorm", c.final_norm);
    r.set("layerNormEps", c.layer_norm_eps);
    r.set("timeBin", c.time_bin);
    r.set("maxPeriod", c.max_period);
    r.set("size", size);
    return r;
  }

  // options: { attention: boolean, maxGflop?: number } (checked by web/src/model.js).
  val forward(val window, val opts) const {
    sf::ForwardOptions options;
    options.attention_maps = opts["attention"].as<bool>();
    const val max_gflop = opts["maxGflop"];
    if (!max_gflop.isUndefined() && !max_gflop.isNull()) options.max_gflop = max_gflop.as<double>();
    sf::ForwardResult r;
    if (const sf::Status c = check_stream_copies(window["streams"], "the window's arrays"); !c.ok()) return failure(c);
    const sf::Status s = model_.forward(window_from_js(window), options, &r);
    if (!s.ok()) return failure(s);
    const sf::Tokens& t = r.tokens;
    val out = ok_object();
    out.set("embeddings", copy_out(r.embeddings));
    out.set("pooled", copy_out(r.pooled));
    out.set("head", copy_out(r.head));
    set_token_labels(t, &out);
    out.set("referenceTime", t.reference_time);
    val maps = val::array();
    for (size_t i = 0; i < r.attention.size(); ++i) {
      const sf::AttentionMap& m = r.attention[i];
      val map = val::object();
      map.set("layer", m.layer);
      map.set("block", std::string(sf::block_name(m.block)));
      map.set("group", m.group);
      map.set("tokens", copy_out(m.tokens));
      map.set("weights", copy_out(m.weights));
      maps.set(i, map);
    }
    out.set("attention", maps);
    return out;
  }

 const sf::Model& model() const { return model_; }

 private:
  sf::Model model_;
};

// A chunk as normalised by web/src/stream.js: streams[i] null (nothing new) or an object whose
// descriptor fields are present iff `modality` is a string; typed arrays for the data.
SF_GLUE_MINSIZE sf::Chunk chunk_from_js(const val& chunk) {
  sf::Chunk c;
  const val streams = chunk["streams"];
  const int n = streams["length"].as<int>();
  c.streams.resize(n);
  c.skip.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const val s = streams[i];
    if (!given(s)) {
      c.skip[i] = 1;
      continue;
    }
    sf::ChunkStream& in = c.streams[i];
    in.has_descriptor = s["modality"].isString();
    if (in.has_descriptor) {
      in.sensor = s["sensor"].as<int>();
      in.modality = s["modality"].as<std::string>();
      in.placement = s["placement"].as<std::string>();
      in.rate_hz = given(s["rateHz"]) ? s["rateHz"].as<double>() : 0.0;
      in.event_driven = !given(s["rateHz"]);
    }
    in.has_start_time = given(s["startTime"]);
    if (in.has_start_time) in.start_time = s["startTime"].as<double>();
    in.has_until = given(s["until"]);
    if (in.has_until) in.until = s["until"].as<double>();
    in.timestamps = copy_in<double>(s["timestamps"]);
    if (given(s["timestamps"]) && !in.has_descriptor) in.event_driven = true;
    in.samples = copy_in<float>(s["samples"]);
    in.present = copy_in<std::uint8_t>(s["present"]);
  }
  return c;
}

// A streaming session over a ModelHandle (web/src/stream.js; the JS side disposes sessions before
// their model, since the core keeps a pointer to it).
class StreamHandle {
 public:
  // options: { referenceTime: number|null, attention: boolean, historySeconds: number,
  //            eventTimeoutSeconds: number, maxGflop: number }
  SF_GLUE_MINSIZE val start(const ModelHandle& model, val opts) {
    sf::StreamOptions o;
    if (given(opts["referenceTime"])) {
      o.has_reference_time = true;
      o.reference_time = opts["referenceTime"].as<double>();
    }
    o.attention_rows = opts["attention"].as<bool>();
    if (given(opts["historySeconds"])) o.history_s = opts["historySeconds"].as<double>();
    if (given(opts["eventTimeoutSeconds"])) o.event_timeout_s = opts["eventTimeoutSeconds"].as<double>();
    if (given(opts["maxGflop"])) o.max_gflop = opts["maxGflop"].as<double>();
    const sf::Status s = sf::StreamSession::create(model.model(), o, &session_);
    return s.ok() ? ok_object() : failure(s);
  }

  SF_GLUE_MINSIZE val push(val chunk) {
    sf::StreamUpdate u;
    if (const sf::Status c = check_stream_copies(chunk["streams"], "the chunk's arrays"); !c.ok()) return failure(c);
    const sf::Status s = session_.push(chunk_from_js(chunk), &u);
    if (!s.ok()) return failure(s);
    const sf::Tokens& t = u.tokens;
    val out = ok_object();
    set_token_labels(t, &out);
    out.set("tokenIndex", copy_out(std::vector<double>(u.index.begin(), u.index.end())));
    out.set("embeddings", copy_out(u.embeddings));
    out.set("frontier", u.frontier);
    out.set("referenceTime", reference_time());
    val rows = val::array();
    for (size_t i = 0; i < u.attention.size(); ++i) {
      const sf::AttentionRow& a = u.attention[i];
      val r = val::object();
      r.set("query", static_cast<double>(a.query));
      r.set("layer", a.layer);
      r.set("block", std::string(sf::block_name(a.block)));
      r.set("keys", copy_out(std::vector<double>(a.keys.begin(), a.keys.end())));
      r.set("keyTimes", copy_out(a.key_times));
      r.set("weights", copy_out(a.weights));
      rows.set(i, r);
    }
    out.set("attention", rows);
    // Skipped runs flat, (stream, from, to, patches) each: web/src/stream.js makes the objects.
    std::vector<double> skipped(4 * u.skipped.size());
    for (size_t i = 0; i < u.skipped.size(); ++i) {
      const sf::SkippedRun& k = u.skipped[i];
      skipped[4 * i] = k.stream, skipped[4 * i + 1] = k.from, skipped[4 * i + 2] = k.to, skipped[4 * i + 3] = static_cast<double>(k.patches);
    }
    out.set("skipped", copy_out(skipped));
    return out;
  }

  SF_GLUE_MINSIZE val pooled(double seconds) const {
    sf::PooledResult r;
    const sf::Status s = session_.pooled(seconds, &r);
    if (!s.ok()) return failure(s);
    val out = ok_object();
    out.set("pooled", copy_out(r.pooled));
    out.set("head", copy_out(r.head));
    out.set("presentTokens", r.present_tokens);
    out.set("from", r.from);
    out.set("to", r.to);
    return out;
  }

  double frontier() const { return session_.frontier(); }
  val reference_time() const { return session_.has_reference_time() ? val(session_.reference_time()) : val::null(); }
  double memory_bytes() const { return static_cast<double>(session_.memory_bytes()); }
  double final_tokens() const { return static_cast<double>(session_.final_tokens()); }

 private:
  sf::StreamSession session_;
};

// Threads of every forward in this module instance (core/parallel.hpp): the loader sets it once
// after the load, to numThreads, and the threaded build's pool has numThreads - 1 Workers ready.
SF_GLUE_MINSIZE val set_threads(int n) {
  const sf::Status s = sf::parallel::set_threads(n);
  return s.ok() ? ok_object() : failure(s);
}
int threads() { return sf::parallel::threads(); }

}  // namespace

EMSCRIPTEN_BINDINGS(sensorformer) {
  emscripten::function("setThreads", &set_threads);
  emscripten::function("threads", &threads);
  emscripten::function("timeEncoding", &time_encoding);
  emscripten::function("multiheadAttention", &multihead_attention);
  emscripten::function("simdArch", &simd_arch);
  emscripten::function("heapUsed", &heap_used);
  emscripten::class_<AttentionHandle>("MultiheadAttention")
      .constructor<>()
      .function("load", &AttentionHandle::load)
      .function("forward", &AttentionHandle::forward);
  emscripten::class_<ModelHandle>("Model")
      .constructor<>()
      .function("load", &ModelHandle::load)
      .function("configJson", &ModelHandle::config_json)
      .function("info", &ModelHandle::info)
      .function("forward", &ModelHandle::forward);
  emscripten::class_<StreamHandle>("StreamSession")
      .constructor<>()
      .function("start", &StreamHandle::start)
      .function("push", &StreamHandle::push)
      .function("pooled", &StreamHandle::pooled)
      .function("frontier", &StreamHandle::frontier)
      .function("referenceTime", &StreamHandle::reference_time)
      .function("memoryBytes", &StreamHandle::memory_bytes)
      .function("finalTokens", &StreamHandle::final_tokens);
}
