// Streaming inference: a causal model run incrementally over live streams, one batch of final
// tokens at a time, with per-layer, per-group key/value caches (docs/model.md, "Streaming sessions").
//
// A session has a fixed reference time. Chunks append samples to its streams (stream i of a chunk
// to stream i of the session). A token is **final** once no token at or before its time can still
// arrive: token time t < frontier = min over streams of the stream's bound, where the bound is
//   regular stream:      the start time of its next incomplete patch (startTime + kP / rateHz);
//   event-driven stream: the time of the first event of its incomplete patch, or, with none, the
//                        latest of its last event time and its watermark (`until`). An event
//                        patch spans at most event_timeout_s: an event or a watermark later than
//                        its first event by more closes it, its missing events marked missing (a
//                        device that left part-way through a patch).
// Final tokens are computed layer by layer against the cached keys and values of their groups
// (the causal model never lets a token see a later one), so each final token's embedding equals a
// full forward over everything received, with the same reference time, within float32 rounding.
// Keys older than frontier - attention_lookback_s are evicted: memory is bounded by the tokens of
// one look-back (plus the patches that are complete but not yet final).
//
// Gaps cost what they leave final, not their length: a regular stream's patches with no present
// sample are emitted as absent tokens for kAbsentSpanSeconds after the stream's last present patch
// (or its start), and skipped after that (counted in StreamUpdate::skipped), so a stream that
// resumes after two days, or a strap that leaves for good, costs at most a minute of absent tokens
// per stream. Absent tokens are masked as keys, so skipping them changes no other token.
// Every push is checked against its budgets (memory, attention rows, max_gflop) before anything of
// it is kept: a refused push leaves the session as it was.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attend/layout.hpp"
#include "core/limits.hpp"
#include "core/status.hpp"
#include "kernels/kernel_set.hpp"
#include "tokenize/tokenizer.hpp"

