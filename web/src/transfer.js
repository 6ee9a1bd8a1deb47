// The ArrayBuffers behind every typed array in a (nested) value: the transfer list for
// postMessage, so results and opted-in inputs move between threads instead of being copied.
// Walked with a list, not recursion, and each object once: a window nested 200,000 deep or
// holding a cycle must reach postMessage, whose clone then decides (it accepts cycles). A
// SharedArrayBuffer cannot be moved (postMessage refuses it in a transfer list) and needs no copy:
// structured clone shares it with the worker, so it is left out and still not copied. A getter
// that throws throws here, as it would in postMessage.
export function transferables(value, out = new Set()) {
  const seen = new Set(), todo = [value];
  while (todo.length) {
    const v = todo.pop();
    if (!v || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (ArrayBuffer.isView(v)) {
      if (!(typeof SharedArrayBuffer === 'function' && v.buffer instanceof SharedArrayBuffer)) out.add(v.buffer);
    } else {
      for (const x of Array.isArray(v) ? v : Object.values(v)) if (x && typeof x === 'object') todo.push(x);
    }
  }
  return out;
}
