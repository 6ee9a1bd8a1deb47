// A recorded session (recording.js format) turned into model windows, hop by hop, through the same
// code path as a live wearable: replayed GATT notifications -> device layer -> assembler. Replay
// runs on a virtual clock, so an hour-long recording is processed in seconds and gives the same
// windows every time.
import { SensorformerError } from '../errors.js';
import { WindowAssembler } from './assembler.js';
import { connectWearable, DEFAULT_STREAMS } from './device.js';
import { createVirtualClock } from './fake-gatt.js';
import { parseRecording, replay } from './recording.js';

/**
 * @param {string} text  the recording (JSON Lines)
 * @param {{ seconds?: number, hop?: number, streams?: object }} options  window length and hop (s)
 * @returns {Promise<{ windows: object[], ends: number[], devices: string[] }>}
 */
export async function windowsFromRecording(text, { seconds = 10, hop = 5, streams = DEFAULT_STREAMS } = {}) {
  const recording = parseRecording(text);
  const events = recording.events;
  if (!events.length) throw new SensorformerError('BAD_FORMAT', 'the recording holds no notifications');
  const clock = createVirtualClock(events[0].t - 1);
  const bluetooth = replay(recording, { clock, speed: 1 });
  const assembler = new WindowAssembler();
  const names = (recording.header.devices ?? []).map((d) => d.name).filter(Boolean);
  if (!names.length) throw new SensorformerError('BAD_FORMAT', 'the recording header lists no devices');
  const pending = names.map((name) => connectWearable({ bluetooth, clock, filters: [{ name }], assembler, streams }));
  await clock.advanceAsync(2);
  const wearables = await Promise.all(pending);
  const windows = [], ends = [];
  const last = events[events.length - 1].t;
  while (clock.now() < last + 1) {
    await clock.advanceAsync(Math.min(hop, last + 1 - clock.now()));
    for (const w of assembler.hop({ seconds, hop })) {
      windows.push(w);
      ends.push(w.referenceTime + seconds);
    }
  }
  for (const w of wearables) await w.close();
  bluetooth.close();
  return { windows, ends, devices: names };
}
