// What a real device's timestamps say (issue 21, item 2): a Polar Sensor Logger export read with
// readPolarLogger, each clock column examined for what it is. BENCHMARKS.md "Real device timing"
// holds a run's output.
//
//   node bench/polar_logger_timing.mjs --data <export folder> [--json out.json]
//
// Per streamed sensor (ACC, GYRO, MAGN, PPG, ECG; from its "sensor timestamp [ns]"):
// - its true rate (least squares over the whole file) against the nominal rate the project (and
//   Polar's PMD settings) assume, in ppm; the spacing between samples (median, extremes); how far
//   the samples wander from one straight line (a rate that changes over the recording);
// - its frames as the timestamps reveal them: the app gives every sample a time interpolated
//   inside its notification (a frame of n samples shares one spacing), so a change of spacing
//   marks a frame boundary; frame sizes from the runs of equal spacing (to 2 ns; see `frames`);
// - the device layer's timing on those frames: PmdTimeline (web/src/ble/device.js) given only each
//   frame's last-sample time and count, as a live PMD frame gives them, against the export's own
//   per-sample times;
// - "Phone timestamp" - sensor time: the app's offset, its drift over the recording (ppm) and the
//   residual around it (the phone times are printed in whole ms, so +-0.5 ms is rounding).
// Per event file (HR, RR, PPI: phone arrival times only): the intervals between rows (median,
// 5th-95th percentile, extremes) and the bursts (rows arriving within 50 ms of the previous).
// Then the same figures for the simulator's armband (web/src/simulator/armband.js, seed 1, as
// long as the export, at rest, on a virtual clock): its true rates, frame sizes and the arrival
// intervals of its HR and PPI notifications at the device layer, beside the real device's.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { readPolarLogger } from '../web/src/polar-logger.js';
import { PmdTimeline, connectWearable } from '../web/src/ble/device.js';
import { createSimulatedBluetooth, createVirtualClock } from '../web/src/simulator/devices.js';

// The nominal rates: the PMD settings a Verity Sense is started with by the Sensor Logger app
// (ACC / GYRO 52 Hz, MAGN 50 Hz, PPG 55 Hz) and an H10's ECG (130 Hz).
const NOMINAL_HZ = { ACC: 52, GYRO: 52, MAGN: 50, PPG: 55, ECG: 130 };
const BURST_S = 0.05;


const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
const fit = (x, y) => {  // least squares y = a + b x
  const n = x.length;
  let mx = 0, my = 0;
  for (let i = 0; i < n; i++) { mx += x[i]; my += y[i]; }
  mx /= n; my /= n;
  let sxx = 0, sxy = 0;
  for (let i = 0; i < n; i++) { sxx += (x[i] - mx) ** 2; sxy += (x[i] - mx) * (y[i] - my); }
  const b = sxy / sxx;
  return { a: my - b * mx, b };
};

