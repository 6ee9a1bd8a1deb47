// The worker side of loadModelInWorker (worker-client.js): hosts one Model in a Web Worker or a
// Node worker_thread and answers { id, op, args } messages with { id, ok, result | error }.
// Result typed arrays are transferred back, never copied.
import { loadModel } from './model.js';
import { transferables } from './transfer.js';

// No top-level await: bundlers emit workers as classic scripts (Vite's default "iife") by default.
const inWebWorker = typeof WorkerGlobalScope !== 'undefined' && typeof self === 'object';

let model = null;

const ops = {
  async load({ source, options }) {
    model?.dispose();
    model = await loadModel(source, options);
    return { config: model.config };
  },
  forward: ({ window, options }) => model.forward(window, options),
  forwardBatch: ({ windows, options }) => model.forwardBatch(windows, options),
  dispose() {
    model?.dispose();
    model = null;
    return null;
  },
};

async function handle(port, { id, op, args }) {
  try {
    const result = await ops[op](args);
    port.postMessage({ id, ok: true, result }, [...transferables(result)]);
  } catch (e) {
    port.postMessage({ id, ok: false, error: { code: e.code ?? 'WORKER_FAILED', message: e.message } });
  }
}

if (inWebWorker) self.onmessage = (e) => handle(self, e.data);
else import(/* @vite-ignore */ 'node:worker_threads').then(({ parentPort }) => parentPort.on('message', (m) => handle(parentPort, m)));
