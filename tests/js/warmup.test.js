// loadModel's warm-up (web/src/warmup.js): it must not change any result, it must really run
// (its errors are swallowed by design, so a synthetic window that the tokenizer rejects would
// silently make it a no-op), and its option is checked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadModel } from '../../web/src/index.js';
import { warmUp, warmupWindow, WARMUP_TOKENS } from '../../web/src/warmup.js';
import { fixturePath } from './safetensors.js';

const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
const MODELS = ['flattened', 'time', 'channel', 'factorized', 'factorized_causal', 'factorized_f16'];
const source = (name) => fixturePath(`model/${name}.safetensors`);
const demo = new URL('../../demo/model/demo.safetensors', import.meta.url);

const bits = (typed) => Array.from(new Uint32Array(typed.buffer, typed.byteOffset, typed.byteLength / 4));

function sameBits(a, b, what) {
  assert.deepEqual(a.dims, b.dims, `${what}: dims`);
  for (const k of ['embeddings', 'pooled']) assert.deepEqual(bits(a[k]), bits(b[k]), `${what}: ${k}`);
  if (a.head) assert.deepEqual(bits(a.head), bits(b.head), `${what}: head`);
  assert.equal(a.attention.length, b.attention.length, `${what}: number of maps`);
  a.attention.forEach((m, i) => assert.deepEqual(bits(m.weights), bits(b.attention[i].weights), `${what}: map ${i}`));
}

for (const name of MODELS) {
  test(`${name}: a warmed-up model gives bit-identical results to one loaded with { warmup: false }`, async () => {
    // The warmed model runs the real windows after its synthetic ones (other sizes, maps on and
    // off): state kept between forwards (buffers, caches) would show here.
    const warm = await loadModel(source(name));
    const cold = await loadModel(source(name), { warmup: false });
    for (const [i, w] of windows.entries()) {
      const a = warm.forward(w, { attention: true });
      const b = cold.forward(w, { attention: true });
      sameBits(a, b, `window ${i}`);
    }
    warm.dispose();
    cold.dispose();
  });
}

test('the warm-up window is accepted by every fixture model and the demo model, and warmUp runs it', async () => {
  for (const src of [...MODELS.map(source), demo]) {
    const model = await loadModel(src, { warmup: false });
    const r = model.forward(warmupWindow(model.config), { attention: true });
    // every modality is in it, ~WARMUP_TOKENS tokens
    assert.ok(r.dims[0] >= WARMUP_TOKENS && r.dims[0] < 2 * WARMUP_TOKENS, `${src}: ${r.dims[0]} tokens`);
    assert.deepEqual(new Set(r.tokens.modality), new Set(model.config.modalities.map((m) => m.name)), String(src));
    const run = await warmUp(model);
    assert.equal(run.error, null, `${src}: the warm-up failed: ${run.error?.message}`);
    assert.ok(run.forwards >= 1, `${src}: no warm-up forward ran`);
    model.dispose();
  }
});

test('options.warmup must be a boolean', async () => {
  for (const warmup of ['no', 0, null]) {
    await assert.rejects(loadModel(source('flattened'), { warmup }), (e) => e.code === 'INVALID_ARGUMENT' && /options\.warmup must be true or false/.test(e.message), `warmup: ${warmup}`);
  }
});

test('a model whose forwards overflow still loads: the warm-up stops, the caller gets NON_FINITE', async () => {
  // The flattened fixture with every element of a feed-forward weight at 3e38: each layer's
  // output overflows float32, which the core reports as NON_FINITE (docs/bad-input.md).
  const bytes = new Uint8Array(readFileSync(source('flattened')));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const { dtype, data_offsets: [b, e] } = header['encoder.layers.0.linear2.weight'];
  assert.equal(dtype, 'F32');
  for (let at = 8 + n + b; at < 8 + n + e; at += 4) view.setFloat32(at, 3e38, true);

  const model = await loadModel(bytes);  // resolves although every warm-up forward fails
  const run = await warmUp(model);
  assert.equal(run.error?.code, 'NON_FINITE', `the warm-up forward should have failed: ${run.error?.message}`);
  assert.equal(run.forwards, 0, 'the warm-up stops at its first failing forward');
  assert.throws(() => model.forward(windows[0]), (err) => err.code === 'NON_FINITE');
  model.dispose();
});
