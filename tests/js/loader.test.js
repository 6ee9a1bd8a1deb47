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
