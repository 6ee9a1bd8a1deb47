// Checks the committed demo model in the JS package (WebAssembly core): loads
// demo/model/demo.safetensors with loadModel, runs the held-out session's windows and compares the
// accuracy with demo/model/metrics.json and, when present, the logits the training script wrote
// for the same file (build/demo-heldout-predictions.json).
//
//   node tools/demo/make_dataset.mjs build/demo-dataset.json
//   /usr/bin/python3 tools/demo/train_demo_model.py build/demo-dataset.json
//   node tools/demo/check_demo_model.mjs build/demo-dataset.json [build/demo-heldout-predictions.json]
//
// Exit code 1 when the accuracy differs from metrics.json or a prediction differs from PyTorch's.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const datasetPath = process.argv[2] ?? `${root}build/demo-dataset.json`;
const predictionsPath = process.argv[3] ?? `${root}build/demo-heldout-predictions.json`;

const metrics = JSON.parse(readFileSync(`${root}demo/model/metrics.json`, 'utf8'));
const data = JSON.parse(readFileSync(datasetPath, 'utf8'));
const reference = existsSync(predictionsPath) ? JSON.parse(readFileSync(predictionsPath, 'utf8')) : null;

const model = await loadModel(`${root}demo/model/demo.safetensors`);
const labels = model.config.labels ?? ['rest', 'walk', 'run'];
const heldOut = data.windows.filter((w) => w.session === metrics.held_out_session);
const argmax = (z) => z.reduce((best, v, i) => (v > z[best] ? i : best), 0);

const started = performance.now();
const confusion = labels.map(() => labels.map(() => 0));
let correct = 0, agree = 0, maxDiff = 0;
heldOut.forEach((item, i) => {
  const head = Array.from(model.forward(item.window).head);
  const p = argmax(head), truth = labels.indexOf(item.label);
  confusion[truth][p]++;
  if (p === truth) correct++;
  if (reference) {
    const z = reference.logits[i];
    if (argmax(z) === p) agree++;
    for (let k = 0; k < z.length; k++) maxDiff = Math.max(maxDiff, Math.abs(z[k] - head[k]));
  }
});
const ms = (performance.now() - started) / heldOut.length;
model.dispose();

const accuracy = correct / heldOut.length;
console.log(`held-out session ${metrics.held_out_session}: ${heldOut.length} windows, ${ms.toFixed(1)} ms per window (WASM)`);
console.log(`accuracy (JS, demo.safetensors): ${(100 * accuracy).toFixed(2)} %   metrics.json: ${(100 * metrics.accuracy).toFixed(2)} %`);
labels.forEach((name, i) => {
  const n = confusion[i].reduce((a, b) => a + b, 0);
  console.log(`  ${name.padEnd(5)} ${(100 * confusion[i][i] / Math.max(1, n)).toFixed(2)} % of ${n}   predicted: ${confusion[i].join(' / ')}`);
});
let ok = heldOut.length === metrics.held_out_windows && Math.abs(accuracy - metrics.accuracy) < 1e-12;
if (reference) {
  console.log(`PyTorch (same file) vs JS: ${agree}/${heldOut.length} identical predictions, max |logit difference| ${maxDiff.toExponential(2)}`);
  ok = ok && agree === heldOut.length && reference.logits.length === heldOut.length;
} else {
  console.log(`(no ${predictionsPath}: per-window comparison skipped)`);
}
console.log(ok ? 'OK' : 'MISMATCH');
process.exitCode = ok ? 0 : 1;
