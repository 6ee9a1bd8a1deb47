// The device layer's samples as chunks for a streaming session (docs/bluetooth.md "feeder.js —
// feeding a streaming session"; the chunk format and finality: docs/model.md "Streaming sessions").
// A sibling of WindowAssembler: the assembler refits each window's grid to its samples, a session
// cannot (a regular stream's grid startTime0 + i / rateHz is fixed when the stream is declared), so
// this module decides the grid once and keeps every sample within a stated distance of it.
//
//   const feeding = feedSession(wearable, model.stream(), { onUpdate: (u) => draw(u) });
//   ...
//   await feeding.close();   // the last samples, and every stream's watermark at "now"
//
// Decisions:
// - Regular streams, the rate. Real devices run off their declared rates (an H10 sends ECG at
//   ~130.35 Hz declared 130, ACC at 51.07 Hz declared 50), and a fixed declared grid would drift
//   from the samples by seconds over an hour. So a stream is declared only once its rate is
//   measured: its samples are held for `measureSeconds` (of host time after its first sample
//   arrived), then its rate is the device's own (the median spacing of its PMD frames after the
//   first, from device timestamps), or without device times the least-squares rate of the host
//   times (StreamBuffer.timing; with fewer than 3 samples, the declared rate). The session's
//   rate is that rate x (1 + rateMargin): a grid a little faster than the samples falls behind
//   them, never ahead, and a grid falling behind can be re-anchored with a later `startTime`
//   (the session's gap), while a grid ahead of the samples could only be fixed by moving a
//   sample to an earlier slot than the one before it, which a session cannot do. The margin
//   (default 5e-4) exceeds crystal drift (tens of ppm) and the measurement's error; the price is
//   one missing slot per 1 / rateMargin samples (every ~15 s for ECG), a slot no sample was
//   measured in, marked missing, inside a patch that stays present.
// - Regular streams, the grid. The held samples keep the slots of the declaration (declare()).
//   After them, a sample (in order of measured time) takes the next slot unless it lies more than
//   half a period after that slot's time: then the slots up to the nearest one are missing (a
//   re-anchor: the next chunk's startTime). Bound, slot time vs measured time (the device layer's
//   host time): a sample is at most half a period after its slot (by construction, `maxLag`), and
//   before it by at most half a period plus the measured times' own steps back (the device clock
//   fit correcting itself: 1.74 ms at most through the simulated H10 path, 8 seeds, 10 min with
//   lost frames and a disconnect; tests/js/ble-feeder.test.js), as long as the device's rate is
//   within rateMargin of the measured one. A sample earlier than its slot by more (a stream faster
//   than measured) still takes the next slot: never dropped, and `maxLead` reports it. The held
//   samples (a stream's first measureSeconds) are within 1.3 periods of their slots there: the
//   device layer times a stream's first PMD frames with a clock fit of one to three frames.
// - Holes wait: a hole (a sample later than its slot) is committed only when it is `lateness`
//   seconds old or inside a gap the device layer marked, so that a frame delivered late (out of
//   order) still fills it. Samples of a stream are otherwise passed on as soon as they arrive.
// - Event streams (rateHz null: heart rate, RR beats, temperature, SpO2) keep their times. Their
//   watermark (`until`) after each flush is max(last event, now - lateness): every notification
//   proves that the events of its characteristic up to its receive time have arrived (values are
//   stamped with their receive time, RR beats with times chained before it, up to ~3.5 s back:
//   BeatTimeline; streamLateness.rr), so the watermark keeps finality moving between beats and while a
//   device is away, and a device that joins later starts after it. An event that still comes
//   earlier than a watermark already given (RR beats re-anchored after a reconnect) is moved to
//   that watermark, the smallest move the session accepts, and counted (`retimed`, `maxRetime`).
// - Disconnects: the device layer marks [last sample, now) as a gap, again every 0.5 s while the
//   link is down, then up to the reconnect. A regular stream's slots in a gap become missing
//   samples (`until`), its event streams' watermarks advance with it: the outage is a gap marked
//   missing, finality does not stall, and nothing received is lost.
// - A regular stream that goes silent without a disconnect (a stopped PMD stream) is filled with
//   missing samples up to lateness before the newest sample of any regular stream (before now
//   once none has sent anything for SILENT_AFTER seconds), so that it does not hold finality back
//   forever, and after a page stalled the frames still queued are not pushed ahead of their slots.
// - Start: nothing is pushed before `lateness` seconds after the first sample arrived, nor while
//   any stream is measuring its rate, so that the streams of one device (ECG, ACC, HR, which start
//   within a second of each other) are all declared before the session's frontier moves. A stream
//   that joins later cannot have tokens before the session's frontier (docs/model.md): its samples
//   earlier than the frontier cannot be given and are counted in `beforeFrontier` (the streams
//   of a device that connects later start after it: the watermarks trail now by `lateness`).
// - Accounting: per stream, received = given (values, in the chunks) + pending (held, not yet
//   given) + beforeFrontier, and for an event stream + missing (events received without a value,
//   e.g. a PPI the device flags unreliable: in the chunks as events with a NaN value). A regular
//   stream's `missing` counts the slots no sample came for (given as NaN samples, gaps or `until`)
//   and its samples received without a value (null / NaN): received = given + pending +
//   beforeFrontier + those.
import { SensorformerError } from '../errors.js';
import { StreamBuffer } from './assembler.js';
import { BeatTracker, DEFAULT_BEAT_GRID, beatModalities, isBeatModality } from '../qrs.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', message);

