// Recording Web Bluetooth sessions to text, and playing them back as a fake navigator.bluetooth.
//
// Format "sensorformer-recording-1" (JSON Lines, file extension .sfrec, UTF-8, "\n" line ends):
//
//   line 1, the header:
//     {"format":"sensorformer-recording-1","created":"2023-11-14T22:13:20.000Z","t0":1700000000,
//      "devices":[{"id":"q0Ol1tPQ8ZcWW8kOGTBeJw==","name":"Polar H10 SIM"}]}
//       format   exactly "sensorformer-recording-1"
//       created  ISO 8601 time the recording started (from the recording clock)
//       t0       host time (seconds) the recording started; replay time 0 (optional: else the
//                first event's t)
//       devices  every device the page obtained: id (BluetoothDevice.id) and name (string or null)
//   then one line per event, in non-decreasing t:
//     a notification or indication, bytes copied inside the event handler:
//       {"t":1700000001.234567,"dev":"q0Ol…","svc":"0000180d-0000-1000-8000-00805f9b34fb",
//        "chr":"00002a37-0000-1000-8000-00805f9b34fb","hex":"16413103"}
//     the result of a readValue():  the same fields plus "read":true
//     a connection made / lost:      {"t":1700000002.5,"dev":"q0Ol…","event":"connect"|"disconnect"}
//   t     host time in seconds (performance.timeOrigin + performance.now(), or the injected clock),
//         rounded to the microsecond
//   dev   a device id listed in the header
//   svc, chr  lowercase 128-bit UUIDs (16-bit aliases and standard names are accepted on input)
//   hex   the bytes, lowercase hex, two digits per byte
//   Blank lines are ignored; unknown fields are ignored (room for later additions).
//
// record(bluetooth, { clock }) wraps a navigator.bluetooth-like object: the page uses the returned
// `bluetooth` exactly as the original; stop() ends the recording and returns the text.
// replay(text, { speed, clock }) returns a FakeBluetooth whose devices, services and
// characteristics are those of the recording; it emits the recorded bytes at the recorded times
// (relative to the replay start, divided by speed) and drops the link at recorded disconnects
// (connect() fails until the time of the next recorded connect). Controls:
//   - PMD control point writes are accepted and answered with the device's recorded answers: the
//     n-th write of an (op code, measurement type) pair gets the n-th recorded indication
//     F0 op type ... of that pair (the last one again once they run out), so a replayed H10
//     session sees its real 6-byte start answers. A pair the recording never answered gets a
//     success indication F0 op type 00 00. The recorded indications are not replayed at their
//     recorded times (they answer writes). PMD data frames of a measurement type (byte 0 & 0x3F,
//     as decodePmdData reads it) flow only after the client started that type in the current
//     connection (gatePmd: false sends them all).
//   - Reads return the latest recorded read of that characteristic (the first before any).
//   - speed Infinity: every event as fast as possible, in order, a few per timer tick (recorded
//     disconnects then last no time at all: a client that reconnects with a backoff misses what
//     follows; use a large finite speed to keep reconnects).
//   - Notifications reach the client only while it is connected and subscribed, as on a device.
import { SensorformerError } from '../errors.js';
import { FakeBluetooth, FakeDevice, PMD_UUIDS, canonicalUuid, createRealClock } from './fake-gatt.js';

export const RECORDING_FORMAT = 'sensorformer-recording-1';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Bytes (DataView / typed array / ArrayBuffer) -> lowercase hex. */
export function toHex(value) {
  const b = value instanceof ArrayBuffer ? new Uint8Array(value)
    : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  let s = '';
  for (let i = 0; i < b.length; i++) s += HEX[b[i]];
  return s;
}

