// Untrusted input: weights files and windows that a careless or hostile user could hand over.
// Each case is a reproducer of a defect seen before the limits existed (an abort from operator new,
// a heap grown to 1.3 GB, a forward running for minutes, NaN outputs that looked like success);
// every one must now be a typed Status, decided before anything large is allocated or computed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attend/multihead_attention.hpp"
#include "core/limits.hpp"
#include "encode/time_encoding.hpp"
#include "model/model.hpp"
#include "model_files.hpp"
#include "testing.hpp"

namespace sf {
namespace {

using sf::testing::AllClose;
using sf::testing::RawTensor;
using sf::testing::RawTensors;
using sf::testing::small_config;
using sf::testing::small_tensors;
using sf::testing::write_safetensors;

constexpr double kT0 = 1764460800.25;

Status load_status(const nlohmann::json& config, const RawTensors& tensors, Model* m = nullptr) {
  Model local;
  return Model::load(write_safetensors(tensors, config.dump()), m ? m : &local);
}

bool mentions(const Status& s, const std::string& what) { return s.message().find(what) != std::string::npos; }

StreamInput ecg(std::vector<float> samples, double start = kT0, double rate = 8.0) {
  StreamInput s;
  s.modality = "ecg";
  s.placement = "chest";
  s.rate_hz = rate;
  s.start_time = start;
  s.samples = std::move(samples);
  return s;
}

StreamInput hr_events(std::vector<double> times, std::vector<float> values) {
  StreamInput s;
  s.modality = "hr";
  s.placement = "chest";
  s.timestamps = std::move(times);
  s.samples = std::move(values);
  return s;
}

// --- weights files ------------------------------------------------------------------------------

TEST(HostileModelFile, HugeLayerCountsStopBeforeAnythingIsAllocated) {
  // The reported file: a valid 2-layer model whose config claims 16,777,216 layers (26 KB). It
  // aborted WebAssembly in operator new while the expected tensor names were listed; 1,000,000
  // grew the heap to 1.3 GB first. Now the config's implied size is checked against the file.
  const auto t = small_tensors(small_config("factorized"));
  for (int layers : {16777216, 1000000, 1024}) {
    auto c = small_config("factorized");
    c["n_layers"] = layers;
    const Status s = load_status(c, t);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << layers << ": " << s.message();
    EXPECT_TRUE(mentions(s, layers > limits::kMaxLayers ? "n_layers" : "implies")) << s.message();
  }
  // Every integer field is bounded, and the message names the field and the range.
  for (const auto& [key, value] : std::vector<std::pair<const char*, long long>>{
           {"d_model", 8194}, {"n_heads", 2048}, {"dim_feedforward", 65537}, {"n_sensors", (1 << 20) + 1},
           {"n_outputs", (1 << 20) + 1}, {"d_model", 1LL << 40}, {"n_layers", -1}}) {
    auto c = small_config("time");
    c[key] = value;
    const Status s = load_status(c, small_tensors(small_config("time")));
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << key;
    EXPECT_TRUE(mentions(s, key) && mentions(s, "must be an integer in")) << s.message();
  }
  auto c = small_config("time");
  c["modalities"][0]["patch_len"] = 65537;
  EXPECT_TRUE(mentions(load_status(c, small_tensors(small_config("time"))), "patch_len"));
  c = small_config("time");
  c["n_layers"] = 18446744073709551615ULL;  // uint64 max: no wrap into a small int
  EXPECT_EQ(load_status(c, small_tensors(small_config("time"))).code(), ErrorCode::kBadFormat);
}

TEST(HostileModelFile, AConfigWhoseTensorsCannotFitIsRefusedByArithmetic) {
  // d_model 8192 with 4 sensors is 32,768 floats in the sensor table alone; the file holds the
  // small model's few KB. Refused by the size check, naming both sizes.
  auto c = small_config("time");
  c["d_model"] = 8192;
  c["n_heads"] = 2;
  const Status s = load_status(c, small_tensors(small_config("time")));
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_TRUE(mentions(s, "parameters") && mentions(s, "bytes of tensors")) << s.message();
}

TEST(HostileModelFile, FloatFieldsMustSurviveFloat32) {
  // Each of these loaded before and made every forward NaN (or Inf).
  const auto t = small_tensors(small_config("channel"));
  const auto mod = [&](const char* key, double v) {
    auto c = small_config("channel");
    c["modalities"][1][key] = v;
    return load_status(c, t);
  };
  for (double sd : {0.0, 1e-300, 1e-45, 1e-39, -1.0, 1e39}) {
    const Status s = mod("std", sd);
    EXPECT_EQ(s.code(), ErrorCode::kBadFormat) << "std " << sd;
    EXPECT_TRUE(mentions(s, "modality \"hr\"") && mentions(s, "std")) << s.message();
  }
  for (double mean : {1e39, -1e39}) EXPECT_EQ(mod("mean", mean).code(), ErrorCode::kBadFormat) << mean;
  EXPECT_TRUE(mod("std", 1e-30).ok()) << "a tiny but normal float32 std is legal";
  const auto top = [&](const char* key, double v) {
    auto c = small_config("channel");
    c[key] = v;
    return load_status(c, t).code();
  };
  EXPECT_EQ(top("layer_norm_eps", 1e-300), ErrorCode::kBadFormat);
  EXPECT_EQ(top("layer_norm_eps", 0.0), ErrorCode::kBadFormat);
  EXPECT_EQ(top("time_bin", 1e-300), ErrorCode::kBadFormat);
  EXPECT_EQ(top("max_period", 1e-300), ErrorCode::kBadFormat);
  EXPECT_EQ(top("max_period", 0.5), ErrorCode::kBadFormat);
  EXPECT_EQ(top("min_present_fraction", 0.0), ErrorCode::kBadFormat);
  auto c = small_config("channel");
  c["placements"] = {"chest", "chest"};
  EXPECT_EQ(load_status(c, t).code(), ErrorCode::kBadFormat) << "duplicate placement";
  c = small_config("channel");
  c["modalities"][0]["name"] = "";
  EXPECT_EQ(load_status(c, t).code(), ErrorCode::kBadFormat) << "empty modality name";
}

TEST(HostileModelFile, NonFiniteWeightsAreRejectedNamingTheTensor) {
  const auto c = small_config("flattened");
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    auto t = small_tensors(c);
    std::memcpy(t["encoder.layers.1.linear2.weight"].bytes.data() + 4 * 5, &bad, 4);
    const Status s = load_status(c, t);
    EXPECT_EQ(s.code(), ErrorCode::kNonFinite);
    EXPECT_TRUE(mentions(s, "encoder.layers.1.linear2.weight") && mentions(s, "element 5")) << s.message();
  }
  // F16 Inf (0x7C00) converts to float32 Inf: caught the same way.
  auto t = small_tensors(c);
  RawTensor& mask = t["tokenizer.mask_token"];
  mask.dtype = "F16";
  mask.bytes.assign(2 * 8, 0);
  mask.bytes[2 * 3 + 1] = 0x7C;
  EXPECT_EQ(load_status(c, t).code(), ErrorCode::kNonFinite);
}

TEST(HostileModelFile, HugeButFiniteWeightsGiveAnErrorNotNaN) {
  // 1e38 everywhere is finite as stored, but the first product overflows float32.
  const auto c = small_config("flattened");
  auto t = small_tensors(c);
  for (auto& [name, raw] : t)
    for (size_t i = 0; i < raw.bytes.size(); i += 4) {
      const float big = 1e38f;
      std::memcpy(raw.bytes.data() + i, &big, 4);
    }
  Model m;
  ASSERT_TRUE(load_status(c, t, &m).ok());
  Window w;
  w.streams.push_back(ecg({1, 2, 3, 4, 5, 6, 7, 8}));
  ForwardResult r;
  const Status s = m.forward(w, {}, &r);
  EXPECT_EQ(s.code(), ErrorCode::kNonFinite) << s.message();
  EXPECT_TRUE(mentions(s, "overflowed float32")) << s.message();
}

// --- the time-encoding table from training -------------------------------------------------------

TEST(TimeEncodingTable, AGivenTableIsUsedAsStored) {
  // A seed-000 module keeps inv_freq as a float32 buffer: 1 / max_period ** (arange(0, d, 2) / d)
  // in float32. The file carries it; the encoding must use those values, not float64 ones.
  const auto c = small_config("time");
  const int half = 4;
  std::vector<float> table(half);
  for (int i = 0; i < half; ++i) table[i] = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 8.0f);
  auto t = small_tensors(c);
  RawTensor inv{"F32", {half}, std::vector<std::uint8_t>(4 * half)};
  std::memcpy(inv.bytes.data(), table.data(), 4 * half);
  t[Model::kInvFreqTensor] = inv;
  Model with, without;
  ASSERT_TRUE(load_status(c, t, &with).ok());
  ASSERT_TRUE(load_status(c, small_tensors(c), &without).ok());
  for (int i = 0; i < half; ++i) EXPECT_EQ(with.inv_freq()[i], static_cast<double>(table[i]));
  // Independent reference: the float64 formula over the given table, a day from the reference.
  const double times[] = {0.0, 3600.0, 86400.0 - 0.37};
  std::vector<float> got(3 * 8), want(3 * 8);
  ASSERT_TRUE(encode_time({8, 10000.0, with.inv_freq().data()}, times, 3, 0.0, got.data()).ok());
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < half; ++i) {
      want[r * 8 + i] = static_cast<float>(std::sin(times[r] * static_cast<double>(table[i])));
      want[r * 8 + half + i] = static_cast<float>(std::cos(times[r] * static_cast<double>(table[i])));
    }
  EXPECT_TRUE(AllClose(got.data(), want.data(), got.size(), 2e-7, 0, "encoding with the stored table"));
  // ... and it is not the computed table: a day out the float32 rounding moves the angle by
  // 86400 x (table - exact), 1e-3 or more for some component.
  std::vector<float> computed(3 * 8);
  ASSERT_TRUE(encode_time({8, 10000.0, without.inv_freq().data()}, times, 3, 0.0, computed.data()).ok());
  double moved = 0;
  for (size_t i = 0; i < got.size(); ++i) moved = std::max(moved, std::fabs(static_cast<double>(got[i]) - computed[i]));
  EXPECT_GT(moved, 1e-4) << "the stored table made no difference";
}

