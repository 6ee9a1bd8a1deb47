#!/usr/bin/env node
// This checkout's package against another build of it, side by side in one Node process, with
// onnxruntime-web beside them: the bench encoder (bench/models/encoder.safetensors) on one thread
// at --tokens tokens, interleaved rounds of 20 forwards each, medians. The other build is a copy
// of a `web/` folder (its src/ and dist/), for example of an earlier commit:
//
//   git worktree add /tmp/old <commit> && (cd /tmp/old && npm ci && npm run build)
//   node bench/compare_builds.mjs --old /tmp/old/web [--tokens 64] [--rounds 60]
//
// Prints the largest difference between the two builds' embeddings (0 when a change kept the
// results bit-identical) and old / new, ORT / new, ORT / old.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-web';
import { loadModel } from '../web/src/index.js';
import { encoderInputsFor, median, normals, readSafetensors } from './lib.mjs';

const { values: args } = parseArgs({ options: { old: { type: 'string' }, tokens: { type: 'string', default: '64' }, rounds: { type: 'string', default: '60' } } });
if (!args.old) {
  console.error('usage: node bench/compare_builds.mjs --old PATH/TO/web [--tokens 64] [--rounds 60]');
  process.exit(2);
}
const { loadModel: loadOld } = await import(pathToFileURL(path.join(path.resolve(args.old), 'src', 'index.js')).href);
const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');
const meta = JSON.parse(readFileSync(path.join(MODELS, 'models.json'), 'utf8'));
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';
const cfg = meta.encoder.config, P = cfg.modalities[0].patch_len, d = cfg.d_model, N = Number(args.tokens);
const file = path.join(MODELS, 'encoder.safetensors');
const st = readSafetensors(file);
const fresh = await loadModel(file, { numThreads: 1 }), old = await loadOld(file, { numThreads: 1 });
const session = await ort.InferenceSession.create(path.join(MODELS, 'encoder.onnx'), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
const samples = normals(N * P, N);
const window = { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }], referenceTime: meta.encoder.startTime };
const a = fresh.forward(window).embeddings, b = old.forward(window).embeddings;
let diff = 0;
for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - b[i]));
// ORT's share as in `npm run bench`: the JS preprocessing (patches, embeddings) and session.run.
const cases = {
  new: () => fresh.forward(window),
  old: () => old.forward(window),
  ort: async () => {
    const { patches, embed } = encoderInputsFor(st, cfg, meta.encoder.rateHz, samples, N);
    return session.run({ patches: new ort.Tensor('float32', patches, [N, P]), embed: new ort.Tensor('float32', embed, [N, d]) });
  },
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const ROUNDS = Number(args.rounds), WARM = Math.min(10, ROUNDS >> 2), REPS = 20;
for (let r = 0; r < ROUNDS; r++)
  for (const [k, f] of Object.entries(cases)) {
    const t0 = performance.now();
    for (let i = 0; i < REPS; i++) await f();
    if (r >= WARM) times[k].push((performance.now() - t0) / REPS);
  }
const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
console.log(`${N} tokens, ${ROUNDS - WARM} rounds of ${REPS}: max |new - old| ${diff}; new ${m.new.toFixed(3)} ms, old ${m.old.toFixed(3)} ms, onnxruntime-web ${m.ort.toFixed(3)} ms; ` +
  `old / new ${(m.old / m.new).toFixed(3)}, ORT / new ${(m.ort / m.new).toFixed(2)}, ORT / old ${(m.ort / m.old).toFixed(2)}`);
session.release();
