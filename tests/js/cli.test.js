// The CLI end to end: `sensorformer run` on JSON, CSV and bad input, checked against the library
// API and the reference fixtures.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';
import { parseCsv } from '../../web/src/csv.js';
import { allClose, fixturePath, readSafetensors } from './safetensors.js';
import { prng } from './prng.js';

const cli = fileURLToPath(new URL('../../web/bin/sensorformer.js', import.meta.url));
// The second line of every usage error but a bare `sensorformer` (which prints the usage).
const HELP_POINTER = 'sensorformer: run "sensorformer --help" for the commands and options\n';
const modelPath = fixturePath('model/factorized.safetensors');
const tmp = mkdtempSync(join(tmpdir(), 'sf-cli-'));
// The CLI prints float32 outputs at float32 precision: read back through Math.fround they are the
// API's values exactly (the shortest-decimal property itself is tested below).
const asFloat32 = (a) => a.map((v) => Math.fround(v));

// A CLI that hangs must fail its test, not block the suite: the child is killed after
// CHILD_TIMEOUT_MS (then status is null and signal SIGKILL), and every test in this file has a
// node:test timeout above that. Both are far above what a run takes (under 2 s here).
const CHILD_TIMEOUT_MS = 45_000;
const test = (name, fn) => nodeTest(name, { timeout: CHILD_TIMEOUT_MS + 15_000 }, fn);
const run = (...args) => new Promise((resolve) => {
  execFile(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: CHILD_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 1 << 30 },
    (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, signal: error?.signal ?? null, stdout, stderr }));
});

test('run on a batch JSON file reproduces the reference outputs', async () => {
  const r = await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'));
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  const expected = readSafetensors(fixturePath('model/expected.safetensors'));
  assert.equal(out.windows.length, JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8')).windows.length);
  out.windows.forEach((w, i) => {
    const want = expected.tensors[`factorized.w${i}.pooled`].data;
    assert.ok(allClose(w.pooled, want, 1e-5, 0).ok, `window ${i} pooled`);  // as in model.test.js
    assert.ok(allClose(w.head, expected.tensors[`factorized.w${i}.head`].data, 1e-5, 0).ok);
    assert.equal(w.embeddings, undefined, 'embeddings only with --embeddings');
    assert.equal(w.attention, undefined);
  });
});

test('--attention and --output write the maps with their shapes', async () => {
  const file = join(tmp, 'out.json');
  const r = await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), '--attention', '--output', file);
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

test('a single window and the example file run', async () => {
  const r = await run('run', '--model', modelPath, '--input', new URL('../../examples/window.json', import.meta.url).pathname);
  assert.equal(r.status, 0, r.stderr);
  const w = JSON.parse(r.stdout).windows[0];
  assert.deepEqual([...new Set(w.tokens.modality)], ['ecg', 'acc_x', 'rr']);
  assert.ok(w.tokens.present.includes(0), 'the example has an absent ECG patch');
});

test('CSV: regular rows become regular streams, the same as the API on the equivalent window', async () => {
  const lines = ['time,acc_x@wrist#1,ecg@chest#0'];
  for (let i = 0; i < 40; i++) lines.push(`${(1764460800 + i / 50).toFixed(2)},${i % 7 === 3 ? '' : Math.sin(i / 3).toFixed(4)},${(100 * Math.cos(i / 5)).toFixed(1)}`);
  const file = join(tmp, 'dev.csv');
  writeFileSync(file, lines.join('\n'));
  const r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  const window = parseCsv(lines.join('\n'), { placement: 'chest' });
  // epoch-second text times are float64-rounded by ~1e-7 s: over a 0.78 s span that is 1e-5 Hz
  assert.ok(Math.abs(window.streams[0].rateHz - 50) < 1e-4, `rate ${window.streams[0].rateHz}`);
  assert.equal(window.streams[0].samples[3], null);
  const model = await loadModel(modelPath);
  const api = model.forward(window);
  assert.deepEqual(asFloat32(JSON.parse(r.stdout).windows[0].pooled), Array.from(api.pooled));
  model.dispose();
});

test('CSV: irregular rows become event-driven streams of their non-empty cells', () => {
  const w = parseCsv('time,hr@finger#2\n10.0,61\n10.9,\n11.7,63\n13.0,64\n', {});
  assert.deepEqual(w.streams[0], { modality: 'hr', placement: 'finger', sensor: 2, timestamps: [10, 11.7, 13], samples: [61, 63, 64] });
  assert.throws(() => parseCsv('t,hr\n1,2\n', {}), /first column must be "time"/);
  assert.throws(() => parseCsv('time,hr\n2,60\n1,61\n', {}), /backwards/);
  assert.throws(() => parseCsv('time,hr\n1,abc\n', {}), /"abc" is not a number/);
});

test('usage errors exit 2, model errors exit 1 with the error code', async () => {
  let r = await run('run', '--input', 'x.json');
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `sensorformer: run needs --model\n${HELP_POINTER}`);
  r = await run('run', '--model', fixturePath('attention.safetensors'), '--input', fixturePath('model/windows.json'));
  assert.equal(r.status, 1);
  assert.match(r.stderr, /BAD_FORMAT/);
  const bad = join(tmp, 'bad.json');
  writeFileSync(bad, '{"streams": [{"sensor": 0, "modality": "ecg", "placement": "chest", "rateHz": 100, "startTime": 0, "samples": ["a"]}]}');
  r = await run('run', '--model', modelPath, '--input', bad);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /INVALID_ARGUMENT: window\.streams\[0\]\.samples\[0\]/);
  // a failure in the first window leaves no partial document on stdout (a pipe into a JSON reader
  // sees nothing rather than '{"windows":[')
  assert.equal(r.stdout, '');
});

test('a recorded Bluetooth session runs through the CLI as hop windows', async () => {
  const { createVirtualClock, record, connectWearable, DEVICE_FILTERS, windowsFromRecording } = await import('../../web/src/ble/index.js');
  const { createSimulatedBluetooth } = await import('../../web/src/simulator/index.js');
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

  const r = await run('run', '--model', modelPath, '--input', file, '--window', '10', '--hop', '5');
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
    assert.deepEqual(asFloat32(out[i].pooled), Array.from(api.pooled), `window ${i}`);
  });
  model.dispose();
});

const { heartRateRecording, recordSession, T0, withSilence } = await import('./recordings.js');
const noStack = (stderr) => assert.doesNotMatch(stderr, /\n\s+at /, `a stack trace reached the user:\n${stderr}`);

