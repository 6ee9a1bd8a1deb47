// Reading a regular stream at a higher rate than its own (a modality's "upsample_hz", docs/model.md
// "Tokenizer"): the tokenizer's and a streaming session's one definition, so that a session's
// tokens equal a window's to the bit.
//
// Output sample j (time startTime + j / R) sits at input position u = j * r / R (r the stream's
// rate); with i = floor(u) and f = u - i it is Keys' cubic convolution of the inputs i-1 .. i+2
// (R. G. Keys, "Cubic convolution interpolation for digital image processing", IEEE Trans. ASSP
// 29(6), 1981; a = -1/2: exact for quadratics, output = input where f = 0). It is missing when any
// of the four is missing or outside the stream: a gap grows by at most two input samples a side.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "model/config.hpp"

namespace sf {

// A stream slower than upsample_hz / kMaxUpsampleFactor is refused (INVALID_ARGUMENT): each input
// sample may become at most this many, which bounds what one sample can cost.
constexpr double kMaxUpsampleFactor = 16.0;

inline double upsample_position(std::int64_t j, double in_rate, double out_rate) {
  return static_cast<double>(j) * in_rate / out_rate;
}

// taps: the inputs at floor(u) - 1 .. floor(u) + 2 (NaN: missing); f = u - floor(u) in [0, 1).
float keys_cubic(const float taps[4], double f);

// INVALID_ARGUMENT naming stream `stream` when its rate is below the modality's upsample_hz /
// kMaxUpsampleFactor (`field`: the API's name of the rate); OK otherwise.
Status check_upsample_rate(const ModalityConfig& mod, double rate_hz, std::size_t stream, const char* field);

// NON_FINITE when an interpolated value v overflowed float32 (inputs near the float32 limit):
// the tokenizer and a session report it alike, naming the input it follows.
Status check_interpolated(float v, std::size_t stream, std::int64_t after);

}  // namespace sf
