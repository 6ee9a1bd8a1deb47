// CSV -> window: regular or event-driven decided per column from its own timestamps, with the
// issue's two failure cases rebuilt from a seeded generator (issue 11, item 6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import { loadModel, SensorformerError } from '../../web/src/index.js';
import { parseCsv, readCsv } from '../../web/src/csv.js';
import { prng } from './prng.js';
import { fixturePath } from './safetensors.js';

const T0 = 1764460800;  // epoch seconds, as wearable logs write them

// A CSV from rows { t, cells: { column: value } } with times printed to `decimals` places.
function csv(columns, rows, decimals) {
  return [`time,${columns.join(',')}`, ...rows.map((r) => `${r.t.toFixed(decimals)},${columns.map((c) => r.cells[c] ?? '').join(',')}`)].join('\n');
}

// Parses, collecting warnings.
function read(text, options = {}) {
  const warnings = [];
  const { window, columns } = readCsv(text, { placement: 'chest', ...options, onWarning: (m) => warnings.push(m) });
  return { streams: window.streams, columns, warnings, window };
}

// A seeded ECG-like trace at `rate` Hz for `seconds`, starting at a random sub-second offset.
function ecgRows(seed, { rate = 130, seconds = 10 } = {}) {
  const random = prng(seed);
  const start = T0 + random();
  return Array.from({ length: Math.round(rate * seconds) }, (_, i) => ({ t: start + i / rate, cells: { 'ecg@chest#0': Math.round(800 * Math.sin(i / 9) + 60 * random()) || 0 } }));
}

// The rate a line fitted to N timestamps, each off by at most q/2, can miss: its period by up to
// q / (N - 1) (the two end points' errors over N - 1 periods), i.e. the rate by q rate^2 / (N - 1).
const rateBound = (q, rate, n) => (q * rate * rate) / (n - 1);

test('issue case 1: a 130 Hz ECG with 3 or 4 decimal timestamps is one regular stream at ~130 Hz', async () => {
  const model = await loadModel(fixturePath('model/factorized.safetensors'));
  for (const seed of [1, 2, 3]) {
    const rows = ecgRows(seed);
    // The window the CSV was written from: exact rate and start.
    const exact = { streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: rows[0].t, samples: rows.map((r) => r.cells['ecg@chest#0']) }] };
    const want = model.forward(exact).head;
    for (const decimals of [3, 4]) {
      const q = 10 ** -decimals;
      const { streams, warnings } = read(csv(['ecg@chest#0'], rows, decimals));
      assert.deepEqual(warnings, [], `seed ${seed}, ${decimals} decimals`);
      assert.equal(streams.length, 1);
      const s = streams[0];
      assert.equal(s.timestamps, undefined, 'regular, not event-driven');
      assert.ok(Math.abs(s.rateHz - 130) <= rateBound(q, 130, rows.length), `seed ${seed}, ${decimals} decimals: rate ${s.rateHz}`);
      assert.ok(Math.abs(s.startTime - rows[0].t) <= q, `start ${s.startTime - rows[0].t}`);
      assert.deepEqual(s.samples, exact.streams[0].samples);
      // The issue: the prediction changed class. It is the same class as the exact window's.
      const head = model.forward({ streams }).head;
      const argmax = (a) => a.indexOf(Math.max(...a));
      assert.equal(argmax(head), argmax(want), `seed ${seed}, ${decimals} decimals: ${head} vs ${want}`);
    }
  }
  model.dispose();
});

// Heart rate at beat-to-beat intervals of 0.8-1.2 s, written on the rows of a 130 Hz grid (the
// row at or after each beat), with the ECG in every row.
function gridWithHr(seed, decimals) {
  const rows = ecgRows(seed);
  const random = prng(seed + 100);
  const hr = [];
  let next = rows[0].t + 0.5;
  for (const r of rows)
    if (r.t >= next) {
      r.cells['hr@chest#1'] = 55 + Math.round(20 * random());
      hr.push({ t: Number(r.t.toFixed(decimals)), v: r.cells['hr@chest#1'] });
      next += 0.8 + 0.4 * random();
    }
  return { text: csv(['ecg@chest#0', 'hr@chest#1'], rows, decimals), hr, rows };
}

test('issue case 2: 1 Hz heart rate on the rows of a 6-decimal 130 Hz grid is event-driven at its own times', () => {
  for (const seed of [4, 5, 6]) {
    const { text, hr, rows } = gridWithHr(seed, 6);
    const { streams, warnings } = read(text);
    assert.deepEqual(warnings, [], 'beat-to-beat intervals vary by far more than jitter: no doubt');
    const [ecg, h] = streams;
    assert.ok(Math.abs(ecg.rateHz - 130) <= rateBound(1e-6, 130, rows.length) + 1e-4, `ecg ${ecg.rateHz}`);  // + float64 error of epoch times
    assert.equal(ecg.samples.length, rows.length);
    assert.equal(h.rateHz, undefined);
    assert.deepEqual(h.timestamps, hr.map((e) => e.t));
    assert.deepEqual(h.samples, hr.map((e) => e.v));
    assert.ok(hr.length >= 8, `${hr.length} beats`);
  }
});

