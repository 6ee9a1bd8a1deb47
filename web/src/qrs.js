// QRS detection on one ECG lead: beat (R-peak) times and the RR intervals between them, for a
// source that sends ECG but no RR (a handheld recording, a strap's raw ECG). The one definition
// the project uses, at inference and when training data is prepared (tools/af/: Node runs this
// file, so training and runtime give the same beats).
//
// The method is Pan and Tompkins' (J. Pan, W. J. Tompkins, "A Real-Time QRS Detection
// Algorithm", IEEE Trans. Biomed. Eng. 32(3), 1985), written for any sampling rate:
//   1. band-pass 5-15 Hz (the QRS's energy; P and T waves and baseline wander fall outside):
//      a 2nd-order high-pass at 5 Hz, then a 2nd-order low-pass at 15 Hz, Butterworth (Q = 1/sqrt2)
//      biquads from R. Bristow-Johnson's "Audio EQ Cookbook" formulas, run forward and backward
//      (zero phase: the whole window is at hand, and a peak keeps its time);
//   2. the five-point derivative (slopes: the QRS is the steepest part of a beat);
//   3. squaring (every slope positive, large ones emphasised);
//   4. moving-window integration over 150 ms (about one QRS);
//   5. peaks of the integrated signal at least 200 ms apart (the refractory period) classified
//      as signal or noise against an adaptive threshold: THRESHOLD = NPK + 0.25 (SPK - NPK), SPK and
//      NPK running estimates of signal and noise peaks (each new peak weighs 1/8); a peak within
//      360 ms of the last beat whose steepest slope is under half the last beat's is a T wave;
//      after 1.66 mean RR without a beat, the largest peak in between above half the threshold is
//      taken (search back).
//   6. each beat's time: the largest |band-passed value| within the integration window before
//      the integrated peak (the band-passed signal is zero phase, so this is the QRS's centre of
//      energy, within a few ms of the R peak for either polarity of the lead).
// Missing samples (NaN) are held at the last value before filtering; a beat within 150 ms of a
// missing sample is not reported.
import { SensorformerError } from './errors.js';
import { checkOptions } from './options.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', `detectBeats: ${message}`);

// Biquad coefficients (b0, b1, b2, a1, a2; a0 normalised to 1), RBJ cookbook, Q = 1/sqrt(2).
function biquad(kind, f0, fs) {
  const w = (2 * Math.PI * f0) / fs, cos = Math.cos(w), alpha = Math.sin(w) / Math.SQRT2;
  const a0 = 1 + alpha;
  const b = kind === 'lowpass' ? [(1 - cos) / 2, 1 - cos, (1 - cos) / 2] : [(1 + cos) / 2, -(1 + cos), (1 + cos) / 2];
  return [b[0] / a0, b[1] / a0, b[2] / a0, (-2 * cos) / a0, (1 - alpha) / a0];
}

// y = filter(x) forward, then backward (zero phase). Float64 throughout.
function filtfilt([b0, b1, b2, a1, a2], x) {
  const run = (input) => {
    const y = new Float64Array(input.length);
    // Start from the first value's steady state (a constant passes a high-pass as 0, a low-pass
    // as itself), so the edges do not ring.
    const dc = (b0 + b1 + b2) / (1 + a1 + a2);
    let x1 = input[0], x2 = input[0], y1 = input.length ? dc * input[0] : 0, y2 = y1;
    for (let n = 0; n < input.length; n++) {
      const v = b0 * input[n] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
      x2 = x1, x1 = input[n], y2 = y1, y1 = v;
      y[n] = v;
    }
    return y;
  };
  return run(run(x).reverse()).reverse();
}

// A sample as every function here reads it: a number, or NaN when missing. null, NaN, +-Infinity
// (which a window refuses), what is not a number (a Symbol, a BigInt) and values past +-1e100 (the
// zero-phase filter would carry such a value's overflow over the whole recording: no beat at all)
// are missing: no beat is detected next to one, an interval across one is unknown and a beat's
// waveform is NaN there.
const reading = (v) => {
  const x = typeof v === 'number' ? v : v == null || typeof v === 'symbol' || typeof v === 'bigint' ? NaN : Number(v);
  return Number.isFinite(x) && Math.abs(x) <= 1e100 ? x : NaN;
};

// detectBeats' longest input: a day of ECG at 1000 Hz (its buffers are 8 float64 a sample).
const MAX_SAMPLES = 86_400_000;

/**
 * Beats of one ECG lead.
 * @param {ArrayLike<number|null>} samples  the lead at `rateHz` (any unit; null, NaN and +-Infinity = missing)
 * @param {number} rateHz  sampling rate (>= 50 Hz: a QRS lasts ~100 ms)
 * @param {{ startTime?: number }} [options]  the first sample's time in seconds (default 0)
 * @returns {{ indices: Int32Array, times: Float64Array, rr: Float64Array }}
 *   beat sample indices, their times (startTime + index / rateHz) and the RR interval before each
 *   beat after the first (length beats - 1, seconds)
 */
