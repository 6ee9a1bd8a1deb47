// libFuzzer target: arbitrary bytes as a weights file -> safetensors reader -> model loader -> one
// forward (with and without attention maps) on a window that uses every modality of the config.
//
// What must hold for every input (a violation is a crash libFuzzer keeps as a reproducer):
// no sanitizer report (overflow, out-of-bounds, use after free, undefined behaviour), no abort
// or exception, no allocation past ASan's limit (tools/fuzz.sh sets -rss_limit_mb), a failing load
// or forward has an error code and a message, and a successful forward has finite outputs.
//
//   bash tools/fuzz.sh [seconds per target]     (seed corpus: the committed fixture models)
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "model/model.hpp"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

sf::Window window_for(const sf::ModelConfig& c) {
  sf::Window w;
  const size_t streams = std::min<size_t>(c.modalities.size(), 6);
  for (size_t m = 0; m < streams; ++m) {
    sf::StreamInput s;
    s.sensor = static_cast<int>(m) % c.n_sensors;
    s.modality = c.modalities[m].name;
    s.placement = c.placements[m % c.placements.size()];
    const int n = std::min(3 * c.modalities[m].patch_len, 96);
    if (m % 3 == 2) {  // event-driven, irregular
      for (int i = 0; i < n; ++i) s.timestamps.push_back(1764460800.0 + 0.37 * i + 0.01 * (i % 3));
    } else {
      s.rate_hz = m % 3 == 0 ? 130.3 : 1.0;
      s.start_time = 1764460800.0 + 0.25 * m;
    }
    for (int i = 0; i < n; ++i) s.samples.push_back(i % 7 == 3 ? NAN : static_cast<float>(c.modalities[m].mean) + i);
    w.streams.push_back(std::move(s));
  }
  return w;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sf::Model model;
  const sf::Status loaded = sf::Model::load(std::vector<std::uint8_t>(data, data + size), &model);
  if (!loaded.ok()) {
    require(!loaded.message().empty());
    return 0;
  }
  const sf::Window window = window_for(model.config());
  for (bool maps : {false, true}) {
    sf::ForwardOptions options;
    options.attention_maps = maps;
    sf::ForwardResult r;
    const sf::Status s = model.forward(window, options, &r);
    if (!s.ok()) {
      require(!s.message().empty());
      continue;
    }
    require(r.embeddings.size() == static_cast<size_t>(r.tokens.count) * model.config().d_model);
    for (float v : r.embeddings) require(std::isfinite(v));
    for (float v : r.pooled) require(std::isfinite(v));
    for (float v : r.head) require(std::isfinite(v));
  }
  return 0;
}
