// A loaded sensor transformer: loadModel(source) -> Model with forward() and dispose().
import { SensorformerError } from './errors.js';
import { loadOptions, loadWasm } from './loader.js';
import { abortable, readSource, sourceName, checkSignal } from './source.js';
import { warmUp } from './warmup.js';
import { describe, normalizeWindow } from './window.js';
import { checkOptions } from './options.js';
import { prediction } from './prediction.js';
import { beatModalities } from './qrs.js';
import { endSessions, openSession, streamOptions } from './stream.js';
import { combineHeads, ensembleMembers, renumber, routeStreams } from './ensemble.js';

// The options of forward() / forwardBatch(), checked in this one place (options.js): Model uses
// it, and the worker path (worker-client.js on the calling thread, Model again in the worker)
// gets the same codes. `extra`: keys the caller handles itself (WorkerModel's `transfer`),
// returned as given after the same check.
const FORWARD_OPTIONS = {
  attention: { fallback: false, valid: (v) => typeof v === 'boolean', expected: 'true or false' },
  // Compute limit in GFLOP (the core's default when undefined); Infinity lifts it.
  maxGflop: { fallback: undefined, valid: (v) => typeof v === 'number' && v > 0, expected: 'a number > 0 (Infinity: no limit)' },
};

export function forwardOptions(options, method = 'forward(window, options)', extra = {}) {
  return checkOptions(options, method, { ...FORWARD_OPTIONS, ...extra });
}

// Held value: the model's handle and its sessions' record (stream.js). A session keeps its Model
// object alive, so a model is collected only with or after its sessions; when both go in one
// collection the order of the callbacks is not specified, so the model's deletes the sessions'
// handles first (the core's session keeps a pointer to the model) and theirs skip deleted ones.
const registry = new FinalizationRegistry(({ handles, live }) => {
  endSessions(live);
  for (const handle of handles) handle.delete();
});

// forwardAt(model, window, parsedOptions, index): one window of a batch, its errors naming
// windows[index]. The worker pool (worker.js) runs a batch in chunks, and an error must name the
// window's index in the whole batch, as Model.forwardBatch's does. Not part of the package's API.
export let forwardAt;

export function deepFreeze(value) {
  if (value && typeof value === 'object') for (const v of Object.values(Object.freeze(value))) deepFreeze(v);
  return value;
}

export class Model {
  #handle;   // the core's model (an ensemble's first member)
  #members;  // an ensemble's members, [{ handle, modalities: Set }], the first #handle; null for one model
  #wasm;
  #config;
  #info;
  #live = { sessions: new Set(), disposed: false };  // this model's open stream sessions (stream.js)

  static {
    forwardAt = (model, window, parsed, index) => {
      model.#usable();
      return model.#forward(window, parsed, `windows[${index}]`);
    };
  }

