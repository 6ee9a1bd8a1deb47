// Where the signals come from: a session of wearables (simulated, or real over Web Bluetooth)
// feeding one WindowAssembler through the package's device layer (connectWearable). Every kind
// of device gets its own connectWearable call (one chooser each) and only its own streams, so a
// disconnect of the strap marks a gap in the strap's streams and not in the thermometer's.
import {
  WindowAssembler,
  connectWearable,
  createRealClock,
  DEVICE_FILTERS,
} from '../../web/src/ble/index.js';
import { playExport } from '../../web/src/ble/export-player.js';
import { createSimulatedBluetooth } from '../../web/src/simulator/index.js';
import { ALL_STREAMS, DEVICE_TITLES, streamsOf } from './streams.js';
import { hostNow } from './dom.js';

// A tour through the three activities (seconds), repeated: a visitor sees every class within
// two minutes. '?schedule=random' uses the simulator's own seeded schedule instead.
const TOUR = [
  { activity: 'rest', duration: 30 }, { activity: 'walk', duration: 40 },
  { activity: 'run', duration: 40 }, { activity: 'walk', duration: 30 },
];

// A device's close(): a Wearable's returns a promise, a recording's player's nothing, and either
// may throw. Called without await it still starts closing at once (the body runs up to its first
// await); the promise never rejects: a device that cannot close cleanly is let go all the same.
async function closeQuietly(device) {
  try {
    await device?.close();
  } catch {
    // nothing more to let go of
  }
}

export function demoSchedule(repeats = 40) {
  const list = [];
  for (let i = 0; i < repeats; i++) list.push(...TOUR);
  list.push({ activity: 'rest', duration: 60 });
  return list;
}

/**
 * Events: 'change' (a device's state changed), 'log' ({ detail: { kind, text, time, device } }),
 * 'wearable' ({ detail: { kind, wearable } }: a device connected).
 * devices: Map kind -> { kind, name, state: 'connecting' | 'streaming' | 'reconnecting' | 'lost' | 'closed', wearable, battery, location }
 */
export class Session extends EventTarget {
  constructor({ source, bluetooth, sim = null, label, clock = null }) {
    super();
    this.source = source;          // 'simulated' | 'bluetooth' | 'recording'
    this.label = label;
    this.bluetooth = bluetooth;
    this.sim = sim;
    this.clock = clock;            // null: the device layer's real clock
    this.assembler = new WindowAssembler();
    for (const [id, spec] of Object.entries(ALL_STREAMS)) this.assembler.add(id, { capacitySeconds: 120, ...spec });
    this.devices = new Map();
    this.sinks = new Set();  // takers of every device's samples and gap marks (Wearable.addSink)
    this.closed = false;
    this.started = hostNow();
  }

  /**
   * A simulated wearable set: strap, thermometer and oximeter, on the real clock (or `clock`: a
   * virtual one, tools/af/simulated_accuracy.mjs); `af`: the strap's AF episodes scheduled up front
   * (the simulator's option; the page starts them with sim.startAf).
   */
  static simulated({ dropoutProbability = 0.005, seed = Math.floor(Math.random() * 1e9), schedule = 'tour', clock = null, af = null } = {}) {
    const sim = createSimulatedBluetooth({
      clock: clock ?? createRealClock(),
      seed,
      dropoutProbability,
      activities: schedule === 'random' ? null : demoSchedule(),
      af,
    });
    return new Session({ source: 'simulated', bluetooth: sim, sim, label: 'Simulated wearable', clock });
  }

  /**
   * A recorded export (readPolarLogger's result) played at its real pace from now on, through
   * the same takers as a live device (the assembler, the stream sessions' feeders). Its streams
   * keep the demo's specs where the page has them (ALL_STREAMS: the models know chest, wrist and
   * finger, not the upper arm of a Verity Sense); the others (gyro, magnetometer, PPG, PPI) reach
   * the feeders, which leave out what the models have no input for. Call play() after switching
   * to it (its first samples are due 0.5 s later).
   */
  static recording(result, label) {
    const session = new Session({ source: 'recording', bluetooth: null, label });
    session.recording = result;
    return session;
  }

  play() {
    if (this.closed) return;  // replaced by another source before it started
    const result = this.recording;
    // The placement the streams the page has no spec for are declared with (a feeder that meets
    // them, like the AF session's, leaves them out by its model's config): the models know chest,
    // wrist and finger; an arm-worn sensor is nearest the wrist.
    const player = playExport(result, createRealClock(), { startAt: hostNow() + 0.5, assembler: this.assembler, name: this.label, placement: 'wrist' });
    const entry = { kind: 'recording', name: this.label, state: 'streaming', wearable: player, battery: null, location: null };
    this.devices.set('recording', entry);
    this.player = player;
    this.dispatchEvent(new CustomEvent('wearable', { detail: { kind: 'recording', wearable: player } }));
    this.#log('connect', `${this.label}: playing ${Object.values(player.total).reduce((a, b) => a + b, 0).toLocaleString('en-US')} samples of ${Object.keys(player.total).length} streams at their real pace`);
    player.addEventListener('end', () => {
      entry.state = 'closed';
      this.#log('info', `${this.label}: the recording ended (every sample delivered)`);
      this.#changed();
    });
    this.#changed();
  }

  /** navigator.bluetooth (real, or whatever a test put there). */
  static bluetooth(bluetooth = navigator.bluetooth) {
    return new Session({ source: 'bluetooth', bluetooth, label: 'Web Bluetooth' });
  }

