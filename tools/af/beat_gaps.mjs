// Where the QRS detector stops finding beats (docs/models.md, "QRS detector"): for each record of
// a split, the seconds from its last detected beat to its end, and the records where that is
// more than --after seconds (default 5) while the ECG there still has a QRS-sized range (at least
// half the record's median range per second: not a flat or detached lead). Also counts the
// records whose longest stretch without a detected beat (from the start to the first beat and
// from the last to the end included) exceeds --stretch seconds (default 3): the records whose
// beats a rule that learns the thresholds again after that long without a beat could change.
//
//   node tools/af/beat_gaps.mjs --data DIR [--split test|train|validation|all] [--after 5] [--stretch 3]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { detectBeats, readWfdb } from '../../web/src/index.js';

const { values } = parseArgs({ options: { data: { type: 'string' }, split: { type: 'string', default: 'test' }, after: { type: 'string', default: '5' }, stretch: { type: 'string', default: '3' } } });
if (!values.data) throw new Error('--data DIR: the CinC 2017 training set folder');
const after = Number(values.after), stretch = Number(values.stretch);
const splitNames = values.split === 'all' ? ['train', 'validation', 'test'] : [values.split];
const records = splitNames.flatMap((name) => readFileSync(new URL(`split/${name}.txt`, import.meta.url), 'utf8').trim().split('\n'));
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
let longStretch = 0;
for (const r of records) {
  const { streams: [ecg] } = await readWfdb(join(values.data, `${r}.hea`));
  const fs = Math.round(ecg.rateHz), x = ecg.samples;
  const { indices } = detectBeats(x, ecg.rateHz);
  const last = indices.length ? indices[indices.length - 1] / ecg.rateHz : 0;
  const tail = x.length / ecg.rateHz - last;
  let longest = Math.max(tail, indices.length ? indices[0] / ecg.rateHz : 0);
  for (let i = 1; i < indices.length; i++) longest = Math.max(longest, (indices[i] - indices[i - 1]) / ecg.rateHz);
  if (longest > stretch) longStretch++;
  if (tail <= after) continue;
  const rs = ranges(x, fs), median = [...rs].sort((a, b) => a - b)[rs.length >> 1];
  const tailRanges = rs.slice(Math.ceil(last + 1));
  if (tailRanges.length && tailRanges.filter((v) => v >= 0.5 * median).length >= 0.8 * tailRanges.length) stopped.push(`${r} (${tail.toFixed(1)} s)`);
}
console.log(`${records.length} ${values.split} records; detection stopped more than ${after} s before the end with the ECG still QRS-sized there: ${stopped.length}`);
console.log(stopped.join(', '));
console.log(`longest stretch without a detected beat (edges included) over ${stretch} s: ${longStretch} of ${records.length} records`);
