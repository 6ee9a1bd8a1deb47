// Typed-array front of the core's encode and attend stages. Arguments are checked here so that a
// mistake gets a SensorformerError naming the argument before anything crosses into WebAssembly:
// containers as for model windows (window.js), every value finite (a NaN or Infinity in a query or
// a weight would come out as NaN or, worse, as plausible zeros), booleans and masks exact.
import { SensorformerError, unwrap } from './errors.js';
import { loadOptions, loadWasm } from './loader.js';
import { rejectUnknownKeys } from './options.js';
import { container, describe, typedArrayName } from './window.js';

const WEIGHTS_MODE = { none: 0, 'per-head': 1, average: 2 };

function need(condition, code, message) {
  if (!condition) throw new SensorformerError(code, message);
}

// The core takes sizes as C++ ints: past 2^31 - 1 the call would wrap them (2^32 + 8 -> 8).
function positiveInt(value, name) {
  need(Number.isInteger(value) && value > 0 && value <= 2 ** 31 - 1, 'INVALID_ARGUMENT', `${name} must be a positive integer up to 2^31 - 1, got ${describe(value)}`);
}

// Options and weights objects take only their keys (options.js's rule): a typo ({ casual: true },
// { keyPaddingmask }) would otherwise run without it, a wrong result instead of an error.
const ATTENTION_CALL = ['key', 'keyPaddingMask', 'causal', 'attention'];
const ATTENTION_WEIGHTS = ['embedDim', 'numHeads', 'weights'];

function number(value, name) {
  need(typeof value === 'number', 'INVALID_ARGUMENT', `${name} must be a number, got ${describe(value)}`);
  need(Number.isFinite(value), 'NON_FINITE', `${name} is ${value}: it must be finite`);
}

function allFinite(values, name) {
  for (let i = 0; i < values.length; i++)
    if (!Number.isFinite(values[i])) throw new SensorformerError('NON_FINITE', `${name}[${i}] is ${values[i]}: it must be finite`);
}

function float32(value, name) {
  need(typedArrayName(value) === 'Float32Array', 'INVALID_ARGUMENT', `${name} must be a Float32Array, got ${describe(value)}`);
  allFinite(value, name);
  return value;
}

class Core {
  #wasm;
  constructor(wasm) {
    this.#wasm = wasm;
  }

  /** Threads every forward of this module instance runs on (1: the single-thread build). */
  get threads() {
    return this.#wasm.threads();
  }

  /** Instruction set the kernels were built for ("sse4.1" means WebAssembly SIMD128). */
  get simdArch() {
    return this.#wasm.simdArch();
  }

  /**
   * Continuous-time sinusoidal encoding: sin block then cos block of (t - referenceTime) *
   * inv_freq, inv_freq[i] = maxPeriod^(-2i/dModel) in float64, or the given `invFreq` (dModel / 2
   * values, e.g. a model's float32 `time_encoding.inv_freq`: each widened to float64 exactly, as
   * the model does; finite and in [-1, 1] like the model file's; not together with maxPeriod).
   * Times are float64 seconds (epoch seconds work). Returns { data: Float32Array, dims: [n, dModel] }.
   */
  timeEncoding(times, options) {
    need(options !== null && typeof options === 'object', 'INVALID_ARGUMENT', `timeEncoding(times, options): options must be an object with dModel, got ${describe(options)}`);
    rejectUnknownKeys(options, 'timeEncoding', ['dModel', 'maxPeriod', 'referenceTime', 'invFreq']);
    const { dModel, maxPeriod, referenceTime = 0, invFreq } = options;
    const t = container(times, 'times') === 'Float64Array' ? times : Float64Array.from(times, (v, i) => {
      need(typeof v === 'number', 'INVALID_ARGUMENT', `times[${i}] must be a number of seconds, got ${describe(v)}`);
      return v;
    });
    allFinite(t, 'times');
    positiveInt(dModel, 'dModel');
    if (maxPeriod !== undefined) number(maxPeriod, 'maxPeriod');
    number(referenceTime, 'referenceTime');
    const table = invFreq === undefined ? null : inverseFrequencies(invFreq, dModel, maxPeriod);
    const { data } = unwrap(this.#wasm.timeEncoding(t, referenceTime, dModel, maxPeriod ?? 10000, table));
    return { data, dims: [t.length, dModel] };
  }

  /**
   * torch.nn.MultiheadAttention forward for one sequence (batch_first, no dropout).
   * query: Float32Array (L*E); key: Float32Array (S*E), defaults to query (self-attention).
   * weights: { inProjWeight (3E*E), inProjBias? (3E), outProjWeight (E*E), outProjBias? (E) }.
   * keyPaddingMask: Uint8Array (S), 1 = ignore (torch True). attention: 'none' | 'per-head' | 'average'.
   * Returns { output, dims: [L, E], attention?, attentionDims? }. The weights are checked, copied
   * and packed on every call: for many calls on the same weights, prepareMultiheadAttention.
   */
  multiheadAttention(query, options) {
    need(options !== null && typeof options === 'object', 'INVALID_ARGUMENT', `multiheadAttention(query, options): options must be an object with embedDim, numHeads and weights, got ${describe(options)}`);
    rejectUnknownKeys(options, 'multiheadAttention', [...ATTENTION_WEIGHTS, ...ATTENTION_CALL]);
    const { embedDim, numHeads, weights } = options;
    attentionWeights(embedDim, numHeads, weights);
    return runAttention(query, options, embedDim, numHeads, (q, L, key, S, mask, causal, mode) => this.#wasm.multiheadAttention(
      q, L, key, S, embedDim, numHeads, weights.inProjWeight, weights.inProjBias ?? null,
      weights.outProjWeight, weights.outProjBias ?? null, mask, causal, mode));
  }

