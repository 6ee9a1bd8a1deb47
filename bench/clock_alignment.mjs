#!/usr/bin/env node
// Clock alignment through the whole device path (simulated strap with its H10 defaults -> PMD
// bytes -> decoders -> per-sample device times -> ClockAligner), over seeds and connection
// intervals: the largest |aligned - true| host time of any ECG sample after the first 60 s, the
// truth being the simulator's own sample instant. Also the part of that which is the per-sample
// device time (frame timestamps -> sample times, before alignment): the largest |device time -
// true| of any ECG sample from the second frame on, and in the first frame (nominal rate).
// Deterministic (virtual clock).
//   node bench/clock_alignment.mjs [seeds=20]
import { connectWearable, DEVICE_FILTERS } from '../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/simulator/devices.js';

const T0 = 1764460800, SEEDS = Number(process.argv[2] ?? 20);
for (const interval of [15, 30]) {
  const errors = [];
  let later = 0, first = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const clock = createVirtualClock(T0);
    const sim = createSimulatedBluetooth({ seed, clock, connectionIntervalMs: interval });
    // Step until connected (before the first PMD frame, 50 ms after the start command).
    let strap = null;
    connectWearable({ bluetooth: sim, clock, filters: DEVICE_FILTERS.strap }).then((w) => { strap = w; });
    while (!strap) await clock.advanceAsync(0.01);
    const batches = [];
    (async () => { for await (const b of strap.samples('ecg')) batches.push(b); })();
    await clock.advanceAsync(180);
    const ecg = sim.truth.pmdFrames.filter((f) => f.type === 'ecg');
    const frames = new Map(ecg.map((f) => [f.deviceTime, f]));
    let worst = 0;
    for (const b of batches) {
      const frame = frames.get(b.deviceTimes[b.deviceTimes.length - 1]);
      const truth = sim.truth.pmdSampleTimes(frame);
      for (let i = 0; i < b.times.length; i++) {
        if (b.times[i] - T0 >= 60) worst = Math.max(worst, Math.abs(b.times[i] - sim.truth.hostTime('strap', truth[i])));
        const e = Math.abs(b.deviceTimes[i] - truth[i]);
        if (frame === ecg[0]) first = Math.max(first, e);
        else later = Math.max(later, e);
      }
    }
    errors.push(worst * 1000);
    await strap.close();
    sim.close();
  }
  errors.sort((a, b) => a - b);
  const over = errors.filter((e) => e > 5).length;
  console.log(`interval ${interval} ms, drift +20 ppm, ${SEEDS} seeds: max error after 60 s: median ${errors[SEEDS >> 1].toFixed(2)} ms, ` +
    `min ${errors[0].toFixed(2)}, max ${errors[SEEDS - 1].toFixed(2)} ms, ${over} seeds above 5 ms`);
  console.log(`  ECG sample device times, all seeds: at most ${(later * 1000).toFixed(3)} ms off from the second frame on, ` +
    `${(first * 1000).toFixed(2)} ms in the first frame (nominal 130 Hz for a 130.35 Hz strap)`);
}
