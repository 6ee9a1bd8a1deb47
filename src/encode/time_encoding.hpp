// Encode stage, first half: continuous-time sinusoidal encoding of real timestamps plus the learned
// sensor-identity table, summed (the factorized encoding of seed 000).
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.hpp"
#include "kernels/kernel_set.hpp"

namespace sf {

struct TimeEncodingConfig {
  int d_model = 0;                   // even, >= 2
  double max_period = 10000.0;       // finite, > 0
  const double* inv_freq = nullptr;  // (d_model/2) rad/s, used as given when set (a trained
                                     // table); otherwise inverse_frequencies(d_model, max_period)
};

// inv_freq[i] = 1 / max_period^(2i/d_model), i = 0 .. d_model/2 - 1, in float64.
std::vector<double> inverse_frequencies(int d_model, double max_period);

// t:(n) float64 seconds (Unix epoch seconds are fine), t_ref float64 seconds -> out:(n, d_model).
// Encodes t - t_ref (see kernels/sinusoid.hpp for why the difference is taken in float64). The
// model passes the window's reference time; t_ref = 0 gives the seeds' absolute formula.
// Errors: kInvalidArgument (d_model odd or < 2, max_period <= 0, n < 0), kNonFinite (a NaN or
// infinite timestamp or t_ref, or |t - t_ref| beyond limits::kMaxTimeOffsetSeconds, where the
// angles lose all precision and, near float64's range, overflow).
Status encode_time(const TimeEncodingConfig& config, const double* t, int n, double t_ref,
                   float* out, kernels::KernelSet kernels = kernels::KernelSet::kSimd);

// x:(n, d) += table[ids[i]] for each row i; table:(table_rows, d), an nn.Embedding weight (the
// sensor-identity table, and the modality, placement and rate descriptor tables).
// Errors: kIndexOutOfRange for an id outside [0, table_rows).
Status add_embedding(float* x, int n, int d, const std::int32_t* ids, const float* table,
                    int table_rows, kernels::KernelSet kernels = kernels::KernelSet::kSimd);

}  // namespace sf
