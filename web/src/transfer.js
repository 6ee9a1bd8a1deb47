// The ArrayBuffers behind every typed array in a (nested) value: the transfer list for
// postMessage, so results and opted-in inputs move between threads instead of being copied.
export function transferables(value, out = new Set()) {
  if (ArrayBuffer.isView(value)) out.add(value.buffer);
  else if (Array.isArray(value)) for (const v of value) transferables(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) transferables(v, out);
  return out;
}
