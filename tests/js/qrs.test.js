// QRS detection (web/src/qrs.js, `detectBeats`): the beats an RR stream is made of when a source
// sends ECG only (issue 20). Reference: the simulator's own beat times (web/src/simulator/physiology.js
// draws each beat's waves around a known R time), matched within 150 ms, the match window of
// ANSI/AAMI EC57 for beat detectors. Goals, each with its reason:
//   sensitivity and positive predictivity >= 99.5 % (clean synthetic beats: a detector that misses
//   1 in 200 here would be useless on real recordings);
//   median |time error| <= 10 ms (one sample at 130 Hz is 7.7 ms; RR features need beat times a
//   few ms apart at most).
// With the PhysioNet/CinC 2017 data (SF_CINC2017), which has no beat annotations: plausibility
// on the committed test part (rates in a physiological range for normal-rhythm records; AF's RR
// irregularity well above normal rhythm's, which is what the model's RR stream is for).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { beatModalities, beatsFromEcg, BEAT_POINTS, BeatTracker, detectBeats, readWfdb, rrFromEcg, SensorformerError } from '../../web/src/index.js';
import { beatWaveforms, DEFAULT_BEAT_GRID } from '../../web/src/qrs.js';
import { createPhysiology } from '../../web/src/simulator/physiology.js';
import { matchBeats } from './beats.js';
import { prng } from './prng.js';

const MIN_SE_PPV = 0.995;
const MAX_MEDIAN_ERR_S = 0.01;
const match = (ref, det) => matchBeats(ref, det, 0.15);

// Six minutes of rest, walk and run (heart rates ~60 to ~170 bpm) from a seeded simulated strap.
function synthetic(seed, fs, seconds = 360) {
  const ph = createPhysiology({ seed, activities: [{ activity: 'rest', duration: seconds / 3 }, { activity: 'walk', duration: seconds / 3 }, { activity: 'run', duration: seconds / 3 }] });
  const x = new Float32Array(Math.floor(seconds * fs));
  for (let i = 0; i < x.length; i++) x[i] = ph.ecgAt(i / fs);
  return { x, beats: Array.from(ph.beats(0.3, seconds - 0.3)) };
}

test('simulated ECG at 130 and 300 Hz, either polarity: beats within 150 ms, Se and PPV >= 99.5 %, median error <= 10 ms', () => {
  for (const seed of [1, 2, 3]) {
    for (const fs of [130, 300]) {
      const { x, beats } = synthetic(seed, fs);
      for (const sign of [1, -1]) {
        const { times, rr, indices } = detectBeats(sign > 0 ? x : x.map((v) => -v), fs);
        assert.equal(indices.length, times.length);
        assert.equal(rr.length, times.length - 1);
        const m = match(beats, Array.from(times).filter((t) => t >= 0.3 && t < x.length / fs - 0.3));
        const what = `seed ${seed}, ${fs} Hz, polarity ${sign}: Se ${m.se}, PPV ${m.ppv}, median ${m.median} s`;
        assert.ok(m.se >= MIN_SE_PPV && m.ppv >= MIN_SE_PPV, what);
        assert.ok(m.median <= MAX_MEDIAN_ERR_S, what);
      }
    }
  }
});

test('times: startTime + index / rateHz; rr: the differences', () => {
  const { x } = synthetic(4, 130, 30);
  const a = detectBeats(x, 130), b = detectBeats(x, 130, { startTime: 1764460800.25 });
  assert.deepEqual(b.indices, a.indices);
  b.indices.forEach((i, k) => assert.equal(b.times[k], 1764460800.25 + i / 130));
  b.rr.forEach((v, k) => assert.equal(v, b.times[k + 1] - b.times[k]));
});

test('missing samples: no beat inside a missing run or within 150 ms of it, the beats around it still found', () => {
  const { x, beats } = synthetic(5, 300, 60);
  const y = Array.from(x, (v, i) => (i >= 300 * 20 && i < 300 * 23 ? null : v));  // 20-23 s missing
  const { times } = detectBeats(y, 300);
  assert.ok(Array.from(times).every((t) => t < 20 - 0.15 || t >= 23 + 0.15), 'no beat in the missing run or within 150 ms of it');
  const outside = beats.filter((t) => t < 20 - 0.15 || t >= 23 + 0.15);
  const m = match(outside, Array.from(times).filter((t) => t >= 0.3 && t < 59.7));
  assert.ok(m.se >= 0.99 && m.ppv >= 0.99, `Se ${m.se}, PPV ${m.ppv}`);
});

test('a recording that starts with missing samples: its thresholds learnt on the samples received, so no noise peak after the gap is taken for a beat', () => {
  // Before, the learning phase ran over the held (flat) start: thresholds near 0, and a P or T
  // wave after a gap of 2 s or more taken as a beat now and then (PPV 0.986-0.990 here). The
  // simulator's beats after the gap are the reference, its first 150 ms excluded as in the test above.
  const seconds = 60;
  for (const seed of [1, 2, 5]) {
    for (const fs of [130, 300]) {
      const ph = createPhysiology({ seed, activities: [{ activity: 'walk' }] });
      const x = Array.from({ length: seconds * fs }, (_, i) => ph.ecgAt(i / fs));
      for (const gap of [3, 10, 17]) {
        const y = x.map((v, i) => (i < gap * fs ? null : v));
        const times = Array.from(detectBeats(y, fs).times).filter((t) => t < seconds - 0.3);
        const m = match(Array.from(ph.beats(gap + 0.15, seconds - 0.3)), times);
        assert.ok(m.se >= MIN_SE_PPV && m.ppv >= MIN_SE_PPV, `seed ${seed}, ${fs} Hz, first ${gap} s missing: Se ${m.se}, PPV ${m.ppv}`);
      }
    }
  }
  // without missing samples the learning phase is the first 2 s, as before: the CinC records'
  // beats (tools/af/prepare.mjs, the training data) do not change
});

