// Recording a simulated session to text and replaying it through a fake navigator.bluetooth.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { SensorformerError } from '../../web/src/errors.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/devices.js';
import { PMD_UUIDS, canonicalUuid } from '../../web/src/ble/fake-gatt.js';
import { RECORDING_FORMAT, parseRecording, record, replay } from '../../web/src/ble/recording.js';
import { connectWearable } from '../../web/src/ble/device.js';
import { settle } from './virtual-time.js';
import { fixturePath } from './safetensors.js';

const ALL_SERVICES = ['heart_rate', 'battery_service', 'health_thermometer', 'pulse_oximeter', PMD_UUIDS.service];
const NAMES = ['Polar H10 SIM', 'Thermo SIM', 'Oxi SIM'];
const copy = (v) => new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
const hex = (b) => Buffer.from(b).toString('hex');
const START_ECG = Uint8Array.of(0x02, 0x00, 0x00, 0x01, 0x82, 0x00, 0x01, 0x01, 0x0E, 0x00);
const START_ACC = Uint8Array.of(0x02, 0x02, 0x00, 0x01, 0x32, 0x00, 0x01, 0x01, 0x10, 0x00, 0x02, 0x01, 0x08, 0x00);

// A page: connect, read what is readable, subscribe to everything, start PMD; on a disconnect,
// retry every 2 s (when `reconnect`). Notifications go to `log` as { t, dev, chr, hex }.
async function openClient(bt, clock, name, log, { pmd = true, reconnect = false } = {}) {
  const device = await bt.requestDevice({ filters: [{ name }], optionalServices: ALL_SERVICES });
  const client = { device, reads: {}, answers: [] };
  client.subscribe = async () => {
    const server = await device.gatt.connect();
    for (const svc of await server.getPrimaryServices()) {
      for (const ch of await svc.getCharacteristics()) {
        if (ch.properties.read) client.reads[ch.uuid] = hex(copy(await ch.readValue()));
        if (ch.properties.notify || ch.properties.indicate) {
          ch.addEventListener('characteristicvaluechanged', (e) => {
            const entry = { t: clock.now(), dev: device.id, chr: ch.uuid, hex: hex(copy(e.target.value)) };
            (ch.uuid === PMD_UUIDS.control ? client.answers : log).push(entry);
          });
          await ch.startNotifications();
        }
      }
    }
    if (pmd && device.name.startsWith('Polar')) {
      const control = await (await server.getPrimaryService(PMD_UUIDS.service)).getCharacteristic(PMD_UUIDS.control);
      await control.writeValueWithResponse(START_ECG);
      await control.writeValueWithResponse(START_ACC);
    }
  };
  if (reconnect) {
    device.addEventListener('gattserverdisconnected', () => {
      const retry = () => client.subscribe().catch(() => clock.setTimeout(retry, 2000));
      clock.setTimeout(retry, 2000);
    });
  }
  await client.subscribe();
  return client;
}

async function recordSession({ seconds = 60, seed = 11, ...options } = {}) {
  const clock = createVirtualClock(1.7e9);
  const sim = createSimulatedBluetooth({ seed, clock, ...options });
  const rec = record(sim, { clock });
  const log = [];
  const clients = [];
  for (const device of sim.devices) clients.push(await openClient(rec.bluetooth, clock, device.name, log, { reconnect: !!options.disconnects }));
  if (options.disconnects) await clock.advanceAsync(seconds);
  else clock.advance(seconds);
  const text = rec.stop();
  sim.close();
  return { text, log, clients, clock, sim, t0: sim.truth.start };
}

const session = await recordSession();

async function play(text, speed, options = {}) {
  const clock = createVirtualClock(1.8e9);
  const bt = replay(text, { speed, clock });
  const log = [];
  const clients = [];
  for (const name of NAMES) clients.push(await openClient(bt, clock, name, log, options));
  const start = clock.now();
  if (options.reconnect) await clock.advanceAsync(Number.isFinite(speed) ? bt.duration + 1 : 0);
  else clock.advance(Number.isFinite(speed) ? bt.duration + 1 : 0);
  return { bt, clock, log, clients, start };
}

