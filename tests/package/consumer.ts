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
  type ChunkStream,
  type PooledResult,
  type StreamAttentionRow,
  type StreamChunk,
  type StreamOptions,
  type StreamUpdate,
  StreamSession,
  WorkerStreamSession,
  readPolarLogger,
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
  // A model's float32 table (its `time_encoding.inv_freq`), instead of maxPeriod's formula.
  const table = core.timeEncoding([0, 1.5, 3], { dModel: 4, invFreq: Float32Array.of(1, 0.01) });
  // @ts-expect-error invFreq replaces maxPeriod: not both
  core.timeEncoding([0], { dModel: 4, invFreq: [1, 0.01], maxPeriod: 100 });
  void arch, dims, table;
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

export async function streaming(model: Model): Promise<number> {
  const options: StreamOptions = { referenceTime: 1764468000, attention: true, historySeconds: 30 };
  const session: StreamSession = model.stream(options);
  const first: ChunkStream = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 1764468000.25, samples: [18, 33, null, NaN] };
  const beats: ChunkStream = { sensor: 2, modality: 'rr', placement: 'chest', timestamps: new Float64Array([1764468000.5]), samples: [0.8], until: 1764468001 };
  const chunk: StreamChunk = { streams: [first, beats] };
  const u: StreamUpdate = session.push(chunk);
  const [m, d]: [number, number] = u.dims;
  const index: Float64Array = u.tokens.index;
  const modality: string = u.tokens.modality[0];
  const frontier: number = u.frontier;
  const reference: number | null = u.referenceTime;
  const rows: StreamAttentionRow[] = u.attention ?? [];
  for (const row of rows) {
    const [H, n]: [number, number] = row.dims;
    const block: 'flattened' | 'time' | 'channel' = row.block;
    const w: number = row.weights[(H - 1) * n];
    const keyTime: number = row.keyTimes[0];
    void block, w, keyTime, row.token, row.keys;
  }
  session.push({ streams: [{ samples: new Float32Array(16), startTime: 1764468001 }, null] });
  const p: PooledResult = session.pooled({ seconds: 10 });
  const head: Float32Array | null = p.head;
  const label: string | null | undefined = p.label;
  const bytes: number = session.memoryBytes + session.finalTokens + session.frontier;
  const ref: number | null = session.referenceTime;
  // @ts-expect-error a chunk's stream entries are objects or null, not arrays of samples
  session.push({ streams: [[1, 2, 3]] });
  // @ts-expect-error pooled takes { seconds }, not a number
  session.pooled(10);
  // @ts-expect-error attention is a boolean option
  model.stream({ attention: 'rows' });
  // @ts-expect-error a session is made by model.stream(), not constructed
  void new StreamSession();
  session.dispose();

  const worker: WorkerModel = await loadModelInWorker('/model.safetensors', { workers: 2 });
  const remote: WorkerStreamSession = await worker.stream({ historySeconds: 10 });
  const update: StreamUpdate = await remote.push(chunk, { transfer: true });
  const pooled: PooledResult = await remote.pooled();
  // @ts-expect-error push in a worker returns a promise
  const notAwaited: StreamUpdate = remote.push(chunk);
  const remoteFrontier: number = remote.frontier;
  await remote.dispose();
  await worker.dispose();
  void m, d, index, modality, frontier, reference, head, label, ref, update, pooled, notAwaited, remoteFrontier;
  return bytes;
}

// --- sensorformer/ble, sensorformer/simulator, sensorformer/render ----------------------------

import {
  BluetoothDecodeError,
  BluetoothUnavailableError,
  bluetoothAvailability,
  connectWearable,
  decoders,
  DEFAULT_STREAMS,
  DEVICE_FILTERS,
  exportToRecording,
  parseRecording,
  replayPolarLoggerIntoSession,
  record,
  replay,
  windowsFromRecording,
  WindowAssembler,
  type SampleBatch,
  type Wearable,
  type WearableEventMap,
} from 'sensorformer/ble';
import { createSimulatedBluetooth, createVirtualClock, SIMULATOR_OPTIONS, type SimulatedBluetoothOptions } from 'sensorformer/simulator';
import { drawAttentionMap, drawTrace, seriesFromStream, viridis } from 'sensorformer/render';

