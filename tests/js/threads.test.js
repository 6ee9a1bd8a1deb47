// numThreads (loader.js, docs/performance.md "Threads"): the option's checks, which build a load
// picks, results bit-identical to one thread through the whole JS path (the core splits work only
// at the blocks its kernels already use: tests/cpp/test_parallel.cpp), and a Node process that
// exits on its own with the pool loaded. Tolerance: none (bit equality); any difference is a bug.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadCore, loadModel, threadsUnavailableReason } from '../../web/src/index.js';
import { defaultThreads, glueMessage } from '../../web/src/loader.js';
import { prng } from './prng.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENCODER = path.join(ROOT, 'bench/models/encoder.safetensors');  // d 64, 4 heads, ff 256, 2 layers
const meta = JSON.parse(readFileSync(path.join(ROOT, 'bench/models/models.json'), 'utf8'));

function encoderWindow(tokens, seed) {
  const P = meta.encoder.config.modalities[0].patch_len;
  const u = prng(seed);
  const samples = Float32Array.from({ length: tokens * P }, () => u() * 2 - 1);
  samples[11] = NaN;  // a missing sample inside a present patch
  return { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }] };
}

const bits = (a) => new Uint32Array(a.buffer, a.byteOffset, a.length);
function assertSameBits(a, b, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  const x = bits(a), y = bits(b);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) assert.fail(`${what}[${i}]: ${a[i]} vs ${b[i]}`);
}

test('Node here can run the threaded build (else the rest of this file would test nothing)', () => {
  assert.equal(threadsUnavailableReason(), null);
  assert.ok(defaultThreads() >= 1 && defaultThreads() <= 4);
});

test('numThreads is checked like every load option', async () => {
  for (const bad of [0, 1.5, 17, '2', null, NaN]) {
    await assert.rejects(loadModel(ENCODER, { numThreads: bad }), (e) => e.code === 'INVALID_ARGUMENT' && /numThreads must be an integer from 1 to 16/.test(e.message), String(bad));
    await assert.rejects(loadCore({ numThreads: bad }), (e) => e.code === 'INVALID_ARGUMENT', String(bad));
  }
});

test('the default is the cores (at most 4); numThreads 1 is the single-thread build', async () => {
  const dflt = await loadModel(ENCODER);
  assert.equal(dflt.threads, defaultThreads());
  const one = await loadModel(ENCODER, { numThreads: 1 });
  assert.equal(one.threads, 1);
  const three = await loadCore({ numThreads: 3 });
  assert.equal(three.threads, 3);
  // The single-thread module given as bytes cannot run threads: 1 granted, whatever was asked.
  const single = readFileSync(path.join(ROOT, 'web/dist/sensorformer-core.wasm'));
  assert.equal((await loadCore({ wasmBinary: single, numThreads: 3 })).threads, 1);
  // The threaded module given as bytes: its glue is used and the pool sized as asked.
  const mt = readFileSync(path.join(ROOT, 'web/dist/sensorformer-core-mt.wasm'));
  assert.equal((await loadCore({ wasmBinary: mt, numThreads: 2 })).threads, 2);
  dflt.dispose();
  one.dispose();
});

test('forward: embeddings, pooled, head and attention maps bit-identical for 1, 2 and 3 threads', async () => {
  const models = await Promise.all([1, 2, 3].map((numThreads) => loadModel(ENCODER, { numThreads })));
  assert.deepEqual(models.map((m) => m.threads), [1, 2, 3]);
  for (const tokens of [50, 64, 700, 2048]) {
    const window = encoderWindow(tokens, tokens);
    const [ref, ...others] = models.map((m) => m.forward(window, { attention: tokens <= 700 }));
    assert.equal(ref.embeddings.length, tokens * 64);
    others.forEach((r, i) => {
      const what = `${tokens} tokens, ${i + 2} threads`;
      assertSameBits(ref.embeddings, r.embeddings, `${what}: embeddings`);
      assertSameBits(ref.pooled, r.pooled, `${what}: pooled`);
      assert.equal(ref.attention?.length, r.attention?.length);
      ref.attention?.forEach((m, k) => assertSameBits(m.weights, r.attention[k].weights, `${what}: map ${k}`));
    });
  }
  models.forEach((m) => m.dispose());
});

