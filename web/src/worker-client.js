// loadModelInWorker: the Model API, run in Web Workers (browsers) or worker_threads (Node), so
// inference never blocks the page's main thread; with { workers: n } a pool of n workers shares
// the calls, for throughput on many windows. Every method returns a promise.
import { SensorformerError } from './errors.js';
import { loadOptions } from './loader.js';
import { deepFreeze, forwardOptions } from './model.js';
import { checkOptions } from './options.js';
import { abortable, readSource, sourceName, checkSignal } from './source.js';
import { transferables } from './transfer.js';
import { describe } from './window.js';
import { isNode } from './env.js';
import { streamOptions } from './stream.js';

// An explicit `workers` above this is refused: each worker holds its own WebAssembly instance
// (16 MiB of memory at the start, growing with the largest window) and its own copy of the model,
// so a typo such as 1e6 must be an error, not a million threads.
export const MAX_WORKERS = 64;
// 'auto' uses every core up to this many: past it a pool only adds memory for a few more percent
// (the work is split per window, and the calling thread still serializes every answer).
const AUTO_MAX_WORKERS = 8;
// Chunks of a batch in flight per worker: two, so a worker starts its next chunk without waiting
// for a round trip to the calling thread, while at most one chunk waits behind a slow window.
const DEPTH = 2;
// Guided self-scheduling: a chunk is 1/(CHUNK_SHARE * workers) of the windows not handed out yet,
// so chunks shrink to single windows as the batch ends and the workers finish together; at most
// MAX_CHUNK windows, so dispose() and a worker's death leave little work hanging. The cost per
// message is small against copying the windows themselves: bench/throughput.mjs measured the same
// CPU time (all threads) with chunks of 1, 4 and 32 demo windows.
const CHUNK_SHARE = 4;
const MAX_CHUNK = 8;

// listen(onMessage, onFailure): onFailure(cause) when the worker can no longer answer (its script
// failed, it threw, it exited, or an answer could not be read); every pending call then rejects.
// busy(yes) (Node only): whether requests are waiting for an answer.
// startWorker() is synchronous once workerClass() resolved, so that the pool can put a replacement
// in place of a dead worker at once (WorkerModel#replace), before any later call picks a worker.
let NodeWorker = null;
async function workerClass() {
  if (isNode) NodeWorker ??= (await import(/* @vite-ignore */ 'node:worker_threads')).Worker;
}

/**
 * Test seam, not package API (the package's exports map does not reach this module): `workerData`
 * is handed to the Node worker threads started after it is set. tests/js/worker.test.js uses it to
 * make a worker's module fail as an aborted one does (worker.js, testFault).
 */
export const testSeam = { workerData: undefined };

