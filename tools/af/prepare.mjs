// The AF model's training data (issue 20), prepared once through the package's own path: each
// CinC 2017 record read by readWfdb (web/src/wfdb.js) and its beats found by detectBeats
// (web/src/qrs.js), so that training sees the same samples and the same RR intervals as the
// package at inference.
//
//   node tools/af/prepare.mjs --data DIR [--out build/af]
//
// DIR: the challenge's training set (REFERENCE.csv + Axxxxx.hea/.mat; download it from
// https://physionet.org/content/challenge-2017/). Writes, under --out (never committed: it is the
// data):
//   ecg.f32      every record's ECG in mV, float32 little-endian, records one after another
//   index.json   { fs, records: [{ record, label, fold, part, offset, length, startTime, beats }] }: offset and
//                length in samples into ecg.f32, beats the sample indices of the detected beats (a beat's time is
//                startTime + index / fs, as detectBeats computes it; startTime is the header's base
//                date and time in epoch seconds, as readWfdb gives it), part
//                "train" | "validation" | "test" from tools/af/split/, fold 0-4
import { mkdirSync, readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { detectBeats, readWfdb } from '../../web/src/index.js';

const { values } = parseArgs({ options: { data: { type: 'string' }, out: { type: 'string', default: 'build/af' } } });
if (!values.data) {
  console.error('usage: node tools/af/prepare.mjs --data DIR [--out build/af]');
  process.exit(2);
}
const split = new URL('./split/', import.meta.url).pathname;
const names = (f) => readFileSync(join(split, f), 'utf8').trimEnd().split('\n');
const part = new Map();
for (const p of ['train', 'validation', 'test']) for (const r of names(`${p}.txt`)) part.set(r, p);
const fold = new Map();
for (let k = 0; k < 5; k++) for (const r of names(`fold${k}.txt`)) fold.set(r, k);
const labels = readFileSync(join(values.data, 'REFERENCE.csv'), 'utf8').trimEnd().split('\n').slice(1).map((l) => l.trim().split(','));

mkdirSync(values.out, { recursive: true });
const fd = openSync(join(values.out, 'ecg.f32'), 'w');
const records = [];
let offset = 0, fs = null;
const started = performance.now();
for (const [record, label] of labels) {
  const window = await readWfdb(join(values.data, `${record}.hea`));
  const [ecg] = window.streams;
  if (window.streams.length !== 1 || ecg.modality !== 'ecg') throw new Error(`${record}: expected one ECG signal`);
  fs ??= ecg.rateHz;
  if (ecg.rateHz !== fs) throw new Error(`${record}: ${ecg.rateHz} Hz, the others ${fs} Hz`);
  const samples = Float32Array.from(ecg.samples);
  writeSync(fd, new Uint8Array(samples.buffer));
  const { indices } = detectBeats(samples, fs);
  records.push({ record, label, fold: fold.get(record), part: part.get(record), offset, length: samples.length,
    startTime: ecg.startTime, beats: Array.from(indices) });
  offset += samples.length;
}
closeSync(fd);
writeFileSync(join(values.out, 'index.json'), JSON.stringify({ fs, source: 'PhysioNet/CinC Challenge 2017 training set', records }) + '\n');
console.log(`${records.length} records, ${(offset / fs / 3600).toFixed(2)} h of ECG at ${fs} Hz, ${records.reduce((a, r) => a + r.beats.length, 0)} beats, ` +
  `in ${((performance.now() - started) / 1000).toFixed(1)} s -> ${values.out}/ecg.f32, index.json`);
