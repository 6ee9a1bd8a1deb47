// A simulated navigator.bluetooth with wearables that send the bytes real devices send (the fourth,
// an optical armband, is in armband.js):
//
//   chest strap "Polar H10 SIM"  0x180D Heart Rate: 0x2A37 notify once a second (flags 0x10: u8 HR
//                                and the RR intervals of the beats since the last notification in
//                                1/1024 s, no sensor-contact bits, as a real H10 sends), 0x2A38
//                                body sensor location = chest; 0x180F battery 0x2A19 (read); Polar
//                                PMD FB005C80-…: control point …5C81 (read features 0F 05 00 …;
//                                write get-settings / start / stop, answered by indications
//                                F0 op type status …), data …5C82 notify: ECG frames (type 0, frame
//                                type 0, 73 signed 24-bit µV samples at the strap's true ~130.35 Hz)
//                                and ACC frames (type 2, requested at 25/50/100/200 Hz, sampled at
//                                the strap's true rates ~25.54/51.07/102.15/204.3 Hz; int16 frames
//                                0x01 of 36 samples, or delta-compressed 0x80).
//   thermometer "Thermo SIM"     0x1809 / 0x2A1C indications every 5 s (flags, Celsius FLOAT with
//                                exponent -2 (or -1), optional 7-byte date time, optional type).
//   oximeter "Oxi SIM"           0x1822 / 0x2A5F notifications once a second (flags 0, SpO2 and PR
//                                as SFLOAT; both NaN 0x07FF while the finger is off); 0x2A60 features.
//
// The strap's defaults are those of a real Polar H10 (firmware 5.0.0) as captured over Web
// Bluetooth (public capture: github.com/fstanis/polar-h10-web, test/helpers/captured.ts): HR flags
// 0x10; ECG start answered F0 02 00 00 00 00 and ACC start F0 02 02 00 00 01 (6 bytes), rejected
// commands F0 op type status (4 bytes); ACC as raw int16 frames of 36 samples (a full 229-byte
// notification) at every rate; ECG frame timestamps 560.06-560.08 ms apart (73 samples: ~130.34 Hz;
// the default here is 130.35 Hz), ACC 704.94 ms per 36 samples at 50 Hz (51.07 Hz) and ~176.2 ms
// at 200 Hz (204.3 Hz); consecutive frame intervals differ by up to ~25 µs, modelled as timestamp
// jitter. The behaviour of earlier versions (nominal rates, contact bits, 5-byte responses, delta
// ACC) is kept behind options.
//
// Every device has its own crystal: device time = true time + offset + drift (ppm) x elapsed, plus
// optional jumps (a reset). PMD timestamps are u64 ns since 2000-01-01 of the LAST sample of a
// frame on that clock (plus the jitter); ECG/ACC sample instants are spaced by the strap's true
// rate on the device clock, so in host time they are spaced by rate x (1 + drift).
//
// Delivery: a packet ready at time r reaches the host at the next connection event of its device's
// link (anchor + k x connectionIntervalMs), sometimes a few intervals later (delayProbability), in
// order. Notifications (not indications) may be lost (dropoutProbability). Disconnects drop the
// link (gattserverdisconnected), stop every stream, and make connect() fail until the outage ends.
//
// Options of createSimulatedBluetooth (times in seconds since the simulation start unless noted):
//   seed (1)                       every random choice; same seed and options -> same bytes
//   clock (real clock)             { now(), setTimeout, clearTimeout }: createVirtualClock() in tests
//   start (clock.now())            host time of t = 0
//   devices (the first three)      subset of 'strap', 'thermometer', 'oximeter', 'armband' (an optical
//                                  Verity Sense-like sensor: armband.js, asked for by name)
//   names                          { strap, thermometer, oximeter } device names
//   driftPpm ({ strap: 20, thermometer: -15, oximeter: 8 })  number (all) or per device
//   clockOffset ({ strap: 0.35, thermometer: -1.2, oximeter: 0.6 })  device time - true time, s
//   connectionIntervalMs (15)      number or per device
//   delayProbability (0.02), maxDelayIntervals (4)   occasional late connection events
//   dropoutProbability (0)         each notification lost with this probability
//   disconnects ([])               [{ device, at, duration }] or { ratePerHour, duration: s | [min, max],
//                                  devices, horizonSeconds (21600) }
//   faults                         { duplicatePmd: [at...], duplicatePmdProbability,
//                                    reorderPmd: [at...], reorderPmdProbability,
//                                    clockJumps: [{ device, at, to (s since 2000, default 0) | by (s) }] }
//   activities                     schedule override [{ activity, duration } | { activity, start }]
//   fingerOff / fingerOffRatePerMinute (0.25)   oximeter finger-off episodes
//   af ([])                        atrial fibrillation episodes [{ at, duration }] (s from the start):
//                                  irregularly irregular RR, no P waves, f waves (physiology.js);
//                                  simulated.startAf({ duration, after }) starts one while running
//   ecgRateHz (130.35)             the strap's true ECG rate on its own clock (130: the nominal rate)
//   accRatesHz (H10_ACC_RATES_HZ)  true ACC rate per requested rate, or 'nominal' (the requested rate)
//   accCompressed (false)          ACC frames 0x01 (int16) or 0x80 (delta, Polar's layout)
//   accFrameSamples (36)           samples per int16 ACC frame (at most 36: 229 bytes)
//   accFrameSeconds                instead a target frame length in s (earlier versions: 0.25; delta
//                                  frames default to 0.25 s); accDeltaBlockSamples (16)
//   hrContact (false)              true: HR flags 0x16 / 0x06 (contact supported and detected)
//   pmdResponses ('h10')           'h10' as above; 'short': every response F0 op type status 00 (5 bytes)
//   pmdTimestampJitterUs (12)      PMD timestamps off the true time of the last sample by a seeded
//                                  uniform +-J µs (0: exact)
//   pmdMaxFrameBytes (229)         MTU 232 - 3
//   thermometer                    { intervalSeconds: 5, exponent: -2, timeField: true, type: null }
//   battery ({ strap: 87, oximeter: 64 })
//   FakeBluetooth options pass through: connectLatencyMs, gattLatencyMs, staleAttributes,
//   overwriteAfterDispatch, strictUuids, chooser, available
//
// The returned SimulatedBluetooth is a FakeBluetooth (requestDevice, getAvailability, getDevices)
// plus `devicesByKey` { strap, thermometer, oximeter }, `truth` (below), `clock` and `close()`
// (clears every timer).
import { SensorformerError } from '../errors.js';
import { FakeBluetooth, FakeDevice, PMD_UUIDS, createRealClock, createVirtualClock } from '../ble/fake-gatt.js';
import { createPhysiology, createRng } from './physiology.js';
import { buildArmband } from './armband.js';
import {
  encodeHeartRate, encodePlxContinuous, encodePmdAccDelta, encodePmdAccRaw, encodePmdEcg, encodeTemperature,
} from '../ble/encoders.js';

