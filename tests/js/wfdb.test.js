// WFDB records (web/src/wfdb.js): headers and signal files written here byte by byte, their
// samples computed by hand from known values (format 212's nibble packing, format 16's little-endian
// words, a MAT v4 header), read through readWfdb and the CLI.
//
// Physical values are compared exactly: the reader computes (adc - baseline) / gain in float64, one
// correctly rounded subtraction and division, the same operations as the expected values below.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import fc from 'fast-check';

import { loadModel, readWfdb, rrFromEcg, SensorformerError } from '../../web/src/index.js';
import { fixturePath } from './safetensors.js';

const CHILD_TIMEOUT_MS = 45_000;
const test = (name, fn) => nodeTest(name, { timeout: CHILD_TIMEOUT_MS + 15_000 }, fn);
const cli = fileURLToPath(new URL('../../web/bin/sensorformer.js', import.meta.url));
const modelPath = fixturePath('model/factorized.safetensors');  // knows ecg; placements chest, wrist, finger
const tmp = mkdtempSync(join(tmpdir(), 'sf-wfdb-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

const run = (...args) => new Promise((resolve) => {
  execFile(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: CHILD_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 1 << 28 },
    (error, stdout, stderr) => resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
});

// Rejects with a SensorformerError of this code whose message matches.
async function rejects(promise, code, message) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e}`);
    assert.equal(e.code, code, e.message);
    assert.match(e.message, message);
    return true;
  });
}

// Format 212, two signals interleaved: frames (ch0, ch1) =
//   (100, -100), (-5, 291), (2047, -2047), (-2048 = invalid, 7).
// Each pair of 12-bit samples (a, b) is 3 bytes: a's low byte, (a's high nibble | b's high nibble << 4),
// b's low byte. In 12-bit two's complement: 100 = 0x064, -100 = 0xF9C, -5 = 0xFFB, 291 = 0x123,
// 2047 = 0x7FF, -2047 = 0x801, -2048 = 0x800, 7 = 0x007.
const DAT_212 = Uint8Array.of(
  0x64, 0xF0, 0x9C,
  0xFB, 0x1F, 0x23,
  0xFF, 0x87, 0x01,
  0x00, 0x08, 0x07,
);
const HEA_212 = [
  '# written by hand for this test',
  'rec212 2 360 4 12:00:00 25/12/2020',
  'rec212.dat 212 200(1024)/mV 12 1024 100 0 0 MLII',
  'rec212.dat 212 100 12 5 -100 0 0 Resp',  // no baseline: the adc zero (5); no units: mV
  '',
].join('\n');

test('format 212: two interleaved signals, gain, baseline (explicit and from adc zero), base time and date', async () => {
  const w = await readWfdb({ header: HEA_212, files: { 'rec212.dat': DAT_212 } });
  assert.equal(w.streams.length, 2);
  const [a, b] = w.streams;
  // 2020-12-25 12:00:00 UTC = 18621 days after 1970-01-01 (50 years, 13 leap days, + 359 days) + 12 h.
  const start = 18621 * 86400 + 12 * 3600;
  assert.equal(start, 1608897600);
  assert.deepEqual({ ...a, samples: undefined }, { sensor: 0, modality: 'ecg', rateHz: 360, startTime: start, samples: undefined });
  assert.deepEqual({ ...b, samples: undefined }, { sensor: 1, modality: 'resp', rateHz: 360, startTime: start, samples: undefined });
  assert.deepEqual(Array.from(a.samples), [(100 - 1024) / 200, (-5 - 1024) / 200, (2047 - 1024) / 200, NaN]);
  assert.deepEqual(Array.from(b.samples), [(-100 - 5) / 100, (291 - 5) / 100, (-2047 - 5) / 100, (7 - 5) / 100]);
  assert.equal(a.placement, undefined, 'no placement unless asked for');
  const placed = await readWfdb({ header: HEA_212, files: { 'rec212.dat': DAT_212 } }, { placement: 'wrist' });
  assert.deepEqual(placed.streams.map((s) => s.placement), ['wrist', 'wrist']);
  // The units, as the header gives them (none: header(5)'s mV); the values stay in them.
  assert.deepEqual(w.units, ['mV', 'mV']);
  const micro = await readWfdb({ header: HEA_212.replace('200(1024)/mV', '200(1024)/uV'), files: { 'rec212.dat': DAT_212 } });
  assert.deepEqual(micro.units, ['uV', 'mV']);
  assert.deepEqual(Array.from(micro.streams[0].samples), Array.from(a.samples));
});

test('format 212: an odd number of samples ends in two bytes; without nsamp the file length decides', async () => {
  // One signal, samples 1, -1, 0x456: (1, -1) = 01 F0 FF, then 0x456 alone = 56 04.
  const dat = Uint8Array.of(0x01, 0xF0, 0xFF, 0x56, 0x04);
  const w = await readWfdb({ header: 'odd 1 100\nodd.dat 212 1 12 0\n', files: { 'odd.dat': dat } });
  assert.deepEqual(Array.from(w.streams[0].samples), [1, -1, 0x456]);
  assert.equal(w.streams[0].startTime, 0, 'no base time: 0');
  assert.equal(w.streams[0].modality, 'signal', 'no description');
  // One byte more completes the pair (a fourth sample); two more leave a byte that is no sample:
  // refused, naming the file.
  const four = await readWfdb({ header: 'odd 1 100\nodd.dat 212 1 12 0\n', files: { 'odd.dat': Uint8Array.of(...dat, 0x07) } });
  assert.deepEqual(Array.from(four.streams[0].samples), [1, -1, 0x456, 7]);
  await rejects(readWfdb({ header: 'odd 1 100\nodd.dat 212 1 12 0\n', files: { 'odd.dat': Uint8Array.of(...dat, 0x07, 0) } }), 'BAD_FORMAT', /^odd\.dat: ends inside a frame: 7 bytes after byte 0/);
});

test('format 16: little-endian words, gain and baseline, gain 0 = 200, invalid sample, samples per frame and skew', async () => {
  // Frames (ch0, ch1): (0x1234, -32767), (-1, 500), (-32768 = invalid, 32767). Little-endian
  // two's complement: 0x1234 = 34 12, -32767 = 0x8001 = 01 80, -1 = FF FF, 500 = 0x01F4 = F4 01,
  // -32768 = 00 80, 32767 = FF 7F.
  const dat = Uint8Array.of(0x34, 0x12, 0x01, 0x80, 0xFF, 0xFF, 0xF4, 0x01, 0x00, 0x80, 0xFF, 0x7F);
  const header = 'r16 2 500 3 08:30:00.5\nr16.dat 16 1000(-20)/uV 16 0 0 0 0 ECG lead I\nr16.dat 16 0 16 0 0 0 0 SpO2\n';
  const w = await readWfdb({ header, files: { 'r16.dat': dat.buffer } });
  assert.deepEqual(Array.from(w.streams[0].samples), [(0x1234 + 20) / 1000, (-1 + 20) / 1000, NaN]);
  assert.deepEqual(Array.from(w.streams[1].samples), [-32767 / 200, 500 / 200, 32767 / 200]);
  assert.deepEqual(w.streams.map((s) => s.modality), ['ecg', 'spo2']);
  assert.deepEqual(w.streams.map((s) => s.startTime), [8.5 * 3600 + 0.5, 8.5 * 3600 + 0.5], 'a base time without a date: seconds after midnight');

  // "16x2": signal 0 has two samples per frame (1000 Hz at fs 500), signal 1 one, skewed by one
  // frame. Frames: (10, 11, 20), (12, 13, 21), (14, 15, 22) as words 0A 00, 0B 00, ...
  const words = [10, 11, 20, 12, 13, 21, 14, 15, 22];
  const frames = new Uint8Array(words.flatMap((v) => [v, 0]));
  const w2 = await readWfdb({ header: 'mf 2 500 3\nmf.dat 16x2 1 16 0\nmf.dat 16:1 1 16 0\n', files: { 'mf.dat': frames } });
  assert.deepEqual(w2.streams.map((s) => s.rateHz), [1000, 500]);
  assert.deepEqual(Array.from(w2.streams[0].samples), [10, 11, 12, 13, 14, 15]);
  assert.deepEqual(Array.from(w2.streams[1].samples), [21, 22, NaN], 'skew 1: sample k is in frame k + 1; past the end, missing');
});

// A MAT v4 file as PhysioNet's CinC 2017 set has them: a 20-byte header (type 30 = little-endian
// int16, rows = signals, columns = samples, no imaginary part, name length 4), the name "val\0",
// then the samples, column by column.
function matFile(samples, { type = 30, rows = 1, cols = samples.length, nameLength = 4 } = {}) {
  const int32 = (v) => [v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, (v >>> 24) & 0xFF];
  const int16 = (v) => [v & 0xFF, (v >> 8) & 0xFF];
  return Uint8Array.from([...int32(type), ...int32(rows), ...int32(cols), ...int32(0), ...int32(nameLength), 0x76, 0x61, 0x6C, 0x00, ...samples.flatMap(int16)]);
}
const HEA_MAT = 'A99999 1 300 4 05:05:15 1/05/2000\nA99999.mat 16+24 1000/mV 16 0 -127 0 0 ECG\n';

test('MAT v4 (16+24): header checked, samples after it; the bytes and the path give the same window', async () => {
  const mat = matFile([-127, 5, 0, 300]);
  // Byte by byte: the header and name are 24 bytes, the first sample -127 = 0xFF81 is 81 FF.
  assert.deepEqual(Array.from(mat.subarray(0, 26)), [30, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0x76, 0x61, 0x6C, 0, 0x81, 0xFF]);
  const w = await readWfdb({ header: new TextEncoder().encode(HEA_MAT), files: { 'A99999.mat': mat } });
  const s = w.streams[0];
  assert.deepEqual(Array.from(s.samples), [-127 / 1000, 5 / 1000, 0, 300 / 1000]);
  // 2000-05-01 05:05:15 UTC: 11078 days after 1970-01-01 (30 years, 7 leap days, + 121 days) + 18315 s.
  assert.equal(s.startTime, 11078 * 86400 + 5 * 3600 + 5 * 60 + 15);
  assert.deepEqual([s.modality, s.rateHz, s.sensor], ['ecg', 300, 0]);

  const dir = mkdtempSync(join(tmp, 'mat-'));
  writeFileSync(join(dir, 'A99999.hea'), HEA_MAT);
  writeFileSync(join(dir, 'A99999.mat'), mat);
  assert.deepEqual(await readWfdb(join(dir, 'A99999.hea')), w);
});

test('a MAT v4 header that disagrees with the .hea is BAD_FORMAT naming the file and what differs', async () => {
  const read = (mat, header = HEA_MAT) => readWfdb({ header, files: { 'A99999.mat': mat } });
  await rejects(read(matFile([1, 2, 3, 4], { type: 0 })), 'BAD_FORMAT', /^A99999\.mat \(MAT v4 header\): type 0: expected 30/);
  await rejects(read(matFile([1, 2, 3, 4], { rows: 2, cols: 2 })), 'BAD_FORMAT', /^A99999\.mat \(MAT v4 header\): the matrix has 2 rows; the \.hea gives this file 1 sample per frame/);
  await rejects(read(matFile([1, 2, 3, 4, 5])), 'BAD_FORMAT', /^A99999\.mat \(MAT v4 header\): the matrix has 5 columns; the \.hea gives 4 samples/);
  await rejects(read(matFile([1, 2, 3, 4]), HEA_MAT.replace('16+24', '16+30')), 'BAD_FORMAT', /samples start at byte 24 .* the header says \+30/);
  await rejects(read(matFile([1, 2, 3, 4]).subarray(0, 12)), 'BAD_FORMAT', /^A99999\.mat \(MAT v4 header\): the file holds 12 bytes, less than the 20-byte header/);
  // Truncated samples: the header is fine, the last sample is half there.
  await rejects(read(matFile([1, 2, 3, 4]).subarray(0, 24 + 7)), 'BAD_FORMAT', /^A99999\.mat: is truncated: 4 frames of 1 sample in format 16 take 8 bytes after byte 24, the file has 7$/);
});

test('truncated or inconsistent headers and files: BAD_FORMAT / IO naming the file, line and field', async () => {
  const read = (header, files = { 'rec212.dat': DAT_212 }) => readWfdb({ header, files });
  await rejects(read(HEA_212, { 'rec212.dat': DAT_212.subarray(0, 11) }), 'BAD_FORMAT', /^rec212\.dat: is truncated: 4 frames of 2 samples in format 212 take 12 bytes after byte 0, the file has 11$/);
  // Line numbers count the comment line.
  await rejects(read(HEA_212.replace('200(1024)/mV', 'abc/mV')), 'BAD_FORMAT', /^rec212\.hea line 3: gain: must be a number/);
  await rejects(read(HEA_212.replace('200(1024)/mV', '200(x)/mV')), 'BAD_FORMAT', /^rec212\.hea line 3: baseline: must be an integer/);
  await rejects(read('r 3 100 1\na.dat 16 1 16 0\nb.dat 16 1 16 0\na.dat 16 1 16 0\n'), 'BAD_FORMAT', /^r\.hea line 4: file: a\.dat is named again after other files/);
  await rejects(read(HEA_212.replace('rec212 2', 'rec212 3')), 'BAD_FORMAT', /^rec212\.hea line 2: declares 3 signals, the header has 2 signal lines$/);
  await rejects(read(HEA_212.replace(/212 200/, '8 200').replace(/212 100/, '8 100')), 'BAD_FORMAT', /^rec212\.hea line 3: format: 8 is not supported \(supported: 16, 212/);
  await rejects(read(HEA_212.replace('212 100', '16 100')), 'BAD_FORMAT', /^rec212\.hea line 4: format: 16, but earlier signals of rec212\.dat are format 212/);
  await rejects(read(HEA_212.replace('360', '-360')), 'BAD_FORMAT', /^rec212\.hea line 2: sampling frequency: must be a finite number of Hz > 0/);
  // Numbers that overflow: a rate past float64, counts past 2^53, physical values past float32
  // (signal 0's first sample: (100 - 1024) / 1e-40 = -9.24e42 mV; a window refuses those).
  await rejects(read(HEA_212.replace('360', '1e400')), 'BAD_FORMAT', /^rec212\.hea line 2: sampling frequency: must be a finite number of Hz > 0 .*, got "1e400"$/);
  await rejects(read(HEA_212.replace('360', '1e308').replace('212 200', '212x2 200').replace('212 100', '212x2 100')), 'BAD_FORMAT', /^rec212\.hea line 3: format: 2 samples per frame at 1e\+308 Hz make a rate beyond float64$/);
  await rejects(read(HEA_212.replace('212 200', '212x99999999999999999999 200')), 'BAD_FORMAT', /^rec212\.hea line 3: format: samples per frame must be below 2\^53, got 99999999999999999999$/);
  await rejects(read(HEA_212.replace('212 100', '212:9007199254740993 100')), 'BAD_FORMAT', /^rec212\.hea line 4: format: skew must be below 2\^53/);
  await rejects(read(HEA_212.replace('212 200', '212+9007199254740993 200')), 'BAD_FORMAT', /^rec212\.hea line 3: format: byte offset must be below 2\^53/);
  await rejects(read(HEA_212.replace('200(1024)/mV', '1e-40(1024)/mV')), 'BAD_FORMAT', /^rec212\.hea line 3: gain: 1e-40 makes sample 0 of rec212\.dat \(adc 100, baseline 1024\) -9\.24\d*e\+42 mV, beyond float32$/);
  await rejects(read(HEA_212.replace('200(1024)/mV', '1e-320(1024)/mV')), 'BAD_FORMAT', /^rec212\.hea line 3: gain: 1e-320 makes sample 0 of rec212\.dat \(adc 100, baseline 1024\) -Infinity mV, beyond float32$/);
  // A gain that underflows to 0 is not header(5)'s 0 (uncalibrated, 200); baselines past 2^53
  // would blame the gain for their overflow.
  await rejects(read(HEA_212.replace('200(1024)/mV', '1e-400(1024)/mV')), 'BAD_FORMAT', /^rec212\.hea line 3: gain: "1e-400" is too small to be told from 0 in float64$/);
  assert.equal((await read(HEA_212.replace('200(1024)/mV', '0.0e5(1024)/mV'))).streams[0].samples[0], (100 - 1024) / 200, 'a gain of 0 is 200');
  await rejects(read(HEA_212.replace('200(1024)/mV', `200(${'9'.repeat(400)})/mV`)), 'BAD_FORMAT', /^rec212\.hea line 3: baseline: must be an integer within \+-2\^53/);
  await rejects(read(HEA_212.replace('12 5 -100', `12 ${'9'.repeat(20)} -100`)), 'BAD_FORMAT', /^rec212\.hea line 4: adc zero: must be an integer within \+-2\^53/);
  await rejects(read(HEA_212.replace('25/12/2020', '31/02/2020')), 'BAD_FORMAT', /^rec212\.hea line 2: base date: must be DD\/MM\/YYYY, got "31\/02\/2020"$/);
  await rejects(read(HEA_212.replace('12:00:00', '24:00:00')), 'BAD_FORMAT', /^rec212\.hea line 2: base time/);
  await rejects(read(HEA_212.replace('rec212 2', 'rec212/3 2')), 'BAD_FORMAT', /multi-segment/);
  await rejects(read('# nothing but a comment\n'), 'BAD_FORMAT', /has no record line/);
  // The signal file: not given (bytes API), not there (a path).
  await rejects(read(HEA_212, { 'other.dat': DAT_212 }), 'IO', /^rec212\.dat: the header names this signal file, and source\.files has no "rec212\.dat" \(it has "other\.dat"\)$/);
  const dir = mkdtempSync(join(tmp, 'missing-'));
  writeFileSync(join(dir, 'rec212.hea'), HEA_212);
  await rejects(readWfdb(join(dir, 'rec212.hea')), 'IO', new RegExp(`^cannot read ${join(dir, 'rec212.dat').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: no such file$`));
  // Wrong arguments.
  await rejects(readWfdb(42), 'INVALID_ARGUMENT', /^readWfdb: source must be a header path/);
  await rejects(readWfdb({ header: HEA_212, files: { 'rec212.dat': [1, 2] } }), 'INVALID_ARGUMENT', /source\.files\["rec212\.dat"\] must be a Uint8Array or ArrayBuffer/);
  await rejects(readWfdb({ header: HEA_212, files: { 'rec212.dat': DAT_212 } }, { placment: 'chest' }), 'INVALID_ARGUMENT', /unknown option "placment"/);
});

// An ECG record long enough for tokens: 2 s at 300 Hz of a known waveform, in a MAT v4 file.
function ecgRecord(dir) {
  // 10 s: a slow wave plus a narrow 1 mV spike every 0.8 s (beats the detector finds: 12 RR intervals)
  const n = 3000, adc = Array.from({ length: n }, (_, i) => Math.round(100 * Math.sin(i / 70) + 1000 * Math.exp(-(((i % 240) - 120) ** 2) / 8)));
  const header = `E00001 1 300 ${n} 05:05:15 1/05/2000\nE00001.mat 16+24 1000/mV 16 0 ${adc[0]} 0 0 ECG\n`;
  writeFileSync(join(dir, 'E00001.hea'), header);
  writeFileSync(join(dir, 'E00001.mat'), matFile(adc));
  return { header, mat: matFile(adc) };
}

test('CLI: a .hea input (and --format wfdb) runs the record as one window, placement the model\'s first', async () => {
  const dir = mkdtempSync(join(tmp, 'cli-'));
  const { header, mat } = ecgRecord(dir);
  const r = await run('run', '--model', modelPath, '--input', join(dir, 'E00001.hea'));
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout).windows;
  assert.equal(out.length, 1);
  // The API on the same bytes with the model's first placement ("chest"): the same floats (the CLI
  // prints each float32 with the digits that read back as it).
  const model = await loadModel(modelPath);
  try {
    assert.equal(model.config.placements[0], 'chest');
    const window = await readWfdb({ header, files: { 'E00001.mat': mat } }, { placement: 'chest' });
    // The model knows `rr` and the record has none: the CLI adds the RR stream of the ECG's beats.
    const rr = rrFromEcg(window.streams[0]);
    assert.equal(rr.timestamps.length, 12);
    assert.equal(r.stderr, `sensorformer: rr: the model takes RR intervals and the input has none: ${rr.timestamps.length} from the beats detected in the ECG (rrFromEcg)\n`);
    window.streams.push(rr);
    const want = model.forward(window);
    assert.deepEqual(out[0].pooled.map((v) => Math.fround(v)), Array.from(want.pooled));
    assert.deepEqual(out[0].tokens.modality, want.tokens.modality);
    assert.ok(want.tokens.modality.includes('rr'), 'RR tokens are in the window');
    assert.ok(out[0].tokens.present.some((p) => p === 1), 'the record gives present tokens');
  } finally {
    model.dispose();
  }
  // Under another name, --format says what it is.
  writeFileSync(join(dir, 'header.txt'), header);
  const named = await run('run', '--model', modelPath, '--input', join(dir, 'header.txt'), '--format', 'wfdb');
  assert.equal(named.status, 0, named.stderr);
  assert.equal(named.stdout, r.stdout);
});

test('CLI: an ECG record below the detector\'s 50 Hz runs without an RR stream and without a note', async () => {
  const dir = mkdtempSync(join(tmp, 'cli-slow-'));
  const n = 400, adc = Array.from({ length: n }, (_, i) => Math.round(1000 * Math.exp(-(((i % 32) - 16) ** 2) / 2)));
  writeFileSync(join(dir, 'S00001.hea'), `S00001 1 40 ${n}\nS00001.mat 16+24 1000/mV 16 0 ${adc[0]} 0 0 ECG\n`);
  writeFileSync(join(dir, 'S00001.mat'), matFile(adc));
  const r = await run('run', '--model', modelPath, '--input', join(dir, 'S00001.hea'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.ok(!JSON.parse(r.stdout).windows[0].tokens.modality.includes('rr'));
});

test('CLI: a bad record exits 1 with the file and field; a signal the model has no input for is left out and said; --placement', async () => {
  const dir = mkdtempSync(join(tmp, 'cli-bad-'));
  writeFileSync(join(dir, 'rec212.hea'), HEA_212);
  writeFileSync(join(dir, 'rec212.dat'), DAT_212.subarray(0, 10));
  let r = await run('run', '--model', modelPath, '--input', join(dir, 'rec212.hea'));
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'sensorformer: BAD_FORMAT: rec212.dat: is truncated: 4 frames of 2 samples in format 212 take 12 bytes after byte 0, the file has 10\n');
  writeFileSync(join(dir, 'rec212.dat'), DAT_212);
  // the respiration signal is left out (a note), the ECG runs
  r = await run('run', '--model', modelPath, '--input', join(dir, 'rec212.hea'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, `sensorformer: the model has no use for ${join(dir, 'rec212.hea')}'s signal 1 (resp): left out\n`);
  // a record of signals the model has none of
  writeFileSync(join(dir, 'resp.hea'), 'resp 1 360 4\nrec212.dat 212 100 12 5 -100 0 0 Resp\n');
  r = await run('run', '--model', modelPath, '--input', join(dir, 'resp.hea'));
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `sensorformer: INVALID_ARGUMENT: ${join(dir, 'resp.hea')}: no signal the model takes (its signals: resp; the model's modalities: ecg, acc_x, hr, rr, temperature, 4 sensors)\n`);
  // an ECG in microvolts runs as it is, said
  writeFileSync(join(dir, 'micro.hea'), HEA_212.replace('200(1024)/mV', '200(1024)/uV').replace('\nrec212.dat 212 100 12 5 -100 0 0 Resp', '').replace('rec212 2', 'micro 1'));
  r = await run('run', '--model', modelPath, '--input', join(dir, 'micro.hea'));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, `sensorformer: ${join(dir, 'micro.hea')} signal 0 is in uV, given to the model as it is (a model trained on PhysioNet's ECG, like models/af.safetensors, takes mV)\n`);
  // --placement for a record: the streams carry it (a placement the model lacks names the signal)
  const { header, mat } = ecgRecord(dir);
  r = await run('run', '--model', modelPath, '--input', join(dir, 'E00001.hea'), '--placement', 'wrist');
  assert.equal(r.status, 0, r.stderr);
  const model = await loadModel(modelPath);
  try {
    const window = await readWfdb({ header, files: { 'E00001.mat': mat } }, { placement: 'wrist' });
    window.streams.push({ ...rrFromEcg(window.streams[0]), placement: 'wrist' });
    assert.deepEqual(JSON.parse(r.stdout).windows[0].pooled.map((v) => Math.fround(v)), Array.from(model.forward(window).pooled));
  } finally {
    model.dispose();
  }
  r = await run('run', '--model', modelPath, '--input', join(dir, 'E00001.hea'), '--placement', 'elbow');
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`sensorformer: INVALID_ARGUMENT: ${join(dir, 'E00001.hea').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} signal 0: placement "elbow" is not one the model knows \\(chest, wrist, finger\\)\n$`));
  r = await run('run', '--model', modelPath, '--input', '-', '--format', 'wfdb');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^sensorformer: a WFDB record cannot come from standard input/);
});