// lateness per stream id: RR beat times are chained from beat to beat and re-anchored only when
// the chain is more than 2.5 s off the host clock (BeatTimeline), so they trail their notification
// (about 1 s apart) by up to ~3.5 s.
export const FEEDER_DEFAULTS = Object.freeze({ lateness: 1.5, streamLateness: Object.freeze({ rr: 4 }), measureSeconds: 1.5, rateMargin: 5e-4 });

function number(value, name, { min = 0, inclusive = false } = {}) {
  if (!(typeof value === 'number' && Number.isFinite(value) && (inclusive ? value >= min : value > min)))
    throw bad(`SessionFeeder: ${name} must be a finite number ${inclusive ? '>=' : '>'} ${min}, got ${value}`);
  return value;
}

// The chunks of one flush. A stream's part of a chunk is one run of samples (regular: from one
// startTime; event: timestamps) followed by at most one watermark; anything after that starts the
// next chunk, so that no chunk relies on an order of applying its fields beyond "samples, then
// until".
class ChunkBuilder {
  #chunks = [];
  #current = null;
  constructor(count) { this.count = count; }

  part(index) {
    if (!this.#current) this.#current = new Map();
    let p = this.#current.get(index);
    if (!p) this.#current.set(index, (p = { samples: [], timestamps: [], until: null, startTime: null }));
    return p;
  }

  // A part of `index` to which samples can be appended (none after a watermark).
  open(index) {
    const p = this.part(index);
    if (p.until !== null) { this.#cut(); return this.part(index); }
    return p;
  }

  // A part of `index` that may start at a new startTime (a new chunk if this one has samples).
  fresh(index) {
    const p = this.part(index);
    if (p.samples.length || p.until !== null) { this.#cut(); return this.part(index); }
    return p;
  }

  #cut() {
    if (this.#current?.size) this.#chunks.push(this.#current);
    this.#current = null;
  }

  finish(describe) {
    this.#cut();
    return this.#chunks.map((parts) => {
      const streams = new Array(this.count).fill(null);
      for (const [index, p] of parts) streams[index] = describe(index, p);
      return { streams };
    });
  }
}

class RegularTrack {
  constructor(id, spec, options) {
    this.id = id;
    this.spec = spec;
    this.options = options;
    this.pending = [];        // [time, value], sorted by time: received, not given
    this.frames = [];         // while measuring: per batch { count, deviceSpan (s) | null }
    this.firstArrival = null; // host time the first sample arrived
    this.index = -1;          // session stream index once declared
    this.described = false;
    this.ready = false;       // rate and phase decided
    this.held = null;         // pending sample -> its slot, for the samples held while measuring
    this.start = 0;           // startTime0
    this.rate = 0;            // the session's rate
    this.n = 0;               // slots given (samples and missing)
    this.gaps = [];           // marked [t0, t1), merged, sorted
    this.logs = [];           // a SlotLog per derived stream (BeatTrack) that reads this one
    this.stats = {
      kind: 'regular', declaredRateHz: spec.rateHz, measuredRateHz: null, rateHz: null, startTime: null,
      received: 0, given: 0, missing: 0, pending: 0, beforeFrontier: 0, reanchors: 0, maxLag: 0, maxLead: 0,
    };
  }

  get measuring() { return !this.ready && this.pending.length > 0; }
  slot(i) { return this.start + i / this.rate; }
  // Upper bound of this stream's frontier bound in the session (the next slot's time).
  bound() { return this.slot(this.n); }

  // The rate and phase from the held samples (see the header); true when declared.
  declare(now, final) {
    if (this.ready) return true;
    if (!this.pending.length || (!final && now - this.firstArrival < this.options.measureSeconds)) return false;
    let rate = this.deviceRate();
    if (rate === null) {
      // Host times only: the assembler's fit (least-squares rate, or the declared one).
      const span = this.pending[this.pending.length - 1][0] - this.pending[0][0];
      const b = new StreamBuffer({ ...this.spec, capacitySeconds: span + 1, maxSamples: this.pending.length + 1 });
      b.push(this.pending.map((s) => s[0]), this.pending.map((s) => (Number.isNaN(s[1]) ? null : s[1])));
      const t = b.timing(b.oldest - 0.5 / this.spec.rateHz, b.newest + 0.5 / this.spec.rateHz);
      rate = t.rateHz;
    }
    this.stats.measuredRateHz = rate;
    this.rate = rate * (1 + this.options.rateMargin);
    // Slots of the held samples, given as they are (not by the lag rule of later samples): in
    // order of time, a step of k periods = k slots (at least one). The host times of a stream's
    // first frames are the least certain: the device layer's clock fit has seen one to three
    // frames and moves them by up to ~0.7 period against each other; the lag rule would turn that
    // into skipped slots and a period of lead. (Slots from the device times were tried: the first
    // frame's are nominally spaced, and the held ACC samples ended up to 1.3 periods off, not 0.8.)
    // Phase: the grid through the earliest residual (time - slot / rate), so that no held sample
    // is before its slot and the samples that follow start at or behind theirs: a lead could
    // never be taken back, a lag is, by the re-anchors.
    const held = this.pending, base = held[0][0];
    const slots = [0];
    let lo = 0;
    for (let i = 1; i < held.length; i++) {
      slots.push(slots[i - 1] + Math.max(1, Math.round((held[i][0] - held[i - 1][0]) * this.rate)));
      lo = Math.min(lo, held[i][0] - base - slots[i] / this.rate);
    }
    this.start = base + lo;
    this.held = new Map(held.map((p, i) => [p, slots[i]]));
    this.stats.rateHz = this.rate;
    this.stats.startTime = this.start;
    this.ready = true;
    return true;
  }

