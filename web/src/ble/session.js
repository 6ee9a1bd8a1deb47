// A recorded session (recording.js format) turned into model windows, hop by hop, through the same
// code path as a live wearable: replayed GATT notifications -> device layer -> assembler. Replay
// runs on a virtual clock, so an hour-long recording is processed in seconds and gives the same
// windows every time.
//
// Windows are those of WindowAssembler.hop() called after every `hop` seconds of replay (window
// ends on the grid first + k * hop, a window with no sample at all is skipped), computed so that
// silence costs nothing: replay jumps over stretches where no notification or timer falls due,
// and a run of empty windows is stepped over by bisection instead of window by window. A
// recording with two notifications 1e8 s apart therefore takes as long as one without the gap.
// The number of windows is bounded (MAX_WINDOWS, checked before replay from the notification
// times, and again while windows are produced): beyond it the error names the count and the hop
// that would fit, instead of running for hours and holding every window in memory.
import { SensorformerError } from '../errors.js';
import { WindowAssembler } from './assembler.js';
import { connectWearable, DEFAULT_STREAMS } from './device.js';
import { feedSession } from './feeder.js';
import { createVirtualClock } from './fake-gatt.js';
import { parseRecording, replay } from './recording.js';
import { playExport } from './export-player.js';

/** Most windows one recording may give (a 24 h recording at a 1 s hop is 86,400). */
export const MAX_WINDOWS = 100_000;

// Samples of a notification precede its arrival by at most a frame (0.56 s for an H10 ECG frame)
// or a few beats of RR intervals: the estimate counts a window as having data when it overlaps
// [t - NOTIFICATION_SPAN, t] of a notification at t, so it errs on the high side.
const NOTIFICATION_SPAN = 2;

// Silences longer than this many hops are replayed in one step (see the replay loop). Larger than
// the 1 s replayed after the last event at the smallest hop the CLI allows (1 ms).
const JUMP_HOPS = 1024;
// replayIntoSession's steps are 1 s: a silence with nothing due for more than 2 of them is jumped.
const SESSION_JUMP_STEPS = 2;

/**
 * About how many windows of `seconds` every `hop` a parsed recording gives: the windows on the
 * grid that hold a notification's samples (see NOTIFICATION_SPAN). O(events), no replay.
 */
export function estimateWindowCount(recording, { seconds, hop }) {
  const times = recording.events.filter((e) => e.kind === 'notification').map((e) => e.t);
  if (!times.length) return 0;
  const first = times[0] - NOTIFICATION_SPAN + seconds;  // the first window ends `seconds` after the earliest data
  const lastK = Math.floor((times[times.length - 1] - first) / hop);
  let count = 0, covered = -1;
  for (const t of times) {
    const lo = Math.max(0, Math.floor((t - NOTIFICATION_SPAN - first) / hop) + 1, covered + 1);
    const hi = Math.min(lastK, Math.floor((t + seconds - first) / hop));
    if (hi >= lo) {
      count += hi - lo + 1;
      covered = hi;
    }
  }
  return count;
}

// A hop that brings `count` windows at `hop` under `max`, rounded up to two significant digits.
function fittingHop(hop, count, max) {
  const x = (hop * count) / max, unit = 10 ** (Math.floor(Math.log10(x)) - 1);
  return Number((Math.ceil(x / unit) * unit).toPrecision(2));
}

function tooMany(count, seconds, hop, max, atLeast) {
  return Object.assign(new SensorformerError('RESOURCE_EXHAUSTED',
    `the recording gives ${atLeast ? 'at least' : 'about'} ${count.toLocaleString('en-US')} windows of ${seconds} s every ${hop} s, ` +
    `more than the maximum of ${max.toLocaleString('en-US')}: use a larger hop (${fittingHop(hop, count, max)} s or more)`),
  { windowCount: count, suggestedHop: fittingHop(hop, count, max) });
}

// Virtual seconds of replay a device may take to connect: its PMD starts wait up to 3 s each for
// an answer (device.js) before they fail.
const CONNECT_SECONDS = 30;

