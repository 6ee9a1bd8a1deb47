// The device layer: a wearable connected over Web Bluetooth (or the simulated one, or a replayed
// recording: anything shaped like navigator.bluetooth), turned into timestamped sample batches
// and into the model's windows.
//
//   const wearable = await connectWearable({ bluetooth: navigator.bluetooth });
//   for await (const batch of wearable.samples('ecg', { signal })) ...  // { times, values }
//   const window = wearable.assembler.window({ end: wearable.now(), seconds: 10 });
//
// Time: every sample gets a float64 host time in seconds. PMD frames carry the device time of their
// last sample: a per-device ClockAligner maps device time to host time (offset and drift fitted
// on the lower envelope of receive delays), and the frame's samples are spaced by the device's
// own measured rate. Standard GATT profiles have no device time: heart-rate RR intervals rebuild
// beat times (BeatTimeline); other values take their host receive time.
//
// Disconnects: all notifications stop; the layer reconnects with exponential backoff (2 s, 4 s,
// 8 s, ... by default), restarts notifications and PMD streams, and marks the span between the
// last sample before the drop and the first after the reconnect as a gap in the assembler
// (missing, not deleted), announcing it with a 'gap' event.
import { SensorformerError } from '../errors.js';
import { BeatTimeline, ClockAligner } from './clock.js';
import { WindowAssembler } from './assembler.js';
import {
  decodeBattery,
  decodeBodySensorLocation,
  decodeHeartRate,
  decodePlxContinuous,
  decodePmdControlResponse,
  decodePmdData,
  decodePmdFeatures,
  decodeTemperature,
  encodePmdStart,
} from './decoders.js';
import { BluetoothUnavailableError } from './errors.js';

const uuid16 = (n) => `0000${n.toString(16).padStart(4, '0')}-0000-1000-8000-00805f9b34fb`;
export const UUIDS = {
  heartRate: uuid16(0x180d),
  heartRateMeasurement: uuid16(0x2a37),
  bodySensorLocation: uuid16(0x2a38),
  battery: uuid16(0x180f),
  batteryLevel: uuid16(0x2a19),
  thermometer: uuid16(0x1809),
  temperatureMeasurement: uuid16(0x2a1c),
  pulseOximeter: uuid16(0x1822),
  plxContinuous: uuid16(0x2a5f),
  pmd: 'fb005c80-02e7-f387-1cad-8acd2d8df0c8',
  pmdControl: 'fb005c81-02e7-f387-1cad-8acd2d8df0c8',
  pmdData: 'fb005c82-02e7-f387-1cad-8acd2d8df0c8',
};

export const DEFAULT_FILTERS = [
  { services: [UUIDS.heartRate] },
  { services: [UUIDS.thermometer] },
  { services: [UUIDS.pulseOximeter] },
  { namePrefix: 'Polar' },
];
// One filter set per kind of wearable, for pages that connect several (one chooser each).
export const DEVICE_FILTERS = {
  strap: [{ services: [UUIDS.heartRate] }],
  thermometer: [{ services: [UUIDS.thermometer] }],
  oximeter: [{ services: [UUIDS.pulseOximeter] }],
};
const OPTIONAL_SERVICES = [UUIDS.heartRate, UUIDS.battery, UUIDS.thermometer, UUIDS.pulseOximeter, UUIDS.pmd];

// Which model stream each kind of sample feeds (sensor ids, modalities and placements of the demo
// model; override with connectWearable({ streams })).
export const DEFAULT_STREAMS = {
  ecg: { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130 },
  acc_x: { sensor: 1, modality: 'acc_x', placement: 'chest', rateHz: 50 },
  acc_y: { sensor: 1, modality: 'acc_y', placement: 'chest', rateHz: 50 },
  acc_z: { sensor: 1, modality: 'acc_z', placement: 'chest', rateHz: 50 },
  hr: { sensor: 2, modality: 'hr', placement: 'chest', rateHz: null },
  rr: { sensor: 2, modality: 'rr', placement: 'chest', rateHz: null },
  temperature: { sensor: 3, modality: 'temperature', placement: 'wrist', rateHz: null },
  spo2: { sensor: 4, modality: 'spo2', placement: 'finger', rateHz: null },
};

const PMD_ECG = 0, PMD_ACC = 2;
const ECG_NOMINAL_HZ = 130;  // H10: nominal 130 Hz, measured ~130.35 (the device clock decides)
const ECG_RESOLUTION = 14;   // bits: the only ECG resolution an H10 offers

