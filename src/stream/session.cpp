#include "stream/session.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "attend/encoder_layer.hpp"
#include "attend/kv_cache.hpp"
#include "core/format.hpp"
#include "core/limits.hpp"
#include "encode/token_embedding.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"
#include "model/model.hpp"
#include "pool/pooling.hpp"
#include "tokenize/upsample.hpp"

namespace sf {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Samples one push may give to all streams together (the missing samples of a gap are not
// counted: a gap costs its emitted absent tokens, at most kAbsentSpanSeconds of them per stream).
// 2^26 is 6 days of one 130 Hz stream.
constexpr std::int64_t kMaxSamplesPerPush = std::int64_t(1) << 26;

// Bytes the tokens staged by one push may take before its budgets are checked (each token's
// values, a PendingToken and its allocation): checked as tokens are staged, so that a push of
// 2^26 one-sample patches is refused before it allocates gigabytes (a failed allocation aborts
// WebAssembly).
constexpr double kMaxStagedBytes = 256.0 * (1 << 20);
constexpr double kStagedTokenBytes = sizeof(void*) * 4 + 64.0;

// Times anywhere in a session (startTime, timestamps, until) while no reference time is set yet:
// 1e15 s is 31 million years, far past any clock, and keeps every later check finite.
constexpr double kMaxAbsoluteTime = 1e15;

struct StreamState {
  int sensor = 0, modality = 0, placement = 0, rate_bucket = 0, patch_len = 1;
  bool event = false;
  double rate_hz = 0.0, start0 = 0.0;
  std::int64_t samples = 0;  // regular: samples so far, missing ones included
  std::int64_t patches = 0;  // complete patches (tokens, emitted or skipped) so far
  // Regular: the time of the last present patch (start0 before one): absent patches at or past
  // anchor + kAbsentSpanSeconds are skipped.
  double anchor = 0.0;
  // The incomplete patch: normalised values (missing: 0), presence, event times.
  std::vector<float> values;
  std::vector<std::uint8_t> present;
  std::vector<double> times;
  double last_event = -kInf, watermark = -kInf;
  // Upsampled (its modality's upsample_hz; upsample.hpp): rate_hz and samples are those of the
  // stream as read (R), in_rate and in_count the stream's own; hist holds its samples from index
  // hist_base on (NaN: missing), the four an output needs.
  double in_rate = 0.0;
  std::int64_t in_count = 0, hist_base = 0;
  std::vector<float> hist;
  // The grid a chunk's startTime and until are read on: the stream's own.
  double grid_rate() const { return in_rate > 0.0 ? in_rate : rate_hz; }
  std::int64_t grid_samples() const { return in_rate > 0.0 ? in_count : samples; }

  // No token of this stream can come with a time below this (see the header).
  double bound() const {
    if (!event) return patch_time(patches);
    if (!times.empty()) return times.front();
    return std::max(last_event, watermark);
  }
  // The tokenizer's expression (tokenizer.cpp), so that times agree to the bit with a forward.
  double patch_time(std::int64_t k) const { return start0 + static_cast<double>(k * patch_len) / rate_hz; }
};

struct PendingToken {
  int stream = 0;
  std::int64_t patch = 0;
  double time = 0.0;
  bool present = false;
  bool fresh = false;  // staged by the push under way (dropped if that push is refused)
  std::vector<float> values;  // (P) normalised; empty for an absent token (its values are unused)
};

struct HistoryEntry {
  double time;
  bool present;
};

Status stream_error(ErrorCode code, std::size_t s, const std::string& m) {
  return {code, "stream " + std::to_string(s) + ": " + m};
}

std::string num(double v) { return shortest(v); }

// Layer buffers kept between pushes beyond this are released after the push (see compute()).
constexpr std::size_t kMaxIdleWorkspaceBytes = std::size_t(1) << 20;

std::size_t workspace_bytes(const LayerWorkspace& ws) {
  const auto f = [](const std::vector<float>& v) { return v.capacity() * sizeof(float); };
  std::size_t bytes = f(ws.y) + f(ws.sa) + f(ws.hidden) + f(ws.linear1.panels) + f(ws.linear1.bias) + f(ws.linear2.panels) +
                      f(ws.linear2.bias) + f(ws.mha.qkv) + f(ws.mha.ctx) + f(ws.mha.head_map) +
                      ws.mha.causal_limit.capacity() * sizeof(int) + f(ws.mha.attention.buffer);
#ifdef SF_THREADS
  for (const auto& h : ws.mha.helper_attention) bytes += f(h.buffer);
#endif
  return bytes;
}

}  // namespace

struct StreamSession::State {
  const Model* model = nullptr;
  StreamOptions options;
  bool has_ref = false;
  double ref = 0.0;
  double frontier = -kInf;
  std::int64_t next_index = 0;
  std::vector<StreamState> streams;
  std::vector<PendingToken> pending;
  std::vector<AttentionBlock> blocks;
  std::vector<std::map<long long, KeyValueCache>> caches;  // [layer * blocks + block][group]
  // Entries [history_begin, size) are the final rows of the last history_s seconds; the dropped
  // front is reclaimed once it outnumbers them (erasing it on every push moved every kept row:
  // 6 MB a push at 4 x 800 Hz, BENCHMARKS.md "Streaming").
  std::vector<HistoryEntry> history;
  std::vector<float> history_rows;  // (history.size(), d)
  std::size_t history_begin = 0;
  LayerWorkspace ws;
};

struct StreamSession::Batch {
  std::vector<PendingToken> tokens;  // final, in time order
};

StreamSession::StreamSession() = default;
StreamSession::~StreamSession() = default;
StreamSession::StreamSession(StreamSession&&) noexcept = default;
StreamSession& StreamSession::operator=(StreamSession&&) noexcept = default;

bool StreamSession::has_reference_time() const { return s_ && s_->has_ref; }
double StreamSession::reference_time() const { return s_ ? s_->ref : 0.0; }
double StreamSession::frontier() const { return s_ ? s_->frontier : -kInf; }
int StreamSession::stream_count() const { return s_ ? static_cast<int>(s_->streams.size()) : 0; }
std::int64_t StreamSession::final_tokens() const { return s_ ? s_->next_index : 0; }

std::size_t StreamSession::memory_bytes() const {
  if (!s_) return 0;
  const State& s = *s_;
  std::size_t bytes = s.streams.capacity() * sizeof(StreamState) + s.pending.capacity() * sizeof(PendingToken);
  for (const StreamState& st : s.streams)
    bytes += st.values.capacity() * sizeof(float) + st.present.capacity() + st.times.capacity() * sizeof(double) + st.hist.capacity() * sizeof(float);
  for (const PendingToken& p : s.pending) bytes += p.values.capacity() * sizeof(float);
  for (const auto& groups : s.caches)
    for (const auto& [key, cache] : groups) bytes += sizeof(cache) + 48 + cache.bytes();  // ~48: a map node
  bytes += s.history.capacity() * sizeof(HistoryEntry) + s.history_rows.capacity() * sizeof(float);
  return bytes + workspace_bytes(s.ws);
}

Status StreamSession::create(const Model& model, const StreamOptions& options, StreamSession* out) {
  const ModelConfig& c = model.config();
  if (!c.causal)
    return {ErrorCode::kInvalidArgument,
            "this model is not causal (config \"causal\": false): its tokens attend to later tokens, so no token is "
            "ever final while data keeps arriving and it cannot be streamed; run it on windows with forward(), or "
            "train a causal model (with attention_lookback_s to bound a session's memory)"};
  if (options.has_reference_time && !std::isfinite(options.reference_time))
    return {ErrorCode::kNonFinite, "stream session: referenceTime is not finite"};
  if (!(options.history_s > 0.0) || !std::isfinite(options.history_s))
    return {ErrorCode::kInvalidArgument, "stream session: historySeconds must be finite and > 0, got " + num(options.history_s)};
  if (!(options.event_timeout_s > 0.0) || !std::isfinite(options.event_timeout_s))
    return {ErrorCode::kInvalidArgument, "stream session: eventTimeoutSeconds must be finite and > 0, got " + num(options.event_timeout_s)};
  if (!(options.max_gflop > 0.0))
    return {ErrorCode::kInvalidArgument, "stream session: maxGflop must be > 0, got " + num(options.max_gflop)};
  auto s = std::make_unique<State>();
  s->model = &model;
  s->options = options;
  s->has_ref = options.has_reference_time;
  s->ref = options.reference_time;
  s->blocks = layout_blocks(c.layout);
  s->caches.resize(static_cast<std::size_t>(c.n_layers) * s->blocks.size());
  out->s_ = std::move(s);
  return Status::Ok();
}

namespace {

// Everything one push changes before any token is computed, staged on copies so that a rejected
// chunk leaves the session as it was.
struct Staged {
  std::vector<StreamState> streams;
  std::vector<PendingToken> added;
  std::vector<SkippedRun> skipped;
  bool has_ref = false;
  double ref = 0.0;
  std::int64_t samples = 0;
  double token_bytes = 0.0;
};

// Patches [first, first + count) of stream `index` skipped (absent, past the span): extends the
// stream's run when it is the last one recorded (a stream's patches are staged together, in order).
void skip_patches(std::size_t index, const StreamState& st, std::int64_t first, std::int64_t count, Staged* staged) {
  if (count <= 0) return;
  const double from = st.patch_time(first);
  std::vector<SkippedRun>& runs = staged->skipped;
  if (runs.empty() || runs.back().stream != static_cast<int>(index) || runs.back().to != from)
    runs.push_back({static_cast<int>(index), from, from, 0});
  runs.back().to = st.patch_time(first + count);
  runs.back().patches += count;
}

Status stage_token(std::size_t index, PendingToken tok, Staged* staged) {
  staged->token_bytes += kStagedTokenBytes + 4.0 * static_cast<double>(tok.values.size());
  if (staged->token_bytes > kMaxStagedBytes)
    return stream_error(ErrorCode::kResourceExhausted, index, "this push makes more than 256 MiB of patches: give the samples in several pushes");
  staged->added.push_back(std::move(tok));
  return Status::Ok();
}

// Checks a time the caller gave against the reference time (or, before there is one, an absolute
// bound), so that no later expression (a sample index, a channel bin, the time encoding) can
// overflow or lose the token's time.
// field: "startTime", "until" or "timestamp" (then `at` >= 0 is the sample's index). The message
// is built only for a time that fails.
Status check_time(std::size_t index, const Staged& staged, const char* field, double t, long long at = -1) {
  const bool ok = staged.has_ref ? std::fabs(t - staged.ref) <= limits::kMaxTimeOffsetSeconds : std::fabs(t) <= kMaxAbsoluteTime;
  if (ok) return Status::Ok();  // false for NaN and infinities
  return stream_error(ErrorCode::kNonFinite, index,
                      std::string(field) + (at >= 0 ? " " + std::to_string(at) : "") + " " + num(t) +
                          " s: times must be finite and within 1e12 s of the session's reference time (1e15 s of 0 before it has one), "
                          "or their time encoding would not be finite");
}

Status append_sample(const ModelConfig& c, std::size_t index, StreamState* st, float value, bool given_present,
                     double time, Staged* staged) {
  const ModalityConfig& mod = c.modalities[st->modality];
  const bool present = given_present && !std::isnan(value);
  float v = 0.0f;
  if (present) {
    v = (value - mod.mean) / mod.std;
    // A session checks every present sample as it arrives (a window checks those of present
    // patches only): the patch's presence is not known until it is complete.
    if (!std::isfinite(v))
      return stream_error(ErrorCode::kNonFinite, index, "sample " + num(value) + " normalised as (x - mean) / std = (" +
                                                            num(value) + " - " + num(mod.mean) + ") / " + num(mod.std) +
                                                            " overflows float32");
  }
  st->values.push_back(v);
  st->present.push_back(present);
  if (st->event) st->times.push_back(time);
  if (!st->event) ++st->samples;
  if (static_cast<int>(st->values.size()) < st->patch_len) return Status::Ok();
  int count = 0;
  for (std::uint8_t p : st->present) count += p;
  PendingToken tok;
  tok.stream = static_cast<int>(index);
  tok.patch = st->patches;
  tok.time = st->event ? st->times.front() : st->patch_time(st->patches);
  tok.present = static_cast<double>(count) / st->patch_len >= c.min_present_fraction;
  if (tok.present) tok.values = std::move(st->values);
  st->values.clear();
  st->present.clear();
  st->times.clear();
  ++st->patches;
  if (!st->event) {
    if (tok.present) st->anchor = tok.time;
    if (!tok.present && tok.time >= st->anchor + kAbsentSpanSeconds) {
      skip_patches(index, *st, tok.patch, 1, staged);
      return Status::Ok();
    }
  }
  return stage_token(index, std::move(tok), staged);
}

// Appends `count` missing samples to a regular stream (a gap): the incomplete patch is completed
// sample by sample, whole absent patches are emitted while within kAbsentSpanSeconds of the
// stream's last present patch and skipped in one step after it, so a gap of any length costs at
// most the span's tokens.
Status fill_missing(const ModelConfig& c, std::size_t index, StreamState* st, std::int64_t count, Staged* staged) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (; count > 0 && !st->values.empty(); --count) SF_RETURN_IF_ERROR(append_sample(c, index, st, nan, false, 0.0, staged));
  const std::int64_t P = st->patch_len;
  std::int64_t whole = count / P;
  for (; whole > 0 && st->patch_time(st->patches) < st->anchor + kAbsentSpanSeconds; --whole, count -= P) {
    PendingToken tok;
    tok.stream = static_cast<int>(index);
    tok.patch = st->patches++;
    tok.time = st->patch_time(tok.patch);
    st->samples += P;
    SF_RETURN_IF_ERROR(stage_token(index, std::move(tok), staged));
  }
  skip_patches(index, *st, st->patches, whole, staged);
  st->patches += whole;
  st->samples += whole * P;
  count -= whole * P;
  for (; count > 0; --count) SF_RETURN_IF_ERROR(append_sample(c, index, st, nan, false, 0.0, staged));
  return Status::Ok();
}

// An upsampled stream's outputs whose four inputs have all arrived (upsample.hpp), in order; then
// only the inputs the next output needs are kept.
Status emit_upsampled(const ModelConfig& c, std::size_t index, StreamState* st, Staged* staged) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (;;) {
    const double u = upsample_position(st->samples, st->in_rate, st->rate_hz), fl = std::floor(u);
    const auto b = static_cast<std::int64_t>(fl);
    if (b + 2 >= st->in_count) break;
    float taps[4];
    for (int k = 0; k < 4; ++k) {
      const std::int64_t at = b - 1 + k;  // before hist_base: before the stream, or inside a gap
      taps[k] = at < st->hist_base ? nan : st->hist[static_cast<std::size_t>(at - st->hist_base)];
    }
    const float v = keys_cubic(taps, u - fl);
    SF_RETURN_IF_ERROR(check_interpolated(v, index, b));
    SF_RETURN_IF_ERROR(append_sample(c, index, st, v, !std::isnan(v), 0.0, staged));
  }
  const auto keep = static_cast<std::int64_t>(std::floor(upsample_position(st->samples, st->in_rate, st->rate_hz))) - 1;
  if (keep > st->hist_base) {
    const std::int64_t drop = std::min<std::int64_t>(keep - st->hist_base, static_cast<std::int64_t>(st->hist.size()));
    st->hist.erase(st->hist.begin(), st->hist.begin() + drop);
    st->hist_base += drop;
  }
  return Status::Ok();
}

