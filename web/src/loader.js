// The one place the WebAssembly module is created, memoized. It fetches or reads the .wasm itself
// and hands the instance to Emscripten's glue (instantiateWasm), so the glue never guesses a path:
// the same code runs in Node >= 20 (bytes read from disk), browsers and bundlers
// (new URL('../dist/…wasm', import.meta.url) is what Vite and others rewrite to the emitted asset).
import createSensorformerCore from '../dist/sensorformer-core.js';
import { SensorformerError } from './errors.js';
import { isNode } from './env.js';

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
const DEFAULT_WASM_URL = new URL('../dist/sensorformer-core.wasm', import.meta.url);
// The threaded twin (Emscripten pthreads, docs/performance.md "Threads"): used when numThreads > 1
// and threads work here. Its glue and its pthread worker script are named by URL, not imported
// statically: a bundler copies them as they are (as it does the .wasm) instead of inlining the
// glue into every bundle, classic-script Workers included, that imports this file; the glue is
// imported only when threads are used, and the pool's Workers import it again by that URL.
const DEFAULT_MT_WASM_URL = new URL('../dist/sensorformer-core-mt.wasm', import.meta.url);
const MT_GLUE_URL = new URL('../dist/sensorformer-core-mt.js', import.meta.url);
const MT_WORKER_URL = new URL('../dist/sensorformer-core-mt.worker.js', import.meta.url);
export const MAX_THREADS = 16;

/**
 * Null when this environment can run the threaded build, else why not. Threads need
 * SharedArrayBuffer: in Node always (the glue also needs process.getBuiltinModule, Node >= 20.16),
 * in browsers only on cross-origin-isolated pages and their Workers (served with
 * Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp).
 */
export function threadsUnavailableReason() {
  if (typeof SharedArrayBuffer !== 'function') return 'this JavaScript engine has no SharedArrayBuffer';
  // A bundler that inlined the pthread worker script (tools/patch-mt-glue.mjs keeps it above
  // Vite's 4 KiB inline limit): a Worker from a data: URL could not import the glue.
  if (MT_WORKER_URL.protocol === 'data:') return "the bundler inlined sensorformer's pthread worker script as a data: URL (raise its asset inline limit)";
  if (isNode) return typeof process.getBuiltinModule === 'function' ? null : `Node ${process.version} has no process.getBuiltinModule (needs >= 20.16)`;
  if (globalThis.crossOriginIsolated !== true)
    return 'the page is not cross-origin isolated (serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)';
  return null;
}

/** numThreads when not given: the machine's cores, at most 4 (more rarely pays at wearable sizes). */
export function defaultThreads() {
  let cores = globalThis.navigator?.hardwareConcurrency;
  if (!cores && isNode && typeof process.getBuiltinModule === 'function') cores = process.getBuiltinModule('os').availableParallelism();
  return Math.max(1, Math.min(4, Math.floor(cores) || 1));
}

// Threads a load will use: numThreads (or the default), 1 where threads cannot run (the
// single-thread build; `core.threads` / `model.threads` say what was granted).
const threadsFor = (numThreads) => (threadsUnavailableReason() ? 1 : numThreads ?? defaultThreads());

// The smallest module using a v128 instruction: (func (result v128) v128.const i32x4 0 0 0 0).
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20, 0, 253, 12, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11,
]);

export function hasWasmSimd() {
  return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
}


async function readWasm(url) {
  try {
    if (url.protocol === 'file:') {
      const { readFile } = await import(/* @vite-ignore */ 'node:fs/promises');
      return new Uint8Array(await readFile(url));
    }
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    return new Uint8Array(await response.arrayBuffer());
  } catch (cause) {
    throw new SensorformerError('WASM_FETCH_FAILED', `could not load sensorformer's WebAssembly from ${url}: ${cause.message}`, { cause });
  }
}

function checkMagic(bytes, source) {
  if (bytes.length >= 4 && WASM_MAGIC.every((b, i) => bytes[i] === b)) return;
  const head = new TextDecoder().decode(bytes.subarray(0, 64)).trim();
  const looksHtml = /^<(!doctype|html)/i.test(head);
  throw new SensorformerError(
    'WASM_NOT_WASM',
    `${source} is not a WebAssembly module (expected bytes 00 61 73 6d, got ${looksHtml ? 'an HTML page' : JSON.stringify(head.slice(0, 16))}). ` +
      'If a bundler or server rewrote the path, pass { wasmUrl } or { wasmBinary } to the loader.',
  );
}

