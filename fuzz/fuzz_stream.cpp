// libFuzzer target: arbitrary bytes as a streaming session's life (src/stream/session.hpp) on the
// committed causal fixture models (flattened_upsample: its ECG read at 263 Hz, interpolated as it
// arrives): options (attention rows on or off, history, event timeout), then pushes of chunks (new streams with any descriptor and rate, samples with NaN / Inf /
// extremes, present flags, startTime gaps and overlaps, event timestamps in or out of order,
// watermarks from a few ms to 1e300 s ahead), pooled() calls in between.
//
// What must hold: no sanitizer report and no abort (an abort is what WebAssembly would do); an
// error has a message and leaves the session as it was (frontier, tokens so far, streams), and a
// session is never stopped (a push either is refused whole or computes: finite weights cannot
// fail half-way); a push's result is well-formed (embeddings (m, d) finite, indices consecutive,
// frontier non-decreasing, attention weights finite). The compute limit is kept small (0.01 GFLOP)
// so that one input stays well under the run's 10 s timeout under ASan: the guard itself is what
// is fuzzed, an input past it must be refused before it runs.
//
//   bash tools/fuzz.sh [seconds per target]
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "fixture_models.hpp"
#include "model/model.hpp"
#include "stream/session.hpp"

namespace {

// The broken invariant is printed before the abort (libFuzzer then saves the input).
#define require(condition)                                                                \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "fuzz_stream: %s does not hold (line %d)\n", #condition, __LINE__); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

const std::vector<sf::Model>& models() {
  static const std::vector<sf::Model> loaded = load_fixture_models({"flattened_lookback", "factorized_lookback", "time_lookback", "channel_lookback", "flattened_causal", "flattened_upsample"});
  return loaded;
}

constexpr double kT0 = 1764460800.0;

// Seconds after the session's start: mostly near (ms to minutes), sometimes days or past every
// limit, sometimes not finite.
double pick_offset(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0: return in.ConsumeFloatingPoint<double>();
    case 1: return in.PickValueInArray({86400.0 * 2, 3600.0, 1e11, 0.9e12, 2e12, 1e300, -1e300,
                                        std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()});
    case 2: return in.ConsumeFloatingPointInRange(-5.0, 5.0);
    default: return in.ConsumeFloatingPointInRange(0.0, 120.0);
  }
}

float pick_sample(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return in.ConsumeFloatingPoint<float>();
    case 2: return in.PickValueInArray({std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::max(), 3e38f, 0.0f});
    default: return in.ConsumeFloatingPointInRange(-2000.0f, 2000.0f);
  }
}

sf::ChunkStream pick_stream(FuzzedDataProvider& in, const sf::ModelConfig& c, bool describe) {
  sf::ChunkStream s;
  if (describe) {
    s.has_descriptor = true;
    s.sensor = in.ConsumeIntegralInRange(-1, c.n_sensors);
    const int m = in.ConsumeIntegralInRange(0, static_cast<int>(c.modalities.size()));
    s.modality = m < static_cast<int>(c.modalities.size()) ? c.modalities[m].name : "eeg";
    const int p = in.ConsumeIntegralInRange(0, static_cast<int>(c.placements.size()));
    s.placement = p < static_cast<int>(c.placements.size()) ? c.placements[p] : "ankle";
    s.event_driven = in.ConsumeBool();
    if (!s.event_driven)
      s.rate_hz = in.ConsumeBool() ? in.PickValueInArray({130.0, 50.0, 4.0, 1.0, 0.5, 1e6, 1e300, -1.0})
                                   : in.ConsumeFloatingPoint<double>();
  }
  if (in.ConsumeBool()) s.has_start_time = true, s.start_time = kT0 + pick_offset(in);
  const int n = in.ConsumeIntegralInRange(0, 64);
  const bool flags = in.ConsumeBool();
  double t = kT0 + in.ConsumeFloatingPointInRange(0.0, 60.0);
  for (int i = 0; i < n; ++i) {
    s.samples.push_back(pick_sample(in));
    if (flags) s.present.push_back(in.ConsumeIntegralInRange(0, 1));
    if (in.ConsumeBool()) {  // timestamps for an event stream (or, wrongly, for a regular one)
      t += in.ConsumeIntegralInRange(0, 9) == 0 ? pick_offset(in) : in.ConsumeFloatingPointInRange(0.0, 2.0);
      s.timestamps.push_back(t);
    }
  }
  if (in.ConsumeBool()) s.has_until = true, s.until = kT0 + pick_offset(in);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& all = models();
  const sf::Model& model = all[in.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
  const sf::ModelConfig& c = model.config();
  sf::StreamOptions o;
  o.attention_rows = in.ConsumeBool();
  o.history_s = in.ConsumeBool() ? 60.0 : in.ConsumeFloatingPointInRange(0.001, 600.0);
  o.event_timeout_s = in.ConsumeBool() ? 15.0 : in.ConsumeFloatingPointInRange(0.001, 100.0);
  o.max_gflop = in.ConsumeFloatingPointInRange(1e-4, 0.01);
  if (in.ConsumeBool()) o.has_reference_time = true, o.reference_time = kT0 + in.ConsumeFloatingPointInRange(-3600.0, 3600.0);
  sf::StreamSession session;
  require(sf::StreamSession::create(model, o, &session).ok());
  double last_frontier = -std::numeric_limits<double>::infinity();
  while (in.remaining_bytes() > 0) {
    if (in.ConsumeIntegralInRange(0, 5) == 0) {
      sf::PooledResult p;
      const sf::Status s = session.pooled(in.ConsumeFloatingPointInRange(-1.0, 700.0), &p);
      if (s.ok())
        for (float v : p.pooled) require(std::isfinite(v));
      else
        require(!s.message().empty());
      continue;
    }
    sf::Chunk chunk;
    const int streams = in.ConsumeIntegralInRange(0, session.stream_count() + 2);
    for (int i = 0; i < streams; ++i) {
      const bool skip = in.ConsumeIntegralInRange(0, 3) == 0;
      chunk.skip.push_back(skip);
      chunk.streams.push_back(skip ? sf::ChunkStream{} : pick_stream(in, c, i >= session.stream_count() || in.ConsumeIntegralInRange(0, 7) == 0));
    }
    const double frontier = session.frontier();
    const std::int64_t tokens = session.final_tokens();
    const int count = session.stream_count();
    sf::StreamUpdate u;
    const sf::Status s = session.push(chunk, &u);
    if (!s.ok()) {
      if (session.final_tokens() != tokens || session.stream_count() != count) std::fprintf(stderr, "fuzz_stream: %s\n", s.message().c_str());
      require(!s.message().empty());
      require(s.message().find("stopped by an earlier error") == std::string::npos);
      require(session.final_tokens() == tokens && session.stream_count() == count);
      require(session.frontier() == frontier || (std::isnan(frontier) && std::isnan(session.frontier())));
      continue;
    }
    const int m = u.tokens.count, d = c.d_model;
    require(u.embeddings.size() == static_cast<std::size_t>(m) * d && u.index.size() == static_cast<std::size_t>(m));
    for (int i = 0; i < m; ++i) require(u.index[i] == tokens + i && u.tokens.time[i] < u.frontier);
    for (float v : u.embeddings) require(std::isfinite(v));
    require(!(u.frontier < last_frontier));
    last_frontier = u.frontier;
    for (const sf::AttentionRow& r : u.attention)
      for (float w : r.weights) require(std::isfinite(w) && w >= 0.0f && w <= 1.0f);
  }
  return 0;
}
