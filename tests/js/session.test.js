// Windows from recordings (web/src/ble/session.js): the same windows as the plain replay loop
// (advance the clock by one hop, take WindowAssembler.hop()), but silences cost nothing, the data
// before a long silence is not lost, and the number of windows is bounded before any replay.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { connectWearable, createVirtualClock, DEFAULT_STREAMS, parseRecording, replay, WindowAssembler } from '../../web/src/ble/index.js';
import { estimateWindowCount, MAX_WINDOWS, recordingWindows, windowsFromRecording } from '../../web/src/ble/session.js';
import { heartRateRecording, notificationTimes, PMD_DATA, recordSession, T0, withSilence } from './recordings.js';

// The reference: replay hop by hop and let the assembler decide, exactly as the documented
// semantics say (docs/bluetooth.md, assembler.js hop()). Slow on silences, which is the point.
async function referenceWindows(text, { seconds, hop }) {
  const recording = parseRecording(text);
  const { events } = recording;
  const clock = createVirtualClock(recording.header.t0);  // the replay plays header.t0 at the clock's start
  const bluetooth = replay(recording, { clock, speed: 1 });
  const assembler = new WindowAssembler();
  const names = recording.header.devices.map((d) => d.name);
  const pending = names.map((name) => connectWearable({ bluetooth, clock, filters: [{ name }], assembler, streams: DEFAULT_STREAMS }));
  await clock.advanceAsync(2);
  const wearables = await Promise.all(pending);
  const windows = [];
  const last = events[events.length - 1].t;
  while (clock.now() < last + 1) {
    await clock.advanceAsync(Math.min(hop, last + 1 - clock.now()));
    windows.push(...assembler.hop({ seconds, hop }));
  }
  for (const w of wearables) await w.close();
  bluetooth.close();
  return windows;
}

const session = await recordSession({ seed: 11, seconds: 40, disconnects: [{ device: 'strap', at: 12, duration: 6 }] });
const steady = await recordSession({ seed: 5, seconds: 40 });

test('the same windows as the hop-by-hop replay, for windows longer, equal to and shorter than the hop', { timeout: 120_000 }, async () => {
  for (const [seconds, hop] of [[10, 5], [4, 1], [2, 3], [0.5, 0.25], [10, 0.1], [5, 5]]) {
    const want = await referenceWindows(session, { seconds, hop });
    const { windows, ends } = await windowsFromRecording(session, { seconds, hop });
    assert.ok(want.length > 0);
    assert.equal(windows.length, want.length, `${seconds} s every ${hop} s`);
    assert.deepEqual(windows, want, `${seconds} s every ${hop} s`);
    assert.deepEqual(ends, want.map((w) => w.referenceTime + seconds));
  }
});

test('a silence of 1e8 s is crossed at once; the windows before it keep their data', { timeout: 60_000 }, async () => {
  const text = withSilence(steady, { after: 25, shift: 1e8 });
  const source = recordingWindows(text, { seconds: 10, hop: 5 });
  const got = [];
  for await (const { window, end } of source) got.push({ window, end });
  const before = got.filter((w) => w.end < T0 + 1e7), after = got.filter((w) => w.end > T0 + 1e8);
  assert.equal(before.length + after.length, got.length);
  // Every window end of the silence (1e8 s at 5 s) is skipped and counted, give or take the
  // windows at its edges that still hold data.
  assert.ok(Math.abs(source.skipped - 1e8 / 5) < 10, `skipped ${source.skipped}`);
  // The last ECG frame before the silence arrived at tLast; its samples are at most one frame
  // (73 samples at 130 Hz: 0.56 s) older. Some window before the silence must hold them.
  const ecgTimes = notificationTimes(text, (e) => e.chr === PMD_DATA && e.bytes[0] === 0);
  const tLast = Math.max(...ecgTimes.filter((t) => t < T0 + 1e7));
  const lastEcg = Math.max(...before.flatMap(({ window }) => window.streams.filter((s) => s.modality === 'ecg').map((s) => s.startTime + (s.samples.length - 1) / s.rateHz)));
  assert.ok(lastEcg > tLast - 1, `last ECG sample in a window ${lastEcg - T0} s, last ECG frame before the silence ${tLast - T0} s`);
  // After the silence: windows again, until the end of the data (40 s after the connect).
  assert.ok(after.length >= 2, `${after.length} windows after the silence`);
  assert.ok(after.every(({ window }) => window.referenceTime > T0 + 1e8 + 10), 'no window before the data after the silence');
});

