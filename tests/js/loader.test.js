// The loader's failure modes: each is a SensorformerError whose message names the source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { hasWasmSimd, SensorformerError } from '../../web/src/index.js';

// A fresh copy of the loader per case: the real one memoizes the first successful module.
let n = 0;
const freshLoader = () => import(`../../web/src/loader.js?case=${n++}`);

async function loadError(options) {
  const { loadWasm } = await freshLoader();
  try {
    await loadWasm(options);
  } catch (e) {
    assert.ok(e instanceof SensorformerError || e.name === 'SensorformerError', String(e));
    return e;
  }
  assert.fail('loading succeeded');
}

test('Node 20 has WebAssembly SIMD and the probe module detects it', () => {
  assert.equal(hasWasmSimd(), true);
});

test('HTML served instead of wasm names the URL and says what it got', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-'));
  const file = join(dir, 'sensorformer-core.wasm');
  writeFileSync(file, '<!DOCTYPE html><html><body>Not found</body></html>');
  const e = await loadError({ wasmUrl: pathToFileURL(file) });
  assert.equal(e.code, 'WASM_NOT_WASM');
  assert.match(e.message, /sensorformer-core\.wasm/);
  assert.match(e.message, /00 61 73 6d/);
  assert.match(e.message, /HTML page/);
});

test('a missing file names the URL', async () => {
  const e = await loadError({ wasmUrl: pathToFileURL('/nonexistent/dir/core.wasm') });
  assert.equal(e.code, 'WASM_FETCH_FAILED');
  assert.match(e.message, /nonexistent\/dir\/core\.wasm/);
});

test('raw bytes that are wasm but not ours fail to instantiate with a typed error', async () => {
  const empty = Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0);  // valid empty module: no exports
  const e = await loadError({ wasmBinary: empty });
  assert.equal(e.code, 'WASM_INSTANTIATE_FAILED');
  assert.match(e.message, /wasmBinary option/);
});

test('wasmBinary override loads the real module', async () => {
  const { readFileSync } = await import('node:fs');
  const bytes = readFileSync(new URL('../../web/dist/sensorformer-core.wasm', import.meta.url));
  const { loadWasm } = await freshLoader();
  const wasm = await loadWasm({ wasmBinary: bytes });
  assert.equal(wasm.simdArch(), 'sse4.1');
});

test('an engine without WebAssembly SIMD gets an error that says so', async () => {
  const validate = WebAssembly.validate;
  // What an engine without SIMD answers for our probe module (and only for it).
  WebAssembly.validate = (bytes) => (bytes.length < 64 ? false : validate(bytes));
  try {
    const e = await loadError();
    assert.equal(e.code, 'WASM_NO_SIMD');
    assert.match(e.message, /SIMD/);
  } finally {
    WebAssembly.validate = validate;
  }
});

test('over HTTP: an HTML answer and a 404 both name the URL', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    if (req.url.startsWith('/spa/')) {  // a single-page-app server answering every path with index.html
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><html><head><title>app</title></head></html>');
    } else {
      res.writeHead(404);
      res.end('not found');
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    let e = await loadError({ wasmUrl: `${base}/spa/assets/sensorformer-core.wasm` });
    assert.equal(e.code, 'WASM_NOT_WASM');
    assert.ok(e.message.includes(`${base}/spa/assets/sensorformer-core.wasm`), e.message);
    assert.match(e.message, /HTML page/);
    e = await loadError({ wasmUrl: `${base}/missing.wasm` });
    assert.equal(e.code, 'WASM_FETCH_FAILED');
    assert.ok(e.message.includes(`${base}/missing.wasm`) && /404/.test(e.message), e.message);
  } finally {
    server.close();
  }
});

