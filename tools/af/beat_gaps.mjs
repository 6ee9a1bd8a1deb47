// Where the QRS detector stops finding beats (docs/models.md, "QRS detector"): for each record of
// a split, the seconds from its last detected beat to its end, and the records where that is
// more than --after seconds (default 5) while the ECG there still has a QRS-sized range (at least
// half the record's median range per second: not a flat or detached lead).
//
//   node tools/af/beat_gaps.mjs --data DIR [--split test] [--after 5]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { detectBeats, readWfdb } from '../../web/src/index.js';

const { values } = parseArgs({ options: { data: { type: 'string' }, split: { type: 'string', default: 'test' }, after: { type: 'string', default: '5' } } });
if (!values.data) throw new Error('--data DIR: the CinC 2017 training set folder');
const after = Number(values.after);
const records = readFileSync(new URL(`split/${values.split}.txt`, import.meta.url), 'utf8').trim().split('\n');
const ranges = (x, fs) => {
  const out = [];
  for (let i = 0; i + fs <= x.length; i += fs) {
    let lo = Infinity, hi = -Infinity;
    for (let k = i; k < i + fs; k++) if (Number.isFinite(x[k])) lo = Math.min(lo, x[k]), hi = Math.max(hi, x[k]);
    out.push(hi - lo);
  }
  return out;
};
const stopped = [];
for (const r of records) {
  const { streams: [ecg] } = await readWfdb(join(values.data, `${r}.hea`));
  const fs = Math.round(ecg.rateHz), x = ecg.samples;
  const { indices } = detectBeats(x, ecg.rateHz);
  const last = indices.length ? indices[indices.length - 1] / ecg.rateHz : 0;
  const tail = x.length / ecg.rateHz - last;
  if (tail <= after) continue;
  const rs = ranges(x, fs), median = [...rs].sort((a, b) => a - b)[rs.length >> 1];
  const tailRanges = rs.slice(Math.ceil(last + 1));
  if (tailRanges.length && tailRanges.filter((v) => v >= 0.5 * median).length >= 0.8 * tailRanges.length) stopped.push(`${r} (${tail.toFixed(1)} s)`);
}
console.log(`${records.length} ${values.split} records; detection stopped more than ${after} s before the end with the ECG still QRS-sized there: ${stopped.length}`);
console.log(stopped.join(', '));