  /**
   * The same attention with its weights checked, copied into the core and packed once (what an
   * ONNX Runtime session does at creation): { embedDim, numHeads, weights } as for
   * multiheadAttention. Returns a PreparedAttention whose forward(query, { key, keyPaddingMask,
   * causal, attention }) gives the same results as multiheadAttention; later changes to the
   * caller's weight arrays are not seen. dispose() frees the copy (garbage collection also does).
   */
  prepareMultiheadAttention(options) {
    need(options !== null && typeof options === 'object', 'INVALID_ARGUMENT', `prepareMultiheadAttention(options): options must be an object with embedDim, numHeads and weights, got ${describe(options)}`);
    rejectUnknownKeys(options, 'prepareMultiheadAttention', ATTENTION_WEIGHTS);
    const { embedDim, numHeads, weights } = options;
    attentionWeights(embedDim, numHeads, weights);
    const handle = new this.#wasm.MultiheadAttention();
    const r = handle.load(embedDim, numHeads, weights.inProjWeight, weights.inProjBias ?? null, weights.outProjWeight, weights.outProjBias ?? null);
    if (!r.ok) {
      handle.delete();
      unwrap(r);
    }
    return new PreparedAttention(handle, embedDim, numHeads);
  }
}

// timeEncoding's invFreq -> Float64Array (float32 values widen exactly). The rule of a model
// file's `time_encoding.inv_freq` (docs/model.md): dModel / 2 values, finite, in [-1, 1]. With a
// table, maxPeriod would mean nothing: giving both is a mistake, not a choice.
function inverseFrequencies(invFreq, dModel, maxPeriod) {
  const name = typedArrayName(invFreq);
  need(name === 'Float32Array' || name === 'Float64Array' || Array.isArray(invFreq), 'INVALID_ARGUMENT',
    `invFreq must be a Float32Array, a Float64Array or an array of numbers, got ${describe(invFreq)}`);
  need(maxPeriod === undefined, 'INVALID_ARGUMENT', 'timeEncoding: give invFreq or maxPeriod, not both (the table replaces the formula)');
  need(dModel % 2 === 0, 'INVALID_ARGUMENT', `dModel must be even, got ${dModel}`);
  need(invFreq.length === dModel / 2, 'INVALID_ARGUMENT', `invFreq has ${invFreq.length} values; dModel ${dModel} needs ${dModel / 2}`);
  const table = new Float64Array(invFreq.length);
  for (let i = 0; i < invFreq.length; i++) {
    const v = invFreq[i];
    need(typeof v === 'number', 'INVALID_ARGUMENT', `invFreq[${i}] must be a number, got ${describe(v)}`);
    need(Number.isFinite(v), 'NON_FINITE', `invFreq[${i}] is ${v}: it must be finite`);
    need(Math.abs(v) <= 1, 'INVALID_ARGUMENT', `invFreq[${i}] is ${v}: inverse frequencies must be in [-1, 1] rad/s, as in a model file`);
    table[i] = v;
  }
  return table;
}