  // The device's own rate when the samples carry device times (PMD frames): the median over the
  // frames after the first of each frame's spacing (the device layer spaces a frame's samples by
  // the device clock between two frame timestamps, except the first frame of a stream, which can
  // only take the nominal rate). In host seconds it differs by the device clock's drift (tens of
  // ppm), which rateMargin covers. null without device times or with only one frame.
  deviceRate() {
    const spacings = [];
    let frames = 0;
    for (const f of this.frames) {
      if (f.count < 2 || f.deviceSpan === null) return null;
      if (frames++ > 0) spacings.push(f.deviceSpan / (f.count - 1));
    }
    if (!spacings.length) return null;
    spacings.sort((a, b) => a - b);
    const spacing = spacings[spacings.length >> 1];
    // Device times in another unit than seconds (milliseconds: a rate of 0.13 for 130 Hz) or a
    // broken clock: more than 20 % off the declared rate (a real device is within a per cent), the
    // host times' fit is used instead.
    const rate = 1 / spacing;
    return rate > 0.8 * this.spec.rateHz && rate < 1.25 * this.spec.rateHz ? rate : null;
  }

  inGap(t0, t1) {
    return this.gaps.some((g) => g[0] <= t0 && t1 <= g[1]);
  }

  // The stream's first part, in the flush's first chunk (see SessionFeeder.flush).
  begin(builder, frontier) {
    if (frontier > -Infinity) {
      // A joining stream starts at its first slot at or after the frontier (docs/model.md).
      const first = Math.max(0, Math.ceil((frontier - this.start) * this.rate - 1e-9));
      const cut = this.slot(first) - 0.5 / this.rate;
      const before = (p) => (this.held?.has(p) ? this.held.get(p) < first : p[0] < cut);
      while (this.pending.length && before(this.pending[0])) { this.held?.delete(this.pending.shift()); this.stats.beforeFrontier++; }
      this.start = this.slot(first);
      this.stats.startTime = this.start;
      if (this.held) for (const [p, k] of this.held) this.held.set(p, k - first);
    }
    builder.part(this.index).startTime = this.start;  // the descriptor's startTime0
  }

  flush(builder, now, final) {
    const half = 0.5 / this.rate, lateness = this.options.lateness;
    let i = 0;
    for (; i < this.pending.length; i++) {
      const [m, v] = this.pending[i];
      const d = m - this.slot(this.n);
      const held = this.held?.get(this.pending[i]);
      let p;
      if (held !== undefined) {
        this.held.delete(this.pending[i]);
        // A sample held while the rate was measured: its slot from the declaration.
        if (held > this.n) {
          this.stats.missing += held - this.n;
          this.stats.reanchors++;
          this.n = held;
          p = builder.fresh(this.index);
        } else {
          p = builder.open(this.index);
        }
      } else if (d > half) {
        // A hole: the nearest slot, once no late sample can fill it (or the device marked it).
        const k = Math.round(d * this.rate);
        const holeEnd = this.slot(this.n + k) - half;
        if (!(final || m < now - lateness || this.inGap(this.slot(this.n), holeEnd))) break;
        this.n += k;
        this.stats.missing += k;
        this.stats.reanchors++;
        p = builder.fresh(this.index);
      } else {
        p = builder.open(this.index);
      }
      if (p.samples.length === 0) p.startTime = this.slot(this.n);
      p.samples.push(v);
      for (const log of this.logs) log.push(this.n, v);
      const e = m - this.slot(this.n);
      if (e > this.stats.maxLag) this.stats.maxLag = e;
      if (-e > this.stats.maxLead) this.stats.maxLead = -e;
      if (Number.isNaN(v)) this.stats.missing++;
      else this.stats.given++;
      this.n++;
    }
    this.pending.splice(0, i);
    if (this.held?.size === 0) this.held = null;
    this.stats.pending = this.pending.length;
    // Missing up to now at the end, up to a silent stream's bound, or through a marked gap, and
    // never past the first sample held: `until` half a period before the first slot kept open, so
    // that the session counts exactly the slots counted here.
    // Silent is judged against the newest sample of any regular stream, not against now alone:
    // after the page stalled (a long task, a throttled tab), the notifications queued meanwhile
    // are handled one by one, and a stream whose frames come later in that queue is not silent
    // (filled up to now - lateness, its frames would land up to the stall's length ahead of their
    // slots for good). When no regular stream has sent anything for SILENT_AFTER seconds, now.
    let to = final ? now : -Infinity;
    if (!this.pending.length) to = Math.max(to, this.options.silentUntil(now) - lateness);
    // Marked gaps: missing through their end once nothing before them can still come, that is when
    // they start by the next slot (or by `to`; chained) or the hole before them is `lateness` old,
    // as any hole waits (a frame delivered late still fills its own slots, not ones past a gap).
    for (const g of this.gaps) if (g[0] <= Math.max(to, this.slot(this.n)) + half || g[0] <= now - lateness) to = Math.max(to, g[1]);
    if (this.pending.length) to = Math.min(to, this.pending[0][0] - half);
    const k = Math.ceil((to - this.start) * this.rate - 1e-9);  // slots with time < to
    if (k > this.n) {
      builder.part(this.index).until = this.start + (k - 0.5) / this.rate;
      this.stats.missing += k - this.n;
      this.n = k;
    }
    // Gaps wholly before the slots given are done.
    this.gaps = this.gaps.filter((g) => g[1] > this.slot(this.n) - half);
  }

