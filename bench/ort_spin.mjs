#!/usr/bin/env node
// How long onnxruntime-web's thread pool keeps spinning after a run, seen from the run after it
// (why bench/threads.mjs pauses SETTLE_MS before each timed run): onnxruntime-web with numThreads 2
// runs a forward of the bench encoder in a worker, then, after a pause of P ms, one of ours on 1 or
// 2 threads (alternating) is timed; medians per pause. While ORT's pool still spins, our 2 threads
// get one core, and 2 threads / 1 thread falls below 1.
//   node bench/ort_spin.mjs [--tokens 64] [--rounds 41]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { loadModel } from '../web/src/index.js';
import { median, normals } from './lib.mjs';

const { values: args } = parseArgs({ options: { tokens: { type: 'string', default: '64' }, rounds: { type: 'string', default: '41' } } });
const N = Number(args.tokens), ROUNDS = Number(args.rounds);
const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');
const meta = JSON.parse(readFileSync(path.join(MODELS, 'models.json'), 'utf8'));
const P = meta.encoder.config.modalities[0].patch_len;
const file = path.join(MODELS, 'encoder.safetensors');
const ours = { 1: await loadModel(file, { numThreads: 1 }), 2: await loadModel(file, { numThreads: 2 }) };
const worker = new Worker(new URL('./ort-encoder-worker.mjs', import.meta.url), { workerData: { models: MODELS, threads: 2 } });
const ask = (msg) => new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); worker.postMessage(msg); });
await ask({ op: 'init' });
const samples = normals(N * P, N);
const window = { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }], referenceTime: meta.encoder.startTime };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (const pause of [20, 50, 100, 200]) {
  const t = { 1: [], 2: [] };
  for (let r = 0; r < ROUNDS; r++)
    for (const threads of r % 2 ? [1, 2] : [2, 1]) {
      await ask({ op: 'run', samples, N });
      await sleep(pause);
      const t0 = performance.now();
      ours[threads].forward(window);
      t[threads].push(performance.now() - t0);
    }
  console.log(`${N} tokens, ${pause} ms after onnxruntime-web's 2-thread run: ours 1 thread ${median(t[1]).toFixed(3)} ms, 2 threads ${median(t[2]).toFixed(3)} ms, 1 / 2 threads ${(median(t[1]) / median(t[2])).toFixed(2)}`);
}
await worker.terminate();
ours[1].dispose();
ours[2].dispose();