test('--window and --hop must be finite and at least 1 ms; bad values are usage errors, not a hang', async () => {
  const file = join(tmp, 'short.sfrec');
  writeFileSync(file, await recordSession({ seed: 3, seconds: 5 }));
  const cases = [
    [['--window', '1e-9', '--hop', '1e-9'], '--window must be a number of seconds >= 0.001, got "1e-9"'],
    [['--hop', '1e-9'], '--hop must be a number of seconds >= 0.001, got "1e-9"'],
    [['--hop', '0'], '--hop must be a number of seconds >= 0.001, got "0"'],
    [['--hop=-5'], '--hop must be a number of seconds >= 0.001, got "-5"'],
    [['--window', 'abc'], '--window must be a number of seconds >= 0.001, got "abc"'],
    [['--window', 'Infinity'], '--window must be a number of seconds >= 0.001, got "Infinity"'],
    [['--hop', ''], '--hop must be a number of seconds >= 0.001, got ""'],
    [['--sensor=-1'], '--sensor must be an integer sensor id >= 0, got "-1"'],
    [['--sensor', '1.5'], '--sensor must be an integer sensor id >= 0, got "1.5"'],
  ];
  for (const [args, message] of cases) {
    const r = await run('run', '--model', modelPath, '--input', file, ...args);
    assert.equal(r.status, 2, `${args.join(' ')}: status ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
    assert.ok(r.stderr.startsWith(`sensorformer: ${message}\n`), r.stderr);
    assert.equal(r.stdout, '');
  }
  const help = await run('--help');
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--window .*>= 0\.001/);
  assert.match(help.stdout, /--hop .*>= 0\.001/);
  assert.match(help.stdout, /at\s+most 100,000 windows/);
  assert.match(help.stdout, /Exit codes: 0 done; 1 .*; 2 usage error/s);
  // The smallest allowed hop on the same 5 s recording finishes.
  const r = await run('run', '--model', modelPath, '--input', file, '--window', '0.5', '--hop', '0.001');
  assert.equal(r.status, 0, r.stderr);
  assert.ok(JSON.parse(r.stdout).windows.length > 1000);
});

test('a recording with 1e8 s of silence runs in seconds: both sides in windows, the silence counted once', async () => {
  const text = withSilence(await recordSession({ seed: 5, seconds: 40 }), { after: 20, shift: 1e8 });
  const file = join(tmp, 'silence.sfrec');
  writeFileSync(file, text);
  const r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, `status ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
  const windows = JSON.parse(r.stdout).windows;
  const before = windows.filter((w) => w.referenceTime < T0 + 1e7), after = windows.filter((w) => w.referenceTime > T0 + 1e8);
  assert.equal(before.length + after.length, windows.length);
  assert.ok(before.length >= 3 && after.length >= 3, `${before.length} windows before, ${after.length} after`);
  // The data just before the silence (ECG up to ~20 s after the start) is in a window.
  const lastEcg = Math.max(...before.flatMap((w) => w.tokens.time.filter((_, i) => w.tokens.modality[i] === 'ecg')));
  assert.ok(lastEcg > T0 + 18.5, `last ECG token before the silence at ${lastEcg - T0} s`);
  const skipped = /sensorformer: ([\d,]+) windows with no sample at all/.exec(r.stderr);
  assert.ok(skipped, r.stderr);
  assert.ok(Math.abs(Number(skipped[1].replaceAll(',', '')) - 1e8 / 5) < 10, skipped[0]);
  assert.equal(r.stderr.match(/no sample at all/g).length, 1, 'said once');
});

test('two notifications 1e8 s apart (the reported hang) finish in seconds', async () => {
  const file = join(tmp, 'two.sfrec');
  writeFileSync(file, heartRateRecording([T0 + 1, T0 + 1 + 1e8]));
  const r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, `status ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
  // One window, the first notification's, at its recorded time: one hr token (hr patches are 2
  // events, 1 of 2 present meets min_present_fraction 0.5); its one RR interval is 1 of a 4-event
  // rr patch, below 0.5, so rr gives no token. The second notification is less than a window of
  // data at the end of the recording: no window (as for any recording's last partial window).
  const windows = JSON.parse(r.stdout).windows;
  assert.equal(windows.length, 1);
  assert.equal(windows[0].referenceTime, T0 + 1);
  assert.deepEqual(windows[0].tokens, { stream: [0], modality: ['hr'], time: [T0 + 1], present: [1] });
});

test('more windows than the maximum: refused before any work, naming the count and a --hop that fits', async () => {
  const file = join(tmp, 'long.sfrec');
  writeFileSync(file, heartRateRecording(Array.from({ length: 200 }, (_, i) => T0 + 1 + i)));
  const r = await run('run', '--model', modelPath, '--input', file, '--hop', '0.001', '--output', join(tmp, 'never.json'));
  assert.equal(r.status, 1, `status ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
  const m = /^sensorformer: RESOURCE_EXHAUSTED: the recording gives about ([\d,]+) windows of 10 s every 0.001 s, more than the maximum of 100,000: pass --hop ([\d.]+) or larger\n$/.exec(r.stderr);
  assert.ok(m, r.stderr);
  assert.ok(Number(m[1].replaceAll(',', '')) > 100_000);
  assert.ok(Number(m[2]) > 0.001 && Number(m[2]) < 0.01, m[2]);
  assert.throws(() => readFileSync(join(tmp, 'never.json')), /ENOENT/, 'no output file for a refused run');
});

test('results are written as they are computed: an error in window 2 leaves windows 0 and 1 written', async () => {
  const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
  const bad = structuredClone(windows[2]);
  bad.streams[0].samples[3] = 1e39;  // beyond float32: NON_FINITE
  const input = join(tmp, 'batch-bad.json'), output = join(tmp, 'partial.json');
  writeFileSync(input, JSON.stringify({ windows: [windows[0], windows[1], bad, windows[0], bad, windows[1]] }));
  // The same on this thread and on a pool (where windows after the bad one may be computed
  // already: they are not written, and the second bad window is not the one reported).
  const outputs = [];
  for (const workers of ['1', '2', '3']) {
    const r = await run('run', '--model', modelPath, '--input', input, '--output', output, '--workers', workers);
    assert.equal(r.status, 1);
    assert.equal(r.stderr, 'sensorformer: NON_FINITE: input window 2: window.streams[0].samples[3] is 1e+39, beyond float32\'s range (|x| <= 3.4028234663852886e+38): it would become Infinity\n');
    outputs.push(readFileSync(output, 'utf8'));
  }
  assert.equal(outputs[1], outputs[0]);
  assert.equal(outputs[2], outputs[0]);
  const written = outputs[0];
  assert.throws(() => JSON.parse(written), SyntaxError, 'the partial output is not a complete JSON document');
  const done = JSON.parse(`${written}]}`).windows;
  assert.equal(done.length, 2);
  const model = await loadModel(modelPath);
  done.forEach((w, i) => assert.deepEqual(asFloat32(w.pooled), Array.from(model.forward(windows[i]).pooled)));
  model.dispose();
});

test('file problems are one line and exit 1, never a stack trace', async () => {
  const input = fixturePath('model/windows.json');
  let r = await run('run', '--model', modelPath, '--input', input, '--output', join(tmp, 'no', 'such', 'folder', 'out.json'));
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `sensorformer: IO: cannot write ${join(tmp, 'no', 'such', 'folder', 'out.json')}: the folder ${join(tmp, 'no', 'such', 'folder')} does not exist\n`);
  r = await run('run', '--model', modelPath, '--input', input, '--output', tmp);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `sensorformer: IO: cannot write ${tmp}: it is a folder\n`);
  r = await run('run', '--model', modelPath, '--input', join(tmp, 'missing.json'));
  assert.equal(r.status, 1);
  // The README's form for every failure, `CODE: message`: IO, as for a model that cannot be read.
  assert.equal(r.stderr, `sensorformer: IO: cannot read ${join(tmp, 'missing.json')}: no such file\n`);
  r = await run('run', '--model', modelPath, '--input', tmp);
  assert.equal(r.status, 1);
  // a folder is read as a Polar Sensor Logger export: this one holds none
  assert.equal(r.stderr, `sensorformer: BAD_FORMAT: no Polar Sensor Logger file in ${tmp} (a file whose first line starts with "Phone timestamp")\n`);
  r = await run('run', '--model', join(tmp, 'missing.safetensors'), '--input', input);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^sensorformer: IO: could not read the model from .*missing\.safetensors: ENOENT[^\n]*\n$/);
  const notJson = join(tmp, 'not.json');
  writeFileSync(notJson, '{"streams": [');
  r = await run('run', '--model', modelPath, '--input', notJson);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^sensorformer: BAD_FORMAT: .*not\.json is not valid JSON/);
  for (const stderr of [r.stderr]) noStack(stderr);
});

