// A fake Web Bluetooth: the navigator.bluetooth surface clients use, with the behaviours of a real
// browser that clients must survive, plus a device-side ("peripheral") API through which the
// simulator and the recording player make devices send bytes.
//
// Client side (the Web Bluetooth API, WebBluetoothCG spec / Chrome):
//   FakeBluetooth         requestDevice({ filters, optionalServices, acceptAllDevices }),
//                         getAvailability(), getDevices()
//   FakeDevice            EventTarget: id, name, gatt; 'gattserverdisconnected' (bubbles)
//   FakeGattServer        connected, connect(), disconnect(), getPrimaryService(s)()
//   FakeService           uuid, isPrimary, device, getCharacteristic(s)()
//   FakeCharacteristic    EventTarget: uuid, service, properties, value, readValue(),
//                         writeValue(), writeValueWithResponse(), writeValueWithoutResponse(),
//                         startNotifications(), stopNotifications(); 'characteristicvaluechanged'
//
// Behaviours modelled (each one a way real clients break):
// - UUIDs: 16/32-bit numbers, lowercase 128-bit strings and the standard GATT names; a service name
//   where a characteristic is expected (or an unknown name) is a TypeError, as in Chrome. Uppercase
//   128-bit strings are accepted and lowercased unless FakeBluetooth({ strictUuids: true }) (Chrome
//   rejects them).
// - Permissions: requestDevice grants the services named in the filters plus optionalServices;
//   any other service is a SecurityError (a filter by name alone grants no service).
// - characteristicvaluechanged: `event.target === characteristic`, `characteristic.value` is a
//   DataView over a buffer that is OVERWRITTEN (every byte inverted) as soon as dispatch returns,
//   so a client that keeps the DataView instead of copying its bytes sees corrupted data. The event
//   bubbles to the service, the device and the FakeBluetooth (there `event.target` is still the
//   characteristic). readValue() also fires the event (its DataView is not overwritten).
// - Disconnects (device side dropConnection(), or client disconnect()) fire
//   'gattserverdisconnected' on the device, stop every notification, and make every service and
//   characteristic object of that connection stale (InvalidStateError "... no longer exists"),
//   as Chrome does: after reconnecting, the client must get the services and characteristics again,
//   call startNotifications() again and re-send PMD start commands.
// - Operations on a disconnected server reject with NetworkError; connect() can be made to fail
//   (a device out of range) with reachable = false or failNextConnects(n); a second read/write on a
//   characteristic while one is in flight rejects with NetworkError "GATT operation already in
//   progress."; values over 512 bytes are an InvalidModificationError.
//
// Device side (not part of Web Bluetooth):
//   const device = new FakeDevice({ id, name, advertisedServices: ['heart_rate'] });
//   const svc = device.addService('heart_rate');
//   const hrm = svc.addCharacteristic('heart_rate_measurement', { notify: true });
//   hrm.notify(bytes);                       // delivered if connected and subscribed
//   svc.addCharacteristic('body_sensor_location', { read: true }, { value: [1] });
//   svc.addCharacteristic(uuid, { write: true, indicate: true }, { onWrite(bytes, info) {} });
//   device.onPeripheral('connect' | 'disconnect' | 'subscribe' | 'unsubscribe', fn);
//   device.dropConnection();                 // the link is lost
//
// Clocks: createRealClock() (performance.timeOrigin + performance.now(), global timers) and
// createVirtualClock(startSeconds) (deterministic; advance(seconds) / advanceAsync(seconds) run due
// timers in order). Every time is float64 seconds; timer delays are milliseconds as usual.

import { SensorformerError } from '../errors.js';

// ---------------------------------------------------------------------------------------------
// Clocks

/** The host clock: seconds on the performance.timeOrigin + performance.now() scale, global timers. */
export function createRealClock() {
  return {
    now: () => (performance.timeOrigin + performance.now()) / 1000,
    setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
    clearTimeout: (id) => globalThis.clearTimeout(id),
    setInterval: (fn, ms) => globalThis.setInterval(fn, ms),
    clearInterval: (id) => globalThis.clearInterval(id),
    virtual: false,
  };
}

// A macrotask boundary: every pending promise reaction runs before it.
function yieldToEventLoop() {
  if (typeof setImmediate === 'function') return new Promise((r) => setImmediate(r));
  if (typeof MessageChannel === 'function') {
    return new Promise((r) => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { ch.port1.close(); r(); };
      ch.port2.postMessage(0);
    });
  }
  return new Promise((r) => globalThis.setTimeout(r, 0));
}

