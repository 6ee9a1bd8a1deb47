// Input checking for windows (docs/model.md "Input"): plain objects in, typed arrays out, so a
// mistake gets a SensorformerError naming the field instead of reaching WebAssembly.
import { SensorformerError } from './errors.js';

const bad = (path, message) => new SensorformerError('INVALID_ARGUMENT', `${path} ${message}`);

function numbers(value, path, Type, { nullIsNaN = false, booleans = false } = {}) {
  if (value instanceof Type) return value;
  if (!(ArrayBuffer.isView(value) || Array.isArray(value))) throw bad(path, 'must be an array or typed array of numbers');
  const out = new Type(value.length);
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    if (v === null && nullIsNaN) out[i] = NaN;  // JSON has no NaN: null marks a missing sample
    else if (typeof v === 'number') out[i] = v;
    else if (booleans && typeof v === 'boolean') out[i] = v ? 1 : 0;
    else throw bad(`${path}[${i}]`, `must be a number${nullIsNaN ? ' or null' : ''}, got ${JSON.stringify(v)}`);
  }
  return out;
}

function stream(s, path) {
  if (!s || typeof s !== 'object') throw bad(path, 'must be an object');
  for (const key of ['modality', 'placement'])
    if (typeof s[key] !== 'string') throw bad(`${path}.${key}`, 'must be a string');
  if (!Number.isInteger(s.sensor)) throw bad(`${path}.sensor`, 'must be an integer sensor id');
  const eventDriven = s.timestamps != null;
  if (eventDriven && s.rateHz != null) throw bad(path, 'gives both rateHz and timestamps: a stream is regular or event-driven');
  if (!eventDriven && (typeof s.rateHz !== 'number' || typeof s.startTime !== 'number'))
    throw bad(path, 'needs rateHz and startTime (a regular stream) or timestamps (an event-driven one)');
  return {
    sensor: s.sensor,
    modality: s.modality,
    placement: s.placement,
    rateHz: eventDriven ? 0 : s.rateHz,
    startTime: eventDriven ? 0 : s.startTime,
    samples: numbers(s.samples, `${path}.samples`, Float32Array, { nullIsNaN: true }),
    timestamps: eventDriven ? numbers(s.timestamps, `${path}.timestamps`, Float64Array) : null,
    present: s.present == null ? null : numbers(s.present, `${path}.present`, Uint8Array, { booleans: true }),
  };
}

export function normalizeWindow(w, path = 'window') {
  if (!w || typeof w !== 'object' || !Array.isArray(w.streams)) throw bad(path, 'must be an object with a streams array');
  if (w.referenceTime != null && typeof w.referenceTime !== 'number') throw bad(`${path}.referenceTime`, 'must be a number (seconds)');
  return { referenceTime: w.referenceTime ?? null, streams: w.streams.map((s, i) => stream(s, `${path}.streams[${i}]`)) };
}