TEST(TimeEncodingTable, BadTablesAreRejected) {
  const auto c = small_config("time");
  const auto with = [&](RawTensor inv) {
    auto t = small_tensors(c);
    t[Model::kInvFreqTensor] = std::move(inv);
    return load_status(c, t);
  };
  std::vector<std::uint8_t> four(16, 0);
  EXPECT_EQ(with({"F32", {3}, std::vector<std::uint8_t>(12, 0)}).code(), ErrorCode::kBadFormat);
  EXPECT_EQ(with({"F16", {4}, std::vector<std::uint8_t>(8, 0)}).code(), ErrorCode::kUnsupportedDtype);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(four.data() + 4, &nan, 4);
  const Status s = with({"F32", {4}, four});
  EXPECT_EQ(s.code(), ErrorCode::kBadFormat);
  EXPECT_TRUE(mentions(s, "time_encoding.inv_freq")) << s.message();
}

// --- windows ------------------------------------------------------------------------------------

Model small_model(const std::string& layout) {
  Model m;
  const auto c = small_config(layout);
  EXPECT_TRUE(load_status(c, small_tensors(c), &m).ok());
  return m;
}

TEST(HostileWindow, ComputeIsEstimatedAndLimitedBeforeRunning) {
  const Model m = small_model("flattened");
  // Hand count for 3 ecg tokens (P 4) and d 8, ff 12, 2 layers, one group of 3:
  //   embedding 3 x 4 x 8 = 96; per layer 3 x (4 x 64 + 2 x 8 x 12) + 2 x 8 x 9 = 1488
  //   -> 2 x (96 + 2 x 1488) = 6144 FLOP.
  Window w;
  w.streams.push_back(ecg(std::vector<float>(12, 1.0f)));
  Tokens t;
  ASSERT_TRUE(tokenize(m.config(), w, &t).ok());
  std::vector<TokenGroups> groups{group_tokens(t, AttentionBlock::kFlattened, 1.0)};
  EXPECT_DOUBLE_EQ(m.forward_gflop(t, groups), 6144e-9);

  // The report: a 1e6-sample ECG stream blocked the thread for minutes. 250,000 tokens here.
  Window big;
  big.streams.push_back(ecg(std::vector<float>(1000000, 1.0f), kT0, 130.0));
  ForwardResult r;
  Status s = m.forward(big, {}, &r);
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(mentions(s, "250000 tokens") && mentions(s, "limit of 10 GFLOP") && mentions(s, "flattened")) << s.message();
  // The limit is the caller's: a small one refuses a small window, +Inf lifts it.
  ForwardOptions tight;
  tight.max_gflop = 1e-6;
  EXPECT_EQ(m.forward(w, tight, &r).code(), ErrorCode::kResourceExhausted);
  ForwardOptions none;
  none.max_gflop = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(m.forward(w, none, &r).ok());
  // 1,000 tokens are far inside the default limit.
  Window medium;
  medium.streams.push_back(ecg(std::vector<float>(4000, 1.0f), kT0, 130.0));
  EXPECT_TRUE(m.forward(medium, {}, &r).ok());
}

