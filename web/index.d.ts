/// <reference lib="esnext.disposable" />
// Hand-written types for the sensorformer package. Keep in step with web/src/.

/** Every `code` a SensorformerError can carry (README "Errors"); tests/js/types.test.js keeps the list complete. */
export type SensorformerErrorCode =
  // bad input, bad weights (the core and the JS input checks)
  | 'INVALID_ARGUMENT' | 'SHAPE_MISMATCH' | 'INDEX_OUT_OF_RANGE' | 'NON_FINITE' | 'BAD_FORMAT'
  | 'UNSUPPORTED_DTYPE' | 'MISSING_TENSOR' | 'IO' | 'RESOURCE_EXHAUSTED'
  // loading the WebAssembly core
  | 'WASM_FETCH_FAILED' | 'WASM_NOT_WASM' | 'WASM_NO_SIMD' | 'WASM_INSTANTIATE_FAILED'
  // the JS API
  | 'DISPOSED' | 'WORKER_FAILED'
  // sensorformer/ble
  | 'BLUETOOTH_UNAVAILABLE' | 'BLUETOOTH_NO_DEVICE' | 'BLUETOOTH_FAILED' | 'BLUETOOTH_PMD'
  | 'BLUETOOTH_DISCONNECTED' | 'DECODE_ERROR';

/** Every failure the package reports. `code` is stable; `message` is for people. */
export class SensorformerError extends Error {
  constructor(code: SensorformerErrorCode, message: string, options?: ErrorOptions);
  /** The subclasses of sensorformer/ble carry their own names. */
  readonly name: 'SensorformerError' | 'BluetoothDecodeError' | 'BluetoothUnavailableError';
  readonly code: SensorformerErrorCode;
}

/**
 * Options of loadCore. Other keys (a typo such as `wasmURL`) are INVALID_ARGUMENT. Each distinct
 * .wasm (by resolved URL, or by bytes) gets its own module instance, created on first use.
 */
export interface CoreLoadOptions {
  /** Where the .wasm lives when a bundler or server moved it (default: next to the module). */
  wasmUrl?: string | URL;
  /** The .wasm bytes themselves; nothing is fetched. Not together with wasmUrl. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /**
   * Threads of every forward, 1-16 (default: the cores, at most 4; in loadModelInWorker with
   * workers > 1, 1 per worker). More than 1 loads the threaded build, whose pool of Workers starts
   * with the module; it needs SharedArrayBuffer: Node >= 20.16, or a cross-origin-isolated page
   * (COOP same-origin + COEP require-corp) and its Workers. Elsewhere 1 is granted (see
   * `threads` on the model or core, and threadsUnavailableReason()). Results are bit-identical for
   * every thread count.
   */
  numThreads?: number;
}

/** How much of the weights file has arrived. */
export interface LoadProgress {
  /** Bytes so far. */
  loaded: number;
  /**
   * The whole size when known (Content-Length of an uncompressed answer, a file's size), else
   * null; the last call always has loaded === total.
   */
  total: number | null;
}

/** Options of loadModel (and loadModelInWorker). Other keys are INVALID_ARGUMENT. */
export interface LoadOptions extends CoreLoadOptions {
  /**
   * loadModel runs a few small synthetic forwards (none started after 150 ms) so that the first
   * real forward runs at full speed (default true); false resolves sooner and leaves the
   * engine's compilation to the first forwards.
   */
  warmup?: boolean;
  /** Called after every chunk of the weights that arrives, and last at 100 %. What it throws ends the load. */
  onProgress?: (progress: LoadProgress) => void;
  /**
   * Aborts the download and the rest of the load: the promise rejects with `signal.reason` (by
   * default a DOMException named "AbortError"), as fetch does.
   */
  signal?: AbortSignal;
  /** Passed to fetch(url, init) for the weights (not the .wasm): headers, credentials, ... Not `signal`. */
  fetchOptions?: Omit<RequestInit, 'signal'>;
}

interface TimeEncodingBase {
  /** Even, >= 2. */
  dModel: number;
  /** Times are encoded as t - referenceTime, in float64 (default 0). */
  referenceTime?: number;
}
/**
 * The inverse frequencies come from `maxPeriod` (inv_freq[i] = maxPeriod^(-2i/dModel), in float64)
 * or are given as `invFreq` (never both: INVALID_ARGUMENT).
 */
export type TimeEncodingOptions = TimeEncodingBase & (
  | {
    /** Longest period of the sinusoids, in seconds (default 10000). */
    maxPeriod?: number;
    invFreq?: undefined;
  }
  | {
    /**
     * The table itself, dModel / 2 values in rad/s, e.g. a model's float32
     * `time_encoding.inv_freq` (what that model adds to its tokens); each value is widened to
     * float64 exactly. As in a model file: finite (else NON_FINITE), in [-1, 1] (else
     * INVALID_ARGUMENT), and the length must be dModel / 2 (INVALID_ARGUMENT).
     */
    invFreq: Float32Array | Float64Array | readonly number[];
    maxPeriod?: undefined;
  }
);

