// Polar Sensor Logger exports (the Android app's "one ;-separated text file per stream") -> the
// package's streams and a window (README "Polar Sensor Logger exports").
//
// A file's header line decides what it holds (the app's column names, matched exactly, case and
// spaces included; a "timestamp [ms]" column, which some versions add, is read and ignored: it is
// the sensor time again, relative to the first sample):
//   ACC    Phone timestamp;sensor timestamp [ns];X [mg];Y [mg];Z [mg]          -> acc_x/y/z, mG
//   GYRO   Phone timestamp;sensor timestamp [ns];X [dps];Y [dps];Z [dps]       -> gyro_x/y/z, deg/s
//   MAGN   Phone timestamp;sensor timestamp [ns];X [G];Y [G];Z [G]             -> magn_x/y/z, gauss
//   PPG    Phone timestamp;sensor timestamp [ns];channel 0;channel 1;channel 2;ambient
//                                                   -> ppg_0, ppg_1, ppg_2, ppg_ambient (raw counts)
//   ECG    Phone timestamp;sensor timestamp [ns];[timestamp [ms];]ecg [uV]    -> ecg, µV
//   HR     Phone timestamp;HR [bpm][;...]                                      -> hr events, bpm
//   RR     Phone timestamp;RR-interval [ms]                                    -> rr events, s
//   PPI    Phone timestamp;PP-interval [ms];error estimate [ms];blocker;contact;contact;hr [bpm]
//                                                                              -> ppi events, s
//   MARKER Phone timestamp;Marker start/stop                                   -> markers
// Extra columns after the known ones (an H10's HR file adds HRV and breathing columns in some app
// versions) are kept in `extra` and reported, not interpreted. A row ending in ';' (the app writes
// one after the PPG's ambient) is read as if it did not.
//
// Clocks (decisions, README "Polar Sensor Logger exports" says the same):
// - "Phone timestamp" is the phone's local wall-clock time with milliseconds and no time zone; it
//   is read as UTC and `utcOffsetMinutes` (default 0) is subtracted: pass the phone's offset for
//   true Unix times. It is the host time.
// - "sensor timestamp [ns]" is the sensor's clock: ns since 2000-01-01T00:00:00 (as PMD frames).
//   The app sets the sensor's clock from the phone's local time, so it is read on the same scale
//   (minus the same offset). It is the device time, kept exactly (BigInt ns) and in seconds.
// - A streamed sensor's phone times are its sensor times plus an offset the app fixes (rounded to
//   ms): they carry no delivery timing. HR, RR and PPI rows have no sensor time: their phone time
//   is when the phone got the notification.
// - The window's time line is the host clock. A streamed file's samples sit on a regular grid at
//   the rate their sensor times give (a least-squares fit); a step in sensor time of more than 1.5
//   periods is lost samples: missing slots (NaN), counted as gaps. The export's streamed files
//   share the sensor's clock, so one offset maps them all onto the host clock, and they stay
//   aligned as the sensor sampled them. Each file's own offset (the median of phone time - sensor
//   time; constant within a file) differs: 0.87 to 3.39 s between the files of one real export,
//   the app's per-stream mapping including the delay of the stream's first notification. The
//   smallest is taken (the stream whose mapping was least delayed; report.offset). HR / RR / PPI
//   events keep their phone times, in time order (rows earlier than the row before them are
//   counted in report[file].outOfOrder and moved to their place).
// - PPI: every row is an event. A row the sensor flags as unreliable (blocker 1: movement, or
//   contact supported and not in contact) is kept with its flags in the parsed stream, and its
//   value is missing (NaN) in the window: the model sees that a pulse happened then, not its length.
//
// Rows that do not parse are a BAD_FORMAT error naming the file, the line and the column; with
// `badRows: 'skip'` they are left out and listed in `report[file].skipped` (never silently).
import { SensorformerError } from './errors.js';
import { describe, FLOAT32_MAX, MAX_ARRAY_LENGTH } from './window.js';

const badFormat = (where, message) => new SensorformerError('BAD_FORMAT', `${where}: ${message}`);
const invalid = (message) => new SensorformerError('INVALID_ARGUMENT', `readPolarLogger: ${message}`);