const realClock = {
  now: () => (performance.timeOrigin + performance.now()) / 1000,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id),
};

/**
 * Whether Web Bluetooth can be used here, and if not, why and what to do.
 * @returns {{ available: boolean, reason?: string, message?: string }}
 */
export function bluetoothAvailability(env = globalThis) {
  if (env.isSecureContext === false)
    return { available: false, reason: 'insecure-context', message: 'Web Bluetooth needs a secure context: open the page over https:// or from http://localhost.' };
  if (!env.navigator?.bluetooth) {
    const linux = /Linux/.test(env.navigator?.userAgent ?? '') && !/Android/.test(env.navigator?.userAgent ?? '');
    return {
      available: false,
      reason: 'no-api',
      message: linux && /Chrome\//.test(env.navigator?.userAgent ?? '')
        ? 'Chrome on Linux ships Web Bluetooth behind a flag: enable chrome://flags/#enable-experimental-web-platform-features and restart. The simulated wearable works without it.'
        : 'This browser has no Web Bluetooth (Firefox and Safari do not implement it). Use Chrome or Edge on desktop or Android, or the simulated wearable / a recording.',
    };
  }
  return { available: true };
}

function copyBytes(dataView) {
  // The DataView is only valid while the event handler runs: copy now.
  return new Uint8Array(dataView.buffer.slice(dataView.byteOffset, dataView.byteOffset + dataView.byteLength));
}

// Reads and decodes a characteristic a device may lack (body sensor location, battery): null then.
async function readOptional(service, uuid, decode) {
  try {
    const ch = await service.getCharacteristic(uuid);
    return decode(copyBytes(await ch.readValue()));
  } catch {
    return null;
  }
}

class SampleQueue {
  #items = [];
  #waiters = [];
  #closed = false;
  push(item) {
    if (this.#closed) return;
    const w = this.#waiters.shift();
    if (w) w.resolve({ value: item, done: false });
    else this.#items.push(item);
  }
  close() {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }
  next() {
    if (this.#items.length) return Promise.resolve({ value: this.#items.shift(), done: false });
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiters.push({ resolve }));
  }
}

// Per PMD stream: the device time of every sample of a frame. A PMD frame carries the device time
// of its LAST sample only (Polar's PMD documentation), so the samples before it are placed by a
// spacing:
// - From the second frame on, spacing = (t_frame - t_previous) / n_samples_of_this_frame, the
//   device's own rate between the two timestamps: consecutive frames then abut exactly, and the
//   error of a sample is the timestamps' jitter (~12 µs on an H10), not the rate error. The first
//   frame of a stream (nothing before it) can only use the nominal rate: a real H10 runs 0.26 %
//   (ECG, 130.35 Hz) to 2.2 % (ACC, 51.07 / 204.3 Hz) fast, so its first sample is placed up to
//   ~1.5 ms (ECG) / ~15 ms (ACC 50 Hz) early.
// - The previous frame is the latest one RECEIVED with an earlier device time: a frame delivered
//   late (out of order) is measured against the one before it, and after a device clock that
//   went back the new frames are measured against each other, never against the old ones.
// - That frame must be contiguous with this one, i.e. no sample in between: its gap must be
//   within a quarter sample of n x the last good spacing (H10 jitter: 1/200-1/300 of a sample),
//   or, before any spacing was measured, give a rate within 5 % of the nominal (Polar's H10
//   specification: 130 Hz +- 5 % over -20..+70 °C, +- 2 % at 20..40 °C; H10_ECG_Explained,
//   polar-ble-sdk technical_documentation). Otherwise the frame keeps the last good spacing (or
//   the nominal).
// - Decision, lost frames: a gap of several frames is NOT divided into a spacing. How many
//   samples the lost frames held is unknown (delta frames vary in size) and a wrong guess is off
//   by whole samples, while the last good spacing is only off by the jitter / n (~0.3 µs per
//   sample for ECG) plus the crystal's change of rate since (ppm). The same holds for clock jumps
//   and for a stream restarted after a reconnect (restart() forgets the frames but keeps the
//   spacing: same crystal, same rate).
// - Duplicates (the same timestamp as a frame among the last HISTORY received) return null.
const HISTORY = 16;               // frames remembered for duplicates and late frames (~9 s of ECG)
const FIRST_RATE_TOLERANCE = 0.05; // |rate / nominal - 1| accepted before any spacing was measured
const CONTIGUOUS_SAMPLES = 0.25;   // |gap - n x spacing| accepted after, in samples

export class PmdTimeline {
  constructor(nominalHz) {
    if (!(typeof nominalHz === 'number' && nominalHz > 0 && Number.isFinite(nominalHz))) {
      throw new SensorformerError('INVALID_ARGUMENT', `PmdTimeline: nominalHz must be a positive number, got ${nominalHz}`);
    }
    this.nominalHz = nominalHz;
    this.spacing = null;  // last good measured spacing (device s per sample), null until measured
    this.frames = [];     // [{ t, count }] in arrival order, the last HISTORY
  }

