// Types for sensorformer/ble (docs/bluetooth.md). Hand-written; keep in step with web/src/ble/.
// The simulated wearable is sensorformer/simulator (web/simulator.d.ts).
/// <reference lib="esnext.disposable" />
import type { PolarLoggerResult, SensorformerError, SensorWindow, Stream } from './index.js';

// --- clocks ----------------------------------------------------------------------------------

/**
 * Where host times come from: float64 seconds (performance.timeOrigin + performance.now() for the
 * real clock). Timer delays are milliseconds, as for the global setTimeout.
 */
export interface Clock {
  /** Host time in float64 seconds. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}
/** createRealClock(): the global timers on the performance.timeOrigin + performance.now() scale. */
export interface RealClock extends Clock {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(id: unknown): void;
  readonly virtual: false;
}
/** createVirtualClock(): time only moves in advance() / advanceAsync(); timers run in due order. */
export interface VirtualClock extends Clock {
  readonly virtual: true;
  /** The clock's time at its creation (s). */
  readonly start: number;
  setTimeout(fn: () => void, ms: number): number;
  clearTimeout(id: unknown): void;
  setInterval(fn: () => void, ms: number): number;
  clearInterval(id: unknown): void;
  /** Seconds since the clock's start. */
  elapsed(): number;
  /** Number of pending timers. */
  readonly pending: number;
  /** Due time (clock seconds) of the next timer, or null. */
  nextDue(): number | null;
  /** Runs every timer due within `seconds` (finite, >= 0; else INVALID_ARGUMENT) synchronously, in order. */
  advance(seconds: number): void;
  /** advance() to the absolute clock time `time` (finite, else INVALID_ARGUMENT; no-op when already past). */
  advanceTo(time: number): void;
  /** As advance(), letting pending promise reactions run before and after each timer. */
  advanceAsync(seconds: number): Promise<void>;
}
/** startSeconds: the clock's start (finite, else INVALID_ARGUMENT; default 1.7e9, 2023-11-14T22:13:20Z). */
export function createVirtualClock(startSeconds?: number): VirtualClock;
export function createRealClock(): RealClock;

// --- Web Bluetooth, as far as this package uses it ---------------------------------------------

/** A 128-bit UUID string, a 16/32-bit alias number, or a standard GATT name ('heart_rate'). */
export type BluetoothServiceId = string | number;

/** A requestDevice filter (Web Bluetooth's BluetoothLEScanFilter, the members used here). */
export interface BluetoothFilter {
  services?: BluetoothServiceId[];
  name?: string;
  namePrefix?: string;
}

export interface RequestDeviceOptions {
  filters?: BluetoothFilter[];
  optionalServices?: BluetoothServiceId[];
  acceptAllDevices?: boolean;
}

/**
 * Anything shaped like navigator.bluetooth: the browser's, sensorformer/simulator's
 * createSimulatedBluetooth(), replay(), or record()'s wrapper. The device layer calls
 * requestDevice() and then uses the device's GATT server as Web Bluetooth defines it.
 */
export interface BluetoothLike {
  requestDevice(options: RequestDeviceOptions): Promise<unknown>;
}

/** A fake navigator.bluetooth (replay(), and sensorformer/simulator's SimulatedBluetooth). */
export interface FakeBluetooth extends EventTarget, BluetoothLike {
  requestDevice(options: RequestDeviceOptions): Promise<FakeDevice>;
  getAvailability(): Promise<boolean>;
  /** Devices granted by earlier requestDevice calls. */
  getDevices(): Promise<FakeDevice[]>;
  /** Every device in range, granted or not (not part of Web Bluetooth). */
  readonly devices: FakeDevice[];
  /** Changes getAvailability()'s answer and fires 'availabilitychanged'. */
  setAvailability(available: boolean): void;
  readonly clock: Clock;
}

/** A device of a FakeBluetooth: a BluetoothDevice with the peripheral's side attached. */
export interface FakeDevice extends EventTarget {
  readonly id: string;
  readonly name: string | null;
  readonly gatt: { readonly connected: boolean; connect(): Promise<unknown>; disconnect(): void };
  /** false: connect() fails (out of range) until set back to true. */
  reachable: boolean;
  /** The next `n` connect() calls fail with NetworkError. */
  failNextConnects(n: number): void;
  /** The link is lost from the device's side (out of range, switched off). */
  dropConnection(reason?: string): void;
}

// --- errors ----------------------------------------------------------------------------------

/** Bytes that do not match the layout they claim (a device or a recording). */
export class BluetoothDecodeError extends SensorformerError {
  readonly name: 'BluetoothDecodeError';
  readonly code: 'DECODE_ERROR';
  /** The characteristic's layout, e.g. 'heart-rate', 'pmd-data'. */
  readonly profile: string;
  /** The byte at which decoding stopped. */
  readonly offset: number;
}
export type BluetoothUnavailableReason = 'no-api' | 'insecure-context' | 'adapter-unavailable' | 'permission-denied';
/** Web Bluetooth cannot be used here; `reason` says why and `message` what to do. */
export class BluetoothUnavailableError extends SensorformerError {
  readonly name: 'BluetoothUnavailableError';
  readonly code: 'BLUETOOTH_UNAVAILABLE';
  readonly reason: BluetoothUnavailableReason;
}

/** Whether Web Bluetooth can be used here, and if not why and what to do (never throws). */
export function bluetoothAvailability(env?: typeof globalThis):
  | { available: true; reason?: undefined; message?: undefined }
  | { available: false; reason: 'no-api' | 'insecure-context'; message: string };

// --- the device layer (device.js) --------------------------------------------------------------

/** The model stream a kind of sample feeds (WindowAssembler.add's spec). */
export interface StreamSpec {
  /** Row of the model's sensor-identity table: an integer >= 0. */
  sensor: number;
  modality: string;
  placement: string;
  /** The declared rate of a regular stream; null or absent: event-driven (default null). */
  rateHz?: number | null;
  /** Seconds of samples kept (default 120; connectWearable's streams: 120). */
  capacitySeconds?: number;
  /** Samples kept at most (default: 2 x the nominal count + 64, or 100 per second + 1024 for event streams). */
  maxSamples?: number;
  /** A model's info.inputs.rateBucketEdgesHz (config.rate_bucket_edges_hz): keep a measured rate in the declared rate's bucket when that costs < 1/4 period. */
  rateBucketEdgesHz?: readonly number[] | null;
}

/** The stream ids of DEFAULT_STREAMS (a chest strap, a thermometer, an oximeter). */
export type DefaultStreamId = 'ecg' | 'acc_x' | 'acc_y' | 'acc_z' | 'hr' | 'rr' | 'temperature' | 'spo2';
/**
 * Every stream id connectWearable feeds: the defaults and the PMD streams a Polar device may offer
 * (PPG channels and ambient, gyroscope, magnetometer, PPI), fed when `streams` names them.
 */
export type WearableStreamId = DefaultStreamId | 'ppg_0' | 'ppg_1' | 'ppg_2' | 'ppg_ambient'
  | 'gyro_x' | 'gyro_y' | 'gyro_z' | 'magn_x' | 'magn_y' | 'magn_z' | 'ppi';

/** Accelerometer samples, mG per axis. */
export interface AccValues { x: Float32Array; y: Float32Array; z: Float32Array }

/** What samples(kind) yields, by kind. */
export interface SampleValues {
  /** µV (Polar PMD ECG). */
  ecg: Float32Array;
  /** mG per axis (Polar PMD ACC). */
  acc: AccValues;
  /** Beats per minute, one per Heart Rate Measurement notification. */
  hr: Float32Array;
  /** RR intervals in seconds, each at its beat's rebuilt time. */
  rr: Float32Array;
  /** °C; NaN for a reading the thermometer marked missing. */
  temperature: Float32Array;
  /** %; NaN while the finger is off. */
  spo2: Float32Array;
  /** Raw photodiode counts of an optical sensor (Polar PMD PPG: Verity Sense, OH1). */
  ppg: { ppg0: Float32Array; ppg1: Float32Array; ppg2: Float32Array; ambient: Float32Array };
  /** dps per axis (Polar PMD gyroscope, scaled by the factor the device answers). */
  gyro: AccValues;
  /** G per axis (Polar PMD magnetometer, scaled by the factor the device answers). */
  magn: AccValues;
  /** Pulse-to-pulse intervals in s (Polar PMD PPI); NaN where the device flags one unreliable. */
  ppi: Float32Array;
}
export type SampleKind = keyof SampleValues;
/** PMD streams carry the device clock's times too. */
type PmdKind = 'ecg' | 'acc' | 'ppg' | 'gyro' | 'magn';

type SampleBatchOf<K extends SampleKind> = {
  kind: K;
  /** Host seconds, one per sample. */
  times: Float64Array;
  values: SampleValues[K];
  /** The wearable's name. */
  device: string;
} & (K extends PmdKind
  ? { /** The device clock's seconds (Unix epoch), one per sample. */ deviceTimes: Float64Array }
  : { deviceTimes?: undefined }) & (K extends 'ppi'
  ? {
    /** The device's own fields per pulse: interval and error estimate in ms, heart rate bpm, flags 0 / 1. */
    ppiMs: Uint16Array; hr: Uint16Array; errorEstimate: Uint16Array;
    blocker: Uint8Array; skinContact: Uint8Array; skinContactSupported: Uint8Array;
    /** Pulses of 0 ms in the frame: not placeable in time, left out. */
    skipped: number;
  }
  : unknown);
/** One batch of samples; SampleBatch<'ecg'> for one kind, SampleBatch for any (narrow on `kind`). */
export type SampleBatch<K extends SampleKind = SampleKind> = { [P in K]: SampleBatchOf<P> }[K];

/** The events a Wearable dispatches, all CustomEvents; `detail` times are host seconds. */
export interface WearableEventMap {
  /** The first connection is up and every stream started. */
  connect: CustomEvent<{ time: number }>;
  /** The link dropped; reconnecting starts (unless close() was called). */
  disconnect: CustomEvent<{ time: number }>;
  /** A reconnect attempt (1-based) failed; the next one follows after the backoff. */
  'reconnect-failed': CustomEvent<{ attempt: number; error: Error }>;
  /** Marked missing in the assembler: [start, end) host seconds, from the last sample before the drop to the reconnect. */
  gap: CustomEvent<{ start: number; end: number }>;
  /** The link is back (after `gap`); notifications and PMD streams restarted. */
  reconnect: CustomEvent<{ attempt: number; time: number }>;
  /**
   * Bytes a decoder rejected (a BluetoothDecodeError, code DECODE_ERROR: that notification is
   * skipped, the stream goes on), or SensorformerError BLUETOOTH_DISCONNECTED after the last
   * reconnect attempt failed (the session is over).
   */
  error: CustomEvent<{ error: SensorformerError | Error }>;
}
export type WearableEventType = keyof WearableEventMap;

export class Wearable extends EventTarget {
  /** The device's name (or 'wearable'). */
  readonly name: string;
  readonly assembler: WindowAssembler;
  /** Device-to-host clock estimate: offset (s), drift (ppm), ready once fitted. */
  /** connectionInterval: s, NaN until the arrival times show one; driftBounds: [lo, hi] ppm or null (ClockAligner). */
  readonly clock: { offset: number; drift: number; ready: boolean; connectionInterval: number; driftBounds: [number, number] | null };
  /** The kinds of samples seen so far. */
  readonly kinds: Set<SampleKind>;
  /** Body Sensor Location ('chest', 'wrist', ...), null when the device has none. */
  location: BodySensorLocation | null;
  /** Battery level in % (read at connection), null when the device has none. */
  battery: number | null;
  /** Host time now, in seconds (the clock the samples are stamped with). */
  now(): number;
  /** Adds a taker of every sample batch and gap mark the assembler gets (a SessionFeeder); returns its remover. */
  addSink(sink: SampleSink): () => void;
  /** Batches of one kind as they arrive; ends when `signal` aborts or close() is called. */
  samples<K extends SampleKind>(kind: K, options?: { signal?: AbortSignal }): AsyncIterableIterator<SampleBatch<K>>;
  /** Ends the session: no reconnects, every samples() iterator finishes. */
  close(): Promise<void>;
  addEventListener<K extends WearableEventType>(type: K, listener: (this: Wearable, event: WearableEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends WearableEventType>(type: K, listener: (this: Wearable, event: WearableEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

/** Polar PMD accelerometer settings (a start command's settings). */
export interface PmdAccSettings {
  /** Hz: 25, 50, 100 or 200 on an H10 (default 50). */
  sampleRate: number;
  /** Bits (default 16). */
  resolution?: number;
  /** ± G: 2, 4 or 8 on an H10 (default 8). */
  range?: number;
  channels?: number;
}

export interface ConnectOptions {
  /** navigator.bluetooth by default; the simulator, a replay or record()'s wrapper work the same. */
  bluetooth?: BluetoothLike;
  /** requestDevice filters (default DEFAULT_FILTERS; one kind of device: DEVICE_FILTERS.strap, ...). */
  filters?: BluetoothFilter[];
  /** Host clock (default: the real one); a VirtualClock in tests. */
  clock?: Clock;
  /** Which model stream each kind feeds (default DEFAULT_STREAMS, acc at pmd.acc.sampleRate). */
  streams?: { [id in WearableStreamId]?: StreamSpec };
  /** Share one assembler across devices (default: a new one). */
  assembler?: WindowAssembler;
  /**
   * PMD streams to start when the device offers them. Each: false (off), true (the defaults) or
   * settings (asked as given; a refusal is BLUETOOTH_PMD). Defaults: ECG on; ACC 50 Hz 16 bit 8 G;
   * PPG 55 Hz 22 bit 4 channels; gyroscope 52 Hz 16 bit 2000 dps; magnetometer 50 Hz 16 bit 50 G
   * (a refused default is retried with the device's offer); PPI off.
   */
  pmd?: {
    ecg?: boolean; acc?: boolean | PmdAccSettings; ppg?: boolean | PmdStartSettings; gyro?: boolean | PmdStartSettings;
    magnetometer?: boolean | PmdStartSettings; ppi?: boolean;
  };
  /** Attempt k waits initialDelayMs x factor^(k-1) (defaults: 6 retries, 2000 ms, factor 2). */
  reconnect?: { retries?: number; initialDelayMs?: number; factor?: number };
  /** Takers of samples and gap marks from the first notification on (feedSession's `sink`). */
  sinks?: SampleSink[];
}

/** What Wearable.addSink takes: every batch pushed to the assembler and every gap it marks. */
export interface SampleSink {
  /** deviceTimes: the device clock's seconds of PMD samples, else null. */
  push(id: WearableStreamId, times: Float64Array, values: Float32Array, spec: StreamSpec | undefined, deviceTimes: Float64Array | null): void;
  markGap(t0: number, t1: number, ids: WearableStreamId[]): void;
}
/**
 * Asks the user to pick a wearable (in browsers from a click), connects, starts every stream it
 * offers. Rejects with BLUETOOTH_UNAVAILABLE (BluetoothUnavailableError), BLUETOOTH_NO_DEVICE
 * (chooser cancelled), BLUETOOTH_FAILED (requestDevice failed otherwise) or BLUETOOTH_PMD (a
 * PMD stream did not start).
 */
export function connectWearable(options?: ConnectOptions): Promise<Wearable>;
export const DEVICE_FILTERS: Readonly<{ strap: BluetoothFilter[]; thermometer: BluetoothFilter[]; oximeter: BluetoothFilter[] }>;
export const DEFAULT_FILTERS: BluetoothFilter[];
export const DEFAULT_STREAMS: Readonly<Record<DefaultStreamId, StreamSpec>>;
/** The service and characteristic UUIDs the device layer uses (lowercase 128-bit strings). */
export const UUIDS: Readonly<Record<
  | 'heartRate' | 'heartRateMeasurement' | 'bodySensorLocation' | 'battery' | 'batteryLevel' | 'thermometer'
  | 'temperatureMeasurement' | 'pulseOximeter' | 'plxContinuous' | 'pmd' | 'pmdControl' | 'pmdData', string>>;

// --- assembly (assembler.js) -----------------------------------------------------------------

/** How a regular stream's slice was timed (StreamBuffer.timing). */
export interface SliceTiming {
  /** The window's rate: fitted to the samples (`measured`), else the declared one. */
  rateHz: number;
  declaredRateHz: number;
  startTime: number;
  /** Seconds: every sample k of the slice was measured within this of startTime + k / rateHz. */
  error: number;
  measured: boolean;
  /** The fitted rate was moved to the edge of the declared rate's bucket (rateBucketEdgesHz). */
  clamped: boolean;
  /** Samples the grid was fitted to. */
  samples: number;
}

/** Times: finite host seconds; values: numbers, null or NaN = missing. */
type PushValues = ArrayLike<number | null>;

export class StreamBuffer {
  constructor(spec: StreamSpec);
  readonly sensor: number;
  readonly modality: string;
  readonly placement: string;
  readonly rateHz: number | null;
  readonly capacitySeconds: number;
  /** Number of samples held. */
  readonly size: number;
  /** Samples not stored, by reason. */
  readonly dropped: { duplicates: number; expired: number; overflow: number };
  /** Oldest / newest sample time held (NaN when empty). */
  readonly oldest: number;
  readonly newest: number;
  /** Marked gaps within the retained span, [t0, t1) pairs. */
  readonly gaps: Array<[number, number]>;
  readonly coveredFrom: number;
  readonly coveredUntil: number;
  push(times: ArrayLike<number>, values: PushValues): this;
  markGap(t0: number, t1: number): this;
  /** True when a sample lies in [t0, t1). */
  hasData(t0: number, t1: number): boolean;
  /** The model's stream for [t0, t1): regular (rateHz, startTime) or event-driven (timestamps). */
  slice(t0: number, t1: number): Stream;
  /** null for an event stream or an empty slice. */
  timing(t0: number, t1: number): SliceTiming | null;
}
export class WindowAssembler {
  /** rateBucketEdgesHz: a model's info.inputs.rateBucketEdgesHz, for every stream added. */
  constructor(options?: { rateBucketEdgesHz?: readonly number[] | null });
  /** INVALID_ARGUMENT when `id` exists already. */
  add(id: string, spec: StreamSpec): StreamBuffer;
  get(id: string): StreamBuffer | undefined;
  readonly ids: string[];
  /** Newest covered time over all streams (-Infinity when nothing was pushed). */
  readonly horizon: number;
  push(id: string, times: ArrayLike<number>, values: PushValues): this;
  /** Marks [t0, t1) missing in the given streams (default: all). */
  markGap(t0: number, t1: number, ids?: string[] | null): this;
  /** The window [end - seconds, end); referenceTime = its start. */
  window(options: { end: number; seconds: number }): SensorWindow;
  /** Every window of `seconds` ending `hop` apart that is complete up to horizon - latency, since the last call. */
  hop(options: { seconds: number; hop: number; latency?: number }): SensorWindow[];
}

// --- time (clock.js) -------------------------------------------------------------------------

export interface ClockAlignerOptions {
  binSeconds?: number;
  historySeconds?: number;
  minDriftSpanSeconds?: number;
  readySeconds?: number;
  maxDriftPpm?: number;
  driftPriorPpm?: number;
  wanderSeconds?: number;
  maxDelaySeconds?: number;
  lateSeconds?: number;
  persistSeconds?: number;
  negativeToleranceSeconds?: number;
  /** The Bluetooth connection interval (s) bounding a punctual delivery's delay; 'auto' (default): found in the arrival times; null: not used. */
  connectionIntervalSeconds?: number | 'auto' | null;
  /** Host timestamp tolerance against the connection-event grid (s, default 0.0005). */
  intervalToleranceSeconds?: number;
}
/** Maps a device clock onto host time: offset + drift fitted on the lower envelope of delivery delays. */
export class ClockAligner {
  constructor(options?: ClockAlignerOptions);
  /** residual: host time minus the fit before this pair (NaN for the first); jumped: a clock jump reset the history. */
  observe(deviceTime: number, hostTime: number): { residual: number; jumped: boolean };
  toHost(deviceTime: number): number;
  toHost(deviceTimes: ArrayLike<number>): Float64Array;
  toDevice(hostTime: number): number;
  readonly offset: number;
  readonly drift: number;
  readonly ready: boolean;
  readonly jumps: number;
  /** The connection interval in use (s): the option's, or the one found ('auto'); NaN when none. */
  readonly connectionInterval: number;
  /** [lo, hi] ppm: the drifts the connection-event bounds allow; null when not in use. */
  readonly driftBounds: [number, number] | null;
  reset(): void;
}
/** Beat times from heart-rate notifications' RR intervals. */
export class BeatTimeline {
  constructor(options?: { tolerance?: number; duplicateWindow?: number });
  /** Time of the last beat returned (null before the first). */
  readonly lastBeat: number | null;
  push(hostTime: number, rrIntervals: ArrayLike<number> | null | undefined): {
    times: Float64Array; rr: Float64Array; reanchored: boolean; duplicate: boolean; shift: number; clamped: number; skipped: number;
  };
  reset(): void;
}

// --- decoders (decoders.js) ------------------------------------------------------------------

/** Bytes as Web Bluetooth gives them (characteristic.value), or copied. */
export type BytesInput = DataView | ArrayBufferView | ArrayBuffer;
/** Why an IEEE-11073 SFLOAT / FLOAT carried no number. */
export type ReservedValue = 'nan' | 'nres' | '+inf' | '-inf' | 'rfu';
export interface IeeeFloat { value: number; missing: ReservedValue | null }

export interface HeartRateMeasurement {
  /** Beats per minute. */
  heartRate: number;
  contact: 'detected' | 'not-detected' | 'unsupported';
  /** kJ, when the flags announce it. */
  energyExpended: number | null;
  /** Seconds, oldest first. */
  rrIntervals: number[];
}
export type BodySensorLocation = 'other' | 'chest' | 'wrist' | 'finger' | 'hand' | 'ear-lobe' | 'foot' | 'reserved';
/** A Date Time field; 0 = unknown for year, month, day. */
export interface GattDateTime { year: number; month: number; day: number; hours: number; minutes: number; seconds: number }
export interface TemperatureMeasurement {
  /** °C (converted when the device sends °F); NaN when missing. */
  celsius: number;
  unit: 'celsius' | 'fahrenheit';
  /** In `unit`. */
  value: number;
  missing: ReservedValue | null;
  time: GattDateTime | null;
  type: number | null;
}
export interface PlxContinuousMeasurement {
  /** %; NaN when `missing.spo2` says why. */
  spo2: number;
  /** Beats per minute. */
  pulseRate: number;
  /** Field ('spo2', 'pulseRate', 'fast.spo2', 'slow.pulseRate', 'pulseAmplitudeIndex', ...) -> why it is NaN. */
  missing: Partial<Record<string, ReservedValue>>;
  fast: { spo2: number; pulseRate: number } | null;
  slow: { spo2: number; pulseRate: number } | null;
  measurementStatus: number | null;
  deviceStatus: number | null;
  pulseAmplitudeIndex: number | null;
}
export interface RscMeasurement {
  /** m/s */
  speed: number;
  /** Per minute. */
  cadence: number;
  /** m */
  strideLength: number | null;
  /** m */
  totalDistance: number | null;
  running: boolean;
}
export interface PmdFeatures { ecg: boolean; ppg: boolean; acc: boolean; ppi: boolean; gyro: boolean; magnetometer: boolean }
export type PmdMeasurementType = 'ecg' | 'ppg' | 'acc' | 'ppi' | 'gyro' | 'magnetometer';
export interface PmdStartSettings { sampleRate?: number | null; resolution?: number | null; range?: number | null; channels?: number | null }
export interface PmdControlResponse {
  opCode: number;
  type: number;
  status: number;
  ok: boolean;
  /** Successful get-settings responses only; every setting an array (empty when absent). */
  settings: { sampleRate: number[]; resolution: number[]; range: number[]; rangeMilliunit: number[]; channels: number[]; factor: number[] } | null;
  /** Successful start responses only: the bytes after the "more" byte. */
  parameters?: Uint8Array;
  /** Successful start responses only: a float32 scale factor when 4+ parameter bytes came, else null. */
  factor?: number | null;
}
interface PmdFrameBase {
  /** u64 ns since 2000-01-01 on the device clock, of the frame's last sample. */
  timestamp: bigint;
  /** The same instant in Unix seconds (device clock). */
  deviceTime: number;
  compressed: boolean;
  frameType: number;
}
export interface PmdEcgFrame extends PmdFrameBase { type: 'ecg'; samples: Int32Array; payload?: undefined }
export interface PmdAccFrame extends PmdFrameBase {
  type: 'acc';
  /** Int16Array up to 16-bit values, else Int32Array; Float64Array when scaled by options.accFactor. */
  samples: { x: Int16Array | Int32Array | Float64Array; y: Int16Array | Int32Array | Float64Array; z: Int16Array | Int32Array | Float64Array };
  payload?: undefined;
}
/** Gyroscope (dps with the factor) or magnetometer (G with the factor): raw counts without one. */
export interface PmdMotionFrame extends PmdFrameBase {
  type: 'gyro' | 'magnetometer';
  samples: { x: Int16Array | Int32Array | Float64Array; y: Int16Array | Int32Array | Float64Array; z: Int16Array | Int32Array | Float64Array };
  payload?: undefined;
}
/** PPG: raw photodiode counts of three channels and the ambient light. */
export interface PmdPpgFrame extends PmdFrameBase { type: 'ppg'; samples: { ppg0: Int32Array; ppg1: Int32Array; ppg2: Int32Array; ambient: Int32Array }; payload?: undefined }
/** PPI: one entry per pulse; hr bpm, ppi and errorEstimate ms, flags 0 / 1 (blocker: unreliable). */
export interface PmdPpiFrame extends PmdFrameBase {
  type: 'ppi';
  samples: { hr: Uint16Array; ppi: Uint16Array; errorEstimate: Uint16Array; blocker: Uint8Array; skinContact: Uint8Array; skinContactSupported: Uint8Array };
  payload?: undefined;
}
/** A measurement type or sample format this decoder does not decode: the payload, undecoded. */
export interface PmdRawFrame extends PmdFrameBase { type: PmdMeasurementType | number; samples: null; payload: Uint8Array }
export type PmdFrame = PmdEcgFrame | PmdAccFrame | PmdMotionFrame | PmdPpgFrame | PmdPpiFrame | PmdRawFrame;

/**
 * Pure decoders of GATT characteristic values and the Polar PMD commands. Malformed bytes throw
 * BluetoothDecodeError (DECODE_ERROR); arguments that cannot be encoded, INVALID_ARGUMENT.
 */
export namespace decoders {
  /** A 16-bit SFLOAT word (0-0xFFFF). */
  export function decodeSfloat(u16: number): IeeeFloat;
  /** A 32-bit FLOAT word (0-0xFFFFFFFF). */
  export function decodeFloat(u32: number): IeeeFloat;
  /** Heart Rate Measurement 0x2A37. */
  export function decodeHeartRate(input: BytesInput): HeartRateMeasurement;
  /** Body Sensor Location 0x2A38. */
  export function decodeBodySensorLocation(input: BytesInput): { code: number; location: BodySensorLocation };
  /** Temperature Measurement 0x2A1C. */
  export function decodeTemperature(input: BytesInput): TemperatureMeasurement;
  /** PLX Continuous Measurement 0x2A5F. */
  export function decodePlxContinuous(input: BytesInput): PlxContinuousMeasurement;
  /** Battery Level 0x2A19 (0-100 %). */
  export function decodeBattery(input: BytesInput): { level: number };
  /** RSC Measurement 0x2A53. */
  export function decodeRsc(input: BytesInput): RscMeasurement;
  /** Polar PMD measurement type codes (the features bitmask's bit numbers). */
  export const PMD_MEASUREMENT_TYPES: Readonly<{ ecg: 0; ppg: 1; acc: 2; ppi: 3; gyro: 5; magnetometer: 6 }>;
  /** A PMD control point read (0x0F, features bitmask). */
  export function decodePmdFeatures(input: BytesInput): PmdFeatures;
  /** type: a measurement type code 0-255 or its name. */
  export function encodePmdGetSettings(type: number | PmdMeasurementType): Uint8Array;
  export function encodePmdStop(type: number | PmdMeasurementType): Uint8Array;
  export function encodePmdStart(type: number | PmdMeasurementType, settings?: PmdStartSettings): Uint8Array;
  /** A PMD control point indication (F0 op type status ...). */
  export function decodePmdControlResponse(input: BytesInput): PmdControlResponse;
  /**
   * A PMD data frame. resolution: the stream's resolution setting in bits (1-32), needed for
   * delta-compressed frames (default ECG 14, PPG 22, ACC / gyro / magnetometer 16); factor (or its
   * older name accFactor): scales ACC, gyro and magnetometer counts to physical units.
   */
  export function decodePmdData(input: BytesInput, options?: { resolution?: number | null; factor?: number | null; accFactor?: number | null }): PmdFrame;
}

// --- recording and replay (recording.js, session.js) -------------------------------------------

/**
 * A Polar Sensor Logger export (readPolarLogger's result, from 'sensorformer') as the text of a
 * recording (.sfrec): the notifications a live device would have sent for its samples (PMD delta
 * frames timestamped with the sensor times, heart rate, PPI), for replay() and the device layer.
 * A GYRO / MAGN file whose values are not multiples of one step is BAD_FORMAT.
 */
export function exportToRecording(result: PolarLoggerResult<unknown>, options?: { name?: string; id?: string }): string;

export const RECORDING_FORMAT: 'sensorformer-recording-1';

/** record()'s wrapper: use it as the original navigator.bluetooth. */
export interface RecordingBluetooth<B extends BluetoothLike> extends BluetoothLike {
  getAvailability(): Promise<boolean>;
  getDevices(): Promise<unknown[]>;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
  /** The object being recorded. */
  readonly unwrapped: B;
}
export interface Recorder<B extends BluetoothLike> {
  readonly bluetooth: RecordingBluetooth<B>;
  /** The recording so far (JSON Lines, format RECORDING_FORMAT). */
  text(): string;
  readonly lineCount: number;
  /** Ends the recording (listeners and wrappers removed) and returns its text. */
  stop(): string;
}
/** Records what the page receives from `bluetooth` (INVALID_ARGUMENT without requestDevice()). */
export function record<B extends BluetoothLike>(bluetooth: B, options?: { clock?: Clock | null }): Recorder<B>;

interface RecordingEventBase {
  /** Line number in the text (1 = the header). */
  line: number;
  /** Host seconds. */
  t: number;
  /** A device id of the header. */
  dev: string;
}
export interface RecordingLinkEvent extends RecordingEventBase { kind: 'connect' | 'disconnect' }
export interface RecordingValueEvent extends RecordingEventBase {
  kind: 'notification' | 'read';
  /** Lowercase 128-bit UUIDs. */
  svc: string;
  chr: string;
  /** The bytes, lowercase hex and decoded. */
  hex: string;
  bytes: Uint8Array;
}
export type RecordingEvent = RecordingLinkEvent | RecordingValueEvent;
export interface Recording {
  header: { format: 'sensorformer-recording-1'; created?: string; t0?: number; devices: Array<{ id: string; name?: string | null }> };
  events: RecordingEvent[];
}
/** Validates a recording; BAD_FORMAT (with `line`) names the first bad line. */
export function parseRecording(text: string): Recording;

export interface ReplayOptions {
  /** > 0 (default 1); Infinity: as fast as possible. */
  speed?: number;
  clock?: Clock | null;
  /** true (default): playback starts now; false: call start(). */
  autoStart?: boolean;
  /** PMD data flows only after the client started that measurement type (default true). */
  gatePmd?: boolean;
  /** getAvailability()'s answer (default true); false makes requestDevice fail. */
  available?: boolean;
  chooser?: ((candidates: FakeDevice[], options: RequestDeviceOptions) => FakeDevice | null) | null;
  connectLatencyMs?: number;
  gattLatencyMs?: number;
  staleAttributes?: boolean;
  overwriteAfterDispatch?: boolean;
  strictUuids?: boolean;
}
/** A fake navigator.bluetooth playing a recording. */
export interface ReplayBluetooth extends FakeBluetooth {
  readonly recording: Recording;
  /** Resolves when the last event was played. */
  readonly finished: Promise<void>;
  /** Seconds of playback (recorded span / speed). */
  readonly duration: number;
  /** Events played so far. */
  readonly position: number;
  start(): void;
  close(): void;
}
export function replay(text: string | Recording, options?: ReplayOptions): ReplayBluetooth;

/**
 * Every window of a recording, through the same device layer as a live wearable. Windows of
 * `seconds` (default 10) every `hop` (default 5); more than `maxWindows` (default 100,000) is
 * RESOURCE_EXHAUSTED before anything is replayed.
 */
export function windowsFromRecording(text: string, options?: {
  seconds?: number;
  hop?: number;
  streams?: { [id in WearableStreamId]?: StreamSpec };
  maxWindows?: number;
}): Promise<{ windows: SensorWindow[]; ends: number[]; devices: string[] }>;

// --- feeding a streaming session (feeder.js) ---------------------------------------------------

/** One stream's part of a chunk, as the feeder makes it (docs/model.md "Streaming sessions"). */
export interface FeederChunkStream {
  /** The description, in the stream's first part only. */
  sensor?: number;
  modality?: string;
  placement?: string;
  /** Regular streams: the session's rate (the measured rate x (1 + rateMargin)). */
  rateHz?: number;
  /** Regular streams: the time of this part's first sample (later than expected: a gap). */
  startTime?: number;
  /** Event streams: one per sample. */
  timestamps?: Float64Array;
  /** NaN = missing. */
  samples: Float32Array;
  /** Watermark: nothing of this stream before it is still to come. */
  until?: number;
}
export interface FeederChunk {
  streams: (FeederChunkStream | null)[];
}

/** Per stream: what was received and given, and how the grid fits (the header of feeder.js). */
export interface FeederStreamStats {
  /** 'derived': a beat stream (FeederStreamSpec.from); received 0, given / missing count its values. */
  kind: 'regular' | 'event' | 'derived';
  /** Session stream index (-1 before the stream is declared). */
  index: number;
  received: number;
  /** Values given (not NaN). */
  given: number;
  /** Missing samples given (NaN values, slots of holes and gaps). */
  missing: number;
  /** Received, not given yet. */
  pending: number;
  /** Samples earlier than the session's frontier when their stream joined: not given. */
  beforeFrontier: number;
  /** Regular streams. */
  declaredRateHz?: number;
  measuredRateHz?: number | null;
  rateHz?: number | null;
  startTime?: number | null;
  reanchors?: number;
  /** Largest (measured time - slot time) over the samples given, s (at most half a period). */
  maxLag?: number;
  /** Largest (slot time - measured time), s. */
  maxLead?: number;
  /** Event streams: events moved to a watermark already given, and the largest move (s). */
  retimed?: number;
  maxRetime?: number;
  watermark?: number | null;
  /** Derived beat streams: the stream it reads, the beats given, and those found after their watermark (BeatTracker.late). */
  from?: string;
  beats?: number;
  late?: number;
}

/** A model's config, as far as the feeder reads it (model.config). */
export interface FeederModelConfig {
  modalities: { name: string }[];
  placements: string[];
  n_sensors: number;
}

/** A stream the feeder takes: StreamSpec plus a unit factor. */
export interface FeederStreamSpec extends StreamSpec {
  /** Every value is multiplied by it before the session gets it (default 1; finite, non-zero):
   * a model trained in other units than the device sends (a Polar H10's ECG is in µV, the AF
   * model takes mV: 1e-3). */
  scale?: number;
  /** Derived, not received: the id of a regular ECG stream added before this one; the stream is
   * its beat stream (modality 'beat', rateHz null: BeatTracker over the ECG the session is given). */
  from?: string;
}

export interface SessionFeederOptions {
  /** id -> stream, added up front. */
  streams?: { [id: string]: FeederStreamSpec };
  /** Seconds the event watermarks trail "now" and a hole waits for a late frame (default 1.5). */
  lateness?: number;
  /** Per stream id (default { rr: 4 }). */
  streamLateness?: { [id: string]: number };
  /** Seconds a regular stream is held before its rate is measured (default 1.5). */
  measureSeconds?: number;
  /** The session's rate = measured x (1 + rateMargin) (default 5e-4; below 0.1). */
  rateMargin?: number;
  /** Streams the model does not know are left out. */
  config?: FeederModelConfig | null;
}

/** Samples and gap marks in, session chunks out (docs/bluetooth.md "feeder.js — feeding a streaming session"). */
export class SessionFeeder {
  constructor(options?: SessionFeederOptions);
  add(id: string, spec: FeederStreamSpec): this;
  push(id: string, times: ArrayLike<number>, values: ArrayLike<number | null>, spec?: FeederStreamSpec, deviceTimes?: ArrayLike<number> | null): this;
  markGap(t0: number, t1: number, ids?: string[] | null): this;
  /** The chunks to push, in order, for what arrived up to host time `now` ([] while holding). */
  flush(options: { now: number; final?: boolean; frontier?: number | null }): FeederChunk[];
  readonly ids: string[];
  /** Session stream index -> stream id. */
  readonly streamIds: string[];
  readonly stats: { [id: string]: FeederStreamStats };
  readonly leftOut: { [id: string]: FeederStreamSpec & { received: number } };
}
export const FEEDER_DEFAULTS: Readonly<{ lateness: number; streamLateness: Readonly<{ [id: string]: number }>; measureSeconds: number; rateMargin: number }>;

/** What feedSession pushes into: model.stream() or a Worker model's stream() (push may be async). */
export interface SessionLike<U> {
  push(chunk: FeederChunk): U | Promise<U>;
}
export interface Feeding {
  readonly feeder: SessionFeeder;
  readonly sink: SampleSink;
  attach(wearable: Wearable): void;
  readonly stats: { [id: string]: FeederStreamStats };
  /** The frontier of the last push (null before). */
  readonly frontier: number | null;
  /** The error that stopped feeding (null while it goes on). */
  readonly error: SensorformerError | Error | null;
  /** Pushes what has arrived; resolves when the pushes are done. */
  flush(): Promise<void>;
  /** Detaches, pushes the rest with every watermark at "now"; resolves when the last push is done. */
  close(): Promise<void>;
}
/**
 * Feeds a session as notifications arrive (chunks flushed at the end of each notification's task,
 * pushed one at a time, in order). `wearables` may be [] with `clock` (pass `feeding.sink` to
 * connectWearable({ sinks })).
 */
export function feedSession<U>(wearables: Wearable | Wearable[], session: SessionLike<U>, options?: SessionFeederOptions & {
  clock?: Clock | null;
  feeder?: SessionFeeder;
  onUpdate?: (update: U, chunk: FeederChunk) => void;
  onError?: (error: SensorformerError | Error) => void;
}): Feeding;

/**
 * A recording replayed into a session through the device layer and the feeder (virtual clock);
 * every watermark at the end of the recording when it ends. `between` runs after each step.
 */
export function replayIntoSession<U>(text: string, session: SessionLike<U>, options?: SessionFeederOptions & {
  streams?: { [id in WearableStreamId]?: FeederStreamSpec };
  onUpdate?: (update: U, chunk: FeederChunk) => void;
  between?: () => void | Promise<void>;
}): Promise<{ stats: { [id: string]: FeederStreamStats }; leftOut: { [id: string]: FeederStreamSpec & { received: number } }; devices: string[] }>;

/**
 * A Polar Sensor Logger export (readPolarLogger's result) played into a session at its recorded
 * pace on a virtual clock, through the feeder as a live device's samples would be (the CLI's
 * `stream` on an export); `placement` for every stream (an export has none). `step`: seconds of
 * recorded time per step (default 1).
 */
export function replayPolarLoggerIntoSession<U>(result: PolarLoggerResult<unknown>, session: SessionLike<U>, options?: SessionFeederOptions & {
  placement?: string;
  step?: number;
  onUpdate?: (update: U, chunk: FeederChunk) => void;
  between?: () => void | Promise<void>;
}): Promise<{ stats: { [id: string]: FeederStreamStats }; leftOut: { [id: string]: FeederStreamSpec & { received: number } } }>;