// One sample of a regular stream, on its own grid.
Status input_sample(const ModelConfig& c, std::size_t index, StreamState* st, float value, bool present, Staged* staged) {
  if (st->in_rate == 0.0) return append_sample(c, index, st, value, present, 0.0, staged);
  st->hist.push_back(present ? value : std::numeric_limits<float>::quiet_NaN());
  ++st->in_count;
  return emit_upsampled(c, index, st, staged);
}

// count missing samples of a regular stream, on its own grid. Upsampled: every output not emitted
// yet has its last input at or after the gap's start, and every later output with an input before
// the gap has one inside it too (its four inputs are consecutive), so the outputs up to the gap's
// end are missing: one fill_missing (which skips the patches of a long gap as a regular stream's
// own gap does). Nothing of the gap is kept: an input before hist_base reads as missing.
Status input_missing(const ModelConfig& c, std::size_t index, StreamState* st, std::int64_t count, Staged* staged) {
  if (st->in_rate == 0.0) return fill_missing(c, index, st, count, staged);
  if (count <= 0) return Status::Ok();
  st->in_count += count;
  // the first output whose last input has not arrived: from a j that surely has, forwards
  std::int64_t j = std::max<std::int64_t>(st->samples, static_cast<std::int64_t>(std::floor((st->in_count - 2) * st->rate_hz / st->in_rate)) - 2);
  while (static_cast<std::int64_t>(std::floor(upsample_position(j, st->in_rate, st->rate_hz))) + 2 < st->in_count) ++j;
  SF_RETURN_IF_ERROR(fill_missing(c, index, st, j - st->samples, staged));
  st->hist.clear();
  st->hist_base = st->in_count;
  return Status::Ok();
}