// The demo model (factorized, d 32) on the bench's demo window (129 tokens: 8 time groups of 1-50
// tokens, 5 channel groups of 25-27 per layer): no group's products reach the group grain, so whole
// groups are spread over the threads (model.cpp, run_block) instead of steps; maps come back in
// group order.
test('forward: a factorized model whose groups are spread over threads gives 1 thread\'s bits and maps', async () => {
  const window = JSON.parse(readFileSync(path.join(ROOT, 'bench/models/demo_window.json'), 'utf8'));
  const models = await Promise.all([1, 2, 3].map((numThreads) => loadModel(path.join(ROOT, 'demo/model/demo.safetensors'), { numThreads })));
  const [ref, ...others] = models.map((m) => m.forward(window, { attention: true }));
  assert.equal(ref.attention.length, 2 * (8 + 5), 'maps: 2 layers of 8 time and 5 channel groups');
  others.forEach((r, i) => {
    const what = `${i + 2} threads`;
    assertSameBits(ref.embeddings, r.embeddings, `${what}: embeddings`);
    assertSameBits(ref.head, r.head, `${what}: head`);
    assert.equal(ref.attention.length, r.attention.length);
    ref.attention.forEach((m, k) => {
      const o = r.attention[k];
      assert.deepEqual([o.layer, o.block, o.group, Array.from(o.tokens)], [m.layer, m.block, m.group, Array.from(m.tokens)], `${what}: map ${k}`);
      assertSameBits(m.weights, o.weights, `${what}: map ${k} weights`);
    });
  });
  models.forEach((m) => m.dispose());
});

test('streaming: a session pushed the same chunks gives the same final tokens on 1 and 2 threads', async () => {
  const cfgPath = path.join(ROOT, 'models/af.safetensors');
  const [a, b] = await Promise.all([1, 2].map((numThreads) => loadModel(cfgPath, { numThreads })));
  const sa = a.stream(), sb = b.stream();
  const u = prng(5);
  const start = 1764460800;
  for (let c = 0; c < 6; c++) {
    const samples = Float32Array.from({ length: 300 * 5 }, () => (u() - 0.5) * 0.4);
    const chunk = { streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 300, startTime: start + 5 * c, samples }] };
    const ra = sa.push(chunk), rb = sb.push(chunk);
    assertSameBits(ra.embeddings, rb.embeddings, `push ${c}: embeddings`);
  }
  assertSameBits(sa.pooled().pooled, sb.pooled().pooled, 'pooled');
  a.dispose();
  b.dispose();
});

test('a Node process with the thread pool loaded exits by itself (no dispose, no exit call)', async () => {
  const script = `import { loadModel } from ${JSON.stringify(path.join(ROOT, 'web/src/index.js'))};
    const m = await loadModel(${JSON.stringify(ENCODER)}, { numThreads: 2 });
    const r = m.forward({ streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: 50, startTime: 0, samples: new Float32Array(8 * 600) }] });
    console.log(m.threads, r.embeddings.length);`;
  const dir = mkdtempSync(path.join(tmpdir(), 'sf-threads-'));
  const file = path.join(dir, 'exit.mjs');
  writeFileSync(file, script);
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  // Deadline: a hang shows as a failure here, not as a stuck suite.
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); resolve('timeout'); }, 60_000);
    child.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  rmSync(dir, { recursive: true, force: true });
  assert.equal(code, 0, `exit ${code}; stderr: ${err}`);
  assert.equal(out.trim(), `2 ${600 * 64}`);
});

// The threaded glue's one-time page warning about a blocked main thread is dropped (the core's
// waits are for helpers finishing parts of the current step: web/src/loader.js); every other
// line of the glue's stderr still reaches the console, prefixed.
test('glue stderr: the main-thread blocking warning is dropped, other lines pass prefixed', () => {
  const warning = 'Blocking on the main thread is very dangerous, see https://emscripten.org/docs/porting/pthreads.html#blocking-on-the-main-browser-thread';
  assert.equal(glueMessage(warning), null);
  assert.equal(glueMessage('Aborted(OOM)'), '[sensorformer] Aborted(OOM)');
  assert.equal(glueMessage(`note: ${warning}`), `[sensorformer] note: ${warning}`, 'only a line that is the warning is dropped');
});
