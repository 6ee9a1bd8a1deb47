// Options objects, checked in one place: forward() / forwardBatch() (model.js), model.stream() and
// session.pooled() (stream.js), and the Worker API on the calling thread (worker-client.js), so
// every path gives the same codes and messages. undefined or null mean the defaults; anything
// else must be a plain object with only the accepted keys (a typo such as { atention: true } is an
// error, not a silent default).
import { SensorformerError } from './errors.js';
import { describe } from './window.js';

export function plainObject(v) {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;  // {} or Object.create(null), any realm
}

// specs: { key: { fallback, valid(v), expected, code?(v) } }; code: the error code for a value
// that is not valid (default INVALID_ARGUMENT; NON_FINITE for an infinite time, as windows do).
/** An object's keys outside `keys` are INVALID_ARGUMENT naming the key and the accepted ones. */
export function rejectUnknownKeys(object, method, keys) {
  for (const key of Object.keys(object))
    if (!keys.includes(key)) throw new SensorformerError('INVALID_ARGUMENT', `${method}: unknown option "${key}" (accepted: ${keys.join(', ')})`);
}

export function checkOptions(options, method, specs) {
  const accepted = Object.keys(specs).join(', ');
  if (options == null) options = {};
  else if (!plainObject(options))
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: options must be an object with the keys ${accepted}, got ${describe(options)}`);
  const out = {};
  rejectUnknownKeys(options, method, Object.keys(specs));
  for (const [key, spec] of Object.entries(specs)) {
    const v = options[key];
    if (v === undefined) out[key] = spec.fallback;
    else if (spec.valid(v)) out[key] = v;
    else throw new SensorformerError(spec.code?.(v) ?? 'INVALID_ARGUMENT', `${method}: ${key} must be ${spec.expected}, got ${describe(v)}`);
  }
  return out;
}
