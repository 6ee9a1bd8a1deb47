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
  encodePmdGetSettings,
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

const PMD_ECG = 0, PMD_PPG = 1, PMD_ACC = 2, PMD_PPI = 3, PMD_GYRO = 5, PMD_MAGN = 6;
const ECG_NOMINAL_HZ = 130;  // H10: nominal 130 Hz, measured ~130.35 (the device clock decides)
const ECG_RESOLUTION = 14;   // bits: the only ECG resolution an H10 offers

// The PMD streams besides ECG: the sample kind they give, the settings asked for by default
// (options.pmd.<name> replaces them; false leaves the stream off) and the columns of a decoded
// frame -> the stream ids of the assembler (the ids the Polar Sensor Logger reader gives the same
// signals: polar-logger.js). The defaults are what a Polar Verity Sense streams (its public
// feature list: ACC 52 Hz 8 G, gyroscope 52 Hz, magnetometer 50 Hz, PPG 55 Hz with 3 channels and
// ambient at 22 bits), except ACC, which asks an H10's 50 Hz. A start the device refuses (a Verity
// offers ACC at 52 Hz only) is retried once with settings chosen from the device's get-settings
// answer: the offered rate closest to the one asked, the highest resolution, the range asked if
// offered else the largest. PPI is off by default: on a Verity Sense it switches the heart-rate
// algorithm (heart rate then updates every 5 s, Polar's SDK documentation) and its first
// intervals come ~25 s after the start.
const PMD_STREAMS = {
  acc: { type: PMD_ACC, kind: 'acc', defaults: { sampleRate: 50, resolution: 16, range: 8 },
    columns: [['x', 'acc_x'], ['y', 'acc_y'], ['z', 'acc_z']] },
  ppg: { type: PMD_PPG, kind: 'ppg', defaults: { sampleRate: 55, resolution: 22, channels: 4 },
    columns: [['ppg0', 'ppg_0'], ['ppg1', 'ppg_1'], ['ppg2', 'ppg_2'], ['ambient', 'ppg_ambient']] },
  gyro: { type: PMD_GYRO, kind: 'gyro', defaults: { sampleRate: 52, resolution: 16, range: 2000 },
    columns: [['x', 'gyro_x'], ['y', 'gyro_y'], ['z', 'gyro_z']] },
  magnetometer: { type: PMD_MAGN, kind: 'magn', defaults: { sampleRate: 50, resolution: 16, range: 50 },
    columns: [['x', 'magn_x'], ['y', 'magn_y'], ['z', 'magn_z']] },
  ppi: { type: PMD_PPI, kind: 'ppi', defaults: false, columns: [] },
};
const PMD_BY_TYPE = new Map(Object.values(PMD_STREAMS).map((d) => [d.type, d]));
// sample kind -> [frame column, stream id] pairs (#emit, once per frame)
const COLUMNS_BY_KIND = new Map(Object.values(PMD_STREAMS).map((d) => [d.kind, d.columns]));

