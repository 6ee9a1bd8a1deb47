// Streaming sessions (src/stream/session.hpp, docs/model.md "Streaming sessions"): every final
// token a session returns is checked against an independent reference, a plain Model::forward of
// the window made of everything received so far (same reference time, each stream's samples
// concatenated, gaps as NaN), built here from what the test sent, not from the session.
//
// The harness below keeps that reference window, computes on its own which tokens must have become
// final after each push (the frontier rule of docs/model.md) and compares, push by push:
//   - the frontier, and the exact list of new tokens (stream, time, presence, modality, index), in
//     time order;
//   - each new token's embedding with the forward's row (tokens of a stream with no present patch
//     have no row in that forward: they are compared at the end, once the stream has one);
//   - pooled(seconds) and the head with the forward's rows in [frontier - seconds, frontier);
//   - with attention rows, each row with the forward's attention map restricted to its keys.
// Chunking, latencies, gaps and watermarks come from seeded std::mt19937 generators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/model.hpp"
#include "model_files.hpp"
#include "stream/session.hpp"
#include "testing.hpp"

namespace sf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Embeddings, pooled vectors and heads: 1e-5 absolute. The session computes a token's rows in
// batches of new tokens against cached keys and values, the forward in whole groups: the same
// float32 operations with sums tiled in another order (the PyTorch parity tests' tolerance, for
// the same reason). Measured differences are printed ("[ stream   ]" lines).
constexpr double kTol = 1e-5;
// Attention weights: probabilities from the same float32 scores, softmax sums over differently
// tiled keys: 1e-5 absolute as well.
constexpr double kWeightTol = 1e-5;

// Epoch seconds plus a binary fraction; the tracks' rates (130 Hz, 50 Hz, 4 Hz) make most sample
// times inexact in float64, which is the point: session and forward must agree to the bit.
constexpr double kT0 = 1764460800.0 + 0.25;

Model load_fixture(const std::string& name) {
  Model m;
  const Status s = Model::load_file(std::string(SF_FIXTURE_DIR) + "/model/" + name + ".safetensors", &m);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return m;
}

// --- what a device sends ----------------------------------------------------------------------

// One stream's whole timeline as the device produced it.
struct Track {
  int sensor = 0;
  std::string modality, placement;
  bool event = false;
  double rate = 0.0, start = 0.0;  // regular
  std::vector<double> times;       // event-driven: one per sample
  std::vector<float> values;       // NaN = missing
  std::vector<std::uint8_t> present;
  // Regular: samples [a, b) are never sent (a disconnect); the gap is closed by the next chunk's
  // later startTime, or (by_until) by a watermark the device layer sends when it notices.
  struct Gap {
    std::int64_t a, b;
    bool by_until;
  };
  std::vector<Gap> gaps;
  double latency = 0.0;  // seconds from a sample's time to its chunk's arrival
  double join_at = -std::numeric_limits<double>::infinity();  // arrival of its declaration
  std::int64_t size() const { return static_cast<std::int64_t>(values.size()); }
  double time_of(std::int64_t i) const { return event ? times[i] : start + static_cast<double>(i) / rate; }
};

// One chunk entry as it arrives. `first` / `fill_to` are what the test knows by construction (the
// sample index of the chunk's first sample; samples before fill_to not received are missing), so
// the reference window never depends on the session's rounding of times to samples.
struct Delivery {
  int stream = 0;
  double arrival = 0.0;
  ChunkStream chunk;
  std::int64_t first = -1;
  std::int64_t fill_to = -1;
};

void describe(const Track& t, ChunkStream* c) {
  c->has_descriptor = true;
  c->sensor = t.sensor;
  c->modality = t.modality;
  c->placement = t.placement;
  c->event_driven = t.event;
  c->rate_hz = t.event ? 0.0 : t.rate;
}

// A stream's deliveries in arrival order: a declaration first (descriptor, no samples; a regular
// stream's startTime), then chunks of 1..max_chunk samples or events with the gaps and watermarks
// above, then a final watermark at the end of the data so that everything can become final.
std::vector<Delivery> deliveries(const Track& t, int stream, int max_chunk, unsigned seed, bool lose_samples) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<Delivery> out;
  Delivery decl;
  decl.stream = stream;
  decl.arrival = t.join_at;
  describe(t, &decl.chunk);
  if (!t.event) decl.chunk.has_start_time = true, decl.chunk.start_time = t.start, decl.first = 0;
  out.push_back(decl);
  const auto add = [&](Delivery d) {
    d.stream = stream;
    d.arrival = std::max(d.arrival, out.back().arrival);  // one device's chunks arrive in order
    if (u01(rng) < 0.1) describe(t, &d.chunk);              // a repeated, matching descriptor
    out.push_back(std::move(d));
  };
  const std::int64_t N = t.size();
  if (!t.event) {
    std::size_t g = 0;
    bool jump = false;    // the next chunk comes after a gap closed by its startTime
    bool resume = false;  // the next chunk comes after a gap closed by `until`: no startTime
    for (std::int64_t i = 0; i < N;) {
      if (g < t.gaps.size() && t.gaps[g].a == i) {
        const Track::Gap gap = t.gaps[g++];
        if (gap.by_until) {
          Delivery d;  // half a sample before sample b: unambiguous, whatever the rounding
          d.chunk.has_until = true;
          d.chunk.until = t.start + (static_cast<double>(gap.b) - 0.5) / t.rate;
          d.fill_to = gap.b;
          d.arrival = t.time_of(gap.b) + t.latency;
          add(std::move(d));
          resume = true;
        } else {
          jump = true;
        }
        i = gap.b;
        continue;
      }
      const double r = u01(rng);
      // A single sample lost: the next chunk's startTime is 0.7 samples late, which rounds to the
      // sample after the lost one (docs: rounded to the nearest sample).
      const bool lost = lose_samples && !jump && !resume && r >= 0.3 && r < 0.35 && i > 0 && i + 1 < (g < t.gaps.size() ? t.gaps[g].a : N);
      if (lost) ++i;
      std::int64_t n = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(max_chunk));
      n = std::min(n, N - i);
      if (g < t.gaps.size()) n = std::min(n, t.gaps[g].a - i);
      Delivery d;
      d.chunk.samples.assign(t.values.begin() + i, t.values.begin() + i + n);
      if (u01(rng) < 0.5) d.chunk.present.assign(t.present.begin() + i, t.present.begin() + i + n);
      else
        for (std::int64_t j = i; j < i + n; ++j)  // no flags: a flag 0 goes as NaN instead
          if (!t.present[j]) d.chunk.samples[j - i] = kNaN;
      if (lost) {
        d.chunk.has_start_time = true;
        d.chunk.start_time = t.start + (static_cast<double>(i - 1) + 0.7) / t.rate;
        d.first = i;
      } else if (jump || (!resume && r < 0.3)) {
        // After a gap the chunk's startTime says where it is; otherwise a startTime may come with
        // any chunk, within a third of a sample of the expected time (jitter: not a gap, not an
        // overlap; docs: rounded to the nearest sample).
        const double jitter = jump ? 0.0 : (r < 0.1 ? -0.3 : r < 0.2 ? 0.3 : 0.0);
        d.chunk.has_start_time = true;
        d.chunk.start_time = t.start + (static_cast<double>(i) + jitter) / t.rate;
        d.first = i;
        jump = false;
      }
      if (u01(rng) < 0.15) {  // a watermark that marks nothing missing
        d.chunk.has_until = true;
        d.chunk.until = t.start + (static_cast<double>(i + n) - 0.5) / t.rate;
        d.fill_to = i + n;
      }
      d.arrival = t.time_of(i + n - 1) + 1.0 / t.rate + t.latency + 0.02 * u01(rng);
      add(std::move(d));
      i += n;
      resume = false;
    }
    Delivery end;
    end.chunk.has_until = true;
    end.chunk.until = t.start + (static_cast<double>(N) - 0.5) / t.rate;
    end.fill_to = N;
    end.arrival = t.time_of(N - 1) + 1.0 / t.rate + t.latency + 0.05;
    add(std::move(end));
  } else {
    double last = t.times.empty() ? t.start : t.times.front() - 0.5;  // watermark time sent so far
    for (std::int64_t e = 0; e < N;) {
      // Silent stretches (no event for over a second): the device layer moves the watermark every
      // half second, as a strap's link does between beats.
      for (double w = last + 0.5; w < t.times[e]; w += 0.5) {
        Delivery d;
        d.chunk.has_until = true;
        d.chunk.until = w;
        d.arrival = w + t.latency;
        add(std::move(d));
        last = w;
      }
      std::int64_t n = 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(max_chunk));
      n = std::min(n, N - e);
      Delivery d;
      d.chunk.timestamps.assign(t.times.begin() + e, t.times.begin() + e + n);
      d.chunk.samples.assign(t.values.begin() + e, t.values.begin() + e + n);
      d.chunk.present.assign(t.present.begin() + e, t.present.begin() + e + n);
      d.chunk.event_driven = true;
      const double lastt = t.times[e + n - 1];
      const double w = u01(rng);
      if (w < 0.5) {  // a watermark up to (at most) the next event
        const double next = e + n < N ? t.times[e + n] : lastt + 1.0;
        d.chunk.has_until = true;
        d.chunk.until = lastt + u01(rng) * (next - lastt);
      } else if (w < 0.6) {  // a stale one, older than watermarks before: changes nothing (docs)
        d.chunk.has_until = true;
        d.chunk.until = last - 1.0;
      }
      d.arrival = lastt + t.latency + 0.02 * u01(rng);
      last = std::max({last, lastt, d.chunk.has_until ? d.chunk.until : lastt});
      add(std::move(d));
      e += n;
    }
    Delivery end;
    end.chunk.has_until = true;
    end.chunk.until = (N ? t.times.back() : t.start) + 0.5;
    end.arrival = end.chunk.until + t.latency;
    add(std::move(end));
  }
  return out;
}