Status declare(const ModelConfig& c, std::size_t i, const ChunkStream& in, double frontier, const Staged* staged, StreamState* st) {
  if (!in.has_descriptor)
    return stream_error(ErrorCode::kInvalidArgument, i, "the session has not seen this stream yet: its first chunk must describe it (sensor, modality, placement, and rateHz + startTime or timestamps)");
  if (in.sensor < 0 || in.sensor >= c.n_sensors)
    return stream_error(ErrorCode::kIndexOutOfRange, i, "sensor " + std::to_string(in.sensor) + " is outside the model's " + std::to_string(c.n_sensors) + " sensors");
  st->modality = c.modality_index(in.modality);
  if (st->modality < 0) return stream_error(ErrorCode::kInvalidArgument, i, "modality \"" + in.modality + "\" is not one the model knows");
  st->placement = c.placement_index(in.placement);
  if (st->placement < 0) return stream_error(ErrorCode::kInvalidArgument, i, "placement \"" + in.placement + "\" is not one the model knows");
  st->sensor = in.sensor;
  st->event = in.event_driven;
  st->patch_len = c.modalities[st->modality].patch_len;
  if (st->event) {
    if (in.rate_hz != 0.0) return stream_error(ErrorCode::kInvalidArgument, i, "give rateHz or timestamps, not both");
    // Joining a session whose tokens are final up to `frontier`: no event of it may come earlier.
    st->watermark = frontier;
  } else {
    if (!(in.rate_hz > 0.0) || !std::isfinite(in.rate_hz))
      return stream_error(ErrorCode::kInvalidArgument, i, "a regular stream needs a finite rateHz > 0 (or give timestamps)");
    if (!(in.rate_hz <= kMaxRateHz))
      return stream_error(ErrorCode::kInvalidArgument, i, "rateHz " + num(in.rate_hz) + " is over the session's limit of 1e6 Hz");
    if (!in.has_start_time) return stream_error(ErrorCode::kInvalidArgument, i, "a regular stream's first chunk needs startTime (the time of its first sample)");
    SF_RETURN_IF_ERROR(check_time(i, *staged, "startTime", in.start_time));
    if (in.start_time < frontier)
      return stream_error(ErrorCode::kInvalidArgument, i,
                          "this new stream starts at " + num(in.start_time) + " s, before the session's frontier " + num(frontier) +
                              " s: tokens up to the frontier are already final. Declare every stream in the session's first chunk "
                              "(with no samples if it has none yet), so that finality waits for it");
    st->rate_hz = in.rate_hz;
    st->start0 = in.start_time;
    st->anchor = in.start_time;
    const ModalityConfig& mod = c.modalities[st->modality];
    if (mod.upsamples(in.rate_hz)) {  // read at the modality's rate (the tokenizer's check and message)
      SF_RETURN_IF_ERROR(check_upsample_rate(mod, in.rate_hz, i, "rateHz"));
      st->in_rate = in.rate_hz;
      st->rate_hz = mod.upsample_hz;
    }
  }
  st->rate_bucket = c.rate_bucket(st->event ? in.rate_hz : st->rate_hz, st->event);
  return Status::Ok();
}