// Settings for a restart after a refused start, from a get-settings answer (see PMD_STREAMS).
function chooseSettings(asked, offered) {
  const out = {};
  const pick = (key, list, rule) => {
    if (asked[key] === undefined || asked[key] === null) return;
    out[key] = list?.length ? rule(list, asked[key]) : asked[key];
  };
  pick('sampleRate', offered.sampleRate, (l, a) => l.reduce((b, v) => (Math.abs(v - a) < Math.abs(b - a) ? v : b)));
  pick('resolution', offered.resolution, (l) => Math.max(...l));
  pick('range', offered.range, (l, a) => (l.includes(a) ? a : Math.max(...l)));
  pick('channels', offered.channels, (l, a) => (l.includes(a) ? a : Math.max(...l)));
  return out;
}

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
  // Per PMD measurement type: { timeline, resolution, factor } of the stream started last.
  #pmd = new Map([[PMD_ECG, { timeline: new PmdTimeline(ECG_NOMINAL_HZ), resolution: ECG_RESOLUTION, factor: null }]]);
  #pulses = new BeatTimeline();  // PPI: pulse times from arrival, as RR intervals (no device time used)
  #listeners = [];
  #fed = new Set();  // assembler stream ids this device has pushed to: the ones its outage hides
  #sinks = new Set();  // more takers of samples and gap marks (a SessionFeeder: feeder.js)
  #onDrop = () => this.#onDisconnect();
  #reconnecting = false;  // a reconnect loop runs: a drop during one of its attempts is that loop's

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
    device.addEventListener('gattserverdisconnected', this.#onDrop);
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

  /**
   * Device-to-host clock estimate: { offset (s), drift (ppm), ready, connectionInterval (s, NaN
   * until the arrivals show one), driftBounds ([lo, hi] ppm or null) } (web/src/ble/clock.js).
   */
  get clock() {
    const a = this.#aligner;
    return { offset: a.offset, drift: a.drift, ready: a.ready, connectionInterval: a.connectionInterval, driftBounds: a.driftBounds };
  }

  /**
   * Async iterator over batches of one kind ('ecg', 'acc', 'ppg', 'gyro', 'magn', 'ppi', 'hr',
   * 'rr', 'temperature', 'spo2'): { kind, times: Float64Array (host seconds), values: Float32Array }
   * ({ x, y, z } for 'acc' (mG), 'gyro' (dps) and 'magn' (G); { ppg0, ppg1, ppg2, ambient } for
   * 'ppg'; PMD batches also carry deviceTimes, the device clock's seconds). 'ppi' batches: values
   * are the intervals in s, NaN where the device flags one unreliable (blocker set, or contact
   * supported and absent; the model sees that a pulse happened, not its length), and the device's
   * own fields ride along: ppiMs, hr, errorEstimate (ms), blocker, skinContact,
   * skinContactSupported. Ends when the signal aborts or the wearable is closed.
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
    // Web Bluetooth hands the same BluetoothDevice to the next requestDevice of that device: a
    // closed Wearable must not stay attached to it.
    this.device.removeEventListener('gattserverdisconnected', this.#onDrop);
    if (this.device.gatt?.connected) this.device.gatt.disconnect();
  }

  #emit(kind, times, values, deviceTimes = null, extra = null) {
    if (times.length === 0) return;
    this.#lastSampleTime = Math.max(this.#lastSampleTime, times[times.length - 1]);
    this.kinds.add(kind);
    const spec = this.#options.streams;
    const columns = COLUMNS_BY_KIND.get(kind);
    if (columns?.length) {
      for (const [column, id] of columns) if (spec[id]) this.#push(id, times, values[column], deviceTimes);
    } else if (spec[kind]) {
      this.#push(kind, times, values, deviceTimes);
    }
    const batch = deviceTimes ? { kind, times, values, deviceTimes, device: this.name } : { kind, times, values, device: this.name };
    if (extra) Object.assign(batch, extra);
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
    const options = this.#options.pmd ?? {};
    const command = async (bytes, what) => {
      const answered = response();
      await control.writeValueWithResponse(bytes);
      const r = await answered;
      if (!r) throw new SensorformerError('BLUETOOTH_PMD', `PMD ${what}: no response within 3 s`);
      return r;
    };
    if ((options.ecg ?? true) && features.ecg) {
      this.#pmd.get(PMD_ECG).timeline.restart();
      const r = await command(encodePmdStart(PMD_ECG, { sampleRate: ECG_NOMINAL_HZ, resolution: ECG_RESOLUTION }), `start of stream type ${PMD_ECG}`);
      if (!r.ok) throw new SensorformerError('BLUETOOTH_PMD', `PMD start of stream type ${PMD_ECG} failed with status ${r.status}`);
    }
    for (const [name, d] of Object.entries(PMD_STREAMS)) {
      const asked = options[name] ?? d.defaults;
      if (!asked || !features[name]) continue;
      // Settings the caller gave are asked as given (a refusal is an error); the defaults are
      // retried with the device's offer.
      const given = typeof asked === 'object';
      let settings = given ? asked : (d.defaults || {});
      let r = await command(encodePmdStart(d.type, settings), `start of stream type ${d.type}`);
      let offered = null;
      if (!r.ok && d.type !== PMD_PPI && (!given || asked === d.defaults)) {
        const got = await command(encodePmdGetSettings(d.type), `get-settings of stream type ${d.type}`);
        if (got.ok && got.settings) {
          offered = got.settings;
          settings = chooseSettings(settings, offered);
          r = await command(encodePmdStart(d.type, settings), `start of stream type ${d.type}`);
        }
      }
      if (!r.ok) throw new SensorformerError('BLUETOOTH_PMD', `PMD start of stream type ${d.type} failed with status ${r.status}`);
      const previous = this.#pmd.get(d.type);
      // Same crystal after a reconnect: the measured spacing is kept when the rate is the same.
      const timeline = !settings.sampleRate ? null
        : previous?.timeline?.nominalHz === settings.sampleRate ? previous.timeline : new PmdTimeline(settings.sampleRate);
      timeline?.restart();
      this.#pmd.set(d.type, { timeline, resolution: settings.resolution, factor: r.factor ?? offered?.factor?.[0] ?? null });
    }
  }

  #onPmdFrame(bytes, hostTime) {
    // Delta frames need the stream's resolution setting (the reference sample's width); counts
    // become units with the factor the start answered. The type is byte 0's low six bits, as
    // decodePmdData reads it.
    const stream = this.#pmd.get(bytes[0] & 0x3F);
    if (!stream) return;  // a type this session did not start
    const frame = decodePmdData(bytes, { resolution: stream.resolution, factor: stream.factor });
    if (!frame.samples) return;
    if (frame.type === 'ppi') return this.#onPulses(frame.samples, hostTime);
    const first = frame.type === 'ecg' ? frame.samples : Object.values(frame.samples)[0];
    const count = first.length;
    const timeline = stream.timeline;
    if (!timeline || count === 0) return;
    const deviceTimes = timeline.times(frame.deviceTime, count);
    if (!deviceTimes) return;  // duplicate frame: already delivered
    this.#aligner.observe(frame.deviceTime, hostTime);
    const times = deviceTimes.map((d) => this.#aligner.toHost(d));
    if (frame.type === 'ecg') {
      this.#emit('ecg', times, Float32Array.from(frame.samples), deviceTimes);
      return;
    }
    const values = Object.fromEntries(Object.entries(frame.samples).map(([k, v]) => [k, Float32Array.from(v)]));
    this.#emit(PMD_BY_TYPE.get(bytes[0] & 0x3F).kind, times, values, deviceTimes);
  }

  // PPI frames: the pulses are timed like a heart-rate notification's RR intervals, the last one
  // ending at the frame's arrival (BeatTimeline; the frame's device timestamp is not used: which
  // pulse it belongs to is not documented). An interval of 0 ms cannot be placed in time: it is
  // left out and counted in the batch's `skipped`.
  #onPulses(p, hostTime) {
    const keep = [];
    for (let i = 0; i < p.ppi.length; i++) if (p.ppi[i] > 0) keep.push(i);
    const beats = this.#pulses.push(hostTime, keep.map((i) => p.ppi[i] / 1000));
    if (!beats.times.length) return;  // a duplicate frame, or nothing to place
    const pick = (a) => Uint16Array.from(keep, (i) => a[i]);
    const unreliable = (i) => p.blocker[i] === 1 || (p.skinContactSupported[i] === 1 && p.skinContact[i] === 0);
    const values = Float32Array.from(keep, (i) => (unreliable(i) ? NaN : p.ppi[i] / 1000));
    this.#emit('ppi', beats.times, values, null, {
      ppiMs: pick(p.ppi), hr: pick(p.hr), errorEstimate: pick(p.errorEstimate), blocker: Uint8Array.from(keep, (i) => p.blocker[i]),
      skinContact: Uint8Array.from(keep, (i) => p.skinContact[i]), skinContactSupported: Uint8Array.from(keep, (i) => p.skinContactSupported[i]),
      skipped: p.ppi.length - keep.length,
    });
  }

  async #onDisconnect() {
    // One reconnect loop at a time: a link lost again during an attempt (connected, then dropped
    // while the services are found or the PMD streams start) fails that attempt, and the loop
    // that runs goes on with its own gap; a second loop would mark gaps over live data later.
    if (this.#closed || this.#reconnecting) return;
    this.#reconnecting = true;
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
      this.#reconnecting = false;
    }
  }

  async #reconnect({ retries, initialDelayMs, factor, from, ids }) {
    for (let attempt = 1; attempt <= retries && !this.#closed; attempt++) {
      await new Promise((r) => this.#clock.setTimeout(r, initialDelayMs * factor ** (attempt - 1)));
      if (this.#closed) return;
      try {
        this.#beats = new BeatTimeline();  // RR chains do not continue across a gap
        this.#pulses = new BeatTimeline();
        await this.#connectOnce();
        if (!this.device.gatt?.connected) throw new SensorformerError('BLUETOOTH_DISCONNECTED', `${this.name}: the link was lost again while the streams started`);
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
  try {
    await wearable.start();
  } catch (error) {
    // Connected but not started (a PMD start refused or unanswered, a GATT error while the
    // services were found): disconnect and detach, or the device would stay connected with its
    // notifications running and a Wearable nobody holds reconnecting it.
    await wearable.close();
    throw error;
  }
  return wearable;
}