test('+-Infinity samples are read as missing, as null and NaN are: the same beats, intervals and beat tokens, offline and live', () => {
  const { x } = synthetic(5, 300, 60);
  const [grid] = beatModalities({ modalities: [{ name: 'rr', patch_len: 4, mean: 0.8, std: 0.3 }, { name: 'beat', patch_len: 42, std: 0.25, rr_context: 2 }] });
  // single samples and a run, some right next to beats (a beat's waveform reaches 0.384 s after it)
  const at = [1000, 1001, 5003, 9000, ...Array.from({ length: 150 }, (_, i) => 12000 + i), 15555];
  const infinite = Array.from(x), missing = Array.from(x);
  at.forEach((i, k) => { infinite[i] = k % 2 ? Infinity : -Infinity; missing[i] = NaN; });
  const ecg = (samples) => ({ sensor: 0, placement: 'chest', rateHz: 300, samples });
  assert.deepEqual(detectBeats(infinite, 300), detectBeats(missing, 300));
  assert.deepEqual(rrFromEcg(ecg(infinite)), rrFromEcg(ecg(missing)));
  const offline = beatsFromEcg(ecg(infinite), null, grid);
  assert.deepEqual(offline, beatsFromEcg(ecg(missing), null, grid));
  assert.ok(offline.samples.every((v) => Number.isNaN(v) || Number.isFinite(v)) && offline.samples.some(Number.isNaN), 'NaN where the waveform or an interval crosses them');
  const live = (samples) => {
    const tracker = new BeatTracker({ rateHz: 300, grid });
    const chunks = [];
    for (let i = 0; i < samples.length; i += 97) chunks.push(tracker.push(samples.slice(i, i + 97)));
    return [...chunks, tracker.end()];
  };
  assert.deepEqual(live(infinite), live(missing));
});

test('rrFromEcg: an event per beat after the first, the interval before it; the one interval across a gap NaN (the default), or left out with gaps: leave-out', () => {
  const { x } = synthetic(5, 300, 60);
  const samples = Array.from(x, (v, i) => (i >= 300 * 20 && i < 300 * 23 ? NaN : v));  // 20-23 s missing
  const start = 1764460800.25;
  const ecg = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 300, startTime: start, samples };
  const missing = rrFromEcg(ecg);
  assert.deepEqual(rrFromEcg(ecg, null, { gaps: 'missing' }), missing, 'the default');
  const beats = detectBeats(samples, 300, { startTime: start });
  assert.equal(missing.modality, 'rr');
  assert.equal(missing.sensor, 0);
  assert.equal(missing.placement, 'chest');
  assert.deepEqual(Array.from(missing.timestamps), Array.from(beats.times).slice(1));
  const across = Array.from(missing.samples, (_, k) => beats.times[k] < start + 20 && beats.times[k + 1] > start + 23);
  assert.deepEqual(Array.from(missing.samples, (v) => Number.isNaN(v)), across, 'NaN exactly where the two beats straddle the missing run');
  assert.equal(across.filter(Boolean).length, 1);
  missing.samples.forEach((v, k) => Number.isNaN(v) || assert.equal(v, beats.times[k + 1] - beats.times[k]));
  // leave-out: the same events but the unknown one
  for (const rr of [rrFromEcg(ecg, null, { gaps: 'leave-out' }), rrFromEcg(ecg, beats, { gaps: 'leave-out' })]) {
    assert.deepEqual(Array.from(rr.timestamps), Array.from(beats.times).slice(1).filter((_, k) => !across[k]));
    assert.deepEqual(Array.from(rr.samples), Array.from(missing.samples).filter((_, k) => !across[k]));
  }
  // without a gap both are the same stream
  const whole = { ...ecg, samples: Array.from(x) };
  assert.deepEqual(rrFromEcg(whole), rrFromEcg(whole, null, { gaps: 'leave-out' }));
  const bad = (fn) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /rrFromEcg/.test(e.message));
  bad(() => rrFromEcg(null));
  bad(() => rrFromEcg({ sensor: 0, placement: 'chest', timestamps: [1, 2], samples: [1, 2] }));
  bad(() => rrFromEcg(ecg, null, { gaps: 'zero' }));
});

test('beatWaveforms matches the training\'s definition (tools/af/afmodel.py beat_waveforms) on its fixture', () => {
  // tests/fixtures/beat_waveforms.json is made by tools/af/make_beat_fixture.py from a synthetic
  // signal with gaps, beats at both edges and rates of 300, 130 and 250 Hz. The grid positions and
  // the interpolation are the same float64 operations in the same order, so the same samples are
  // missing; only the mean's summation order differs (numpy sums pairwise): 1e-12 mV covers that.
  const fixture = JSON.parse(readFileSync(new URL('../fixtures/beat_waveforms.json', import.meta.url), 'utf8'));
  assert.equal(fixture.points, BEAT_POINTS);
  for (const c of fixture.cases) {
    const got = beatWaveforms(c.samples, c.rateHz, c.indices);
    assert.equal(got.length, c.waveforms.length);
    let missing = 0;
    c.waveforms.forEach((want, i) => {
      if (want === null) { missing++; assert.ok(Number.isNaN(got[i]), `${c.rateHz} Hz point ${i}: missing in the fixture, ${got[i]} here`); }
      else assert.ok(Math.abs(got[i] - want) <= 1e-12, `${c.rateHz} Hz point ${i}: ${got[i]} vs ${want}`);
    });
    assert.ok(missing > 0 && missing < c.waveforms.length / 2, 'the fixture exercises both the missing and the present points');
  }
});

test('beatsFromEcg with each beat modality train_af.py trains matches afmodel.beat_stream on its fixture: the 40-point grid, with the RR intervals before each beat, twice as fine', () => {
  // The same fixture's "streams" (tools/af/make_beat_fixture.py): afmodel.beat_stream with each of
  // train_af.BEAT_VARIANTS' modalities, read here through beatModalities from the same modality
  // entries as a model file holds them. Waveform points: 1e-12 mV as above (the mean's summation
  // order). RR points: the same integer index difference / rate, scaled by the same two float64
  // operations, so also within 1e-12; which intervals are unknown (NaN: before the first beat,
  // across a gap) must agree exactly.
  const fixture = JSON.parse(readFileSync(new URL('../fixtures/beat_waveforms.json', import.meta.url), 'utf8'));
  assert.deepEqual(Object.keys(fixture.modalities), ['beats', 'beats-rr', 'beats-fine']);
  for (const [variant, modalities] of Object.entries(fixture.modalities)) {
    const [grid] = beatModalities({ modalities });
    let unknownRr = 0, knownRr = 0;
    for (const c of fixture.cases) {
      const ecg = { sensor: 0, placement: 'chest', rateHz: c.rateHz, samples: c.samples };
      const times = c.indices.map((i) => i / c.rateHz);
      const got = beatsFromEcg(ecg, { indices: c.indices, times }, grid);
      const want = c.streams[variant];
      const what = `${variant}, ${c.rateHz} Hz`;
      assert.equal(got.modality, modalities[0].name);
      assert.equal(got.samples.length, want.length, what);
      assert.equal(got.samples.length, c.indices.length * modalities[0].patch_len, what);
      times.forEach((t, j) => assert.ok(got.timestamps.subarray(j * grid.patchLen, (j + 1) * grid.patchLen).every((u) => u === t), `${what}: beat ${j}'s events at its time`));
      want.forEach((v, i) => {
        const rrPoint = i % grid.patchLen >= grid.points;
        if (v === null) assert.ok(Number.isNaN(got.samples[i]), `${what} point ${i}: missing in the fixture, ${got.samples[i]} here`);
        else assert.ok(Math.abs(got.samples[i] - v) <= 1e-12, `${what} point ${i}: ${got.samples[i]} vs ${v}`);
        if (rrPoint) v === null ? unknownRr++ : knownRr++;
      });
    }
    if (grid.rrContext) assert.ok(unknownRr > 0 && knownRr > unknownRr, `${variant}: the fixture exercises known and unknown intervals (${knownRr}, ${unknownRr})`);
  }
  // the shipped grid: the default one, and beatsFromEcg's output without a grid
  const [plain] = beatModalities({ modalities: fixture.modalities.beats });
  assert.deepEqual({ ...plain }, { ...DEFAULT_BEAT_GRID });
});

