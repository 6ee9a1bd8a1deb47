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
