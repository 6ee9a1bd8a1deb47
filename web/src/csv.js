// One device's recording as CSV -> a window (README "Input format").
//
//   time,ecg@chest,acc_x@wrist#1,rr
//   1764460800.000,512,,0.81
//
// First column: time in float64 seconds. Every other column is a stream named
// modality[@placement][#sensor]; placement defaults to options.placement (left undefined when that
// is not given: the caller knows the model's placements), sensor to
// options.firstSensor + (column - 1). An empty cell, `NaN` or `nan` is a missing sample.
//
// Regular or event-driven is decided per column, from that column's own timestamps (the rows where
// it has a value), never for the whole file: one CSV often interleaves a 130 Hz ECG, a 50 Hz
// accelerometer and 1 Hz heart rate on one time grid. A column is regular when its timestamps fit
// one rate to within the precision they are printed with (see classify()); its rate is the least-
// squares slope of its timestamps against their sample numbers. Otherwise it is event-driven:
// its values with their own timestamps. options.rates overrides per column: { 'ecg@chest': 130 }
// reads it as regular at that rate, { hr: 'events' } as event-driven. Every decision made with less
// than full confidence is reported through options.onWarning(message), naming the column, what
// was decided and the override.
//
// Every data row has exactly as many cells as the header: a row with more or fewer is an error
// naming its line and both counts (a trailing empty cell is written as a comma and counts), so a
// shifted or truncated row is never read into the wrong columns. Errors name the line of the file
// (the header is line 1; blank lines are skipped but counted).
import { SensorformerError } from './errors.js';
import { describe, FLOAT32_MAX } from './window.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', `CSV: ${message}`);

// A regular reading may fill gaps (a dropout, a disconnect) with missing samples, but one with
// more than this many missing samples per value is far more likely a sparse event stream (and a
// single wild timestamp would otherwise allocate a huge array of nulls).
const MAX_MISSING_PER_VALUE = 10;
// Timestamps that miss one rate by less than this fraction of its period are "nearly regular":
// still event-driven, but with a warning (a regular stream logged with jittery arrival times looks
// like this; so does 1 Hz heart rate written on the rows of a 130 Hz grid). RR intervals vary by
// far more than this from beat to beat, and get no warning.
const NEARLY_REGULAR = 0.1;
// A regular reading at a forced rate never builds more samples than this for one column.
const MAX_FORCED_SAMPLES = 1e8;

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

// The unit of the last printed decimal of a time cell: "1764460800.123" -> 0.001, "12" -> 1,
// "1.5e-3" -> 1e-4. Rounded text is off by up to half of it; truncated text by up to all of it.
function quantum(text) {
  const m = NUMBER.exec(text);
  if (!m) return 1;  // "0x10": Number() reads hex, an integer
  const dot = m[1].indexOf('.');
  const decimals = (dot < 0 ? 0 : m[1].length - dot - 1) - (m[2] ? Number(m[2].slice(1)) : 0);
  return Number(`1e${-decimals}`);  // not 10 ** -4, which is 0.00009999999999999999
}

// Spacing of float64 values near x: epoch seconds (1.7e9) are stored to about 2.4e-7 s.
const ulp = (x) => (x === 0 ? Number.MIN_VALUE : 2 ** (Math.floor(Math.log2(Math.abs(x))) - 52));

// Least-squares line t = a + b n over (n[i], t[i]), in coordinates relative to t[0] so epoch
// seconds do not cancel; returns the slope, the intercept and the largest residual.
function fitLine(n, t) {
  const k = n.length, t0 = t[0];
  let sn = 0, st = 0;
  for (let i = 0; i < k; i++) { sn += n[i]; st += t[i] - t0; }
  const mn = sn / k, mt = st / k;
  let snn = 0, snt = 0;
  for (let i = 0; i < k; i++) { snn += (n[i] - mn) ** 2; snt += (n[i] - mn) * (t[i] - t0 - mt); }
  const b = snt / snn, a = mt - b * mn;
  let worst = 0;
  for (let i = 0; i < k; i++) worst = Math.max(worst, Math.abs(t[i] - t0 - (a + b * n[i])));
  return { period: b, start: t0 + a, worst };
}

