// loadModelInWorker: the Model API, run in a Web Worker (browsers) or a worker_thread (Node), so
// inference never blocks the page's main thread. Every method returns a promise.
import { SensorformerError } from './errors.js';
import { transferables } from './transfer.js';
import { isNode } from './env.js';


async function startWorker() {
  if (isNode) {
    const { Worker } = await import(/* @vite-ignore */ 'node:worker_threads');
    const w = new Worker(new URL('./worker.js', import.meta.url));
    w.unref();  // an idle worker must not keep Node alive
    return {
      post: (msg, transfer) => w.postMessage(msg, transfer),
      listen: (onMessage, onError) => { w.on('message', onMessage); w.on('error', onError); },
      terminate: () => w.terminate(),
    };
  }
  // This exact form is what bundlers (Vite, webpack 5, esbuild plugins) recognise and emit.
  const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  return {
    post: (msg, transfer) => w.postMessage(msg, transfer),
    listen: (onMessage, onError) => {
      w.onmessage = (e) => onMessage(e.data);
      w.onerror = (e) => onError(new Error(e.message || 'worker script failed to load'));
    },
    terminate: () => w.terminate(),
  };
}

// Paths and relative URLs mean what they mean here, not relative to the worker's script.
function resolveSource(source) {
  if (typeof source !== 'string' || /^[a-z][a-z0-9+.-]*:/i.test(source)) return source instanceof URL ? source.href : source;
  if (isNode) return source;  // a file path: the worker shares the process's working directory
  return new URL(source, globalThis.location?.href).href;
}

export class WorkerModel {
  #worker;
  #pending = new Map();
  #next = 0;
  #failed = null;
  config = null;

  constructor(worker) {
    this.#worker = worker;
    worker.listen(({ id, ok, result, error }) => {
      const p = this.#pending.get(id);
      this.#pending.delete(id);
      if (ok) p.resolve(result);
      else p.reject(new SensorformerError(error.code, error.message));
    }, (cause) => {
      this.#failed = new SensorformerError('WORKER_FAILED', `the sensorformer worker stopped: ${cause.message}`, { cause });
      for (const p of this.#pending.values()) p.reject(this.#failed);
      this.#pending.clear();
    });
  }

  call(op, args, transfer = []) {
    if (!this.#worker) return Promise.reject(new SensorformerError('DISPOSED', 'this model was disposed'));
    if (this.#failed) return Promise.reject(this.#failed);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.post({ id, op, args }, transfer);
    });
  }

  /**
   * Same result as Model.forward, as a promise. With { transfer: true } the window's typed arrays
   * are moved to the worker instead of copied (they become unusable here).
   */
  forward(window, { attention = false, maxGflop, transfer = false } = {}) {
    return this.call('forward', { window, options: { attention, maxGflop } }, transfer ? [...transferables(window)] : []);
  }

  forwardBatch(windows, { attention = false, maxGflop, transfer = false } = {}) {
    return this.call('forwardBatch', { windows, options: { attention, maxGflop } }, transfer ? [...transferables(windows)] : []);
  }

  /** Frees the model and stops the worker. */
  async dispose() {
    if (!this.#worker) return;
    const worker = this.#worker;
    await this.call('dispose', {}).catch(() => {});
    this.#worker = null;
    await worker.terminate();
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.dispose();
  }
}

/** loadModel in a worker: same sources and options; resolves to a WorkerModel. */
export async function loadModelInWorker(source, options = {}) {
  const model = new WorkerModel(await startWorker());
  const wasmUrl = options.wasmUrl === undefined ? undefined : resolveSource(String(options.wasmUrl));
  try {
    const { config } = await model.call('load', { source: resolveSource(source), options: { ...options, wasmUrl } });
    model.config = config;
  } catch (e) {
    await model.dispose();
    throw e;
  }
  return model;
}
