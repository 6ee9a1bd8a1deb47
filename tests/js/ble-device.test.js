// The device layer against the simulated wearable: the real code path (requestDevice -> GATT ->
// bytes copied in the handler -> decoders -> clock alignment -> assembler -> model) on a virtual
// clock, with disconnects, duplicate / out-of-order PMD frames and a device clock jump.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { BluetoothUnavailableError } from '../../web/src/ble/errors.js';
import { bluetoothAvailability, connectWearable, DEVICE_FILTERS } from '../../web/src/ble/device.js';
import { WindowAssembler } from '../../web/src/ble/assembler.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/devices.js';
import { loadModel } from '../../web/src/index.js';
import { normalizeWindow } from '../../web/src/window.js';
import { settle } from './virtual-time.js';

const T0 = 1764460800;

async function session(options = {}) {
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed: 7, ...options, clock });
  const assembler = new WindowAssembler();
  const connect = (filters) => connectWearable({ bluetooth: sim, clock, filters, assembler });
  const [strap, thermometer, oximeter] = await settle(clock,
    Promise.all([connect(DEVICE_FILTERS.strap), connect(DEVICE_FILTERS.thermometer), connect(DEVICE_FILTERS.oximeter)]));
  return { clock, sim, assembler, strap, thermometer, oximeter };
}

// True host times of a PMD batch's samples: the simulator's own sample instants (not the
// timestamps it sent), mapped through its clock model.
function trueHostTimes(sim, batch, type) {
  const frame = sim.truth.pmdFrames.find((f) => f.type === type && f.deviceTime === batch.deviceTimes[batch.deviceTimes.length - 1]);
  return Array.from(sim.truth.pmdSampleTimes(frame), (d) => sim.truth.hostTime('strap', d));
}

function collect(wearable, kind) {
  const out = [];
  (async () => { for await (const b of wearable.samples(kind)) out.push(b); })();
  return out;
}

test('ECG sample times are aligned to the host clock within 5 ms after 60 s (20 ppm drift, batching)', async () => {
  // Five seeds at the simulator's default connection interval (15 ms, 2 % of events late by up to
  // 4 intervals) with its H10 traffic (ECG and 36-sample ACC frames, which nearly divide the
  // connection events); the reference is each sample's true instant. Measured 1.7-2.9 ms (2 ms of
  // it the strap's own latency); 30 ms intervals and 20 seeds: the test below.
  for (const seed of [3, 7, 11, 19, 23]) {
    const { clock, sim, strap } = await session({ seed });
    const ecg = collect(strap, 'ecg'), acc = collect(strap, 'acc');
    await clock.advanceAsync(180);
    let worst = 0, n = 0;
    for (const b of ecg) {
      const truth = trueHostTimes(sim, b, 'ecg');
      for (let i = 0; i < b.times.length; i++) {
        if (b.times[i] - T0 < 60) continue;
        worst = Math.max(worst, Math.abs(b.times[i] - truth[i]));
        n++;
      }
    }
    console.log(`seed ${seed}: aligned ECG, ${n} samples after 60 s, max error ${(worst * 1000).toFixed(2)} ms; drift estimate ${strap.clock.drift.toFixed(1)} ppm (device +20 ppm runs fast)`);
    assert.ok(n > 10_000);
    assert.ok(worst < 0.005, `seed ${seed}: max alignment error ${worst * 1000} ms`);
    assert.ok(acc.length > 0 && acc[0].values.x.length > 0, 'ACC flows too');
    sim.close();
  }
});

