// Per-sample device times of PMD frames (web/src/ble/device.js, PmdTimeline): a frame carries the
// device time of its LAST sample; from the second frame of a stream on, its samples are spaced by
// (t_frame - t_previous_frame) / n. Checked two ways:
// - PmdTimeline on hand-made frame sequences (exact arithmetic as the reference): duplicates, a
//   lost frame, a late frame, a clock jump, a restart, a rate the nominal cannot explain;
// - the whole device path (simulated H10 bytes -> decoders -> PmdTimeline) against the
//   simulator's TRUE sample times (its oscillator, not the timestamps it sends), with seeded
//   noise: ~12 µs timestamp jitter, connection-event batching, late events, dropouts, duplicate
//   and out-of-order frames, a disconnect and a clock jump.
// Bound: 0.5 ms from the second frame of a stream on (the requirement). The first frame
// can only use the nominal rate; its error is printed (~1.5 ms ECG, ~15 ms ACC at 50 Hz).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connectWearable, DEVICE_FILTERS, PmdTimeline } from '../../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock, H10_ACC_RATES_HZ } from '../../web/src/simulator/devices.js';
import { SensorformerError } from '../../web/src/errors.js';
import { settle } from './virtual-time.js';

const T0 = 1764460800;
const BOUND = 0.5e-3;
// Float64 Unix seconds near 1.7e9 have a 2.4e-7 s ulp; hand-made times are compared within 1e-6 s.
const EXACT = 1e-6;

// ---------------------------------------------------------------------------------------------
// PmdTimeline, hand-made frames

const D0 = 1.76e9;  // a device time in Unix seconds (the decoder's deviceTime scale)

// Frame k (0-based) of a stream of n-sample frames at `rate` Hz: the device time of its last sample.
const last = (k, n, rate, t0 = D0) => t0 + ((k + 1) * n - 1) / rate;

function assertTimes(got, expected, what) {
  assert.ok(got instanceof Float64Array, what);
  assert.equal(got.length, expected.length, what);
  for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i] - expected[i]) < EXACT, `${what}: sample ${i}: ${got[i] - expected[i]} s`);
}
// The samples of a frame ending at t, spaced by s.
const spaced = (t, n, s) => Array.from({ length: n }, (_, i) => t - (n - 1 - i) * s);

test('PmdTimeline: the first frame at the nominal rate, from the second on (t - t_prev) / n', () => {
  const rate = 130.35, n = 73;
  const tl = new PmdTimeline(130);
  assertTimes(tl.times(last(0, n, rate), n), spaced(last(0, n, rate), n, 1 / 130), 'frame 0: nominal');
  for (let k = 1; k < 5; k++) {
    const t = last(k, n, rate), prev = last(k - 1, n, rate);
    // Reference: frame k's samples continue frame k-1's, spaced by the gap over n.
    const expected = Array.from({ length: n }, (_, i) => prev + (i + 1) * (t - prev) / n);
    assertTimes(tl.times(t, n), expected, `frame ${k}`);
  }
  assert.ok(Math.abs(tl.spacing - 1 / rate) < EXACT / n, `spacing ${tl.spacing}`);  // the times' ulp over n
  // Frames of different sizes (delta frames): each is divided by its own count.
  const acc = new PmdTimeline(200);
  const r = 204.3;
  acc.times(D0, 30);
  assertTimes(acc.times(D0 + 41 / r, 41), spaced(D0 + 41 / r, 41, 1 / r), '41-sample frame after a 30-sample one');
  assertTimes(acc.times(D0 + 53 / r, 12), spaced(D0 + 53 / r, 12, 1 / r), 'then a 12-sample one');
});

test('PmdTimeline: duplicates, a lost frame, a late frame', () => {
  const rate = 51.07, n = 36, s = 1 / rate;
  const tl = new PmdTimeline(50);
  tl.times(last(0, n, rate), n);
  tl.times(last(1, n, rate), n);
  assert.equal(tl.times(last(1, n, rate), n), null, 'the same frame again');
  assert.equal(tl.times(last(0, n, rate), n), null, 'an older frame again');
  // Frame 2 is lost: frame 3's gap spans two frames; it keeps the spacing measured before
  // (dividing the gap by n would space it by 2 / rate).
  assertTimes(tl.times(last(3, n, rate), n), spaced(last(3, n, rate), n, s), 'after a lost frame');
  // Frames 5 and 4 arrive swapped: 5 follows 3 across a hole (kept spacing), 4 then fits between
  // 3 and 5 and is measured against 3.
  assertTimes(tl.times(last(5, n, rate), n), spaced(last(5, n, rate), n, s), 'frame 5 before 4');
  assertTimes(tl.times(last(4, n, rate), n), spaced(last(4, n, rate), n, s), 'late frame 4');
  assert.equal(tl.times(last(4, n, rate), n), null, 'and its duplicate');
  assertTimes(tl.times(last(6, n, rate), n), spaced(last(6, n, rate), n, s), 'frame 6');
  assert.ok(Math.abs(tl.spacing - s) < EXACT / n);
});