Status check_descriptor(const ModelConfig& c, std::size_t i, const ChunkStream& in, const StreamState& st) {
  if (!in.has_descriptor) return Status::Ok();
  const auto differs = [&](const std::string& field, const std::string& got, const std::string& has) {
    return stream_error(ErrorCode::kInvalidArgument, i, field + " " + got + " differs from the stream's " + has +
                                                            " (a session's streams keep their description)");
  };
  if (in.sensor != st.sensor) return differs("sensor", std::to_string(in.sensor), std::to_string(st.sensor));
  if (in.modality != c.modalities[st.modality].name) return differs("modality", "\"" + in.modality + "\"", "\"" + c.modalities[st.modality].name + "\"");
  if (in.placement != c.placements[st.placement]) return differs("placement", "\"" + in.placement + "\"", "\"" + c.placements[st.placement] + "\"");
  if (in.event_driven != st.event) return differs("kind", in.event_driven ? "event-driven" : "regular", st.event ? "event-driven" : "regular");
  if (!st.event && in.rate_hz != st.grid_rate()) return differs("rateHz", num(in.rate_hz), num(st.grid_rate()));
  return Status::Ok();
}

// An event patch spans at most event_timeout_s: once an event or the watermark (`until`) is later
// than its first event by more than that, the patch is closed with its missing events marked
// missing (NaN at the last received event's time, which keeps the stream's times non-decreasing),
// as a window holding the same events plus those NaN events tokenizes it. A device that left
// part-way through a patch then no longer holds finality back. Decided on event times and the
// watermark alone, so any chunking gives the same tokens: a watermark past the limit means no
// event before it is still to come, and an event past the limit closes the patch just the same.
Status close_stale_patch(const ModelConfig& c, const StreamOptions& options, std::size_t i, StreamState* st, double now,
                         Staged* staged) {
  if (st->times.empty() || !(now - st->times.front() > options.event_timeout_s)) return Status::Ok();
  const double t = st->times.back();
  while (!st->times.empty()) SF_RETURN_IF_ERROR(append_sample(c, i, st, std::numeric_limits<float>::quiet_NaN(), false, t, staged));
  return Status::Ok();
}