export function detectBeats(samples, rateHz, options = null) {
  const { startTime } = checkOptions(options, 'detectBeats(samples, rateHz, options)', {
    startTime: { fallback: 0, valid: (v) => Number.isFinite(v), expected: 'a finite time in seconds' },
  });
  if (samples == null || typeof samples !== 'object' || !Number.isSafeInteger(samples.length) || samples.length < 0)
    throw bad('samples must be an array or a typed array');
  if (!(Number.isFinite(rateHz) && rateHz >= 50 && rateHz <= 1e5)) throw bad(`rateHz must be a number of Hz from 50 to 100000, got ${rateHz}`);
  if (samples.length > MAX_SAMPLES) throw new SensorformerError('RESOURCE_EXHAUSTED', `detectBeats: ${samples.length} samples, more than ${MAX_SAMPLES} (a day at 1000 Hz): detect over parts of the recording`);
  const n = samples.length, fs = rateHz;
  const empty = { indices: new Int32Array(0), times: new Float64Array(0), rr: new Float64Array(0) };
  // The samples read once: held at the last value where missing, and missingBefore (as
  // missingCounts gives it) for the learning phase, the beats next to a gap and the intervals.
  const x = new Float64Array(n), missingBefore = new Int32Array(n + 1);
  let last = NaN;
  for (let i = 0; i < n; i++) {
    const v = reading(samples[i]);
    if (!Number.isNaN(v)) last = v;
    x[i] = last;
    missingBefore[i + 1] = missingBefore[i] + (Number.isNaN(v) ? 1 : 0);
  }
  const first = x.findIndex((v) => Number.isFinite(v));
  if (first < 0) return empty;
  for (let i = 0; i < first; i++) x[i] = x[first];
  const win = Math.max(1, Math.round(0.15 * fs)), refractory = Math.round(0.2 * fs), twave = Math.round(0.36 * fs);
  if (n < 2 * win) return empty;

  const bp = filtfilt(biquad('lowpass', 15, fs), filtfilt(biquad('highpass', 5, fs), x));
  // Five-point derivative, squared, integrated over `win` samples (centred, to keep times).
  const sq = new Float64Array(n);
  for (let i = 2; i < n - 2; i++) {
    const d = (2 * bp[i + 2] + bp[i + 1] - bp[i - 1] - 2 * bp[i - 2]) * (fs / 8);
    sq[i] = d * d;
  }
  const mwi = new Float64Array(n);
  let sum = 0;
  const half = Math.floor(win / 2);
  for (let i = 0; i < n + half; i++) {
    if (i < n) sum += sq[i];
    if (i - win >= 0) sum -= sq[i - win];
    if (i - half >= 0 && i - half < n) mwi[i - half] = sum / win;
  }
  // Candidate peaks: local maxima, the largest within each refractory period.
  const peaks = [];
  for (let i = 1; i < n - 1; i++) {
    if (!(mwi[i] > mwi[i - 1] && mwi[i] >= mwi[i + 1])) continue;
    if (peaks.length && i - peaks[peaks.length - 1] < refractory) {
      if (mwi[i] > mwi[peaks[peaks.length - 1]]) peaks[peaks.length - 1] = i;
    } else {
      peaks.push(i);
    }
  }
  // Steepest band-passed slope within the window ending at a peak (T-wave test).
  const slope = (p) => {
    let s = 0;
    for (let i = Math.max(1, p - win); i <= p; i++) s = Math.max(s, Math.abs(bp[i] - bp[i - 1]));
    return s;
  };
  // Learning phase: the first 2 s of samples that were received (or all of a shorter window).
  // Held samples (missing ones, and those within one integration window of them, where the step
  // at the data's return looks like a QRS) say nothing of the signal's or the noise's level: a
  // window that starts inside a gap would learn thresholds near 0 over its held stretch and take
  // noise peaks after it as beats. Without missing samples this is the first 2 s.
  const nearMissing = (i) => missingBefore[Math.min(n, i + win + 1)] - missingBefore[Math.max(0, i - win)] > 0;
  const learn = Math.min(n, Math.round(2 * fs));
  let spk = 0, npk = 0, learnt = 0;
  for (let i = first; i < n && learnt < learn; i++) {
    if (nearMissing(i)) continue;
    spk = Math.max(spk, mwi[i]), npk += mwi[i], learnt++;
  }
  if (learnt === 0)  // every sample is held or next to a missing one: the first 2 s as they are
    for (let i = 0; i < learn; i++) spk = Math.max(spk, mwi[i]), npk += mwi[i], learnt++;
  spk *= 0.25;
  npk = (0.5 * npk) / learnt;
  const beats = [];
  const rrs = [];
  let lastSlope = 0;
  const threshold = () => npk + 0.25 * (spk - npk);
  const meanRr = () => (rrs.length ? rrs.slice(-8).reduce((a, b) => a + b, 0) / Math.min(8, rrs.length) : fs);
  const accept = (p, weight) => {
    if (beats.length) rrs.push(p - beats[beats.length - 1]);
    beats.push(p);
    lastSlope = slope(p);
    spk = weight * mwi[p] + (1 - weight) * spk;
  };
  let since = 0;  // index into peaks of the first candidate after the last beat
  for (let k = 0; k < peaks.length; k++) {
    const p = peaks[k];
    // Search back: a long wait since the last beat takes the largest candidate in between.
    if (beats.length && p - beats[beats.length - 1] > 1.66 * meanRr()) {
      let best = -1;
      for (let j = since; j < k; j++)
        if (peaks[j] - beats[beats.length - 1] >= refractory && mwi[peaks[j]] > 0.5 * threshold() && (best < 0 || mwi[peaks[j]] > mwi[peaks[best]])) best = j;
      if (best >= 0) {
        accept(peaks[best], 0.25);
        since = best + 1;
      }
    }
    const fromLast = beats.length ? p - beats[beats.length - 1] : Infinity;
    if (fromLast < refractory) continue;
    if (mwi[p] > threshold() && !(fromLast < twave && slope(p) < 0.5 * lastSlope)) {
      accept(p, 0.125);
      since = k + 1;
    } else {
      npk = 0.125 * mwi[p] + 0.875 * npk;
    }
  }
  // Each beat at the largest |band-passed value| within the window around its integrated peak.
  // A beat within one integration window of a missing sample is dropped: the held value's step
  // where the data resumes looks like a QRS to the band-pass.
  const indices = [];
  for (const p of beats) {
    let at = p, best = -1;
    for (let i = Math.max(0, p - half - 1); i <= Math.min(n - 1, p + half + 1); i++)
      if (Math.abs(bp[i]) > best) best = Math.abs(bp[i]), at = i;
    if (!nearMissing(at) && (!indices.length || at > indices[indices.length - 1])) indices.push(at);
  }
  const idx = Int32Array.from(indices);
  const times = Float64Array.from(idx, (i) => startTime + i / fs);
  // An interval with a missing sample between its two beats spans a gap (beats in it were not
  // seen): NaN, a missing value, rather than a long interval that would look like a pause.
  const rr = new Float64Array(Math.max(0, times.length - 1));
  for (let i = 1; i < times.length; i++)
    rr[i - 1] = unknownBetween(missingBefore, idx[i - 1], idx[i]) ? NaN : times[i] - times[i - 1];
  return { indices: idx, times, rr };
}