  describe(p) {
    const out = {};
    if (!this.described) {
      Object.assign(out, { sensor: this.spec.sensor, modality: this.spec.modality, placement: this.spec.placement, rateHz: this.rate });
      this.described = true;
    }
    if (p.startTime !== null) out.startTime = p.startTime;
    out.samples = Float32Array.from(p.samples);
    if (p.until !== null) out.until = p.until;
    return out;
  }
}

class EventTrack {
  constructor(id, spec, options) {
    this.id = id;
    this.spec = spec;
    this.options = options;
    this.pending = [];
    this.firstArrival = null;
    this.index = -1;
    this.described = false;
    this.last = -Infinity;       // the latest event time given
    this.watermark = -Infinity;  // the latest watermark given
    this.stats = { kind: 'event', received: 0, given: 0, missing: 0, pending: 0, beforeFrontier: 0, retimed: 0, maxRetime: 0, watermark: null };
  }

  get measuring() { return false; }
  bound() { return Math.max(this.last, this.watermark); }

  // The stream's first part, in the flush's first chunk (see SessionFeeder.flush).
  begin(builder, frontier) {
    if (frontier > -Infinity) {
      // A joining event stream's watermark starts at the frontier: earlier events cannot be given.
      while (this.pending.length && this.pending[0][0] < frontier) { this.pending.shift(); this.stats.beforeFrontier++; }
      this.watermark = Math.max(this.watermark, frontier);
    }
    builder.part(this.index);
  }

  flush(builder, now, final) {
    for (const [t0, v] of this.pending) {
      let t = t0;
      // The session takes an event at or after both the watermark given and the last event given.
      const floor = Math.max(this.watermark, this.last);
      if (t < floor) {
        this.stats.retimed++;
        this.stats.maxRetime = Math.max(this.stats.maxRetime, floor - t);
        t = floor;
      }
      const p = builder.open(this.index);
      p.timestamps.push(t);
      p.samples.push(v);
      this.last = Math.max(this.last, t);
      if (Number.isNaN(v)) this.stats.missing++;
      else this.stats.given++;
    }
    this.pending = [];
    this.stats.pending = 0;
    const w = final ? now : now - this.options.lateness;
    if (w > this.watermark && w > this.last) {
      builder.part(this.index).until = w;
      this.watermark = w;
      this.stats.watermark = w;
    }
  }

  describe(p) {
    const out = {};
    if (!this.described) {
      Object.assign(out, { sensor: this.spec.sensor, modality: this.spec.modality, placement: this.spec.placement });
      this.described = true;
    }
    out.timestamps = Float64Array.from(p.timestamps);
    out.samples = Float32Array.from(p.samples);
    if (p.until !== null) out.until = p.until;
    return out;
  }
}

// The samples a regular track gave in one flush, by slot: runs of consecutive slots.
class SlotLog {
  runs = [];
  push(slot, v) {
    const last = this.runs[this.runs.length - 1];
    if (last && last.slot + last.values.length === slot) last.values.push(v);
    else this.runs.push({ slot, values: [v] });
  }
  take() { const r = this.runs; this.runs = []; return r; }
}

// A beat stream derived from a regular ECG track (spec.from, its id): the beats BeatTracker finds
// in the samples the ECG track gives, as they become final (web/src/qrs.js), for a model with a
// beat modality fed by a source that sends no beat times (a strap); `grid` is that modality's
// (beatModalities). Declared with its ECG track; its watermark is the tracker's (hold seconds
// behind the ECG given). Each beat modality runs its own tracker, so a model reading beats on two
// grids detects them twice: the same beats (the same samples, the same detector), for ~0.2 ms of
// CPU per second of a 130 Hz ECG each (bench/beat_tracker.mjs, BENCHMARKS.md "The beat
// tracker"), so no shared detector is kept for it.
class BeatTrack {
  constructor(id, spec, source, grid) {
    this.id = id;
    this.spec = spec;
    this.source = source;
    this.grid = grid;
    this.log = new SlotLog();
    source.logs.push(this.log);
    this.tracker = null;
    this.fed = 0;             // slots of the source given to the tracker
    this.lastValue = NaN;     // the last of them
    this.pending = [];
    this.firstArrival = null;
    this.index = -1;
    this.described = false;
    this.last = -Infinity;
    this.watermark = -Infinity;
    this.frontier = -Infinity;
    this.stats = { kind: 'derived', from: spec.from, received: 0, given: 0, missing: 0, pending: 0, beforeFrontier: 0, beats: 0, late: 0, watermark: null };
  }

  get measuring() { return false; }
  // Declared in the flush that declares its ECG track (see SessionFeeder.flush).
  get joinable() { return this.source.index >= 0; }
  bound() { return Math.max(this.last, this.watermark); }

  begin(builder, frontier) {
    this.frontier = frontier;
    this.watermark = Math.max(this.watermark, frontier);
    builder.part(this.index);
  }