export function streamed(file, raw) {
  const ns = raw.deviceNs, n = ns.length;
  const t = Float64Array.from(ns, (v) => Number(v - ns[0]) / 1e9);  // exact to the ns
  const idx = Float64Array.from({ length: n }, (_, i) => i);
  const line = fit(idx, t);
  let wander = 0;
  for (let i = 0; i < n; i++) wander = Math.max(wander, Math.abs(t[i] - (line.a + line.b * i)));
  const steps = Array.from({ length: n - 1 }, (_, i) => ns[i + 1] - ns[i]);
  const sortedSteps = steps.map(Number).sort((a, b) => a - b);
  // Frames: runs of equal spacing (within 2 ns); a run ends where the spacing changes. The step
  // into a frame's first sample differs from the spacing inside it (a single odd step before
  // nearly every run): it is taken as the frame's first step, so a frame is that sample and the
  // run after it. Sample 0 (no step before it) belongs to the first frame.
  const runs = [];
  let start = 0;
  for (let i = 1; i < steps.length; i++) {
    const d = steps[i] - steps[i - 1];
    if (d > 2n || d < -2n) { runs.push({ first: start + 1, last: i }); start = i; }
  }
  runs.push({ first: start + 1, last: n - 1 });
  const frames = [];
  for (let k = 0; k < runs.length; k++) {
    const r = runs[k];
    if (r.first === r.last && k + 1 < runs.length) { frames.push({ first: r.first, last: runs[k + 1].last }); k++; }
    else frames.push({ ...r });
  }
  frames[0].first = 0;
  const sizes = frames.map((f) => f.last - f.first + 1).sort((a, b) => a - b);
  // PmdTimeline on the frames: the last sample's time and the count, nothing else.
  const timeline = new PmdTimeline(NOMINAL_HZ[raw.kind]);
  let worst = 0, worstAfterFirst = 0, compared = 0;
  frames.forEach((f, k) => {
    const count = f.last - f.first + 1;
    const times = timeline.times(Number(ns[f.last]) / 1e9, count);
    for (let j = 0; j < count; j++) {
      const err = Math.abs(times[j] - Number(ns[f.first + j]) / 1e9);
      worst = Math.max(worst, err);
      if (k > 0) worstAfterFirst = Math.max(worstAfterFirst, err);
      compared++;
    }
  });
  // phone - sensor: offset, drift, residual
  const off = Float64Array.from(raw.hostTimes, (h, i) => h - raw.deviceTimes[i]);
  const drift = fit(t, off);
  let residual = 0;
  for (let i = 0; i < n; i++) residual = Math.max(residual, Math.abs(off[i] - (drift.a + drift.b * t[i])));
  return {
    file, kind: raw.kind, samples: n, seconds: t[n - 1],
    nominalHz: NOMINAL_HZ[raw.kind], rateHz: 1 / line.b, ppmVsNominal: (1 / line.b / NOMINAL_HZ[raw.kind] - 1) * 1e6,
    spacingMs: { median: quantile(sortedSteps, 0.5) / 1e6, min: sortedSteps[0] / 1e6, max: sortedSteps[sortedSteps.length - 1] / 1e6 },
    wanderMs: wander * 1e3,
    frames: { count: frames.length, median: quantile(sizes, 0.5), p5: quantile(sizes, 0.05), p95: quantile(sizes, 0.95), min: sizes[0], max: sizes[sizes.length - 1] },
    pmdTimeline: { comparedSamples: compared, maxErrorUs: worst * 1e6, maxErrorAfterFirstFrameUs: worstAfterFirst * 1e6 },
    phoneMinusSensor: { offsetS: drift.a, driftPpm: drift.b * 1e6, residualMs: residual * 1e3 },
  };
}

export function events(file, kind, hostTimes) {
  const d = Array.from({ length: hostTimes.length - 1 }, (_, i) => hostTimes[i + 1] - hostTimes[i]).sort((a, b) => a - b);
  return {
    file, kind, rows: hostTimes.length, seconds: hostTimes[hostTimes.length - 1] - hostTimes[0],
    intervalMs: { median: quantile(d, 0.5) * 1e3, p5: quantile(d, 0.05) * 1e3, p95: quantile(d, 0.95) * 1e3, min: d[0] * 1e3, max: d[d.length - 1] * 1e3 },
    burstRows: d.filter((x) => x < BURST_S).length,
  };
}

/** The analysis of an export folder: { offsetS, streamed: [...], events: [...] } (see the header). */
export async function analyse(folder) {
  const result = await readPolarLogger(folder);
  const out = { data: folder, offsetS: result.offset, streamed: [], events: [] };
  const seen = new Set();
  for (const raw of Object.values(result.streams)) {
    if (seen.has(raw.file)) continue;  // one row per file (the axes of ACC share their timestamps)
    seen.add(raw.file);
    const kind = result.report[raw.file].kind;
    if (raw.deviceNs) out.streamed.push(streamed(raw.file, { ...raw, kind }));
    else out.events.push(events(raw.file, kind, raw.hostTimes));
  }
  return out;
}

/**
 * The simulated armband over `seconds` at rest (seed 1): per PMD stream its true rate and frame
 * sizes (from the frames it sent), per event kind the arrival intervals at the device layer.
 */
