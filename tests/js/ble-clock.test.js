// ClockAligner and BeatTimeline against simulated devices: deterministic (seeded PRNG, virtual
// clocks), no timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ClockAligner, BeatTimeline } from '../../web/src/ble/clock.js';
import { SensorformerError } from '../../web/src/errors.js';
import { prng } from './prng.js';

const exponential = (rand, mean) => -mean * Math.log(1 - rand());

const EPOCH_2000 = 946684800;          // Unix seconds of 2000-01-01T00:00:00Z
const HOST0 = 1718000000.123456;       // epoch-scale host time of the simulation start

// Delivery delay of a notification ready at host time h: wait for the next connection event
// (events every `interval` s from a random phase), sometimes more events (a late batch), plus
// host-side exponential jitter.
function linkModel(rand, { interval = 0.03, lateFraction = 0.15, maxExtra = 3, jitter = 0.0005, zero = false } = {}) {
  const phase = rand() * interval;
  return (h) => {
    if (zero) return 0;
    const k = Math.ceil((h - phase) / interval);
    let wait = phase + k * interval - h;
    if (rand() < lateFraction) wait += interval * (1 + Math.floor(rand() * maxExtra));
    return wait + exponential(rand, jitter);
  };
}

// A Polar-like ECG stream: 73 samples per frame at 130.34 Hz of DEVICE time; the device clock runs
// (1 + ppm e-6) times faster than the host's. Returns frames { device, trueHost, receive }.
// `jumps`: [{ atHost, by }] steps the device clock by `by` seconds from that host time on.
function simulate({ seed, ppm = 20, seconds = 180, link = {}, jumps = [] }) {
  const rand = prng(seed);
  const delay = linkModel(rand, link);
  const rate = ppm * 1e-6;
  const device0 = (HOST0 - EPOCH_2000) + 7.25 + rand() * 3;  // arbitrary offset, ~5.7e8 s since 2000
  const period = 73 / 130.34;
  const frames = [];
  for (let j = 1; ; j++) {
    const trueHost = HOST0 + (j * period) / (1 + rate);   // the device samples on its own clock
    if (trueHost > HOST0 + seconds) break;
    let device = device0 + j * period;
    for (const jmp of jumps) if (trueHost >= jmp.atHost + HOST0) device += jmp.by;
    frames.push({ device, trueHost, receive: trueHost + delay(trueHost) });
  }
  return frames;
}

// Feeds the frames in order; each frame is aligned right after its own observation (online).
// Returns the errors toHost(device) - trueHost per frame.
function run(frames, aligner = new ClockAligner()) {
  return frames.map((f) => {
    aligner.observe(f.device, f.receive);
    return { t: f.trueHost - HOST0, err: aligner.toHost(f.device) - f.trueHost };
  });
}
const maxAbs = (errs) => errs.reduce((m, e) => Math.max(m, Math.abs(e.err)), 0);

// The requirement. Measured online: each frame's last-sample device time is converted
// right after that frame was observed, and compared with its true host time, for every frame from
// 60 s to 300 s. (Over 40 other seeds: median 3.4 ms, 3 of 40 above 5 ms, worst 6.0 ms; the
// sawtooth of the 100 ppm test below is why.)
test('ClockAligner: 20 ppm drift, 30 ms connection interval: within 5 ms after 60 s', () => {
  let worstOverall = 0;
  for (const seed of [1, 2, 3, 4, 5]) {
    const aligner = new ClockAligner();
    const errs = run(simulate({ seed, ppm: 20, seconds: 300 }), aligner);
    const late = errs.filter((e) => e.t >= 60);
    const worst = maxAbs(late);
    worstOverall = Math.max(worstOverall, worst);
    const mean = late.reduce((s, e) => s + Math.abs(e.err), 0) / late.length;
    console.log(`clock 20 ppm seed ${seed}: max |error| after 60 s ${(worst * 1e3).toFixed(3)} ms, mean ${(mean * 1e3).toFixed(3)} ms, ` +
      `first 60 s ${(maxAbs(errs.filter((e) => e.t < 60)) * 1e3).toFixed(2)} ms, drift ${aligner.drift.toFixed(2)} ppm`);
    assert.ok(worst < 0.005, `seed ${seed}: ${worst * 1e3} ms`);
    assert.ok(aligner.ready);
    assert.ok(Math.abs(aligner.drift + 20) < 10, `drift ${aligner.drift}`);   // device 20 ppm fast: b - 1 = -20 ppm
  }
  console.log(`clock 20 ppm: worst over 5 seeds after 60 s ${(worstOverall * 1e3).toFixed(3)} ms`);
});

