// The Embind core from Node against the same PyTorch fixtures as the C++ suite.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { readFileSync } from 'node:fs';

import { loadCore, loadModel, SensorformerError } from '../../web/src/index.js';
import { allClose, fixturePath, readSafetensors, writeSafetensors } from './safetensors.js';

// PyTorch's float32 attention tolerances (test_transformers.py); the encoding bound of the issue.
const OUT_ATOL = 1e-5, OUT_RTOL = 5e-6;
const TIME_ATOL = 1e-5;

const core = await loadCore();
const attn = readSafetensors(fixturePath('attention.safetensors'));
const time = readSafetensors(fixturePath('time_encoding.safetensors'));

function assertClose(actual, expected, atol, rtol, what) {
  const r = allClose(actual, expected, atol, rtol);
  assert.ok(r.ok, `${what}: ${r.message}`);
  return r.maxAbs;
}

test('the module runs WebAssembly SIMD kernels', () => {
  assert.equal(core.simdArch, 'sse4.1');  // xsimd's SSE4.1 path, lowered to wasm simd128
});

for (const c of JSON.parse(time.metadata.cases)) {
  test(`time encoding ${c.name} matches the float64 formula`, () => {
    const t = time.tensors[`${c.name}.t`].data, tRef = time.tensors[`${c.name}.t_ref`].data[0];
    const { data, dims } = core.timeEncoding(t, { dModel: c.d, maxPeriod: c.max_period, referenceTime: tRef });
    assert.deepEqual(dims, [c.n, c.d]);
    const maxAbs = assertClose(data, time.tensors[`${c.name}.enc`].data, TIME_ATOL, 0, c.name);
    console.log(`parity ${c.name}: max|diff| ${maxAbs.toExponential(3)}`);
  });
}

// A model whose file carries seed 000's float32 table (tools/reference/make_model_fixtures.py,
// time_f32_table): `time_encoding.inv_freq` = 1 / max_period^(arange(0, d, 2) / d) in float32.
const seedModelPath = fixturePath('model/time_f32_table.safetensors');
const seedModel = readSafetensors(seedModelPath);
const seedConfig = JSON.parse(seedModel.metadata.config);
const seedTable = seedModel.tensors['time_encoding.inv_freq'].data;
// Times that tell the float32 table from the float64 formula: 1 / 10000^(2/16) rounded to float32
// is 3e-8 off, 8e-4 rad after a day (the fixture's day-long window), epoch seconds further still.
const SEED_TIMES = [0, 0.25, 10, 3600, 86400.5, 1764460812.3456788];

test('timeEncoding({ invFreq }) reproduces a float32 table: float64 sin / cos of (t - ref) x the given values', () => {
  assert.ok(seedTable instanceof Float32Array && seedTable.length === seedConfig.d_model / 2);
  const d = seedConfig.d_model, half = d / 2;
  for (const referenceTime of [0, 86400]) {
    // Independent reference: each float32 value widened, the angle and sin / cos in float64 (JS).
    const want = new Float64Array(SEED_TIMES.length * d);
    SEED_TIMES.forEach((t, n) => {
      for (let i = 0; i < half; i++) {
        const angle = (t - referenceTime) * seedTable[i];
        want[n * d + i] = Math.sin(angle);
        want[n * d + half + i] = Math.cos(angle);
      }
    });
    for (const invFreq of [seedTable, Array.from(seedTable), Float64Array.from(seedTable)]) {
      const { data, dims } = core.timeEncoding(SEED_TIMES, { dModel: d, invFreq, referenceTime });
      assert.deepEqual(dims, [SEED_TIMES.length, d]);
      const maxAbs = assertClose(data, want, TIME_ATOL, 0, `invFreq (${invFreq.constructor.name}), reference ${referenceTime}`);
      console.log(`invFreq ${invFreq.constructor.name}, reference ${referenceTime}: max|diff| ${maxAbs.toExponential(3)}`);
    }
    // The table matters: the float64 formula is far off at a day and at epoch times.
    const formula = core.timeEncoding(SEED_TIMES, { dModel: d, maxPeriod: seedConfig.max_period, referenceTime }).data;
    assert.ok(!allClose(formula, want, 1e-4, 0).ok, 'the float64 formula agrees with the float32 table: the times do not tell them apart');
  }
});

