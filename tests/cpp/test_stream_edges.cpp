// Streaming sessions at the edges live use reaches (docs/model.md "Streaming sessions"): a laptop
// that sleeps for days, a strap that leaves part-way through a patch, a backlog pushed at once,
// pushes past the session's budgets. Each test compares with an independent reference: a plain
// Model::forward of a window built here from what the test sent, a twin session that never saw a
// refused push (bit for bit), counts computed from the stream's grid by hand, or the forward's
// own cost estimate.
//
// Times: start kT0 (epoch seconds + 0.25) and rates 128 / 32 / 4 Hz, so every patch time is an
// exact float64 (multiples of 1/128 s at 1.8e9 s) and a window started at a later grid point
// tokenizes to the same times, to the bit, as the session's grid from kT0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.hpp"
#include "model_files.hpp"
#include "stream/session.hpp"
#include "testing.hpp"

namespace sf {
namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kT0 = 1764460800.0 + 0.25;
constexpr double kDay = 86400.0;
// Embeddings: the session tiles the same float32 sums differently from a forward (test_stream.cpp).
constexpr double kTol = 1e-5;

Model load(const std::string& name) {
  Model m;
  const Status s = Model::load_file(std::string(SF_FIXTURE_DIR) + "/model/" + name + ".safetensors", &m);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return m;
}

ChunkStream regular(int sensor, const std::string& modality, const std::string& placement, double rate, double start,
                    std::vector<float> samples) {
  ChunkStream c;
  c.has_descriptor = true;
  c.sensor = sensor, c.modality = modality, c.placement = placement, c.rate_hz = rate;
  c.has_start_time = true, c.start_time = start;
  c.samples = std::move(samples);
  return c;
}

ChunkStream events(int sensor, const std::string& modality, const std::string& placement, std::vector<double> times,
                   std::vector<float> values) {
  ChunkStream c;
  c.has_descriptor = true;
  c.sensor = sensor, c.modality = modality, c.placement = placement, c.event_driven = true;
  c.timestamps = std::move(times);
  c.samples = std::move(values);
  return c;
}

StreamInput input_of(const ChunkStream& c) {
  StreamInput in;
  in.sensor = c.sensor, in.modality = c.modality, in.placement = c.placement;
  in.rate_hz = c.event_driven ? 0.0 : c.rate_hz;
  in.start_time = c.start_time;
  in.timestamps = c.timestamps;
  in.has_timestamps = c.event_driven;
  in.samples = c.samples;
  in.present = c.present;
  return in;
}

// Appends one push's tokens (labels and embeddings) to `all`, to compare a session's whole output.
void take(StreamUpdate* all, const StreamUpdate& u) {
  all->tokens.count += u.tokens.count;
  all->tokens.stream.insert(all->tokens.stream.end(), u.tokens.stream.begin(), u.tokens.stream.end());
  all->tokens.time.insert(all->tokens.time.end(), u.tokens.time.begin(), u.tokens.time.end());
  all->tokens.present.insert(all->tokens.present.end(), u.tokens.present.begin(), u.tokens.present.end());
  all->embeddings.insert(all->embeddings.end(), u.embeddings.begin(), u.embeddings.end());
}

// Compares every token of `u` for which `want(stream, present)` holds with the forward's row of the
// same stream and time; returns how many were compared (each must find its row).
int compare_with_forward(const Model& m, const Window& w, const StreamUpdate& u,
                         bool (*want)(int stream, bool present), double* max_diff) {
  ForwardResult fr;
  const Status s = m.forward(w, {}, &fr);
  EXPECT_TRUE(s.ok()) << s.message();
  std::map<std::pair<int, double>, int> rows;
  for (int j = 0; j < fr.tokens.count; ++j) rows[{fr.tokens.stream[j], fr.tokens.time[j]}] = j;
  const int d = m.config().d_model;
  int compared = 0;
  for (int i = 0; i < u.tokens.count; ++i) {
    if (!want(u.tokens.stream[i], u.tokens.present[i] != 0)) continue;
    const auto it = rows.find({u.tokens.stream[i], u.tokens.time[i]});
    EXPECT_NE(it, rows.end()) << "no forward row for stream " << u.tokens.stream[i] << " at " << u.tokens.time[i] - kT0;
    if (it == rows.end()) continue;
    const float* a = u.embeddings.data() + static_cast<std::size_t>(i) * d;
    const float* e = fr.embeddings.data() + static_cast<std::size_t>(it->second) * d;
    EXPECT_TRUE(testing::AllClose(a, e, d, kTol, 0.0, "token at " + std::to_string(u.tokens.time[i] - kT0)));
    for (int k = 0; k < d; ++k) *max_diff = std::max(*max_diff, std::fabs(static_cast<double>(a[k]) - e[k]));
    ++compared;
  }
  return compared;
}

// --- a laptop that sleeps --------------------------------------------------------------------------

// ECG 128 Hz (patch 16) and acc_x 32 Hz (patch 8) for 10 s, then nothing until they resume `gap`
// seconds after kT0 + 10 (later startTimes in one push), with a heart-rate event stream whose
// `until` marks the silence. The resuming push emits each regular stream's absent patches for
// kAbsentSpanSeconds after its last present patch, skips the rest (reported with exact counts),
// and its present tokens equal a forward of the resumed data alone (W = 2 s: nothing older is in
// reach, and absent keys are masked). Before: every absent patch of the gap was computed (a 2-day
// gap: 2.1 M tokens; in WebAssembly, an abort at the 2 GiB heap).
void long_gap(double gap) {
  SCOPED_TRACE("gap " + std::to_string(gap) + " s");
  const Model m = load("flattened_lookback");
  ASSERT_EQ(m.config().modalities[0].patch_len, 16);
  ASSERT_EQ(m.config().modalities[1].patch_len, 8);
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
  const std::vector<float> ecg = testing::random_floats(2 * 1280, 5, -2000, 2000);
  const std::vector<float> acc = testing::random_floats(2 * 320, 6, -2, 2);
  std::vector<double> beats;
  std::vector<float> bpm;
  for (int k = 0; k < 10; ++k) beats.push_back(kT0 + 0.5 + k), bpm.push_back(60.0f + k);
  Chunk first;
  first.streams = {regular(0, "ecg", "chest", 128.0, kT0, {ecg.begin(), ecg.begin() + 1280}),
                   regular(1, "acc_x", "wrist", 32.0, kT0, {acc.begin(), acc.begin() + 320}),
                   events(2, "hr", "chest", beats, bpm)};
  first.streams[2].has_until = true, first.streams[2].until = kT0 + 10.0;  // every token of the first 10 s final
  StreamUpdate u;
  ASSERT_TRUE(s.push(first, &u).ok());
  const double resume = kT0 + 10.0 + gap;
  std::vector<double> later_beats;
  std::vector<float> later_bpm;
  for (int k = 0; k < 10; ++k) later_beats.push_back(resume + 0.5 + k), later_bpm.push_back(80.0f - k);
  Chunk back;
  back.streams = {regular(0, "ecg", "chest", 128.0, resume, {ecg.begin() + 1280, ecg.end()}),
                  regular(1, "acc_x", "wrist", 32.0, resume, {acc.begin() + 320, acc.end()}),
                  events(2, "hr", "chest", later_beats, later_bpm)};
  back.streams[2].has_until = true, back.streams[2].until = resume;
  // The reference: the forward of the resumed data alone, at the session's reference time.
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  for (const ChunkStream& c : back.streams) w.streams.push_back(input_of(c));
  // Everything of the resumed data is final once each stream says so.
  back.streams[0].has_until = back.streams[1].has_until = true;
  back.streams[0].until = back.streams[1].until = resume + 10.0;
  back.streams[2].until = resume + 10.0;
  ASSERT_TRUE(s.push(back, &u).ok());

  // By hand, from the grids: ECG's last present patch starts at 9.875 s (patch 79), so patches
  // 80 .. 558 (t < 9.875 + 60) are emitted absent and 559 .. (10 + gap) * 8 - 1 skipped; acc_x's
  // last present patch is at 9.75 s (patch 39): 40 .. 278 emitted, 279 .. (10 + gap) * 4 - 1 skipped.
  const auto resumed_patch = [&](double per_s) { return static_cast<std::int64_t>(std::llround((10.0 + gap) * per_s)); };
  struct Expect {
    int stream;
    std::int64_t first_skipped, resumed;
    double per_s;
  };
  const Expect expect[] = {{0, 559, resumed_patch(8.0), 8.0}, {1, 279, resumed_patch(4.0), 4.0}};
  int absent[2] = {0, 0}, present[2] = {0, 0};
  for (int i = 0; i < u.tokens.count; ++i)
    if (u.tokens.stream[i] < 2) (u.tokens.present[i] ? present : absent)[u.tokens.stream[i]]++;
  for (const Expect& e : expect) {
    const std::int64_t emitted_absent = e.first_skipped - (e.stream == 0 ? 80 : 40);
    const std::int64_t skipped = std::max<std::int64_t>(0, e.resumed - e.first_skipped);
    EXPECT_EQ(absent[e.stream], std::min(emitted_absent, e.resumed - (e.stream == 0 ? 80 : 40))) << "stream " << e.stream;
    EXPECT_EQ(present[e.stream], e.stream == 0 ? 80 : 40) << "stream " << e.stream << ": the resumed 10 s";
    std::int64_t reported = 0;
    for (const SkippedRun& r : u.skipped)
      if (r.stream == e.stream) {
        reported += r.patches;
        EXPECT_EQ(r.from, kT0 + static_cast<double>(e.first_skipped) / e.per_s);
        EXPECT_EQ(r.to, kT0 + static_cast<double>(e.resumed) / e.per_s);
      }
    EXPECT_EQ(reported, skipped) << "stream " << e.stream;
  }
  EXPECT_LT(s.memory_bytes(), std::size_t(2) << 20) << "a session after the gap holds its look-back, not the gap";
  double max_diff = 0;
  const int compared = compare_with_forward(m, w, u, [](int, bool p) { return p; }, &max_diff);
  EXPECT_EQ(compared, 80 + 40 + 5) << "every present token of the resumed data";
  std::printf("[ stream   ] gap %.0f s: %d + %d absent tokens emitted, %zu skipped runs, %d tokens vs forward max|diff| %.2e, "
              "memory %zu B\n",
              gap, absent[0], absent[1], u.skipped.size(), compared, max_diff, s.memory_bytes());
}

TEST(StreamEdges, AnHourGapCostsItsSpanNotItsLength) { long_gap(3600.0); }
TEST(StreamEdges, TwoDayGapInOnePushCostsItsSpanNotItsLength) { long_gap(2 * kDay); }

// The limit of 1e12 s from the reference time: a gap to just inside it is a cheap push too.
TEST(StreamEdges, GapToTheTimeLimitIsCheapAndPastItIsRefused) {
  const Model m = load("flattened_lookback");
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
  Chunk c;
  c.streams = {regular(0, "ecg", "chest", 128.0, kT0, testing::random_floats(160, 1, -1000, 1000))};
  StreamUpdate u;
  ASSERT_TRUE(s.push(c, &u).ok());
  Chunk far;
  far.streams.resize(1);
  far.streams[0].has_until = true;
  far.streams[0].until = kT0 + 2e12;
  EXPECT_EQ(s.push(far, &u).code(), ErrorCode::kNonFinite);
  far.streams[0].until = kT0 + 0.9e12;
  ASSERT_TRUE(s.push(far, &u).ok());
  EXPECT_LE(u.tokens.count, 481) << "at most the span's absent patches";
  ASSERT_EQ(u.skipped.size(), 1u);
  EXPECT_GT(u.skipped[0].patches, std::int64_t(7e12)) << "0.9e12 s at 8 patches a second, counted";
  EXPECT_GT(s.frontier(), kT0 + 0.8e12);
}

// The session's reference time is its first chunk's earliest time; one past the absolute limit
// (1e15 s) is refused like any other time instead of becoming the reference (from which every
// later check was relative, and the channel bins overflowed int64: found by fuzz_stream).
TEST(StreamEdges, FirstTimePastTheAbsoluteLimitIsRefusedNotTakenAsReference) {
  const Model m = load("channel_lookback");
  for (double first : {1e300, -1e300, 2e15}) {
    StreamSession s;
    ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
    Chunk c;
    c.streams = {events(2, "hr", "chest", {first, first + 1.0}, {60.0f, 61.0f})};
    StreamUpdate u;
    const Status st = s.push(c, &u);
    EXPECT_EQ(st.code(), ErrorCode::kNonFinite) << first << ": " << st.message();
    EXPECT_NE(st.message().find("1e15"), std::string::npos) << st.message();
    EXPECT_EQ(s.final_tokens(), 0);
    // The session is untouched: a normal first chunk then sets the reference, and its tokens are
    // timed from it.
    std::vector<double> beats;
    for (int k = 0; k < 40; ++k) beats.push_back(kT0 + 0.8 * k);
    c.streams = {events(2, "hr", "chest", beats, std::vector<float>(beats.size(), 60.0f))};
    c.streams[0].has_until = true, c.streams[0].until = kT0 + 40.0;
    ASSERT_TRUE(s.push(c, &u).ok());
    ASSERT_GT(u.tokens.count, 0);
    EXPECT_EQ(u.tokens.time[0], kT0);
  }
}

// --- a strap that leaves part-way through a patch --------------------------------------------------

// RR (patch 4) gets 2 beats, then the strap leaves; its `until` keeps advancing with the clock, as
// sensorformer/ble's feeder sends it, while the thermometer (4 Hz, patch 1) keeps sending. Once the
// watermark is past the first beat by more than event_timeout_s (15 s), the RR patch is closed with
// two missing beats: finality moves on. Its token equals a forward where the RR stream holds the two
// beats and two NaN beats; every thermometer token equals the forward's row. Before: the frontier
// stayed at the first beat forever.
TEST(StreamEdges, StrapThatLeavesMidPatchDoesNotHoldFinalityBack) {
  const Model m = load("flattened_lookback");
  ASSERT_EQ(m.config().modalities[3].name, "rr");
  ASSERT_EQ(m.config().modalities[3].patch_len, 4);
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
  const std::vector<float> temp = testing::random_floats(4 * 60, 9, 31, 35);
  std::vector<double> rr_times;
  std::vector<float> rr;
  // Beats 0.75 s apart for 6 s (two whole patches), then two more, then the strap leaves at 6.5 s.
  for (int k = 0; k < 10; ++k) rr_times.push_back(kT0 + 0.25 + 0.75 * k), rr.push_back(0.75f);
  std::vector<StreamUpdate> updates;
  for (int sec = 0; sec < 60; ++sec) {
    Chunk c;
    c.streams.resize(2);
    ChunkStream& r = c.streams[0];
    ChunkStream& t = c.streams[1];
    if (sec == 0) {
      r = events(1, "rr", "chest", {}, {});
      t = regular(3, "temperature", "finger", 4.0, kT0, {});
    }
    for (std::size_t k = 0; k < rr_times.size(); ++k)
      if (rr_times[k] >= kT0 + sec && rr_times[k] < kT0 + sec + 1) r.timestamps.push_back(rr_times[k]), r.samples.push_back(rr[k]);
    r.has_until = true, r.until = kT0 + sec + 1;
    t.samples.assign(temp.begin() + 4 * sec, temp.begin() + 4 * (sec + 1));
    StreamUpdate u;
    ASSERT_TRUE(s.push(c, &u).ok()) << sec;
    updates.push_back(std::move(u));
  }
  // The last beat patch started at 6.25 s (beats 8, 9): closed once until > 6.25 + 15, i.e. at the
  // push of second 21 (until 22 s). Every thermometer token before 59.75 s is final by then.
  EXPECT_GE(s.frontier(), kT0 + 59.75);
  StreamUpdate all;
  for (const StreamUpdate& u : updates) take(&all, u);
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  ChunkStream rr_all = events(1, "rr", "chest", rr_times, rr);
  rr_all.present.assign(rr.size(), 1);
  for (int k = 0; k < 2; ++k)  // the closed patch: two missing beats at the last beat's time
    rr_all.timestamps.push_back(rr_times.back()), rr_all.samples.push_back(kNaN), rr_all.present.push_back(0);
  w.streams = {input_of(rr_all), input_of(regular(3, "temperature", "finger", 4.0, kT0, temp))};
  double max_diff = 0;
  const int compared = compare_with_forward(m, w, all, [](int, bool) { return true; }, &max_diff);
  int rr_tokens = 0;
  for (int i = 0; i < all.tokens.count; ++i) rr_tokens += all.tokens.stream[i] == 0;
  EXPECT_EQ(rr_tokens, 3) << "two whole patches and the closed one";
  EXPECT_EQ(compared, 3 + 4 * 60) << "every token: the thermometer's bound is 60 s, the closed RR stream's its watermark";
  std::printf("[ stream   ] strap left mid-patch: frontier %.2f s, %d tokens vs forward max|diff| %.2e\n", s.frontier() - kT0,
              compared, max_diff);

  // The strap comes back: its beats start a new patch (the watermark is 60 s; beats after it).
  Chunk again;
  again.streams.resize(2);
  again.streams[0].timestamps = {kT0 + 60.2, kT0 + 61.0, kT0 + 61.8, kT0 + 62.6};
  again.streams[0].samples = {0.8f, 0.8f, 0.8f, 0.8f};
  again.streams[0].has_until = true, again.streams[0].until = kT0 + 63.0;
  again.streams[1].samples.assign(12, 33.0f);
  StreamUpdate u;
  ASSERT_TRUE(s.push(again, &u).ok());
  bool found = false;
  for (int i = 0; i < u.tokens.count; ++i) found |= u.tokens.stream[i] == 0 && u.tokens.time[i] == kT0 + 60.2 && u.tokens.present[i];
  EXPECT_TRUE(found) << "a whole patch of the returning strap";
}

// Slow beats (3 s apart: a patch spans 9 s) with the watermark advancing every second never close a
// patch early: the timeout is 15 s from a patch's first beat, and every token equals the forward of
// the beats as they came (no missing beats added).
TEST(StreamEdges, SlowBeatsAreNotClosedEarly) {
  const Model m = load("flattened_lookback");
  StreamSession s;
  StreamOptions o;
  o.has_reference_time = true, o.reference_time = kT0;  // the forward's below
  ASSERT_TRUE(StreamSession::create(m, o, &s).ok());
  std::vector<double> times;
  std::vector<float> rr;
  for (int k = 0; k < 16; ++k) times.push_back(kT0 + 0.5 + 3.0 * k), rr.push_back(3.0f);
  StreamUpdate all;
  for (int sec = 0; sec < 49; ++sec) {
    Chunk c;
    c.streams.resize(1);
    ChunkStream& r = c.streams[0];
    if (sec == 0) r = events(1, "rr", "chest", {}, {});
    for (std::size_t k = 0; k < times.size(); ++k)
      if (times[k] >= kT0 + sec && times[k] < kT0 + sec + 1) r.timestamps.push_back(times[k]), r.samples.push_back(rr[k]);
    r.has_until = true, r.until = kT0 + sec + 1;
    StreamUpdate u;
    ASSERT_TRUE(s.push(c, &u).ok()) << sec;
    take(&all, u);
  }
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  w.streams = {input_of(events(1, "rr", "chest", times, rr))};
  double max_diff = 0;
  EXPECT_EQ(all.tokens.count, 4);
  EXPECT_EQ(compare_with_forward(m, w, all, [](int, bool) { return true; }, &max_diff), 4);
}

// A fixture with `key`: `value` added to one modality of its config, written again with
// testing::write_safetensors from the tensors testing::fixture reads (F32 and F64 as stored).
Model load_with(const std::string& name, const std::string& modality, const std::string& key, const nlohmann::json& value) {
  const SafetensorsFile& f = testing::fixture("model/" + name + ".safetensors");
  nlohmann::json config = nlohmann::json::parse(f.metadata().at("config"));
  for (auto& m : config["modalities"])
    if (m["name"] == modality) m[key] = value;
  testing::RawTensors raw;
  for (const auto& [tensor, info] : f.tensors()) {
    const bool f64 = info.dtype == Dtype::kF64;
    const auto d = f64 ? testing::tensor<double>(f, tensor) : std::vector<double>();
    const auto v = f64 ? std::vector<float>() : testing::tensor<float>(f, tensor);
    const auto* bytes = f64 ? reinterpret_cast<const std::uint8_t*>(d.data()) : reinterpret_cast<const std::uint8_t*>(v.data());
    raw[tensor] = {f64 ? "F64" : "F32", info.shape, {bytes, bytes + (f64 ? 8 * d.size() : 4 * v.size())}};
  }
  Model m;
  const Status s = Model::load(testing::write_safetensors(raw, config.dump()), &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

// "missing_events": "leave-out" (a model trained without an RR stream's intervals across a gap):
// a session given those intervals as missing events (NaN, or a present flag 0) drops them, so its
// tokens are bit for bit those of a session never sent them, and equal a forward of the window
// holding them (the tokenizer drops them too). The same stream with the default ("mask") makes other
// patches, which is what the option is for.
TEST(StreamEdges, LeftOutMissingEventsAreDroppedAsTheTokenizerDropsThem) {
  const Model m = load_with("flattened_lookback", "rr", "missing_events", "leave-out");
  const Model plain = load("flattened_lookback");
  std::vector<double> times;
  std::vector<float> rr;
  std::vector<std::uint8_t> flags;
  for (int k = 0; k < 40; ++k) {
    times.push_back(kT0 + 0.5 + 0.8 * k);
    rr.push_back(k % 7 == 3 ? kNaN : 0.8f + 0.01f * static_cast<float>(k % 5));
    flags.push_back(k % 11 == 6 ? 0 : 1);
  }
  const auto run = [&](const Model& model, bool with_missing) {
    StreamSession s;
    StreamOptions o;
    o.has_reference_time = true, o.reference_time = kT0;
    EXPECT_TRUE(StreamSession::create(model, o, &s).ok());
    StreamUpdate all;
    for (int sec = 0; sec < 60; ++sec) {  // watermarks to 60 s: the last patch times out (15 s) and is final
      Chunk c;
      c.streams.resize(1);
      ChunkStream& r = c.streams[0];
      if (sec == 0) r = events(1, "rr", "chest", {}, {});
      for (std::size_t k = 0; k < times.size(); ++k) {
        if (!(times[k] >= kT0 + sec && times[k] < kT0 + sec + 1)) continue;
        if (!with_missing && (std::isnan(rr[k]) || !flags[k])) continue;
        r.timestamps.push_back(times[k]), r.samples.push_back(rr[k]), r.present.push_back(flags[k]);
      }
      r.has_until = true, r.until = kT0 + sec + 1;
      StreamUpdate u;
      EXPECT_TRUE(s.push(c, &u).ok()) << sec;
      take(&all, u);
    }
    return all;
  };
  const StreamUpdate with = run(m, true), without = run(m, false), masked = run(plain, true);
  const int kept = 40 - 6 - 3;  // k % 7 == 3: 3, 10, 17, 24, 31, 38; flag 0: 6, 17, 28, 39 (17 counted once)
  ASSERT_EQ(without.tokens.count, (kept + 3) / 4);
  EXPECT_EQ(with.tokens.time, without.tokens.time);
  EXPECT_EQ(with.tokens.present, without.tokens.present);
  EXPECT_EQ(with.embeddings, without.embeddings) << "bit for bit";
  EXPECT_EQ(masked.tokens.count, 10) << "kept as missing values, the 40 events make 10 patches";
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  ChunkStream all_events = events(1, "rr", "chest", times, rr);
  all_events.present = flags;
  w.streams = {input_of(all_events)};
  double max_diff = 0;
  EXPECT_EQ(compare_with_forward(m, w, with, [](int, bool) { return true; }, &max_diff), with.tokens.count);
}

// "upsample_hz": a 48 Hz ECG read at 128 Hz (the modality's patch of 16 samples: 0.125 s). A session
// interpolates as the samples arrive (an output waits for the two inputs after it), so its tokens
// must equal a forward of the whole window, whatever the chunking: here pushes of 1 to 61 samples,
// missing samples, two disconnects (a later startTime: 60 and 2 samples missing) and a closing `until`,
// beside a 32 Hz acc_x stream read at its own rate; two chunkings give the same tokens (embeddings within
// kTol: a push's tokens are computed together, so the float32 sums are tiled by push).
TEST(StreamEdges, UpsampledStreamEqualsForwardWhateverTheChunking) {
  const Model m = load_with("flattened_lookback", "ecg", "upsample_hz", 128.0);
  const int n = 960, gap_from = 500, gap_to = 560;  // 20 s at 48 Hz; samples 500-559 never sent,
  const int gap2_from = 700, gap2_to = 702;          // nor 700-701 (a gap shorter than the kernel)
  std::vector<float> ecg(n), acc(640);
  for (int i = 0; i < n; ++i)
    ecg[i] = (i % 97 == 13 || (i >= 300 && i < 305)) ? kNaN : static_cast<float>(900.0 * std::sin(i * 0.37) + 40.0 * (i % 11));
  for (int i = 0; i < 640; ++i) acc[i] = static_cast<float>(std::cos(i * 0.11));
  const auto run = [&](std::vector<int> sizes) {
    StreamSession s;
    StreamOptions o;
    o.has_reference_time = true, o.reference_time = kT0;
    EXPECT_TRUE(StreamSession::create(m, o, &s).ok());
    StreamUpdate all;
    int i = 0, a = 0, k = 0;
    while (i < n) {
      const int size = sizes[k++ % sizes.size()];
      Chunk c;
      c.streams.resize(2);
      ChunkStream& e = c.streams[0];
      if (i == 0) e = regular(0, "ecg", "chest", 48.0, kT0, {});
      if (i == gap_from) i = gap_to, e.has_start_time = true, e.start_time = kT0 + gap_to / 48.0;
      if (i == gap2_from) i = gap2_to, e.has_start_time = true, e.start_time = kT0 + gap2_to / 48.0;
      const int next_gap = i < gap_from ? gap_from : i < gap2_from ? gap2_from : n;
      const int end = std::min({n, next_gap, i + size});
      e.samples.assign(ecg.begin() + i, ecg.begin() + end);
      i = end;
      // acc_x up to the same time
      ChunkStream& x = c.streams[1];
      if (a == 0) x = regular(1, "acc_x", "wrist", 32.0, kT0, {});
      const int a_end = std::min(640, i * 2 / 3);
      x.samples.assign(acc.begin() + a, acc.begin() + a_end);
      a = a_end;
      if (i == n) {  // the end: two ECG samples past it missing (the last outputs' inputs), acc_x ends there
        e.has_until = x.has_until = true;
        e.until = kT0 + (n + 2) / 48.0;
        x.until = kT0 + 20.0;
      }
      StreamUpdate u;
      const Status st = s.push(c, &u);
      EXPECT_TRUE(st.ok()) << st.message();
      take(&all, u);
    }
    return all;
  };
  const StreamUpdate small = run({1, 7, 13, 2, 61, 5}), large = run({480, 480});
  ASSERT_GT(small.tokens.count, 0);
  EXPECT_EQ(small.tokens.time, large.tokens.time);
  EXPECT_EQ(small.tokens.present, large.tokens.present);
  ASSERT_EQ(small.embeddings.size(), large.embeddings.size());
  EXPECT_TRUE(testing::AllClose(small.embeddings.data(), large.embeddings.data(), small.embeddings.size(), kTol, 0.0, "chunkings"));
  std::vector<float> whole = ecg;
  std::fill(whole.begin() + gap_from, whole.begin() + gap_to, kNaN);
  std::fill(whole.begin() + gap2_from, whole.begin() + gap2_to, kNaN);
  Window w;
  w.has_reference_time = true, w.reference_time = kT0;
  w.streams = {input_of(regular(0, "ecg", "chest", 48.0, kT0, whole)), input_of(regular(1, "acc_x", "wrist", 32.0, kT0, acc))};
  double max_diff = 0;
  EXPECT_EQ(compare_with_forward(m, w, small, [](int, bool) { return true; }, &max_diff), small.tokens.count);
  int ecg_tokens = 0;
  for (int k = 0; k < small.tokens.count; ++k) ecg_tokens += small.tokens.stream[k] == 0;
  // 960 inputs -> 2560 outputs (floor(j * 48 / 128) <= 959): 160 patches of 16; the last outputs
  // wait for the two inputs after them, which the closing `until` marks missing
  EXPECT_EQ(ecg_tokens, 160);
  std::printf("[ stream   ] upsampled 48 -> 128 Hz: %d tokens (%d ecg) vs forward max|diff| %.2e\n", small.tokens.count, ecg_tokens, max_diff);
  // a stream too slow for the modality's rate is refused when declared, as a window's is
  StreamSession s;
  StreamOptions o;
  ASSERT_TRUE(StreamSession::create(m, o, &s).ok());
  Chunk c;
  c.streams = {regular(0, "ecg", "chest", 4.0, kT0, {1, 2})};
  StreamUpdate u;
  const Status st = s.push(c, &u);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("rateHz 4: the model reads modality \"ecg\" at 128 Hz, interpolated from at least 8 Hz"), std::string::npos) << st.message();
}

// An event patch spans at most event_timeout_s, decided on event times and watermarks only: the same
// beats give the same tokens whether the watermark advances every second (a live feeder), arrives
// once at the end, or comes with the beat after a silence (a replay that jumps the silence).
// Beats 0.5, 1.3 | 40 s of silence | 41.3 .. 43.7 | 150: the first patch is closed by the silence
// (2 beats + 2 missing: present), the last by the final watermark (1 + 3 missing: absent), and every
// token equals a forward of the beats with those missing beats written in by hand.
TEST(StreamEdges, EventPatchTimeoutDoesNotDependOnChunking) {
  const Model m = load("flattened_lookback");
  const std::vector<double> beats = {kT0 + 0.5, kT0 + 1.3, kT0 + 41.3, kT0 + 42.1, kT0 + 42.9, kT0 + 43.7, kT0 + 150.0};
  const std::vector<float> rr = {0.8f, 0.8f, 0.8f, 0.8f, 0.8f, 0.8f, 0.9f};
  StreamOptions o;
  o.has_reference_time = true, o.reference_time = kT0;
  const auto run = [&](int way) {
    StreamSession s;
    EXPECT_TRUE(StreamSession::create(m, o, &s).ok());
    StreamUpdate all;
    StreamUpdate u;
    if (way == 0) {  // the watermark every second, each beat in its second
      for (int sec = 0; sec < 200; ++sec) {
        Chunk c;
        c.streams = {sec == 0 ? events(1, "rr", "chest", {}, {}) : ChunkStream{}};
        for (std::size_t k = 0; k < beats.size(); ++k)
          if (beats[k] >= kT0 + sec && beats[k] < kT0 + sec + 1) c.streams[0].timestamps.push_back(beats[k]), c.streams[0].samples.push_back(rr[k]);
        c.streams[0].has_until = true, c.streams[0].until = kT0 + sec + 1;
        EXPECT_TRUE(s.push(c, &u).ok()) << sec;
        take(&all, u);
      }
    } else if (way == 1) {  // every beat at once, then the watermark
      Chunk c;
      c.streams = {events(1, "rr", "chest", beats, rr)};
      EXPECT_TRUE(s.push(c, &u).ok());
      take(&all, u);
      c.streams = {ChunkStream{}};
      c.streams[0].has_until = true, c.streams[0].until = kT0 + 200;
      EXPECT_TRUE(s.push(c, &u).ok());
      take(&all, u);
    } else {  // each beat with a watermark just before the next beat (a replay crossing silences)
      for (std::size_t k = 0; k < beats.size(); ++k) {
        Chunk c;
        c.streams = {k == 0 ? events(1, "rr", "chest", {beats[k]}, {rr[k]}) : ChunkStream{}};
        if (k > 0) c.streams[0].timestamps = {beats[k]}, c.streams[0].samples = {rr[k]};
        c.streams[0].has_until = true, c.streams[0].until = k + 1 < beats.size() ? beats[k + 1] : kT0 + 200;
        EXPECT_TRUE(s.push(c, &u).ok()) << k;
        take(&all, u);
      }
    }
    return all;
  };
  const StreamUpdate a = run(0), b = run(1), c = run(2);
  ASSERT_EQ(a.tokens.count, 3);
  for (const StreamUpdate* x : {&b, &c}) {
    ASSERT_EQ(x->tokens.time, a.tokens.time);
    ASSERT_EQ(x->tokens.present, a.tokens.present);
    ASSERT_TRUE(testing::AllClose(x->embeddings.data(), a.embeddings.data(), a.embeddings.size(), kTol, 0.0, "chunkings"));
  }
  EXPECT_EQ(a.tokens.present, (std::vector<std::uint8_t>{1, 1, 0}));
  ChunkStream by_hand = events(1, "rr", "chest", {}, {});
  const auto beat = [&](double t, float v, bool present) {
    by_hand.timestamps.push_back(t), by_hand.samples.push_back(v), by_hand.present.push_back(present);
  };
  beat(beats[0], rr[0], true), beat(beats[1], rr[1], true), beat(beats[1], kNaN, false), beat(beats[1], kNaN, false);
  for (int k = 2; k < 6; ++k) beat(beats[k], rr[k], true);
  beat(beats[6], rr[6], true);
  for (int k = 0; k < 3; ++k) beat(beats[6], kNaN, false);
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  w.streams = {input_of(by_hand)};
  double max_diff = 0;
  EXPECT_EQ(compare_with_forward(m, w, a, [](int, bool) { return true; }, &max_diff), 3);
}

// --- budgets before anything is kept ---------------------------------------------------------------

// Feeds `seconds` of ECG (128 Hz) to a session in 1 s pushes from second `from`.
Chunk ecg_chunk(const std::vector<float>& ecg, int from, int seconds, bool first) {
  Chunk c;
  c.streams.resize(1);
  if (first) c.streams[0] = regular(0, "ecg", "chest", 128.0, kT0, {});
  c.streams[0].samples.assign(ecg.begin() + 128 * from, ecg.begin() + 128 * (from + seconds));
  return c;
}

// With attention rows, 14 minutes of ECG in one push on a causal model without a look-back needs
// gigabytes of rows: refused before anything of the push is kept, so the session goes on and gives,
// bit for bit, what a twin that never saw the refused push gives. Before: refused after the chunk
// was applied, and every later push failed ("stopped by an earlier error").
TEST(StreamEdges, AttentionRowBudgetIsCheckedBeforeThePushIsKept) {
  const Model m = load("flattened_causal");
  ASSERT_FALSE(m.config().has_lookback());
  StreamOptions o;
  o.attention_rows = true;
  StreamSession a, b;
  ASSERT_TRUE(StreamSession::create(m, o, &a).ok());
  ASSERT_TRUE(StreamSession::create(m, o, &b).ok());
  const std::vector<float> ecg = testing::random_floats(128 * 900, 3, -2000, 2000);
  StreamUpdate ua, ub;
  ASSERT_TRUE(a.push(ecg_chunk(ecg, 0, 30, true), &ua).ok());
  ASSERT_TRUE(b.push(ecg_chunk(ecg, 0, 30, true), &ub).ok());
  const Status refused = a.push(ecg_chunk(ecg, 30, 840, false), &ua);
  EXPECT_EQ(refused.code(), ErrorCode::kResourceExhausted) << refused.message();
  EXPECT_NE(refused.message().find("attention rows"), std::string::npos) << refused.message();
  for (int sec = 30; sec < 40; ++sec) {
    ASSERT_TRUE(a.push(ecg_chunk(ecg, sec, 1, false), &ua).ok()) << sec;
    ASSERT_TRUE(b.push(ecg_chunk(ecg, sec, 1, false), &ub).ok()) << sec;
    ASSERT_EQ(ua.index, ub.index);
    ASSERT_EQ(ua.embeddings, ub.embeddings);
    ASSERT_EQ(ua.attention.size(), ub.attention.size());
    for (std::size_t r = 0; r < ua.attention.size(); ++r) ASSERT_EQ(ua.attention[r].weights, ub.attention[r].weights);
  }
}

// Number in a RESOURCE_EXHAUSTED message: "... needs about <x> GFLOP" / "need about <x> GFLOP".
std::string gflop_in(const std::string& message) {
  const std::size_t at = message.find(" GFLOP");
  const std::size_t from = message.rfind(' ', at - 1);
  return at == std::string::npos || from == std::string::npos ? "" : message.substr(from + 1, at - from - 1);
}

// maxGflop: a push counts its cost as forward counts a window's. On a fresh session whose push makes
// every token of the window final, both estimates are the same number (one group of T tokens, every
// key in reach: the causal model's forward counts its masks in full, as the session counts every
// cached key), and a limit refuses or admits both alike. One push of 1 M samples on a causal model
// without a look-back is refused before it runs (before: 18-25 s in one push).
TEST(StreamEdges, MaxGflopCountsAPushAsForwardCountsItsWindow) {
  const Model m = load("flattened_causal");
  const std::vector<float> ecg = testing::random_floats(128 * 60, 4, -2000, 2000);
  Window w;
  w.has_reference_time = true;
  w.reference_time = kT0;
  w.streams = {input_of(regular(0, "ecg", "chest", 128.0, kT0, ecg))};
  ForwardOptions fo;
  fo.max_gflop = 1e-9;
  ForwardResult fr;
  const Status f = m.forward(w, fo, &fr);
  ASSERT_EQ(f.code(), ErrorCode::kResourceExhausted);
  StreamOptions o;
  o.max_gflop = 1e-9;
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, o, &s).ok());
  Chunk c = ecg_chunk(ecg, 0, 60, true);
  c.streams[0].has_until = true, c.streams[0].until = kT0 + 60.0;  // every patch final
  StreamUpdate u;
  const Status p = s.push(c, &u);
  ASSERT_EQ(p.code(), ErrorCode::kResourceExhausted) << p.message();
  ASSERT_FALSE(gflop_in(f.message()).empty()) << f.message();
  EXPECT_EQ(gflop_in(p.message()), gflop_in(f.message())) << p.message() << "\n" << f.message();
  EXPECT_EQ(s.final_tokens(), 0);
  EXPECT_EQ(s.stream_count(), 0) << "nothing of the refused push kept";

