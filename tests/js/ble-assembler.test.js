// StreamBuffer / WindowAssembler: hand-computed grids, jitter, gaps, ring wraparound, event streams,
// hop windows, and windows that validate and run through the real model.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { StreamBuffer, WindowAssembler } from '../../web/src/ble/assembler.js';
import { normalizeWindow } from '../../web/src/window.js';
import { loadModel, SensorformerError } from '../../web/src/index.js';
import { prng } from './prng.js';

const ECG = { sensor: 0, modality: 'ecg', placement: 'chest' };
const range = (n, f) => Array.from({ length: n }, (_, i) => f(i));


test('4 Hz stream with a dropped sample: null in its slot, grid on the stream phase', () => {
  const b = new StreamBuffer({ ...ECG, rateHz: 4 });
  const times = [100, 100.25, 100.5, /* 100.75 dropped */ 101, 101.25, 101.5, 101.75];
  b.push(times, times.map((t) => (t - 100) * 4 * 10));  // value = 10 * slot
  const s = b.slice(100, 102);
  assert.equal(s.rateHz, 4);
  assert.equal(s.startTime, 100);
  // covered span ends at the newest sample: slots 100 .. 101.75 (8), not 102
  assert.deepEqual(s.samples, [0, 10, 20, null, 40, 50, 60, 70]);
  // a window starting before the data starts at the first sample's slot
  const early = b.slice(99, 101);
  assert.equal(early.startTime, 100);
  assert.deepEqual(early.samples, [0, 10, 20, null]);
  // a window starting between grid points starts at the next grid point of the stream's phase
  const mid = b.slice(100.1, 101.1);
  assert.ok(Math.abs(mid.startTime - 100.25) < 1e-12, `${mid.startTime}`);
  assert.deepEqual(mid.samples, [10, 20, null, 40]);
  // nothing outside [t0, t1): the sample at exactly t1 belongs to the next window
  assert.deepEqual(b.slice(100, 101).samples, [0, 10, 20, null]);
});

test('jittered timestamps snap to the right slot (phase from the samples, not the window)', () => {
  const rand = prng(5);
  const rate = 130.34, phase = 0.0031;
  const times = [], values = [];
  for (let k = 0; k < 1500; k++) {
    if (k % 97 === 13) continue;  // dropouts
    times.push(1.7e9 + phase + k / rate + (rand() - 0.5) * 0.6 / rate);  // jitter up to +-0.3 period
    values.push(k);
  }
  const b = new StreamBuffer({ ...ECG, rateHz: rate });
  b.push(times, values);
  const t0 = 1.7e9 + 1, s = b.slice(t0, t0 + 10);
  const k0 = Math.ceil((t0 - 1.7e9 - phase) * rate);  // first nominal sample >= t0
  assert.ok(Math.abs(s.startTime - (1.7e9 + phase + k0 / rate)) < 0.1 / rate, `${s.startTime}`);
  assert.equal(s.samples.length, Math.ceil((t0 + 10 - s.startTime) * rate - 1e-9));
  s.samples.forEach((v, i) => assert.equal(v, (k0 + i) % 97 === 13 ? null : k0 + i, `slot ${i}`));
});

test('a rateHz slightly off the real rate (130 for a 130.34 Hz ECG) loses no sample and keeps dropouts in place', () => {
  const real = 130.34, times = [], values = [];
  for (let k = 0; k < 2600; k++) {
    if (k === 700 || k === 1500 || k === 1501) continue;
    times.push(1000 + k / real);
    values.push(k);
  }
  const b = new StreamBuffer({ ...ECG, rateHz: 130 });
  b.push(times, values);
  const s = b.slice(999.995, 1019.9);
  assert.equal(s.rateHz, 130);
  assert.ok(Math.abs(s.startTime - 1000) < 0.1 / 130, `${s.startTime}`);
  const expected = range(2593, (k) => (k === 700 || k === 1500 || k === 1501 ? null : k));
  assert.deepEqual(s.samples.slice(0, 2593), expected);  // every sample, in order, nulls where dropped
  assert.equal(s.samples.filter((v) => v !== null).length, times.filter((t) => t < 1019.9).length);
});

test('a gap in the middle shows nulls for its span; samples around it are intact; a gap is not deleted data', () => {
  const b = new StreamBuffer({ ...ECG, rateHz: 10 });
  const before = range(40, (i) => 50 + i / 10), after = range(40, (i) => 56 + i / 10);  // [50, 54) and [56, 60)
  b.push(before, before.map((_, i) => i));
  b.markGap(54, 56);
  b.push(after, after.map((_, i) => 100 + i));
  const s = b.slice(50, 60);
  assert.equal(s.startTime, 50);
  assert.equal(s.samples.length, 100);
  assert.deepEqual(s.samples.slice(0, 40), range(40, (i) => i));
  assert.deepEqual(s.samples.slice(40, 60), new Array(20).fill(null));
  assert.deepEqual(s.samples.slice(60), range(40, (i) => 100 + i));

  // A gap at the end (still disconnected) shows as nulls up to its end ...
  const c = new StreamBuffer({ ...ECG, rateHz: 10 });
  c.push(before, before.map((_, i) => i));
  assert.equal(c.slice(50, 56).samples.length, 40);  // ... while data not yet arrived is not "missing"
  c.markGap(54, 56);
  assert.deepEqual(c.slice(50, 56).samples.slice(38), [38, 39, ...new Array(20).fill(null)]);
  // ... and a sample pushed inside a marked gap is shown, not hidden
  c.push([55], [7]);
  assert.equal(c.slice(50, 56).samples[50], 7);
});