TEST(HostileWindow, PatchMemoryIsBoundedBeforeTokenizing) {
  // One sample per stream but P = 65536: 256 KiB of patch values each; 4100 streams ask for 1 GiB.
  auto c = small_config("time");
  c["modalities"][0]["patch_len"] = 65536;
  Model m;
  ASSERT_TRUE(load_status(c, small_tensors(c), &m).ok());
  Window w;
  for (int i = 0; i < 4100; ++i) w.streams.push_back(ecg({1.0f}));
  ForwardResult r;
  const Status s = m.forward(w, {}, &r);
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted) << s.message();
  EXPECT_TRUE(mentions(s, "patches")) << s.message();
}

TEST(HostileWindow, BudgetsShrinkToWhatTheHeapHasLeft) {
#ifdef __EMSCRIPTEN__
  // The WebAssembly heap's ceiling (2 GiB) is below the budgets' sum: a large buffer's budget is
  // also what the heap has left when it is allocated. With 1.2 GiB held elsewhere, a window whose
  // patches (960 MiB: 16 Mi samples in 4-sample patches, 240 bytes each with labels and
  // grouping) fit the 1 GiB budget is refused at its patches, naming the smaller limit; without
  // it the same window passes that check (and is refused later, for its working memory).
  const Model m = small_model("flattened");
  Window w;
  w.streams.push_back(ecg(std::vector<float>(std::size_t(16) << 20, 1.0f), kT0, 130.0));
  ForwardResult r;
  const Status free_heap = m.forward(w, {}, &r);
  EXPECT_EQ(free_heap.code(), ErrorCode::kResourceExhausted);
  EXPECT_FALSE(mentions(free_heap, "patches")) << free_heap.message();
  const std::size_t before = limits::budget(limits::kMaxWorkBytes);
  std::vector<char> held(std::size_t(1200) << 20, 1);
  const std::size_t during = limits::budget(limits::kMaxWorkBytes);
  EXPECT_EQ(before, limits::kMaxWorkBytes);
  EXPECT_LE(during, (std::size_t(2048 - 1200) << 20) - limits::kHeapMarginBytes);
  EXPECT_LE(limits::budget(limits::kMaxWorkBytes, double(std::size_t(256) << 20)), during - (std::size_t(256) << 20));
  const Status held_heap = m.forward(w, {}, &r);
  EXPECT_EQ(held_heap.code(), ErrorCode::kResourceExhausted);
  EXPECT_TRUE(mentions(held_heap, "patches would take 960 MiB") && !mentions(held_heap, "limit 1024 MiB")) << held_heap.message();
  EXPECT_EQ(held[held.size() - 1], 1);
#else
  // Natively the operating system decides: the budgets as they are.
  EXPECT_EQ(limits::budget(limits::kMaxWorkBytes), limits::kMaxWorkBytes);
  EXPECT_EQ(limits::budget(limits::kMaxWorkBytes, 1e12), limits::kMaxWorkBytes);
#endif
}