// Random records: header fields drawn from valid and broken values (overflowing numbers, huge
// counts, subnormal gains, missing files), signal files of random bytes. Each either reads into a
// window the package would run (every rate finite and > 0, every sample NaN or a finite float32
// value, lengths whole) or is refused with a SensorformerError: never another exception, never a
// hang. Seeded (FC_SEED explores others; a failure prints its seed and the shrunk record).
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 0x5eed) });
const FLOAT32_MAX = 3.4028234663852886e38;
const pick = (...values) => fc.constantFrom(...values);
// Mostly a valid field, sometimes a broken one, so that both outcomes are common.
const field = (good, bad) => fc.oneof({ arbitrary: pick(...good), weight: 20 }, { arbitrary: pick(...bad), weight: 1 });
const signalLine = fc.tuple(
  field(['r.dat', 's.dat'], ['r.mat', 't.dat']),
  field(['16', '212', '16x2', '212x3', '16:2', '16+2'], ['16:99999999999999999999', '16x99999999999999999999', '16+99999999999999999999', '16+24', '80', '16x0', 'x']),
  field(['200', '200(0)/mV', '0', '-1000(5)/uV', '1e-300(7)'], ['1e400', '1e-320', 'abc', '200(1.5)', '200(99999999999999999999999)']),
  field(['12', '16'], ['x']),
  field(['0', '-2048'], ['1e3', '99999999999999999999']),
  pick('', '0 0 ECG', '17 0 Lead I', '0 0 x y'),
).map((f) => f.filter(Boolean).join(' '));
const record = fc.record({
  signals: fc.array(signalLine, { minLength: 1, maxLength: 3 }),
  nsig: field([null], ['0', '-1', 'x', '4']),  // null: the number of signal lines
  fs: field(['', '360', '300/1(0)', '1e-9', '1e308'], ['1e400', '0', '-5', 'abc']),
  nsamp: field(['4', '4', '4', '', '0', '7'], ['99999999999999999999', '9007199254740993', '-3']),
  time: field(['', '12:00:00', '0:0:0.5', '12:00:00 25/12/2020'], ['25:00:00', '12:00:00 31/02/2020']),
  // Files long enough for 4 frames of every signal, or (sometimes) absent or short.
  files: fc.record({ 'r.dat': fc.uint8Array({ minLength: 72, maxLength: 96 }), 's.dat': field([72], [0, 5]).chain((n) => fc.uint8Array({ minLength: n, maxLength: n + 24 })), 'r.mat': fc.uint8Array({ maxLength: 96 }) }, { requiredKeys: ['r.dat', 's.dat'] }),
});

