// A loaded sensor transformer: loadModel(source) -> Model with forward() and dispose().
import { SensorformerError, unwrap } from './errors.js';
import { loadWasm } from './loader.js';
import { normalizeWindow } from './window.js';
import { isNode } from './env.js';


async function readSource(source) {
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

export class Model {
  #handle;
  #config;

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
  forward(window, { attention = false, maxGflop } = {}) {
    if (!this.#handle) throw new SensorformerError('DISPOSED', 'this model was disposed');
    if (maxGflop !== undefined && !(typeof maxGflop === 'number' && maxGflop > 0))
      throw new SensorformerError('INVALID_ARGUMENT', `maxGflop must be a number > 0 (Infinity: no limit), got ${maxGflop}`);
    const r = unwrap(this.#handle.forward(normalizeWindow(window), { attention: Boolean(attention), maxGflop }));
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

  /** A ragged batch: windows of any shapes, each computed on its own. */
  forwardBatch(windows, options) {
    if (!Array.isArray(windows)) throw new SensorformerError('INVALID_ARGUMENT', 'forwardBatch(windows): windows must be an array');
    return windows.map((w) => this.forward(w, options));
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
  return new Model(handle);
}