// Issue 21's goal (the 5 ms alignment at 15 and 30 ms intervals for all 20 seeds), through the
// whole device path. At a 30 ms interval the fastest delivery among recent frames is a sawtooth up
// to 10 ms high (the ECG frame period is nearly 56/3 intervals) whose ramps look like drift; the
// aligner's connection-event bounds (web/src/ble/clock.js) keep the slope off them. Measured here
// and in bench/clock_alignment.mjs: +-20 ppm at most 4.8 ms from 60 s on (7.2 ms with the lower
// envelope alone); a crystal 50 ppm fast, outside the goal, up to 6.4 ms at 30 ms (was 9.1), held
// to 10 ms; every case within 5 ms from 150 s on (measured <= 2.6 ms).
test('ECG alignment, 20 seeds, 15 and 30 ms intervals: within 5 ms after 60 s at +-20 ppm (10 ms at +50 ppm), 5 ms after 150 s', async () => {
  const worst = { 20: 0, [-20]: 0, 50: 0 };
  let worst150 = 0, runs = 0;
  for (const driftPpm of [20, -20, 50]) {
    for (const connectionIntervalMs of [15, 30]) {
      for (let seed = 1; seed <= 20; seed++) {
        const clock = createVirtualClock(T0);
        const sim = createSimulatedBluetooth({ seed, clock, devices: ['strap'], connectionIntervalMs, driftPpm });
        const strap = await settle(clock, connectWearable({ bluetooth: sim, clock }));
        const ecg = collect(strap, 'ecg');
        await clock.advanceAsync(240);
        for (const b of ecg) {
          const truth = trueHostTimes(sim, b, 'ecg');
          for (let i = 0; i < b.times.length; i++) {
            const e = Math.abs(b.times[i] - truth[i]), t = b.times[i] - T0;
            if (t >= 60) worst[driftPpm] = Math.max(worst[driftPpm], e);
            if (t >= 150) worst150 = Math.max(worst150, e);
          }
        }
        assert.ok(Math.abs(strap.clock.connectionInterval * 1000 - connectionIntervalMs) < 1e-9,
          `seed ${seed}: connection interval found ${strap.clock.connectionInterval * 1000} ms, simulated ${connectionIntervalMs} ms`);
        runs++;
        await strap.close();
        sim.close();
      }
    }
  }
  const ms = (x) => (x * 1000).toFixed(2);
  console.log(`ECG alignment over ${runs} runs, max error after 60 s: +20 ppm ${ms(worst[20])} ms, -20 ppm ${ms(worst[-20])} ms, ` +
    `+50 ppm ${ms(worst[50])} ms; after 150 s ${ms(worst150)} ms`);
  assert.ok(worst[20] < 0.005, `+20 ppm after 60 s: ${worst[20] * 1000} ms`);
  assert.ok(worst[-20] < 0.005, `-20 ppm after 60 s: ${worst[-20] * 1000} ms`);
  assert.ok(worst[50] < 0.010, `+50 ppm after 60 s: ${worst[50] * 1000} ms`);
  assert.ok(worst150 < 0.005, `after 150 s: ${worst150 * 1000} ms`);
});

test('RR intervals rebuild beat times close to the true beats', async () => {
  const { clock, sim, strap } = await session();
  const rr = collect(strap, 'rr');
  await clock.advanceAsync(120);
  const truth = sim.truth.beatTimes(T0, T0 + 125);
  const times = rr.flatMap((b) => Array.from(b.times)).filter((t) => t - T0 > 30);
  assert.ok(times.length > 60);
  let worst = 0;
  for (const t of times) {
    let best = Infinity;
    for (const b of truth) best = Math.min(best, Math.abs(b - t));
    worst = Math.max(worst, best);
  }
  // Heart-rate notifications carry no device time: beats are anchored to receive times, so they
  // trail the truth by up to the delivery delay (connection events, a few late ones).
  console.log(`beat times: ${times.length} beats after 30 s, max error ${(worst * 1000).toFixed(1)} ms`);
  assert.ok(worst < 0.1, `beat time error ${worst}`);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] > times[i - 1], 'beats strictly increase');
  sim.close();
});

test('a disconnect mid-stream becomes a marked gap and the streams come back', async () => {
  const { clock, sim, strap, assembler } = await session({ disconnects: [{ device: 'strap', at: 30, duration: 9 }] });
  const events = [];
  for (const type of ['disconnect', 'reconnect', 'gap', 'reconnect-failed']) strap.addEventListener(type, (e) => events.push([type, e.detail]));
  await clock.advanceAsync(70);
  const types = events.map(([t]) => t);
  assert.equal(types[0], 'disconnect');
  assert.ok(types.includes('gap') && types.includes('reconnect'), types.join(','));
  const gap = events.find(([t]) => t === 'gap')[1];
  assert.ok(gap.start - T0 <= 31 && gap.end - T0 >= 39, `gap ${gap.start - T0}..${gap.end - T0}`);
  const w = assembler.window({ end: gap.end + 10, seconds: 40 });
  const ecg = w.streams.find((s) => s.modality === 'ecg');
  const slot = (t) => Math.round((t - ecg.startTime) * ecg.rateHz);
  const inGap = ecg.samples.slice(slot(gap.start + 1), slot(gap.end - 1));
  assert.ok(inGap.length > 500 && inGap.every((v) => v === null), 'the outage is missing data in the window');
  const after = ecg.samples.slice(slot(gap.end + 2), slot(gap.end + 8));
  assert.ok(after.filter((v) => v !== null).length > 0.95 * after.length, 'ECG flows again after the reconnect');
  const before = ecg.samples.slice(slot(gap.start - 8), slot(gap.start - 1));
  assert.ok(before.filter((v) => v !== null).length > 0.95 * before.length, 'data before the drop is kept');
  sim.close();
});