test('over HTTP with application/wasm the module is compiled while it streams; other answers still load or fail as before', async () => {
  // compileStreaming compiles during the download, and it is what Chrome's code cache keeps
  // (web/src/loader.js, compileFromUrl). The spy checks that the loader really takes that path.
  const { createServer } = await import('node:http');
  const { readFileSync } = await import('node:fs');
  const wasmBytes = readFileSync(new URL('../../web/dist/sensorformer-core.wasm', import.meta.url));
  const html = '<!doctype html><html><head><title>app</title></head></html>';
  const server = createServer((req, res) => {
    const answers = {
      '/wasm/core.wasm': ['application/wasm', wasmBytes],
      '/octet/core.wasm': ['application/octet-stream', wasmBytes],  // a server without the wasm MIME type
      '/liar/core.wasm': ['application/wasm', html],  // HTML labelled as wasm: streaming fails
      '/cut/core.wasm': ['application/wasm', wasmBytes.subarray(0, 4096)],  // a truncated download
    };
    const [type, body] = answers[req.url] ?? [];
    if (!type) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': type });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const compileStreaming = WebAssembly.compileStreaming;
  let streamed = 0;
  WebAssembly.compileStreaming = (...a) => { streamed++; return compileStreaming(...a); };
  try {
    let { loadWasm } = await freshLoader();
    let wasm = await loadWasm({ wasmUrl: `${base}/wasm/core.wasm` });
    assert.equal(wasm.simdArch(), 'sse4.1');
    assert.equal(streamed, 1, 'application/wasm: compiled with compileStreaming');

    ({ loadWasm } = await freshLoader());
    wasm = await loadWasm({ wasmUrl: `${base}/octet/core.wasm` });
    assert.equal(wasm.simdArch(), 'sse4.1');
    assert.equal(streamed, 1, 'another MIME type: compiled from the bytes, not streamed');

    const e = await loadError({ wasmUrl: `${base}/liar/core.wasm` });
    assert.equal(streamed, 2, 'application/wasm: streaming was tried');
    assert.equal(e.code, 'WASM_NOT_WASM', e.message);
    assert.match(e.message, /HTML page/);

    const cut = await loadError({ wasmUrl: `${base}/cut/core.wasm` });
    assert.equal(streamed, 3);
    assert.equal(cut.code, 'WASM_INSTANTIATE_FAILED', cut.message);
    assert.ok(cut.message.includes(`${base}/cut/core.wasm`), cut.message);
  } finally {
    WebAssembly.compileStreaming = compileStreaming;
    server.close();
  }
});

// --- loading a model like other runtimes (issue 11, item 4) --------------------------------------

const { readFileSync: readFile } = await import('node:fs');
const { gzipSync } = await import('node:zlib');
const { createServer } = await import('node:http');
const { loadCore, loadModel, loadModelInWorker } = await import('../../web/src/index.js');
const { fixturePath } = await import('./safetensors.js');

const MODEL_PATH = fixturePath('model/factorized.safetensors');
const MODEL = readFile(MODEL_PATH);
const { windows } = JSON.parse(readFile(fixturePath('model/windows.json'), 'utf8'));
const reference = await loadModel(MODEL, { warmup: false });
// Every test here waits for events with this deadline instead of sleeping (node:test's timeout).
const DEADLINE = { timeout: 30_000 };

/**
 * A real HTTP server on port 0. `route(req, res)` answers; `requests` lists what it received.
 * Close it with server.close() (connections still open are destroyed).
 */
async function serve(route) {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push({ url: req.url, headers: req.headers });
    route(req, res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => { server.closeAllConnections(); server.close(); },
  };
}

// A promise and its resolve function, to let the server wait for the client (no sleep).
function signalled() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

const sameModel = (m) => assert.deepEqual(m.forward(windows[0]).pooled, reference.forward(windows[0]).pooled);

test('onProgress over HTTP: one call per chunk with Content-Length as total, the last at 100 %', DEADLINE, async () => {
  for (const load of [loadModel, loadModelInWorker]) {
    // The server sends the second half only once the client has reported the first: at least two
    // calls, the first partial, whatever the network stack coalesces.
    const firstSeen = signalled();
    const server = await serve(async (req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': MODEL.length });
      res.write(MODEL.subarray(0, 1000));
      await firstSeen.promise;
      res.end(MODEL.subarray(1000));
    });
    const calls = [];
    try {
      const m = await load(`${server.base}/model.safetensors`, { warmup: false, onProgress: (p) => { calls.push({ ...p }); firstSeen.resolve(); } });
      assert.ok(calls.length >= 2, JSON.stringify(calls));
      assert.ok(calls[0].loaded >= 1000 && calls[0].loaded < MODEL.length, JSON.stringify(calls[0]));
      for (let i = 0; i < calls.length; i++) {
        assert.equal(calls[i].total, MODEL.length, `${load.name} call ${i}`);
        if (i) assert.ok(calls[i].loaded > calls[i - 1].loaded, 'loaded grows');
      }
      assert.deepEqual(calls.at(-1), { loaded: MODEL.length, total: MODEL.length });
      if (load === loadModel) sameModel(m);
      else assert.deepEqual((await m.forward(windows[0])).pooled, reference.forward(windows[0]).pooled);
      await m.dispose();
    } finally {
      server.close();
    }
  }
});

test('onProgress without a usable Content-Length (chunked, gzip): total null until the last call', DEADLINE, async () => {
  const gz = gzipSync(MODEL);
  const server = await serve((req, res) => {
    if (req.url === '/chunked') {
      res.writeHead(200);  // no Content-Length: Node sends Transfer-Encoding: chunked
      res.write(MODEL.subarray(0, 500));
      res.end(MODEL.subarray(500));
    } else {
      // Content-Length counts the compressed bytes; the body decodes to more.
      res.writeHead(200, { 'Content-Encoding': 'gzip', 'Content-Length': gz.length });
      res.end(gz);
    }
  });
  try {
    for (const path of ['/chunked', '/gzip']) {
      const calls = [];
      const m = await loadModel(`${server.base}${path}`, { warmup: false, onProgress: (p) => calls.push({ ...p }) });
      assert.ok(calls.slice(0, -1).every((c) => c.total === null), `${path}: ${JSON.stringify(calls)}`);
      assert.deepEqual(calls.at(-1), { loaded: MODEL.length, total: MODEL.length }, path);
      sameModel(m);
      m.dispose();
    }
  } finally {
    server.close();
  }
});

test('a model source with no end (/dev/zero, a server that never stops) is RESOURCE_EXHAUSTED after a bounded read', { timeout: 120_000 }, async () => {
  const { MAX_MODEL_FILE_BYTES } = await import('../../web/src/source.js');
  // docs/model.md "Limits": 1 GiB of float32 parameters, a 16 MiB header and its 8-byte length.
  // Each source below is read up to that bound (about 3 s each on a busy 2-core machine).
  assert.equal(MAX_MODEL_FILE_BYTES, 2 ** 30 + 2 ** 24 + 8);
  const tooLarge = (source) => (e) => e instanceof SensorformerError && e.code === 'RESOURCE_EXHAUSTED' &&
    e.message.startsWith(`could not read the model from ${source}: `) && e.message.includes('more than 1,090,519,048 bytes, the largest model file sensorformer reads');
  await assert.rejects(loadModel('/dev/zero', { warmup: false }), tooLarge('/dev/zero'));
  await assert.rejects(loadModelInWorker('/dev/zero', { warmup: false }), tooLarge('/dev/zero'));
  const zeros = Buffer.alloc(1 << 20);
  const server = await serve((req, res) => {
    if (req.url === '/announced') {
      // A Content-Length past the bound: refused before the body is read (it never ends here).
      res.writeHead(200, { 'Content-Length': String(4 * 2 ** 30) });
      res.write(zeros.subarray(0, 100));
      return;
    }
    // Chunked and endless: zeros until the client goes away.
    res.writeHead(200);
    const more = () => { while (!res.destroyed && res.write(zeros)); };
    res.on('drain', more);
    more();
  });
  try {
    await assert.rejects(loadModel(`${server.base}/announced`, { warmup: false }), (e) => tooLarge(`${server.base}/announced`)(e) && /it announces 4,294,967,296 bytes/.test(e.message));
    await assert.rejects(loadModel(`${server.base}/announced`, { warmup: false, onProgress: () => {} }), tooLarge(`${server.base}/announced`));
    await assert.rejects(loadModel(`${server.base}/endless`, { warmup: false }), tooLarge(`${server.base}/endless`));
  } finally {
    server.close();
  }
});

test('onProgress for a file path reports the file size; for bytes it is called once', DEADLINE, async () => {
  const calls = [];
  const m = await loadModel(MODEL_PATH, { warmup: false, onProgress: (p) => calls.push({ ...p }) });
  assert.ok(calls.every((c) => c.total === MODEL.length));
  assert.deepEqual(calls.at(-1), { loaded: MODEL.length, total: MODEL.length });
  m.dispose();
  for (const bytes of [new Uint8Array(MODEL), new Uint8Array(MODEL).buffer]) {
    const once = [];
    (await loadModel(bytes, { warmup: false, onProgress: (p) => once.push({ ...p }) })).dispose();
    assert.deepEqual(once, [{ loaded: MODEL.length, total: MODEL.length }]);
  }
});

test('an error thrown by onProgress stops the load and comes back as it is', DEADLINE, async () => {
  const mine = new Error('progress bar broke');
  for (const source of [MODEL_PATH, new Uint8Array(MODEL)])
    await assert.rejects(loadModel(source, { onProgress: () => { throw mine; } }), (e) => e === mine);
});

test('signal: aborting mid-download rejects with the signal\'s reason and closes the connection', DEADLINE, async () => {
  for (const load of [loadModel, loadModelInWorker]) {
    const closed = signalled();
    const server = await serve((req, res) => {
      res.writeHead(200, { 'Content-Length': MODEL.length });
      res.write(MODEL.subarray(0, 1000));  // and never the rest: only the abort ends this load
      res.on('close', closed.resolve);
    });
    try {
      const controller = new AbortController();
      const pending = load(`${server.base}/model.safetensors`, { signal: controller.signal, onProgress: () => controller.abort() });
      await assert.rejects(pending, (e) => e === controller.signal.reason && e.name === 'AbortError', load.name);
      await closed.promise;  // the server saw the client go
    } finally {
      server.close();
    }
  }
});

test('signal: a reason of one\'s own, an already aborted signal, an abort after the download', DEADLINE, async () => {
  const server = await serve((req, res) => res.end(MODEL));
  try {
    const url = `${server.base}/model.safetensors`;
    const mine = new Error('user left the page');
    const controller = new AbortController();
    controller.abort(mine);
    for (const load of [loadModel, loadModelInWorker])
      for (const source of [url, MODEL_PATH, new Uint8Array(MODEL)])
        await assert.rejects(load(source, { signal: controller.signal }), (e) => e === mine, `${load.name} ${source}`);
    assert.equal(server.requests.length, 0, 'nothing was fetched');
    // Aborted in the last progress call: the bytes are all here, the load still stops.
    for (const load of [loadModel, loadModelInWorker]) {
      for (const source of [url, MODEL_PATH]) {
        const late = new AbortController();
        await assert.rejects(load(source, { signal: late.signal, onProgress: (p) => p.loaded === p.total && late.abort() }), (e) => e === late.signal.reason && e.name === 'AbortError', `${load.name} ${source}`);
      }
    }
    // AbortSignal.timeout(): the same path, its reason a TimeoutError. An unaborted signal: no effect.
    const m = await loadModel(url, { warmup: false, signal: new AbortController().signal });
    sameModel(m);
    m.dispose();
  } finally {
    server.close();
  }
});

test('fetchOptions reach fetch: the server gets the headers; credentials and other fields are passed on', DEADLINE, async () => {
  const server = await serve((req, res) => {
    if (req.headers.authorization !== 'Bearer abc') {
      res.writeHead(401, 'Unauthorized');
      res.end();
      return;
    }
    res.end(MODEL);
  });
  const realFetch = globalThis.fetch;
  const inits = [];
  // Node's fetch has no cookie jar, so `credentials` changes nothing on the wire here: the spy
  // checks that it reaches fetch as given (what a browser acts on).
  globalThis.fetch = (url, init) => { inits.push(init); return realFetch(url, init); };
  try {
    const url = `${server.base}/private/model.safetensors`;
    const fetchOptions = { headers: { Authorization: 'Bearer abc' }, credentials: 'include', cache: 'no-store' };
    for (const load of [loadModel, loadModelInWorker]) {
      const m = await load(url, { warmup: false, fetchOptions });
      await m.dispose();
      assert.equal(server.requests.at(-1).headers.authorization, 'Bearer abc');
      assert.equal(inits.at(-1).credentials, 'include');
      assert.equal(inits.at(-1).cache, 'no-store');
      await assert.rejects(load(url, { warmup: false }), (e) => e.code === 'IO' && e.message.includes(url) && /HTTP 401/.test(e.message));
    }
    assert.deepEqual(fetchOptions, { headers: { Authorization: 'Bearer abc' }, credentials: 'include', cache: 'no-store' }, 'the caller\'s object is not changed');
  } finally {
    globalThis.fetch = realFetch;
    server.close();
  }
});

test('loadCore, loadModel and loadModelInWorker check their options in one place: same codes, same messages', DEADLINE, async () => {
  const method = { loadCore: 'loadCore(options)', loadModel: 'loadModel(source, options)', loadModelInWorker: 'loadModelInWorker(source, options)' };
  const calls = { loadCore: (o) => loadCore(o), loadModel: (o) => loadModel(MODEL, o), loadModelInWorker: (o) => loadModelInWorker(MODEL, o) };
  // [options, which functions refuse them, the message after "<method>: "]
  const cases = [
    [{ wasmURL: 'x.wasm' }, ['loadCore', 'loadModel', 'loadModelInWorker'], /^unknown option "wasmURL" \(accepted: wasmUrl, wasmBinary/],
    [{ warmup: false }, ['loadCore'], /^unknown option "warmup" \(accepted: wasmUrl, wasmBinary, numThreads\); warmup is an option of loadModel\(source, options\)$/],
    [{ workers: 2 }, ['loadCore', 'loadModel'], /^unknown option "workers" .*; workers is an option of loadModelInWorker\(source, options\)$/],
    [{ wasmUrl: 42 }, ['loadCore', 'loadModel', 'loadModelInWorker'], /^options\.wasmUrl must be a string or a URL, got number$/],
    [{ wasmBinary: [0, 97, 115, 109] }, ['loadCore', 'loadModel', 'loadModelInWorker'], /^options\.wasmBinary must be an ArrayBuffer or a Uint8Array, got object$/],
    [{ wasmUrl: 'a.wasm', wasmBinary: new Uint8Array(8) }, ['loadCore', 'loadModel', 'loadModelInWorker'], /^give options\.wasmUrl or options\.wasmBinary, not both$/],
    [{ warmup: 'no' }, ['loadModel', 'loadModelInWorker'], /^options\.warmup must be true or false, got string$/],
    [{ onProgress: 'log' }, ['loadModel', 'loadModelInWorker'], /^options\.onProgress must be a function/],
    [{ signal: { aborted: false } }, ['loadModel', 'loadModelInWorker'], /^options\.signal must be an AbortSignal, got object$/],
    [{ fetchOptions: 'include' }, ['loadModel', 'loadModelInWorker'], /^options\.fetchOptions must be an object/],
    [{ fetchOptions: { signal: new AbortController().signal } }, ['loadModel', 'loadModelInWorker'], /^pass the AbortSignal as options\.signal/],
    ['fast', ['loadCore', 'loadModel', 'loadModelInWorker'], /^options must be an object with the keys wasmUrl, wasmBinary.*, got string$/],
    [[], ['loadCore', 'loadModel', 'loadModelInWorker'], /^options must be an object with the keys .*, got an array$/],
  ];
  for (const [options, refused, message] of cases) {
    for (const fn of refused) {
      await assert.rejects(calls[fn](options), (e) => {
        assert.ok(e instanceof SensorformerError, `${fn}: ${e}`);
        assert.equal(e.code, 'INVALID_ARGUMENT', `${fn} ${e.message}`);
        assert.ok(e.message.startsWith(`${method[fn]}: `), e.message);
        assert.match(e.message.slice(method[fn].length + 2), message, fn);
        return true;
      });
    }
  }
  // null / undefined: the defaults, everywhere.
  for (const options of [null, undefined]) {
    await loadCore(options);
    (await loadModel(MODEL, options)).dispose();
  }
});

test('a second wasmUrl or wasmBinary after the module is loaded is honoured: its own instance', DEADLINE, async () => {
  const { loadWasm } = await freshLoader();
  const wasmBytes = readFile(new URL('../../web/dist/sensorformer-core.wasm', import.meta.url));
  // numThreads 1: the single-thread build, the file copied below (tests/js/threads.test.js: the threaded one).
  const first = await loadWasm({ numThreads: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'sf-'));
  writeFileSync(join(dir, 'copy.wasm'), wasmBytes);
  const copy = await loadWasm({ wasmUrl: pathToFileURL(join(dir, 'copy.wasm')) });
  assert.notEqual(copy, first, 'another file: another instance');
  assert.equal(copy.simdArch(), 'sse4.1');
  assert.equal(await loadWasm({ wasmUrl: pathToFileURL(join(dir, 'copy.wasm')).href }), copy, 'the same URL again: the same instance');
  assert.equal(await loadWasm({ wasmUrl: new URL('../../web/dist/sensorformer-core.wasm', import.meta.url), numThreads: 1 }), first, 'the default file named: the default instance');
  // Before: ignored, so a wrong path after the first load "worked" with the old module.
  const e = await loadError({ wasmUrl: pathToFileURL(join(dir, 'missing.wasm')) }).catch((x) => x);
  assert.equal(e.code, 'WASM_FETCH_FAILED');
  const missing = await loadWasm({ wasmUrl: pathToFileURL(join(dir, 'missing.wasm')) }).then(() => null, (x) => x);
  assert.equal(missing?.code, 'WASM_FETCH_FAILED', 'the same loader, after a successful load, still reports the missing file');
  // wasmBinary: equal bytes share an instance, whichever object holds them.
  const fromBytes = await loadWasm({ wasmBinary: new Uint8Array(wasmBytes) });
  assert.equal(await loadWasm({ wasmBinary: new Uint8Array(wasmBytes).buffer }), fromBytes);
  assert.notEqual(fromBytes, first);
  const junk = await loadWasm({ wasmBinary: new Uint8Array(8) }).then(() => null, (x) => x);
  assert.equal(junk?.code, 'WASM_NOT_WASM', 'other bytes after a load are checked, not ignored');
  // Through the package: a model in the second instance computes what one in the first does.
  const m = await loadModel(MODEL, { warmup: false, wasmUrl: pathToFileURL(join(dir, 'copy.wasm')) });
  sameModel(m);
  m.dispose();
});

test('a file that is not safetensors: "not a safetensors file", what it looks like, and its URL or path', DEADLINE, async () => {
  const html = '<!doctype html><html><head><title>app</title></head><body><div id="root"></div></body></html>';
  const server = await serve((req, res) => {
    // A dev server answering every unknown path with its index page, status 200.
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(html);
  });
  const dir = mkdtempSync(join(tmpdir(), 'sf-'));
  const json = join(dir, 'config.json');
  writeFileSync(json, JSON.stringify({ format: 'sensorformer-1', d_model: 16 }));
  const random = join(dir, 'random.bin');
  writeFileSync(random, Uint8Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24));
  try {
    const url = `${server.base}/models/demo.safetensors`;
    const cases = [
      [url, /HTML page/], [json, /JSON document/], [random, /header length of \d+, more than the file's 4096 bytes/],
    ];
    for (const load of [loadModel, loadModelInWorker]) {
      for (const [source, looks] of cases) {
        await assert.rejects(load(source), (e) => {
          assert.equal(e.code, 'BAD_FORMAT', e.message);
          assert.ok(e.message.startsWith(`${source}: safetensors: not a safetensors file: `), e.message);
          assert.match(e.message, looks);
          assert.doesNotMatch(e.message, /7378429055409851003|exceeds/);
          return true;
        }, `${load.name} ${source}`);
      }
    }
    // Bytes have no name: the message alone.
    await assert.rejects(loadModel(new TextEncoder().encode(html)), (e) => e.code === 'BAD_FORMAT' && e.message.startsWith('safetensors: not a safetensors file: it looks like an HTML page'));
  } finally {
    server.close();
  }
});

test('a download cut short (Content-Length announced, connection dropped) is IO naming the URL, with or without onProgress', DEADLINE, async () => {
  const server = await serve((req, res) => {
    res.writeHead(200, { 'Content-Length': MODEL.length });
    res.write(MODEL.subarray(0, 2000), () => res.destroy());
  });
  try {
    const url = `${server.base}/model.safetensors`;
    for (const options of [{}, { onProgress: () => {} }]) {
      await assert.rejects(loadModel(url, options), (e) => {
        assert.ok(e instanceof SensorformerError, String(e));
        assert.equal(e.code, 'IO', e.message);
        assert.ok(e.message.startsWith(`could not read the model from ${url}: `), e.message);
        return true;
      }, JSON.stringify(Object.keys(options)));
    }
  } finally {
    server.close();
  }
});
