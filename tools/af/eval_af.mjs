// The AF model's score on the test part, in WebAssembly through the package's own path
// (docs/models.md): each record of tools/af/split/test.txt read by readWfdb, its RR stream from
// rrFromEcg (detectBeats) and, for a model with a beat modality, its beat streams (beatsFromEcg on each beat modality's grid), one forward of models/af.safetensors, the arg-max of the head. Prints
// per-class F1, the confusion matrix, and as its last line the challenge's metric (the mean of the
// F1 of N, A and O):  F1 0.xxx
//
//   npm run eval:af -- --data DIR [--model models/af.safetensors] [--split test]
//                      [--compare models/af-test-logits.json] [--json out.json] [--condition PREFIX]
//
// DIR: the PhysioNet/CinC Challenge 2017 training set (REFERENCE.csv, Axxxxx.hea/.mat; download it
// from https://physionet.org/content/challenge-2017/). --compare: PyTorch's logits of the same
// records (tools/af/train_af.py writes them with the model); prints the largest difference and
// every record whose label differs, and exits 1 if a label differs or a logit is off by more than
// 1e-4. --condition PREFIX: each record's ECG from a perturbed copy that tools/af/evaluate_af.py
// wrote (PREFIX.f32 with PREFIX.json listing each record's offset, length, rate and start, lost
// samples NaN; e.g. build/af/conditions/fold0/r130-drop20) instead of its WFDB files: the package's
// score under the same 130 Hz and dropouts as evaluate_af.py's row of that condition, its RR and
// beats from the package's detector on the gapped ECG (labels still from DIR's REFERENCE.csv).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { beatModalities, beatsFromEcg, detectBeats, loadModel, readWfdb, rrFromEcg } from '../../web/src/index.js';

const CODES = ['N', 'A', 'O', '~'];
const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..', '..');

export async function evaluate({ data, model: modelPath = join(root, 'models', 'af.safetensors'), split = 'test', records = null, condition = null }) {
  const names = records ?? readFileSync(join(here, 'split', `${split}.txt`), 'utf8').trimEnd().split('\n');
  let perturbed = null;  // record -> its ECG stream from evaluate_af.py's condition files
  if (condition) {
    const buffer = readFileSync(`${condition}.f32`);
    const all = new Float32Array(buffer.buffer, buffer.byteOffset, buffer.byteLength / 4);
    perturbed = new Map(JSON.parse(readFileSync(`${condition}.json`, 'utf8')).map((r) => [r.record, r]));
    const missing = names.filter((n) => !perturbed.has(n));
    if (missing.length) throw new Error(`${condition}.json lacks ${missing.length} records of the ${split} part (${missing.slice(0, 3).join(' ')} ...)`);
    for (const r of perturbed.values()) r.samples = all.subarray(r.offset, r.offset + r.length);
  }
  const truth = new Map(readFileSync(join(data, 'REFERENCE.csv'), 'utf8').trimEnd().split('\n')
    .map((l) => l.trim().split(',')).filter((r) => CODES.includes(r[1])));
  const model = await loadModel(modelPath);
  const labels = model.config.labels;
  const grids = beatModalities(model.config);  // the beat streams, one per grid (an ensemble's members may differ)
  const confusion = CODES.map(() => CODES.map(() => 0));
  const logits = {};
  const started = performance.now();
  try {
    for (const record of names) {
      const p = perturbed?.get(record);
      const window = p ? { streams: [{ sensor: 0, modality: 'ecg', placement: model.config.placements[0], rateHz: p.rateHz, startTime: p.startTime, samples: p.samples }] }
        : await readWfdb(join(data, `${record}.hea`), { placement: model.config.placements[0] });
      const ecg = window.streams[0];
      const beats = detectBeats(ecg.samples, ecg.rateHz, { startTime: ecg.startTime });
      window.streams.push(rrFromEcg(ecg, beats));
      for (const grid of grids) window.streams.push(beatsFromEcg(ecg, beats, grid));
      const out = model.forward(window);
      logits[record] = Array.from(out.head);
      const t = CODES.indexOf(truth.get(record));
      if (t < 0) throw new Error(`${record}: no label in REFERENCE.csv`);
      confusion[t][labels.indexOf(out.label)] += 1;
    }
  } finally {
    model.dispose();
  }
  const f1 = CODES.map((_, i) => {
    const row = confusion[i].reduce((a, b) => a + b, 0), col = confusion.reduce((a, r) => a + r[i], 0);
    return (2 * confusion[i][i]) / Math.max(1, row + col);
  });
  return { records: names.length, confusion, f1: Object.fromEntries(CODES.map((c, i) => [c, f1[i]])),
    score: (f1[0] + f1[1] + f1[2]) / 3, logits, seconds: (performance.now() - started) / 1000 };
}

// Largest |logit difference| and the records whose arg-max differs, against reference logits.
/**
 * The CinC 2017 folder the tests take from SF_CINC2017 (.ci/run passes it): { data, skip }, skip a
 * reason when the folder is not given or holds no REFERENCE.csv (node:test's skip option), else false.
 */
export function dataFromEnv(env = process.env) {
  const data = env.SF_CINC2017 ?? '';
  if (data !== '' && existsSync(join(data, 'REFERENCE.csv'))) return { data, skip: false };
  return { data, skip: data === '' ? 'SF_CINC2017 is not set (the CinC 2017 training set folder)' : `${data} has no REFERENCE.csv` };
}

export function compare(logits, reference) {
  let worst = 0, worstRecord = null;
  const labelDiffers = [];
  const argmax = (z) => z.indexOf(Math.max(...z));
  for (const [record, z] of Object.entries(logits)) {
    const r = reference[record];
    if (!r) throw new Error(`${record}: not in the reference logits`);
    for (let k = 0; k < z.length; k++) {
      const d = Math.abs(z[k] - r[k]);
      if (!(d <= worst)) worst = d, worstRecord = record;
    }
    if (argmax(z) !== argmax(r)) labelDiffers.push(record);
  }
  return { worst, worstRecord, labelDiffers };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: {
    data: { type: 'string' }, model: { type: 'string' }, split: { type: 'string', default: 'test' },
    compare: { type: 'string' }, json: { type: 'string' }, condition: { type: 'string' },
  } });
  if (!values.data) {
    console.error('usage: npm run eval:af -- --data DIR [--model models/af.safetensors] [--split test] [--compare logits.json] [--json out.json] [--condition PREFIX]');
    process.exit(2);
  }
  const result = await evaluate(values);
  console.log(`${result.records} records of the ${values.split} part in ${result.seconds.toFixed(1)} s (WebAssembly)`);
  console.log(`confusion (rows truth ${CODES.join(' ')}, columns predicted):`);
  for (let i = 0; i < 4; i++) console.log(`  ${CODES[i]}  ${result.confusion[i].map((v) => String(v).padStart(5)).join('')}`);
  console.log(`per-class F1: ${CODES.map((c) => `${c} ${result.f1[c].toFixed(3)}`).join('  ')}`);
  let failed = false;
  if (values.compare) {
    const c = compare(result.logits, JSON.parse(readFileSync(values.compare, 'utf8')));
    console.log(`against ${values.compare}: largest |logit difference| ${c.worst.toExponential(2)} (${c.worstRecord}), labels differ on ${c.labelDiffers.length} records${c.labelDiffers.length ? ': ' + c.labelDiffers.join(' ') : ''}`);
    failed = c.worst > 1e-4 || c.labelDiffers.length > 0;
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(result) + '\n');
  console.log(`F1 ${result.score.toFixed(3)}`);
  if (failed) process.exit(1);
}