  // The default limit (10 GFLOP, forward's) on 1 M samples: 62,500 tokens attending to each other.
  StreamSession big;
  ASSERT_TRUE(StreamSession::create(m, {}, &big).ok());
  Chunk huge;
  huge.streams = {regular(0, "ecg", "chest", 128.0, kT0, testing::random_floats(1 << 20, 8, -2000, 2000))};
  const Status h = big.push(huge, &u);
  EXPECT_EQ(h.code(), ErrorCode::kResourceExhausted) << h.message();
  EXPECT_NE(h.message().find("maxGflop"), std::string::npos) << h.message();
  // And within the limit, the same push in 1-minute pieces goes through.
  o.max_gflop = 10.0;
  StreamSession ok;
  ASSERT_TRUE(StreamSession::create(m, o, &ok).ok());
  ASSERT_TRUE(ok.push(ecg_chunk(ecg, 0, 60, true), &u).ok());
}

// A patch of +-3e38 on acc_x (std 1) normalises to finite values, then overflows float32 inside the
// first layer: the push is NON_FINITE, and its patches, keys and tokens are taken back, so the
// session goes on exactly as a twin that never saw it (found by fuzz/fuzz_stream.cpp). Before: the
// session stopped ("stopped by an earlier error") with the refused chunk half kept.
TEST(StreamEdges, PushThatOverflowsInsideALayerIsRefusedWhole) {
  const Model m = load("factorized_lookback");
  StreamSession a, b;
  ASSERT_TRUE(StreamSession::create(m, {}, &a).ok());
  ASSERT_TRUE(StreamSession::create(m, {}, &b).ok());
  const std::vector<float> ecg = testing::random_floats(128 * 6, 21, -2000, 2000);
  const std::vector<float> acc = testing::random_floats(32 * 6, 22, -2, 2);
  const auto chunk = [&](int sec, bool first) {
    Chunk c;
    c.streams.resize(2);
    if (first) {
      c.streams[0] = regular(0, "ecg", "chest", 128.0, kT0, {});
      c.streams[1] = regular(1, "acc_x", "wrist", 32.0, kT0, {});
    }
    c.streams[0].samples.assign(ecg.begin() + 128 * sec, ecg.begin() + 128 * (sec + 1));
    c.streams[1].samples.assign(acc.begin() + 32 * sec, acc.begin() + 32 * (sec + 1));
    return c;
  };
  StreamUpdate ua, ub;
  for (int sec = 0; sec < 2; ++sec) {
    ASSERT_TRUE(a.push(chunk(sec, sec == 0), &ua).ok());
    ASSERT_TRUE(b.push(chunk(sec, sec == 0), &ub).ok());
  }
  Chunk bad = chunk(2, false);
  for (int i = 0; i < 8; ++i) bad.streams[1].samples[i] = i % 2 ? -3e38f : 3e38f;  // one whole patch
  const Status s = a.push(bad, &ua);
  ASSERT_EQ(s.code(), ErrorCode::kNonFinite) << s.message();
  for (int sec = 2; sec < 6; ++sec) {
    ASSERT_TRUE(a.push(chunk(sec, false), &ua).ok()) << sec;
    ASSERT_TRUE(b.push(chunk(sec, false), &ub).ok()) << sec;
    ASSERT_EQ(ua.index, ub.index);
    ASSERT_EQ(ua.tokens.time, ub.tokens.time);
    ASSERT_EQ(ua.embeddings, ub.embeddings) << sec;
    ASSERT_EQ(ua.frontier, ub.frontier);
  }
  EXPECT_EQ(a.memory_bytes(), b.memory_bytes());
}