// The weights of multiheadAttention / prepareMultiheadAttention, checked before they are copied.
function attentionWeights(embedDim, numHeads, weights) {
  positiveInt(embedDim, 'embedDim');
  positiveInt(numHeads, 'numHeads');
  need(weights && typeof weights === 'object', 'INVALID_ARGUMENT', 'weights must be an object of Float32Arrays');
  rejectUnknownKeys(weights, 'weights', ['inProjWeight', 'inProjBias', 'outProjWeight', 'outProjBias']);
  float32(weights.inProjWeight, 'weights.inProjWeight');
  float32(weights.outProjWeight, 'weights.outProjWeight');
  if (weights.inProjBias != null) float32(weights.inProjBias, 'weights.inProjBias');
  if (weights.outProjBias != null) float32(weights.outProjBias, 'weights.outProjBias');
}

// One call's inputs checked, then run(query, L, key, S, keyPaddingMask, causal, weightsMode).
function runAttention(query, options, embedDim, numHeads, run) {
  const { key = query, keyPaddingMask = null, causal = false, attention = 'none' } = options;
  float32(query, 'query');
  if (key !== query) float32(key, 'key');
  if (keyPaddingMask != null) {
    need(typedArrayName(keyPaddingMask) === 'Uint8Array', 'INVALID_ARGUMENT', `keyPaddingMask must be a Uint8Array (1 = ignore), got ${describe(keyPaddingMask)}`);
    const i = keyPaddingMask.findIndex((v) => v > 1);
    need(i < 0, 'INVALID_ARGUMENT', `keyPaddingMask[${i}] must be 0 or 1 (1 = ignore), got ${keyPaddingMask[i]}`);
  }
  need(typeof causal === 'boolean', 'INVALID_ARGUMENT', `causal must be true or false, got ${describe(causal)}`);
  need(Object.hasOwn(WEIGHTS_MODE, attention), 'INVALID_ARGUMENT', `attention must be one of ${Object.keys(WEIGHTS_MODE).join(', ')}, got ${describe(attention)}`);
  need(query.length % embedDim === 0 && key.length % embedDim === 0, 'SHAPE_MISMATCH', `query and key lengths must be multiples of embedDim (${embedDim})`);
  const L = query.length / embedDim, S = key.length / embedDim;
  const r = unwrap(run(query, L, key, S, keyPaddingMask, causal, WEIGHTS_MODE[attention]));
  const result = { output: r.output, dims: [L, embedDim] };
  if (attention !== 'none') {
    result.attention = r.attention;
    result.attentionDims = attention === 'per-head' ? [numHeads, L, S] : [L, S];
  }
  return result;
}

const registry = new FinalizationRegistry((handle) => handle.delete());

/** Multi-head attention on weights held by the core (Core.prepareMultiheadAttention). */
class PreparedAttention {
  #handle;
  #embedDim;
  #numHeads;
  constructor(handle, embedDim, numHeads) {
    this.#handle = handle;
    this.#embedDim = embedDim;
    this.#numHeads = numHeads;
    registry.register(this, handle, this);
  }

  /** query and options ({ key, keyPaddingMask, causal, attention }) as for Core.multiheadAttention. */
  forward(query, options) {
    need(this.#handle, 'DISPOSED', 'this prepared attention was disposed');
    options ??= {};
    need(typeof options === 'object', 'INVALID_ARGUMENT', `forward(query, options): options must be an object, got ${describe(options)}`);
    rejectUnknownKeys(options, 'forward', ATTENTION_CALL);
    return runAttention(query, options, this.#embedDim, this.#numHeads, (...args) => this.#handle.forward(...args));
  }

  /** Frees the core's copy of the weights; later calls throw DISPOSED. Idempotent. */
  dispose() {
    if (!this.#handle) return;
    registry.unregister(this);
    this.#handle.delete();
    this.#handle = null;
  }
}

/** Loads the WebAssembly core once (see loader.js for the options) and returns its typed API. */
export async function loadCore(options) {
  return new Core(await loadWasm(loadOptions(options, 'core')));
}
