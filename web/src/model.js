// A loaded sensor transformer: loadModel(source) -> Model with forward() and dispose().
import { SensorformerError } from './errors.js';
import { loadWasm } from './loader.js';
import { warmUp } from './warmup.js';
import { describe, normalizeWindow } from './window.js';
import { isNode } from './env.js';

// The options of forward() / forwardBatch(), checked in this one place: Model uses it, and the
// worker path (worker-client.js on the calling thread, Model again in the worker) gets the same
// codes. undefined or null mean the defaults; anything else must be a plain object with only
// these keys (a typo such as { atention: true } is an error, not a silent default). `extra`: keys
// the caller handles itself (WorkerModel's `transfer`), returned as given after the same check.
const FORWARD_OPTIONS = {
  attention: { fallback: false, valid: (v) => typeof v === 'boolean', expected: 'true or false' },
  // Compute limit in GFLOP (the core's default when undefined); Infinity lifts it.
  maxGflop: { fallback: undefined, valid: (v) => typeof v === 'number' && v > 0, expected: 'a number > 0 (Infinity: no limit)' },
};

function plainObject(v) {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;  // {} or Object.create(null), any realm
}

export function forwardOptions(options, method = 'forward(window, options)', extra = {}) {
  const specs = { ...FORWARD_OPTIONS, ...extra };
  const accepted = Object.keys(specs).join(', ');
  if (options == null) options = {};
  else if (!plainObject(options))
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: options must be an object with the keys ${accepted}, got ${describe(options)}`);
  const out = {};
  for (const key of Object.keys(options))
    if (!Object.hasOwn(specs, key)) throw new SensorformerError('INVALID_ARGUMENT', `${method}: unknown option "${key}" (accepted: ${accepted})`);
  for (const [key, spec] of Object.entries(specs)) {
    const v = options[key];
    if (v === undefined) out[key] = spec.fallback;
    else if (spec.valid(v)) out[key] = v;
    else throw new SensorformerError('INVALID_ARGUMENT', `${method}: ${key} must be ${spec.expected}, got ${describe(v)}`);
  }
  return out;
}

// Also used by loadModelInWorker, which reads the bytes once for all its workers.
export async function readSource(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (typeof source === 'string' || source instanceof URL) {
    // A string with a scheme is a URL; otherwise a file path in Node, and in a browser a URL
    // relative to the page (what fetch('model.safetensors') would mean there).
    const absolute = /^[a-z][a-z0-9+.-]*:/i.test(source) && !/^[a-z]:\\/i.test(source);
    const url = source instanceof URL ? source : absolute ? new URL(source) : isNode ? null : new URL(source, globalThis.location?.href);
    try {
      if (url && url.protocol !== 'file:') {
        const response = await fetch(url);
        if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
        return new Uint8Array(await response.arrayBuffer());
      }
      const { readFile } = await import(/* @vite-ignore */ 'node:fs/promises');
      return new Uint8Array(await readFile(url ?? source));
    } catch (cause) {
      throw new SensorformerError('IO', `could not read the model from ${source}: ${cause.message}`, { cause });
    }
  }
  throw new SensorformerError('INVALID_ARGUMENT', 'loadModel(source): source must be a URL, a path (Node), an ArrayBuffer or a Uint8Array');
}

const registry = new FinalizationRegistry((handle) => handle.delete());

// forwardAt(model, window, parsedOptions, index): one window of a batch, its errors naming
// windows[index]. The worker pool (worker.js) runs a batch in chunks, and an error must name the
// window's index in the whole batch, as Model.forwardBatch's does. Not part of the package's API.
export let forwardAt;

export class Model {
  #handle;
  #config;

  static {
    forwardAt = (model, window, parsed, index) => {
      model.#usable();
      return model.#forward(window, parsed, `windows[${index}]`);
    };
  }

  constructor(handle) {
    this.#handle = handle;
    this.#config = JSON.parse(handle.configJson());
    registry.register(this, handle, this);
  }

  /** The config stored in the weights file (docs/model.md). */
  get config() {
    return this.#config;
  }

  /**
   * Runs one window. Returns embeddings (T x d_model), pooled (d_model), head (n_outputs), the
   * token labels and, with { attention: true }, the attention maps of every layer and group.
   */
  forward(window, options) {
    this.#usable();
    return this.#forward(window, forwardOptions(options), 'window');
  }

  #usable() {
    if (!this.#handle) throw new SensorformerError('DISPOSED', 'this model was disposed');
  }

  #forward(window, { attention, maxGflop }, path) {
    const r = this.#handle.forward(normalizeWindow(window, path), { attention, maxGflop });
    // The core's messages say "stream i"; in a batch, which window it was matters too.
    if (!r.ok) throw new SensorformerError(r.code, path === 'window' ? r.message : `${path}: ${r.message}`);
    const d = this.#config.d_model, T = r.tokenTime.length;
    const modalities = this.#config.modalities.map((m) => m.name);
    const H = this.#config.n_heads;
    return {
      embeddings: r.embeddings,
      dims: [T, d],
      pooled: r.pooled,
      head: r.head.length ? r.head : null,
      referenceTime: r.referenceTime,
      tokens: {
        stream: r.tokenStream,
        modality: Array.from(r.tokenModality, (m) => modalities[m]),
        time: r.tokenTime,
        present: r.tokenPresent,
      },
      attention: attention
        ? r.attention.map((m) => ({ layer: m.layer, block: m.block, group: m.group, tokens: m.tokens, weights: m.weights, dims: [H, m.tokens.length, m.tokens.length] }))
        : null,
    };
  }

  /** A ragged batch: windows of any shapes, each computed on its own. Errors name windows[i]. */
  forwardBatch(windows, options) {
    this.#usable();
    const parsed = forwardOptions(options, 'forwardBatch(windows, options)');
    if (!Array.isArray(windows)) throw new SensorformerError('INVALID_ARGUMENT', `forwardBatch(windows): windows must be an array, got ${describe(windows)}`);
    return Array.from(windows, (w, i) => this.#forward(w, parsed, `windows[${i}]`));
  }

  /** Frees the WebAssembly memory of this model now (also happens on garbage collection). */
  dispose() {
    if (!this.#handle) return;
    registry.unregister(this);
    this.#handle.delete();
    this.#handle = null;
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.dispose();
  }
}

/** Loads a weights file: a URL, a Node file path, an ArrayBuffer or a Uint8Array. */
export async function loadModel(source, options) {
  const wasm = await loadWasm(options);
  const bytes = await readSource(source);
  const handle = new wasm.Model();
  const result = handle.load(bytes);
  if (!result.ok) {
    handle.delete();
    throw new SensorformerError(result.code, result.message);
  }
  const model = new Model(handle);
  if (options?.warmup !== false) await warmUp(model);  // web/src/warmup.js: why and how long
  return model;
}
