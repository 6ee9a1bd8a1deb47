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

const HOST_RING = 256;  // arrivals kept for the connection-interval estimate
const TOP = 4;         // highest pairs kept per bin (the highest punctual one is among them unless 4 are late)

// Keeps `top` ([u, v, ...] by decreasing v) to the TOP highest pairs with (u, v) added.
function keepTop(top, u, v) {
  let k = top.length;
  while (k > 0 && top[k - 1] < v) k -= 2;
  if (k >= 2 * TOP) return;
  top.splice(k, 0, u, v);
  if (top.length > 2 * TOP) top.length = 2 * TOP;
}

const erf = (x) => {  // Abramowitz and Stegun 7.1.26, |error| <= 1.5e-7
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x >= 0 ? y : -y;
};

// Where a concave f peaks in [a, z]: ternary search, `iterations` steps.
function peak(f, a, z, iterations) {
  for (let it = 0; it < iterations; it++) {
    const m1 = a + (z - a) / 3, m2 = z - (z - a) / 3;
    if (f(m1) < f(m2)) a = m1; else z = m2;
  }
  return (a + z) / 2;
}

// Mean and standard deviation of N(mean, sd) truncated to [lo, hi]; sd Infinity (a flat prior):
// the interval's middle and its uniform spread; far outside: the nearer end.
function truncatedNormal(mean, sd, lo, hi) {
  if (!(sd < Infinity)) return [(lo + hi) / 2, (hi - lo) / Math.sqrt(12)];
  if (sd === 0) return [Math.max(lo, Math.min(hi, mean)), 0];
  const a = (lo - mean) / sd, b = (hi - mean) / sd;
  const pdf = (x) => Math.exp(-x * x / 2) / Math.sqrt(2 * Math.PI);
  const Z = 0.5 * (erf(b / Math.SQRT2) - erf(a / Math.SQRT2));
  if (!(Z > 1e-9)) return [Math.abs(a) < Math.abs(b) ? lo : hi, (hi - lo) / Math.sqrt(12)];
  const pa = Number.isFinite(a) ? pdf(a) : 0, pb = Number.isFinite(b) ? pdf(b) : 0;
  const r = (pa - pb) / Z;
  const variance = 1 + ((Number.isFinite(a) ? a * pa : 0) - (Number.isFinite(b) ? b * pb : 0)) / Z - r * r;
  return [mean + sd * r, sd * Math.sqrt(Math.max(variance, 0))];
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
 * Connection events: Bluetooth LE delivers notifications only at connection events, every
 * connInterval = N x 1.25 ms (Core Specification 5.x, Vol 6, Part B, 4.5.1), so a frame that is
 * not late arrives within one interval I of being ready: besides host >= line (the lower
 * envelope), host - I <= line. Both bounds together pin the slope where the lower envelope alone
 * cannot: the sawtooth above keeps every delay small only along one ramp, but its largest delays
 * (the frames that just missed an event) ride up and down with it, and a tilted line leaves one
 * of the two sides of some frames. With I known (`connectionIntervalSeconds`, or 'auto': the
 * largest N x 1.25 ms of which >= 60 % of the recent arrival times' gaps are multiples, within
 * `intervalToleranceSeconds`, with at least two different multiples: one multiple only is a
 * periodic source, not a grid), the fit:
 * - marks a pair late (it waited one or more events more) when it lies more than I above the
 *   smallest pair within `binSeconds` x 4 of it, takes each bin's highest pair that is not late,
 *   and filters those over 3 bins (median), since a late pair that lies less than I above its
 *   neighbours cannot be told from a punctual one;
 * - finds the interval of slopes for which a line lies below every bin minimum and above every
 *   filtered bin maximum minus (I + `intervalToleranceSeconds` + 4 x the median distance of the
 *   arrival gaps from their multiples of I) (a concave condition: ternary
 *   search for its best slope, bisection for the ends). If no slope fits, the most violated
 *   lower bound is dropped, up to max(2, 5 % of the bins), else the bounds are not used;
 * - takes as the slope the mean of the prior N(prior slope, `driftPriorPpm`) truncated to that
 *   interval, instead of the hull edge (whose ramp-following is what the bounds rule out), and as
 *   the host time of the newest device time the middle of the range that the highest line below
 *   every pair takes over the slopes in the interval (the smallest worst case over them; the
 *   truth lies near that line for its own slope, as the fastest deliveries are near 0 delay).
 *   Measured on the simulated strap (bench/clock_alignment.mjs, 20 seeds, 300 s): at a 30 ms
 *   interval and +20 ppm the largest error after 60 s fell from 7.2 to 4.8 ms (2 ms of it the
 *   strap's own latency), with the crystal 50 ppm fast from 9.1 to 6.4 ms; 15 ms intervals and
 *   slow crystals stay within 3.6 ms. Cost (same bench, last line): 0.13 ms per observation
 *   with a full 20-minute history (only hull vertices are visited), 8x the lower envelope's.
 *   Where the arrival times do not sit on one grid (their gaps are off their multiples of I by
 *   more than a fifth of the tolerance, in median), 'auto' finds no interval and the fit is the
 *   lower-envelope one above: with jitter, the highest pairs' jitter tail crosses the bound often
 *   enough to pull the bounds off the truth (measured: 0.5 ms exponential jitter made it worse
 *   than the envelope alone). A link whose interval grows mid-session (a reconnect, a
 *   connection parameter update) is bounded too tightly until the arrival ring (the last 256)
 *   turns over, as the old interval still divides the new gaps: the bounds can miss the true
 *   drift for that while; measured, the error stayed below the envelope-only fit's
 *   (tests/js/ble-clock.test.js). Tried and not kept: requiring the newest 48 arrivals to show
 *   the same interval as the ring and holding only the pairs since the last disagreement to the
 *   bound; the bounds were then often wide, and the offset taken from wide bounds was off by
 *   up to 138 ms.
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
  #priorSigma; #wander; #intervalOption; #intervalTol;
  #priorSlope = 0; #priorSigmaNow;  // the current prior of the slope (mean, standard deviation)
  #fitSigma = Infinity;             // standard deviation of the current slope estimate
  #d0 = null; #h0 = null;
  // Bins sorted by index: parallel arrays, at most historyBins + 1 entries.
  #binIndex = []; #binU = []; #binV = []; #binSum = []; #binSumU = []; #binN = [];
  #binTop = [];   // per bin: its TOP highest pairs, [u0, v0, u1, v1, ...] by decreasing v
  #hostTimes = new Float64Array(HOST_RING); #hostCount = 0;  // the last arrivals, for 'auto'
  #interval = NaN;                 // the connection interval in use (s), NaN: none
  #jitter = 0;                     // median |arrival gap - multiple of the interval| (s)
  #bounds = null; #boundsAt = -Infinity;  // feasible slope interval [lo, hi] and the u it was computed at
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
    connectionIntervalSeconds = 'auto',
    intervalToleranceSeconds = 0.0005,
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
    if (!(connectionIntervalSeconds === 'auto' || connectionIntervalSeconds === null ||
          (typeof connectionIntervalSeconds === 'number' && connectionIntervalSeconds > 0 && Number.isFinite(connectionIntervalSeconds))))
      throw bad(`ClockAligner: connectionIntervalSeconds must be 'auto', null or a positive number of seconds, got ${connectionIntervalSeconds}`);
    if (!(typeof intervalToleranceSeconds === 'number' && intervalToleranceSeconds >= 0 && Number.isFinite(intervalToleranceSeconds)))
      throw bad(`ClockAligner: intervalToleranceSeconds must be a number >= 0, got ${intervalToleranceSeconds}`);
    this.#intervalOption = connectionIntervalSeconds;
    this.#intervalTol = intervalToleranceSeconds;
    if (typeof connectionIntervalSeconds === 'number') this.#interval = connectionIntervalSeconds;
  }

  /** Forgets everything (history, fit, reference, prior slope). `jumps` is kept. */
  reset() {
    this.#clear();
    this.#hostCount = 0;
    if (this.#intervalOption === 'auto') this.#interval = NaN;
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

  /**
   * The Bluetooth connection interval (s) whose events bound the delivery delay: the option's
   * value, or with 'auto' the one found in the arrival times (NaN until found, or when the
   * arrivals show none).
   */
  get connectionInterval() {
    return this.#interval;
  }

  /**
   * [lo, hi] (ppm, as `drift`): the drifts for which a line lies below every delivery and at most
   * one connection interval above every punctual one; null when not known (no interval, too
   * short a history, or no line fits).
   */
  get driftBounds() {
    return this.#bounds ? [this.#bounds[0] * 1e6, this.#bounds[1] * 1e6] : null;
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
    this.#binTop = [];
    this.#bounds = null; this.#boundsAt = -Infinity;
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
    this.#hostTimes[this.#hostCount++ % HOST_RING] = hostTime;
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
      keepTop(this.#binTop[j], u, v);
    } else {
      I.splice(j + 1, 0, idx); U.splice(j + 1, 0, u); V.splice(j + 1, 0, v); S.splice(j + 1, 0, v); SU.splice(j + 1, 0, u); N.splice(j + 1, 0, 1);
      this.#binTop.splice(j + 1, 0, [u, v]);
      this.#boundsAt = -Infinity;  // a new bin: recompute the bounds now
    }
    const oldest = I[I.length - 1] - this.#historyBins;
    let drop = 0;
    while (drop < I.length && I[drop] < oldest) drop++;
    if (drop) { I.splice(0, drop); U.splice(0, drop); V.splice(0, drop); S.splice(0, drop); SU.splice(0, drop); N.splice(0, drop); this.#binTop.splice(0, drop); }
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
      this.#bounds = null;
      return;
    }
    // Connection-event bounds, recomputed every quarter bin of device time (and for a new bin).
    if (this.#uMax - this.#boundsAt >= this.#binSeconds / 4) {
      this.#boundsAt = this.#uMax;
      if (this.#intervalOption === 'auto') this.#interval = this.#estimateInterval();
      this.#bounds = this.#interval > 0 ? this.#slopeBounds(this.#interval) : null;
    }
    if (this.#bounds) {
      // Slope: the prior truncated to the bounds. Offset: the host time of the newest device time
      // is the middle of the range that the highest line below every pair takes over the slopes
      // in the bounds (the smallest worst case over them), or lower if the slope's own line is.
      const [lo, hi] = this.#bounds, un = this.#uMax;
      const [m, sd] = truncatedNormal(prior, p, lo, hi);
      const low = lowerHull(U, V, n);  // only its vertices can be the lowest point for a slope
      const H = (x) => {                // concave in x
        let c = Infinity;
        for (const i of low) c = Math.min(c, V[i] - x * U[i]);
        return c + x * un;
      };
      const middle = (H(peak(H, lo, hi, 40)) + Math.min(H(lo), H(hi))) / 2;
      this.#s = m;
      this.#fitSigma = sd;
      this.#c = Math.min(H(m), middle) - m * un;
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

  // The largest N x 1.25 ms (N >= 6: 7.5 ms) of which >= 60 % of the gaps between the recent
  // arrivals (those more than the tolerance apart and under 2 s, so the host's and the radio's
  // clocks cannot part by more than the tolerance) are multiples within the tolerance; NaN when
  // fewer than 16 such gaps or no N fits. One event's notifications arrive together (gap ~0).
  #estimateInterval() {
    const count = Math.min(this.#hostCount, HOST_RING), tol = this.#intervalTol;
    if (count < 17) return NaN;
    const times = [];
    for (let k = this.#hostCount - count; k < this.#hostCount; k++) times.push(this.#hostTimes[k % HOST_RING]);
    times.sort((a, b) => a - b);
    const gaps = [];
    let smallest = Infinity;
    for (let k = 1; k < times.length; k++) {
      const g = times[k] - times[k - 1];
      if (g > tol && g < 2) { gaps.push(g); smallest = Math.min(smallest, g); }
    }
    if (gaps.length < 16) return NaN;
    const step = 0.00125;
    for (let N = Math.min(3200, Math.floor((smallest + tol) / step)); N >= 6; N--) {
      const I = N * step;
      const residuals = [], multiples = new Set();
      for (const g of gaps) {
        const k = Math.round(g / I), r = Math.abs(g - k * I);
        if (r <= tol) { residuals.push(r); multiples.add(k); }
      }
      // Gaps of one single multiple are a periodic source, not a grid (frames every P seconds
      // fit every P / k).
      if (residuals.length >= 0.6 * gaps.length && multiples.size >= 2) {
        residuals.sort((a, b) => a - b);
        this.#jitter = residuals[residuals.length >> 1];
        // Only a clean grid: with host jitter the highest pairs' jitter tail crosses the
        // bound often enough to pull the bounds off the truth (measured with 0.5 ms exponential
        // jitter, tests/js/ble-clock.test.js: worse than the envelope alone).
        return this.#jitter <= tol / 5 ? I : NaN;
      }
    }
    return NaN;
  }

  // [lo, hi] of the slopes s for which some c has c + s u <= every bin minimum and
  // c + s u >= every filtered punctual bin maximum - (I + tolerance); null if none.
  #slopeBounds(I) {
    // A punctual pair lies at most I above the line, plus the host's timestamp jitter: the
    // tolerance and 4 x the median distance of the arrival gaps from their multiples of I (a
    // pair's jitter is one-sided, a gap's two-sided).
    const U = this.#binU, V = this.#binV, n = U.length, reach = I + this.#intervalTol + 4 * this.#jitter;
    const WU = new Float64Array(n), W = new Float64Array(n);
    const R = 4;
    for (let j = 0; j < n; j++) {
      let m = V[j];
      for (let k = Math.max(0, j - R); k <= Math.min(n - 1, j + R); k++) m = Math.min(m, V[k]);
      const top = this.#binTop[j];
      W[j] = -Infinity;
      for (let k = 0; k < top.length; k += 2) {
        if (top[k + 1] <= m + reach) { WU[j] = top[k]; W[j] = top[k + 1] - reach; break; }  // highest punctual
      }
    }
    // median of 3 neighbouring bins (at the ends the lower of 2): a late pair that passed the
    // test above is one bin's outlier
    const Wm = new Float64Array(n), WUm = new Float64Array(n);
    for (let j = 0; j < n; j++) {
      let pick = j;
      if (j === 0 || j === n - 1) {
        const k = j === 0 ? Math.min(1, n - 1) : n - 2;
        if (W[k] < W[j]) pick = k;
      } else {
        const a = W[j - 1], b = W[j], c = W[j + 1];
        pick = (a <= b) === (b <= c) ? j : (a <= b) === (c <= a) ? j - 1 : j + 1;
      }
      Wm[j] = W[pick]; WUm[j] = WU[pick];
    }
    // Only hull vertices can bind: the lower hull of the minima, the upper hull of the maxima.
    const low = lowerHull(U, V, n).map((i) => [U[i], V[i]]);
    let high;
    const upper = () => {
      const order = [];
      for (let j = 0; j < n; j++) if (Wm[j] > -Infinity) order.push(j);
      order.sort((x, y) => WUm[x] - WUm[y]);
      const us = order.map((j) => WUm[j]), negated = order.map((j) => -Wm[j]);
      high = lowerHull(us, negated, order.length).map((i) => [us[i], -negated[i], order[i]]);
    };
    upper();
    const F = (s) => {
      let lo = Infinity, hi = -Infinity;
      for (const [u, v] of low) lo = Math.min(lo, v - s * u);
      for (const [u, w] of high) hi = Math.max(hi, w - s * u);
      return lo - hi;
    };
    const S = this.#maxSlope;
    const limit = Math.max(2, Math.floor(0.05 * n));
    let best;
    for (let dropped = 0; ; dropped++) {
      best = peak(F, -S, S, 60);
      if (F(best) >= 0) break;
      if (dropped >= limit) return null;
      let worst = -1, height = -Infinity;
      for (const [u, w, j] of high) {
        if (w - best * u > height) { height = w - best * u; worst = j; }
      }
      Wm[worst] = -Infinity;
      upper();
    }
    const edge = (inside, outside) => {
      if (F(outside) >= 0) return outside;
      for (let it = 0; it < 50; it++) {
        const m = (inside + outside) / 2;
        if (F(m) >= 0) inside = m; else outside = m;
      }
      return inside;
    };
    return [edge(best, -S), edge(best, S)];
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
