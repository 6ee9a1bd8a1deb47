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
//
// --model demo runs the demo model (demo/model/demo.safetensors, factorized, d 32) on the bench's
// demo window (bench/models/demo_window.json, 129 tokens) instead, without onnxruntime-web.
// --threads T loads both builds with numThreads T (the threaded build when T > 1) and leaves
// onnxruntime-web out (its threads run in workers: bench/threads.mjs). --pause MS times single
// forwards, each after a pause of MS (a streaming update's case: the helper threads have gone to
// sleep and the first step must wake them), instead of rounds of 20 back to back.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-web';
import { loadModel } from '../web/src/index.js';
import { encoderInputsFor, median, normals, readSafetensors } from './lib.mjs';

const { values: args } = parseArgs({ options: { old: { type: 'string' }, tokens: { type: 'string', default: '64' }, rounds: { type: 'string', default: '60' }, threads: { type: 'string', default: '1' }, pause: { type: 'string', default: '0' }, model: { type: 'string', default: 'encoder' } } });
const THREADS = Number(args.threads), PAUSE = Number(args.pause);
const DEMO = args.model === 'demo';
const WITH_ORT = THREADS === 1 && !DEMO;  // onnxruntime-web runs beside the builds only then (above)
if (!args.old || !(Number.isInteger(THREADS) && THREADS >= 1) || !(PAUSE >= 0) || !['encoder', 'demo'].includes(args.model)) {
  console.error('usage: node bench/compare_builds.mjs --old PATH/TO/web [--tokens 64] [--rounds 60] [--threads 1] [--pause 0] [--model encoder|demo]');
  process.exit(2);
}
const { loadModel: loadOld } = await import(pathToFileURL(path.join(path.resolve(args.old), 'src', 'index.js')).href);
const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');
const meta = JSON.parse(readFileSync(path.join(MODELS, 'models.json'), 'utf8'));
ort.env.wasm.numThreads = 1;
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';
const cfg = meta.encoder.config, P = cfg.modalities[0].patch_len, d = cfg.d_model, N = Number(args.tokens);
const file = DEMO ? path.join(MODELS, '..', '..', 'demo', 'model', 'demo.safetensors') : path.join(MODELS, 'encoder.safetensors');
const st = WITH_ORT ? readSafetensors(file) : null;  // onnxruntime-web's inputs
const fresh = await loadModel(file, { numThreads: THREADS }), old = await loadOld(file, { numThreads: THREADS });
if (fresh.threads !== THREADS || old.threads !== THREADS) throw new Error(`threads granted: new ${fresh.threads}, old ${old.threads} (asked ${THREADS})`);
const session = WITH_ORT ? await ort.InferenceSession.create(path.join(MODELS, 'encoder.onnx'), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' }) : null;
const samples = normals(N * P, N);
const window = DEMO ? JSON.parse(readFileSync(path.join(MODELS, 'demo_window.json'), 'utf8')) : { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }], referenceTime: meta.encoder.startTime };
const a = fresh.forward(window).embeddings, b = old.forward(window).embeddings;
let diff = 0;
for (let i = 0; i < a.length; i++) diff = Math.max(diff, Math.abs(a[i] - b[i]));
// ORT's share as in `npm run bench`: the JS preprocessing (patches, embeddings) and session.run.
const cases = {
  new: () => fresh.forward(window),
  old: () => old.forward(window),
  ...(WITH_ORT && {
    ort: async () => {
      const { patches, embed } = encoderInputsFor(st, cfg, meta.encoder.rateHz, samples, N);
      return session.run({ patches: new ort.Tensor('float32', patches, [N, P]), embed: new ort.Tensor('float32', embed, [N, d]) });
    },
  }),
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const ROUNDS = Number(args.rounds), WARM = Math.min(10, ROUNDS >> 2), REPS = PAUSE > 0 ? 1 : 20;
for (let r = 0; r < ROUNDS; r++)
  for (const [k, f] of Object.entries(cases)) {
    if (PAUSE > 0) await new Promise((resolve) => setTimeout(resolve, PAUSE));
    const t0 = performance.now();
    for (let i = 0; i < REPS; i++) await f();
    if (r >= WARM) times[k].push((performance.now() - t0) / REPS);
  }
const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
const how = PAUSE > 0 ? `${ROUNDS - WARM} forwards each after a ${PAUSE} ms pause` : `${ROUNDS - WARM} rounds of ${REPS}`;
console.log(`${DEMO ? 'demo model, demo window' : `${N} tokens`}, ${THREADS} thread${THREADS > 1 ? 's' : ''}, ${how}: max |new - old| ${diff}; new ${m.new.toFixed(3)} ms, old ${m.old.toFixed(3)} ms` +
  (m.ort ? `, onnxruntime-web ${m.ort.toFixed(3)} ms; old / new ${(m.old / m.new).toFixed(3)}, ORT / new ${(m.ort / m.new).toFixed(2)}, ORT / old ${(m.ort / m.old).toFixed(2)}` : `; old / new ${(m.old / m.new).toFixed(3)}`));
fresh.dispose();
old.dispose();
session?.release();
