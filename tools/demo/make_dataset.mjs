// The demo model's dataset: rest / walk / run windows from the simulated wearable, produced by the
// package's own code path (simulated GATT bytes -> decoders -> clock alignment -> assembler).
//
//   node tools/demo/make_dataset.mjs build/demo-dataset.json [--sessions 5] [--minutes 38]
//   /usr/bin/python3 tools/demo/train_demo_model.py build/demo-dataset.json
//   node tools/demo/make_dataset.mjs build/stream-dataset.json --context 12     (streaming model)
//   node tools/demo/make_dataset.mjs build/armband-dataset.json --device armband (the armband model)
//
// --device armband: the simulated optical armband alone (web/src/simulator/armband.js, a Polar
// Verity Sense's streams and rates) instead of strap + thermometer + oximeter, its streams as
// ARMBAND_STREAMS below (PPG channel 0 at ~55 Hz, ACC at ~52 Hz, heart rate at 1 Hz, PPI events;
// placement upper_arm; the sensor numbers readPolarLogger gives a Verity Sense export), PPI started.
//
// --context C (seconds, default 0) makes every window C seconds longer at its start: the label
// still covers only the last 10 s (the span the streaming demo pools, session.pooled({ seconds:
// 10 })), and the first C seconds are the look-back context those tokens attend to (they may
// belong to the previous activity, as they do in a live session). Windows whose last 10 s cross
// an activity change are skipped as before; C = 0 gives exactly the file it always gave.
//
// Each session is one seed (1..N) of createSimulatedBluetooth on a virtual clock, with notification
// dropouts (2 %), random disconnects (4 per hour and device, 3-15 s), the default clock drifts and
// connection-event batching, and an activity schedule of its own: rest / walk / run segments of
// 30-120 s, each segment a different activity from the one before. The three devices (chest strap,
// thermometer, oximeter) are connected with connectWearable and the default streams (DEFAULT_STREAMS
// in web/src/ble/device.js: ecg, acc_x/y/z, hr, rr, temperature, spo2; sensors 0-4) into ONE
// WindowAssembler, and the clock is advanced hop by hop exactly as windowsFromRecording
// (web/src/ble/session.js) does: 10 s windows every 5 s, `assembler.hop({ seconds: 10, hop: 5 })`.
//
// Labels: a window is labelled with the true activity (sim.truth.activityAt) over its span. Windows
// whose 10 s span crosses an activity change are SKIPPED (counted in meta.skipped): half of such a
// window is another activity and heart rate lags the change by tens of seconds, so its label would
// be ambiguous. The model will still see transitions on the demo page; there it may hesitate for
// a window or two, which is what a person would expect.
//
// Output JSON: { meta: {...}, windows: [{ session, label, window }] }, `window` exactly as the
// assembler produced it ({ streams, referenceTime }). Deterministic: same arguments -> same file.
import { writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

import { connectWearable, DEFAULT_STREAMS, DEVICE_FILTERS } from '../../web/src/ble/device.js';
import { WindowAssembler } from '../../web/src/ble/assembler.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/devices.js';
import { createRng } from '../../web/src/simulator/physiology.js';

const LABELS = ['rest', 'walk', 'run'];
const WINDOW_SECONDS = 10;
const HOP_SECONDS = 5;
const SEGMENT_SECONDS = [30, 120];
const T0 = 1764460800;           // 2025-11-30T00:00:00Z; session i starts i days later
const SIM_OPTIONS = {
  dropoutProbability: 0.02,
  disconnects: { ratePerHour: 4, duration: [3, 15] },
};

// The armband model's streams: what a Verity Sense sends, by the ids and sensor numbers the Polar
// Sensor Logger reader gives them (web/src/polar-logger.js), so that a real export feeds the same
// rows of the model without overrides.
export const ARMBAND_STREAMS = Object.freeze({
  ppg_0: { sensor: 7, modality: 'ppg_0', placement: 'upper_arm', rateHz: 55 },
  acc_x: { sensor: 1, modality: 'acc_x', placement: 'upper_arm', rateHz: 52 },
  acc_y: { sensor: 1, modality: 'acc_y', placement: 'upper_arm', rateHz: 52 },
  acc_z: { sensor: 1, modality: 'acc_z', placement: 'upper_arm', rateHz: 52 },
  hr: { sensor: 2, modality: 'hr', placement: 'upper_arm', rateHz: null },
  ppi: { sensor: 2, modality: 'ppi', placement: 'upper_arm', rateHz: null },
});

function parseArgs(argv) {
  const args = { out: null, sessions: 5, minutes: 38, context: 0, device: 'strap' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--sessions') args.sessions = Number(argv[++i]);
    else if (a === '--minutes') args.minutes = Number(argv[++i]);
    else if (a === '--context') args.context = Number(argv[++i]);
    else if (a === '--device') args.device = argv[++i];
    else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else args.out = a;
  }
  if (!args.out || !(Number.isInteger(args.sessions) && args.sessions > 0) || !(args.minutes > 0) ||
      !(Number.isFinite(args.context) && args.context >= 0 && args.context <= 100) || !['strap', 'armband'].includes(args.device))
    throw new Error('usage: node tools/demo/make_dataset.mjs OUT.json [--sessions N] [--minutes M] [--context 0..100 s] [--device strap|armband]');
  return args;
}

/**
 * A seeded schedule covering `seconds`: segments of 30-120 s, each a different activity from the
 * previous one. The next activity is the less represented of the two others so far (ties and a
 * 30 % chance: random), so all three get about a third of the time.
 */
function makeSchedule(seed, seconds) {
  const rng = createRng(seed, 'demo-dataset-schedule');
  const total = { rest: 0, walk: 0, run: 0 };
  const schedule = [];
  let t = 0, last = null;
  while (t < seconds + 60) {
    let activity;
    if (last === null) activity = LABELS[Math.floor(rng.next() * 3)];
    else {
      const others = LABELS.filter((a) => a !== last);
      if (total[others[0]] === total[others[1]] || rng.next() < 0.3) activity = others[Math.floor(rng.next() * 2)];
      else activity = total[others[0]] < total[others[1]] ? others[0] : others[1];
    }
    const duration = Math.round(rng.uniform(SEGMENT_SECONDS[0], SEGMENT_SECONDS[1]));
    schedule.push({ activity, duration });
    total[activity] += duration;
    t += duration;
    last = activity;
  }
  return schedule;
}

async function runSession(seed, minutes, context, device) {
  const clock = createVirtualClock(T0 + seed * 86400);
  const activities = makeSchedule(seed, minutes * 60);
  const armband = device === 'armband';
  const sim = createSimulatedBluetooth({ seed, clock, ...SIM_OPTIONS, activities, ...(armband ? { devices: ['armband'] } : {}) });
  const assembler = new WindowAssembler();
  const connect = (filters) => connectWearable({ bluetooth: sim, clock, filters, assembler });
  const pending = armband
    ? Promise.all([connectWearable({ bluetooth: sim, clock, assembler, streams: ARMBAND_STREAMS, pmd: { ppi: true } })])
    : Promise.all([connect(DEVICE_FILTERS.strap), connect(DEVICE_FILTERS.thermometer), connect(DEVICE_FILTERS.oximeter)]);
  await clock.advanceAsync(2);
  const wearables = await pending;

  const out = [];
  let skipped = 0;
  const end = sim.truth.start + minutes * 60;
  while (clock.now() < end) {
    await clock.advanceAsync(HOP_SECONDS);
    for (const window of assembler.hop({ seconds: WINDOW_SECONDS + context, hop: HOP_SECONDS })) {
      const t1 = window.referenceTime + context + WINDOW_SECONDS;
      const segments = sim.truth.segments(t1 - WINDOW_SECONDS, t1);
      if (segments.length !== 1) { skipped++; continue; }
      const label = sim.truth.activityAt(t1 - 1e-6);
      if (label !== segments[0].activity || !LABELS.includes(label)) throw new Error(`label mismatch at ${t1}`);
      out.push({ session: seed, label, window });
    }
  }
  const stats = {
    outages: sim.truth.outages.filter((o) => o.start < end).length,
    droppedNotifications: sim.truth.dropped.length,
    skipped,
  };
  for (const w of wearables) await w.close();
  sim.close();
  return { windows: out, activities, stats };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const started = performance.now();
  const windows = [];
  const sessions = [];
  for (let seed = 1; seed <= args.sessions; seed++) {
    const r = await runSession(seed, args.minutes, args.context, args.device);
    windows.push(...r.windows);
    const counts = Object.fromEntries(LABELS.map((l) => [l, r.windows.filter((w) => w.label === l).length]));
    sessions.push({ session: seed, windows: r.windows.length, counts, ...r.stats, schedule: r.activities });
    console.log(`session ${seed}: ${r.windows.length} windows (${LABELS.map((l) => `${l} ${counts[l]}`).join(', ')}), ` +
      `${r.stats.skipped} skipped across activity changes, ${r.stats.outages} disconnects, ${r.stats.droppedNotifications} dropped notifications`);
  }
  const counts = Object.fromEntries(LABELS.map((l) => [l, windows.filter((w) => w.label === l).length]));
  console.log(`total: ${windows.length} windows (${LABELS.map((l) => `${l} ${counts[l]}`).join(', ')})`);
  const meta = {
    generator: 'tools/demo/make_dataset.mjs',
    labels: LABELS,
    sessions: args.sessions,
    minutesPerSession: args.minutes,
    windowSeconds: WINDOW_SECONDS,
    ...(args.context > 0 ? { contextSeconds: args.context } : {}),
    hopSeconds: HOP_SECONDS,
    segmentSeconds: SEGMENT_SECONDS,
    labelling: args.context > 0
      ? `true activity over the last ${WINDOW_SECONDS} s (after ${args.context} s of context); windows whose last ${WINDOW_SECONDS} s cross an activity change are skipped`
      : 'true activity over the whole window; windows crossing an activity change are skipped',
    simulator: args.device === 'armband' ? { ...SIM_OPTIONS, devices: ['armband'] } : SIM_OPTIONS,
    streams: args.device === 'armband' ? ARMBAND_STREAMS : DEFAULT_STREAMS,
    windows: windows.length,
    counts,
    perSession: sessions.map(({ schedule, ...rest }) => rest),
    schedules: Object.fromEntries(sessions.map((s) => [s.session, s.schedule])),
  };
  const path = resolve(args.out);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify({ meta, windows }));
  console.log(`wrote ${path} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