export async function wearable(ctx: CanvasRenderingContext2D, signal: AbortSignal): Promise<SensorWindow> {
  const availability = bluetoothAvailability();
  if (!availability.available) {
    const why: 'no-api' | 'insecure-context' = availability.reason;
    const what: string = availability.message;
    void why, what;
  }
  const clock = createVirtualClock(1764468000);
  const options: SimulatedBluetoothOptions = {
    seed: 3, clock, devices: ['strap', 'oximeter'], driftPpm: { strap: 20 }, accRatesHz: 'nominal',
    disconnects: [{ device: 'strap', at: 30, duration: 5 }], faults: { clockJumps: [{ at: 10, by: 0.5 }] },
    activities: [{ activity: 'rest', duration: 60 }, { activity: 'run', start: 60 }],
  };
  const sim = createSimulatedBluetooth(options);
  const names: readonly string[] = SIMULATOR_OPTIONS;
  const truthHr: number = sim.truth.heartRateAt(sim.start + 5);
  // @ts-expect-error a typo in an option name is a type error (and INVALID_ARGUMENT at runtime)
  createSimulatedBluetooth({ seeed: 3 });
  // @ts-expect-error the simulated devices are 'strap' | 'thermometer' | 'oximeter'
  createSimulatedBluetooth({ devices: ['watch'] });
  // @ts-expect-error nested options are checked too
  createSimulatedBluetooth({ faults: { dupPmd: [1] } });

  const recorder = record(sim, { clock });
  const assembler = new WindowAssembler({ rateBucketEdgesHz: [1, 10, 100] });
  const strap: Wearable = await connectWearable({
    bluetooth: recorder.bluetooth, clock, filters: DEVICE_FILTERS.strap, assembler,
    streams: { ecg: DEFAULT_STREAMS.ecg, hr: DEFAULT_STREAMS.hr },
    pmd: { ecg: true, acc: { sampleRate: 200, resolution: 16, range: 8 } },
    reconnect: { retries: 3, initialDelayMs: 1000, factor: 2 },
  });
  // @ts-expect-error 'ecgg' is not a stream the device layer feeds
  void connectWearable({ streams: { ecgg: DEFAULT_STREAMS.ecg } });
  // The PMD streams a Polar device may offer are fed when named (docs/bluetooth.md).
  void connectWearable({ streams: { ppg_0: { sensor: 5, modality: 'ppg', placement: 'upper_arm', rateHz: 55 }, ppi: { sensor: 5, modality: 'ppi', placement: 'upper_arm', rateHz: null } } });

  // Every event is typed: e.detail needs no cast.
  strap.addEventListener('connect', (e) => { const t: number = e.detail.time; void t; });
  strap.addEventListener('disconnect', (e) => { const t: number = e.detail.time; void t; });
  strap.addEventListener('reconnect-failed', (e) => { const n: number = e.detail.attempt; const err: Error = e.detail.error; void n, err; });
  strap.addEventListener('gap', (e) => { const span: number = e.detail.end - e.detail.start; void span; });
  strap.addEventListener('reconnect', (e) => { const n: number = e.detail.attempt; void n; });
  strap.addEventListener('error', (e) => {
    const error = e.detail.error;
    if (error instanceof BluetoothDecodeError) { const at: number = error.offset; const code: 'DECODE_ERROR' = error.code; void at, code; }
    else if (error instanceof SensorformerError && error.code === 'BLUETOOTH_DISCONNECTED') strap.close();
  });
  // @ts-expect-error a gap's detail has start and end, not time
  strap.addEventListener('gap', (e) => e.detail.time);
  const onReconnect = (e: WearableEventMap['reconnect']): void => void e.detail.time;
  strap.removeEventListener('reconnect', onReconnect);

  // samples(kind) is typed by kind: an ECG batch's values are a Float32Array, ACC's { x, y, z }.
  for await (const batch of strap.samples('ecg', { signal })) {
    const values: Float32Array = batch.values;
    const device: Float64Array = batch.deviceTimes;
    drawTrace(ctx, { times: batch.times, values }, { t0: batch.times[0], t1: batch.times[batch.times.length - 1] });
    void device;
    break;
  }
  for await (const batch of strap.samples('acc', { signal })) {
    const x: Float32Array = batch.values.x;
    // @ts-expect-error ACC values are { x, y, z }, not one array
    const flat: Float32Array = batch.values;
    void x, flat;
    break;
  }
  for await (const batch of strap.samples('hr')) {
    // @ts-expect-error heart-rate notifications carry no device times
    const device: Float64Array = batch.deviceTimes;
    void device;
    break;
  }
  const some: SampleBatch = await strap.samples('rr').next().then((r) => r.value);
  if (some.kind === 'acc' || some.kind === 'gyro' || some.kind === 'magn') void some.values.z;
  else if (some.kind === 'ppg') void some.values.ambient;
  else void some.values.length;
  // PPI batches carry the device's own fields; PPG batches the device clock's times.
  for await (const batch of strap.samples('ppi')) {
    const blocker: Uint8Array = batch.blocker;
    const seconds: Float32Array = batch.values;
    void blocker, seconds;
    break;
  }
  for await (const batch of strap.samples('ppg')) {
    const device: Float64Array = batch.deviceTimes;
    void device, batch.values.ppg2;
    break;
  }
  // @ts-expect-error 'emg' is not a kind of samples
  strap.samples('emg');

  const hr = decoders.decodeHeartRate(new Uint8Array([0x10, 62, 0x00, 0x04]));
  const rrSeconds: number[] = hr.rrIntervals;
  const contact: 'detected' | 'not-detected' | 'unsupported' = hr.contact;
  const frame = decoders.decodePmdData(new Uint8Array(10), { resolution: 14 });
  if (frame.type === 'ecg' && frame.samples !== null) { const uv: Int32Array = frame.samples; void uv; }
  const start: Uint8Array = decoders.encodePmdStart('acc', { sampleRate: 50, resolution: 16, range: 8 });
  // @ts-expect-error PMD start settings are sampleRate, resolution, range, channels
  decoders.encodePmdStart('acc', { rate: 50 });
  void rrSeconds, contact, start, names, truthHr;

  const text = recorder.stop();
  // a Polar Sensor Logger export as a recording, replayable like one
  const exported: string = exportToRecording(await readPolarLogger([{ name: 'HR.txt', text: 'Phone timestamp;HR [bpm]\n2022-04-25T11:39:02.323;66\n' }]));
  void replay(exported, { speed: Infinity, clock });
  void replayPolarLoggerIntoSession;
  const { header, events } = parseRecording(text);
  for (const e of events) if (e.kind === 'notification') void e.bytes.length;
  const replayed = replay(text, { speed: 4, clock });
  await replayed.finished;
  const { windows } = await windowsFromRecording(text, { seconds: 10, hop: 5 });
  void header;
  await strap.close();
  sim.close();

  const window: SensorWindow = assembler.window({ end: strap.now(), seconds: 10 });
  const model = await loadModel('/model.safetensors');
  const labels: string[] | undefined = model.config.labels;
  const r = model.forward(window, { attention: true });
  const map = r.attention?.[0];
  if (map) {
    const drawn = drawAttentionMap(ctx, map, { head: 'mean', labels: labels ?? [] });
    const [red, green, blue]: [number, number, number] = viridis(drawn.max);
    void red, green, blue;
  }
  const series = seriesFromStream(window.streams[0]);
  drawTrace(ctx, window.streams[0], { t0: series.times[0], t1: series.times[series.times.length - 1], style: 'line' });
  model.dispose();

  try {
    await connectWearable();
  } catch (e) {
    if (e instanceof BluetoothUnavailableError) { const reason: 'no-api' | 'insecure-context' | 'adapter-unavailable' | 'permission-denied' = e.reason; void reason; }
    else if (e instanceof SensorformerError) {
      switch (e.code) {
        case 'BLUETOOTH_NO_DEVICE':
        case 'BLUETOOTH_FAILED':
        case 'BLUETOOTH_PMD':
          break;
        // @ts-expect-error not an error code
        case 'BLUETOOTH_GONE':
          break;
        default:
          throw e;
      }
    }
  }
  return windows[0] ?? window;
}

