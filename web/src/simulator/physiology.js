// Seeded, deterministic physiology for the simulated wearables: an activity schedule, heart beats
// with heart-rate variability, ECG, accelerometer, skin temperature, SpO2 and pulse rate.
//
// Times are seconds since the start of the simulation (t = 0); the generators are pure functions of
// t for a given seed and options (histories such as beats, motion bursts and the default activity
// schedule are generated lazily forward in time from seeded random streams, so the order of the
// queries does not matter). White noise is a hash of (seed, channel, time on a 10 µs grid).
//
// Models (plausible, not clinical):
// - Activities 'rest' | 'walk' | 'run' in segments (default: a seeded random schedule of 40-120 s
//   rest, 40-120 s walk, 30-90 s run segments starting with rest; or options.activities).
// - Heart rate: the mean HR follows the activity's target (rest ~62, walk ~100, run ~150 bpm) with
//   first-order lags (12 s up, 25 s down). RR = 60 / meanHR + respiratory sinus arrhythmia
//   (A sin(respiration phase), A 40 / 20 / 8 ms) + AR(1) noise (phi 0.75; sd 12 / 8 / 4 ms).
// - ECG (µV): per beat a sum of Gaussians P, Q, R (~1 mV), S, T with QT scaled by sqrt(RR);
//   baseline wander (respiration and slow drift), white noise (8 / 15 / 35 µV), step-locked motion
//   artifacts when walking and (larger) running, and motion bursts at rest.
// - ACC (mG, 3 axes): gravity ~1000 mG mostly on y (the vertical axis of a chest strap) with slow
//   sway; walking 1.8-2.0 Hz steps (vertical ~280 mG, antero-posterior ~140, lateral ~90 at the
//   stride frequency); running 2.6-3.0 Hz with ~650 mG vertical impacts; random short motion
//   bursts (100-400 mG, 0.5-2 s) at rest; noise 4 / 12 / 30 mG.
// - Skin temperature ~33.6 °C ± slow variation, rising up to +0.25 / +0.5 °C with walking /
//   running (lag 240 s), kept in 33.0-34.5. SpO2 ~97.7 % (lower when running), kept in 96-99.
//   Pulse rate = heart rate. Finger-off episodes (default 0.25 per minute, 3-10 s) for the oximeter.

import { SensorformerError } from '../errors.js';

export const ACTIVITIES = Object.freeze(['rest', 'walk', 'run']);

// Bad options (they come from createSimulatedBluetooth's activities / fingerOff) are INVALID_ARGUMENT
// naming the option and its valid range, as the simulator's own options are.
const invalid = (message) => new SensorformerError('INVALID_ARGUMENT', `createSimulatedBluetooth: ${message}`);
const describe = (v) => (typeof v === 'string' ? `'${v}'` : Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v === 'object' ? 'an object' : String(v));
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const finiteOrUndefined = (v) => v === undefined || (typeof v === 'number' && Number.isFinite(v));

export const ACTIVITY_PROFILES = Object.freeze({
  rest: Object.freeze({ hr: 62, rsa: 0.040, hrvSd: 0.012, respHz: 0.25, ecgNoise: 8, accNoise: 4, cadence: [0, 0], temp: 0, spo2Drop: 0 }),
  walk: Object.freeze({ hr: 100, rsa: 0.020, hrvSd: 0.008, respHz: 0.33, ecgNoise: 15, accNoise: 12, cadence: [1.8, 2.0], temp: 0.25, spo2Drop: 0.3 }),
  run: Object.freeze({ hr: 150, rsa: 0.008, hrvSd: 0.004, respHz: 0.45, ecgNoise: 35, accNoise: 30, cadence: [2.6, 3.0], temp: 0.5, spo2Drop: 0.8 }),
});

const TAU = 2 * Math.PI;

// ---------------------------------------------------------------------------------------------
// Hashing and random streams

