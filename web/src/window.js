// Input checking for windows (docs/model.md "Input"): plain objects in, typed arrays out, so a
// mistake gets a SensorformerError naming the field instead of reaching WebAssembly.
//
// Rules (README "Input format"):
// - samples: null (JSON) and NaN are missing samples. +-Infinity, and finite values beyond float32
//   (|x| > FLOAT32_MAX, which would become Infinity in the Float32Array the core reads), are
//   NON_FINITE errors naming the index: a sensor that reports Infinity is broken, not silent.
// - timestamps, startTime, rateHz, referenceTime: finite numbers (NON_FINITE names the field).
// - containers: plain arrays or the numeric typed arrays below. DataView, BigInt64Array,
//   BigUint64Array, strings and other objects are INVALID_ARGUMENT (a DataView has no length, so
//   it used to read as an empty stream).
// - present: each entry 0, 1, true or false (a Uint8Array is checked too: 256 must not wrap to 0).
// - sensor: an integer in [0, 2^31 - 1] (the core's int); the message shows the number as given.
// - a regular stream needs rateHz > 0 and a startTime even with no samples, so that an empty
//   stream is not a place where a typo (rateHz: -1) hides until data arrives.
// - an array longer than MAX_ARRAY_LENGTH is RESOURCE_EXHAUSTED, checked before its typed copy is
//   allocated (a sparse `new Array(2 ** 32 - 1)` would need 32 GiB: the engine's RangeError).
import { SensorformerError } from './errors.js';

export const FLOAT32_MAX = 3.4028234663852886e38;
const SENSOR_MAX = 2 ** 31 - 1;
const NUMERIC_ARRAYS = new Set(['Float32Array', 'Float64Array', 'Int8Array', 'Int16Array', 'Int32Array',
  'Uint8Array', 'Uint16Array', 'Uint32Array', 'Uint8ClampedArray']);
const ACCEPTED = 'an array or one of Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, ' +
  'Uint8Array, Uint16Array, Uint32Array, Uint8ClampedArray';

// Entries in one samples, timestamps or present array: every sample of a stream goes into a patch,
// and a window's patch values are bounded by 1 GiB (2^28 float32, docs/model.md "Limits"), so a
// longer array could only be refused by the core, after a copy of it.
export const MAX_ARRAY_LENGTH = 2 ** 28;

export const fail = (code, path, message) => new SensorformerError(code, `${path} ${message}`);
export const bad = (path, message) => fail('INVALID_ARGUMENT', path, message);

// %TypedArray%.prototype[Symbol.toStringTag] is the real element type of any typed array, from any
// realm (a worker, an iframe, node:vm), and undefined for a DataView; it cannot be spoofed.
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
export const typedArrayName = (v) => (ArrayBuffer.isView(v) ? typedArrayTag.call(v) : undefined);

/** A short, never-throwing description of any value for an error message (BigInt has no JSON). */
export function describe(v) {
  try {
    switch (typeof v) {
      case 'number': return String(v);
      case 'bigint': return `${v}n`;
      case 'string': return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
      case 'function': return 'a function';
      case 'symbol': return v.toString();
      case 'object': {
        if (v === null) return 'null';
        if (Array.isArray(v)) return `an array of ${v.length}`;
        const typed = typedArrayName(v);
        if (typed) return `a ${typed}`;
        const name = Object.prototype.toString.call(v).slice(8, -1);
        return name === 'Object' ? 'an object' : `a ${name}`;
      }
      default: return String(v);  // undefined, boolean
    }
  } catch {
    return 'a value that cannot be shown';
  }
}

export function container(value, path) {
  const typed = typedArrayName(value);
  if (typed ? !NUMERIC_ARRAYS.has(typed) : !Array.isArray(value)) throw bad(path, `must be ${ACCEPTED}, got ${describe(value)}`);
  if (value.length > MAX_ARRAY_LENGTH)
    throw fail('RESOURCE_EXHAUSTED', path, `has ${value.length.toLocaleString('en-US')} entries, more than ${MAX_ARRAY_LENGTH.toLocaleString('en-US')} (2^28): a window's patch values are bounded by 1 GiB`);
  return typed ?? 'Array';
}

// Samples -> Float32Array (NaN = missing).
export function samples(value, path) {
  const type = container(value, path);
  const float = type === 'Float32Array' || type === 'Float64Array';
  if (type !== 'Array') {
    if (float) {
      for (let i = 0; i < value.length; i++) {
        const v = value[i];
        if (!(Math.abs(v) <= FLOAT32_MAX) && !Number.isNaN(v)) throw outOfRange(`${path}[${i}]`, v);
      }
    }
    return type === 'Float32Array' ? value : Float32Array.from(value);
  }
  const out = new Float32Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    if (v === null) out[i] = NaN;  // JSON has no NaN: null marks a missing sample
    else if (typeof v !== 'number') throw bad(`${path}[${i}]`, `must be a number or null (missing), got ${describe(v)}`);
    else if (Math.abs(v) <= FLOAT32_MAX || Number.isNaN(v)) out[i] = v;
    else throw outOfRange(`${path}[${i}]`, v);
  }
  return out;
}

function outOfRange(path, v) {
  return Number.isFinite(v)
    ? fail('NON_FINITE', path, `is ${v}, beyond float32's range (|x| <= ${FLOAT32_MAX}): it would become Infinity`)
    : fail('NON_FINITE', path, `is ${v}: a sample must be finite (null or NaN mark a missing one)`);
}

