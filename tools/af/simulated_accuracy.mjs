// The AF model on the simulated chest strap (issue 20, docs/models.md): per-window accuracy in sinus
// rhythm and in atrial fibrillation. No browser, no training: seeded simulator sessions on a virtual
// clock, each with a schedule of sinus rhythm and AF episodes, go through the demo's own path: the
// simulated strap's GATT bytes -> the device layer (ui/source.js Session, connectWearable) -> the
// stream mode's AF feeding (ui/stream-inference.js StreamInference with ui/rhythm.js AF_FEED: ECG in
// mV and RR, SessionFeeder, a streaming session in a Worker) -> pooled({ seconds: 30 }) after each
// push that made tokens final, as the page's Rhythm card shows it.
//
//   node tools/af/simulated_accuracy.mjs [--model models/af.safetensors] [--seeds 1,2,3,4,5,6,7,8]
//                                        [--minutes 10] [--activities tour|random]
//
// Every 5 s of session time (from the session's first 30 s on) the prediction whose window ends
// there (the first with `to` at or past the mark: a prediction comes about once a second, the
// frontier held back by the RR stream's incomplete 4-beat patch up to ~3 s at a time) is compared
// with the simulator's truth over its window [to - 30 s, to): "sinus" when no AF episode overlaps
// it, "af" when it lies inside one, and left out when it straddles an onset or an offset. Accuracy
// is "normal" in sinus windows and "af" in AF windows; the confusion has all four labels. Last
// line: `sinus <x>% af <y>%`.
//
// Sessions: each seed's strap (the demo's defaults: 0.5 % of notifications lost; the demo's
// rest/walk/run tour, or the simulator's own seeded schedule with --activities random) runs
// `minutes` with two AF episodes of 120-180 s, their starts drawn from the seed (afSchedule).
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { createVirtualClock } from '../../web/src/simulator/index.js';
import { createRng } from '../../web/src/simulator/physiology.js';
import { Session } from '../../demo/ui/source.js';
import { StreamInference } from '../../demo/ui/stream-inference.js';
import { AF_FEED, RHYTHM_SECONDS, rhythmReady } from '../../demo/ui/rhythm.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const EVERY_SECONDS = 5;
export const LABELS = ['normal', 'af', 'other', 'noisy'];
const T0 = 1764460800;  // the virtual clock's start (any Unix time: the simulator only needs one)

/**
 * Two AF episodes in a session of `seconds` (>= 480), seeded: 120-180 s each, the first starting
 * 60-120 s in (a sinus stretch of at least two 30 s windows before it), the second 90-150 s after
 * the first ends, so that each rhythm has whole windows and the session ends in sinus rhythm.
 * Seconds from the simulation's start (the simulator's `af` option).
 */
export function afSchedule(seed, seconds) {
  if (!(seconds >= 480)) throw new Error(`afSchedule: a session of at least 8 minutes holds two episodes with sinus around them, got ${seconds} s`);
  const rng = createRng(seed, 'af-schedule');
  const first = { at: rng.uniform(60, 120), duration: rng.uniform(120, 180) };
  const second = { at: first.at + first.duration + rng.uniform(90, 150), duration: rng.uniform(120, 180) };
  // A shorter session than 10 min: the second episode ends at least 30 s before the end.
  second.duration = Math.min(second.duration, seconds - 30 - second.at);
  return second.duration >= 60 ? [first, second] : [first];
}

/**
 * The simulator's rhythm over the window [from, to) (host seconds) given its AF episodes
 * ([{ start, end }], each [start, end), not overlapping): 'af' when the window lies inside one,
 * 'sinus' when none overlaps it, null when it straddles an onset or an offset (left out).
 */
export function windowTruth(from, to, episodes) {
  let overlaps = false;
  for (const e of episodes) {
    if (e.start <= from && to <= e.end) return 'af';
    if (e.start < to && from < e.end) overlaps = true;
  }
  return overlaps ? null : 'sinus';
}

/**
 * The windows scored, from a session's predictions (in push order: { from, to, label }, label
 * null when no token in the window was present): a mark every `every` s from referenceTime +
 * `seconds`; at each, the first prediction whose window ends at or past it (one prediction serves
 * one mark at most: when the frontier jumps past several marks, after an outage, the marks it
 * skipped are not scored).
 * Predictions over less than a whole window (rhythmReady) never are. Returns
 * [{ from, to, truth: 'sinus' | 'af' | null, label }].
 */