Status append(const ModelConfig& c, const StreamOptions& options, std::size_t i, const ChunkStream& in, bool is_new, Staged* staged) {
  StreamState& st = staged->streams[i];
  const std::size_t n = in.samples.size();
  if (!in.present.empty() && in.present.size() != n)
    return stream_error(ErrorCode::kShapeMismatch, i, "present has " + std::to_string(in.present.size()) + " entries for " + std::to_string(n) + " samples");
  for (std::size_t j = 0; j < n; ++j)
    if (std::isinf(in.samples[j]))
      return stream_error(ErrorCode::kNonFinite, i, "sample " + std::to_string(j) + " is " + (in.samples[j] > 0 ? "+Inf" : "-Inf") + " (NaN marks a missing sample)");
  if (in.has_until) SF_RETURN_IF_ERROR(check_time(i, *staged, "until", in.until));
  const auto present = [&](std::size_t j) { return in.present.empty() || in.present[j] != 0; };
  if (st.event) {
    if (!in.timestamps.size() && n) return stream_error(ErrorCode::kShapeMismatch, i, "an event-driven stream's samples need timestamps");
    if (in.timestamps.size() != n)
      return stream_error(ErrorCode::kShapeMismatch, i, "timestamps has " + std::to_string(in.timestamps.size()) + " entries for " + std::to_string(n) + " samples");
    if (!in.event_driven && in.rate_hz != 0.0) return stream_error(ErrorCode::kInvalidArgument, i, "an event-driven stream takes timestamps, not rateHz");
    staged->samples += static_cast<std::int64_t>(n);
    if (staged->samples > kMaxSamplesPerPush)
      return stream_error(ErrorCode::kResourceExhausted, i, "more than " + std::to_string(kMaxSamplesPerPush) + " samples in one push");
    for (std::size_t j = 0; j < n; ++j) {
      const double t = in.timestamps[j];
      SF_RETURN_IF_ERROR(check_time(i, *staged, "timestamp", t, static_cast<long long>(j)));
      if (t < st.last_event)
        return stream_error(ErrorCode::kInvalidArgument, i, "timestamp " + std::to_string(j) + " (" + num(t) + " s) is earlier than the stream's previous event (" +
                                                                num(st.last_event) + " s): events are appended in time order");
      if (t < st.watermark)
        return stream_error(ErrorCode::kInvalidArgument, i, "timestamp " + std::to_string(j) + " (" + num(t) + " s) is earlier than the stream's watermark (" +
                                                                num(st.watermark) + " s): `until` said no event before it would come" +
                                                                (is_new ? " (a stream that joins a session starts at its frontier)" : ""));
      st.last_event = t;
      // A "leave-out" modality's missing event is dropped, as the tokenizer drops it from a window:
      // the tokens are those of the stream without it (its time still orders the stream).
      if (c.modalities[st.modality].leave_out_missing_events && (!present(j) || std::isnan(in.samples[j]))) continue;
      SF_RETURN_IF_ERROR(close_stale_patch(c, options, i, &st, t, staged));
      SF_RETURN_IF_ERROR(append_sample(c, i, &st, in.samples[j], present(j), t, staged));
    }
    if (in.has_until) {
      st.watermark = std::max(st.watermark, in.until);
      SF_RETURN_IF_ERROR(close_stale_patch(c, options, i, &st, st.watermark, staged));
    }
    return Status::Ok();
  }
  if (!in.timestamps.empty() || in.event_driven) return stream_error(ErrorCode::kInvalidArgument, i, "a regular stream takes samples on its rate, not timestamps");
  // Where this chunk's first sample falls on the stream's grid start0 + j / rateHz.
  // (An upsampled stream's chunks are on its own grid too: grid_rate, grid_samples.)
  const auto slot = [&](double t) { return (t - st.start0) * st.grid_rate(); };
  if (in.has_start_time && !is_new) {
    SF_RETURN_IF_ERROR(check_time(i, *staged, "startTime", in.start_time));
    const double x = slot(in.start_time);
    const std::int64_t got = st.grid_samples();
    if (x < static_cast<double>(got) - 0.5)
      return stream_error(ErrorCode::kInvalidArgument, i,
                          "startTime " + num(in.start_time) + " s is sample " + num(x) + " of the stream, but " + std::to_string(got) +
                              " samples were already received (the next is due at " + num(st.start0 + got / st.grid_rate()) +
                              " s): chunks must not overlap");
    SF_RETURN_IF_ERROR(input_missing(c, i, &st, std::llround(x) - got, staged));
  }
  staged->samples += static_cast<std::int64_t>(n);
  if (staged->samples > kMaxSamplesPerPush)
    return stream_error(ErrorCode::kResourceExhausted, i, "more than " + std::to_string(kMaxSamplesPerPush) + " samples in one push");
  for (std::size_t j = 0; j < n; ++j) SF_RETURN_IF_ERROR(input_sample(c, i, &st, in.samples[j], present(j) && !std::isnan(in.samples[j]), staged));
  if (in.has_until) {
    // Samples with time start0 + j / rateHz < until that were not received are missing.
    const double x = std::ceil(slot(in.until));
    if (x > static_cast<double>(st.grid_samples())) SF_RETURN_IF_ERROR(input_missing(c, i, &st, static_cast<std::int64_t>(x) - st.grid_samples(), staged));
  }
  return Status::Ok();
}

// The budgets of one push, from the tokens it makes final (pending ones and the staged `added`
// with time < frontier) and the live keys of the groups they join, checked before anything of the
// push is kept, so that compute() cannot fail half-way: attention rows past
// limits::kMaxAttentionMapBytes, working memory past limits::kMaxWorkBytes, cost past max_gflop.
// The cost is counted as Model::forward_gflop counts a window: P d per token to embed, projections
// and feed-forward per token, layer and block, and 2 d MACs per query-key pair in reach (the causal
// cut and the look-back: keys in [t - W, t]).
Status check_budgets(const ModelConfig& c, const StreamOptions& options, const std::vector<AttentionBlock>& blocks,
                     const std::vector<std::map<long long, KeyValueCache>>& caches, const std::vector<StreamState>& streams,
                     const std::vector<PendingToken>& pending, const std::vector<PendingToken>& added, double frontier, double ref) {
  const double d = c.d_model, ff = c.dim_feedforward, H = c.n_heads, L = c.n_layers, W = c.attention_lookback_s;
  const std::size_t nb = blocks.size();
  double macs = 0, values = 0;
  // The new tokens' labels in stream order, as a window lists them, grouped by the layout's own
  // functions (layout.cpp) as a forward groups its tokens.
  std::vector<std::vector<double>> by_stream(streams.size());
  for (const std::vector<PendingToken>* list : {&pending, &added})
    for (const PendingToken& p : *list)
      if (p.time < frontier) {
        const double P = streams[p.stream].patch_len;
        values += P;
        macs += P * d;
        by_stream[p.stream].push_back(p.time);
      }
  Tokens t;
  t.reference_time = ref;
  for (std::size_t i = 0; i < by_stream.size(); ++i) {
    t.stream.insert(t.stream.end(), by_stream[i].size(), static_cast<int>(i));
    t.time.insert(t.time.end(), by_stream[i].begin(), by_stream[i].end());
  }
  t.count = static_cast<int>(t.time.size());
  const double m = t.count;
  if (m == 0) return Status::Ok();
  double pairs = 0, largest = 0, rectangle = 0, keys_largest = 0;
  for (std::size_t b = 0; b < nb; ++b)
    for (const std::vector<int>& g : group_tokens(t, blocks[b], c.time_bin)) {
      long long key = 0;
      if (blocks[b] == AttentionBlock::kTime) key = t.stream[g[0]];
      if (blocks[b] == AttentionBlock::kChannel) key = static_cast<long long>(std::floor((t.time[g[0]] - ref) / c.time_bin));
      const auto it = caches[b].find(key);  // layer 0's; every layer's caches hold the same keys
      const KeyValueCache* cache = it == caches[b].end() ? nullptr : &it->second;
      const std::size_t live = cache ? cache->live() : 0;
      std::vector<double> times(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) times[i] = t.time[g[i]];
      // Keys with time <= t and t - time <= W, the expressions of the forward's masks; cached keys
      // are all earlier than every new token.
      const std::vector<int> limits = time_causal_limits(times);
      std::vector<int> starts;
      if (c.has_lookback()) starts = time_lookback_starts(times, W);
      std::size_t cached_start = 0;
      for (std::size_t i = 0; i < g.size(); ++i) {
        while (cached_start < live && times[i] - cache->time[cache->begin + cached_start] > W) ++cached_start;
        pairs += static_cast<double>(limits[i] - (starts.empty() ? 0 : starts[i])) + static_cast<double>(live - cached_start);
      }
      const double n = static_cast<double>(g.size());
      largest = std::max(largest, n);
      keys_largest = std::max(keys_largest, n + live);
      rectangle = std::max(rectangle, n * (n + live));  // compute()'s per-group weights: (H, n, live + n)
    }
  pairs *= L;
  macs += m * (4 * d * d + 2 * d * ff) * L * nb + 2 * d * pairs;
  const std::string tokens = "this push makes " + std::to_string(static_cast<long long>(m)) + " tokens final; they";
  double row_bytes = 0;  // allocated beside the working memory
  if (options.attention_rows) {
    // The rows returned: per query and key in reach a weight per head, the key's index and time;
    // while computing, one group's weights over all its live keys.
    const double rows = pairs * (4.0 * H + 16.0) + m * L * nb * 96.0, group = 4.0 * H * rectangle;
    row_bytes = rows + group;
    if (rows > limits::kMaxAttentionMapBytes || group > limits::kMaxAttentionMapBytes)
      return {ErrorCode::kResourceExhausted, tokens + " would need " + std::to_string(static_cast<long long>(std::max(rows, group) / (1 << 20))) +
                                                 " MiB of attention rows (limit 256 MiB): push shorter chunks, or start the session "
                                                 "without { attention: true }"};
  }
  // Embeddings and token values kept for the update, the largest group's layer buffers and its
  // keys' projections.
  const double work = 4.0 * (3.0 * m * d + values) + 96.0 * m + 4.0 * largest * (7.0 * d + ff) + 8.0 * keys_largest * d;
  const std::size_t limit = limits::budget(limits::kMaxWorkBytes, row_bytes);
  if (work > limit)
    return {ErrorCode::kResourceExhausted, tokens + " need about " + std::to_string(static_cast<long long>(work / (1 << 20))) +
                                               " MiB of working memory (limit " + std::to_string(limit >> 20) +
                                               " MiB): push shorter chunks"};
  const double gflop = 2 * macs / 1e9;
  if (!(gflop <= options.max_gflop)) {
    char numbers[2][32];
    std::snprintf(numbers[0], sizeof numbers[0], "%.4g", gflop);
    std::snprintf(numbers[1], sizeof numbers[1], "%.4g", options.max_gflop);
    return {ErrorCode::kResourceExhausted, tokens + " need about " + numbers[0] + " GFLOP, over the limit of " + numbers[1] +
                                               " GFLOP: push shorter chunks, or raise the limit (session option maxGflop)"};
  }
  return Status::Ok();
}

}  // namespace