test('timeEncoding({ invFreq }) is what a model with that time_encoding.inv_freq adds to its tokens', async () => {
  // The fixture model with no layers, no final norm, no head and every embedding zero: its
  // embeddings are then exactly the time encoding of each token's time (docs/model.md "Token
  // embedding"), with the file's table.
  const config = { ...seedConfig, n_layers: 0, final_norm: false, n_outputs: 0 };
  const tensors = {};
  for (const [name, t] of Object.entries(seedModel.tensors)) {
    if (name.startsWith('encoder.') || name.startsWith('head.')) continue;
    tensors[name] = { dtype: 'F32', shape: t.shape, data: name === 'time_encoding.inv_freq' ? t.data : new Float32Array(t.data.length) };
  }
  const bytes = writeSafetensors(tensors, { config: JSON.stringify(config) });
  const model = await loadModel(new Uint8Array(bytes), { warmup: false });
  try {
    const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
    for (const [w, window] of windows.entries()) {
      const r = model.forward(window);
      const enc = core.timeEncoding(r.tokens.time, { dModel: config.d_model, invFreq: seedTable, referenceTime: r.referenceTime });
      // the same kernel on the same float64 angles: the same floats
      assert.deepEqual(enc.data, r.embeddings, `window ${w}: the model's time encoding differs`);
    }
  } finally {
    model.dispose();
  }
});