// Timestamps -> Float64Array: finite and non-decreasing.
export function timestamps(value, path) {
  const type = container(value, path);
  const out = type === 'Float64Array' ? value : new Float64Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    if (typeof v !== 'number') throw bad(`${path}[${i}]`, `must be a number of seconds, got ${describe(v)}`);
    if (!Number.isFinite(v)) throw fail('NON_FINITE', `${path}[${i}]`, `is ${v}: timestamps must be finite seconds`);
    if (i > 0 && v < value[i - 1]) throw bad(`${path}[${i}]`, `(${v}) is earlier than ${path}[${i - 1}] (${value[i - 1]}): timestamps must not decrease`);
    if (out !== value) out[i] = v;
  }
  return out;
}

// present -> Uint8Array of 0/1.
export function present(value, path) {
  const type = container(value, path);
  const out = type === 'Uint8Array' ? value : new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) {
    const v = value[i];
    if (v === 0 || v === false) { if (out !== value) out[i] = 0; }
    else if (v === 1 || v === true) { if (out !== value) out[i] = 1; }
    else throw bad(`${path}[${i}]`, `must be 0, 1, true or false, got ${describe(v)}`);
  }
  return out;
}

export function finiteNumber(value, path, what) {
  if (typeof value !== 'number') throw bad(path, `must be ${what}, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw fail('NON_FINITE', path, `is ${value}: must be ${what}`);
  return value;
}

export function sensor(value, path) {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw bad(path, `must be an integer sensor id, got ${describe(value)}`);
  if (value < 0 || value > SENSOR_MAX) throw fail('INDEX_OUT_OF_RANGE', path, `${value} is not a sensor id (0 to ${SENSOR_MAX})`);
  return value;
}

const STREAM_KEYS = ['sensor', 'modality', 'placement', 'rateHz', 'startTime', 'timestamps', 'samples', 'present'];

function stream(s, path) {
  if (!s || typeof s !== 'object' || Array.isArray(s)) throw bad(path, `must be an object, got ${describe(s)}`);
  for (const key of ['modality', 'placement'])
    if (typeof s[key] !== 'string') throw bad(`${path}.${key}`, `must be a string, got ${describe(s[key])}`);
  // A misspelt key ("presnt", "timestamp") would otherwise be ignored and its data silently lost.
  for (const key of Object.keys(s))
    if (!STREAM_KEYS.includes(key)) throw bad(`${path}.${key}`, `is not a stream field (fields: ${STREAM_KEYS.join(', ')})`);
  const id = sensor(s.sensor, `${path}.sensor`);
  const eventDriven = s.timestamps != null;
  if (eventDriven && (s.rateHz != null || s.startTime != null))
    throw bad(path, `gives both ${s.rateHz != null ? 'rateHz' : 'startTime'} and timestamps: a stream is regular (rateHz, startTime) or event-driven (timestamps)`);
  if (!eventDriven) {
    if (s.rateHz == null || s.startTime == null)
      throw bad(path, 'needs rateHz and startTime (a regular stream) or timestamps (an event-driven one)');
    finiteNumber(s.rateHz, `${path}.rateHz`, 'a rate in Hz > 0');
    if (!(s.rateHz > 0)) throw bad(`${path}.rateHz`, `must be a rate in Hz > 0, got ${s.rateHz}`);
    finiteNumber(s.startTime, `${path}.startTime`, 'a time in seconds');
  }
  return {
    sensor: id,
    modality: s.modality,
    placement: s.placement,
    rateHz: eventDriven ? 0 : s.rateHz,
    startTime: eventDriven ? 0 : s.startTime,
    samples: samples(s.samples, `${path}.samples`),
    timestamps: eventDriven ? timestamps(s.timestamps, `${path}.timestamps`) : null,
    present: s.present == null ? null : present(s.present, `${path}.present`),
  };
}

export function normalizeWindow(w, path = 'window') {
  if (!w || typeof w !== 'object' || !Array.isArray(w.streams)) throw bad(path, `must be an object with a streams array, got ${describe(w)}`);
  const referenceTime = w.referenceTime == null ? null : finiteNumber(w.referenceTime, `${path}.referenceTime`, 'a time in seconds');
  return { referenceTime, streams: Array.from(w.streams, (s, i) => stream(s, `${path}.streams[${i}]`)) };
}

/**
 * The part of a (checked or plain) window with times in [from, to): a regular stream's slots whose
 * time startTime + k / rateHz falls in it (its startTime moved to the first; the samples shared,
 * not copied, when they are a typed array), an event stream's events. Every stream stays, possibly
 * empty. A long recording read as one window (a Polar Sensor Logger export) is cut into the
 * windows a model was trained on this way; a slot exactly at `to` belongs to the next window.
 */
export function sliceWindow(window, from, to) {
  const part = (a, i, j) => (ArrayBuffer.isView(a) ? a.subarray(i, j) : a.slice(i, j));
  const streams = window.streams.map((s) => {
    if (s.timestamps) {
      const t = s.timestamps;
      let i = 0, j = t.length;
      while (i < t.length && t[i] < from) i++;
      j = i;
      while (j < t.length && t[j] < to) j++;
      const out = { ...s, timestamps: part(t, i, j), samples: part(s.samples, i, j) };
      if (s.present) out.present = part(s.present, i, j);
      return out;
    }
    const n = s.samples.length;
    // slot k is in [from, to) when from <= startTime + k / rate < to; 1e-9 of a slot absorbs the
    // rounding of (time - startTime) * rate for a slot that is exactly at a bound
    const first = Math.min(n, Math.max(0, Math.ceil((from - s.startTime) * s.rateHz - 1e-9)));
    const end = Math.min(n, Math.max(first, Math.ceil((to - s.startTime) * s.rateHz - 1e-9)));
    const out = { ...s, startTime: s.startTime + first / s.rateHz, samples: part(s.samples, first, end) };
    if (s.present) out.present = part(s.present, first, end);
    return out;
  });
  return { ...window, streams };
}