test('beatModalities: a model\'s beat streams and their grids; what a model file may not ask is BAD_FORMAT naming the modality and key', () => {
  const rr = { name: 'rr', patch_len: 4, mean: 0.8, std: 0.3 };
  const config = (...beats) => ({ modalities: [{ name: 'ecg', patch_len: 25 }, rr, ...beats] });
  assert.deepEqual(beatModalities(config()), []);
  assert.deepEqual(beatModalities(config({ name: 'heartbeat', patch_len: 40 }, { name: 'beats', patch_len: 40 })), [], 'only "beat" and "beat_..." are beat streams');
  const [a, b] = beatModalities(config({ name: 'beat', patch_len: 40, std: 0.25 }, { name: 'beat_80x8ms_rr2', patch_len: 82, std: 0.25, rr_context: 2, grid_first: -30, grid_step_s: 0.008 }));
  assert.deepEqual({ ...a }, { ...DEFAULT_BEAT_GRID });
  // hand-computed: 80 points 8 ms apart from -0.24 s; RR written as 0.25 / 0.3 * (RR - 0.8)
  assert.deepEqual({ ...b }, { modality: 'beat_80x8ms_rr2', patchLen: 82, points: 80, first: -30, stepS: 0.008, rrContext: 2, rrMean: 0.8, rrScale: 0.25 / 0.3 });
  const bad = (beat, pattern, modalities = config(beat).modalities) => assert.throws(() => beatModalities({ modalities }),
    (e) => e instanceof SensorformerError && e.code === 'BAD_FORMAT' && e.message.startsWith(`beat modality "${beat.name}": `) && pattern.test(e.message));
  bad({ name: 'beat', patch_len: 42, rr_context: 2 }, /needs the model's "rr" modality/, [{ name: 'ecg' }, { name: 'beat', patch_len: 42, rr_context: 2 }]);
  for (const r of [-1, 1.5, 17, '2']) bad({ name: 'beat', patch_len: 42, rr_context: r }, /"rr_context" must be an integer from 0 to 16/);
  for (const p of [2, 1, undefined, 40.5]) bad({ name: 'beat_x', patch_len: p, rr_context: 2 }, /"patch_len" .* must be an integer above "rr_context"/);
  for (const f of [1.5, 20000, '-15']) bad({ name: 'beat', patch_len: 40, grid_first: f }, /"grid_first" must be an integer/);
  for (const g of [0, -0.01, 2, NaN, '0.016']) bad({ name: 'beat', patch_len: 40, grid_step_s: g }, /"grid_step_s" must be a number of seconds/);
  // a grid that is not one of beatModalities' is refused where one is taken
  const ecg = { sensor: 0, placement: 'chest', rateHz: 300, samples: new Float64Array(900) };
  for (const g of [{ patchLen: 42 }, { ...b, patchLen: 81 }, 'beat'])
    assert.throws(() => beatsFromEcg(ecg, null, g), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /grid must be one of beatModalities/.test(e.message));
  assert.throws(() => new BeatTracker({ rateHz: 300, grid: { patchLen: 3 } }), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /grid must be one of beatModalities/.test(e.message));
});

test('beatModalities of an ensemble\'s config: each grid scaled by its own member\'s rr; one name with two grids, or a member\'s bad grid, is BAD_FORMAT naming the member', () => {
  // Two members with different rr normalisations (0.8 / 0.3 and 0.9 / 0.2): model.config's
  // merged modalities keep the first member's "rr", but each grid must read its own member's.
  const member = (rr, ...beats) => ({ modalities: [{ name: 'ecg', patch_len: 40 }, { name: 'rr', patch_len: 4, ...rr }, ...beats] });
  const a = member({ mean: 0.8, std: 0.3 }, { name: 'beat_40x16ms_rr2', patch_len: 42, std: 0.25, rr_context: 2 });
  const b = member({ mean: 0.9, std: 0.2 }, { name: 'beat_80x8ms_rr2', patch_len: 82, std: 0.5, rr_context: 2, grid_first: -30, grid_step_s: 0.008 });
  const merged = { modalities: [...a.modalities, b.modalities[2]], ensemble: { combine: 'mean_probability', members: [a, b] } };
  const grids = beatModalities(merged);
  assert.deepEqual(grids.map((g) => [g.modality, g.rrMean, g.rrScale]), [
    ['beat_40x16ms_rr2', 0.8, 0.25 / 0.3],  // hand-computed: beat std / rr std of member 0
    ['beat_80x8ms_rr2', 0.9, 0.5 / 0.2],    // of member 1 (the merged config's "rr" would give 0.8, 0.5 / 0.3)
  ]);
  // the same grid in two members is given once
  assert.deepEqual(beatModalities({ ...merged, ensemble: { members: [a, b, a] } }).map((g) => g.modality), ['beat_40x16ms_rr2', 'beat_80x8ms_rr2']);
  const refused = (members, pattern) => assert.throws(() => beatModalities({ modalities: [], ensemble: { members } }),
    (e) => e instanceof SensorformerError && e.code === 'BAD_FORMAT' && pattern.test(e.message));
  const sameName = member({ mean: 0.9, std: 0.2 }, { ...b.modalities[2], name: 'beat_40x16ms_rr2' });
  refused([a, sameName], /^ensemble member 1: beat modality "beat_40x16ms_rr2" has another grid than member 0's/);
  // one name, the same grid, but another rr normalisation: the intervals would be scaled apart
  refused([a, member({ mean: 0.9, std: 0.2 }, a.modalities[2])], /^ensemble member 1: beat modality "beat_40x16ms_rr2" has another grid than member 0's/);
  refused([a, member({}, { name: 'beat', patch_len: 40, grid_step_s: 0 })], /^ensemble member 1: beat modality "beat": "grid_step_s" must be a number/);
});

test('beatsFromEcg: BEAT_POINTS events per detected beat at its time; the window around each R peak', () => {
  const { x } = synthetic(5, 300, 60);
  const start = 1764460800.25;
  const ecg = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 300, startTime: start, samples: x };
  const beats = detectBeats(x, 300, { startTime: start });
  const b = beatsFromEcg(ecg);
  assert.equal(b.modality, 'beat');
  assert.equal(b.placement, 'chest');
  assert.equal(b.timestamps.length, beats.times.length * BEAT_POINTS);
  assert.equal(b.samples.length, b.timestamps.length);
  for (let j = 0; j < beats.times.length; j++) {
    for (let k = 0; k < BEAT_POINTS; k++) assert.equal(b.timestamps[j * BEAT_POINTS + k], beats.times[j]);
    const row = b.samples.subarray(j * BEAT_POINTS, (j + 1) * BEAT_POINTS);
    const present = Array.from(row).filter((v) => !Number.isNaN(v));
    assert.ok(Math.abs(present.reduce((a, v) => a + v, 0)) < 1e-9, 'each beat\'s present points have mean 0');
    // an independent reading at 300 Hz: grid point k is 4.8 (k - 15) samples from the beat,
    // interpolated linearly (continuous in the position, so 1e-9 mV covers the rounding of 4.8)
    const at = (u) => x[Math.floor(u)] + (x[Math.floor(u) + 1] - x[Math.floor(u)]) * (u - Math.floor(u));
    const raw = Array.from({ length: BEAT_POINTS }, (_, k) => beats.indices[j] + 4.8 * (k - 15)).map((u) => (u >= 0 && u + 1 < x.length ? at(u) : NaN));
    const inside = raw.filter((v) => !Number.isNaN(v));
    const mean = inside.reduce((a, v) => a + v, 0) / inside.length;
    raw.forEach((v, k) => assert.ok(Number.isNaN(v) ? Number.isNaN(row[k]) : Math.abs(row[k] - (v - mean)) < 1e-9, `beat ${j} point ${k}`));
    if (present.length < BEAT_POINTS) continue;
    assert.ok(row[15] > row[5] && row[15] > row[30], `beat ${j}: the R peak stands above the P and T regions`);
  }
  // the same with the detection given
  assert.deepEqual(beatsFromEcg(ecg, beats), b);
  const bad = (fn) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /beatsFromEcg/.test(e.message));
  bad(() => beatsFromEcg(null));
  bad(() => beatsFromEcg({ sensor: 0, placement: 'chest', timestamps: [1, 2], samples: [1, 2] }));
});

// Feeds x to a BeatTracker in chunks of the given sizes (cycled), checking the watermark's rules:
// each chunk's beats at or after the previous watermark, the watermark never back and at least
// `hold` behind the newest sample. Returns the beats' times and waveforms.
function track(x, fs, sizes, start = 0, options = {}) {
  const tracker = new BeatTracker({ rateHz: fs, startTime: start, ...options });
  const size = options.grid?.patchLen ?? BEAT_POINTS;
  const times = [], waves = [];
  let until = -Infinity, at = 0, c = 0;
  while (at < x.length) {
    const n = sizes[c++ % sizes.length];
    const chunk = tracker.push(x.subarray(at, at + n));
    at += n;
    assert.equal(chunk.samples.length, chunk.timestamps.length);
    for (let j = 0; j < chunk.timestamps.length; j += size) {
      assert.ok(chunk.timestamps[j] >= until, `a beat at ${chunk.timestamps[j]} before the watermark ${until}`);
      times.push(chunk.timestamps[j]);
      waves.push(chunk.samples.subarray(j, j + size));
    }
    const newest = start + Math.min(at, x.length) / fs, hold = options.hold ?? 2.5;
    assert.ok(chunk.until >= until && chunk.until <= Math.max(start, newest - hold) + 1e-9);
    // it lags the hold by less than a detection step (0.25 s of ECG; qrs.js DETECT_EVERY_S) once there is one
    if (newest - start > hold + 0.25) assert.ok(chunk.until > newest - hold - 0.25 - 1 / fs, `watermark ${chunk.until} with the ECG at ${newest}`);
    until = chunk.until;
  }
  return { times, waves, tracker };
}

// A hard synthetic lead: Gaussian QRS (12 ms) and T waves at RR 0.4-1.2 s, 1.5 mV of 0.2 Hz
// baseline wander and noise of 0.3 mV sd (seeded), where thresholds matter.
function hardEcg(seed, fs, seconds) {
  const r = prng(seed), n = Math.floor(seconds * fs), x = new Float64Array(n);
  const beats = [];
  for (let t = 0.5 + r() * 0.5; t < seconds; t += 0.8 * (1 + 0.5 * (2 * r() - 1))) beats.push(t);
  for (let i = 0; i < n; i++) {
    let g = 0;
    for (let k = 0; k < 6; k++) g += r();
    x[i] = 1.5 * Math.sin(2 * Math.PI * 0.2 * i / fs) + 0.3 * (g - 3);
  }
  for (const b of beats) {
    for (let i = Math.max(0, Math.floor((b - 0.1) * fs)); i < Math.min(n, Math.ceil((b + 0.5) * fs)); i++) {
      const d = i / fs - b;
      x[i] += Math.exp(-0.5 * (d / 0.012) ** 2) + 0.25 * Math.exp(-0.5 * ((d - 0.3) / 0.05) ** 2);
    }
  }
  return x;
}

test('BeatTracker: the same beats however the ECG is cut into pushes (detections on a fixed grid of the stream)', () => {
  // Before, a detection ran at the end of whichever push first reached 0.25 s of new ECG, so its
  // window (and thresholds) depended on the cuts: on this lead, pushes of 500 samples gave 141
  // beats (two false), of 2 or 7 samples 138, of 1 sample 139.
  const beatsOf = (x, fs, sizes) => {
    const tracker = new BeatTracker({ rateHz: fs });
    const times = [];
    let at = 0, k = 0;
    const take = (c) => { for (let j = 0; j < c.timestamps.length; j += BEAT_POINTS) times.push(c.timestamps[j]); };
    while (at < x.length) { const m = typeof sizes === 'function' ? sizes() : sizes[k++ % sizes.length]; take(tracker.push(x.subarray(at, at + m))); at += m; }
    take(tracker.end());
    return { times, late: tracker.late };
  };
  for (const fs of [130, 300]) {
    const x = hardEcg(7, fs, 90);
    const one = beatsOf(x, fs, [1]);
    assert.ok(one.times.length > 100, `${one.times.length} beats`);
    const r = prng(fs);
    for (const sizes of [[2], [7], [33], [73], [130], [500], [1, 499, 64], () => 1 + Math.floor(r() * 500)]) {
      const got = beatsOf(x, fs, sizes);
      assert.deepEqual(got, one, `${fs} Hz, pushes of ${typeof sizes === 'function' ? 'random sizes' : sizes}`);
    }
  }
});

test('BeatTracker after a gap longer than its window: the watermark reaches the gap, and the first beats after it are given, not counted late', () => {
  const fs = 130, x = hardEcg(3, fs, 30).map((v, i) => v - 1.5 * Math.sin(2 * Math.PI * 0.2 * i / fs));
  const tracker = new BeatTracker({ rateHz: fs });
  tracker.push(x);
  // the ECG is known missing up to 100 s: no beat before it can come, the watermark says so (before: it stayed at 27.4 s)
  assert.equal(tracker.push([], 100).until, 100 - 2.5);
  const after = tracker.push(x, 100);
  const end = tracker.end();
  const times = [...after.timestamps, ...end.timestamps].filter((_, j) => j % BEAT_POINTS === 0);
  const offline = Array.from(detectBeats(x, fs, { startTime: 100 }).times);
  const samples = (ts) => ts.map((t) => Math.round((t - 100) * fs));  // times computed two ways: compared as sample indices
  assert.deepEqual(samples(times), samples(offline), 'the beats after the gap are the offline detection\'s (before: its first 2 s were dropped as late)');
  assert.equal(tracker.late, 0);
  assert.equal(end.until, 100 + x.length / fs);
});

test('BeatTracker across an outage of 15-19 s: a detection window that starts inside it learns its thresholds after it, so every beat after it is a beat', () => {
  // A strap's notifications lost for 15-19 s (pushed as missing samples, as the feeder marks
  // them): the tracker's 20 s windows then start inside the gap. Before, one of these gave a
  // false beat after it (seed 1, 19 s: PPV 0.986). Pushed in 73-sample frames, as an H10 sends them.
  const fs = 130;
  for (const seed of [1, 2, 5]) {
    for (const gap of [15, 17, 19]) {
      const ph = createPhysiology({ seed, activities: [{ activity: 'walk' }] });
      const n = 90 * fs, x = Array.from({ length: n }, (_, i) => (i >= 30 * fs && i < (30 + gap) * fs ? null : ph.ecgAt(i / fs)));
      const tracker = new BeatTracker({ rateHz: fs });
      const times = [];
      const take = (c) => { for (let j = 0; j < c.timestamps.length; j += BEAT_POINTS) times.push(c.timestamps[j]); };
      for (let i = 0; i < n; i += 73) take(tracker.push(x.slice(i, i + 73)));
      take(tracker.end());
      const m = match(Array.from(ph.beats(30 + gap + 0.15, 89.7)), times.filter((t) => t >= 30 + gap && t < 89.7));
      assert.ok(m.se >= MIN_SE_PPV && m.ppv >= MIN_SE_PPV, `seed ${seed}, ${gap} s outage: Se ${m.se}, PPV ${m.ppv}`);
      assert.equal(tracker.late, 0);
    }
  }
});

test('BeatTracker: the beats of a live ECG, chunk by chunk: the offline detection\'s, its waveforms, a watermark that only moves on', () => {
  for (const seed of [1, 2]) {
    for (const fs of [130, 300]) {
      const { x, beats } = synthetic(seed, fs, 120);
      const start = 1764460800.5;
      const offline = beatsFromEcg({ sensor: 0, placement: 'chest', rateHz: fs, startTime: start, samples: x });
      const final = Array.from(new Set(offline.timestamps)).filter((t) => t < start + x.length / fs - 2.5);
      // chunk sizes: a strap's ECG notification (73 at 130 Hz), one second, uneven ones, one sample
      for (const sizes of [[73], [fs], [1, 500, 17, 2999], [1]]) {
        const { times, waves, tracker } = track(x, fs, sizes, start);
        const what = `seed ${seed}, ${fs} Hz, chunks ${sizes}`;
        // the simulated strap's own beats: as detectBeats' test holds them
        const m = match(beats.filter((t) => t < x.length / fs - 2.5), times.map((t) => t - start));
        assert.ok(m.se >= MIN_SE_PPV && m.ppv >= MIN_SE_PPV, `${what}: Se ${m.se}, PPV ${m.ppv}`);
        // the offline detection's beats, to the sample (clean ECG: the thresholds settle the same)
        assert.equal(times.length, final.length, what);
        times.forEach((t, j) => assert.ok(Math.abs(t - final[j]) <= 1.01 / fs, `${what}: beat ${j} at ${t}, offline ${final[j]}`));
        // the same waveform where the beat is the same sample (float64 positions differ in the
        // last bits: an index within the window vs within the recording; 1e-9 mV)
        times.forEach((t, j) => {
          if (t !== final[j]) return;
          const want = offline.samples.subarray(j * BEAT_POINTS, (j + 1) * BEAT_POINTS);
          want.forEach((v, k) => assert.ok(Math.abs(waves[j][k] - v) <= 1e-9, `${what}: beat ${j} point ${k}`));
        });
        assert.equal(tracker.late, 0, what);
      }
    }
  }
});

test('BeatTracker with a grid that holds the RR intervals before each beat: the offline tokens (beatsFromEcg), intervals across gaps unknown', () => {
  const fixture = JSON.parse(readFileSync(new URL('../fixtures/beat_waveforms.json', import.meta.url), 'utf8'));
  for (const variant of ['beats-rr', 'beats-fine']) {
    const [grid] = beatModalities({ modalities: fixture.modalities[variant] });
    for (const [fs, restart] of [[130, 'beats'], [300, 'beats'], [130, 'flat'], [300, 'flat']]) {
      const { x } = synthetic(4, fs, 120);
      // 3 s of missing samples at 40 s (NaN in the chunks) and 30 s lost at 70 s (a later
      // startTime: longer than the tracker's window); offline, both are NaN samples. After the
      // long gap the ECG starts again with beats (the tracker's first 2 s then hold beats it drops
      // as late) or flat for 3 s (no beat until the detector has learnt its thresholds).
      const gapped = Float64Array.from(x);
      gapped.fill(NaN, 40 * fs, 43 * fs);
      gapped.fill(NaN, 70 * fs, 100 * fs);
      if (restart === 'flat') gapped.fill(0, 100 * fs, 103 * fs);
      const offline = beatsFromEcg({ sensor: 0, placement: 'chest', rateHz: fs, samples: gapped }, null, grid);
      for (const sizes of [[73], [1, 500, 17, 2999]]) {
        const tracker = new BeatTracker({ rateHz: fs, grid });
        const times = [], tokens = [];
        const take = (c) => {
          for (let j = 0; j < c.timestamps.length; j += grid.patchLen) times.push(c.timestamps[j]), tokens.push(c.samples.slice(j, j + grid.patchLen));
        };
        for (let at = 0, c = 0; at < 70 * fs; c++) {
          const n = Math.min(sizes[c % sizes.length], 70 * fs - at);
          take(tracker.push(gapped.subarray(at, at + n)));
          at += n;
        }
        take(tracker.push(gapped.subarray(100 * fs), 100));
        take(tracker.end());
        const what = `${variant}, ${fs} Hz, chunks ${sizes}, restart ${restart}`;
        // Beats and their neighbours found at the same samples as offline: the same token (its
        // waveform within 1e-9 mV as above; its intervals the same index differences, exactly).
        const at = new Map(Array.from({ length: offline.timestamps.length / grid.patchLen }, (_, j) => [offline.timestamps[j * grid.patchLen], j]));
        let compared = 0, unknown = 0;
        times.forEach((t, j) => {
          const k = at.get(t);
          if (k === undefined || j < grid.rrContext || at.get(times[j - 1]) !== k - 1 || at.get(times[j - 2]) !== k - 2) return;
          const want = offline.samples.subarray(k * grid.patchLen, (k + 1) * grid.patchLen);
          want.forEach((v, i) => assert.ok(Number.isNaN(v) ? Number.isNaN(tokens[j][i]) : Math.abs(tokens[j][i] - v) <= 1e-9, `${what}: beat at ${t} point ${i}: ${tokens[j][i]} vs ${v}`));
          compared++;
        });
        assert.ok(compared >= 0.9 * times.length, `${what}: ${compared} of ${times.length} beats compared`);
        // every interval that spans a gap is unknown
        times.forEach((t, j) => {
          for (let c = 0; c < grid.rrContext && j - c >= 1; c++) {
            const a = times[j - c - 1], b = times[j - c];
            if ((a < 43 && b > 40) || (a < 100 && b > 70)) assert.ok(Number.isNaN(tokens[j][grid.points + c]), `${what}: the interval ${a}-${b} spans a gap`), unknown++;
          }
        });
        assert.ok(unknown >= 2 * grid.rrContext, `${what}: ${unknown} intervals across the gaps`);
        assert.ok(tokens.slice(0, 1).every((tok) => tok.subarray(grid.points).every(Number.isNaN)), `${what}: the first beat has no interval before it`);
      }
    }
  }
});

test('BeatTracker: a gap (startTime later than the next sample) gives no beat in it, the beats before it and the beats after it', () => {
  const fs = 130;
  const { x, beats } = synthetic(3, fs, 90);
  const tracker = new BeatTracker({ rateHz: fs });
  const times = [];
  const take = (c) => { for (let j = 0; j < c.timestamps.length; j += BEAT_POINTS) times.push(c.timestamps[j]); };
  take(tracker.push(x.subarray(0, 30 * fs)));
  take(tracker.push(x.subarray(36 * fs, 50 * fs), 36));        // 6 s lost: within the window
  take(tracker.push(x.subarray(90 * fs - 1), 90 - 1 / fs));    // 40 s lost: longer than the window
  take(tracker.push(new Float32Array(0)));
  assert.ok(times.every((t) => !(t > 30 - 0.15 && t < 36 + 0.15) && !(t > 50 - 0.15 && t < 90)), 'no beat in a gap or within 150 ms of it');
  // Before either gap, every beat up to 150 ms before it (a long gap's beats are not lost to the
  // tracker's hold); after a gap, the detector's first 2 s learn thresholds.
  const expected = beats.filter((t) => (t < 30 - 0.15) || (t > 36 + 2.1 && t < 50 - 0.15));
  const m = match(expected, times.filter((t) => !(t > 36 - 0.2 && t < 36 + 2.1)));
  assert.ok(m.se >= MIN_SE_PPV && m.ppv >= MIN_SE_PPV, `Se ${m.se}, PPV ${m.ppv}`);
  assert.ok(tracker.until >= 50 - 1e-9, `the watermark reaches past the data before the long gap: ${tracker.until}`);
  assert.ok(times.some((t) => t > 50 - 2.5 && t < 50 - 0.15), 'the beats of the last 2.5 s before the long gap are given');
  const bad = (fn, pattern) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message));
  bad(() => tracker.push(x.subarray(0, 10), 80), /startTime must be at or after/);
  bad(() => tracker.push(null), /samples must be an array/);
  bad(() => new BeatTracker(), /rateHz is required/);
  bad(() => new BeatTracker({ rateHz: 20 }), /rateHz must be/);
  bad(() => new BeatTracker({ rateHz: 130, seconds: 8, hold: 3 }), /hold \(3 s\) must be at most a quarter/);
  bad(() => new BeatTracker({ rateHz: 130, window: 8 }), /unknown option "window"/);
});