// --- memory after a burst --------------------------------------------------------------------------

// Two hours of ECG + acc_x pushed at once (a backlog after a reconnect), then ten minutes live in
// 1 s pushes: memory_bytes comes back to what a twin session fed the same data in 1 s pushes all
// along holds (the look-back's keys, a minute of history). Before: the backlog's capacity stayed
// (history rows, caches and layer buffers of 86,400 tokens).
TEST(StreamEdges, MemoryFollowsTheLookBackAgainAfterABacklog) {
  const Model m = load("flattened_lookback");
  const int backlog = 7200, live = 600, total = backlog + live;
  const std::vector<float> ecg = testing::random_floats(128 * static_cast<std::size_t>(total), 11, -2000, 2000);
  const std::vector<float> acc = testing::random_floats(32 * static_cast<std::size_t>(total), 12, -2, 2);
  const auto chunk = [&](int from, int seconds) {
    Chunk c;
    c.streams.resize(2);
    if (from == 0) {
      c.streams[0] = regular(0, "ecg", "chest", 128.0, kT0, {});
      c.streams[1] = regular(1, "acc_x", "wrist", 32.0, kT0, {});
    }
    c.streams[0].samples.assign(ecg.begin() + 128 * from, ecg.begin() + 128 * (from + seconds));
    c.streams[1].samples.assign(acc.begin() + 32 * from, acc.begin() + 32 * (from + seconds));
    return c;
  };
  StreamSession burst, steady;
  ASSERT_TRUE(StreamSession::create(m, {}, &burst).ok());
  ASSERT_TRUE(StreamSession::create(m, {}, &steady).ok());
  StreamUpdate u;
  ASSERT_TRUE(burst.push(chunk(0, backlog), &u).ok());
  const std::size_t peak = burst.memory_bytes();
  for (int sec = 0; sec < backlog; ++sec) ASSERT_TRUE(steady.push(chunk(sec, 1), &u).ok());
  for (int sec = backlog; sec < total; ++sec) {
    ASSERT_TRUE(burst.push(chunk(sec, 1), &u).ok());
    ASSERT_TRUE(steady.push(chunk(sec, 1), &u).ok());
  }
  std::printf("[ stream   ] after a 2 h backlog: memory_bytes %zu B at the burst, %zu B ten minutes later (twin fed live: %zu B)\n",
              peak, burst.memory_bytes(), steady.memory_bytes());
  EXPECT_LE(static_cast<double>(burst.memory_bytes()), 1.5 * static_cast<double>(steady.memory_bytes()) + 16384);
}

// --- options -----------------------------------------------------------------------------------------

TEST(StreamEdges, NewOptionsAreChecked) {
  const Model m = load("flattened_lookback");
  for (const double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    StreamOptions o;
    o.event_timeout_s = bad;
    StreamSession s;
    EXPECT_EQ(StreamSession::create(m, o, &s).code(), ErrorCode::kInvalidArgument) << bad;
    o = {};
    o.max_gflop = bad;
    if (!(bad > 0)) {
      EXPECT_EQ(StreamSession::create(m, o, &s).code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
  // A chunk of more streams than a session takes is refused before anything is allocated.
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
  Chunk c;
  c.streams.resize(kMaxSessionStreams + 1);
  StreamUpdate u;
  EXPECT_EQ(s.push(c, &u).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace sf
