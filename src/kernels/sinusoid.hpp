// Continuous-time sinusoidal encoding (seeds 000 and 002) over real timestamps.
//
// t:(n) float64 seconds, t_ref float64 seconds, inv_freq:(d/2) rad/s -> out:(n, d) float32, d even:
//   angle = (t - t_ref) * inv_freq[i],  i = 0 .. d/2-1     (inv_freq: encode/time_encoding.hpp)
//   out[:, 0:d/2] = sin(angle),  out[:, d/2:d] = cos(angle)       (sin block, then cos block)
//
// Why float64: the highest frequency is 1 rad/s, so a float32 angle at t = 6,000 s has an ulp of
// ~5e-4 rad and the encoding is already 2.4e-4 off; at a day (86,400 s) it is 4e-3 off, and a Unix
// epoch time (~1.7e9 s) has no correct float32 digits left. Subtracting t_ref and forming the angle
// in float64 keeps the error of the float32 output below 1e-7 for |t - t_ref| up to a day.
#pragma once

namespace sf::kernels {

void sinusoid_encoding(const double* t, int n, double t_ref, int d, const double* inv_freq, float* out);
void sinusoid_encoding_ref(const double* t, int n, double t_ref, int d, const double* inv_freq,
                           float* out);

}  // namespace sf::kernels