// --- the reference: a window of everything received, and the frontier rule -------------------

struct Emitted {
  int stream = 0;
  double time = 0.0;
  bool present = false;
  std::vector<float> row;
};

struct ExpectedToken {
  double time;
  int stream;
  std::int64_t patch;
  bool present;
  bool operator<(const ExpectedToken& o) const {
    return std::tie(time, stream, patch) < std::tie(o.time, o.stream, o.patch);
  }
};

class Harness {
 public:
  Harness(const Model& model, const StreamOptions& options, const std::string& fixture = "")
      : model_(model), options_(options), c_(model.config()) {
    const Status s = StreamSession::create(model, options, &session);
    EXPECT_TRUE(s.ok()) << s.message();
    if (c_.n_outputs > 0 && !fixture.empty()) {
      const SafetensorsFile& f = testing::fixture("model/" + fixture + ".safetensors");
      head_w_ = testing::tensor<float>(f, "head.weight");
      head_b_ = testing::tensor<float>(f, "head.bias");
    }
  }

  // Pushes one chunk made of these deliveries (at most one per stream; the others skipped or
  // given empty) and checks the update against the reference.
  void push(const std::vector<const Delivery*>& ds, std::mt19937& rng, StreamUpdate* keep = nullptr) {
    Chunk chunk;
    int n = static_cast<int>(ref_.size());
    for (const Delivery* d : ds) n = std::max(n, d->stream + 1);
    chunk.streams.resize(n);
    chunk.skip.assign(n, 1);
    for (const Delivery* d : ds) chunk.streams[d->stream] = d->chunk, chunk.skip[d->stream] = 0;
    for (int i = 0; i < n; ++i)  // "nothing new": a skip flag or an empty entry, either way
      if (chunk.skip[i] && rng() % 2) chunk.skip[i] = 0;
    if (rng() % 3 == 0 && std::all_of(chunk.skip.begin(), chunk.skip.end(), [](std::uint8_t s) { return s == 0; }))
      chunk.skip.clear();
    StreamUpdate u;
    const Status s = session.push(chunk, &u);
    ASSERT_TRUE(s.ok()) << s.message();
    apply(ds);
    check(u);
    if (keep) *keep = std::move(u);
  }

  // Applies deliveries to the reference window only (what a successful push appended).
  void apply(const std::vector<const Delivery*>& ds) {
    if (!has_ref_) {  // the earliest time of the first chunk that has one (docs)
      double earliest = kInf;
      for (const Delivery* d : ds) {
        const ChunkStream& cs = d->chunk;
        if (cs.event_driven && !cs.timestamps.empty()) earliest = std::min(earliest, cs.timestamps.front());
        if (!cs.event_driven && cs.has_start_time) earliest = std::min(earliest, cs.start_time);
      }
      if (options_.has_reference_time) earliest = options_.reference_time;
      if (earliest < kInf) has_ref_ = true, ref_time_ = earliest;
    }
    for (const Delivery* d : ds) {
      const ChunkStream& cs = d->chunk;
      if (d->stream >= static_cast<int>(ref_.size())) {
        ASSERT_EQ(d->stream, static_cast<int>(ref_.size()));
        ASSERT_TRUE(cs.has_descriptor);
        StreamInput in;
        in.sensor = cs.sensor, in.modality = cs.modality, in.placement = cs.placement;
        if (cs.event_driven) in.has_timestamps = true;
        else in.rate_hz = cs.rate_hz, in.start_time = cs.start_time;
        ref_.push_back(in);
        // A stream joining a running session: its events cannot come before the frontier (docs).
        watermark_.push_back(cs.event_driven ? prev_frontier_ : -kInf);
      }
      StreamInput& in = ref_[d->stream];
      const std::size_t m = cs.samples.size();
      if (in.event_driven()) {
        in.timestamps.insert(in.timestamps.end(), cs.timestamps.begin(), cs.timestamps.end());
        if (cs.has_until) watermark_[d->stream] = std::max(watermark_[d->stream], cs.until);
      } else if (d->first >= 0) {
        ASSERT_GE(d->first, static_cast<std::int64_t>(in.samples.size()));
        fill(&in, d->first);
      }
      in.samples.insert(in.samples.end(), cs.samples.begin(), cs.samples.end());
      for (std::size_t j = 0; j < m; ++j) in.present.push_back(cs.present.empty() ? 1 : cs.present[j]);
      if (!in.event_driven() && d->fill_to >= 0) fill(&in, d->fill_to);
    }
  }

  Window window() const {
    Window w;
    w.streams = ref_;
    w.has_reference_time = true;
    w.reference_time = ref_time_;
    return w;
  }

  int patch_len(int s) const { return c_.modalities[c_.modality_index(ref_[s].modality)].patch_len; }

  // The docs' bound of stream s: no token of it can come with a smaller time.
  double bound(int s) const {
    const StreamInput& in = ref_[s];
    const std::int64_t P = patch_len(s), n = static_cast<std::int64_t>(in.samples.size());
    if (!in.event_driven()) return in.start_time + static_cast<double>((n / P) * P) / in.rate_hz;
    if (n % P) return in.timestamps[n - n % P];
    return std::max(n ? in.timestamps.back() : -kInf, watermark_[s]);
  }

  double frontier() const {
    double f = ref_.empty() ? -kInf : kInf;
    for (int s = 0; s < static_cast<int>(ref_.size()); ++s) f = std::min(f, bound(s));
    return f;
  }

