// Types for sensorformer/simulator: a simulated navigator.bluetooth whose chest strap, thermometer,
// oximeter and optical armband send the bytes real devices send. Hand-written; keep in step with
// web/src/simulator/devices.js (whose header documents every option) and web/src/simulator/index.js.
import type { Clock, FakeBluetooth, FakeDevice, RequestDeviceOptions } from './ble.js';

export { createRealClock, createVirtualClock } from './ble.js';
export type { Clock, RealClock, VirtualClock } from './ble.js';

/** 'armband' (an optical Verity Sense-like sensor: web/src/simulator/armband.js) only when asked for in `devices`. */
export type SimulatedDeviceKey = 'strap' | 'thermometer' | 'oximeter' | 'armband';
export const DEVICE_KEYS: readonly SimulatedDeviceKey[];
/** One value for every device, or per device (the others keep their defaults). */
export type PerDevice<T> = T | { strap?: T; thermometer?: T; oximeter?: T; armband?: T };
/** A device by key, id or name. */
export type SimulatedDeviceRef = SimulatedDeviceKey | string;
export type Activity = 'rest' | 'walk' | 'run';

/** True ACC rate (Hz) per requested rate, as measured on a real H10: 25.54 / 51.07 / 102.15 / 204.3. */
export const H10_ACC_RATES_HZ: Readonly<{ 25: number; 50: number; 100: number; 200: number }>;

/**
 * Options of createSimulatedBluetooth. Times are seconds since the simulation start unless noted.
 * Any other key (a typo such as `seeed`), here or in a nested object, is INVALID_ARGUMENT.
 */
export interface SimulatedBluetoothOptions {
  /** Every random choice: same seed and options -> same bytes (default 1). */
  seed?: number | string;
  /** { now(), setTimeout, clearTimeout }: createVirtualClock() in tests (default: the real clock). */
  clock?: Clock;
  /** Host time of t = 0 (default clock.now()). */
  start?: number;
  /** Which devices exist (default strap, thermometer, oximeter). */
  devices?: SimulatedDeviceKey[];
  /** Device names (defaults 'Polar H10 SIM', 'Thermo SIM', 'Oxi SIM', 'Polar Sense SIM'). */
  names?: { strap?: string; thermometer?: string; oximeter?: string; armband?: string };
  /** Crystal drift in ppm (defaults strap 20, thermometer -15, oximeter 8, armband -12). */
  driftPpm?: PerDevice<number>;
  /** Device time - true time, s (defaults strap 0.35, thermometer -1.2, oximeter 0.6, armband 1.7). */
  clockOffset?: PerDevice<number>;
  /** BLE connection interval, 7.5-4000 ms (default 15). */
  connectionIntervalMs?: PerDevice<number>;
  /** Probability of a late connection event (default 0.02), up to maxDelayIntervals (default 4) late. */
  delayProbability?: number;
  maxDelayIntervals?: number;
  /** Each notification lost with this probability (default 0). */
  dropoutProbability?: number;
  /** Link losses: a list, or random ones at ratePerHour (duration s or [min, max], over horizonSeconds, default 21600). */
  disconnects?:
    | Array<{ device?: SimulatedDeviceRef; at: number; duration: number }>
    | { ratePerHour?: number; duration?: number | [number, number]; devices?: SimulatedDeviceRef[]; horizonSeconds?: number };
  /** PMD frames duplicated or delivered out of order (at times or with a probability); device clock jumps. */
  faults?: {
    duplicatePmd?: number[];
    duplicatePmdProbability?: number;
    reorderPmd?: number[];
    reorderPmdProbability?: number;
    /** `to`: device time in s since 2000-01-01 (default 0); or `by` s. */
    clockJumps?: Array<{ device?: SimulatedDeviceRef; at: number; to?: number; by?: number }>;
  };
  /** Schedule override: consecutive segments by duration, or from start; the last one lasts forever. */
  activities?: Array<{ activity: Activity; duration?: number; start?: number }> | null;
  /** Oximeter finger-off episodes (override), else random at fingerOffRatePerMinute (default 0.25). */
  fingerOff?: Array<{ at: number; duration: number }> | null;
  fingerOffRatePerMinute?: number;
  /**
   * Atrial fibrillation episodes (seconds from the start): irregularly irregular RR intervals at a
   * faster rate, no P waves, fibrillatory waves at 4-9 Hz. Default none.
   */
  af?: Array<{ at: number; duration: number }> | null;
  /** The strap's true ECG rate on its own clock (default 130.35, an H10's; 130 = nominal). */
  ecgRateHz?: number;
  /** True ACC rate per requested rate (default H10_ACC_RATES_HZ), or 'nominal' (the requested rate). */
  accRatesHz?: 'nominal' | { 25: number; 50: number; 100: number; 200: number };
  /** Delta-compressed ACC frames 0x80 instead of int16 frames 0x01 (default false). */
  accCompressed?: boolean;
  /** Samples per int16 ACC frame, 1-36 (default 36: a full 229-byte notification). */
  accFrameSamples?: number;
  /** Instead a target ACC frame length in s (delta frames default to 0.25 s). */
  accFrameSeconds?: number;
  /** Samples per delta block (default 16). */
  accDeltaBlockSamples?: number;
  /** HR flags 0x16 / 0x06 (contact supported + detected) instead of an H10's 0x10 (default false). */
  hrContact?: boolean;
  /** 'h10' (default: 6-byte start responses, 4-byte rejections) or 'short' (every response 5 bytes). */
  pmdResponses?: 'h10' | 'short';
  /** PMD timestamp jitter, +- µs, from 0 up to (not including) 1000 (default 12). */
  pmdTimestampJitterUs?: number;
  /** MTU - 3 (default 229). */
  pmdMaxFrameBytes?: number;
  /** Thermometer: indication interval (default 5 s), FLOAT exponent, Date Time field (default true), type byte. */
  thermometer?: { intervalSeconds?: number; exponent?: -1 | -2; timeField?: boolean; type?: number | null };
  /** Battery level, % (defaults strap 87, oximeter 64, armband 72). */
  battery?: PerDevice<number>;
  /** Time connect() takes (default 0). */
  connectLatencyMs?: number;
  /** Time each GATT operation takes (default 0). */
  gattLatencyMs?: number;
  /** Services and characteristics of an ended connection stop working, as in Chrome (default true). */
  staleAttributes?: boolean;
  /** A notification's bytes are inverted after dispatch, as a reused buffer would be (default true). */
  overwriteAfterDispatch?: boolean;
  /** Reject uppercase 128-bit UUID strings as Chrome does (default false). */
  strictUuids?: boolean;
  /** The user's pick in the chooser (default the first candidate; null = cancelled). */
  chooser?: ((candidates: FakeDevice[], options: RequestDeviceOptions) => FakeDevice | null) | null;
  /** getAvailability()'s answer (default true); false makes requestDevice fail. */
  available?: boolean;
}
/** Every key of SimulatedBluetoothOptions, as the runtime checks them. */
export const SIMULATOR_OPTIONS: ReadonlyArray<keyof SimulatedBluetoothOptions>;