/** Lowercase or uppercase hex -> Uint8Array (no validation beyond the caller's). */
export function fromHex(hex) {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

const round6 = (t) => Math.round(t * 1e6) / 1e6;

// ---------------------------------------------------------------------------------------------
// Recording

/**
 * Wraps a navigator.bluetooth-like object and records what the page receives.
 * @returns {{ bluetooth: object, stop(): string, text(): string, readonly lineCount: number }}
 */
export function record(bluetooth, { clock = null } = {}) {
  if (!bluetooth || typeof bluetooth.requestDevice !== 'function') {
    throw new SensorformerError('INVALID_ARGUMENT', 'record: expected a navigator.bluetooth-like object with requestDevice()');
  }
  clock ??= createRealClock();
  const t0 = clock.now();
  const devices = new Map();
  const lines = [];
  const restores = [];
  const seen = new WeakSet();
  const reading = new Map();  // characteristic -> { logged }
  let active = true;

  const log = (obj) => { if (active) lines.push(JSON.stringify(obj)); };
  const patch = (obj, name, wrap) => {
    const own = Object.hasOwn(obj, name), orig = obj[name];
    if (typeof orig !== 'function') return;
    obj[name] = wrap(orig);
    restores.push(() => { if (own) obj[name] = orig; else delete obj[name]; });
  };
  const listen = (target, type, fn) => {
    target.addEventListener(type, fn);
    restores.push(() => target.removeEventListener(type, fn));
  };

  const watchCharacteristic = (device, service, ch) => {
    if (!ch || seen.has(ch)) return ch;
    seen.add(ch);
    const base = () => ({ t: round6(clock.now()), dev: device.id, svc: service.uuid, chr: ch.uuid });
    listen(ch, 'characteristicvaluechanged', (event) => {
      const v = event.target.value;
      if (!v) return;
      const pending = reading.get(ch);
      if (pending && !pending.logged) {
        pending.logged = true;
        log({ ...base(), hex: toHex(v), read: true });
      } else {
        log({ ...base(), hex: toHex(v) });
      }
    });
    patch(ch, 'readValue', (orig) => async function readValue(...args) {
      const pending = { logged: false };
      reading.set(ch, pending);
      try {
        const v = await orig.apply(this, args);
        if (!pending.logged) log({ ...base(), hex: toHex(v), read: true });
        return v;
      } finally {
        if (reading.get(ch) === pending) reading.delete(ch);
      }
    });
    return ch;
  };

  const watchService = (device, service) => {
    if (!service || seen.has(service)) return service;
    seen.add(service);
    patch(service, 'getCharacteristic', (orig) => async function getCharacteristic(...args) {
      return watchCharacteristic(device, service, await orig.apply(this, args));
    });
    patch(service, 'getCharacteristics', (orig) => async function getCharacteristics(...args) {
      return (await orig.apply(this, args)).map((c) => watchCharacteristic(device, service, c));
    });
    return service;
  };

  const watchDevice = (device) => {
    if (!device || seen.has(device)) return device;
    seen.add(device);
    devices.set(device.id, { id: device.id, name: device.name ?? null });
    listen(device, 'gattserverdisconnected', () => log({ t: round6(clock.now()), dev: device.id, event: 'disconnect' }));
    const gatt = device.gatt;
    patch(gatt, 'connect', (orig) => async function connect(...args) {
      const was = gatt.connected;
      const result = await orig.apply(this, args);
      if (!was && gatt.connected) log({ t: round6(clock.now()), dev: device.id, event: 'connect' });
      return result;
    });
    patch(gatt, 'getPrimaryService', (orig) => async function getPrimaryService(...args) {
      return watchService(device, await orig.apply(this, args));
    });
    patch(gatt, 'getPrimaryServices', (orig) => async function getPrimaryServices(...args) {
      return (await orig.apply(this, args)).map((s) => watchService(device, s));
    });
    return device;
  };

  const wrapped = {
    requestDevice: async (options) => watchDevice(await bluetooth.requestDevice(options)),
    getAvailability: () => bluetooth.getAvailability(),
    getDevices: async () => (await bluetooth.getDevices()).map(watchDevice),
    addEventListener: (...a) => bluetooth.addEventListener?.(...a),
    removeEventListener: (...a) => bluetooth.removeEventListener?.(...a),
    dispatchEvent: (e) => bluetooth.dispatchEvent?.(e),
    get referringDevice() { return bluetooth.referringDevice; },
    /** The object being recorded. */
    unwrapped: bluetooth,
  };

  const text = () => {
    const header = { format: RECORDING_FORMAT, created: new Date(Math.round(t0 * 1000)).toISOString(), t0: round6(t0), devices: [...devices.values()] };
    return [JSON.stringify(header), ...lines].join('\n') + '\n';
  };

  return {
    bluetooth: wrapped,
    /** The recording so far, as text. */
    text,
    get lineCount() { return lines.length; },
    /** Ends the recording (listeners and wrappers removed) and returns its text. */
    stop() {
      if (active) {
        active = false;
        for (const r of restores.splice(0).reverse()) r();
      }
      return text();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Parsing

function bad(line, message) {
  return Object.assign(new SensorformerError('BAD_FORMAT', `recording line ${line}: ${message}`), { line });
}

function uuidAt(value, line, field) {
  if (typeof value !== 'string' && typeof value !== 'number') throw bad(line, `"${field}" must be a UUID string, got ${JSON.stringify(value)}`);
  try {
    return canonicalUuid(value);
  } catch {
    throw bad(line, `"${field}" is not a UUID: ${JSON.stringify(value)}`);
  }
}

/**
 * Validates a recording and returns { header, events }; events are
 * { line, t, dev, kind: 'notification' | 'read' | 'connect' | 'disconnect', svc, chr, hex, bytes }.
 * Throws SensorformerError 'BAD_FORMAT' (with `line`) naming the first bad line.
 */
export function parseRecording(text) {
  if (typeof text !== 'string') throw new SensorformerError('INVALID_ARGUMENT', `parseRecording: expected the recording text (a string), got ${text === null ? 'null' : typeof text}`);
  const rows = text.split(/\r?\n/);
  const parse = (s, n) => {
    try {
      return JSON.parse(s);
    } catch (cause) {
      throw bad(n, `not valid JSON (${cause.message})`);
    }
  };
  if (!rows[0] || !rows[0].trim()) throw bad(1, `expected the header {"format":"${RECORDING_FORMAT}",...}, found ${rows[0] === undefined || rows[0] === '' ? 'an empty line' : 'a blank line'}`);
  const header = parse(rows[0], 1);
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw bad(1, 'the header must be a JSON object');
  if (header.format !== RECORDING_FORMAT) throw bad(1, `expected "format":"${RECORDING_FORMAT}", got ${JSON.stringify(header.format)}`);
  if (header.created !== undefined && typeof header.created !== 'string') throw bad(1, '"created" must be an ISO 8601 string');
  if (header.t0 !== undefined && !Number.isFinite(header.t0)) throw bad(1, '"t0" must be a finite number of seconds');
  if (!Array.isArray(header.devices)) throw bad(1, '"devices" must be an array of { id, name }');
  const ids = new Set();
  header.devices.forEach((d, i) => {
    if (!d || typeof d !== 'object' || typeof d.id !== 'string' || !d.id) throw bad(1, `devices[${i}] needs a non-empty string "id"`);
    if (d.name !== undefined && d.name !== null && typeof d.name !== 'string') throw bad(1, `devices[${i}].name must be a string or null`);
    if (ids.has(d.id)) throw bad(1, `devices[${i}]: duplicate id ${JSON.stringify(d.id)}`);
    ids.add(d.id);
  });
  const events = [];
  let last = -Infinity;
  for (let i = 1; i < rows.length; i++) {
    const n = i + 1, row = rows[i];
    if (!row.trim()) continue;
    const o = parse(row, n);
    if (!o || typeof o !== 'object' || Array.isArray(o)) throw bad(n, 'an event must be a JSON object');
    if (!Number.isFinite(o.t)) throw bad(n, `"t" must be a finite number of seconds, got ${JSON.stringify(o.t)}`);
    if (o.t < last) throw bad(n, `"t" ${o.t} goes back in time (previous event at ${last})`);
    last = o.t;
    if (typeof o.dev !== 'string' || !ids.has(o.dev)) throw bad(n, `"dev" ${JSON.stringify(o.dev)} is not a device of the header`);
    if (o.event !== undefined) {
      if (o.event !== 'connect' && o.event !== 'disconnect') throw bad(n, `"event" must be "connect" or "disconnect", got ${JSON.stringify(o.event)}`);
      events.push({ line: n, t: o.t, dev: o.dev, kind: o.event });
      continue;
    }
    const svc = uuidAt(o.svc, n, 'svc'), chr = uuidAt(o.chr, n, 'chr');
    if (typeof o.hex !== 'string' || o.hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(o.hex)) {
      throw bad(n, `"hex" must be an even number of hex digits, got ${JSON.stringify(o.hex)}`);
    }
    if (o.read !== undefined && typeof o.read !== 'boolean') throw bad(n, '"read" must be true or false');
    const hex = o.hex.toLowerCase();
    events.push({ line: n, t: o.t, dev: o.dev, kind: o.read ? 'read' : 'notification', svc, chr, hex, bytes: fromHex(hex) });
  }
  return { header, events };
}

// ---------------------------------------------------------------------------------------------
// Replay

const INDICATE = new Set([`00002a1c-0000-1000-8000-00805f9b34fb`, PMD_UUIDS.control]);

/**
 * A FakeBluetooth playing a recording. Options: speed (1; > 0, Infinity = as fast as possible),
 * clock (real clock), autoStart (true: playback starts now; false: call start()), gatePmd (true),
 * and the FakeBluetooth options (staleAttributes, overwriteAfterDispatch, chooser, ...).
 */
export function replay(text, options = {}) {
  return new ReplayBluetooth(typeof text === 'string' ? parseRecording(text) : text, options);
}

export class ReplayBluetooth extends FakeBluetooth {
  #events;
  #t0;
  #speed;
  #gatePmd;
  #index = 0;
  #timer = null;
  #startHost = null;
  #state = new Map();  // device id -> { fake, started: Set, reads: Map }
  #resolveFinished;
  #closed = false;

  constructor(recording, { speed = 1, clock = null, autoStart = true, gatePmd = true, ...fakeOptions } = {}) {
    if (!(speed > 0)) throw new SensorformerError('INVALID_ARGUMENT', `replay: speed must be > 0 (or Infinity), got ${speed}`);
    super({ clock: clock ?? createRealClock(), ...fakeOptions });
    const { header, events } = recording;
    this.recording = recording;
    this.#events = events;
    this.#t0 = Number.isFinite(header.t0) ? header.t0 : events[0]?.t ?? 0;
    this.#speed = speed;
    this.#gatePmd = gatePmd;
    this.finished = new Promise((r) => { this.#resolveFinished = r; });
    this.#build(header, events);
    if (autoStart) this.start();
  }

  /** Seconds of playback (recorded span divided by speed). */
  get duration() {
    const last = this.#events[this.#events.length - 1];
    return last ? Math.max(0, last.t - this.#t0) / this.#speed : 0;
  }

  /** Events played so far. */
  get position() { return this.#index; }

  #build(header, events) {
    const layout = new Map();  // dev -> Map(svc -> Map(chr -> { notify, read }))
    for (const d of header.devices) layout.set(d.id, new Map());
    for (const e of events) {
      if (!e.svc) continue;
      const svcs = layout.get(e.dev);
      if (!svcs.has(e.svc)) svcs.set(e.svc, new Map());
      const chrs = svcs.get(e.svc);
      if (!chrs.has(e.chr)) chrs.set(e.chr, { notify: false, read: false });
      chrs.get(e.chr)[e.kind === 'read' ? 'read' : 'notify'] = true;
    }
    for (const d of header.devices) {
      const svcs = layout.get(d.id);
      const fake = new FakeDevice({ id: d.id, name: d.name ?? null, advertisedServices: [...svcs.keys()] });
      // answers: "op type" -> recorded control point indications, in order; answered: how many
      // writes of that pair were answered so far.
      const state = { fake, started: new Set(), reads: new Map(), chars: new Map(), answers: new Map(), answered: new Map() };
      if (svcs.has(PMD_UUIDS.service)) {
        const p = svcs.get(PMD_UUIDS.service);
        if (!p.has(PMD_UUIDS.control)) p.set(PMD_UUIDS.control, { notify: true, read: false });
        if (!p.has(PMD_UUIDS.data)) p.set(PMD_UUIDS.data, { notify: true, read: false });
      }
      for (const [svcUuid, chrs] of svcs) {
        const svc = fake.addService(svcUuid);
        for (const [chrUuid, use] of chrs) {
          const isControl = chrUuid === PMD_UUIDS.control;
          const props = {
            read: use.read || isControl,
            write: isControl,
            notify: use.notify && !INDICATE.has(chrUuid),
            indicate: use.notify && INDICATE.has(chrUuid) || isControl,
          };
          const firstRead = events.find((e) => e.kind === 'read' && e.dev === d.id && e.chr === chrUuid && e.svc === svcUuid);
          const ch = svc.addCharacteristic(chrUuid, props, {
            value: firstRead ? firstRead.bytes : isControl ? this.#features(events, d.id) : null,
          });
          state.chars.set(`${svcUuid} ${chrUuid}`, ch);
          if (isControl) ch.onWrite = (bytes) => this.#control(state, ch, bytes);
        }
      }
      for (const e of events) {
        if (e.dev === d.id && e.chr === PMD_UUIDS.control && e.kind === 'notification' && e.bytes.length >= 4 && e.bytes[0] === 0xF0) {
          const key = `${e.bytes[1]} ${e.bytes[2]}`;
          if (!state.answers.has(key)) state.answers.set(key, []);
          state.answers.get(key).push(e.bytes);
        }
      }
      fake.onPeripheral('disconnect', () => state.started.clear());
      this.addDevice(fake);
      this.#state.set(d.id, state);
    }
  }

  // A features read for a PMD control point that was never read in the recording.
  #features(events, dev) {
    let mask = 0;
    for (const e of events) if (e.dev === dev && e.chr === PMD_UUIDS.data && e.bytes.length && (e.bytes[0] & 0x3F) < 8) mask |= 1 << (e.bytes[0] & 0x3F);
    return Uint8Array.of(0x0F, mask, 0, 0, 0, 0, 0);
  }

  #control(state, ch, bytes) {
    const op = bytes[0] ?? 0, type = bytes[1] ?? 0;
    if (op === 0x02) state.started.add(type);
    if (op === 0x03) state.started.delete(type);
    const key = `${op} ${type}`, recorded = state.answers.get(key);
    let answer = Uint8Array.of(0xF0, op, type, 0x00, 0x00);
    if (recorded) {
      const n = state.answered.get(key) ?? 0;
      answer = recorded[Math.min(n, recorded.length - 1)];
      state.answered.set(key, n + 1);
    }
    this.clock.setTimeout(() => ch.notify(answer), 0);
  }

  /** Starts playback now (once). */
  start() {
    if (this.#startHost !== null || this.#closed) return;
    this.#startHost = this.clock.now();
    this.#schedule();
  }

  /** Stops playback (timers cleared; `finished` resolves). */
  close() {
    this.#closed = true;
    if (this.#timer !== null) this.clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#finish();
  }

  #finish() {
    for (const s of this.#state.values()) s.fake.reachable = true;
    this.#resolveFinished?.();
    this.#resolveFinished = null;
  }

  #target(e) {
    return this.#speed === Infinity ? this.#startHost : this.#startHost + (e.t - this.#t0) / this.#speed;
  }

  #schedule() {
    if (this.#closed) return;
    if (this.#index >= this.#events.length) { this.#finish(); return; }
    const target = this.#target(this.#events[this.#index]);
    const delay = Math.max(0, (target - this.clock.now()) * 1000);
    this.#timer = this.clock.setTimeout(() => {
      this.#timer = null;
      if (this.#closed) return;
      if (this.#speed === Infinity) {
        const batch = this.clock.virtual ? 1 : 256;
        for (let k = 0; k < batch && this.#index < this.#events.length; k++) this.#play(this.#events[this.#index++]);
      } else {
        const now = this.clock.now() + 1e-9;
        while (this.#index < this.#events.length && this.#target(this.#events[this.#index]) <= now) this.#play(this.#events[this.#index++]);
      }
      this.#schedule();
    }, delay);
  }

  #play(e) {
    const state = this.#state.get(e.dev);
    const fake = state.fake;
    if (e.kind === 'disconnect') {
      fake.reachable = false;  // until the next recorded connect (or the end of playback)
      fake.dropConnection('recorded');
      return;
    }
    if (e.kind === 'connect') { fake.reachable = true; return; }
    const ch = state.chars.get(`${e.svc} ${e.chr}`);
    if (e.kind === 'read') { ch.setValue(e.bytes); return; }
    if (e.chr === PMD_UUIDS.control) return;  // answered by #control instead
    if (this.#gatePmd && e.chr === PMD_UUIDS.data && !(e.bytes.length && state.started.has(e.bytes[0] & 0x3F))) return;
    ch.notify(e.bytes);
  }
}
