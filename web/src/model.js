// A loaded sensor transformer: loadModel(source) -> Model with forward() and dispose().
import { SensorformerError } from './errors.js';
import { loadOptions, loadWasm } from './loader.js';
import { abortable, readSource, sourceName, checkSignal } from './source.js';
import { warmUp } from './warmup.js';
import { describe, normalizeWindow } from './window.js';

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

const registry = new FinalizationRegistry((handle) => handle.delete());

// forwardAt(model, window, parsedOptions, index): one window of a batch, its errors naming
// windows[index]. The worker pool (worker.js) runs a batch in chunks, and an error must name the
// window's index in the whole batch, as Model.forwardBatch's does. Not part of the package's API.
export let forwardAt;

// softmax of a head, stably (the max subtracted first, so a logit of 1000 does not overflow exp),
// summed in float64 and rounded to float32 once at the end.
function softmax(head) {
  let max = -Infinity;
  for (const v of head) max = Math.max(max, v);
  const e = Float64Array.from(head, (v) => Math.exp(v - max));
  let sum = 0;
  for (const v of e) sum += v;
  return Float32Array.from(e, (v) => v / sum);
}

export function deepFreeze(value) {
  if (value && typeof value === 'object') for (const v of Object.values(Object.freeze(value))) deepFreeze(v);
  return value;
}

export class Model {
  #handle;
  #config;
  #info;

  static {
    forwardAt = (model, window, parsed, index) => {
      model.#usable();
      return model.#forward(window, parsed, `windows[${index}]`);
    };
  }

  constructor(handle) {
    this.#handle = handle;
    this.#config = JSON.parse(handle.configJson());
    this.#info = deepFreeze(handle.info());
    registry.register(this, handle, this);
  }

  /** The config stored in the weights file (docs/model.md). */
  get config() {
    return this.#config;
  }

  /**
   * What the model accepts and returns, as the model uses it (defaults filled in; web/index.d.ts,
   * ModelInfo): inputs (modalities, placements, sensorCount, rate bucket edges), outputs
   * (embedding and head sizes, labels), the architecture, and its size. Frozen; kept after dispose().
   */
  get info() {
    return this.#info;
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
    const head = r.head.length ? r.head : null;
    return {
      embeddings: r.embeddings,
      dims: [T, d],
      pooled: r.pooled,
      head,
      ...this.#prediction(head, r.tokenPresent),
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

  // With labels (config "labels", one per head output): probabilities (softmax of the head) and
  // label (the name of the head's arg-max; a tie goes to the first). Without labels neither key
  // is there: labels are what says that the head is a classifier (a regression head's softmax
  // would mean nothing). A window with no present token leaves the pooled vector at zero and the
  // head at its bias (docs/model.md): a prediction from no data, so both are null then.
  #prediction(head, present) {
    const labels = this.#info.outputs.labels;
    if (!labels) return {};
    if (!present.includes(1)) return { probabilities: null, label: null };
    let best = 0;
    for (let i = 1; i < head.length; i++) if (head[i] > head[best]) best = i;
    return { probabilities: softmax(head), label: labels[best] };
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

/**
 * A Model from a weights file's bytes in a loaded module. `name` (a URL or path, or null) prefixes
 * the core's load errors, so "not a safetensors file" says which file. Used by loadModel and by
 * the worker (worker.js), which gets the bytes from loadModelInWorker.
 */
export async function modelFromBytes(wasm, bytes, name, { warmup, signal } = {}) {
  checkSignal(signal);
  const handle = new wasm.Model();
  const result = handle.load(bytes);
  if (!result.ok) {
    handle.delete();
    throw new SensorformerError(result.code, name ? `${name}: ${result.message}` : result.message);
  }
  const model = new Model(handle);
  try {
    if (warmup !== false) await warmUp(model, signal);  // web/src/warmup.js: why and how long
    checkSignal(signal);
  } catch (e) {
    model.dispose();
    throw e;
  }
  return model;
}

/**
 * Loads a weights file: a URL, a Node file path, an ArrayBuffer or a Uint8Array. Options
 * (loader.js, loadOptions; web/src/source.js for onProgress, signal and fetchOptions): wasmUrl or
 * wasmBinary, warmup, onProgress, signal, fetchOptions.
 */
export async function loadModel(source, options) {
  const opts = loadOptions(options, 'model');
  const wasm = await abortable(loadWasm(opts), opts.signal);
  const bytes = await readSource(source, opts);
  return modelFromBytes(wasm, bytes, sourceName(source), opts);
}