export interface SimulatedClockTruth {
  driftPpm: number;
  offset: number;
  connectionIntervalMs: number;
  /** Host time of each jump and its size (s). */
  jumps: Array<{ at: number; delta: number }>;
}
export interface SimulatedPmdFrame {
  type: 'ecg' | 'acc' | 'ppg' | 'gyro' | 'magnetometer';
  count: number;
  /** ns since 2000-01-01 as sent. */
  timestamp: bigint;
  /** The same, Unix s. */
  deviceTime: number;
  /** Device time of the last sample without the timestamp jitter (Unix s). */
  trueDeviceTime: number;
  firstDeviceTime: number;
  /** Device s between samples. */
  spacing: number;
  /** Host s. */
  lastSampleTime: number;
  ready: number;
  /** 'armband' for the armband's frames (the strap's have none). */
  device?: 'armband';
}
/** What really happened, for tests (host times). */
export interface SimulationTruth {
  start: number;
  seed: number | string;
  activityAt(t: number): Activity;
  segments(t0: number, t1: number): Array<{ activity: Activity; start: number; end: number; cadence: number }>;
  heartRateAt(t: number): number;
  /** True beat (R-peak) host times in [t0, t1). */
  beatTimes(t0: number, t1: number): number[];
  /** µV */
  ecgAt(t: number): number;
  /** mG, [x, y, z] */
  accAt(t: number): [number, number, number];
  temperatureAt(t: number): number;
  spo2At(t: number): number;
  fingerOffAt(t: number): boolean;
  /** 'af' or 'sinus' at host time t. */
  rhythmAt(t: number): 'af' | 'sinus';
  /** AF episodes overlapping [t0, t1), host time. */
  afEpisodes(t0: number, t1: number): Array<{ start: number; end: number }>;
  clocks: { strap?: SimulatedClockTruth; thermometer?: SimulatedClockTruth; oximeter?: SimulatedClockTruth; armband?: SimulatedClockTruth };
  /** The armband's signals (host time t), when it exists. */
  armband?: {
    accAt(t: number): number[];
    /** dps */
    gyroAt(t: number): number[];
    /** G */
    magnetometerAt(t: number): number[];
    /** [ppg0, ppg1, ppg2, ambient] counts */
    ppgAt(t: number): number[];
    /** The exact host times the samples of one of its pmdFrames were taken at. */
    sampleHostTimes(frame: SimulatedPmdFrame): Float64Array;
    /** Pulse arrival host times in [t0, t1). */
    pulseTimes(t0: number, t1: number): number[];
    /** True rates (Hz) per requested rate. */
    rates: { acc: Record<number, number>; gyro: Record<number, number>; magnetometer: Record<number, number>; ppg: Record<number, number> };
  };
  /** Unix seconds on a device's clock at host time t (decodePmdData's deviceTime scale). */
  deviceTime(key: SimulatedDeviceKey, t: number): number;
  /** Host time at which a device's clock read `deviceTime` (Unix s). */
  hostTime(key: SimulatedDeviceKey, deviceTime: number): number;
  outages: Array<{ device: SimulatedDeviceKey; start: number; end: number }>;
  faults: Array<{ kind: string; device: string; t: number }>;
  /** Lost notifications. */
  dropped: Array<{ device: string; characteristic: string; t: number }>;
  /** The latest 10-20 thousand PMD frames generated. */
  pmdFrames: SimulatedPmdFrame[];
  /** True device times (Unix s) of a frame's samples, oldest first. */
  pmdSampleTimes(frame: SimulatedPmdFrame): Float64Array;
  /** Per device and characteristic. */
  readonly stats: Partial<Record<SimulatedDeviceKey, Record<string, { generated: number; dropped: number; delivered: number; undelivered: number }>>>;
}