test('timeEncoding invFreq: a table the model file would refuse is refused, with the rule', () => {
  const err = (fn) => {
    try { fn(); } catch (e) {
      assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e?.stack ?? e}`);
      return e;
    }
    assert.fail('no error thrown');
  };
  const cases = [
    [{ dModel: 4, invFreq: [1] }, 'INVALID_ARGUMENT', /^invFreq has 1 values; dModel 4 needs 2$/],
    [{ dModel: 4, invFreq: [1, 0.1, 0.01] }, 'INVALID_ARGUMENT', /needs 2/],
    [{ dModel: 5, invFreq: [1, 0.1] }, 'INVALID_ARGUMENT', /^dModel must be even, got 5$/],
    [{ dModel: 4, invFreq: [1, NaN] }, 'NON_FINITE', /^invFreq\[1\] is NaN/],
    [{ dModel: 4, invFreq: Float32Array.of(Infinity, 0.1) }, 'NON_FINITE', /^invFreq\[0\] is Infinity/],
    [{ dModel: 4, invFreq: [1, 1.5] }, 'INVALID_ARGUMENT', /^invFreq\[1\] is 1\.5: inverse frequencies must be in \[-1, 1\]/],
    [{ dModel: 4, invFreq: [1, '0.1'] }, 'INVALID_ARGUMENT', /^invFreq\[1\] must be a number, got "0\.1"$/],
    [{ dModel: 4, invFreq: Int32Array.of(1, 0) }, 'INVALID_ARGUMENT', /^invFreq must be a Float32Array, a Float64Array or an array of numbers, got an? Int32Array/],
    [{ dModel: 4, invFreq: null }, 'INVALID_ARGUMENT', /got null$/],
    [{ dModel: 4, invFreq: [1, 0.1], maxPeriod: 100 }, 'INVALID_ARGUMENT', /give invFreq or maxPeriod, not both/],
  ];
  for (const [options, code, message] of cases) {
    const e = err(() => core.timeEncoding([0, 1], options));
    assert.equal(e.code, code, `${JSON.stringify(options)}: ${e.message}`);
    assert.match(e.message, message);
  }
  // The file's rule admits negative values and 0 (a constant pair of features): so does this.
  const { data } = core.timeEncoding([2], { dModel: 4, invFreq: [-0.5, 0] });
  assertClose(data, [Math.sin(-1), 0, Math.cos(-1), 1], TIME_ATOL, 0, 'negative and zero inverse frequencies');
});

for (const c of JSON.parse(attn.metadata.cases)) {
  test(`multihead attention ${c.name} matches torch`, () => {
    const T = (k) => attn.tensors[`${c.name}.${k}`]?.data;
    const { n: N, e: E, heads: H } = c;
    const rows = T('weight_rows'), R = rows.length;
    const weights = { inProjWeight: T('in_proj_weight'), inProjBias: T('in_proj_bias'), outProjWeight: T('out_proj_weight'), outProjBias: T('out_proj_bias') };
    let worst = 0;
    const prepared = core.prepareMultiheadAttention({ embedDim: E, numHeads: H, weights });
    for (let b = 0; b < c.batch; b++) {
      const x = T('x').subarray(b * N * E, (b + 1) * N * E);
      const keyPaddingMask = c.key_padding ? T('key_padding_mask').subarray(b * N, (b + 1) * N) : null;
      const want = T('out').subarray(b * N * E, (b + 1) * N * E);
      for (const attention of ['none', 'per-head', 'average']) {
        const r = core.multiheadAttention(x, { embedDim: E, numHeads: H, weights, keyPaddingMask, causal: c.causal, attention });
        worst = Math.max(worst, assertClose(r.output, want, OUT_ATOL, OUT_RTOL, `${c.name} b${b} ${attention}`));
        // Prepared weights run the same kernels on the same (packed) weights: bit-identical.
        const p = prepared.forward(x, { keyPaddingMask, causal: c.causal, attention });
        assert.deepEqual(p.output, r.output, `${c.name} b${b} ${attention}: prepared output`);
        assert.deepEqual(p.attention, r.attention, `${c.name} b${b} ${attention}: prepared weights`);
        if (attention === 'none') continue;
        for (let k = 0; k < R; k++) {
          const i = rows[k];
          if (attention === 'per-head') {
            assert.deepEqual(r.attentionDims, [H, N, N]);
            for (let h = 0; h < H; h++)
              assertClose(r.attention.subarray((h * N + i) * N, (h * N + i + 1) * N),
                T('attn_per_head').subarray(((b * H + h) * R + k) * N, ((b * H + h) * R + k + 1) * N), OUT_ATOL, OUT_RTOL, `${c.name} head ${h} row ${i}`);
          } else {
            assert.deepEqual(r.attentionDims, [N, N]);
            assertClose(r.attention.subarray(i * N, (i + 1) * N), T('attn_avg').subarray((b * R + k) * N, (b * R + k + 1) * N), OUT_ATOL, OUT_RTOL, `${c.name} avg row ${i}`);
          }
        }
      }
    }
    prepared.dispose();
    console.log(`parity ${c.name}: max|diff| ${worst.toExponential(3)}`);
  });
}

test('prepared attention: cross-attention, its own copy of the weights, typed errors, dispose', () => {
  const E = 8, H = 2, L = 3, S = 5;
  const wave = (n, f) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * f) * 0.3);
  const weights = { inProjWeight: wave(3 * E * E, 0.7), inProjBias: wave(3 * E, 1.3), outProjWeight: wave(E * E, 0.9), outProjBias: wave(E, 2.1) };
  const query = wave(L * E, 0.21), key = wave(S * E, 0.43);
  const opts = { key, keyPaddingMask: Uint8Array.of(0, 1, 0, 0, 1), attention: 'per-head' };
  const want = core.multiheadAttention(query, { embedDim: E, numHeads: H, weights, ...opts });
  const p = core.prepareMultiheadAttention({ embedDim: E, numHeads: H, weights });
  const saved = weights.inProjWeight.slice();
  weights.inProjWeight.fill(0);  // the prepared copy was taken at prepare time
  const got = p.forward(query, opts);
  assert.deepEqual(got.output, want.output);
  assert.deepEqual(got.attention, want.attention);
  assert.deepEqual(got.attentionDims, [H, L, S]);
  weights.inProjWeight.set(saved);
  assert.equal(code(() => p.forward(new Float32Array(7))), 'SHAPE_MISMATCH');
  assert.equal(code(() => p.forward(query, { key, keyPaddingMask: Uint8Array.of(1) })), 'SHAPE_MISMATCH');
  assert.equal(code(() => p.forward(query, 'causal')), 'INVALID_ARGUMENT');
  assert.equal(code(() => p.forward(Float32Array.of(NaN, ...new Float32Array(E - 1)))), 'NON_FINITE');
  p.dispose();
  p.dispose();
  assert.equal(code(() => p.forward(query)), 'DISPOSED');
  assert.equal(code(() => core.prepareMultiheadAttention({ embedDim: E, numHeads: 3, weights })), 'INVALID_ARGUMENT');
  assert.equal(code(() => core.prepareMultiheadAttention({ embedDim: E, numHeads: H, weights: { ...weights, outProjWeight: new Float32Array(3) } })), 'SHAPE_MISMATCH');
  assert.equal(code(() => core.prepareMultiheadAttention(null)), 'INVALID_ARGUMENT');
});

test('a query with every key masked gets out_proj_bias and zero weights, not NaN', () => {
  const E = 4, H = 2;
  const weights = {
    inProjWeight: Float32Array.from({ length: 3 * E * E }, (_, i) => Math.sin(i)),
    outProjWeight: Float32Array.from({ length: E * E }, (_, i) => Math.cos(i)),
    outProjBias: Float32Array.of(0.5, -1, 2, 0.25),
  };
  const x = Float32Array.from({ length: 2 * E }, (_, i) => i / 3);
  const r = core.multiheadAttention(x, { embedDim: E, numHeads: H, weights, keyPaddingMask: Uint8Array.of(1, 1), attention: 'per-head' });
  assert.deepEqual(Array.from(r.output), [0.5, -1, 2, 0.25, 0.5, -1, 2, 0.25]);
  assert.ok(r.attention.every((w) => w === 0));
});

// The code of the SensorformerError fn throws (any other outcome fails the test).
function code(fn) {
  try { fn(); } catch (e) {
    assert.ok(e instanceof SensorformerError, `${e}`);
    return e.code;
  }
  assert.fail('no error thrown');
}

test('bad input is a SensorformerError with a code', () => {
  assert.equal(code(() => core.timeEncoding([0, NaN], { dModel: 4 })), 'NON_FINITE');
  assert.equal(code(() => core.timeEncoding([0], { dModel: 3 })), 'INVALID_ARGUMENT');
  assert.equal(code(() => core.timeEncoding([0], { dModel: 4, maxPeriod: -1 })), 'INVALID_ARGUMENT');
  assert.equal(code(() => core.timeEncoding([0], { dModel: 4, referenceTime: Infinity })), 'NON_FINITE');
  const E = 4, w = { inProjWeight: new Float32Array(3 * E * E), outProjWeight: new Float32Array(E * E) };
  assert.equal(code(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 3, weights: w })), 'INVALID_ARGUMENT');
  assert.equal(code(() => core.multiheadAttention(new Float32Array(7), { embedDim: E, numHeads: 2, weights: w })), 'SHAPE_MISMATCH');
  assert.equal(code(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: { ...w, inProjWeight: new Float32Array(5) } })), 'SHAPE_MISMATCH');
  assert.equal(code(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: w, keyPaddingMask: Uint8Array.of(1) })), 'SHAPE_MISMATCH');
  assert.equal(code(() => core.multiheadAttention([1, 2, 3, 4], { embedDim: E, numHeads: 2, weights: w })), 'INVALID_ARGUMENT');
  assert.equal(code(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: w, attention: 'all' })), 'INVALID_ARGUMENT');
});

test('a misspelt option or weight is refused, not run without it; sizes past the core\'s int are refused, not wrapped', () => {
  const E = 4, w = { inProjWeight: new Float32Array(3 * E * E), outProjWeight: new Float32Array(E * E) };
  const refused = (fn, pattern) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message), String(pattern));
  refused(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: w, casual: true }), /multiheadAttention: unknown option "casual"/);
  refused(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: w, keyPaddingmask: Uint8Array.of(0, 1) }), /unknown option "keyPaddingmask"/);
  refused(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2, weights: { ...w, inProjbias: new Float32Array(3 * E) } }), /weights: unknown option "inProjbias"/);
  refused(() => core.timeEncoding([0], { dModel: 4, referenceTme: 5 }), /timeEncoding: unknown option "referenceTme"/);
  const prepared = core.prepareMultiheadAttention({ embedDim: E, numHeads: 2, weights: w });
  refused(() => prepared.forward(new Float32Array(8), { casual: true }), /forward: unknown option "casual"/);
  prepared.dispose();
  refused(() => core.prepareMultiheadAttention({ embedDim: E, numHeads: 2, weights: w, causal: true }), /prepareMultiheadAttention: unknown option "causal"/);
  // 2^32 + 8 would reach the core as 8 (ToInt32), 2^31 as -2^31
  refused(() => core.timeEncoding([0], { dModel: 2 ** 32 + 8 }), /dModel must be a positive integer up to 2\^31 - 1, got 4294967304/);
  refused(() => core.multiheadAttention(new Float32Array(8), { embedDim: E, numHeads: 2 ** 32 + 2, weights: w }), /numHeads must be a positive integer up to 2\^31 - 1/);
});

test('the kernels refuse what they would misread: odd containers, non-finite values, loose booleans', () => {
  const err = (fn) => {
    try { fn(); } catch (e) {
      assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e?.stack ?? e}`);
      return e;
    }
    assert.fail('no error thrown');
  };
  // Integer typed arrays of seconds encode exactly like the plain array of the same numbers.
  const want = core.timeEncoding([0, 1, 86400], { dModel: 8 }).data;
  for (const Type of [Int32Array, Uint32Array, Float32Array, Float64Array]) assert.deepEqual(core.timeEncoding(Type.of(0, 1, 86400), { dModel: 8 }).data, want, Type.name);
  const te = [
    ['123', 'INVALID_ARGUMENT', /^times must be an array or one of .*, got "123"$/],  // read as [1, 2, 3] before
    [new DataView(new ArrayBuffer(16)), 'INVALID_ARGUMENT', /got a DataView$/],       // read as [] before
    [new BigInt64Array(2), 'INVALID_ARGUMENT', /got a BigInt64Array$/],
    [null, 'INVALID_ARGUMENT', /got null$/],
    [[0, Infinity], 'NON_FINITE', /^times\[1\] is Infinity/],
    [[0, '1'], 'INVALID_ARGUMENT', /^times\[1\] must be a number of seconds, got "1"$/],
  ];
  for (const [times, code, message] of te) {
    const e = err(() => core.timeEncoding(times, { dModel: 4 }));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, message);
  }
  assert.match(err(() => core.timeEncoding([0], { dModel: 4, maxPeriod: '100' })).message, /maxPeriod must be a number, got "100"/);
  assert.equal(err(() => core.timeEncoding([0], null)).code, 'INVALID_ARGUMENT');

  const E = 4, H = 2;
  const weights = {
    inProjWeight: Float32Array.from({ length: 3 * E * E }, (_, i) => Math.sin(i)),
    outProjWeight: Float32Array.from({ length: E * E }, (_, i) => Math.cos(i)),
  };
  const x = Float32Array.from({ length: 2 * E }, (_, i) => i / 3);
  const nan = Float32Array.from(x);
  nan[5] = NaN;
  const inf = Float32Array.from(weights.outProjWeight);
  inf[7] = -Infinity;
  const mha = [
    [nan, {}, 'NON_FINITE', /^query\[5\] is NaN/],
    [x, { key: nan }, 'NON_FINITE', /^key\[5\] is NaN/],
    [x, { weights: { ...weights, outProjWeight: inf } }, 'NON_FINITE', /^weights\.outProjWeight\[7\] is -Infinity/],
    [x, { weights: { ...weights, inProjBias: new Float32Array(3 * E).fill(NaN) } }, 'NON_FINITE', /^weights\.inProjBias\[0\] is NaN/],
    [x, { causal: 'no' }, 'INVALID_ARGUMENT', /^causal must be true or false, got "no"$/],
    [x, { keyPaddingMask: Uint8Array.of(0, 2) }, 'INVALID_ARGUMENT', /^keyPaddingMask\[1\] must be 0 or 1/],
    [x, { attention: 'toString' }, 'INVALID_ARGUMENT', /^attention must be one of none, per-head, average, got "toString"$/],
  ];
  for (const [query, options, code, message] of mha) {
    const e = err(() => core.multiheadAttention(query, { embedDim: E, numHeads: H, weights, ...options }));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, message);
  }
  assert.equal(err(() => core.multiheadAttention(x)).code, 'INVALID_ARGUMENT');
});