/**
 * Every device of a replayed recording connected (connect(name) -> Promise<Wearable>), in order.
 * Each connection gets its handler at once: one that fails while the virtual clock advances (a
 * corrupted PMD features read) must not be an unhandled rejection, which ends a Node process
 * whatever try/catch surrounds the caller. The clock advances 2 s (a recorded connect), then a
 * second at a time while a connection still waits (a PMD start waiting for its answer), up to
 * CONNECT_SECONDS. On a failure the devices that did connect are closed and the first failure is
 * thrown, its message naming the device.
 */
async function connectAll(names, clock, connect) {
  const settled = new Array(names.length);
  const all = Promise.all(names.map((name, i) => connect(name).then(
    (value) => { settled[i] = { value }; },
    (error) => { settled[i] = { error }; },
  )));
  await clock.advanceAsync(2);
  for (let waited = 2; settled.includes(undefined) && waited < CONNECT_SECONDS; waited++) await clock.advanceAsync(1);
  if (settled.includes(undefined)) {
    // Still waiting: nothing more will come on a clock that is not advanced. Close what connected
    // once the rest settles (never, possibly: the wait is not awaited).
    all.then(() => { for (const s of settled) s.value?.close(); });
    throw new SensorformerError('BAD_FORMAT', `the recording's ${names[settled.indexOf(undefined)]} did not finish connecting within ${CONNECT_SECONDS} s of replay`);
  }
  const failed = settled.findIndex((s) => s.error);
  if (failed >= 0) {
    for (const s of settled) await s.value?.close();
    const { error } = settled[failed];
    if (error instanceof Error) error.message = `the recording's ${names[failed]}: ${error.message}`;
    throw error;
  }
  return settled.map((s) => s.value);
}

const positive = (value, name) => {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0))
    throw new SensorformerError('INVALID_ARGUMENT', `${name} must be a finite number of seconds > 0, got ${value}`);
};

/**
 * The windows of a recording, one at a time, as replay produces them (memory stays bounded):
 * `for await (const { window, end } of recordingWindows(text, options))`. The recording is parsed
 * and the window count checked when this is called, before anything is replayed. `skipped` (after
 * the loop): grid windows left out because they held no sample at all.
 * @param {string} text  the recording (JSON Lines)
 * @param {{ seconds?: number, hop?: number, streams?: object, maxWindows?: number }} options
 */
export function recordingWindows(text, { seconds = 10, hop = 5, streams = DEFAULT_STREAMS, maxWindows = MAX_WINDOWS } = {}) {
  positive(seconds, 'seconds');
  positive(hop, 'hop');
  const recording = parseRecording(text);
  const events = recording.events;
  if (!events.length) throw new SensorformerError('BAD_FORMAT', 'the recording holds no notifications');
  const names = (recording.header.devices ?? []).map((d) => d.name).filter(Boolean);
  if (!names.length) throw new SensorformerError('BAD_FORMAT', 'the recording header lists no devices');
  const estimate = estimateWindowCount(recording, { seconds, hop });
  if (estimate > maxWindows) throw tooMany(estimate, seconds, hop, maxWindows, false);
  const state = { skipped: 0 };
  return {
    devices: names,
    /** The pre-replay estimate of the window count. */
    estimate,
    get skipped() { return state.skipped; },
    [Symbol.asyncIterator]: () => replayWindows(recording, names, { seconds, hop, streams, maxWindows }, state),
  };
}