test('CSV rows must have as many cells as the header', async () => {
  const err = (text) => {
    try { parseCsv(text, {}); } catch (e) { return e; }
    assert.fail('accepted');
  };
  let e = err('time,hr,spo2\n1,60,98\n2,61\n');
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.equal(e.message, 'CSV: line 3 has 2 cells, the header has 3');
  e = err('time,hr,spo2\n1,60,98\n\n2,61,97,\n');  // a trailing comma is one more (empty) cell; line 4 after a blank line
  assert.equal(e.message, 'CSV: line 4 has 4 cells, the header has 3');
  assert.equal(err('time,hr\n1,Infinity\n').code, 'NON_FINITE');
  // beyond float32: refused at its line, not later as the window's samples[k]
  e = err('time,hr\n1,60\n2,-1e39\n');
  assert.equal(e.code, 'NON_FINITE');
  assert.equal(e.message, 'CSV: line 3, column "hr": -1e39 is beyond float32\'s range (|x| <= 3.4028234663852886e+38)');
  assert.equal(parseCsv('time,hr\n1,3.4e38\n').streams[0].samples[0], 3.4e38, 'the largest float32s are kept');
  // Empty cells written as commas are fine (missing samples; one value per column: events).
  assert.deepEqual(parseCsv('time,hr,spo2\n1,60,\n2,,97\n', { placement: 'finger' }).streams.map((s) => [s.timestamps, s.samples]), [[[1], [60]], [[2], [97]]]);
  const file = join(tmp, 'short-row.csv');
  writeFileSync(file, 'time,ecg@chest#0\n0,1\n0.01\n');
  const r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: INVALID_ARGUMENT: CSV: line 3 has 1 cells, the header has 2\n');
});

test('--max-gflop: the compute limit per window; a window over it exits 1 naming its tokens and the limit', async () => {
  // window 0 of the fixtures (107 tokens) is about 0.0013 GFLOP in the factorized model
  let r = await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), '--max-gflop', '1e-6');
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /RESOURCE_EXHAUSTED: input window 0: a window of 107 tokens needs about .* GFLOP .* limit of 1e-06 GFLOP/);
  r = await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), '--max-gflop', 'Infinity');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).windows.length, JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8')).windows.length);
  for (const bad of ['0', '-1', 'abc', ''])
    assert.equal((await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), '--max-gflop', bad)).status, 2, bad);
});

test('--workers: the output is byte-identical for 1, 2 and 3 workers (a recording, a batch, with attention maps)', async () => {
  const file = join(tmp, 'pool.sfrec');
  writeFileSync(file, await recordSession({ seed: 9, seconds: 60, disconnects: [{ device: 'strap', at: 20, duration: 6 }] }));
  const runs = [];
  for (const workers of ['1', '2', '3']) {
    const r = await run('run', '--model', modelPath, '--input', file, '--hop', '2', '--attention', '--workers', workers);
    assert.equal(r.status, 0, r.stderr);
    runs.push(r);
  }
  assert.ok(JSON.parse(runs[0].stdout).windows.length >= 20, 'enough windows to keep every worker busy');
  for (const r of runs.slice(1)) {
    assert.ok(r.stdout === runs[0].stdout, 'stdout differs from --workers 1');
    assert.equal(r.stderr, runs[0].stderr);
  }
  // A JSON batch into a file: the same bytes too, and the same as the library computes.
  const batch = join(tmp, 'pool-batch.json');
  const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
  writeFileSync(batch, JSON.stringify({ windows: Array.from({ length: 12 }, (_, i) => windows[i % windows.length]) }));
  const files = [];
  for (const workers of ['1', '2']) {
    const out = join(tmp, `pool-${workers}.json`);
    const r = await run('run', '--model', modelPath, '--input', batch, '--output', out, '--workers', workers);
    assert.equal(r.status, 0, r.stderr);
    files.push(readFileSync(out, 'utf8'));
  }
  assert.ok(files[1] === files[0], 'file output differs from --workers 1');
  const model = await loadModel(modelPath);
  JSON.parse(files[1]).windows.forEach((w, i) => assert.deepEqual(asFloat32(w.pooled), Array.from(model.forward(windows[i % windows.length]).pooled), `window ${i}`));
  model.dispose();
});

test('--threads: the output is byte-identical for 1, 2 and 3 threads (run and stream); anything but 1-16 is a usage error', async () => {
  // The bench's encoder (d 64, 4 heads, ff 256) on a 60 s, 50 Hz window (375 tokens): every step of
  // its forward is over the split grain (docs/performance.md), so 2 and 3 threads really split.
  const encoder = new URL('../../bench/models/encoder.safetensors', import.meta.url).pathname;
  const samples = Array.from({ length: 50 * 60 }, (_, i) => Math.round(1000 * Math.sin(i / 7) * Math.cos(i / 131)) / 1000);
  const long = join(tmp, 'long-window.json');
  writeFileSync(long, JSON.stringify({ streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: 50, startTime: 1764460800, samples }] }));
  const outs = [];
  for (const threads of ['1', '2', '3']) {
    const r = await run('run', '--model', encoder, '--input', long, '--embeddings', '--threads', threads);
    assert.equal(r.status, 0, r.stderr);
    outs.push(r.stdout);
  }
  assert.equal(JSON.parse(outs[0]).windows[0].embeddings.length, 375, 'a window long enough for the steps to split');
  assert.ok(outs[1] === outs[0] && outs[2] === outs[0], 'stdout differs from --threads 1');
  const rec = join(tmp, 'threads.sfrec');
  writeFileSync(rec, await recordSession({ seed: 4, seconds: 30 }));
  const streams = [];
  for (const threads of ['1', '2']) {
    const r = await run('stream', '--model', fixturePath('model/flattened_lookback.safetensors'), '--input', rec, '--threads', threads);
    assert.equal(r.status, 0, r.stderr);
    streams.push(r.stdout);
  }
  assert.ok(streams[0].length > 0 && streams[1] === streams[0], 'stream output differs from --threads 1');
  for (const bad of ['0', '17', '1.5', 'abc', '']) {
    const r = await run('run', '--model', encoder, '--input', long, `--threads=${bad}`);
    assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`sensorformer: --threads must be an integer from 1 to 16, got "${bad}"\n`), r.stderr);
  }
});

test('--workers must be an integer from 1 to 64: anything else is a usage error', async () => {
  for (const bad of ['0', '-1', '1.5', '65', 'abc', '', 'auto']) {
    const r = await run('run', '--model', modelPath, '--input', fixturePath('model/windows.json'), `--workers=${bad}`);
    assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`sensorformer: --workers must be an integer from 1 to 64, got "${bad}"\n`), r.stderr);
    assert.equal(r.stdout, '');
  }
  // More workers than windows is allowed (one window: computed on this thread).
  const r = await run('run', '--model', modelPath, '--input', new URL('../../examples/window.json', import.meta.url).pathname, '--workers', '64');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).windows.length, 1);
});

// ---- issue 11, item 5 -------------------------------------------------------------------------

// run() with `input` written to the child's stdin.
const runWithStdin = (input, ...args) => new Promise((resolve) => {
  const child = execFile(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: CHILD_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 1 << 30 },
    (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, signal: error?.signal ?? null, stdout, stderr }));
  child.stdin.end(input);
});
const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const exampleCsv = new URL('../../examples/device.csv', import.meta.url).pathname;
const exampleWindow = new URL('../../examples/window.json', import.meta.url).pathname;