// Compiles the module from a URL. Over HTTP(S), with a server that labels it application/wasm,
// WebAssembly.compileStreaming compiles while the bytes arrive, and Chrome keeps the compiled code
// of a module compiled this way, and only this way, in its code cache for later visits
// (https://v8.dev/blog/wasm-code-caching). Any other case (a file: URL in Node,
// another MIME type, an engine without compileStreaming) and any streaming failure read the bytes
// and go through checkMagic, so a wrong answer gets the same WASM_NOT_WASM / WASM_FETCH_FAILED
// error either way; a failed stream costs a second request, on the error path only.
async function compileFromUrl(url) {
  if (url.protocol !== 'file:' && typeof WebAssembly.compileStreaming === 'function') {
    let response;
    try {
      response = await fetch(url);
    } catch (cause) {
      throw new SensorformerError('WASM_FETCH_FAILED', `could not load sensorformer's WebAssembly from ${url}: ${cause.message}`, { cause });
    }
    if (!response.ok) throw new SensorformerError('WASM_FETCH_FAILED', `could not load sensorformer's WebAssembly from ${url}: HTTP ${response.status} ${response.statusText}`);
    // compileStreaming rejects any other MIME type (https://webassembly.github.io/spec/web-api/#compile-a-potential-webassembly-response).
    if ((response.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase() === 'application/wasm') {
      try {
        return await WebAssembly.compileStreaming(response);
      } catch {
        // below: read again, check, and report what is wrong with the bytes
      }
    } else {
      // Not streamable; the body is already here: use it rather than asking twice.
      let bytes;
      try {
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch (cause) {
        throw new SensorformerError('WASM_FETCH_FAILED', `could not load sensorformer's WebAssembly from ${url}: ${cause.message}`, { cause });
      }
      checkMagic(bytes, String(url));
      return compileBytes(bytes, String(url));
    }
  }
  const bytes = await readWasm(url);
  checkMagic(bytes, String(url));
  return compileBytes(bytes, String(url));
}

const instantiateError = (source, cause) => new SensorformerError('WASM_INSTANTIATE_FAILED', `${source} could not be instantiated as sensorformer's core: ${cause.message}`, { cause });

async function compileBytes(bytes, source) {
  try {
    return await WebAssembly.compile(bytes);
  } catch (cause) {
    throw instantiateError(source, cause);
  }
}

async function instantiate({ url, wasmBinary, threads }) {
  if (!hasWasmSimd()) {
    throw new SensorformerError('WASM_NO_SIMD', 'this JavaScript engine has no WebAssembly SIMD (needs Chrome/Edge >= 91, Firefox >= 89, Safari >= 16.4 or Node >= 16.4)');
  }
  let module, source;
  if (wasmBinary) {
    const bytes = wasmBinary instanceof Uint8Array ? wasmBinary : new Uint8Array(wasmBinary);
    source = 'the wasmBinary option';
    checkMagic(bytes, source);
    module = await compileBytes(bytes, source);
  } else {
    source = String(url);
    module = await compileFromUrl(url);
  }

  // The threaded build imports its (shared) memory; the single-thread one exports its own.
  const threaded = WebAssembly.Module.imports(module).some((i) => i.kind === 'memory');
  if (threaded) {
    const why = threadsUnavailableReason();
    if (why) throw new SensorformerError('WASM_INSTANTIATE_FAILED', `${source} is sensorformer's threaded build, which cannot run here: ${why}`);
  } else {
    threads = 1;
  }
  let factory = createSensorformerCore, pthreads = {};
  if (threaded) {
    try {
      factory = (await import(/* @vite-ignore */ MT_GLUE_URL.href)).default;
    } catch (cause) {
      throw new SensorformerError('WASM_FETCH_FAILED', `could not load the threaded build's glue from ${MT_GLUE_URL}: ${cause.message}`, { cause });
    }
    // Node's Worker takes a path (a string URL would be read as one); browsers take the URL.
    const worker = isNode ? process.getBuiltinModule('url').fileURLToPath(MT_WORKER_URL) : MT_WORKER_URL.href;
    pthreads = { locateFile: (file) => (file.endsWith('.worker.js') ? worker : file), mainScriptUrlOrBlob: MT_GLUE_URL.href };
  }

  let failInstantiate;
  const failed = new Promise((_, reject) => { failInstantiate = reject; });
  const ready = factory({
    // The threaded build's Worker pool: started while the module loads, before `ready` resolves
    // (the caller's thread is the numThreads-th).
    sfPoolSize: threads - 1,
    ...pthreads,
    instantiateWasm(imports, receiveInstance) {
      WebAssembly.instantiate(module, imports).then((instance) => {
        // Another module (an older build, a different package) compiles fine but lacks our exports.
        if (!threaded && !Object.values(instance.exports).some((e) => e instanceof WebAssembly.Memory)) throw new Error('it exports no memory');
        receiveInstance(instance, module);
      }).catch((cause) => failInstantiate(instantiateError(source, cause)));
      return {};  // exports arrive asynchronously through receiveInstance
    },
    print: () => {},
    printErr: (text) => {
      const shown = glueMessage(text);
      if (shown) console.warn(shown);
    },
  });
  const wasm = await Promise.race([ready, failed]);
  if (threaded) {
    const set = wasm.setThreads(threads);
    if (!set.ok) throw new SensorformerError(set.code, set.message);
    // Node: idle pool Workers must not keep the process alive (a forward is synchronous, so none
    // is ever cut short by an exit).
    if (isNode) for (const worker of wasm.sfWorkers()) worker.unref?.();
  }
  return wasm;
}

/**
 * What the Emscripten glue's stderr line becomes on the console: "[sensorformer] text", or null
 * for the one line not passed on. The threaded build's glue warns once, in a page, the first time
 * the main thread waits on a lock or condition ("Blocking on the main thread is very dangerous"):
 * the danger is a wait for something that needs the page's event loop (a thread being started, a
 * call proxied to the main thread). The core's waits are for helpers finishing the current step's
 * parts, the helpers started at load and proxying nothing (core/parallel.cpp), so the warning
 * says nothing true here. Not part of the package's API.
 */
export function glueMessage(text) {
  return /^Blocking on the main thread is very dangerous/.test(text) ? null : `[sensorformer] ${text}`;
}

// The options of loadCore, loadModel and loadModelInWorker, checked in this one place so the three
// give the same codes and messages. null and undefined mean the defaults (as for forward's
// options); anything else must be an object holding only the keys its function accepts: a typo
// ({ wasmURL }) or an option of another function ({ workers } on loadModel) is INVALID_ARGUMENT,
// not a silent default.
const isArrayBuffer = (v) => Object.prototype.toString.call(v) === '[object ArrayBuffer]';
const isFunction = (v) => typeof v === 'function';
const LOAD_OPTIONS = {
  wasmUrl: { in: 'core', valid: (v) => typeof v === 'string' || v instanceof URL, expected: 'a string or a URL' },
  wasmBinary: { in: 'core', valid: (v) => isArrayBuffer(v) || v instanceof Uint8Array, expected: 'an ArrayBuffer or a Uint8Array' },
  warmup: { in: 'model', valid: (v) => typeof v === 'boolean', expected: 'true or false' },
  onProgress: { in: 'model', valid: isFunction, expected: 'a function ({ loaded, total }) => void' },
  // Duck-typed: an AbortSignal from another realm (an iframe, a test's polyfill) works as well.
  signal: { in: 'model', valid: (v) => typeof v?.aborted === 'boolean' && isFunction(v.addEventListener) && isFunction(v.removeEventListener), expected: 'an AbortSignal' },
  fetchOptions: { in: 'model', valid: (v) => v !== null && typeof v === 'object' && !Array.isArray(v), expected: 'an object (the init of fetch(url, init): headers, credentials, ...)' },
  numThreads: { in: 'core', valid: (v) => Number.isInteger(v) && v >= 1 && v <= MAX_THREADS, expected: `an integer from 1 to ${MAX_THREADS}` },
  workers: { in: 'worker', valid: () => true, expected: '' },  // checked by workerCount (worker-client.js)
};
const LOAD_KINDS = { core: ['core'], model: ['core', 'model'], worker: ['core', 'model', 'worker'] };
const LOAD_METHODS = { core: 'loadCore(options)', model: 'loadModel(source, options)', worker: 'loadModelInWorker(source, options)' };

/** Checks the options of loadCore ('core'), loadModel ('model') or loadModelInWorker ('worker'). */
export function loadOptions(options, kind = 'core') {
  const method = LOAD_METHODS[kind];
  const keys = Object.keys(LOAD_OPTIONS).filter((k) => LOAD_KINDS[kind].includes(LOAD_OPTIONS[k].in));
  if (options == null) return {};
  if (typeof options !== 'object' || Array.isArray(options))
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: options must be an object with the keys ${keys.join(', ')}, got ${Array.isArray(options) ? 'an array' : typeof options}`);
  for (const key of Object.keys(options)) {
    if (keys.includes(key)) continue;
    const owner = Object.hasOwn(LOAD_OPTIONS, key) ? LOAD_METHODS[LOAD_OPTIONS[key].in] : null;
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: unknown option "${key}" (accepted: ${keys.join(', ')})${owner ? `; ${key} is an option of ${owner}` : ''}`);
  }
  for (const key of keys) {
    const v = options[key];
    if (v !== undefined && !LOAD_OPTIONS[key].valid(v))
      throw new SensorformerError('INVALID_ARGUMENT', `${method}: options.${key} must be ${LOAD_OPTIONS[key].expected}, got ${v === null ? 'null' : typeof v}`);
  }
  if (options.wasmUrl !== undefined && options.wasmBinary !== undefined)
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: give options.wasmUrl or options.wasmBinary, not both`);
  if (options.fetchOptions && 'signal' in options.fetchOptions)
    throw new SensorformerError('INVALID_ARGUMENT', `${method}: pass the AbortSignal as options.signal (it also stops the load after the download), not in options.fetchOptions`);
  return { ...options };
}

// One module instance per .wasm: the default one, each other wasmUrl (by its resolved URL) and
// each other wasmBinary (by its bytes) get their own, created on first use and kept. A second
// wasmUrl after the first load is honoured, not ignored: a user who names a file expects that
// file to run. Each instance has its own WebAssembly memory (16 MiB at the start), and a Model
// lives in the instance it was loaded into. A failed load is not kept: the next call tries again.
const byUrl = new Map();  // href -> Promise<module>
const byBytes = [];       // { bytes (a copy), pending: Promise<module> }

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// The promise, with forget() called if it rejects (so that the next call tries again).
const forgetOnFailure = (promise, forget) => promise.catch((e) => { forget(); throw e; });

/**
 * Resolves to the Embind module for { wasmUrl } (string or URL) or { wasmBinary } (ArrayBuffer
 * or Uint8Array), or for the default .wasm next to this file (see above for which calls share an
 * instance). Other keys are ignored here: callers check their options with loadOptions first.
 */
export function loadWasm(options) {
  const { wasmUrl, wasmBinary, numThreads } = options ?? {};
  const threads = threadsFor(numThreads);
  if (wasmBinary) {
    const bytes = wasmBinary instanceof Uint8Array ? wasmBinary : new Uint8Array(wasmBinary);
    const known = byBytes.find((e) => e.threads === threads && sameBytes(e.bytes, bytes));
    if (known) return known.pending;
    const entry = { bytes: bytes.slice(), threads };
    entry.pending = forgetOnFailure(instantiate({ wasmBinary: entry.bytes, threads }), () => byBytes.splice(byBytes.indexOf(entry), 1));
    byBytes.push(entry);
    return entry.pending;
  }
  let url;
  try {
    url = wasmUrl ? new URL(wasmUrl, isNode ? `file://${process.cwd()}/` : globalThis.location?.href) : threads > 1 ? DEFAULT_MT_WASM_URL : DEFAULT_WASM_URL;
  } catch (cause) {
    return Promise.reject(new SensorformerError('INVALID_ARGUMENT', `options.wasmUrl ${JSON.stringify(String(wasmUrl))} is not a URL: ${cause.message}`, { cause }));
  }
  // One instance per module and thread count: a pool is sized at load.
  const key = `${url.href} threads=${threads}`;
  if (!byUrl.has(key)) byUrl.set(key, forgetOnFailure(instantiate({ url, threads }), () => byUrl.delete(key)));
  return byUrl.get(key);
}
