#include "tokenize/upsample.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/format.hpp"

namespace sf {

float keys_cubic(const float taps[4], double f) {
  for (int k = 0; k < 4; ++k)
    if (std::isnan(taps[k])) return std::numeric_limits<float>::quiet_NaN();
  // The kernel W(x) = 1.5|x|^3 - 2.5|x|^2 + 1 (|x| <= 1), -0.5|x|^3 + 2.5|x|^2 - 4|x| + 2 (1 < |x| < 2),
  // at the taps' distances 1 + f, f, 1 - f, 2 - f. Written out in this order in
  // tools/reference/sensorformer_ref.py's keys_weights as well (the same float64 results).
  const double g = 1.0 - f;
  const double w0 = ((-0.5 * f + 1.0) * f - 0.5) * f;  // W(1 + f)
  const double w1 = (1.5 * f - 2.5) * f * f + 1.0;     // W(f)
  const double w2 = (1.5 * g - 2.5) * g * g + 1.0;     // W(1 - f)
  const double w3 = ((-0.5 * g + 1.0) * g - 0.5) * g;  // W(2 - f) = W(1 + g)
  return static_cast<float>(w0 * taps[0] + w1 * taps[1] + w2 * taps[2] + w3 * taps[3]);
}

Status check_upsample_rate(const ModalityConfig& mod, double rate_hz, std::size_t stream, const char* field) {
  if (!(rate_hz * kMaxUpsampleFactor < mod.upsample_hz)) return Status::Ok();
  return {ErrorCode::kInvalidArgument, "stream " + std::to_string(stream) + ": " + field + " " + shortest(rate_hz) +
                                           ": the model reads modality \"" + mod.name + "\" at " + shortest(mod.upsample_hz) +
                                           " Hz, interpolated from at least " + shortest(mod.upsample_hz / kMaxUpsampleFactor) + " Hz"};
}

Status check_interpolated(float v, std::size_t stream, std::int64_t after) {
  if (!std::isinf(v)) return Status::Ok();
  return {ErrorCode::kNonFinite, "stream " + std::to_string(stream) + ": sample " + std::to_string(after) +
                                     ": the value interpolated after it overflows float32"};
}

}  // namespace sf
