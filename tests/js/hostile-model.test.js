// Model files and calls a careless or hostile user could make, through the package as shipped
// (WebAssembly). Every case reproduces a defect seen before the core had limits: an abort from
// operator new, a heap grown to 1.3 GB and never returned, a forward running for minutes, a bare
// number thrown from C++, NaN outputs reported as success. The reproducers are built here from
// the committed fixture models (tests/fixtures/model, made by tools/reference), so no opaque file
// is involved: each is "this fixture, with one field of its config or one weight changed".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadCore, loadModel, SensorformerError } from '../../web/src/index.js';
import { loadWasm } from '../../web/src/loader.js';
import { editHeader, fixturePath } from './safetensors.js';

const wasm = await loadWasm();
const heapSize = () => wasm.HEAPU8.buffer.byteLength;
const FIXTURE = readFileSync(fixturePath('model/factorized.safetensors'));
const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));

/** The fixture's bytes with `edit(config, header)` applied to its header (tensor bytes unchanged). */
const mutated = (edit) => new Uint8Array(editHeader(FIXTURE, edit).bytes);

/** The fixture with element `index` of tensor `name` (F32) set to `value`. */
function withWeight(name, index, value) {
  const bytes = new Uint8Array(FIXTURE);
  const n = Number(FIXTURE.readBigUInt64LE(0));
  const header = JSON.parse(FIXTURE.subarray(8, 8 + n).toString('utf8'));
  const view = new DataView(bytes.buffer);
  view.setFloat32(8 + n + header[name].data_offsets[0] + 4 * index, value, true);
  return bytes;
}