Status StreamSession::push(const Chunk& chunk, StreamUpdate* out) {
  if (!s_) return {ErrorCode::kInvalidArgument, "stream session: not created (StreamSession::create)"};
  State& s = *s_;
  const ModelConfig& c = s.model->config();
  if (chunk.streams.size() > static_cast<std::size_t>(kMaxSessionStreams))
    return {ErrorCode::kInvalidArgument, "chunk: " + std::to_string(chunk.streams.size()) + " streams, over the session's limit of " +
                                             std::to_string(kMaxSessionStreams)};
  if (!chunk.skip.empty() && chunk.skip.size() != chunk.streams.size())
    return {ErrorCode::kShapeMismatch, "chunk: skip has " + std::to_string(chunk.skip.size()) + " entries for " + std::to_string(chunk.streams.size()) + " streams"};
  const auto skipped = [&](std::size_t i) { return !chunk.skip.empty() && chunk.skip[i]; };

  Staged staged;
  staged.streams = s.streams;  // the incomplete patches only: small
  staged.has_ref = s.has_ref;
  staged.ref = s.ref;
  if (!staged.has_ref) {  // the earliest time this chunk gives
    // Only a time within the absolute limit can become the reference: one past it (1e300 s) would
    // pass every later check relative to itself, and the session's bins would overflow int64. Such
    // a time is then refused by check_time against the absolute limit.
    const auto usable = [](double t) { return std::fabs(t) <= kMaxAbsoluteTime; };
    double earliest = kInf;
    for (std::size_t i = 0; i < chunk.streams.size(); ++i) {
      if (skipped(i)) continue;
      const ChunkStream& in = chunk.streams[i];
      const bool event = i < s.streams.size() ? s.streams[i].event : in.event_driven;
      if (event && !in.timestamps.empty() && usable(in.timestamps.front())) earliest = std::min(earliest, in.timestamps.front());
      if (!event && in.has_start_time && usable(in.start_time)) earliest = std::min(earliest, in.start_time);
    }
    if (earliest < kInf) staged.has_ref = true, staged.ref = earliest;
  }
  for (std::size_t i = 0; i < chunk.streams.size(); ++i) {
    if (skipped(i)) continue;
    const ChunkStream& in = chunk.streams[i];
    const bool is_new = i >= staged.streams.size();
    if (is_new) {
      if (i > staged.streams.size())
        return stream_error(ErrorCode::kInvalidArgument, i, "stream " + std::to_string(staged.streams.size()) +
                                                                " has never been given: streams join a session in order");
      staged.streams.emplace_back();
      SF_RETURN_IF_ERROR(declare(c, i, in, s.frontier, &staged, &staged.streams.back()));
    } else {
      SF_RETURN_IF_ERROR(check_descriptor(c, i, in, staged.streams[i]));
    }
    SF_RETURN_IF_ERROR(append(c, s.options, i, in, is_new, &staged));
  }
  // New tokens' value bytes, bounded like a window's (tokenizer.cpp).
  double value_bytes = 0;
  for (const PendingToken& t : s.pending) value_bytes += 4.0 * t.values.size() + 64.0;
  for (const PendingToken& t : staged.added) value_bytes += 4.0 * t.values.size() + 64.0;
  if (value_bytes > limits::kMaxWorkBytes)
    return {ErrorCode::kResourceExhausted, "stream session: the patches waiting to be final would take " +
                                               std::to_string(static_cast<long long>(value_bytes / (1 << 20))) +
                                               " MiB: a stream holds finality back (mark its gaps with `until`)"};
  for (const PendingToken& t : staged.added) {
    const double dt = t.time - staged.ref;
    if (!(std::fabs(dt) <= limits::kMaxTimeOffsetSeconds))
      return stream_error(ErrorCode::kNonFinite, t.stream, "token time " + num(t.time) + " s is more than 1e12 s from the reference time " +
                                                               num(staged.ref) + " s: its time encoding would not be finite");
  }

  // The tokens that become final, and what computing them takes, before anything is kept.
  double frontier = staged.streams.empty() ? -kInf : kInf;
  for (const StreamState& st : staged.streams) frontier = std::min(frontier, st.bound());
  frontier = std::max(frontier, s.frontier);
  SF_RETURN_IF_ERROR(check_budgets(c, s.options, s.blocks, s.caches, staged.streams, s.pending, staged.added, frontier, staged.ref));

  // Commit the staged input, then compute the tokens that became final. A computation can still
  // fail (extreme inputs overflow float32 inside a layer; finite outputs are checked), so what it
  // changes is noted first and put back then: a refused push leaves the session as it was. (The
  // streams are swapped, not copied: staged.streams keeps the old ones until the push is done.)
  const bool old_has_ref = s.has_ref;
  const double old_ref = s.ref, old_frontier = s.frontier;
  const std::int64_t old_index = s.next_index;
  struct Live {
    std::size_t lb;
    long long key;
    std::size_t live;
  };
  std::vector<Live> old_live;
  for (std::size_t lb = 0; lb < s.caches.size(); ++lb)
    for (const auto& [key, cache] : s.caches[lb]) old_live.push_back({lb, key, cache.live()});
  for (PendingToken& t : staged.added) t.fresh = true;
  std::swap(s.streams, staged.streams);
  s.has_ref = staged.has_ref;
  s.ref = staged.ref;
  for (PendingToken& t : staged.added) s.pending.push_back(std::move(t));
  std::vector<PendingToken> ready, waiting;
  for (PendingToken& t : s.pending) (t.time < frontier ? ready : waiting).push_back(std::move(t));
  s.pending = std::move(waiting);
  s.frontier = frontier;
  // (time, stream, patch) is unique per token, so std::sort is deterministic here.
  std::sort(ready.begin(), ready.end(), [](const PendingToken& a, const PendingToken& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.stream != b.stream) return a.stream < b.stream;
    return a.patch < b.patch;
  });
  StreamUpdate u;
  u.frontier = frontier;
  u.skipped = std::move(staged.skipped);
  Batch batch{std::move(ready)};
  const Status st = compute(batch, &u);
  if (!st.ok()) {
    std::swap(s.streams, staged.streams);
    s.has_ref = old_has_ref, s.ref = old_ref, s.frontier = old_frontier, s.next_index = old_index;
    std::vector<PendingToken> kept;
    for (std::vector<PendingToken>* list : {&s.pending, &batch.tokens})
      for (PendingToken& t : *list)
        if (!t.fresh) kept.push_back(std::move(t));
    s.pending = std::move(kept);
    std::size_t k = 0;  // old_live lists the groups in map order: new groups are erased
    for (std::size_t lb = 0; lb < s.caches.size(); ++lb)
      for (auto it = s.caches[lb].begin(); it != s.caches[lb].end();)
        if (k < old_live.size() && old_live[k].lb == lb && old_live[k].key == it->first) {
          it->second.truncate(old_live[k++].live);
          ++it;
        } else {
          it = s.caches[lb].erase(it);
        }
    return st;
  }
  for (PendingToken& t : s.pending) t.fresh = false;
  *out = std::move(u);
  return Status::Ok();
}