function startWorker() {
  if (isNode) {
    const w = new NodeWorker(new URL('./worker.js', import.meta.url), { workerData: testSeam.workerData });
    return {
      post: (msg, transfer) => w.postMessage(msg, transfer),
      listen: (onMessage, onFailure) => {
        w.on('message', onMessage);
        w.on('error', onFailure);
        w.on('messageerror', (e) => onFailure(new Error(`an answer from the worker could not be read: ${e?.message ?? e}`)));
        w.on('exit', (code) => onFailure(new Error(`the worker exited (code ${code})`)));
        // After the listeners: a 'message' listener refs the worker again.
        w.unref();
      },
      // A worker keeps Node alive only while it owes an answer: an idle model that was never
      // disposed must not hold the process open, and an awaited forward() at the top level of a
      // script must not see the process end under it.
      busy: (yes) => (yes ? w.ref() : w.unref()),
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

async function coreCount() {
  if (isNode) return (await import(/* @vite-ignore */ 'node:os')).availableParallelism();
  return globalThis.navigator?.hardwareConcurrency;
}

// The `workers` option: undefined / null = 1 (one worker, as before pools existed); 'auto' = the
// number of cores (os.availableParallelism() in Node, navigator.hardwareConcurrency in browsers;
// 1 when the engine does not say) up to AUTO_MAX_WORKERS; else an integer 1..MAX_WORKERS.
export async function workerCount(workers) {
  if (workers == null) return 1;
  if (workers === 'auto') {
    const cores = await coreCount();
    return Number.isInteger(cores) && cores > 0 ? Math.min(cores, AUTO_MAX_WORKERS) : 1;
  }
  if (Number.isInteger(workers) && workers >= 1 && workers <= MAX_WORKERS) return workers;
  throw new SensorformerError('INVALID_ARGUMENT', `loadModelInWorker(source, options): workers must be an integer from 1 to ${MAX_WORKERS} or 'auto', got ${describe(workers)}`);
}

const disposedError = () => new SensorformerError('DISPOSED', 'this model was disposed');
const TRANSFER = { transfer: { fallback: false, valid: (v) => typeof v === 'boolean', expected: 'true or false' } };

// postMessage throws only for the message itself, never because of the worker: a DataCloneError
// for what structured clone cannot copy (functions, symbols, class instances with private state),
// or what copying it threw (a getter's own error; a RangeError for nesting deeper than the stack).
// The worker lives on, so all of these are INVALID_ARGUMENT.
function postError(cause, what) {
  const why = cause?.name === 'RangeError' ? `${cause.message} (nested too deeply to copy?)` : cause?.message ?? String(cause);
  return new SensorformerError('INVALID_ARGUMENT', `${what} cannot be sent to the worker: ${why}`, { cause });
}

// A detached ArrayBuffer (moved by an earlier transfer) in a transfer list: browsers throw a
// DataCloneError, Node 20 drops the message without a word, and the call would wait forever. A
// view cannot be made on a detached buffer (ArrayBuffer.prototype.detached is newer than Node 20).
function detached(buffer) {
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}
const detachedError = () => Object.assign(new Error('a typed array\'s ArrayBuffer is detached (moved to a worker by an earlier transfer: true call?) and cannot be transferred'), { name: 'DataCloneError' });

// The index in the whole batch of the window an error is about (the worker sends it with the error).
const errorIndex = new WeakMap();

// One worker: its requests in flight, each answered once, and how busy it is.
class Channel {
  #worker;
  #pending = new Map();
  #next = 0;
  #stopped;
  failed = null;  // the error every call gets once this worker can no longer answer
  messages = 0;   // requests not answered yet
  windows = 0;    // windows in them: how busy the worker is
  ready = true;   // false while a replacement worker loads the model: no call is routed to it
  loaded = false; // the model loaded in this worker once (only such a worker is replaced)

  // failure(cause): the error for calls pending when the worker stops; stopped(channel): after that.
  constructor(worker, failure, stopped) {
    this.#worker = worker;
    this.#stopped = stopped;
    worker.listen(({ id, ok, result, error }) => {
      const p = this.#pending.get(id);
      if (!p) return;  // already rejected (the worker failed or was disposed meanwhile)
      this.#pending.delete(id);
      if (ok) return p.resolve(result);
      const e = new SensorformerError(error.code, error.message);
      if (Number.isInteger(error.index)) errorIndex.set(e, error.index);
      p.reject(e);
      // The worker's WebAssembly module aborted (worker.js): nothing more may run on it.
      if (error.fatal) this.stop(e);
    }, (cause) => this.stop(failure(cause)));
  }

  /** Rejects every pending call with `error`, terminates the worker, and tells the model. */
  stop(error) {
    if (this.failed) return;
    this.failed = error;
    this.#rejectAll(error);
    try {
      Promise.resolve(this.#worker.terminate()).catch(() => {});
    } catch {
      // a worker that cannot be terminated is gone already
    }
    this.#stopped(this);
  }

  #rejectAll(error) {
    for (const p of this.#pending.values()) p.reject(error);
    this.#pending.clear();
  }

  // what: names the input in a post error, or a function (cause) => that error.
  send(op, args, transfer, what, windows = 0) {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.#next++;
    if (this.messages++ === 0) this.#worker.busy?.(true);
    this.windows += windows;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      try {
        if (transfer.some(detached)) throw detachedError();
        this.#worker.post({ id, op, args }, transfer);
      } catch (cause) {
        this.#pending.delete(id);
        reject(typeof what === 'function' ? what(cause) : postError(cause, what));
      }
    }).finally(() => {
      if (--this.messages === 0) this.#worker.busy?.(false);
      this.windows -= windows;
    });
  }

  // The worker answers in order, so the dispose request is answered after every request already
  // sent; whatever is still unanswered when it stops (a load in progress) rejects with DISPOSED.
  async close() {
    await this.send('dispose', {}, [], 'dispose').catch(() => {});
    await this.#worker.terminate();
    this.#rejectAll(disposedError());
  }
}

// The window of a chunk that structured clone refuses, for an error naming it (postMessage only
// says that something in the message could not be cloned).
function unclonable(windows, offset, cause) {
  for (let j = 0; j < windows.length; j++) {
    try {
      structuredClone(windows[j]);
    } catch (e) {
      const error = postError(e, `windows[${offset + j}]`);
      errorIndex.set(error, offset + j);
      return error;
    }
  }
  const error = postError(cause, `windows[${offset}..${offset + windows.length - 1}]`);
  errorIndex.set(error, offset);
  return error;
}

// The transfer list of `value` (`what` in an error): a getter that throws is the input's fault.
function transferList(value, what) {
  try {
    return [...transferables(value)];
  } catch (cause) {
    throw postError(cause, what);
  }
}

// With { transfer: true }: each buffer is moved with the chunk holding the last window that uses
// it (earlier chunks copy it), so windows sharing a buffer across chunks still arrive whole.
function transferPlan(windows) {
  const last = new Map();
  windows.forEach((w, i) => { for (const b of transferList(w, `windows[${i}]`)) last.set(b, i); });
  const byWindow = windows.map(() => []);
  for (const [b, i] of last) byWindow[i].push(b);
  return byWindow;
}

let loadAll;

const sessionDisposedError = () => new SensorformerError('DISPOSED', 'this stream session was disposed');
const sessionEndedError = () => new SensorformerError('DISPOSED', 'this stream session ended when its model was disposed');
const PUSH_OPTIONS = { transfer: TRANSFER.transfer };

/**
 * A StreamSession in a worker: the same results, as promises. Made by WorkerModel.stream(); the
 * session lives in one worker of the pool, which answers its calls in the order they were made,
 * so pushes need not wait for each other. The getters give the values after the last call that
 * settled (a push in flight is not counted yet).
 */
// Backstop for a WorkerStreamSession dropped without dispose(): its state in the worker would
// otherwise stay until the model is disposed (the main thread's sessions have the same backstop,
// stream.js). Held value: what the dispose message needs, never the session itself.
const sessionRegistry = new FinalizationRegistry(({ channel, id, modelDisposed }) => {
  if (!modelDisposed() && !channel.failed) channel.send('streamDispose', { session: id }, [], 'dispose').catch(() => {});
});

export class WorkerStreamSession {
  #channel;
  #id;
  #state;
  #modelDisposed;  // () => whether the WorkerModel is disposing or disposed
  #disposing = null;

  constructor(channel, id, state, modelDisposed) {
    this.#channel = channel;
    this.#id = id;
    this.#state = state;
    this.#modelDisposed = modelDisposed;
    sessionRegistry.register(this, { channel, id, modelDisposed }, this);
  }

  #send(op, args, transfer, what) {
    if (this.#disposing) return Promise.reject(sessionDisposedError());
    if (this.#modelDisposed()) return Promise.reject(sessionEndedError());
    return this.#channel.send(op, { session: this.#id, ...args }, transfer, what, 1).then(({ result, state }) => {
      this.#state = state;
      return result;
    });
  }

  /**
   * Same result as StreamSession.push. With { transfer: true } the chunk's typed arrays are moved
   * to the worker instead of copied (they become unusable here).
   */
  push(chunk, options) {
    try {
      const { transfer } = checkOptions(options, 'push(chunk, options)', PUSH_OPTIONS);
      return this.#send('streamPush', { chunk }, transfer ? transferList(chunk, 'the chunk') : [], 'the chunk');
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Same result as StreamSession.pooled. */
  pooled(options) {
    return this.#send('streamPooled', { options }, [], 'the options');
  }

  // As StreamSession's getters: DISPOSED once the session or its model is disposed.
  #current() {
    if (this.#disposing) throw sessionDisposedError();
    if (this.#modelDisposed()) throw sessionEndedError();
    return this.#state;
  }

  get frontier() { return this.#current().frontier; }
  get referenceTime() { return this.#current().referenceTime; }
  get memoryBytes() { return this.#current().memoryBytes; }
  get finalTokens() { return this.#current().finalTokens; }

  /**
   * Frees the session in its worker. Calls made before complete (the worker answers in order);
   * calls made after reject with DISPOSED. Idempotent; never rejects.
   */
  dispose() {
    sessionRegistry.unregister(this);
    this.#disposing ??= this.#modelDisposed()
      ? Promise.resolve()
      : this.#channel.send('streamDispose', { session: this.#id }, [], 'dispose').then(() => {}, () => {});
    return this.#disposing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.dispose();
  }
}

/**
 * The Model API on one worker or a pool of them.
 *
 * Scheduling: forward() goes at once to the least busy worker (fewest windows in flight). A
 * forwardBatch() on one worker is sent whole (as before pools); on a pool it is split into chunks
 * that each worker takes when it has fewer than DEPTH requests in flight, so a slow window holds
 * up only its own chunk. Results come back in input order, and the errors are Model's: the batch
 * rejects with the error of its first bad window (by index, "windows[i]: ..."), found by letting
 * the chunks before it finish; chunks after it are not started, and the other results are
 * dropped, as Model.forwardBatch drops them.
 *
 * Dispose: calls made after dispose() (awaited or not) reject with DISPOSED. Work already sent to
 * a worker completes: each worker answers in order and gets the dispose request after it. So a
 * forward() made before dispose() completes, and so does a batch on one worker; a batch on a pool
 * that still has windows not sent to any worker rejects with DISPOSED at once (dispose does not
 * wait for a long batch). Whatever is still unanswered when the workers stop rejects with
 * DISPOSED. No call is left pending. Stream sessions (stream()) end with their model: their calls
 * made after dispose() reject with DISPOSED, those already sent complete.
 *
 * A worker that dies (its thread exited or crashed, or its WebAssembly module aborted: worker.js)
 * rejects the calls it holds with WORKER_FAILED, a batch with a chunk on it included, and is
 * replaced at once by a new worker that loads the model again (from a copy of the file's bytes
 * this object keeps) before it takes calls; meanwhile later calls go to the workers still alive,
 * or wait for the replacement when none is. Stream sessions of a dead worker do not move (their
 * state died with it): their calls reject with WORKER_FAILED. A replacement that fails to start or
 * to load is not replaced again (a worker that cannot load would otherwise be restarted forever);
 * when no worker is left, every call rejects with WORKER_FAILED.
 */
export class WorkerModel {
  #channels;
  #jobs = [];  // batches not settled yet, oldest first
  #disposing = null;
  #restart = null;  // { start, bytes, name, options }: how to load a replacement (loadAll)
  #replacing = new Set();  // loads of replacements in progress (promises that never reject)
  config = null;
  /** As Model.info: what the model accepts and returns, and its size (in each worker). */
  info = null;
  /** As Model.threads: the threads each worker's forwards run on. */
  threads = 1;

  static {
    loadAll = async (model, bytes, name, options, start) => {
      // One copy of the bytes per worker, moved (not cloned) into it. new Uint8Array(view) copies;
      // a Node Buffer's slice() would not, and moving its memory would detach the caller's bytes.
      const copies = model.#channels.map(() => new Uint8Array(bytes));
      const loads = model.#channels.map((ch, i) => ch.send('load', { bytes: copies[i], name, options }, [copies[i].buffer], 'the model source'));
      const settled = await Promise.allSettled(loads);
      const failed = settled.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
      model.config = settled[0].value.config;
      model.info = deepFreeze(settled[0].value.info);
      model.threads = settled[0].value.threads;
      for (const ch of model.#channels) ch.loaded = true;
      // A copy of its own: the caller's Uint8Array may change after the load.
      model.#restart = { start, bytes: new Uint8Array(bytes), name, options };
    };
  }

  /** `workers`: one { post, listen, terminate } (see startWorker) or an array of them. */
  constructor(workers) {
    this.#channels = [].concat(workers).map((w) => this.#channel(w));
  }

  #channel(worker) {
    return new Channel(
      worker,
      (cause) => (this.#disposing ? disposedError() : new SensorformerError('WORKER_FAILED', `the sensorformer worker stopped: ${cause.message}`, { cause })),
      (ch) => {
        this.#replace(ch);
        this.#pump();
      },
    );
  }

  // A new worker in the place of `dead`, loading the model; calls are routed to it once it has.
  #replace(dead) {
    const i = this.#channels.indexOf(dead);
    if (i < 0 || this.#disposing || !this.#restart || !dead.loaded) return;
    const { start, bytes, name, options } = this.#restart;
    let fresh;
    try {
      fresh = this.#channel(start());
    } catch {
      return;  // no worker can be started: the pool goes on with those it has
    }
    fresh.ready = false;
    this.#channels[i] = fresh;
    const copy = new Uint8Array(bytes);
    const loading = fresh.send('load', { bytes: copy, name, options }, [copy.buffer], 'the model source').then(
      () => {
        fresh.ready = true;
        fresh.loaded = true;
      },
      (e) => fresh.stop(e.code === 'DISPOSED' ? e : new SensorformerError('WORKER_FAILED', `a replacement sensorformer worker could not load the model: ${e.message}`, { cause: e })),
    ).finally(() => {
      this.#replacing.delete(loading);
      this.#pump();
    });
    this.#replacing.add(loading);
  }

  /** How many workers the model runs on (dead ones included, replacements counted once). */
  get workers() {
    return this.#channels.length;
  }

  // The live, loaded worker with the fewest windows in flight (then the fewest requests) among
  // those with fewer than `limit` requests in flight; null if none.
  #leastBusy(limit = Infinity) {
    let best = null;
    for (const ch of this.#channels) {
      if (ch.failed || !ch.ready || ch.messages >= limit) continue;
      if (!best || ch.windows < best.windows || (ch.windows === best.windows && ch.messages < best.messages)) best = ch;
    }
    return best;
  }

  // A worker for a call: the least busy one; with none alive, the first replacement to finish
  // loading; none at all: WORKER_FAILED.
  async #worker() {
    for (;;) {
      if (this.#disposing) throw disposedError();
      const ch = this.#leastBusy();
      if (ch) return ch;
      if (!this.#replacing.size) throw this.#deadError();
      await Promise.race(this.#replacing);
    }
  }

  #deadError() {
    return this.#channels.find((ch) => ch.failed)?.failed ?? new SensorformerError('WORKER_FAILED', 'no sensorformer worker is running');
  }

  /**
   * Same result as Model.forward, as a promise. With { transfer: true } the window's typed arrays
   * are moved to the worker instead of copied (they become unusable here).
   */
  forward(window, options) {
    try {
      if (this.#disposing) throw disposedError();
      const { transfer, ...modelOptions } = forwardOptions(options, 'forward(window, options)', TRANSFER);
      const list = transfer ? transferList(window, 'the window') : [];
      const send = (ch) => ch.send('forward', { window, options: modelOptions }, list, 'the window', 1);
      const ch = this.#leastBusy();
      return ch ? send(ch) : this.#worker().then(send);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Model.stream in a worker: resolves to a WorkerStreamSession pinned to the least busy worker
   * (a session's state lives in one WebAssembly instance). Rejects with Model.stream's errors (a
   * model that is not causal: INVALID_ARGUMENT, the core's message).
   */
  stream(options) {
    try {
      if (this.#disposing) throw disposedError();
      const parsed = streamOptions(options);
      const open = (ch) => ch.send('streamStart', { options: parsed }, [], 'the options', 1)
        .then(({ session, state }) => new WorkerStreamSession(ch, session, state, () => this.#disposing !== null));
      const ch = this.#leastBusy();
      return ch ? open(ch) : this.#worker().then(open);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Same results as Model.forwardBatch, in input order (see the class comment for a pool). */
  forwardBatch(windows, options) {
    try {
      // Same checks, in the same order, as Model: DISPOSED, the options, then the array.
      if (this.#disposing) throw disposedError();
      const { transfer, ...modelOptions } = forwardOptions(options, 'forwardBatch(windows, options)', TRANSFER);
      if (!Array.isArray(windows)) throw new SensorformerError('INVALID_ARGUMENT', `forwardBatch(windows): windows must be an array, got ${describe(windows)}`);
      return new Promise((resolve, reject) => {
        this.#jobs.push({
          windows, options: modelOptions, transfer: transfer ? transferPlan(windows) : null,
          results: new Array(windows.length), next: 0, inFlight: new Set(), error: null, errorAt: Infinity, resolve, reject,
        });
        this.#pump();
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  // Hands out chunks of the batches, oldest batch first, while a worker has room for one.
  #pump() {
    if (this.#disposing) return;
    const live = this.#channels.filter((ch) => !ch.failed && ch.ready).length;
    const single = this.#channels.length === 1;
    for (const job of [...this.#jobs]) {
      if (!live && !this.#replacing.size) this.#fail(job, this.#deadError(), -1);
      while (live && job.next < job.windows.length && job.errorAt === Infinity) {
        const ch = this.#leastBusy(single ? Infinity : DEPTH);
        if (!ch) break;
        this.#dispatch(job, ch, single ? job.windows.length : Math.min(MAX_CHUNK, Math.ceil((job.windows.length - job.next) / (CHUNK_SHARE * live))));
      }
      this.#settle(job);
    }
  }

  #dispatch(job, ch, size) {
    const offset = job.next, windows = job.windows.slice(offset, offset + size);
    job.next += windows.length;
    job.inFlight.add(offset);
    const transfer = job.transfer ? job.transfer.slice(offset, offset + windows.length).flat() : [];
    ch.send('forwardBatch', { windows, options: job.options, offset }, transfer, (cause) => unclonable(windows, offset, cause), windows.length).then(
      (results) => results.forEach((r, j) => { job.results[offset + j] = r; }),
      (e) => this.#fail(job, e, errorIndex.get(e) ?? offset),
    ).then(() => {
      job.inFlight.delete(offset);
      this.#settle(job);
      this.#pump();
    });
  }

  // The batch's error is that of its lowest failing index (-1: before any window).
  #fail(job, error, index) {
    if (index < job.errorAt) {
      job.errorAt = index;
      job.error = error;
    }
  }

  #settle(job) {
    const i = this.#jobs.indexOf(job);
    if (i < 0) return;  // settled already
    if (job.errorAt !== Infinity) {
      for (const offset of job.inFlight) if (offset < job.errorAt) return;  // a lower index may fail too
      this.#jobs.splice(i, 1);
      job.reject(job.error);
    } else if (job.next === job.windows.length && job.inFlight.size === 0) {
      this.#jobs.splice(i, 1);
      job.resolve(job.results);
    }
  }

  /** Frees the model and stops the workers (see the class comment for calls in flight). */
  dispose() {
    this.#disposing ??= (async () => {
      for (const job of [...this.#jobs])
        if (job.next < job.windows.length && job.errorAt === Infinity) {
          this.#fail(job, disposedError(), -1);
          this.#settle(job);
        }
      await Promise.all(this.#channels.map((ch) => ch.close()));
      for (const job of [...this.#jobs]) {
        this.#fail(job, disposedError(), -1);
        job.inFlight.clear();
        this.#settle(job);
      }
    })();
    return this.#disposing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.dispose();
  }
}

/**
 * loadModel in a worker, or with { workers } in a pool of them: same sources and options;
 * resolves to a WorkerModel. The model is read or fetched once, here, and each worker gets a copy.
 */
export async function loadModelInWorker(source, options) {
  // The same check as loadModel's, plus `workers`. onProgress, signal and fetchOptions act here,
  // where the bytes are read; a worker gets the bytes, their name and what it needs to load them.
  const { workers, onProgress, signal, fetchOptions, ...load } = loadOptions(options, 'worker');
  const count = await workerCount(workers);
  const bytes = await readSource(source, { onProgress, signal, fetchOptions });
  checkSignal(signal);
  await workerClass();
  const started = Array.from({ length: count }, () => {
    try {
      return { status: 'fulfilled', value: startWorker() };
    } catch (reason) {
      return { status: 'rejected', reason };
    }
  });
  const running = started.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  const model = new WorkerModel(running);
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw new SensorformerError('WORKER_FAILED', `a sensorformer worker could not be started: ${failed.reason?.message ?? failed.reason}`, { cause: failed.reason });
    if (load.wasmUrl !== undefined) load.wasmUrl = resolveSource(String(load.wasmUrl));
    // A pool spreads windows over the cores already: its workers run one thread each unless
    // numThreads says otherwise (workers x threads beyond the cores only adds contention).
    if (load.numThreads === undefined && count > 1) load.numThreads = 1;
    // An abort stops waiting at once; dispose() below then stops the workers, load or warm-up
    // in progress included.
    await abortable(loadAll(model, bytes, sourceName(source), load, startWorker), signal);
  } catch (e) {
    await model.dispose();
    throw e;
  }
  return model;
}