// Sample numbers for timestamps t: each timestamp goes to the sample of the line fitted to those
// before it (the first step at the period p0), so a missing sample (a gap of two periods) keeps the
// rest in place, and a long gap (a disconnect) is measured with the rate of all the data before
// it, not one step's. null when two timestamps fall on one sample (they are closer than half a
// period: not samples of one rate).
function sampleNumbers(t, p0) {
  const k = t.length, n = new Array(k);
  n[0] = 0;
  let sn = 0, st = 0, snn = 0, snt = 0;  // running sums for the least-squares line, t relative to t[0]
  for (let i = 1; i < k; i++) {
    const d = t[i - 1] - t[0];
    sn += n[i - 1]; st += d; snn += n[i - 1] ** 2; snt += n[i - 1] * d;
    let next;
    if (i === 1) next = Math.round((t[1] - t[0]) / p0);
    else {
      const b = (i * snt - sn * st) / (i * snn - sn * sn), a = (st - b * sn) / i;
      next = Math.round((t[i] - t[0] - a) / b);
    }
    if (!(next > n[i - 1])) return null;
    n[i] = next;
  }
  return n;
}

const hz = (rate) => Number(rate.toPrecision(6));

// Decides one column. t: its timestamps (non-decreasing), q: the quantum of their text. Returns
// { regular: { rateHz, startTime, n } } or { events: true }, and a warning when not certain.
function classify(name, t, q) {
  const k = t.length;
  const asEvents = (why) => ({ events: true, warning: `CSV column "${name}": ${why}; read as event-driven (its ${k} value${k === 1 ? '' : 's'} at their own times). Pass --rate ${name}=<Hz> to read it as a regular stream, or --rate ${name}=events to keep this and silence the warning` });
  if (k < 3) return asEvents(`${k === 1 ? 'one value' : 'two values'} cannot show a rate`);
  // What a timestamp may be off by: the printed precision (a full unit covers writers that
  // truncate and the least-squares line's own error) plus float64's spacing at these times.
  const float = 4 * ulp(Math.max(Math.abs(t[0]), Math.abs(t[k - 1])));
  const tolerance = q + float;
  const steps = t.slice(1).map((v, i) => v - t[i]).sort((x, y) => x - y);
  const median = steps[Math.floor(steps.length / 2)];
  const regular = (fit, n) => ({ regular: { rateHz: 1 / fit.period, startTime: fit.start, n } });
  const n = sampleNumbers(t, median), fit = n && fitLine(n, t);
  if (!(fit?.worst <= tolerance) && steps[0] + float < 2 * q) {
    // Steps of one or two quanta: the printed precision cannot show one sample interval (130 Hz
    // to 0.01 s gives steps of 0 and 0.01 s). Assume every value is the next sample, and check
    // that this fits one rate.
    const every = t.map((_, i) => i), line = fitLine(every, t);
    if (line.period > 0 && line.worst <= tolerance)
      return { ...regular(line, every), warning: `CSV column "${name}": its timestamps (to ${q} s) are too coarse to show its sample interval; read as regular at ${hz(1 / line.period)} Hz assuming no sample is missing. Pass --rate ${name}=<Hz> to set the rate, or --rate ${name}=events to read it as event-driven` };
  }
  if (!n) return asEvents('two of its values are less than half a sample interval apart');
  if (n[k - 1] + 1 - k > MAX_MISSING_PER_VALUE * k)
    return asEvents(`read as regular at ${hz(1 / fit.period)} Hz it would be ${n[k - 1] + 1 - k} missing samples for ${k} values`);
  if (fit.worst > tolerance)
    return fit.worst < NEARLY_REGULAR * fit.period
      ? asEvents(`its timestamps are nearly regular (${hz(1 / fit.period)} Hz) but miss that rate by up to ${Number(fit.worst.toPrecision(2))} s, more than their printed precision (${q} s) allows`)
      : { events: true };
  return regular(fit, n);
}

// A column at a rate the caller gave: sample numbers from the first timestamp, start where the
// timestamps fit that rate best (their mean offset).
function atRate(name, t, rateHz) {
  const n = t.map((v) => Math.round((v - t[0]) * rateHz));
  if (n[n.length - 1] + 1 > MAX_FORCED_SAMPLES)
    throw new SensorformerError('RESOURCE_EXHAUSTED', `CSV column "${name}" at ${rateHz} Hz would be ${n[n.length - 1] + 1} samples (at most ${MAX_FORCED_SAMPLES})`);
  for (let i = 1; i < n.length; i++)
    if (n[i] === n[i - 1]) throw bad(`column "${name}" at ${rateHz} Hz: its values at ${t[i - 1]} s and ${t[i]} s fall on the same sample; the rate must be higher`);
  let offset = 0;
  for (let i = 0; i < t.length; i++) offset += t[i] - t[0] - n[i] / rateHz;
  return { rateHz, startTime: t[0] + offset / t.length, n };
}