// The forward's stages on a batch of final tokens: embed, then per layer and block each group's new
// rows through the encoder layer with attention over the group's cached keys, then the final norm.
Status StreamSession::compute(Batch& batch, StreamUpdate* out) {
  State& s = *s_;
  const Model& model = *s.model;
  const ModelConfig& c = model.config();
  const int d = c.d_model, H = c.n_heads, m = static_cast<int>(batch.tokens.size());
  const kernels::KernelSet ks = s.options.kernels;
  const bool ref = ks == kernels::KernelSet::kReference;
  Tokens& t = out->tokens;
  t.count = m;
  t.reference_time = s.ref;
  t.value_offset.push_back(0);
  for (const PendingToken& p : batch.tokens) {
    const StreamState& st = s.streams[p.stream];
    t.stream.push_back(p.stream);
    t.sensor.push_back(st.sensor);
    t.modality.push_back(st.modality);
    t.placement.push_back(st.placement);
    t.rate_bucket.push_back(st.rate_bucket);
    t.time.push_back(p.time);
    t.present.push_back(p.present);
    if (p.values.empty()) t.values.resize(t.values.size() + st.patch_len, 0.0f);  // absent: unused zeros
    else t.values.insert(t.values.end(), p.values.begin(), p.values.end());
    t.value_offset.push_back(t.values.size());
    out->index.push_back(s.next_index++);
  }
  if (m > 0) {
    std::vector<float>& x = out->embeddings;
    x.assign(static_cast<std::size_t>(m) * d, 0.0f);
    SF_RETURN_IF_ERROR(embed_tokens(c, model.embedding_, t, ks, x.data()));
    const EncoderLayerOptions lo{c.norm_first, c.activation, c.layer_norm_eps, ks};
    const double W = c.attention_lookback_s;
    const std::size_t nb = s.blocks.size();
    std::vector<float> rows, weights;
    std::vector<double> times;
    std::vector<std::uint8_t> ignore;
    std::vector<std::int64_t> index;
    std::vector<int> starts, limits;
    for (int l = 0; l < c.n_layers; ++l)
      for (std::size_t b = 0; b < nb; ++b) {
        const AttentionBlock block = s.blocks[b];
        const EncoderLayerWeights& w = b == 0 ? model.layers_[l] : model.channel_layers_[l];
        // The batch's tokens by group (layout.cpp's keys), each group's members in batch order.
        std::map<long long, std::vector<int>> groups;
        for (int i = 0; i < m; ++i) {
          long long key = 0;
          if (block == AttentionBlock::kTime) key = t.stream[i];
          if (block == AttentionBlock::kChannel) key = static_cast<long long>(std::floor((t.time[i] - s.ref) / c.time_bin));
          groups[key].push_back(i);
        }
        for (const auto& [key, members] : groups) {
          const int n = static_cast<int>(members.size());
          KeyValueCache& cache = s.caches[l * nb + b][key];
          cache.embed_dim = d;
          rows.resize(static_cast<std::size_t>(n) * d);
          times.resize(n);
          ignore.resize(n);
          index.resize(n);
          for (int i = 0; i < n; ++i) {
            std::memcpy(rows.data() + static_cast<std::size_t>(i) * d, x.data() + static_cast<std::size_t>(members[i]) * d, d * sizeof(float));
            times[i] = t.time[members[i]];
            ignore[i] = !t.present[members[i]];
            index[i] = out->index[members[i]];
          }
          const std::size_t keys = cache.live() + n;  // after this group's keys are appended
          float* maps = nullptr;
          if (s.options.attention_rows) {
            SF_RETURN_IF_ERROR(check_mha_budget(d, H, n, static_cast<int>(keys), AttentionWeights::kPerHead));
            weights.assign(static_cast<std::size_t>(H) * n * keys, 0.0f);
            maps = weights.data();
          }
          SF_RETURN_IF_ERROR(encoder_layer_with(
              w, lo, rows.data(), n,
              [&](const float* in, float* sa) {
                return cached_attention(w.self_attn, in, n, times.data(), ignore.data(), index.data(), W, ks, &cache,
                                        &s.ws.mha, sa, &starts, &limits, maps);
              },
              &s.ws));
          for (int i = 0; i < n; ++i)
            std::memcpy(x.data() + static_cast<std::size_t>(members[i]) * d, rows.data() + static_cast<std::size_t>(i) * d, d * sizeof(float));
          if (!maps) continue;
          const std::size_t live = cache.live();
          for (int i = 0; i < n; ++i) {
            AttentionRow row;
            row.query = index[i];
            row.layer = l;
            row.block = block;
            std::vector<std::size_t> kept;
            for (int j = starts[i]; j < limits[i]; ++j)
              if (!cache.ignore[cache.begin + j]) kept.push_back(j);
            for (std::size_t j : kept) {
              row.keys.push_back(cache.index[cache.begin + j]);
              row.key_times.push_back(cache.time[cache.begin + j]);
            }
            for (int h = 0; h < H; ++h)
              for (std::size_t j : kept) row.weights.push_back(weights[(static_cast<std::size_t>(h) * n + i) * live + j]);
            out->attention.push_back(std::move(row));
          }
        }
      }
    if (c.final_norm)
      (ref ? kernels::layer_norm_ref : kernels::layer_norm)(x.data(), m, d, model.param("encoder.norm.weight"),
                                                            model.param("encoder.norm.bias"), c.layer_norm_eps, x.data());
    for (float v : x)
      if (!std::isfinite(v))
        return {ErrorCode::kNonFinite, "stream session: a token's embedding is not finite (weights too large for float32)"};
    // (query, layer, block) is unique per row.
    std::sort(out->attention.begin(), out->attention.end(), [](const AttentionRow& a, const AttentionRow& b) {
      if (a.query != b.query) return a.query < b.query;
      return a.layer != b.layer ? a.layer < b.layer : a.block < b.block;
    });
  }
  t.values.clear();
  t.value_offset.clear();

  // Evict what no later query can reach: every token still to come has time >= the frontier.
  const double f = out->frontier;
  if (std::isfinite(f)) {
    const double W = c.attention_lookback_s;
    for (std::size_t lb = 0; lb < s.caches.size(); ++lb) {
      const bool channel = s.blocks[lb % s.blocks.size()] == AttentionBlock::kChannel;
      const long long bin = static_cast<long long>(std::floor((f - s.ref) / c.time_bin));
      auto& groups = s.caches[lb];
      for (auto it = groups.begin(); it != groups.end();) {
        if (c.has_lookback()) it->second.evict(f, W);
        if ((channel && it->first < bin) || it->second.live() == 0)
          it = groups.erase(it);
        else
          ++it;
      }
    }
  }
  // The pooling history: the final rows of the last history_s seconds.
  for (int i = 0; i < m; ++i) s.history.push_back({t.time[i], t.present[i] != 0});
  s.history_rows.insert(s.history_rows.end(), out->embeddings.begin(), out->embeddings.end());
  std::size_t& begin = s.history_begin;
  while (begin < s.history.size() && s.history[begin].time < f - s.options.history_s) ++begin;
  if (begin > 0 && begin >= s.history.size() - begin) {
    s.history.erase(s.history.begin(), s.history.begin() + begin);
    s.history_rows.erase(s.history_rows.begin(), s.history_rows.begin() + begin * d);
    begin = 0;
    if (s.history.capacity() > 4 * s.history.size() + 64) {  // after a burst: back to what history_s needs
      s.history.shrink_to_fit();
      s.history_rows.shrink_to_fit();
    }
  }
  // The layer buffers grow to the largest batch; a burst's would stay held (a 10 M-sample backlog:
  // hundreds of MB) while live pushes need a few KB.
  if (workspace_bytes(s.ws) > kMaxIdleWorkspaceBytes) s.ws = LayerWorkspace{};
  return Status::Ok();
}