/** Seconds from the Unix epoch to Polar's (2000-01-01T00:00:00). */
export const POLAR_EPOCH_S = 946684800;
const POLAR_EPOCH_NS = BigInt(POLAR_EPOCH_S) * 1000000000n;
// A step in sensor time longer than this many periods is lost samples (a gap).
const GAP_PERIODS = 1.5;

const PHONE = 'Phone timestamp';
const SENSOR = 'sensor timestamp [ns]';
const RELATIVE_MS = 'timestamp [ms]';

// kind -> { columns (after the time columns), streams: [column index, stream id] }
const KINDS = {
  ACC: { sensor: true, columns: ['X [mg]', 'Y [mg]', 'Z [mg]'], ids: ['acc_x', 'acc_y', 'acc_z'] },
  GYRO: { sensor: true, columns: ['X [dps]', 'Y [dps]', 'Z [dps]'], ids: ['gyro_x', 'gyro_y', 'gyro_z'] },
  MAGN: { sensor: true, columns: ['X [G]', 'Y [G]', 'Z [G]'], ids: ['magn_x', 'magn_y', 'magn_z'] },
  PPG: { sensor: true, columns: ['channel 0', 'channel 1', 'channel 2', 'ambient'], ids: ['ppg_0', 'ppg_1', 'ppg_2', 'ppg_ambient'] },
  ECG: { sensor: true, columns: ['ecg [uV]'], ids: ['ecg'] },
  HR: { sensor: false, columns: ['HR [bpm]'], ids: ['hr'] },
  RR: { sensor: false, columns: ['RR-interval [ms]'], ids: ['rr'] },
  PPI: { sensor: false, columns: ['PP-interval [ms]', 'error estimate [ms]', 'blocker', 'contact', 'contact', 'hr [bpm]'], ids: ['ppi'] },
  MARKER: { sensor: false, columns: ['Marker start/stop'], ids: [] },
};

/**
 * The model stream each id feeds by default: modality = id, placement from the device (a Polar
 * H10 is a chest strap; a Verity Sense or OH1 an optical sensor on the upper arm), one sensor row
 * per physical sensor (as sensorformer/ble's DEFAULT_STREAMS numbers a strap's). Override with
 * options.streams: { [id]: { sensor?, modality?, placement? } }.
 */
const SENSOR_OF = { ecg: 0, acc: 1, hr: 2, rr: 2, ppi: 2, gyro: 5, magn: 6, ppg: 7 };
const sensorOf = (id) => SENSOR_OF[id.split('_')[0]];

// "2022-04-25T11:39:36.978" (fraction optional, 1-9 digits) -> seconds as UTC; null if not one.
const PHONE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;
function phoneSeconds(text) {
  const m = PHONE_TIME.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59) return null;
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  if (new Date(ms).getUTCDate() !== d) return null;  // 2022-02-30
  return ms / 1000 + (m[7] ? Number(`0.${m[7]}`) : 0);
}

const MARKERS = { MARKER_START: 'start', MARKER_STOP: 'stop' };
const INTEGER = /^-?\d+$/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** The kind of a header line, and the index of each named column; a BAD_FORMAT error otherwise. */
export function polarLoggerKind(headerLine, file = 'file') {
  const cols = headerLine.replace(/;\s*$/, '').split(';').map((c) => c.trim());
  if (cols[0] !== PHONE) {
    throw badFormat(`${file}:1`, `not a Polar Sensor Logger export: its header starts with ${describe(cols[0])}, not "${PHONE}"`);
  }
  let at = 1;
  const hasSensor = cols[at] === SENSOR;
  if (hasSensor) at++;
  const hasRelative = cols[at] === RELATIVE_MS;
  if (hasRelative) at++;
  for (const [kind, spec] of Object.entries(KINDS)) {
    if (spec.sensor !== hasSensor) continue;
    if (spec.columns.every((c, i) => cols[at + i] === c)) {
      return { kind, hasSensor, relative: hasRelative ? 2 : -1, first: at, extra: cols.slice(at + spec.columns.length) };
    }
  }
  const known = Object.entries(KINDS).map(([k, s]) => `${k} (${[PHONE, ...(s.sensor ? [SENSOR] : []), ...s.columns].join(';')})`).join('; ');
  throw badFormat(`${file}:1`, `unknown Polar Sensor Logger header "${cols.join(';')}"; known: ${known}`);
}

