// attention_lookback_s (docs/model.md, "Encoder"): config validation, the key ranges, the tiled
// kernel's look-back start against its scalar twin and against attention over the sliced keys,
// and the property streaming relies on: with a look-back W, a token's output depends only on the
// tokens at most B * W older (B = attention blocks per forward), so dropping everything older
// leaves it unchanged. The PyTorch parity of the look-back models is in test_model_parity.cpp
// (fixtures *_lookback).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

#include "attend/layout.hpp"
#include "kernels/attention.hpp"
#include "model/config.hpp"
#include "model/model.hpp"
#include "model_files.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using nlohmann::json;

std::string config_text(const std::string& layout, bool causal, const json& lookback) {
  json c = testing::small_config(layout, causal);
  c["attention_lookback_s"] = lookback;
  return c.dump();
}

TEST(Lookback, ConfigAcceptsPositiveFiniteSecondsOrNull) {
  ModelConfig c;
  ASSERT_TRUE(parse_model_config(config_text("flattened", true, 2.5), &c).ok());
  EXPECT_EQ(c.attention_lookback_s, 2.5);
  EXPECT_TRUE(c.has_lookback());
  ASSERT_TRUE(parse_model_config(config_text("time", true, nullptr), &c).ok());
  EXPECT_FALSE(c.has_lookback()) << "null = unlimited";
  ASSERT_TRUE(parse_model_config(testing::small_config("channel", true).dump(), &c).ok());
  EXPECT_FALSE(c.has_lookback()) << "absent = unlimited";
}

TEST(Lookback, ConfigRefusesBadValuesNamingTheKey) {
  for (const json& bad : {json(0.0), json(-1.0), json(-0.0), json("2"), json(true), json::array({1.0}), json::object()}) {
    ModelConfig c;
    const Status s = parse_model_config(config_text("flattened", true, bad), &c);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << bad.dump();
    EXPECT_NE(s.message().find("attention_lookback_s"), std::string::npos) << s.message();
  }
  // Numbers past float64 and NaN are not JSON the reader accepts: BAD_FORMAT all the same.
  for (const char* raw : {"1e999", "-1e999", "NaN"}) {
    std::string text = config_text("flattened", true, 12345.0);
    text.replace(text.find("12345.0"), 7, raw);
    ModelConfig c;
    EXPECT_EQ(parse_model_config(text, &c).code(), ErrorCode::kBadFormat) << raw;
  }
}

