// Types for sensorformer/ble (docs/bluetooth.md). Hand-written; keep in step with web/src/ble/.
/// <reference lib="esnext.disposable" />
import type { SensorformerError, SensorWindow, Stream } from './index.js';

export interface Clock {
  /** Host time in float64 seconds. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}
export interface VirtualClock extends Clock {
  advance(seconds: number): void;
  advanceAsync(seconds: number): Promise<void>;
}

export interface StreamSpec {
  sensor: number; modality: string; placement: string; rateHz: number | null; capacitySeconds?: number;
  /** A model's config.rate_bucket_edges_hz: keep a measured rate in the declared rate's bucket when that costs < 1/4 period. */
  rateBucketEdgesHz?: number[] | null;
}

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

export class BluetoothDecodeError extends SensorformerError { readonly profile: string; readonly offset: number }
export class BluetoothUnavailableError extends SensorformerError {
  readonly reason: 'no-api' | 'insecure-context' | 'adapter-unavailable' | 'permission-denied';
}

export function bluetoothAvailability(env?: typeof globalThis): { available: boolean; reason?: string; message?: string };

export interface SampleBatch {
  kind: 'ecg' | 'acc' | 'hr' | 'rr' | 'temperature' | 'spo2';
  /** Host seconds. */
  times: Float64Array;
  values: Float32Array | { x: Float32Array; y: Float32Array; z: Float32Array };
  /** PMD streams: the device clock's seconds. */
  deviceTimes?: Float64Array;
  device: string;
}

export class Wearable extends EventTarget {
  readonly name: string;
  readonly assembler: WindowAssembler;
  readonly clock: { offset: number; drift: number; ready: boolean };
  location: string | null;
  battery: number | null;
  now(): number;
  samples(kind: SampleBatch['kind'], options?: { signal?: AbortSignal }): AsyncIterableIterator<SampleBatch>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** navigator.bluetooth by default; the simulator or a replay work the same. */
  bluetooth?: unknown;
  filters?: object[];
  clock?: Clock;
  streams?: Record<string, StreamSpec>;
  assembler?: WindowAssembler;
  pmd?: { ecg?: boolean; acc?: false | { sampleRate: number; resolution: number; range: number } };
  reconnect?: { retries?: number; initialDelayMs?: number; factor?: number };
}
export function connectWearable(options?: ConnectOptions): Promise<Wearable>;
export const DEVICE_FILTERS: { strap: object[]; thermometer: object[]; oximeter: object[] };
export const DEFAULT_FILTERS: object[];
export const DEFAULT_STREAMS: Record<string, StreamSpec>;
export const UUIDS: Record<string, string>;

export class StreamBuffer {
  constructor(spec: StreamSpec);
  push(times: ArrayLike<number>, values: ArrayLike<number>): void;
  markGap(t0: number, t1: number): void;
  slice(t0: number, t1: number): Stream;
  timing(t0: number, t1: number): SliceTiming | null;
}
export class WindowAssembler {
  constructor(options?: { rateBucketEdgesHz?: number[] | null });
  add(id: string, spec: StreamSpec): StreamBuffer;
  get(id: string): StreamBuffer | undefined;
  push(id: string, times: ArrayLike<number>, values: ArrayLike<number>): void;
  markGap(t0: number, t1: number, ids?: string[] | null): void;
  window(options: { end: number; seconds: number }): SensorWindow;
  hop(options: { seconds: number; hop: number; latency?: number }): SensorWindow[];
}

export class ClockAligner {
  constructor(options?: object);
  observe(deviceTime: number, hostTime: number): { residual: number; jumped: boolean };
  toHost(deviceTime: number): number;
  readonly offset: number;
  readonly drift: number;
  readonly ready: boolean;
  reset(): void;
}
export class BeatTimeline {
  push(hostTime: number, rrIntervals: number[]): { times: Float64Array; rr: Float64Array };
}

export const decoders: Record<string, (...args: any[]) => any>;

/** Options of createSimulatedBluetooth; web/src/ble/simulator.js lists every one. */
export interface SimulatedBluetoothOptions {
  seed?: number;
  clock?: Clock;
  devices?: Array<'strap' | 'thermometer' | 'oximeter'>;
  /** The strap's true ECG rate (default 130.35, an H10's; 130 = nominal). */
  ecgRateHz?: number;
  /** True ACC rate per requested rate (default an H10's: 25.54 / 51.07 / 102.15 / 204.3 Hz), or 'nominal'. */
  accRatesHz?: 'nominal' | { 25: number; 50: number; 100: number; 200: number };
  /** Delta-compressed ACC frames 0x80 instead of int16 frames 0x01 (default false). */
  accCompressed?: boolean;
  /** HR flags 0x16 / 0x06 (contact supported + detected) instead of an H10's 0x10 (default false). */
  hrContact?: boolean;
  /** 'h10' (default: 6-byte start responses, 4-byte rejections) or 'short' (every response 5 bytes). */
  pmdResponses?: 'h10' | 'short';
  /** PMD timestamp jitter, +- µs (default 12). */
  pmdTimestampJitterUs?: number;
  [option: string]: unknown;
}
export function createSimulatedBluetooth(options?: SimulatedBluetoothOptions): any;
export function createVirtualClock(startSeconds?: number): VirtualClock;
export function createRealClock(): Clock;
export function record(bluetooth: unknown, options?: { clock?: Clock }): { bluetooth: any; stop(): string; text(): string };
export function replay(text: string, options?: { speed?: number; clock?: Clock }): any;
export function parseRecording(text: string): { header: Record<string, unknown>; events: object[] };
export const RECORDING_FORMAT: 'sensorformer-recording-1';
export function windowsFromRecording(text: string, options?: { seconds?: number; hop?: number; streams?: Record<string, StreamSpec> }):
  Promise<{ windows: SensorWindow[]; ends: number[]; devices: string[] }>;
