#!/usr/bin/env node
// Throughput on many windows: the demo model scoring the windows of a simulated session (chest
// strap with ECG and accelerometer, wrist thermometer, finger oximeter; 10 s windows every 1 s,
// as the demo page runs them) on the main thread, on one worker and on a pool of one worker per
// core. Interleaved rounds (the order rotates every round), medians, ratios against one worker.
// Every variant's results are checked bit-identical to the main thread's before anything is timed.
//   node bench/throughput.mjs [rounds=7] [seconds=240]
// Not a test: numbers depend on the machine and on what else runs on it.
import { availableParallelism } from 'node:os';

import { loadModel, loadModelInWorker } from '../web/src/index.js';
import { assertSameResults, interleavedCpu } from './lib.mjs';
import { windowsFromRecording } from '../web/src/ble/index.js';
import { recordSession } from '../tests/js/recordings.js';

const ROUNDS = Number(process.argv[2] ?? 7), SECONDS = Number(process.argv[3] ?? 240);
const MODEL = new URL('../demo/model/demo.safetensors', import.meta.url);
const cores = availableParallelism();

// A seeded session on a virtual clock (the tests' recording helper): the same windows on every run.
async function session(seconds) {
  return (await windowsFromRecording(await recordSession({ seed: 7, seconds }), { seconds: 10, hop: 1 })).windows;
}

const local = await loadModel(MODEL, { numThreads: 1 });  // windows spread over workers, one thread each
const { config } = local;
const known = new Set(config.modalities.map((m) => m.name));
const windows = (await session(SECONDS)).map((w) => ({
  ...w, streams: w.streams.filter((s) => known.has(s.modality) && config.placements.includes(s.placement) && s.sensor < config.n_sensors),
}));

const one = await loadModelInWorker(MODEL, { numThreads: 1 });
const pool = await loadModelInWorker(MODEL, { workers: cores });
const variants = [
  ['main thread, Model.forwardBatch', () => local.forwardBatch(windows)],
  ['1 worker, forwardBatch', () => one.forwardBatch(windows)],
  [`${cores} workers, forwardBatch`, () => pool.forwardBatch(windows)],
  [`${cores} workers, forward() per window`, () => Promise.all(windows.map((w) => pool.forward(w)))],
];

const reference = local.forwardBatch(windows);
for (const [name, run] of variants) assertSameResults(name, await run(), reference);  // also the warm-up round

const stats = await interleavedCpu(variants, ROUNDS);

const tokens = reference.reduce((n, r) => n + r.dims[0], 0) / reference.length;
console.log(`demo model (d_model ${config.d_model}, ${config.n_layers} layers, ${config.layout}); ${windows.length} windows of 10 s (mean ${tokens.toFixed(0)} tokens);`);
console.log(`${cores} cores (os.availableParallelism), Node ${process.versions.node}; ${ROUNDS} interleaved rounds, medians; results bit-identical in every variant`);
const base = stats[1].ms;
console.log(`${'variant'.padEnd(40)}${'ms / batch'.padStart(12)}${'windows/s'.padStart(12)}${'vs 1 worker'.padStart(13)}${'CPU ms'.padStart(10)}${'cores used'.padStart(12)}`);
variants.forEach(([name], v) => {
  const { ms, cpuMs: c } = stats[v];
  console.log(`${name.padEnd(40)}${ms.toFixed(1).padStart(12)}${(windows.length / (ms / 1000)).toFixed(0).padStart(12)}${`${(base / ms).toFixed(2)}x`.padStart(13)}${c.toFixed(0).padStart(10)}${(c / ms).toFixed(2).padStart(12)}`);
});
const { loadavg } = await import('node:os');
console.log(`load average during the run: ${loadavg()[0].toFixed(1)} (1 min) on ${cores} cores`);

await Promise.all([one.dispose(), pool.dispose()]);
local.dispose();
