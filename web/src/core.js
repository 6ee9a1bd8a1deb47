// Typed-array front of the core's encode and attend stages. Arguments are checked here so that a
// mistake gets a SensorformerError naming the argument before anything crosses into WebAssembly.
import { SensorformerError, unwrap } from './errors.js';
import { loadWasm } from './loader.js';

const WEIGHTS_MODE = { none: 0, 'per-head': 1, average: 2 };

function need(condition, code, message) {
  if (!condition) throw new SensorformerError(code, message);
}

function positiveInt(value, name) {
  need(Number.isInteger(value) && value > 0, 'INVALID_ARGUMENT', `${name} must be a positive integer, got ${value}`);
}

function float32(value, name) {
  need(value instanceof Float32Array, 'INVALID_ARGUMENT', `${name} must be a Float32Array`);
  return value;
}

class Core {
  #wasm;
  constructor(wasm) {
    this.#wasm = wasm;
  }

  /** Instruction set the kernels were built for ("sse4.1" means WebAssembly SIMD128). */
  get simdArch() {
    return this.#wasm.simdArch();
  }

  /**
   * Continuous-time sinusoidal encoding: sin block then cos block of (t - referenceTime) *
   * inv_freq, inv_freq[i] = maxPeriod^(-2i/dModel). Times are float64 seconds (epoch seconds work).
   * Returns { data: Float32Array, dims: [n, dModel] }.
   */
  timeEncoding(times, { dModel, maxPeriod = 10000, referenceTime = 0 } = {}) {
    const t = times instanceof Float64Array ? times : Float64Array.from(times ?? []);
    positiveInt(dModel, 'dModel');
    const { data } = unwrap(this.#wasm.timeEncoding(t, referenceTime, dModel, maxPeriod));
    return { data, dims: [t.length, dModel] };
  }

  /**
   * torch.nn.MultiheadAttention forward for one sequence (batch_first, no dropout).
   * query: Float32Array (L*E); key: Float32Array (S*E), defaults to query (self-attention).
   * weights: { inProjWeight (3E*E), inProjBias? (3E), outProjWeight (E*E), outProjBias? (E) }.
   * keyPaddingMask: Uint8Array (S), 1 = ignore (torch True). attention: 'none' | 'per-head' | 'average'.
   * Returns { output, dims: [L, E], attention?, attentionDims? }.
   */
  multiheadAttention(query, { embedDim, numHeads, weights, key = query, keyPaddingMask = null, causal = false, attention = 'none' }) {
    positiveInt(embedDim, 'embedDim');
    positiveInt(numHeads, 'numHeads');
    float32(query, 'query');
    float32(key, 'key');
    need(weights && typeof weights === 'object', 'INVALID_ARGUMENT', 'weights must be an object of Float32Arrays');
    float32(weights.inProjWeight, 'weights.inProjWeight');
    float32(weights.outProjWeight, 'weights.outProjWeight');
    if (weights.inProjBias != null) float32(weights.inProjBias, 'weights.inProjBias');
    if (weights.outProjBias != null) float32(weights.outProjBias, 'weights.outProjBias');
    need(keyPaddingMask == null || keyPaddingMask instanceof Uint8Array, 'INVALID_ARGUMENT', 'keyPaddingMask must be a Uint8Array (1 = ignore)');
    need(attention in WEIGHTS_MODE, 'INVALID_ARGUMENT', `attention must be one of ${Object.keys(WEIGHTS_MODE).join(', ')}`);
    need(query.length % embedDim === 0 && key.length % embedDim === 0, 'SHAPE_MISMATCH', `query and key lengths must be multiples of embedDim (${embedDim})`);
    const L = query.length / embedDim, S = key.length / embedDim;
    const r = unwrap(this.#wasm.multiheadAttention(
      query, L, key, S, embedDim, numHeads, weights.inProjWeight, weights.inProjBias ?? null,
      weights.outProjWeight, weights.outProjBias ?? null, keyPaddingMask, causal, WEIGHTS_MODE[attention]));
    const result = { output: r.output, dims: [L, embedDim] };
    if (attention !== 'none') {
      result.attention = r.attention;
      result.attentionDims = attention === 'per-head' ? [numHeads, L, S] : [L, S];
    }
    return result;
  }
}

/** Loads the WebAssembly core once (see loader.js for the options) and returns its typed API. */
export async function loadCore(options) {
  return new Core(await loadWasm(options));
}
