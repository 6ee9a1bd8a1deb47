// Ring buffers to model windows (docs/bluetooth.md "assembler.js"; the window format is
// docs/model.md "Input"). Times are host seconds (float64), already aligned (clock.js).
//
// Decisions:
// - Storage: per stream a time-ordered ring of (time, value) float64 pairs that keeps the newest
//   `capacitySeconds` (samples older than newest - capacitySeconds are evicted) and at most
//   `maxSamples` (default: 2x the nominal count + 64 for regular streams, 100 per second + 1024
//   for event streams). It grows on demand up to that.
// - Out of order: a sample older than the newest is inserted in time order; an exact duplicate
//   time is dropped (the first value wins); a sample already older than the retained span is
//   dropped. Both are counted in `dropped` (never silently: they are the only drops).
// - A regular stream's window is the grid startTime + k / rateHz, and that grid is the samples'
//   own: sample k of the window was measured within `error` of startTime + k / rateHz, where
//   error = StreamBuffer.timing(t0, t1).error. (Earlier versions used the declared rateHz: with
//   an H10's ACC at 51.07 Hz declared 50, the last sample of a 10 s window was labelled ~0.2 s
//   late, ECG at 130.35 Hz declared 130 ~27 ms; the samples after a lost frame could shift by a
//   slot; two samples rounding to one slot lost one of them.) How:
//   1. Slots: each sample takes the nearest point of a grid that follows the samples (a
//      first-order phase-locked loop, gain 0.05 per sample), started with the median of the
//      intervals within half a declared period of the declared period (or, when there is no such
//      interval and no shorter one, the median interval: the stream runs slower than declared).
//      Each sample gets a slot of its own: one that rounds onto the previous sample's slot
//      (jitter beyond half a period, batched host times, a step of the clock mapping, a stream
//      running faster than declared) takes the next one. Nothing pushed is left out.
//   2. Grid: period and offset fitted to (slot, time). Candidate periods: the declared one, and
//      with at least 3 samples the least-squares slope of time on slot over all samples and
//      pooled within the runs between holes (a PMD stream restarted after a reconnect starts at a
//      new phase: one intercept per run keeps that step from tilting the slope). Each candidate's
//      offset is the midrange of the residuals, which makes its largest error (max - min) / 2
//      the smallest possible for that period; the smallest largest error wins, the declared rate
//      on a tie (within float64 rounding of the times), so an exact grid keeps its exact rate.
//      Least squares rather than a minimax line: one late host-timed notification (tens of ms)
//      moves a least-squares slope by its share only. Then 1-2 are repeated with the fitted
//      period until no hole's slot count can change (a lost 36-sample ACC frame at 51.07 Hz is
//      0.77 slot short with the declared 50 Hz).
//   3. Fewer than 3 samples: the declared rate (two points fit any rate exactly, so the rate
//      would be one interval's jitter: +-4 % for a 1 Hz host-timed stream with +-20 ms delivery
//      jitter), still with the midrange offset. A window with no sample: the declared grid
//      through the nearest sample.
//   Bound: every sample of the slice is within `error` of its measured time (up to float64
//   rounding of the times, ~0.2 us for Unix seconds). The true times of a run lie on a grid, so
//   the best grid's error is at most half the spread of the measured times' own errors, plus
//   half the phase step where the stream restarted inside the window (a quarter period at most:
//   ~1.9 ms ECG, ~4.9 ms ACC at 51 Hz). The fit stays within 0.25 ms of that through the whole
//   simulated H10 path (tests: it adds <= 0.11 ms). Measured there (ECG, ACC 51.07 / 204.3 Hz,
//   8 seeds, 10 s windows every 1 s): once the device's clock fit has settled (window start
//   >= 25 s), median 0.05 ms, 99 % <= 0.7 ms, at most 1.2 ms (1.6 ms with a restart inside the
//   window); before, up to 2.5 ms, the clock fit still moving by milliseconds. With jittered
//   host-timed samples least squares can be a few % of the jitter worse than the best grid.
//   startTime = the first grid point >= the window start (and >= the stream's covered span).
//   A sample belongs to the window its slot time falls in.
// - Rate buckets: the model picks a rate embedding from rateHz (rate_bucket_edges_hz, e.g.
//   [1, 10, 100]). Measured H10 rates (130.35, 25.54, 51.07, 102.15, 204.3 Hz) stay in their
//   declared rate's bucket, but a stream declared at an edge (100 Hz) and running a hair slow
//   would not. Decision: with `rateBucketEdgesHz` (WindowAssembler or StreamBuffer option: pass a
//   model's config.rate_bucket_edges_hz), a measured rate outside the declared rate's bucket is
//   clamped to that bucket's edge when every sample then stays within a quarter period of its
//   slot (a crystal a few ppm off: yes; timing().clamped says so and `error` includes it);
//   otherwise the measured rate is reported and the bucket follows the stream's real rate (a
//   stream running several % off its declared rate is not what was declared). Without edges the
//   assembler does not know the model's buckets and reports the measured rate.
// - Missing vs. not there: a slot inside the stream's covered span (from its oldest retained sample
//   or gap to its newest sample or gap end) with no sample is missing (null): dropouts and marked
//   gaps. Slots outside it are not emitted: before a stream's first sample the window starts later;
//   after its newest sample (data not yet arrived) it ends earlier, so streaming windows do not
//   show the delivery latency as missing data. `markGap(t0, t1)` (a disconnect) extends the covered
//   span over [t0, t1), so a gap at the edge of a window shows as nulls too.
// - A gap never hides data: samples pushed with times inside a marked gap are kept and shown.
// - Event streams (rateHz null): the events with t0 <= time < t1, as timestamps + samples. A gap
//   shows as the absence of events (the model sees the real event times).
// - Values: numbers; null / NaN mark a missing sample. Windows carry plain arrays with null for
//   missing (JSON-friendly; normalizeWindow turns them into typed arrays).
import { SensorformerError } from '../errors.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', message);
const PLL_GAIN = 0.05;       // how fast the slot-assignment grid follows the samples (per sample)
const MIN_FIT_SAMPLES = 3;   // fewer samples in a slice: the declared rate (see the header)
const MAX_FIT_PASSES = 4;    // slot assignments per slice (the second one is nearly always the last)
const CONVERGED = 0.05;      // of a period: a period change that moves no slot across the slice

