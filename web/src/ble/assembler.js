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
// - A regular stream's window is the grid startTime + k / rateHz. Its phase is the stream's own:
//   the circular mean, modulo the period, of the first 32 sample times in the window (robust to
//   jitter; follows slow drift from one window to the next); startTime = the first grid point >=
//   the window start (and >= the stream's covered span, below). Each slot takes the nearest sample
//   within half a period (on a collision, the nearer one); a slot with none is null. The slot grid
//   follows the samples (a first-order phase-locked loop, gain 0.05 per sample), so a rateHz a
//   little off the real rate (130 for the H10's ~130.3 Hz ECG) neither loses samples nor invents
//   gaps; the model then sees sample k at startTime + k / rateHz, off by (rate error) x (k / rate)
//   (0.26% of the time into the window here). Jitter up to ~0.3 period is absorbed.
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
const PHASE_SAMPLES = 32;  // samples that set a window's grid phase
const PLL_GAIN = 0.05;     // how fast the slot grid follows the samples (per sample)

function arrayLike(x, what) {
  if (!(Array.isArray(x) || ArrayBuffer.isView(x))) throw bad(`${what} must be an array or typed array`);
  return x;
}

export class StreamBuffer {
  #t; #v; #head = 0; #size = 0; #maxSamples;
  #gaps = [];  // sorted, merged [t0, t1) spans
  #dropped = { duplicates: 0, expired: 0, overflow: 0 };

  constructor({ sensor, modality, placement, rateHz = null, capacitySeconds = 120, maxSamples } = {}) {
    if (!Number.isInteger(sensor) || sensor < 0) throw bad(`StreamBuffer: sensor must be an integer sensor id >= 0, got ${sensor}`);
    if (typeof modality !== 'string' || !modality) throw bad('StreamBuffer: modality must be a name (e.g. "ecg")');
    if (typeof placement !== 'string' || !placement) throw bad('StreamBuffer: placement must be a name (e.g. "chest")');
    if (rateHz !== null && !(typeof rateHz === 'number' && rateHz > 0 && Number.isFinite(rateHz)))
      throw bad(`StreamBuffer: rateHz must be a positive number (a regular stream) or null (event-driven), got ${rateHz}`);
    if (!(typeof capacitySeconds === 'number' && capacitySeconds > 0 && Number.isFinite(capacitySeconds)))
      throw bad(`StreamBuffer: capacitySeconds must be a positive number, got ${capacitySeconds}`);
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
    const rate = this.rateHz, period = 1 / rate, half = period / 2;
    // Covered span: slot times in [from - half, until + half] (a sample's own slot), or inside a gap.
    const lastGapEnd = this.#gaps.length ? this.#gaps[this.#gaps.length - 1][1] : -Infinity;
    const lo = Math.max(t0, this.coveredFrom - half);
    const hi = Math.min(t1, Math.max(this.#size ? this.newest + half : -Infinity, lastGapEnd));
    if (!(lo < hi)) return { ...id, rateHz: rate, startTime: t0, samples: [] };
    // Phase: circular mean of (time - lo) * rate modulo 1 over the first PHASE_SAMPLES samples in
    // range; else the nearest sample; else none (a window of only gap) and the grid starts at lo.
    let a = this.#lowerBound(lo - half), b = Math.min(this.#lowerBound(hi), a + PHASE_SAMPLES);
    let phase = 0;
    if (a < b || this.#size) {
      if (a >= b) { a = Math.min(a, this.#size - 1); b = a + 1; if (a > 0 && Math.abs(this.#time(a - 1) - lo) < Math.abs(this.#time(a) - lo)) { a--; b--; } }
      let cs = 0, sn = 0;
      for (let i = a; i < b; i++) {
        const x = 2 * Math.PI * ((this.#time(i) - lo) * rate);
        cs += Math.cos(x); sn += Math.sin(x);
      }
      phase = Math.atan2(sn, cs) / (2 * Math.PI);
      if (phase < 0) phase += 1;
      // Samples on the grid point at lo itself come out as -1e-17 or so: that is phase 0, not 1.
      if (!(phase < 1 - 1e-7)) phase = 0;
    }
    const startTime = lo + phase * period;
    // Slots: each sample goes to the nearest grid point of a grid that follows the samples
    // (g = the grid time of slot k, pulled toward every sample by PLL_GAIN): with rateHz exact this
    // is the nominal grid; with rateHz a little off (130 for a 130.3 Hz ECG) the grid still meets
    // every sample instead of slipping a slot every few hundred samples.
    const samples = [], dist = [];
    let g = startTime, k = 0;
    for (let i = this.#lowerBound(startTime - half); i < this.#size; i++) {
      const t = this.#time(i);
      const m = Math.round((t - g) * rate);
      const slot = k + m;
      if (slot < 0) continue;
      const predicted = g + m * period;
      if (!(predicted < hi)) break;
      while (samples.length <= slot) { samples.push(null); dist.push(Infinity); }
      const d = Math.abs(t - predicted);
      if (d < dist[slot]) {
        dist[slot] = d;
        const v = this.#value(i);
        samples[slot] = Number.isNaN(v) ? null : v;
      }
      g = predicted + PLL_GAIN * (t - predicted);
      k = slot;
    }
    // Missing slots after the last sample, up to the end of the covered span.
    const n = k + Math.max(0, Math.ceil((hi - g) * rate - 1e-9));
    while (samples.length < n) samples.push(null);
    return { ...id, rateHz: rate, startTime, samples };
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

  add(id, spec) {
    if (this.#streams.has(id)) throw bad(`WindowAssembler.add: a stream ${JSON.stringify(id)} exists already`);
    const buffer = new StreamBuffer(spec);
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