// missingBefore[i]: how many of samples[0..i) are missing (null or not finite, the samples
// detectBeats holds). The interval between beats a < b is unknown when one of them lies strictly
// between the two (unknownBetween): the one rule of detectBeats' rr and of a beat token's intervals.
function missingCounts(samples) {
  const out = new Int32Array(samples.length + 1);
  for (let i = 0; i < samples.length; i++) out[i + 1] = out[i] + (Number.isNaN(reading(samples[i])) ? 1 : 0);
  return out;
}
const unknownBetween = (missingBefore, a, b) => missingBefore[b] - missingBefore[a + 1] > 0;

/**
 * The RR event stream of an ECG stream, for a model with an `rr` modality when the source sends
 * no RR of its own (a handheld recording, a strap's raw ECG): detectBeats on the ECG, then an
 * event at every beat after the first, at the beat's time, valued the RR interval before it in
 * seconds.
 *
 * An interval with a missing ECG sample between its two beats is unknown (beats in the gap were
 * not seen). By default it is an event valued NaN, a missing value (nothing the ECG said is
 * dropped), and each model takes it the way it was trained: a model whose `rr` modality says
 * `"missing_events": "leave-out"` (docs/model.md, "Tokenizer") drops it before patching, as the
 * AF model's first member (models/af.safetensors) was trained; its beat-stream members were
 * trained with such events and read them as missing values. With `{ gaps: 'leave-out' }` the interval is left
 * out of the stream for every model, as a strap's own RR stream leaves out what a lost
 * notification held. On the CinC 2017 test part at 130 Hz with 20 % of the ECG lost in 0.56 s
 * notifications the pair shipped before it (its first member and one beat-stream member) scored
 * 0.727 fed this default and 0.714 with `'leave-out'` (until 2026-12-05 the default: its second
 * member then never saw the missing events it was trained with; docs/models.md, "RR across gaps").
 * @param {{ sensor: number, placement: string, rateHz: number, startTime?: number, samples: ArrayLike<number|null> }} ecg
 *   a regular stream in the window format
 * @param {{ times: ArrayLike<number>, rr: ArrayLike<number> } | null} [detected] detectBeats(ecg.samples, ecg.rateHz, { startTime })
 *   when the caller has it already (beatsFromEcg takes the same)
 * @param {{ gaps?: 'leave-out' | 'missing' }} [options]
 * @returns {{ sensor: number, modality: 'rr', placement: string, timestamps: Float64Array, samples: Float64Array }}
 */