test('ring buffer: wraparound keeps the newest data; out of order, duplicates and overflow are counted', () => {
  const b = new StreamBuffer({ ...ECG, rateHz: 10, capacitySeconds: 5 });
  for (let start = 0; start < 200; start += 7) {
    const ts = range(Math.min(7, 200 - start), (i) => (start + i) / 10);
    b.push(ts, ts.map((t) => Math.round(t * 10)));
  }
  assert.equal(b.newest, 19.9);
  assert.ok(b.oldest >= 19.9 - 5 - 1e-9 && b.oldest <= 15);
  const s = b.slice(15, 20);
  assert.equal(s.startTime, 15);
  assert.deepEqual(s.samples, range(50, (i) => 150 + i));
  assert.equal(b.hasData(0, 14.8), false);

  const o = new StreamBuffer({ ...ECG, rateHz: 1 });
  o.push([1, 3, 2, 2, 3, 5], [10, 30, 20, 99, 99, 50]);
  o.push([4], [40]);
  assert.deepEqual(o.slice(0, 10).samples, [10, 20, 30, 40, 50]);
  assert.equal(o.dropped.duplicates, 2);
  o.push([-500], [1]);  // older than the retained span (120 s before the newest)
  assert.equal(o.dropped.expired, 1);

  const small = new StreamBuffer({ sensor: 1, modality: 'hr', placement: 'chest', rateHz: null, maxSamples: 16 });
  small.push(range(40, (i) => i), range(40, (i) => i));
  assert.equal(small.size, 16);
  assert.equal(small.oldest, 24);
  assert.equal(small.dropped.overflow, 24);
});

test('event streams: the events in [t0, t1), nulls for missing values', () => {
  const b = new StreamBuffer({ sensor: 0, modality: 'rr', placement: 'chest', rateHz: null });
  b.push([10.9, 10.1, 11.7, 12.5], [0.8, 0.75, null, 0.82]);
  assert.deepEqual(b.slice(10, 11.7), { sensor: 0, modality: 'rr', placement: 'chest', timestamps: [10.1, 10.9], samples: [0.75, 0.8] });
  assert.deepEqual(b.slice(11, 13).samples, [null, 0.82]);
  assert.deepEqual(b.slice(0, 1).timestamps, []);
});

test('WindowAssembler.window: only streams with data in range, in the order added', () => {
  const w = new WindowAssembler();
  w.add('ecg', { ...ECG, rateHz: 4 });
  w.add('hr', { sensor: 0, modality: 'hr', placement: 'chest', rateHz: null });
  w.add('temp', { sensor: 2, modality: 'temperature', placement: 'wrist', rateHz: 0.5 });
  w.push('ecg', range(40, (i) => 100 + i / 4), range(40, (i) => i));  // 100 .. 109.75
  w.push('hr', [100.5, 101.5, 102.5], [60, 61, 62]);
  w.push('temp', [50], [33]);  // long before: never in these windows

  const win = w.window({ end: 104, seconds: 4 });
  assert.equal(win.referenceTime, 100);
  assert.deepEqual(win.streams.map((s) => s.modality), ['ecg', 'hr']);
  assert.deepEqual(win.streams[0].samples, range(16, (i) => i));
  assert.deepEqual(w.window({ end: 110, seconds: 4 }).streams.map((s) => s.modality), ['ecg']);
  assert.deepEqual(w.window({ end: 52, seconds: 4 }).streams.map((s) => s.modality), ['temperature']);
  assert.deepEqual(w.window({ end: 90, seconds: 4 }).streams, []);
});