test('BeatTracker: a beat found only after its watermark is dropped as late, counted, and the interval across it is unknown', () => {
  // The ECG's amplitude falls to 15 % at 40 s (a strap slipping): thresholds learnt on the large
  // beats miss the small ones until the window has moved past the step; the window that relearns
  // then finds small beats the watermark has already passed. They are not given (they would come
  // out of order) and the interval from the last beat given before them to the next one given
  // spans them: NaN, not an RR interval many beats long.
  const [grid] = beatModalities({ modalities: [{ name: 'rr', patch_len: 4, mean: 0.8, std: 0.3 }, { name: 'beat', patch_len: 42, std: 0.25, rr_context: 2 }] });
  for (const fs of [130, 300]) {
    const ph = createPhysiology({ seed: 4, activities: [{ activity: 'rest', duration: 100 }] });
    const x = Float64Array.from({ length: 100 * fs }, (_, i) => ph.ecgAt(i / fs) * (i < 40 * fs ? 1 : 0.15));
    const truth = Array.from(ph.beats(0, 100));
    const tracker = new BeatTracker({ rateHz: fs, grid });
    const times = [], rr = [];
    const take = (c) => { for (let j = 0; j < c.timestamps.length; j += grid.patchLen) times.push(c.timestamps[j]), rr.push(c.samples.slice(j + grid.points, j + grid.patchLen)); };
    for (let at = 0; at < x.length; at += fs / 2) take(tracker.push(x.subarray(at, at + fs / 2)));
    take(tracker.end());
    const what = `${fs} Hz`;
    assert.ok(tracker.late >= 1, `${what}: late beats counted (${tracker.late})`);
    // every beat given is a real one, in order
    assert.ok(times.every((t, j) => (j === 0 || t > times[j - 1]) && truth.some((b) => Math.abs(b - t) <= 0.15)), `${what}: beats given are real, in order`);
    const b = times.findIndex((t) => t > 40), a = b - 1;
    assert.ok(a > 0 && truth.some((t) => t > times[a] + 0.15 && t < times[b] - 0.15), `${what}: beats between ${times[a]} and ${times[b]} were not given`);
    const scaled = (dt) => grid.rrScale * (dt - grid.rrMean);
    // Across the dropped beats: unknown; the interval before it moves back one place unchanged.
    assert.ok(Number.isNaN(rr[b][0]), `${what}: the interval ${times[a]}-${times[b]} spans late beats: ${rr[b][0]}`);
    assert.equal(rr[b][1], rr[a][0]);
    assert.ok(Math.abs(rr[a][0] - scaled(times[a] - times[a - 1])) <= 1e-9, `${what}: the interval before the step`);
    // After it: the next interval known again, the one across the late beats still unknown.
    assert.ok(Math.abs(rr[b + 1][0] - scaled(times[b + 1] - times[b])) <= 1e-9 && Number.isNaN(rr[b + 1][1]), `${what}: after the late beats`);
    // every other interval is the one between the beats given
    let known = 0;
    for (let j = 1; j < times.length; j++) {
      if (j === b) continue;
      assert.ok(Math.abs(rr[j][0] - scaled(times[j] - times[j - 1])) <= 1e-9, `${what}: beat ${times[j]}`), known++;
    }
    assert.ok(known >= 90, `${what}: ${known} intervals known`);
  }
});