export interface MhaWeights {
  /** (3E, E), rows [W_q; W_k; W_v] as in torch.nn.MultiheadAttention.in_proj_weight. */
  inProjWeight: Float32Array;
  inProjBias?: Float32Array | null;
  /** (E, E) */
  outProjWeight: Float32Array;
  outProjBias?: Float32Array | null;
}

export type AttentionOutput = 'none' | 'per-head' | 'average';

export interface MhaConfig {
  embedDim: number;
  numHeads: number;
  weights: MhaWeights;
}

/** One call's inputs besides the query. */
export interface MhaCallOptions<A extends AttentionOutput = AttentionOutput> {
  /** (S, E) keys/values; defaults to the query (self-attention). */
  key?: Float32Array;
  /** (S), 1 = ignore that key (torch's key_padding_mask True). */
  keyPaddingMask?: Uint8Array | null;
  /** Query i sees keys 0..i only. */
  causal?: boolean;
  attention?: A;
}

export interface MhaOptions<A extends AttentionOutput = AttentionOutput> extends MhaConfig, MhaCallOptions<A> {}

/** Multi-head attention whose weights the core holds, checked and packed once. */
export interface PreparedAttention {
  /** Same results as Core.multiheadAttention with the prepared weights. Throws DISPOSED after dispose(). */
  forward(query: Float32Array, options?: MhaCallOptions | null): MhaResult;
  /** Frees the core's copy of the weights. Idempotent. */
  dispose(): void;
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
  /** Threads every forward of this module instance runs on (numThreads as granted). */
  readonly threads: number;
  /** Float64 seconds in (finite), Float32Array (n, dModel) out: sin block, then cos block. */
  timeEncoding(times: NumericArray | readonly number[], options: TimeEncodingOptions): { data: Float32Array; dims: [number, number] };
  /** torch.nn.MultiheadAttention forward of one sequence. Every value finite (else NON_FINITE). */
  multiheadAttention(query: Float32Array, options: MhaOptions): MhaResult;
  /** Copies and packs the weights once, for many calls on them (what an ORT session does at creation). */
  prepareMultiheadAttention(options: MhaConfig): PreparedAttention;
}

/** Loads the WebAssembly core once per page or process (once per distinct .wasm). */
export function loadCore(options?: CoreLoadOptions | null): Promise<Core>;

/** Whether this engine runs WebAssembly SIMD (the core needs it). */
export function hasWasmSimd(): boolean;

/** Null when numThreads > 1 can be granted here, else why not (no SharedArrayBuffer, a page that is not cross-origin isolated, Node < 20.16). */
export function threadsUnavailableReason(): string | null;

/** Beats of one ECG lead (web/src/qrs.js: Pan-Tompkins, any rate >= 50 Hz). */
export interface DetectedBeats {
  /** Sample index of each beat (its R peak, or the QRS's extreme for a lead of the other polarity). */
  indices: Int32Array;
  /** startTime + index / rateHz, seconds. */
  times: Float64Array;
  /** The interval before each beat after the first, seconds (length beats - 1); NaN when a missing sample lies between the two beats. */
  rr: Float64Array;
}

/**
 * QRS detection on one ECG lead (null / NaN samples are missing: no beat is reported inside a
 * missing run; no beat is reported within 150 ms of a missing sample). RR intervals for a model when the source sends ECG but no RR. INVALID_ARGUMENT for
 * a rate outside 50..100000 Hz or samples that are not an array.
 */
export function detectBeats(samples: ArrayLike<number | null>, rateHz: number, options?: { startTime?: number } | null): DetectedBeats;

/** The RR event stream rrFromEcg makes (the window format's event stream). */
export interface RrStream {
  sensor: number;
  modality: 'rr';
  placement: string;
  /** Each beat's time after the first, seconds. */
  timestamps: Float64Array;
  /** The RR interval before it, seconds. An interval with a missing ECG sample between its two beats is NaN (default, `gaps: 'missing'`) or left out (`gaps: 'leave-out'`). */
  samples: Float64Array;
}

/**
 * The RR event stream of an ECG stream, from detectBeats: for a model with an `rr` modality when
 * the source sends no RR (the AF model, models/af.safetensors, was trained on its beats). An
 * interval across a gap in the ECG is unknown: an event valued NaN by default, which a model whose
 * `rr` modality says `"missing_events": "leave-out"` drops as it was trained (docs/model.md,
 * "Tokenizer"), or left out of the stream for every model with `gaps: 'leave-out'`.
 * INVALID_ARGUMENT when `ecg` is not a regular stream or `gaps` is neither.
 */
export function rrFromEcg(ecg: { sensor: number; placement: string; rateHz: number; startTime?: number; samples: ArrayLike<number | null> }, detected?: DetectedBeats | null, options?: { gaps?: 'leave-out' | 'missing' }): RrStream;

