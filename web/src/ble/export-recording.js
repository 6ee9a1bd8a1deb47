// A Polar Sensor Logger export (readPolarLogger's result) written as a recording (.sfrec,
// recording.js): the notifications a live Polar device would have sent for the same samples, so
// that the export replays through the whole device path (replay -> connectWearable -> decoders ->
// PMD frame timing -> clock alignment) like a recorded Bluetooth session.
//
// What is written (one device, `name`):
// - a connect; a read of the PMD control point: 0F and the features bitmask of the streams in the
//   export (ECG bit 0, PPG 1, ACC 2, PPI 3, GYRO 5, MAGN 6); per PMD stream, its start answer
//   F0 02 type 00 00 (gyroscope and magnetometer: followed by their scale factor, float32);
// - HR rows: Heart Rate Measurement notifications (0x2A37, flags 00: u8 bpm, u16 above 255) at
//   their phone times; RR rows as RR intervals in 1/1024 s (flags bit 4) in the notification of
//   the HR row with the same phone time, else the next one (see below);
// - streamed sensors (ACC, GYRO, MAGN, PPG, ECG): PMD data frames at the phone time of their last
//   sample, timestamped with its sensor time (ns since 2000-01-01, exact). ACC, GYRO, MAGN and PPG
//   as delta frames (0x80) holding as many samples as fit in one 229-byte notification (what a
//   Verity Sense sends; reference widths: PPG 3 bytes (22-bit), the others 2), ECG as raw 24-bit
//   µV frames of 73 samples (an H10's). A frame never spans lost samples (a step of more than 1.5
//   sample periods in the sensor times ends it). GYRO and MAGN values are counts of a scale
//   factor: the file's quantum (its values are multiples of one step, 0.07 dps and 0.0015 G in a
//   Verity Sense export), found from the values and written in the start answer; a file whose
//   values are not multiples of one step is a BAD_FORMAT error naming it.
// - PPI rows: one PMD PPI frame each (hr, interval, error estimate, flags: blocker, contact,
//   contact supported) at its phone time, timestamp 0 (the device layer times pulses from their
//   arrival).
// Every row becomes bytes except MARKER rows (no Bluetooth counterpart; they stay in the export).
import { SensorformerError } from '../errors.js';
import { encodeHeartRate, encodePmdDelta, encodePmdEcg, encodePmdPpi } from './encoders.js';
import { RECORDING_FORMAT, toHex } from './recording.js';

const UUID = {
  hr: '0000180d-0000-1000-8000-00805f9b34fb',
  hrm: '00002a37-0000-1000-8000-00805f9b34fb',
  pmd: 'fb005c80-02e7-f387-1cad-8acd2d8df0c8',
  control: 'fb005c81-02e7-f387-1cad-8acd2d8df0c8',
  data: 'fb005c82-02e7-f387-1cad-8acd2d8df0c8',
};
// kind -> PMD type, ids of its columns in readPolarLogger's streams, reference width (bytes)
const PMD = {
  ECG: { type: 0, ids: ['ecg'], width: 3 },
  PPG: { type: 1, ids: ['ppg_0', 'ppg_1', 'ppg_2', 'ppg_ambient'], width: 3 },
  ACC: { type: 2, ids: ['acc_x', 'acc_y', 'acc_z'], width: 2 },
  GYRO: { type: 5, ids: ['gyro_x', 'gyro_y', 'gyro_z'], width: 2, scaled: true },
  MAGN: { type: 6, ids: ['magn_x', 'magn_y', 'magn_z'], width: 2, scaled: true },
};
const ECG_FRAME = 73;
const f32 = (v) => toHex(new Uint8Array(Float32Array.of(v).buffer));