  // handles: the core's Model (several for an ensemble, ensemble.js); wasm: the module they live
  // in (for its StreamSession class).
  constructor(handles, wasm) {
    this.#handle = handles[0];
    this.#wasm = wasm;
    this.#config = JSON.parse(handles[0].configJson());
    const info = handles[0].info();
    if (handles.length > 1) {
      const configs = handles.map((h) => JSON.parse(h.configJson()));
      const infos = handles.map((h) => h.info());
      this.#members = handles.map((handle, k) => ({ handle, modalities: new Set(configs[k].modalities.map((m) => m.name)) }));
      // The ensemble's inputs: every member's modalities (the first member's first); its outputs
      // and everything else but causality and look-back (below): the first member's (its embeddings, tokens and attention are the
      // ones a forward returns); config.ensemble lists every member's config.
      const seen = new Set();
      const union = (list) => list.flat().filter((m) => !seen.has(m.name) && seen.add(m.name));
      this.#config = { ...this.#config, modalities: union(configs.map((c) => c.modalities)), ensemble: { combine: 'mean_probability', members: configs } };
      seen.clear();
      info.inputs.modalities = union(infos.map((i) => i.inputs.modalities));
      // A session runs every member: the ensemble is causal when all are, and its answer reaches
      // back as far as its longest look-back (null, unlimited, when a member has none).
      info.causal = infos.every((i) => i.causal);
      info.attentionLookbackS = infos.some((i) => i.attentionLookbackS === null) ? null : Math.max(...infos.map((i) => i.attentionLookbackS));
      info.ensemble = { combine: 'mean_probability', members: infos.length };
      info.size = { parameters: infos.reduce((n, i) => n + i.size.parameters, 0), weightBytes: infos.reduce((n, i) => n + i.size.weightBytes, 0) };
    } else {
      this.#members = null;
    }
    this.#info = deepFreeze(info);
    registry.register(this, { handles, live: this.#live }, this);
  }

  /** Threads each forward runs on (numThreads as granted: 1 where threads cannot run). */
  get threads() {
    return this.#wasm.threads();
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
    const w = normalizeWindow(window, path);
    this.#usable();  // reading the window runs the caller's getters, which may have disposed the model
    // The core's messages say "stream i"; in a batch, which window it was matters too.
    const fail = (r, route) => {
      const message = route ? renumber(r.message, route) : r.message;
      return new SensorformerError(r.code, path === 'window' ? message : `${path}: ${message}`);
    };
    let r, head, present, tokenStream;
    if (!this.#members) {
      r = this.#handle.forward(w, { attention, maxGflop });
      if (!r.ok) throw fail(r);
      head = r.head.length ? r.head : null;
      present = r.tokenPresent.includes(1);
      tokenStream = r.tokenStream;
    } else {
      // Each member on the streams of its modalities; the first member's tokens, embeddings and
      // attention, with its stream numbers in the window's; the members' heads combined.
      const routes = routeStreams(w.streams.map((s) => s.modality), this.#members.map((m) => m.modalities));
      const results = this.#members.map(({ handle }, k) => {
        const out = handle.forward({ referenceTime: w.referenceTime, streams: routes[k].map((i) => w.streams[i]) }, { attention: k === 0 && attention, maxGflop });
        if (!out.ok) throw fail(out, routes[k]);
        return out;
      });
      r = results[0];
      const presentEach = results.map((x) => x.tokenPresent.includes(1));
      head = r.head.length ? combineHeads(results.map((x) => x.head), presentEach) : null;
      present = presentEach.some(Boolean);
      tokenStream = Int32Array.from(r.tokenStream, (j) => routes[0][j]);
    }
    const d = this.#config.d_model, T = r.tokenTime.length;
    const modalities = this.#config.modalities.map((m) => m.name);
    const H = this.#config.n_heads;
    return {
      embeddings: r.embeddings,
      dims: [T, d],
      pooled: r.pooled,
      head,
      ...prediction(this.#info.outputs.labels, head, present),
      referenceTime: r.referenceTime,
      tokens: {
        stream: tokenStream,
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

  /**
   * A streaming session (docs/model.md "Streaming"; stream.js): push chunks of samples as they
   * arrive, get each token once it is final. Options: referenceTime, attention, historySeconds.
   * A model that is not causal is refused (INVALID_ARGUMENT, the core's message says why).
   */
  stream(options) {
    this.#usable();
    return openSession(this.#wasm, this.#members ?? [{ handle: this.#handle, modalities: null }], this, this.#live, this.#info, streamOptions(options));
  }

  /**
   * Frees the WebAssembly memory of this model now (also happens on garbage collection). Its
   * stream sessions end first (later calls on them throw DISPOSED): the core's session reads the
   * model's weights, so none may outlive them.
   */
  dispose() {
    if (!this.#handle) return;
    registry.unregister(this);
    endSessions(this.#live);
    for (const { handle } of this.#members ?? [{ handle: this.#handle }]) handle.delete();
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
  const prefix = name ? `${name}: ` : '';
  let files;
  try {
    files = ensembleMembers(bytes) ?? [bytes];
  } catch (e) {
    throw new SensorformerError(e.code, `${prefix}${e.message}`);
  }
  const handles = [];
  for (const [k, file] of files.entries()) {
    const handle = new wasm.Model();
    const result = handle.load(file);
    if (!result.ok) {
      handle.delete();
      for (const h of handles) h.delete();
      throw new SensorformerError(result.code, `${prefix}${files.length > 1 ? `ensemble member ${k}: ` : ''}${result.message}`);
    }
    handles.push(handle);
  }
  if (handles.length > 1) {
    // One prediction from several heads: the members must answer the same question.
    const labels = handles.map((h) => JSON.stringify(h.info().outputs.labels ?? null));
    if (labels[0] === 'null' || labels.some((l) => l !== labels[0])) {
      for (const h of handles) h.delete();
      throw new SensorformerError('BAD_FORMAT', `${prefix}an ensemble's members need the same head labels (a classifier's), got ${labels.join(' and ')}`);
    }
  }
  // Each member's beat streams (qrs.js beatModalities) are checked here, so that a file asking for
  // an impossible grid fails at load; members that share a beat modality's name share its grid
  // (a stream goes to every member that knows its modality's name).
  try {
    const configs = handles.map((h) => JSON.parse(h.configJson()));
    beatModalities(configs.length > 1 ? { ensemble: { members: configs } } : configs[0]);
  } catch (e) {
    for (const h of handles) h.delete();
    throw new SensorformerError('BAD_FORMAT', `${prefix}${e.message}`);
  }
  const model = new Model(handles, wasm);
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