export { createVirtualClock, createRealClock };

/** Unix time of 2000-01-01T00:00:00Z, the epoch of PMD timestamps. */
export const UNIX_2000 = 946684800;
export const DEVICE_KEYS = Object.freeze(['strap', 'thermometer', 'oximeter', 'armband']);
// The devices a simulation has unless options.devices says otherwise: the armband (an optical
// Verity Sense-like sensor, armband.js) is asked for by name.
const DEFAULT_DEVICES = Object.freeze(['strap', 'thermometer', 'oximeter']);

const DEFAULT_NAMES = { strap: 'Polar H10 SIM', thermometer: 'Thermo SIM', oximeter: 'Oxi SIM', armband: 'Polar Sense SIM' };
const DEFAULT_DRIFT = { strap: 20, thermometer: -15, oximeter: 8, armband: -12 };
const DEFAULT_OFFSET = { strap: 0.35, thermometer: -1.2, oximeter: 0.6, armband: 1.7 };
const ECG_SAMPLES_PER_FRAME = 73;
const PMD_LATENCY = 0.002;       // s from a frame's last sample to the frame being ready
const PMD_STARTUP = 0.05;        // s from a start command to the first sample
const CONTROL_LATENCY = 0.003;   // s from a control write to its response being ready
const ACC_RATES = [25, 50, 100, 200];
const ACC_RANGES = [2, 4, 8];
const ACC_RAW_MAX_SAMPLES = 36;  // floor((229 - 10) / 6): an int16 frame filling one notification

/**
 * True ACC rates of the simulated strap per requested rate (Hz): 50 and 200 as measured from a real
 * H10's frame timestamps (36 samples per 704.94 ms and per ~176.2 ms); 25 and 100 are not in that
 * capture and are scaled from 204.3 Hz (the rates look like one ~204.3 Hz clock divided down).
 */
export const H10_ACC_RATES_HZ = Object.freeze({ 25: 25.54, 50: 51.07, 100: 102.15, 200: 204.3 });

export const PMD_STATUS = Object.freeze({
  SUCCESS: 0, INVALID_OP_CODE: 1, INVALID_MEASUREMENT_TYPE: 2, NOT_SUPPORTED: 3, INVALID_LENGTH: 4,
  INVALID_PARAMETER: 5, ALREADY_IN_STATE: 6, INVALID_RESOLUTION: 7, INVALID_SAMPLE_RATE: 8, INVALID_RANGE: 9,
});

const u16 = (n) => `0000${n.toString(16).padStart(4, '0')}-0000-1000-8000-00805f9b34fb`;

// The option names createSimulatedBluetooth accepts (the list at the top of this file, and
// web/simulator.d.ts). Any other key is INVALID_ARGUMENT: an unknown option would otherwise be
// ignored, and `{ seeed: 3 }` would silently run seed 1. Nested objects are checked the same way.
export const SIMULATOR_OPTIONS = Object.freeze([
  'seed', 'clock', 'start', 'devices', 'names', 'driftPpm', 'clockOffset', 'connectionIntervalMs',
  'delayProbability', 'maxDelayIntervals', 'dropoutProbability', 'disconnects', 'faults', 'activities',
  'fingerOff', 'fingerOffRatePerMinute', 'af', 'ecgRateHz', 'accRatesHz', 'accCompressed', 'accFrameSamples',
  'accFrameSeconds', 'accDeltaBlockSamples', 'hrContact', 'pmdResponses', 'pmdTimestampJitterUs',
  'pmdMaxFrameBytes', 'thermometer', 'battery',
  // passed through to FakeBluetooth
  'connectLatencyMs', 'gattLatencyMs', 'staleAttributes', 'overwriteAfterDispatch', 'strictUuids', 'chooser', 'available',
]);
const NESTED_OPTIONS = {
  names: DEVICE_KEYS,
  driftPpm: DEVICE_KEYS,
  clockOffset: DEVICE_KEYS,
  connectionIntervalMs: DEVICE_KEYS,
  battery: DEVICE_KEYS,
  accRatesHz: ['25', '50', '100', '200'],
  faults: ['duplicatePmd', 'duplicatePmdProbability', 'reorderPmd', 'reorderPmdProbability', 'clockJumps'],
  thermometer: ['intervalSeconds', 'exponent', 'timeField', 'type'],
  // the { ratePerHour, ... } form; the array form's entries are { device, at, duration }
  disconnects: ['ratePerHour', 'duration', 'devices', 'horizonSeconds'],
};

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// Every bad option is INVALID_ARGUMENT (not a RangeError/TypeError): the package's errors are
// told apart by their code, and the message names the option and its valid range.
const invalid = (message) => new SensorformerError('INVALID_ARGUMENT', `createSimulatedBluetooth: ${message}`);
const describe = (v) => (typeof v === 'string' ? `'${v}'` : Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v === 'object' ? 'an object' : String(v));

// `parent`: '' for the options themselves, else the nested option's path ('faults', 'disconnects[0]').
function checkKeys(object, valid, parent) {
  for (const key of Object.keys(object)) {
    if (!valid.includes(key)) {
      throw new SensorformerError('INVALID_ARGUMENT',
        `createSimulatedBluetooth: unknown option '${parent ? `${parent}.` : ''}${key}'; ` +
        `${parent ? `the keys of ${parent} are` : 'the options are'}: ${valid.join(', ')}`);
    }
  }
}