// Random ECG (values, missing samples, infinities and float32 extremes; rates at and past the
// detector's bounds; chunks of any size): every function either returns what it promises or throws
// a SensorformerError. Seeded (FC_SEED explores others; a failure prints its seed and input).
test('random input: beats in order inside the signal, intervals > 0 or NaN, tokens finite or NaN, a tracker\'s output in order; otherwise a SensorformerError', () => {
  fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 0x5eed) });
  // The samples: uniform noise in +-5 mV from a seeded generator (fast-check's doubles favour
  // values near 0 and the extremes: a flat line, nothing to detect), a fraction of them special.
  const SPECIAL = [NaN, null, Infinity, -Infinity, 3.4e38, -1e300, 0];
  const samples = fc.record({ n: fc.integer({ min: 0, max: 4000 }), seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }), special: fc.constantFrom(0, 0.001, 0.02, 0.3) })
    .map(({ n, seed, special }) => {
      const next = prng(seed);
      return Array.from({ length: n }, () => (next() < special ? SPECIAL[Math.floor(next() * SPECIAL.length)] : 10 * next() - 5));
    });
  const input = fc.record({ rate: fc.constantFrom(50, 130, 300, 1000, 49, 1e5 + 1), values: samples, sizes: fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 8 }) });
  const [grid] = beatModalities({ modalities: [{ name: 'rr', patch_len: 4, mean: 0.8, std: 0.3 }, { name: 'beat', patch_len: 42, std: 0.25, rr_context: 2 }] });
  const typed = (f) => {
    try {
      return f();
    } catch (e) {
      assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e?.stack ?? e}`);
      return null;
    }
  };
  const finiteOrNaN = (v) => Number.isNaN(v) || Number.isFinite(v);
  let detected = 0;
  fc.assert(fc.property(input, ({ rate, values, sizes }) => {
    const d = typed(() => detectBeats(values, rate));
    if (d) {
      d.indices.forEach((i, k) => assert.ok(i >= 0 && i < values.length && (k === 0 || i > d.indices[k - 1]) && Number.isFinite(d.times[k]), `beat ${k} at ${i}`));
      d.rr.forEach((r) => assert.ok(Number.isNaN(r) || (r > 0 && Number.isFinite(r)), `rr ${r}`));  // NaN: a missing sample between the two beats
      detected += d.indices.length;
    }
    const ecg = { sensor: 0, placement: 'chest', rateHz: rate, samples: values };
    const rr = typed(() => rrFromEcg(ecg));
    if (rr) rr.samples.forEach((v) => assert.ok(Number.isNaN(v) || (v > 0 && Number.isFinite(v)), `rrFromEcg ${v}`));
    const b = typed(() => beatsFromEcg(ecg, null, grid));
    if (b) assert.ok(b.samples.every(finiteOrNaN) && b.samples.length % grid.patchLen === 0, 'beatsFromEcg');
    const tracker = typed(() => new BeatTracker({ rateHz: rate, grid }));
    assert.equal(tracker === null, d === null, 'the tracker takes the rates the detector takes');
    if (!tracker) return;
    let last = -Infinity, until = -Infinity;
    const check = (c) => {
      assert.ok(c.timestamps.length === c.samples.length && c.timestamps.length % grid.patchLen === 0, 'whole tokens');
      for (const t of c.timestamps) assert.ok(t >= last, `time ${t} after ${last}`), last = t;
      assert.ok(c.samples.every(finiteOrNaN), 'tracker values finite or NaN');
      assert.ok(c.until >= until, `watermark ${c.until} after ${until}`);
      until = c.until;
    };
    for (let at = 0, k = 0; at < values.length; k++) {
      const n = Math.max(1, sizes[k % sizes.length]);
      check(tracker.push(values.slice(at, at + n)));
      at += n;
    }
    check(tracker.end());
  }), { numRuns: 60 });
  assert.ok(detected > 100, `beats detected in the random signals: ${detected} (the checks above saw some)`);
});

test('nothing to detect: empty, all missing, shorter than two integration windows, a flat line', () => {
  for (const x of [[], new Float32Array(300).fill(NaN), new Float32Array(80), new Float32Array(3000).fill(5)])
    assert.equal(detectBeats(x, 300).times.length, 0);
});

test('bad arguments are INVALID_ARGUMENT naming them', () => {
  const bad = (fn, pattern) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message));
  bad(() => detectBeats(null, 300), /samples must be an array/);
  bad(() => detectBeats('ecg', 300), /samples must be an array/);
  for (const r of [0, 49, NaN, Infinity, '300', 1e6]) bad(() => detectBeats([1, 2, 3], r), /rateHz must be a number of Hz from 50/);
  bad(() => detectBeats([1, 2, 3], 300, { startTime: NaN }), /startTime must be a finite time/);
  bad(() => detectBeats([1, 2, 3], 300, { start: 0 }), /unknown option "start"/);
  // before: RangeError / TypeError
  bad(() => detectBeats({ length: -1 }, 300), /samples must be an array/);
  assert.throws(() => detectBeats({ length: 1e12 }, 300), (e) => e instanceof SensorformerError && e.code === 'RESOURCE_EXHAUSTED' && /more than 86400000/.test(e.message));
  const ecg = { sensor: 0, placement: 'chest', rateHz: 300, samples: new Float64Array(3000) };
  bad(() => beatsFromEcg(ecg, {}), /detected must be what detectBeats returns/);
  bad(() => rrFromEcg(ecg, {}), /detected must be what detectBeats returns/);
  bad(() => beatsFromEcg({ ...ecg, samples: undefined }, detectBeats(ecg.samples, 300)), /ecg\.samples must be an array/);
  bad(() => new BeatTracker({ rateHz: 300 }).push([1], 10n), /startTime must be at or after/);
  // samples that are not numbers, or past 1e100, are missing: one such value no longer wipes out
  // the beats of the whole lead (the zero-phase filter carried its overflow everywhere)
  const fs = 300, x = hardEcg(5, fs, 30).map((v, i) => v - 1.5 * Math.sin(2 * Math.PI * 0.2 * i / fs));
  const clean = detectBeats(x, fs).indices.length;
  assert.ok(clean > 25, `${clean} beats`);
  const spoilt = Array.from(x);
  spoilt[4500] = 1e300;
  spoilt[100] = Symbol('x');
  assert.equal(detectBeats(spoilt, fs).indices.length, clean);
});

const data = process.env.SF_CINC2017 ?? '';
const haveData = data !== '' && existsSync(join(data, 'REFERENCE.csv'));
test('CinC 2017 test part: plausible rates for normal rhythm, RR irregularity in AF', { skip: haveData ? false : (data === '' ? 'SF_CINC2017 is not set (the CinC 2017 training set folder)' : `${data} has no REFERENCE.csv`) }, async () => {
  const labels = new Map(readFileSync(join(data, 'REFERENCE.csv'), 'utf8').trimEnd().split('\n').slice(1).map((l) => l.trim().split(',')));
  const records = readFileSync(new URL('../../tools/af/split/test.txt', import.meta.url), 'utf8').trimEnd().split('\n');
  const byClass = { N: { plausible: 0, n: 0, cv: [] }, A: { plausible: 0, n: 0, cv: [] } };
  for (const r of records) {
    const c = byClass[labels.get(r)];
    if (!c) continue;
    const { streams: [ecg] } = await readWfdb(join(data, `${r}.hea`));  // the package's own WFDB reader
    const { rr } = detectBeats(ecg.samples, ecg.rateHz);
    const mean = rr.reduce((a, v) => a + v, 0) / Math.max(1, rr.length);
    const sd = Math.sqrt(rr.reduce((a, v) => a + (v - mean) ** 2, 0) / Math.max(1, rr.length));
    c.n++;
    if (rr.length >= 3 && 60 / mean >= 35 && 60 / mean <= 200) c.plausible++;
    c.cv.push(sd / mean);
  }
  const median = (v) => v.sort((a, b) => a - b)[v.length >> 1];
  const n = byClass.N, a = byClass.A;
  console.log(`# N: ${n.n} records, mean rate 35-200 bpm in ${(100 * n.plausible / n.n).toFixed(1)} %, median RR CV ${median(n.cv).toFixed(3)}; A: ${a.n} records, median RR CV ${median(a.cv).toFixed(3)}`);
  // Measured 99.1 % and CV 0.049 (N) vs 0.211 (A) at this commit; 97 % and a 2x ratio leave room.
  assert.ok(n.plausible / n.n >= 0.97, `${n.plausible} of ${n.n}`);
  assert.ok(median(a.cv) >= 2 * median(n.cv), `A ${median(a.cv)} vs N ${median(n.cv)}`);
});