export function rrFromEcg(ecg, detected, options) {
  if (ecg == null || typeof ecg !== 'object') throw bad('rrFromEcg(ecg): ecg must be a stream object');
  if (!(Number.isFinite(ecg.rateHz) && ecg.rateHz > 0)) throw bad('rrFromEcg(ecg): ecg.rateHz must be the ECG stream\'s rate (a regular stream)');
  const gaps = options?.gaps ?? 'missing';
  if (gaps !== 'leave-out' && gaps !== 'missing') throw bad(`rrFromEcg(ecg, detected, options): options.gaps must be 'leave-out' or 'missing', not ${JSON.stringify(gaps)}`);
  const { times, rr } = checkDetected(detected, ['times', 'rr'], 'rrFromEcg(ecg, detected)') ?? detectBeats(ecg.samples, ecg.rateHz, { startTime: ecg.startTime ?? 0 });
  let timestamps = Float64Array.from(times).slice(1), samples = Float64Array.from(rr);
  if (gaps === 'leave-out' && samples.some(Number.isNaN)) {
    const keep = Array.from(samples.keys()).filter((k) => !Number.isNaN(samples[k]));
    timestamps = Float64Array.from(keep, (k) => timestamps[k]);
    samples = Float64Array.from(keep, (k) => samples[k]);
  }
  return { sensor: ecg.sensor, modality: 'rr', placement: ecg.placement, timestamps, samples };
}

// The beat stream's default grid (tools/af/afmodel.py BEAT_L, BEAT_FIRST, BEAT_STEP_S: the
// training's definition of the same): point k of a beat at (k + BEAT_FIRST) * BEAT_STEP_S seconds
// from it, -0.24 .. +0.384 s (the P wave, the QRS and most of the T wave). A model's beat modality
// may name another grid (beatModalities).
export const BEAT_POINTS = 40;
const BEAT_FIRST = -15;
const BEAT_STEP_S = 0.016;
// The most RR intervals a beat's token may carry (a bound on what a model file may ask).
const MAX_RR_CONTEXT = 16;

// The default grid as beatModalities gives it (a model's "beat" modality without grid keys).
export const DEFAULT_BEAT_GRID = Object.freeze({ modality: 'beat', patchLen: BEAT_POINTS, points: BEAT_POINTS, first: BEAT_FIRST, stepS: BEAT_STEP_S, rrContext: 0, rrMean: 0, rrScale: 0 });

/** A modality that is a beat stream: "beat", or a name starting "beat_" (a second grid beside it). */
export const isBeatModality = (name) => name === 'beat' || (typeof name === 'string' && name.startsWith('beat_'));

/**
 * The beat streams a model takes, one per beat modality of its config (isBeatModality), each with
 * its grid read from the modality (tools/af/afmodel.py beat_stream is the training's definition):
 * a token of `patch_len` values per beat, the ECG at `patch_len - rr_context` points
 * `grid_step_s` apart from `grid_first` steps before the beat (default: 40 points, 0.016 s,
 * -15), then the `rr_context` RR intervals before the beat, newest first (default 0), each written
 * as `beat std / rr std * (RR - rr mean)` with the config's `rr` and this modality's mean and
 * std, so that the token's normalisation reads them as the `rr` stream's. A modality that asks for
 * something impossible is BAD_FORMAT naming it (loadModel checks every model this way).
 * An ensemble's config (model.config with `ensemble.members`) gives each member's grids read
 * from that member's own config, so each grid's intervals are scaled by its own member's `rr`;
 * members that give one name two grids are BAD_FORMAT (loadModel refuses such a file).
 * @returns {Array<{ modality: string, patchLen: number, points: number, first: number, stepS: number, rrContext: number, rrMean: number, rrScale: number }>}
 */