/** Points per beat of the default beat grid: a beat's ECG from 0.24 s before its R peak to 0.384 s after, 16 ms apart. */
export const BEAT_POINTS: 40;

/** A beat modality's grid, as beatModalities reads it from a model's config. */
export interface BeatGrid {
  /** The modality's name: "beat" or "beat_..." (the stream's modality). */
  readonly modality: string;
  /** Values per beat: `points` of the ECG, then `rrContext` RR intervals. */
  readonly patchLen: number;
  readonly points: number;
  /** Grid point k lies (k + first) * stepS seconds from the beat. */
  readonly first: number;
  readonly stepS: number;
  /** RR intervals before the beat, newest first, each written as rrScale * (RR - rrMean). */
  readonly rrContext: number;
  readonly rrMean: number;
  readonly rrScale: number;
}

/**
 * The beat streams a model takes (its modalities named "beat" or "beat_..."), each with its grid:
 * the modality's `patch_len`, `rr_context` (default 0), `grid_first` (default -15) and
 * `grid_step_s` (default 0.016). BAD_FORMAT, naming the modality and key, for a grid a model may
 * not ask (loadModel checks every model so). For an ensemble's config (with `ensemble.members`),
 * each member's grids from its own config (RR intervals scaled by that member's `rr`).
 */
export function beatModalities(config: ModelConfig): BeatGrid[];

/** The beat event stream beatsFromEcg makes: patchLen events per beat (BEAT_POINTS on the default grid), so a patch is one beat. */
export interface BeatStream {
  sensor: number;
  /** The grid's modality ("beat" by default). */
  modality: string;
  placement: string;
  /** Each beat's time, patchLen times over, seconds. */
  timestamps: Float64Array;
  /** Each beat's ECG on the grid (linear interpolation, the beat's mean removed), in the ECG's unit; NaN where a sample is missing or outside the recording; then the grid's RR intervals (NaN when unknown: before the first beat, or with a missing sample between the two beats). */
  samples: Float64Array;
}

/**
 * The beat event stream of an ECG stream, from detectBeats (or the `detected` beats of the same
 * samples): for a model with a beat modality, on its grid (one of beatModalities(model.config);
 * default: modality "beat" on the 40-point grid). INVALID_ARGUMENT when `ecg` is not a regular
 * stream or `grid` is not one of beatModalities'.
 */
export function beatsFromEcg(ecg: { sensor: number; placement: string; rateHz: number; startTime?: number; samples: ArrayLike<number | null> }, detected?: DetectedBeats | null, grid?: BeatGrid): BeatStream;

/** Options of BeatTracker. Other keys are INVALID_ARGUMENT. */
export interface BeatTrackerOptions {
  /** The ECG's rate, 50-100000 Hz (required). */
  rateHz: number;
  /** The first sample's time, seconds (default 0). */
  startTime?: number;
  /** The detection window over the newest samples, 8-600 s (default 20). */
  seconds?: number;
  /** How far behind the newest sample a beat becomes final, 0.5-10 s and at most a quarter of `seconds` (default 2.5). */
  hold?: number;
  /** The beat modality's grid (one of beatModalities(model.config); default: the 40-point "beat" grid). */
  grid?: BeatGrid | null;
}

/** A chunk of the beat stream for a streaming session: this push's final beats and the stream's watermark. */
export interface BeatChunk {
  timestamps: Float64Array;
  samples: Float64Array;
  until: number;
}

/**
 * The beat stream of a live ECG, push by push: detectBeats over a trailing window, each beat given
 * once, when it is `hold` seconds old, with its waveform (beatsFromEcg's); `until` is the
 * stream's watermark. It detects again once 0.25 s of new ECG has come, so its watermark moves in
 * steps of at least that (pushing one sample at a time costs no detection per sample). null, NaN
 * and +-Infinity samples are missing. Bad options are INVALID_ARGUMENT.
 */
export class BeatTracker {
  constructor(options: BeatTrackerOptions);
  /** The watermark so far: every beat before it has been given. */
  readonly until: number;
  /** Beats found only after their watermark had passed (dropped, counted). */
  late: number;
  /** The ECG's next samples (null / NaN missing), or from `startTime` (a gap before it: the beats before the gap are given, up to 150 ms before it, however long the gap). */
  push(samples: ArrayLike<number | null>, startTime?: number): BeatChunk;
  /** Nothing more will come: the beats not given yet, and the watermark at the newest sample. */
  end(): BeatChunk;
}

/** A WFDB record given as bytes (browsers, or Node without a path): the header and its signal files. */
export interface WfdbFiles {
  /** The .hea header, as text or bytes (UTF-8). */
  header: string | Uint8Array | ArrayBuffer;
  /** Each signal file the header names, by that name: `{ 'A00001.mat': bytes }`. A missing one is IO. */
  files?: Record<string, Uint8Array | ArrayBuffer>;
}