test('PmdTimeline: a lost frame before any measurement keeps the nominal rate; a rate beyond 5 % of nominal is not measured', () => {
  const rate = 130.35, n = 73;
  const tl = new PmdTimeline(130);
  tl.times(last(0, n, rate), n);
  assertTimes(tl.times(last(2, n, rate), n), spaced(last(2, n, rate), n, 1 / 130), 'frame 1 lost: still nominal');
  assert.equal(tl.spacing, null);
  assertTimes(tl.times(last(3, n, rate), n), spaced(last(3, n, rate), n, 1 / rate), 'frames 2 and 3: measured');
  // A stream 8 % faster than its nominal rate (outside Polar's +-5 % for the H10) is taken for a
  // gap, not a rate: the nominal spacing stays.
  const fast = new PmdTimeline(130);
  fast.times(last(0, n, 140.4), n);
  assertTimes(fast.times(last(1, n, 140.4), n), spaced(last(1, n, 140.4), n, 1 / 130), 'rate 140.4 Hz');
  assert.throws(() => new PmdTimeline(0), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT');
  assert.throws(() => new PmdTimeline(NaN), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT');
});

test('PmdTimeline: a clock jump and a restart keep the measured spacing; new frames are measured against each other', () => {
  const rate = 204.3, n = 36, s = 1 / rate;
  const tl = new PmdTimeline(200);
  for (let k = 0; k < 4; k++) tl.times(last(k, n, rate), n);
  // The device clock goes back an hour: the first frame after has no earlier frame but keeps the
  // spacing; the next is measured against it, not against the frames before the jump.
  const back = D0 - 3600;
  assertTimes(tl.times(last(0, n, rate, back), n), spaced(last(0, n, rate, back), n, s), 'first frame after the jump');
  const t1 = last(1, n, rate * (1 + 1e-4), back);  // measured again: a rate 100 ppm off shows
  assertTimes(tl.times(t1, n), spaced(t1, n, (t1 - last(0, n, rate, back)) / n), 'second frame after the jump');
  // A jump back by less than the history (2 s): still measured against the new frames only.
  const tl2 = new PmdTimeline(200);
  for (let k = 0; k < 12; k++) tl2.times(last(k, n, rate), n);
  const small = D0 - 2.0001;
  tl2.times(last(0, n, rate, small), n);
  assertTimes(tl2.times(last(1, n, rate, small), n), spaced(last(1, n, rate, small), n, s), 'after a 2 s step back');
  // restart() (the stream started again after a reconnect): the first frame keeps the spacing.
  tl.restart();
  const later = D0 + 60;
  assertTimes(tl.times(later, n), spaced(later, n, tl.spacing), 'first frame after a restart');
  assert.ok(Math.abs(tl.spacing - (t1 - last(0, n, rate, back)) / n) < 1e-15);
});

// ---------------------------------------------------------------------------------------------
// The device path against the simulator's true sample times

// Connects to the simulated strap (before its first PMD frame: the stream starts 50 ms after the
// start command) and collects every ECG and ACC batch for `seconds`.
async function strapSession({ seed, seconds, sim: simOptions = {}, accRate = 50 }) {
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed, clock, devices: ['strap'], ...simOptions });
  const wearable = await settle(clock, connectWearable({
    bluetooth: sim, clock, filters: DEVICE_FILTERS.strap, pmd: { acc: { sampleRate: accRate, resolution: 16, range: 8 } },
  }));
  const batches = { ecg: [], acc: [] };
  for (const kind of ['ecg', 'acc']) (async () => { for await (const b of wearable.samples(kind)) batches[kind].push(b); })();
  await clock.advanceAsync(seconds);
  await wearable.close();
  sim.close();
  return { sim, batches };
}

// Per received frame of a stream: the largest |device time - true device time| of its samples.
// `skip(frame)` leaves frames out (e.g. one whose samples straddle a clock jump).
function frameErrors(sim, batches, type, skip = () => false) {
  const byTime = new Map(sim.truth.pmdFrames.filter((f) => f.type === type).map((f) => [f.deviceTime, f]));
  const out = [];
  for (const b of batches) {
    const frame = byTime.get(b.deviceTimes[b.deviceTimes.length - 1]);
    assert.ok(frame, 'every batch is a frame the simulator generated');
    assert.equal(b.deviceTimes.length, frame.count);
    if (skip(frame)) continue;
    const truth = sim.truth.pmdSampleTimes(frame);
    let worst = 0;
    for (let i = 0; i < truth.length; i++) worst = Math.max(worst, Math.abs(b.deviceTimes[i] - truth[i]));
    out.push({ frame, worst });
  }
  return out;
}

const ms = (s) => (s * 1e3).toFixed(3);

