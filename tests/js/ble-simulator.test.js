// The simulated wearables and the fake Web Bluetooth, on a virtual clock: minutes of device time in
// milliseconds. Bytes are decoded with web/src/ble/decoders.js when it exists (else with the small
// local decoders below), and compared with the simulator's ground truth. The strap's defaults are
// those of a real Polar H10 (the simulator.js header: HR flags 0x10, 6-byte start responses, raw
// ACC frames of 36 samples, true rates ~130.35 / 51.07 / 204.3 Hz, ~12 µs timestamp jitter).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import {
  createSimulatedBluetooth, createVirtualClock, UNIX_2000, encodePmdAccDelta, encodeHeartRate, H10_ACC_RATES_HZ,
} from '../../web/src/simulator/devices.js';
import {
  FakeBluetooth, FakeDevice, PMD_UUIDS, canonicalUuid, characteristicUuid, serviceUuid,
} from '../../web/src/ble/fake-gatt.js';
import { createPhysiology } from '../../web/src/simulator/physiology.js';
import { SensorformerError } from '../../web/src/errors.js';

// A bad option is INVALID_ARGUMENT whose message names it (and its range); a RangeError or
// TypeError would not do: the package's errors are told apart by their code.
const invalidArgument = (pattern) => (e) => {
  assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e?.name}: ${e?.message}`);
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, pattern);
  return true;
};

// ---------------------------------------------------------------------------------------------
// Decoders: the shared ones when present, else local helpers written from the public layouts
// (Bluetooth SIG GATT Specification Supplement; Polar's PMD documentation, polar-ble-sdk
// technical_documentation: a delta frame's reference sample is 3 x ceil(16 / 8) bytes for ACC).

const local = {
  decodeSfloat(w) {
    if ([0x07FF, 0x0800, 0x07FE, 0x0802, 0x0801].includes(w)) return { value: NaN, missing: 'nan' };
    let m = w & 0xFFF; if (m >= 0x800) m -= 0x1000;
    let e = w >> 12; if (e >= 8) e -= 16;
    return { value: m * 10 ** e, missing: null };
  },
  decodeHeartRate(b) {
    const f = b[0];
    let o = 2;
    const heartRate = f & 1 ? b[1] | (b[2] << 8) : b[1];
    if (f & 1) o = 3;
    if (f & 8) o += 2;
    const rrIntervals = [];
    if (f & 0x10) for (; o + 1 < b.length; o += 2) rrIntervals.push((b[o] | (b[o + 1] << 8)) / 1024);
    return { heartRate, contact: f & 4 ? (f & 2 ? 'detected' : 'not-detected') : 'unsupported', rrIntervals };
  },
  decodeTemperature(b) {
    const w = (b[1] | (b[2] << 8) | (b[3] << 16) | (b[4] << 24)) >>> 0;
    let m = w & 0xFFFFFF; if (m >= 0x800000) m -= 0x1000000;
    let e = w >>> 24; if (e >= 0x80) e -= 0x100;
    const time = b[0] & 2 ? { year: b[5] | (b[6] << 8), month: b[7], day: b[8], hours: b[9], minutes: b[10], seconds: b[11] } : null;
    return { celsius: m / 10 ** -e, unit: b[0] & 1 ? 'fahrenheit' : 'celsius', time };
  },
  decodePlxContinuous(b) {
    const s = local.decodeSfloat(b[1] | (b[2] << 8)), p = local.decodeSfloat(b[3] | (b[4] << 8));
    const missing = {};
    if (s.missing) missing.spo2 = s.missing;
    if (p.missing) missing.pulseRate = p.missing;
    return { spo2: s.value, pulseRate: p.value, missing };
  },
  decodePmdControlResponse(b) {
    return { opCode: b[1], type: b[2], status: b[3], ok: b[3] === 0 };
  },
  decodePmdData(b) {
    let ts = 0n;
    for (let i = 7; i >= 0; i--) ts = (ts << 8n) | BigInt(b[1 + i]);
    const frameType = b[9], type = ['ecg', 'ppg', 'acc'][b[0]] ?? b[0];
    const out = { type, timestamp: ts, deviceTime: Number(ts) / 1e9 + UNIX_2000, frameType, compressed: (frameType & 0x80) !== 0 };
    const s16 = (o) => { const v = b[o] | (b[o + 1] << 8); return v >= 0x8000 ? v - 0x10000 : v; };
    if (type === 'ecg') {
      const n = (b.length - 10) / 3, v = new Int32Array(n);
      for (let i = 0; i < n; i++) { const x = b[10 + 3 * i] | (b[11 + 3 * i] << 8) | (b[12 + 3 * i] << 16); v[i] = x >= 0x800000 ? x - 0x1000000 : x; }
      out.samples = v;
    } else if (type === 'acc' && frameType === 0x01) {
      const n = (b.length - 10) / 6, x = [], y = [], z = [];
      for (let i = 0; i < n; i++) { x.push(s16(10 + 6 * i)); y.push(s16(12 + 6 * i)); z.push(s16(14 + 6 * i)); }
      out.samples = { x: Int16Array.from(x), y: Int16Array.from(y), z: Int16Array.from(z) };
    } else if (type === 'acc' && (frameType === 0x80 || frameType === 0x81)) {
      const cols = [[s16(10)], [s16(12)], [s16(14)]];
      let o = 16;
      while (o < b.length) {
        const w = b[o], n = b[o + 1], start = o + 2;
        let bit = 0;
        for (let s = 0; s < n; s++) {
          for (let c = 0; c < 3; c++) {
            let raw = 0;
            for (let k = 0; k < w; k++, bit++) if ((b[start + (bit >> 3)] >> (bit & 7)) & 1) raw += 2 ** k;
            if (raw >= 2 ** (w - 1)) raw -= 2 ** w;
            cols[c].push(cols[c][cols[c].length - 1] + raw);
          }
        }
        o = start + Math.ceil((w * n * 3) / 8);
      }
      out.samples = { x: Int16Array.from(cols[0]), y: Int16Array.from(cols[1]), z: Int16Array.from(cols[2]) };
    }
    return out;
  },
};

const SHARED = new URL('../../web/src/ble/decoders.js', import.meta.url);
let shared = null;
if (fs.existsSync(SHARED) && !process.env.SENSORFORMER_LOCAL_DECODERS) {
  try {
    shared = await import(SHARED.href);
  } catch (e) {
    console.log(`decoders.js exists but does not load (${e.message}): using the local decoders`);
  }
}
const dec = shared ?? local;
console.log(`decoding with ${shared ? 'web/src/ble/decoders.js' : 'the local test decoders'}`);

// ---------------------------------------------------------------------------------------------
// A client driving the fake exactly like a page drives Web Bluetooth.

const U = {
  hr: canonicalUuid('heart_rate_measurement'),
  temp: canonicalUuid('temperature_measurement'),
  plx: canonicalUuid('plx_continuous_measurement'),
  control: PMD_UUIDS.control,
  data: PMD_UUIDS.data,
};
const ALL_SERVICES = ['heart_rate', 'battery_service', 'health_thermometer', 'pulse_oximeter', PMD_UUIDS.service];
const copy = (v) => new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
const hex = (b) => Buffer.from(b).toString('hex');

function pmdStartEcg() { return Uint8Array.of(0x02, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00); }
function pmdStartAcc(rate = 100, range = 8) {
  return Uint8Array.of(0x02, 0x02, 0x00, 0x01, rate & 0xFF, rate >> 8, 0x01, 0x01, 0x10, 0x00, 0x02, 0x01, range, 0x00);
}

// Connects, subscribes to every notifying characteristic, reads what can be read, starts PMD
// streams. `log` gets { t, dev, chr, bytes } for every notification.
async function openClient(bt, clock, name, { log = [], pmd = true, accRate = 100 } = {}) {
  const device = await bt.requestDevice({ filters: [{ name }], optionalServices: ALL_SERVICES });
  const client = { device, log, chars: new Map(), reads: new Map() };
  client.subscribe = async () => {
    const server = await device.gatt.connect();
    client.chars.clear();
    for (const svc of await server.getPrimaryServices()) {
      for (const ch of await svc.getCharacteristics()) {
        client.chars.set(ch.uuid, ch);
        if (ch.properties.read) client.reads.set(ch.uuid, copy(await ch.readValue()));
        if (ch.properties.notify || ch.properties.indicate) {
          ch.addEventListener('characteristicvaluechanged', (e) => {
            assert.equal(e.target, ch);
            log.push({ t: clock.now(), dev: device.id, chr: ch.uuid, bytes: copy(e.target.value) });
          });
          await ch.startNotifications();
        }
      }
    }
    const control = client.chars.get(U.control);
    if (control && pmd) {
      await control.writeValueWithResponse(pmdStartEcg());
      await control.writeValueWithResponse(pmdStartAcc(accRate));
    }
  };
  await client.subscribe();
  return client;
}

const ACTIVITIES = [{ activity: 'rest', duration: 40 }, { activity: 'walk', duration: 40 }, { activity: 'run', duration: 60 }];

async function session(options, seconds, clientOptions = {}) {
  const clock = createVirtualClock(1.7e9);
  const bt = createSimulatedBluetooth({ seed: 7, clock, activities: ACTIVITIES, ...options });
  const log = [];
  const clients = {};
  for (const [key, name] of [['strap', 'Polar H10 SIM'], ['thermometer', 'Thermo SIM'], ['oximeter', 'Oxi SIM']]) {
    if (bt.devicesByKey[key]) clients[key] = await openClient(bt, clock, name, { log, ...clientOptions });
  }
  clock.advance(seconds);
  return { clock, bt, log, clients, truth: bt.truth, of: (chr) => log.filter((e) => e.chr === chr) };
}

const main = await session({ fingerOff: [{ at: 30, duration: 6 }] }, 125);

function frames(s, type) {
  return s.of(U.data).map((e) => ({ ...e, frame: dec.decodePmdData(e.bytes) })).filter((e) => e.frame.type === type);
}

const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
const std = (a) => { const m = mean(a); return Math.sqrt(mean(a.map((x) => (x - m) ** 2))); };

// ---------------------------------------------------------------------------------------------
// The fake Web Bluetooth

test('UUIDs: aliases, names and 128-bit strings canonicalize to lowercase 128-bit', () => {
  assert.equal(serviceUuid(0x180D), '0000180d-0000-1000-8000-00805f9b34fb');
  assert.equal(serviceUuid('heart_rate'), '0000180d-0000-1000-8000-00805f9b34fb');
  assert.equal(characteristicUuid('heart_rate_measurement'), '00002a37-0000-1000-8000-00805f9b34fb');
  assert.equal(serviceUuid('FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8'), PMD_UUIDS.service);
  for (const [name, alias] of [['battery_service', 0x180f], ['health_thermometer', 0x1809], ['pulse_oximeter', 0x1822]]) {
    assert.equal(serviceUuid(name), serviceUuid(alias));
  }
  for (const [name, alias] of [['temperature_measurement', 0x2a1c], ['plx_continuous_measurement', 0x2a5f], ['body_sensor_location', 0x2a38], ['battery_level', 0x2a19]]) {
    assert.equal(characteristicUuid(name), characteristicUuid(alias));
  }
  assert.throws(() => serviceUuid('heart_rate_measurement'), TypeError);  // a characteristic name
  assert.throws(() => serviceUuid('not_a_service'), TypeError);
  assert.throws(() => serviceUuid('FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8', { strict: true }), TypeError);
});

test('requestDevice: filters by services / name / namePrefix, NotFoundError, permissions', async () => {
  const clock = createVirtualClock();
  const bt = createSimulatedBluetooth({ seed: 1, clock });
  assert.equal(await bt.getAvailability(), true);
  assert.deepEqual(await bt.getDevices(), []);
  const strap = await bt.requestDevice({ filters: [{ services: ['heart_rate'] }] });
  assert.equal(strap.name, 'Polar H10 SIM');
  assert.equal((await bt.requestDevice({ filters: [{ namePrefix: 'Oxi' }] })).name, 'Oxi SIM');
  assert.equal((await bt.requestDevice({ filters: [{ services: [0x1809] }] })).name, 'Thermo SIM');
  assert.equal((await bt.requestDevice({ acceptAllDevices: true })).name, 'Polar H10 SIM');
  await assert.rejects(bt.requestDevice({ filters: [{ name: 'Nope' }] }), { name: 'NotFoundError' });
  await assert.rejects(bt.requestDevice({ filters: [{ services: [PMD_UUIDS.service] }] }), { name: 'NotFoundError' });  // PMD is not advertised
  await assert.rejects(bt.requestDevice({}), TypeError);
  await assert.rejects(bt.requestDevice({ filters: [] }), TypeError);
  assert.equal((await bt.getDevices()).length, 3);
  // Services not named in filters or optionalServices are off limits (a classic Web Bluetooth bug).
  const server = await strap.gatt.connect();
  assert.equal(server.connected, true);
  await server.getPrimaryService('heart_rate');
  await assert.rejects(server.getPrimaryService(PMD_UUIDS.service), { name: 'SecurityError' });
  await assert.rejects(server.getPrimaryService('battery_service'), { name: 'SecurityError' });
  await assert.rejects(server.getPrimaryService('heart_rate_measurement'), TypeError);
  const again = await bt.requestDevice({ filters: [{ namePrefix: 'Polar' }], optionalServices: [PMD_UUIDS.service] });
  assert.equal(again, strap);  // the same BluetoothDevice object
  const pmd = await server.getPrimaryService('FB005C80-02E7-F387-1CAD-8ACD2D8DF0C8');
  await assert.rejects(pmd.getCharacteristic('heart_rate_measurement'), { name: 'NotFoundError' });
  const control = await pmd.getCharacteristic(PMD_UUIDS.control);
  assert.deepEqual(control.properties.read && control.properties.write && control.properties.indicate, true);
  const features = copy(await control.readValue());
  assert.deepEqual([...features.slice(0, 2)], [0x0F, 0x05]);
  await assert.rejects(control.writeValueWithResponse(new Uint8Array(513)), { name: 'InvalidModificationError' });
  const both = [control.readValue(), control.readValue()];
  await assert.rejects(both[1], { name: 'NetworkError', message: /already in progress/ });
  await both[0];
  bt.setAvailability(false);
  await assert.rejects(bt.requestDevice({ acceptAllDevices: true }), { name: 'NotFoundError' });
  bt.close();
});

test('the virtual clock runs timers in order, intervals, clears, and advanceAsync lets promises run', async () => {
  const clock = createVirtualClock(100);
  const seen = [];
  clock.setTimeout(() => seen.push(['b', clock.now()]), 20);
  clock.setTimeout(() => seen.push(['a', clock.now()]), 10);
  clock.setTimeout(() => seen.push(['a2', clock.now()]), 10);
  const gone = clock.setTimeout(() => seen.push(['never']), 5);
  clock.clearTimeout(gone);
  const iv = clock.setInterval(() => seen.push(['i', clock.now()]), 8);
  clock.advance(0.025);
  clock.clearInterval(iv);
  clock.advance(1);
  assert.deepEqual(seen.map((x) => x[0]), ['i', 'a', 'a2', 'i', 'b', 'i']);
  assert.ok(Math.abs(clock.now() - 101.025) < 1e-9);
  let done = false;
  clock.setTimeout(async () => { await null; await null; clock.setTimeout(() => { done = true; }, 100); }, 100);
  clock.advance(0.3);
  assert.equal(done, false);  // the inner timer was created after advance() returned
  await clock.advanceAsync(0.3);
  assert.equal(done, true);
});

test('characteristicvaluechanged: target is the characteristic, the DataView is overwritten after dispatch, the event bubbles', async () => {
  const clock = createVirtualClock();
  const bt = createSimulatedBluetooth({ seed: 2, clock, devices: ['strap'] });
  const device = await bt.requestDevice({ filters: [{ services: ['heart_rate'] }] });
  const server = await device.gatt.connect();
  const ch = await (await server.getPrimaryService('heart_rate')).getCharacteristic('heart_rate_measurement');
  const kept = [];
  let bubbled = 0, handler = 0;
  ch.addEventListener('characteristicvaluechanged', (e) => {
    assert.equal(e.target, ch);
    assert.ok(e.target.value instanceof DataView);
    kept.push({ view: e.target.value, bytes: copy(e.target.value) });
  });
  ch.oncharacteristicvaluechanged = () => { handler++; };
  device.addEventListener('characteristicvaluechanged', (e) => { assert.equal(e.target, ch); assert.equal(e.currentTarget, device); bubbled++; });
  await ch.startNotifications();
  clock.advance(5);
  assert.ok(kept.length >= 4);
  assert.equal(bubbled, kept.length);
  assert.equal(handler, kept.length);
  for (const k of kept) {
    assert.equal(k.bytes[0] & ~0x10, 0);                     // what the handler saw: an H10's flags (0x10 or 0)
    assert.notDeepEqual(copy(k.view), k.bytes);              // the kept DataView is garbage now
  }
  bt.close();
});

// ---------------------------------------------------------------------------------------------
// Bytes and physiology over a 2-minute session

test('heart rate 0x2A37: once a second, flags 0x10 as an H10 sends (u8 HR, RR, no contact bits), RR lists match the true beats', () => {
  // A notification captured from a real H10 (public capture, github.com/fstanis/polar-h10-web
  // test/helpers/captured.ts): 10 4B 34 03 = 75 bpm, one RR of 0x0334 = 820/1024 s.
  assert.deepEqual([...encodeHeartRate(75, [820])], [0x10, 0x4B, 0x34, 0x03]);
  // hrContact (earlier versions' default): bits 1-2 set, contact supported and detected.
  assert.deepEqual([...encodeHeartRate(75, [820], { contact: true })], [0x16, 0x4B, 0x34, 0x03]);
  assert.deepEqual([...encodeHeartRate(75, [], { contact: true })], [0x06, 0x4B]);
  const hr = main.of(U.hr).map((e) => ({ t: e.t, raw: e.bytes, m: dec.decodeHeartRate(e.bytes) }));
  assert.ok(hr.length >= 124 && hr.length <= 126, `${hr.length} notifications in 125 s`);
  for (const { raw, m } of hr) {
    assert.equal(raw[0], m.rrIntervals.length ? 0x10 : 0x00, `flags ${raw[0]}`);
    assert.equal(raw.length, 2 + 2 * m.rrIntervals.length);
    assert.equal(m.contact, 'unsupported');
  }
  // The RR stream is a contiguous run of the true RR intervals (rounded to 1/1024 s; drift 20 ppm).
  const rr = hr.flatMap((x) => x.m.rrIntervals);
  const beats = main.truth.beatTimes(main.truth.start - 5, main.clock.now());
  const trueRr = Array.from(beats.subarray(1), (b, i) => b - beats[i]);
  let best = null;
  for (let k = 0; k + rr.length <= trueRr.length; k++) {
    let worst = 0;
    for (let i = 0; i < rr.length && worst < 0.01; i++) worst = Math.max(worst, Math.abs(rr[i] - trueRr[k + i]));
    if (worst < 0.01) { best = { k, worst }; break; }
  }
  assert.ok(best, 'the decoded RR intervals are a run of the true ones');
  assert.ok(best.worst <= 0.5 / 1024 + 1e-4, `worst RR error ${best.worst}`);
  // The reported HR follows the activity (with lag): rest < walk < run.
  const hrIn = (a, b) => mean(hr.filter((x) => x.t >= main.truth.start + a && x.t < main.truth.start + b).map((x) => x.m.heartRate));
  const rest = hrIn(20, 40), walk = hrIn(65, 80), run = hrIn(110, 125);
  assert.ok(rest > 50 && rest < 75 && walk > 85 && walk < 115 && run > 130 && run < 170, `HR ${rest} / ${walk} / ${run}`);
});

test('thermometer 0x2A1C: indications every 5 s, Celsius FLOAT (exponent -2) with date time, near the true skin temperature', () => {
  const temps = main.of(U.temp);
  assert.ok(temps.length >= 24 && temps.length <= 26, `${temps.length} indications`);
  for (const e of temps) {
    assert.equal(e.bytes.length, 12);
    assert.equal(e.bytes[0], 0x02);
    assert.equal(e.bytes[4], 0xFE);  // exponent -2
    const m = dec.decodeTemperature(e.bytes);
    assert.equal(m.unit, 'celsius');
    assert.ok(m.celsius >= 33 && m.celsius <= 34.5, `${m.celsius} °C`);
    assert.ok(Math.abs(m.celsius - main.truth.temperatureAt(e.t)) < 0.1);
    assert.deepEqual([m.time.year, m.time.month, m.time.day], [2023, 11, 14]);
  }
  const gaps = temps.slice(1).map((e, i) => e.t - temps[i].t);
  assert.ok(Math.abs(mean(gaps) - 5) < 0.05);
});

test('oximeter 0x2A5F: SpO2 and pulse rate as SFLOAT once a second, NaN while the finger is off', () => {
  const plx = main.of(U.plx).map((e) => ({ t: e.t - main.truth.start, raw: e.bytes, m: dec.decodePlxContinuous(e.bytes) }));
  assert.ok(plx.length >= 124 && plx.length <= 126);
  const off = plx.filter((x) => x.m.missing.spo2);
  assert.ok(off.length >= 5 && off.length <= 7, `${off.length} finger-off notifications`);
  for (const x of off) {
    assert.ok(x.t >= 30 && x.t < 36.2);
    assert.deepEqual([...x.raw], [0x00, 0xFF, 0x07, 0xFF, 0x07]);
  }
  for (const x of plx.filter((y) => !y.m.missing.spo2)) {
    assert.equal(x.raw[0], 0);
    assert.ok(x.m.spo2 >= 96 && x.m.spo2 <= 99, `${x.m.spo2} %`);
    assert.ok(Math.abs(x.m.pulseRate - main.truth.heartRateAt(x.t + main.truth.start)) < 6);
  }
});

// Expected bytes: a real H10's answers (public capture, github.com/fstanis/polar-h10-web
// test/helpers/captured.ts): get-settings as below, ECG start F0 02 00 00 00 00, ACC start
// F0 02 02 00 00 01, stop F0 03 tt 00 00, a rejected command F0 op type status (4 bytes).
async function controlPoint(options) {
  const clock = createVirtualClock();
  const bt = createSimulatedBluetooth({ seed: 3, clock, devices: ['strap'], ...options });
  const device = await bt.requestDevice({ filters: [{ namePrefix: 'Polar' }], optionalServices: [PMD_UUIDS.service] });
  const server = await device.gatt.connect();
  const control = await (await server.getPrimaryService(PMD_UUIDS.service)).getCharacteristic(PMD_UUIDS.control);
  const answers = [];
  control.addEventListener('characteristicvaluechanged', (e) => answers.push(copy(e.target.value)));
  await control.startNotifications();
  // Waits for the answer (a deadline, not a fixed time: it comes at a connection event, sometimes
  // a late one), then 0.1 s more to see that no second answer follows.
  const ask = async (bytes) => {
    await control.writeValueWithResponse(Uint8Array.from(bytes));
    assert.equal(answers.length, 0, 'the indication comes after the write resolves');
    for (let t = 0; answers.length === 0; t += 0.005) {
      assert.ok(t < 2, `no answer to ${hex(Uint8Array.from(bytes))} within 2 s`);
      clock.advance(0.005);
    }
    clock.advance(0.1);
    assert.equal(answers.length, 1, 'one indication per command');
    return [...answers.splice(0)[0]];
  };
  return { bt, control, ask, answers };
}

test('PMD control point: get-settings, start and errors answered as an H10 answers them', async () => {
  const { bt, control, ask, answers } = await controlPoint({});
  assert.deepEqual([...copy(await control.readValue())], [0x0F, 0x05, ...new Array(15).fill(0)]);
  answers.length = 0;  // a read fires characteristicvaluechanged too
  assert.deepEqual(await ask([0x01, 0x00]), [0xF0, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00]);
  const accSettings = await ask([0x01, 0x02]);
  assert.deepEqual(accSettings, [0xF0, 0x01, 0x02, 0x00, 0x00, 0x00, 0x04, 0x19, 0x00, 0x32, 0x00, 0x64, 0x00, 0xC8, 0x00,
    0x01, 0x01, 0x10, 0x00, 0x02, 0x03, 0x02, 0x00, 0x04, 0x00, 0x08, 0x00]);
  if (shared) assert.deepEqual(dec.decodePmdControlResponse(Uint8Array.from(accSettings)).settings.sampleRate, [25, 50, 100, 200]);
  assert.deepEqual(await ask([0x02, 0x00, 0x00, 0x01, 0xC8, 0x00, 0x01, 0x01, 0x0E, 0x00]), [0xF0, 0x02, 0x00, 0x08]);  // 200 Hz ECG
  assert.deepEqual(await ask([...pmdStartEcg()]), [0xF0, 0x02, 0x00, 0x00, 0x00, 0x00]);
  assert.deepEqual(await ask([...pmdStartEcg()]), [0xF0, 0x02, 0x00, 0x06]);  // already streaming
  assert.deepEqual(await ask([...pmdStartAcc(100, 16)]), [0xF0, 0x02, 0x02, 0x09]);  // range 16 G
  assert.deepEqual(await ask([0x02, 0x02, 0x00, 0x01, 0x64]), [0xF0, 0x02, 0x02, 0x04]);  // cut short
  assert.deepEqual(await ask([...pmdStartAcc(50, 2)]), [0xF0, 0x02, 0x02, 0x00, 0x00, 0x01]);
  assert.deepEqual(await ask([0x07, 0x00]), [0xF0, 0x07, 0x00, 0x01]);  // unknown op code
  assert.deepEqual(await ask([0x02, 0x01, 0x00, 0x01, 0x87, 0x00]), [0xF0, 0x02, 0x01, 0x03]);  // PPG: not on an H10
  assert.deepEqual(await ask([0x03, 0x00]), [0xF0, 0x03, 0x00, 0x00, 0x00]);
  assert.deepEqual(await ask([0x03, 0x02]), [0xF0, 0x03, 0x02, 0x00, 0x00]);
  if (shared) {  // every form decodes, with its status
    assert.deepEqual(dec.decodePmdControlResponse(Uint8Array.of(0xF0, 0x02, 0x02, 0x00, 0x00, 0x01)), { opCode: 2, type: 2, status: 0, ok: true, settings: null, parameters: Uint8Array.of(1), factor: null });
    assert.deepEqual(dec.decodePmdControlResponse(Uint8Array.of(0xF0, 0x02, 0x00, 0x06)), { opCode: 2, type: 0, status: 6, ok: false, settings: null });
  }
  bt.close();
});

test("PMD control point, pmdResponses: 'short': every answer F0 op type status 00 (earlier versions)", async () => {
  const { bt, ask } = await controlPoint({ pmdResponses: 'short' });
  assert.deepEqual(await ask([0x02, 0x00, 0x00, 0x01, 0xC8, 0x00, 0x01, 0x01, 0x0E, 0x00]), [0xF0, 0x02, 0x00, 0x08, 0x00]);
  assert.deepEqual(await ask([...pmdStartEcg()]), [0xF0, 0x02, 0x00, 0x00, 0x00]);
  assert.deepEqual(await ask([...pmdStartAcc(200, 8)]), [0xF0, 0x02, 0x02, 0x00, 0x00]);
  assert.deepEqual(await ask([0x07, 0x00]), [0xF0, 0x07, 0x00, 0x01, 0x00]);
  assert.deepEqual(await ask([0x03, 0x00]), [0xF0, 0x03, 0x00, 0x00, 0x00]);
  bt.close();
  assert.throws(() => createSimulatedBluetooth({ clock: createVirtualClock(), devices: ['strap'], pmdResponses: 'long' }),
    invalidArgument(/pmdResponses must be 'h10' or 'short', got 'long'/));
});

test('PMD ECG: 73-sample frames whose timestamps (last sample, ns since 2000) run on the drifting strap clock', () => {
  const ecg = frames(main, 'ecg');
  assert.ok(ecg.length > 200);
  const byTs = new Map(main.truth.pmdFrames.map((f) => [f.timestamp, f]));
  const period = 73 / 130.35;  // the strap's true rate (a real H10: 73 samples every ~560.07 ms)
  const diffs = [];
  for (const [i, e] of ecg.entries()) {
    assert.equal(e.bytes.length, 10 + 73 * 3);
    assert.equal(e.frame.frameType, 0);
    assert.equal(e.frame.samples.length, 73);
    const meta = byTs.get(e.frame.timestamp);
    assert.equal(meta.deviceTime, e.frame.deviceTime);
    // Sent timestamps are off the true ones by the jitter, at most 12 µs (+ 1 ns rounding).
    assert.ok(Math.abs(meta.deviceTime - meta.trueDeviceTime) <= 12e-6 + 1e-6, `jitter ${meta.deviceTime - meta.trueDeviceTime}`);
    if (i) {
      const prev = byTs.get(ecg[i - 1].frame.timestamp);
      // The true last-sample times are exactly one frame apart on the device clock (1e-6 s: the
      // float64 ulp of Unix seconds is 2.4e-7); the sent ones vary by the jitter of both.
      assert.ok(Math.abs(meta.trueDeviceTime - prev.trueDeviceTime - period) < 1e-6);
      diffs.push(Number(e.frame.timestamp - ecg[i - 1].frame.timestamp) / 1e9);
    }
  }
  for (const d of diffs) assert.ok(Math.abs(d - period) <= 24e-6 + 2e-9, `frame interval ${d}`);
  assert.ok(Math.max(...diffs) - Math.min(...diffs) > 10e-6, 'intervals vary by the jitter, as a real H10\'s do');
  // True device time against the true host time of each frame's last sample: slope 1 + 20 ppm.
  const first = byTs.get(ecg[0].frame.timestamp), last = byTs.get(ecg.at(-1).frame.timestamp);
  const slope = (last.trueDeviceTime - first.trueDeviceTime) / (last.lastSampleTime - first.lastSampleTime);
  assert.ok(Math.abs(slope - 1 - 20e-6) < 1e-8, `slope - 1 = ${(slope - 1) * 1e6} ppm`);
  assert.ok(Math.abs(first.trueDeviceTime - first.lastSampleTime - 0.35) < 1e-3, 'the strap clock is 0.35 s ahead');
  // Received after the last sample was taken; on the 15 ms connection-event grid.
  for (const e of ecg) assert.ok(e.t >= byTs.get(e.frame.timestamp).lastSampleTime);
  const strapTimes = main.log.filter((e) => e.dev === main.clients.strap.device.id).map((e) => e.t);
  for (const t of strapTimes) {
    const k = (t - strapTimes[0]) / 0.015;
    assert.ok(Math.abs(k - Math.round(k)) < 1e-4, 'deliveries fall on connection events');
  }
  // Every sample is the true ECG at its true device time mapped to host time (the truth's white
  // noise is drawn on a 10 µs grid, so float rounding of the time can pick the neighbouring draw).
  let exact = 0, count = 0;
  for (const e of ecg.slice(10, 14)) {
    const times = main.truth.pmdSampleTimes(byTs.get(e.frame.timestamp));
    e.frame.samples.forEach((v, i) => {
      const h = main.truth.hostTime('strap', times[i]);
      const err = Math.abs(v - main.truth.ecgAt(h));
      assert.ok(err <= 50, `sample ${i}: ${v} vs ${main.truth.ecgAt(h)}`);
      exact += err <= 0.5 + 1e-9;
      count++;
    });
  }
  assert.ok(exact > 0.8 * count, `${exact} of ${count} samples exact`);
  const rest = ecg.filter((e) => e.t - main.truth.start < 40).flatMap((e) => [...e.frame.samples]);
  const peak = Math.max(...rest);
  assert.ok(peak > 700 && peak < 1500, `R peaks ~1 mV (${peak} µV)`);
});

test('PMD ACC: int16 frames (0x01) of 36 samples at the true 102.15 Hz of a requested 100 Hz; walking and running show up as steps', () => {
  const acc = frames(main, 'acc');
  const rate = H10_ACC_RATES_HZ[100];
  const byTs = new Map(main.truth.pmdFrames.map((f) => [f.timestamp, f]));
  let n = 0;
  for (const e of acc) {
    assert.equal(e.frame.frameType, 0x01);
    assert.equal(e.bytes.length, 10 + 6 * 36, 'a full 229-byte notification, as an H10 sends');
    n += e.frame.samples.x.length;
  }
  const span = acc.at(-1).frame.deviceTime - acc[0].frame.deviceTime;
  assert.ok(Math.abs((n - acc[0].frame.samples.x.length) / span - rate) < 0.01, `${n} samples over ${span} s`);
  const times = [], ys = [];
  for (const e of acc) {
    const t = main.truth.pmdSampleTimes(byTs.get(e.frame.timestamp));
    e.frame.samples.y.forEach((v, i) => { times.push(main.truth.hostTime('strap', t[i]) - main.truth.start); ys.push(v); });
  }
  // Spot-check samples against the truth.
  let exact = 0, count = 0;
  for (let i = 100; i < ys.length; i += 97, count++) {
    const err = Math.abs(ys[i] - main.truth.accAt(times[i] + main.truth.start)[1]);
    assert.ok(err <= 200, `sample ${i}: error ${err} mG`);
    exact += err <= 0.5 + 1e-9;
  }
  assert.ok(exact > 0.8 * count, `${exact} of ${count} samples exact`);
  const part = (a, b) => ys.filter((_, i) => times[i] >= a && times[i] < b);
  const crossings = (v) => { const m = mean(v); let c = 0; for (let i = 1; i < v.length; i++) if ((v[i - 1] - m) * (v[i] - m) < 0) c++; return c / 2 / (v.length / rate); };
  const rest = part(5, 38), walk = part(45, 78), run = part(85, 120);
  assert.ok(Math.abs(mean(rest) - 1000) < 100, `gravity on y at rest (${mean(rest)})`);
  assert.ok(std(walk) > 2 * std(rest) && std(run) > 1.8 * std(walk), `std ${std(rest)} / ${std(walk)} / ${std(run)}`);
  const fw = crossings(walk), fr = crossings(run);
  assert.ok(fw > 1.6 && fw < 2.3 && fr > 2.4 && fr < 3.3, `step frequency walk ${fw} Hz, run ${fr} Hz`);
  assert.equal(main.truth.activityAt(main.truth.start + 60), 'walk');
});

test("PMD ACC: accCompressed gives delta frames 0x80 in Polar's layout (3 x int16 reference) holding the same samples", async () => {
  const accOf = (s) => {
    const out = { x: [], y: [], z: [], frames: frames(s, 'acc') };
    for (const e of out.frames) for (const k of ['x', 'y', 'z']) out[k].push(...e.frame.samples[k]);
    return out;
  };
  const raw = accOf(await session({ devices: ['strap'] }, 10, { accRate: 200 }));
  const delta = accOf(await session({ devices: ['strap'], accCompressed: true }, 10, { accRate: 200 }));
  for (const e of raw.frames) assert.equal(e.frame.frameType, 0x01);
  for (const e of delta.frames) {
    assert.equal(e.frame.frameType, 0x80);
    assert.ok(e.bytes.length <= 229);
    // The reference sample is the frame's first sample as three int16 LE values.
    const first = [0, 1, 2].map((a) => ((e.bytes[10 + 2 * a] | (e.bytes[11 + 2 * a] << 8)) << 16) >> 16);
    assert.deepEqual(first, [e.frame.samples.x[0], e.frame.samples.y[0], e.frame.samples.z[0]]);
  }
  // Same seed, same sample instants: the two encodings carry the same values.
  const n = Math.min(raw.x.length, delta.x.length);
  assert.ok(n > 1500, `${n} samples in 10 s at 204.3 Hz`);
  for (const k of ['x', 'y', 'z']) assert.deepEqual(delta[k].slice(0, n), raw[k].slice(0, n));
});

test('PMD ACC: earlier behaviour through options: nominal rates, frames of accFrameSeconds', async () => {
  for (const [rate, perFrame] of [[200, 36], [50, 13]]) {
    const s = await session({ devices: ['strap'], accRatesHz: 'nominal', accFrameSeconds: 0.25 }, 10, { accRate: rate });
    const acc = frames(s, 'acc');
    assert.ok(acc.length > 30);
    for (const e of acc) {
      assert.equal(e.frame.frameType, 0x01);
      assert.equal(e.bytes.length, 10 + 6 * perFrame);
    }
    const span = acc.at(-1).frame.deviceTime - acc[0].frame.deviceTime;
    // the timestamps' jitter (+-12 µs) over the span: < 1e-5 relative
    assert.ok(Math.abs(perFrame * (acc.length - 1) / span - rate) < 1e-5 * rate, `${perFrame * (acc.length - 1) / span} Hz`);
  }
  const clock = createVirtualClock();
  for (const [bad, message] of [
    [{ accRatesHz: { 50: 51 } }, /accRatesHz must be 'nominal' or \{ 25: Hz, 50: Hz, 100: Hz, 200: Hz \}/],
    [{ accFrameSamples: 37 }, /accFrameSamples must be an integer 1-36, got 37/],
    [{ ecgRateHz: 0 }, /ecgRateHz must be a positive finite number, got 0/],
    [{ pmdTimestampJitterUs: -1 }, /pmdTimestampJitterUs must be a number 0-1000 .*got -1/],
    [{ accFrameSeconds: 0 }, /accFrameSeconds must be a positive finite number, got 0/],
  ]) {
    assert.throws(() => createSimulatedBluetooth({ clock, devices: ['strap'], ...bad }), invalidArgument(message), JSON.stringify(bad));
  }
});

test('delta encoding: per-block bit widths from the data, frames fit 229 bytes, lossless', () => {
  const p = createPhysiology({ seed: 5, activities: [{ activity: 'run', duration: 100 }] });
  const samples = Array.from({ length: 80 }, (_, k) => p.accAt(10 + k / 200).map(Math.round));
  samples[40] = [3000, -3000, 3000];  // a spike needs a wide block
  const { bytes, count } = encodePmdAccDelta(123456789n, samples, { maxBytes: 229 });
  assert.ok(bytes.length <= 229 && count < 80 && count > 20);
  const widths = [];
  for (let o = 16; o < bytes.length; o += 2 + Math.ceil((bytes[o] * bytes[o + 1] * 3) / 8)) widths.push(bytes[o]);
  assert.ok(new Set(widths).size > 1, `widths ${widths}`);
  const back = dec.decodePmdData(bytes);
  assert.equal(back.samples.x.length, count);
  for (let i = 0; i < count; i++) assert.deepEqual([back.samples.x[i], back.samples.y[i], back.samples.z[i]], samples[i]);
  if (shared) {  // the shared decoder and the local one agree on every frame of the session
    for (const e of main.of(U.data)) assert.deepEqual(local.decodePmdData(e.bytes).samples, shared.decodePmdData(e.bytes).samples);
  }
});

// ---------------------------------------------------------------------------------------------
// Links: disconnects, dropouts, faults, determinism

test('disconnects: gattserverdisconnected, connect fails while out of range, notifications need a restart', async () => {
  const clock = createVirtualClock();
  const bt = createSimulatedBluetooth({ seed: 4, clock, devices: ['strap'], disconnects: [{ device: 'strap', at: 20, duration: 10 }] });
  const log = [];
  const client = await openClient(bt, clock, 'Polar H10 SIM', { log });
  const oldHr = client.chars.get(U.hr);
  let dropped = null;
  client.device.addEventListener('gattserverdisconnected', (e) => { dropped = clock.now(); assert.equal(e.target, client.device); });
  clock.advance(25);
  assert.ok(dropped !== null && Math.abs(dropped - bt.truth.start - 20) < 1e-6);
  assert.equal(client.device.gatt.connected, false);
  assert.deepEqual(bt.truth.outages.map((o) => [o.start - bt.truth.start, o.end - bt.truth.start]), [[20, 30]]);
  await assert.rejects(client.device.gatt.connect(), { name: 'NetworkError' });
  await assert.rejects(oldHr.startNotifications(), { name: 'NetworkError' });
  const before = log.length;
  clock.advance(6);  // t = 31: back in range
  assert.equal(log.length, before, 'nothing arrives while disconnected');
  await client.device.gatt.connect();
  await assert.rejects(oldHr.startNotifications(), { name: 'InvalidStateError' });  // objects of the old connection
  clock.advance(3);
  assert.equal(log.length, before, 'nothing arrives before startNotifications()');
  // Re-subscribe without restarting PMD: heart rate comes back, PMD data does not.
  const server = client.device.gatt;
  const hr = await (await server.getPrimaryService('heart_rate')).getCharacteristic('heart_rate_measurement');
  assert.notEqual(hr, oldHr);
  const pmd = await server.getPrimaryService(PMD_UUIDS.service);
  const data = await pmd.getCharacteristic(PMD_UUIDS.data);
  const fresh = [];
  for (const ch of [hr, data]) {
    ch.addEventListener('characteristicvaluechanged', (e) => fresh.push({ chr: ch.uuid, t: clock.now() }));
    await ch.startNotifications();
  }
  clock.advance(3);
  assert.ok(fresh.some((e) => e.chr === U.hr));
  assert.ok(!fresh.some((e) => e.chr === U.data), 'PMD streams stopped with the link');
  await (await pmd.getCharacteristic(PMD_UUIDS.control)).writeValueWithResponse(pmdStartEcg());
  clock.advance(3);
  assert.ok(fresh.some((e) => e.chr === U.data), 'ECG after the start command was sent again');
  // Reconnecting before the outage ends fails N times: failNextConnects models a flaky radio too.
  client.device.failNextConnects(2);
  client.device.gatt.disconnect();
  await assert.rejects(client.device.gatt.connect(), { name: 'NetworkError' });
  await assert.rejects(client.device.gatt.connect(), { name: 'NetworkError' });
  await client.device.gatt.connect();
  bt.close();
});

test('disconnects at a rate: outages are drawn from the seed and the device recovers after each', async () => {
  const clock = createVirtualClock();
  const bt = createSimulatedBluetooth({ seed: 9, clock, devices: ['oximeter'], disconnects: { ratePerHour: 120, duration: [2, 4] } });
  const outages = bt.truth.outages.filter((o) => o.start < bt.truth.start + 300);
  assert.ok(outages.length >= 3 && outages.length <= 20, `${outages.length} outages in 5 min`);
  const device = await bt.requestDevice({ filters: [{ name: 'Oxi SIM' }], optionalServices: ['pulse_oximeter'] });
  let drops = 0;
  device.addEventListener('gattserverdisconnected', () => {
    drops++;
    const retry = () => device.gatt.connect().then(async (s) => {
      const ch = await (await s.getPrimaryService('pulse_oximeter')).getCharacteristic('plx_continuous_measurement');
      await ch.startNotifications();
    }, () => clock.setTimeout(retry, 1000));
    clock.setTimeout(retry, 1000);
  });
  await device.gatt.connect();
  await clock.advanceAsync(300);
  assert.equal(drops, outages.length);
  assert.equal(device.gatt.connected, !bt.truth.outages.some((o) => o.start <= clock.now() && o.end > clock.now() - 1.5));
  bt.close();
});

test('dropouts remove notifications (and only those the truth says)', async () => {
  const s = await session({ dropoutProbability: 0.2, devices: ['strap', 'oximeter'] }, 60);
  const stats = s.truth.stats;
  const hrGot = s.of(U.hr).length;
  assert.equal(hrGot, stats.strap.hr.generated - stats.strap.hr.dropped);
  const frac = stats.strap.hr.dropped / stats.strap.hr.generated;
  assert.ok(frac > 0.05 && frac < 0.4, `dropped ${frac}`);
  assert.equal(s.of(U.plx).length, stats.oximeter.plx.generated - stats.oximeter.plx.dropped);
  assert.equal(s.truth.dropped.length, stats.strap.hr.dropped + stats.strap['pmd-data'].dropped + stats.oximeter.plx.dropped);
  assert.equal(stats.strap['pmd-control'].dropped, 0, 'indications are acknowledged, never dropped');
});

test('faults: duplicate and out-of-order PMD frames, a strap clock reset', async () => {
  const s = await session({
    devices: ['strap'],
    faults: { duplicatePmd: [10], reorderPmd: [20], clockJumps: [{ device: 'strap', at: 30, to: 0 }] },
  }, 40);
  const data = s.of(U.data);
  const dups = data.filter((e, i) => i && hex(e.bytes) === hex(data[i - 1].bytes));
  assert.equal(dups.length, 1);
  assert.ok(Math.abs(dups[0].t - s.truth.start - 10) < 0.6);
  const decoded = data.map((e) => ({ t: e.t - s.truth.start, f: dec.decodePmdData(e.bytes) }));
  let inversions = 0;
  for (const type of ['ecg', 'acc']) {
    const seq = decoded.filter((d) => d.f.type === type && d.t < 30);
    for (let i = 1; i < seq.length; i++) if (seq[i].f.timestamp < seq[i - 1].f.timestamp) { inversions++; assert.ok(Math.abs(seq[i].t - 20) < 1); }
  }
  assert.equal(inversions, 1);
  const after = decoded.filter((d) => d.t > 31 && d.f.type === 'ecg');
  assert.ok(after.length > 5 && after.every((d) => d.f.deviceTime < UNIX_2000 + 20), 'timestamps restart near 2000-01-01');
  assert.deepEqual(s.truth.faults.map((f) => f.kind), ['duplicate-pmd', 'reorder-pmd']);
  assert.equal(s.truth.clocks.strap.jumps.length, 1);
  // truth.hostTime inverts device time on both sides of the jump.
  const late = after[0].f;
  const h = s.truth.hostTime('strap', late.deviceTime);
  assert.ok(Math.abs(s.truth.deviceTime('strap', h) - late.deviceTime) < 1e-6);
});

test('determinism: the same seed gives the same bytes at the same times; another seed does not', async () => {
  const sig = (s) => s.log.map((e) => `${(e.t - s.truth.start).toFixed(6)} ${e.chr.slice(4, 8)} ${hex(e.bytes)}`).join('\n');
  const opts = { dropoutProbability: 0.05, faults: { duplicatePmdProbability: 0.02 }, activities: undefined };
  const a = sig(await session(opts, 30));
  const b = sig(await session(opts, 30));
  const c = sig(await session({ ...opts, seed: 8 }, 30));
  assert.ok(a.length > 10000);
  assert.equal(a, b);
  assert.notEqual(a, c);
});

test('a FakeDevice built by hand: read, write, notify, and notifications only while subscribed', async () => {
  const device = new FakeDevice({ id: 'dev-1', name: 'Custom' });
  const svc = device.addService(0x181a);
  const writes = [];
  const temp = svc.addCharacteristic('temperature', { read: true, notify: true, write: true }, { value: [0x10, 0x0e], onWrite: (b) => writes.push([...b]) });
  const bt = new FakeBluetooth({ devices: [device] });
  const d = await bt.requestDevice({ filters: [{ services: ['environmental_sensing'] }] });
  const ch = await (await (await d.gatt.connect()).getPrimaryService('environmental_sensing')).getCharacteristic(0x2a6e);
  assert.deepEqual([...copy(await ch.readValue())], [0x10, 0x0e]);
  await ch.writeValue(Uint8Array.of(1, 2));
  assert.deepEqual(writes, [[1, 2]]);
  const got = [];
  ch.addEventListener('characteristicvaluechanged', (e) => got.push(copy(e.target.value)));
  assert.equal(temp.notify([1]), false);
  await ch.startNotifications();
  assert.equal(temp.notify([2]), true);
  await ch.stopNotifications();
  assert.equal(temp.notify([3]), false);
  assert.deepEqual(got.map((b) => [...b]), [[2]]);
});

test('bad simulator options are INVALID_ARGUMENT naming the option and its valid range', () => {
  const clock = createVirtualClock();
  const cases = [
    // 7.5 ms-4 s: the Bluetooth LE connection interval's range
    [{ connectionIntervalMs: 5 }, /connectionIntervalMs\.strap must be 7\.5-4000 ms, got 5/],
    [{ connectionIntervalMs: { oximeter: 4001 } }, /connectionIntervalMs\.oximeter must be 7\.5-4000 ms, got 4001/],
    [{ connectionIntervalMs: { strap: '15' } }, /connectionIntervalMs\.strap must be 7\.5-4000 ms, got '15'/],
    [{ driftPpm: 'fast' }, /driftPpm must be a number or \{ strap, thermometer, oximeter, armband \}, got 'fast'/],
    [{ driftPpm: NaN }, /driftPpm\.strap must be a finite number, got NaN/],
    [{ clockOffset: { thermometer: Infinity } }, /clockOffset\.thermometer must be a finite number, got Infinity/],
    // Battery Level is a percentage in one byte: 150 would be sent as is, 300 as 44
    [{ battery: { strap: 150 } }, /battery\.strap must be an integer 0-100 \(%\), got 150/],
    [{ battery: 300 }, /battery\.strap must be an integer 0-100/],
    [{ devices: ['strap', 'watch'] }, /devices: unknown simulated device 'watch' \(the devices are strap, thermometer, oximeter, armband\)/],
    [{ devices: 'strap' }, /devices must be an array of strap, thermometer, oximeter, armband, got 'strap'/],
    [{ disconnects: [{ device: 'watch', at: 1, duration: 1 }] }, /disconnects: unknown device 'watch' \(expected strap, thermometer, oximeter/],
    [{ disconnects: { ratePerHour: 1, devices: ['watch'] } }, /disconnects\.devices: unknown device 'watch'/],
    [{ faults: { clockJumps: [{ device: 'watch', at: 1, by: 1 }] } }, /faults\.clockJumps: unknown device 'watch'/],
    [{ disconnects: [{ at: -1, duration: 1 }] }, /disconnects: each entry needs at >= 0 and duration >= 0 .*got at -1, duration 1/],
    [{ disconnects: [null] }, /disconnects: each entry must be \{ device, at, duration \}, got null/],
    [{ thermometer: { exponent: -3 } }, /thermometer\.exponent must be -1 or -2, got -3/],
    // a uint16 of seconds in the Health Thermometer service
    [{ thermometer: { intervalSeconds: 0 } }, /thermometer\.intervalSeconds must be an integer 1-65535, got 0/],
    [{ thermometer: { intervalSeconds: 70000 } }, /thermometer\.intervalSeconds must be an integer 1-65535, got 70000/],
    // a malformed activities list
    [{ activities: [] }, /activities must be a non-empty array .*got an empty array/],
    [{ activities: 'rest' }, /activities must be a non-empty array .*got 'rest'/],
    [{ activities: [{ activity: 'rest', duration: 10 }, null] }, /activities\[1\] must be \{ activity, duration \} or \{ activity, start \}, got null/],
    [{ activities: [{ activity: 'swim', duration: 10 }] }, /activities\[0\]\.activity must be one of rest, walk, run, got 'swim'/],
    // a name ACTIVITY_PROFILES has through its prototype is still not an activity
    [{ activities: [{ activity: 'constructor', duration: 10 }] }, /activities\[0\]\.activity must be one of rest, walk, run, got 'constructor'/],
    [{ activities: [{ activity: 'rest', duration: 0 }, { activity: 'run' }] }, /activities\[0\]: the segment must have a positive duration/],
    [{ activities: [{ activity: 'rest', duration: '10' }, { activity: 'run' }] }, /activities\[0\]\.duration must be a finite number of seconds, got '10'/],
    [{ activities: [{ activity: 'rest', duration: 10 }, { activity: 'run', start: NaN }] }, /activities\[1\]\.start must be a finite number of seconds, got NaN/],
    [{ fingerOff: [{ at: -1, duration: 2 }] }, /fingerOff\[0\] must be \{ at, duration \} with at >= 0 and duration > 0 .*got at -1, duration 2/],
    [{ fingerOff: [5] }, /fingerOff\[0\] must be \{ at, duration \} .*got 5/],
    [{ fingerOff: { at: 1, duration: 2 } }, /fingerOff must be an array of \{ at, duration \}/],
    [{ fingerOffRatePerMinute: -1 }, /fingerOffRatePerMinute must be a finite number >= 0, got -1/],
  ];
  for (const [bad, message] of cases) {
    assert.throws(() => createSimulatedBluetooth({ clock, ...bad }), invalidArgument(message), JSON.stringify(bad));
  }
  // createPhysiology (the simulator's activities and fingerOff go through it) says the same.
  assert.throws(() => createPhysiology({ activities: [{ activity: 'jog', duration: 1 }] }), invalidArgument(/activities\[0\]\.activity/));
});

test('the virtual clock: bad arguments are INVALID_ARGUMENT; time does not move on a bad call', async () => {
  for (const start of [NaN, Infinity, '1.7e9']) {
    assert.throws(() => createVirtualClock(start), invalidArgument(/createVirtualClock: startSeconds must be a finite number \(Unix seconds\)/), String(start));
  }
  const clock = createVirtualClock(100);
  let ticks = 0;
  clock.setInterval(() => { ticks++; }, 1000);
  // Infinity would never return with a periodic timer pending (the loop runs each due tick).
  for (const s of [-1, NaN, Infinity, '1']) {
    assert.throws(() => clock.advance(s), invalidArgument(/virtual clock: advance\(seconds\) needs a finite number of seconds >= 0/), String(s));
    await assert.rejects(clock.advanceAsync(s), invalidArgument(/virtual clock: advanceAsync\(seconds\) needs a finite number of seconds >= 0/), String(s));
  }
  assert.throws(() => clock.advanceTo(Infinity), invalidArgument(/advanceTo\(time\) needs a finite clock time/));
  assert.throws(() => clock.setTimeout('tick', 10), invalidArgument(/the callback must be a function, got string/));
  assert.equal(clock.now(), 100);
  assert.equal(ticks, 0);
  clock.advance(2.5);  // valid calls still work: ticks at 1 s and 2 s
  assert.equal(ticks, 2);
  assert.equal(clock.now(), 102.5);
});