/** Options of readWfdb. Other keys are INVALID_ARGUMENT. */
export interface WfdbOptions {
  /** Given to every stream (a model name such as "chest" or "wrist"); without it the streams have none. */
  placement?: string;
}

/** A stream of readWfdb without options.placement: set one before model.forward. */
export type WfdbStream = Omit<RegularStream, 'placement'> & { placement?: string };

/**
 * A WFDB record (PhysioNet: a .hea header and its format 16 / 212 .dat or MATLAB v4 .mat signal
 * files) as a window: each signal a regular stream at its own rate in physical units
 * (adc - baseline) / gain, sensor = its index, modality "ecg" for ECG leads (else the description
 * lowercased). source: a header path (Node; the signal files next to it) or the bytes. A file
 * that breaks the format or disagrees with its header is BAD_FORMAT naming the file, line and
 * field; a file that cannot be read or is not given, IO. `units[j]`: the header's units of
 * streams[j] ("mV" when it gives none); the values are left in them. README "WFDB records".
 */
export function readWfdb(source: string | WfdbFiles, options: WfdbOptions & { placement: string }): Promise<SensorWindow & { units: string[] }>;
export function readWfdb(source: string | WfdbFiles, options?: WfdbOptions | null): Promise<{ streams: WfdbStream[]; units: string[] }>;

/** A Polar Sensor Logger file's kind, decided by its header line. */
export type PolarLoggerKind = 'ACC' | 'GYRO' | 'MAGN' | 'PPG' | 'ECG' | 'HR' | 'RR' | 'PPI' | 'MARKER';

/** Options of readPolarLogger. Other keys are INVALID_ARGUMENT. */
export interface PolarLoggerOptions {
  /** The phone's offset from UTC, minutes east (default 0: its local times read as UTC). */
  utcOffsetMinutes?: number;
  /** A row that does not parse: "error" (default, BAD_FORMAT naming file, line, column) or "skip" (listed in the report). */
  badRows?: 'error' | 'skip';
  /** Given to every stream (the device's placement, e.g. "upper_arm"); without it the streams have none. */
  placement?: string;
  /** Per stream id (acc_x, ppg_0, hr, ppi, ...): the model stream it feeds, overriding the defaults. */
  streams?: { [id: string]: { sensor?: number; modality?: string; placement?: string } };
}

/** What one file held and how it was placed. */
export interface PolarLoggerFileReport {
  kind: PolarLoggerKind;
  /** Data rows (the header not counted), and those that became samples (rows - skipped). */
  rows: number;
  samples: number;
  skipped: { line: number; reason: string }[];
  /** Columns after the known ones, not interpreted. */
  extra: string[];
  /** Streamed files: the median of phone time - sensor time, s (null for a file with no rows). */
  offset?: number | null;
  /** Streamed files: the rate the sensor times give (least squares), the largest |slot time - sensor time| (s), lost stretches and their slots. */
  rateHz?: number | null;
  maxGridError?: number;
  gaps?: number;
  missingSlots?: number;
  /** PPI: rows the sensor flags as unreliable (missing in the window). */
  unreliable?: number;
  /** HR / RR / PPI: rows whose phone time is earlier than the row before (put in time order in the window). */
  outOfOrder?: number;
}

/** One stream id's samples with both clocks, as the files gave them. */
export interface PolarLoggerStream {
  file: string;
  /** Phone time, s (Unix scale after utcOffsetMinutes). */
  hostTimes: Float64Array;
  /** Streamed sensors: the sensor's timestamps, exact ns since 2000-01-01, and the same in s on the Unix scale; null for HR / RR / PPI. */
  deviceNs: BigInt64Array | null;
  deviceTimes: Float64Array | null;
  /** The values as written (PPI and RR in ms). */
  values: Float64Array;
  /** HR / RR / PPI: every column of the file (PPI: its flags, "contact supported" for the second "contact"). */
  columns?: Record<string, Float64Array>;
}

export interface PolarLoggerResult<W> {
  /** The export as one window: streamed sensors as regular streams on the host clock, HR / RR / PPI as events at their phone times. */
  window: W;
  streams: Record<string, PolarLoggerStream>;
  markers: { time: number; kind: 'start' | 'stop'; line: number; file: string }[];
  /** Sensor -> host time offset of the export, s (the smallest of its streamed files' offsets). */
  offset: number;
  report: Record<string, PolarLoggerFileReport>;
  /** Files of a folder that are not exports (Node). */
  ignored: string[];
}

/** A file of an export given as content (a browser's file picker gives File objects). */
export type PolarLoggerFile = { name: string; text: string } | { name: string; bytes: Uint8Array | ArrayBuffer } | { name: string; text(): Promise<string> };

/** A stream of readPolarLogger without options.placement: set one before model.forward. */
export type PolarLoggerWindowStream = (Omit<RegularStream, 'placement'> | Omit<EventStream, 'placement'>) & { placement?: string };