test('windows keep the recorded times: a sample is where the live session put it', { timeout: 60_000 }, async () => {
  // Heart-rate notifications carry no device time: the device layer stamps each with its host
  // arrival time, which is the recorded "t" of the notification.
  const times = [T0 + 0.5, T0 + 1.5, T0 + 2.5, T0 + 3.5, T0 + 20.25];
  const { windows } = await windowsFromRecording(heartRateRecording(times), { seconds: 10, hop: 5 });
  const seen = new Set(windows.flatMap((w) => w.streams.filter((s) => s.modality === 'hr').flatMap((s) => s.timestamps)));
  assert.deepEqual([...seen].sort((a, b) => a - b), times.slice(0, 4), 'each notification in the windows at its recorded time');
  // The first window starts at the earliest data: the first notification (its beat is anchored
  // at the arrival time; later beats chain their RR intervals from it).
  assert.equal(windows[0].referenceTime, times[0]);
});

test('two notifications 1e8 s apart: the first one still gives its window', { timeout: 60_000 }, async () => {
  const source = recordingWindows(heartRateRecording([T0 + 1, T0 + 1 + 1e8]), { seconds: 10, hop: 5 });
  const got = [];
  for await (const w of source) got.push(w);
  assert.equal(got.length, 1);
  const hr = got[0].window.streams.find((s) => s.modality === 'hr');
  assert.deepEqual(hr.timestamps, [T0 + 1]);
  assert.deepEqual(hr.samples, [63]);
  assert.ok(source.skipped > 1e8 / 5 - 10);
});

test('the window count is estimated before replay: too many is RESOURCE_EXHAUSTED with a hop that fits', () => {
  const text = heartRateRecording(Array.from({ length: 200 }, (_, i) => T0 + 1 + i));
  let error;
  try {
    recordingWindows(text, { seconds: 10, hop: 0.001 });
  } catch (e) {
    error = e;
  }
  assert.equal(error?.code, 'RESOURCE_EXHAUSTED', String(error));
  // 200 s of data at one window per ms is ~200,000 windows.
  assert.ok(error.windowCount > 190_000 && error.windowCount < 215_000, error.message);
  assert.match(error.message, new RegExp(`about ${error.windowCount.toLocaleString('en-US')} windows of 10 s every 0.001 s, more than the maximum of 100,000: use a larger hop \\(${error.suggestedHop} s or more\\)$`));
  const parsed = parseRecording(text);
  assert.ok(estimateWindowCount(parsed, { seconds: 10, hop: error.suggestedHop }) <= MAX_WINDOWS);
  recordingWindows(text, { seconds: 10, hop: error.suggestedHop });  // accepted
  assert.throws(() => recordingWindows(text, { seconds: 1e-9, hop: 1e-9 }), (e) => e.code === 'RESOURCE_EXHAUSTED');
  assert.throws(() => recordingWindows(text, { seconds: 10, hop: 0 }), (e) => e.code === 'INVALID_ARGUMENT' && /hop must be a finite number of seconds > 0, got 0/.test(e.message));
  assert.throws(() => recordingWindows(text, { seconds: NaN }), (e) => e.code === 'INVALID_ARGUMENT');
});

test('the estimate is an upper bound close to the real count', { timeout: 60_000 }, async () => {
  for (const [seconds, hop] of [[10, 5], [2, 0.5], [1, 0.05]]) {
    const estimate = estimateWindowCount(parseRecording(session), { seconds, hop });
    const { windows } = await windowsFromRecording(session, { seconds, hop });
    // Upper bound by construction (each notification counts its samples 2 s back); within 25 %
    // plus the windows of those 2 s at the start, because the notifications are dense.
    assert.ok(estimate >= windows.length && estimate <= 1.25 * windows.length + 2 / hop + 2, `${seconds}/${hop}: estimate ${estimate}, real ${windows.length}`);
  }
});