test('device path: sample device times within 0.5 ms of the truth from the second frame on (ECG 130.35 Hz, ACC 51.07 / 204.3 Hz)', async () => {
  for (const accRate of [50, 200]) {
    for (const seed of [1, 2, 3]) {
      const { sim, batches } = await strapSession({ seed, seconds: 90, accRate });
      for (const [type, rate] of [['ecg', 130.35], ['acc', H10_ACC_RATES_HZ[accRate]]]) {
        const errors = frameErrors(sim, batches[type], type);
        const frames = sim.truth.pmdFrames.filter((f) => f.type === type);
        assert.ok(errors.length > 100, `${type}: ${errors.length} frames`);
        assert.equal(errors[0].frame, frames[0], 'the first frame of the stream was received first');
        const rest = Math.max(...errors.slice(1).map((e) => e.worst));
        console.log(`seed ${seed}, ${type} at ${rate} Hz (requested ${type === 'ecg' ? 130 : accRate}): first frame ${ms(errors[0].worst)} ms ` +
          `(nominal spacing), frames 2-${errors.length} at most ${ms(rest)} ms`);
        assert.ok(rest <= BOUND, `${type} seed ${seed}: ${ms(rest)} ms`);
        // The first frame shows what nominal spacing costs, so the bound above is not met by chance:
        // (n - 1) x (1 / nominal - 1 / rate).
        const n = frames[0].count, nominal = type === 'ecg' ? 130 : accRate;
        assert.ok(Math.abs(errors[0].worst - (n - 1) * (1 / nominal - 1 / rate)) < 30e-6, `first frame ${ms(errors[0].worst)} ms`);
      }
    }
  }
});

test('device path: the bound holds through dropouts, duplicates, late frames, a reconnect and a clock jump', async () => {
  const jumpAt = 47;
  const { sim, batches } = await strapSession({
    seed: 5,
    seconds: 120,
    sim: {
      dropoutProbability: 0.05,
      faults: { duplicatePmdProbability: 0.03, reorderPmdProbability: 0.03, clockJumps: [{ device: 'strap', at: jumpAt, by: -3600 }] },
      disconnects: [{ device: 'strap', at: 80, duration: 6 }],
    },
  });
  const jump = sim.truth.start + jumpAt;
  const kinds = new Set(sim.truth.faults.map((f) => f.kind));
  assert.ok(kinds.has('duplicate-pmd') && kinds.has('reorder-pmd'), [...kinds].join(','));
  assert.ok(sim.truth.dropped.some((d) => d.characteristic === 'pmd-data'), 'PMD frames were lost');
  assert.equal(sim.truth.outages.length, 1);
  for (const type of ['ecg', 'acc']) {
    // Leave out the frame whose samples straddle the jump: its first samples were taken before it.
    const straddles = (f) => f.lastSampleTime >= jump && f.lastSampleTime - (f.count - 1) * f.spacing < jump + 1e-3;
    const errors = frameErrors(sim, batches[type], type, straddles);
    // The bound applies from the first frame whose predecessor (in the stream, one frame earlier,
    // contiguous) was received: before that only the nominal rate is known.
    const generated = sim.truth.pmdFrames.filter((f) => f.type === type);
    const received = new Set(errors.map((e) => e.frame));
    const from = generated.findIndex((f, k) => k > 0 && received.has(f) && received.has(generated[k - 1]));
    const deviceTimes = batches[type].flatMap((b) => Array.from(b.deviceTimes));
    assert.equal(new Set(deviceTimes).size, deviceTimes.length, 'no duplicated frame was emitted');
    let worst = 0, checked = 0;
    for (const e of errors) {
      if (generated.indexOf(e.frame) < from) continue;
      worst = Math.max(worst, e.worst);
      checked++;
    }
    console.log(`faults, ${type}: ${checked} of ${generated.length} frames checked, at most ${ms(worst)} ms`);
    assert.ok(checked > 0.8 * generated.length, `${checked} frames`);
    assert.ok(worst <= BOUND, `${type}: ${ms(worst)} ms`);
  }
});

test('device path: delta-compressed ACC (0x80, 3 x int16 reference) gives the same samples and times as int16 frames', async () => {
  const raw = await strapSession({ seed: 9, seconds: 30, accRate: 200 });
  const delta = await strapSession({ seed: 9, seconds: 30, accRate: 200, sim: { accCompressed: true } });
  const flat = (s, k) => s.batches.acc.flatMap((b) => Array.from(b.values[k]));
  const n = Math.min(flat(raw, 'x').length, flat(delta, 'x').length);
  assert.ok(n > 5000, `${n} samples`);
  for (const k of ['x', 'y', 'z']) assert.deepEqual(flat(delta, k).slice(0, n), flat(raw, k).slice(0, n));
  const errors = frameErrors(delta.sim, delta.batches.acc, 'acc');
  const worst = Math.max(...errors.slice(1).map((e) => e.worst));
  console.log(`delta ACC: ${errors.length} frames of ${Math.min(...errors.map((e) => e.frame.count))}-${Math.max(...errors.map((e) => e.frame.count))} samples, frames 2-${errors.length} at most ${ms(worst)} ms`);
  assert.ok(worst <= BOUND);
});
