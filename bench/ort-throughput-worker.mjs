// Worker thread of bench/peers.mjs's throughput rows: onnxruntime-web with env.wasm.numThreads =
// workerData.threads (an ORT instance's thread count is fixed when it starts, and the main
// thread's instance is pinned to one thread), running the demo graph `count` times on request.
import { parentPort, workerData } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import * as ort from 'onnxruntime-web';

const f32 = (name) => new Float32Array(new Uint8Array(readFileSync(path.join(workerData.models, name))).buffer);
let session, feeds;
const warnings = [];
console.warn = (...a) => warnings.push(a.join(' '));  // ORT says here when it falls back to 1 thread

parentPort.on('message', async (msg) => {
  if (msg.op === 'init') {
    ort.env.wasm.numThreads = workerData.threads;
    ort.env.logLevel = 'error';
    session = await ort.InferenceSession.create(path.join(workerData.models, 'demo.onnx'), { executionProviders: ['wasm'] });
    const T = workerData.tokens;
    feeds = {
      tokens: new ort.Tensor('float32', f32('demo_tokens.f32'), [T, 32]),
      time_mask: new ort.Tensor('float32', f32('demo_time_mask.f32'), [T, T]),
      channel_mask: new ort.Tensor('float32', f32('demo_channel_mask.f32'), [T, T]),
    };
    // The warm-up run's outputs go back so the bench can check this instance's numbers too.
    const r = await session.run(feeds);
    parentPort.postMessage({ threads: ort.env.wasm.numThreads, note: warnings.join(' ').slice(0, 120), embeddings: r.embeddings.data, head: r.head.data });
  } else if (msg.op === 'run') {
    const t0 = performance.now();
    for (let i = 0; i < msg.count; i++) await session.run(feeds);
    parentPort.postMessage({ perSecond: msg.count / ((performance.now() - t0) / 1000) });
  }
});