import { autoRange, cellAt, drawTimeAxis, headWeights, mapLayout, reorderMap, tickStep, TRACE_PADDING, traceLayout, type TraceOptions } from 'sensorformer/render';
import { BeatTimeline, ClockAligner, createRealClock, DEFAULT_FILTERS, RECORDING_FORMAT, StreamBuffer, UUIDS, type SliceTiming } from 'sensorformer/ble';
import { DEVICE_KEYS, H10_ACC_RATES_HZ } from 'sensorformer/simulator';

export function drawing(ctx: CanvasRenderingContext2D, map: AttentionMap, stream: Stream): number {
  // Attention maps: the layout of the cells, the cell under a pointer, one head, a reordering.
  const layout = mapLayout(ctx.canvas.width, ctx.canvas.height, map.dims[1]);
  const cell: { query: number; key: number } | null = cellAt(layout, 40, 40);
  const mean: Float32Array = headWeights(map, 'mean');
  const order = Array.from(map.tokens, (_, i) => map.tokens.length - 1 - i);
  const reordered = reorderMap(map, order);
  const block: 'flattened' | 'time' | 'channel' = reordered.block;  // the map's own fields are kept
  // @ts-expect-error a head is an index or 'mean'
  headWeights(map, 'max');

  // Traces: range, layout, axis, ticks.
  const series = seriesFromStream(stream);
  const range = autoRange(series, { minSpan: 10 }) ?? [0, 1];
  const t0 = series.times[0], t1 = series.times[series.times.length - 1];
  const plot = traceLayout(ctx.canvas.width, ctx.canvas.height, { t0, t1, range, padding: TRACE_PADDING });
  const x: number = plot.x(t0);
  const options: TraceOptions = { t0, t1, range, style: 'step', gaps: [[t0, t0 + 1, true]], highlights: [{ t0, color: '#f00' }], window: { t0, t1 } };
  const drawn = drawTrace(ctx, series, options);
  const { ticks } = drawTimeAxis(ctx, { t0, t1, unit: 's', format: (t) => t.toFixed(1) });
  const step: number = tickStep(t1 - t0, ctx.canvas.width);
  // @ts-expect-error a trace needs its time span
  drawTrace(ctx, series, { range });
  void cell, mean, block, x, drawn.last?.v, ticks, step;

  // The device layer's parts on their own.
  const buffer = new StreamBuffer({ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, capacitySeconds: 30 });
  buffer.push([1, 1.0077], [12, null]).markGap(2, 3);
  const timing: SliceTiming | null = buffer.timing(0, 5);
  const slice: Stream = buffer.slice(0, 5);
  const aligner = new ClockAligner({ maxDriftPpm: 200 });
  const { residual, jumped } = aligner.observe(100, 1764468000);
  const hosts: Float64Array = aligner.toHost([100, 100.5]);
  const beats = new BeatTimeline().push(1764468000, [0.8, 0.82]);
  const clock = createRealClock();
  const filters = DEFAULT_FILTERS.length + UUIDS.pmdData.length + RECORDING_FORMAT.length;
  const accRate: number = H10_ACC_RATES_HZ[50];
  const keys: readonly ('strap' | 'thermometer' | 'oximeter' | 'armband')[] = DEVICE_KEYS;
  void timing, slice, residual, jumped, hosts, beats.times, clock.now(), filters, accRate, keys;
  return drawn.points;
}
