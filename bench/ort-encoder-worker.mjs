// Worker thread of bench/threads.mjs: onnxruntime-web on the encoder graph with its own thread
// count (env.wasm.numThreads is fixed per ORT instance when it starts, and the main thread's is
// pinned to 1), timing one run per request inside this thread (the JS preprocessing, as in the
// other encoder rows, and session.run) so that messaging is not charged to it; `repeat` runs several
// back to back and reports the first's and the last's time.
//   workerData: { models, threads (a number, or null for ORT's default) }
import { parentPort, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import * as ort from 'onnxruntime-web';
import { encoderInputsFor, readSafetensors } from './lib.mjs';

const warnings = [];
console.warn = (...a) => warnings.push(a.join(' '));  // ORT says here when it falls back to 1 thread
const meta = JSON.parse(readFileSync(path.join(workerData.models, 'models.json'), 'utf8'));
const cfg = meta.encoder.config, P = cfg.modalities[0].patch_len, d = cfg.d_model;
const st = readSafetensors(path.join(workerData.models, 'encoder.safetensors'));
let session;

async function run(samples, N) {
  const { patches, embed } = encoderInputsFor(st, cfg, meta.encoder.rateHz, samples, N);
  const r = await session.run({ patches: new ort.Tensor('float32', patches, [N, P]), embed: new ort.Tensor('float32', embed, [N, d]) });
  return r.embeddings.data;
}

parentPort.on('message', async (msg) => {
  if (msg.op === 'init') {
    if (workerData.threads != null) ort.env.wasm.numThreads = workerData.threads;
    ort.env.wasm.simd = true;
    ort.env.logLevel = 'error';
    session = await ort.InferenceSession.create(path.join(workerData.models, 'encoder.onnx'), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    parentPort.postMessage({ threads: ort.env.wasm.numThreads, note: warnings.join(' ').slice(0, 120) });
  } else if (msg.op === 'run') {
    // msg.repeat runs back to back (default 1): ms is the first's time, msLast the last's.
    let out, ms, msLast;
    for (let i = 0; i < (msg.repeat ?? 1); i++) {
      const t0 = performance.now();
      out = await run(msg.samples, msg.N);
      msLast = performance.now() - t0;
      if (i === 0) ms = msLast;
    }
    parentPort.postMessage({ ms, msLast, out: msg.keep ? out : null });
  }
});