export function beatModalities(config) {
  const members = config?.ensemble?.members;
  if (Array.isArray(members)) {
    const byName = new Map();
    members.forEach((member, k) => {
      const fail = (message) => { throw new SensorformerError('BAD_FORMAT', `ensemble member ${k}: ${message}`); };
      let mine = [];
      try {
        mine = beatModalities(member);
      } catch (e) {
        fail(e.message);
      }
      for (const grid of mine) {
        const earlier = byName.get(grid.modality);
        if (earlier && JSON.stringify(earlier.grid) !== JSON.stringify(grid))
          fail(`beat modality "${grid.modality}" has another grid than member ${earlier.k}'s (an ensemble names each grid differently)`);
        if (!earlier) byName.set(grid.modality, { grid, k });
      }
    });
    return [...byName.values()].map((e) => e.grid);
  }
  const grids = [];
  for (const m of config?.modalities ?? []) {
    if (!isBeatModality(m?.name)) continue;
    const fail = (what) => { throw new SensorformerError('BAD_FORMAT', `beat modality "${m.name}": ${what}`); };
    const rrContext = m.rr_context ?? 0, first = m.grid_first ?? BEAT_FIRST, stepS = m.grid_step_s ?? BEAT_STEP_S;
    if (!(Number.isInteger(rrContext) && rrContext >= 0 && rrContext <= MAX_RR_CONTEXT)) fail(`"rr_context" must be an integer from 0 to ${MAX_RR_CONTEXT}, got ${JSON.stringify(m.rr_context)}`);
    if (!(Number.isInteger(m.patch_len) && m.patch_len > rrContext)) fail(`"patch_len" (${JSON.stringify(m.patch_len)}) must be an integer above "rr_context" (${rrContext}): a token holds at least one point of the ECG`);
    if (!(Number.isInteger(first) && Math.abs(first) <= 10000)) fail(`"grid_first" must be an integer from -10000 to 10000 (grid steps from the beat), got ${JSON.stringify(m.grid_first)}`);
    if (!(typeof stepS === 'number' && stepS > 0 && stepS <= 1)) fail(`"grid_step_s" must be a number of seconds above 0, at most 1, got ${JSON.stringify(m.grid_step_s)}`);
    let rrMean = 0, rrScale = 0;
    if (rrContext) {
      const rr = config.modalities.find((r) => r?.name === 'rr');
      if (!rr) fail('"rr_context" needs the model\'s "rr" modality (its mean and std scale the intervals)');
      rrMean = rr.mean ?? 0;
      rrScale = (m.std ?? 1) / (rr.std ?? 1);
    }
    grids.push(Object.freeze({ modality: m.name, patchLen: m.patch_len, points: m.patch_len - rrContext, first, stepS, rrContext, rrMean, rrScale }));
  }
  return grids;
}

// The grid a caller gave (one of beatModalities' entries), or the default one.
function gridOf(grid, where) {
  if (grid == null) return DEFAULT_BEAT_GRID;
  if (typeof grid !== 'object' || !Number.isInteger(grid.patchLen) || !Number.isInteger(grid.points) || !Number.isInteger(grid.rrContext) || grid.patchLen !== grid.points + grid.rrContext)
    throw new SensorformerError('INVALID_ARGUMENT', `${where}: grid must be one of beatModalities(model.config)'s entries`);
  return grid;
}

/**
 * Each beat's ECG on the beat grid (grid.points values per beat, beat after beat; default 40,
 * BEAT_POINTS): linear interpolation between the two samples around each grid point (NaN when
 * either is missing or outside the samples), minus the mean of the beat's present points.
 * Whatever the rate, a beat reads the same span around its R peak, aligned on it.
 * @param {ArrayLike<number|null>} samples the ECG (null, NaN and +-Infinity missing)
 * @param {number} rateHz
 * @param {ArrayLike<number>} indices the beats' sample indices (detectBeats)
 * @param {object} [grid] one of beatModalities(config)'s entries (default: the 40-point grid)
 */
export function beatWaveforms(samples, rateHz, indices, grid) {
  const { points, first, stepS } = gridOf(grid, 'beatWaveforms');
  const n = samples.length;
  const value = (i) => reading(samples[i]);
  const out = new Float64Array(indices.length * points);
  for (let j = 0; j < indices.length; j++) {
    let sum = 0, count = 0;
    const row = out.subarray(j * points, (j + 1) * points);
    for (let k = 0; k < points; k++) {
      const u = indices[j] + (k + first) * stepS * rateHz;
      const i0 = Math.floor(u), frac = u - i0;
      const v = i0 >= 0 && i0 + 1 < n ? value(i0) * (1 - frac) + value(i0 + 1) * frac : NaN;
      row[k] = v;
      if (!Number.isNaN(v)) sum += v, count++;
    }
    const mean = count ? sum / count : 0;
    for (let k = 0; k < points; k++) row[k] -= mean;
  }
  return out;
}

// The tokens of n beats (grid.patchLen values each): beat j's waveform (waves, grid.points per
// beat), then the grid.rrContext intervals before it, newest first: intervals[j - c] for column c,
// where intervals[i] is the RR interval (seconds) ending at beat i, NaN when unknown; a column
// before the first interval given (j - c < 0) is NaN too. `prior`: the intervals ending at the
// beats before beat 0, oldest first (a live tracker's).
function beatTokens(waves, intervals, grid, prior = []) {
  const { points, patchLen, rrContext, rrMean, rrScale } = grid;
  const n = intervals.length;
  const out = new Float64Array(n * patchLen);
  const interval = (i) => (i >= 0 ? intervals[i] : i + prior.length >= 0 ? prior[i + prior.length] : NaN);
  for (let j = 0; j < n; j++) {
    out.set(waves.subarray(j * points, (j + 1) * points), j * patchLen);
    for (let c = 0; c < rrContext; c++) out[j * patchLen + points + c] = rrScale * (interval(j - c) - rrMean);
  }
  return out;
}

