// Test data for streaming sessions (stream.test.js, worker.test.js): a seeded multi-device
// recording and a delivery plan of chunks, with the window of everything received after each
// chunk (the reference for model.forward).
import { prng } from './prng.js';

// --- a recording and its delivery --------------------------------------------------------------

// What four devices measured over `seconds`, seeded: ECG (130 Hz, with NaN runs and present = 0
// flags), wrist acc_x (52 Hz), RR intervals and heart rate (event-driven, irregular times).
export function recording(seed, seconds) {
  const rand = prng(seed);
  const t0 = 1764460800.125 + Math.floor(rand() * 1000);
  const regular = (sensor, modality, placement, rateHz, offset, value) => {
    const n = Math.floor(seconds * rateHz);
    const samples = new Float32Array(n), present = new Uint8Array(n).fill(1);
    let missingRun = 0;
    for (let i = 0; i < n; i++) {
      if (missingRun === 0 && rand() < 0.01) missingRun = 1 + Math.floor(rand() * 40);  // a run long enough to make absent patches
      samples[i] = missingRun > 0 ? NaN : value(i);
      if (missingRun > 0) missingRun--;
      if (rand() < 0.02) present[i] = 0;
    }
    return { kind: 'regular', sensor, modality, placement, rateHz, startTime: t0 + offset, samples, present };
  };
  const event = (sensor, modality, placement, first, gap, value) => {
    const timestamps = [], samples = [];
    for (let t = t0 + first; t < t0 + seconds; t += gap()) {
      timestamps.push(t);
      samples.push(rand() < 0.05 ? NaN : value());
      if (rand() < 0.05) { timestamps.push(t); samples.push(value()); }  // two events at one time
    }
    return { kind: 'event', sensor, modality, placement, timestamps: Float64Array.from(timestamps), samples: Float32Array.from(samples) };
  };
  return {
    t0,
    streams: [
      regular(0, 'ecg', 'chest', 130, 0.013, (i) => Math.round(300 * Math.sin(i / 7) + 40 * (rand() - 0.5))),
      regular(1, 'acc_x', 'wrist', 52, 0.2, () => rand() * 2 - 1),
      event(2, 'rr', 'chest', 0.4, () => 0.6 + 0.4 * rand(), () => 0.6 + 0.4 * rand()),
      event(3, 'hr', 'finger', 0.9, () => 0.5 + rand(), () => 60 + 30 * rand()),
    ],
  };
}