namespace sf {

class Model;

// A regular stream's patches with no present sample are emitted for this long after its last
// present patch (token times, patch start to patch start), then skipped (see above). A minute is
// the default pooled() span: a short dropout still shows as absent tokens, a long silence is
// counted instead of computed.
constexpr double kAbsentSpanSeconds = 60.0;

// Streams of one session (a chunk longer than this is refused before anything is allocated).
constexpr int kMaxSessionStreams = 4096;

// Largest regular rate a session accepts: far above any wearable (ECG 1 kHz, PPG 500 Hz); a rate
// of 1e300 Hz would pin the stream's bound, and with it finality, at its start time. It also keeps
// sample counts over 1e12 s (limits::kMaxTimeOffsetSeconds) exact in int64.
constexpr double kMaxRateHz = 1e6;

// One stream's part of a chunk. The descriptor (sensor, modality, placement, and rate_hz or
// event_driven) is required the first time the session sees the stream, and must match later.
struct ChunkStream {
  bool has_descriptor = false;
  int sensor = 0;
  std::string modality, placement;
  double rate_hz = 0.0;   // regular streams
  bool event_driven = false;
  // Regular streams: the time of this chunk's first sample. Required in the stream's first chunk;
  // later, optional: later than the next expected sample time means the samples in between are
  // missing (a gap); earlier by more than half a sample period is kInvalidArgument (overlap).
  bool has_start_time = false;
  double start_time = 0.0;
  std::vector<double> timestamps;     // event-driven: one per sample, non-decreasing, >= watermark
  std::vector<float> samples;         // NaN = missing
  std::vector<std::uint8_t> present;  // empty or one per sample
  // Watermark: nothing of this stream before `until` is still to come. Regular streams: samples
  // before it that were not received are missing (appended as such). Event-driven streams: no
  // event earlier than it will arrive. Monotone (a smaller value than before changes nothing).
  bool has_until = false;
  double until = 0.0;
};

struct Chunk {
  std::vector<ChunkStream> streams;  // entry i appends to session stream i; new streams at the end
  std::vector<std::uint8_t> skip;    // (streams.size()) or empty: 1 = nothing for this stream
};

struct StreamOptions {
  bool has_reference_time = false;
  double reference_time = 0.0;  // default: the earliest time of the first chunk that has one
  bool attention_rows = false;  // return each new token's attention rows over its keys
  double history_s = 60.0;      // final embeddings kept for pooled(); > 0
  // An event patch spans at most this: an event or the stream's watermark later than the patch's
  // first event by more closes it, its missing events marked missing (a strap that leaves part-way
  // through a patch would otherwise hold finality back forever). > 0.
  double event_timeout_s = 15.0;
  // Compute limit of one push, counted as forward counts it (Model::forward_gflop) for the tokens
  // the push makes final and the keys they attend to.
  double max_gflop = limits::kDefaultMaxGflop;
  kernels::KernelSet kernels = kernels::KernelSet::kSimd;
};

// One attention row of a new token (query) in one layer and block: its keys' session indices and
// times, and per-head weights (H, keys.size()) over exactly those keys (the look-back, causal cut
// and absent keys removed; the weights of each head sum to 1, or are all 0 with no key).
struct AttentionRow {
  std::int64_t query = 0;
  int layer = 0;
  AttentionBlock block = AttentionBlock::kFlattened;
  std::vector<std::int64_t> keys;
  std::vector<double> key_times;
  std::vector<float> weights;
};

// The tokens that became final in one push, in time order (ties: stream order). index: each
// token's position in the session's sequence of final tokens (0, 1, 2, ... over its lifetime).
// Patches of one stream that were skipped as a run: [from, to) in token times, `patches` of them.
struct SkippedRun {
  int stream = 0;
  double from = 0.0, to = 0.0;
  std::int64_t patches = 0;
};

struct StreamUpdate {
  Tokens tokens;  // labels (stream, modality, time, present, ...); values are not kept
  std::vector<std::int64_t> index;
  std::vector<float> embeddings;  // (m, d_model)
  std::vector<AttentionRow> attention;
  double frontier = 0.0;  // every token with time < frontier is final (-inf before any data)
  std::vector<SkippedRun> skipped;  // absent patches this push skipped instead of emitting
};

struct PooledResult {
  std::vector<float> pooled;  // (d_model): masked mean of final embeddings with time in [from, to)
  std::vector<float> head;    // (n_outputs), empty without a head
  int present_tokens = 0;     // tokens averaged (0: pooled is zero, head is its bias)
  double from = 0.0, to = 0.0;
};

class StreamSession {
 public:
  StreamSession();
  ~StreamSession();
  StreamSession(StreamSession&&) noexcept;
  StreamSession& operator=(StreamSession&&) noexcept;

  // A model that is not causal cannot be streamed (its tokens attend to later ones): refused with
  // kInvalidArgument saying so. The session keeps a pointer to the model, which must outlive it.
  static Status create(const Model& model, const StreamOptions& options, StreamSession* out);

  // Appends the chunk and computes the tokens that became final. On error nothing of the chunk is
  // kept (the session is as before the call), so the caller can fix and resend.
  Status push(const Chunk& chunk, StreamUpdate* out);

  // Masked mean over the final tokens with time in [frontier - seconds, frontier), and the head on
  // it. 0 < seconds <= history_s, else kInvalidArgument.
  Status pooled(double seconds, PooledResult* out) const;

  bool has_reference_time() const;
  double reference_time() const;
  double frontier() const;
  int stream_count() const;
  std::int64_t final_tokens() const;  // tokens emitted so far
  // Bytes held now: key/value caches, pending patches, pooling history (vector capacities).
  std::size_t memory_bytes() const;

 private:
  struct State;
  struct Batch;
  Status compute(Batch& batch, StreamUpdate* out);
  std::unique_ptr<State> s_;
};

}  // namespace sf
