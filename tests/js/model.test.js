// loadModel / forward / dispose from Node against the PyTorch reference fixtures, plus the
// invariances and the error paths a user meets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadModel, SensorformerError } from '../../web/src/index.js';
import { allClose, fixturePath, readSafetensors } from './safetensors.js';

// float32 vs the float64 reference through 2 layers: measured worst 1.7e-6 (C++ suite).
const ATOL = 1e-5;

const expected = readSafetensors(fixturePath('model/expected.safetensors'));
const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
const cases = JSON.parse(expected.metadata.cases);
const models = new Map();
for (const name of new Set(cases.map((c) => c.model))) models.set(name, await loadModel(fixturePath(`model/${name}.safetensors`)));

function close(actual, want, what) {
  const r = allClose(actual, want, ATOL, 0);
  assert.ok(r.ok, `${what}: ${r.message}`);
  return r.maxAbs;
}

for (const c of cases) {
  test(`${c.model} window ${c.window} matches the PyTorch reference`, () => {
    const E = (k) => expected.tensors[`${c.model}.w${c.window}.${k}`]?.data;
    const r = models.get(c.model).forward(windows[c.window], { attention: c.window === 0 });
    assert.deepEqual(r.dims, [c.tokens, 16]);
    assert.deepEqual(Array.from(r.tokens.stream), Array.from(E('token_stream')));
    assert.deepEqual(Array.from(r.tokens.time), Array.from(E('token_time')));
    assert.deepEqual(Array.from(r.tokens.present), Array.from(E('token_present')));
    const names = models.get(c.model).config.modalities.map((m) => m.name);
    assert.deepEqual(r.tokens.modality, Array.from(E('token_modality'), (m) => names[m]));
    let worst = close(r.embeddings, E('embeddings'), 'embeddings');
    worst = Math.max(worst, close(r.pooled, E('pooled'), 'pooled'));
    if (c.n_outputs) worst = Math.max(worst, close(r.head, E('head'), 'head'));
    else assert.equal(r.head, null);
    if (c.window === 0) {
      for (const m of r.attention) {
        const key = `attn.l${m.layer}.${m.block}.g${m.group}`;
        assert.deepEqual(Array.from(m.tokens), Array.from(E(`${key}.tokens`)), key);
        assert.deepEqual(m.dims, [models.get(c.model).config.n_heads, m.tokens.length, m.tokens.length]);
        close(m.weights, E(key), key);
      }
    }
    console.log(`parity ${c.model} w${c.window}: max|diff| ${worst.toExponential(3)}`);
  });
}

test('stream order does not change the pooled output (factorized)', () => {
  const m = models.get('factorized');
  const w = windows[0];
  const a = m.forward(w), b = m.forward({ ...w, streams: [...w.streams].reverse() });
  assert.ok(allClose(b.pooled, a.pooled, 2e-6, 1e-5).ok);
  assert.ok(allClose(b.head, a.head, 2e-6, 1e-5).ok);
});

test('an entirely missing stream changes nothing', () => {
  const m = models.get('channel');
  const w = windows[0];
  const missing = { sensor: 3, modality: 'hr', placement: 'finger', timestamps: [w.streams[0].startTime - 3, w.streams[0].startTime - 2], samples: [null, null] };
  const a = m.forward(w), b = m.forward({ ...w, streams: [missing, ...w.streams] });
  assert.deepEqual(Array.from(b.pooled), Array.from(a.pooled));
  assert.deepEqual(Array.from(b.tokens.stream), Array.from(a.tokens.stream, (s) => s + 1));
});

test('a ragged batch equals each window alone', () => {
  const m = models.get('flattened_causal');
  const batch = m.forwardBatch(windows);
  windows.forEach((w, i) => assert.deepEqual(Array.from(m.forward(w).embeddings), Array.from(batch[i].embeddings)));
});

test('bad windows give a SensorformerError naming the field', () => {
  const m = models.get('time');
  const err = (w) => {
    try { m.forward(w); } catch (e) { assert.ok(e instanceof SensorformerError, String(e)); return e; }
    assert.fail('no error');
  };
  const s0 = windows[2].streams[0];
  let e = err({ streams: [{ ...s0, samples: [1, 'x'] }] });
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, /streams\[0\]\.samples\[1\]/);
  e = err({ streams: [{ ...s0, modality: 'eeg' }] });
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, /stream 0: modality "eeg"/);
  e = err({ streams: [{ ...s0, sensor: 9 }] });
  assert.equal(e.code, 'INDEX_OUT_OF_RANGE');
  e = err({ streams: [{ ...s0, rateHz: undefined }] });
  assert.match(e.message, /rateHz and startTime/);
  e = err({ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: [2, 1], samples: [60, 61] }] });
  assert.match(e.message, /must not decrease/);
  e = err({ streams: [{ ...s0, present: [1] }] });
  assert.equal(e.code, 'SHAPE_MISMATCH');
  assert.equal(err(null).code, 'INVALID_ARGUMENT');
});

test('loading errors are typed and name the problem', async () => {
  const code = async (source) => {
    try { await loadModel(source); } catch (e) { assert.ok(e instanceof SensorformerError, String(e)); return e; }
    assert.fail('no error');
  };
  assert.equal((await code('/nonexistent/model.safetensors')).code, 'IO');
  assert.equal((await code(new Uint8Array([1, 2, 3]))).code, 'BAD_FORMAT');
  const bytes = readFileSync(fixturePath('attention.safetensors'));  // valid safetensors, not a model
  const e = await code(bytes);
  assert.equal(e.code, 'BAD_FORMAT');
  assert.match(e.message, /config/);
  assert.equal((await code(42)).code, 'INVALID_ARGUMENT');
});

test('dispose frees the model; using it afterwards is a typed error', async () => {
  const m = await loadModel(readFileSync(fixturePath('model/time.safetensors')));
  m.forward(windows[2]);
  m.dispose();
  m.dispose();  // idempotent
  assert.throws(() => m.forward(windows[2]), (e) => e.code === 'DISPOSED');
});
