#include "tokenize/tokenizer.hpp"

#include <cmath>
#include <limits>

#include "core/format.hpp"
#include "core/limits.hpp"
#include "tokenize/upsample.hpp"

namespace sf {

namespace {

Status stream_error(ErrorCode code, size_t s, const std::string& m) {
  return {code, "stream " + std::to_string(s) + ": " + m};
}

Status validate(const ModelConfig& c, const StreamInput& in, size_t s) {
  if (in.sensor < 0 || in.sensor >= c.n_sensors)
    return stream_error(ErrorCode::kIndexOutOfRange, s, "sensor " + std::to_string(in.sensor) +
                        " is outside the model's " + std::to_string(c.n_sensors) + " sensors");
  if (c.modality_index(in.modality) < 0)
    return stream_error(ErrorCode::kInvalidArgument, s, "modality \"" + in.modality + "\" is not one the model knows");
  if (c.placement_index(in.placement) < 0)
    return stream_error(ErrorCode::kInvalidArgument, s, "placement \"" + in.placement + "\" is not one the model knows");
  const size_t n = in.samples.size();
  if (!in.present.empty() && in.present.size() != n)
    return stream_error(ErrorCode::kShapeMismatch, s, "present has " + std::to_string(in.present.size()) +
                        " entries for " + std::to_string(n) + " samples");
  if (in.event_driven()) {
    if (in.rate_hz != 0.0) return stream_error(ErrorCode::kInvalidArgument, s, "give rate_hz or timestamps, not both");
    if (in.timestamps.size() != n)
      return stream_error(ErrorCode::kShapeMismatch, s, "timestamps has " + std::to_string(in.timestamps.size()) +
                          " entries for " + std::to_string(n) + " samples");
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(in.timestamps[i])) return stream_error(ErrorCode::kNonFinite, s, "timestamp " + std::to_string(i) + " is not finite");
      if (i > 0 && in.timestamps[i] < in.timestamps[i - 1])
        return stream_error(ErrorCode::kInvalidArgument, s, "timestamps must not decrease (index " + std::to_string(i) + ")");
    }
  } else {  // checked even without samples: a stream that says rate -1 is a mistake, empty or not
    if (!(in.rate_hz > 0.0) || !std::isfinite(in.rate_hz))
      return stream_error(ErrorCode::kInvalidArgument, s, "a regular stream needs a finite rate_hz > 0 (or give timestamps)");
    if (!std::isfinite(in.start_time)) return stream_error(ErrorCode::kNonFinite, s, "start_time is not finite");
    const ModalityConfig& mod = c.modalities[c.modality_index(in.modality)];
    if (mod.upsamples(in.rate_hz)) SF_RETURN_IF_ERROR(check_upsample_rate(mod, in.rate_hz, s, "rate_hz"));
  }
  // NaN is the missing-sample marker; an infinite sample is an error, not silently missing.
  for (size_t i = 0; i < n; ++i)
    if (std::isinf(in.samples[i]))
      return stream_error(ErrorCode::kNonFinite, s, "sample " + std::to_string(i) + " is " +
                          (in.samples[i] > 0 ? "+Inf" : "-Inf") + " (NaN marks a missing sample)");
  return Status::Ok();
}

bool sample_present(const StreamInput& in, size_t i) {
  return std::isfinite(in.samples[i]) && (in.present.empty() || in.present[i] != 0);
}

// The stream read at rate R (upsample.hpp): output j for every j whose position floor(j r / R)
// is one of the n inputs; inputs outside the stream count as missing. Outputs: NaN or finite.
Status upsample(const StreamInput& in, double R, size_t s, std::vector<float>* out) {
  out->clear();
  const auto n = static_cast<std::int64_t>(in.samples.size());
  // one allocation rather than doublings: at most R / r + 1 outputs an input sample (the bound
  // tokenize counts its patches by)
  out->reserve(static_cast<size_t>(static_cast<double>(n) * (R / in.rate_hz + 1.0)));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto tap = [&](std::int64_t i) { return i < 0 || i >= n || !sample_present(in, static_cast<size_t>(i)) ? nan : in.samples[i]; };
  for (std::int64_t j = 0;; ++j) {
    const double u = upsample_position(j, in.rate_hz, R), i = std::floor(u);
    if (i >= static_cast<double>(n)) break;
    const auto b = static_cast<std::int64_t>(i);
    const float taps[4] = {tap(b - 1), tap(b), tap(b + 1), tap(b + 2)};
    out->push_back(keys_cubic(taps, u - i));
    SF_RETURN_IF_ERROR(check_interpolated(out->back(), s, b));
  }
  return Status::Ok();
}

}  // namespace

