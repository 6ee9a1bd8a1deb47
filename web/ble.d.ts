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

export interface StreamSpec { sensor: number; modality: string; placement: string; rateHz: number | null; capacitySeconds?: number }

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
}
export class WindowAssembler {
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

export function createSimulatedBluetooth(options?: Record<string, unknown>): any;
export function createVirtualClock(startSeconds?: number): VirtualClock;
export function createRealClock(): Clock;
export function record(bluetooth: unknown, options?: { clock?: Clock }): { bluetooth: any; stop(): string; text(): string };
export function replay(text: string, options?: { speed?: number; clock?: Clock }): any;
export function parseRecording(text: string): { header: Record<string, unknown>; events: object[] };
export const RECORDING_FORMAT: 'sensorformer-recording-1';
export function windowsFromRecording(text: string, options?: { seconds?: number; hop?: number; streams?: Record<string, StreamSpec> }):
  Promise<{ windows: SensorWindow[]; ends: number[]; devices: string[] }>;