TEST(HostileWindow, TimesFarFromTheReferenceAreNonFinite) {
  const Model m = small_model("flattened");
  ForwardResult r;
  Window w;  // the report: event timestamps [-1.7e308, 1.7e308] gave all-NaN outputs, exit code 0
  w.streams.push_back(hr_events({-1.7e308, 0.0, 1.7e308}, {60, 61, 62}));  // hr: P = 2, 2 tokens
  Status s = m.forward(w, {}, &r);
  EXPECT_EQ(s.code(), ErrorCode::kNonFinite) << s.message();
  EXPECT_TRUE(mentions(s, "stream 0")) << s.message();
  Window far;  // referenceTime 1e308 with epoch-second data
  far.streams.push_back(ecg({1, 2, 3, 4}));
  far.has_reference_time = true;
  far.reference_time = 1e308;
  EXPECT_EQ(m.forward(far, {}, &r).code(), ErrorCode::kNonFinite);
  far.reference_time = kT0 - 1e13;  // finite, but beyond 1e12 s
  EXPECT_EQ(m.forward(far, {}, &r).code(), ErrorCode::kNonFinite);
  far.reference_time = 0.0;  // epoch seconds against 0: the seeds' absolute formula, allowed
  EXPECT_TRUE(m.forward(far, {}, &r).ok());
  // The kernel-level API refuses the same, and angles from a tiny max_period.
  const double t[] = {1.7e308, -1.7e308};
  std::vector<float> out(2 * 8);
  EXPECT_EQ(encode_time({8, 10000.0}, t, 2, 0.0, out.data()).code(), ErrorCode::kNonFinite);
  const double one[] = {10.0};
  EXPECT_EQ(encode_time({8, 1e-300}, one, 1, 0.0, out.data()).code(), ErrorCode::kNonFinite);
}