Status tokenize(const ModelConfig& c, const Window& window, Tokens* out) {
  Tokens t;
  if (window.has_reference_time && !std::isfinite(window.reference_time))
    return {ErrorCode::kNonFinite, "window reference_time is not finite"};
  // Patch values take ceil(n / P) * P floats a stream: a 1-sample stream of a modality with
  // P = 65536 takes 256 KiB. Bounded before anything is allocated (limits.hpp).
  double value_bytes = 0, all_patches = 0, all_values = 0;
  for (size_t s = 0; s < window.streams.size(); ++s) {
    SF_RETURN_IF_ERROR(validate(c, window.streams[s], s));
    const StreamInput& in = window.streams[s];
    const ModalityConfig& mod = c.modalities[c.modality_index(in.modality)];
    const double P = mod.patch_len;
    // an upsampled stream: at most R / r + 1 outputs an input sample
    const double grow = !in.event_driven() && mod.upsamples(in.rate_hz) ? mod.upsample_hz / in.rate_hz + 1.0 : 1.0;
    const double patches = std::ceil(in.samples.size() * grow / P);
    // P floats, ~64 bytes of labels a patch, and up to ~160 for grouping the tokens afterwards
    // (attend/layout.cpp: the channel block's map holds a node and a vector a time bin, one a
    // token at worst): counted here, where a window too large for them is refused before
    // anything is allocated. (Without it a window of 5 million tokens ran out of heap there.)
    value_bytes += patches * (4.0 * P + 224.0);
    all_patches += patches;
    all_values += patches * P;
  }
  const std::size_t limit = limits::budget(limits::kMaxWorkBytes);
  if (value_bytes > limit)
    return {ErrorCode::kResourceExhausted, "the window's patches would take " + std::to_string(static_cast<long long>(value_bytes / (1 << 20))) +
                                               " MiB (limit " + std::to_string(limit >> 20) + " MiB): use shorter windows"};
  // Reserved at their bounds: grown by doubling, the values would for a moment take 1.5x their
  // size (old and new buffer), past the budget just checked.
  t.values.reserve(static_cast<size_t>(all_values));
  t.time.reserve(static_cast<size_t>(all_patches));
  t.present.reserve(static_cast<size_t>(all_patches));
  t.value_offset.reserve(static_cast<size_t>(all_patches) + 1);
  double earliest = std::numeric_limits<double>::infinity();
  t.value_offset.push_back(0);
  std::vector<size_t> kept;  // a "leave-out" modality's event stream: the indices of its present events
  std::vector<float> upsampled;  // a regular stream read at its modality's upsample_hz
  for (size_t s = 0; s < window.streams.size(); ++s) {
    const StreamInput& in = window.streams[s];
    const int m = c.modality_index(in.modality);
    const ModalityConfig& mod = c.modalities[m];
    const bool up = !in.event_driven() && mod.upsamples(in.rate_hz);
    if (up) SF_RETURN_IF_ERROR(upsample(in, mod.upsample_hz, s, &upsampled));
    const std::vector<float>& xs = up ? upsampled : in.samples;
    const auto ok = [&](size_t i) { return up ? !std::isnan(xs[i]) : sample_present(in, i); };
    const double rate = up ? mod.upsample_hz : in.rate_hz;
    // Patched as if its missing events had never been sent (docs/model.md, "missing_events").
    const bool leave_out = mod.leave_out_missing_events && in.event_driven();
    kept.clear();
    for (size_t i = 0; leave_out && i < xs.size(); ++i)
      if (ok(i)) kept.push_back(i);
    const auto at = [&](size_t i) { return leave_out ? kept[i] : i; };  // slot -> the sample it holds
    const size_t n = leave_out ? kept.size() : xs.size(), P = mod.patch_len;
    const size_t K = (n + P - 1) / P;
    const size_t first = t.time.size();
    bool any_present = false;
    for (size_t k = 0; k < K; ++k) {
      size_t count = 0;
      for (size_t i = k * P; i < std::min(n, (k + 1) * P); ++i) count += ok(at(i));
      const bool present = static_cast<double>(count) / P >= c.min_present_fraction;
      any_present |= present;
      t.present.push_back(present);
      t.time.push_back(in.event_driven() ? in.timestamps[at(k * P)] : in.start_time + static_cast<double>(k * P) / rate);
      for (size_t j = 0; j < P; ++j) {
        const size_t i = k * P + j < n ? at(k * P + j) : xs.size();  // past the end: missing
        const bool use = present && i < xs.size() && ok(i);
        const float v = use ? (xs[i] - mod.mean) / mod.std : 0.0f;
        if (!std::isfinite(v))  // e.g. 3e38 with a std of 0.5: the float32 quotient overflows
          return stream_error(ErrorCode::kNonFinite, s, "sample " + std::to_string(i) + " normalised as (x - mean) / std = (" +
                              shortest(xs[i]) + " - " + shortest(mod.mean) + ") / " +
                              shortest(mod.std) + " overflows float32");
        t.values.push_back(v);
      }
      t.value_offset.push_back(t.values.size());
    }
    if (!any_present) {  // an entirely missing stream emits no tokens and costs nothing further
      t.present.resize(first);
      t.time.resize(first);
      t.value_offset.resize(first + 1);
      t.values.resize(t.value_offset.back());
      continue;
    }
    earliest = std::min(earliest, t.time[first]);
    const size_t added = t.time.size() - first;
    t.stream.insert(t.stream.end(), added, static_cast<int>(s));
    t.sensor.insert(t.sensor.end(), added, in.sensor);
    t.modality.insert(t.modality.end(), added, m);
    t.placement.insert(t.placement.end(), added, c.placement_index(in.placement));
    t.rate_bucket.insert(t.rate_bucket.end(), added, c.rate_bucket(rate, in.event_driven()));
  }
  t.count = static_cast<int>(t.time.size());
  t.reference_time = window.has_reference_time ? window.reference_time : (t.count ? earliest : 0.0);
  for (int i = 0; i < t.count; ++i) {
    const double dt = t.time[i] - t.reference_time;  // Inf for times at opposite ends of float64
    if (!(std::fabs(dt) <= limits::kMaxTimeOffsetSeconds))
      return stream_error(ErrorCode::kNonFinite, t.stream[i],
                          "token time " + shortest(t.time[i]) + " s is more than 1e12 s from the reference time " +
                          shortest(t.reference_time) + " s: its time encoding would not be finite");
  }
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace sf