async function rejects(promise, code, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e}`);
    assert.equal(e.code, code, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

test('a config claiming 16,777,216 or 1,000,000 layers is refused without growing the heap', async () => {
  const before = heapSize();
  // 16,777,216: aborted WebAssembly (RuntimeError from operator new) before the limits existed.
  await rejects(loadModel(mutated((c) => { c.n_layers = 16777216; })), 'BAD_FORMAT', /n_layers/);
  // 1,000,000: grew the heap to 1.3 GB for 4 s before a typed error; 1,024 (in range) is refused
  // by the size check: the file cannot hold what the config implies.
  await rejects(loadModel(mutated((c) => { c.n_layers = 1000000; })), 'BAD_FORMAT', /n_layers/);
  await rejects(loadModel(mutated((c) => { c.n_layers = 1024; })), 'BAD_FORMAT', /implies \d+ parameters/);
  // The file is 47 KB: loading it may take a few MB, never hundreds.
  assert.ok(heapSize() - before < 16 << 20, `the heap grew by ${(heapSize() - before) >> 20} MiB`);
  const model = await loadModel(new Uint8Array(FIXTURE));  // and the module still works
  assert.equal(model.forward(windows[0]).dims[0], 107);
  model.dispose();
});

test('config floats that break in float32 are refused at load, naming the field', async () => {
  for (const [what, edit] of [
    ['std 1e-300 (0 as float32)', (c) => { c.modalities[2].std = 1e-300; }],
    ['std 1e-45 (a float32 denormal)', (c) => { c.modalities[2].std = 1e-45; }],
    ['mean 1e39 (Inf as float32)', (c) => { c.modalities[2].mean = 1e39; }],
    ['layer_norm_eps 1e-300', (c) => { c.layer_norm_eps = 1e-300; }],
    ['max_period 1e-300', (c) => { c.max_period = 1e-300; }],
  ]) {
    await rejects(loadModel(mutated(edit)), 'BAD_FORMAT', /must be a finite number in/).catch((e) => {
      throw new Error(`${what}: ${e.message}`);
    });
  }
});

test('NaN and Inf weights are refused at load, naming the tensor', async () => {
  for (const value of [NaN, Infinity, -Infinity])
    await rejects(loadModel(withWeight('encoder.channel_layers.1.linear1.weight', 17, value)), 'NON_FINITE',
      /encoder\.channel_layers\.1\.linear1\.weight.*element 17/);
});

test('a forward over the compute limit is refused before it runs; the limit is the caller\'s', async () => {
  const model = await loadModel(fixturePath('model/flattened.safetensors'));
  try {
    // The report: a 1e6-sample ECG stream (38,462 tokens at patch_len 26) blocked the thread for
    // minutes. Here ECG patches are 16 samples: 62,500 tokens in one flattened group.
    const ecg = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130.3, startTime: 1764460800, samples: new Float32Array(1e6).fill(100) };
    const started = performance.now();
    assert.throws(() => model.forward({ streams: [ecg] }), (e) => {
      assert.equal(e.code, 'RESOURCE_EXHAUSTED');
      assert.match(e.message, /62500 tokens/);
      assert.match(e.message, /limit of 10 GFLOP/);
      assert.match(e.message, /maxGflop/);
      return true;
    });
    // Refused by arithmetic, not by running out of time: well under the forward it replaces (no
    // timing assertion, a printed figure).
    console.log(`refused a 62,500-token forward in ${(performance.now() - started).toFixed(0)} ms`);
    // A window the default allows fails under a tiny limit and passes with none.
    assert.throws(() => model.forward(windows[0], { maxGflop: 1e-6 }), (e) => e.code === 'RESOURCE_EXHAUSTED');
    const unlimited = model.forward(windows[0], { maxGflop: Infinity });
    assert.deepEqual(Array.from(unlimited.pooled), Array.from(model.forward(windows[0]).pooled));
    for (const bad of [0, -1, NaN, '10'])
      assert.throws(() => model.forward(windows[0], { maxGflop: bad }), (e) => e.code === 'INVALID_ARGUMENT');
  } finally {
    model.dispose();
  }
});

test('times whose distance to the reference overflows are NON_FINITE, not all-NaN outputs', async () => {
  const model = await loadModel(fixturePath('model/flattened.safetensors'));
  try {
    const hr = { sensor: 1, modality: 'hr', placement: 'chest', timestamps: [-1.7e308, 0, 1.7e308], samples: [60, 61, 62] };
    assert.throws(() => model.forward({ streams: [hr] }), (e) => e.code === 'NON_FINITE' && /stream 0/.test(e.message));
    assert.throws(() => model.forward({ ...windows[2], referenceTime: 1e308 }), (e) => e.code === 'NON_FINITE');
  } finally {
    model.dispose();
  }
});

test('core.multiheadAttention refuses maps past the memory budget instead of throwing a number', async () => {
  const core = await loadCore();
  const E = 16, N = 16384;
  const weights = { inProjWeight: new Float32Array(3 * E * E).fill(0.01), outProjWeight: new Float32Array(E * E).fill(0.01) };
  const x = new Float32Array(N * E).fill(0.5);
  for (const attention of ['per-head', 'average'])
    assert.throws(() => core.multiheadAttention(x, { embedDim: E, numHeads: 4, weights, attention }), (e) => {
      assert.ok(e instanceof SensorformerError, `${attention}: ${e}`);
      assert.equal(e.code, 'RESOURCE_EXHAUSTED');
      assert.match(e.message, /256 MiB/);
      return true;
    });
  // a size that fits still works, and agrees with the no-maps path (1e-6: the explicit and the
  // online softmax sum 64 keys in different orders)
  const small = x.subarray(0, 64 * E);
  const a = core.multiheadAttention(small, { embedDim: E, numHeads: 4, weights, attention: 'average' });
  const b = core.multiheadAttention(small, { embedDim: E, numHeads: 4, weights });
  assert.deepEqual(a.attentionDims, [64, 64]);
  for (let i = 0; i < b.output.length; i++) assert.ok(Math.abs(a.output[i] - b.output[i]) <= 1e-6, `output ${i}`);
});

test('loadModel / loadModelInWorker options: null means defaults, a non-object is INVALID_ARGUMENT', async () => {
  const { loadModelInWorker } = await import('../../web/src/index.js');
  const model = await loadModel(fixturePath('model/time.safetensors'), null);  // was a TypeError
  model.dispose();
  await rejects(loadModel(fixturePath('model/time.safetensors'), 'fast'), 'INVALID_ARGUMENT', /options must be an object/);
  const remote = await loadModelInWorker(fixturePath('model/time.safetensors'), null);
  await remote.dispose();
  await rejects(loadModelInWorker(fixturePath('model/time.safetensors'), 42), 'INVALID_ARGUMENT', /options must be an object/);
});

test('a misspelt stream field or a startTime beside timestamps is an error, not silently ignored', async () => {
  const model = await loadModel(fixturePath('model/time.safetensors'));
  try {
    const ecg = { ...windows[2].streams[0] };
    // "presnt": the mask would have been dropped and every sample counted as present
    assert.throws(() => model.forward({ streams: [{ ...ecg, presnt: ecg.samples.map(() => 0) }] }),
      (e) => e.code === 'INVALID_ARGUMENT' && /streams\[0\]\.presnt is not a stream field/.test(e.message));
    const hr = { sensor: 1, modality: 'hr', placement: 'chest', timestamps: [1, 2], samples: [60, 61] };
    assert.throws(() => model.forward({ streams: [{ ...hr, startTime: 0 }] }), (e) => e.code === 'INVALID_ARGUMENT' && /startTime and timestamps/.test(e.message));
    assert.equal(model.forward({ streams: [hr] }).dims[0], 1);
  } finally {
    model.dispose();
  }
});

test('labels a hostile file could carry: many, long, duplicated, or without a head', { timeout: 60_000 }, async () => {
  // 2^17 outputs whose last label repeats the first: found with a set (a pairwise check would
  // make 8.6e9 string comparisons), and refused before the file's tensors are even sized.
  const many = Array.from({ length: 1 << 17 }, (_, i) => `c${i}`);
  many[many.length - 1] = 'c0';
  await rejects(loadModel(mutated((c) => { c.n_outputs = many.length; c.labels = many; })), 'BAD_FORMAT', /"c0" is listed twice/);
  // A 1 MB label: refused, and the message shows 40 characters of it, not the megabyte.
  const long = 'x'.repeat(1 << 20);
  await rejects(loadModel(mutated((c) => { c.labels = ['rest', long, 'run']; })), 'BAD_FORMAT', /entry 1 is "x{39}\.\.\.$/);
  await rejects(loadModel(mutated((c) => { c.labels = ['rest', 'walk', 'run', 'swim']; })), 'BAD_FORMAT', /"labels" must be an array of 3 distinct names .*got 4 entries/);
  await rejects(loadModel(mutated((c) => { c.labels = ['rest', 'walk', { name: 'run' }]; })), 'BAD_FORMAT', /entry 2 is \{"name":"run"\}/);
  await rejects(loadModel(mutated((c) => { c.labels = null; })), 'BAD_FORMAT', /got null/);
  // labels without a head (n_outputs 0; the head tensors dropped too).
  await rejects(loadModel(mutated((c, h) => { c.n_outputs = 0; c.labels = ['a']; })), 'BAD_FORMAT', /"labels" name the head's outputs, but "n_outputs" is 0/);
});