TEST(HostileWindow, InfiniteSamplesAndImpossibleStreamsAreErrors) {
  const Model m = small_model("time");
  ForwardResult r;
  for (float v : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    Window w;
    w.streams.push_back(ecg({1, 2, v, 4}));
    const Status s = m.forward(w, {}, &r);
    EXPECT_EQ(s.code(), ErrorCode::kNonFinite);
    EXPECT_TRUE(mentions(s, "sample 2")) << s.message();
  }
  Window empty;  // an empty regular stream with rate -1 was accepted
  empty.streams.push_back(ecg({}, kT0, -1.0));
  EXPECT_EQ(m.forward(empty, {}, &r).code(), ErrorCode::kInvalidArgument);
  // A finite sample whose normalised value overflows float32 (std 15 for hr: 3.4e38 / 15 is
  // fine; the ecg std is 1, mean 0, so take a modality with a small std).
  auto c = small_config("time");
  c["modalities"][0]["std"] = 0.01;
  Model tiny;
  ASSERT_TRUE(load_status(c, small_tensors(c), &tiny).ok());
  Window w;
  w.streams.push_back(ecg({3e38f, 1, 2, 3}));
  const Status s = tiny.forward(w, {}, &r);
  EXPECT_EQ(s.code(), ErrorCode::kNonFinite);
  EXPECT_TRUE(mentions(s, "overflows float32")) << s.message();
}

// --- kernels called directly ---------------------------------------------------------------------

TEST(HostileKernelCall, AttentionWeightsHaveTheMapBudget) {
  // The report: core.multiheadAttention at N = 16384 with per-head maps threw a bare number and
  // 'average' aborted. The budget is checked before anything is allocated.
  for (auto mode : {AttentionWeights::kPerHead, AttentionWeights::kAveraged}) {
    const Status s = check_mha_budget(16, 4, 16384, 16384, mode);
    EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
    EXPECT_TRUE(mentions(s, "256 MiB")) << s.message();
  }
  EXPECT_TRUE(check_mha_budget(16, 4, 16384, 16384, AttentionWeights::kNone).ok());
  EXPECT_TRUE(check_mha_budget(16, 4, 1024, 1024, AttentionWeights::kPerHead).ok());
  // multihead_attention applies it itself; no buffer is touched on refusal.
  std::vector<float> w(3 * 16 * 16, 0.01f), o(16 * 16, 0.01f), x(16, 1.0f), out(16);
  const MhaWeights mw{16, 4, w.data(), nullptr, o.data(), nullptr};
  MhaOptions opt;
  opt.weights = AttentionWeights::kPerHead;
  EXPECT_EQ(multihead_attention(mw, x.data(), 16384, x.data(), 16384, opt, out.data(), out.data()).code(),
            ErrorCode::kResourceExhausted);
}

}  // namespace
}  // namespace sf
