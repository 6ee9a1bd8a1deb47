// Would a decision rule tuned for the challenge's metric close part of the AF model's gap? The
// metric (the mean of the F1 of N, A and O) rewards trading some "noisy" and "AF" calls for
// others, which an arg-max of the logits does not do on purpose. This adds one offset per class
// to the logits (N's fixed at 0), chosen on the validation part by coordinate search (a grid of
// 0.05 over [-2, 2], four passes) to maximize the metric there, and scores the test part with and
// without them. The test part is never used for the choice (docs/models.md reports the outcome).
//
//   node tools/af/tune_offsets.mjs --data DIR [--model models/af.safetensors]
//
// DIR: the PhysioNet/CinC Challenge 2017 training set (tools/af/eval_af.mjs says where to get it).
import { parseArgs } from 'node:util';

import { evaluate } from './eval_af.mjs';

const CODES = ['N', 'A', 'O', '~'];

// The challenge metric of records' logits against their labels, with offsets added to the logits.
export function challengeF1(logits, truth, offsets) {
  const confusion = CODES.map(() => CODES.map(() => 0));
  for (const [record, z] of Object.entries(logits)) {
    let best = 0;
    for (let k = 1; k < z.length; k++) if (z[k] + offsets[k] > z[best] + offsets[best]) best = k;
    confusion[CODES.indexOf(truth.get(record))][best] += 1;
  }
  const f1 = (k) => {
    const row = confusion[k].reduce((a, b) => a + b, 0), col = confusion.reduce((a, r) => a + r[k], 0);
    return (2 * confusion[k][k]) / Math.max(1, row + col);
  };
  return (f1(0) + f1(1) + f1(2)) / 3;
}

export function tuneOffsets(logits, truth) {
  let offsets = [0, 0, 0, 0], best = challengeF1(logits, truth, offsets);
  for (let pass = 0; pass < 4; pass++)
    for (let k = 1; k < 4; k++)
      for (let step = -40; step <= 40; step++) {
        const trial = offsets.slice();
        trial[k] = step / 20;
        const score = challengeF1(logits, truth, trial);
        if (score > best + 1e-12) best = score, offsets = trial;
      }
  return offsets;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { data: { type: 'string' }, model: { type: 'string' } } });
  if (!values.data) {
    console.error('usage: node tools/af/tune_offsets.mjs --data DIR [--model models/af.safetensors]');
    process.exit(2);
  }
  const { readFileSync } = await import('node:fs');
  const { join } = await import('node:path');
  const truth = new Map(readFileSync(join(values.data, 'REFERENCE.csv'), 'utf8').trimEnd().split('\n').map((l) => l.trim().split(',')));
  const run = (split) => evaluate({ data: values.data, split, ...(values.model ? { model: values.model } : {}) });
  const validation = await run('validation'), test = await run('test');
  const offsets = tuneOffsets(validation.logits, truth);
  const none = [0, 0, 0, 0];
  console.log(`offsets (N, A, O, ~) chosen on validation: ${offsets.join(', ')}`);
  console.log(`validation F1 ${challengeF1(validation.logits, truth, none).toFixed(4)} -> ${challengeF1(validation.logits, truth, offsets).toFixed(4)}`);
  console.log(`test F1 ${challengeF1(test.logits, truth, none).toFixed(4)} -> ${challengeF1(test.logits, truth, offsets).toFixed(4)}`);
}