test('record: a header, then connects, reads and notifications as JSON Lines', () => {
  const lines = session.text.trim().split('\n');
  const header = JSON.parse(lines[0]);
  assert.equal(header.format, RECORDING_FORMAT);
  assert.equal(header.created, '2023-11-14T22:13:20.000Z');
  assert.equal(header.t0, 1.7e9);
  assert.deepEqual(header.devices.map((d) => d.name), NAMES);
  const events = lines.slice(1).map((l) => JSON.parse(l));
  assert.deepEqual(events.filter((e) => e.event).map((e) => e.event), ['connect', 'connect', 'connect']);
  const reads = events.filter((e) => e.read);
  assert.ok(reads.some((e) => e.chr === canonicalUuid('body_sensor_location') && e.hex === '01'));
  assert.ok(reads.some((e) => e.chr === PMD_UUIDS.control && e.hex.startsWith('0f05')));
  assert.ok(reads.some((e) => e.chr === canonicalUuid('battery_level') && e.hex === '57'));  // 87 %
  // Exactly what the page received, in order, at the same (µs-rounded) times.
  const notes = events.filter((e) => e.hex !== undefined && !e.read && e.chr !== PMD_UUIDS.control);
  assert.equal(notes.length, session.log.length);
  notes.forEach((e, i) => {
    const got = session.log[i];
    assert.deepEqual([e.dev, e.chr, e.hex], [got.dev, got.chr, got.hex]);
    assert.ok(Math.abs(e.t - got.t) < 1e-6);
    assert.match(e.svc, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
  // In 60 s: ~107 ECG frames, ~85 ACC frames (36 samples at the H10's 51.07 Hz), 60 heart-rate,
  // 60 PLX and 12 temperature notifications, less the first second or so of each.
  assert.ok(notes.length > 300, `${notes.length} notifications`);
  const parsed = parseRecording(session.text);
  assert.equal(parsed.events.length, lines.length - 1);
  assert.deepEqual(parsed.events.find((e) => e.kind === 'notification' && e.chr !== PMD_UUIDS.control).bytes, Uint8Array.from(Buffer.from(notes[0].hex, 'hex')));
});

test('record: stop() removes the wrappers; later traffic is not recorded', async () => {
  const clock = createVirtualClock();
  const sim = createSimulatedBluetooth({ seed: 1, clock, devices: ['oximeter'] });
  const rec = record(sim, { clock });
  const log = [];
  const { device } = await openClient(rec.bluetooth, clock, 'Oxi SIM', log);
  assert.ok(Object.hasOwn(device.gatt, 'connect'));
  clock.advance(3);
  const text = rec.stop();
  assert.ok(!Object.hasOwn(device.gatt, 'connect'));
  clock.advance(3);
  assert.equal(rec.stop(), text);
  assert.ok(log.length >= 5);
  sim.close();
});

test('replay at speed 1: the same notification bytes at the same times relative to the start', async () => {
  const r = await play(session.text, 1);
  assert.equal(r.log.length, session.log.length);
  r.log.forEach((e, i) => {
    const o = session.log[i];
    assert.deepEqual([e.dev, e.chr, e.hex], [o.dev, o.chr, o.hex]);
    assert.ok(Math.abs((e.t - r.start) - (o.t - session.t0)) < 2e-6, `event ${i}: ${e.t - r.start} vs ${o.t - session.t0}`);
  });
  // Reads return the recorded values; PMD writes get the device's recorded answers (an H10's
  // 6-byte start answers F0 02 00 00 00 00 / F0 02 02 00 00 01, not a made-up 5-byte success).
  const strap = r.clients[0];
  assert.equal(strap.reads[canonicalUuid('body_sensor_location')], '01');
  assert.equal(strap.reads[PMD_UUIDS.control], session.clients[0].reads[PMD_UUIDS.control]);
  assert.deepEqual(session.clients[0].answers.map((a) => a.hex), ['f00200000000', 'f00202000001']);
  assert.deepEqual(strap.answers.map((a) => a.hex), ['f00200000000', 'f00202000001']);
  await r.bt.finished;
});

test('replay at speed 4 and Infinity: same bytes, times divided by the speed (or all at once)', async () => {
  const fast = await play(session.text, 4);
  assert.equal(fast.log.length, session.log.length);
  fast.log.forEach((e, i) => {
    const o = session.log[i];
    assert.equal(e.hex, o.hex);
    assert.ok(Math.abs((e.t - fast.start) - (o.t - session.t0) / 4) < 2e-6);
  });
  const inf = await play(session.text, Infinity);
  assert.deepEqual(inf.log.map((e) => `${e.chr} ${e.hex}`), session.log.map((e) => `${e.chr} ${e.hex}`));
  assert.ok(inf.log.every((e) => e.t === inf.start));
  assert.equal(inf.bt.position, parseRecording(session.text).events.length);
});

test('replay gates PMD data on start commands and needs subscriptions, like a device', async () => {
  const clock = createVirtualClock();
  const bt = replay(session.text, { clock });
  const log = [];
  await openClient(bt, clock, 'Polar H10 SIM', log, { pmd: false });
  clock.advance(bt.duration + 1);
  assert.ok(log.length > 50);
  assert.ok(log.every((e) => e.chr !== PMD_UUIDS.data), 'no PMD data without a start command');
  // Devices, services and characteristics are those of the recording.
  const strap = bt.devices.find((d) => d.name === 'Polar H10 SIM');
  assert.deepEqual(strap.peripheralServices.map((s) => s.uuid).sort(),
    [canonicalUuid('heart_rate'), canonicalUuid('battery_service'), PMD_UUIDS.service].sort());
  assert.equal(strap.service('heart_rate').characteristic('heart_rate_measurement').properties.notify, true);
  assert.equal(bt.devices.find((d) => d.name === 'Thermo SIM').service('health_thermometer').characteristic('temperature_measurement').properties.indicate, true);
});

test('replay plays recorded disconnects: the link drops, connect fails until the recorded reconnect', async () => {
  const rec = await recordSession({ seconds: 45, devices: ['strap'], disconnects: [{ device: 'strap', at: 15, duration: 5 }] });
  const events = parseRecording(rec.text).events;
  const drop = events.find((e) => e.kind === 'disconnect');
  const back = events.filter((e) => e.kind === 'connect')[1];
  assert.ok(Math.abs(drop.t - rec.t0 - 15) < 1e-6);
  assert.ok(back.t - rec.t0 >= 20 && back.t - rec.t0 < 24, `reconnected at ${back.t - rec.t0}`);
  assert.ok(rec.log.some((e) => e.t > back.t + 1 && e.chr === PMD_UUIDS.data), 'PMD restarted after the reconnect');

  const clock = createVirtualClock(1.8e9);
  const bt = replay(rec.text, { clock });
  const start = clock.now();
  const log = [];
  const client = await openClient(bt, clock, 'Polar H10 SIM', log);
  let dropped = null;
  client.device.addEventListener('gattserverdisconnected', () => { dropped = clock.now() - start; });
  clock.advance(16);
  assert.ok(Math.abs(dropped - 15) < 1e-6);
  await assert.rejects(client.device.gatt.connect(), { name: 'NetworkError' });
  clock.advanceTo(start + (back.t - rec.t0) + 0.001);
  await client.subscribe();
  const n = log.length;
  clock.advance(bt.duration - clock.now() + start + 1);
  const after = log.slice(n);
  assert.ok(after.some((e) => e.chr === PMD_UUIDS.data));
  const recorded = new Set(rec.log.map((e) => e.hex));
  assert.ok(after.every((e) => recorded.has(e.hex)));
});

test('parseRecording: bad recordings are BAD_FORMAT errors naming the line', () => {
  const header = JSON.stringify({ format: RECORDING_FORMAT, created: '2023-11-14T22:13:20.000Z', t0: 10, devices: [{ id: 'A', name: 'x' }] });
  const ok = '{"t":11,"dev":"A","svc":"0000180d-0000-1000-8000-00805f9b34fb","chr":"00002a37-0000-1000-8000-00805f9b34fb","hex":"0648"}';
  assert.equal(parseRecording(`${header}\n${ok}\n\n`).events.length, 1);
  const cases = [
    ['', 1, /header/],
    ['{"format":"other","devices":[]}', 1, /format/],
    ['not json', 1, /JSON/],
    [`${JSON.stringify({ format: RECORDING_FORMAT })}`, 1, /devices/],
    [`${header}\n${ok}\n{"t":12,"dev":"A","svc":"0000180d-0000-1000-8000-00805f9b34fb","chr":"00002a37-0000-1000-8000-00805f9b34fb","hex":"06`, 3, /JSON/],
    [`${header}\n${ok}\n${ok.replace('"dev":"A"', '"dev":"B"')}`, 3, /dev/],
    [`${header}\n${ok}\n${ok.replace('"hex":"0648"', '"hex":"064"')}`, 3, /hex/],
    [`${header}\n${ok}\n${ok.replace('"hex":"0648"', '"hex":"zz"')}`, 3, /hex/],
    [`${header}\n${ok}\n${ok.replace('"t":11', '"t":9')}`, 3, /back in time/],
    [`${header}\n${ok}\n${ok.replace('"t":11', '"t":"11"')}`, 3, /"t"/],
    [`${header}\n${ok}\n${ok.replace('0000180d-0000-1000-8000-00805f9b34fb', 'nope')}`, 3, /svc/],
    [`${header}\n${ok}\n{"t":12,"dev":"A","event":"explode"}`, 3, /event/],
    [`${header}\n${ok}\n[1,2]`, 3, /object/],
  ];
  for (const [text, line, what] of cases) {
    assert.throws(() => parseRecording(text), (e) => {
      assert.ok(e instanceof SensorformerError, `${e}`);
      assert.equal(e.code, 'BAD_FORMAT');
      assert.equal(e.line, line, e.message);
      assert.match(e.message, new RegExp(`line ${line}\\b`));
      assert.match(e.message, what);
      return true;
    });
  }
  assert.throws(() => parseRecording(null), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => replay(`${header}\n${ok}`, { speed: 0 }), { code: 'INVALID_ARGUMENT' });
  assert.throws(() => replay('{"format":"x"}'), { code: 'BAD_FORMAT' });
});

test('replay answers each PMD write with the recorded answer of its (op, type), in order; unrecorded pairs get a success', async () => {
  const svc = PMD_UUIDS.service, chr = PMD_UUIDS.control;
  const line = (t, hexBytes, extra = {}) => JSON.stringify({ t, dev: 'A', svc, chr, hex: hexBytes, ...extra });
  const text = [
    JSON.stringify({ format: RECORDING_FORMAT, t0: 10, devices: [{ id: 'A', name: 'Polar H10 REC' }] }),
    line(10.1, '0f0500000000', { read: true }),
    line(10.2, 'f00200000000'),       // ECG start: an H10's 6-byte success
    line(10.3, 'f00202000001'),       // ACC start
    line(30.0, 'f00200060000'),       // ECG start again after a reconnect: "already in state"
    line(30.1, 'f001020000000132000101100002010800'),  // ACC get-settings (50 Hz, 16 bit, 8 G)
  ].join('\n') + '\n';
  const clock = createVirtualClock(1.9e9);
  const bt = replay(text, { clock });
  const device = await bt.requestDevice({ filters: [{ name: 'Polar H10 REC' }], optionalServices: [svc] });
  await device.gatt.connect();
  const control = await (await device.gatt.getPrimaryService(svc)).getCharacteristic(chr);
  const answers = [];
  control.addEventListener('characteristicvaluechanged', (e) => answers.push(hex(copy(e.target.value))));
  await control.startNotifications();
  const writes = ['0200000182000101 0e00', '0202000132000101100002010800', '0200000182000101 0e00', '0200000182000101 0e00', '0300', '0102'];
  for (const w of writes) {
    await control.writeValueWithResponse(Uint8Array.from(Buffer.from(w.replace(/ /g, ''), 'hex')));
    clock.advance(0.01);
  }
  assert.deepEqual(answers, [
    'f00200000000', 'f00202000001',   // the recorded answers, in order
    'f00200060000', 'f00200060000',   // the second recorded ECG answer, then again once they run out
    'f003000000',                      // a stop the recording never answered: success
    'f001020000000132000101100002010800',
  ]);
  bt.close();
});


// Replays a recording through the device layer (connectWearable) and returns its ECG and ACC batches.
async function replayedSamples(text) {
  const clock = createVirtualClock(1.9e9);
  const bt = replay(text, { clock });
  const wearable = await settle(clock, connectWearable({ bluetooth: bt, clock, filters: [{ name: 'Polar H10 SIM' }] }));
  const got = { ecg: [], acc: [] };
  for (const kind of ['ecg', 'acc']) (async () => { for await (const b of wearable.samples(kind)) got[kind].push(b); })();
  await clock.advanceAsync(bt.duration + 1);
  await wearable.close();
  bt.close();
  return got;
}

test('PMD data frames whose byte 0 has its upper (reserved) bits set replay and decode as the same ECG and delta ACC samples', async () => {
  const rec = await recordSession({ seconds: 20, devices: ['strap'], accCompressed: true });
  // The same recording with bits 6-7 of every PMD data frame's byte 0 set (0x40 | type, 0xC0 | type).
  let k = 0;
  const flagged = rec.text.split('\n').map((row) => {
    if (!row.includes(PMD_UUIDS.data)) return row;
    const o = JSON.parse(row);
    o.hex = ((parseInt(o.hex.slice(0, 2), 16) | (k++ % 2 ? 0xC0 : 0x40)).toString(16)) + o.hex.slice(2);
    return JSON.stringify(o);
  }).join('\n');
  assert.ok(k > 50, `${k} PMD frames`);
  const plain = await replayedSamples(rec.text);
  const marked = await replayedSamples(flagged);
  const flat = (batches, f) => batches.flatMap((b) => Array.from(f(b)));
  assert.ok(flat(plain.ecg, (b) => b.values).length > 1000 && flat(plain.acc, (b) => b.values.x).length > 500);
  assert.deepEqual(flat(marked.ecg, (b) => b.values), flat(plain.ecg, (b) => b.values));
  for (const axis of ['x', 'y', 'z']) assert.deepEqual(flat(marked.acc, (b) => b.values[axis]), flat(plain.acc, (b) => b.values[axis]), axis);
  assert.deepEqual(flat(marked.acc, (b) => b.times), flat(plain.acc, (b) => b.times));
});

test('a delta ACC frame with a flagged byte 0 is decoded with the ACC resolution setting (8 bit: 1-byte reference)', async () => {
  // Hand-made: an ACC-only PMD device, started at 50 Hz with an 8-bit resolution. Each frame
  // (byte 0 = 0x42: ACC with bit 6 set; frame type 0x80) holds the reference (1, -1, 2) as 3 x int8,
  // then one block: width 2, count 2, deltas (1, 0, -1), (0, 1, 1) packed LSB first:
  // bits 1 0 | 0 0 | 1 1 | 0 0 | 1 0 | 1 0 -> bytes 0x31 0x05.
  // Samples: (1, -1, 2), (2, -1, 1), (2, 0, 2).
  const svc = PMD_UUIDS.service;
  const ns = (s) => BigInt(Math.round(s * 1e9)).toString(16).padStart(16, '0').match(/../g).reverse().join('');
  const device0 = 7.6e8;  // device time, s since 2000
  const rows = [JSON.stringify({ format: RECORDING_FORMAT, t0: 100, devices: [{ id: 'A', name: 'Polar ACC8' }] }),
    JSON.stringify({ t: 100.1, dev: 'A', svc, chr: PMD_UUIDS.control, hex: '0f0400000000', read: true }),
    JSON.stringify({ t: 100.2, dev: 'A', svc, chr: PMD_UUIDS.control, hex: 'f00202000001' })];
  for (let f = 0; f < 20; f++) {
    rows.push(JSON.stringify({ t: 101 + f * 0.06, dev: 'A', svc, chr: PMD_UUIDS.data, hex: `42${ns(device0 + f * 0.06)}8001ff0202023105` }));
  }
  const clock = createVirtualClock(1.9e9);
  const bt = replay(rows.join('\n') + '\n', { clock });
  const wearable = await settle(clock, connectWearable({ bluetooth: bt, clock, filters: [{ name: 'Polar ACC8' }], pmd: { ecg: false, acc: { sampleRate: 50, resolution: 8, range: 8 } } }));
  const batches = [];
  (async () => { for await (const b of wearable.samples('acc')) batches.push(b); })();
  const errors = [];
  wearable.addEventListener('error', (e) => errors.push(e.detail.error));
  await clock.advanceAsync(bt.duration + 1);
  await wearable.close();
  bt.close();
  assert.deepEqual(errors, []);
  assert.ok(batches.length >= 15, `${batches.length} frames`);
  for (const b of batches) {
    assert.deepEqual([b.values.x, b.values.y, b.values.z].map((c) => Array.from(c)), [[1, 2, 2], [-1, -1, 0], [2, 1, 2]]);
  }
});

test('a corrupted PMD features read in a recording is a typed error the caller catches, not an unhandled rejection', () => {
  // One byte changed: the features read's code 0x0F becomes 0x1F, which decodePmdFeatures refuses
  // while the strap connects during replay. The other devices connect; the strap's failure must
  // reach the caller's try/catch. Node ends a process with an unhandled rejection (exit 1) whatever
  // try/catch surrounds the call, so the calls run in a child process, which must exit 0.
  const lines = session.text.split('\n');
  const at = lines.findIndex((l) => l.includes('"read":true') && l.includes(PMD_UUIDS.control));
  assert.ok(at > 0 && JSON.parse(lines[at]).hex.startsWith('0f'), 'the recording has a features read');
  lines[at] = lines[at].replace('"hex":"0f', '"hex":"1f');
  const dir = mkdtempSync(join(tmpdir(), 'sf-recording-'));
  try {
    writeFileSync(join(dir, 'bad.sfrec'), lines.join('\n'));
    const src = (p) => JSON.stringify(new URL(`../../web/src/${p}`, import.meta.url).href);
    writeFileSync(join(dir, 'child.mjs'), `
import { readFileSync } from 'node:fs';
import { windowsFromRecording, replayIntoSession } from ${src('ble/session.js')};
import { loadModel } from ${src('index.js')};
const text = readFileSync(${JSON.stringify(join(dir, 'bad.sfrec'))}, 'utf8');
const caught = [];
try { await windowsFromRecording(text); } catch (e) { caught.push({ name: e.name, code: e.code, message: e.message }); }
const model = await loadModel(${JSON.stringify(fixturePath('model/factorized_lookback.safetensors'))}, { warmup: false });
try { await replayIntoSession(text, model.stream(), { config: model.config }); } catch (e) { caught.push({ name: e.name, code: e.code, message: e.message }); }
model.dispose();
console.log(JSON.stringify(caught));
`);
    const r = spawnSync(process.execPath, [join(dir, 'child.mjs')], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.signal, null, 'the child was killed after 60 s');
    assert.equal(r.status, 0, `the child process ended with ${r.status}:\n${r.stderr}`);
    const caught = JSON.parse(r.stdout);
    assert.equal(caught.length, 2, 'both calls rejected');
    for (const e of caught) {
      assert.equal(e.name, 'BluetoothDecodeError');
      assert.equal(e.code, 'DECODE_ERROR');
      assert.equal(e.message, 'the recording\'s Polar H10 SIM: PMD features: expected 0x0F at offset 0 (a control point read), got 0x1F');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