  // Every patch of the reference window with time in [from, to), sorted as a push returns them.
  std::vector<ExpectedToken> expected_tokens(double from, double to) const {
    std::vector<ExpectedToken> out;
    for (int s = 0; s < static_cast<int>(ref_.size()); ++s) {
      const StreamInput& in = ref_[s];
      const std::int64_t P = patch_len(s), n = static_cast<std::int64_t>(in.samples.size());
      for (std::int64_t k = 0; k * P < n; ++k) {
        const double t = in.event_driven() ? in.timestamps[k * P] : in.start_time + static_cast<double>(k * P) / in.rate_hz;
        if (!(t >= from && t < to)) continue;
        int count = 0;
        for (std::int64_t i = k * P; i < std::min(n, (k + 1) * P); ++i)
          count += std::isfinite(in.samples[i]) && in.present[i] != 0;
        out.push_back({t, s, k, static_cast<double>(count) / P >= c_.min_present_fraction});
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  ForwardResult forward(bool maps = false) const {
    ForwardOptions o;
    o.kernels = options_.kernels;
    o.attention_maps = maps;
    ForwardResult r;
    const Status s = model_.forward(window(), o, &r);
    EXPECT_TRUE(s.ok()) << s.message();
    return r;
  }

  static std::map<std::pair<int, double>, int> rows_by_token(const ForwardResult& r) {
    std::map<std::pair<int, double>, int> m;
    for (int i = 0; i < r.tokens.count; ++i) {
      const bool fresh = m.emplace(std::make_pair(r.tokens.stream[i], r.tokens.time[i]), i).second;
      EXPECT_TRUE(fresh) << "the test's data has one patch per (stream, time)";
    }
    return m;
  }

  void check(const StreamUpdate& u) {
    const int d = c_.d_model;
    ASSERT_EQ(session.reference_time(), ref_time_) << "the earliest time of the first chunk that has one";
    const double f = frontier();
    ASSERT_EQ(u.frontier, f) << "the minimum of the streams' bounds (docs), to the bit";
    ASSERT_EQ(session.frontier(), f);
    const std::vector<ExpectedToken> want = expected_tokens(prev_frontier_, f);
    ASSERT_EQ(u.tokens.count, static_cast<int>(want.size())) << "tokens with time in [previous frontier, frontier)";
    ASSERT_EQ(u.index.size(), want.size());
    ASSERT_EQ(u.embeddings.size(), want.size() * d);
    const ForwardResult fr = forward(options_.attention_rows);
    const auto rows = rows_by_token(fr);
    std::set<int> forward_streams(fr.tokens.stream.begin(), fr.tokens.stream.end());
    const std::size_t base = emitted.size();
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(u.tokens.stream[i], want[i].stream) << "token " << i;
      ASSERT_EQ(u.tokens.time[i], want[i].time) << "token " << i;
      ASSERT_EQ(u.tokens.present[i] != 0, want[i].present) << "token " << i;
      ASSERT_EQ(u.tokens.modality[i], c_.modality_index(ref_[want[i].stream].modality));
      ASSERT_EQ(u.index[i], static_cast<std::int64_t>(base + i)) << "indexes 0, 1, 2, ... over the session";
      Emitted e{want[i].stream, want[i].time, want[i].present,
                std::vector<float>(u.embeddings.begin() + i * d, u.embeddings.begin() + (i + 1) * d)};
      const auto it = rows.find({e.stream, e.time});
      if (it == rows.end()) {
        // No row: only for a stream with no present patch in this window (docs).
        ASSERT_EQ(forward_streams.count(e.stream), 0u) << "stream " << e.stream << " t " << e.time;
        ASSERT_FALSE(e.present);
        ++unmatched;
      } else {
        testing::Closeness c;
        ASSERT_TRUE(testing::AllClose(e.row.data(), fr.embeddings.data() + static_cast<std::size_t>(it->second) * d, d,
                                      kTol, 0.0, "token " + std::to_string(base + i), &c));
        max_diff = std::max(max_diff, c.max_abs);
        ++compared;
      }
      emitted_keys.insert({e.stream, e.time});
      emitted.push_back(std::move(e));
    }
    // Nothing of the forward before the frontier is missing (the other direction of the above).
    for (int i = 0; i < fr.tokens.count; ++i)
      if (fr.tokens.time[i] < f) {
        ASSERT_EQ(emitted_keys.count({fr.tokens.stream[i], fr.tokens.time[i]}), 1u)
            << "forward token " << i << " (stream " << fr.tokens.stream[i] << ", t " << fr.tokens.time[i]
            << ") is before the frontier but was never returned";
        ++forward_checked;
      }
    ASSERT_EQ(session.final_tokens(), static_cast<std::int64_t>(emitted.size()));
    if (options_.attention_rows) check_attention(u, fr, rows, base);
    if (std::isfinite(f)) check_pooled(fr, f);
    prev_frontier_ = f;
    ++pushes;
  }

  void check_pooled(const ForwardResult& fr, double f) {
    const int d = c_.d_model;
    PooledResult p;
    ASSERT_EQ(session.pooled(options_.history_s * 1.01, &p).code(), ErrorCode::kInvalidArgument);
    for (const double seconds : {0.5, 4.0, options_.history_s}) {
      if (seconds > options_.history_s) continue;
      ASSERT_TRUE(session.pooled(seconds, &p).ok());
      ASSERT_EQ(p.to, f);
      ASSERT_EQ(p.from, f - seconds);
      std::vector<double> mean(d, 0.0);
      int count = 0;
      for (int i = 0; i < fr.tokens.count; ++i) {
        const double t = fr.tokens.time[i];
        if (!fr.tokens.present[i] || t < f - seconds || t >= f) continue;
        ++count;
        for (int e = 0; e < d; ++e) mean[e] += fr.embeddings[static_cast<std::size_t>(i) * d + e];
      }
      for (double& v : mean) v = count ? v / count : 0.0;
      ASSERT_EQ(p.present_tokens, count) << seconds << " s";
      ASSERT_EQ(p.pooled.size(), static_cast<std::size_t>(d));
      ASSERT_TRUE(testing::AllClose(p.pooled.data(), mean.data(), d, kTol, 0.0, "pooled " + std::to_string(seconds)));
      ASSERT_EQ(p.head.size(), static_cast<std::size_t>(c_.n_outputs));
      if (c_.n_outputs > 0) {
        ASSERT_FALSE(head_w_.empty());
        std::vector<double> head(c_.n_outputs);  // head.weight (n_outputs, d) on the session's pooled
        for (int o = 0; o < c_.n_outputs; ++o) {
          head[o] = head_b_[o];
          for (int e = 0; e < d; ++e) head[o] += static_cast<double>(head_w_[static_cast<std::size_t>(o) * d + e]) * p.pooled[e];
        }
        ASSERT_TRUE(testing::AllClose(p.head.data(), head.data(), head.size(), kTol, 0.0, "head"));
      }
      ++pooled_checks;
    }
  }

  void check_attention(const StreamUpdate& u, const ForwardResult& fr, const std::map<std::pair<int, double>, int>& rows,
                       std::size_t base) {
    const int H = c_.n_heads;
    const std::size_t blocks = c_.layout == Layout::kFactorized ? 2 : 1;
    ASSERT_EQ(u.attention.size(), static_cast<std::size_t>(u.tokens.count) * c_.n_layers * blocks)
        << "one row per new token, layer and block";
    // (layer, block, forward token) -> (map, row position in it)
    std::map<std::tuple<int, int, int>, std::pair<const AttentionMap*, int>> where;
    for (const AttentionMap& m : fr.attention)
      for (int r = 0; r < static_cast<int>(m.tokens.size()); ++r)
        where[{m.layer, static_cast<int>(m.block), m.tokens[r]}] = {&m, r};
    for (const AttentionRow& row : u.attention) {
      ASSERT_GE(row.query, static_cast<std::int64_t>(base));
      ASSERT_LT(row.query, static_cast<std::int64_t>(emitted.size()));
      const Emitted& q = emitted[row.query];
      const auto qi = rows.find({q.stream, q.time});
      if (qi == rows.end()) continue;  // a stream with no row in this forward (compared at the end)
      const auto w = where.find({row.layer, static_cast<int>(row.block), qi->second});
      ASSERT_NE(w, where.end()) << "layer " << row.layer << " block " << block_name(row.block);
      const AttentionMap& m = *w->second.first;
      const std::size_t g = m.tokens.size(), r = w->second.second, n = row.keys.size();
      ASSERT_EQ(row.key_times.size(), n);
      ASSERT_EQ(row.weights.size(), H * n);
      std::map<int, std::size_t> column;
      for (std::size_t c = 0; c < g; ++c) column[m.tokens[c]] = c;
      std::vector<std::size_t> cols;
      for (std::size_t j = 0; j < n; ++j) {
        ASSERT_GE(row.keys[j], 0);
        ASSERT_LE(row.keys[j], static_cast<std::int64_t>(emitted.size()));
        const Emitted& k = emitted[row.keys[j]];
        ASSERT_EQ(row.key_times[j], k.time);
        // Eligible keys only: present, causal, within the look-back (same group: below).
        ASSERT_TRUE(k.present);
        ASSERT_LE(k.time, q.time);
        ASSERT_LE(q.time - k.time, c_.attention_lookback_s);
        const auto ki = rows.find({k.stream, k.time});
        ASSERT_NE(ki, rows.end());
        const auto col = column.find(ki->second);
        ASSERT_NE(col, column.end()) << "a key outside the query's group in the forward";
        cols.push_back(col->second);
      }
      for (int h = 0; h < H; ++h) {
        const float* fw = m.weights.data() + (static_cast<std::size_t>(h) * g + r) * g;
        double listed = 0.0, all = 0.0;
        for (std::size_t c = 0; c < g; ++c) all += fw[c];
        for (std::size_t j = 0; j < n; ++j) {
          listed += fw[cols[j]];
          ASSERT_NEAR(row.weights[h * n + j], fw[cols[j]], kWeightTol)
              << "query " << row.query << " layer " << row.layer << " " << block_name(row.block) << " head " << h;
          max_weight_diff = std::max(max_weight_diff, std::fabs(double(row.weights[h * n + j]) - fw[cols[j]]));
        }
        // The forward puts no weight on a key the row leaves out.
        ASSERT_NEAR(listed, all, kWeightTol) << "query " << row.query << " layer " << row.layer;
      }
      ++attention_rows;
    }
  }

  // Every token emitted so far against the forward over everything received: also the tokens of a
  // stream that had no present patch when they were returned (a causal token's row never changes).
  // A stream that never had a present patch gets one appended after all its data, at or after the
  // frontier, so that its tokens have rows (docs: "their own rows equal a forward in which the
  // stream has a present patch"); being later than every emitted token, it changes none of them.
  void finish() {
    const int d = c_.d_model;
    Window w = window();
    std::set<int> with_rows;
    {
      const ForwardResult plain = forward();
      with_rows.insert(plain.tokens.stream.begin(), plain.tokens.stream.end());
    }
    const double f = frontier();
    for (int s = 0; s < static_cast<int>(w.streams.size()); ++s) {
      if (with_rows.count(s)) continue;
      StreamInput& in = w.streams[s];
      const std::size_t P = patch_len(s);
      const float mean = c_.modalities[c_.modality_index(in.modality)].mean;
      if (in.event_driven()) {
        const double after = std::max({f, watermark_[s], in.timestamps.empty() ? -kInf : in.timestamps.back()}) + 1.0;
        while (in.samples.size() % P) in.timestamps.push_back(after), in.samples.push_back(kNaN), in.present.push_back(0);
        for (std::size_t j = 0; j < P; ++j) in.timestamps.push_back(after + 0.25 * static_cast<double>(j + 1));
      } else {
        while (in.samples.size() % P) in.samples.push_back(kNaN), in.present.push_back(0);
      }
      for (std::size_t j = 0; j < P; ++j) in.samples.push_back(mean), in.present.push_back(1);
    }
    ForwardOptions o;
    o.kernels = options_.kernels;
    ForwardResult fr;
    ASSERT_TRUE(model_.forward(w, o, &fr).ok());
    const auto rows = rows_by_token(fr);
    final_compared = 0;
    for (const Emitted& e : emitted) {
      const auto it = rows.find({e.stream, e.time});
      ASSERT_NE(it, rows.end()) << "stream " << e.stream << " t " << e.time;
      testing::Closeness c;
      ASSERT_TRUE(testing::AllClose(e.row.data(), fr.embeddings.data() + static_cast<std::size_t>(it->second) * d, d,
                                    kTol, 0.0, "final forward, stream " + std::to_string(e.stream), &c));
      max_diff = std::max(max_diff, c.max_abs);
      ++final_compared;
    }
  }

  void report(const std::string& what) const {
    std::printf("[ stream   ] %-34s %4d pushes %5zu tokens (%d vs push-time forward, %d absent-stream, %d at end) "
                "max|diff| %.2e%s\n",
                what.c_str(), pushes, emitted.size(), compared, unmatched, final_compared, max_diff,
                attention_rows ? (", " + std::to_string(attention_rows) + " attention rows").c_str() : "");
  }

  const StreamInput& received(int s) const { return ref_[s]; }

  StreamSession session;
  std::vector<Emitted> emitted;
  std::set<std::pair<int, double>> emitted_keys;
  double max_diff = 0.0, max_weight_diff = 0.0;
  int compared = 0, unmatched = 0, final_compared = 0, forward_checked = 0, pushes = 0, pooled_checks = 0,
      attention_rows = 0;

 private:
  static void fill(StreamInput* in, std::int64_t to) {
    while (static_cast<std::int64_t>(in->samples.size()) < to) in->samples.push_back(kNaN), in->present.push_back(0);
  }

  const Model& model_;
  StreamOptions options_;
  const ModelConfig& c_;
  std::vector<StreamInput> ref_;
  std::vector<double> watermark_;
  bool has_ref_ = false;
  double ref_time_ = 0.0;
  double prev_frontier_ = -kInf;
  std::vector<float> head_w_, head_b_;
};

// --- scenarios ----------------------------------------------------------------------------------

// ~20 s from four devices of the fixtures' modalities:
//   0 ECG 130 Hz (patch 16), a NaN run, a run of present = 0, a disconnect closed by a later startTime
//   1 acc_x 50 Hz (patch 8), scattered NaN, a disconnect the device layer closes with `until`
//   2 heart rate, event-driven (patch 2), beats with jitter, silent from 5 to 8 s, some NaN
//   3 temperature 4 Hz (patch 1), entirely missing for the first 10 s (a stream with no row in
//     the forwards of that time), then present
std::vector<Track> rich_tracks(double seconds, unsigned seed, const std::vector<double>& latency = {0.05, 0.3, 0.8, 0.1}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Track> ts(4);
  Track& ecg = ts[0];
  ecg.sensor = 0, ecg.modality = "ecg", ecg.placement = "chest", ecg.rate = 130.0, ecg.start = kT0;
  Track& acc = ts[1];
  acc.sensor = 1, acc.modality = "acc_x", acc.placement = "wrist", acc.rate = 50.0, acc.start = kT0 + 0.1;
  Track& hr = ts[2];
  hr.sensor = 2, hr.modality = "hr", hr.placement = "chest", hr.event = true, hr.start = kT0;
  Track& temp = ts[3];
  temp.sensor = 3, temp.modality = "temperature", temp.placement = "finger", temp.rate = 4.0, temp.start = kT0 + 0.5;
  for (Track* t : {&ecg, &acc, &temp}) {
    const std::int64_t n = static_cast<std::int64_t>(seconds * t->rate);
    for (std::int64_t i = 0; i < n; ++i) {
      const float scale = t == &ecg ? 2000.0f : t == &acc ? 2.0f : 1.0f;
      t->values.push_back((t == &temp ? 33.0f : 0.0f) + scale * u(rng));
      t->present.push_back(1);
    }
  }
  for (std::int64_t i = 390; i < 430; ++i) ecg.values[i] = kNaN;  // ~3 s: 2.5 patches of NaN
  for (std::int64_t i = 780; i < 812; ++i) ecg.present[i] = 0;    // ~6 s: 2 patches flagged missing
  ecg.gaps = {{1170, 1495, false}};                                // 9 .. 11.5 s
  for (std::int64_t i = 0; i < acc.size(); ++i)
    if (rng() % 20 == 0) acc.values[i] = kNaN;
  acc.gaps = {{700, 800, true}};  // 14 .. 16 s
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(10 * temp.rate) && i < temp.size(); ++i) temp.values[i] = kNaN;
  std::uniform_real_distribution<double> beat(0.7, 1.2);
  for (double t = 0.3 + beat(rng); t < seconds; t += beat(rng)) {
    if (t > 5.0 && t < 8.0) continue;
    hr.times.push_back(kT0 + t);
    hr.values.push_back(rng() % 7 == 0 ? kNaN : 60.0f + 30.0f * (u(rng) + 1.0f) / 2.0f);
    hr.present.push_back(1);
  }
  for (std::size_t i = 0; i < ts.size(); ++i) ts[i].latency = latency[i];
  return ts;
}

// A random scenario: five devices (ECG, acc_x, heart rate and RR events, temperature) with random
// rates, start times, latencies, gaps (closed by startTime or `until`), NaN and present = 0 runs,
// silences, and a temperature stream missing for its first seconds.
std::vector<Track> random_tracks(double seconds, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const auto pick = [&](std::initializer_list<double> v) { return *(v.begin() + rng() % v.size()); };
  std::vector<Track> ts(5);
  const auto regular = [&](Track& t, int sensor, const char* modality, const char* placement, double rate, float lo,
                           float hi) {
    t.sensor = sensor, t.modality = modality, t.placement = placement, t.rate = rate;
    t.start = kT0 + u01(rng);
    t.latency = 2.0 * u01(rng) * u01(rng);
    const std::int64_t n = static_cast<std::int64_t>(seconds * rate);
    std::uniform_real_distribution<float> v(lo, hi);
    for (std::int64_t i = 0; i < n; ++i) t.values.push_back(v(rng)), t.present.push_back(1);
    for (int r = static_cast<int>(rng() % 3); r > 0; --r) {  // runs of NaN or present = 0
      const std::int64_t a = rng() % n, len = 1 + rng() % static_cast<std::int64_t>(rate * 1.5);
      const bool flag = rng() % 2;
      for (std::int64_t i = a; i < std::min(n, a + len); ++i) {
        if (flag) t.present[i] = 0;
        else t.values[i] = kNaN;
      }
    }
    std::int64_t at = 1 + rng() % (n / 3);
    for (int g = static_cast<int>(rng() % 3); g > 0 && at < n - 2; --g) {  // 0-2 disconnects
      const std::int64_t b = std::min(n - 1, at + 1 + static_cast<std::int64_t>(rng() % static_cast<unsigned>(rate * 2)));
      t.gaps.push_back({at, b, rng() % 2 == 0});
      at = b + 1 + rng() % (n / 3);
    }
  };
  regular(ts[0], 0, "ecg", "chest", pick({130.0, 128.0, 200.0}), -3000.0f, 3000.0f);
  regular(ts[1], 1, "acc_x", "wrist", pick({50.0, 25.0, 52.0}), -3.0f, 3.0f);
  regular(ts[4], 3, "temperature", "finger", pick({1.0, 4.0}), 30.0f, 36.0f);
  const std::int64_t missing = static_cast<std::int64_t>(u01(rng) * seconds * 0.5 * ts[4].rate);
  for (std::int64_t i = 0; i < missing; ++i) ts[4].values[i] = kNaN;
  const auto events = [&](Track& t, int sensor, const char* modality, double lo, double hi, float v0, float v1) {
    t.sensor = sensor, t.modality = modality, t.placement = "chest", t.event = true, t.start = kT0;
    t.latency = 2.0 * u01(rng) * u01(rng);
    const double silent = u01(rng) * seconds, silent_for = 3.0 * u01(rng);
    std::uniform_real_distribution<float> v(v0, v1);
    for (double x = u01(rng) + lo; x < seconds; x += lo + (hi - lo) * u01(rng)) {
      if (x > silent && x < silent + silent_for) continue;
      t.times.push_back(kT0 + x);
      t.values.push_back(rng() % 9 == 0 ? kNaN : v(rng));
      t.present.push_back(1);
    }
  };
  events(ts[2], 2, "hr", 0.3, 1.5, 50.0f, 120.0f);
  events(ts[3], 2, "rr", 0.6, 1.0, 0.6f, 1.0f);
  return ts;
}

struct Schedule {
  int max_chunk_regular = 40, max_chunk_events = 3;
  double min_step = 0.05, max_step = 0.6;  // seconds between pushes
  bool lose_samples = true;  // single samples lost at random (which changes the data with the seed)
};

// Pushes every delivery of the tracks in arrival order: at each push time (random steps), pushes
// of at most one delivery per stream until nothing that has arrived is left; `after` sees each
// update once the harness has checked it.
void run(Harness& h, const std::vector<Track>& tracks, unsigned seed, const Schedule& sched = {},
         const std::function<void(Harness&, const StreamUpdate&)>& after = nullptr) {
  std::mt19937 rng(seed);
  std::vector<std::vector<Delivery>> queues;
  for (std::size_t s = 0; s < tracks.size(); ++s)
    queues.push_back(deliveries(tracks[s], static_cast<int>(s),
                                tracks[s].event ? sched.max_chunk_events : sched.max_chunk_regular, seed * 31 + s,
                                sched.lose_samples));
  std::vector<std::size_t> next(tracks.size(), 0);
  std::uniform_real_distribution<double> step(sched.min_step, sched.max_step);
  double now = -kInf;
  for (;;) {
    std::vector<const Delivery*> ds;
    bool left = false;
    for (std::size_t s = 0; s < tracks.size(); ++s) {
      if (next[s] >= queues[s].size()) continue;
      left = true;
      if (queues[s][next[s]].arrival <= now) ds.push_back(&queues[s][next[s]++]);
    }
    if (!left) break;
    if (ds.empty()) {
      now = std::isfinite(now) ? now + step(rng) : kT0;
      continue;
    }
    StreamUpdate u;
    h.push(ds, rng, &u);
    if (::testing::Test::HasFatalFailure()) return;
    if (after) after(h, u);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

struct Fixture {
  const char* name;
  bool lookback;
};
const Fixture kCausalFixtures[] = {{"flattened_lookback", true}, {"time_lookback", true}, {"channel_lookback", true},
                                   {"factorized_lookback", true}, {"flattened_causal", false}, {"factorized_causal", false}};

// --- tests ----------------------------------------------------------------------------------------

TEST(Stream, NonCausalModelIsRefusedSayingSo) {
  for (const char* name : {"flattened", "time", "channel", "factorized"}) {
    const Model m = load_fixture(name);
    StreamSession s;
    const Status st = StreamSession::create(m, {}, &s);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << name;
    EXPECT_NE(st.message().find("causal"), std::string::npos) << st.message();
  }
}

TEST(Stream, BadOptionsAreRefused) {
  const Model m = load_fixture("flattened_lookback");
  StreamSession s;
  StreamOptions o;
  o.history_s = 0.0;
  EXPECT_EQ(StreamSession::create(m, o, &s).code(), ErrorCode::kInvalidArgument);
  o.history_s = std::nan("");
  EXPECT_EQ(StreamSession::create(m, o, &s).code(), ErrorCode::kInvalidArgument);
  o = {};
  o.has_reference_time = true;
  o.reference_time = kInf;
  EXPECT_EQ(StreamSession::create(m, o, &s).code(), ErrorCode::kNonFinite);
}

// Before any token: pooled() is the documented empty result (zero vector, the head's bias).
TEST(Stream, PooledBeforeAnyTokenIsTheHeadBias) {
  const Model m = load_fixture("flattened_lookback");
  StreamSession s;
  ASSERT_TRUE(StreamSession::create(m, {}, &s).ok());
  EXPECT_EQ(s.frontier(), -kInf);
  PooledResult p;
  ASSERT_TRUE(s.pooled(10.0, &p).ok());
  EXPECT_EQ(p.present_tokens, 0);
  EXPECT_EQ(p.pooled, std::vector<float>(m.config().d_model, 0.0f));
  EXPECT_EQ(p.head, testing::tensor<float>(testing::fixture("model/flattened_lookback.safetensors"), "head.bias"));
}

// Every layout's look-back fixture and the causal fixtures without look-back, on the rich scenario
// with random chunking: every final token equals the forward of everything received so far.
TEST(Stream, EveryLayoutEqualsTheFullForwardAtEveryPush) {
  for (const Fixture& fx : kCausalFixtures) {
    SCOPED_TRACE(fx.name);
    const Model m = load_fixture(fx.name);
    ASSERT_EQ(m.config().has_lookback(), fx.lookback);
    Harness h(m, {}, fx.name);
    run(h, rich_tracks(20.0, 1), 100);
    ASSERT_FALSE(HasFatalFailure());
    h.finish();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_GT(h.compared, 250) << "most tokens compared at push time";
    EXPECT_GT(h.unmatched, 20) << "the temperature stream's first 10 s had no present patch";
    EXPECT_EQ(h.final_compared, static_cast<int>(h.emitted.size())) << "all, once that stream has data";
    EXPECT_GT(h.pooled_checks, 30);
    EXPECT_GT(h.forward_checked, 10 * h.compared) << "forward tokens before the frontier, checked at every push";
    h.report(fx.name);
  }
}

// Random scenarios (seeded): tracks, chunking and push schedule all drawn at random, on the three
// layouts with groups of their own (time, channel, both).
TEST(Stream, RandomScenarios) {
  for (const char* name : {"factorized_lookback", "channel_lookback", "time_lookback"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    int tokens = 0;
    double worst = 0;
    for (unsigned seed = 0; seed < 8; ++seed) {
      SCOPED_TRACE(seed);
      Harness h(m, {}, name);
      Schedule sched;
      sched.max_chunk_regular = 1 + static_cast<int>(seed * 7 % 50);
      sched.max_chunk_events = 1 + static_cast<int>(seed % 4);
      run(h, random_tracks(12.0, 800 + seed), 900 + seed, sched);
      ASSERT_FALSE(HasFatalFailure());
      h.finish();
      ASSERT_FALSE(HasFatalFailure());
      tokens += static_cast<int>(h.emitted.size());
      worst = std::max(worst, h.max_diff);
    }
    std::printf("[ stream   ] %-34s 8 random scenarios, %d tokens, max|diff| %.2e\n", name, tokens, worst);
  }
}

// The same data in five random chunkings and push schedules: the same tokens with the same
// indexes (final tokens come in time order whatever the chunking), rows within the tolerance.
TEST(Stream, RandomChunkingGivesTheSameTokens) {
  for (const char* name : {"factorized_lookback", "channel_lookback"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    const std::vector<Track> tracks = rich_tracks(16.0, 2);
    std::vector<Emitted> first;
    for (unsigned seed = 0; seed < 5; ++seed) {
      Harness h(m, {}, name);
      Schedule sched;
      sched.max_chunk_regular = 1 + seed * 30;  // 1 sample a chunk up to 121
      sched.max_chunk_events = 1 + seed;
      sched.max_step = 0.1 + 0.4 * seed;
      sched.lose_samples = false;  // the same data in every chunking
      run(h, tracks, 200 + seed, sched);
      ASSERT_FALSE(HasFatalFailure());
      h.finish();
      ASSERT_FALSE(HasFatalFailure());
      if (seed == 0) {
        first = h.emitted;
        continue;
      }
      ASSERT_EQ(h.emitted.size(), first.size()) << "the final watermarks make everything final";
      double diff = 0;
      for (std::size_t i = 0; i < first.size(); ++i) {
        ASSERT_EQ(h.emitted[i].stream, first[i].stream) << i;
        ASSERT_EQ(h.emitted[i].time, first[i].time) << i;
        for (std::size_t e = 0; e < first[i].row.size(); ++e)
          diff = std::max(diff, std::fabs(double(h.emitted[i].row[e]) - first[i].row[e]));
      }
      EXPECT_LE(diff, 2 * kTol) << "each within kTol of the same forward";
      h.report(std::string(name) + " chunking " + std::to_string(seed));
    }
  }
}

// Devices with different latencies: the ECG strap's chunks arrive at once, the wrist's 3 s late
// and the heart-rate strap's 1.5 s late. Nothing of the ECG past the slowest stream's bound is
// final before that stream catches up, and the result equals in-order arrival.
TEST(Stream, OutOfOrderAcrossDevicesEqualsInOrder) {
  const Model m = load_fixture("time_lookback");
  std::vector<Emitted> in_order;
  for (const bool skewed : {false, true}) {
    const std::vector<Track> tracks =
        rich_tracks(16.0, 3, skewed ? std::vector<double>{0.0, 3.0, 1.5, 0.0} : std::vector<double>{0, 0, 0, 0});
    Harness h(m, {}, "time_lookback");
    int held_back = 0;
    run(h, tracks, 300, {}, [&](Harness& hh, const StreamUpdate& u) {
      double slowest = kInf;
      for (int s = 0; s < 4; ++s) slowest = std::min(slowest, hh.bound(s));
      for (int i = 0; i < u.tokens.count; ++i) ASSERT_LT(u.tokens.time[i], slowest);
      // ECG received beyond the frontier and not returned: held back by a slower device.
      if (hh.bound(0) > u.frontier + 1.0) ++held_back;
    });
    ASSERT_FALSE(HasFatalFailure());
    h.finish();
    ASSERT_FALSE(HasFatalFailure());
    if (!skewed) {
      in_order = h.emitted;
      continue;
    }
    EXPECT_GT(held_back, 10) << "the skew actually held ECG tokens back";
    ASSERT_EQ(h.emitted.size(), in_order.size());
    for (std::size_t i = 0; i < in_order.size(); ++i) {
      ASSERT_EQ(h.emitted[i].stream, in_order[i].stream) << i;
      ASSERT_EQ(h.emitted[i].time, in_order[i].time) << i;
      ASSERT_TRUE(testing::AllClose(h.emitted[i].row.data(), in_order[i].row.data(), in_order[i].row.size(), 2 * kTol,
                                    0.0, "token " + std::to_string(i)));
    }
    h.report("time_lookback, skewed latencies");
  }
}

// Streams that join a running session (docs: at or after the frontier): heart rate and
// temperature declared 7.5 s in, heart rate's first beat after 8 s, temperature's first sample at 7.5 s.
TEST(Stream, StreamsJoiningLater) {
  for (const char* name : {"factorized_lookback", "time_lookback"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    std::vector<Track> tracks = rich_tracks(16.0, 6);
    Track& hr = tracks[2];
    while (!hr.times.empty() && hr.times.front() < kT0 + 8.0)
      hr.times.erase(hr.times.begin()), hr.values.erase(hr.values.begin()), hr.present.erase(hr.present.begin());
    Track& temp = tracks[3];
    const std::int64_t skip = static_cast<std::int64_t>(7.5 * temp.rate);
    temp.values.erase(temp.values.begin(), temp.values.begin() + skip);
    temp.present.erase(temp.present.begin(), temp.present.begin() + skip);
    temp.start += 7.5;
    temp.join_at = hr.join_at = temp.start;  // streams join in order: both in one push
    Harness h(m, {}, name);
    int streams_at_3s = -1;
    run(h, tracks, 600, {}, [&](Harness& hh, const StreamUpdate& u) {
      if (streams_at_3s < 0 && u.frontier > kT0 + 3.0) streams_at_3s = hh.session.stream_count();
    });
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_EQ(streams_at_3s, 2) << "the session ran on two streams (3 s of tokens final) before the others joined";
    EXPECT_EQ(h.session.stream_count(), 4);
    h.finish();
    h.report(std::string(name) + " joining");
  }
}

// A reference time given as an option, five hours before the data: times since it are large and
// the forward with the same reference agrees all the same. A 3 s pooling history: pooled() over
// all of it, with the older rows dropped.
TEST(Stream, ReferenceTimeOptionHoursBefore) {
  const Model m = load_fixture("flattened_lookback");
  StreamOptions o;
  o.history_s = 3.0;
  o.has_reference_time = true;
  o.reference_time = kT0 - 5 * 3600.0;
  Harness h(m, o, "flattened_lookback");
  run(h, rich_tracks(10.0, 7), 700);
  ASSERT_FALSE(HasFatalFailure());
  h.finish();
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(h.session.reference_time(), kT0 - 5 * 3600.0);
  EXPECT_GT(h.compared, 100);
  h.report("referenceTime 5 h before");
}

// Attention rows against the forward's attention maps, every layer and block, every layout.
TEST(Stream, AttentionRowsEqualTheForwardMaps) {
  for (const char* name : {"flattened_lookback", "time_lookback", "channel_lookback", "factorized_lookback", "factorized_causal"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    StreamOptions o;
    o.attention_rows = true;
    Harness h(m, o, name);
    run(h, rich_tracks(12.0, 4), 400);
    ASSERT_FALSE(HasFatalFailure());
    h.finish();
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_GT(h.attention_rows, 300);
    h.report(std::string(name) + " attention");
  }
}

// The scalar twins: a session and forward on kernels::KernelSet::kReference, and the twin
// session against the SIMD session token by token.
TEST(Stream, ScalarTwinGivesTheSameResults) {
  for (const char* name : {"flattened_lookback", "factorized_lookback"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    const std::vector<Track> tracks = rich_tracks(12.0, 5);
    std::vector<Emitted> simd;
    for (const auto k : {kernels::KernelSet::kSimd, kernels::KernelSet::kReference}) {
      StreamOptions o;
      o.kernels = k;
      Harness h(m, o, name);
      run(h, tracks, 500);
      ASSERT_FALSE(HasFatalFailure());
      h.finish();
      ASSERT_FALSE(HasFatalFailure());
      if (k == kernels::KernelSet::kSimd) {
        simd = h.emitted;
        continue;
      }
      ASSERT_EQ(h.emitted.size(), simd.size());
      for (std::size_t i = 0; i < simd.size(); ++i)
        ASSERT_TRUE(testing::AllClose(h.emitted[i].row.data(), simd[i].row.data(), simd[i].row.size(), kTol, 0.0,
                                      "twin vs simd, token " + std::to_string(i)));
      h.report(std::string(name) + " scalar twin");
    }
  }
}


// --- errors: a specific code, and the session as if the bad push had never happened -------------

// A hand-made session of two streams: ECG at 130 Hz (patch 16) in half-second chunks and heart-rate
// events (patch 2) with a watermark at the end of each half second. good(k) is push k.
struct TwoStreams {
  std::vector<float> ecg = testing::random_floats(130 * 10, 61, -2000.0f, 2000.0f);
  std::vector<Delivery> good(int k) const {
    Delivery e, h;
    e.stream = 0, h.stream = 1;
    if (k == 0) {
      e.chunk.has_descriptor = h.chunk.has_descriptor = true;
      e.chunk.sensor = 0, e.chunk.modality = "ecg", e.chunk.placement = "chest", e.chunk.rate_hz = 130.0;
      e.chunk.has_start_time = true, e.chunk.start_time = kT0, e.first = 0;
      h.chunk.sensor = 2, h.chunk.modality = "hr", h.chunk.placement = "chest";
    }
    h.chunk.event_driven = true;
    e.chunk.samples.assign(ecg.begin() + 65 * k, ecg.begin() + 65 * (k + 1));
    h.chunk.timestamps = {kT0 + 0.5 * k + 0.2, kT0 + 0.5 * k + 0.45};
    h.chunk.samples = {60.0f + k, 61.0f + k};
    h.chunk.has_until = true;
    h.chunk.until = kT0 + 0.5 * (k + 1);
    return {e, h};
  }
};

std::vector<const Delivery*> ptrs(const std::vector<Delivery>& ds) {
  std::vector<const Delivery*> p;
  for (const Delivery& d : ds) p.push_back(&d);
  return p;
}

Chunk chunk_of(std::vector<ChunkStream> streams) { return Chunk{std::move(streams), {}}; }

TEST(Stream, RejectedPushesLeaveTheSessionUnchanged) {
  const Model m = load_fixture("flattened_lookback");
  const TwoStreams data;
  Harness a(m, {}, "flattened_lookback"), b(m, {}, "flattened_lookback");
  std::mt19937 ra(7), rb(7);
  const auto expect_error = [&](const Chunk& c, ErrorCode code, const std::string& what) {
    StreamUpdate u;
    const Status s = a.session.push(c, &u);
    EXPECT_EQ(s.code(), code) << what << ": " << s.message();
    EXPECT_FALSE(s.message().empty()) << what;
  };
  // Rejected before anything was accepted: must not fix the reference time either (kT0 - 100).
  {
    ChunkStream e = data.good(0)[0].chunk;
    e.start_time = kT0 - 100.0;
    e.samples[3] = kInf;
    expect_error(chunk_of({e}), ErrorCode::kNonFinite, "+Inf sample in the first chunk");
  }
  std::vector<std::vector<Delivery>> goods;
  for (int k = 0; k < 12; ++k) goods.push_back(data.good(k));
  for (int k = 0; k < 4; ++k) {
    a.push(ptrs(goods[k]), ra);
    b.push(ptrs(goods[k]), rb);
    ASSERT_FALSE(HasFatalFailure());
  }
  {  // A stale watermark (kT0 + 1, older than kT0 + 2): changes nothing (docs: monotone).
    Delivery stale;
    stale.stream = 1;
    stale.chunk.event_driven = true;
    stale.chunk.has_until = true;
    stale.chunk.until = kT0 + 1.0;
    a.push({&stale}, ra);
    b.push({&stale}, rb);
    ASSERT_FALSE(HasFatalFailure());
  }
  // Now: ECG has 260 samples (next due at kT0 + 2), heart rate's last event kT0 + 1.95 and its
  // watermark kT0 + 2.
  const ChunkStream ecg_ok = goods[4][0].chunk, hr_ok = goods[4][1].chunk;
  ChunkStream c0 = ecg_ok, c1 = hr_ok, n2;
  const auto reset = [&] { c0 = ecg_ok, c1 = hr_ok, n2 = ChunkStream{}; };
  const auto two = [&] { return chunk_of({c0, c1}); };
  const auto three = [&] { return chunk_of({c0, c1, n2}); };

  reset(), c0.has_start_time = true, c0.start_time = kT0 + (260 - 0.75) / 130.0;
  expect_error(two(), ErrorCode::kInvalidArgument, "ECG startTime 0.75 samples before the next expected (overlap)");
  reset(), c1.timestamps = {kT0 + 1.99, kT0 + 2.2};
  expect_error(two(), ErrorCode::kInvalidArgument, "event below the watermark (ECG valid in the same push)");
  reset(), c1.timestamps = {kT0 + 2.3, kT0 + 2.2};
  expect_error(two(), ErrorCode::kInvalidArgument, "decreasing event timestamps");
  reset(), c1.timestamps[1] = std::nan("");
  expect_error(two(), ErrorCode::kNonFinite, "NaN timestamp");
  reset(), c1.timestamps.pop_back();
  expect_error(two(), ErrorCode::kShapeMismatch, "fewer timestamps than samples");
  reset(), c1.until = std::nan("");
  expect_error(two(), ErrorCode::kNonFinite, "NaN until");
  reset(), c0.samples[10] = kInf;
  expect_error(two(), ErrorCode::kNonFinite, "+Inf sample");
  reset(), c0.samples[64] = -kInf;
  expect_error(two(), ErrorCode::kNonFinite, "-Inf sample (completing a patch)");
  reset(), c0.present.assign(3, 1);
  expect_error(two(), ErrorCode::kShapeMismatch, "present of another length");
  reset(), c0.has_start_time = true, c0.start_time = std::nan("");
  expect_error(two(), ErrorCode::kNonFinite, "NaN startTime");
  // Times more than 1e12 s from the reference time are refused when given (not later, when their
  // patch completes, by which time the stream would refuse every real event after them).
  reset(), c0.has_start_time = true, c0.start_time = kT0 + 2e12;
  expect_error(two(), ErrorCode::kNonFinite, "startTime 2e12 s later");
  reset(), c0.has_until = true, c0.until = 1e300;
  expect_error(two(), ErrorCode::kNonFinite, "until 1e300");
  reset(), c1.timestamps = {kT0 + 2.3, kT0 + 2e12};
  expect_error(two(), ErrorCode::kNonFinite, "an event 2e12 s later");
  reset(), c1.until = kT0 + 2e12;
  expect_error(two(), ErrorCode::kNonFinite, "an event stream's until 2e12 s later");
  for (const auto& [field, edit] : std::vector<std::pair<std::string, std::function<void(ChunkStream&)>>>{
           {"sensor", [](ChunkStream& c) { c.sensor = 1; }},
           {"modality", [](ChunkStream& c) { c.modality = "acc_x"; }},
           {"placement", [](ChunkStream& c) { c.placement = "wrist"; }},
           {"rate", [](ChunkStream& c) { c.rate_hz = 128.0; }}}) {
    reset();
    c0.has_descriptor = true, c0.sensor = 0, c0.modality = "ecg", c0.placement = "chest", c0.rate_hz = 130.0;
    edit(c0);
    expect_error(two(), ErrorCode::kInvalidArgument, "ECG descriptor with another " + field);
  }
  reset(), c1.has_descriptor = true, c1.sensor = 2, c1.modality = "hr", c1.placement = "chest", c1.event_driven = false,
      c1.rate_hz = 1.0, c1.timestamps.clear();
  expect_error(two(), ErrorCode::kInvalidArgument, "event stream described as regular");
  // A new stream 2, in the same push as valid data for 0 and 1.
  const auto new_stream = [&](const std::string& modality, const std::string& placement, int sensor) {
    reset();
    n2.has_descriptor = true, n2.sensor = sensor, n2.modality = modality, n2.placement = placement, n2.rate_hz = 4.0;
    n2.has_start_time = true, n2.start_time = kT0 + 2.0;
    n2.samples = {1.0f, 2.0f};
  };
  new_stream("eeg", "chest", 3);
  expect_error(three(), ErrorCode::kInvalidArgument, "unknown modality");
  new_stream("rr", "ankle", 3);
  expect_error(three(), ErrorCode::kInvalidArgument, "unknown placement");
  new_stream("rr", "finger", 4);
  expect_error(three(), ErrorCode::kIndexOutOfRange, "sensor past n_sensors");
  new_stream("rr", "finger", 3), n2.has_descriptor = false;
  expect_error(three(), ErrorCode::kInvalidArgument, "new stream without a descriptor");
  new_stream("rr", "finger", 3), n2.rate_hz = 1e300;
  expect_error(three(), ErrorCode::kInvalidArgument, "rateHz 1e300 (it would pin the frontier at its start)");
  new_stream("rr", "finger", 3), n2.start_time = kT0 + 1.0;
  expect_error(three(), ErrorCode::kInvalidArgument, "new stream starting before the frontier");
  new_stream("rr", "finger", 3), n2.samples[1] = 3e38f;  // (3e38 - 0.8) / 0.15 overflows float32
  expect_error(three(), ErrorCode::kNonFinite, "sample whose normalised value overflows");
  {
    reset();
    Chunk c = chunk_of({c0, c1, ChunkStream{}, n2});
    c.skip = {0, 0, 1, 0};
    new_stream("rr", "finger", 3);
    c.streams[3] = n2;
    expect_error(c, ErrorCode::kInvalidArgument, "stream 3 given before stream 2 ever was");
    c.skip = {0, 0};
    expect_error(c, ErrorCode::kShapeMismatch, "skip of another length");
  }
  for (const double bad : {0.0, -1.0, 60.5, std::nan(""), kInf}) {
    PooledResult p;
    EXPECT_EQ(a.session.pooled(bad, &p).code(), ErrorCode::kInvalidArgument) << bad;
  }
  // The rest: the same results, to the bit, from the session that saw every rejected push.
  for (int k = 4; k < 12; ++k) {
    StreamUpdate ua, ub;
    a.push(ptrs(goods[k]), ra, &ua);
    b.push(ptrs(goods[k]), rb, &ub);
    ASSERT_FALSE(HasFatalFailure());
    // Bit for bit: the same arithmetic on the same state, so any difference is state left behind.
    ASSERT_EQ(ua.frontier, ub.frontier) << k;
    ASSERT_EQ(ua.index, ub.index) << k;
    ASSERT_EQ(ua.tokens.time, ub.tokens.time) << k;
    ASSERT_EQ(ua.tokens.stream, ub.tokens.stream) << k;
    ASSERT_EQ(ua.tokens.present, ub.tokens.present) << k;
    ASSERT_EQ(ua.embeddings, ub.embeddings) << k;
  }
  PooledResult pa, pb;
  ASSERT_TRUE(a.session.pooled(5.0, &pa).ok());
  ASSERT_TRUE(b.session.pooled(5.0, &pb).ok());
  EXPECT_EQ(pa.pooled, pb.pooled);
  EXPECT_EQ(pa.head, pb.head);
  EXPECT_GE(a.compared, 50) << "tokens of the twin sessions checked against the forward";
}

// --- memory ---------------------------------------------------------------------------------------

// 20 minutes of two streams (ECG 130 Hz, patch 16; acc_x 50 Hz, patch 8) in 1 s chunks, on the
// flattened look-back fixture (W = 2 s, d_model 16, 2 layers, 1 block) and the factorized one
// (W = 0.75 s, 2 blocks: a group per stream, a group per 1 s bin). The bound, from docs/model.md
// ("Caches and memory") with every container's slack made explicit:
//   keys  = n_layers x blocks x 2 (evicted front kept until half the block) x 2 (vector growth)
//           x (tokens within W + one chunk's tokens + one per group at the edge, 4 groups at most)
//           x (2 d_model floats (key, value) + 17 bytes (time, index, mask flag))
//   history = 2 (dropped front kept until half the rows) x 2 (growth)
//             x (historySeconds + one chunk) x tokens per second x (d_model floats + 16)
//   pending = 2 x (one chunk's tokens + one per stream) x (largest patch floats + 96)
//   + 16 KiB for the session's fixed parts (groups' map nodes included).
TEST(Stream, MemoryStaysBoundedOverTwentyMinutes) {
  const int minutes = 20, seconds = 60 * minutes;
  const std::vector<float> ecg = testing::random_floats(130 * seconds, 71, -2000, 2000);
  const std::vector<float> acc = testing::random_floats(50 * seconds, 72, -2, 2);
  const auto chunk = [&](int sec) {
    Chunk ch;
    ch.streams.resize(2);
    ChunkStream& e = ch.streams[0];
    ChunkStream& a = ch.streams[1];
    if (sec == 0) {
      e.has_descriptor = a.has_descriptor = true;
      e.modality = "ecg", e.placement = "chest", e.rate_hz = 130.0, e.has_start_time = true, e.start_time = kT0;
      a.sensor = 1, a.modality = "acc_x", a.placement = "wrist", a.rate_hz = 50.0, a.has_start_time = true,
      a.start_time = kT0 + 0.01;
    }
    e.samples.assign(ecg.begin() + 130 * sec, ecg.begin() + 130 * (sec + 1));
    a.samples.assign(acc.begin() + 50 * sec, acc.begin() + 50 * (sec + 1));
    return ch;
  };
  double bound = 0;
  for (const char* name : {"flattened_lookback", "factorized_lookback"}) {
    SCOPED_TRACE(name);
    const Model m = load_fixture(name);
    const ModelConfig& c = m.config();
    ASSERT_TRUE(c.has_lookback());
    const int blocks = c.layout == Layout::kFactorized ? 2 : 1;
    const double per_s = 130.0 / 16 + 50.0 / 8, chunk_s = 1.0, history_s = 60.0, d = c.d_model;
    const double in_w = std::ceil(per_s * c.attention_lookback_s) + std::ceil(per_s * chunk_s) + 4;
    bound = c.n_layers * blocks * 2 * 2 * in_w * (2 * d * 4 + 17) +
            2 * 2 * (history_s + chunk_s) * std::ceil(per_s) * (4 * d + 16) + 2 * (std::ceil(per_s * chunk_s) + 2) * (4 * 16 + 96) +
            16384;
    StreamSession s;
    StreamOptions o;
    o.history_s = history_s;
    ASSERT_TRUE(StreamSession::create(m, o, &s).ok());
    std::size_t early = 0, late = 0, worst = 0;
    StreamUpdate last;
    for (int sec = 0; sec < seconds; ++sec) {
      ASSERT_TRUE(s.push(chunk(sec), &last).ok()) << sec;
      const std::size_t b = s.memory_bytes();
      worst = std::max(worst, b);
      if (sec >= 120 && sec < 300) early = std::max(early, b);
      if (sec >= 300) late = std::max(late, b);
    }
    std::printf("[ stream   ] 20 min, %-20s W %.2f s: memory_bytes max %zu (minutes 2-5: %zu, 5-20: %zu), bound %.0f\n",
                name, c.attention_lookback_s, worst, early, late, bound);
    EXPECT_LE(static_cast<double>(worst), bound);
    EXPECT_LE(late, early) << "no growth from minute 5 to minute 20";
    // Still exact after 20 minutes (times 1200 s from the reference): the last push's tokens against
    // a forward of the last 20 s only, with the same reference time. A token depends on nothing more
    // than n_layers x blocks x W older (docs/model.md, "Look-back"): at most 3 s here.
    const int from = seconds - 20;
    // Cut at whole patches, so that the kept tokens keep their times (the session's patch grid).
    const std::int64_t e0 = (130LL * from / 16) * 16, a0 = (50LL * from / 8) * 8;
    StreamInput e, a;
    e.modality = "ecg", e.placement = "chest", e.rate_hz = 130.0;
    a.sensor = 1, a.modality = "acc_x", a.placement = "wrist", a.rate_hz = 50.0;
    e.start_time = kT0 + static_cast<double>(e0) / 130.0;
    a.start_time = kT0 + 0.01 + static_cast<double>(a0) / 50.0;
    e.samples.assign(ecg.begin() + e0, ecg.end());
    a.samples.assign(acc.begin() + a0, acc.end());
    Window w;
    w.has_reference_time = true;
    w.reference_time = s.reference_time();
    w.streams = {e, a};
    ForwardResult fr;
    ASSERT_TRUE(m.forward(w, {}, &fr).ok());
    int compared = 0;
    for (int i = 0; i < last.tokens.count; ++i)
      for (int j = 0; j < fr.tokens.count; ++j) {
        if (fr.tokens.stream[j] != last.tokens.stream[i] || fr.tokens.time[j] != last.tokens.time[i]) continue;
        ASSERT_TRUE(testing::AllClose(last.embeddings.data() + static_cast<std::size_t>(i) * c.d_model,
                                      fr.embeddings.data() + static_cast<std::size_t>(j) * c.d_model, c.d_model, kTol,
                                      0.0, "token at minute 20"));
        ++compared;
      }
    EXPECT_EQ(compared, last.tokens.count);
    EXPECT_GT(compared, 10);
  }
  // Not vacuous: without a look-back (a causal fixture without W) the caches grow past the bound.
  const Model unlimited = load_fixture("flattened_causal");
  StreamSession u;
  ASSERT_TRUE(StreamSession::create(unlimited, {}, &u).ok());
  StreamUpdate last;
  for (int sec = 0; sec < 240; ++sec) ASSERT_TRUE(u.push(chunk(sec), &last).ok()) << sec;
  EXPECT_GT(static_cast<double>(u.memory_bytes()), 2 * bound) << "4 minutes without W";
}

}  // namespace
}  // namespace sf