// Slots of the times u (sorted, relative seconds) on a grid of period p that follows the samples:
// each sample takes the grid point nearest to it (g + m p), then the grid is pulled toward the
// sample by PLL_GAIN, so that a period a little off the real one neither loses samples nor invents
// holes inside a run. Two samples of a regular stream are never the same instant: a sample that
// rounds onto the previous one's slot (delivery jitter beyond half a period, batched host times, a
// step of the device-to-host clock mapping) takes the next slot, so no sample is ever left out.
function assignSlots(u, p) {
  const n = u.length, slots = new Float64Array(n);
  let g = u[0], k = 0;
  for (let i = 1; i < n; i++) {
    const m = Math.max(1, Math.round((u[i] - g) / p));
    const predicted = g + m * p;
    k += m;
    slots[i] = k;
    g = predicted + PLL_GAIN * (u[i] - predicted);
  }
  return slots;
}

// The grid time = offset + k x period that fits the slotted samples best: the candidate periods are
// the declared one and, with at least MIN_FIT_SAMPLES samples, the least-squares slope of time on
// slot (a) over all samples and (b) within the runs between holes (one intercept per run, so a
// stream restarted at another phase after a reconnect does not tilt the slope); each candidate's
// offset is the midrange of the residuals time - k x period, which makes its largest error
// (max - min) / 2 the smallest possible for that period; the candidate with the smallest largest
// error wins (ties within `tie` seconds: the declared rate, then (a)). With rateBucketEdgesHz, a
// winner outside the declared rate's bucket is clamped to that bucket's edge when every sample then
// stays within a quarter period of its slot.
function bestGrid(u, slots, declared, edges, tie) {
  const n = u.length;
  const evaluate = (rate, period) => {
    let lo = Infinity, hi = -Infinity;
    for (let i = 0; i < n; i++) {
      const r = u[i] - period * slots[i];
      if (r < lo) lo = r;
      if (r > hi) hi = r;
    }
    return { rate, period, offset: (lo + hi) / 2, error: (hi - lo) / 2, clamped: false };
  };
  let best = evaluate(declared, 1 / declared);
  if (n >= MIN_FIT_SAMPLES) {
    for (const period of leastSquaresPeriods(u, slots)) {
      if (!(period > 0 && Number.isFinite(period))) continue;
      const c = evaluate(1 / period, period);
      if (c.error < best.error - tie) best = c;
    }
  }
  if (edges && best.rate !== declared) {
    let lower = 0, upper = Infinity;
    for (const e of edges) {
      if (e <= declared) lower = e;
      else if (e < upper) upper = e;
    }
    if (best.rate < lower || best.rate >= upper) {
      // the largest rate below `upper` by a few ulps (the model's bucket test is rate >= edge)
      const rate = best.rate < lower ? lower : upper * (1 - 2 ** -50);
      const c = evaluate(rate, 1 / rate);
      if (c.error <= 0.25 * c.period) best = { ...c, clamped: true };
    }
  }
  return { ...best, span: slots[n - 1] - slots[0] };
}

