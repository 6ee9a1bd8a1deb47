#!/usr/bin/env node
// Clock alignment through the whole device path (simulated strap with its H10 defaults -> PMD
// bytes -> decoders -> per-sample device times -> ClockAligner), over seeds, connection intervals
// and crystal drifts: the largest |aligned - true| host time of any ECG sample after the first
// 60 s and after the first 150 s of a 300 s run, the truth being the simulator's own sample
// instant. Also the part of that which is the per-sample device time (frame timestamps -> sample
// times, before alignment): the largest |device time - true| of any ECG sample from the second
// frame on, and in the first frame (nominal rate). Deterministic (virtual clock).
// Last, the aligner's cost per observation once its 20-minute history is full, with the
// connection-event bounds and without (connectionIntervalSeconds: null), alternated, medians of 5.
//   node bench/clock_alignment.mjs [seeds=20]
import { connectWearable, DEVICE_FILTERS } from '../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/simulator/devices.js';
import { ClockAligner } from '../web/src/ble/clock.js';

const T0 = 1764460800, SEEDS = Number(process.argv[2] ?? 20), RUN = 300;
const quantiles = (errors) => {
  const e = [...errors].sort((a, b) => a - b);
  return `median ${e[e.length >> 1].toFixed(2)} ms, min ${e[0].toFixed(2)}, max ${e[e.length - 1].toFixed(2)} ms, ${e.filter((x) => x > 5).length} seeds above 5 ms`;
};
for (const driftPpm of [20, -20, 50, -50]) {
  for (const interval of [15, 30]) {
    const after60 = [], after150 = [];
    let later = 0, first = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const clock = createVirtualClock(T0);
      const sim = createSimulatedBluetooth({ seed, clock, connectionIntervalMs: interval, driftPpm });
      // Step until connected (before the first PMD frame, 50 ms after the start command).
      let strap = null;
      connectWearable({ bluetooth: sim, clock, filters: DEVICE_FILTERS.strap }).then((w) => { strap = w; });
      while (!strap) await clock.advanceAsync(0.01);
      const batches = [];
      (async () => { for await (const b of strap.samples('ecg')) batches.push(b); })();
      await clock.advanceAsync(RUN);
      const ecg = sim.truth.pmdFrames.filter((f) => f.type === 'ecg');
      const frames = new Map(ecg.map((f) => [f.deviceTime, f]));
      let worst60 = 0, worst150 = 0;
      for (const b of batches) {
        const frame = frames.get(b.deviceTimes[b.deviceTimes.length - 1]);
        const truth = sim.truth.pmdSampleTimes(frame);
        for (let i = 0; i < b.times.length; i++) {
          const error = Math.abs(b.times[i] - sim.truth.hostTime('strap', truth[i]));
          if (b.times[i] - T0 >= 60) worst60 = Math.max(worst60, error);
          if (b.times[i] - T0 >= 150) worst150 = Math.max(worst150, error);
          const e = Math.abs(b.deviceTimes[i] - truth[i]);
          if (frame === ecg[0]) first = Math.max(first, e);
          else later = Math.max(later, e);
        }
      }
      after60.push(worst60 * 1000);
      after150.push(worst150 * 1000);
      await strap.close();
      sim.close();
    }
    console.log(`interval ${interval} ms, drift ${driftPpm > 0 ? '+' : ''}${driftPpm} ppm, ${SEEDS} seeds: max error after 60 s: ${quantiles(after60)}; after 150 s: ${quantiles(after150)}`);
    if (driftPpm === 20) {
      console.log(`  ECG sample device times, all seeds: at most ${(later * 1000).toFixed(3)} ms off from the second frame on, ` +
        `${(first * 1000).toFixed(2)} ms in the first frame (nominal 130 Hz for a 130.35 Hz strap)`);
    }
  }
}

// Cost: H10 frames (ECG 73 / 130.35 Hz, ACC 36 / 51.07 Hz, +20 ppm) delivered at the next 30 ms
// connection event, 1300 s; the time per observe() over the last 100 s.
const pairs = [];
for (const [n, hz] of [[73, 130.35], [36, 51.07]]) {
  for (let j = 1; (j * n) / hz < 1300; j++) {
    const device = (j * n - 1) / hz, ready = device / (1 + 20e-6) + 0.002;
    pairs.push([device, Math.ceil(ready / 0.03) * 0.03]);
  }
}
pairs.sort((a, b) => a[1] - b[1]);
const cost = { bounds: [], envelope: [] };
for (let round = 0; round < 5; round++) {
  for (const [name, options] of [['bounds', {}], ['envelope', { connectionIntervalSeconds: null }]]) {
    const aligner = new ClockAligner(options);
    let t0 = 0, timed = 0;
    for (const [d, h] of pairs) {
      if (d >= 1200 && !t0) t0 = performance.now();
      aligner.observe(d, h);
      if (t0) timed++;
    }
    cost[name].push((performance.now() - t0) / timed);
  }
}
const median = (x) => [...x].sort((a, b) => a - b)[x.length >> 1];
console.log(`cost per observation with a full history: ${(median(cost.bounds) * 1000).toFixed(0)} us with the connection-event bounds, ` +
  `${(median(cost.envelope) * 1000).toFixed(0)} us with the lower envelope alone (${(median(cost.bounds) / median(cost.envelope)).toFixed(1)}x; medians of 5 alternated runs)`);