// The step all of a file's values are integer multiples of (to 1e-3 of it: float32 printing), or
// null. Candidates: whole fractions of the smallest magnitude, then of the smallest difference
// between magnitudes (differences of large printed floats carry their rounding: tried second).
function quantum(columns) {
  const mags = [...new Set(columns.flatMap((c) => Array.from(c, (v) => Math.abs(v))).filter((v) => v > 0))].sort((a, b) => a - b);
  if (!mags.length) return 1;
  let diff = Infinity;
  for (let i = 1; i < Math.min(mags.length, 2000); i++) if (mags[i] - mags[i - 1] > mags[0] * 1e-3) diff = Math.min(diff, mags[i] - mags[i - 1]);
  const fits = (q, c) => c.every((v) => Math.abs(v / q - Math.round(v / q)) < 1e-3 && Math.abs(v / q) < 32767.5);
  // a candidate is tried on the first 500 values of each column, then on all of them
  const ok = (q) => columns.every((c) => fits(q, c.subarray ? c.subarray(0, 500) : c.slice(0, 500))) && columns.every((c) => fits(q, c));
  // (a difference of printed float32 values is off in its last digits: its roundings to 2-6
  // significant digits are tried too, 0.0014999 -> 0.0015)
  for (const base of [mags[0], diff]) {
    for (let k = 1; k <= 12 && Number.isFinite(base); k++) {
      for (const q of [base / k, ...[2, 3, 4, 5, 6].map((p) => Number((base / k).toPrecision(p)))]) if (ok(q)) return Math.fround(q);
    }
  }
  return null;
}

/**
 * readPolarLogger's result -> the text of a recording (.sfrec) with the notifications a live device
 * would have sent (see the header). options: { name = 'Polar export', id = 'polar-export' }.
 */
