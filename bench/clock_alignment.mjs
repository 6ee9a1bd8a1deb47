#!/usr/bin/env node
// Clock alignment through the whole device path (simulated strap -> PMD bytes -> decoders ->
// ClockAligner), over seeds and connection intervals: the largest |aligned - true| host time of
// any ECG sample after the first 60 s. Deterministic (virtual clock).
//   node bench/clock_alignment.mjs [seeds=20]
import { connectWearable, DEVICE_FILTERS } from '../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/ble/simulator.js';

const T0 = 1764460800, SEEDS = Number(process.argv[2] ?? 20);
for (const interval of [15, 30]) {
  const errors = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    const clock = createVirtualClock(T0);
    const sim = createSimulatedBluetooth({ seed, clock, connectionIntervalMs: interval });
    const pending = connectWearable({ bluetooth: sim, clock, filters: DEVICE_FILTERS.strap });
    await clock.advanceAsync(2);
    const strap = await pending;
    const batches = [];
    (async () => { for await (const b of strap.samples('ecg')) batches.push(b); })();
    await clock.advanceAsync(180);
    let worst = 0;
    for (const b of batches)
      for (let i = 0; i < b.times.length; i++)
        if (b.times[i] - T0 >= 60) worst = Math.max(worst, Math.abs(b.times[i] - sim.truth.hostTime('strap', b.deviceTimes[i])));
    errors.push(worst * 1000);
    sim.close();
  }
  errors.sort((a, b) => a - b);
  const over = errors.filter((e) => e > 5).length;
  console.log(`interval ${interval} ms, drift +20 ppm, ${SEEDS} seeds: max error after 60 s: median ${errors[SEEDS >> 1].toFixed(2)} ms, ` +
    `min ${errors[0].toFixed(2)}, max ${errors[SEEDS - 1].toFixed(2)} ms, ${over} seeds above 5 ms`);
}