/**
 * One export file's text -> { file, kind, hostTimes (s), deviceNs (BigInt64Array, ns since
 * Polar's epoch, or null), deviceTimes (s, Unix scale, or null), columns: { name: Float64Array },
 * markers (MARKER files), extra (names of unread columns), skipped: [{ line, reason }] }.
 */
export function parsePolarLoggerFile(text, file, { utcOffsetMinutes = 0, badRows = 'error' } = {}) {
  if (typeof text !== 'string') throw invalid(`${file}: text must be a string, got ${describe(text)}`);
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const shift = utcOffsetMinutes * 60;
  if (!lines.length || !lines[0].replace(/\r$/, '').trim()) throw badFormat(`${file}:1`, 'empty file: no header line');
  const head = polarLoggerKind(lines[0].replace(/\r$/, ''), file);
  const spec = KINDS[head.kind];
  const n = lines.length - 1;
  const hostTimes = new Float64Array(n);
  const deviceNs = head.hasSensor ? new BigInt64Array(n) : null;
  const values = spec.columns.map(() => new Float64Array(n));
  const markers = [];
  const skipped = [];
  let count = 0;
  const width = head.first + spec.columns.length;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, '');
    const where = `${file}:${i + 1}`;
    const fail = (message) => {
      if (badRows === 'skip') { skipped.push({ line: i + 1, reason: message }); return null; }
      throw badFormat(where, message);
    };
    if (!line.trim()) { fail('empty line'); continue; }
    const cells = line.replace(/;\s*$/, '').split(';');
    if (cells.length < width) { fail(`${cells.length} fields, the header has ${width + head.extra.length}`); continue; }
    const host = phoneSeconds(cells[0].trim());
    if (host === null) { fail(`"${PHONE}" ${describe(cells[0])} is not a date and time like 2022-04-25T11:39:36.978`); continue; }
    let ns = 0n;
    if (head.hasSensor) {
      const s = cells[1].trim();
      if (!INTEGER.test(s)) { fail(`"${SENSOR}" ${describe(s)} is not an integer`); continue; }
      ns = BigInt(s);
      if (ns < 0n || ns >= 2n ** 63n) { fail(`"${SENSOR}" ${s} is out of range`); continue; }
      if (count > 0 && ns <= deviceNs[count - 1]) {
        fail(`"${SENSOR}" ${s} is not after the previous row's ${deviceNs[count - 1]} (every sample once, in time order)`);
        continue;
      }
    }
    if (head.kind === 'MARKER') {
      const m = cells[head.first].trim();
      if (!Object.hasOwn(MARKERS, m)) { fail(`"Marker start/stop" ${describe(m)} is not one of ${Object.keys(MARKERS).join(', ')}`); continue; }
      markers.push({ time: host - shift, kind: MARKERS[m], line: i + 1 });
      hostTimes[count++] = host - shift;
      continue;
    }
    const row = [];
    let bad = null;
    for (let c = 0; c < spec.columns.length; c++) {
      const s = cells[head.first + c].trim();
      if (!NUMBER.test(s)) { bad = `"${spec.columns[c]}" ${describe(s)} is not a number`; break; }
      if (!(Math.abs(Number(s)) <= FLOAT32_MAX)) { bad = `"${spec.columns[c]}" ${s} is beyond float32 (a window refuses it)`; break; }
      row.push(Number(s));
    }
    if (bad) { fail(bad); continue; }
    hostTimes[count] = host - shift;
    if (deviceNs) deviceNs[count] = ns;
    for (let c = 0; c < row.length; c++) values[c][count] = row[c];
    count++;
  }
  const columns = {};
  spec.columns.forEach((name, c) => {
    // PPI names "contact" twice (the app's header): the second is whether contact is supported
    const key = head.kind === 'PPI' && c === 4 ? 'contact supported' : name;
    columns[key] = values[c].slice(0, count);
  });
  const dev = deviceNs ? deviceNs.slice(0, count) : null;
  return {
    file,
    kind: head.kind,
    hostTimes: hostTimes.slice(0, count),
    deviceNs: dev,
    deviceTimes: dev ? Float64Array.from(dev, (v) => Number(v + POLAR_EPOCH_NS) / 1e9 - shift) : null,
    columns,
    markers,
    extra: head.extra,
    skipped,
  };
}

