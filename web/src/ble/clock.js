// Device time to host time (docs/bluetooth.md "clock.js").
//
// ClockAligner: host = a + b * device, fitted online on the LOWER ENVELOPE of
// (device time of a frame's last sample, host receive time) pairs. The delivery delay is never
// negative and arrives batched to connection events (7.5 ms - 4 s apart; a notification may also
// wait several events), so the frames that came through fastest lie on the line and everything
// else lies above it: a least-squares fit through all pairs would be biased by the mean delay.
//
// BeatTimeline: RR intervals from 0x2A37 notifications carry no device time; beats are chained
// beat to beat and kept consistent with the host receive times.
//
// All times are float64 seconds. Internally the aligner subtracts a reference pair (the first
// observation) so the fit works on small numbers: epoch-scale seconds (~1.7e9) would lose
// precision when combined in the slope arithmetic.
import { SensorformerError } from '../errors.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', message);

function finite(x, what) {
  if (typeof x !== 'number' || !Number.isFinite(x)) throw bad(`${what} must be a finite number (seconds), got ${x}`);
  return x;
}

// Lower convex hull (Andrew's monotone chain) of points sorted by u. Collinear points are dropped
// (cross <= 0), so exactly collinear input (zero delay) gives one edge through the line.
function lowerHull(us, vs, n) {
  const hull = [];
  for (let i = 0; i < n; i++) {
    while (hull.length >= 2) {
      const a = hull[hull.length - 2], b = hull[hull.length - 1];
      const cross = (us[b] - us[a]) * (vs[i] - vs[a]) - (vs[b] - vs[a]) * (us[i] - us[a]);
      if (cross <= 0) hull.pop();
      else break;
    }
    hull.push(i);
  }
  return hull;
}

/**
 * Online device-to-host clock alignment on the lower envelope of the delivery delay.
 *
 * Model: host = a + b * device. With a reference pair (d0, h0) (the first observation after a
 * reset), u = device - d0 and v = (host - h0) - u = the change of host - device; a line
 * v = c + s * u is fitted, so b = 1 + s and drift (ppm) = s * 1e6. Every pair lies on or above the
 * true line by its delivery delay.
 *
 * History: per-bin minima of v (and the bin's sums of u and v, for q below) over bins of
 * `binSeconds` of device time, the last `historySeconds` kept (600 bins by default: O(600) work
 * per observation). 20 minutes rather than 10: the sawtooth below can have periods of minutes
 * (~320 s for a device 100 ppm fast at a 30 ms interval), and a history holding only ~2 of them
 * is cut mid-ramp as it slides, which tilts the fit by the ramp's slope (measured: 9 ms errors
 * recurring with 10 minutes, < 1.3 ms with 20).
 *
 * Fit:
 * - Until the bins span `minDriftSpanSeconds`: offset only, c = the highest line of the prior
 *   slope (0, or the slope before a clock jump) below every point, i.e. the fastest delivery. At
 *   20 ppm the unfitted drift adds 0.4 ms over 20 s.
 * - Then the line that supports the lower convex hull of the bin minima at their mean device time:
 *   of all lines below every point it minimises the summed vertical distance to them (the
 *   linear-programming estimator of clock skew; a hull edge, found in O(n)). It touches the
 *   fastest deliveries, so its bias is the smallest delay seen, not the mean one.
 * - Its slope is shrunk toward the prior slope: s = s_prior + w (s_hull - s_prior), with
 *   w = p^2 / (p^2 + e^2), p = `driftPriorPpm` (watch crystals are specified to tens of ppm) and
 *   e = q / span the slope uncertainty of an envelope that wanders by q over the span. Why: the
 *   envelope is not only the line plus noise. The frame period and the connection interval are
 *   nearly commensurate in practice (73 ECG samples at 130.34 Hz = 560.08 ms, 56.008 intervals
 *   of 30 ms per 3 frames), so the smallest delay among recent frames is a sawtooth (here 10 ms
 *   high, ~85 s long) that is indistinguishable from drift until two of its minima have been seen;
 *   a line fitted through one ramp of it extrapolates a slope error of ~100 ppm.
 *   q is the larger of (a) the mean height of the bin minima above the hull line and (b) the mean
 *   height of all pairs above the minimum of their bin (both along the slope), capped at
 *   `wanderSeconds`. (a) alone is ~0 while the whole history is one ramp of the sawtooth, exactly
 *   when the slope is least known; (b) is about half the connection interval for batched
 *   deliveries whatever the ramp (measured on simulated H10 traffic, bench/clock_alignment.mjs:
 *   at a 15 ms interval the largest error after 60 s over 20 seeds fell from 5.4 to 4.3 ms; the
 *   worst case had fitted +113 ppm for a -20 ppm clock). Exact data (q = 0) is not shrunk; over
 *   long spans w -> 1 (p = 50 ppm, q = 5 ms: w = 0.26 at 60 s, 0.9 at 300 s).
 * - The offset is then the highest line with that slope below every point. Slopes beyond
 *   `maxDriftPpm` are clamped.
 *
 * Clock jumps (device reset, re-set device clock): the residual of a new pair against the fit is
 * physically >= 0 (a delay) and small. A residual beyond +-`maxDelaySeconds` (e.g. a reset to 0),
 * or below -`negativeToleranceSeconds` once `ready` (the device clock jumped forward; before that
 * it is just a new fastest delivery), resets the history at once. A residual above `lateSeconds`
 * for every pair over `persistSeconds` of device time (a smaller backward step, which one slow
 * notification must not be mistaken for) resets it too, re-seeded with those pairs. The defaults
 * assume at least one frame per `persistSeconds` reaches the host within `lateSeconds` of its
 * last sample. After a jump the fitted slope, with its uncertainty, becomes the prior (the
 * crystal did not change), so mostly the offset has to be found again. Pairs during the
 * `persistSeconds` before a small backward step is confirmed are still mapped with the old fit.
 *
 * Feeding the pairs of every stream of a device (ECG, ACC, ...) into one aligner gives more
 * frames at more phases against the connection events, i.e. a lower envelope nearer the truth.
 */