export function labelWindows(predictions, episodes, { referenceTime, every = EVERY_SECONDS, seconds = RHYTHM_SECONDS }) {
  const out = [];
  let mark = referenceTime + seconds;
  for (const p of predictions) {
    if (p.to < mark || !rhythmReady(p, referenceTime)) continue;
    out.push({ from: p.from, to: p.to, truth: windowTruth(p.from, p.to, episodes), label: p.label });
    while (mark <= p.to) mark += every;
  }
  return out;
}

/**
 * Counts of scored windows: per truth ('sinus', 'af') the windows and the labels predicted (a
 * label per LABELS, 'none' for a window without a prediction), and how many were left out.
 */
export function tally(windows, into = null) {
  const t = into ?? { excluded: 0, sinus: { n: 0, labels: {} }, af: { n: 0, labels: {} } };
  for (const w of windows) {
    if (w.truth === null) { t.excluded++; continue; }
    const row = t[w.truth];
    row.n++;
    const key = w.label ?? 'none';
    row.labels[key] = (row.labels[key] ?? 0) + 1;
  }
  return t;
}

const pct = (k, n) => (n ? (100 * k) / n : NaN);

/** One seed's session: its predictions and the simulator's episodes (host time). */
async function runSeed(inference, current, { seed, seconds, activities }) {
  const clock = createVirtualClock(T0);
  current.now = () => clock.now();  // the feeder's "now" (StreamInference's `now`)
  const source = Session.simulated({ seed, schedule: activities, clock, af: afSchedule(seed, seconds) });
  const predictions = [];
  let referenceTime = null;
  const onResult = (e) => {
    const p = e.detail.prediction;
    referenceTime ??= e.detail.referenceTime;
    predictions.push({ from: p.from, to: p.to, label: p.label ?? null });
  };
  inference.addEventListener('result', onResult);
  try {
    // The session's sink first, so that the strap's first notification already reaches it (as
    // the page: the Session hands its sinks to connectWearable).
    await inference.start(source);
    let connected = false, failure = null;
    source.connect('strap').then(() => { connected = true; }, (error) => { failure = error; });
    for (let t = 0; !connected; t += 0.05) {
      if (failure) throw failure;
      if (t > 30) throw new Error(`seed ${seed}: the simulated strap did not connect within 30 s of virtual time`);
      await clock.advanceAsync(0.05);
    }
    // In steps, each followed by the Worker catching up: pushes do not pile up by the thousand.
    for (let t = 0; t < seconds; t += 10) {
      await clock.advanceAsync(Math.min(10, seconds - t));
      await inference.drain();
    }
    await inference.stop();
  } finally {
    inference.removeEventListener('result', onResult);
    await source.close();
  }
  if (referenceTime === null) throw new Error(`seed ${seed}: no prediction at all (did the AF model's session get any ECG?)`);
  const episodes = source.sim.truth.afEpisodes(-Infinity, Infinity);
  const truth = source.sim.truth;
  return { predictions, referenceTime, episodes, start: source.sim.start, activityAt: (t) => truth.activityAt(t), heartRateAt: (t) => truth.heartRateAt(t) };
}

/**
 * Runs the sessions and prints the report through `log` (a line at a time). Returns { total (tally),
 * sinus, af (percent), sessions: per seed { seed, windows (labelWindows), episodes, referenceTime,
 * start } }.
 */
