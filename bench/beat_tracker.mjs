// What a BeatTracker (web/src/qrs.js) costs a live ECG, by the size of the pushes it is fed: CPU
// milliseconds per second of ECG, the simulated strap's sinus ECG (seeded) at 130, 300 and 1000 Hz,
// 60 s each (the tracker's 20 s window full for the last 40), pushed 1 sample at a time, 10 at a
// time, as a Polar H10's notifications (73) and 1 s at a time. Medians of --rounds runs per case,
// the cases interleaved round by round; the ratio column is each case against 73-sample pushes at
// the same rate, measured in the same rounds. BENCHMARKS.md "The beat tracker" holds a run.
//
//   node bench/beat_tracker.mjs [--rounds 5]
import { BeatTracker } from '../web/src/qrs.js';
import { createPhysiology } from '../web/src/simulator/physiology.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = arg('rounds', 5);
const SECONDS = 60;
const RATES = [130, 300, 1000];
const SIZES = [1, 10, 73, 'second'];

const ecg = new Map(RATES.map((fs) => {
  const ph = createPhysiology({ seed: 1, activities: [{ activity: 'rest', duration: SECONDS }] });
  return [fs, Float64Array.from({ length: SECONDS * fs }, (_, i) => ph.ecgAt(i / fs))];
}));

// CPU ms per second of ECG for one case, and the beats it gave (the same in every round).
function run(fs, size) {
  const x = ecg.get(fs), n = size === 'second' ? fs : size;
  const tracker = new BeatTracker({ rateHz: fs });
  let beats = 0;
  const t0 = performance.now();
  for (let at = 0; at < x.length; at += n) beats += tracker.push(x.subarray(at, at + n)).timestamps.length;
  beats += tracker.end().timestamps.length;
  return { ms: (performance.now() - t0) / SECONDS, beats: beats / 40 };
}

const times = new Map();
for (let r = 0; r < ROUNDS; r++) {
  for (const fs of RATES) {
    for (const size of SIZES) {
      const key = `${fs}|${size}`, { ms, beats } = run(fs, size);
      if (!times.has(key)) times.set(key, { ms: [], beats });
      times.get(key).ms.push(ms);
    }
  }
}
const median = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
console.log(`BeatTracker, ${SECONDS} s of simulated ECG per case, medians of ${ROUNDS} interleaved rounds (Node ${process.version})`);
console.log('| rate | push size | ms of CPU per s of ECG | vs 73-sample pushes | beats |');
console.log('|---|---|---|---|---|');
for (const fs of RATES) {
  const base = median(times.get(`${fs}|73`).ms);
  for (const size of SIZES) {
    const t = times.get(`${fs}|${size}`);
    const m = median(t.ms);
    console.log(`| ${fs} Hz | ${size === 'second' ? `${fs} (1 s)` : size} | ${m.toFixed(2)} | ${(m / base).toFixed(2)}x | ${t.beats} |`);
  }
}
