#!/usr/bin/env node
// How far behind "now" a streaming session's results are, and what a disconnect does to that
// (issue 21 item 5): the simulated strap (H10 defaults) -> device layer -> feedSession -> the AF
// model's session (models/af.safetensors, the demo's feed: demo/ui/rhythm.js AF_FEED), on a
// virtual clock, a 5 s outage at 60 s, 120 s per seed. Deterministic.
//
// Per seed:
// - the frontier lag, now - the session's frontier, every 0.5 s: before the outage (20-60 s) and
//   after it (from 10 s after the reconnect), median / 95th percentile / max; its largest value
//   during the outage; how long after the reconnect it is back under the steady 95th percentile;
// - the same feed without the RR stream (ECG only), to show what the RR stream's 4-beat event
//   patches cost: an event patch's token is final only when its 4th beat has arrived
//   (docs/model.md "Finality"), so the frontier trails by up to 3 beats plus the RR delivery;
// - after the reconnect: when the first ECG and ACC samples arrive (host time of arrival minus the
//   reconnect) and how far their first sample's time is from the reconnect.
//   node bench/reconnect_latency.mjs [seeds=5]
import { readFileSync } from 'node:fs';

import { connectWearable, DEVICE_FILTERS } from '../web/src/ble/device.js';
import { feedSession } from '../web/src/ble/feeder.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/simulator/devices.js';
import { loadModel } from '../web/src/index.js';
import { AF_FEED } from '../demo/ui/rhythm.js';

const T0 = 1764460800, SEEDS = Number(process.argv[2] ?? 5), RUN = 120, OUTAGE = { at: 60, duration: 5 };
const model = await loadModel(readFileSync(new URL('../models/af.safetensors', import.meta.url)));
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.round(q * (s.length - 1)))]; };

async function run(seed, streams) {
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed, devices: ['strap'], clock, disconnects: [{ device: 'strap', ...OUTAGE }] });
  let strap = null;
  connectWearable({ bluetooth: sim, clock, filters: DEVICE_FILTERS.strap, streams }).then((w) => { strap = w; });
  while (!strap) await clock.advanceAsync(0.01);
  let back = null;
  const first = {};
  strap.addEventListener('reconnect', (e) => { back = e.detail.time; });
  for (const kind of ['ecg', 'acc']) {
    (async () => {
      for await (const b of strap.samples(kind)) {
        if (back !== null && !first[kind]) first[kind] = { arrived: clock.now() - back, sample: b.times[0] - back };
      }
    })();
  }
  let frontier = -Infinity;
  // config: as the demo's feeder (demo/ui/stream-inference.js), so the model's beat streams are
  // derived from the ECG and the strap's other streams left out
  const feeding = feedSession(strap, model.stream(), { config: model.config, streams, onUpdate: (u) => { frontier = u.frontier; } });
  const lags = [];
  for (let t = 0.5; t <= RUN; t += 0.5) {
    await clock.advanceAsync(0.5);
    lags.push({ t, lag: clock.now() - frontier });
  }
  await feeding.close();
  await strap.close();
  sim.close();
  const reconnect = back - T0;
  const steady = lags.filter((l) => (l.t >= 20 && l.t < OUTAGE.at) || l.t >= reconnect + 10).map((l) => l.lag);
  const p95 = quantile(steady, 0.95);
  const during = Math.max(...lags.filter((l) => l.t >= OUTAGE.at && l.t <= reconnect).map((l) => l.lag));
  const recovered = lags.find((l) => l.t > reconnect && l.lag <= p95)?.t - reconnect;
  return { median: quantile(steady, 0.5), p95, max: Math.max(...steady), during, recovered, reconnect, first };
}

const fmt = (x, d = 2) => x.toFixed(d);
console.log(`| seed | feed | frontier lag s, steady: median / p95 / max | during the outage: max | back under the p95 after the reconnect | first ECG after the reconnect: arrives / its first sample | first ACC |`);
console.log('|---|---|---|---|---|---|---|');
for (let seed = 1; seed <= SEEDS; seed++) {
  for (const [name, streams] of [['ECG + RR', AF_FEED.streams], ['ECG only', { ecg: AF_FEED.streams.ecg }]]) {
    const r = await run(seed, streams);
    const f = (k) => (r.first[k] ? `+${fmt(r.first[k].arrived)} s / +${fmt(r.first[k].sample, 3)} s` : '–');
    console.log(`| ${seed} | ${name} | ${fmt(r.median)} / ${fmt(r.p95)} / ${fmt(r.max)} | ${fmt(r.during)} | ${fmt(r.recovered, 1)} s (reconnect at ${fmt(r.reconnect, 1)} s) | ${f('ecg')} | ${f('acc')} |`);
  }
}
