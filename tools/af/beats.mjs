// Beats and RR streams of perturbed ECG (evaluate_af.py's test conditions: resampled, with dropouts,
// zero-filled) through the package's one detector (rrFromEcg -> detectBeats, web/src/qrs.js).
//
//   node tools/af/beats.mjs IN.f32 IN.json OUT.json
//
// IN.f32: float32 ECG records one after another (NaN = missing); IN.json: [{ record, offset,
// length, rateHz, startTime }]; OUT.json: { record: { timestamps, samples, indices } } (the RR stream; NaN
// written as null) and the beats' sample indices (for the beat stream: afmodel.beat_waveforms).
import { readFileSync, writeFileSync } from 'node:fs';

import { detectBeats, rrFromEcg } from '../../web/src/index.js';

const [input, list, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: node tools/af/beats.mjs IN.f32 IN.json OUT.json');
  process.exit(2);
}
const bytes = readFileSync(input);
const ecg = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
const out = {};
for (const { record, offset, length, rateHz, startTime } of JSON.parse(readFileSync(list, 'utf8'))) {
  const samples = ecg.subarray(offset, offset + length);
  const detected = detectBeats(samples, rateHz, { startTime });
  // every interval, NaN across a gap: evaluate_af.py decides per condition whether to leave those out
  const rr = rrFromEcg({ sensor: 0, placement: 'hand', rateHz, startTime, samples }, detected, { gaps: 'missing' });
  out[record] = { timestamps: Array.from(rr.timestamps), samples: Array.from(rr.samples, (v) => (Number.isNaN(v) ? null : v)),
    indices: Array.from(detected.indices) };
}
writeFileSync(output, JSON.stringify(out) + '\n');