function checkOptions(options) {
  if (!isPlainObject(options)) {
    throw new SensorformerError('INVALID_ARGUMENT',
      `createSimulatedBluetooth: options must be an object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`);
  }
  checkKeys(options, SIMULATOR_OPTIONS, '');
  for (const [name, valid] of Object.entries(NESTED_OPTIONS)) {
    if (isPlainObject(options[name])) checkKeys(options[name], valid, name);
  }
  const entries = (list, valid, name) => {
    if (Array.isArray(list)) list.forEach((entry, i) => { if (isPlainObject(entry)) checkKeys(entry, valid, `${name}[${i}]`); });
  };
  entries(options.disconnects, ['device', 'at', 'duration'], 'disconnects');
  entries(options.activities, ['activity', 'duration', 'start'], 'activities');
  entries(options.fingerOff, ['at', 'duration'], 'fingerOff');
  entries(options.af, ['at', 'duration'], 'af');
  if (isPlainObject(options.faults)) entries(options.faults.clockJumps, ['device', 'at', 'to', 'by'], 'faults.clockJumps');
}

function perDevice(option, defaults, name) {
  if (option === undefined || option === null) return { ...defaults };
  if (typeof option === 'number') return Object.fromEntries(DEVICE_KEYS.map((k) => [k, option]));
  if (typeof option === 'object') return { ...defaults, ...option };
  throw invalid(`${name} must be a number or { strap, thermometer, oximeter, armband }, got ${describe(option)}`);
}

// The byte encoders (the device side of web/src/ble/decoders.js) are web/src/ble/encoders.js.
export {
  encodeSfloat, encodeFloat, encodeHeartRate, encodeTemperature, encodePlxContinuous, pmdFrame,
  encodePmdEcg, encodePmdAccRaw, encodePmdDelta, encodePmdAccDelta,
} from '../ble/encoders.js';

// ---------------------------------------------------------------------------------------------
// Device clocks

class DeviceClock {
  constructor(start, offset, driftPpm) {
    this.start = start;
    this.offset = offset;
    this.driftPpm = driftPpm;
    this.eps = driftPpm * 1e-6;
    this.baseNs = BigInt(Math.round((start + offset - UNIX_2000) * 1e6)) * 1000n;
    this.jumps = [];  // { at: host time, deltaNs: bigint }
  }
  osc(h) { return (h - this.start) * (1 + this.eps); }
  hostOfOsc(o) { return this.start + o / (1 + this.eps); }
  #jumpNs(h) {
    let j = 0n;
    for (const x of this.jumps) if (x.at <= h) j += x.deltaNs;
    return j;
  }
  /** ns since 2000 on the device clock at oscillator time o (host time hostOfOsc(o)). */
  nsAtOsc(o) { return this.baseNs + BigInt(Math.round(o * 1e9)) + this.#jumpNs(this.hostOfOsc(o) + 1e-9); }
  ns(h) { return this.nsAtOsc(this.osc(h)); }
  /** Unix seconds on the device clock (as decodePmdData's deviceTime). */
  unix(h) { return Number(this.ns(h)) / 1e9 + UNIX_2000; }
  addJump(at, { to, by }) {
    const before = this.ns(at - 1e-9);
    const deltaNs = by !== undefined ? BigInt(Math.round(by * 1e9)) : BigInt(Math.round((to ?? 0) * 1e9)) - before;
    this.jumps.push({ at, deltaNs });
    this.jumps.sort((a, b) => a.at - b.at);
  }
  /** Host time at which the device clock read `unix` (the latest such time when jumps repeat it). */
  hostOf(unix) {
    const ns = (unix - UNIX_2000) * 1e9;
    const bounds = [this.start - 1e12, ...this.jumps.map((j) => j.at), Infinity];
    for (let i = bounds.length - 2; i >= 0; i--) {
      const jump = Number(this.jumps.slice(0, i).reduce((s, j) => s + j.deltaNs, 0n));
      const o = (ns - Number(this.baseNs) - jump) / 1e9;
      const h = this.hostOfOsc(o);
      if (h >= bounds[i] - 1e-6 && h < bounds[i + 1] + 1e-6) return h;
    }
    return NaN;
  }
}

function calendar(unix) {
  const d = new Date(Math.floor(unix) * 1000);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hours: d.getUTCHours(), minutes: d.getUTCMinutes(), seconds: d.getUTCSeconds() };
}

// ---------------------------------------------------------------------------------------------
// One simulated device: its FakeDevice, clock, link and engines.

class SimDevice {
  constructor(sim, key, fake, { driftPpm, offset, ciMs }) {
    this.sim = sim;
    this.key = key;
    this.fake = fake;
    this.clock = new DeviceClock(sim.start, offset, driftPpm);
    this.ci = ciMs / 1000;
    this.anchor = sim.start;
    this.lastDeliver = -Infinity;
    this.epoch = 0;
    this.timers = new Set();
    this.linkRng = createRng(sim.seed, `link:${key}`);
    this.dropRng = createRng(sim.seed, `drop:${key}`);
    this.stats = {};
    this.onConnect = null;     // engine hooks
    this.onDisconnect = null;
    fake.onPeripheral('connect', () => {
      this.epoch++;
      this.anchor = sim.clock.now() + this.linkRng.uniform(0, this.ci);
      this.lastDeliver = -Infinity;
      this.onConnect?.();
    });
    fake.onPeripheral('disconnect', () => {
      this.epoch++;
      this.onDisconnect?.();
    });
  }

  stat(name) {
    return (this.stats[name] ??= { generated: 0, dropped: 0, delivered: 0, undelivered: 0 });
  }

  // A timer at absolute host time `at`, forgotten when it fires or on close.
  at(time, fn) {
    const clock = this.sim.clock;
    const id = clock.setTimeout(() => {
      this.timers.delete(id);
      if (!this.sim.closed) fn();
    }, Math.max(0, (time - clock.now()) * 1000));
    this.timers.add(id);
    return id;
  }

  cancel(id) {
    if (id === null || id === undefined) return;
    this.sim.clock.clearTimeout(id);
    this.timers.delete(id);
  }

  nextConnectionEvent(r) {
    if (r <= this.anchor) return this.anchor;
    return this.anchor + Math.ceil((r - this.anchor) / this.ci - 1e-9) * this.ci;
  }

