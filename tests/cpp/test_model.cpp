// The model without fixtures: tokenizer rules by hand, load errors, and the invariances a user
// relies on (stream order, entirely missing streams, causality, ragged batches), in every layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.hpp"
#include "tokenize/upsample.hpp"
#include "model_files.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using sf::testing::AllClose;
using sf::testing::small_config;
using sf::testing::small_tensors;
using sf::testing::write_safetensors;

constexpr double kT0 = 1764460800.25;  // epoch-scale start: exercises the float64 time path

StreamInput regular(int sensor, const char* modality, const char* placement, double rate, double start,
                    std::vector<float> samples) {
  StreamInput s;
  s.sensor = sensor;
  s.modality = modality;
  s.placement = placement;
  s.rate_hz = rate;
  s.start_time = start;
  s.samples = std::move(samples);
  return s;
}

StreamInput events(int sensor, const char* modality, const char* placement, std::vector<double> times,
                   std::vector<float> values) {
  StreamInput s;
  s.sensor = sensor;
  s.modality = modality;
  s.placement = placement;
  s.timestamps = std::move(times);
  s.samples = std::move(values);
  return s;
}

Model load(const nlohmann::json& config, testing::RawTensors tensors) {
  Model m;
  const Status s = Model::load(write_safetensors(tensors, config.dump()), &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

// --- tokenizer, by hand -------------------------------------------------------------------------

TEST(Tokenizer, RegularAndEventStreamsByHand) {
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(small_config("flattened").dump(), &c).ok());
  Window w;
  // ecg, P = 4: patches [1 2 NaN 4] (3/4 present), [NaN NaN 7 8] (2/4: present, the threshold is
  // inclusive), [9 NaN] + 2 past the end (1/4: absent)
  w.streams.push_back(regular(0, "ecg", "chest", 8.0, kT0 + 1.0, {1, 2, NAN, 4, NAN, NAN, 7, 8, 9, NAN}));
  w.streams.push_back(regular(1, "ecg", "wrist", 8.0, kT0, std::vector<float>(6, NAN)));  // entirely missing
  // hr, P = 2, mean 70 std 15: events (70, 85), (NaN, 100), (55) + 1 past the end (1/2: present)
  w.streams.push_back(events(2, "hr", "chest", {kT0 + 2.0, kT0 + 2.9, kT0 + 3.7, kT0 + 4.8, kT0 + 5.5}, {70, 85, NAN, 100, 55}));
  Tokens t;
  ASSERT_TRUE(tokenize(c, w, &t).ok());
  ASSERT_EQ(t.count, 6);
  EXPECT_EQ(t.stream, (std::vector<int>{0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(t.present, (std::vector<std::uint8_t>{1, 1, 0, 1, 1, 1}));
  const double want_t[] = {kT0 + 1.0, kT0 + 1.5, kT0 + 2.0, kT0 + 2.0, kT0 + 3.7, kT0 + 5.5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.time[i], want_t[i]) << i;  // exact: start + k*P/rate in float64
  EXPECT_EQ(t.reference_time, kT0 + 1.0) << "the entirely missing stream (earlier) must not set it";
  EXPECT_EQ(t.rate_bucket, (std::vector<int>{2, 2, 2, 0, 0, 0}));  // edges {1, 100}: 8 Hz -> 1 + 1; events: 0
  EXPECT_EQ(t.sensor, (std::vector<int>{0, 0, 0, 2, 2, 2}));
  const std::vector<float> ecg(t.values.begin(), t.values.begin() + 12);
  EXPECT_EQ(ecg, (std::vector<float>{1, 2, 0, 4, 0, 0, 7, 8, 0, 0, 0, 0}));  // absent patch: zeros
  const std::vector<float> hr(t.values.begin() + 12, t.values.end());
  EXPECT_EQ(hr, (std::vector<float>{0, 1, 0, 2, -1, 0}));  // (x - 70) / 15, missing -> 0
}

// "missing_events": "leave-out" (a model trained without an event stream's missing events): the
// tokens of the stream with those events are the tokens of the stream without them, by hand;
// "mask" (the default) keeps them as missing values in their patch.
TEST(Tokenizer, LeaveOutMissingEventsDropsThemBeforePatching) {
  auto json = small_config("flattened");
  for (auto& m : json["modalities"])
    if (m["name"] == "hr") m["missing_events"] = "leave-out";
  ModelConfig c, plain;
  ASSERT_TRUE(parse_model_config(json.dump(), &c).ok());
  ASSERT_TRUE(parse_model_config(small_config("flattened").dump(), &plain).ok());
  // hr, P = 2: events 70, NaN, 85, 100, (present flag 0) 99 -> kept 70, 85, 100: patches [70 85],
  // [100 _] (the slot past the end is missing, whatever event 3 of the stream as sent holds)
  StreamInput hr = events(0, "hr", "chest", {kT0, kT0 + 1.0, kT0 + 2.0, kT0 + 3.0, kT0 + 4.0}, {70, NAN, 85, 100, 99});
  hr.present = {1, 1, 1, 1, 0};
  Window w;
  w.streams.push_back(hr);
  Tokens t, m;
  ASSERT_TRUE(tokenize(c, w, &t).ok());
  ASSERT_EQ(t.count, 2);
  EXPECT_EQ(t.time, (std::vector<double>{kT0, kT0 + 3.0}));
  EXPECT_EQ(t.present, (std::vector<std::uint8_t>{1, 1}));
  EXPECT_EQ(t.values, (std::vector<float>{0, 1, 2, 0}));  // (x - 70) / 15; past the end -> 0
  // the default keeps them: patches [70 NaN], [85 100], [(99 absent) _]: the last absent
  ASSERT_TRUE(tokenize(plain, w, &m).ok());
  EXPECT_EQ(m.count, 3);
  EXPECT_EQ(m.time, (std::vector<double>{kT0, kT0 + 2.0, kT0 + 4.0}));
  EXPECT_EQ(m.present, (std::vector<std::uint8_t>{1, 1, 0}));
  // a stream of missing events only emits no tokens, like an entirely missing stream
  Window none;
  none.streams.push_back(events(0, "hr", "chest", {kT0, kT0 + 1.0}, {NAN, NAN}));
  none.streams.push_back(regular(0, "ecg", "chest", 8.0, kT0, {1, 2, 3, 4}));
  ASSERT_TRUE(tokenize(c, none, &t).ok());
  EXPECT_EQ(t.stream, (std::vector<int>{1}));
  // an infinite sample is still an error, dropped modality or not
  Window inf;
  inf.streams.push_back(events(0, "hr", "chest", {kT0}, {INFINITY}));
  EXPECT_EQ(tokenize(c, inf, &t).code(), ErrorCode::kNonFinite);
}

// "upsample_hz": the Keys kernel (a = -1/2) at the points worked out by hand: f = 0 gives the
// input itself, f = 1/2 the weights -1/16, 9/16, 9/16, -1/16 (Keys 1981, eq. 15); a missing tap
// makes the output missing.
TEST(Tokenizer, UpsampleKernelByHand) {
  const float taps[4] = {2.0f, 3.0f, 5.0f, 11.0f};
  EXPECT_EQ(keys_cubic(taps, 0.0), 3.0f);
  EXPECT_EQ(keys_cubic(taps, 0.5), static_cast<float>((-2.0 + 27.0 + 45.0 - 11.0) / 16.0));
  const float gap[4] = {2.0f, 3.0f, NAN, 11.0f};
  EXPECT_TRUE(std::isnan(keys_cubic(gap, 0.0))) << "a missing tap, even one of weight 0";
}

// A 4 Hz ecg stream of a modality with "upsample_hz": 10 is read at 10 Hz: output j at kT0 + j / 10
// from input position u = 0.4 j. Keys' kernel reproduces quadratics exactly, so every output whose
// four inputs exist equals the quadratic at its time (float32 inputs and outputs: 1e-5); by hand,
// outputs 0-2 (u < 1: input -1 does not exist) and 25-29 (floor(u) >= 10: input 12 does not)
// are missing, and the missing input 6 takes out the outputs with floor(u) in 4..7, j = 10..19.
TEST(Tokenizer, UpsampledStreamByHand) {
  auto json = small_config("flattened");
  json["modalities"][0]["upsample_hz"] = 10.0;
  json["rate_bucket_edges_hz"] = {1.0, 5.0, 100.0};
  ModelConfig c, plain;
  ASSERT_TRUE(parse_model_config(json.dump(), &c).ok());
  auto plain_json = json;
  plain_json["modalities"][0].erase("upsample_hz");
  ASSERT_TRUE(parse_model_config(plain_json.dump(), &plain).ok());
  const auto q = [](double t) { return 1.0 + 0.5 * t - 0.25 * t * t; };
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(q(i / 4.0));
  x[6] = NAN;
  Window w;
  w.has_reference_time = true, w.reference_time = kT0;
  w.streams.push_back(regular(0, "ecg", "chest", 4.0, kT0, x));
  Tokens t;
  ASSERT_TRUE(tokenize(c, w, &t).ok());
  ASSERT_EQ(t.count, 8) << "30 outputs (floor(0.4 j) <= 11), patches of 4";
  for (int k = 0; k < 8; ++k) EXPECT_EQ(t.time[k], kT0 + k * 4 / 10.0) << k;
  EXPECT_EQ(t.rate_bucket, std::vector<int>(8, 3)) << "the bucket of 10 Hz (edges 1, 5, 100), not of 4 Hz";
  // present outputs per patch of 4: 1 (j = 3), 4, 2 (j = 8, 9), 0, 0, 4, 1 (j = 24), 0: present
  // from 2 of 4 (min_present_fraction 0.5); an absent patch's values are zeros
  EXPECT_EQ(t.present, (std::vector<std::uint8_t>{0, 1, 1, 0, 0, 1, 0, 0}));
  for (int j = 0; j < 32; ++j) {
    const bool missing = j <= 2 || (j >= 10 && j <= 19) || j >= 25;
    const float v = t.values[j];
    if (missing || !t.present[j / 4])
      EXPECT_EQ(v, 0.0f) << "output " << j << ": missing, or in an absent patch";
    else
      EXPECT_NEAR(v, q(j / 10.0), 1e-5) << "output " << j;
  }
  // at the modality's rate or above, the stream is read as it is
  Window fast;
  fast.streams.push_back(regular(0, "ecg", "chest", 10.0, kT0, {1, 2, 3, 4, 5, 6, 7, 8}));
  Tokens a, b;
  ASSERT_TRUE(tokenize(c, fast, &a).ok());
  ASSERT_TRUE(tokenize(plain, fast, &b).ok());
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.time, b.time);
  // more than 16x: refused, naming the stream and the rates
  Window slow;
  slow.streams.push_back(regular(0, "ecg", "chest", 0.5, kT0, {1, 2, 3, 4}));
  const Status st = tokenize(c, slow, &a);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stream 0: rate_hz 0.5: the model reads modality \"ecg\" at 10 Hz, interpolated from at least 0.625 Hz"), std::string::npos) << st.message();
  // a bad value for the key is a load error
  auto bad = json;
  bad["modalities"][0]["upsample_hz"] = -1;
  EXPECT_EQ(parse_model_config(bad.dump(), &plain).code(), ErrorCode::kBadFormat);
}

TEST(Tokenizer, ErrorsNameTheStreamAndField) {
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(small_config("flattened").dump(), &c).ok());
  const auto code = [&](StreamInput s) {
    Window w;
    w.streams.push_back(regular(0, "ecg", "chest", 8, kT0, {1, 2, 3, 4}));
    w.streams.push_back(std::move(s));
    Tokens t;
    const Status st = tokenize(c, w, &t);
    EXPECT_NE(st.message().find("stream 1"), std::string::npos) << st.message();
    return st.code();
  };
  EXPECT_EQ(code(regular(0, "eeg", "chest", 8, kT0, {1})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(regular(0, "ecg", "ankle", 8, kT0, {1})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(regular(3, "ecg", "chest", 8, kT0, {1})), ErrorCode::kIndexOutOfRange);
  EXPECT_EQ(code(regular(0, "ecg", "chest", 0, kT0, {1})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(regular(0, "ecg", "chest", 8, NAN, {1})), ErrorCode::kNonFinite);
  EXPECT_EQ(code(events(0, "hr", "chest", {2.0, 1.0}, {60, 61})), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(events(0, "hr", "chest", {1.0, NAN}, {60, 61})), ErrorCode::kNonFinite);
  EXPECT_EQ(code(events(0, "hr", "chest", {1.0}, {60, 61})), ErrorCode::kShapeMismatch);
  StreamInput both = events(0, "hr", "chest", {1.0}, {60});
  both.rate_hz = 1.0;
  EXPECT_EQ(code(both), ErrorCode::kInvalidArgument);
  StreamInput mask = regular(0, "ecg", "chest", 8, kT0, {1, 2});
  mask.present = {1};
  EXPECT_EQ(code(mask), ErrorCode::kShapeMismatch);
}

// --- loading ------------------------------------------------------------------------------------

Status load_status(const nlohmann::json& config, const testing::RawTensors& tensors) {
  Model m;
  return Model::load(write_safetensors(tensors, config.dump()), &m);
}

TEST(ModelLoad, ChecksEveryTensorAgainstTheConfig) {
  const auto c = small_config("factorized");
  const auto t = small_tensors(c);
  ASSERT_TRUE(load_status(c, t).ok());

  auto missing = t;
  missing.erase("encoder.channel_layers.1.linear2.bias");
  Status s = load_status(c, missing);
  EXPECT_EQ(s.code(), ErrorCode::kMissingTensor);
  EXPECT_NE(s.message().find("encoder.channel_layers.1.linear2.bias"), std::string::npos) << s.message();

  auto extra = t;
  extra["encoder.layers.7.norm1.weight"] = t.at("encoder.layers.0.norm1.weight");
  s = load_status(c, extra);
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_NE(s.message().find("encoder.layers.7.norm1.weight"), std::string::npos) << s.message();

  auto reshaped = t;
  reshaped["tokenizer.mask_token"].shape = {2, 4};
  s = load_status(c, reshaped);
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_NE(s.message().find("(2, 4)"), std::string::npos) << s.message();

  auto ints = t;
  ints["head.bias"].dtype = "I32";
  EXPECT_EQ(load_status(c, ints).code(), ErrorCode::kUnsupportedDtype);

  // A time-layout config does not use channel layers: the file's extras are an error, not ignored.
  auto time_cfg = c;
  time_cfg["layout"] = "time";
  EXPECT_EQ(load_status(time_cfg, t).code(), ErrorCode::kBadFormat);
}

TEST(ModelLoad, RejectsBadConfigs) {
  const auto t = small_tensors(small_config("time"));
  const auto with = [&](const char* key, nlohmann::json value) {
    auto c = small_config("time");
    c[key] = value;
    return load_status(c, t);
  };
  EXPECT_EQ(with("layout", "diagonal").code(), ErrorCode::kBadFormat);
  EXPECT_NE(with("layout", "diagonal").message().find("layout"), std::string::npos);
  EXPECT_EQ(with("d_model", 7).code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with("n_heads", 3).code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with("activation", "swish").code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with("format", "other").code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with("min_present_fraction", 1.5).code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with("rate_bucket_edges_hz", nlohmann::json::array({10.0, 1.0})).code(), ErrorCode::kBadFormat);
  for (const nlohmann::json& v : {nlohmann::json("drop"), nlohmann::json(true)}) {
    auto c = small_config("time");
    c["modalities"][0]["missing_events"] = v;
    const Status st = load_status(c, t);
    EXPECT_EQ(st.code(), ErrorCode::kBadFormat);
    EXPECT_NE(st.message().find("\"missing_events\" must be \"mask\" or \"leave-out\""), std::string::npos) << st.message();
  }
  Model m;
  EXPECT_EQ(Model::load(write_safetensors(t, "not json"), &m).code(), ErrorCode::kBadFormat);
  std::vector<std::uint8_t> junk = {1, 2, 3};
  EXPECT_EQ(Model::load(junk, &m).code(), ErrorCode::kBadFormat);
}

// "labels" names the head's outputs: exactly n_outputs (2 in small_config) distinct non-empty
// strings, and only with a head. Every other shape is a load error naming "labels".
TEST(ModelLoad, LabelsAreCheckedAgainstTheHead) {
  const auto t = small_tensors(small_config("time"));
  const auto with = [&](nlohmann::json labels) {
    auto c = small_config("time");
    c["labels"] = std::move(labels);
    return load_status(c, t);
  };
  using J = nlohmann::json;
  Model m = load([] { auto c = small_config("time"); c["labels"] = {"rest", "run"}; return c; }(), t);
  EXPECT_EQ(m.config().labels, (std::vector<std::string>{"rest", "run"}));
  EXPECT_TRUE(load(small_config("time"), t).config().labels.empty());
  const std::pair<J, const char*> bad[] = {
      {J::array({"rest"}), "got 1 entries"},
      {J::array({"rest", "walk", "run"}), "got 3 entries"},
      {J::array(), "got 0 entries"},
      {J::array({"rest", "rest"}), "\"rest\" is listed twice"},
      {J::array({"rest", ""}), "entry 1 is \"\""},
      {J::array({"rest", 2}), "entry 1 is 2"},
      {J::array({"rest", nullptr}), "entry 1 is null"},
      {J::array({"rest", std::string(300, 'x')}), "entry 1 is \"xxx"},
      {"rest,run", "got string"},
      {J::object(), "got object"},
  };
  for (const auto& [labels, part] : bad) {
    const Status s = with(labels);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << labels.dump();
    EXPECT_NE(s.message().find("\"labels\" must be an array of 2 distinct names"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  }
  auto headless = small_config("time");
  headless["n_outputs"] = 0;
  headless["labels"] = {"a"};
  const Status s = load_status(headless, small_tensors([&] { auto c = headless; c.erase("labels"); return c; }()));
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_NE(s.message().find("\"labels\" name the head's outputs, but \"n_outputs\" is 0"), std::string::npos) << s.message();
}

// The size the package reports (model.info.size): every tensor's elements, and at least their
// float32 bytes plus the time table (packed copies come on top when they fit the budget).
TEST(ModelLoad, ReportsItsParameterCountAndWeightBytes) {
  for (const char* layout : {"flattened", "factorized"}) {
    const auto c = small_config(layout);
    const auto t = small_tensors(c);
    std::uint64_t elements = 0;
    for (const auto& [name, tensor] : t) elements += tensor.bytes.size() / 4;  // all F32
    const Model m = load(c, t);
    EXPECT_EQ(m.parameter_count(), elements) << layout;
    EXPECT_GE(m.weight_bytes(), 4 * elements + 8 * (c["d_model"].get<std::uint64_t>() / 2)) << layout;
  }
}

TEST(ModelLoad, F16AndBf16AreConvertedOnLoad) {
  const auto c = small_config("flattened");
  auto t = small_tensors(c);
  // Round every tensor to bf16 (keep the top 16 bits) and store it both ways; bf16 -> f32 is
  // exact, so the F32 file of the rounded values must give the identical forward pass.
  testing::RawTensors bf = t, f32 = t;
  for (auto& [name, raw] : t) {
    const size_t n = raw.bytes.size() / 4;
    bf[name].dtype = "BF16";
    bf[name].bytes.resize(2 * n);
    for (size_t i = 0; i < n; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, raw.bytes.data() + 4 * i, 4);
      const std::uint16_t top = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(bf[name].bytes.data() + 2 * i, &top, 2);
      bits = static_cast<std::uint32_t>(top) << 16;
      std::memcpy(f32[name].bytes.data() + 4 * i, &bits, 4);
    }
  }
  const Model a = load(c, bf), b = load(c, f32);
  Window w;
  w.streams.push_back(regular(0, "ecg", "chest", 8, kT0, {1, 2, 3, 4, 5, 6, 7, 8}));
  ForwardResult ra, rb;
  ASSERT_TRUE(a.forward(w, {}, &ra).ok());
  ASSERT_TRUE(b.forward(w, {}, &rb).ok());
  EXPECT_EQ(ra.embeddings, rb.embeddings);
}

// --- invariances, every layout ------------------------------------------------------------------

Window sample_window() {
  Window w;
  std::vector<float> ecg(40), wrist(18);
  for (int i = 0; i < 40; ++i) ecg[i] = std::sin(0.7f * i) + (i % 11 == 3 ? NAN : 0.0f);
  for (int i = 0; i < 18; ++i) wrist[i] = std::cos(0.3f * i);
  for (int i = 8; i < 12; ++i) ecg[i] = NAN;  // one whole absent patch
  w.streams.push_back(regular(0, "ecg", "chest", 8.0, kT0, ecg));
  w.streams.push_back(regular(1, "ecg", "wrist", 4.0, kT0 + 0.3, wrist));
  w.streams.push_back(events(2, "hr", "chest", {kT0 + 0.4, kT0 + 1.3, kT0 + 2.1, kT0 + 2.95, kT0 + 3.8}, {72, 74, 71, NAN, 75}));
  return w;
}

class Layouts : public ::testing::TestWithParam<std::string> {};

// Models are small and float32; reordering sums across tokens moves results by a few ulp.
constexpr double kInvariantAtol = 2e-6;

TEST_P(Layouts, PermutingStreamsKeepsPooledOutput) {
  const auto c = small_config(GetParam());
  const Model m = load(c, small_tensors(c));
  Window w = sample_window();
  ForwardResult a, b;
  ASSERT_TRUE(m.forward(w, {}, &a).ok());
  std::swap(w.streams[0], w.streams[2]);
  std::swap(w.streams[1], w.streams[2]);
  ASSERT_TRUE(m.forward(w, {}, &b).ok());
  EXPECT_TRUE(AllClose(b.pooled.data(), a.pooled.data(), a.pooled.size(), kInvariantAtol, 1e-5, "pooled after permutation"));
  EXPECT_TRUE(AllClose(b.head.data(), a.head.data(), a.head.size(), kInvariantAtol, 1e-5, "head after permutation"));
}

TEST_P(Layouts, EntirelyMissingStreamChangesNothing) {
  const auto c = small_config(GetParam());
  const Model m = load(c, small_tensors(c));
  Window w = sample_window();
  ForwardResult a, b;
  ASSERT_TRUE(m.forward(w, {}, &a).ok());
  w.streams.insert(w.streams.begin() + 1, regular(1, "hr", "wrist", 1.0, kT0 - 5.0, std::vector<float>(9, NAN)));
  ASSERT_TRUE(m.forward(w, {}, &b).ok());
  EXPECT_EQ(a.tokens.count, b.tokens.count) << "an entirely missing stream emits no tokens";
  EXPECT_TRUE(AllClose(b.pooled.data(), a.pooled.data(), a.pooled.size(), 0, 0, "pooled with a missing stream"));
  EXPECT_TRUE(AllClose(b.embeddings.data(), a.embeddings.data(), a.embeddings.size(), 0, 0, "embeddings"));
}

TEST_P(Layouts, CausalOutputsIgnoreLaterData) {
  const auto c = small_config(GetParam(), /*causal=*/true);
  const Model m = load(c, small_tensors(c));
  Window full = sample_window(), early = full;
  early.has_reference_time = full.has_reference_time = true;
  early.reference_time = full.reference_time = kT0;
  early.streams[0].samples.resize(16);  // first 2 s of each stream
  early.streams[1].samples.resize(8);
  early.streams[2].timestamps.resize(2);
  early.streams[2].samples.resize(2);
  ForwardResult a, b;
  ASSERT_TRUE(m.forward(full, {}, &a).ok());
  ASSERT_TRUE(m.forward(early, {}, &b).ok());
  // every token of the truncated window exists in the full one with the same patch content
  int matched = 0;
  for (int i = 0; i < b.tokens.count; ++i)
    for (int j = 0; j < a.tokens.count; ++j)
      if (a.tokens.stream[j] == b.tokens.stream[i] && a.tokens.time[j] == b.tokens.time[i]) {
        ++matched;
        // Not bit-exact: a token's row sits at another offset in a longer group, so the SIMD
        // kernels' row blocks and tails sum it in another order (seen: 2.4e-7 with AVX-512's 16
        // lanes, 0 with AVX2). A causality leak would move it by the size of a weight (~1e-2).
        EXPECT_TRUE(AllClose(b.embeddings.data() + i * 8, a.embeddings.data() + j * 8, 8, kInvariantAtol, 1e-5,
                             "token " + std::to_string(i) + " with and without later data"));
      }
  EXPECT_EQ(matched, b.tokens.count);
  EXPECT_GT(a.tokens.count, b.tokens.count);
}

TEST_P(Layouts, RaggedBatchEqualsWindowsAlone) {
  const auto c = small_config(GetParam());
  const Model m = load(c, small_tensors(c));
  Window w0 = sample_window(), w1, w2 = sample_window();
  w1.streams.push_back(regular(2, "hr", "wrist", 1.0, kT0 + 100, {60, 61, 62, 63, 64}));
  w2.streams.pop_back();
  std::vector<ForwardResult> batch(3), alone(3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.forward(i == 0 ? w0 : i == 1 ? w1 : w2, {}, &batch[i]).ok());
  for (int i = 2; i >= 0; --i) ASSERT_TRUE(m.forward(i == 0 ? w0 : i == 1 ? w1 : w2, {}, &alone[i]).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(batch[i].embeddings, alone[i].embeddings) << "window " << i;
}

TEST_P(Layouts, SimdMatchesScalarTwins) {
  const auto c = small_config(GetParam());
  const Model m = load(c, small_tensors(c));
  ForwardOptions simd, ref;
  simd.attention_maps = ref.attention_maps = true;
  ref.kernels = kernels::KernelSet::kReference;
  ForwardResult a, b;
  ASSERT_TRUE(m.forward(sample_window(), simd, &a).ok());
  ASSERT_TRUE(m.forward(sample_window(), ref, &b).ok());
  EXPECT_TRUE(AllClose(a.embeddings.data(), b.embeddings.data(), a.embeddings.size(), 2e-5, 1e-5, "embeddings"));
  ASSERT_EQ(a.attention.size(), b.attention.size());
  for (size_t i = 0; i < a.attention.size(); ++i)
    ASSERT_TRUE(AllClose(a.attention[i].weights.data(), b.attention[i].weights.data(), a.attention[i].weights.size(), 1e-6, 1e-5, "map"));
}

TEST_P(Layouts, AttentionMapsCoverEveryLayerAndGroup) {
  const auto c = small_config(GetParam());
  const Model m = load(c, small_tensors(c));
  ForwardOptions o;
  o.attention_maps = true;
  ForwardResult r;
  ASSERT_TRUE(m.forward(sample_window(), o, &r).ok());
  const std::string layout = GetParam();
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<int> seen(r.tokens.count, 0);
    for (const auto& map : r.attention) {
      if (map.layer != layer) continue;
      const int g = static_cast<int>(map.tokens.size());
      ASSERT_EQ(map.weights.size(), static_cast<size_t>(2 * g * g));
      for (int t : map.tokens) seen[t]++;
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < g; ++q) {
          double row = 0;
          for (int k = 0; k < g; ++k) {
            const float wgt = map.weights[(h * g + q) * g + k];
            if (!r.tokens.present[map.tokens[k]]) {
              EXPECT_EQ(wgt, 0.0f) << "absent key got weight";
            }
            row += wgt;
          }
          bool any_key = false;
          for (int k = 0; k < g; ++k) any_key |= r.tokens.present[map.tokens[k]] != 0;
          EXPECT_NEAR(row, any_key ? 1.0 : 0.0, 1e-5);
        }
    }
    const int blocks = layout == "factorized" ? 2 : 1;
    for (int t = 0; t < r.tokens.count; ++t) EXPECT_EQ(seen[t], blocks) << "token " << t << " layer " << layer;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Layouts, ::testing::Values("flattened", "time", "channel", "factorized"));

}  // namespace
}  // namespace sf
