// A TypeScript consumer of the installed package, type-checked (never run) by package.test.js with
// `tsc --noEmit --strict --module nodenext`: 'sensorformer' resolves through the tarball's
// exports map to web/index.d.ts. The @ts-expect-error lines are misuse the types must reject; if
// the types became too loose, tsc would report them as unused.
import {
  hasWasmSimd,
  loadCore,
  loadModel,
  loadModelInWorker,
  Model,
  WorkerModel,
  SensorformerError,
  type AttentionMap,
  type EventStream,
  type ForwardResult,
  type MhaWeights,
  type ModelConfig,
  type RegularStream,
  type SensorWindow,
  type Stream,
} from 'sensorformer';

const ecg: RegularStream = {
  sensor: 0,
  modality: 'ecg',
  placement: 'chest',
  rateHz: 130.3,
  startTime: 1764468000.25,
  samples: [18, 33, null, -15, NaN, 12],
};
const rr: EventStream = {
  sensor: 2,
  modality: 'rr',
  placement: 'chest',
  timestamps: new Float64Array([1764468000.5, 1764468001.3, 1764468002.1, 1764468002.9]),
  samples: new Float32Array([0.81, 0.79, 0.8, 0.78]),
  present: [1, 1, true, 0],
};
const streams: Stream[] = [ecg, rr];
const window: SensorWindow = { streams, referenceTime: 1764468000 };

export async function run(source: string | URL | ArrayBuffer | Uint8Array): Promise<number[]> {
  if (!hasWasmSimd()) throw new Error('no WebAssembly SIMD');
  const model: Model = await loadModel(source, { wasmUrl: new URL('./sensorformer-core.wasm', import.meta.url) });
  try {
    const config: ModelConfig = model.config;
    const layout: 'flattened' | 'time' | 'channel' | 'factorized' = config.layout;
    const names: string[] = config.modalities.map((m) => m.name);

    const r: ForwardResult = model.forward(window, { attention: true });
    const [T, d]: [number, number] = r.dims;
    const row: Float32Array = r.embeddings.subarray(0, d);
    const pooled: Float32Array = r.pooled;
    const head: number | undefined = r.head?.[0];
    const labels: string[] = r.tokens.modality;
    const times: Float64Array = r.tokens.time;
    const present: boolean = r.tokens.present[0] === 1;
    const maps: AttentionMap[] = r.attention ?? [];
    for (const m of maps) {
      const block: 'flattened' | 'time' | 'channel' = m.block;
      const [H, g]: [number, number, number] = m.dims;
      const w: number = m.weights[(H - 1) * g * g];
      void block, w;
    }
    const batch: ForwardResult[] = model.forwardBatch([window, { streams: [ecg] }]);
    void layout, names, T, row, head, labels, times, present, batch;

    // @ts-expect-error a stream without `modality` is not a Stream
    model.forward({ streams: [{ sensor: 0, placement: 'chest', rateHz: 130.3, startTime: 0, samples: [1, 2] }] });
    // @ts-expect-error `attention` is a boolean option, not a string
    model.forward(window, { attention: 'per-head' });
    // @ts-expect-error a stream is regular (rateHz, startTime) or event-driven (timestamps), never both
    const both: Stream = { sensor: 1, modality: 'rr', placement: 'chest', rateHz: 1, startTime: 0, timestamps: [0], samples: [0.8] };
    // @ts-expect-error loadModel takes a URL, a path or bytes, not a number
    void loadModel(42);
    void both;

    return Array.from(pooled);
  } catch (e) {
    if (e instanceof SensorformerError) {
      switch (e.code) {
        case 'WASM_NO_SIMD':
        case 'WASM_FETCH_FAILED':
          throw new Error(`this browser cannot run the core: ${e.message}`, { cause: e });
        case 'MISSING_TENSOR':
        case 'SHAPE_MISMATCH':
          throw new Error(`not a model for this version: ${e.message}`, { cause: e });
        default: {
          const code: SensorformerError['code'] = e.code;
          // @ts-expect-error 'NO_SUCH_CODE' is not one of the error codes
          if (code === 'NO_SUCH_CODE') return [];
          throw e;
        }
      }
    }
    throw e;
  } finally {
    model.dispose();
  }
}

export async function attention(): Promise<Float32Array | undefined> {
  const core = await loadCore({ wasmBinary: new Uint8Array(8) });
  const arch: string = core.simdArch;
  const { data, dims } = core.timeEncoding([0, 1.5, 3], { dModel: 8, referenceTime: 0 });
  void arch, dims;
  const E = 4;
  const weights: MhaWeights = { inProjWeight: new Float32Array(3 * E * E), outProjWeight: new Float32Array(E * E), outProjBias: null };
  const result = core.multiheadAttention(new Float32Array(2 * E), {
    embedDim: E,
    numHeads: 2,
    weights,
    keyPaddingMask: new Uint8Array([0, 1]),
    causal: true,
    attention: 'average',
  });
  // @ts-expect-error the attention output mode is 'none' | 'per-head' | 'average'
  core.multiheadAttention(data, { embedDim: 8, numHeads: 1, weights, attention: 'all' });
  const prepared = core.prepareMultiheadAttention({ embedDim: E, numHeads: 2, weights });
  const map: Float32Array | undefined = prepared.forward(new Float32Array(2 * E), { causal: true, attention: 'per-head' }).attention;
  // @ts-expect-error weights belong to prepareMultiheadAttention, not to each call
  prepared.forward(new Float32Array(2 * E), { weights });
  prepared.dispose();
  void map;
  return result.attention;
}

export async function inWorker(window: SensorWindowLike): Promise<number[]> {
  const model: WorkerModel = await loadModelInWorker('/model.safetensors');
  try {
    const r = await model.forward(window, { transfer: true });
    // @ts-expect-error forward in a worker returns a promise, not the result
    const notAwaited: Float32Array = model.forward(window).pooled;
    void notAwaited;
    return Array.from(r.pooled);
  } finally {
    await model.dispose();
  }
}
export async function inPool(windows: SensorWindowLike[]): Promise<number> {
  const pool: WorkerModel = await loadModelInWorker('/model.safetensors', { workers: 'auto' });
  // @ts-expect-error workers is a count or 'auto'
  void loadModelInWorker('/model.safetensors', { workers: '2' });
  try {
    const results: ForwardResult[] = await pool.forwardBatch(windows);
    return results.length * pool.workers;
  } finally {
    await pool.dispose();
  }
}
type SensorWindowLike = Parameters<WorkerModel['forward']>[0];
