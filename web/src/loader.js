// The one place the WebAssembly module is created, memoized. It fetches or reads the .wasm itself
// and hands the instance to Emscripten's glue (instantiateWasm), so the glue never guesses a path:
// the same code runs in Node >= 20 (bytes read from disk), browsers and bundlers
// (new URL('../dist/…wasm', import.meta.url) is what Vite and others rewrite to the emitted asset).
import createSensorformerCore from '../dist/sensorformer-core.js';
import { SensorformerError } from './errors.js';
import { isNode } from './env.js';

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
const DEFAULT_WASM_URL = new URL('../dist/sensorformer-core.wasm', import.meta.url);

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

async function instantiate({ wasmUrl, wasmBinary } = {}) {
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
    const url = wasmUrl ? new URL(wasmUrl, isNode ? `file://${process.cwd()}/` : globalThis.location?.href) : DEFAULT_WASM_URL;
    source = String(url);
    module = await compileFromUrl(url);
  }

  let failInstantiate;
  const failed = new Promise((_, reject) => { failInstantiate = reject; });
  const ready = createSensorformerCore({
    instantiateWasm(imports, receiveInstance) {
      WebAssembly.instantiate(module, imports).then((instance) => {
        // Another module (an older build, a different package) compiles fine but lacks our exports.
        if (!Object.values(instance.exports).some((e) => e instanceof WebAssembly.Memory)) throw new Error('it exports no memory');
        receiveInstance(instance, module);
      }).catch((cause) => failInstantiate(instantiateError(source, cause)));
      return {};  // exports arrive asynchronously through receiveInstance
    },
    print: () => {},
    printErr: (text) => console.warn(`[sensorformer] ${text}`),
  });
  return Promise.race([ready, failed]);
}

let pending = null;

// Resolves to the Embind module. Options: { wasmUrl } (string or URL) or { wasmBinary }
// (ArrayBuffer or Uint8Array). Options only matter on the first call; a failed load is retried.
// The options of loadModel / loadModelInWorker: null and undefined mean the defaults (as for
// forward's options); anything else must be an object.
// { warmup: false } skips loadModel's warm-up (web/src/warmup.js); it must be a boolean.
export function loadOptions(options) {
  if (options != null && typeof options !== 'object')
    throw new SensorformerError('INVALID_ARGUMENT', `options must be an object ({ wasmUrl } or { wasmBinary }), got ${typeof options}`);
  if (options?.warmup !== undefined && typeof options.warmup !== 'boolean')
    throw new SensorformerError('INVALID_ARGUMENT', `options.warmup must be true or false, got ${typeof options.warmup}`);
  return options ?? {};
}

export function loadWasm(options) {
  try {
    options = loadOptions(options);
  } catch (e) {
    return Promise.reject(e);
  }
  if (!pending) pending = instantiate(options).catch((e) => { pending = null; throw e; });
  return pending;
}