/** The header's column names after "time", as written (the keys options.rates accepts). */
export function csvColumns(text) {
  if (typeof text !== 'string') throw bad(`expected the CSV text (a string), got ${describe(text)}`);
  const first = text.replace(/^\uFEFF/, '').split(/\r?\n/).find((line) => line.trim() !== '') ?? '';
  return first.split(',').slice(1).map((h) => h.trim());
}

/** The window (see parseCsv) and, for each of its streams, the CSV column it came from. */
export function readCsv(text, { placement, firstSensor = 0, rates = {}, onWarning = () => {} } = {}) {
  if (typeof text !== 'string') throw bad(`expected the CSV text (a string), got ${describe(text)}`);
  // A byte-order mark (spreadsheet programs write one) is not part of the first column's name.
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/).map((line, i) => ({ line, n: i + 1 })).filter(({ line }) => line.trim() !== '');
  if (lines.length < 2) throw bad('needs a header and at least one row');
  const header = lines[0].line.split(',').map((h) => h.trim());
  if (header[0].toLowerCase() !== 'time') throw bad(`first column must be "time", got "${header[0]}"`);
  const names = header.slice(1);
  for (const [name, rate] of Object.entries(rates))
    if (!names.includes(name)) throw bad(`a rate is given for column "${name}", which is not in the header (${names.join(', ')})`);
    else if (rate !== 'events' && !(typeof rate === 'number' && Number.isFinite(rate) && rate > 0))
      throw bad(`the rate for column "${name}" must be a number of Hz > 0 or "events", got ${describe(rate)}`);
  const columns = names.map((h, i) => {
    const m = /^([^@#]+)(?:@([^#]+))?(?:#(\d+))?$/.exec(h);
    if (!m) throw bad(`column "${h}" is not modality[@placement][#sensor]`);
    return { name: h, stream: { modality: m[1], placement: m[2] ?? placement, sensor: m[3] !== undefined ? Number(m[3]) : firstSensor + i } };
  });
  // Per column: the times, the finest quantum of their text and the values of its non-empty cells.
  const cols = columns.map(() => ({ t: [], q: Infinity, v: [] }));
  let last = -Infinity;
  for (let r = 1; r < lines.length; r++) {
    const { line, n } = lines[r];
    const parts = line.split(',');
    if (parts.length !== header.length) throw bad(`line ${n} has ${parts.length} cells, the header has ${header.length}`);
    const timeText = parts[0].trim();
    const t = Number(timeText);
    if (timeText === '' || !Number.isFinite(t)) throw bad(`line ${n}: time "${parts[0]}" is not a number`);
    if (t < last) throw bad(`line ${n}: time goes backwards`);
    last = t;
    columns.forEach(({ name }, c) => {
      const cell = parts[c + 1].trim();
      if (cell === '' || /^nan$/i.test(cell)) return;
      const v = Number(cell);
      if (Number.isNaN(v)) throw bad(`line ${n}, column "${name}": "${cell}" is not a number (leave the cell empty or write NaN for a missing sample)`);
      if (!Number.isFinite(v))
        throw new SensorformerError('NON_FINITE', `CSV: line ${n}, column "${name}": ${cell} is not finite (leave the cell empty for a missing sample)`);
      // The window would refuse it (it becomes Infinity in float32): said here, at its line.
      if (Math.abs(v) > FLOAT32_MAX)
        throw new SensorformerError('NON_FINITE', `CSV: line ${n}, column "${name}": ${cell} is beyond float32's range (|x| <= ${FLOAT32_MAX})`);
      cols[c].t.push(t);
      cols[c].q = Math.min(cols[c].q, quantum(timeText));  // "10.5" next to "10.4375": trailing zeros trimmed
      cols[c].v.push(v);
    });
  }
  const streams = [], from = [];
  columns.forEach(({ name, stream }, c) => {
    const { t, q, v } = cols[c];
    if (!t.length) {
      onWarning(`CSV column "${name}" has no value: left out`);
      return;
    }
    const rate = rates[name];
    const decided = rate === 'events' ? { events: true } : rate !== undefined ? { regular: atRate(name, t, rate) } : classify(name, t, q);
    if (decided.warning) onWarning(decided.warning);
    if (decided.events) {
      streams.push({ ...stream, timestamps: t, samples: v });
      from.push(name);
      return;
    }
    const { rateHz, startTime, n } = decided.regular;
    const samples = new Array(n[n.length - 1] + 1).fill(null);
    n.forEach((j, i) => { samples[j] = v[i]; });
    streams.push({ ...stream, rateHz, startTime, samples });
    from.push(name);
  });
  return { window: { streams }, columns: from };
}

export const parseCsv = (text, options) => readCsv(text, options).window;