// A delivery plan: pushes at simulated wall times; each device delivers what it measured before
// its own (random, per push, monotone) cut, with latencies from 0.05 s to 2 s, so devices arrive
// out of order against each other. Disconnects lose samples (regular: the gap is marked by the
// next chunk's startTime or by `until`; event: the events are lost). Event streams sometimes send
// a watermark (`until`) with or without events. Returns the chunks and, after each, the window of
// everything received (the reference for forward: lost samples as NaN, lost events absent).
export function delivery(rec, seed, { joinLate = false } = {}) {
  const rand = prng(seed);
  const state = rec.streams.map(() => ({ known: 0, cut: -Infinity, lostUntil: -1 }));
  const chunks = [], windows = [];
  const received = rec.streams.map((s) => (s.kind === 'regular'
    ? { sensor: s.sensor, modality: s.modality, placement: s.placement, rateHz: s.rateHz, startTime: s.startTime, samples: [], present: [] }
    : { sensor: s.sensor, modality: s.modality, placement: s.placement, timestamps: [], samples: [], present: [] }));
  const end = Math.max(...rec.streams.map((s) => (s.kind === 'regular' ? s.startTime + s.samples.length / s.rateHz : s.timestamps.at(-1) ?? rec.t0)));
  const joinAt = joinLate ? rec.t0 + 4 : -Infinity;  // the last stream joins the session here
  let wall = rec.t0;
  for (let k = 0; wall < end + 3; k++) {
    wall += 0.05 + 0.35 * rand();
    const streams = [];
    rec.streams.forEach((s, i) => {
      const st = state[i], r = received[i];
      const declared = k > 0 && (!joinLate || i < rec.streams.length - 1 || st.joined);
      const describe = !declared && (!joinLate || i < rec.streams.length - 1 || wall >= joinAt);
      if (joinLate && i === rec.streams.length - 1 && !declared && !describe) return;
      const description = { sensor: s.sensor, modality: s.modality, placement: s.placement, ...(s.kind === 'regular' ? { rateHz: s.rateHz } : {}) };
      if (describe) st.joined = true;
      if (!describe && rand() < 0.3) return;  // nothing from this device this time
      const latency = [0.05, 0.2, 0.8, 2][i] * (0.5 + rand());
      st.cut = Math.max(st.cut, wall - latency);
      const entry = describe ? { ...description } : {};
      if (s.kind === 'regular') {
        const due = Math.min(s.samples.length, Math.max(0, Math.floor((st.cut - s.startTime) * s.rateHz)));
        let from = st.known, to;
        if (describe) entry.startTime = s.startTime + from / s.rateHz;
        // A disconnect now and then: the next samples are lost.
        if (!describe && due > from + 10 && rand() < 0.08) {
          const lost = Math.min(due - from, 1 + Math.floor(rand() * 60));
          for (let j = 0; j < lost; j++) { r.samples.push(null); r.present.push(0); }
          from += lost;
          // The device layer marks the gap with `until` (samples before it that did not come are
          // missing; it applies after the chunk's samples, so the data after the gap comes in the
          // next chunk), or the chunk after the gap gives its startTime.
          if (rand() < 0.5) {
            entry.until = s.startTime + (from - 0.5) / s.rateHz;
            to = from;
          } else {
            entry.startTime = s.startTime + from / s.rateHz;
          }
        }
        to ??= Math.max(from, due);
        entry.samples = s.samples.slice(from, to);
        entry.present = s.present.slice(from, to);
        for (let j = from; j < to; j++) { r.samples.push(Number.isNaN(s.samples[j]) ? null : s.samples[j]); r.present.push(s.present[j]); }
        st.known = to;
        if (entry.samples.length === 0 && rand() < 0.5) { delete entry.samples; delete entry.present; }
      } else {
        // A stream joining late has no past: its device connects now, with events after `wall`
        // (a joining event stream's watermark is the session's frontier, which is before `wall`).
        if (describe && joinLate && i === rec.streams.length - 1) {
          while (st.known < s.timestamps.length && s.timestamps[st.known] <= wall) st.known++;
          st.cut = Math.max(st.cut, wall);
        }
        let from = st.known, to = from;
        while (to < s.timestamps.length && s.timestamps[to] <= st.cut) to++;
        if (!describe && to > from && rand() < 0.1) from = to - Math.floor(rand() * (to - from));  // events lost in a disconnect
        const ts = s.timestamps.slice(from, to), vs = s.samples.slice(from, to);
        entry.timestamps = ts;
        entry.samples = vs;
        for (let j = 0; j < ts.length; j++) { r.timestamps.push(ts[j]); r.samples.push(Number.isNaN(vs[j]) ? null : vs[j]); r.present.push(1); }
        st.known = to;
        // The watermark: nothing before the cut is still to come (every event before it was sent).
        if (rand() < 0.4) entry.until = st.cut;
        if (!describe && entry.timestamps.length === 0 && rand() < 0.5) { delete entry.timestamps; delete entry.samples; }
      }
      while (streams.length < i) streams.push(null);
      streams[i] = entry;
    });
    chunks.push({ streams });
    windows.push(received.filter((_, i) => !joinLate || i < rec.streams.length - 1 || state[i].joined).map((r) => ({
      ...r, samples: [...r.samples], present: [...r.present], ...(r.timestamps ? { timestamps: [...r.timestamps] } : {}),
    })));
  }
  return { chunks, windows };
}
