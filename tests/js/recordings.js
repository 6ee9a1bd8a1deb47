// Test recordings (.sfrec text) made with the simulated wearables on a virtual clock: seeded, so
// the same arguments give the same bytes.
import { connectWearable, createVirtualClock, DEVICE_FILTERS, parseRecording, record } from '../../web/src/ble/index.js';
import { createSimulatedBluetooth } from '../../web/src/simulator/index.js';

export const T0 = 1764460800;

/** Strap, thermometer and oximeter recorded for `seconds` after a 2 s connect. */
export async function recordSession({ seed = 5, seconds = 30, disconnects = [] } = {}) {
  const clock = createVirtualClock(T0);
  const sim = createSimulatedBluetooth({ seed, clock, disconnects });
  const rec = record(sim, { clock });
  const pending = ['strap', 'thermometer', 'oximeter'].map((k) => connectWearable({ bluetooth: rec.bluetooth, clock, filters: DEVICE_FILTERS[k] }));
  await clock.advanceAsync(2);
  const wearables = await Promise.all(pending);
  await clock.advanceAsync(seconds);
  for (const w of wearables) await w.close();
  const text = rec.stop();
  sim.close();
  return text;
}

/** The same recording with every event after `after` (seconds since T0) moved `shift` s later. */
export function withSilence(text, { after, shift }) {
  const [header, ...lines] = text.trimEnd().split('\n');
  return [header, ...lines.map((line) => {
    const e = JSON.parse(line);
    if (e.t > T0 + after) e.t = Math.round((e.t + shift) * 1e6) / 1e6;
    return JSON.stringify(e);
  })].join('\n') + '\n';
}

export const PMD_DATA = 'fb005c82-02e7-f387-1cad-8acd2d8df0c8';

/** Times of the notifications `keep(event)` selects (events as parseRecording gives them). */
export function notificationTimes(text, keep) {
  return parseRecording(text).events.filter((e) => e.kind === 'notification' && keep(e)).map((e) => e.t);
}

/** A recording of one chest strap holding only heart-rate notifications at `times` (seconds). */
export function heartRateRecording(times) {
  const header = { format: 'sensorformer-recording-1', t0: T0, devices: [{ id: 'strap', name: 'Polar H10 SIM' }] };
  // Heart Rate Measurement (Bluetooth HRS): flags 0x16 = 8-bit HR, contact, RR present; 63 bpm; RR 949/1024 s.
  const hr = (t) => ({ t, dev: 'strap', svc: '0000180d-0000-1000-8000-00805f9b34fb', chr: '00002a37-0000-1000-8000-00805f9b34fb', hex: '163fb503' });
  return [header, { t: T0, dev: 'strap', event: 'connect' }, ...times.map(hr)].map((o) => JSON.stringify(o)).join('\n') + '\n';
}