/**
 * The beat event stream of an ECG stream, for a model with a beat modality: detectBeats on the
 * ECG (or the `detected` beats of the same samples), then grid.patchLen events per beat, all at
 * the beat's time, valued its token (beatWaveforms, then the RR intervals before it when the grid
 * has them: an interval with a missing sample between its beats, or before the first beat, is
 * NaN), so that a patch of grid.patchLen events is one beat: its morphology aligned on the R peak,
 * at any rate.
 * @param {{ sensor: number, placement: string, rateHz: number, startTime?: number, samples: ArrayLike<number|null> }} ecg
 * @param {{ indices: ArrayLike<number>, times: ArrayLike<number> }} [detected] detectBeats(ecg.samples, ecg.rateHz, { startTime })
 * @param {object} [grid] one of beatModalities(model.config)'s entries: the stream is its
 *   modality's (default: modality "beat", 40 points, no RR)
 * @returns {{ sensor: number, modality: string, placement: string, timestamps: Float64Array, samples: Float64Array }}
 */
export function beatsFromEcg(ecg, detected, grid) {
  if (ecg == null || typeof ecg !== 'object') throw bad('beatsFromEcg(ecg): ecg must be a stream object');
  if (!(Number.isFinite(ecg.rateHz) && ecg.rateHz > 0)) throw bad('beatsFromEcg(ecg): ecg.rateHz must be the ECG stream\'s rate (a regular stream)');
  const g = gridOf(grid, 'beatsFromEcg(ecg, detected, grid)');
  if (ecg.samples == null || typeof ecg.samples !== 'object' || typeof ecg.samples.length !== 'number') throw bad('beatsFromEcg(ecg): ecg.samples must be an array or a typed array');
  const { indices, times } = checkDetected(detected, ['indices', 'times'], 'beatsFromEcg(ecg, detected)') ?? detectBeats(ecg.samples, ecg.rateHz, { startTime: ecg.startTime ?? 0 });
  const timestamps = new Float64Array(times.length * g.patchLen);
  for (let j = 0; j < times.length; j++) timestamps.fill(times[j], j * g.patchLen, (j + 1) * g.patchLen);
  const waves = beatWaveforms(ecg.samples, ecg.rateHz, indices, g);
  const samples = g.rrContext ? beatTokens(waves, intervalsOf(ecg.samples, ecg.rateHz, indices), g) : waves;
  return { sensor: ecg.sensor, modality: g.modality, placement: ecg.placement, timestamps, samples };
}

// `detected` as detectBeats returns it (the fields `fields` read), or null / undefined: detect.
function checkDetected(detected, fields, where) {
  if (detected === null || detected === undefined) return null;
  if (typeof detected !== 'object' || !fields.every((f) => detected[f] != null && typeof detected[f] === 'object' && typeof detected[f].length === 'number'))
    throw bad(`${where}: detected must be what detectBeats returns ({ ${fields.join(', ')}, ... }) or null`);
  return detected;
}

// intervals[i]: the RR interval ending at beat i (index difference / rate), NaN for the first beat
// and when a missing sample lies strictly between beats i - 1 and i (detectBeats' rr rule).
function intervalsOf(samples, rateHz, indices) {
  const missingBefore = missingCounts(samples);
  const out = new Float64Array(indices.length).fill(NaN);
  for (let i = 1; i < indices.length; i++)
    if (!unknownBetween(missingBefore, indices[i - 1], indices[i])) out[i] = (indices[i] - indices[i - 1]) / rateHz;
  return out;
}

// How much new ECG a BeatTracker waits for before it detects again (seconds): its watermark moves
// in steps of at least this, and feeding it sample by sample costs ~1 / (DETECT_EVERY_S * rate) of
// feeding it in such steps.
const DETECT_EVERY_S = 0.25;

/**
 * The beat stream of a live ECG stream, chunk by chunk (a streaming session's `beat` stream, for a
 * strap that sends ECG but no beat times). Each push runs detectBeats over the last `seconds` of
 * ECG and gives the beats that are now final: at least `hold` seconds before the newest sample
 * (the detector's search back reaches 1.66 mean RR behind, and a beat's waveform 0.384 s ahead),
 * each once, in time order (it detects on a fixed grid of the stream, every DETECT_EVERY_S, 0.25 s,
 * of ECG from its first sample, so that the same ECG cut into other pushes gives the same beats).
 * Its `until` is the beat stream's watermark (no later push gives a beat before it), so the chunk
 * goes to the session as it is:
 *
 *   const tracker = new BeatTracker({ rateHz: 130, startTime: t0 });
 *   session.push({ streams: [{ samples: ecg }, { ...tracker.push(ecg) }] });
 *
 * The beats are detectBeats' over a trailing window rather than the whole recording: its adaptive
 * thresholds start again from each window's first 2 s, so a few beats can differ from an offline
 * detection (measured in docs/models.md). A beat first found after an earlier push's watermark
 * passed it (and more than 200 ms after the last beat given) is dropped and counted (`late`).
 *
 * With a `grid` (one of beatModalities(model.config)'s entries) the chunk is that modality's:
 * its points per beat, and the RR intervals before each beat when the grid has them, as
 * beatsFromEcg gives them offline; an interval is unknown (NaN) before the first beat given, when a
 * missing sample lies between its two beats, and when a dropped late beat lies between them (the
 * interval would hold two).
 */