async function* replayWindows(recording, names, { seconds, hop, streams, maxWindows }, state) {
  const events = recording.events;
  // The replay plays recorded time t0 (the header's, else the first event's) at the clock's start:
  // starting the clock at t0 keeps every sample at its recorded host time.
  const t0 = Number.isFinite(recording.header.t0) ? recording.header.t0 : events[0].t;
  const clock = createVirtualClock(t0);
  const bluetooth = replay(recording, { clock, speed: 1 });
  const assembler = new WindowAssembler();
  const wearables = [];
  try {
    wearables.push(...await connectAll(names, clock, (name) => connectWearable({ bluetooth, clock, filters: [{ name }], assembler, streams })));
    const anyData = (from, to) => assembler.ids.some((id) => assembler.get(id).hasData(from, to));
    let lastEnd = null, produced = 0;

    // WindowAssembler.hop({ seconds, hop }) with latency 0 (windows ending by the horizon), stepping
    // over runs of empty windows; flush: also the first window ending past the horizon.
    const due = (flush = false) => {
      let horizon = assembler.horizon;
      if (lastEnd === null) {
        const from = Math.min(...assembler.ids.map((id) => assembler.get(id).coveredFrom));
        if (!Number.isFinite(from) || (!flush && from + seconds > horizon)) return [];
        lastEnd = from + seconds - hop;
      }
      if (flush) horizon = Math.max(horizon, lastEnd) + hop;
      const base = lastEnd;
      const count = Math.floor((horizon - base) / hop + 1e-9);
      const out = [];
      for (let k = 1; k <= count;) {
        const end = base + k * hop;
        if (anyData(end - seconds, end)) {
          out.push(assembler.window({ end, seconds }));
          k++;
          continue;
        }
        // Windows k+1.. can only hold data from a sample at or after `end`: the first window that
        // does is the first j with a sample in [end, end_j) (monotone in j, so bisect).
        if (!anyData(end, base + count * hop)) {
          state.skipped += count - k + 1;
          break;
        }
        let lo = k, hi = count;
        while (hi - lo > 1) {
          const mid = Math.floor((lo + hi) / 2);
          if (anyData(end, base + mid * hop)) hi = mid;
          else lo = mid;
        }
        state.skipped += hi - k;
        k = hi;
      }
      if (count > 0) lastEnd = base + count * hop;
      return out;
    };

    const last = events[events.length - 1].t;
    while (clock.now() < last + 1) {
      let step = Math.min(hop, last + 1 - clock.now());
      // Whole hops in which no timer falls due change nothing (no notification, no gap mark), so a
      // long silence is crossed in one step (a timer due exactly at its end runs in it either way).
      // Only long ones: stepping hop by hop adds up float rounding that decides whether a timer at
      // the very end of the replay still runs, and short silences keep exactly those steps.
      const next = clock.nextDue();
      const idle = next === null ? Infinity : Math.floor((next - clock.now()) / hop);
      const left = Math.floor((last + 1 - clock.now()) / hop);
      let ready = [];
      if (step === hop && Math.min(idle, left) > JUMP_HOPS) {
        step = Math.min(idle, left) * hop;
        // Windows still waiting for the horizon to pass their end would be taken after the
        // silence, when the buffers have dropped what is older than their retention: take them
        // now, up to the first end past the newest data. Only for silences that long, and long
        // enough that no later sample (at most NOTIFICATION_SPAN before its notification) can
        // fall into them, so they are the windows the assembler would have given anyway.
        const silence = next - assembler.horizon;
        const retention = Math.min(...assembler.ids.map((id) => assembler.get(id).capacitySeconds));
        if (silence > Math.max(hop + NOTIFICATION_SPAN, retention - seconds - hop - NOTIFICATION_SPAN))
          ready = due(true);
      }
      await clock.advanceAsync(step);
      for (const window of ready.concat(due())) {
        if (++produced > maxWindows) throw tooMany(produced, seconds, hop, maxWindows, true);
        yield { window, end: window.referenceTime + seconds };
      }
    }
  } finally {
    for (const w of wearables) await w.close();
    bluetooth.close();
  }
}

/**
 * All windows of a recording at once (see recordingWindows for the one-at-a-time form and the
 * bound on the count).
 * @param {string} text  the recording (JSON Lines)
 * @param {{ seconds?: number, hop?: number, streams?: object }} options  window length and hop (s)
 * @returns {Promise<{ windows: object[], ends: number[], devices: string[] }>}
 */
export async function windowsFromRecording(text, options) {
  const source = recordingWindows(text, options);
  const windows = [], ends = [];
  for await (const { window, end } of source) {
    windows.push(window);
    ends.push(end);
  }
  return { windows, ends, devices: source.devices };
}

// feedSession for a replay: its onError keeps the first error, a push's or the caller's onUpdate's
// (feedSession goes on after a throwing onUpdate; a replay stops at the end of the step, below).
function replayFeeding(session, options) {
  let error = null;
  const feeding = feedSession([], session, { ...options, onError: (e) => { error ??= e; } });
  return Object.assign(feeding, { failure: () => feeding.error ?? error });
}

// The end of a replay step (final: of the replay): the feeder's chunks pushed (final: every
// watermark at "now"), a push or onUpdate that failed raised, the caller's hook run.
async function endStep(feeding, between, final) {
  await (final ? feeding.close() : feeding.flush());
  if (feeding.failure()) throw feeding.failure();
  await between?.();
}