test('duplicate and out-of-order PMD frames neither duplicate nor reorder samples; a clock jump is survived', async () => {
  const { clock, sim, strap, assembler } = await session({
    faults: { duplicatePmdProbability: 0.05, reorderPmdProbability: 0.05, clockJumps: [{ device: 'strap', at: 50, by: -3600 }] },
  });
  const ecg = collect(strap, 'ecg');
  await clock.advanceAsync(120);
  assert.ok(sim.truth.faults.length > 5, 'faults were injected');
  const all = ecg.flatMap((b) => Array.from(b.deviceTimes));
  assert.equal(new Set(all).size, all.length, 'a duplicated frame was delivered twice');
  const w = normalizeWindow(assembler.window({ end: T0 + 118, seconds: 10 }));
  const ecgStream = w.streams.find((s) => s.modality === 'ecg');
  const present = ecgStream.samples.filter((v) => !Number.isNaN(v)).length;
  assert.ok(present > 0.9 * ecgStream.samples.length, `after the clock jump ECG lands on the host grid (${present}/${ecgStream.samples.length})`);
  sim.close();
});

test('windows from the wearable run through the model', async () => {
  const { clock, sim, assembler } = await session();
  await clock.advanceAsync(25);
  const model = await loadModel(new URL('../fixtures/model/factorized.safetensors', import.meta.url).pathname);
  // the fixture model knows ecg / acc_x / hr / rr / temperature; keep those streams
  const w = assembler.window({ end: clock.now(), seconds: 10 });
  const known = new Set(model.config.modalities.map((m) => m.name));
  const r = model.forward({ ...w, streams: w.streams.filter((s) => known.has(s.modality) && s.sensor < 4).map((s) => ({ ...s, placement: s.placement === 'finger' ? 'finger' : s.placement })) });
  assert.ok(r.dims[0] > 50);
  assert.ok(r.pooled.every(Number.isFinite));
  model.dispose();
  sim.close();
});

test('samples() iterators end on abort; the DataView is copied in the handler', async () => {
  const { clock, sim, strap } = await session();
  const controller = new AbortController();
  const got = [];
  const done = (async () => { for await (const b of strap.samples('hr', { signal: controller.signal })) got.push(b); })();
  await clock.advanceAsync(5);
  controller.abort();
  await done;
  const n = got.length;
  await clock.advanceAsync(5);
  assert.ok(n >= 3 && got.length === n);
  // the simulator inverts every byte after dispatch: had we kept the DataView, heart rates would be ~180-255
  assert.ok(got.every((b) => b.values[0] > 40 && b.values[0] < 180), got.map((b) => b.values[0]).join(','));
  sim.close();
});