TEST(Lookback, NonCausalConfigWithLookbackIsRefusedNamingBothKeys) {
  for (const char* layout : {"flattened", "time", "channel", "factorized"}) {
    ModelConfig c;
    const Status s = parse_model_config(config_text(layout, false, 1.0), &c);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << layout;
    EXPECT_NE(s.message().find("attention_lookback_s"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("causal"), std::string::npos) << s.message();
  }
}

// Hand-computed: W = 1 keeps keys with t_i - t_j <= 1 (closed at both ends, ties included).
TEST(Lookback, KeyRangesByHand) {
  const std::vector<double> t = {0.0, 0.5, 1.0, 1.0, 2.0, 3.5};
  EXPECT_EQ(time_lookback_starts(t, 1.0), (std::vector<int>{0, 0, 0, 0, 2, 5}));
  EXPECT_EQ(time_causal_limits(t), (std::vector<int>{1, 2, 4, 4, 5, 6}));
  // W below every gap: only the query itself and its equal-time peers.
  EXPECT_EQ(time_lookback_starts(t, 1e-9), (std::vector<int>{0, 1, 2, 2, 4, 5}));
  EXPECT_EQ(time_lookback_starts({}, 1.0), std::vector<int>{});
}

// The tiled kernel with key ranges [start, limit) against (a) its scalar twin and (b) the twin run
// on the sliced keys [start, limit) of each query with no range at all: an independent definition
// of the look-back. Shapes span several 64-key tiles, Dh a lane multiple or not, with padding.
TEST(Lookback, KernelKeyStartMatchesTwinAndSlicedKeys) {
  std::mt19937 rng(12);
  for (const auto& [L, Dh] : std::vector<std::pair<int, int>>{{1, 16}, {7, 5}, {70, 8}, {200, 16}, {300, 12}}) {
    const int S = L, ld = Dh + 3;
    const auto q = testing::random_floats(static_cast<size_t>(S) * ld, 100 + L, -2, 2);
    const auto k = testing::random_floats(static_cast<size_t>(S) * ld, 200 + L, -2, 2);
    const auto v = testing::random_floats(static_cast<size_t>(S) * ld, 300 + L);
    std::vector<std::uint8_t> ignore(S);
    for (int j = 0; j < S; ++j) ignore[j] = rng() % 7 == 0;
    // Time-sorted keys with a look-back: limits non-decreasing, starts non-decreasing, start <= limit.
    std::vector<int> limit(L), start(L);
    int lo = 0;
    for (int i = 0; i < L; ++i) {
      limit[i] = i + 1;
      lo = std::min(i, lo + static_cast<int>(rng() % 3));  // some rows look back 0 keys (start = i)
      start[i] = i > 90 && i < 140 ? i + 1 : lo;  // also rows with an empty range
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
    std::vector<float> out(static_cast<size_t>(L) * ld), w(static_cast<size_t>(L) * S), ref(out.size()),
        wref(w.size()), sliced(out.size());
    kernels::attention_head(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(), limit.data(),
                            out.data(), ld, w.data(), nullptr, start.data());
    kernels::attention_head_ref(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(),
                                limit.data(), ref.data(), ld, wref.data(), nullptr, start.data());
    for (int i = 0; i < L; ++i) {
      const int n = std::max(0, limit[i] - start[i]);
      std::vector<float> row(static_cast<size_t>(n) + 1);
      kernels::attention_head_ref(1, n, Dh, scale, q.data() + static_cast<size_t>(i) * ld, ld,
                                  k.data() + static_cast<size_t>(start[i]) * ld, ld,
                                  v.data() + static_cast<size_t>(start[i]) * ld, ld, ignore.data() + start[i], nullptr,
                                  sliced.data() + static_cast<size_t>(i) * ld, ld, row.data());
      for (int j = 0; j < S; ++j) {
        const float want = j >= start[i] && j < limit[i] ? row[j - start[i]] : 0.0f;
        // Weights: 1e-6, a few float32 ulps of a probability (exp2 polynomial <= 1.6 ulp, sums
        // of <= 300 terms in another order).
        ASSERT_NEAR(w[static_cast<size_t>(i) * S + j], want, 1e-6) << "L " << L << " row " << i << " key " << j;
        ASSERT_EQ(wref[static_cast<size_t>(i) * S + j], want) << "the twin is the sliced definition, bit for bit";
        if (j < start[i]) {
          ASSERT_EQ(w[static_cast<size_t>(i) * S + j], 0.0f);
        }
      }
      for (int d = 0; d < Dh; ++d) {
        const size_t o = static_cast<size_t>(i) * ld + d;
        // Outputs are convex combinations of v in [-1, 1]: 1e-5 absolute, as the parity tests.
        ASSERT_NEAR(out[o], sliced[o], 1e-5) << "L " << L << " row " << i;
        ASSERT_NEAR(ref[o], sliced[o], 1e-6) << "L " << L << " row " << i;
      }
    }
    // Without weights the kernel takes the online-softmax path only: the same outputs.
    std::vector<float> out2(out.size());
    kernels::attention_head(L, S, Dh, scale, q.data(), ld, k.data(), ld, v.data(), ld, ignore.data(), limit.data(),
                            out2.data(), ld, nullptr, nullptr, start.data());
    for (int i = 0; i < L; ++i)
      for (int d = 0; d < Dh; ++d) ASSERT_NEAR(out2[static_cast<size_t>(i) * ld + d], sliced[static_cast<size_t>(i) * ld + d], 1e-5);
  }
}

// --- the streaming property, on whole models ------------------------------------------------------

constexpr double kT0 = 1764460800.0 + 12.5;  // all times below are binary fractions: exact in float64

// ~20 s: two regular ECG streams (patch 4 at 32 Hz and 16 Hz: 1/8 s and 1/4 s patches, two patches
// entirely missing -> mask tokens) and event-driven heart rate (patch 2), about 260 tokens.
Window long_window() {
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  StreamInput a;
  a.sensor = 0, a.modality = "ecg", a.placement = "chest", a.rate_hz = 32.0, a.start_time = kT0;
  a.samples = testing::random_floats(640, 5, -2, 2);
  for (int j = 100; j < 108; ++j) a.samples[j] = NAN;  // patches 25, 26 absent
  StreamInput b;
  b.sensor = 1, b.modality = "ecg", b.placement = "wrist", b.rate_hz = 16.0, b.start_time = kT0 + 0.0625;
  b.samples = testing::random_floats(320, 6, -2, 2);
  StreamInput hr;
  hr.sensor = 2, hr.modality = "hr", hr.placement = "chest", hr.has_timestamps = true;
  for (int e = 0; e < 40; ++e) {
    hr.timestamps.push_back(kT0 + 0.5 * e + 0.03125 * (e % 3));
    hr.samples.push_back(70.0f + static_cast<float>(e % 5));
  }
  w.streams = {a, b, hr};
  return w;
}

// Every patch before `cutoff` dropped (whole patches, so later patches keep their samples and
// exact times); the reference time stays.
Window drop_before(const Window& in, double cutoff, const ModelConfig& c) {
  Window w = in;
  for (StreamInput& s : w.streams) {
    const int P = c.modalities[c.modality_index(s.modality)].patch_len;
    const int n = static_cast<int>(s.samples.size());
    int k = 0;
    if (s.event_driven())
      while (k < n && s.timestamps[k] < cutoff) k += P;
    else
      while (k < n && s.start_time + k / s.rate_hz < cutoff) k += P;
    k = std::min(k, n);
    if (s.event_driven()) s.timestamps.erase(s.timestamps.begin(), s.timestamps.begin() + k);
    else s.start_time += k / s.rate_hz;
    s.samples.erase(s.samples.begin(), s.samples.begin() + k);
  }
  return w;
}

Model load(const json& config, const testing::RawTensors& tensors) {
  Model m;
  const Status s = Model::load(testing::write_safetensors(tensors, config.dump()), &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

// max |difference| of the embeddings of tokens at or after `from`, matched by (stream, time);
// `compared` counts them.
double late_token_diff(const ForwardResult& full, const ForwardResult& cut, double from, int d, int* compared) {
  std::map<std::pair<int, double>, int> index;
  for (int i = 0; i < full.tokens.count; ++i) index[{full.tokens.stream[i], full.tokens.time[i]}] = i;
  double worst = 0;
  *compared = 0;
  for (int i = 0; i < cut.tokens.count; ++i) {
    if (cut.tokens.time[i] < from) continue;
    const auto it = index.find({cut.tokens.stream[i], cut.tokens.time[i]});
    EXPECT_NE(it, index.end()) << "token times are exact: every kept token is in the full window";
    if (it == index.end()) continue;
    ++*compared;
    for (int e = 0; e < d; ++e)
      worst = std::max(worst, std::fabs(static_cast<double>(cut.embeddings[static_cast<size_t>(i) * d + e]) -
                                        full.embeddings[static_cast<size_t>(it->second) * d + e]));
  }
  return worst;
}

TEST(Lookback, TokenOutputDependsOnlyOnItsLookbackInEveryLayout) {
  // W per layout. A channel group is one 1 s bin, and bins never see each other: the cut falls
  // mid-bin and 2 W < 0.5 s, so the compared tokens share a bin with dropped ones. W = 1/8 s is
  // also the ECG patch spacing: keys exactly W older sit on the (included) edge.
  const std::vector<std::pair<std::string, double>> layouts = {
      {"flattened", 1.5}, {"time", 1.5}, {"channel", 0.125}, {"factorized", 0.75}};
  for (const auto& [layout, W] : layouts) {
    json cfg = testing::small_config(layout, /*causal=*/true);
    cfg["attention_lookback_s"] = W;
    const testing::RawTensors tensors = testing::small_tensors(cfg, 21);
    const Model model = load(cfg, tensors);
    json unlimited_cfg = cfg;
    unlimited_cfg.erase("attention_lookback_s");
    const Model unlimited = load(unlimited_cfg, tensors);
    // Receptive field: each attention block reaches W further back (the keys' own outputs looked
    // back W in the block before).
    const int blocks = cfg["n_layers"].get<int>() * (layout == "factorized" ? 2 : 1);
    const double cutoff = kT0 + 8.5, from = cutoff + blocks * W;
    const Window full = long_window(), cut = drop_before(full, cutoff, model.config());
    for (const auto kernels : {kernels::KernelSet::kReference, kernels::KernelSet::kSimd}) {
      ForwardOptions o;
      o.kernels = kernels;
      ForwardResult rf, rc, uf, uc;
      ASSERT_TRUE(model.forward(full, o, &rf).ok());
      ASSERT_TRUE(model.forward(cut, o, &rc).ok());
      ASSERT_LT(rc.tokens.count, rf.tokens.count - 50) << "the cut drops a few seconds of tokens";
      int compared = 0;
      const double diff = late_token_diff(rf, rc, from, model.config().d_model, &compared);
      EXPECT_GT(compared, layout == "channel" ? 3 : 60) << layout;
      // The twin adds masked keys as exact zeros, but its products are blocked by group size, so
      // a few float32 ulps move (measured <= 5e-7): 1e-6. The tiled kernel also places the kept
      // keys at other tile offsets in the shorter groups: the parity tolerance, 1e-5.
      EXPECT_LE(diff, kernels == kernels::KernelSet::kReference ? 1e-6 : 1e-5) << layout;
      // Not vacuous: without the look-back, the same cut moves those tokens.
      ASSERT_TRUE(unlimited.forward(full, o, &uf).ok());
      ASSERT_TRUE(unlimited.forward(cut, o, &uc).ok());
      int n = 0;
      EXPECT_GT(late_token_diff(uf, uc, from, model.config().d_model, &n), 1e-3) << layout;
      std::printf("[lookback ] %-10s %s: %d tokens after the cut + %d x W, max|diff| %.2e\n", layout.c_str(),
                  kernels == kernels::KernelSet::kReference ? "twin" : "simd", compared, blocks, diff);
    }
  }
}

// A look-back longer than the window changes nothing: the model equals its causal twin.
TEST(Lookback, LongLookbackEqualsPlainCausal) {
  json cfg = testing::small_config("factorized", true);
  const testing::RawTensors tensors = testing::small_tensors(cfg, 22);
  const Model causal = load(cfg, tensors);
  cfg["attention_lookback_s"] = 1e6;
  const Model lookback = load(cfg, tensors);
  ForwardResult a, b;
  ASSERT_TRUE(causal.forward(long_window(), {}, &a).ok());
  ASSERT_TRUE(lookback.forward(long_window(), {}, &b).ok());
  ASSERT_EQ(a.embeddings, b.embeddings) << "the same keys in the same tiles: bit for bit";
}

}  // namespace
}  // namespace sf