// A regular grid through a streamed file's sensor times: { rateHz, slots (Int32, per sample),
// maxError (s, |sensor time - grid time|), gaps: [{ after (sample index), missing (slots) }] }.
// A grid longer than a window's stream may be (a jump in the sensor's clock of days at its rate)
// is RESOURCE_EXHAUSTED naming the jump, before anything that long is allocated.
function grid(ns, file) {
  const n = ns.length;
  if (n < 2) return { rateHz: null, slots: new Int32Array(n), maxError: 0, gaps: [] };
  // Seconds relative to the first sample, exact to the ns (differences of BigInts).
  const t = Float64Array.from(ns, (v) => Number(v - ns[0]) / 1e9);
  const steps = Float64Array.from({ length: n - 1 }, (_, i) => t[i + 1] - t[i]).sort();
  let period = steps[(steps.length - 1) >> 1];
  const slots = new Int32Array(n);
  const place = () => {
    for (let i = 1; i < n; i++) {
      const step = t[i] - t[i - 1];
      const next = slots[i - 1] + Math.max(1, step > GAP_PERIODS * period ? Math.round(step / period) : 1);
      if (!(next < MAX_ARRAY_LENGTH)) {
        const span = `${t[n - 1].toFixed(3)} s at ${(1 / period).toPrecision(6)} Hz`;
        throw new SensorformerError('RESOURCE_EXHAUSTED', `${file}: the sensor timestamps span ${span}, more than the ${MAX_ARRAY_LENGTH} samples a stream`
          + ` may hold (the largest step: ${steps[steps.length - 1].toFixed(3)} s; a clock that jumped? read the parts before and after it as separate files)`);
      }
      slots[i] = next;
    }
  };
  place();
  // Least squares of time on slot (through the data, not the origin), then the slots again with it.
  for (let pass = 0; pass < 2; pass++) {
    let sx = 0, sy = 0;
    for (let i = 0; i < n; i++) { sx += slots[i]; sy += t[i]; }
    const mx = sx / n, my = sy / n;
    let sxx = 0, sxy = 0;
    for (let i = 0; i < n; i++) { sxx += (slots[i] - mx) ** 2; sxy += (slots[i] - mx) * (t[i] - my); }
    period = sxy / sxx;
    place();
  }
  let sx = 0, sy = 0;
  for (let i = 0; i < n; i++) { sx += slots[i]; sy += t[i]; }
  const origin = sy / n - period * (sx / n);  // grid time of slot 0, relative to the first sample
  let maxError = 0;
  const gaps = [];
  for (let i = 0; i < n; i++) {
    maxError = Math.max(maxError, Math.abs(t[i] - (origin + period * slots[i])));
    if (i && slots[i] - slots[i - 1] > 1) gaps.push({ after: i - 1, missing: slots[i] - slots[i - 1] - 1 });
  }
  return { rateHz: 1 / period, slots, origin, maxError, gaps };
}