/**
 * A deterministic clock for tests: time only moves in advance()/advanceAsync(), timers run in
 * order of due time, then of creation. `startSeconds` defaults to 1.7e9 (2023-11-14T22:13:20Z).
 */
export function createVirtualClock(startSeconds = 1.7e9) {
  // INVALID_ARGUMENT (not a TypeError/RangeError): the package's errors are told apart by code.
  if (!(typeof startSeconds === 'number' && Number.isFinite(startSeconds))) {
    throw new SensorformerError('INVALID_ARGUMENT', `createVirtualClock: startSeconds must be a finite number (Unix seconds), got ${String(startSeconds)}`);
  }
  let elapsed = 0;         // seconds since start (kept small for precision)
  let seq = 0;
  let nextId = 1;
  const heap = [];         // entries { due, seq, id, fn, period }
  const live = new Map();  // id -> entry
  const less = (a, b) => a.due < b.due || (a.due === b.due && a.seq < b.seq);
  const push = (e) => {
    heap.push(e);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(heap[i], heap[p])) break;
      [heap[i], heap[p]] = [heap[p], heap[i]];
      i = p;
    }
  };
  const pop = () => {
    const top = heap[0], last = heap.pop();
    if (heap.length) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l], heap[m])) m = l;
        if (r < heap.length && less(heap[r], heap[m])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    }
    return top;
  };
  const peek = () => {
    while (heap.length && !live.has(heap[0].id)) pop();  // drop cancelled timers
    return heap[0];
  };
  const delay = (ms) => (Number.isFinite(+ms) && +ms > 0 ? +ms / 1000 : 0);
  const schedule = (fn, ms, period) => {
    if (typeof fn !== 'function') throw new SensorformerError('INVALID_ARGUMENT', `virtual clock: the callback must be a function, got ${typeof fn}`);
    const id = nextId++;
    const e = { due: elapsed + delay(ms), seq: seq++, id, fn, period };
    live.set(id, e);
    push(e);
    return id;
  };
  const cancel = (id) => { live.delete(id); };
  // Finite: advance(Infinity) with a periodic timer pending would never return.
  const checkAdvance = (seconds, name) => {
    if (!(typeof seconds === 'number' && seconds >= 0 && Number.isFinite(seconds))) {
      throw new SensorformerError('INVALID_ARGUMENT', `virtual clock: ${name}(seconds) needs a finite number of seconds >= 0, got ${String(seconds)}`);
    }
  };
  const runOne = (limit) => {
    const e = peek();
    if (!e || e.due > limit) return false;
    pop();
    elapsed = Math.max(elapsed, e.due);
    if (e.period !== undefined) {
      const again = { ...e, due: e.due + Math.max(e.period, 1e-6), seq: seq++ };
      live.set(e.id, again);
      push(again);
    } else {
      live.delete(e.id);
    }
    e.fn();
    return true;
  };
  const clock = {
    virtual: true,
    start: startSeconds,
    now: () => startSeconds + elapsed,
    /** Seconds since the clock's start. */
    elapsed: () => elapsed,
    setTimeout: (fn, ms) => schedule(fn, ms, undefined),
    clearTimeout: cancel,
    setInterval: (fn, ms) => schedule(fn, ms, delay(ms)),
    clearInterval: cancel,
    /** Number of pending timers. */
    get pending() { return live.size; },
    /** Due time (clock seconds) of the next timer, or null. */
    nextDue() { const e = peek(); return e ? startSeconds + e.due : null; },
    /**
     * Moves time forward by `seconds`, running every timer that falls due (including timers those
     * timers create) synchronously, in order. Promise reactions do not run in between: use
     * advanceAsync for clients that await.
     */
    advance(seconds) {
      checkAdvance(seconds, 'advance');
      const target = elapsed + seconds;
      while (runOne(target));
      elapsed = Math.max(elapsed, target);
    },
    /** Moves time to absolute clock time `time` (no-op if already past). */
    advanceTo(time) {
      if (!(typeof time === 'number' && Number.isFinite(time))) {
        throw new SensorformerError('INVALID_ARGUMENT', `virtual clock: advanceTo(time) needs a finite clock time (seconds), got ${String(time)}`);
      }
      clock.advance(Math.max(0, time - clock.now()));
    },
    /**
     * As advance(), but lets the event loop run (every pending promise reaction) before the first
     * timer and after each timer, so async client code (awaits, reconnect loops) keeps up.
     */
    async advanceAsync(seconds) {
      checkAdvance(seconds, 'advanceAsync');
      const target = elapsed + seconds;
      await yieldToEventLoop();
      while (runOne(target)) await yieldToEventLoop();
      elapsed = Math.max(elapsed, target);
      await yieldToEventLoop();
    },
  };
  return clock;
}

