#include "encode/time_encoding.hpp"

#include <cmath>
#include <string>

#include "kernels/sinusoid.hpp"

namespace sf {

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
  for (int i = 0; i < n; ++i)
    if (!std::isfinite(t[i]))
      return {ErrorCode::kNonFinite,
              "time encoding: timestamp " + std::to_string(i) + " is not finite"};
  if (kernels == kernels::KernelSet::kReference)
    kernels::sinusoid_encoding_ref(t, n, t_ref, config.d_model, config.max_period, out);
  else
    kernels::sinusoid_encoding(t, n, t_ref, config.d_model, config.max_period, out);
  return Status::Ok();
}

Status add_embedding(float* x, int n, int d, const std::int32_t* ids, const float* table,
                    int table_rows) {
  for (int i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= table_rows)
      return {ErrorCode::kIndexOutOfRange, "embedding: id " + std::to_string(ids[i]) +
                                               " at token " + std::to_string(i) +
                                               " is outside the table of " +
                                               std::to_string(table_rows) + " rows"};
  for (int i = 0; i < n; ++i) {
    const float* row = table + static_cast<long>(ids[i]) * d;
    for (int j = 0; j < d; ++j) x[i * d + j] += row[j];
  }
  return Status::Ok();
}

}  // namespace sf