  flush(builder, now, final) {
    const src = this.source;
    if (!src.ready) return;
    this.tracker ??= new BeatTracker({ rateHz: src.rate, startTime: src.start, grid: this.grid });
    const chunks = [];
    for (const run of this.log.take()) {
      let { slot, values } = run;
      // One slot skipped between two samples is the grid's margin (rateMargin: a slot no sample
      // was measured in), not a loss: the detector would drop the beat next to a missing sample,
      // so the tracker reads it as the mean of its neighbours.
      if (slot === this.fed + 1 && Number.isFinite(this.lastValue) && Number.isFinite(values[0]))
        values = [(this.lastValue + values[0]) / 2, ...values], slot--;
      chunks.push(this.tracker.push(values, src.slot(slot)));
      this.fed = slot + values.length;
      this.lastValue = values[values.length - 1];
    }
    // The slots given as missing (gaps, `until`) after the last sample: the tracker's window moves on.
    if (src.n > this.fed) {
      chunks.push(this.tracker.push([], src.slot(src.n)));
      this.fed = src.n;
      this.lastValue = NaN;
    }
    if (final) chunks.push(this.tracker.end());
    for (const c of chunks) {
      for (let i = 0; i < c.timestamps.length; i++) {
        if (c.timestamps[i] < this.watermark) {  // before the session's frontier when it joined
          if (i % this.grid.patchLen === 0) this.stats.beforeFrontier++;
          continue;
        }
        const p = builder.open(this.index);
        p.timestamps.push(c.timestamps[i]);
        p.samples.push(c.samples[i]);
        this.last = Math.max(this.last, c.timestamps[i]);
        if (i % this.grid.patchLen === 0) this.stats.beats++;
        if (Number.isNaN(c.samples[i])) this.stats.missing++;
        else this.stats.given++;
      }
    }
    this.stats.late = this.tracker.late;
    const w = this.tracker.until;
    if (w > this.watermark && w > this.last) {
      builder.part(this.index).until = w;
      this.watermark = w;
      this.stats.watermark = w;
    }
  }

  describe(p) {
    return EventTrack.prototype.describe.call(this, p);
  }
}

// Seconds without a sample from any regular stream after which a regular stream's silence is
// judged against now (see RegularTrack.flush): longer than a stalled page's backlog, short next
// to a stopped PMD stream's lifetime.
const SILENT_AFTER = 10;

/**
 * Samples and gap marks in (the device layer's sink interface, like WindowAssembler's), session
 * chunks out (flush). See the header for the grid, the watermarks and the bounds.
 */
export class SessionFeeder {
  #tracks = new Map();  // id -> track, in the order streams were added
  #newest = -Infinity;  // the latest time of a sample pushed to a regular stream
  #declared = [];       // session stream index -> track
  #options;
  #firstArrival = null;
  #lastNow = -Infinity;
  #config;
  #beatGrids;  // the config's beat modalities (web/src/qrs.js beatModalities)
  #ignored = new Map();  // id -> { spec, received }: streams the model (config) has no use for

  /**
   * @param {{ streams?: object, lateness?: number, measureSeconds?: number, rateMargin?: number }} options
   *   streams: id -> { sensor, modality, placement, rateHz | null } (added up front; others by add()
   *   or on the first push that names their spec); config: a model's config (model.config): streams
   *   whose modality, placement or sensor it does not know are left out (`leftOut`), not pushed
   */
  constructor(options) {
    if (options !== undefined && options !== null && typeof options !== 'object') throw bad(`SessionFeeder: options must be an object or null, got ${typeof options}`);
    const {
      streams = {}, lateness = FEEDER_DEFAULTS.lateness, streamLateness = FEEDER_DEFAULTS.streamLateness,
      measureSeconds = FEEDER_DEFAULTS.measureSeconds, rateMargin = FEEDER_DEFAULTS.rateMargin, config = null,
    } = options ?? {};
    if (config !== null && !(Array.isArray(config?.modalities) && Array.isArray(config?.placements) && Number.isInteger(config?.n_sensors)))
      throw bad('SessionFeeder: config must be a model config (model.config: modalities, placements, n_sensors) or null');
    this.#config = config;
    this.#beatGrids = beatModalities(config);
    this.#options = {
      lateness: number(lateness, 'lateness', { inclusive: true }),
      measureSeconds: number(measureSeconds, 'measureSeconds', { inclusive: true }),
      rateMargin: number(rateMargin, 'rateMargin', { inclusive: true }),
      streamLateness: {},
    };
    if (rateMargin >= 0.1) throw bad(`SessionFeeder: rateMargin must be below 0.1 (a fraction of the rate, e.g. 5e-4), got ${rateMargin}`);
    if (streamLateness === null || typeof streamLateness !== 'object') throw bad('SessionFeeder: streamLateness must be an object { streamId: seconds }');
    for (const [id, v] of Object.entries(streamLateness)) this.#options.streamLateness[id] = number(v, `streamLateness.${id}`, { inclusive: true });
    for (const [id, spec] of Object.entries(streams ?? {})) this.add(id, spec);
  }