  /** The stream was started again (a reconnect): frames before are no neighbours of new ones. */
  restart() {
    this.frames = [];
  }

  /** Device times (s) of a frame's `count` samples, oldest first; null for a duplicate frame. */
  times(deviceTime, count) {
    const frames = this.frames;
    if (frames.some((f) => f.t === deviceTime)) return null;
    let previous = null;
    for (let i = frames.length - 1; i >= 0 && !previous; i--) if (frames[i].t < deviceTime) previous = frames[i];
    let spacing = this.spacing ?? 1 / this.nominalHz;
    if (previous) {
      const measured = (deviceTime - previous.t) / count;
      const contiguous = this.spacing === null
        ? Math.abs(measured * this.nominalHz - 1) <= FIRST_RATE_TOLERANCE
        : Math.abs(measured - this.spacing) * count <= CONTIGUOUS_SAMPLES * this.spacing;
      if (contiguous) spacing = this.spacing = measured;
    }
    frames.push({ t: deviceTime, count });
    if (frames.length > HISTORY) frames.shift();
    const out = new Float64Array(count);
    for (let i = 0; i < count; i++) out[i] = deviceTime - (count - 1 - i) * spacing;
    return out;
  }
}

export class Wearable extends EventTarget {
  #clock;
  #options;
  #queues = new Map();  // kind -> Set<SampleQueue>
  #closed = false;
  #lastSampleTime = -Infinity;
  #aligner = new ClockAligner();
  #beats = new BeatTimeline();
  #pmd = { ecg: new PmdTimeline(ECG_NOMINAL_HZ), acc: null, accResolution: undefined };
  #listeners = [];
  #fed = new Set();  // assembler stream ids this device has pushed to: the ones its outage hides
  #sinks = new Set();  // more takers of samples and gap marks (a SessionFeeder: feeder.js)