// Least-squares slopes of u on slot over [from, to) runs of samples: the slope over all samples,
// and the slope pooled within runs (a new run starts after a hole of one slot or more; one
// intercept per run). Two-pass sums around the means for precision.
function leastSquaresPeriods(u, slots) {
  const slope = (runs) => {
    let sxx = 0, sxy = 0;
    for (const [from, to] of runs) {
      if (to - from < 2) continue;
      let mk = 0, mu = 0;
      for (let i = from; i < to; i++) { mk += slots[i]; mu += u[i]; }
      mk /= to - from; mu /= to - from;
      for (let i = from; i < to; i++) {
        const dk = slots[i] - mk;
        sxx += dk * dk;
        sxy += dk * (u[i] - mu);
      }
    }
    return sxx > 0 ? sxy / sxx : NaN;
  };
  const runs = [];
  let from = 0;
  for (let i = 1; i <= u.length; i++) {
    if (i === u.length || slots[i] - slots[i - 1] >= 2) { runs.push([from, i]); from = i; }
  }
  const out = [slope([[0, u.length]])];
  if (runs.length > 1) out.push(slope(runs));
  return out;
}

function arrayLike(x, what) {
  if (!(Array.isArray(x) || ArrayBuffer.isView(x))) throw bad(`${what} must be an array or typed array`);
  return x;
}

export class StreamBuffer {
  #t; #v; #head = 0; #size = 0; #maxSamples; #edges = null;
  #gaps = [];  // sorted, merged [t0, t1) spans
  #dropped = { duplicates: 0, expired: 0, overflow: 0 };