test('--version prints the package version and exits 0', async () => {
  for (const args of [['--version'], ['run', '--version']]) {
    const r = await run(...args);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${packageJson.version}\n`);
    assert.equal(r.stderr, '');
  }
});

test('--input - reads JSON, CSV or a recording from stdin, the same as from a file', async () => {
  const recording = join(tmp, 'stdin.sfrec');
  writeFileSync(recording, await recordSession({ seed: 13, seconds: 25 }));
  for (const file of [fixturePath('model/windows.json'), exampleCsv, recording]) {
    const fromFile = await run('run', '--model', modelPath, '--input', file);
    assert.equal(fromFile.status, 0, fromFile.stderr);
    const fromStdin = await runWithStdin(readFileSync(file, 'utf8'), 'run', '--model', modelPath, '--input', '-');
    assert.equal(fromStdin.status, 0, fromStdin.stderr);
    assert.ok(fromStdin.stdout === fromFile.stdout, `${file}: stdin output differs`);
    assert.equal(fromStdin.stderr, fromFile.stderr);
    assert.ok(JSON.parse(fromStdin.stdout).windows.length >= 1);
  }
  // Content that is none of the three: exit 1 naming stdin and --format.
  let r = await runWithStdin('ecg,time\n1,2\n', 'run', '--model', modelPath, '--input', '-');
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: BAD_FORMAT: cannot tell what standard input is: not JSON (it does not start with "{"), not CSV (its first line does not start with a "time" column), not a recording, not a Polar Sensor Logger file; pass --format json, csv, sfrec, wfdb or polarlogger\n');
  // --format overrides the name and the content.
  const csvAsTxt = join(tmp, 'device.txt');
  writeFileSync(csvAsTxt, readFileSync(exampleCsv, 'utf8'));
  r = await run('run', '--model', modelPath, '--input', csvAsTxt, '--format', 'csv');
  assert.equal(r.status, 0, r.stderr);
  r = await run('run', '--model', modelPath, '--input', exampleCsv, '--format', 'json');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^sensorformer: BAD_FORMAT: .*device\.csv is not valid JSON/);
  r = await run('run', '--model', modelPath, '--input', exampleCsv, '--format', 'xml');
  assert.equal(r.status, 2);
  assert.ok(r.stderr.startsWith('sensorformer: --format must be json, csv, sfrec, wfdb or polarlogger, got "xml"\n'), r.stderr);
});

test('options an input kind has no use for are usage errors (exit 2), not silently ignored', async () => {
  const recording = join(tmp, 'kinds.sfrec');
  writeFileSync(recording, await recordSession({ seed: 14, seconds: 12 }));
  const json = fixturePath('model/windows.json');
  const cases = [
    [json, ['--window', '5'], `--window applies to recordings (.sfrec) and Polar Sensor Logger exports only; ${json} is JSON windows`],
    [json, ['--hop', '5', '--window', '5'], `--window, --hop apply to recordings (.sfrec) and Polar Sensor Logger exports only; ${json} is JSON windows`],
    [exampleCsv, ['--hop', '2'], `--hop applies to recordings (.sfrec) and Polar Sensor Logger exports only; ${exampleCsv} is CSV input`],
    [json, ['--placement', 'wrist'], `--placement applies to CSV input, a WFDB record and Polar Sensor Logger exports only; ${json} is JSON windows`],
    [recording, ['--sensor', '2'], `--sensor applies to CSV input only; ${recording} is recordings (.sfrec)`],
    [recording, ['--rate', 'ecg=130'], `--rate applies to CSV input only; ${recording} is recordings (.sfrec)`],
  ];
  for (const [file, args, message] of cases) {
    const r = await run('run', '--model', modelPath, '--input', file, ...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.startsWith(`sensorformer: ${message}\n`), r.stderr);
    assert.equal(r.stdout, '');
  }
});

test('every exit path: 0 done, 1 model/input/file failed, 2 usage', async () => {
  const json = fixturePath('model/windows.json');
  const usage = [
    [[], ''],
    [['run'], 'run needs --model'],
    [['run', '--model', modelPath], 'run needs --input'],
    [['predict', '--model', modelPath, '--input', json], 'unknown command "predict" (the commands are "run" and "stream")'],
    [['run', 'extra', '--model', modelPath, '--input', json], 'unexpected argument "extra"'],
    [['run', '--model', modelPath, '--input', json, '--colour'], 'unknown option --colour'],
    [['run', '--model', modelPath, '--input'], '--input needs a value'],
    [['run', '--model', modelPath, '--input', json, '--pretty=yes'], '--pretty takes no value'],
    [['run', '--model', modelPath, '--input', json, '--max-gflop', '-1'], '--max-gflop needs a value (one starting with "-" is written --max-gflop=-N)'],
    [['run', '--model', modelPath, '--input', exampleCsv, '--rate', 'acc_x@wrist#1'], '--rate must be <column>=<Hz> or <column>=events, got "acc_x@wrist#1"'],
    [['run', '--model', modelPath, '--input', exampleCsv, '--rate', 'acc_x=50'], '--rate acc_x=50: the CSV has no column "acc_x" (its columns: acc_x@wrist#1, temperature@wrist#3)'],
    [['run', '--model', modelPath, '--input', exampleCsv, '--rate', 'acc_x@wrist#1=fast'], '--rate acc_x@wrist#1=fast: the rate must be a number of Hz > 0 or "events", got "fast"'],
    [['run', '--model', modelPath, '--input', exampleCsv, '--rate', 'acc_x@wrist#1=0'], '--rate acc_x@wrist#1=0: the rate must be a number of Hz > 0 or "events", got "0"'],
    [['run', '--model', modelPath, '--input', exampleCsv, '--rate', 'acc_x@wrist#1=50', '--rate', 'acc_x@wrist#1=events'], '--rate is given twice for column "acc_x@wrist#1"'],
  ];
  for (const [args, message] of usage) {
    const r = await run(...args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    // The message and a pointer to --help; the usage itself only when no command was given.
    assert.equal(r.stderr, message ? `sensorformer: ${message}\n${HELP_POINTER}` : `sensorformer: ${(await run('--help')).stdout}`, args.join(' '));
    assert.equal(r.stdout, '');
  }
  // 1: each failure is one line "sensorformer: CODE: message" (or a file's path and why)
  const failures = [
    [['--model', join(tmp, 'nope.safetensors'), '--input', json], /^sensorformer: IO: /],
    [['--model', json, '--input', json], /^sensorformer: BAD_FORMAT: /],
    [['--model', modelPath, '--input', join(tmp, 'nope.json')], /^sensorformer: IO: cannot read /],
    [['--model', modelPath, '--input', json, '--output', join(tmp, 'nope', 'out.json')], /^sensorformer: IO: cannot write /],
  ];
  for (const [args, pattern] of failures) {
    const r = await run('run', ...args);
    assert.equal(r.status, 1, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, pattern);
    assert.equal(r.stderr.split('\n').length, 2, `one line: ${r.stderr}`);
  }
  // The input is read and checked before the model is loaded: its error comes first.
  const badCsv = join(tmp, 'bad-first.csv');
  writeFileSync(badCsv, 'time,hr\n1,60\n2,sixty\n');
  const r = await run('run', '--model', join(tmp, 'nope.safetensors'), '--input', badCsv);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: INVALID_ARGUMENT: CSV: line 3, column "hr": "sixty" is not a number (leave the cell empty or write NaN for a missing sample)\n');
  // 0: --help and a normal run (and a reader that closes stdout early, in the test above)
  assert.equal((await run('--help')).status, 0);
  assert.equal((await run('run', '--model', modelPath, '--input', json)).status, 0);
});

test('output: no embeddings by default, --embeddings adds them (tokens x d_model), --pretty indents the same document', async () => {
  const json = fixturePath('model/windows.json');
  const plain = await run('run', '--model', modelPath, '--input', json);
  const withEmbeddings = await run('run', '--model', modelPath, '--input', json, '--embeddings');
  const pretty = await run('run', '--model', modelPath, '--input', json, '--embeddings', '--pretty', '--attention');
  const prettyAttention = await run('run', '--model', modelPath, '--input', json, '--embeddings', '--attention');
  for (const r of [plain, withEmbeddings, pretty, prettyAttention]) assert.equal(r.status, 0, r.stderr);
  assert.ok(plain.stdout.length * 3 < withEmbeddings.stdout.length, `${plain.stdout.length} vs ${withEmbeddings.stdout.length} bytes`);
  assert.equal(pretty.stdout, `${JSON.stringify(JSON.parse(prettyAttention.stdout), null, 2)}\n`);
  // --output - is stdout
  const dash = await run('run', '--model', modelPath, '--input', json, '--output', '-');
  assert.equal(dash.status, 0, dash.stderr);
  assert.equal(dash.stdout, plain.stdout);
  const model = await loadModel(modelPath);
  const { windows } = JSON.parse(readFileSync(json, 'utf8'));
  JSON.parse(withEmbeddings.stdout).windows.forEach((w, i) => {
    const api = model.forward(windows[i]);
    assert.equal(JSON.parse(plain.stdout).windows[i].embeddings, undefined);
    assert.equal(w.embeddings.length, api.dims[0]);
    assert.deepEqual(w.embeddings.flat().map((v) => Math.fround(v)), Array.from(api.embeddings));
    // tokens: the API's four arrays, as arrays
    assert.deepEqual(w.tokens, { stream: Array.from(api.tokens.stream), modality: api.tokens.modality, time: Array.from(api.tokens.time), present: Array.from(api.tokens.present) });
    assert.deepEqual(Object.keys(w), ['referenceTime', 'tokens', 'pooled', 'head', 'embeddings']);
  });
  model.dispose();
});

// The decimal of p significant digits one unit in the last place away from `text` (any notation).
function neighbours(v, p) {
  const [mantissa, exponent] = v.toExponential(p - 1).split('e');
  const digits = BigInt(mantissa.replace('.', '').replace('-', ''));
  const sign = v < 0 ? '-' : '';
  return [digits - 1n, digits, digits + 1n].map((d) => `${sign}${d}e${Number(exponent) - (p - 1)}`);
}
const significantDigits = (text) => text.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length || 1;

test('float32 values print as the shortest decimal that reads back as the same float32', async () => {
  const { shortestFloat32 } = await import('../../web/src/float32.js');
  // Known values (their float32 and its shortest decimal, as in IEEE 754 binary32 tables).
  const known = [[0.1, '0.1'], [1 / 3, '0.33333334'], [16777217, '16777216'], [2 ** -149, '1e-45'], [3.4028234663852886e38, '3.4028235e+38'],
    [1.1754943508222875e-38, '1.1754944e-38'], [-2.5, '-2.5'], [100, '100'], [2 ** 100, '1.2676506e+30'], [0, '0'], [0.3, '0.3'], [1e-40, '1e-40']];
  for (const [v, text] of known) assert.equal(JSON.stringify(shortestFloat32(v)), text, String(v));
  // Random float32 bit patterns (seeded): normal, subnormal, both signs.
  const random = prng(21);
  const bits = new Uint32Array(1), asFloat = new Float32Array(bits.buffer);
  let subnormals = 0;
  for (let i = 0; i < 20000; i++) {
    bits[0] = i % 4 === 0 ? Math.floor(random() * 0x800000) | (random() < 0.5 ? 0x80000000 : 0) : Math.floor(random() * 2 ** 32);
    const v = asFloat[0];
    if (!Number.isFinite(v) || v === 0) continue;
    if (Math.abs(v) < 2 ** -126) subnormals++;
    const text = JSON.stringify(shortestFloat32(v));
    assert.equal(Math.fround(parseFloat(text)), v, `${v} printed ${text}`);
    const p = significantDigits(text);
    assert.ok(p <= 9, text);
    // No decimal with fewer digits reads back: the nearest ones at p - 1 digits all fail.
    if (p > 1) for (const shorter of neighbours(v, p - 1)) assert.notEqual(Math.fround(Number(shorter)), v, `${text}: ${shorter} is shorter`);
  }
  assert.ok(subnormals > 3000, `${subnormals} subnormals`);
  // The CLI's output uses it: every number in pooled and head has at most 9 significant digits.
  const r = await run('run', '--model', modelPath, '--input', exampleWindow);
  const w = JSON.parse(r.stdout).windows[0];
  const texts = r.stdout.match(/"pooled":\[([^\]]*)\]/)[1].split(',');
  assert.equal(texts.length, 16);
  for (const [i, t] of texts.entries()) {
    assert.ok(significantDigits(t) <= 9, t);
    assert.equal(t, JSON.stringify(shortestFloat32(w.pooled[i])));
  }
});

test('an event-driven stream with no event yet is an empty stream: no token, not a rate_hz error', async () => {
  // It used to exit 1 with the core's "a regular stream needs a finite rate_hz > 0".
  const file = join(tmp, 'empty-events.json');
  writeFileSync(file, JSON.stringify({ streams: [{ sensor: 0, modality: 'hr', placement: 'chest', timestamps: [], samples: [] }] }));
  const r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /rate_hz|start_time|reference_time/);
  const [w] = JSON.parse(r.stdout).windows;
  assert.deepEqual(w.tokens, { stream: [], modality: [], time: [], present: [] });
});

test('an unknown modality or placement names the CSV column (or the stream) and lists what the model knows', async () => {
  const file = join(tmp, 'unknown.csv');
  writeFileSync(file, 'time,ecg@chest#0,eda@wrist#1\n0.000,1,2\n0.010,2,3\n0.020,3,4\n');
  let r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: INVALID_ARGUMENT: CSV column "eda@wrist#1": modality "eda" is not one the model knows (ecg, acc_x, hr, rr, temperature)\n');
  writeFileSync(file, 'time,ecg@ankle\n0.000,1\n0.010,2\n0.020,3\n');
  r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.stderr, 'sensorformer: INVALID_ARGUMENT: CSV column "ecg@ankle": placement "ankle" is not one the model knows (chest, wrist, finger)\n');
  writeFileSync(file, 'time,ecg@chest#9\n0.000,1\n0.010,2\n0.020,3\n');
  r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.stderr, 'sensorformer: INDEX_OUT_OF_RANGE: CSV column "ecg@chest#9": sensor 9 is outside the model\'s 4 sensors\n');
  const json = join(tmp, 'unknown.json');
  writeFileSync(json, JSON.stringify({ streams: [{ sensor: 0, modality: 'ECG', placement: 'chest', rateHz: 100, startTime: 0, samples: [1] }] }));
  r = await run('run', '--model', modelPath, '--input', json);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: INVALID_ARGUMENT: window.streams[0]: modality "ECG" is not one the model knows (ecg, acc_x, hr, rr, temperature)\n');
});

test('CSV through the CLI: per-column warnings on stderr, --rate overrides them', async () => {
  const file = join(tmp, 'hr-grid.csv');
  const lines = ['time,ecg@chest#0,hr@chest#1'];
  const random = prng(22);
  let next = 0.5;
  for (let i = 0; i < 1300; i++) {
    const t = i / 130;
    let hr = '';
    if (t >= next) { hr = String(60 + Math.round(10 * random())); next += 1 + 0.01 * (random() - 0.5); }
    lines.push(`${(1764460800 + t).toFixed(6)},${Math.round(500 * Math.sin(i / 7))},${hr}`);
  }
  writeFileSync(file, lines.join('\n'));
  let r = await run('run', '--model', modelPath, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /^sensorformer: CSV column "hr@chest#1": its timestamps are nearly regular \(1(\.\d+)? Hz\).*--rate hr@chest#1=events to keep this and silence the warning\n$/);
  r = await run('run', '--model', modelPath, '--input', file, '--rate', 'hr@chest#1=events');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const events = JSON.parse(r.stdout).windows[0];
  r = await run('run', '--model', modelPath, '--input', file, '--rate', 'hr@chest#1=1');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.notDeepEqual(JSON.parse(r.stdout).windows[0].pooled, events.pooled, 'read at 1 Hz it is a different window');
});

test('--help names only files that are in the npm package', async () => {
  const help = await run('--help');
  assert.equal(help.status, 0);
  const paths = [...new Set(help.stdout.match(/\b[\w.-]+\/[\w./-]*\.[a-z]+\b/g) ?? [])];
  assert.ok(paths.includes('examples/window.json') && paths.includes('examples/device.csv'), paths.join(' '));
  const shipped = (path) => packageJson.files.some((f) => (f.endsWith('/') ? path.startsWith(f) : path === f));
  for (const path of paths) {
    assert.ok(shipped(path), `--help names ${path}, which is not in package.json "files"`);
    readFileSync(new URL(`../../${path}`, import.meta.url));  // and it exists
  }
  // README sections it names exist in README.md (npm always packs the README)
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const [, section] of help.stdout.matchAll(/README "([^"]+)"/g)) assert.match(readme, new RegExp(`^#+ ${section.replace(/[()`]/g, '.')}`, 'm'), section);
});

test('a model with labels: the CLI prints the probabilities and the label forward gives, and none for a model without', async () => {
  // The demo model's config has labels (rest, walk, run); the probabilities are the API's own,
  // printed at float32 precision (so equal after Math.fround), the label its arg-max name.
  const demo = fileURLToPath(new URL('../../demo/model/demo.safetensors', import.meta.url));
  const rnd = prng(5);
  const window = {
    streams: [
      { sensor: 0, modality: 'hr', placement: 'chest', timestamps: [0, 1, 2, 3, 4, 5, 6, 7], samples: Array.from({ length: 8 }, () => 120 + 30 * rnd()) },
      { sensor: 3, modality: 'temperature', placement: 'chest', timestamps: [0.5, 2.5, 4.5, 6.5], samples: [34.1, 34.2, 34.2, 34.3] },
    ],
  };
  const file = join(tmp, 'labelled.json');
  writeFileSync(file, JSON.stringify(window));
  const r = await run('run', '--model', demo, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  const [w] = JSON.parse(r.stdout).windows;
  const model = await loadModel(demo);
  const api = model.forward(window);
  model.dispose();
  assert.ok(api.probabilities && api.label, 'the demo model has labels: forward must give probabilities and a label');
  assert.deepEqual(asFloat32(w.probabilities), Array.from(api.probabilities));
  assert.equal(w.label, api.label);
  assert.ok(['rest', 'walk', 'run'].includes(w.label));
  const plain = await run('run', '--model', modelPath, '--input', exampleWindow);
  assert.equal(plain.status, 0, plain.stderr);
  for (const x of JSON.parse(plain.stdout).windows) assert.ok(!('probabilities' in x) && !('label' in x), 'a model without labels prints neither');
});

// ---------------------------------------------------------------------------------------------
// sensorformer stream: a recording replayed into a streaming session.

const lookbackPath = fixturePath('model/flattened_lookback.safetensors');
const jsonLines = (text) => text.trimEnd().split('\n').map((l) => JSON.parse(l));

test('stream: one line per push that made tokens final; tokens equal forward over the chunks the replay gave, pooled head = the head on their mean', async () => {
  const { replayIntoSession } = await import('../../web/src/ble/session.js');
  const text = await recordSession({ seed: 21, seconds: 30, disconnects: [{ device: 'strap', at: 12, duration: 5 }] });
  const file = join(tmp, 'stream.sfrec');
  writeFileSync(file, text);
  const r = await run('stream', '--model', lookbackPath, '--input', file, '--embeddings', '--window', '4');
  assert.equal(r.status, 0, r.stderr);
  noStack(r.stderr);
  assert.match(r.stderr, /no use for acc_y@chest#1, acc_z@chest#1, spo2@finger#4: left out\n/);
  const lines = jsonLines(r.stdout);

  // The same replay in this process (seeded recording, virtual clock: the same chunks), its chunks
  // kept; the reference is a forward of everything they hold (docs/model.md "Streaming sessions").
  const model = await loadModel(lookbackPath);
  const session = model.stream({ historySeconds: 4 });
  const chunks = [];
  const keeper = { push: (c) => { chunks.push(c); return session.push(c); } };
  await replayIntoSession(text, keeper, { config: model.config });
  const streams = [];
  for (const c of chunks) c.streams.forEach((p, i) => {
    if (!p) return;
    const s = (streams[i] ??= { sensor: p.sensor, modality: p.modality, placement: p.placement, rateHz: p.rateHz ?? null, startTime: p.startTime, samples: [], timestamps: [] });
    if (s.rateHz === null) { s.timestamps.push(...p.timestamps); s.samples.push(...p.samples); return; }
    if (p.startTime !== undefined) while (s.samples.length < Math.round((p.startTime - s.startTime) * s.rateHz)) s.samples.push(NaN);
    s.samples.push(...p.samples);
    if (p.until !== undefined) while (s.startTime + s.samples.length / s.rateHz < p.until) s.samples.push(NaN);
  });
  const full = model.forward({
    referenceTime: session.referenceTime,
    streams: streams.map(({ timestamps, rateHz, startTime, ...s }) => (rateHz === null ? { ...s, timestamps } : { ...s, rateHz, startTime })),
  });
  const d = full.dims[1], row = new Map();
  full.tokens.time.forEach((t, i) => row.set(`${full.tokens.stream[i]}@${t}`, i));
  const { tensors } = readSafetensors(lookbackPath);
  const W = tensors['head.weight'].data, b = tensors['head.bias'].data, outputs = tensors['head.bias'].shape[0];
  const history = [];  // [time, present, embedding] of every final token so far
  let next = 0, worst = 0;
  assert.ok(lines.length >= 20, `${lines.length} lines`);
  for (const l of lines) {
    assert.equal(l.tokens, l.time.length);
    assert.ok(l.tokens > 0, 'only pushes that made tokens final');
    assert.equal(l.index, next, 'session indices continue from line to line');
    next += l.tokens;
    l.time.forEach((t, j) => {
      assert.ok(t < l.frontier, 'final tokens are before the frontier');
      const i = row.get(`${l.stream[j]}@${t}`);
      assert.ok(i !== undefined, `token of stream ${l.stream[j]} at ${t} is in the forward`);
      assert.equal(l.present[j], full.tokens.present[i]);
      assert.equal(l.modality[j], full.tokens.modality[i]);
      for (let c = 0; c < d; c++) worst = Math.max(worst, Math.abs(l.embeddings[j][c] - full.embeddings[i * d + c]));
      history.push([t, l.present[j], l.embeddings[j]]);
    });
    // pooled: masked mean of the final tokens in [frontier - 4, frontier), then the head (float64 here)
    assert.equal(l.pooled.to, l.frontier);
    assert.equal(l.pooled.from, l.frontier - 4);
    const inRange = history.filter(([t, p]) => p && t >= l.pooled.from && t < l.pooled.to);
    assert.equal(l.pooled.presentTokens, inRange.length);
    for (let o = 0; o < outputs; o++) {
      let h = b[o];
      for (let c = 0; c < d; c++) h += W[o * d + c] * inRange.reduce((sum, x) => sum + x[2][c], 0) / Math.max(1, inRange.length);
      assert.ok(Math.abs(l.pooled.head[o] - h) <= 1e-5, `head ${o}: ${l.pooled.head[o]} vs ${h}`);
    }
  }
  // 1e-5: float32 sums tiled differently (docs/model.md "Streaming sessions").
  assert.ok(worst <= 1e-5, `largest difference ${worst}`);
  assert.equal(next, session.finalTokens, 'the CLI printed every final token of the same replay');
  model.dispose();
});

test('stream: errors as the other commands give them', async () => {
  const file = join(tmp, 'stream-errors.sfrec');
  writeFileSync(file, await recordSession({ seed: 22, seconds: 4 }));
  // a model that is not causal: the session refuses it, saying so
  const notCausal = await run('stream', '--model', modelPath, '--input', file);
  assert.equal(notCausal.status, 1);
  assert.match(notCausal.stderr, /^sensorformer: INVALID_ARGUMENT: .*causal/);
  noStack(notCausal.stderr);
  // not a recording
  const notRecording = await run('stream', '--model', lookbackPath, '--input', exampleWindow);
  assert.equal(notRecording.status, 1);
  assert.match(notRecording.stderr, /^sensorformer: BAD_FORMAT: .*window\.json is not a recording/);
  // options of "run" only, a bad --window, a missing file
  for (const [args, message] of [
    [['--hop', '2'], '--hop applies to "run" only'],
    [['--workers', '2', '--pretty'], '--pretty, --workers apply to "run" only'],
    [['--window', '0'], '--window must be a number of seconds >= 0.001, got "0"'],
  ]) {
    const r = await run('stream', '--model', lookbackPath, '--input', file, ...args);
    assert.equal(r.status, 2, args.join(' '));
    assert.ok(r.stderr.startsWith(`sensorformer: ${message}\n`), r.stderr);
  }
  const missing = await run('stream', '--model', lookbackPath, '--input', join(tmp, 'nope.sfrec'));
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /cannot read .*nope\.sfrec: no such file/);
  noStack(missing.stderr);
});

// 1e8 s of silence (3 years): a gap costs a minute of absent patches per regular stream, the rest is
// skipped and listed on the line that crosses it (docs/model.md "Gaps"); before, the push was
// refused ("mark long gaps in several pushes") and the command failed.
test('stream: 1e8 s of silence is crossed, its skipped patches listed; tokens on both sides', async () => {
  const silent = join(tmp, 'stream-silence.sfrec');
  writeFileSync(silent, withSilence(await recordSession({ seed: 5, seconds: 40 }), { after: 20, shift: 1e8 }));
  const s = await run('stream', '--model', lookbackPath, '--input', silent);
  assert.equal(s.status, 0, s.stderr);
  noStack(s.stderr);
  const lines = jsonLines(s.stdout);
  const times = lines.flatMap((l) => l.time);
  assert.ok(times.some((t) => t < T0 + 20) && times.some((t) => t > T0 + 1e8), 'tokens before and after the silence');
  assert.ok(times.every((t) => t < T0 + 100 || t > T0 + 1e8 - 100), 'no absent tokens through the silence but its first minute');
  // Skipped: each stream's patches from a minute after its last present one before the silence to
  // its first present one after it (a stream that resumes late has its first seconds skipped too).
  const skipped = lines.flatMap((l) => l.skipped ?? []);
  const last = Math.max(...times);
  assert.ok(skipped.some((r) => r.from < T0 + 100 && r.to > T0 + 1e8 - 100 && r.patches > 1e6), JSON.stringify(skipped.slice(0, 3)));
  for (const r of skipped) assert.ok(r.from > T0 + 20 && r.to <= last && r.patches >= 1, JSON.stringify(r));
});

test('stream: a model with labels (the demo\'s stream model) prints probabilities = softmax(head) and the label of the largest', async () => {
  const demo = fileURLToPath(new URL('../../demo/model/stream.safetensors', import.meta.url));
  const file = join(tmp, 'stream-labels.sfrec');
  writeFileSync(file, await recordSession({ seed: 23, seconds: 20 }));
  const r = await run('stream', '--model', demo, '--input', file);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '', 'the demo model takes every stream of the device layer');
  const lines = jsonLines(r.stdout);
  assert.ok(lines.length >= 10);
  const labels = ['rest', 'walk', 'run'];  // the demo model's config
  for (const l of lines) {
    const { head, probabilities, label, presentTokens } = l.pooled;
    if (presentTokens === 0) { assert.equal(probabilities, null); assert.equal(label, null); continue; }
    const top = Math.max(...head), e = head.map((h) => Math.exp(h - top)), sum = e.reduce((a, b) => a + b, 0);
    // 1e-6: the CLI prints float32 probabilities (rounding 6e-8) of a float32 head
    e.forEach((x, i) => assert.ok(Math.abs(probabilities[i] - x / sum) < 1e-6, `${probabilities[i]} vs ${x / sum}`));
    assert.equal(label, labels[head.indexOf(top)]);
  }
});

test('a mistyped option or command: one line, a "did you mean" when one is close, and a pointer to --help (exit 2)', async () => {
  const json = fixturePath('model/windows.json');
  for (const [args, message] of [
    [['run', '--model', modelPath, '--input', json, '--atention'], 'unknown option --atention (did you mean --attention?)'],
    [['run', '--mdoel', modelPath, '--input', json], 'unknown option --mdoel (did you mean --model?)'],
    [['run', '--model', modelPath, '--input', json, '--workrs', '2'], 'unknown option --workrs (did you mean --workers?)'],
    [['run', '--model', modelPath, '--input', json, '--embed'], 'unknown option --embed (did you mean --embeddings?)'],
    [['run', '--model', modelPath, '--input', json, '--colour'], 'unknown option --colour'],
    [['run', '--model', modelPath, '--input', json, '-x'], 'unknown option -x'],
    [['rn', '--model', modelPath, '--input', json], 'unknown command "rn" (did you mean "run"? the commands are "run" and "stream")'],
    [['strem', '--model', modelPath, '--input', json], 'unknown command "strem" (did you mean "stream"? the commands are "run" and "stream")'],
  ]) {
    const r = await run(...args);
    assert.equal(r.status, 2, args.join(' '));
    assert.equal(r.stderr, `sensorformer: ${message}\n${HELP_POINTER}`, args.join(' '));
    assert.equal(r.stdout, '');
  }
});

test('--model or --input /dev/zero: a typed error naming the file once a bounded size is read, not a read for ever', async () => {
  // The bounds: the largest model file (1 GiB of float32 parameters + a 16 MiB header + 8 bytes)
  // and V8's longest string for an input read as text (2^29 - 24 in Node 20); the child is killed
  // after CHILD_TIMEOUT_MS, so a read for ever fails here.
  let r = await run('run', '--model', '/dev/zero', '--input', fixturePath('model/windows.json'));
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, 'sensorformer: RESOURCE_EXHAUSTED: could not read the model from /dev/zero: it holds more than 1,090,519,048 bytes, the largest model file sensorformer reads (1 GiB of float32 parameters and a 16 MiB header)\n');
  r = await run('run', '--model', modelPath, '--input', '/dev/zero', '--format', 'json');
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.stderr, 'sensorformer: RESOURCE_EXHAUSTED: /dev/zero holds more than 536,870,888 bytes, the most an input can be (it is read as text)\n');
});

