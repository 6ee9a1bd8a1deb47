// The CLI end to end: `sensorformer run` on JSON, CSV and bad input, checked against the library
// API and the reference fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';
import { parseCsv } from '../../web/src/csv.js';
import { allClose, fixturePath, readSafetensors } from './safetensors.js';

const cli = fileURLToPath(new URL('../../web/bin/sensorformer.js', import.meta.url));
const modelPath = fixturePath('model/factorized.safetensors');
const run = (...args) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
const tmp = mkdtempSync(join(tmpdir(), 'sf-cli-'));

test('run on a batch JSON file reproduces the reference outputs', () => {
  const r = run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'));
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const expected = readSafetensors(fixturePath('model/expected.safetensors'));
  assert.equal(out.windows.length, 3);
  out.windows.forEach((w, i) => {
    const want = expected.tensors[`factorized.w${i}.pooled`].data;
    assert.ok(allClose(w.pooled, want, 1e-5, 0).ok, `window ${i} pooled`);  // as in model.test.js
    assert.ok(allClose(w.head, expected.tensors[`factorized.w${i}.head`].data, 1e-5, 0).ok);
    assert.equal(w.embeddings.length, w.tokens.length);
    assert.equal(w.embeddings[0].length, 16);
    assert.equal(w.attention, undefined);
  });
});

test('--attention and --output write the maps with their shapes', () => {
  const file = join(tmp, 'out.json');
  const r = run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), '--attention', '--output', file);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '');
  const w0 = JSON.parse(readFileSync(file, 'utf8')).windows[0];
  const blocks = new Set(w0.attention.map((m) => `${m.layer}.${m.block}`));
  assert.deepEqual([...blocks].sort(), ['0.channel', '0.time', '1.channel', '1.time']);
  for (const m of w0.attention) {
    assert.equal(m.weights.length, 2);  // heads
    assert.equal(m.weights[0].length, m.tokens.length);
    assert.equal(m.weights[0][0].length, m.tokens.length);
  }
});

test('a single window and the example file run', () => {
  const r = run('run', '--model', modelPath, '--input', new URL('../../examples/window.json', import.meta.url).pathname);
  assert.equal(r.status, 0, r.stderr);
  const w = JSON.parse(r.stdout).windows[0];
  assert.deepEqual([...new Set(w.tokens.map((t) => t.modality))], ['ecg', 'acc_x', 'rr']);
  assert.ok(w.tokens.some((t) => !t.present), 'the example has an absent ECG patch');
});

test('CSV: regular rows become regular streams, the same as the API on the equivalent window', async () => {
  const lines = ['time,acc_x@wrist#1,ecg@chest#0'];
  for (let i = 0; i < 40; i++) lines.push(`${(1764460800 + i / 50).toFixed(2)},${i % 7 === 3 ? '' : Math.sin(i / 3).toFixed(4)},${(100 * Math.cos(i / 5)).toFixed(1)}`);
  const file = join(tmp, 'dev.csv');
  writeFileSync(file, lines.join('\n'));
  const r = run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  const window = parseCsv(lines.join('\n'), { placement: 'chest' });
  // epoch-second text times are float64-rounded by ~1e-7 s: over a 0.78 s span that is 1e-5 Hz
  assert.ok(Math.abs(window.streams[0].rateHz - 50) < 1e-4, `rate ${window.streams[0].rateHz}`);
  assert.equal(window.streams[0].samples[3], null);
  const model = await loadModel(modelPath);
  const api = model.forward(window);
  assert.deepEqual(JSON.parse(r.stdout).windows[0].pooled, Array.from(api.pooled));
  model.dispose();
});

test('CSV: irregular rows become event-driven streams of their non-empty cells', () => {
  const w = parseCsv('time,hr@finger#2\n10.0,61\n10.9,\n11.7,63\n13.0,64\n', {});
  assert.deepEqual(w.streams[0], { modality: 'hr', placement: 'finger', sensor: 2, timestamps: [10, 11.7, 13], samples: [61, 63, 64] });
  assert.throws(() => parseCsv('t,hr\n1,2\n', {}), /first column must be "time"/);
  assert.throws(() => parseCsv('time,hr\n2,60\n1,61\n', {}), /backwards/);
  assert.throws(() => parseCsv('time,hr\n1,abc\n', {}), /"abc" is not a number/);
});

test('usage errors exit 2, model errors exit 1 with the error code', () => {
  let r = run('run', '--input', 'x.json');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /usage: sensorformer run/);
  r = run('run', '--model', fixturePath('attention.safetensors'), '--input', fixturePath('model/windows.json'));
  assert.equal(r.status, 1);
  assert.match(r.stderr, /BAD_FORMAT/);
  const bad = join(tmp, 'bad.json');
  writeFileSync(bad, '{"streams": [{"sensor": 0, "modality": "ecg", "placement": "chest", "rateHz": 100, "startTime": 0, "samples": ["a"]}]}');
  r = run('run', '--model', modelPath, '--input', bad);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /INVALID_ARGUMENT: window\.streams\[0\]\.samples\[0\]/);
});

test('a recorded Bluetooth session runs through the CLI as hop windows', async () => {
  const { createSimulatedBluetooth, createVirtualClock, record, connectWearable, DEVICE_FILTERS, windowsFromRecording } = await import('../../web/src/ble/index.js');
  const clock = createVirtualClock(1764460800);
  const sim = createSimulatedBluetooth({ seed: 5, clock, disconnects: [{ device: 'strap', at: 14, duration: 4 }] });
  const rec = record(sim, { clock });
  const pending = ['strap', 'thermometer', 'oximeter'].map((k) => connectWearable({ bluetooth: rec.bluetooth, clock, filters: DEVICE_FILTERS[k] }));
  await clock.advanceAsync(2);
  const wearables = await Promise.all(pending);
  await clock.advanceAsync(30);
  for (const w of wearables) await w.close();
  const text = rec.stop();
  sim.close();
  const file = join(tmp, 'session.sfrec');
  writeFileSync(file, text);

  const r = run('run', '--model', modelPath, '--input', file, '--window', '10', '--hop', '5');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /no use for acc_y@chest#1/, 'streams the fixture model does not know are named');
  const out = JSON.parse(r.stdout).windows;
  // the same windows through the API, filtered the same way
  const { windows } = await windowsFromRecording(text, { seconds: 10, hop: 5 });
  assert.equal(out.length, windows.length);
  assert.ok(out.length >= 4);
  const model = await loadModel(modelPath);
  const known = new Set(model.config.modalities.map((m) => m.name));
  windows.forEach((w, i) => {
    const api = model.forward({ ...w, streams: w.streams.filter((s) => known.has(s.modality) && model.config.placements.includes(s.placement) && s.sensor < model.config.n_sensors) });
    assert.deepEqual(out[i].pooled, Array.from(api.pooled), `window ${i}`);
  });
  model.dispose();
});