test('CinC 2017 test part: BeatTracker, fed 1 s at a time, against detectBeats on the whole record', { skip: haveData ? false : (data === '' ? 'SF_CINC2017 is not set (the CinC 2017 training set folder)' : `${data} has no REFERENCE.csv`) }, async () => {
  // The first 300 records of the test part; the beats up to 2.5 s before each record's end (the
  // tracker's hold), matched within 150 ms (EC57's window, as above). The tracker restarts its thresholds in a trailing 20 s
  // window, the offline detector adapts over the whole record: most differences are beats the
  // offline thresholds lost after an artefact (a window later, the tracker finds them again).
  // Measured at this commit: Se 0.9988, PPV 0.9878 (11,170 beats offline, 11,295 tracked); 0.99
  // and 0.97 leave room.
  const records = readFileSync(new URL('../../tools/af/split/test.txt', import.meta.url), 'utf8').trimEnd().split('\n').slice(0, 300);
  let reference = 0, online = 0, matched = 0;
  for (const r of records) {
    const { streams: [ecg] } = await readWfdb(join(data, `${r}.hea`));
    const offline = detectBeats(ecg.samples, ecg.rateHz).times.filter((t) => t < ecg.samples.length / ecg.rateHz - 2.5);
    const tracker = new BeatTracker({ rateHz: ecg.rateHz });
    const times = [];
    for (let k = 0; k < ecg.samples.length; k += ecg.rateHz) {
      const c = tracker.push(ecg.samples.subarray(k, k + ecg.rateHz));
      for (let j = 0; j < c.timestamps.length; j += BEAT_POINTS) times.push(c.timestamps[j]);
    }
    const m = match(Array.from(offline), times);
    reference += offline.length, online += times.length, matched += Math.round(m.se * offline.length);
  }
  const se = matched / reference, ppv = matched / online;
  console.log(`# ${records.length} records: ${reference} beats offline, ${online} from the tracker; Se ${se.toFixed(4)}, PPV ${ppv.toFixed(4)}`);
  assert.ok(se >= 0.99 && ppv >= 0.97, `Se ${se}, PPV ${ppv}`);
});