const median = (xs) => {
  const s = Float64Array.from(xs).sort();
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

/**
 * Parsed export files (parsePolarLoggerFile) -> { window, streams, markers, report }.
 * window: { streams } in the window format (README "Input format"), regular streams for the
 * streamed sensors, event streams for HR, RR and PPI; streams: per stream id its samples with both
 * clocks; report: per file { kind, rows, samples, skipped, rateHz, maxGridError, gaps,
 * missingSlots, offset (median phone - sensor time, s) }.
 */
export function polarLoggerWindow(parsed, { streams: overrides = {}, placement } = {}) {
  const kinds = new Map();
  for (const p of parsed) {
    if (kinds.has(p.kind)) throw invalid(`two ${p.kind} files: ${kinds.get(p.kind)} and ${p.file} (one export's files, one per stream)`);
    kinds.set(p.kind, p.file);
  }
  // One offset for the export: its streamed files share the sensor's clock (see the header).
  const offsets = [];
  const report = {};
  for (const p of parsed) {
    report[p.file] = { kind: p.kind, rows: p.hostTimes.length + p.skipped.length, samples: p.hostTimes.length, skipped: p.skipped, extra: p.extra };
    if (p.deviceTimes) {
      // A file with no rows (the app writes the header of a stream it never got) has no offset.
      const d = Float64Array.from(p.hostTimes, (h, i) => h - p.deviceTimes[i]);
      report[p.file].offset = d.length ? median(d) : null;
      if (d.length) offsets.push(report[p.file].offset);
    }
  }
  const offset = offsets.length ? Math.min(...offsets) : 0;
  const out = [];
  const all = {};
  const describeStream = (id) => {
    const o = overrides[id] ?? {};
    const s = { sensor: o.sensor ?? sensorOf(id), modality: o.modality ?? id };
    const where = o.placement ?? placement;
    if (where !== undefined) s.placement = where;
    return s;
  };
  for (const p of parsed) {
    const spec = KINDS[p.kind];
    const r = report[p.file];
    if (p.kind === 'MARKER') continue;
    if (p.deviceNs) {
      const g = grid(p.deviceNs, p.file);
      Object.assign(r, { rateHz: g.rateHz, maxGridError: g.maxError, gaps: g.gaps.length, missingSlots: g.gaps.reduce((a, x) => a + x.missing, 0) });
      if (!p.deviceNs.length) continue;
      const length = g.slots[g.slots.length - 1] + 1;
      const startTime = p.deviceTimes[0] + g.origin + offset;
      spec.columns.forEach((_, c) => {
        const id = spec.ids[c];
        const samples = new Float64Array(length).fill(NaN);
        const v = Object.values(p.columns)[c];
        for (let i = 0; i < v.length; i++) samples[g.slots[i]] = v[i];
        all[id] = { file: p.file, hostTimes: p.hostTimes, deviceNs: p.deviceNs, deviceTimes: p.deviceTimes, values: v };
        if (g.rateHz === null) return;  // one sample: no rate to declare
        out.push({ ...describeStream(id), rateHz: g.rateHz, startTime, samples });
      });
    } else {
      const id = spec.ids[0];
      const first = p.columns[spec.columns[0]];  // the value column: HR [bpm], RR-interval [ms], PP-interval [ms]
      let values = first;
      if (p.kind === 'RR') values = first.map((ms) => ms / 1000);
      if (p.kind === 'PPI') {
        const c = p.columns;
        const unreliable = (i) => c.blocker[i] === 1 || (c['contact supported'][i] === 1 && c.contact[i] === 0);
        values = first.map((ms, i) => (unreliable(i) ? NaN : ms / 1000));
        r.unreliable = values.reduce((a, v) => a + (Number.isNaN(v) ? 1 : 0), 0);
      }
      all[id] = { file: p.file, hostTimes: p.hostTimes, deviceNs: null, deviceTimes: null, values: first, columns: p.columns };
      // Rows earlier than the row before them (a real PPI file has two: 0.11 s and 3.1 s back)
      // are counted and put in time order: an event stream's times never decrease.
      const order = Array.from(p.hostTimes.keys());
      r.outOfOrder = order.reduce((a, i) => a + (i && p.hostTimes[i] < p.hostTimes[i - 1] ? 1 : 0), 0);
      if (r.outOfOrder) order.sort((a, b) => p.hostTimes[a] - p.hostTimes[b] || a - b);
      out.push({ ...describeStream(id), timestamps: Float64Array.from(order, (i) => p.hostTimes[i]), samples: Float64Array.from(order, (i) => values[i]) });
    }
  }
  const markers = parsed.flatMap((p) => p.markers.map((m) => ({ ...m, file: p.file })));
  return { window: { streams: out }, streams: all, markers, offset, report };
}

// Node: a folder (its .txt / .csv files with a Polar Sensor Logger header; others are listed in
// the report's `ignored`) or one file or a list of files -> [{ name, text }].
async function fromPaths(paths) {
  const { readFile, readdir, stat } = await import(/* @vite-ignore */ 'node:fs/promises');
  const { join } = await import(/* @vite-ignore */ 'node:path');
  const io = (p, e) => new SensorformerError('IO', `cannot read ${p}: ${e.code === 'ENOENT' ? 'no such file or folder' : e.code === 'EACCES' ? 'permission denied' : e.message}`, { cause: e });
  const files = [];
  const ignored = [];
  for (const path of paths) {
    const st = await stat(path).catch((e) => { throw io(path, e); });
    if (st.isDirectory()) {
      const names = (await readdir(path).catch((e) => { throw io(path, e); })).sort();
      for (const name of names) {
        const full = join(path, name);  // normalised: a/../b/x.txt is b/x.txt, as the user's own join gives
        if (!/\.(txt|csv)$/i.test(name)) { ignored.push(full); continue; }
        const text = await readFile(full, 'utf8').catch((e) => { throw io(full, e); });
        if (!text.startsWith(PHONE)) { ignored.push(full); continue; }
        files.push({ name: full, text });
      }
    } else {
      files.push({ name: path, text: await readFile(path, 'utf8').catch((e) => { throw io(path, e); }) });
    }
  }
  return { files, ignored };
}

/**
 * A Polar Sensor Logger export -> { window, streams, markers, offset, report }.
 * source: a folder or file path, or an array of paths (Node); or an array of { name, text } /
 * { name, bytes } / File objects (a browser's file picker). options: { utcOffsetMinutes = 0,
 * badRows: 'error' | 'skip', placement, streams: { [id]: { sensor?, modality?, placement? } } }.
 */
export async function readPolarLogger(source, options) {
  options ??= {};
  if (typeof options !== 'object') throw invalid(`options must be an object, got ${describe(options)}`);
  const allowed = ['utcOffsetMinutes', 'badRows', 'placement', 'streams'];
  for (const key of Object.keys(options)) if (!allowed.includes(key)) throw invalid(`unknown option "${key}" (options: ${allowed.join(', ')})`);
  const { utcOffsetMinutes = 0, badRows = 'error', placement, streams = {} } = options;
  if (typeof utcOffsetMinutes !== 'number' || !Number.isFinite(utcOffsetMinutes) || Math.abs(utcOffsetMinutes) > 18 * 60)
    throw invalid(`options.utcOffsetMinutes must be minutes east of UTC within ±1080, got ${describe(utcOffsetMinutes)}`);
  if (badRows !== 'error' && badRows !== 'skip') throw invalid(`options.badRows must be "error" or "skip", got ${describe(badRows)}`);
  if (placement !== undefined && (typeof placement !== 'string' || !placement)) throw invalid(`options.placement must be a name, got ${describe(placement)}`);
  if (!streams || typeof streams !== 'object') throw invalid(`options.streams must be an object { id: { sensor?, modality?, placement? } }, got ${describe(streams)}`);
  let files, ignored = [];
  if (typeof source === 'string') ({ files, ignored } = await fromPaths([source]));
  else if (Array.isArray(source) && source.every((s) => typeof s === 'string')) ({ files, ignored } = await fromPaths(source));
  else if (Array.isArray(source)) {
    files = [];
    for (const [i, s] of source.entries()) {
      if (s && typeof s.name === 'string' && typeof s.text === 'string') files.push({ name: s.name, text: s.text });
      else if (s && typeof s.name === 'string' && (s.bytes instanceof Uint8Array || s.bytes instanceof ArrayBuffer)) files.push({ name: s.name, text: new TextDecoder().decode(s.bytes) });
      else if (s && typeof s.name === 'string' && typeof s.text === 'function') files.push({ name: s.name, text: await s.text() });  // a File
      else throw invalid(`source[${i}] must be a path, { name, text }, { name, bytes } or a File, got ${describe(s)}`);
    }
  } else throw invalid(`source must be a folder or file path, an array of them (Node), or an array of { name, text } / File, got ${describe(source)}`);
  if (!files.length) throw new SensorformerError('BAD_FORMAT', `no Polar Sensor Logger file in ${typeof source === 'string' ? source : 'the given files'} (a file whose first line starts with "${PHONE}")`);
  const parsed = files.map((f) => parsePolarLoggerFile(f.text, f.name, { utcOffsetMinutes, badRows }));
  const result = polarLoggerWindow(parsed, { streams, placement });
  result.ignored = ignored;
  return result;
}
