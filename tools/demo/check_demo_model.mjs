// Checks the committed demo model in the JS package (WebAssembly core): loads
// demo/model/demo.safetensors with loadModel, runs the held-out session's windows and compares the
// accuracy with demo/model/metrics.json and, when present, the logits the training script wrote
// for the same file (build/demo-heldout-predictions.json).
//
//   node tools/demo/make_dataset.mjs build/demo-dataset.json
//   /usr/bin/python3 tools/demo/train_demo_model.py build/demo-dataset.json
//   node tools/demo/check_demo_model.mjs build/demo-dataset.json [build/demo-heldout-predictions.json]
//   node tools/demo/check_demo_model.mjs --stream build/stream-dataset.json
//   node tools/demo/check_demo_model.mjs --armband build/armband-dataset.json   (the armband model)
//
// Exit code 1 when the accuracy differs from metrics.json or a prediction differs from PyTorch's.
// With --stream first, the streaming model instead (see checkStream below).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const argmax = (z) => z.reduce((best, v, i) => (v > z[best] ? i : best), 0);
if (process.argv[2] === '--stream') {
  await checkStream(process.argv[3] ?? `${root}build/stream-dataset.json`);
} else if (process.argv[2] === '--armband') {
  await checkWindowed('armband', process.argv.slice(3));
} else {
  await checkWindowed('demo', process.argv.slice(2));
}

async function checkWindowed(name, args) {
const datasetPath = args[0] ?? `${root}build/${name}-dataset.json`;
const predictionsPath = args[1] ?? `${root}build/${name}-heldout-predictions.json`;

const metrics = JSON.parse(readFileSync(`${root}demo/model/${name === 'demo' ? 'metrics' : `${name}-metrics`}.json`, 'utf8'));
const data = JSON.parse(readFileSync(datasetPath, 'utf8'));
const reference = existsSync(predictionsPath) ? JSON.parse(readFileSync(predictionsPath, 'utf8')) : null;

const model = await loadModel(`${root}demo/model/${name}.safetensors`);
const labels = model.config.labels ?? ['rest', 'walk', 'run'];
const heldOut = data.windows.filter((w) => w.session === metrics.held_out_session);

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
console.log(`accuracy (JS, ${name}.safetensors): ${(100 * accuracy).toFixed(2)} %   ${name === "demo" ? "metrics" : `${name}-metrics`}.json: ${(100 * metrics.accuracy).toFixed(2)} %`);
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
}

// --stream: the streaming model (demo/model/stream.safetensors) on the held-out session's 22 s
// windows (make_dataset.mjs --context 12) at every reference offset of stream-metrics.json, each
// prediction being session.pooled({ seconds: 10 })'s: the mean of forward's present embeddings of
// the last 10 s, then the file's head. Exit code 1 when an accuracy differs from the metrics file.
//
//   node tools/demo/check_demo_model.mjs --stream build/stream-dataset.json
//   node tools/demo/check_demo_model.mjs --armband build/armband-dataset.json   (the armband model)
async function checkStream(datasetPath) {
  const metrics = JSON.parse(readFileSync(`${root}demo/model/stream-metrics.json`, 'utf8'));
  const data = JSON.parse(readFileSync(datasetPath, 'utf8'));
  const span = data.meta.windowSeconds + (data.meta.contextSeconds ?? 0);
  const heldOut = data.windows.filter((w) => w.session === metrics.held_out_session);
  const path = `${root}demo/model/stream.safetensors`;
  const head = readF16Head(path);
  const model = await loadModel(path);
  const labels = model.config.labels;
  const d = model.config.d_model;
  let ok = heldOut.length === metrics.held_out_windows;
  for (const [off, expected] of Object.entries(metrics.accuracy_by_offset)) {
    let correct = 0;
    for (const item of heldOut) {
      const start = item.window.referenceTime;
      const r = model.forward({ streams: item.window.streams, referenceTime: start - Number(off) });
      const from = start + span - metrics.objective.pooled_seconds;
      const pooled = new Float64Array(d);
      let n = 0;
      for (let t = 0; t < r.dims[0]; t++) {
        if (!r.tokens.present[t] || r.tokens.time[t] < from) continue;
        n++;
        for (let k = 0; k < d; k++) pooled[k] += r.embeddings[t * d + k];
      }
      const z = head.bias.map((b, o) => pooled.reduce((acc, v, k) => acc + head.weight[o * d + k] * (n ? v / n : 0), b));
      if (labels[argmax(z)] === item.label) correct++;
    }
    const accuracy = correct / heldOut.length;
    const same = Math.abs(accuracy - expected) < 1e-12;
    ok &&= same;
    console.log(`offset ${off.padStart(5)} s: accuracy (JS) ${(100 * accuracy).toFixed(2)} %   stream-metrics.json: ${(100 * expected).toFixed(2)} %${same ? '' : '   MISMATCH'}`);
  }
  model.dispose();
  console.log(ok ? 'OK' : 'MISMATCH');
  process.exitCode = ok ? 0 : 1;
}

// head.weight / head.bias of an F16 file, decoded here (IEEE 754 binary16).
function readF16Head(path) {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const half = (h) => {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    return e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
  };
  const read = (name) => {
    const { dtype, data_offsets: [b, e] } = header[name];
    if (dtype !== 'F16') throw new Error(`${name}: ${dtype}, expected F16`);
    const out = [];
    for (let i = 8 + n + b; i < 8 + n + e; i += 2) out.push(half(bytes.readUInt16LE(i)));
    return out;
  };
  return { weight: read('head.weight'), bias: read('head.bias') };
}
