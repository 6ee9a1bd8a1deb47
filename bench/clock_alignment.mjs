#!/usr/bin/env node
// Clock alignment through the whole device path (simulated strap with its H10 defaults -> PMD
// bytes -> decoders -> per-sample device times -> ClockAligner), over seeds, connection intervals
// and crystal drifts: the largest |aligned - true| host time of any ECG sample after the first
// 60 s and after the first 150 s of a 300 s run, the truth being the simulator's own sample
// instant. Also the part of that which is the per-sample device time (frame timestamps -> sample
// times, before alignment): the largest |device time - true| of any ECG sample from the second
// frame on, and in the first frame (nominal rate). Deterministic (virtual clock).
//   node bench/clock_alignment.mjs [seeds=20]
import { connectWearable, DEVICE_FILTERS } from '../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/simulator/devices.js';

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
