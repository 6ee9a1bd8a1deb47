#include "encode/time_encoding.hpp"

#include <cmath>
#include <string>

#include "core/format.hpp"
#include "core/limits.hpp"
#include "kernels/activation.hpp"
#include "kernels/sinusoid.hpp"

namespace sf {

std::vector<double> inverse_frequencies(int d_model, double max_period) {
  std::vector<double> inv(d_model / 2);
  for (int i = 0; i < d_model / 2; ++i) inv[i] = 1.0 / std::pow(max_period, 2.0 * i / d_model);
  return inv;
}

Status encode_time(const TimeEncodingConfig& config, const double* t, int n, double t_ref,
                   float* out, kernels::KernelSet kernels) {
  if (config.d_model < 2 || config.d_model % 2 != 0)
    return {ErrorCode::kInvalidArgument,
            "time encoding: d_model must be even and >= 2, got " + std::to_string(config.d_model)};
  if (!(config.max_period > 0.0) || !std::isfinite(config.max_period))
    return {ErrorCode::kInvalidArgument, "time encoding: max_period must be finite and > 0"};
  if (n < 0) return {ErrorCode::kInvalidArgument, "time encoding: negative timestamp count"};
  if (!std::isfinite(t_ref))
    return {ErrorCode::kNonFinite, "time encoding: reference time is not finite"};
  std::vector<double> computed;
  const double* inv = config.inv_freq;
  if (!inv) {
    computed = inverse_frequencies(config.d_model, config.max_period);
    inv = computed.data();
  }
  // Angles are (t - t_ref) * inv_freq: both factors are bounded so that they stay finite and keep
  // precision. A max_period below 1 s makes inv_freq grow past 1 rad/s (1e-300 gives 1e225), so
  // the angle is bounded by the same 1e12 as the time offset.
  double max_inv = 0.0;
  for (int i = 0; i < config.d_model / 2; ++i) max_inv = std::fmax(max_inv, std::fabs(inv[i]));
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(t[i]))
      return {ErrorCode::kNonFinite,
              "time encoding: timestamp " + std::to_string(i) + " is not finite"};
    const double dt = std::fabs(t[i] - t_ref);  // Inf when the two are near opposite ends of float64
    if (!(dt <= limits::kMaxTimeOffsetSeconds))
      return {ErrorCode::kNonFinite, "time encoding: timestamp " + std::to_string(i) + " (" + shortest(t[i]) +
                                         " s) is more than 1e12 s from the reference time " + shortest(t_ref) +
                                         " s: its encoding would not be finite or meaningful"};
    if (!(dt * max_inv <= limits::kMaxTimeOffsetSeconds))
      return {ErrorCode::kNonFinite, "time encoding: angles reach " + shortest(dt * max_inv) + " rad (" +
                                         (config.inv_freq ? std::string("the given inverse frequencies")
                                                          : "max_period " + shortest(config.max_period)) +
                                         "): beyond 1e12 rad the encoding is not finite or meaningful"};
  }
  if (kernels == kernels::KernelSet::kReference)
    kernels::sinusoid_encoding_ref(t, n, t_ref, config.d_model, inv, out);
  else
    kernels::sinusoid_encoding(t, n, t_ref, config.d_model, inv, out);
  return Status::Ok();
}

Status add_embedding(float* x, int n, int d, const std::int32_t* ids, const float* table,
                    int table_rows, kernels::KernelSet kernels) {
  for (int i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= table_rows)
      return {ErrorCode::kIndexOutOfRange, "embedding: id " + std::to_string(ids[i]) +
                                               " at token " + std::to_string(i) +
                                               " is outside the table of " +
                                               std::to_string(table_rows) + " rows"};
  const auto add = kernels == kernels::KernelSet::kReference ? kernels::add_ref : kernels::add;
  for (int i = 0; i < n; ++i) add(table + static_cast<long>(ids[i]) * d, d, x + static_cast<long>(i) * d);
  return Status::Ok();
}

}  // namespace sf