test('streams at different rates interleaved on one time grid are each regular at their own rate', () => {
  const rows = new Map();
  const add = (t, column, v) => {
    const key = t.toFixed(4);
    if (!rows.has(key)) rows.set(key, { t, cells: {} });
    rows.get(key).cells[column] = v;
  };
  const random = prng(7);
  for (let i = 0; i < 650; i++) add(T0 + i / 130, 'ecg@chest#0', Math.round(1000 * random()));
  for (let i = 0; i < 250; i++) add(T0 + 0.003 + i / 50, 'acc_x@wrist#1', Number(random().toFixed(3)));
  const ordered = [...rows.values()].sort((a, b) => a.t - b.t);
  const { streams, warnings } = read(csv(['ecg@chest#0', 'acc_x@wrist#1'], ordered, 4));
  assert.deepEqual(warnings, []);
  assert.ok(Math.abs(streams[0].rateHz - 130) <= rateBound(1e-4, 130, 650));
  assert.ok(Math.abs(streams[1].rateHz - 50) <= rateBound(1e-4, 50, 250));
  assert.equal(streams[0].samples.length, 650);
  assert.equal(streams[1].samples.length, 250);
  assert.ok(!streams[0].samples.includes(null) && !streams[1].samples.includes(null));
});

test('NaN cells and empty cells are missing samples; rows missing from the file are gaps', () => {
  const rows = ecgRows(8, { seconds: 2 });
  rows[10].cells['ecg@chest#0'] = 'NaN';
  rows[11].cells['ecg@chest#0'] = 'nan';
  rows[12].cells['ecg@chest#0'] = '';
  const kept = rows.filter((_, i) => i < 100 || i >= 105);  // a 5-sample dropout: no rows at all
  const { streams, warnings } = read(csv(['ecg@chest#0'], kept, 4));
  assert.deepEqual(warnings, []);
  const s = streams[0];
  assert.equal(s.samples.length, rows.length);
  assert.ok(Math.abs(s.rateHz - 130) <= rateBound(1e-4, 130, kept.length));
  const nulls = s.samples.flatMap((v, i) => (v === null ? [i] : []));
  assert.deepEqual(nulls, [10, 11, 12, 100, 101, 102, 103, 104]);
  assert.equal(s.samples[13], rows[13].cells['ecg@chest#0']);
  assert.equal(s.samples[105], rows[105].cells['ecg@chest#0']);
  // Anything else that is not a number is still an error naming the line and what to write.
  assert.throws(() => parseCsv('time,hr\n1,60\n2,null\n'), /line 3, column "hr": "null" is not a number \(leave the cell empty or write NaN/);
});

test('one value, two values, no value: event-driven (or left out) with a warning naming the override', () => {
  const { streams, warnings, columns } = read('time,temperature@wrist#3,hr#1,rr#2\n10.00,33.1,61,\n10.50,,,\n11.25,,62,\n');
  assert.deepEqual(columns, ['temperature@wrist#3', 'hr#1']);
  assert.deepEqual(streams, [
    { modality: 'temperature', placement: 'wrist', sensor: 3, timestamps: [10], samples: [33.1] },
    { modality: 'hr', placement: 'chest', sensor: 1, timestamps: [10, 11.25], samples: [61, 62] },
  ]);
  assert.equal(warnings.length, 3);
  assert.match(warnings[0], /^CSV column "temperature@wrist#3": one value cannot show a rate; read as event-driven .*--rate temperature@wrist#3=<Hz>.*--rate temperature@wrist#3=events/);
  assert.match(warnings[1], /^CSV column "hr#1": two values cannot show a rate; read as event-driven/);
  assert.equal(warnings[2], 'CSV column "rr#2" has no value: left out');
});

test('an irregular column is event-driven: with a warning when it nearly fits one rate, without when it clearly does not', () => {
  const random = prng(9);
  // A 50 Hz stream logged with arrival times that jitter by up to 1 ms (printed to 0.1 ms).
  const jittery = Array.from({ length: 200 }, (_, i) => ({ t: T0 + i / 50 + 0.001 * (random() - 0.5) * 2, cells: { acc_x: i } }));
  let r = read(csv(['acc_x'], jittery, 4));
  assert.deepEqual(r.streams[0].timestamps, jittery.map((row) => Number(row.t.toFixed(4))));
  assert.equal(r.warnings.length, 1);
  assert.match(r.warnings[0], /^CSV column "acc_x": its timestamps are nearly regular \(50(\.\d+)? Hz\) but miss that rate by up to .* s, more than their printed precision \(0\.0001 s\) allows; read as event-driven .*--rate acc_x=<Hz>/);
  // RR intervals: 0.6-1.0 s from beat to beat.
  let t = T0;
  const rr = Array.from({ length: 60 }, () => ({ t: (t += 0.6 + 0.4 * random()), cells: { rr: 1 } }));
  r = read(csv(['rr'], rr, 3));
  assert.deepEqual(r.warnings, []);
  assert.equal(r.streams[0].timestamps.length, 60);
});

test('timestamps too coarse for the rate (130 Hz to 0.01 s): regular assuming no missing row, with a warning', () => {
  const rows = ecgRows(10, { seconds: 5 });
  const { streams, warnings } = read(csv(['ecg@chest#0'], rows, 2));
  assert.ok(Math.abs(streams[0].rateHz - 130) <= rateBound(1e-2, 130, rows.length), `${streams[0].rateHz}`);
  assert.equal(streams[0].samples.length, rows.length);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /too coarse to show its sample interval; read as regular at 13\d(\.\d+)? Hz assuming no sample is missing/);
});

test('rates override per column: a number makes it regular at that rate, "events" event-driven without a warning', () => {
  const { text, hr } = gridWithHr(11, 6);
  let r = read(text, { rates: { 'hr@chest#1': 'events', 'ecg@chest#0': 130 } });
  assert.deepEqual(r.warnings, []);
  assert.equal(r.streams[0].rateHz, 130);
  assert.deepEqual(r.streams[1].timestamps, hr.map((e) => e.t));
  // hr at 2 Hz: each beat on its nearest half-second sample from the first, the rest missing.
  r = read(text, { rates: { 'hr@chest#1': 2 } });
  const s = r.streams[1];
  assert.equal(s.rateHz, 2);
  const slots = hr.map((e) => Math.round((e.t - hr[0].t) * 2));
  assert.equal(s.samples.length, slots[slots.length - 1] + 1);
  slots.forEach((j, i) => assert.equal(s.samples[j], hr[i].v));
  assert.equal(s.samples.filter((v) => v !== null).length, hr.length);
  // Its start is where the beats fit 2 Hz best: within half a period of the first beat.
  assert.ok(Math.abs(s.startTime - hr[0].t) <= 0.25);
  // Two beats on one sample: the rate is too low for the data.
  assert.throws(() => read(text, { rates: { 'hr@chest#1': 0.1 } }), { code: 'INVALID_ARGUMENT', message: /column "hr@chest#1" at 0\.1 Hz: its values at .* fall on the same sample; the rate must be higher/ });
  assert.throws(() => read(text, { rates: { hr: 1 } }), { code: 'INVALID_ARGUMENT', message: 'CSV: a rate is given for column "hr", which is not in the header (ecg@chest#0, hr@chest#1)' });
  for (const bad of [0, -1, NaN, Infinity, '130', 'event'])
    assert.throws(() => read(text, { rates: { 'hr@chest#1': bad } }), { code: 'INVALID_ARGUMENT', message: /the rate for column "hr@chest#1" must be a number of Hz > 0 or "events"/ }, String(bad));
  assert.throws(() => read(text, { rates: { 'hr@chest#1': 1e9 } }), { code: 'RESOURCE_EXHAUSTED' });
});

test('one wild timestamp does not build a huge regular stream of nulls', () => {
  const rows = ecgRows(12, { seconds: 2 });
  rows.push({ t: rows[rows.length - 1].t + 3600, cells: { 'ecg@chest#0': 5 } });  // an hour later
  const { streams, warnings } = read(csv(['ecg@chest#0'], rows, 4));
  assert.equal(streams[0].timestamps.length, rows.length);
  assert.match(warnings[0], /read as regular at 130(\.\d+)? Hz it would be \d+ missing samples for 261 values; read as event-driven/);
});

test('a spreadsheet byte-order mark and CRLF line ends are read as any other CSV', () => {
  const { streams, warnings } = read('\uFEFFtime,hr#1\r\n1.0,60\r\n2.0,61\r\n3.0,62\r\n');
  assert.deepEqual(warnings, []);
  assert.deepEqual(streams, [{ modality: 'hr', placement: 'chest', sensor: 1, rateHz: 1, startTime: 1, samples: [60, 61, 62] }]);
});

test('steps of one or two printed units are resolved: 1 Hz in whole seconds, 100 and 60 Hz to 0.01 s, no warning', () => {
  let r = read('time,hr#1\n1764460800,60\n1764460801,61\n1764460802,62\n1764460803,63\n');
  assert.deepEqual(r.warnings, []);
  assert.equal(r.streams[0].rateHz, 1);
  const rows = Array.from({ length: 300 }, (_, i) => ({ t: T0 + i / 100, cells: { acc_x: i } }));
  r = read(csv(['acc_x'], rows, 2));
  assert.deepEqual(r.warnings, []);
  assert.ok(Math.abs(r.streams[0].rateHz - 100) <= rateBound(0.01, 100, 300) / 100, `${r.streams[0].rateHz}`);  // exact steps: float64 error only
  // 60 Hz to 0.01 s (steps of 0.01 and 0.02, never 0): each step still rounds to one sample, and
  // the line fits within the precision: regular, no warning (130 Hz, with steps of 0, is above).
  const sixty = Array.from({ length: 300 }, (_, i) => ({ t: T0 + i / 60, cells: { acc_x: i } }));
  r = read(csv(['acc_x'], sixty, 2));
  assert.deepEqual(r.warnings, []);
  assert.ok(Math.abs(r.streams[0].rateHz - 60) <= rateBound(0.01, 60, 300), `${r.streams[0].rateHz}`);
  assert.equal(r.streams[0].samples.length, 300);
});

// fast-check (seeded): any CSV of numeric cells on non-decreasing times either reads, with every
// value the file holds in the window exactly once and every time where the file put it, or fails
// with a SensorformerError; nothing else (no other exception, no NaN rate, no lost value).
test('property: every value of any CSV is in the window once, at its time, or the CSV is refused with a SensorformerError', () => {
  const cell = fc.oneof(fc.constant(''), fc.constant('NaN'), fc.integer({ min: -1000, max: 1000 }).map(String), fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((v) => String(v)));
  const csvCase = fc.record({
    base: fc.constantFrom(0, 1.5, T0),
    decimals: fc.integer({ min: 0, max: 7 }),
    steps: fc.array(fc.oneof(fc.constant(0), fc.double({ min: 0, max: 3, noNaN: true }), fc.constantFrom(1 / 130, 1 / 50, 1)), { minLength: 1, maxLength: 60 }),
    columns: fc.integer({ min: 1, max: 3 }),
    cells: fc.array(cell, { minLength: 180, maxLength: 180 }),
  });
  let regular = 0, events = 0, refused = 0;
  fc.assert(fc.property(csvCase, ({ base, decimals, steps, columns, cells }) => {
    let t = base;
    const times = steps.map((d) => (t += d).toFixed(decimals));
    const names = ['ecg@chest#0', 'acc_x@wrist#1', 'hr#2'].slice(0, columns);
    const rows = times.map((time, r) => [time, ...names.map((_, c) => cells[(r * columns + c) % cells.length])]);
    const text = [`time,${names.join(',')}`, ...rows.map((r) => r.join(','))].join('\n');
    let out;
    try {
      out = readCsv(text, { placement: 'chest', onWarning: (m) => assert.equal(typeof m, 'string') });
    } catch (e) {
      assert.ok(e instanceof SensorformerError, `${e?.name}: ${e?.message}\n${text}`);
      refused++;
      return;
    }
    names.forEach((name, c) => {
      const given = rows.flatMap((r) => (r[c + 1] === '' || r[c + 1] === 'NaN' ? [] : [[Number(r[0]), Number(r[c + 1])]]));
      const j = out.columns.indexOf(name);
      if (!given.length) return assert.equal(j, -1, `${name} has no value and is left out`);
      const s = out.window.streams[j];
      if (s.timestamps) {
        events++;
        assert.deepEqual(s.timestamps.map((x, i) => [x, s.samples[i]]), given);
      } else {
        regular++;
        assert.ok(Number.isFinite(s.rateHz) && s.rateHz > 0 && Number.isFinite(s.startTime), `${s.rateHz} ${s.startTime}`);
        const kept = s.samples.flatMap((v, i) => (v === null ? [] : [[i, v]]));
        assert.deepEqual(kept.map(([, v]) => v), given.map(([, v]) => v));
        // each value at its sample time, within the tolerance the classifier allowed (one printed
        // unit, plus float64 spacing at these times)
        const q = 10 ** -decimals + 1e-6;
        kept.forEach(([i], k) => assert.ok(Math.abs(s.startTime + i / s.rateHz - given[k][0]) <= q, `${name}: sample ${i} at ${s.startTime + i / s.rateHz}, given ${given[k][0]}`));
      }
    });
  }), { seed: 11, numRuns: 3000 });
  assert.ok(regular > 100 && events > 100, `the properties reach both readings: ${regular} regular, ${events} event-driven, ${refused} refused`);
});