Status StreamSession::pooled(double seconds, PooledResult* out) const {
  if (!s_) return {ErrorCode::kInvalidArgument, "stream session: not created (StreamSession::create)"};
  const State& s = *s_;
  if (!(seconds > 0.0) || !(seconds <= s.options.history_s))
    return {ErrorCode::kInvalidArgument, "pooled: seconds must be > 0 and at most the session's historySeconds (" + num(s.options.history_s) +
                                             "), got " + num(seconds)};
  const ModelConfig& c = s.model->config();
  const int d = c.d_model;
  PooledResult r;
  r.to = s.frontier;
  r.from = s.frontier - seconds;
  // The history is in time order: the range starts at the first row at or after `from`.
  const std::size_t first = static_cast<std::size_t>(
      std::partition_point(s.history.begin() + s.history_begin, s.history.end(),
                           [&](const HistoryEntry& e) { return !(e.time >= r.from); }) -
      s.history.begin());
  const int T = static_cast<int>(s.history.size() - first);
  std::vector<std::uint8_t> present(T);
  for (int i = 0; i < T; ++i) r.present_tokens += present[i] = s.history[first + i].present;
  r.pooled.assign(d, 0.0f);
  masked_mean(s.history_rows.data() + first * d, T, d, present.data(), r.pooled.data());
  if (c.n_outputs > 0) {
    r.head.resize(c.n_outputs);
    s.model->apply_head(r.pooled.data(), s.options.kernels == kernels::KernelSet::kReference, r.head.data());
  }
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace sf