export async function simulatedAccuracy({ model = join(root, 'models', 'af.safetensors'), seeds = [1, 2, 3, 4, 5, 6, 7, 8], minutes = 10, activities = 'tour', log = console.log } = {}) {
  const seconds = minutes * 60;
  let error = null;
  // The clock of the seed being run (each seed has its own virtual clock).
  const current = { now: () => NaN };
  const inference = new StreamInference({ modelUrl: model, seconds: RHYTHM_SECONDS, attention: false, ...AF_FEED, now: () => current.now() });
  inference.addEventListener('error', (e) => { error ??= e.detail.error; });
  if (!(await inference.load())) throw new Error(`the AF model did not load from ${model} (${error?.code ?? 'error'}: ${error?.message})`);
  const total = tally([]);
  const sessions = [];
  // Sinus windows by the activity at their end: the tour's walk and run raise the rate to
  // ~100-170 bpm, which the challenge's labels often call "other rhythm" (sinus tachycardia).
  const sinusBy = {};
  const started = performance.now();
  try {
    for (const seed of seeds) {
      const t0 = performance.now();
      const { predictions, referenceTime, episodes, start, activityAt, heartRateAt } = await runSeed(inference, current, { seed, seconds, activities });
      if (error) throw error;
      const windows = labelWindows(predictions, episodes, { referenceTime });
      for (const w of windows) {
        if (w.truth !== 'sinus') continue;
        // the mean rate over the window's last 10 s (heartRateAt: the last 4 beats)
        let bpm = 0;
        for (let k = 0; k < 10; k++) bpm += heartRateAt(w.to - k) / 10;
        const band = bpm < 90 ? 'under 90 bpm' : bpm < 110 ? '90-110 bpm' : bpm < 130 ? '110-130 bpm' : '130 bpm and over';
        for (const key of [`${activityAt(w.to)}`, band]) {
          const a = (sinusBy[key] ??= { n: 0, normal: 0, af: 0, bpm: 0 });
          a.n++, a.normal += w.label === 'normal' ? 1 : 0, a.af += w.label === 'af' ? 1 : 0, a.bpm += bpm;
        }
      }
      const t = tally(windows);
      tally(windows, total);
      sessions.push({ seed, windows, episodes, referenceTime, start });
      const ep = episodes.map((e) => `${(e.start - start).toFixed(0)}-${(e.end - start).toFixed(0)} s`).join(', ');
      log(`seed ${seed}: ${minutes} min, AF ${ep}; ${windows.length} windows: sinus ${t.sinus.labels.normal ?? 0}/${t.sinus.n} normal, ` +
        `AF ${t.af.labels.af ?? 0}/${t.af.n} af, ${t.excluded} straddling left out [${((performance.now() - t0) / 1000).toFixed(1)} s]`);
    }
  } finally {
    inference.dispose();
  }
  const cols = [...LABELS, ...(total.sinus.labels.none || total.af.labels.none ? ['none'] : [])];
  log(`confusion over ${total.sinus.n + total.af.n} windows (${total.excluded} straddling an onset or offset left out); rows: simulator, columns: model`);
  log(`${''.padEnd(8)}${cols.map((c) => c.padStart(8)).join('')}`);
  for (const truth of ['sinus', 'af']) log(`${truth.padEnd(8)}${cols.map((c) => String(total[truth].labels[c] ?? 0).padStart(8)).join('')}`);
  const by = (keys) => keys.filter((k) => sinusBy[k]).map((k) => `${k} ${sinusBy[k].normal}/${sinusBy[k].n} normal, ${sinusBy[k].af} af (mean ${(sinusBy[k].bpm / sinusBy[k].n).toFixed(0)} bpm)`).join(', ');
  log(`sinus windows by activity at their end: ${by(['rest', 'walk', 'run'])}`);
  log(`sinus windows by heart rate over their last 10 s: ${by(['under 90 bpm', '90-110 bpm', '110-130 bpm', '130 bpm and over'])}`);
  const sinus = pct(total.sinus.labels.normal ?? 0, total.sinus.n), af = pct(total.af.labels.af ?? 0, total.af.n);
  log(`${seeds.length} seeds in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  log(`sinus ${sinus.toFixed(1)}% af ${af.toFixed(1)}%`);
  return { total, sinus, af, sessions };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      model: { type: 'string', default: join(root, 'models', 'af.safetensors') },
      seeds: { type: 'string', default: '1,2,3,4,5,6,7,8' },
      minutes: { type: 'string', default: '10' },
      activities: { type: 'string', default: 'tour' },
    },
  });
  const seeds = values.seeds.split(',').map(Number);
  const minutes = Number(values.minutes);
  if (!seeds.every((s) => Number.isInteger(s) && s >= 0) || !(minutes >= 8) || !['tour', 'random'].includes(values.activities)) {
    console.error('usage: node tools/af/simulated_accuracy.mjs [--model FILE] [--seeds 1,2,...] [--minutes M >= 8] [--activities tour|random]');
    process.exit(2);
  }
  try {
    await simulatedAccuracy({ model: values.model, seeds, minutes, activities: values.activities });
  } catch (error) {
    console.error(`simulated_accuracy: ${error.message}`);
    process.exit(1);
  }
}