function mix32(h) {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A 32-bit hash of a seed (number or string) and an optional label. */
export function hashSeed(seed, label = '') {
  const s = `${typeof seed === 'number' ? seed : String(seed)}\u0000${label}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return mix32(h);
}

function hash4(a, b, c, d) {
  let h = mix32(a ^ 0x9e3779b9);
  h = mix32(h ^ b);
  h = mix32(h ^ c);
  return mix32(h ^ d);
}

/** A seeded random stream (sfc32): next() in [0, 1), uniform, normal, int, chance, exponential. */
export function createRng(seed, label = '') {
  let a = hashSeed(seed, `${label}/a`), b = hashSeed(seed, `${label}/b`), c = hashSeed(seed, `${label}/c`), d = 1;
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  let spare = null;
  return {
    next,
    uniform: (lo, hi) => lo + (hi - lo) * next(),
    int: (n) => Math.floor(next() * n),
    chance: (p) => next() < p,
    exponential: (rate) => -Math.log(1 - next()) / rate,
    normal(mean = 0, sd = 1) {
      if (spare !== null) { const z = spare; spare = null; return mean + sd * z; }
      let u = next();
      while (u <= 1e-12) u = next();
      const v = next(), r = Math.sqrt(-2 * Math.log(u));
      spare = r * Math.sin(TAU * v);
      return mean + sd * r * Math.cos(TAU * v);
    },
  };
}

// A standard normal that is a pure function of (key, channel, t) on a 10 µs grid.
export function noiseAt(key, channel, t) {
  const idx = Math.round(t * 1e5);
  const lo = idx >>> 0, hi = Math.floor(idx / 4294967296) | 0;
  const u1 = (hash4(key, channel, lo, hi) + 1) / 4294967297;
  const u2 = hash4(key ^ 0x5bd1e995, channel, lo, hi) / 4294967296;
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(TAU * u2);
}

function uniformAt(key, channel, n) {
  return hash4(key, channel, n >>> 0, Math.floor(n / 4294967296) | 0) / 4294967296;
}

function lowerBound(arr, x) {  // first index with arr[i] >= x
  let lo = 0, hi = arr.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (arr[m] < x) lo = m + 1; else hi = m;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------------

/**
 * @param {object} [options]
 * @param {number|string} [options.seed=1]
 * @param {Array<{activity: string, duration?: number, start?: number}>} [options.activities]
 *   A schedule override: consecutive segments by `duration` (seconds), or segments beginning at
 *   `start`; the last activity continues forever.
 * @param {Array<{at: number, duration: number}>} [options.fingerOff] finger-off episodes override
 * @param {number} [options.fingerOffRatePerMinute=0.25] random finger-off episodes otherwise
 */
export function createPhysiology(options = {}) {
  return new Physiology(options);
}

export class Physiology {
  #seed;
  #keys;
  #segments = [];
  #segRng;
  #scheduleFixed;
  #beats = [];     // beat times
  #rr = [];        // interval before each beat
  #beatState;
  #beatRng;
  #bursts = [];
  #burstRng;
  #burstNext;
  #fingerOff = [];
  #fingerRng;
  #fingerNext;
  #fingerFixed;
  #lagMemo = new Map();
  #af = [];        // atrial fibrillation episodes { start, end }, sorted, disjoint
  #fKey;

  /** @param {{ seed?: number|string, activities?: Array<{activity: string, duration?: number, start?: number}>|null, fingerOff?: Array<{at: number, duration: number}>|null, fingerOffRatePerMinute?: number, af?: Array<{at: number, duration: number}>|null }} [options] */
  constructor({ seed = 1, activities = null, fingerOff = null, fingerOffRatePerMinute = 0.25, af = null } = {}) {
    this.#seed = seed;
    this.seed = seed;
    const k = (label) => hashSeed(seed, label);
    this.#keys = { ecg: k('ecg-noise'), acc: k('acc-noise'), temp: k('temp-noise'), spo2: k('spo2-noise'), beat: k('beat-shape'), step: k('step') };
    const p = createRng(seed, 'person');
    this.person = {
      hrOffset: p.uniform(-3, 3),
      gravity: normalize([p.uniform(-0.12, 0.12), 1, p.uniform(-0.2, 0.2)], 1000),
      tempBase: 33.6 + p.uniform(-0.15, 0.15),
      spo2Base: 97.7 + p.uniform(-0.3, 0.3),
      rAmplitude: 1000 * p.uniform(0.9, 1.15),
      phases: Array.from({ length: 8 }, () => p.uniform(0, TAU)),
    };
    this.#segRng = createRng(seed, 'activities');
    this.#scheduleFixed = activities ? this.#fixedSchedule(activities) : false;
    this.#beatRng = createRng(seed, 'beats');
    this.#burstRng = createRng(seed, 'bursts');
    this.#burstNext = this.#burstRng.exponential(1 / 40);
    this.#fingerRng = createRng(seed, 'finger');
    if (!(fingerOffRatePerMinute >= 0 && Number.isFinite(fingerOffRatePerMinute))) {
      throw invalid(`fingerOffRatePerMinute must be a finite number >= 0, got ${describe(fingerOffRatePerMinute)}`);
    }
    if (fingerOff !== null && !Array.isArray(fingerOff)) throw invalid(`fingerOff must be an array of { at, duration } (seconds), got ${describe(fingerOff)}`);
    this.#fingerFixed = Array.isArray(fingerOff);
    if (this.#fingerFixed) {
      fingerOff.forEach((e, i) => {
        if (!(isPlainObject(e) && e.at >= 0 && Number.isFinite(e.at) && e.duration > 0 && Number.isFinite(e.duration))) {
          throw invalid(`fingerOff[${i}] must be { at, duration } with at >= 0 and duration > 0 (finite seconds), got ${isPlainObject(e) ? `at ${describe(e.at)}, duration ${describe(e.duration)}` : describe(e)}`);
        }
      });
      this.#fingerOff = fingerOff.map(({ at, duration }) => ({ start: at, end: at + duration })).sort((a, b) => a.start - b.start);
    }
    this.fingerOffRatePerMinute = fingerOffRatePerMinute;
    this.#fKey = hashSeed(seed, 'af-f-waves');
    if (af !== null && !Array.isArray(af)) throw invalid(`af must be an array of { at, duration } (seconds), got ${describe(af)}`);
    (af ?? []).forEach((e, i) => this.#addAf(e, `af[${i}]`));
    this.#fingerNext = fingerOffRatePerMinute > 0 ? this.#fingerRng.exponential(fingerOffRatePerMinute / 60) : Infinity;
    const first = ACTIVITY_PROFILES[this.activityAt(0)];
    this.#beatState = { t: -10, hrMean: first.hr + this.person.hrOffset, e: 0, resp: this.person.phases[0] };
    this.#beats.push(-10);
    this.#rr.push(60 / this.#beatState.hrMean);
  }

  // -------------------------------------------------------------------------------------------
  // Activity schedule

  #makeSegment(activity, start, end, rng) {
    // includes(), not a lookup: ACTIVITY_PROFILES.constructor exists too.
    if (!ACTIVITIES.includes(activity)) throw invalid(`activities[${this.#segments.length}].activity must be one of ${ACTIVITIES.join(', ')}, got ${describe(activity)}`);
    const [c0, c1] = ACTIVITY_PROFILES[activity].cadence;
    return { activity, start, end, cadence: c0 ? rng.uniform(c0, c1) : 0, phase: rng.uniform(0, TAU), gain: rng.uniform(0.85, 1.15), index: this.#segments.length };
  }

  #fixedSchedule(list) {
    if (!Array.isArray(list) || list.length === 0) {
      throw invalid(`activities must be a non-empty array of { activity, duration } or { activity, start }, got ${Array.isArray(list) ? 'an empty array' : describe(list)}`);
    }
    list.forEach((item, i) => {
      if (!isPlainObject(item)) throw invalid(`activities[${i}] must be { activity, duration } or { activity, start }, got ${describe(item)}`);
      for (const k of ['start', 'duration']) {
        if (!finiteOrUndefined(item[k])) throw invalid(`activities[${i}].${k} must be a finite number of seconds, got ${describe(item[k])}`);
      }
    });
    const rng = createRng(this.#seed, 'activity-shape');
    let t = 0;
    list.forEach((item, i) => {
      const start = item.start ?? t;
      const next = list[i + 1];
      let end;
      if (i === list.length - 1) end = Infinity;
      else if (next.start !== undefined) end = next.start;
      else end = start + item.duration;
      if (!(end > start)) {
        throw invalid(`activities[${i}]: the segment must have a positive duration (duration > 0, or the next entry's start after this one's), got ${start} to ${end} s`);
      }
      this.#segments.push(this.#makeSegment(item.activity, i === 0 ? Math.min(0, start) : start, end, rng));
      t = end;
    });
    return true;
  }

  #extendSchedule(t) {
    if (this.#scheduleFixed) return;
    const rng = this.#segRng;
    const dur = { rest: [40, 120], walk: [40, 120], run: [30, 90] };
    const nextOf = { rest: [['walk', 0.7], ['run', 0.3]], walk: [['rest', 0.4], ['run', 0.6]], run: [['walk', 0.6], ['rest', 0.4]] };
    while (!this.#segments.length || this.#segments[this.#segments.length - 1].end <= t) {
      const last = this.#segments[this.#segments.length - 1];
      let activity = 'rest';
      if (last) {
        const u = rng.next();
        activity = u < nextOf[last.activity][0][1] ? nextOf[last.activity][0][0] : nextOf[last.activity][1][0];
      }
      const start = last ? last.end : -10;
      const [lo, hi] = dur[activity];
      this.#segments.push(this.#makeSegment(activity, start, start + rng.uniform(lo, hi) + (last ? 0 : 10), rng));
    }
  }

  /** The segment { activity, start, end, cadence (Hz), ... } containing t. */
  segmentAt(t) {
    this.#extendSchedule(t);
    const segs = this.#segments;
    let lo = 0, hi = segs.length - 1;
    while (lo < hi) {
      const m = (lo + hi + 1) >> 1;
      if (segs[m].start <= t) lo = m; else hi = m - 1;
    }
    return segs[lo];
  }

  /** 'rest' | 'walk' | 'run' at time t. */
  activityAt(t) { return this.segmentAt(t).activity; }

  /** Segments overlapping [t0, t1): [{ activity, start, end }]. */
  segments(t0, t1) {
    this.#extendSchedule(t1);
    return this.#segments.filter((s) => s.end > t0 && s.start < t1)
      .map(({ activity, start, end, cadence }) => ({ activity, start, end, cadence }));
  }

  // -------------------------------------------------------------------------------------------
  // Beats

  #extendBeats(t) {
    const s = this.#beatState, rng = this.#beatRng;
    while (s.t <= t) {
      const seg = this.segmentAt(Math.max(s.t, 0));
      const prof = ACTIVITY_PROFILES[seg.activity];
      const target = prof.hr + this.person.hrOffset + 3 * Math.sin(TAU * s.t / 600 + this.person.phases[1]);
      s.e = 0.75 * s.e + rng.normal(0, prof.hrvSd);
      let rr = Math.min(1.6, Math.max(0.3, 60 / s.hrMean + prof.rsa * Math.sin(s.resp) + s.e));
      // Atrial fibrillation: the ventricles follow an irregular stream of atrial impulses through
      // the AV node, so RR intervals are "irregularly irregular": nearly independent from beat to
      // beat, coefficient of variation ~0.2-0.3, at a faster mean rate than sinus rhythm (untreated
      // AF at rest: ~90-120 bpm). Drawn log-normal (sigma 0.25) around 60 / (HR + 25 bpm), at
      // least 0.3 s (the AV node's refractory period). (M. Rawles, E. Rowland, Br. Heart J. 56,
      // 1986; Hindricks et al., ESC AF guidelines, Eur. Heart J. 42, 2021.)
      if (this.#afIndex(s.t) >= 0) rr = Math.min(2.0, Math.max(0.3, (60 / (s.hrMean + 25)) * Math.exp(rng.normal(0, 0.25))));
      s.t += rr;
      s.resp += TAU * prof.respHz * rr;
      const tau = target > s.hrMean ? 12 : 25;
      s.hrMean += (target - s.hrMean) * (1 - Math.exp(-rr / tau));
      this.#beats.push(s.t);
      this.#rr.push(rr);
    }
  }

  /** True beat (R-peak) times in [t0, t1). */
  beats(t0, t1) {
    this.#extendBeats(t1);
    return Float64Array.from(this.#beats.slice(lowerBound(this.#beats, t0), lowerBound(this.#beats, t1)));
  }

  /** Heart rate (bpm) from the last 4 RR intervals before t. */
  heartRateAt(t) {
    this.#extendBeats(t);
    const i = lowerBound(this.#beats, t) - 1;
    let sum = 0, n = 0;
    for (let j = Math.max(1, i - 3); j <= i; j++, n++) sum += this.#rr[j];
    return n ? 60 / (sum / n) : 60 / this.#rr[0];
  }

  /** Pulse rate seen by the oximeter (bpm). */
  pulseRateAt(t) { return this.heartRateAt(t); }

  // -------------------------------------------------------------------------------------------
  // Motion

  #extendBursts(t) {
    const rng = this.#burstRng;
    while (this.#burstNext <= t + 2) {
      const start = this.#burstNext;
      const duration = rng.uniform(0.5, 2);
      const axes = Array.from({ length: 3 }, () => ({ amp: rng.uniform(60, 250) * (rng.chance(0.5) ? 1 : -1), hz: rng.uniform(1.5, 5), phase: rng.uniform(0, TAU) }));
      if (this.activityAt(start) === 'rest') this.#bursts.push({ start, end: start + duration, axes });
      this.#burstNext = start + duration + rng.exponential(1 / 40);
    }
  }

  // [dx, dy, dz] of motion bursts active at t.
  #burst(t) {
    this.#extendBursts(t);
    const out = [0, 0, 0];
    for (let i = this.#bursts.length - 1; i >= 0; i--) {
      const b = this.#bursts[i];
      if (b.end < t - 3) break;
      if (t < b.start || t >= b.end) continue;
      const w = Math.sin(Math.PI * (t - b.start) / (b.end - b.start)) ** 2;  // Hann
      for (let a = 0; a < 3; a++) out[a] += w * b.axes[a].amp * Math.sin(TAU * b.axes[a].hz * (t - b.start) + b.axes[a].phase);
    }
    return out;
  }

  /** Whether a motion burst (at rest) is under way at t. */
  motionBurstAt(t) {
    this.#extendBursts(t);
    return this.#bursts.some((b) => t >= b.start && t < b.end);
  }

  // Step phase and the envelope of the gait oscillation.
  #gait(t) {
    const seg = this.segmentAt(t);
    if (!seg.cadence) return { seg, theta: 0, env: 0 };
    return { seg, theta: seg.phase + TAU * seg.cadence * (t - seg.start), env: Math.min(1, (t - seg.start) / 2) * seg.gain };
  }

  /** Accelerometer [x, y, z] in mG at time t. */
  accAt(t) {
    const { seg, theta, env } = this.#gait(t);
    const prof = ACTIVITY_PROFILES[seg.activity];
    const g = this.person.gravity, ph = this.person.phases;
    const sway = [15 * Math.sin(TAU * t / 37 + ph[2]), 5 * Math.sin(TAU * t / 53 + ph[3]), 15 * Math.sin(TAU * t / 29 + ph[4])];
    let lat = 0, vert = 0, ap = 0;
    if (seg.activity === 'walk') {
      vert = 280 * (Math.cos(theta) + 0.3 * Math.cos(2 * theta));
      ap = 140 * Math.sin(theta + 0.6);
      lat = 90 * Math.sin(theta / 2 + 0.3);
    } else if (seg.activity === 'run') {
      vert = 650 * (Math.cos(theta) + 0.45 * Math.cos(2 * theta) + 0.2 * Math.cos(3 * theta));
      ap = 320 * Math.sin(theta + 0.5);
      lat = 180 * Math.sin(theta / 2 + 0.2);
    }
    const b = this.#burst(t), k = this.#keys.acc, n = prof.accNoise;
    return [
      g[0] + sway[0] + env * lat + b[0] + n * noiseAt(k, 0, t),
      g[1] + sway[1] + env * vert + b[1] + n * noiseAt(k, 1, t),
      g[2] + sway[2] + env * ap + b[2] + n * noiseAt(k, 2, t),
    ];
  }

  // -------------------------------------------------------------------------------------------
  // ECG

  /** ECG in µV at time t. */
  ecgAt(t) {
    this.#extendBeats(t + 1);
    const beats = this.#beats, rrs = this.#rr, key = this.#keys.beat, ph = this.person.phases;
    let v = 0;
    for (let i = lowerBound(beats, t - 0.75); i < beats.length && beats[i] < t + 0.35; i++) {
      const b = beats[i], s = Math.sqrt(rrs[i]), d = t - b;
      const amp = this.person.rAmplitude * (1 + 0.05 * Math.sin(TAU * 0.25 * b + ph[5])) * (0.97 + 0.06 * uniformAt(key, 0, i));
      // No P wave in AF: the atria do not contract as one (f waves instead, below).
      v += (this.#afIndex(b) >= 0 ? 0 : 0.12) * amp * gauss(d, -0.16 * (0.8 + 0.2 * s), 0.025)
        - 0.10 * amp * gauss(d, -0.028, 0.009)
        + amp * gauss(d, 0, 0.011)
        - 0.25 * amp * gauss(d, 0.03, 0.012)
        + 0.30 * amp * gauss(d, 0.30 * s, 0.06 * s);
    }
    const { seg, theta, env } = this.#gait(t);
    const prof = ACTIVITY_PROFILES[seg.activity];
    v += 70 * Math.sin(TAU * 0.22 * t + ph[6]) + 40 * Math.sin(TAU * 0.05 * t + ph[7]);
    if (seg.cadence) {
      const strength = seg.activity === 'run' ? 1 : 0.3;
      v += strength * env * 120 * Math.sin(theta);
      // an electrode artifact at each foot strike (theta = 2 pi n)
      const n = Math.round(theta / TAU);
      const tn = seg.start + (TAU * n - seg.phase) / (TAU * seg.cadence);
      const a = (uniformAt(this.#keys.step, seg.index, n) * 2 - 1) * 300;
      v += strength * env * a * gauss(t - tn, 0, 0.03);
    }
    const b = this.#burst(t);
    v += 0.4 * (b[0] + b[2]);
    return v + this.#fWaves(t) + prof.ecgNoise * noiseAt(this.#keys.ecg, 0, t);
  }

  // -------------------------------------------------------------------------------------------
  // Atrial fibrillation

  #addAf(e, name) {
    if (!(isPlainObject(e) && e.at >= 0 && Number.isFinite(e.at) && e.duration > 0 && Number.isFinite(e.duration))) {
      throw invalid(`${name} must be { at, duration } with at >= 0 and duration > 0 (finite seconds), got ${isPlainObject(e) ? `at ${describe(e.at)}, duration ${describe(e.duration)}` : describe(e)}`);
    }
    // Beats already drawn keep their rhythm: an episode may start only after them.
    const drawn = this.#beats[this.#beats.length - 1];
    if (e.at < drawn) throw invalid(`${name}: an episode must start after the beats already drawn (at >= ${drawn.toFixed(3)} s), got at ${e.at}`);
    const ep = { start: e.at, end: e.at + e.duration };
    if (this.#af.some((o) => o.start < ep.end && ep.start < o.end)) throw invalid(`${name} overlaps another AF episode`);
    this.#af.push(ep);
    this.#af.sort((a, b) => a.start - b.start);
  }

  // Index of the AF episode containing t, or -1.
  #afIndex(t) {
    for (let i = 0; i < this.#af.length; i++) if (t >= this.#af[i].start && t < this.#af[i].end) return i;
    return -1;
  }

  /**
   * Starts an AF episode of `duration` seconds at `at`, or at the last beat already drawn if that
   * is later (beats are drawn about a second ahead of the latest time asked for, and keep their
   * rhythm): a control for the demo. Returns the episode { start, end }.
   */
  startAf({ at, duration }) {
    const start = Number.isFinite(at) ? Math.max(at, this.#beats[this.#beats.length - 1]) : at;
    this.#addAf({ at: start, duration }, 'startAf');
    return { start, end: start + duration };
  }

  /** 'af' or 'sinus' at t. */
  rhythmAt(t) {
    return this.#afIndex(t) >= 0 ? 'af' : 'sinus';
  }

  /** AF episodes overlapping [t0, t1): [{ start, end }]. */
  afEpisodes(t0 = -Infinity, t1 = Infinity) {
    return this.#af.filter((e) => e.end > t0 && e.start < t1).map((e) => ({ ...e }));
  }

  // Fibrillatory (f) waves: a continuous, irregular atrial baseline oscillation at 4-9 Hz
  // (240-540 per minute) of ~0.05-0.2 mV in place of P waves. Three components around 5.5, 6.5 and
  // 7.5 Hz whose frequencies and amplitudes wander slowly, faded in and out over 0.5 s.
  // (Bollmann et al., "Analysis of surface electrocardiograms in atrial fibrillation", Europace 8,
  // 2006: dominant atrial frequency 4-9 Hz.)
  #fWaves(t) {
    const i = this.#afIndex(t);
    if (i < 0) return 0;
    const { start, end } = this.#af[i];
    const fade = Math.min(1, (t - start) / 0.5, (end - t) / 0.5);
    let v = 0;
    for (let k = 0; k < 3; k++) {
      const phase0 = TAU * uniformAt(this.#fKey, k, i), w = TAU * 0.13 * (k + 1);
      // frequency (5.5 + k) + 0.4 sin(w t + phase0) Hz; its phase is the integral over t
      const phase = phase0 + TAU * ((5.5 + k) * t - (0.4 / w) * Math.cos(w * t + phase0));
      const amp = 40 * (1 + 0.5 * Math.sin(TAU * 0.3 * t + 2 * phase0));
      v += amp * Math.sin(phase);
    }
    return fade * v;
  }

  // -------------------------------------------------------------------------------------------
  // Temperature, SpO2, finger off

  // A first-order lag (time constant tau) of a per-activity target, exact over the segments.
  #lagged(name, t, tau) {
    this.#extendSchedule(t);
    let memo = this.#lagMemo.get(name);
    if (!memo) this.#lagMemo.set(name, memo = [0]);  // value at the start of each segment
    const segs = this.#segments;
    const target = (s) => ACTIVITY_PROFILES[s.activity][name];
    while (memo.length < segs.length) {
      const i = memo.length - 1, s = segs[i];
      memo.push(target(s) + (memo[i] - target(s)) * Math.exp(-(s.end - s.start) / tau));
    }
    const seg = this.segmentAt(t);
    const y0 = memo[seg.index];
    return target(seg) + (y0 - target(seg)) * Math.exp(-Math.max(0, t - seg.start) / tau);
  }

  /** Skin temperature (°C) at t. */
  temperatureAt(t) {
    const v = this.person.tempBase + 0.2 * Math.sin(TAU * t / 1800 + this.person.phases[3]) +
      this.#lagged('temp', t, 240) + 0.015 * noiseAt(this.#keys.temp, 0, t);
    return Math.min(34.5, Math.max(33.0, v));
  }

  /** SpO2 (%) at t. */
  spo2At(t) {
    const v = this.person.spo2Base + 0.4 * Math.sin(TAU * t / 420 + this.person.phases[4]) -
      this.#lagged('spo2Drop', t, 40) + 0.15 * noiseAt(this.#keys.spo2, 0, t);
    return Math.min(99, Math.max(96, v));
  }

  /** Whether the oximeter's finger is off at t. */
  fingerOffAt(t) {
    if (!this.#fingerFixed) {
      while (this.#fingerNext <= t) {
        const start = this.#fingerNext, duration = this.#fingerRng.uniform(3, 10);
        this.#fingerOff.push({ start, end: start + duration });
        this.#fingerNext = start + duration + this.#fingerRng.exponential(this.fingerOffRatePerMinute / 60);
      }
    }
    const list = this.#fingerOff;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i].start <= t) return t < list[i].end;
    }
    return false;
  }

  /** Finger-off episodes that began before t: [{ start, end }]. */
  fingerOffEpisodes(t) {
    this.fingerOffAt(t);
    return this.#fingerOff.filter((e) => e.start < t).map((e) => ({ ...e }));
  }
}

function gauss(x, mu, sigma) {
  const z = (x - mu) / sigma;
  return Math.exp(-0.5 * z * z);
}

function normalize(v, length) {
  const n = Math.hypot(...v);
  return v.map((x) => (x / n) * length);
}