test('random records: a window the package runs, or a SensorformerError (never another exception or a non-finite value)', async () => {
  const outcomes = { read: 0, refused: 0 };
  await fc.assert(fc.asyncProperty(record, async ({ nsig, fs, nsamp, time, signals, files }) => {
    const header = [['r', nsig ?? String(signals.length), fs, fs && nsamp, fs && nsamp && time].filter(Boolean).join(' '), ...signals].join('\n');
    let w;
    try {
      w = await readWfdb({ header, files });
    } catch (e) {
      assert.ok(e instanceof SensorformerError && ['BAD_FORMAT', 'IO', 'INVALID_ARGUMENT'].includes(e.code), `not a typed error: ${e?.stack ?? e}\n${header}`);
      outcomes.refused++;
      return;
    }
    outcomes.read++;
    for (const s of w.streams) {
      assert.ok(Number.isFinite(s.rateHz) && s.rateHz > 0, `rate ${s.rateHz}\n${header}`);
      assert.ok(Number.isFinite(s.startTime), `startTime ${s.startTime}\n${header}`);
      assert.ok(Number.isSafeInteger(s.samples.length), `${s.samples.length} samples\n${header}`);
      for (const v of s.samples) assert.ok(Number.isNaN(v) || Math.abs(v) <= FLOAT32_MAX, `sample ${v}\n${header}`);
    }
  }), { numRuns: 3000 });
  // Both outcomes are exercised (the weights above make about a fifth of the records readable).
  assert.ok(outcomes.read >= 300 && outcomes.refused >= 300, JSON.stringify(outcomes));
});