/**
 * A Polar Sensor Logger export (one ;-separated text file per stream: ACC, GYRO, MAGN, PPG, ECG,
 * HR, RR, PPI, MARKER, told apart by their header lines) with both clocks per sample, and as a
 * window. source: a folder, a file or a list of paths (Node), or files' contents. README "Polar
 * Sensor Logger exports".
 */
export function readPolarLogger(source: string | string[] | PolarLoggerFile[], options: PolarLoggerOptions & { placement: string }): Promise<PolarLoggerResult<SensorWindow>>;
export function readPolarLogger(source: string | string[] | PolarLoggerFile[], options?: PolarLoggerOptions | null): Promise<PolarLoggerResult<{ streams: PolarLoggerWindowStream[] }>>;

// --- the model (docs/model.md) ---------------------------------------------------------------

/** The typed arrays accepted wherever numbers go in (not DataView, BigInt64Array, BigUint64Array). */
export type NumericArray =
  | Float32Array | Float64Array | Int8Array | Int16Array | Int32Array
  | Uint8Array | Uint16Array | Uint32Array | Uint8ClampedArray;

/**
 * null / NaN = missing. Every other value must be finite and within float32's range
 * (|x| <= 3.4028234663852886e38): +-Infinity and 1e39 are NON_FINITE errors naming the index.
 */
type Samples = NumericArray | readonly (number | null)[];

interface StreamBase {
  /** Row of the model's sensor-identity table: an integer, 0 <= sensor < n_sensors (<= 2^31 - 1). */
  sensor: number;
  /** A modality name from the model's config: "ecg", "acc_x", "rr", ... */
  modality: string;
  /** A placement name from the model's config: "chest", "wrist", ... */
  placement: string;
  /** null / NaN = missing. */
  samples: Samples;
  /** Each entry 0, 1, true or false (anything else is INVALID_ARGUMENT); 0 / false = missing. */
  present?: NumericArray | readonly (number | boolean)[] | null;
}
export interface RegularStream extends StreamBase {
  /** Finite and > 0, also when there are no samples. */
  rateHz: number;
  /** Finite float64 seconds of sample 0 (epoch seconds welcome). */
  startTime: number;
  timestamps?: undefined;
}
export interface EventStream extends StreamBase {
  /** Finite float64 seconds per sample, non-decreasing (RR intervals, heart-rate notifications). */
  timestamps: NumericArray | readonly number[];
  rateHz?: undefined;
}
export type Stream = RegularStream | EventStream;

export interface SensorWindow {
  streams: Stream[];
  /** Times are encoded as t - referenceTime (default: earliest start of a stream with tokens). */
  referenceTime?: number | null;
}

export interface AttentionMap {
  layer: number;
  block: 'flattened' | 'time' | 'channel';
  group: number;
  /** Token indices of the map's rows and columns. */
  tokens: Int32Array;
  /** (H, g, g) row-major. */
  weights: Float32Array;
  dims: [number, number, number];
}

export interface ForwardResult {
  /** (T, d_model) row-major. */
  embeddings: Float32Array;
  dims: [number, number];
  pooled: Float32Array;
  /** (n_outputs) logits; null without a head. With no present token: the head's bias. */
  head: Float32Array | null;
  /**
   * Only with config `labels`: softmax of `head` (summed in float64, then float32). null when
   * the window has no present token (nothing to predict from).
   */
  probabilities?: Float32Array | null;
  /** Only with config `labels`: the name of the head's largest output (a tie: the first); null as probabilities. */
  label?: string | null;
  referenceTime: number;
  tokens: { stream: Int32Array; modality: string[]; time: Float64Array; present: Uint8Array };
  attention: AttentionMap[] | null;
}

export interface ModelConfig {
  format: 'sensorformer-1';
  d_model: number;
  n_heads: number;
  n_layers: number;
  dim_feedforward: number;
  activation: 'relu' | 'gelu';
  norm_first: boolean;
  layer_norm_eps?: number;
  final_norm?: boolean;
  layout: 'flattened' | 'time' | 'channel' | 'factorized';
  causal?: boolean;
  /** Look-back W in seconds (finite, > 0, needs causal: true); absent or null: unlimited. */
  attention_lookback_s?: number | null;
  time_bin?: number;
  max_period?: number;
  min_present_fraction?: number;
  n_sensors: number;
  /**
   * `missing_events`: an event stream's missing events kept as missing values ("mask", the default)
   * or dropped ("leave-out"); `upsample_hz`: a regular stream slower than this is read at this
   * rate, interpolated (docs/model.md "Tokenizer").
   */
  modalities: { name: string; patch_len: number; mean?: number; std?: number; missing_events?: 'mask' | 'leave-out'; upsample_hz?: number }[];
  placements: string[];
  rate_bucket_edges_hz?: number[];
  n_outputs?: number;
  /** Names of the head's outputs: n_outputs distinct non-empty strings (checked at load, BAD_FORMAT otherwise). */
  labels?: string[];
  /**
   * An ensemble file's (docs/model.md "Ensembles"): every member's config. The rest of this config
   * is the first member's, its modalities every member's (the first member's first).
   */
  ensemble?: { combine: 'mean_probability'; members: ModelConfig[] };
}