export class ClockAligner {
  #binSeconds; #historyBins; #minDriftSpan; #readySeconds; #maxSlope; #maxDelay; #late; #persist; #negTol;
  #priorSigma; #wander;
  #priorSlope = 0; #priorSigmaNow;  // the current prior of the slope (mean, standard deviation)
  #fitSigma = Infinity;             // standard deviation of the current slope estimate
  #d0 = null; #h0 = null;
  // Bins sorted by index: parallel arrays, at most historyBins + 1 entries.
  #binIndex = []; #binU = []; #binV = []; #binSum = []; #binSumU = []; #binN = [];
  #uMin = Infinity; #uMax = -Infinity; #count = 0;
  #c = 0; #s = 0;
  #pending = [];  // consecutive late pairs [device, host]
  #jumps = 0;

  constructor({
    binSeconds = 2,
    historySeconds = 1200,
    minDriftSpanSeconds = 20,
    readySeconds = 10,
    maxDriftPpm = 1000,
    driftPriorPpm = 50,
    wanderSeconds = 0.005,
    maxDelaySeconds = 30,
    lateSeconds = 1,
    persistSeconds = 10,
    negativeToleranceSeconds = 0.05,
  } = {}) {
    const positive = { binSeconds, historySeconds, maxDriftPpm, driftPriorPpm, wanderSeconds, maxDelaySeconds, lateSeconds, persistSeconds, negativeToleranceSeconds };
    for (const [k, v] of Object.entries(positive))
      if (!(typeof v === 'number' && v > 0)) throw bad(`ClockAligner: ${k} must be a positive number, got ${v}`);
    for (const [k, v] of Object.entries({ minDriftSpanSeconds, readySeconds }))
      if (!(typeof v === 'number' && v >= 0 && Number.isFinite(v))) throw bad(`ClockAligner: ${k} must be a number >= 0, got ${v}`);
    this.#binSeconds = binSeconds;
    this.#historyBins = Math.max(2, Math.ceil(historySeconds / binSeconds));
    this.#minDriftSpan = minDriftSpanSeconds;
    this.#readySeconds = readySeconds;
    this.#maxSlope = maxDriftPpm * 1e-6;
    this.#priorSigma = this.#priorSigmaNow = driftPriorPpm * 1e-6;  // Infinity: no shrinkage (the plain hull fit)
    this.#wander = wanderSeconds;
    this.#maxDelay = maxDelaySeconds;
    this.#late = lateSeconds;
    this.#persist = persistSeconds;
    this.#negTol = negativeToleranceSeconds;
  }

  /** Forgets everything (history, fit, reference, prior slope). `jumps` is kept. */
  reset() {
    this.#clear();
    this.#priorSlope = 0;
    this.#priorSigmaNow = this.#priorSigma;
  }

  /** True once the observations span `readySeconds` of device time (at least 3 of them). */
  get ready() {
    return this.#count >= 3 && this.#uMax - this.#uMin >= this.#readySeconds;
  }