// 100 ppm (5x a crystal's spec) both ways. The error has two parts: the smallest delay among
// recent frames, and how well the slope is known. With a 30 ms interval the frame period (560.08
// ms) is nearly commensurate with the connection events (3 frames = 56.008 intervals), so the
// smallest delay of recent frames is a sawtooth up to 10 ms (interval / 3) high whose ramps look
// exactly like drift until two of its minima have been seen; with the device 100 ppm fast its
// period is ~320 s, and no lower-envelope fit can beat the sawtooth height before then. That case
// is held to 10 ms (the sawtooth height) and printed, and to 5 ms from 600 s on; every other one
// to the 5 ms requirement.
test('ClockAligner: 100 ppm drift, 7.5 ms / 30 ms / 50 ms connection intervals', () => {
  for (const [ppm, interval, bound] of [[100, 0.0075, 0.005], [-100, 0.0075, 0.005], [-100, 0.03, 0.005], [-100, 0.05, 0.005], [100, 0.03, 0.010]]) {
    let worst = 0, drift = 0;
    for (const seed of [11, 12, 13]) {
      const aligner = new ClockAligner();
      const errs = run(simulate({ seed, ppm, seconds: 240, link: { interval } }), aligner);
      worst = Math.max(worst, maxAbs(errs.filter((e) => e.t >= 60)));
      drift = aligner.drift;
    }
    console.log(`clock device ${ppm > 0 ? 'fast' : 'slow'} by ${Math.abs(ppm)} ppm, interval ${interval * 1e3} ms: max |error| after 60 s ` +
      `${(worst * 1e3).toFixed(3)} ms (3 seeds, bound ${bound * 1e3} ms), drift estimate ${drift.toFixed(1)} ppm`);
    assert.ok(worst < bound, `${ppm} ppm / ${interval}: ${worst * 1e3} ms`);
  }
  // the sawtooth case once several of its minima are in the history
  let worst = 0;
  for (const seed of [11, 12, 13]) worst = Math.max(worst, maxAbs(run(simulate({ seed, ppm: 100, seconds: 1200, link: { interval: 0.03 } })).filter((e) => e.t >= 600)));
  console.log(`clock device fast by 100 ppm, interval 30 ms: max |error| from 600 s to 1200 s ${(worst * 1e3).toFixed(3)} ms`);
  assert.ok(worst < 0.005);
});

// H10 traffic (the simulated strap's defaults, web/src/simulator/devices.js): ECG frames of 73 samples
// at 130.35 Hz and ACC frames of 36 samples at 51.07 Hz on one clock into one aligner, ready 2 ms
// after their last sample, delivered in order at the next 15 ms connection event (2 % of them 1-4
// events late). The ACC frame period (704.9 ms = 46.99 intervals) hardly moves against the
// connection events and the ECG one (560.1 ms) cycles through 3 phases, so the fastest delivery
// wanders as a sawtooth of ~5 ms over ~40 s: a history that is one ramp of it looked like +100 ppm
// of drift before the fit's slope uncertainty counted the spread of the deliveries (regression:
// seed 15 reached 5.57 ms).
function simulateH10({ seed, ppm = 20, seconds = 180, interval = 0.015 }) {
  const rand = prng(seed);
  const delay = linkModel(rand, { interval, lateFraction: 0.02, maxExtra: 4, jitter: 0 });
  const rate = ppm * 1e-6;
  const device0 = (HOST0 - EPOCH_2000) + 7.25 + rand() * 3;
  const frames = [];
  for (const { n, hz, start } of [{ n: 73, hz: 130.35, start: 0.05 }, { n: 36, hz: 51.07, start: 0.06 }]) {
    for (let j = 1; ; j++) {
      const device = start + (j * n - 1) / hz;  // the last sample's time on the device clock
      const trueHost = HOST0 + device / (1 + rate);
      if (trueHost > HOST0 + seconds) break;
      frames.push({ device: device0 + device, trueHost, ready: trueHost + 0.002 });
    }
  }
  frames.sort((a, b) => a.ready - b.ready);
  let previous = -Infinity;
  for (const f of frames) previous = f.receive = Math.max(previous, f.ready + delay(f.ready));
  return frames;
}

