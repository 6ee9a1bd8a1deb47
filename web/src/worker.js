// The worker side of loadModelInWorker (worker-client.js): hosts one Model in a Web Worker or a
// Node worker_thread and answers { id, op, args } messages with { id, ok, result | error }.
// Result typed arrays are transferred back, never copied. Every request gets exactly one answer.
import { SensorformerError } from './errors.js';
import { describe } from './window.js';
import { forwardAt, forwardOptions, modelFromBytes } from './model.js';
import { loadWasm } from './loader.js';
import { transferables } from './transfer.js';

// No top-level await: bundlers emit workers as classic scripts (Vite's default "iife") by default.
const inWebWorker = typeof WorkerGlobalScope !== 'undefined' && typeof self === 'object';

let model = null;
let wasm = null;  // the module of `model`
// Set once the WebAssembly module aborted (Emscripten's abort(), e.g. a failed allocation, or a
// trap): both throw a WebAssembly.RuntimeError and leave the module's memory and stack pointer as
// they were mid-call, so nothing may run on it again. Every request then gets this error marked
// `fatal`, and the calling thread replaces this worker (worker-client.js, WorkerModel).
let aborted = null;
// The stream sessions of this worker's model, by the id the calling thread knows them by
// (WorkerStreamSession pins each to one worker). A session of a disposed model stays here and
// answers DISPOSED, as on the main thread.
const sessions = new Map();
let nextSession = 0;

function loaded() {
  if (!model) throw new SensorformerError('DISPOSED', 'this model was disposed');
  return model;
}

function session(id) {
  const s = sessions.get(id);
  if (!s) throw new SensorformerError('DISPOSED', 'this stream session was disposed');
  return s;
}

// What WorkerStreamSession's getters read, sent with every answer about the session: the calling
// thread keeps the values of the last answer instead of asking the worker for each.
const sessionState = (s) => ({ frontier: s.frontier, referenceTime: s.referenceTime, memoryBytes: s.memoryBytes, finalTokens: s.finalTokens });

const ops = {
  // bytes: the weights, read on the calling thread; name: their URL or path, for the messages;
  // options: { wasmUrl | wasmBinary, numThreads, warmup }, checked there (the rest stays on that thread).
  async load({ bytes, name, options }) {
    model?.dispose();
    model = null;
    wasm = await loadWasm(options);
    model = await modelFromBytes(wasm, bytes, name, options);
    return { config: model.config, info: model.info, threads: model.threads };
  },
  // The options were checked on the calling thread already; Model checks them again (same codes).
  forward({ window, options }) {
    testFault?.(window);
    return loaded().forward(window, options);
  },
  // windows: the batch, or with a pool the chunk of it that starts at windows[offset]. An error
  // names the window's index in the whole batch and carries it (`index`), so the pool can report
  // the first bad window of the batch, as Model.forwardBatch does.
  forwardBatch({ windows, options, offset = 0 }) {
    const m = loaded();
    const parsed = forwardOptions(options, 'forwardBatch(windows, options)');
    if (!Array.isArray(windows)) throw new SensorformerError('INVALID_ARGUMENT', `forwardBatch(windows): windows must be an array, got ${describe(windows)}`);
    return windows.map((w, j) => {
      try {
        return forwardAt(m, w, parsed, offset + j);
      } catch (e) {
        if (e instanceof Error) e.index = offset + j;
        throw e;
      }
    });
  },
  // The options were checked on the calling thread (stream.js's check, the same codes).
  streamStart({ options }) {
    const s = loaded().stream(options);
    const id = nextSession++;
    sessions.set(id, s);
    return { session: id, state: sessionState(s) };
  },
  streamPush({ session: id, chunk }) {
    const s = session(id);
    return { result: s.push(chunk), state: sessionState(s) };
  },
  streamPooled({ session: id, options }) {
    const s = session(id);
    return { result: s.pooled(options), state: sessionState(s) };
  },
  streamDispose({ session: id }) {
    sessions.get(id)?.dispose();
    sessions.delete(id);
    return null;
  },
  dispose() {
    model?.dispose();
    model = null;
    return null;
  },
};

const abortedError = () => ({ code: 'WORKER_FAILED', message: `the sensorformer worker's WebAssembly module aborted (${aborted.message}); the worker is replaced`, fatal: true });

async function handle(port, { id, op, args }) {
  let reply;
  try {
    if (aborted) throw aborted;
    if (!Object.hasOwn(ops, op)) throw new SensorformerError('WORKER_FAILED', `unknown worker request "${op}"`);
    const result = await ops[op](args);
    reply = () => port.postMessage({ id, ok: true, result }, [...transferables(result)]);
  } catch (e) {
    if (e instanceof WebAssembly.RuntimeError) aborted ??= e;
    const error = aborted ? abortedError() : { code: e?.code ?? 'WORKER_FAILED', message: String(e?.message ?? e), index: e?.index };
    reply = () => port.postMessage({ id, ok: false, error });
  }
  try {
    reply();
  } catch (e) {
    // A result that cannot be posted must still answer its request, or the caller waits forever.
    port.postMessage({ id, ok: false, error: { code: 'WORKER_FAILED', message: `the result could not be sent back: ${e?.message ?? e}` } });
  }
}

// Test seam (tests/js/worker.test.js, through worker-client.js's testSeam; Node only, not package
// API): with workerData.abortAt set, a forward of a window whose referenceTime is that number
// leaves this worker's module as an abort does: that call and every later call into it throw a
// WebAssembly.RuntimeError (the module's Model.forward is replaced by one that throws).
let testFault = null;
function installTestFault(workerData) {
  const at = workerData?.abortAt;
  if (typeof at !== 'number') return;
  testFault = (window) => {
    if (window?.referenceTime !== at || !wasm) return;
    wasm.Model.prototype.forward = () => { throw new WebAssembly.RuntimeError('test fault'); };
  };
}

if (inWebWorker) self.onmessage = (e) => handle(self, e.data);
else {
  import(/* @vite-ignore */ 'node:worker_threads').then(({ parentPort, workerData }) => {
    installTestFault(workerData);
    parentPort.on('message', (m) => handle(parentPort, m));
  });
}