  /**
   * Queues bytes for the host: delivered at a connection event at or after `ready`, if the link
   * is still the same and the client subscribed. Returns the delivery time, or null (not sent).
   */
  send(characteristic, name, bytes, ready, { reliable = false } = {}) {
    const st = this.stat(name);
    st.generated++;
    if (!this.fake.gatt.connected) { st.undelivered++; return null; }
    if (!reliable && this.sim.dropoutProbability > 0 && this.dropRng.next() < this.sim.dropoutProbability) {
      st.dropped++;
      this.sim.truth._log(this.sim.truth.dropped, { device: this.key, characteristic: name, t: ready });
      return null;
    }
    let deliver = this.nextConnectionEvent(Math.max(ready, this.sim.clock.now()));
    if (this.sim.delayProbability > 0 && this.linkRng.next() < this.sim.delayProbability) {
      deliver += (1 + this.linkRng.int(this.sim.maxDelayIntervals)) * this.ci;
    }
    deliver = Math.max(deliver, this.lastDeliver);
    this.lastDeliver = deliver;
    const epoch = this.epoch;
    this.at(deliver, () => {
      if (epoch === this.epoch && characteristic.notify(bytes)) st.delivered++;
      else st.undelivered++;
    });
    return deliver;
  }

  close() {
    for (const id of this.timers) this.sim.clock.clearTimeout(id);
    this.timers.clear();
  }
}

// ---------------------------------------------------------------------------------------------

function randomId(seed, key) {
  const rng = createRng(seed, `id:${key}`);
  const bytes = Array.from({ length: 16 }, () => rng.int(256));
  const s = String.fromCharCode(...bytes);
  return typeof btoa === 'function' ? btoa(s) : Buffer.from(bytes).toString('base64');
}

/** A FakeBluetooth with the simulated chest strap, thermometer and oximeter. */
export class SimulatedBluetooth extends FakeBluetooth {
  #sims = {};