/** A modality the model accepts, as the model uses it. */
export interface ModelModality {
  readonly name: string;
  /** Samples (regular stream) or events (event-driven) per token. */
  readonly patchLen: number;
  /** Values enter as (x - mean) / std (float32). */
  readonly mean: number;
  readonly std: number;
}

/** What a window may hold for this model (docs/model.md, "Input: a window"). */
export interface ModelInputs {
  /** The values `stream.modality` may take. */
  readonly modalities: readonly ModelModality[];
  /** The values `stream.placement` may take. */
  readonly placements: readonly string[];
  /** `stream.sensor` is an integer from 0 to sensorCount - 1. */
  readonly sensorCount: number;
  /**
   * Any rateHz > 0 is accepted; regular streams are embedded by rate bucket: below the first
   * edge, then between successive edges, then above the last (event-driven streams: their own).
   */
  readonly rateBucketEdgesHz: readonly number[];
  /** A patch is present when at least this share of its samples is. */
  readonly minPresentFraction: number;
}

/** What forward returns for this model. */
export interface ModelOutputs {
  /** d_model: width of `embeddings` rows and of `pooled`. */
  readonly embeddingSize: number;
  /** n_outputs: length of `head` (0: no head, `head` is null). */
  readonly headSize: number;
  /** The head's class names; null without them (then forward gives no probabilities or label). */
  readonly labels: readonly string[] | null;
}

/**
 * model.info: the model's interface and size, with the config's defaults filled in (what ONNX
 * Runtime's inputNames/outputNames or tfjs's model.inputs tell). Frozen.
 */
export interface ModelInfo {
  readonly format: 'sensorformer-1';
  readonly inputs: ModelInputs;
  readonly outputs: ModelOutputs;
  readonly layout: 'flattened' | 'time' | 'channel' | 'factorized';
  readonly causal: boolean;
  /**
   * Seconds W of causal look-back (config `attention_lookback_s`): a query at time t attends only
   * to keys in [t - W, t]. null: unlimited.
   */
  readonly attentionLookbackS: number | null;
  readonly dModel: number;
  readonly nHeads: number;
  readonly nLayers: number;
  readonly dimFeedforward: number;
  readonly activation: 'relu' | 'gelu';
  readonly normFirst: boolean;
  readonly finalNorm: boolean;
  readonly layerNormEps: number;
  /** Seconds per channel-attention time bin. */
  readonly timeBin: number;
  readonly maxPeriod: number;
  readonly size: {
    /** Weights in the file the model uses (the time table, a buffer, not counted). */
    readonly parameters: number;
    /** Bytes they take in WebAssembly memory: float32 weights, their packed copies, the time table. */
    readonly weightBytes: number;
  };
  /**
   * An ensemble (docs/model.md "Ensembles"): how many models the file holds and how their heads
   * are combined (the mean of their class probabilities). Everything else in this object is the
   * first member's (its embeddings, tokens and attention are the ones returned), but
   * inputs.modalities (every member's), size (all members'), causal (every member's) and
   * attentionLookbackS (the longest member's; null when one has none). Absent for a single model.
   */
  readonly ensemble?: { readonly combine: 'mean_probability'; readonly members: number };
}

/** undefined / null = defaults; other keys (a typo) are INVALID_ARGUMENT. */
export interface ForwardOptions {
  /** Return the attention maps (default false). */
  attention?: boolean;
  /**
   * Compute limit in GFLOP, estimated from the tokens before any layer runs (default 10, about
   * 1-2 s of one core); past it the forward throws RESOURCE_EXHAUSTED. `Infinity` lifts it. An
   * ensemble's members each get it (docs/model.md, "Limits").
   */
  maxGflop?: number;
}

export class Model {
  readonly config: ModelConfig;
  /** Inputs, outputs, architecture and size (stays readable after dispose()). */
  readonly info: ModelInfo;
  /** Threads each forward runs on (numThreads as granted: 1 where threads cannot run). */
  readonly threads: number;
  forward(window: SensorWindow, options?: ForwardOptions | null): ForwardResult;
  /** A ragged batch: each window computed on its own; errors name windows[i]. */
  forwardBatch(windows: SensorWindow[], options?: ForwardOptions | null): ForwardResult[];
  /**
   * A streaming session (docs/model.md "Streaming"): push chunks as samples arrive, get each token
   * once it is final. A model that is not causal is refused with INVALID_ARGUMENT saying so.
   */
  stream(options?: StreamOptions | null): StreamSession;
  /** Frees the model's WebAssembly memory now, its stream sessions first; later calls throw DISPOSED. */
  dispose(): void;
  [Symbol.dispose](): void;
}