test('a recording whose PMD features read is corrupted: one line with the code, never a stack trace', async () => {
  const lines = (await recordSession({ seed: 31, seconds: 4 })).split('\n');
  const at = lines.findIndex((l) => l.includes('"read":true') && l.includes('fb005c81-'));
  assert.ok(at > 0, 'the recording has a PMD features read');
  lines[at] = lines[at].replace('"hex":"0f', '"hex":"1f');
  const file = join(tmp, 'bad-features.sfrec');
  writeFileSync(file, lines.join('\n'));
  const expected = 'sensorformer: DECODE_ERROR: the recording\'s Polar H10 SIM: PMD features: expected 0x0F at offset 0 (a control point read), got 0x1F\n';
  const r = await run('run', '--model', fileURLToPath(new URL('../../demo/model/demo.safetensors', import.meta.url)), '--input', file);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, expected);
  const s = await run('stream', '--model', lookbackPath, '--input', file);
  assert.equal(s.status, 1);
  assert.equal(s.stderr, expected);
});

// Sparse recordings (issue 19): heart-rate notifications 1000 s apart took 304 s for 10,001 of them
// (the replay stepped every second of silence, each step a push), and silences of over ~6 days
// failed with "mark long gaps in several pushes". Now a silence is one step and one `until` per
// stream, and the session skips a gap's absent patches after a minute. What the output must hold,
// by hand: each notification's beat is an hr event (patch 2) and an rr event (patch 4) whose
// patches the next notification, more than eventTimeoutSeconds (15 s) later, closes: one present hr
// token (1 of 2) and one absent rr token (1 of 4) per notification, at its time, but the last.
test('stream on sparse recordings: notifications 1000 s and 8 days apart, two tokens each', async () => {
  const times = [...Array.from({ length: 300 }, (_, i) => T0 + 1 + 1000 * i), T0 + 1 + 1000 * 299 + 8 * 86400];
  const file = join(tmp, 'sparse.sfrec');
  writeFileSync(file, heartRateRecording(times));
  const r = await run('stream', '--model', lookbackPath, '--input', file);
  assert.equal(r.status, 0, `status ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
  noStack(r.stderr);
  const lines = jsonLines(r.stdout);
  const tokens = lines.flatMap((l) => l.time.map((t, j) => `${l.modality[j]}@${t - T0}:${l.present[j]}`));
  // The last notification's patches stay open: the replay's final watermark is 1 s after it.
  const expected = times.slice(0, -1).flatMap((t) => [`hr@${t - T0}:1`, `rr@${t - T0}:0`]);
  assert.deepEqual(tokens.slice().sort(), expected.slice().sort());
});

test('a Polar Sensor Logger export (a folder): windows of --window s every --hop, each the API\'s forward on the same streams; options and refusals', async () => {
  // 12 s of ACC at 50 Hz (sensor time + 1 s = phone time) and HR once a second; the demo model
  // (acc_x/y/z, hr; placements chest, wrist, finger) with --placement wrist.
  const dir = mkdtempSync(join(tmp, 'polar-'));
  const NS0 = 704201974000000000n, T0 = 946684800 + 704201974;  // 2022-04-25T11:39:34 as UTC
  const phone = (s) => new Date((T0 + s) * 1000).toISOString().slice(0, 23);
  const acc = ['Phone timestamp;sensor timestamp [ns];X [mg];Y [mg];Z [mg]'];
  const value = (k, axis) => Math.round(1000 * Math.sin(k / 7 + axis) + 30 * axis);
  for (let k = 0; k < 600; k++) acc.push(`${phone(1 + k / 50)};${NS0 + BigInt(k) * 20000000n};${value(k, 0)};${value(k, 1)};${value(k, 2)}`);
  const hr = ['Phone timestamp;HR [bpm]'];
  for (let k = 0; k < 12; k++) hr.push(`${phone(1.5 + k)};${60 + k}`);
  writeFileSync(join(dir, 'Polar_Sense_ACC.txt'), acc.join('\n') + '\n');
  writeFileSync(join(dir, 'Polar_Sense_HR.txt'), hr.join('\n') + '\n');
  writeFileSync(join(dir, 'README.md'), 'not an export\n');
  const demo = fileURLToPath(new URL('../../demo/model/demo.safetensors', import.meta.url));
  const r = await run('run', '--model', demo, '--input', dir, '--placement', 'wrist', '--window', '10', '--hop', '5');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  // first sample (ACC) at T0 + 1; last ACC sample at T0 + 1 + 599/50 = T0 + 12.98, last HR at
  // T0 + 12.5: windows end at T0 + 11 and T0 + 16 (the second ends past the last sample)
  assert.equal(out.windows.length, 2);
  const model = await loadModel(demo);
  try {
    for (const [k, w] of out.windows.entries()) {
      const from = T0 + 1 + 5 * k, to = from + 10;
      const slots = Array.from({ length: 600 }, (_, i) => i).filter((i) => T0 + 1 + i / 50 >= from - 1e-9 && T0 + 1 + i / 50 < to - 1e-9);
      const beats = Array.from({ length: 12 }, (_, i) => i).filter((i) => T0 + 1.5 + i >= from && T0 + 1.5 + i < to);
      const window = { streams: [
        ...['acc_x', 'acc_y', 'acc_z'].map((m, axis) => ({ sensor: 1, modality: m, placement: 'wrist', rateHz: 50, startTime: T0 + 1 + slots[0] / 50, samples: slots.map((i) => value(i, axis)) })),
        { sensor: 2, modality: 'hr', placement: 'wrist', timestamps: beats.map((i) => T0 + 1.5 + i), samples: beats.map((i) => 60 + i) },
      ] };
      const api = model.forward(window);
      assert.deepEqual(w.tokens.modality, api.tokens.modality, `window ${k} tokens`);
      // the grid's rate and start come from a least-squares fit of exact ns: 50 Hz and T0 + 1 to
      // float64 rounding, so the same float32 outputs within 1e-5 (a time off by 1e-7 s moves the
      // encoding by that much)
      assert.ok(allClose(w.pooled, api.pooled, 1e-5, 0).ok, `window ${k} pooled`);
      assert.equal(w.label, api.label);
    }
  } finally {
    model.dispose();
  }
  assert.match(r.stderr, /Polar_Sense_ACC\.txt ACC 600, Polar_Sense_HR\.txt HR 12 \(rows read\)/);
  // --sensor is for CSV; a folder is only a Polar export; stdin cannot be one
  const sensor = await run('run', '--model', demo, '--input', dir, '--sensor', '1');
  assert.equal(sensor.status, 2);
  assert.match(sensor.stderr, /--sensor applies to CSV input only; .* is Polar Sensor Logger exports/);
  const format = await run('run', '--model', demo, '--input', dir, '--format', 'json');
  assert.equal(format.status, 2);
  assert.match(format.stderr, /--format json: .* is a folder \(only a Polar Sensor Logger export is read from a folder: --format polarlogger\)/);
  const window = await run('run', '--model', demo, '--input', fixturePath('model/windows.json'), '--window', '5');
  assert.match(window.stderr, /--window applies to recordings \(\.sfrec\) and Polar Sensor Logger exports only/);
  // one file of the export, found by its header line, not its name
  writeFileSync(join(dir, 'acc-only.log'), acc.join('\n') + '\n');
  const one = await run('run', '--model', demo, '--input', join(dir, 'acc-only.log'), '--placement', 'wrist');
  assert.equal(one.status, 0, one.stderr);
  assert.equal(JSON.parse(one.stdout).windows.length, 2);  // 11.98 s of ACC: windows ending at +10 and +15 s
});

test('stream on a Polar Sensor Logger export: the session gets its ACC and HR with --placement, one line per push with final tokens, the rest named on stderr', async () => {
  const dir = mkdtempSync(join(tmp, 'polar-stream-'));
  const NS0 = 704201974000000000n, T0 = 946684800 + 704201974;
  const phone = (s) => new Date((T0 + s) * 1000).toISOString().slice(0, 23);
  const acc = ['Phone timestamp;sensor timestamp [ns];X [mg];Y [mg];Z [mg]'];
  for (let k = 0; k < 1000; k++) acc.push(`${phone(1 + k / 50)};${NS0 + BigInt(k) * 20000000n};${k % 97};${k % 89};${k % 83}`);
  const ppi = ['Phone timestamp;PP-interval [ms];error estimate [ms];blocker;contact;contact;hr [bpm]', `${phone(3)};1000;10;0;1;1;60`];
  writeFileSync(join(dir, 'Polar_Sense_ACC.txt'), acc.join('\n') + '\n');
  writeFileSync(join(dir, 'Polar_Sense_PPI.txt'), ppi.join('\n') + '\n');
  const causal = fileURLToPath(new URL('../../demo/model/stream.safetensors', import.meta.url));
  const r = await run('stream', '--model', causal, '--input', dir, '--placement', 'wrist');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.length >= 10, `${lines.length} lines`);
  const modalities = new Set(lines.flatMap((l) => l.modality));
  assert.deepEqual([...modalities].sort(), ['acc_x', 'acc_y', 'acc_z']);
  // 20 s of ACC: the last line's frontier is at or past the last sample, every token is final once
  const last = lines[lines.length - 1];
  assert.ok(last.frontier >= T0 + 1 + 999 / 50, `frontier ${last.frontier}`);
  const times = lines.flatMap((l) => l.time.map((t, i) => `${l.modality[i]}@${t}`));
  assert.equal(new Set(times).size, times.length, 'no token twice');
  assert.equal(last.pooled.label, 'rest');  // an arm that barely moves (values of a few mG)
  assert.match(r.stderr, /the model has no use for ppi@wrist#2: left out/);
  // --placement is for exports; a recording refuses it
  const recording = join(tmp, 'polar-stream.sfrec');
  writeFileSync(recording, await recordSession({ seed: 15, seconds: 6 }));
  const bad = await run('stream', '--model', causal, '--input', recording, '--placement', 'wrist');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--placement applies to Polar Sensor Logger exports only/);
});