  /** host - device (s) at the latest observed device time; NaN before any observation. */
  get offset() {
    if (this.#d0 === null) return NaN;
    return (this.#h0 - this.#d0) + this.#c + this.#s * this.#uMax;
  }

  /**
   * (b - 1) * 1e6 for host = a + b * device: positive when the host clock runs faster than the
   * device's (a device crystal 20 ppm fast gives about -20).
   */
  get drift() {
    return this.#s * 1e6;
  }

  /** Number of clock jumps detected (history resets) since construction. */
  get jumps() {
    return this.#jumps;
  }

  /**
   * Adds a pair: the device time of a frame's last sample and the host time the frame arrived.
   * Returns { residual, jumped }: residual = host time minus the fit before this pair (the
   * delivery delay as far as the fit knows; NaN for a first pair), jumped = a clock jump reset
   * the history (the pair then starts the new history).
   */
  observe(deviceTime, hostTime) {
    finite(deviceTime, 'ClockAligner.observe: deviceTime');
    finite(hostTime, 'ClockAligner.observe: hostTime');
    if (this.#d0 === null) {
      this.#add(deviceTime, hostTime);
      return { residual: NaN, jumped: false };
    }
    const u = deviceTime - this.#d0;
    const residual = (hostTime - this.#h0) - u - (this.#c + this.#s * u);
    // A pair below the line is a new fastest delivery while the history is young (the offset is
    // then only the smallest delay so far); once ready, the line is known far better than
    // negativeToleranceSeconds and such a pair means the device clock jumped forward.
    if (residual > this.#maxDelay || residual < -this.#maxDelay || (residual < -this.#negTol && this.ready)) {
      this.#jump([[deviceTime, hostTime]]);
      return { residual, jumped: true };
    }
    if (residual > this.#late) {
      this.#pending.push([deviceTime, hostTime]);
      if (this.#pending.length >= 3 && deviceTime - this.#pending[0][0] >= this.#persist) {
        this.#jump(this.#pending);
        return { residual, jumped: true };
      }
    } else {
      this.#pending = [];
    }
    this.#add(deviceTime, hostTime);
    return { residual, jumped: false };
  }

  /** Host time (s) of a device time, or a Float64Array for an array of them. */
  toHost(deviceTime) {
    if (this.#d0 === null) throw bad('ClockAligner.toHost: no observation yet (call observe() first)');
    const c = this.#c, s = this.#s, d0 = this.#d0, h0 = this.#h0;
    if (typeof deviceTime === 'number') {
      const u = deviceTime - d0;
      return h0 + (u + (c + s * u));
    }
    if (!(Array.isArray(deviceTime) || ArrayBuffer.isView(deviceTime))) throw bad('ClockAligner.toHost: deviceTime must be a number or an array of numbers');
    const out = new Float64Array(deviceTime.length);
    for (let i = 0; i < out.length; i++) {
      const u = deviceTime[i] - d0;
      out[i] = h0 + (u + (c + s * u));
    }
    return out;
  }

  /** Device time (s) of a host time (the inverse of toHost). */
  toDevice(hostTime) {
    if (this.#d0 === null) throw bad('ClockAligner.toDevice: no observation yet (call observe() first)');
    finite(hostTime, 'ClockAligner.toDevice: hostTime');
    return this.#d0 + ((hostTime - this.#h0) - this.#c) / (1 + this.#s);
  }

  #clear() {
    this.#d0 = this.#h0 = null;
    this.#binIndex = []; this.#binU = []; this.#binV = []; this.#binSum = []; this.#binSumU = []; this.#binN = [];
    this.#uMin = Infinity; this.#uMax = -Infinity; this.#count = 0;
    this.#c = 0; this.#s = 0; this.#fitSigma = Infinity;
    this.#pending = [];
  }

  #jump(pairs) {
    this.#jumps++;
    // The crystal did not change: the slope fitted so far (with its uncertainty) becomes the
    // prior of the new history, so mostly the offset has to be found again.
    // (Floor 1 ppm: a crystal's rate still wanders with temperature.)
    if (this.#fitSigma < this.#priorSigmaNow) { this.#priorSlope = this.#s; this.#priorSigmaNow = Math.max(this.#fitSigma, 1e-6); }
    this.#clear();
    for (const [d, h] of pairs) this.#add(d, h);
  }

  #add(deviceTime, hostTime) {
    if (this.#d0 === null) { this.#d0 = deviceTime; this.#h0 = hostTime; }
    const u = deviceTime - this.#d0;
    const v = (hostTime - this.#h0) - u;
    const idx = Math.floor(u / this.#binSeconds);
    const I = this.#binIndex, U = this.#binU, V = this.#binV, S = this.#binSum, SU = this.#binSumU, N = this.#binN;
    // A pair older than the history window is ignored (it would be evicted at once).
    if (I.length && idx < I[I.length - 1] - this.#historyBins) return;
    this.#count++;
    if (u > this.#uMax) this.#uMax = u;
    // Frames arrive in device-time order almost always: search from the end.
    let j = I.length - 1;
    while (j >= 0 && I[j] > idx) j--;
    if (j >= 0 && I[j] === idx) {
      if (v < V[j]) { U[j] = u; V[j] = v; }
      S[j] += v; SU[j] += u; N[j]++;
    } else {
      I.splice(j + 1, 0, idx); U.splice(j + 1, 0, u); V.splice(j + 1, 0, v); S.splice(j + 1, 0, v); SU.splice(j + 1, 0, u); N.splice(j + 1, 0, 1);
    }
    const oldest = I[I.length - 1] - this.#historyBins;
    let drop = 0;
    while (drop < I.length && I[drop] < oldest) drop++;
    if (drop) { I.splice(0, drop); U.splice(0, drop); V.splice(0, drop); S.splice(0, drop); SU.splice(0, drop); N.splice(0, drop); }
    this.#uMin = drop ? U[0] : Math.min(this.#uMin, u);
    this.#fit();
  }

  #fit() {
    const U = this.#binU, V = this.#binV, n = U.length;
    const span = U[n - 1] - U[0];
    const highestBelow = (s) => {
      let c = Infinity;
      for (let i = 0; i < n; i++) c = Math.min(c, V[i] - s * U[i]);
      return c;
    };
    const prior = this.#priorSlope, p = this.#priorSigmaNow;
    if (n < 2 || !(span >= this.#minDriftSpan) || span <= 0) {
      this.#s = prior;
      this.#c = highestBelow(prior);
      this.#fitSigma = p;
      return;
    }
    let mean = 0;
    for (let i = 0; i < n; i++) mean += U[i];
    mean /= n;
    const hull = lowerHull(U, V, n);
    let s = prior;
    if (hull.length >= 2) {
      let k = 0;
      while (k < hull.length - 2 && U[hull[k + 1]] < mean) k++;
      const a = hull[k], b = hull[k + 1];
      s = (V[b] - V[a]) / (U[b] - U[a]);
    }
    s = Math.max(-this.#maxSlope, Math.min(this.#maxSlope, s));
    if (Number.isFinite(p)) {
      const c = highestBelow(s);
      // q: how far the envelope may wander, the larger of the bin minima's mean height above the
      // line and the pairs' mean height above their bin's minimum (both along the slope s).
      let q = 0, spread = 0;
      for (let i = 0; i < n; i++) {
        q += V[i] - (c + s * U[i]);
        spread += (this.#binSum[i] - s * this.#binSumU[i]) / this.#binN[i] - (V[i] - s * U[i]);
      }
      q = Math.min(Math.max(q, spread) / n, this.#wander);
      // The total time observed since the reset (u runs from 0), not just the history span: the
      // slope is a lasting property, so the prior keeps fading after the history is full.
      const e = q / Math.max(span, this.#uMax);
      // p = 0 (a prior from exact data) keeps the prior slope; e = 0 (exact data) keeps the fit.
      s = p === 0 ? prior : e === 0 ? s : prior + (s - prior) * (p * p / (p * p + e * e));
      this.#fitSigma = p === 0 || e === 0 ? 0 : 1 / Math.sqrt(1 / (p * p) + 1 / (e * e));
    } else {
      this.#fitSigma = 0;
    }
    this.#s = s;
    this.#c = highestBelow(s);
  }
}

/**
 * Beat times from heart-rate notifications (0x2A37): each carries the RR intervals (s) measured
 * since the previous notification, no device time.
 *
 * `push(hostTime, rrIntervals)` returns the new beats: `times` (the end of each RR interval, host
 * seconds) and `rr`, plus `reanchored`, `duplicate`, `shift`, `clamped` and `skipped`.
 *
 * Decisions:
 * - Chaining: the new beats follow the previous beat, t_prev + rr1, t_prev + rr1 + rr2, ... The
 *   last RR of a notification ends a bit before the host receive time: the beat had to be
 *   detected, the notification sent (about once a second) and delivered (connection events). So
 *   the chain is kept while its last beat lies in [hostTime - tolerance, hostTime].
 * - Re-anchoring: otherwise (and for the first notification) the last new beat is put AT hostTime
 *   (`reanchored: true`, `shift` = how far the chain moved). A chain later than hostTime is
 *   impossible (a beat cannot follow its own notification), so this also pulls a chain that was
 *   anchored on a slowly delivered notification back to the fastest one seen: the error settles to
 *   the smallest lag (beat -> receive) among the notifications since the last break, and is
 *   never negative beyond RR rounding (1/1024 s) and device-clock drift. A chain earlier than
 *   hostTime - tolerance means beats were lost (missed notifications, a disconnect) and is
 *   re-anchored the same way.
 * - After a re-anchor a new beat may not precede the last beat already returned (only when that
 *   beat was placed more than one RR too late); such beats are moved just after it (1 ms apart)
 *   so the times stay strictly increasing, and counted in `clamped`.
 * - A notification without RR intervals returns no beats and leaves the chain alone (a gap of RR-
 *   less notifications shows up later as a chain inconsistent with host time).
 * - A duplicated notification (the same RR list as the previous one, received within
 *   `duplicateWindow` s of it, which chaining would put after its own receive time) is ignored
 *   (`duplicate: true`). Two genuine identical notifications delivered in one batch chain
 *   consistently and are kept.
 * - RR values that are not finite and > 0 cannot be chained: they are left out and counted in
 *   `skipped`.
 */
export class BeatTimeline {
  #tolerance; #duplicateWindow;
  #last = null;       // time of the last beat returned
  #lastHost = null;   // receive time of the last notification with RR intervals
  #lastRR = null;

  constructor({ tolerance = 2.5, duplicateWindow = 0.3 } = {}) {
    if (!(tolerance > 0 && Number.isFinite(tolerance))) throw bad(`BeatTimeline: tolerance must be a positive number of seconds, got ${tolerance}`);
    if (!(duplicateWindow >= 0 && Number.isFinite(duplicateWindow))) throw bad(`BeatTimeline: duplicateWindow must be a number >= 0, got ${duplicateWindow}`);
    this.#tolerance = tolerance;
    this.#duplicateWindow = duplicateWindow;
  }

  /** Time of the last beat returned (null before the first). */
  get lastBeat() {
    return this.#last;
  }

  reset() {
    this.#last = this.#lastHost = this.#lastRR = null;
  }

  push(hostTime, rrIntervals) {
    finite(hostTime, 'BeatTimeline.push: hostTime');
    if (rrIntervals == null) rrIntervals = [];
    if (!(Array.isArray(rrIntervals) || ArrayBuffer.isView(rrIntervals))) throw bad('BeatTimeline.push: rrIntervals must be an array of seconds');
    const rr = [];
    let skipped = 0;
    for (const x of rrIntervals) {
      if (typeof x === 'number' && Number.isFinite(x) && x > 0) rr.push(x);
      else skipped++;
    }
    const result = (times, values, extra) => ({ times, rr: values, reanchored: false, duplicate: false, shift: 0, clamped: 0, skipped, ...extra });
    if (!rr.length) return result(new Float64Array(0), new Float64Array(0));

    let sum = 0;
    for (const x of rr) sum += x;
    const prev = this.#last;
    const chained = prev === null ? null : prev + sum;

    if (chained !== null && chained > hostTime && this.#lastRR && Math.abs(hostTime - this.#lastHost) <= this.#duplicateWindow &&
        this.#lastRR.length === rr.length && this.#lastRR.every((x, i) => x === rr[i]))
      return result(new Float64Array(0), new Float64Array(0), { duplicate: true });

    let base = prev, reanchored = false, shift = 0;
    if (chained === null || chained > hostTime || chained < hostTime - this.#tolerance) {
      base = hostTime - sum;
      reanchored = true;
      shift = chained === null ? 0 : hostTime - chained;
    }
    const times = new Float64Array(rr.length);
    let t = base, clamped = 0;
    for (let i = 0; i < rr.length; i++) {
      t += rr[i];
      times[i] = t;
    }
    if (prev !== null) {
      let floor = prev;
      for (let i = 0; i < times.length; i++) {
        if (times[i] <= floor) { times[i] = floor + 1e-3; clamped++; }
        floor = times[i];
      }
    }
    this.#last = times[times.length - 1];
    this.#lastHost = hostTime;
    this.#lastRR = rr;
    return result(times, Float64Array.from(rr), { reanchored, shift, clamped });
  }
}