/** Options of createPhysiology (web/src/simulator/physiology.js): the same body as the simulated devices'. */
export interface PhysiologyOptions {
  seed?: number | string;
  /** Activities in order (each `duration` s; the last lasts). Default: a seeded random schedule. */
  activities?: Array<{ activity: Activity; duration?: number; start?: number }> | null;
  /** Atrial fibrillation episodes, seconds from 0. */
  af?: Array<{ at: number; duration: number }> | null;
  /** Finger-off episodes (the oximeter's), seconds from 0; else random at fingerOffRatePerMinute (default 0.25). */
  fingerOff?: Array<{ at: number; duration: number }> | null;
  fingerOffRatePerMinute?: number;
}

/** A simulated person's signals as functions of time (seconds from 0), deterministic for a seed. */
export interface Physiology {
  /** Lead-I-like chest ECG in µV. */
  ecgAt(t: number): number;
  /** True beat (R-peak) times in [t0, t1). */
  beats(t0: number, t1: number): Float64Array;
  /** Heart rate (bpm) from the last 4 RR intervals before t. */
  heartRateAt(t: number): number;
  rhythmAt(t: number): 'af' | 'sinus';
  afEpisodes(t0?: number, t1?: number): Array<{ start: number; end: number }>;
  /** Starts an episode at `at` (or after the beats already drawn); returns it. */
  startAf(episode: { at: number; duration: number }): { start: number; end: number };
}

/** The simulated body alone, without devices or Bluetooth. */
export function createPhysiology(options?: PhysiologyOptions): Physiology;

/** A fake navigator.bluetooth with the simulated devices: pass it as connectWearable({ bluetooth }). */
export interface SimulatedBluetooth extends FakeBluetooth {
  readonly seed: number | string;
  /** Host time of t = 0. */
  readonly start: number;
  readonly devicesByKey: { strap?: FakeDevice; thermometer?: FakeDevice; oximeter?: FakeDevice; armband?: FakeDevice };
  readonly truth: SimulationTruth;
  /**
   * Starts an atrial fibrillation episode of `duration` seconds (default 60) about `after` seconds
   * from now (default 1; later if beats are already drawn past it). Returns it in host time.
   */
  startAf(options?: { duration?: number; after?: number }): { start: number; end: number };
  /** Stops every timer of the simulation (devices stay, but send nothing more). */
  close(): void;
}

/**
 * A simulated navigator.bluetooth. Options that are not an object, and unknown option names, are
 * INVALID_ARGUMENT naming the option and listing the valid ones; out-of-range values (an unknown
 * device, connectionIntervalMs outside 7.5-4000, a malformed activities list, ...) are
 * INVALID_ARGUMENT too, naming the option and its valid range (docs/bad-input.md).
 */
export function createSimulatedBluetooth(options?: SimulatedBluetoothOptions): SimulatedBluetooth;