// --- streaming sessions (docs/model.md "Streaming") ---------------------------------------------

/** Options of model.stream(). undefined / null = defaults; other keys (a typo) are INVALID_ARGUMENT. */
export interface StreamOptions {
  /**
   * The session's fixed reference time (finite seconds; times are encoded as t - referenceTime).
   * Default null: the earliest time of the first chunk that gives one.
   */
  referenceTime?: number | null;
  /** Return each new token's attention rows over its keys with every push (default false). */
  attention?: boolean;
  /** Seconds of final embeddings kept for pooled() (finite, > 0; default 60). */
  historySeconds?: number;
  /**
   * An event stream's incomplete patch is closed, its missing events marked missing, once the
   * stream's `until` is more than this past the patch's first event (finite, > 0; default 15 s):
   * a strap that leaves part-way through a patch does not hold finality back.
   */
  eventTimeoutSeconds?: number;
  /** Compute limit of each push in GFLOP, counted as forward counts a window (> 0; default 10). */
  maxGflop?: number;
}

/**
 * One stream's part of a chunk. The first chunk that mentions a stream describes it (sensor,
 * modality, placement, and rateHz + startTime or timestamps); later chunks may leave the
 * description out (sensor, modality, placement and rateHz together), and if they give it, it must
 * match. Event-driven iff `timestamps` is given.
 */
export interface ChunkStream {
  sensor?: number;
  modality?: string;
  placement?: string;
  /** A regular stream's rate in Hz (finite, > 0), with its description. */
  rateHz?: number;
  /**
   * Regular stream: the time of this chunk's first sample (required in its first chunk). Later
   * than the next expected sample: the samples in between are missing (a gap); earlier by more
   * than half a sample period: INVALID_ARGUMENT (chunks must not overlap).
   */
  startTime?: number;
  /** Event-driven stream: one finite time per sample, non-decreasing, never before its watermark. */
  timestamps?: NumericArray | readonly number[] | null;
  /** Appended samples (null / NaN = missing); left out = none. */
  samples?: Samples | null;
  /** One entry per sample: 0, 1, true or false. */
  present?: NumericArray | readonly (number | boolean)[] | null;
  /**
   * Watermark: nothing of this stream before `until` is still to come. Regular: the samples before
   * it not received are missing. Event-driven: a later event before it is INVALID_ARGUMENT. Monotone.
   */
  until?: number | null;
}

/** What push() takes: chunk.streams[i] appends to session stream i (null = nothing new); new streams at the end. */
export interface StreamChunk {
  streams: (ChunkStream | null | undefined)[];
}

/** One new token's attention in one layer and block, over its keys (look-back, causal cut and absent keys removed). */
export interface StreamAttentionRow {
  /** The query token's session index. */
  token: number;
  layer: number;
  block: 'flattened' | 'time' | 'channel';
  /** The keys' session indices. */
  keys: Float64Array;
  /** The keys' times (seconds). */
  keyTimes: Float64Array;
  /** (H, n) row-major: each head's weights over the n keys (sum 1, or all 0 with no key). */
  weights: Float32Array;
  dims: [number, number];
}

/**
 * Absent patches of one regular stream that a push skipped instead of emitting: those more than 60 s
 * after the stream's last present patch (docs/model.md "Gaps"). Token times [from, to).
 */
export interface SkippedPatches {
  stream: number;
  from: number;
  to: number;
  patches: number;
}

/** The tokens that became final in one push, in time order (ties: stream order, then patch order). */
export interface StreamUpdate {
  tokens: {
    /** Session stream index of each token. */
    stream: Int32Array;
    modality: string[];
    /** Patch start times (seconds). */
    time: Float64Array;
    /** 1 = present patch, 0 = absent (a mask token: emitted, masked as a key). */
    present: Uint8Array;
    /** Each token's position in the session's sequence of final tokens (0, 1, 2, ...). */
    index: Float64Array;
  };
  /** (m, d_model) row-major: each equals the row of a full forward over everything received (within 1e-5). */
  embeddings: Float32Array;
  dims: [number, number];
  /** Every token with time < frontier is final (-Infinity before any data). */
  frontier: number;
  /** null until a chunk gives a time. */
  referenceTime: number | null;
  /** With { attention: true }: rows by token, then layer. */
  attention: StreamAttentionRow[] | null;
  /** Runs of absent patches this push skipped (a long gap costs its first minute, not its length). */
  skipped: SkippedPatches[];
}

/** undefined / null = defaults; other keys are INVALID_ARGUMENT. */
export interface PooledOptions {
  /** Seconds before the frontier to pool over: 0 < seconds <= historySeconds (default historySeconds). */
  seconds?: number;
}