test('ClockAligner: H10 traffic (ECG + ACC frames, 15 ms interval) within 5 ms after 60 s over 20 seeds', () => {
  let worst = 0, worstSeed = 0;
  for (let seed = 1; seed <= 20; seed++) {
    const e = maxAbs(run(simulateH10({ seed })).filter((x) => x.t >= 60));
    if (e > worst) { worst = e; worstSeed = seed; }
  }
  console.log(`clock H10 traffic, 15 ms interval: max |error| after 60 s ${(worst * 1e3).toFixed(3)} ms (seed ${worstSeed} of 20; 2 ms of it the on-device latency)`);
  assert.ok(worst < 0.005, `${worst * 1e3} ms`);
});

// Connection-event bounds (issue 21 item 5). The arrivals of simulateH10 sit exactly on the
// connection events, so 'auto' must find the interval; the bounds it derives must hold the true
// drift at every observation (the generator's own rate is the reference), and the alignment
// must meet the 5 ms goal after 60 s at 30 ms where the lower envelope alone reached 7 ms.
test('ClockAligner: connection interval found in H10 arrivals; drift bounds hold the truth; 30 ms interval within 5 ms after 60 s', () => {
  let worst = 0, worstEnvelope = 0, checked = 0;
  for (let seed = 1; seed <= 20; seed++) {
    for (const ppm of [20, -20]) {
      const frames = simulateH10({ seed, ppm, seconds: 200, interval: 0.03 });
      const aligner = new ClockAligner();
      for (const f of frames) {
        aligner.observe(f.device, f.receive);
        const b = aligner.driftBounds;
        if (b) {
          // host = a + b * device with b - 1 = 1 / (1 + ppm e-6) - 1: about -ppm
          const truth = (1 / (1 + ppm * 1e-6) - 1) * 1e6;
          assert.ok(b[0] - 1e-6 <= truth && truth <= b[1] + 1e-6, `seed ${seed}, ${ppm} ppm: bounds [${b}] miss ${truth}`);
          checked++;
        }
        if (f.trueHost - HOST0 >= 60) worst = Math.max(worst, Math.abs(aligner.toHost(f.device) - f.trueHost));
      }
      assert.equal(aligner.connectionInterval, 0.03);
      worstEnvelope = Math.max(worstEnvelope, maxAbs(run(frames, new ClockAligner({ connectionIntervalSeconds: null })).filter((e) => e.t >= 60)));
    }
  }
  console.log(`clock H10 traffic, 30 ms interval, +-20 ppm, 20 seeds: max |error| after 60 s ${(worst * 1e3).toFixed(3)} ms ` +
    `(lower envelope alone: ${(worstEnvelope * 1e3).toFixed(3)} ms); bounds held the true drift at ${checked} observations`);
  assert.ok(checked > 20 * 2 * 200);
  assert.ok(worst < 0.005, `${worst * 1e3} ms`);
});

// A link whose interval changes mid-session (a reconnect, a connection parameter update): the
// arrival ring holds both grids for a while, and an interval that grew (15 -> 30 ms: the old one
// still divides every new gap) bounds the new frames' delays too tightly until the ring turns over.
// The bounds can then miss the true drift for a while, but the error stays no worse than the
// lower envelope's alone (after 60 s, 10 seeds x +-20 ppm: 15 -> 30 ms 3.94 ms against 4.69;
// 30 -> 15 ms 4.83 against 7.69); this test holds that.
test('ClockAligner: a connection interval that changes mid-session is no worse than the lower envelope alone', () => {
  for (const [before, after] of [[0.015, 0.03], [0.03, 0.015]]) {
    let auto = 0, envelope = 0;
    for (let seed = 1; seed <= 10; seed++) {
      for (const ppm of [20, -20]) {
        const A = simulateH10({ seed, ppm, seconds: 400, interval: before }), B = simulateH10({ seed, ppm, seconds: 400, interval: after });
        const frames = [...A.filter((f) => f.trueHost - HOST0 < 200), ...B.filter((f) => f.trueHost - HOST0 >= 200)]
          .sort((x, y) => x.receive - y.receive);
        auto = Math.max(auto, maxAbs(run(frames).filter((e) => e.t >= 60)));
        envelope = Math.max(envelope, maxAbs(run(frames, new ClockAligner({ connectionIntervalSeconds: null })).filter((e) => e.t >= 60)));
      }
    }
    console.log(`clock interval ${before * 1e3} -> ${after * 1e3} ms at 200 s: max |error| after 60 s ${(auto * 1e3).toFixed(3)} ms, lower envelope alone ${(envelope * 1e3).toFixed(3)} ms`);
    assert.ok(auto <= envelope + 0.0005, `${auto * 1e3} ms against ${envelope * 1e3} ms`);
    assert.ok(auto < 0.010);
  }
});