test('no Web Bluetooth: a typed error that says why and what to do', async () => {
  await assert.rejects(connectWearable({}), (e) => e instanceof BluetoothUnavailableError && e.code === 'BLUETOOTH_UNAVAILABLE');
  assert.equal(bluetoothAvailability({ isSecureContext: false, navigator: {} }).reason, 'insecure-context');
  assert.match(bluetoothAvailability({ navigator: { userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko Firefox/128.0' } }).message, /Firefox and Safari/);
  assert.match(bluetoothAvailability({ navigator: { userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0' } }).message, /experimental-web-platform-features/);
  assert.equal(bluetoothAvailability({ navigator: { bluetooth: {} } }).available, true);
});

test("one device's outage marks only that device's streams as missing", async () => {
  const { clock, sim, assembler } = await session({ disconnects: [{ device: 'strap', at: 20, duration: 5 }] });
  await clock.advanceAsync(45);
  const w = assembler.window({ end: clock.now(), seconds: 40 });
  const nulls = (modality) => w.streams.find((s) => s.modality === modality).samples.filter((v) => v === null).length;
  assert.ok(nulls('ecg') > 500, 'the strap outage shows in ECG');
  assert.equal(nulls('temperature'), 0, 'the thermometer stayed connected');
  assert.ok(nulls('spo2') <= 2, 'the oximeter stayed connected (finger-off samples aside)');
  sim.close();
});

test('the accelerometer streams are declared at the requested PMD rate', async () => {
  for (const sampleRate of [50, 200]) {
    const clock = createVirtualClock(T0);
    const sim = createSimulatedBluetooth({ clock, seed: 5 });
    const assembler = new WindowAssembler();
    const strap = await settle(clock, connectWearable({ bluetooth: sim, clock, filters: DEVICE_FILTERS.strap, assembler,
      pmd: { acc: { sampleRate, resolution: 16, range: 8 } } }));
    for (const axis of ['acc_x', 'acc_y', 'acc_z']) assert.equal(assembler.get(axis).rateHz, sampleRate, `${axis} at ${sampleRate} Hz`);
    assert.equal(assembler.get('ecg').rateHz, 130);
    await clock.advanceAsync(12);
    // the window's measured rate is the device's real one near the request (H10: 51.07 / 204.3 Hz)
    const acc = assembler.window({ end: strap.now(), seconds: 10 }).streams.find((s) => s.modality === 'acc_x');
    assert.ok(Math.abs(acc.rateHz / sampleRate - 1) < 0.05, `acc_x window at ${acc.rateHz} Hz for a ${sampleRate} Hz request`);
    sim.close();
  }
});

test('a link lost again during a reconnect attempt fails that attempt; one reconnect loop, no gap over the data that follows', async () => {
  // The strap is out of range 30-39 s (attempts at 32 and 36 s fail); the attempt at 44 s connects
  // and the link drops at once, before any service is found (a strap at the edge of range). That
  // attempt must fail and the same loop try again (60 s); a second loop, started by the second
  // drop, would report a second disconnect and keep marking [30 s, now] as missing over live data.
  const { clock, sim, strap, assembler } = await session({ disconnects: [{ device: 'strap', at: 30, duration: 9 }] });
  const events = [];
  for (const type of ['disconnect', 'reconnect', 'gap', 'reconnect-failed', 'error']) strap.addEventListener(type, (e) => events.push([type, e.detail, clock.now() - T0]));
  const gatt = strap.device.gatt;
  const connect = gatt.connect.bind(gatt);
  let dropped = false;
  gatt.connect = async () => {
    const server = await connect();
    if (!dropped && clock.now() - T0 > 40) {
      dropped = true;
      strap.device.dropConnection();
    }
    return server;
  };
  await clock.advanceAsync(100);
  assert.ok(dropped, 'the attempt at 44 s connected and was dropped');
  const types = events.map(([t]) => t);
  assert.equal(types.filter((t) => t === 'disconnect').length, 1, types.join(','));
  assert.equal(types.filter((t) => t === 'reconnect').length, 1, types.join(','));
  const failed = events.filter(([t]) => t === 'reconnect-failed');
  assert.deepEqual(failed.map(([, d]) => d.attempt), [1, 2, 3], 'the attempts at 32, 36 and 44 s failed');
  assert.equal(failed[2][1].error.code, 'BLUETOOTH_DISCONNECTED');
  const [, back, at] = events.find(([t]) => t === 'reconnect');
  assert.equal(back.attempt, 4);
  assert.ok(at > 59 && at < 62, `reconnected at ${at} s`);
  // After the reconnect every ECG sample is there: no gap marked over them.
  const w = assembler.window({ end: clock.now(), seconds: clock.now() - (back.time + 3) });
  const after = w.streams.find((s) => s.modality === 'ecg').samples;
  assert.ok(after.length > 3000 && after.filter((v) => v !== null).length > 0.99 * after.length, `${after.filter((v) => v === null).length} of ${after.length} missing after the reconnect`);
  sim.close();
});

test('a wearable whose start fails is disconnected and detached: nothing stays connected or reconnects', async () => {
  // The armband refuses ACC at 50 Hz; a setting the caller gave is not retried: BLUETOOTH_PMD,
  // after the device had connected and its heart-rate notifications had started.
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed: 1, devices: ['armband'], clock });
  await assert.rejects(settle(clock, connectWearable({ bluetooth: sim, clock, pmd: { acc: { sampleRate: 50, resolution: 16, range: 8 } } })),
    (e) => e.code === 'BLUETOOTH_PMD');
  const [device] = sim.devices;
  assert.equal(device.gatt.connected, false, 'disconnected after the failed start');
  await clock.advanceAsync(30);
  assert.equal(device.gatt.connected, false, 'and not reconnected by a Wearable nobody holds');
  sim.close();
});