export interface PooledResult {
  /** Masked mean of the final embeddings with time in [from, to) (zero with no present token). */
  pooled: Float32Array;
  /** The head on it; null without a head. */
  head: Float32Array | null;
  /** Only with config `labels`, as ForwardResult's; null when presentTokens is 0. */
  probabilities?: Float32Array | null;
  label?: string | null;
  /** Present tokens averaged. */
  presentTokens: number;
  from: number;
  /** The frontier. */
  to: number;
}

/** A streaming session (model.stream()). A push that fails leaves the session as it was. */
export class StreamSession {
  private constructor();
  /** Appends the chunk; returns the tokens that became final. */
  push(chunk: StreamChunk): StreamUpdate;
  pooled(options?: PooledOptions | null): PooledResult;
  readonly frontier: number;
  readonly referenceTime: number | null;
  /** Bytes held in WebAssembly memory now (key/value caches, pending patches, pooling history). */
  readonly memoryBytes: number;
  /** Tokens made final so far. */
  readonly finalTokens: number;
  /** Frees the session now (model.dispose() does too); later calls throw DISPOSED. Idempotent. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface WorkerPushOptions {
  /** Move the chunk's typed arrays to the worker instead of copying them (detached here). */
  transfer?: boolean;
}

/**
 * A StreamSession in the worker (pinned to one worker of a pool): the same results, as promises.
 * The getters hold the values after the last call that settled.
 */
export class WorkerStreamSession {
  private constructor();
  push(chunk: StreamChunk, options?: WorkerPushOptions | null): Promise<StreamUpdate>;
  pooled(options?: PooledOptions | null): Promise<PooledResult>;
  readonly frontier: number;
  readonly referenceTime: number | null;
  readonly memoryBytes: number;
  readonly finalTokens: number;
  /** Frees the session in its worker (a session garbage-collected without it is freed there too); calls made before complete, later ones reject DISPOSED. Never rejects. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Loads a weights file: a URL, a file path (Node), an ArrayBuffer or a Uint8Array. A file that is
 * not safetensors (an HTML page from a wrong URL) is BAD_FORMAT "<source>: safetensors: not a
 * safetensors file: it looks like an HTML page ...".
 */
export function loadModel(source: string | URL | ArrayBuffer | Uint8Array, options?: LoadOptions | null): Promise<Model>;

export interface WorkerForwardOptions extends ForwardOptions {
  /**
   * Move the window's typed arrays to the worker instead of copying them (detached here; arrays
   * over a SharedArrayBuffer are shared instead, and stay usable).
   */
  transfer?: boolean;
}

/**
 * The Model API in Web Workers (browsers) or worker_threads (Node): every call is a promise, and
 * rejects with the same codes as Model. A value structured clone cannot copy (a function, a
 * symbol, a getter that throws, a buffer already moved by { transfer: true }) is INVALID_ARGUMENT.
 * A worker that dies (its thread ends or its WebAssembly module aborts) rejects the calls it holds
 * with WORKER_FAILED and is replaced by a new worker that loads the model again; later calls go to
 * the workers running, or wait for the replacement (none left: WORKER_FAILED).
 */
export class WorkerModel {
  readonly config: ModelConfig;
  /** As Model.info. */
  readonly info: ModelInfo;
  /** As Model.threads, in each worker. */
  readonly threads: number;
  /** How many workers the model runs on. */
  readonly workers: number;
  /** Goes to the least busy worker. */
  forward(window: SensorWindow, options?: WorkerForwardOptions | null): Promise<ForwardResult>;
  /**
   * On a pool, split across the workers in chunks each takes when free; results in input order.
   * Rejects like Model.forwardBatch: with the error of the first bad window ("windows[i]: ...").
   */
  forwardBatch(windows: SensorWindow[], options?: WorkerForwardOptions | null): Promise<ForwardResult[]>;
  /** Model.stream in the least busy worker; rejects with Model.stream's errors. */
  stream(options?: StreamOptions | null): Promise<WorkerStreamSession>;
  /**
   * Frees the model and stops the workers. Calls made after dispose() (awaited or not) reject
   * with DISPOSED; work already sent to a worker completes (every forward() made before, and a
   * batch on one worker); a batch on a pool with windows not sent yet rejects with DISPOSED.
   * Its stream sessions end with it (later calls on them reject with DISPOSED).
   */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface WorkerLoadOptions extends LoadOptions {
  /**
   * Number of workers: an integer from 1 to 64 (default 1), or 'auto': one per core
   * (navigator.hardwareConcurrency, os.availableParallelism()) up to 8. Else INVALID_ARGUMENT.
   */
  workers?: number | 'auto';
}

/**
 * loadModel in a worker (or a pool of them), so inference never blocks the main thread. The model
 * is read or fetched once, on the calling thread, and each worker gets a copy.
 */
export function loadModelInWorker(source: string | URL | ArrayBuffer | Uint8Array, options?: WorkerLoadOptions | null): Promise<WorkerModel>;