export function exportToRecording(result, { name = 'Polar export', id = 'polar-export' } = {}) {
  if (!result?.streams || !result?.report) throw new SensorformerError('INVALID_ARGUMENT', 'exportToRecording: expected readPolarLogger\'s result { streams, report, ... }');
  const events = [];  // [t, order, line]
  let order = 0;
  const note = (t, chr, svc, bytes) => events.push([t, order++, { t, dev: id, svc, chr, hex: toHex(bytes) }]);
  const starts = [];
  let mask = 0;
  const byFile = new Map();
  for (const [sid, raw] of Object.entries(result.streams)) {
    if (!byFile.has(raw.file)) byFile.set(raw.file, { kind: result.report[raw.file].kind, streams: {} });
    byFile.get(raw.file).streams[sid] = raw;
  }
  for (const [file, { kind, streams }] of byFile) {
    const pmd = PMD[kind];
    if (pmd) {
      const cols = pmd.ids.map((k) => streams[k]);
      if (cols.some((c) => !c)) throw new SensorformerError('BAD_FORMAT', `exportToRecording: ${file} lacks one of ${pmd.ids.join(', ')}`);
      const { hostTimes, deviceNs, deviceTimes } = cols[0];
      let factor = 1;
      if (pmd.scaled) {
        factor = quantum(cols.map((c) => c.values));
        if (factor === null) throw new SensorformerError('BAD_FORMAT', `exportToRecording: the values of ${file} are not multiples of one step (a device sends counts of a scale factor)`);
      }
      const sample = (k) => cols.map((c) => Math.round(c.values[k] / factor));
      mask |= 1 << pmd.type;
      starts.push([pmd.type, pmd.scaled ? f32(factor) : '']);
      // runs of contiguous samples (no step over 1.5 periods)
      const n = deviceTimes.length;
      const steps = Array.from({ length: Math.max(0, n - 1) }, (_, k) => deviceTimes[k + 1] - deviceTimes[k]).sort((a, b) => a - b);
      const period = steps.length ? steps[steps.length >> 1] : Infinity;
      let k = 0;
      while (k < n) {
        let end = k + 1;
        while (end < n && deviceTimes[end] - deviceTimes[end - 1] <= 1.5 * period) end++;
        while (k < end) {
          let count, bytes;
          if (kind === 'ECG') {
            count = Math.min(ECG_FRAME, end - k);
            bytes = encodePmdEcg(BigInt(deviceNs[k + count - 1]), Array.from({ length: count }, (_, j) => cols[0].values[k + j]));
          } else {
            const candidates = Array.from({ length: Math.min(255, end - k) }, (_, j) => sample(k + j));
            ({ bytes, count } = encodePmdDelta(pmd.type, (c) => BigInt(deviceNs[k + c - 1]), candidates, { width: pmd.width }));
          }
          note(hostTimes[k + count - 1], UUID.data, UUID.pmd, bytes);
          k += count;
        }
      }
    } else if (kind === 'HR' || kind === 'RR') {
      // below, once both files are known: RR rows ride in the heart-rate notification they came in
    } else if (kind === 'PPI') {
      const raw = streams.ppi;
      const c = raw.columns;
      mask |= 1 << 3;
      starts.push([3, '']);
      raw.hostTimes.forEach((t, i) => {
        const flags = (c.blocker[i] ? 1 : 0) | (c.contact[i] ? 2 : 0) | (c['contact supported'][i] ? 4 : 0);
        note(t, UUID.data, UUID.pmd, encodePmdPpi(0n, [{ hr: c['hr [bpm]'][i], ppi: c['PP-interval [ms]'][i], error: c['error estimate [ms]'][i], flags }]));
      });
    }
  }
  // Heart rate: one notification per HR row. An RR row goes into the notification of the HR row
  // with the same phone time (to the ms: the app writes a notification's intervals with its time),
  // else into the next HR row's (a strap sends intervals beside a heart rate, never alone); RR rows
  // after the last HR row (or in an export without HR) get a notification of their own carrying the
  // latest heart rate (0 without any): the one case where a heart-rate value is repeated.
  const hr = result.streams.hr, rr = result.streams.rr;
  if (hr || rr) {
    const rows = hr ? Array.from(hr.hostTimes, (t, i) => ({ t, bpm: hr.values[i], rr: [] })).sort((x, y) => x.t - y.t) : [];
    const extra = [];
    rr?.hostTimes.forEach((t, i) => {
      const v = Math.round(rr.values[i] * 1.024);  // the export's ms -> 1/1024 s
      let lo = 0, hi = rows.length;  // the first HR row at or after t - 0.5 ms
      while (lo < hi) { const m = (lo + hi) >> 1; if (rows[m].t < t - 5e-4) lo = m + 1; else hi = m; }
      if (lo < rows.length) rows[lo].rr.push(v);
      else extra.push({ t, bpm: rows.length ? rows[rows.length - 1].bpm : 0, rr: [v] });
    });
    for (const n of [...rows, ...extra]) {
      const bytes = n.bpm > 255
        ? Uint8Array.from([0x01 | (n.rr.length ? 0x10 : 0), n.bpm & 0xFF, n.bpm >> 8, ...n.rr.flatMap((v) => [v & 0xFF, v >> 8])])
        : encodeHeartRate(n.bpm, n.rr);
      note(n.t, UUID.hrm, UUID.hr, bytes);
    }
  }
  if (!events.length) throw new SensorformerError('BAD_FORMAT', 'exportToRecording: the export holds no sample');
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const t0 = events[0][0] - 1;
  const round6 = (t) => Math.round(t * 1e6) / 1e6;
  const lines = [
    { format: RECORDING_FORMAT, created: new Date(t0 * 1000).toISOString(), t0: round6(t0), devices: [{ id, name }] },
    { t: round6(t0), dev: id, event: 'connect' },
  ];
  if (mask) {
    lines.push({ t: round6(t0), dev: id, svc: UUID.pmd, chr: UUID.control, hex: toHex(Uint8Array.of(0x0F, mask, ...new Array(15).fill(0))), read: true });
    for (const [type, extra] of starts) lines.push({ t: round6(t0), dev: id, svc: UUID.pmd, chr: UUID.control, hex: `f002${type.toString(16).padStart(2, '0')}0000${extra}` });
  }
  for (const [, , line] of events) lines.push({ ...line, t: round6(line.t) });
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}
