// Reading a model source (loadModel / loadModelInWorker): a URL, a file path in Node, or bytes,
// with the loader options other runtimes have taught users to expect: onProgress, an AbortSignal
// and fetch's own init (headers, credentials).
//
// Decisions (README, "The package"; web/index.d.ts, LoadOptions):
// - onProgress({ loaded, total }) is called after every chunk that arrives, and last with
//   loaded === total (the whole size), so a progress bar always reaches 100 %. `total` is the
//   Content-Length of an uncompressed answer (a compressed body is longer than its
//   Content-Length once decoded), the file's size for a path, and null while unknown; if more
//   bytes arrive than `total` announced, `total` is null until the last call. Bytes (ArrayBuffer,
//   Uint8Array) give one call.
// - signal: an aborted signal stops the download (it is handed to fetch, and checked between a
//   file's chunks) and any later step of the load, and the load rejects with signal.reason, as
//   fetch does: by default a DOMException named "AbortError"; AbortSignal.timeout() gives a
//   "TimeoutError". It is not turned into a SensorformerError: a caller that aborted expects its
//   own reason back, and `e.name === 'AbortError'` is the web platform's test for it.
// - fetchOptions: merged into fetch(url, init) for URLs other than file:; a path or bytes have
//   nothing to fetch, so it does not apply there. The .wasm is fetched without it.
// - An error thrown by onProgress stops the load and is passed through as it is.
import { SensorformerError } from './errors.js';
import { isNode } from './env.js';

// Chunks read from a file: small enough for a progress bar to move on a 100 MB model, large
// enough that the calls cost nothing next to the read.
const FILE_CHUNK = 1 << 20;

/**
 * The most bytes read from a model path or URL (docs/model.md "Limits"): the parameter budget as
 * float32 (1 GiB, the core's kMaxModelBytes) plus the largest header (16 MiB) and its 8-byte
 * length. No larger file loads (as F64 its parameters would not fit beside their float32 copy in
 * the 2 GiB of WebAssembly memory), and a file with no end (/dev/zero, a pipe) or a server that
 * never stops sending must not be read until memory runs out.
 */
export const MAX_MODEL_FILE_BYTES = 2 ** 30 + 2 ** 24 + 8;

const tooLarge = (what) => new SensorformerError('RESOURCE_EXHAUSTED',
  `${what} more than ${MAX_MODEL_FILE_BYTES.toLocaleString('en-US')} bytes, the largest model file sensorformer reads (1 GiB of float32 parameters and a 16 MiB header)`);

class CallbackError {
  constructor(error) {
    this.error = error;
  }
}

// Collects the chunks of a body whose size may be known (then one buffer, filled in place) or not.
class Collector {
  #total;
  #onProgress;
  #buffer = null;
  #chunks = [];
  loaded = 0;

  constructor(total, onProgress) {
    this.#total = total;
    this.#onProgress = onProgress;
    if (total !== null && total > 0) this.#buffer = new Uint8Array(total);
  }

  #report(loaded, total) {
    if (!this.#onProgress) return;
    try {
      this.#onProgress({ loaded, total });
    } catch (e) {
      throw new CallbackError(e);
    }
  }