  #log(kind, text, extra = {}) {
    this.dispatchEvent(new CustomEvent('log', { detail: { kind, text, time: hostNow(), ...extra } }));
  }

  #changed() {
    this.dispatchEvent(new Event('change'));
  }

  /**
   * Connects one kind of device ('strap' | 'thermometer' | 'oximeter'). With real Web Bluetooth
   * this must run inside a click handler (requestDevice opens the browser's chooser): call it
   * before awaiting anything else.
   */
  async connect(kind) {
    // A device of this kind already here (a strap whose reconnects were given up) is let go first,
    // before the chooser: closing it later would drop the link the new one makes (Web Bluetooth
    // hands out the same BluetoothDevice for the same wearable).
    closeQuietly(this.devices.get(kind)?.wearable);
    const entry = { kind, name: DEVICE_TITLES[kind], state: 'connecting', wearable: null, battery: null, location: null };
    this.devices.set(kind, entry);
    this.#changed();
    let wearable;
    try {
      // The sinks from the first notification on: a stream session fed later would miss samples.
      wearable = await connectWearable({ bluetooth: this.bluetooth, clock: this.clock ?? undefined, filters: DEVICE_FILTERS[kind], assembler: this.assembler, streams: streamsOf(kind), sinks: [...this.sinks] });
    } catch (error) {
      this.devices.delete(kind);
      this.#changed();
      throw error;
    }
    if (this.closed) {
      await wearable.close();
      return null;
    }
    Object.assign(entry, { wearable, name: wearable.name, state: 'streaming', battery: wearable.battery, location: wearable.location });
    // addSink's listeners take the new device (a sink added while it was connecting included).
    this.dispatchEvent(new CustomEvent('wearable', { detail: { kind, wearable } }));
    const device = wearable.name;
    this.#log('connect', `${device} connected${wearable.battery !== null ? ` (battery ${wearable.battery} %)` : ''}`, { device });
    wearable.addEventListener('disconnect', (e) => {
      entry.state = 'reconnecting';
      entry.disconnectedAt = e.detail.time;
      this.#log('disconnect', `${device}: link lost, reconnecting (backoff 2 s, 4 s, …)`, { device });
      this.#changed();
    });
    wearable.addEventListener('reconnect-failed', (e) => {
      this.#log('retry', `${device}: reconnect attempt ${e.detail.attempt} failed (${e.detail.error?.message ?? 'no link'})`, { device });
    });
    wearable.addEventListener('gap', (e) => {
      const { start, end } = e.detail;
      this.#log('gap', `${device}: gap of ${(end - start).toFixed(1)} s marked as missing`, { device, start, end });
    });
    wearable.addEventListener('reconnect', (e) => {
      entry.state = 'streaming';
      entry.reconnectedAt = e.detail.time;
      this.#log('reconnect', `${device} reconnected (attempt ${e.detail.attempt}); streams restarted`, { device, at: e.detail.time });
      this.#changed();
    });
    wearable.addEventListener('error', (e) => {
      const error = e.detail.error;
      if (error?.code === 'BLUETOOTH_DISCONNECTED') {
        entry.state = 'lost';
        this.#changed();
      }
      this.#log('error', `${device}: ${error?.message ?? error}`, { device });
    });
    this.#changed();
    return entry;
  }

  /**
   * Adds a taker of every device's samples and gap marks ({ push, markGap }: a streaming
   * session's feeder), on the devices connected now and on those that connect later. Returns a
   * function that removes it from all of them.
   */
  addSink(sink) {
    this.sinks.add(sink);
    const removers = [...this.devices.values()].filter((d) => d.wearable).map((d) => d.wearable.addSink(sink));
    const onConnect = (e) => { if (this.sinks.has(sink)) removers.push(e.detail.wearable.addSink(sink)); };
    this.addEventListener('wearable', onConnect);
    return () => {
      this.sinks.delete(sink);
      this.removeEventListener('wearable', onConnect);
      for (const remove of removers) remove();
    };
  }

  /** Connects every kind of device the simulator offers (no chooser: the fake picks). */
  async connectAll(kinds = ['strap', 'thermometer', 'oximeter']) {
    const results = await Promise.allSettled(kinds.map((k) => this.connect(k)));
    return results;
  }

  /** Whether a connected device can be made to drop its link (the fake devices can). */
  get canSimulateDisconnect() {
    const strap = this.devices.get('strap');
    return !!strap?.wearable && typeof strap.wearable.device.dropConnection === 'function';
  }

  /**
   * Drops the strap's link for `seconds` (out of range: reconnects fail until then). The device
   * layer notices (gattserverdisconnected), marks the gap and reconnects with its backoff.
   */
  simulateDisconnect(seconds = 3, kind = 'strap') {
    const entry = this.devices.get(kind);
    const device = entry?.wearable?.device;
    if (!device || typeof device.dropConnection !== 'function') return false;
    if (entry.state !== 'streaming') return false;
    device.reachable = false;
    device.dropConnection('out-of-range');
    setTimeout(() => { device.reachable = true; }, Math.max(0, seconds * 1000));
    this.#log('simulate', `${entry.name} out of range for ${seconds} s (simulated)`, { device: entry.name });
    return true;
  }

  /** Streams that feed the model and the devices they come from. */
  deviceOfStream(id) {
    for (const [kind, entry] of this.devices) {
      // a recording's player delivers the streams its files hold
      const has = kind === 'recording' ? entry.wearable?.total[id] !== undefined : streamsOf(kind)[id];
      if (entry.wearable && has) return entry;
    }
    return null;
  }

  /** Lets every device go (closeQuietly: one that fails keeps neither the others nor the caller). */
  async close() {
    this.closed = true;
    // The recording's player is also its device entry's wearable: closed there.
    for (const entry of this.devices.values()) {
      entry.state = 'closed';
      await closeQuietly(entry.wearable);
    }
    this.sim?.close();
    this.#changed();
  }
}