/**
 * A recording replayed into a streaming session (model.stream()), through the same path as live
 * wearables: replayed notifications -> device layer -> SessionFeeder (feeder.js) -> session.push.
 * Virtual clock: 1 s steps, and a silence (nothing due for more than 2 s) is crossed in one step. Each
 * push's result goes to onUpdate(update, chunk) as it happens; `between()` (optional, awaited)
 * runs after every step of replay (the CLI writes its output there, so that memory stays
 * bounded). At the end every stream's watermark is set to the end of the recording (its last
 * event + 1 s), so that every token before it is final. Resolves to the feeder's stats and the
 * streams it left out (config: the model's config; streams it does not know are left out);
 * rejects with the session's error if a push fails.
 * @param {string} text  the recording (JSON Lines)
 */
export async function replayIntoSession(text, session, { config = null, streams = DEFAULT_STREAMS, onUpdate, between, ...feederOptions } = {}) {
  const recording = parseRecording(text);
  const events = recording.events;
  if (!events.length) throw new SensorformerError('BAD_FORMAT', 'the recording holds no notifications');
  const names = (recording.header.devices ?? []).map((d) => d.name).filter(Boolean);
  if (!names.length) throw new SensorformerError('BAD_FORMAT', 'the recording header lists no devices');
  const t0 = Number.isFinite(recording.header.t0) ? recording.header.t0 : events[0].t;
  const clock = createVirtualClock(t0);
  const bluetooth = replay(recording, { clock, speed: 1 });
  const feeding = replayFeeding(session, { ...feederOptions, clock, config, onUpdate });
  const wearables = [];
  const step = 1;
  try {
    wearables.push(...await connectAll(names, clock, (name) => connectWearable({ bluetooth, clock, filters: [{ name }], streams, sinks: [feeding.sink] })));
    const last = events[events.length - 1].t;
    while (clock.now() < last + 1) {
      const next = clock.nextDue();
      const idle = next === null ? Infinity : Math.floor((next - clock.now()) / step);
      const left = last + 1 - clock.now();
      // A silence (no notification or device timer due) is crossed in one step, however short or
      // long: the feeder's flush after it marks the silence with one `until` per stream, which the
      // session turns into at most a minute of absent patches per stream (docs/model.md "Gaps"),
      // so a replay costs its data, not its length (10,001 notifications 1000 s apart: one step
      // each, not 1000).
      await clock.advanceAsync(idle > SESSION_JUMP_STEPS && left > SESSION_JUMP_STEPS * step ? Math.min(idle * step, left) : Math.min(step, left));
      await endStep(feeding, between, false);
    }
    await endStep(feeding, between, true);
    return { stats: feeding.stats, leftOut: feeding.feeder.leftOut, devices: names };
  } finally {
    await feeding.close();
    for (const w of wearables) await w.close();
    bluetooth.close();
  }
}

/**
 * A Polar Sensor Logger export (readPolarLogger's result) fed into a session through the feeder,
 * as a live device's samples would be: playExport's delivery (export-player.js: each sample at its
 * host time, a streamed sensor's sensor time as its device time, lost samples never sent) in steps
 * of `step` seconds of recorded time on a clock this function moves; silences with nothing due
 * are crossed in one step. Every stream gets `placement` (else keeps the export's). Returns the
 * feeder's stats and what it left out.
 */
export async function replayPolarLoggerIntoSession(result, session, { config = null, placement, onUpdate, between, step = 1, ...feederOptions } = {}) {
  let now = -Infinity;
  const clock = { now: () => now, setInterval: () => null, clearInterval: () => {} };  // time moves here only
  const player = playExport(result, clock, { placement, stepSeconds: step });
  const feeding = replayFeeding(session, { ...feederOptions, clock, config, onUpdate });
  player.addSink(feeding.sink);
  now = player.start;
  try {
    for (let due = player.nextDue(); due !== null; due = player.nextDue()) {
      // a silence with nothing due for more than two steps is crossed at once
      now = due - now > 2 * step ? due + step : now + step;
      player.deliverUntil(now);
      await endStep(feeding, between, false);
    }
    await endStep(feeding, between, true);
    return { stats: feeding.stats, leftOut: feeding.feeder.leftOut };
  } finally {
    player.close();
    await feeding.close();
  }
}