export class BeatTracker {
  #rate; #start; #span; #hold; #every; #buf; #grid; #count = 0; #first = 0; #next = 0; #given = -Infinity; #counted = -Infinity; #until;
  #detected = -Infinity;  // the cut of the last detection
  #fresh = 0;  // the first index of a window nothing was given from (the start, or after a gap longer than the window)
  // The newest absolute index, before the buffer's first sample or at a dropped late beat, where
  // the rhythm is not known (a missing sample, a long gap, a late beat): an interval across it is
  // NaN. And the intervals ending at the last beats given (oldest first), for the next tokens.
  #broken = -Infinity; #intervals = [];
  late = 0;

  /**
   * @param {{ rateHz: number, startTime?: number, seconds?: number, hold?: number, grid?: object }} options
   *   the ECG's rate and first sample's time; the detection window (default 20 s, at least 8) and the hold
   *   (default 2.5 s, at most a quarter of the window); the beat modality's grid (default the 40-point one)
   */
  constructor(options) {
    const { rateHz, startTime, seconds, hold, grid } = checkOptions(options, 'new BeatTracker(options)', {
      rateHz: { fallback: undefined, valid: (v) => Number.isFinite(v) && v >= 50 && v <= 1e5, expected: 'a number of Hz from 50 to 100000' },
      startTime: { fallback: 0, valid: (v) => Number.isFinite(v), expected: 'a finite time in seconds' },
      seconds: { fallback: 20, valid: (v) => Number.isFinite(v) && v >= 8 && v <= 600, expected: 'seconds from 8 to 600' },
      hold: { fallback: 2.5, valid: (v) => Number.isFinite(v) && v >= 0.5 && v <= 10, expected: 'seconds from 0.5 to 10' },
      grid: { fallback: null, valid: () => true, expected: '' },  // checked by gridOf
    });
    if (rateHz === undefined) throw new SensorformerError('INVALID_ARGUMENT', 'new BeatTracker(options): options.rateHz is required (the ECG\'s rate)');
    if (hold > seconds / 4) throw new SensorformerError('INVALID_ARGUMENT', `new BeatTracker(options): hold (${hold} s) must be at most a quarter of seconds (${seconds} s)`);
    this.#rate = rateHz;
    this.#start = startTime;
    this.#span = Math.ceil(seconds * rateHz);
    this.#hold = Math.ceil(hold * rateHz);
    // A detection runs every DETECT_EVERY_S of ECG, on a grid from the first sample (a push of a
    // few samples, or one sample at a time, costs a copy, not a detection over the whole window).
    this.#every = Math.max(1, Math.round(DETECT_EVERY_S * rateHz));
    this.#buf = new Float64Array(this.#span);
    this.#until = startTime;
    this.#grid = gridOf(grid, 'new BeatTracker(options): options');
  }