export async function simulatedArmband(seconds) {
  const T0 = 1764460800;
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed: 1, devices: ['armband'], clock, activities: [{ activity: 'rest', duration: seconds + 60 }] });
  let wearable = null;
  const connecting = connectWearable({ bluetooth: sim, clock, pmd: { ppi: true } }).then((w) => { wearable = w; });
  while (!wearable) await clock.advanceAsync(0.01);
  await connecting;
  const arrivals = { HR: [], PPI: [] };
  for (const [kind, key] of [['hr', 'HR'], ['ppi', 'PPI']]) {
    (async () => { for await (const b of wearable.samples(kind)) arrivals[key].push(clock.now()); })();
  }
  await clock.advanceAsync(seconds);
  await wearable.close();
  sim.close();
  const byType = {};
  for (const f of sim.truth.pmdFrames) (byType[f.type] ??= []).push(f);
  const streamedRows = Object.entries(byType).map(([type, frames]) => {
    const counts = frames.map((f) => f.count).sort((a, b) => a - b);
    return { type, frames: frames.length, rateHz: 1 / frames[0].spacing, median: quantile(counts, 0.5), p5: quantile(counts, 0.05), p95: quantile(counts, 0.95) };
  });
  const eventRows = Object.entries(arrivals).map(([kind, times]) => events(`simulated ${kind}`, kind, times));
  return { streamed: streamedRows, events: eventRows };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { data: { type: 'string' }, json: { type: 'string' } } });
  if (!values.data) {
    console.error('usage: node bench/polar_logger_timing.mjs --data <Polar Sensor Logger export folder> [--json out.json]');
    process.exit(2);
  }
  const out = await analyse(values.data);
  const f = (x, d = 3) => x.toFixed(d);
  const base = (p) => p.split('/').pop();
  console.log(`export ${values.data}: sensor -> host offset ${f(out.offsetS, 4)} s (the smallest file offset)\n`);
  console.log('| file | samples | nominal Hz | true Hz | vs nominal | spacing ms (median, min-max) | wander from one rate | frames: samples (median, 5-95 %) | PmdTimeline vs the file\'s times | phone - sensor: offset, drift, residual |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const s of out.streamed) {
    console.log(`| ${base(s.file)} | ${s.samples} | ${s.nominalHz} | ${f(s.rateHz, 4)} | ${s.ppmVsNominal >= 0 ? '+' : ''}${f(s.ppmVsNominal / 1e4, 2)} % | ${f(s.spacingMs.median)} (${f(s.spacingMs.min)}-${f(s.spacingMs.max)}) | ${f(s.wanderMs, 1)} ms | ${s.frames.count} frames: ${s.frames.median} (${s.frames.p5}-${s.frames.p95}) | max ${f(s.pmdTimeline.maxErrorUs, 1)} µs (${f(s.pmdTimeline.maxErrorAfterFirstFrameUs, 1)} after the first frame) | ${f(s.phoneMinusSensor.offsetS, 4)} s, ${f(s.phoneMinusSensor.driftPpm, 2)} ppm, ±${f(s.phoneMinusSensor.residualMs, 2)} ms |`);
  }
  console.log('\n| file | rows | interval ms: median (5-95 %, min-max) | rows within 50 ms of the previous |');
  console.log('|---|---|---|---|');
  for (const e of out.events) {
    console.log(`| ${base(e.file)} | ${e.rows} | ${f(e.intervalMs.median, 0)} (${f(e.intervalMs.p5, 0)}-${f(e.intervalMs.p95, 0)}, ${f(e.intervalMs.min, 0)}-${f(e.intervalMs.max, 0)}) | ${e.burstRows} |`);
  }
  const seconds = Math.round(Math.max(...out.events.map((e) => e.seconds)));
  out.simulated = await simulatedArmband(seconds);
  console.log(`\nThe simulated armband (sensorformer/simulator, devices: ['armband'], seed 1, ${seconds} s at rest):\n`);
  console.log('| stream | true Hz | frames: samples (median, 5-95 %) |');
  console.log('|---|---|---|');
  for (const s of out.simulated.streamed) console.log(`| ${s.type} | ${f(s.rateHz, 4)} | ${s.frames} frames: ${s.median} (${s.p5}-${s.p95}) |`);
  console.log('\n| notifications | rows | interval ms: median (5-95 %, min-max) | rows within 50 ms of the previous |');
  console.log('|---|---|---|---|');
  for (const e of out.simulated.events) {
    console.log(`| ${e.file} | ${e.rows} | ${f(e.intervalMs.median, 0)} (${f(e.intervalMs.p5, 0)}-${f(e.intervalMs.p95, 0)}, ${f(e.intervalMs.min, 0)}-${f(e.intervalMs.max, 0)}) | ${e.burstRows} |`);
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(out, null, 1)}\n`);
}
