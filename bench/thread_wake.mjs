#!/usr/bin/env node
// What a helper thread's wake-up costs (core/parallel.cpp, the spin before sleeping; BENCHMARKS.md
// "Threads inside one forward"): the bench encoder (d 64, 4 heads, ff 256) on 1 and 2 threads,
// forwards back to back (the helper still spinning from the forward before) and after a 20 ms
// pause (the helper asleep, its core idle), alternating 1 and 2 threads; medians.
//   node bench/thread_wake.mjs [rounds=21]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../web/src/index.js';
import { median } from './lib.mjs';

const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');
const meta = JSON.parse(readFileSync(path.join(MODELS, 'models.json'), 'utf8'));
const ROUNDS = Number(process.argv[2] ?? 21);
const file = path.join(MODELS, 'encoder.safetensors');
const one = await loadModel(file, { numThreads: 1 }), two = await loadModel(file, { numThreads: 2 });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const time = (model, w) => { const t = performance.now(); model.forward(w); return performance.now() - t; };
for (const N of [256, 1024]) {
  const P = meta.encoder.config.modalities[0].patch_len;
  const samples = Float32Array.from({ length: N * P }, (_, i) => Math.sin(i * 0.37));
  const w = { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }] };
  for (let i = 0; i < 5; i++) { time(one, w); time(two, w); }
  const t = { one: [], two: [], onePaused: [], twoPaused: [] };
  for (let r = 0; r < ROUNDS; r++) {
    t.one.push(time(one, w));
    t.two.push(time(two, w));
    t.two.push(time(two, w));  // right after a 2-thread forward: the helper is spinning
  }
  for (let r = 0; r < ROUNDS; r++) {
    await sleep(20);
    t.twoPaused.push(time(two, w));
    await sleep(20);
    t.onePaused.push(time(one, w));
  }
  const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
  console.log(`N ${N}: back to back 1 thread ${m.one.toFixed(2)} ms, 2 threads ${m.two.toFixed(2)} ms (${(m.one / m.two).toFixed(2)}x); ` +
    `after a 20 ms pause 1 thread ${m.onePaused.toFixed(2)} ms, 2 threads ${m.twoPaused.toFixed(2)} ms (${(m.onePaused / m.twoPaused).toFixed(2)}x)`);
}
