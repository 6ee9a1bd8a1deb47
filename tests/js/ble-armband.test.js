// An optical armband (the simulator's Verity Sense-like 'armband') through the device layer:
// PMD PPG, ACC, gyroscope and magnetometer delta frames decoded and timed like the strap's ECG,
// PPI pulses with their flags, and the start that the device refuses (ACC 50 Hz) retried with its
// offer. The reference is the simulator's own signal at each sample's true instant (not the bytes
// it sent), so a wrong layout, scale, channel order or time shows up as a value mismatch.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connectWearable } from '../../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/devices.js';
import { settle } from './virtual-time.js';

const T0 = 1764460800;
const RUN = 120;  // s: 60 at rest, then 60 walking

async function armband({ seed = 3, pmd = { ppi: true }, ...options } = {}) {
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({
    seed, devices: ['armband'], clock,
    activities: [{ activity: 'rest', duration: 60 }, { activity: 'walk', duration: 600 }], ...options,
  });
  const wearable = await settle(clock, connectWearable({ bluetooth: sim, clock, pmd }));
  const got = {};
  for (const kind of ['ppg', 'acc', 'gyro', 'magn', 'ppi', 'hr']) {
    got[kind] = [];
    (async () => { for await (const b of wearable.samples(kind)) got[kind].push(b); })();
  }
  const errors = [];
  wearable.addEventListener('error', (e) => errors.push(e.detail.error));
  await clock.advanceAsync(RUN);
  return { clock, sim, wearable, got, errors };
}

const TYPE = { ppg: 'ppg', acc: 'acc', gyro: 'gyro', magn: 'magnetometer' };
const COLUMNS = { ppg: ['ppg0', 'ppg1', 'ppg2', 'ambient'], acc: ['x', 'y', 'z'], gyro: ['x', 'y', 'z'], magn: ['x', 'y', 'z'] };

// The simulator's frame for a batch (by its last sample's device time) and the exact host times its
// samples were taken at.
function truthOf(sim, kind, batch) {
  const last = batch.deviceTimes[batch.deviceTimes.length - 1];
  const frame = sim.truth.pmdFrames.find((f) => f.device === 'armband' && f.type === TYPE[kind] && f.deviceTime === last);
  assert.ok(frame, `${kind}: a decoded frame the simulator did not send (device time ${last})`);
  assert.equal(frame.count, batch.times.length, `${kind}: sample count of the frame`);
  return sim.truth.armband.sampleHostTimes(frame);
}

test('armband PMD streams: every sample decoded to the simulator\'s value at its true instant, timed within 5 ms after 60 s', async () => {
  const { sim, got, errors } = await armband();
  assert.deepEqual(errors, []);
  const signal = {
    ppg: (t) => sim.truth.armband.ppgAt(t),
    acc: (t) => sim.truth.armband.accAt(t).map((v) => Math.max(-8000, Math.min(8000, Math.round(v)))),
    gyro: (t) => sim.truth.armband.gyroAt(t),
    magn: (t) => sim.truth.armband.magnetometerAt(t),
  };
  // Tolerances: PPG and ACC are integer counts (exact); gyroscope and magnetometer are rounded to
  // a count of their factor (0.07 dps, 0.0015 G) and carried as float32: half a count + 1e-6.
  const tolerance = { ppg: 0, acc: 0, gyro: 0.035 + 1e-5, magn: 0.00075 + 1e-6 };
  const rates = { ppg: 54.75, acc: 51.705, gyro: 51.705, magn: 49.434 };
  for (const kind of Object.keys(signal)) {
    let n = 0, worstValue = 0, worstTime = 0;
    for (const b of got[kind]) {
      const truth = truthOf(sim, kind, b);
      for (let i = 0; i < b.times.length; i++, n++) {
        const want = signal[kind](truth[i]);
        COLUMNS[kind].forEach((c, j) => { worstValue = Math.max(worstValue, Math.abs(b.values[c][i] - want[j])); });
        if (b.times[i] - T0 > 60) worstTime = Math.max(worstTime, Math.abs(b.times[i] - truth[i]));
      }
    }
    // Every frame the simulator had ready 0.5 s before the end was decoded (no frame lost here).
    const sent = sim.truth.pmdFrames.filter((f) => f.device === 'armband' && f.type === TYPE[kind] && f.ready < T0 + RUN - 0.5);
    assert.ok(got[kind].length >= sent.length, `${kind}: ${got[kind].length} batches decoded, ${sent.length} frames sent`);
    const rate = n / (got[kind].at(-1).times.at(-1) - got[kind][0].times[0]);
    console.log(`${kind}: ${n} samples in ${got[kind].length} frames, ${rate.toFixed(3)} Hz; max |value - truth| ${worstValue}; max time error after 60 s ${(worstTime * 1000).toFixed(2)} ms`);
    assert.ok(worstValue <= tolerance[kind], `${kind}: value off by ${worstValue}`);
    assert.ok(worstTime < 0.005, `${kind}: time off by ${worstTime * 1000} ms`);
    assert.ok(Math.abs(rate / rates[kind] - 1) < 0.002, `${kind}: ${rate} Hz, the device runs at ${rates[kind]}`);
  }
});