  constructor(device, { clock, options, assembler }) {
    super();
    this.device = device;
    this.name = device.name ?? 'wearable';
    this.#clock = clock;
    this.#options = options;
    this.assembler = assembler;
    this.kinds = new Set();
    this.location = null;
    this.battery = null;
    device.addEventListener('gattserverdisconnected', () => this.#onDisconnect());
  }

  /**
   * Adds a taker of every sample batch and gap mark the assembler gets, as they happen:
   * { push(id, times, values, spec, deviceTimes), markGap(t0, t1, ids) } (deviceTimes: the device
   * clock's seconds of PMD samples, else null; feeder.js feeds a streaming session this way).
   * Returns a function that removes it.
   */
  addSink(sink) {
    if (typeof sink?.push !== 'function' || typeof sink?.markGap !== 'function')
      throw new SensorformerError('INVALID_ARGUMENT', 'Wearable.addSink: a sink needs push(id, times, values, spec, deviceTimes) and markGap(t0, t1, ids)');
    this.#sinks.add(sink);
    return () => this.#sinks.delete(sink);
  }

  #push(id, times, values, deviceTimes) {
    this.assembler.push(id, times, values);
    this.#fed.add(id);
    for (const sink of this.#sinks) sink.push(id, times, values, this.#options.streams[id], deviceTimes);
  }

  #markGap(t0, t1, ids) {
    this.assembler.markGap(t0, t1, ids);
    for (const sink of this.#sinks) sink.markGap(t0, t1, ids);
  }

  /** Host time now, in seconds (the clock the samples are stamped with). */
  now() {
    return this.#clock.now();
  }

  /** Device-to-host clock estimate: { offset (s), drift (ppm), ready }. */
  get clock() {
    return { offset: this.#aligner.offset, drift: this.#aligner.drift, ready: this.#aligner.ready };
  }

  /**
   * Async iterator over batches of one kind ('ecg', 'acc', 'hr', 'rr', 'temperature', 'spo2'):
   * { kind, times: Float64Array (host seconds), values: Float32Array } ({ x, y, z } for 'acc';
   * PMD batches also carry deviceTimes, the device clock's seconds). Ends when the signal
   * aborts or the wearable is closed.
   */
  samples(kind, { signal } = {}) {
    const queue = new SampleQueue();
    if (!this.#queues.has(kind)) this.#queues.set(kind, new Set());
    this.#queues.get(kind).add(queue);
    const stop = () => {
      queue.close();
      this.#queues.get(kind)?.delete(queue);
    };
    if (signal?.aborted) stop();
    signal?.addEventListener('abort', stop, { once: true });
    if (this.#closed) stop();
    return {
      next: () => queue.next(),
      return: () => (stop(), Promise.resolve({ value: undefined, done: true })),
      [Symbol.asyncIterator]() { return this; },
    };
  }

  async start() {
    await this.#connectOnce();
    this.dispatchEvent(new CustomEvent('connect', { detail: { time: this.now() } }));
  }

  /** Ends the session: no reconnects, iterators finish. */
  async close() {
    this.#closed = true;
    for (const set of this.#queues.values()) for (const q of set) q.close();
    for (const [target, type, fn] of this.#listeners.splice(0)) target.removeEventListener(type, fn);
    if (this.device.gatt?.connected) this.device.gatt.disconnect();
  }

  #emit(kind, times, values, deviceTimes = null) {
    if (times.length === 0) return;
    this.#lastSampleTime = Math.max(this.#lastSampleTime, times[times.length - 1]);
    this.kinds.add(kind);
    const spec = this.#options.streams;
    if (kind === 'acc') {
      for (const axis of ['x', 'y', 'z']) if (spec[`acc_${axis}`]) this.#push(`acc_${axis}`, times, values[axis], deviceTimes);
    } else if (spec[kind]) {
      this.#push(kind, times, values, deviceTimes);
    }
    const batch = deviceTimes ? { kind, times, values, deviceTimes, device: this.name } : { kind, times, values, device: this.name };
    for (const q of this.#queues.get(kind) ?? []) q.push(batch);
  }

  #listen(target, type, fn) {
    target.addEventListener(type, fn);
    this.#listeners.push([target, type, fn]);
  }

  async #subscribe(service, characteristicUuid, onBytes) {
    const ch = await service.getCharacteristic(characteristicUuid);
    this.#listen(ch, 'characteristicvaluechanged', (event) => {
      const bytes = copyBytes(event.target.value);
      const hostTime = this.now();
      try {
        onBytes(bytes, hostTime);
      } catch (error) {
        this.dispatchEvent(new CustomEvent('error', { detail: { error } }));
      }
    });
    await ch.startNotifications();
    return ch;
  }

  async #connectOnce() {
    for (const [target, type, fn] of this.#listeners.splice(0)) target.removeEventListener(type, fn);
    const server = await this.device.gatt.connect();
    const services = new Map();
    for (const uuid of OPTIONAL_SERVICES) {
      try {
        services.set(uuid, await server.getPrimaryService(uuid));
      } catch {
        // not on this device
      }
    }
    const hr = services.get(UUIDS.heartRate);
    if (hr) {
      this.location = (await readOptional(hr, UUIDS.bodySensorLocation, decodeBodySensorLocation))?.location ?? null;
      await this.#subscribe(hr, UUIDS.heartRateMeasurement, (bytes, t) => {
        const m = decodeHeartRate(bytes);
        this.#emit('hr', Float64Array.of(t), Float32Array.of(m.heartRate));
        if (m.rrIntervals.length) {
          const beats = this.#beats.push(t, m.rrIntervals);
          this.#emit('rr', beats.times, Float32Array.from(beats.rr));
        }
      });
    }
    const battery = services.get(UUIDS.battery);
    if (battery) this.battery = (await readOptional(battery, UUIDS.batteryLevel, decodeBattery))?.level ?? null;
    const thermo = services.get(UUIDS.thermometer);
    if (thermo) {
      await this.#subscribe(thermo, UUIDS.temperatureMeasurement, (bytes, t) => {
        const m = decodeTemperature(bytes);
        this.#emit('temperature', Float64Array.of(t), Float32Array.of(m.missing ? NaN : m.celsius));
      });
    }
    const oxi = services.get(UUIDS.pulseOximeter);
    if (oxi) {
      await this.#subscribe(oxi, UUIDS.plxContinuous, (bytes, t) => {
        const m = decodePlxContinuous(bytes);
        this.#emit('spo2', Float64Array.of(t), Float32Array.of(m.missing?.spo2 ? NaN : m.spo2));
      });
    }
    const pmd = services.get(UUIDS.pmd);
    if (pmd) await this.#startPmd(pmd);
  }

  async #startPmd(service) {
    const control = await service.getCharacteristic(UUIDS.pmdControl);
    const features = decodePmdFeatures(copyBytes(await control.readValue()));
    // Responses come as indications after the write resolves (as on a real H10): wait for them.
    const waiting = [];
    this.#listen(control, 'characteristicvaluechanged', (e) => {
      const bytes = copyBytes(e.target.value);
      if (bytes[0] !== 0xf0) return;  // a read of the features, not a command response
      waiting.shift()?.(decodePmdControlResponse(bytes));
    });
    const response = () => new Promise((resolve) => {
      const timer = this.#clock.setTimeout(() => resolve(null), 3000);
      waiting.push((r) => {
        this.#clock.clearTimeout(timer);
        resolve(r);
      });
    });
    await control.startNotifications();
    await this.#subscribe(service, UUIDS.pmdData, (bytes, hostTime) => this.#onPmdFrame(bytes, hostTime));
    const { ecg = true, acc = { sampleRate: 50, resolution: 16, range: 8 } } = this.#options.pmd ?? {};
    const start = async (type, settings) => {
      const answered = response();
      await control.writeValueWithResponse(encodePmdStart(type, settings));
      const r = await answered;
      if (!r) throw new SensorformerError('BLUETOOTH_PMD', `PMD start of stream type ${type}: no response within 3 s`);
      if (!r.ok) throw new SensorformerError('BLUETOOTH_PMD', `PMD start of stream type ${type} failed with status ${r.status}`);
    };
    if (ecg && features.ecg) {
      this.#pmd.ecg.restart();
      await start(PMD_ECG, { sampleRate: ECG_NOMINAL_HZ, resolution: ECG_RESOLUTION });
    }
    if (acc && features.acc) {
      this.#pmd.acc = this.#pmd.acc ?? new PmdTimeline(acc.sampleRate);
      this.#pmd.acc.restart();
      this.#pmd.accResolution = acc.resolution;
      await start(PMD_ACC, acc);
    }
  }

  #onPmdFrame(bytes, hostTime) {
    // Delta frames need the stream's resolution setting (the reference sample's width). The type
    // is byte 0's low six bits, as decodePmdData reads it.
    const resolution = (bytes[0] & 0x3F) === PMD_ACC ? this.#pmd.accResolution : ECG_RESOLUTION;
    const frame = decodePmdData(bytes, { resolution });
    const count = frame.type === 'ecg' ? frame.samples.length : frame.type === 'acc' ? frame.samples.x.length : 0;
    const timeline = frame.type === 'ecg' ? this.#pmd.ecg : frame.type === 'acc' ? this.#pmd.acc : null;
    if (!timeline || count === 0) return;
    const deviceTimes = timeline.times(frame.deviceTime, count);
    if (!deviceTimes) return;  // duplicate frame: already delivered
    this.#aligner.observe(frame.deviceTime, hostTime);
    const times = deviceTimes.map((d) => this.#aligner.toHost(d));
    if (frame.type === 'ecg') this.#emit('ecg', times, Float32Array.from(frame.samples), deviceTimes);
    else this.#emit('acc', times, { x: Float32Array.from(frame.samples.x), y: Float32Array.from(frame.samples.y), z: Float32Array.from(frame.samples.z) }, deviceTimes);
  }

  async #onDisconnect() {
    if (this.#closed) return;
    const dropped = this.now();
    this.dispatchEvent(new CustomEvent('disconnect', { detail: { time: dropped } }));
    const { retries = 6, initialDelayMs = 2000, factor = 2 } = this.#options.reconnect ?? {};
    // While the link is down, keep extending the gap to "now" so that windows taken meanwhile
    // show the outage as missing samples instead of ending early.
    const from = Number.isFinite(this.#lastSampleTime) ? Math.min(this.#lastSampleTime, dropped) : dropped;
    // Only this device's streams are missing; other devices sharing the assembler keep going.
    const ids = [...this.#fed];
    let ticker = null;
    const extendGap = () => {
      this.#markGap(from, this.now(), ids);
      ticker = this.#clock.setTimeout(extendGap, 500);
    };
    extendGap();
    try {
      await this.#reconnect({ retries, initialDelayMs, factor, from, ids });
    } finally {
      this.#clock.clearTimeout(ticker);
    }
  }

  async #reconnect({ retries, initialDelayMs, factor, from, ids }) {
    for (let attempt = 1; attempt <= retries && !this.#closed; attempt++) {
      await new Promise((r) => this.#clock.setTimeout(r, initialDelayMs * factor ** (attempt - 1)));
      if (this.#closed) return;
      try {
        this.#beats = new BeatTimeline();  // RR chains do not continue across a gap
        await this.#connectOnce();
        const back = this.now();
        this.#markGap(from, back, ids);
        this.dispatchEvent(new CustomEvent('gap', { detail: { start: from, end: back } }));
        this.dispatchEvent(new CustomEvent('reconnect', { detail: { attempt, time: back } }));
        return;
      } catch (error) {
        this.dispatchEvent(new CustomEvent('reconnect-failed', { detail: { attempt, error } }));
      }
    }
    if (!this.#closed)
      this.dispatchEvent(new CustomEvent('error', { detail: { error: new SensorformerError('BLUETOOTH_DISCONNECTED', `${this.name} did not come back after ${retries} reconnect attempts`) } }));
  }
}

/**
 * Asks the user to pick a wearable (requestDevice must run from a click in browsers), connects,
 * starts every stream the device offers, and returns a Wearable.
 * Options: bluetooth (default navigator.bluetooth; the simulator or a replay work the same),
 * filters, clock, streams (kind -> model stream spec), assembler (share one across devices),
 * pmd ({ ecg, acc: { sampleRate, resolution, range } }), reconnect ({ retries, initialDelayMs, factor }),
 * sinks (takers of samples and gap marks from the first notification on: Wearable.addSink).
 */
export async function connectWearable(options = {}) {
  const bluetooth = options.bluetooth ?? globalThis.navigator?.bluetooth;
  if (!bluetooth) {
    const a = bluetoothAvailability();
    throw new BluetoothUnavailableError(a.reason ?? 'no-api', a.message ?? 'Web Bluetooth is not available here');
  }
  if (!options.bluetooth && globalThis.isSecureContext === false) {
    const a = bluetoothAvailability();
    throw new BluetoothUnavailableError(a.reason, a.message);
  }
  const clock = options.clock ?? realClock;
  // The accelerometer streams are declared at the rate the PMD start asks for (DEFAULT_STREAMS
  // says 50 Hz, the default request): asking for 200 Hz must not leave a 50 Hz declaration, whose
  // rate bucket the model would then see.
  const accRate = options.pmd?.acc?.sampleRate;
  const streams = options.streams ?? (accRate === undefined ? DEFAULT_STREAMS : Object.fromEntries(
    Object.entries(DEFAULT_STREAMS).map(([id, spec]) => [id, id.startsWith('acc_') ? { ...spec, rateHz: accRate } : spec])));
  const assembler = options.assembler ?? new WindowAssembler();
  for (const [id, spec] of Object.entries(streams)) if (!assembler.get(id)) assembler.add(id, { capacitySeconds: 120, ...spec });
  let device;
  try {
    device = await bluetooth.requestDevice({ filters: options.filters ?? DEFAULT_FILTERS, optionalServices: OPTIONAL_SERVICES });
  } catch (cause) {
    if (cause?.name === 'NotFoundError') throw new SensorformerError('BLUETOOTH_NO_DEVICE', 'no wearable was chosen (the chooser was cancelled or found nothing)', { cause });
    if (cause?.name === 'SecurityError') throw new BluetoothUnavailableError('permission-denied', `Web Bluetooth was refused: ${cause.message}`);
    throw new SensorformerError('BLUETOOTH_FAILED', `requestDevice failed: ${cause?.message ?? cause}`, { cause });
  }
  const wearable = new Wearable(device, { clock, options: { ...options, streams }, assembler });
  for (const sink of options.sinks ?? []) wearable.addSink(sink);
  await wearable.start();
  return wearable;
}