  constructor({ sensor, modality, placement, rateHz = null, capacitySeconds = 120, maxSamples, rateBucketEdgesHz = null } = {}) {
    if (!Number.isInteger(sensor) || sensor < 0) throw bad(`StreamBuffer: sensor must be an integer sensor id >= 0, got ${sensor}`);
    if (typeof modality !== 'string' || !modality) throw bad('StreamBuffer: modality must be a name (e.g. "ecg")');
    if (typeof placement !== 'string' || !placement) throw bad('StreamBuffer: placement must be a name (e.g. "chest")');
    if (rateHz !== null && !(typeof rateHz === 'number' && rateHz > 0 && Number.isFinite(rateHz)))
      throw bad(`StreamBuffer: rateHz must be a positive number (a regular stream) or null (event-driven), got ${rateHz}`);
    if (!(typeof capacitySeconds === 'number' && capacitySeconds > 0 && Number.isFinite(capacitySeconds)))
      throw bad(`StreamBuffer: capacitySeconds must be a positive number, got ${capacitySeconds}`);
    if (rateBucketEdgesHz !== null) {
      arrayLike(rateBucketEdgesHz, 'StreamBuffer: rateBucketEdgesHz');
      const edges = Array.from(rateBucketEdgesHz);
      if (!edges.every((e, i) => typeof e === 'number' && e > 0 && Number.isFinite(e) && (i === 0 || e > edges[i - 1])))
        throw bad(`StreamBuffer: rateBucketEdgesHz must be increasing positive numbers (a model's rate_bucket_edges_hz), got ${JSON.stringify(edges)}`);
      this.#edges = edges;
    }
    this.sensor = sensor;
    this.modality = modality;
    this.placement = placement;
    this.rateHz = rateHz;
    this.capacitySeconds = capacitySeconds;
    this.#maxSamples = maxSamples ?? (rateHz ? Math.ceil(2 * capacitySeconds * rateHz) + 64 : Math.ceil(100 * capacitySeconds) + 1024);
    if (!(Number.isInteger(this.#maxSamples) && this.#maxSamples > 0)) throw bad(`StreamBuffer: maxSamples must be a positive integer, got ${maxSamples}`);
    const initial = Math.min(this.#maxSamples, 1024);
    this.#t = new Float64Array(initial);
    this.#v = new Float64Array(initial);
  }

  /** Number of samples held. */
  get size() {
    return this.#size;
  }

  /** Samples not stored, by reason (exact duplicate times, older than the retained span, over maxSamples). */
  get dropped() {
    return { ...this.#dropped };
  }

  /** Time of the oldest / newest sample held (NaN when empty). */
  get oldest() {
    return this.#size ? this.#time(0) : NaN;
  }

  get newest() {
    return this.#size ? this.#time(this.#size - 1) : NaN;
  }

  /** The marked gaps still within the retained span, as [t0, t1) pairs. */
  get gaps() {
    return this.#gaps.map((g) => [...g]);
  }

  /** End of the covered span: max(newest sample, end of the latest gap); -Infinity when nothing. */
  get coveredUntil() {
    const g = this.#gaps.length ? this.#gaps[this.#gaps.length - 1][1] : -Infinity;
    return Math.max(this.#size ? this.newest : -Infinity, g);
  }

  /** Start of the covered span: min(oldest sample, start of the earliest gap); Infinity when nothing. */
  get coveredFrom() {
    const g = this.#gaps.length ? this.#gaps[0][0] : Infinity;
    return Math.min(this.#size ? this.oldest : Infinity, g);
  }

  /** Adds samples: times (s) and values (numbers; null or NaN = missing), any order. */
  push(times, values) {
    arrayLike(times, 'StreamBuffer.push: times');
    arrayLike(values, 'StreamBuffer.push: values');
    if (times.length !== values.length) throw bad(`StreamBuffer.push: ${times.length} times but ${values.length} values`);
    for (let i = 0; i < times.length; i++) {
      const t = times[i], v = values[i];
      if (typeof t !== 'number' || !Number.isFinite(t)) throw bad(`StreamBuffer.push: times[${i}] must be a finite number of seconds, got ${t}`);
      if (v !== null && typeof v !== 'number') throw bad(`StreamBuffer.push: values[${i}] must be a number or null, got ${JSON.stringify(v)}`);
    }
    for (let i = 0; i < times.length; i++) this.#insert(times[i], values[i] === null ? NaN : values[i]);
    this.#evict();
    return this;
  }

  /** Marks [t0, t1) as missing (a disconnect). Samples already there are kept. */
  markGap(t0, t1) {
    if (!(Number.isFinite(t0) && Number.isFinite(t1) && t0 < t1)) throw bad(`StreamBuffer.markGap: need finite t0 < t1, got ${t0}, ${t1}`);
    const gaps = this.#gaps;
    gaps.push([t0, t1]);
    gaps.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const g of gaps) {
      const last = merged[merged.length - 1];
      if (last && g[0] <= last[1]) last[1] = Math.max(last[1], g[1]);
      else merged.push([g[0], g[1]]);
    }
    this.#gaps = merged;
    this.#evict();
    return this;
  }

  /** True when a sample lies in [t0, t1). */
  hasData(t0, t1) {
    return this.#lowerBound(t1) > this.#lowerBound(t0);
  }

  /** The model's stream object for [t0, t1) (docs/model.md "Input"). */
  slice(t0, t1) {
    if (!(Number.isFinite(t0) && Number.isFinite(t1) && t0 < t1)) throw bad(`StreamBuffer.slice: need finite t0 < t1, got ${t0}, ${t1}`);
    const id = { sensor: this.sensor, modality: this.modality, placement: this.placement };
    if (this.rateHz === null) {
      const a = this.#lowerBound(t0), b = this.#lowerBound(t1);
      const timestamps = new Array(b - a), samples = new Array(b - a);
      for (let i = a; i < b; i++) {
        timestamps[i - a] = this.#time(i);
        const v = this.#value(i);
        samples[i - a] = Number.isNaN(v) ? null : v;
      }
      return { ...id, timestamps, samples };
    }
    const g = this.#window(t0, t1);
    if (!g) return { ...id, rateHz: this.rateHz, startTime: t0, samples: [] };
    const samples = new Array(g.count).fill(null);
    for (let i = g.a; i < g.b; i++) {
      const k = g.grid.slots[i - g.a] - g.first;
      if (!(k >= 0 && k < g.count)) continue;  // a slot outside [lo, hi): another window's sample
      const v = this.#value(i);
      samples[k] = Number.isNaN(v) ? null : v;
    }
    return { ...id, rateHz: g.grid.rate, startTime: g.startTime, samples };
  }

  /**
   * How slice(t0, t1) timed a regular stream (null for an event stream or an empty slice):
   * { rateHz, declaredRateHz, startTime, error, measured, clamped, samples }. `error` (s) is the
   * largest |startTime + k / rateHz - time| over the samples the grid was fitted to (`samples` of
   * them): every sample of the slice is within `error` of its own time. `measured`: rateHz was
   * fitted to the samples (false: the declared rate, because it describes them as well or because
   * there are fewer than 3). `clamped`: the fitted rate was moved to the edge of the declared
   * rate's bucket (rateBucketEdgesHz).
   */
  timing(t0, t1) {
    if (!(Number.isFinite(t0) && Number.isFinite(t1) && t0 < t1)) throw bad(`StreamBuffer.timing: need finite t0 < t1, got ${t0}, ${t1}`);
    if (this.rateHz === null) return null;
    const g = this.#window(t0, t1);
    if (!g) return null;
    const { rate, error, measured, clamped, fitted } = g.grid;
    return { rateHz: rate, declaredRateHz: this.rateHz, startTime: g.startTime, error, measured, clamped, samples: fitted };
  }

  // The slot grid of a regular stream's slice of [t0, t1); null when the covered span misses it.
  #window(t0, t1) {
    const half = 0.5 / this.rateHz;
    // Covered span: slot times in [from - half, until + half] (a sample's own slot), or inside a gap.
    const lastGapEnd = this.#gaps.length ? this.#gaps[this.#gaps.length - 1][1] : -Infinity;
    const lo = Math.max(t0, this.coveredFrom - half);
    const hi = Math.min(t1, Math.max(this.#size ? this.newest + half : -Infinity, lastGapEnd));
    if (!(lo < hi)) return null;
    // The samples that can land in a slot of [lo, hi) and the grid fitted to them.
    const a = this.#lowerBound(lo - half), b = this.#lowerBound(hi + half);
    const grid = a < b ? this.#fit(a, b) : this.#gridWithoutSamples(lo);
    const period = 1 / grid.rate;
    const first = Math.ceil((lo - grid.anchor) / period - 1e-9);  // the first grid point >= lo
    const startTime = grid.anchor + first * period;
    const count = Math.max(0, Math.ceil((hi - startTime) / period - 1e-9));
    return { a, b, grid, first, startTime, count };
  }

  #gridWithoutSamples(lo) {
    // A window of only gap: the declared grid through the nearest sample (or lo), all slots null.
    let anchor = lo;
    if (this.#size) {
      const i = Math.min(this.#lowerBound(lo), this.#size - 1);
      anchor = i > 0 && Math.abs(this.#time(i - 1) - lo) < Math.abs(this.#time(i) - lo) ? this.#time(i - 1) : this.#time(i);
    }
    return { rate: this.rateHz, anchor, slots: [], error: 0, measured: false, clamped: false, fitted: 0 };
  }

  // Slots and grid of the samples a .. b-1 (logical indices): { rate, anchor (a grid point, s),
  // slots (per sample, relative to the anchor), error, measured, clamped, fitted (samples) }.
  #fit(a, b) {
    const declared = this.rateHz, p0 = 1 / declared;
    const n = b - a, base = this.#time(a);
    const u = new Float64Array(n);  // times relative to the first: small numbers keep float64 precision
    for (let i = 0; i < n; i++) u[i] = this.#time(a + i) - base;
    // Starting period: the median of the single steps (intervals within half a declared period of
    // the declared period; holes and batched or jittered deliveries fall outside that band). With
    // no single step and no shorter interval, the stream runs slower than declared (an ACC stream
    // declared 200 Hz and sampling at 51 Hz): the median interval, so that no hole is invented
    // between every two samples. Otherwise the declared period (a stream running faster than
    // declared still gets one slot per sample: see assignSlots).
    const steps = [], longer = [];
    let shorter = 0;
    for (let i = 1; i < n; i++) {
      const d = u[i] - u[i - 1];
      if (d < 0.5 * p0) shorter++;
      else if (d < 1.5 * p0) steps.push(d);
      else longer.push(d);
    }
    const median = (x) => x.sort((y, z) => y - z)[x.length >> 1];
    let p = p0;
    if (steps.length >= MIN_FIT_SAMPLES - 1) p = median(steps);
    else if (!shorter && longer.length >= MIN_FIT_SAMPLES - 1) p = median(longer);
    // Slots, then the best grid for them; the slots are assigned again with its period until no
    // hole's slot count can change (|period change| x span <= CONVERGED of a period).
    // Ties: float64 Unix times carry ~2.4e-7 s of rounding, so grids within a few ulps of the
    // times' magnitude describe the samples equally well.
    const tie = 4 * Math.abs(base) * Number.EPSILON + 1e-12;
    let slots, best;
    for (let pass = 0; pass < MAX_FIT_PASSES; pass++) {
      slots = assignSlots(u, p);
      best = bestGrid(u, slots, declared, this.#edges, tie);
      if (Math.abs(best.period - p) * best.span <= CONVERGED * p) break;
      p = best.period;
    }
    return {
      rate: best.rate, anchor: base + best.offset, slots, error: best.error,
      measured: best.rate !== declared, clamped: best.clamped, fitted: n,
    };
  }

  #time(i) { return this.#t[(this.#head + i) % this.#t.length]; }
  #value(i) { return this.#v[(this.#head + i) % this.#v.length]; }

  // First logical index whose time is >= t.
  #lowerBound(t) {
    let lo = 0, hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#time(mid) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #grow() {
    const cap = this.#t.length;
    if (cap >= this.#maxSamples) return false;
    const next = Math.min(this.#maxSamples, cap * 2);
    const t = new Float64Array(next), v = new Float64Array(next);
    for (let i = 0; i < this.#size; i++) { t[i] = this.#time(i); v[i] = this.#value(i); }
    this.#t = t; this.#v = v; this.#head = 0;
    return true;
  }

  #insert(t, v) {
    const size = this.#size;
    let at = size;
    if (size && t <= this.#time(size - 1)) {
      at = this.#lowerBound(t);
      if (at < size && this.#time(at) === t) { this.#dropped.duplicates++; return; }
      if (t < this.#time(size - 1) - this.capacitySeconds) { this.#dropped.expired++; return; }
    }
    if (size === this.#t.length && !this.#grow()) {
      // Full at maxSamples: the oldest sample makes room (or this one, if it would be the oldest).
      if (at === 0) { this.#dropped.overflow++; return; }
      this.#head = (this.#head + 1) % this.#t.length;
      this.#size--;
      this.#dropped.overflow++;
      at--;
    }
    const cap = this.#t.length;
    for (let i = this.#size; i > at; i--) {
      const to = (this.#head + i) % cap, from = (this.#head + i - 1) % cap;
      this.#t[to] = this.#t[from]; this.#v[to] = this.#v[from];
    }
    const p = (this.#head + at) % cap;
    this.#t[p] = t; this.#v[p] = v;
    this.#size++;
  }

  #evict() {
    const horizon = this.coveredUntil - this.capacitySeconds;
    let drop = 0;
    while (drop < this.#size && this.#time(drop) < horizon) drop++;
    if (drop) { this.#head = (this.#head + drop) % this.#t.length; this.#size -= drop; }
    this.#gaps = this.#gaps.filter((g) => g[1] > horizon).map((g) => [Math.max(g[0], horizon), g[1]]);
  }
}

/**
 * Streams by id, assembled into model windows:
 * - `window({ end, seconds })`: `{ streams, referenceTime: end - seconds }` with each stream's
 *   slice of [end - seconds, end), in the order the streams were added; streams with no sample in
 *   that range are left out (the model treats an entirely missing stream the same way).
 * - `hop({ seconds, hop, latency = 0 })`: every window not yet returned whose end lies on the
 *   grid first + k * hop and at or before the data horizon (the newest covered time over all
 *   streams, minus `latency`: pass the slowest stream's delivery latency to wait for it). The
 *   first window ends `seconds` after the earliest data. Windows with no data at all are
 *   skipped (the ends still advance); a call with a different hop continues from the last end.
 */
export class WindowAssembler {
  #streams = new Map();
  #lastEnd = null;
  #edges;

  /** rateBucketEdgesHz: a model's config.rate_bucket_edges_hz, for every stream added (see StreamBuffer). */
  constructor({ rateBucketEdgesHz = null } = {}) {
    this.#edges = rateBucketEdgesHz;
    if (rateBucketEdgesHz !== null) new StreamBuffer({ sensor: 0, modality: 'x', placement: 'x', rateBucketEdgesHz });  // validates
  }

  add(id, spec) {
    if (this.#streams.has(id)) throw bad(`WindowAssembler.add: a stream ${JSON.stringify(id)} exists already`);
    const buffer = new StreamBuffer({ rateBucketEdgesHz: this.#edges, ...spec });
    this.#streams.set(id, buffer);
    return buffer;
  }

  /** The StreamBuffer of a stream (undefined when unknown). */
  get(id) {
    return this.#streams.get(id);
  }

  get ids() {
    return [...this.#streams.keys()];
  }

  push(id, times, values) {
    const s = this.#streams.get(id);
    if (!s) throw bad(`WindowAssembler.push: no stream ${JSON.stringify(id)} (add it first)`);
    s.push(times, values);
    return this;
  }

  /** Marks [t0, t1) missing in the given streams (default: all). */
  markGap(t0, t1, ids = null) {
    for (const id of ids ?? this.#streams.keys()) {
      const s = this.#streams.get(id);
      if (!s) throw bad(`WindowAssembler.markGap: no stream ${JSON.stringify(id)}`);
      s.markGap(t0, t1);
    }
    return this;
  }

  /** Newest covered time over all streams (-Infinity when nothing was pushed). */
  get horizon() {
    let h = -Infinity;
    for (const s of this.#streams.values()) h = Math.max(h, s.coveredUntil);
    return h;
  }

  window({ end, seconds } = {}) {
    if (!Number.isFinite(end)) throw bad(`WindowAssembler.window: end must be a finite time (s), got ${end}`);
    if (!(typeof seconds === 'number' && seconds > 0 && Number.isFinite(seconds))) throw bad(`WindowAssembler.window: seconds must be a positive number, got ${seconds}`);
    const t0 = end - seconds;
    const streams = [];
    for (const s of this.#streams.values()) if (s.hasData(t0, end)) streams.push(s.slice(t0, end));
    return { streams, referenceTime: t0 };
  }

  hop({ seconds, hop, latency = 0 } = {}) {
    if (!(typeof seconds === 'number' && seconds > 0 && Number.isFinite(seconds))) throw bad(`WindowAssembler.hop: seconds must be a positive number, got ${seconds}`);
    if (!(typeof hop === 'number' && hop > 0 && Number.isFinite(hop))) throw bad(`WindowAssembler.hop: hop must be a positive number, got ${hop}`);
    if (!(typeof latency === 'number' && latency >= 0)) throw bad(`WindowAssembler.hop: latency must be a number >= 0, got ${latency}`);
    const horizon = this.horizon - latency;
    let first;
    if (this.#lastEnd === null) {
      let from = Infinity;
      for (const s of this.#streams.values()) from = Math.min(from, s.coveredFrom);
      if (!Number.isFinite(from)) return [];
      first = from + seconds;
      if (first > horizon) return [];
      this.#lastEnd = first - hop;
    }
    const base = this.#lastEnd;
    const count = Math.floor((horizon - base) / hop + 1e-9);
    const out = [];
    for (let k = 1; k <= count; k++) {
      const end = base + k * hop;
      const w = this.window({ end, seconds });
      if (w.streams.length) out.push(w);
    }
    if (count > 0) this.#lastEnd = base + count * hop;
    return out;
  }
}