  /**
   * Adds a stream: { sensor, modality, placement, rateHz (regular) | null (event-driven), scale? }.
   * scale (default 1): every value is multiplied by it before the session gets it, for a model
   * trained in other units than the device sends (a Polar H10's ECG is in µV; the AF model of
   * models/af.safetensors takes mV: scale 1e-3).
   */
  add(id, spec) {
    if (this.#tracks.has(id) || this.#ignored.has(id)) throw bad(`SessionFeeder.add: a stream ${JSON.stringify(id)} exists already`);
    // The same checks as the assembler's (sensor, names, rate).
    new StreamBuffer({ ...spec, capacitySeconds: 1, maxSamples: 1 });
    const scale = spec.scale ?? 1;
    if (typeof scale !== 'number' || !Number.isFinite(scale) || scale === 0)
      throw bad(`SessionFeeder.add: stream ${JSON.stringify(id)}: scale must be a finite non-zero number (a unit factor, e.g. 1e-3 for µV -> mV), got ${scale}`);
    const clean = { sensor: spec.sensor, modality: spec.modality, placement: spec.placement, rateHz: spec.rateHz ?? null, scale };
    const c = this.#config;
    if (c && !(c.modalities.some((m) => m.name === clean.modality) && c.placements.includes(clean.placement) && clean.sensor < c.n_sensors)) {
      // The session would refuse the stream (and so every chunk naming it): left out, counted.
      this.#ignored.set(id, { ...clean, received: 0 });
      return this;
    }
    const options = {
      ...this.#options, lateness: this.#options.streamLateness[id] ?? this.#options.lateness,
      silentUntil: (now) => (now - this.#newest > SILENT_AFTER ? now : Math.min(now, this.#newest)),
    };
    if (spec.from !== undefined) {
      const source = this.#tracks.get(spec.from);
      const grid = isBeatModality(clean.modality) && (this.#beatGrids.find((g) => g.modality === clean.modality) ?? (clean.modality === 'beat' && !c ? DEFAULT_BEAT_GRID : null));
      if (!grid || !(source instanceof RegularTrack) || this.#derivedFrom(source, clean.modality))
        throw bad(`SessionFeeder.add: stream ${JSON.stringify(id)}: from names the regular stream a beat stream is derived from (a beat modality of the model, "beat" without one; one per stream and modality, added after it), got from ${JSON.stringify(spec.from)} with modality ${JSON.stringify(clean.modality)}`);
      this.#tracks.set(id, new BeatTrack(id, { ...clean, from: spec.from }, source, grid));
      return this;
    }
    const track = clean.rateHz === null ? new EventTrack(id, clean, options) : new RegularTrack(id, clean, options);
    this.#tracks.set(id, track);
    return this;
  }

  // Whether a beat stream of this modality is derived from the regular track already.
  #derivedFrom(source, modality) {
    return [...this.#tracks.values()].some((t) => t instanceof BeatTrack && t.source === source && t.spec.modality === modality);
  }

  get ids() { return [...this.#tracks.keys(), ...this.#ignored.keys()]; }

  /** Streams left out because the config (the model) has no use for them: id -> { ...spec, received }. */
  get leftOut() { return Object.fromEntries([...this.#ignored].map(([id, x]) => [id, { ...x }])); }

  /** The session's stream index of each declared stream id (the order of chunk.streams). */
  get streamIds() { return this.#declared.map((t) => t.id); }

  /**
   * Samples of one stream (host seconds, values: numbers, NaN or null = missing). `spec` adds the
   * stream when it is unknown (the device layer passes its stream spec); `deviceTimes` (the
   * device clock's seconds of the same samples, PMD frames) measure a regular stream's rate.
   */
  push(id, times, values, spec, deviceTimes = null) {
    if (!this.#tracks.has(id) && !this.#ignored.has(id)) {
      if (!spec) throw bad(`SessionFeeder.push: no stream ${JSON.stringify(id)} (add it first)`);
      this.add(id, spec);
    }
    if (this.#tracks.get(id) instanceof BeatTrack) throw bad(`SessionFeeder.push: stream ${JSON.stringify(id)} is derived from ${JSON.stringify(this.#tracks.get(id).spec.from)}: it takes no samples`);
    const ignored = this.#ignored.get(id);
    if (ignored) {
      ignored.received += times?.length ?? 0;
      return this;
    }
    if (!(Array.isArray(times) || ArrayBuffer.isView(times)) || !(Array.isArray(values) || ArrayBuffer.isView(values)))
      throw bad('SessionFeeder.push: times and values must be arrays or typed arrays');
    if (times.length !== values.length) throw bad(`SessionFeeder.push: ${times.length} times but ${values.length} values`);
    if (deviceTimes !== null && deviceTimes !== undefined) {
      if (!(Array.isArray(deviceTimes) || ArrayBuffer.isView(deviceTimes)) || deviceTimes.length !== times.length)
        throw bad(`SessionFeeder.push: deviceTimes must be null or an array of ${times.length} device-clock seconds, one per sample`);
      for (let i = 0; i < deviceTimes.length; i++) {
        if (typeof deviceTimes[i] !== 'number' || !Number.isFinite(deviceTimes[i]) || (i > 0 && !(deviceTimes[i] >= deviceTimes[i - 1])))
          throw bad(`SessionFeeder.push: deviceTimes must be finite and non-decreasing (seconds), got deviceTimes[${i}] = ${deviceTimes[i]}${i > 0 ? ` after ${deviceTimes[i - 1]}` : ''}`);
      }
    }
    for (let i = 0; i < times.length; i++) {
      if (typeof times[i] !== 'number' || !Number.isFinite(times[i])) throw bad(`SessionFeeder.push: times[${i}] must be a finite number of seconds, got ${times[i]}`);
      const v = values[i];
      if (v !== null && typeof v !== 'number') throw bad(`SessionFeeder.push: values[${i}] must be a number or null, got ${JSON.stringify(v)}`);
      if (v === Infinity || v === -Infinity) throw new SensorformerError('NON_FINITE', `SessionFeeder.push: values[${i}] is ${v}`);
    }
    const track = this.#tracks.get(id);
    const { scale } = track.spec;
    for (let i = 0; i < times.length; i++) {
      if (values[i] !== null && !Number.isFinite(values[i] * scale))
        throw new SensorformerError('NON_FINITE', `SessionFeeder.push: values[${i}] = ${values[i]} times the stream's scale ${scale} is not finite`);
    }
    for (let i = 0; i < times.length; i++) {
      const s = [times[i], values[i] === null ? NaN : values[i] * scale];
      const p = track.pending;
      let at = p.length;
      while (at > 0 && p[at - 1][0] > s[0]) at--;  // arrival order is nearly time order
      p.splice(at, 0, s);
    }
    if (track instanceof RegularTrack) for (let i = 0; i < times.length; i++) if (times[i] > this.#newest) this.#newest = times[i];
    if (track instanceof RegularTrack && !track.ready && times.length)
      track.frames.push({ count: times.length, deviceSpan: deviceTimes ? deviceTimes[times.length - 1] - deviceTimes[0] : null });
    track.stats.received += times.length;
    track.stats.pending = track.pending.length;
    return this;
  }

  /** Marks [t0, t1) as missing (a disconnect) in the given streams (default: all). */
  markGap(t0, t1, ids = null) {
    if (!(Number.isFinite(t0) && Number.isFinite(t1) && t0 < t1)) throw bad(`SessionFeeder.markGap: need finite t0 < t1, got ${t0}, ${t1}`);
    if (ids !== null && ids !== undefined && !Array.isArray(ids)) throw bad(`SessionFeeder.markGap: ids must be an array of stream ids or null (all), got ${typeof ids === 'string' ? JSON.stringify(ids) : typeof ids}`);
    for (const id of ids ?? this.#tracks.keys()) {
      if (this.#ignored.has(id)) continue;
      const track = this.#tracks.get(id);
      if (!track) throw bad(`SessionFeeder.markGap: no stream ${JSON.stringify(id)}`);
      if (track instanceof RegularTrack) {
        const gaps = [...track.gaps, [t0, t1]].sort((a, b) => a[0] - b[0]);
        track.gaps = [];
        for (const g of gaps) {
          const last = track.gaps[track.gaps.length - 1];
          if (last && g[0] <= last[1]) last[1] = Math.max(last[1], g[1]);
          else track.gaps.push([...g]);
        }
      }
    }
    return this;
  }

  /**
   * The chunks to push (in order) for what arrived up to host time `now`: [] while holding.
   * `frontier`: the session's frontier when known (a stream joining later starts at or after it);
   * otherwise the feeder's own upper bound of it. `final`: nothing more will come (the end of a
   * recording): every hole is committed and every stream's watermark set to `now`.
   */
  flush(options) {
    const { now, final = false, frontier } = options ?? {};
    number(now, 'flush: now', { min: -Infinity });
    if (frontier !== undefined && frontier !== null && !(typeof frontier === 'number' && !Number.isNaN(frontier) && frontier < Infinity))
      throw bad(`SessionFeeder.flush: frontier must be a number below Infinity (the session's frontier, -Infinity before its first push) or null, got ${frontier}`);
    if (now < this.#lastNow) throw bad(`SessionFeeder.flush: now (${now}) is earlier than the previous flush (${this.#lastNow})`);
    this.#lastNow = now;
    // A model with a beat modality fed an ECG with no such beat stream derived from it: one is
    // derived (id "<ecg id>:<modality>"), as a user of such a model expects of a strap that sends none.
    for (const { modality } of this.#beatGrids) {
      for (const [id, t] of [...this.#tracks]) {
        if (t instanceof RegularTrack && t.spec.modality === 'ecg' && t.index < 0 && !this.#derivedFrom(t, modality) && !this.#tracks.has(`${id}:${modality}`))
          this.add(`${id}:${modality}`, { sensor: t.spec.sensor, modality, placement: t.spec.placement, rateHz: null, from: id });
      }
    }
    const tracks = [...this.#tracks.values()];
    for (const t of tracks) if (t.firstArrival === null && t.pending.length) t.firstArrival = now;
    for (const t of tracks) if (t.firstArrival !== null) this.#firstArrival = Math.min(this.#firstArrival ?? Infinity, t.firstArrival);
    if (this.#firstArrival === null) return [];
    if (!final && now - this.#firstArrival < this.#options.lateness) return [];
    for (const t of tracks) if (t.index < 0 && t instanceof RegularTrack) t.declare(now, final);
    if (tracks.some((t) => t.measuring)) return [];
    // The session's frontier is at most the least bound of the streams given so far.
    let bound = frontier;
    if (bound === undefined || bound === null) {
      bound = this.#declared.length ? Infinity : -Infinity;
      for (const t of this.#declared) bound = Math.min(bound, t.bound());
    }
    for (const t of tracks) {
      if (t.index >= 0 || !(t instanceof BeatTrack ? t.joinable : t.pending.length)) continue;
      t.index = this.#declared.length;
      this.#declared.push(t);
    }
    const builder = new ChunkBuilder(this.#declared.length);
    // Every stream declared in this flush is described in its first chunk: once the session has
    // that chunk its frontier may pass a stream that only a later chunk would describe.
    for (const t of this.#declared) if (!t.described) t.begin(builder, bound);
    for (const t of this.#declared) t.flush(builder, now, final);
    return builder.finish((index, p) => this.#declared[index].describe(p));
  }

  /** Per stream id: what was received, given, held and how the grid fits (see the header). */
  get stats() {
    const out = {};
    for (const [id, t] of this.#tracks) out[id] = { ...t.stats, index: t.index };
    return out;
  }
}

/**
 * Feeds a session from one or more wearables (connectWearable) as their notifications arrive:
 * every batch of samples and every gap mark is taken by a SessionFeeder, flushed at the end of
 * the notification's task, and pushed into `session` (model.stream() or a Worker's session: a
 * push may return a promise; pushes are made one at a time, in order). Returns
 * { feeder, sink, attach(wearable), flush(), close(), stats, frontier, error }: close() detaches,
 * pushes the rest with every watermark at "now", and resolves when the last push is done. Call it
 * right after connectWearable resolves (the first PMD frame comes ~0.6 s after the start), or
 * pass `sink` to connectWearable({ sinks }) and `clock` here (with `wearables` = []) to miss
 * nothing from the first notification on. Other options: SessionFeeder's (lateness, config, ...).
 * onUpdate(update, chunk) gets every push's result; onError(error) a push that failed, after which
 * feeding stops (a session refusing a chunk would refuse every later one of that stream): the
 * wearables are detached at once, so that no sample is kept that would never be given (`error`
 * says why). An onUpdate that throws does not stop feeding: its error goes to onError, or without
 * one is thrown on its own (reported as an uncaught error, as an event listener's is).
 */
export function feedSession(wearables, session, options) {
  if (options !== undefined && options !== null && typeof options !== 'object') throw bad(`feedSession: options must be an object or null, got ${typeof options}`);
  let { onUpdate, onError, feeder, clock = null, ...rest } = options ?? {};
  for (const [name, fn] of [['onUpdate', onUpdate], ['onError', onError]])
    if (fn !== undefined && fn !== null && typeof fn !== 'function') throw bad(`feedSession: ${name} must be a function, got ${typeof fn}`);
  const list = Array.isArray(wearables) ? [...wearables] : [wearables];
  if (list.some((w) => typeof w?.addSink !== 'function' || typeof w?.now !== 'function'))
    throw bad('feedSession: wearables must be a Wearable (connectWearable) or an array of them');
  if (clock !== null && typeof clock?.now !== 'function') throw bad('feedSession: clock must have now() (seconds), like the device layer\'s clocks');
  if (!list.length && !clock) throw bad('feedSession: give a Wearable, an array of them, or [] with the clock their samples are stamped with');
  if (typeof session?.push !== 'function') throw bad('feedSession: session must have push(chunk) (model.stream())');
  feeder = feeder ?? new SessionFeeder(rest);
  let queue = Promise.resolve(), scheduled = false, failed = null, closed = false, frontier = null;
  const now = () => (clock ? clock.now() : Math.max(...list.map((w) => w.now())));
  const pushAll = (chunks) => {
    for (const chunk of chunks) {
      queue = queue.then(async () => {
        if (failed) return;
        let update;
        try {
          update = await session.push(chunk);
        } catch (error) {
          failed = error;
          for (const d of detach) d();  // nothing more is taken: it could never be given
          if (onError) onError(error);
          return;
        }
        if (update && typeof update.frontier === 'number') frontier = update.frontier;
        try {
          onUpdate?.(update, chunk);
        } catch (error) {
          if (onError) onError(error);
          else queueMicrotask(() => { throw error; });
        }
      });
    }
    return queue;
  };
  const flush = (final = false) => {
    if (failed) return queue;
    // The session's frontier is known only after the pushes in flight: a flush that may declare
    // a joining stream uses the feeder's own bound instead (never earlier than the session's).
    let chunks;
    try {
      chunks = feeder.flush({ now: now(), final });
    } catch (error) {
      failed = error;
      onError?.(error);
      return queue;
    }
    return pushAll(chunks);
  };
  const schedule = () => {
    if (scheduled || closed) return;
    scheduled = true;
    queueMicrotask(() => { scheduled = false; if (!closed) flush(); });
  };
  const sink = {
    // After a failed push (the session refuses this feeding) nothing is taken, also through a
    // sink passed to connectWearable({ sinks }), which no detach reaches.
    push: (id, times, values, spec, deviceTimes) => { if (failed) return; feeder.push(id, times, values, spec, deviceTimes); schedule(); },
    markGap: (t0, t1, ids) => {
      if (failed) return;
      const known = (ids ?? feeder.ids).filter((id) => feeder.ids.includes(id));  // not the streams it never saw
      if (known.length) { feeder.markGap(t0, t1, known); schedule(); }
    },
  };
  const detach = list.map((w) => w.addSink(sink));
  return {
    feeder,
    /** The sink itself: connectWearable({ sinks: [feeding.sink] }) feeds from the first notification on. */
    sink,
    /** Feeds from one more wearable (connected later). */
    attach(wearable) {
      if (typeof wearable?.addSink !== 'function') throw bad('feedSession.attach: not a Wearable');
      list.push(wearable);
      detach.push(wearable.addSink(sink));
    },
    get stats() { return feeder.stats; },
    get frontier() { return frontier; },
    get error() { return failed; },
    flush: () => flush(false),
    async close() {
      if (closed) return queue;
      closed = true;
      for (const d of detach) d();
      await flush(true);
      return queue;
    },
  };
}
