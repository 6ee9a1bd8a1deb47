// A recorded export (readPolarLogger's result) played back as a live device would deliver it:
// every sample to the device layer's takers (a WindowAssembler, SessionFeeder sinks: the same
// push(id, times, values, spec, deviceTimes) a Wearable makes) at its time, on a clock (the real
// one in a page: real pace; a virtual one in Node: as fast as the clock is advanced).
//
// Times: a streamed sensor's sample is at its sensor time + the export's offset, with the sensor
// time as its device time (what a PMD frame gives the feeder to measure the rate from); HR / RR /
// PPI events at their phone times. `startAt` moves the whole export so that its first sample is
// at that host time (a page plays a 2022 recording "now"); by default it keeps its own times.
// Every `stepSeconds` of clock time, what fell due is delivered in one batch per stream (a
// notification's worth). Lost samples are not delivered (as on a live link): the takers see the
// hole. Nothing is dropped: `delivered` counts per stream, and 'end' fires once all is delivered.
import { SensorformerError } from '../errors.js';

/**
 * Plays `result` on `clock` ({ now, setInterval, clearInterval }, ble's createRealClock or the
 * simulator's createVirtualClock). options: { startAt (host s of the first sample; default: the
 * export's own time), stepSeconds = 0.25, placement (every stream's; default the export's),
 * assembler (a WindowAssembler: the streams it has are pushed to it), name }.
 * Returns an EventTarget with addSink(sink) -> remove, now(), nextDue(), deliverUntil(t),
 * delivered, total, start, done (a promise of the end), close(); events 'end'.
 */
export function playExport(result, clock, { startAt = null, stepSeconds = 0.25, placement, assembler = null, name = 'recording' } = {}) {
  if (!result?.window?.streams || !result?.streams) throw new SensorformerError('INVALID_ARGUMENT', 'playExport: result must be readPolarLogger\'s { window, streams, offset }');
  if (typeof clock?.now !== 'function' || typeof clock?.setInterval !== 'function') throw new SensorformerError('INVALID_ARGUMENT', 'playExport: clock must have now() and setInterval()');
  if (!(stepSeconds > 0 && Number.isFinite(stepSeconds))) throw new SensorformerError('INVALID_ARGUMENT', `playExport: stepSeconds must be a positive number, got ${stepSeconds}`);
  const queues = [];
  for (const s of result.window.streams) {
    const raw = result.streams[s.modality];
    if (!raw) continue;
    const spec = { sensor: s.sensor, modality: s.modality, placement: placement ?? s.placement, rateHz: s.rateHz ?? null };
    if (s.rateHz) queues.push({ id: s.modality, spec, times: Float64Array.from(raw.deviceTimes, (d) => d + result.offset), values: raw.values, device: raw.deviceTimes, next: 0 });
    else queues.push({ id: s.modality, spec, times: Float64Array.from(s.timestamps), values: Float64Array.from(s.samples), device: null, next: 0 });
  }
  const first = Math.min(...queues.map((q) => (q.times.length ? q.times[0] : Infinity)));
  if (!Number.isFinite(first)) throw new SensorformerError('BAD_FORMAT', 'playExport: the export holds no sample');
  const shift = startAt === null ? 0 : startAt - first;
  if (shift) for (const q of queues) {
    q.times = q.times.map((t) => t + shift);
    if (q.device) q.device = q.device.map((t) => t + shift);
  }
  const sinks = new Set();
  const player = new EventTarget();
  const delivered = Object.fromEntries(queues.map((q) => [q.id, 0]));
  let timer = null, closed = false, resolveDone;
  const done = new Promise((r) => { resolveDone = r; });
  const pending = () => queues.filter((q) => q.next < q.times.length);
  // Delivers everything due by host time `now` (the timer's tick; a caller driving time itself,
  // like replayPolarLoggerIntoSession, calls it directly).
  const deliverUntil = (now) => {
    if (closed) return;
    for (const q of queues) {
      let j = q.next;
      while (j < q.times.length && q.times[j] <= now) j++;
      if (j === q.next) continue;
      const times = q.times.subarray(q.next, j);
      const values = Array.from(q.values.subarray(q.next, j), (v) => (Number.isNaN(v) ? null : v));
      const device = q.device ? q.device.subarray(q.next, j) : null;
      if (assembler?.ids.includes(q.id)) assembler.push(q.id, times, values);
      for (const sink of sinks) sink.push(q.id, times, values, q.spec, device);
      delivered[q.id] += j - q.next;
      q.next = j;
    }
    if (!pending().length) {
      closed = true;
      clock.clearInterval(timer);
      // Nothing more will come: a sink that holds samples back (a SessionFeeder waiting for late
      // ones) gives them now.
      for (const sink of sinks) sink.end?.();
      player.dispatchEvent(new Event('end'));
      resolveDone();
    }
  };
  timer = clock.setInterval(() => deliverUntil(clock.now()), stepSeconds * 1000);
  return Object.assign(player, {
    name,
    /** Host seconds on the player's clock. */
    now: () => clock.now(),
    deliverUntil,
    /** Host time of the next sample to deliver (null when all are delivered). */
    nextDue: () => (pending().length ? Math.min(...pending().map((q) => q.times[q.next])) : null),
    /** Per stream id: samples delivered so far, and in all. */
    delivered,
    total: Object.fromEntries(queues.map((q) => [q.id, q.times.length])),
    /** Host time of the first sample (after startAt). */
    start: first + shift,
    done,
    /**
     * Adds a taker of samples ({ push, markGap, end? }: end() is called once every sample was
     * delivered); returns a function that removes it.
     */
    addSink(sink) {
      if (typeof sink?.push !== 'function') throw new SensorformerError('INVALID_ARGUMENT', 'playExport.addSink: a sink needs push(id, times, values, spec, deviceTimes)');
      sinks.add(sink);
      return () => sinks.delete(sink);
    },
    /** Stops delivering (what was not delivered yet never will be); resolves `done`. */
    close() {
      if (!closed) {
        closed = true;
        clock.clearInterval(timer);
        resolveDone();
      }
    },
  });
}