  constructor(options = {}) {
    checkOptions(options);
    const clock = options.clock ?? createRealClock();
    super({
      clock,
      available: options.available ?? true,
      chooser: options.chooser ?? null,
      connectLatencyMs: options.connectLatencyMs ?? 0,
      gattLatencyMs: options.gattLatencyMs ?? 0,
      staleAttributes: options.staleAttributes ?? true,
      overwriteAfterDispatch: options.overwriteAfterDispatch ?? true,
      strictUuids: options.strictUuids ?? false,
    });
    this.options = options;
    this.seed = options.seed ?? 1;
    this.start = options.start ?? clock.now();
    this.closed = false;
    this.dropoutProbability = options.dropoutProbability ?? 0;
    this.delayProbability = options.delayProbability ?? 0.02;
    this.maxDelayIntervals = Math.max(1, options.maxDelayIntervals ?? 4);
    const keys = options.devices ?? DEFAULT_DEVICES;
    if (!Array.isArray(keys)) throw invalid(`devices must be an array of ${DEVICE_KEYS.join(', ')}, got ${describe(keys)}`);
    for (const k of keys) if (!DEVICE_KEYS.includes(k)) throw invalid(`devices: unknown simulated device ${describe(k)} (the devices are ${DEVICE_KEYS.join(', ')})`);
    const names = { ...DEFAULT_NAMES, ...(options.names ?? {}) };
    const drift = perDevice(options.driftPpm, DEFAULT_DRIFT, 'driftPpm');
    const offset = perDevice(options.clockOffset, DEFAULT_OFFSET, 'clockOffset');
    const ci = perDevice(options.connectionIntervalMs, { strap: 15, thermometer: 15, oximeter: 15, armband: 15 }, 'connectionIntervalMs');
    // 7.5 ms to 4 s: the range of a Bluetooth LE connection interval (Core Specification, Vol 6, Part B, 4.5.1).
    for (const k of DEVICE_KEYS) {
      if (!(typeof ci[k] === 'number' && ci[k] >= 7.5 && ci[k] <= 4000)) throw invalid(`connectionIntervalMs.${k} must be 7.5-4000 ms, got ${describe(ci[k])}`);
    }
    // Finite: a NaN drift or offset would put NaN in every timestamp the device sends.
    for (const [name, values] of [['driftPpm', drift], ['clockOffset', offset]]) {
      for (const k of DEVICE_KEYS) {
        if (!(typeof values[k] === 'number' && Number.isFinite(values[k]))) throw invalid(`${name}.${k} must be a finite number, got ${describe(values[k])}`);
      }
    }
    // A percentage in one byte (Battery Level 0x2A19: 0-100 %).
    const battery = perDevice(options.battery, { strap: 87, oximeter: 64, armband: 72 }, 'battery');
    for (const k of ['strap', 'oximeter', 'armband']) {
      if (!(Number.isInteger(battery[k]) && battery[k] >= 0 && battery[k] <= 100)) throw invalid(`battery.${k} must be an integer 0-100 (%), got ${describe(battery[k])}`);
    }

    this.physiology = createPhysiology({
      seed: this.seed,
      activities: options.activities ?? null,
      fingerOff: options.fingerOff ?? null,
      fingerOffRatePerMinute: options.fingerOffRatePerMinute ?? 0.25,
      af: options.af ?? null,
    });
    this.truth = this.#makeTruth();
    this.devicesByKey = {};
    const advertised = { strap: ['heart_rate'], thermometer: ['health_thermometer'], oximeter: ['pulse_oximeter'], armband: ['heart_rate'] };
    for (const key of keys) {
      const fake = new FakeDevice({ id: randomId(this.seed, key), name: names[key], advertisedServices: advertised[key] });
      this.addDevice(fake);
      this.devicesByKey[key] = fake;
      const sim = new SimDevice(this, key, fake, { driftPpm: drift[key], offset: offset[key], ciMs: ci[key] });
      this.#sims[key] = sim;
      this.truth.clocks[key] = { driftPpm: drift[key], offset: offset[key], connectionIntervalMs: ci[key], jumps: [] };
    }
    for (const j of options.faults?.clockJumps ?? []) {
      const key = this.#resolveKey(j.device ?? 'strap', 'faults.clockJumps');
      if (!this.#sims[key]) continue;
      this.#sims[key].clock.addJump(this.start + j.at, j);
      this.truth.clocks[key].jumps = this.#sims[key].clock.jumps.map((x) => ({ at: x.at, delta: Number(x.deltaNs) / 1e9 }));
    }
    if (this.#sims.strap) this.#buildStrap(this.#sims.strap);
    if (this.#sims.thermometer) this.#buildThermometer(this.#sims.thermometer);
    if (this.#sims.oximeter) this.#buildOximeter(this.#sims.oximeter);
    if (this.#sims.armband) buildArmband(this, this.#sims.armband, { battery: battery.armband });
    this.#scheduleOutages();
  }

  /** The SimDevice internals by key (clock, link, stats). */
  simulated(key) { return this.#sims[key]; }

  /**
   * Starts an atrial fibrillation episode of `duration` seconds about `after` seconds from now (the
   * demo's control; `af` schedules them up front). Returns it as { start, end } in host time.
   */
  startAf({ duration = 60, after = 1 } = {}) {
    if (!(Number.isFinite(duration) && duration > 0)) throw invalid(`startAf: duration must be a finite number of seconds > 0, got ${describe(duration)}`);
    if (!(Number.isFinite(after) && after >= 0)) throw invalid(`startAf: after must be a finite number of seconds >= 0, got ${describe(after)}`);
    const e = this.physiology.startAf({ at: this.clock.now() - this.start + after, duration });
    return { start: e.start + this.start, end: e.end + this.start };
  }

  /** Stops every timer of the simulation (devices stay, but send nothing more). */
  close() {
    this.closed = true;
    for (const s of Object.values(this.#sims)) s.close();
    if (this._outageTimer !== undefined) this.clock.clearTimeout(this._outageTimer);
  }

  #resolveKey(ref, what) {
    if (DEVICE_KEYS.includes(ref)) return ref;
    for (const [k, d] of Object.entries(this.devicesByKey ?? {})) if (d.id === ref || d.name === ref) return k;
    throw invalid(`${what}: unknown device ${describe(ref)} (expected ${DEVICE_KEYS.join(', ')}, or a simulated device's id or name)`);
  }

  #makeTruth() {
    const sim = this, p = this.physiology, s = this.start;
    // Logs keep between cap / 2 and cap of the latest entries (long sessions stay bounded).
    const log = (arr, item, cap = 20000) => { arr.push(item); if (arr.length > cap) arr.splice(0, arr.length - (cap >> 1)); };
    return {
      start: s,
      seed: this.seed,
      physiology: p,
      /** 'rest' | 'walk' | 'run' at host time t. */
      activityAt: (t) => p.activityAt(t - s),
      /** Activity segments overlapping [t0, t1) in host time. */
      segments: (t0, t1) => p.segments(t0 - s, t1 - s).map((x) => ({ ...x, start: x.start + s, end: x.end + s })),
      heartRateAt: (t) => p.heartRateAt(t - s),
      /** True beat (R-peak) host times in [t0, t1). */
      beatTimes: (t0, t1) => p.beats(t0 - s, t1 - s).map((x) => x + s),
      ecgAt: (t) => p.ecgAt(t - s),
      accAt: (t) => p.accAt(t - s),
      temperatureAt: (t) => p.temperatureAt(t - s),
      spo2At: (t) => p.spo2At(t - s),
      fingerOffAt: (t) => p.fingerOffAt(t - s),
      /** 'af' | 'sinus' at host time t. */
      rhythmAt: (t) => p.rhythmAt(t - s),
      /** AF episodes overlapping [t0, t1) in host time: [{ start, end }]. */
      afEpisodes: (t0, t1) => p.afEpisodes(t0 - s, t1 - s).map((x) => ({ start: x.start + s, end: x.end + s })),
      /** Per device: { driftPpm, offset, connectionIntervalMs, jumps: [{ at (host), delta (s) }] }. */
      clocks: {},
      /** Unix seconds on a device's clock at host time t (decodePmdData's deviceTime scale). */
      deviceTime: (key, t) => sim.#sims[key].clock.unix(t),
      /** Host time at which a device's clock read `deviceTime` (Unix seconds). */
      hostTime: (key, deviceTime) => sim.#sims[key].clock.hostOf(deviceTime),
      /** Outages: [{ device, start, end }] in host time. */
      outages: [],
      /** Faults that happened: [{ kind, device, t, ... }]. */
      faults: [],
      /** Lost notifications: [{ device, characteristic, t }]. */
      dropped: [],
      /**
       * PMD frames generated (the latest 10-20 thousand): [{ type, count, timestamp (ns, bigint, as
       * sent), deviceTime (the same, Unix s), trueDeviceTime (device time of the last sample, Unix
       * s, without the timestamp jitter), firstDeviceTime (of the first sample), spacing (device s
       * between samples), lastSampleTime (host), ready (host) }].
       */
      pmdFrames: [],
      /** True device times (Unix s) of a pmdFrames entry's samples, oldest first. */
      pmdSampleTimes: (frame) => Float64Array.from({ length: frame.count }, (_, i) => frame.firstDeviceTime + i * frame.spacing),
      _log: log,
      /** Per device and characteristic: { generated, dropped, delivered, undelivered }. */
      get stats() { return Object.fromEntries(Object.entries(sim.#sims).map(([k, d]) => [k, d.stats])); },
    };
  }

  // -------------------------------------------------------------------------------------------
  // Outages

  #scheduleOutages() {
    const opt = this.options.disconnects ?? [];
    const list = [];
    if (Array.isArray(opt)) {
      for (const o of opt) {
        if (!isPlainObject(o)) throw invalid(`disconnects: each entry must be { device, at, duration }, got ${describe(o)}`);
        const key = this.#resolveKey(o.device ?? 'strap', 'disconnects');
        if (!(o.at >= 0 && Number.isFinite(o.at)) || !(o.duration >= 0 && Number.isFinite(o.duration))) {
          throw invalid(`disconnects: each entry needs at >= 0 and duration >= 0 (finite seconds), got at ${describe(o.at)}, duration ${describe(o.duration)}`);
        }
        list.push({ device: key, start: this.start + o.at, end: this.start + o.at + o.duration });
      }
    } else if (opt && typeof opt === 'object') {
      const rng = createRng(this.seed, 'outages');
      const rate = opt.ratePerHour ?? 0;
      const horizon = opt.horizonSeconds ?? 21600;
      const [dmin, dmax] = Array.isArray(opt.duration) ? opt.duration : [opt.duration ?? 5, opt.duration ?? 5];
      for (const ref of opt.devices ?? Object.keys(this.#sims)) {
        const key = this.#resolveKey(ref, 'disconnects.devices');
        let t = rate > 0 ? rng.exponential(rate / 3600) : Infinity;
        while (t < horizon) {
          const d = rng.uniform(dmin, dmax);
          list.push({ device: key, start: this.start + t, end: this.start + t + d });
          t += d + rng.exponential(rate / 3600);
        }
      }
    }
    list.sort((a, b) => a.start - b.start);
    this.truth.outages = list.filter((o) => this.#sims[o.device]);
    const edges = [];
    for (const o of this.truth.outages) edges.push({ t: o.start, o, down: true }, { t: o.end, o, down: false });
    edges.sort((a, b) => a.t - b.t || (a.down ? 1 : -1));
    let i = 0;
    const down = new Map();
    const next = () => {
      if (i >= edges.length || this.closed) return;
      this._outageTimer = this.clock.setTimeout(() => {
        while (i < edges.length && edges[i].t <= this.clock.now() + 1e-9) {
          const e = edges[i++];
          const fake = this.devicesByKey[e.o.device];
          const n = (down.get(fake) ?? 0) + (e.down ? 1 : -1);
          down.set(fake, n);
          fake.reachable = n <= 0;
          if (e.down) fake.dropConnection('out-of-range');
        }
        next();
      }, Math.max(0, (edges[i].t - this.clock.now()) * 1000));
    };
    next();
  }

  // -------------------------------------------------------------------------------------------
  // Chest strap

  #buildStrap(sim) {
    const fake = sim.fake, phys = this.physiology, start = this.start, opts = this.options;
    const hrSvc = fake.addService('heart_rate');
    const hrm = hrSvc.addCharacteristic('heart_rate_measurement', { notify: true });
    hrSvc.addCharacteristic('body_sensor_location', { read: true }, { value: [1] });
    const bat = fake.addService('battery_service');
    bat.addCharacteristic('battery_level', { read: true }, { value: [perDevice(opts.battery, { strap: 87, oximeter: 64 }, 'battery').strap ?? 87] });
    const pmd = fake.addService(PMD_UUIDS.service);
    // A control point read answers 0F 05 and 15 zero bytes on an H10 (ECG + ACC).
    const control = pmd.addCharacteristic(PMD_UUIDS.control, { read: true, write: true, indicate: true }, { value: [0x0F, 0x05, ...new Array(15).fill(0)] });
    const data = pmd.addCharacteristic(PMD_UUIDS.data, { notify: true });

    // Heart rate: once a second on the strap's clock.
    const hrContact = opts.hrContact ?? false;
    const eps = sim.clock.eps;
    const tickRng = createRng(this.seed, 'hr-phase');
    const hrPhase = tickRng.uniform(0, 1);
    let tick = 0;
    const before = phys.beats(-10, 0);
    let lastBeat = before[before.length - 1] ?? -1;
    let lastTickRel = 0;
    const pending = [];
    const recent = [];
    for (let i = Math.max(1, before.length - 4); i < before.length; i++) recent.push((before[i] - before[i - 1]) * (1 + eps));
    const hrTick = () => {
      const h = sim.clock.hostOfOsc(hrPhase + tick);
      sim.at(h, () => {
        const rel = h - start;
        for (const b of phys.beats(lastTickRel, rel)) {
          const rr = (b - lastBeat) * (1 + eps);
          lastBeat = b;
          pending.push(Math.round(rr * 1024));
          recent.push(rr);
          if (recent.length > 4) recent.shift();
        }
        lastTickRel = rel;
        const rrs = pending.splice(0, 9);
        const bpm = recent.length ? 60 / (recent.reduce((a, b) => a + b, 0) / recent.length) : 60;
        sim.send(hrm, 'hr', encodeHeartRate(bpm, rrs, { contact: hrContact }), h);
        tick++;
        hrTick();
      });
    };
    hrTick();

    // PMD streams.
    const ecgRate = opts.ecgRateHz ?? 130.35;
    if (!(typeof ecgRate === 'number' && ecgRate > 0 && Number.isFinite(ecgRate))) throw invalid(`ecgRateHz must be a positive finite number, got ${describe(ecgRate)}`);
    const accRates = opts.accRatesHz ?? H10_ACC_RATES_HZ;
    if (accRates !== 'nominal' && !(accRates && typeof accRates === 'object' && ACC_RATES.every((r) => accRates[r] > 0 && Number.isFinite(accRates[r])))) {
      throw invalid(`accRatesHz must be 'nominal' or { ${ACC_RATES.map((r) => `${r}: Hz`).join(', ')} } (every rate positive and finite), got ${describe(accRates)}`);
    }
    const trueAccRate = (requested) => (accRates === 'nominal' ? requested : accRates[requested]);
    const compressed = opts.accCompressed ?? false;
    const maxBytes = opts.pmdMaxFrameBytes ?? 229;
    const blockSamples = opts.accDeltaBlockSamples ?? 16;
    const frameSeconds = opts.accFrameSeconds;
    if (frameSeconds !== undefined && !(frameSeconds > 0 && Number.isFinite(frameSeconds))) throw invalid(`accFrameSeconds must be a positive finite number, got ${describe(frameSeconds)}`);
    const rawMax = Math.min(ACC_RAW_MAX_SAMPLES, Math.floor((maxBytes - 10) / 6));
    const frameSamples = opts.accFrameSamples ?? rawMax;
    if (!(Number.isInteger(frameSamples) && frameSamples >= 1 && frameSamples <= rawMax)) throw invalid(`accFrameSamples must be an integer 1-${rawMax}, got ${describe(frameSamples)}`);
    const responses = opts.pmdResponses ?? 'h10';
    if (responses !== 'h10' && responses !== 'short') throw invalid(`pmdResponses must be 'h10' or 'short', got ${describe(responses)}`);
    const jitterUs = opts.pmdTimestampJitterUs ?? 12;
    if (!(typeof jitterUs === 'number' && jitterUs >= 0 && jitterUs < 1000)) throw invalid(`pmdTimestampJitterUs must be a number 0-1000 (µs, 1000 excluded), got ${describe(jitterUs)}`);
    const jitterRng = createRng(this.seed, 'pmd-timestamp-jitter');
    // One draw per frame, whole nanoseconds (the timestamp's unit).
    const jitterNs = () => (jitterUs > 0 ? BigInt(Math.round(jitterRng.uniform(-jitterUs, jitterUs) * 1000)) : 0n);
    const unixOf = (ns) => Number(ns) / 1e9 + UNIX_2000;
    const streams = { 0: null, 2: null };
    const faults = opts.faults ?? {};
    const dupAt = [...(faults.duplicatePmd ?? [])].sort((a, b) => a - b);
    const reorderAt = [...(faults.reorderPmd ?? [])].sort((a, b) => a - b);
    const faultRng = createRng(this.seed, 'pmd-faults');
    let held = null;

    const emitPmd = (bytes, ready, meta) => {
      const rel = ready - start;
      this.truth._log(this.truth.pmdFrames, meta);
      let dup = false, reorder = false;
      if (dupAt.length && dupAt[0] <= rel) { dupAt.shift(); dup = true; }
      else if (faults.duplicatePmdProbability && faultRng.next() < faults.duplicatePmdProbability) dup = true;
      if (reorderAt.length && reorderAt[0] <= rel) { reorderAt.shift(); reorder = true; }
      else if (faults.reorderPmdProbability && faultRng.next() < faults.reorderPmdProbability) reorder = true;
      if (held && held.meta.type === meta.type) {  // the held frame goes after the next one of its stream
        sim.send(data, 'pmd-data', bytes, ready);
        sim.send(data, 'pmd-data', held.bytes, ready);
        this.truth.faults.push({ kind: 'reorder-pmd', device: 'strap', t: ready, type: held.meta.type, timestamp: held.meta.timestamp });
        held = null;
        return;
      }
      if (reorder && !held) { held = { bytes, meta }; return; }
      sim.send(data, 'pmd-data', bytes, ready);
      if (dup) {
        sim.send(data, 'pmd-data', bytes, ready);
        this.truth.faults.push({ kind: 'duplicate-pmd', device: 'strap', t: ready, type: meta.type, timestamp: meta.timestamp });
      }
    };

    const stopStream = (type) => {
      const s = streams[type];
      if (s) sim.cancel(s.timer);
      streams[type] = null;
    };

    const startEcg = (now) => {
      const s = { o0: sim.clock.osc(now) + PMD_STARTUP, rate: ecgRate, frame: 0, timer: null };
      streams[0] = s;
      const schedule = () => {
        const first = s.frame * ECG_SAMPLES_PER_FRAME;
        const oLast = s.o0 + (first + ECG_SAMPLES_PER_FRAME - 1) / s.rate;
        const hLast = sim.clock.hostOfOsc(oLast);
        s.timer = sim.at(hLast + PMD_LATENCY, () => {
          const values = new Array(ECG_SAMPLES_PER_FRAME);
          for (let i = 0; i < ECG_SAMPLES_PER_FRAME; i++) {
            values[i] = Math.round(phys.ecgAt(sim.clock.hostOfOsc(s.o0 + (first + i) / s.rate) - start));
          }
          const exact = sim.clock.nsAtOsc(oLast);
          const ts = exact + jitterNs();
          emitPmd(encodePmdEcg(ts, values), hLast + PMD_LATENCY, {
            type: 'ecg', count: ECG_SAMPLES_PER_FRAME, timestamp: ts, deviceTime: unixOf(ts), trueDeviceTime: unixOf(exact),
            firstDeviceTime: unixOf(sim.clock.nsAtOsc(s.o0 + first / s.rate)), spacing: 1 / s.rate,
            lastSampleTime: hLast, ready: hLast + PMD_LATENCY,
          });
          s.frame++;
          schedule();
        });
      };
      schedule();
    };

    const startAcc = (now, { rate: requested, range }) => {
      const rate = trueAccRate(requested);
      // Samples taken per frame: a delta frame takes as many of them as fit (encodePmdAccDelta).
      const target = Math.max(1, Math.round(rate * (frameSeconds ?? 0.25)));
      const perFrame = compressed ? Math.min(target, 255) : frameSeconds === undefined ? frameSamples : Math.min(target, rawMax);
      const s = { o0: sim.clock.osc(now) + PMD_STARTUP, rate, range, next: 0, timer: null };
      streams[2] = s;
      const limit = range * 1000;
      const sample = (k) => phys.accAt(sim.clock.hostOfOsc(s.o0 + k / rate) - start)
        .map((v) => Math.max(-limit, Math.min(limit, Math.max(-32768, Math.min(32767, Math.round(v))))));
      const schedule = () => {
        const lastK = s.next + perFrame - 1;
        const hLast = sim.clock.hostOfOsc(s.o0 + lastK / rate);
        s.timer = sim.at(hLast + PMD_LATENCY, () => {
          const samples = [];
          for (let k = s.next; k <= lastK; k++) samples.push(sample(k));
          let bytes, count;
          const jitter = jitterNs();
          const exactOf = (n) => sim.clock.nsAtOsc(s.o0 + (s.next + n - 1) / rate);
          const tsOf = (n) => exactOf(n) + jitter;
          if (compressed) ({ bytes, count } = encodePmdAccDelta(tsOf, samples, { maxBytes, blockSamples }));
          else { count = samples.length; bytes = encodePmdAccRaw(tsOf(count), samples); }
          const ts = tsOf(count);
          const hEnd = sim.clock.hostOfOsc(s.o0 + (s.next + count - 1) / rate);
          emitPmd(bytes, hLast + PMD_LATENCY, {
            type: 'acc', count, timestamp: ts, deviceTime: unixOf(ts), trueDeviceTime: unixOf(exactOf(count)),
            firstDeviceTime: unixOf(sim.clock.nsAtOsc(s.o0 + s.next / rate)), spacing: 1 / rate,
            lastSampleTime: hEnd, ready: hLast + PMD_LATENCY,
          });
          s.next += count;
          schedule();
        });
      };
      schedule();
    };

    const respond = (bytes) => sim.send(control, 'pmd-control', Uint8Array.from(bytes), this.clock.now() + CONTROL_LATENCY, { reliable: true });

    control.onWrite = (bytes) => {
      const now = this.clock.now();
      const op = bytes[0], type = bytes.length > 1 ? bytes[1] : 0;
      // F0 op type status, then (success, or every response with 'short') the "more" byte 00,
      // then settings; an H10 ends its start responses with one more byte: 00 (ECG), 01 (ACC).
      const reply = (status, extra = []) => respond(status !== PMD_STATUS.SUCCESS && responses === 'h10'
        ? [0xF0, op ?? 0, type, status]
        : [0xF0, op ?? 0, type, status, 0x00, ...extra]);
      const started = () => reply(PMD_STATUS.SUCCESS, responses === 'h10' ? [type === 2 ? 0x01 : 0x00] : []);
      if (bytes.length < 2) return reply(PMD_STATUS.INVALID_LENGTH);
      if (op !== 0x01 && op !== 0x02 && op !== 0x03) return reply(PMD_STATUS.INVALID_OP_CODE);
      if (type !== 0 && type !== 2) return reply(type > 0x0F ? PMD_STATUS.INVALID_MEASUREMENT_TYPE : PMD_STATUS.NOT_SUPPORTED);
      if (op === 0x01) {
        if (type === 0) return reply(0, [0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]);
        return reply(0, [0x00, 0x04, 25, 0, 50, 0, 100, 0, 200, 0, 0x01, 0x01, 0x10, 0x00, 0x02, 0x03, 2, 0, 4, 0, 8, 0]);
      }
      if (op === 0x03) {
        stopStream(type);
        return reply(PMD_STATUS.SUCCESS);
      }
      const parsed = parseSettings(bytes.subarray(2));
      if (parsed.status) return reply(parsed.status);
      const st = parsed.settings;
      if (streams[type]) return reply(PMD_STATUS.ALREADY_IN_STATE);
      if (type === 0) {
        if (st.sampleRate === undefined || st.resolution === undefined) return reply(PMD_STATUS.INVALID_PARAMETER);
        if (st.sampleRate !== 130) return reply(PMD_STATUS.INVALID_SAMPLE_RATE);
        if (st.resolution !== 14) return reply(PMD_STATUS.INVALID_RESOLUTION);
        started();
        startEcg(now);
        return undefined;
      }
      if (st.sampleRate === undefined || st.resolution === undefined || st.range === undefined) return reply(PMD_STATUS.INVALID_PARAMETER);
      if (!ACC_RATES.includes(st.sampleRate)) return reply(PMD_STATUS.INVALID_SAMPLE_RATE);
      if (st.resolution !== 16) return reply(PMD_STATUS.INVALID_RESOLUTION);
      if (!ACC_RANGES.includes(st.range)) return reply(PMD_STATUS.INVALID_RANGE);
      started();
      startAcc(now, { rate: st.sampleRate, range: st.range });
      return undefined;
    };

    sim.onDisconnect = () => {
      stopStream(0);
      stopStream(2);
      held = null;
    };
    this.pmdStreams = streams;
  }

  // -------------------------------------------------------------------------------------------
  // Thermometer

  #buildThermometer(sim) {
    const fake = sim.fake, phys = this.physiology, start = this.start;
    const t = { intervalSeconds: 5, exponent: -2, timeField: true, type: null, ...(this.options.thermometer ?? {}) };
    if (t.exponent !== -1 && t.exponent !== -2) throw invalid(`thermometer.exponent must be -1 or -2, got ${describe(t.exponent)}`);
    // The Measurement Interval characteristic (0x2A21) is a uint16 of seconds (Bluetooth SIG Health
    // Thermometer Service); 0 there means "no periodic measurement", which this device does not model.
    if (!(Number.isInteger(t.intervalSeconds) && t.intervalSeconds >= 1 && t.intervalSeconds <= 65535)) {
      throw invalid(`thermometer.intervalSeconds must be an integer 1-65535, got ${describe(t.intervalSeconds)}`);
    }
    const svc = fake.addService('health_thermometer');
    const tm = svc.addCharacteristic('temperature_measurement', { indicate: true });
    svc.addCharacteristic('measurement_interval', { read: true }, { value: [t.intervalSeconds & 0xFF, t.intervalSeconds >> 8] });
    const phase = createRng(this.seed, 'thermo-phase').uniform(0, t.intervalSeconds);
    let n = 0;
    const next = () => {
      const h = sim.clock.hostOfOsc(phase + n * t.intervalSeconds);
      sim.at(h, () => {
        const celsius = phys.temperatureAt(h - start);
        const time = t.timeField ? calendar(sim.clock.unix(h)) : null;
        sim.send(tm, 'temperature', encodeTemperature(celsius, { exponent: t.exponent, time, type: t.type }), h, { reliable: true });
        n++;
        next();
      });
    };
    next();
  }

  // -------------------------------------------------------------------------------------------
  // Oximeter

  #buildOximeter(sim) {
    const fake = sim.fake, phys = this.physiology, start = this.start;
    const svc = fake.addService('pulse_oximeter');
    const plx = svc.addCharacteristic('plx_continuous_measurement', { notify: true });
    svc.addCharacteristic('plx_features', { read: true }, { value: [0x00, 0x00] });
    const bat = fake.addService('battery_service');
    bat.addCharacteristic('battery_level', { read: true }, { value: [perDevice(this.options.battery, { strap: 87, oximeter: 64 }, 'battery').oximeter ?? 64] });
    const phase = createRng(this.seed, 'oxi-phase').uniform(0, 1);
    let n = 0;
    const next = () => {
      const h = sim.clock.hostOfOsc(phase + n);
      sim.at(h, () => {
        const rel = h - start;
        const off = phys.fingerOffAt(rel);
        const bytes = off ? encodePlxContinuous(NaN, NaN) : encodePlxContinuous(phys.spo2At(rel), Math.round(phys.pulseRateAt(rel)));
        sim.send(plx, 'plx', bytes, h);
        n++;
        next();
      });
    };
    next();
  }
}

// Settings TLVs of a start command -> { settings } or { status }.
export function parseSettings(b) {
  const widths = { 0: 2, 1: 2, 2: 2, 3: 4, 4: 1, 5: 4 };
  const names = { 0: 'sampleRate', 1: 'resolution', 2: 'range', 3: 'rangeMilliunit', 4: 'channels', 5: 'factor' };
  const settings = {};
  let o = 0;
  while (o < b.length) {
    if (b.length - o < 2) return { status: PMD_STATUS.INVALID_LENGTH };
    const id = b[o], count = b[o + 1];
    if (!(id in widths)) return { status: PMD_STATUS.INVALID_PARAMETER };
    const w = widths[id];
    if (count < 1 || b.length - o - 2 < count * w) return { status: PMD_STATUS.INVALID_LENGTH };
    let v = 0;
    for (let k = w - 1; k >= 0; k--) v = v * 256 + b[o + 2 + k];
    settings[names[id]] = v;
    o += 2 + count * w;
  }
  return { settings };
}

/** A FakeBluetooth with the simulated wearables; see the options at the top of this file. */
export function createSimulatedBluetooth(options = {}) {
  return new SimulatedBluetooth(options);
}

export { u16 as uuid16 };
