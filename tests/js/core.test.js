// The Embind core from Node against the same PyTorch fixtures as the C++ suite.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadCore, SensorformerError } from '../../web/src/index.js';
import { allClose, fixturePath, readSafetensors } from './safetensors.js';

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