  /** The watermark given so far: every beat before it has been given. */
  get until() { return this.#until; }

  /**
   * The next samples of the ECG (null, NaN and +-Infinity missing), in order after the previous
   * push's, or from `startTime` (the session chunk's re-anchor: the slots in between are a gap,
   * missing).
   * @param {ArrayLike<number|null>} samples
   * @param {number} [startTime] the time of samples[0], at or after the next expected sample's
   * @returns {{ timestamps: Float64Array, samples: Float64Array, until: number }} the beat stream's chunk
   */
  push(samples, startTime) {
    if (samples == null || typeof samples !== 'object' || typeof samples.length !== 'number')
      throw new SensorformerError('INVALID_ARGUMENT', 'BeatTracker.push(samples): samples must be an array or a typed array');
    // In pieces of an eighth of the window: a detection sees every sample at least 3/8 of the
    // window after the window's start (past its 2 s of learning thresholds) before it leaves.
    const parts = [], piece = this.#span >> 3;
    if (startTime !== undefined) {
      const expected = this.#first + this.#count;
      const slot = typeof startTime === 'number' ? Math.round((startTime - this.#start) * this.#rate) : NaN;
      if (!Number.isFinite(slot) || slot < expected)
        throw new SensorformerError('INVALID_ARGUMENT', `BeatTracker.push(samples, startTime): startTime must be at or after the next sample's time ${this.#start + expected / this.#rate}, got ${startTime}`);
      if (slot - expected > this.#span) {
        // A long gap: its first `hold` slots missing, as a shorter gap gives them, make the beats
        // before it final (up to 150 ms before it, as detectBeats reports beats next to a missing
        // sample); then nothing before the gap is needed any more.
        this.#feed(new Float64Array(this.#hold).fill(NaN), parts, piece);
        this.#first = slot, this.#count = 0, this.#fresh = slot;
        this.#broken = slot - 1;
        this.#next = Math.max(this.#next, slot);
      } else {
        this.#feed(new Float64Array(slot - expected).fill(NaN), parts, piece);
      }
    }
    if (samples.length) this.#feed(samples, parts, piece);
    else parts.push(this.#step([]));
    const n = parts.reduce((a, p) => a + p.timestamps.length, 0);
    const timestamps = new Float64Array(n), values = new Float64Array(n);
    let at = 0;
    for (const p of parts) timestamps.set(p.timestamps, at), values.set(p.samples, at), at += p.timestamps.length;
    return { timestamps, samples: values, until: this.#until };
  }

  // The samples in steps that end where detections may run (a multiple of #every samples from
  // the tracker's first), whatever the pushes' sizes: each detection then sees the same window,
  // so a live ECG gives the same beats however its notifications cut it. At most `piece` samples
  // a step (see push).
  #feed(samples, parts, piece) {
    for (let k = 0; k < samples.length;) {
      const cut = this.#first + this.#count - this.#hold;
      const toGrid = this.#every - (((cut % this.#every) + this.#every) % this.#every);
      const m = Math.min(toGrid, piece, samples.length - k);
      parts.push(this.#step(Array.prototype.slice.call(samples, k, k + m)));
      k += m;
    }
  }

  /**
   * The end of the ECG (nothing more will come): the beats not given yet, up to the newest sample
   * (a waveform past it is missing there), and the watermark at the end.
   * @returns {{ timestamps: Float64Array, samples: Float64Array, until: number }}
   */
  end() {
    const chunk = this.#step([], true);
    return { ...chunk, until: this.#until };
  }

  #step(samples, final = false) {
    for (let i = 0; i < samples.length; i++) {
      if (this.#count === this.#span) {  // keep the newest three quarters of the window
        for (let k = (this.#span >> 2) - 1; k >= 0; k--) if (Number.isNaN(this.#buf[k])) { this.#broken = Math.max(this.#broken, this.#first + k); break; }
        this.#buf.copyWithin(0, this.#span >> 2);
        this.#count -= this.#span >> 2;
        this.#first += this.#span >> 2;
      }
      const v = samples[i];
      this.#buf[this.#count++] = reading(v);
    }
    const end = this.#first + this.#count;        // absolute index after the newest sample
    const cut = final ? end : end - this.#hold;   // beats before this are final
    if (cut <= this.#next) {
      // Nothing can be final before #next (a long gap moved it past the samples): the watermark
      // still reaches the cut.
      this.#until = Math.max(this.#until, this.#start + cut / this.#rate);
      return { timestamps: new Float64Array(0), samples: new Float64Array(0) };
    }
    if (!final && (cut % this.#every !== 0 || cut <= this.#detected)) return { timestamps: new Float64Array(0), samples: new Float64Array(0) };
    this.#detected = cut;
    const window = this.#buf.subarray(0, this.#count);
    const found = this.#count >= 2 ? detectBeats(window, this.#rate).indices : new Int32Array(0);
    // A window that starts after the recording did has its first 2 s still learning thresholds:
    // beats there were candidates of an earlier push already.
    const from = this.#first === this.#fresh ? 0 : Math.round(2 * this.#rate);
    const refractory = Math.round(0.2 * this.#rate);
    const keep = [];
    for (const i of found) {
      const at = this.#first + i;
      if (at >= cut) break;
      if (at < this.#next || i < from) {  // given already, or found after its watermark
        if (at >= this.#given + refractory && at > this.#counted + refractory) this.late++, this.#counted = at, this.#broken = Math.max(this.#broken, at);
        continue;
      }
      keep.push(i);
    }
    const beats = Int32Array.from(keep);
    const grid = this.#grid, size = grid.patchLen;
    let tokens = beatWaveforms(window, this.#rate, beats, grid);
    if (grid.rrContext) {
      const intervals = new Float64Array(beats.length);
      let prev = this.#given;
      for (let j = 0; j < beats.length; j++) {
        const at = this.#first + beats[j];
        let known = prev > this.#broken;
        for (let i = Math.max(prev + 1 - this.#first, 0); known && i < beats[j]; i++) known = !Number.isNaN(window[i]);
        intervals[j] = known ? (at - prev) / this.#rate : NaN;
        prev = at;
      }
      tokens = beatTokens(tokens, intervals, grid, this.#intervals);
      this.#intervals = [...this.#intervals, ...intervals].slice(-grid.rrContext);
    }
    const timestamps = new Float64Array(beats.length * size);
    for (let j = 0; j < beats.length; j++)
      timestamps.fill(this.#start + (this.#first + beats[j]) / this.#rate, j * size, (j + 1) * size);
    // The next beat is at least a refractory period (200 ms) after the last one given, and never
    // before the watermark.
    if (beats.length) this.#given = this.#first + beats[beats.length - 1];
    this.#next = Math.max(cut, this.#given + refractory);
    this.#until = this.#start + cut / this.#rate;
    return { timestamps, samples: tokens };
  }
}