test('armband PPI: one event per pulse with its flags; intervals unreliable while walking are NaN', async () => {
  const { sim, got } = await armband();
  const events = got.ppi.flatMap((b) => Array.from(b.times, (t, i) => ({
    t, value: b.values[i], ms: b.ppiMs[i], blocker: b.blocker[i], contact: b.skinContact[i], supported: b.skinContactSupported[i],
  })));
  const pulses = sim.truth.armband.pulseTimes(T0, T0 + RUN + 2);
  // The first frame comes ~25 s after the start.
  assert.ok(events[0].t > T0 + 20, `first pulse event at ${events[0].t - T0} s`);
  let late = 0, rest = 0, walking = 0;
  const matched = [];
  for (const e of events) {
    // Each event ends at a true pulse at most the armband's largest frame delay (1.4 s) + a few
    // connection intervals before it (pulses are timed from their frame's arrival: BeatTimeline),
    // never after it.
    // Its pulse: the one in that span whose interval (time since the previous pulse, device
    // clock, whole ms) is the event's.
    // (A regular rhythm repeats an interval: the pulse after the previous event's is preferred.)
    const fits = (j) => j > 0 && j < pulses.length && pulses[j] <= e.t + 0.002 && pulses[j] > e.t - 1.5 &&
      Math.abs(e.ms / 1000 - (pulses[j] - pulses[j - 1])) < 0.001;
    const next = matched.length ? matched.at(-1) + 1 : -1;
    const k = fits(next) ? next : pulses.findIndex((_, j) => fits(j));
    assert.ok(k > 0, `no pulse in the 1.5 s before the event at ${e.t - T0} s has its interval ${e.ms} ms`);
    const p = pulses[k];
    late = Math.max(late, e.t - p);
    matched.push(k);
    const moving = sim.truth.activityAt(p) !== 'rest' || sim.physiology.motionBurstAt(p - T0);
    assert.equal(e.blocker, moving ? 1 : 0, `blocker at ${p - T0} s`);
    assert.equal(e.contact, 1);
    assert.equal(e.supported, 1);
    if (moving) { walking++; assert.ok(Number.isNaN(e.value), 'a blocked interval reaches the model as missing'); }
    else { rest++; assert.equal(e.value, Math.fround(e.ms / 1000)); }
  }
  // Every pulse between the first and the last event once: none lost, none doubled.
  const gaps = matched.flatMap((k, i) => (i && k !== matched[i - 1] + 1 ? [[matched[i - 1], k]] : []));
  assert.deepEqual(gaps, [], `pulses skipped or doubled: ${JSON.stringify(gaps)}`);
  console.log(`PPI: ${events.length} pulses (${rest} reliable, ${walking} blocked while moving); latest event ${(late * 1000).toFixed(0)} ms after its pulse`);
  assert.ok(rest > 20 && walking > 20);
});

test('armband control point: the default ACC request (50 Hz) is retried at the offered 52 Hz; a setting the caller gave is not', async () => {
  const { got } = await armband({ pmd: {} });
  assert.ok(got.acc.length > 10, 'ACC flows after the retry');
  assert.equal(got.ppi.length, 0, 'PPI is off unless asked');
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed: 1, devices: ['armband'], clock });
  await assert.rejects(settle(clock, connectWearable({ bluetooth: sim, clock, pmd: { acc: { sampleRate: 50, resolution: 16, range: 8 } } })),
    (e) => e.code === 'BLUETOOTH_PMD' && /status 8/.test(e.message));
});
