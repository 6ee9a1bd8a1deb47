// Hand-written types for the sensorformer package. Keep in step with web/src/.

/** Every failure the package reports. `code` is stable; `message` is for people. */
export class SensorformerError extends Error {
  readonly name: 'SensorformerError';
  readonly code:
    | 'INVALID_ARGUMENT' | 'SHAPE_MISMATCH' | 'INDEX_OUT_OF_RANGE' | 'NON_FINITE' | 'BAD_FORMAT'
    | 'UNSUPPORTED_DTYPE' | 'MISSING_TENSOR' | 'IO'
    | 'WASM_FETCH_FAILED' | 'WASM_NOT_WASM' | 'WASM_NO_SIMD' | 'WASM_INSTANTIATE_FAILED';
}

export interface LoadOptions {
  /** Where the .wasm lives when a bundler or server moved it (default: next to the module). */
  wasmUrl?: string | URL;
  /** The .wasm bytes themselves; nothing is fetched. */
  wasmBinary?: ArrayBuffer | Uint8Array;
}

export interface TimeEncodingOptions {
  /** Even, >= 2. */
  dModel: number;
  /** Longest period of the sinusoids, in seconds (default 10000). */
  maxPeriod?: number;
  /** Times are encoded as t - referenceTime, in float64 (default 0). */
  referenceTime?: number;
}

export interface MhaWeights {
  /** (3E, E), rows [W_q; W_k; W_v] as in torch.nn.MultiheadAttention.in_proj_weight. */
  inProjWeight: Float32Array;
  inProjBias?: Float32Array | null;
  /** (E, E) */
  outProjWeight: Float32Array;
  outProjBias?: Float32Array | null;
}

export type AttentionOutput = 'none' | 'per-head' | 'average';

export interface MhaOptions<A extends AttentionOutput = AttentionOutput> {
  embedDim: number;
  numHeads: number;
  weights: MhaWeights;
  /** (S, E) keys/values; defaults to the query (self-attention). */
  key?: Float32Array;
  /** (S), 1 = ignore that key (torch's key_padding_mask True). */
  keyPaddingMask?: Uint8Array | null;
  /** Query i sees keys 0..i only. */
  causal?: boolean;
  attention?: A;
}

export interface MhaResult {
  /** (L, E) */
  output: Float32Array;
  dims: [number, number];
  /** (H, L, S) per head or (L, S) averaged, when asked for. */
  attention?: Float32Array;
  attentionDims?: [number, number, number] | [number, number];
}

export interface Core {
  /** Instruction set of the kernels: "sse4.1" is xsimd's path lowered to WebAssembly SIMD128. */
  readonly simdArch: string;
  /** Float64 seconds in, Float32Array (n, dModel) out: sin block, then cos block. */
  timeEncoding(times: Float64Array | ArrayLike<number>, options: TimeEncodingOptions): { data: Float32Array; dims: [number, number] };
  /** torch.nn.MultiheadAttention forward of one sequence. */
  multiheadAttention(query: Float32Array, options: MhaOptions): MhaResult;
}

/** Loads the WebAssembly core once per page or process. */
export function loadCore(options?: LoadOptions): Promise<Core>;

/** Whether this engine runs WebAssembly SIMD (the core needs it). */
export function hasWasmSimd(): boolean;