// The real PhysioNet/CinC 2017 data is not in the repository; point SF_CINC2017 at its folder.
const cinc = process.env.SF_CINC2017;
nodeTest('CinC 2017: A00001 reads 9000 samples at 300 Hz, its first sample the header\'s initial value',
  { skip: !cinc ? 'set SF_CINC2017 to the folder of the PhysioNet/CinC 2017 training set (A00001.hea, A00001.mat) to run it'
    : !existsSync(join(cinc, 'A00001.hea')) && `SF_CINC2017 is ${cinc}, which has no A00001.hea (the data is not on this machine)` }, async () => {
    const path = join(cinc, 'A00001.hea');
    assert.ok(existsSync(path), `${path} does not exist`);
    const w = await readWfdb(path);
    assert.equal(w.streams.length, 1);
    const s = w.streams[0];
    assert.equal(s.rateHz, 300);
    assert.equal(s.samples.length, 9000);
    assert.equal(s.modality, 'ecg');
    // The header's own fields are the independent reference: gain, baseline (the adc zero) and
    // the initial value (the first sample, in adc units).
    const [, fields] = readFileSync(path, 'utf8').split(/\r?\n/).filter((l) => l.trim() && !l.startsWith('#')).map((l) => l.trim().split(/\s+/));
    const gain = Number(fields[2].split('/')[0]), zero = Number(fields[4]), initial = Number(fields[5]);
    assert.equal(s.samples[0], (initial - zero) / gain);
  });