test('WindowAssembler.hop: first window once `seconds` of data exist, then every hop up to the data horizon', () => {
  const w = new WindowAssembler();
  w.add('ecg', { ...ECG, rateHz: 4 });
  w.add('hr', { sensor: 0, modality: 'hr', placement: 'chest', rateHz: null });
  assert.deepEqual(w.hop({ seconds: 4, hop: 1 }), []);  // nothing yet
  w.push('ecg', range(40, (i) => 100 + i / 4), range(40, (i) => i));  // 100 .. 109.75
  w.push('hr', [100.5, 101.5, 102.5], [60, 61, 62]);
  // first window ends at 104, then every 1 s up to the horizon 109.75
  const first = w.hop({ seconds: 4, hop: 1 });
  assert.deepEqual(first.map((x) => x.referenceTime + 4), [104, 105, 106, 107, 108, 109]);
  assert.deepEqual(w.hop({ seconds: 4, hop: 1 }), []);
  w.push('ecg', range(9, (i) => 110 + i / 4), range(9, (i) => 40 + i));  // to 112
  const next = w.hop({ seconds: 4, hop: 1 });
  assert.deepEqual(next.map((x) => x.referenceTime + 4), [110, 111, 112]);
  assert.equal(next[0].streams[0].samples.length, 16);
  // latency: wait for data that has not arrived
  w.push('ecg', range(12, (i) => 112.25 + i / 4), range(12, (i) => 49 + i));  // to 115
  assert.deepEqual(w.hop({ seconds: 4, hop: 1, latency: 1.5 }).map((x) => x.referenceTime + 4), [113]);

  assert.throws(() => w.push('nope', [1], [1]), SensorformerError);
  assert.throws(() => w.add('ecg', { ...ECG, rateHz: 4 }), (e) => e.code === 'INVALID_ARGUMENT');
  assert.throws(() => new StreamBuffer({ ...ECG, rateHz: -1 }), SensorformerError);
  assert.throws(() => w.push('ecg', [1, 2], [1]), SensorformerError);
});

test('assembled windows validate and run through the real model', async () => {
  const model = await loadModel('tests/fixtures/model/factorized.safetensors');
  const T0 = 1.7e9;
  const w = new WindowAssembler();
  w.add('ecg', { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130.34 });
  w.add('acc', { sensor: 0, modality: 'acc_x', placement: 'chest', rateHz: 50 });
  w.add('hr', { sensor: 0, modality: 'hr', placement: 'chest', rateHz: null });
  w.add('rr', { sensor: 0, modality: 'rr', placement: 'chest', rateHz: null });
  w.add('ppgTemp', { sensor: 3, modality: 'temperature', placement: 'finger', rateHz: 1 });
  w.add('wristAcc', { sensor: 1, modality: 'acc_x', placement: 'wrist', rateHz: 25 });  // never sends: left out
  const rand = prng(9);
  // 20 s in PMD-like frames; a 3 s disconnect at 8-11 s marked as a gap for the chest streams
  for (let f = 0; f * 0.56 < 20; f++) {
    const a = f * 0.56, z = a + 0.56;
    if (a >= 8 && a < 11) continue;
    const ecg = range(73, (i) => T0 + f * 73 / 130.34 + i / 130.34);
    w.push('ecg', ecg, ecg.map((t) => 800 * Math.sin(2 * Math.PI * 1.2 * t) + 50 * (rand() - 0.5)));
    const acc = range(28, (i) => T0 + a + i / 50).filter((t) => t < T0 + z);
    w.push('acc', acc, acc.map(() => rand() - 0.5));
  }
  w.markGap(T0 + 8, T0 + 11, ['ecg', 'acc', 'hr', 'rr']);
  for (let t = 1; t < 20; t++) if (t < 8 || t >= 11) w.push('hr', [T0 + t], [70 + t]);
  const rr = [];
  for (let t = 0.4; t < 20; t += 0.83) if (t < 8 || t >= 11) rr.push(T0 + t);
  w.push('rr', rr, rr.map(() => 0.83));
  w.push('ppgTemp', range(20, (i) => T0 + i + 0.5), range(20, (i) => 33 + i * 0.01));

  const win = w.window({ end: T0 + 16, seconds: 10 });
  assert.deepEqual(win.streams.map((s) => s.modality), ['ecg', 'acc_x', 'hr', 'rr', 'temperature']);
  const ecg = win.streams[0];
  const nulls = ecg.samples.filter((v) => v === null).length;
  assert.ok(Math.abs(nulls - Math.round(3 * 130.34)) <= 80, `ECG nulls ${nulls}`);  // the gap, to a frame
  const norm = normalizeWindow(win);
  assert.equal(norm.streams.length, 5);
  assert.ok(Number.isNaN(norm.streams[0].samples[Math.round((T0 + 9.5 - ecg.startTime) * 130.34)]));
  const r = model.forward(win);
  assert.equal(r.referenceTime, T0 + 6);
  assert.ok(r.dims[0] > 0 && r.pooled.every(Number.isFinite) && r.head.every(Number.isFinite));
  assert.deepEqual([...new Set(r.tokens.stream)].sort(), [0, 1, 2, 3, 4]);
  // token times (absolute) lie inside the window
  assert.ok(Array.from(r.tokens.time).every((t) => t >= T0 + 6 && t < T0 + 16));

  const windows = w.hop({ seconds: 10, hop: 2.5 });
  assert.deepEqual(windows.map((x) => x.referenceTime + 10 - T0), [10, 12.5, 15, 17.5, 20]);  // data from T0 to ~T0 + 20.16
  for (const x of windows) {
    normalizeWindow(x);
    const y = model.forward(x);
    assert.ok(y.pooled.every(Number.isFinite));
  }
  model.dispose();
});