test('ClockAligner: no connection interval from jittery arrivals or a periodic source; explicit and disabled intervals', () => {
  // host jitter (0.5 ms exponential) keeps the arrivals off a clean grid: not used
  const jittery = simulate({ seed: 4, ppm: 20, seconds: 120, link: { interval: 0.03, lateFraction: 0.02, jitter: 0.0005 } });
  const a = new ClockAligner();
  for (const f of jittery) a.observe(f.device, f.receive);
  assert.ok(Number.isNaN(a.connectionInterval));
  assert.equal(a.driftBounds, null);
  // zero delay: arrivals every 560.08 ms exactly are one multiple of everything that divides it
  const periodic = simulate({ seed: 4, ppm: 20, seconds: 120, link: { zero: true } });
  const b = new ClockAligner();
  for (const f of periodic) b.observe(f.device, f.receive);
  assert.ok(Number.isNaN(b.connectionInterval));
  // an interval given is used as given; null turns the bounds off
  const frames = simulateH10({ seed: 2, ppm: 20, seconds: 120, interval: 0.03 });
  const given = new ClockAligner({ connectionIntervalSeconds: 0.03 }), off = new ClockAligner({ connectionIntervalSeconds: null });
  for (const f of frames) { given.observe(f.device, f.receive); off.observe(f.device, f.receive); }
  assert.equal(given.connectionInterval, 0.03);
  assert.ok(given.driftBounds !== null);
  assert.ok(Number.isNaN(off.connectionInterval));
  assert.equal(off.driftBounds, null);
  for (const bad of [0, -0.03, 'fast', Infinity]) {
    assert.throws(() => new ClockAligner({ connectionIntervalSeconds: bad }), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT');
  }
  assert.throws(() => new ClockAligner({ intervalToleranceSeconds: -1 }), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT');
});

test('ClockAligner: zero delay is exact to 1e-6 s once the drift is fitted', () => {
  const aligner = new ClockAligner();
  const errs = run(simulate({ seed: 3, ppm: 20, seconds: 120, link: { zero: true } }), aligner);
  const worst = maxAbs(errs.filter((e) => e.t >= 25));   // minDriftSpanSeconds (20) + a bin
  console.log(`clock zero delay: max |error| ${worst.toExponential(2)} s, drift ${aligner.drift.toFixed(6)} ppm`);
  assert.ok(worst < 1e-6, `${worst}`);
  assert.ok(Math.abs(aligner.drift - (1 / (1 + 20e-6) - 1) * 1e6) < 1e-3);
  // offset-only phase: the 20 ppm drift over <= 25 s is the only error
  assert.ok(maxAbs(errs.filter((e) => e.t < 25)) < 0.6e-3);
});

// A reset is seen at the first frame after it (residual ~ -3600 s or +2 s beyond the limits) or,
// for a small backward step (+3 s residual, which one slow notification could also show), after
// persistSeconds (10 s). The slope fitted before is kept as the prior, so only the offset has to
// be found again, i.e. the new frames' smallest delay has to come within 5 ms of 0: at a 7.5 ms
// interval a few seconds; at 30 ms up to the sawtooth above allows: bounded by 60 s, the
// cold-start requirement.
test('ClockAligner: a device reset (clock jump) resets the fit and recovers', () => {
  for (const [interval, by, within] of [[0.0075, -3600, 10], [0.0075, 2, 10], [0.0075, -3, 15], [0.03, -3600, 60], [0.03, 2, 60], [0.03, -3, 60]]) {
    let recovery = 0;
    for (const seed of [21, 22, 23]) {
      const aligner = new ClockAligner();
      const errs = run(simulate({ seed, ppm: 20, seconds: 100 + within + 60, link: { interval }, jumps: [{ atHost: 100, by }] }), aligner);
      recovery = Math.max(recovery, errs.filter((e) => e.t >= 100 && Math.abs(e.err) >= 0.005).reduce((m, e) => Math.max(m, e.t - 100), 0));
      assert.equal(aligner.jumps, 1, `interval ${interval}, jump ${by}, seed ${seed}`);
      assert.ok(maxAbs(errs.filter((e) => e.t >= 100 + within)) < 0.005);
    }
    console.log(`clock jump ${by} s, interval ${interval * 1e3} ms: within 5 ms again after ${recovery.toFixed(1)} s (3 seeds, bound ${within} s)`);
    assert.ok(recovery < within);
  }
});

test('ClockAligner: offset and drift values, array toHost, toDevice, reset, errors', () => {
  const a = new ClockAligner();
  assert.ok(Number.isNaN(a.offset));
  assert.equal(a.ready, false);
  assert.throws(() => a.toHost(1), SensorformerError);
  assert.throws(() => a.observe(NaN, 1), (e) => e.code === 'INVALID_ARGUMENT');
  // host = 1000 + 1.00005 * device, exact pairs
  for (let d = 0; d <= 60; d += 0.5) a.observe(1e8 + d, 1000 + 1.00005 * (1e8 + d));
  assert.ok(a.ready);
  assert.ok(Math.abs(a.drift - 50) < 1e-3, `${a.drift}`);
  assert.ok(Math.abs(a.offset - (1000 + 0.00005 * (1e8 + 60))) < 1e-6);
  const hosts = a.toHost([1e8 + 70, 1e8 + 80]);
  assert.ok(hosts instanceof Float64Array);
  assert.ok(Math.abs(hosts[1] - (1000 + 1.00005 * (1e8 + 80))) < 1e-6);
  assert.ok(Math.abs(a.toDevice(hosts[0]) - (1e8 + 70)) < 1e-6);
  a.reset();
  assert.equal(a.ready, false);
  assert.throws(() => a.toHost(1));
});

// Beat simulation: true beats with heart-rate variability (host seconds); the device measures RR
// on its own clock (+20 ppm) with 1/1024 s timestamps; it sends a notification every ~1 s with the
// RRs of the beats detected since the previous one (detection 20 ms after the beat); delivery as
// in linkModel.
function beats({ seed, seconds = 240, drop = () => false }) {
  const rand = prng(seed);
  const delay = linkModel(rand, { interval: 0.03 });
  const truth = [HOST0 + 0.3];
  for (let k = 1; truth[truth.length - 1] < HOST0 + seconds + 2; k++)
    truth.push(truth[k - 1] + 0.8 + 0.06 * Math.sin((2 * Math.PI * k) / 11) + 0.03 * (rand() - 0.5));
  const tick = (t) => Math.round((t - HOST0) * (1 + 20e-6) * 1024);
  const notifications = [];
  let next = 1, sendAt = HOST0 + 1 + rand() * 0.1;
  while (sendAt < HOST0 + seconds) {
    const rr = [], idx = [];
    while (truth[next] + 0.02 <= sendAt) {
      rr.push((tick(truth[next]) - tick(truth[next - 1])) / 1024);
      idx.push(next++);
    }
    if (!drop(sendAt - HOST0)) notifications.push({ host: sendAt + delay(sendAt), rr, idx });
    sendAt += 1 + 0.01 * (rand() - 0.5);
  }
  return { truth, notifications };
}

// Pushes every notification; checks each beat against the bound below. Returns the beats.
//
// The bound, and why: a re-anchor puts the last beat of a notification at its receive time, so a
// beat is late by that notification's lag (receive time - true time of its last beat: 20 ms
// detection + waiting for the ~1 s notification + delivery) and never early. Chaining keeps the
// error; a later notification with a smaller lag finds the chain after its receive time and pulls
// it back to that lag. So every beat's error is in [-eps, L] with L = the smallest lag since the
// last re-anchor that moved the chain later (the first one, or one after lost beats), and
// eps = 1/1024 s RR rounding + 20 ppm device drift accumulated along the chain (< 6 ms here).
// L shrinks as notifications come: over 30 notifications whose phase is uniform against the
// ~0.8 s RR, about 20 ms + 0.8 s / 30 + the connection wait.
const EPS = 0.006;
function rebuild(sim, timeline = new BeatTimeline()) {
  const out = [];
  let L = Infinity;
  for (const n of sim.notifications) {
    const r = timeline.push(n.host, n.rr);
    assert.equal(r.times.length, n.rr.length);
    assert.equal(r.duplicate, false);
    if (!n.rr.length) continue;
    const lag = n.host - sim.truth[n.idx[n.idx.length - 1]];
    L = r.reanchored && r.shift >= 0 ? lag : Math.min(L, lag);
    for (let i = 0; i < r.times.length; i++) {
      assert.equal(r.rr[i], n.rr[i]);
      const err = r.times[i] - sim.truth[n.idx[i]];
      assert.ok(err > -EPS && err < L + EPS, `beat ${n.idx[i]}: error ${err}, bound [${-EPS}, ${L + EPS}]`);
      out.push({ idx: n.idx[i], time: r.times[i], err, reanchored: r.reanchored, host: n.host, bound: L });
    }
  }
  return out;
}

function assertIncreasing(out) {
  for (let i = 1; i < out.length; i++) assert.ok(out[i].time > out[i - 1].time, `beat ${i} not after beat ${i - 1}`);
}

test('BeatTimeline: beat times from RR chains within the host-lag bound', () => {
  for (const seed of [1, 2, 3]) {
    const sim = beats({ seed });
    const out = rebuild(sim);
    assertIncreasing(out);
    const idx = out.map((b) => b.idx);
    assert.deepEqual(idx, Array.from({ length: idx.length }, (_, i) => idx[0] + i), 'every beat exactly once');
    const after = (t) => out.filter((b) => b.host - HOST0 >= t);
    const worst = (list) => Math.max(...list.map((b) => Math.abs(b.err)));
    const reanchors = new Set(out.filter((b) => b.reanchored).map((b) => b.host)).size;
    console.log(`beats seed ${seed}: ${out.length} beats, max |error| ${(worst(out) * 1e3).toFixed(1)} ms (all), ` +
      `${(worst(after(30)) * 1e3).toFixed(1)} ms (after 30 s), ${(worst(after(120)) * 1e3).toFixed(1)} ms (after 120 s), ` +
      `min error ${(Math.min(...out.map((b) => b.err)) * 1e3).toFixed(2)} ms, ${reanchors} re-anchors`);
    assert.ok(worst(after(30)) < 0.1);
  }
});

test('BeatTimeline: re-anchors after a disconnect, no duplicated beats', () => {
  const sim = beats({ seed: 7, seconds: 150, drop: (t) => t >= 60 && t < 80 });
  let reanchorAfterGap = null;
  const timeline = new BeatTimeline();
  const out = rebuild(sim, {
    push: (host, rr) => {
      const r = timeline.push(host, rr);
      if (host - HOST0 > 80 && reanchorAfterGap === null && rr.length) reanchorAfterGap = r;
      return r;
    },
  });
  assert.equal(reanchorAfterGap.reanchored, true);
  assert.ok(reanchorAfterGap.shift > 15, `${reanchorAfterGap.shift}`);   // ~20 s of beats were lost
  assertIncreasing(out);
  assert.equal(new Set(out.map((b) => b.idx)).size, out.length);
  const after = out.filter((b) => b.host - HOST0 > 80);
  const worst = Math.max(...after.map((b) => Math.abs(b.err)));
  const settled = Math.max(...after.filter((b) => b.host - HOST0 > 110).map((b) => Math.abs(b.err)));
  console.log(`beats after a 20 s gap: re-anchored by +${reanchorAfterGap.shift.toFixed(2)} s, max |error| ${(worst * 1e3).toFixed(1)} ms, after 30 s ${(settled * 1e3).toFixed(1)} ms`);
  assert.ok(settled < 0.1);
});

test('BeatTimeline: duplicates, empty notifications, bad RR values', () => {
  const tl = new BeatTimeline();
  const a = tl.push(100, [0.8, 0.75]);
  assert.equal(a.reanchored, true);
  assert.deepEqual(Array.from(a.times), [99.25, 100]);
  assert.equal(tl.push(100.001, [0.8, 0.75]).duplicate, true);     // the same notification again
  const e = tl.push(100.5, []);
  assert.equal(e.times.length, 0);
  assert.equal(tl.lastBeat, 100);
  const b = tl.push(101.02, [0.8]);                                  // chains: 100.8 in [98.52, 101.02]
  assert.equal(b.reanchored, false);
  assert.ok(Math.abs(b.times[0] - 100.8) < 1e-12);
  // two genuine identical notifications in one batch chain consistently and are both kept
  const c = tl.push(102.9, [0.8]), d = tl.push(102.901, [0.8]);
  assert.equal(c.duplicate, false);
  assert.equal(d.duplicate, false);
  assert.deepEqual([c.times[0], d.times[0]].map((t) => +t.toFixed(9)), [101.6, 102.4]);
  const s = tl.push(103.5, [0, NaN, 0.9]);
  assert.equal(s.skipped, 2);
  assert.equal(s.times.length, 1);
  // a chain later than its receive time moves back to it
  const late = tl.push(103.6, [0.5]);
  assert.equal(late.reanchored, true);
  assert.equal(late.times[0], 103.6);
  assert.throws(() => tl.push(NaN, [0.8]), SensorformerError);
});
