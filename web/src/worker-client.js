// loadModelInWorker: the Model API, run in a Web Worker (browsers) or a worker_thread (Node), so
// inference never blocks the page's main thread. Every method returns a promise.
import { SensorformerError } from './errors.js';
import { loadOptions } from './loader.js';
import { forwardOptions } from './model.js';
import { transferables } from './transfer.js';
import { isNode } from './env.js';


// listen(onMessage, onFailure): onFailure(cause) when the worker can no longer answer (its script
// failed, it threw, it exited, or an answer could not be read); every pending call then rejects.
async function startWorker() {
  if (isNode) {
    const { Worker } = await import(/* @vite-ignore */ 'node:worker_threads');
    const w = new Worker(new URL('./worker.js', import.meta.url));
    w.unref();  // an idle worker must not keep Node alive
    return {
      post: (msg, transfer) => w.postMessage(msg, transfer),
      listen: (onMessage, onFailure) => {
        w.on('message', onMessage);
        w.on('error', onFailure);
        w.on('messageerror', (e) => onFailure(new Error(`an answer from the worker could not be read: ${e?.message ?? e}`)));
        w.on('exit', (code) => onFailure(new Error(`the worker exited (code ${code})`)));
      },
      terminate: () => w.terminate(),
    };
  }
  // This exact form is what bundlers (Vite, webpack 5, esbuild plugins) recognise and emit.
  const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  return {
    post: (msg, transfer) => w.postMessage(msg, transfer),
    listen: (onMessage, onFailure) => {
      w.onmessage = (e) => onMessage(e.data);
      w.onerror = (e) => onFailure(new Error(e.message || 'worker script failed to load'));
      w.onmessageerror = () => onFailure(new Error('an answer from the worker could not be read'));
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

const disposedError = () => new SensorformerError('DISPOSED', 'this model was disposed');
const TRANSFER = { transfer: { fallback: false, valid: (v) => typeof v === 'boolean', expected: 'true or false' } };

// postMessage throws a DataCloneError for what structured clone cannot copy (functions, symbols,
// class instances with private state, a SharedArrayBuffer or a detached buffer to transfer).
function postError(cause, what) {
  if (cause?.name === 'DataCloneError')
    return new SensorformerError('INVALID_ARGUMENT', `${what} cannot be sent to the worker: ${cause.message}`, { cause });
  return new SensorformerError('WORKER_FAILED', `${what} could not be sent to the worker: ${cause?.message ?? cause}`, { cause });
}

/**
 * Dispose: calls made after dispose() (awaited or not) reject with DISPOSED. Calls already in
 * flight complete: the worker answers messages in order, and it gets the dispose request after
 * them, so their answers arrive first; whatever is still unanswered when the worker stops (a
 * load in progress) rejects with DISPOSED. No call is left pending.
 */
export class WorkerModel {
  #worker;
  #pending = new Map();
  #next = 0;
  #failed = null;
  #disposing = null;
  config = null;

  constructor(worker) {
    this.#worker = worker;
    worker.listen(({ id, ok, result, error }) => {
      const p = this.#pending.get(id);
      if (!p) return;  // already rejected (the worker failed or was disposed meanwhile)
      this.#pending.delete(id);
      if (ok) p.resolve(result);
      else p.reject(new SensorformerError(error.code, error.message));
    }, (cause) => {
      this.#failed ??= this.#disposing ? disposedError() : new SensorformerError('WORKER_FAILED', `the sensorformer worker stopped: ${cause.message}`, { cause });
      for (const p of this.#pending.values()) p.reject(this.#failed);
      this.#pending.clear();
    });
  }

  call(op, args, transfer = [], what = `the ${op} request`) {
    if (this.#disposing) return Promise.reject(disposedError());
    return this.#send(op, args, transfer, what);
  }

  #send(op, args, transfer, what) {
    if (this.#failed) return Promise.reject(this.#failed);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.post({ id, op, args }, transfer);
      } catch (cause) {
        this.#pending.delete(id);
        reject(postError(cause, what));
      }
    });
  }

  // Same checks, in the same order, as Model: DISPOSED first, then the options (one function).
  #request(op, method, key, input, options, what) {
    try {
      if (this.#disposing) throw disposedError();
      const { transfer, ...modelOptions } = forwardOptions(options, method, TRANSFER);
      return this.#send(op, { [key]: input, options: modelOptions }, transfer ? [...transferables(input)] : [], what);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Same result as Model.forward, as a promise. With { transfer: true } the window's typed arrays
   * are moved to the worker instead of copied (they become unusable here).
   */
  forward(window, options) {
    return this.#request('forward', 'forward(window, options)', 'window', window, options, 'the window');
  }

  forwardBatch(windows, options) {
    return this.#request('forwardBatch', 'forwardBatch(windows, options)', 'windows', windows, options, 'the windows');
  }

  /** Frees the model and stops the worker (see the class comment for calls in flight). */
  dispose() {
    this.#disposing ??= (async () => {
      await this.#send('dispose', {}, [], 'dispose').catch(() => {});
      await this.#worker.terminate();
      const gone = disposedError();
      for (const p of this.#pending.values()) p.reject(gone);
      this.#pending.clear();
    })();
    return this.#disposing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.dispose();
  }
}

/** loadModel in a worker: same sources and options; resolves to a WorkerModel. */
export async function loadModelInWorker(source, options) {
  options = loadOptions(options);
  const model = new WorkerModel(await startWorker());
  const wasmUrl = options.wasmUrl === undefined ? undefined : resolveSource(String(options.wasmUrl));
  try {
    const { config } = await model.call('load', { source: resolveSource(source), options: { ...options, wasmUrl } }, [], 'the model source');
    model.config = config;
  } catch (e) {
    await model.dispose();
    throw e;
  }
  return model;
}
