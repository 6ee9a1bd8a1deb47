// Recording a simulated session to text and replaying it through a fake navigator.bluetooth.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SensorformerError } from '../../web/src/errors.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/ble/simulator.js';
import { PMD_UUIDS, canonicalUuid } from '../../web/src/ble/fake-gatt.js';
import { RECORDING_FORMAT, parseRecording, record, replay } from '../../web/src/ble/recording.js';

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
  // Reads return the recorded values; PMD writes are answered with success.
  const strap = r.clients[0];
  assert.equal(strap.reads[canonicalUuid('body_sensor_location')], '01');
  assert.equal(strap.reads[PMD_UUIDS.control], session.clients[0].reads[PMD_UUIDS.control]);
  assert.deepEqual(strap.answers.map((a) => a.hex), ['f002000000', 'f002020000']);
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