// ---------------------------------------------------------------------------------------------
// UUIDs

const BASE = '-0000-1000-8000-00805f9b34fb';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** 16/32-bit alias -> '0000180d-0000-1000-8000-00805f9b34fb'. */
export function uuidFromAlias(alias) {
  return `${(alias >>> 0).toString(16).padStart(8, '0')}${BASE}`;
}

export const SERVICE_NAMES = Object.freeze({
  generic_access: 0x1800, generic_attribute: 0x1801, device_information: 0x180a,
  health_thermometer: 0x1809, heart_rate: 0x180d, battery_service: 0x180f,
  running_speed_and_cadence: 0x1814, environmental_sensing: 0x181a, pulse_oximeter: 0x1822,
});
export const CHARACTERISTIC_NAMES = Object.freeze({
  battery_level: 0x2a19, temperature_measurement: 0x2a1c, temperature_type: 0x2a1d,
  intermediate_temperature: 0x2a1e, measurement_interval: 0x2a21, model_number_string: 0x2a24,
  serial_number_string: 0x2a25, firmware_revision_string: 0x2a26, hardware_revision_string: 0x2a27,
  software_revision_string: 0x2a28, manufacturer_name_string: 0x2a29,
  heart_rate_measurement: 0x2a37, body_sensor_location: 0x2a38, heart_rate_control_point: 0x2a39,
  rsc_measurement: 0x2a53, rsc_feature: 0x2a54, plx_spot_check_measurement: 0x2a5e,
  plx_continuous_measurement: 0x2a5f, plx_features: 0x2a60, temperature: 0x2a6e,
});

/** The Polar Measurement Data service and its characteristics. */
export const PMD_UUIDS = Object.freeze({
  service: 'fb005c80-02e7-f387-1cad-8acd2d8df0c8',
  control: 'fb005c81-02e7-f387-1cad-8acd2d8df0c8',
  data: 'fb005c82-02e7-f387-1cad-8acd2d8df0c8',
});

function resolveUuid(value, names, kind, strict) {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0 && value <= 0xFFFFFFFF) return uuidFromAlias(value);
  } else if (typeof value === 'string') {
    if (UUID_RE.test(value)) return value;
    if (!strict && UUID_RE.test(value.toLowerCase())) return value.toLowerCase();
    if (Object.hasOwn(names, value)) return uuidFromAlias(names[value]);
  }
  throw new TypeError(`Failed to execute: Invalid ${kind} name: '${String(value)}'. It must be a valid UUID alias ` +
    `(e.g. 0x1234), UUID (lowercase hex characters e.g. '00001234-0000-1000-8000-00805f9b34fb'), or recognized standard name.`);
}

/** Service name / alias / UUID -> lowercase 128-bit UUID (TypeError when invalid). */
export function serviceUuid(value, { strict = false } = {}) {
  return resolveUuid(value, SERVICE_NAMES, 'Service', strict);
}
/** Characteristic name / alias / UUID -> lowercase 128-bit UUID (TypeError when invalid). */
export function characteristicUuid(value, { strict = false } = {}) {
  return resolveUuid(value, CHARACTERISTIC_NAMES, 'Characteristic', strict);
}
/** Any service or characteristic name / alias / UUID -> lowercase 128-bit UUID. */
export function canonicalUuid(value, { strict = false } = {}) {
  if (typeof value === 'string' && Object.hasOwn(CHARACTERISTIC_NAMES, value)) return characteristicUuid(value);
  return resolveUuid(value, SERVICE_NAMES, 'UUID', strict);
}

// ---------------------------------------------------------------------------------------------
// Errors and events

/** A DOMException (as browsers reject with), or an Error with the same name where none exists. */
export function domError(name, message) {
  if (typeof DOMException === 'function') return new DOMException(message, name);
  const e = new Error(message);
  e.name = name;
  return e;
}

