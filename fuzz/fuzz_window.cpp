// libFuzzer target: arbitrary bytes as a window (stream count, sensors, modalities, placements,
// rates, start times, timestamps, samples with NaN / Inf / extremes, present flags, reference
// time, attention maps, compute limit) for the committed fixture models of every layout (and
// flattened_upsample, whose ECG is read at a higher rate).
//
// What must hold: no sanitizer report, no abort, an error has a message, a successful forward has
// finite outputs whose shapes agree with the token count.
//
//   bash tools/fuzz.sh [seconds per target]
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "fixture_models.hpp"
#include "model/model.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

const std::vector<sf::Model>& models() {
  static const std::vector<sf::Model> loaded = load_fixture_models({"flattened", "time", "channel", "factorized_causal", "flattened_upsample"});
  return loaded;
}

// Times near the fixtures' epoch, and sometimes anywhere in float64.
double pick_time(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return 1764460800.0 + in.ConsumeFloatingPointInRange(-100.0, 100.0);
    case 1: return in.ConsumeFloatingPoint<double>();
    case 2: return in.PickValueInArray({0.0, -0.0, 1e308, -1e308, 1e12, std::numeric_limits<double>::quiet_NaN(),
                                        std::numeric_limits<double>::infinity()});
    default: return 1764460800.0 + in.ConsumeIntegralInRange(0, 100000) * 1e-3;
  }
}

float pick_sample(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return in.ConsumeFloatingPoint<float>();
    case 2: return in.PickValueInArray({std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::max(),
                                        std::numeric_limits<float>::denorm_min(), 0.0f});
    default: return in.ConsumeFloatingPointInRange(-2000.0f, 2000.0f);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const sf::Model& model = models()[in.ConsumeIntegralInRange<size_t>(0, models().size() - 1)];
  const sf::ModelConfig& c = model.config();
  sf::Window w;
  const int streams = in.ConsumeIntegralInRange(0, 8);
  for (int s = 0; s < streams; ++s) {
    sf::StreamInput st;
    st.sensor = in.ConsumeIntegralInRange(-1, c.n_sensors);
    st.modality = in.ConsumeBool() ? c.modalities[in.ConsumeIntegralInRange<size_t>(0, c.modalities.size() - 1)].name
                                   : in.ConsumeRandomLengthString(8);
    st.placement = in.ConsumeBool() ? c.placements[in.ConsumeIntegralInRange<size_t>(0, c.placements.size() - 1)]
                                    : in.ConsumeRandomLengthString(8);
    const int n = in.ConsumeIntegralInRange(0, 300);
    if (in.ConsumeBool()) {  // event-driven: mostly increasing times
      double t = pick_time(in);
      for (int i = 0; i < n; ++i) {
        st.timestamps.push_back(t);
        t += in.ConsumeBool() ? in.ConsumeFloatingPointInRange(0.0, 2.0) : in.ConsumeFloatingPoint<double>();
      }
      if (in.ConsumeBool()) st.rate_hz = in.ConsumeFloatingPoint<double>();
    } else {
      st.rate_hz = in.ConsumeBool() ? in.PickValueInArray({130.3, 50.0, 1.0, 0.2}) : in.ConsumeFloatingPoint<double>();
      st.start_time = pick_time(in);
    }
    for (int i = 0; i < n; ++i) st.samples.push_back(pick_sample(in));
    if (in.ConsumeBool())
      for (int i = 0; i < n + in.ConsumeIntegralInRange(-1, 1); ++i) st.present.push_back(in.ConsumeIntegral<std::uint8_t>() & 1);
    w.streams.push_back(std::move(st));
  }
  if (in.ConsumeBool()) {
    w.has_reference_time = true;
    w.reference_time = pick_time(in);
  }
  sf::ForwardOptions options;
  options.attention_maps = in.ConsumeBool();
  if (in.ConsumeBool()) options.max_gflop = in.ConsumeFloatingPointInRange(0.0, 1.0);
  sf::ForwardResult r;
  const sf::Status s = model.forward(w, options, &r);
  if (!s.ok()) {
    require(!s.message().empty());
    return 0;
  }
  require(r.embeddings.size() == static_cast<size_t>(r.tokens.count) * c.d_model);
  for (float v : r.embeddings) require(std::isfinite(v));
  for (float v : r.pooled) require(std::isfinite(v));
  return 0;
}
