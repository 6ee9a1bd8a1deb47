// Tokenize stage (seed 002): streams at their native rates -> patches labelled with real time,
// with a presence bit per patch. No parameters: the learned parts (value projection, mask token,
// embeddings) are the encode stage's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "model/config.hpp"

namespace sf {

// One stream of a window. Regular streams give rate_hz > 0 and start_time; event-driven streams
// (RR intervals, heart-rate notifications) give one timestamp per sample instead.
struct StreamInput {
  int sensor = 0;
  std::string modality;
  std::string placement;
  double rate_hz = 0.0;
  double start_time = 0.0;
  std::vector<double> timestamps;     // event-driven: (n) non-decreasing float64 seconds
  std::vector<float> samples;         // (n); NaN = missing
  std::vector<std::uint8_t> present;  // (n) or empty; 0 = missing
  // Set when the caller gave timestamps, even none: an event-driven stream with no event yet (a
  // strap that sent no RR interval in the window) is empty, not a regular stream without a rate.
  bool has_timestamps = false;
  bool event_driven() const { return has_timestamps || !timestamps.empty(); }
};

struct Window {
  std::vector<StreamInput> streams;
  bool has_reference_time = false;
  double reference_time = 0.0;  // default: earliest start of a stream that emits tokens
};

// T tokens in order: streams in input order, patches in time order. Patch values are normalised,
// missing samples inside a present patch are 0 (the modality mean); absent patches keep their
// slots (zeros) but are replaced by the mask token in the encode stage.
struct Tokens {
  int count = 0;
  double reference_time = 0.0;
  std::vector<int> stream, sensor, modality, placement, rate_bucket;
  std::vector<double> time;            // real time of the patch start, float64 seconds
  std::vector<std::uint8_t> present;   // 1 = present patch, 0 = absent (masked as a key)
  std::vector<std::size_t> value_offset;  // (count + 1) offsets into values
  std::vector<float> values;
};

// Errors (kInvalidArgument / kIndexOutOfRange / kNonFinite) name the stream and the field.
Status tokenize(const ModelConfig& config, const Window& window, Tokens* out);

}  // namespace sf