// An event dispatched on an ancestor (service, device, bluetooth) during bubbling: `target` stays the
// object the event was fired at, `currentTarget` is the ancestor, as in a browser.
class RetargetedEvent extends Event {
  #origin;
  constructor(type, origin, init) {
    super(type, init);
    this.#origin = origin;
  }
  get target() { return this.#origin; }
  get srcElement() { return this.#origin; }
}

// Fires `type` at `target`, then at each ancestor unless a listener stopped propagation.
function fire(target, type, ancestors = [], props = null) {
  const event = new Event(type, { bubbles: true });
  if (props) Object.assign(event, props);
  target.dispatchEvent(event);
  for (const parent of ancestors) {
    if (event.cancelBubble || !parent) break;
    const e = new RetargetedEvent(type, target, { bubbles: true });
    if (props) Object.assign(e, props);
    parent.dispatchEvent(e);
    if (e.cancelBubble) break;
  }
  return event;
}

// `on<type>` event handler attributes (oncharacteristicvaluechanged = fn) over addEventListener.
function defineHandlers(cls, types) {
  for (const type of types) {
    const slot = Symbol(type);
    Object.defineProperty(cls.prototype, `on${type}`, {
      configurable: true,
      get() { return this[slot]?.fn ?? null; },
      set(fn) {
        if (this[slot]) this.removeEventListener(type, this[slot].listener);
        this[slot] = null;
        if (typeof fn === 'function') {
          const listener = (e) => fn.call(this, e);
          this[slot] = { fn, listener };
          this.addEventListener(type, listener);
        }
      },
    });
  }
}

function toBytes(value, what) {
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  if (Array.isArray(value)) return Uint8Array.from(value);
  throw new TypeError(`${what}: the value must be an ArrayBuffer or an ArrayBufferView`);
}

const PROPERTY_NAMES = ['broadcast', 'read', 'writeWithoutResponse', 'write', 'notify', 'indicate',
  'authenticatedSignedWrites', 'reliableWrite', 'writableAuxiliaries'];

// ---------------------------------------------------------------------------------------------
// Device side

/** A characteristic as the peripheral holds it (not the client's object). */
export class PeripheralCharacteristic {
  constructor(service, uuid, properties = {}, { value = null, onRead = null, onWrite = null } = {}) {
    this.service = service;
    this.uuid = characteristicUuid(uuid);
    this.properties = Object.freeze(Object.fromEntries(PROPERTY_NAMES.map((k) => [k, !!properties[k]])));
    this.value = value === null ? null : toBytes(value, 'value');
    this.onRead = onRead;    // () => bytes | undefined: the value a read returns (default: this.value)
    this.onWrite = onWrite;  // (bytes, { withResponse }) => void; throw a DOMException to fail the write
    this.subscribed = false; // the client enabled notifications/indications in this connection
  }

  get device() { return this.service.device; }

  /** Sets the value reads return. */
  setValue(bytes) { this.value = toBytes(bytes, 'setValue'); }

  /**
   * Sends a notification (or indication) to the client: returns true when it was dispatched (the
   * device is connected and the client subscribed in this connection).
   */
  notify(bytes) {
    const device = this.device;
    if (!device.gatt.connected || !this.subscribed) return false;
    const client = device.gatt._clientCharacteristic(this);
    if (!client) return false;
    client._deliver(bytes instanceof Uint8Array ? bytes : toBytes(bytes, 'notify'));
    return true;
  }
}

/** A primary service as the peripheral holds it. */
export class PeripheralService {
  constructor(device, uuid) {
    this.device = device;
    this.uuid = serviceUuid(uuid);
    this.characteristics = [];
  }

  addCharacteristic(uuid, properties, options) {
    const c = new PeripheralCharacteristic(this, uuid, properties, options);
    if (this.characteristics.some((x) => x.uuid === c.uuid)) throw new Error(`characteristic ${c.uuid} already exists in ${this.uuid}`);
    this.characteristics.push(c);
    return c;
  }

  characteristic(uuid) {
    const u = characteristicUuid(uuid);
    return this.characteristics.find((c) => c.uuid === u) ?? null;
  }
}

// ---------------------------------------------------------------------------------------------
// Client side

/** A Web Bluetooth BluetoothRemoteGATTCharacteristic. */
export class FakeCharacteristic extends EventTarget {
  #peripheral;
  #epoch;
  #busy = false;

  constructor(service, peripheral, epoch) {
    super();
    this.service = service;
    this.uuid = peripheral.uuid;
    this.properties = peripheral.properties;
    this.value = null;
    this.#peripheral = peripheral;
    this.#epoch = epoch;
  }

  get _peripheral() { return this.#peripheral; }

  #server() { return this.service.device.gatt; }

  #check(op) {
    const server = this.#server();
    if (!server.connected) {
      return domError('NetworkError', 'GATT Server is disconnected. Cannot perform GATT operations. (Re)connect first with `device.gatt.connect`.');
    }
    if (server._epoch !== this.#epoch && server._staleAttributes) return domError('InvalidStateError', 'GATT Characteristic no longer exists.');
    if (op && !op(this.properties)) return domError('NotSupportedError', 'GATT operation not permitted.');
    return null;
  }

  // Runs a read or write: one at a time per characteristic, after the configured latency.
  async #operate(fn) {
    if (this.#busy) throw domError('NetworkError', 'GATT operation already in progress.');
    this.#busy = true;
    try {
      await this.#server()._latency();
      const err = this.#check();
      if (err) throw err;
      return fn();
    } finally {
      this.#busy = false;
    }
  }

  async readValue() {
    const err = this.#check((p) => p.read);
    if (err) throw err;
    return this.#operate(() => {
      const p = this.#peripheral;
      const got = p.onRead ? p.onRead() : undefined;
      const bytes = got === undefined || got === null ? p.value ?? new Uint8Array(0) : toBytes(got, 'onRead');
      const copy = new Uint8Array(bytes);
      const view = new DataView(copy.buffer);
      this.value = view;
      fire(this, 'characteristicvaluechanged', this.#ancestors());
      return view;
    });
  }

  async #write(value, withResponse) {
    const bytes = toBytes(value, withResponse ? 'writeValueWithResponse' : 'writeValueWithoutResponse');
    const err = this.#check(withResponse ? (p) => p.write : (p) => p.writeWithoutResponse);
    if (err) throw err;
    if (bytes.length > 512) throw domError('InvalidModificationError', "Value can't exceed 512 bytes.");
    return this.#operate(() => {
      this.#peripheral.onWrite?.(bytes, { withResponse });
      return undefined;
    });
  }

  writeValueWithResponse(value) { return this.#write(value, true); }
  writeValueWithoutResponse(value) { return this.#write(value, false); }
  /** Deprecated in Web Bluetooth: with response when the characteristic supports it. */
  writeValue(value) { return this.#write(value, this.properties.write || !this.properties.writeWithoutResponse); }

  async startNotifications() {
    const err = this.#check((p) => p.notify || p.indicate);
    if (err) throw err;
    await this.#server()._latency();
    const again = this.#check();
    if (again) throw again;
    const p = this.#peripheral;
    if (!p.subscribed) {
      p.subscribed = true;
      this.service.device._peripheralEvent('subscribe', p);
    }
    return this;
  }

  async stopNotifications() {
    const err = this.#check();
    if (err) throw err;
    const p = this.#peripheral;
    if (p.subscribed) {
      p.subscribed = false;
      this.service.device._peripheralEvent('unsubscribe', p);
    }
    return this;
  }

  async getDescriptor(uuid) {
    throw domError('NotFoundError', `No Descriptors matching UUID ${uuid} found in Characteristic with UUID ${this.uuid}.`);
  }
  async getDescriptors() {
    throw domError('NotFoundError', `No Descriptors found in Characteristic with UUID ${this.uuid}.`);
  }

  #ancestors() {
    const device = this.service.device;
    return [this.service, device, device._bluetooth];
  }

  // A notification: set value, dispatch (and bubble), then overwrite the buffer as a browser that
  // reuses it may.
  _deliver(bytes) {
    const buffer = new Uint8Array(bytes.length);
    buffer.set(bytes);
    this.value = new DataView(buffer.buffer);
    try {
      fire(this, 'characteristicvaluechanged', this.#ancestors());
    } finally {
      if (this.#server()._overwriteAfterDispatch) for (let i = 0; i < buffer.length; i++) buffer[i] = ~buffer[i];
    }
  }
}
defineHandlers(FakeCharacteristic, ['characteristicvaluechanged']);

/** A Web Bluetooth BluetoothRemoteGATTService. */
export class FakeService extends EventTarget {
  #peripheral;
  #epoch;
  #characteristics = new Map();

  constructor(device, peripheral, epoch) {
    super();
    this.device = device;
    this.uuid = peripheral.uuid;
    this.isPrimary = true;
    this.#peripheral = peripheral;
    this.#epoch = epoch;
  }

  #check() {
    const server = this.device.gatt;
    if (!server.connected) {
      return domError('NetworkError', 'GATT Server is disconnected. Cannot retrieve characteristics. (Re)connect first with `device.gatt.connect`.');
    }
    if (server._epoch !== this.#epoch && server._staleAttributes) return domError('InvalidStateError', 'GATT Service no longer exists.');
    return null;
  }

  _client(p) {
    let c = this.#characteristics.get(p);
    if (!c) {
      c = new FakeCharacteristic(this, p, this.#epoch);
      this.#characteristics.set(p, c);
    }
    return c;
  }

  async getCharacteristic(uuid) {
    const u = characteristicUuid(uuid, { strict: this.device._strictUuids });
    const err = this.#check();
    if (err) throw err;
    await this.device.gatt._latency();
    const again = this.#check();
    if (again) throw again;
    const p = this.#peripheral.characteristics.find((c) => c.uuid === u);
    if (!p) throw domError('NotFoundError', `No Characteristics matching UUID ${u} found in Service with UUID ${this.uuid}.`);
    return this._client(p);
  }

  async getCharacteristics(uuid) {
    const u = uuid === undefined ? null : characteristicUuid(uuid, { strict: this.device._strictUuids });
    const err = this.#check();
    if (err) throw err;
    await this.device.gatt._latency();
    const list = this.#peripheral.characteristics.filter((c) => u === null || c.uuid === u);
    if (!list.length) {
      throw domError('NotFoundError', u ? `No Characteristics matching UUID ${u} found in Service with UUID ${this.uuid}.`
        : `No Characteristics found in service ${this.uuid}.`);
    }
    return list.map((p) => this._client(p));
  }
}

/** A Web Bluetooth BluetoothRemoteGATTServer. */
export class FakeGattServer {
  #connected = false;
  #services = new Map();  // PeripheralService -> FakeService of this connection

  constructor(device) {
    this.device = device;
    this._epoch = 0;
  }

  get connected() { return this.#connected; }
  get _staleAttributes() { return this.device._bluetooth?.staleAttributes ?? true; }
  get _overwriteAfterDispatch() { return this.device._bluetooth?.overwriteAfterDispatch ?? true; }

  // The delay of one GATT round trip (0 by default: a few microtasks).
  _latency() {
    const b = this.device._bluetooth;
    const ms = b?.gattLatencyMs ?? 0;
    if (ms > 0 && b?.clock) return new Promise((r) => b.clock.setTimeout(r, ms));
    return Promise.resolve();
  }

  async connect() {
    const device = this.device;
    const b = device._bluetooth;
    const epoch = this._epoch;
    const ms = b?.connectLatencyMs ?? 0;
    if (ms > 0 && b?.clock) await new Promise((r) => b.clock.setTimeout(r, ms));
    else await Promise.resolve();
    if (this.#connected) return this;
    if (this._epoch !== epoch) throw domError('AbortError', 'Connection attempt was aborted by a call to disconnect().');
    if (device._failConnects > 0) {
      device._failConnects--;
      throw domError('NetworkError', 'Connection attempt failed.');
    }
    if (!device.reachable) throw domError('NetworkError', 'Connection attempt failed.');
    this.#connected = true;
    this._epoch++;
    if (this._staleAttributes) this.#services = new Map();
    device._peripheralEvent('connect');
    return this;
  }

  /** Client disconnect: like a dropped link, fires gattserverdisconnected. */
  disconnect() {
    this._epoch++;
    if (!this.#connected) return;
    this._lose('client');
  }

  // The connection ends: notifications stop, attributes go stale, the event fires.
  _lose(reason) {
    if (!this.#connected) return false;
    this.#connected = false;
    this._epoch++;
    if (this._staleAttributes) this.#services = new Map();
    for (const s of this.device.peripheralServices) for (const c of s.characteristics) c.subscribed = false;
    this.device._peripheralEvent('disconnect', reason);
    fire(this.device, 'gattserverdisconnected', [this.device._bluetooth]);
    return true;
  }

  _clientService(p) {
    let s = this.#services.get(p);
    if (!s) {
      s = new FakeService(this.device, p, this._epoch);
      this.#services.set(p, s);
    }
    return s;
  }

  _clientCharacteristic(p) {
    return this._clientService(p.service)._client(p);
  }

  #check() {
    if (!this.#connected) {
      return domError('NetworkError', 'GATT Server is disconnected. Cannot retrieve services. (Re)connect first with `device.gatt.connect`.');
    }
    return null;
  }

  // The checks of both service lookups: permission, connection before and after the GATT round trip.
  async #lookup(u) {
    if (u !== null && !this.device._allowed(u)) {
      throw domError('SecurityError', "Origin is not allowed to access the service. Tip: Add the service UUID to 'optionalServices' in requestDevice() options.");
    }
    let err = this.#check();
    if (err) throw err;
    await this._latency();
    err = this.#check();
    if (err) throw err;
  }

  async getPrimaryService(uuid) {
    const u = serviceUuid(uuid, { strict: this.device._strictUuids });
    await this.#lookup(u);
    const p = this.device.peripheralServices.find((s) => s.uuid === u);
    if (!p) throw domError('NotFoundError', `No Services matching UUID ${u} found in Device.`);
    return this._clientService(p);
  }

  async getPrimaryServices(uuid) {
    const u = uuid === undefined ? null : serviceUuid(uuid, { strict: this.device._strictUuids });
    await this.#lookup(u);
    const list = this.device.peripheralServices.filter((s) => (u === null || s.uuid === u) && this.device._allowed(s.uuid));
    if (!list.length) throw domError('NotFoundError', u ? `No Services matching UUID ${u} found in Device.` : 'No Services found in device.');
    return list.map((p) => this._clientService(p));
  }
}

/** A Web Bluetooth BluetoothDevice, with the peripheral's side attached. */
export class FakeDevice extends EventTarget {
  #hooks = new Map();

  /**
   * @param {{ id: string, name?: string, advertisedServices?: Array<string|number> }} init
   *   advertisedServices: what requestDevice's `services` filters match (default: every service
   *   added with addService).
   */
  constructor(init) {
    super();
    const { id, name = null, advertisedServices = null } = init ?? {};
    if (typeof id !== 'string' || !id) throw new TypeError('FakeDevice: id must be a non-empty string');
    this.id = id;
    this.name = name;
    this.gatt = new FakeGattServer(this);
    this.peripheralServices = [];
    this.advertisedServices = advertisedServices ? advertisedServices.map((s) => serviceUuid(s)) : null;
    this.reachable = true;   // false: connect() fails (out of range)
    this._failConnects = 0;
    this._bluetooth = null;
    this._granted = null;    // Set of service UUIDs the page may use; null = all
  }

  get _strictUuids() { return this._bluetooth?.strictUuids ?? false; }
  _allowed(uuid) { return this._granted === null || this._granted.has(uuid); }

  /** The services requestDevice's `services` filters match. */
  get advertised() { return this.advertisedServices ?? this.peripheralServices.map((s) => s.uuid); }

  addService(uuid) {
    const s = new PeripheralService(this, uuid);
    if (this.peripheralServices.some((x) => x.uuid === s.uuid)) throw new Error(`service ${s.uuid} already exists`);
    this.peripheralServices.push(s);
    return s;
  }

  service(uuid) {
    const u = serviceUuid(uuid);
    return this.peripheralServices.find((s) => s.uuid === u) ?? null;
  }

  /** The next `n` connect() calls fail with NetworkError. */
  failNextConnects(n) { this._failConnects = Math.max(0, n | 0); }

  /** The link is lost from the device's side (out of range, switched off). */
  dropConnection(reason = 'link-loss') { return this.gatt._lose(reason); }

  /** Device-side hooks: 'connect', 'disconnect' (reason), 'subscribe' / 'unsubscribe' (characteristic). */
  onPeripheral(type, fn) {
    if (!this.#hooks.has(type)) this.#hooks.set(type, []);
    this.#hooks.get(type).push(fn);
    return () => {
      const list = this.#hooks.get(type);
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
    };
  }

  _peripheralEvent(type, arg) {
    for (const fn of this.#hooks.get(type) ?? []) fn(arg);
  }

  async watchAdvertisements() {
    throw domError('NotSupportedError', 'watchAdvertisements() is not supported by the fake.');
  }

  /** Revokes the page's permission for this device (and disconnects). */
  async forget() {
    this.gatt.disconnect();
    this._bluetooth?._forget(this);
  }
}
defineHandlers(FakeDevice, ['gattserverdisconnected', 'characteristicvaluechanged']);
defineHandlers(FakeService, ['characteristicvaluechanged']);

/**
 * A navigator.bluetooth. Options:
 *   devices               FakeDevices to offer (or add later with addDevice)
 *   available             getAvailability() answer (default true); false makes requestDevice fail
 *   chooser               (candidates, options) => device | null: the user's pick in the chooser
 *                         (default: the first candidate; null = the user cancelled)
 *   clock                 for connectLatencyMs / gattLatencyMs (default: the real clock)
 *   connectLatencyMs      time connect() takes (default 0: resolves after a few microtasks)
 *   gattLatencyMs         time each GATT operation takes (default 0)
 *   staleAttributes       services/characteristics of an ended connection stop working (default true)
 *   overwriteAfterDispatch  invert a notification's bytes after dispatch (default true)
 *   strictUuids           reject uppercase 128-bit UUID strings as Chrome does (default false)
 */
export class FakeBluetooth extends EventTarget {
  #devices = [];
  #granted = new Set();

  constructor({ devices = [], available = true, chooser = null, clock = null, connectLatencyMs = 0, gattLatencyMs = 0,
    staleAttributes = true, overwriteAfterDispatch = true, strictUuids = false } = {}) {
    super();
    this.available = available;
    this.chooser = chooser;
    this.clock = clock ?? createRealClock();
    this.connectLatencyMs = connectLatencyMs;
    this.gattLatencyMs = gattLatencyMs;
    this.staleAttributes = staleAttributes;
    this.overwriteAfterDispatch = overwriteAfterDispatch;
    this.strictUuids = strictUuids;
    for (const d of devices) this.addDevice(d);
  }

  /** Every device in range, granted or not (not part of Web Bluetooth). */
  get devices() { return [...this.#devices]; }

  addDevice(device) {
    if (!(device instanceof FakeDevice)) throw new TypeError('addDevice: expected a FakeDevice');
    device._bluetooth = this;
    this.#devices.push(device);
    return device;
  }

  async getAvailability() { return !!this.available; }

  /** Devices the page was granted by earlier requestDevice calls. */
  async getDevices() { return this.#devices.filter((d) => this.#granted.has(d)); }

  setAvailability(available) {
    if (!!available === !!this.available) return;
    this.available = !!available;
    fire(this, 'availabilitychanged', [], { value: this.available });
  }

  _forget(device) { this.#granted.delete(device); device._granted = new Set(); }

  async requestDevice(options) {
    const strict = this.strictUuids;
    if (options === undefined || options === null || typeof options !== 'object') {
      throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': Either 'filters' should be present or 'acceptAllDevices' should be true, but not both.");
    }
    const { filters, optionalServices = [], acceptAllDevices = false } = options;
    if ((filters === undefined) === !acceptAllDevices) {
      throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': Either 'filters' should be present or 'acceptAllDevices' should be true, but not both.");
    }
    const parsed = [];
    if (filters !== undefined) {
      if (!Array.isArray(filters) || filters.length === 0) {
        throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': 'filters' member must be non-empty to find any devices.");
      }
      for (const f of filters) {
        if (!f || (f.services === undefined && f.name === undefined && f.namePrefix === undefined &&
            f.manufacturerData === undefined && f.serviceData === undefined)) {
          throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': A filter must restrict the devices in some way.");
        }
        if (f.namePrefix === '') throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': 'namePrefix', if present, must be non-empty.");
        if (f.services !== undefined && (!Array.isArray(f.services) || f.services.length === 0)) {
          throw new TypeError("Failed to execute 'requestDevice' on 'Bluetooth': 'services', if present, must contain at least one service.");
        }
        parsed.push({ services: (f.services ?? []).map((s) => serviceUuid(s, { strict })), name: f.name, namePrefix: f.namePrefix,
          other: f.manufacturerData !== undefined || f.serviceData !== undefined });
      }
    }
    const optional = optionalServices.map((s) => serviceUuid(s, { strict }));
    if (!this.available) throw domError('NotFoundError', 'Bluetooth adapter not available.');
    const matches = (d) => parsed.some((f) => !f.other &&
      f.services.every((s) => d.advertised.includes(s)) &&
      (f.name === undefined || d.name === f.name) &&
      (f.namePrefix === undefined || (typeof d.name === 'string' && d.name.startsWith(f.namePrefix))));
    const candidates = this.#devices.filter((d) => acceptAllDevices || matches(d));
    const chosen = this.chooser ? this.chooser(candidates, options) : candidates[0];
    if (!chosen || !candidates.includes(chosen)) throw domError('NotFoundError', 'User cancelled the requestDevice() chooser.');
    const grant = new Set([...parsed.flatMap((f) => f.services), ...optional]);
    if (!chosen._granted) chosen._granted = new Set();
    for (const s of grant) chosen._granted.add(s);
    this.#granted.add(chosen);
    return chosen;
  }
}
defineHandlers(FakeBluetooth, ['availabilitychanged', 'gattserverdisconnected', 'characteristicvaluechanged']);