  push(chunk) {
    if (this.loaded + chunk.length > MAX_MODEL_FILE_BYTES) throw tooLarge('it holds');
    if (this.#buffer && this.loaded + chunk.length <= this.#buffer.length) {
      this.#buffer.set(chunk, this.loaded);
    } else {
      if (this.#buffer) this.#chunks.push(this.#buffer.subarray(0, this.loaded));  // longer than announced
      this.#buffer = null;
      this.#total = null;
      this.#chunks.push(chunk);
    }
    this.loaded += chunk.length;
    this.#report(this.loaded, this.#total);
  }

  // announced: the size the answer or file announced at the start (null if none). A body that
  // ends before it is cut short (a dropped connection, a file truncated while read), not a model.
  finish(announced = null) {
    if (announced !== null && this.loaded < announced)
      throw new Error(`the body ended after ${this.loaded} of the ${announced} bytes announced`);
    if (this.#total !== this.loaded) this.#report(this.loaded, this.loaded);
    if (this.#buffer) return this.loaded === this.#buffer.length ? this.#buffer : this.#buffer.slice(0, this.loaded);
    const out = new Uint8Array(this.loaded);
    let at = 0;
    for (const c of this.#chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

async function fetchBytes(url, { onProgress, signal, fetchOptions }) {
  const response = await fetch(url, { ...fetchOptions, ...(signal ? { signal } : {}) });
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  const encoding = (response.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  const length = Number(response.headers.get('content-length') ?? NaN);
  const total = encoding === 'identity' && Number.isSafeInteger(length) && length >= 0 ? length : null;
  if (total > MAX_MODEL_FILE_BYTES) {
    response.body?.cancel().catch(() => {});
    throw tooLarge(`it announces ${total.toLocaleString('en-US')} bytes,`);
  }
  // Without onProgress, in a browser, or with an announced size: arrayBuffer(), which needs no
  // chunk loop. (Read chunk by chunk, Chromium shows some completed requests as failed,
  // net::ERR_ABORTED, in the network panel when the page is busy right after, as the warm-up keeps
  // it: seen in 3 of 12 loads with onProgress, and on the chunked answers of the package test's
  // server. The bytes are all there, and the load succeeds.) A size announced over the limit is
  // refused above; in a browser an answer of unknown length is checked once read (a server that
  // never ends its answer is bounded there only with onProgress). In Node (the CLI, a server) an
  // answer of unknown length is read chunk by chunk, so that MAX_MODEL_FILE_BYTES bounds it.
  if (!onProgress && (total !== null || !response.body || !isNode)) {
    const bytes = new Uint8Array(await abortable(response.arrayBuffer(), signal));
    if (bytes.length > MAX_MODEL_FILE_BYTES) throw tooLarge('it holds');
    return bytes;
  }
  if (!response.body) {  // an engine without response streams: one chunk
    const collector = new Collector(null, onProgress);
    collector.push(new Uint8Array(await abortable(response.arrayBuffer(), signal)));
    return collector.finish();
  }
  const collector = new Collector(total, onProgress);
  const reader = response.body.getReader();
  try {
    for (;;) {
      // The signal is watched here too, not only by fetch: Node 20's fetch never settles a read()
      // that follows an abort made after the last bytes arrived (seen in tests/js/loader.test.js).
      const { done, value } = await abortable(reader.read(), signal);
      if (done) break;
      collector.push(value);
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  }
  checkSignal(signal);
  return collector.finish(total);
}

async function readFileBytes(path, { onProgress, signal }) {
  const { open } = await import(/* @vite-ignore */ 'node:fs/promises');
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();  // 0 for a device or a pipe: read to its end, bounded
    if (size > MAX_MODEL_FILE_BYTES) throw tooLarge(`it has ${size.toLocaleString('en-US')} bytes,`);
    const collector = new Collector(size, onProgress);
    for (;;) {
      checkSignal(signal);
      const chunk = new Uint8Array(FILE_CHUNK);
      const { bytesRead } = await file.read(chunk, 0, FILE_CHUNK, null);
      if (bytesRead === 0) break;
      collector.push(chunk.subarray(0, bytesRead));
    }
    checkSignal(signal);
    return collector.finish(size);
  } finally {
    await file.close();
  }
}

/** The name of a source for messages: its URL or path; null for bytes. */
export function sourceName(source) {
  if (source instanceof URL) return source.href;
  return typeof source === 'string' ? source : null;
}

/**
 * The bytes of a model source. options: { onProgress, signal, fetchOptions }, checked already
 * (loader.js, loadOptions). Rejects with IO naming the source, signal.reason once aborted, or
 * what onProgress threw.
 */
export async function readSource(source, options = {}) {
  const { onProgress, signal } = options;
  checkSignal(signal);
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    const bytes = source instanceof Uint8Array ? source : new Uint8Array(source);
    onProgress?.({ loaded: bytes.length, total: bytes.length });
    return bytes;
  }
  if (typeof source === 'string' || source instanceof URL) {
    // A string with a scheme is a URL; otherwise a file path in Node, and in a browser a URL
    // relative to the page (what fetch('model.safetensors') would mean there).
    const absolute = /^[a-z][a-z0-9+.-]*:/i.test(source) && !/^[a-z]:\\/i.test(source);
    try {
      const url = source instanceof URL ? source : absolute ? new URL(source) : isNode ? null : new URL(source, globalThis.location?.href);
      if (url && url.protocol !== 'file:') return await fetchBytes(url, options);
      return await readFileBytes(url ?? source, options);
    } catch (cause) {
      if (cause instanceof CallbackError) throw cause.error;
      if (signal?.aborted) throw signal.reason;
      const code = cause instanceof SensorformerError ? cause.code : 'IO';
      throw new SensorformerError(code, `could not read the model from ${source}: ${cause.message}`, { cause });
    }
  }
  throw new SensorformerError('INVALID_ARGUMENT', 'loadModel(source): source must be a URL, a path (Node), an ArrayBuffer or a Uint8Array');
}

/**
 * Throws signal.reason if the signal has aborted, as AbortSignal's throwIfAborted method does;
 * written out because a call to that method puts "Aborted" and "(" side by side in the bundle, the
 * marker by which tests/package counts copies of Emscripten's glue.
 */
export function checkSignal(signal) {
  if (signal?.aborted) throw signal.reason;
}

/**
 * `promise`, or signal.reason as soon as the signal aborts (the work itself goes on: a WebAssembly
 * instance being created is kept for the next load).
 */
export function abortable(promise, signal) {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => {});  // its own rejection (fetch's AbortError) is not news to anyone
    return Promise.reject(signal.reason);
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
