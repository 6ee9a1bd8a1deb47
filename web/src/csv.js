// One device's recording as CSV -> a window (docs/model.md "Input").
//
//   time,ecg@chest,acc_x@wrist#1,rr
//   1764460800.000,512,,0.81
//
// First column: time in float64 seconds. Every other column is a stream named
// modality[@placement][#sensor]; placement defaults to options.placement, sensor to
// options.firstSensor + (column - 1). An empty cell is a missing sample. When the time column is
// regular (every step within 1% of the median step) the columns become regular streams at
// (rows - 1) / span Hz starting at the first time; otherwise each column becomes an event-driven
// stream of its non-empty cells with their own times.
//
// Every data row has exactly as many cells as the header: a row with more or fewer is an error
// naming its line and both counts (a trailing empty cell is written as a comma and counts), so a
// shifted or truncated row is never read into the wrong columns. Errors name the line of the file
// (the header is line 1; blank lines are skipped but counted).
import { SensorformerError } from './errors.js';
import { describe } from './window.js';

const bad = (message) => new SensorformerError('INVALID_ARGUMENT', `CSV: ${message}`);

export function parseCsv(text, { placement, firstSensor = 0 } = {}) {
  if (typeof text !== 'string') throw bad(`expected the CSV text (a string), got ${describe(text)}`);
  const lines = text.split(/\r?\n/).map((line, i) => ({ line, n: i + 1 })).filter(({ line }) => line.trim() !== '');
  if (lines.length < 2) throw bad('needs a header and at least one row');
  const header = lines[0].line.split(',').map((h) => h.trim());
  if (header[0].toLowerCase() !== 'time') throw bad(`first column must be "time", got "${header[0]}"`);
  const columns = header.slice(1).map((h, i) => {
    const m = /^([^@#]+)(?:@([^#]+))?(?:#(\d+))?$/.exec(h);
    if (!m) throw bad(`column "${h}" is not modality[@placement][#sensor]`);
    return { modality: m[1], placement: m[2] ?? placement, sensor: m[3] !== undefined ? Number(m[3]) : firstSensor + i };
  });
  const times = [], cells = columns.map(() => []);
  for (let r = 1; r < lines.length; r++) {
    const { line, n } = lines[r];
    const parts = line.split(',');
    if (parts.length !== header.length) throw bad(`line ${n} has ${parts.length} cells, the header has ${header.length}`);
    const t = Number(parts[0]);
    if (parts[0].trim() === '' || !Number.isFinite(t)) throw bad(`line ${n}: time "${parts[0]}" is not a number`);
    if (times.length && t < times[times.length - 1]) throw bad(`line ${n}: time goes backwards`);
    times.push(t);
    columns.forEach((_, c) => {
      const cell = parts[c + 1].trim();
      const v = cell === '' ? NaN : Number(cell);
      if (cell !== '' && Number.isNaN(v)) throw bad(`line ${n}, column "${header[c + 1]}": "${cell}" is not a number`);
      if (!Number.isFinite(v) && !Number.isNaN(v))
        throw new SensorformerError('NON_FINITE', `CSV: line ${n}, column "${header[c + 1]}": ${cell} is not finite (leave the cell empty for a missing sample)`);
      cells[c].push(v);
    });
  }
  const steps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  const median = steps.length ? steps[Math.floor(steps.length / 2)] : 0;
  const regular = median > 0 && steps.every((s) => Math.abs(s - median) <= 0.01 * median);
  // The rate comes from the whole span, not one step: epoch-second text times carry ~2e-7 s of
  // float64 rounding each, which one 20 ms step would turn into a 1e-5 rate error.
  const rateHz = regular ? (times.length - 1) / (times[times.length - 1] - times[0]) : 0;
  return {
    streams: columns.map((col, c) => {
      if (regular) return { ...col, rateHz, startTime: times[0], samples: cells[c].map((v) => (Number.isNaN(v) ? null : v)) };
      const idx = cells[c].flatMap((v, i) => (Number.isNaN(v) ? [] : [i]));
      return { ...col, timestamps: idx.map((i) => times[i]), samples: idx.map((i) => cells[c][i]) };
    }),
  };
}
