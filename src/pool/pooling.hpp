// Pool stage: masked mean over present tokens (seed 002), then the optional linear head.
#pragma once

#include <cstdint>

namespace sf {

// x:(T, d), present:(T) -> out:(d) = mean of the present rows; zeros when none is present
// (the reference's sum / clamp(count, 1e-6) gives the same zeros).
void masked_mean(const float* x, int T, int d, const std::uint8_t* present, float* out);

}  // namespace sf
