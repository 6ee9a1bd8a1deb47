// loadModel / forward / dispose from Node against the PyTorch reference fixtures, plus the
// invariances and the error paths a user meets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadModel, SensorformerError } from '../../web/src/index.js';
import { allClose, editHeader, fixturePath, readSafetensors } from './safetensors.js';

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
    // window 0's attention maps are stored for every model but flattened_upsample (its 190 tokens'
    // maps: tools/reference/make_model_fixtures.py NO_MAPS_MODELS)
    const maps = c.window === 0 && c.model !== 'flattened_upsample';
    const r = models.get(c.model).forward(windows[c.window], { attention: maps });
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
    if (maps) {
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

// The error a call throws (a SensorformerError, or the test fails), for the table tests below.
function thrown(fn) {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof SensorformerError, `not a SensorformerError: ${e?.stack ?? e}`);
    return e;
  }
  assert.fail('no error thrown');
}

// windows[2]: one ECG stream of 16 samples at 130.3 Hz (one patch of the fixture models).
const ecg = windows[2].streams[0];
const withEcg = (fields) => ({ ...windows[2], streams: [{ ...ecg, ...fields }] });
const samplesWith = (Type, index, value) => {
  const a = Type === Array ? ecg.samples.slice() : Type.from(ecg.samples);
  a[index] = value;
  return a;
};

test('samples: null and NaN are missing; +-Infinity and values beyond float32 are NON_FINITE naming the index', () => {
  const m = models.get('time');
  // Missing three ways (JSON null, NaN in a typed array, present 0 over a number): the core sees
  // the same missing sample, so the outputs are identical bit for bit.
  const viaNull = m.forward(withEcg({ samples: samplesWith(Array, 3, null) })).pooled;
  const viaNaN = m.forward(withEcg({ samples: samplesWith(Float32Array, 3, NaN) })).pooled;
  const viaPresent = m.forward(withEcg({ samples: samplesWith(Array, 3, 123), present: ecg.samples.map((_, i) => i !== 3) })).pooled;
  assert.deepEqual(viaNaN, viaNull);
  assert.deepEqual(viaPresent, viaNull);
  assert.notDeepEqual(m.forward(withEcg({})).pooled, viaNull, 'the missing sample made a difference');
  // float32's largest finite value is accepted; the next float64 above it is not.
  const FLT_MAX = 3.4028234663852886e38;
  m.forward(withEcg({ samples: samplesWith(Array, 0, -FLT_MAX) }));
  const cases = [
    [Array, 5, Infinity], [Array, 5, -Infinity], [Array, 9, 1e39], [Array, 2, -FLT_MAX * (1 + 2 ** -52)],
    [Float32Array, 15, Infinity], [Float32Array, 0, -Infinity], [Float64Array, 7, 1e39], [Float64Array, 1, -Infinity],
  ];
  for (const [Type, i, v] of cases) {
    const e = thrown(() => m.forward(withEcg({ samples: samplesWith(Type, i, v) })));
    assert.equal(e.code, 'NON_FINITE', `${Type.name} ${v}: ${e.message}`);
    assert.ok(e.message.startsWith(`window.streams[0].samples[${i}] is ${v}`), e.message);
  }
});

test('samples: numeric typed arrays equal the plain array; DataView, BigInt arrays, strings and objects are INVALID_ARGUMENT', () => {
  const m = models.get('time');
  // Integer samples (ECG in ADC units) so every container holds exactly the same values.
  const ints = ecg.samples.map((v, i) => (i * 7) % 100);
  const want = m.forward(withEcg({ samples: ints })).pooled;
  for (const Type of [Float32Array, Float64Array, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array, Uint8ClampedArray])
    assert.deepEqual(m.forward(withEcg({ samples: Type.from(ints) })).pooled, want, Type.name);
  const rejected = [
    [new DataView(new ArrayBuffer(64)), 'a DataView'], [new BigInt64Array(16), 'a BigInt64Array'],
    [new BigUint64Array(16), 'a BigUint64Array'], ['1,2,3', '"1,2,3"'], [{ length: 2, 0: 1, 1: 2 }, 'an object'],
    [new Map(), 'a Map'], [undefined, 'undefined'], [42, '42'],
  ];
  for (const [samples, shown] of rejected) {
    const e = thrown(() => m.forward(withEcg({ samples })));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.match(e.message, /^window\.streams\[0\]\.samples must be an array or one of Float32Array, .*Uint8ClampedArray, got /);
    assert.ok(e.message.endsWith(`got ${shown}`), e.message);
  }
  // A BigInt inside a plain array: the message is built without JSON (which throws on BigInt).
  const e = thrown(() => m.forward(withEcg({ samples: [1, 2n] })));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, /samples\[1\] must be a number or null \(missing\), got 2n/);
});

test('present: 0, 1, true and false only, in arrays and typed arrays', () => {
  const m = models.get('time');
  const flags = ecg.samples.map((_, i) => (i % 5 === 0 ? 0 : 1));
  const want = m.forward(withEcg({ present: flags })).pooled;
  assert.deepEqual(m.forward(withEcg({ present: Uint8Array.from(flags) })).pooled, want);
  assert.deepEqual(m.forward(withEcg({ present: flags.map(Boolean) })).pooled, want);
  for (const [bad, shown] of [[256, '256'], [2, '2'], [-1, '-1'], [0.5, '0.5'], [NaN, 'NaN'], [null, 'null'], ['1', '"1"']]) {
    const present = flags.slice();
    present[6] = bad;
    const e = thrown(() => m.forward(withEcg({ present })));
    assert.equal(e.code, 'INVALID_ARGUMENT', shown);
    assert.equal(e.message, `window.streams[0].present[6] must be 0, 1, true or false, got ${shown}`);
  }
  // 256 in a Uint16Array (a Uint8Array cannot hold it) and 2 in a Uint8Array: no wrap to 0.
  for (const Type of [Uint8Array, Uint16Array]) {
    const present = Type.from(flags);
    present[4] = Type === Uint8Array ? 2 : 256;
    const e = thrown(() => m.forward(withEcg({ present })));
    assert.equal(e.code, 'INVALID_ARGUMENT');
    assert.match(e.message, /present\[4\] must be 0, 1, true or false, got (2|256)$/);
  }
  assert.equal(thrown(() => m.forward(withEcg({ present: new DataView(new ArrayBuffer(16)) }))).code, 'INVALID_ARGUMENT');
});

test('times and rates: regular streams need rateHz > 0 and finite times even when empty; each error names its field', () => {
  const m = models.get('time');
  const cases = [
    [withEcg({ samples: [], rateHz: -1 }), 'INVALID_ARGUMENT', 'window.streams[0].rateHz must be a rate in Hz > 0, got -1'],
    [withEcg({ samples: [], rateHz: 0 }), 'INVALID_ARGUMENT', 'window.streams[0].rateHz must be a rate in Hz > 0, got 0'],
    [withEcg({ rateHz: Infinity }), 'NON_FINITE', 'window.streams[0].rateHz is Infinity'],
    [withEcg({ samples: [], rateHz: NaN }), 'NON_FINITE', 'window.streams[0].rateHz is NaN'],
    [withEcg({ rateHz: '130' }), 'INVALID_ARGUMENT', 'window.streams[0].rateHz must be a rate in Hz > 0, got "130"'],
    [withEcg({ samples: [], startTime: Infinity }), 'NON_FINITE', 'window.streams[0].startTime is Infinity'],
    [withEcg({ startTime: -Infinity }), 'NON_FINITE', 'window.streams[0].startTime is -Infinity'],
    [{ ...withEcg({}), referenceTime: Infinity }, 'NON_FINITE', 'window.referenceTime is Infinity'],
    [{ ...withEcg({}), referenceTime: NaN }, 'NON_FINITE', 'window.referenceTime is NaN'],
    [{ ...withEcg({}), referenceTime: '0' }, 'INVALID_ARGUMENT', 'window.referenceTime must be a time in seconds, got "0"'],
    [{ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: [1, Infinity], samples: [60, 61] }] }, 'NON_FINITE', 'window.streams[0].timestamps[1] is Infinity'],
    [{ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: Float64Array.of(1, NaN), samples: [60, 61] }] }, 'NON_FINITE', 'window.streams[0].timestamps[1] is NaN'],
    [{ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: [1, null], samples: [60, 61] }] }, 'INVALID_ARGUMENT', 'window.streams[0].timestamps[1] must be a number of seconds, got null'],
    [{ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: new BigInt64Array(2), samples: [60, 61] }] }, 'INVALID_ARGUMENT', 'window.streams[0].timestamps must be an array or one of'],
  ];
  for (const [w, code, message] of cases) {
    const e = thrown(() => m.forward(w));
    assert.equal(e.code, code, e.message);
    assert.ok(e.message.startsWith(message), `${e.message}\n  expected to start with: ${message}`);
  }
  // An empty regular stream with a valid rate is fine: it contributes no token.
  const r = m.forward({ ...windows[2], streams: [ecg, { ...ecg, samples: [] }] });
  assert.deepEqual(r.pooled, m.forward(windows[2]).pooled);
});

test('arrays longer than 2^28 entries are RESOURCE_EXHAUSTED naming the field, before a typed copy is allocated', () => {
  // 2^28 float32 is the 1 GiB budget of a window's patch values (docs/model.md "Limits"), and
  // every sample lands in a patch. The arrays are sparse: they cost nothing until copied, and
  // copying new Array(2 ** 32 - 1) into a Float64Array needed 32 GiB (the engine's RangeError).
  const m = models.get('time');
  const hr = { sensor: 2, modality: 'hr', placement: 'chest' };
  const cases = [
    [{ ...hr, timestamps: new Array(2 ** 32 - 1), samples: [] }, 'timestamps', '4,294,967,295'],
    [{ ...hr, timestamps: [1], samples: new Array(2 ** 28 + 1) }, 'samples', '268,435,457'],
    [{ ...ecg, present: new Array(2 ** 31) }, 'present', '2,147,483,648'],
  ];
  for (const [stream, field, count] of cases) {
    const e = thrown(() => m.forward({ streams: [stream] }));
    assert.equal(e.code, 'RESOURCE_EXHAUSTED', e.message);
    assert.equal(e.message, `window.streams[0].${field} has ${count} entries, more than 268,435,456 (2^28): a window's patch values are bounded by 1 GiB`);
  }
});

test('NON_FINITE messages from the core print numbers in their shortest form, not hundreds of digits', async () => {
  // std::to_string printed 1e300 as 301 digits and 1e-7 as "0.000000". Expected strings written
  // by hand: the shortest decimal that reads back as the value (float32 for samples, mean, std).
  const demo = await loadModel(new URL('../../demo/model/demo.safetensors', import.meta.url).pathname, { warmup: false });
  // The demo's rr: mean 0.65, std 0.2 (float32), patches of 4 (a token needs half of them present).
  const rr = { sensor: 0, modality: 'rr', placement: 'chest' };
  const cases = [
    [{ referenceTime: 0, streams: [{ ...rr, rateHz: 1, startTime: 1e300, samples: [0.8, 0.8, 0.8, 0.8] }] },
      'stream 0: token time 1e+300 s is more than 1e12 s from the reference time 0 s: its time encoding would not be finite'],
    [{ referenceTime: 1e-7, streams: [{ ...rr, rateHz: 1, startTime: 1.7976931348623157e308, samples: [0.8, 0.8, 0.8, 0.8] }] },
      'stream 0: token time 1.7976931348623157e+308 s is more than 1e12 s from the reference time 1e-07 s: its time encoding would not be finite'],
    [{ streams: [{ ...rr, rateHz: 1, startTime: 0, samples: [3e38, 3e38, 3e38, 3e38] }] },
      'stream 0: sample 0 normalised as (x - mean) / std = (3e+38 - 0.65) / 0.2 overflows float32'],
  ];
  try {
    for (const [w, message] of cases) {
      const e = thrown(() => demo.forward(w));
      assert.equal(e.code, 'NON_FINITE');
      assert.equal(e.message, message);
    }
  } finally {
    demo.dispose();
  }
  const { loadCore } = await import('../../web/src/index.js');
  const core = await loadCore();
  const time = thrown(() => core.timeEncoding([1e300], { dModel: 4 }));
  assert.equal(time.message, 'time encoding: timestamp 0 (1e+300 s) is more than 1e12 s from the reference time 0 s: its encoding would not be finite or meaningful');
  const angle = thrown(() => core.timeEncoding([1e5], { dModel: 4, maxPeriod: 1e-300 }));
  assert.equal(angle.message, 'time encoding: angles reach 1e+155 rad (max_period 1e-300): beyond 1e12 rad the encoding is not finite or meaningful');
});

test('an event-driven stream with no event yet (timestamps: []) is empty, not a regular stream without a rate', () => {
  // A strap that sent no RR interval in the window gives timestamps: [] (web/src/ble's assembler,
  // the CSV reader); it used to fail with "a regular stream needs a finite rate_hz > 0".
  const m = models.get('time');
  const w = windows[0];
  const j = w.streams.findIndex((s) => s.timestamps);
  const emptied = { ...w, streams: w.streams.map((s, i) => (i === j ? { ...s, timestamps: [], samples: [] } : s)) };
  const without = { ...w, streams: w.streams.filter((_, i) => i !== j) };
  const a = m.forward(emptied), b = m.forward(without);
  // Same tokens and bits: an empty stream contributes no token, whatever its kind.
  assert.deepEqual(Array.from(a.tokens.time), Array.from(b.tokens.time));
  assert.deepEqual(a.pooled, b.pooled);
});

test('sensor ids outside [0, 2^31 - 1] are reported as given, never as a wrapped int', () => {
  const m = models.get('time');
  for (const [sensor, shown] of [[2 ** 31, '2147483648'], [1e20, '100000000000000000000'], [2 ** 32 + 1, '4294967297'], [-1, '-1']]) {
    const e = thrown(() => m.forward(withEcg({ sensor })));
    assert.equal(e.code, 'INDEX_OUT_OF_RANGE');
    assert.equal(e.message, `window.streams[0].sensor ${shown} is not a sensor id (0 to 2147483647)`);
  }
  for (const sensor of [1.5, NaN, '0', null]) assert.equal(thrown(() => m.forward(withEcg({ sensor }))).code, 'INVALID_ARGUMENT');
  // Within int32 but beyond the model's table: the core's check, with the real number.
  assert.match(thrown(() => m.forward(withEcg({ sensor: 2 ** 31 - 1 }))).message, /sensor 2147483647 is outside the model's/);
});

test('forward options: undefined or null mean defaults; anything else is checked and typos are named', () => {
  const m = models.get('factorized');
  const plain = m.forward(windows[0]);
  assert.deepEqual(m.forward(windows[0], null).pooled, plain.pooled);
  assert.equal(m.forward(windows[0], null).attention, null);
  assert.equal(m.forward(windows[0], { attention: undefined }).attention, null);
  assert.ok(m.forward(windows[0], Object.assign(Object.create(null), { attention: true })).attention.length > 0);
  const bad = [
    // (the list of accepted keys starts with attention; more options may follow it)
    [{ atention: true }, /unknown option "atention" \(accepted: attention\b.*\)$/],
    [true, /options must be an object with the keys attention\b.*, got true$/],
    ['attention', /options must be an object with the keys attention\b.*, got "attention"$/],
    [[], /options must be an object/],
    [new Map(), /options must be an object .*got a Map/],
    [{ attention: 'yes' }, /attention must be true or false, got "yes"/],
    [{ attention: 1 }, /attention must be true or false, got 1/],
  ];
  for (const [options, message] of bad) {
    for (const call of [() => m.forward(windows[0], options), () => m.forwardBatch(windows, options)]) {
      const e = thrown(call);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.match(e.message, message);
    }
  }
});

test('forwardBatch names the window that failed', () => {
  const m = models.get('time');
  let e = thrown(() => m.forwardBatch([windows[2], withEcg({ samples: samplesWith(Array, 4, Infinity) })]));
  assert.equal(e.code, 'NON_FINITE');
  assert.match(e.message, /^windows\[1\]\.streams\[0\]\.samples\[4\] is Infinity/);
  e = thrown(() => m.forwardBatch([windows[2], windows[2], withEcg({ modality: 'eeg' })]));
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, /^windows\[2\]: stream 0: modality "eeg"/);
  assert.equal(thrown(() => m.forwardBatch('windows')).code, 'INVALID_ARGUMENT');
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

test('attention_lookback_s: a bad value, or a look-back without causal, is BAD_FORMAT naming the keys', async () => {
  const refused = async (edit) => {
    try { await loadModel(edited('flattened_lookback', { config: edit }), { warmup: false }); } catch (e) {
      assert.ok(e instanceof SensorformerError && e.code === 'BAD_FORMAT', String(e));
      return e.message;
    }
    assert.fail('loaded');
  };
  for (const bad of [0, -2, '2', true, [1]])
    assert.match(await refused((c) => { c.attention_lookback_s = bad; }), /attention_lookback_s/, String(bad));
  const message = await refused((c) => { c.causal = false; });
  assert.match(message, /attention_lookback_s/);
  assert.match(message, /causal/);
  // null means unlimited: the model is then its causal self
  const m = await loadModel(edited('flattened_lookback', { config: (c) => { c.attention_lookback_s = null; } }), { warmup: false });
  assert.equal(m.info.attentionLookbackS, null);
  m.dispose();
});

test('dispose frees the model; using it afterwards is a typed error', async () => {
  const m = await loadModel(readFileSync(fixturePath('model/time.safetensors')));
  m.forward(windows[2]);
  m.dispose();
  m.dispose();  // idempotent
  assert.throws(() => m.forward(windows[2]), (e) => e.code === 'DISPOSED');
});

// --- predictions and introspection (issue 11, item 3) --------------------------------------------

/**
 * A fixture model's bytes with its config edited (`config(c)` changes it in place) and F32
 * tensors overwritten (`tensors: { name: values }`); the header is rewritten, the data kept.
 */
function edited(name, { config = () => {}, tensors = {} } = {}) {
  const { bytes, header, dataStart } = editHeader(readFileSync(fixturePath(`model/${name}.safetensors`)), config);
  for (const [tensor, values] of Object.entries(tensors)) {
    const [begin, end] = header[tensor].data_offsets;
    assert.equal(header[tensor].dtype, 'F32');
    assert.equal((end - begin) / 4, values.length, tensor);
    values.forEach((v, i) => bytes.writeFloatLE(v, dataStart + begin + 4 * i));
  }
  return new Uint8Array(bytes);
}

// The reference softmax, in float64 and by another formula than the package's (each p_i as
// 1 / sum_j exp(h_j - h_i)): it needs no max, and agrees to float64 rounding for these heads.
const softmax64 = (head) => Array.from(head, (hi) => 1 / Array.from(head, (hj) => Math.exp(hj - hi)).reduce((a, b) => a + b, 0));
// The package rounds each float64 probability to float32 once: half an ulp of 1 is 2^-24.
const PROB_ATOL = 2 ** -24;

const LABELS = ['rest', 'walk', 'run'];
const labelled = await loadModel(edited('factorized', { config: (c) => { c.labels = LABELS; } }), { warmup: false });

test('with config labels, forward gives probabilities (softmax of the head) and the arg-max label', () => {
  const plain = models.get('factorized');
  assert.deepEqual(labelled.config.labels, LABELS);
  windows.forEach((w, i) => {
    const r = labelled.forward(w);
    assert.deepEqual(r.head, plain.forward(w).head, `window ${i}: labels do not change the head`);
    assert.ok(r.probabilities instanceof Float32Array);
    const want = softmax64(r.head);
    const ok = allClose(r.probabilities, want, PROB_ATOL, 0);
    assert.ok(ok.ok, `window ${i}: ${ok.message}`);
    const best = want.indexOf(Math.max(...want));
    assert.equal(r.label, LABELS[best], `window ${i}`);
  });
  // forwardBatch: the same fields, window by window.
  const batch = labelled.forwardBatch(windows);
  batch.forEach((r, i) => {
    const one = labelled.forward(windows[i]);
    assert.deepEqual(r.probabilities, one.probabilities);
    assert.equal(r.label, one.label);
  });
});

test('probabilities are computed stably (logits of +-1000) and a tie goes to the first label', async () => {
  // head.weight 0: the head is exactly its bias, whatever the window.
  const zeros = new Array(3 * 16).fill(0);
  const model = async (bias) => loadModel(edited('factorized', { config: (c) => { c.labels = LABELS; }, tensors: { 'head.weight': zeros, 'head.bias': bias } }), { warmup: false });
  const big = await model([1000, 999, -1000]);
  const r = big.forward(windows[0]);
  assert.deepEqual(Array.from(r.head), [1000, 999, -1000]);
  // exp(1000) is Infinity in float64: a softmax without the max subtracted gives NaN here.
  const e1 = Math.exp(-1);
  const ok = allClose(r.probabilities, [1 / (1 + e1), e1 / (1 + e1), 0], PROB_ATOL, 0);
  assert.ok(ok.ok, ok.message);
  assert.equal(r.label, 'rest');
  const tie = await model([5, 7, 7]);
  assert.equal(tie.forward(windows[0]).label, 'walk', 'a tie goes to the first of the tied outputs');
  const ok2 = allClose(tie.forward(windows[0]).probabilities, softmax64([5, 7, 7]), PROB_ATOL, 0);
  assert.ok(ok2.ok, ok2.message);
  big.dispose();
  tie.dispose();
});

test('a window with no present token: head is the bias (documented), probabilities and label are null', () => {
  const bias = Float32Array.from(readSafetensors(fixturePath('model/factorized.safetensors')).tensors['head.bias'].data);
  const missing = { streams: [{ ...ecg, samples: ecg.samples.map(() => null) }] };
  for (const w of [missing, { streams: [] }]) {
    const r = labelled.forward(w);
    assert.equal(r.tokens.present.length, 0);
    assert.deepEqual(r.head, bias, 'pooled is zero, so the head is its bias');
    assert.equal(r.probabilities, null);
    assert.equal(r.label, null);
  }
});

test('without labels forward gives neither probabilities nor label', () => {
  for (const name of ['factorized', 'time']) {
    const r = models.get(name).forward(windows[0]);
    assert.equal('probabilities' in r, false, name);
    assert.equal('label' in r, false, name);
  }
});

test('model.info: inputs, outputs, architecture and size, from the file as an independent reader sees it', async () => {
  for (const [name, m] of [...models, ['factorized+labels', labelled]]) {
    const bytes = readFileSync(fixturePath(`model/${name.replace('+labels', '')}.safetensors`));
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8'));
    const c = JSON.parse(header.__metadata__.config);
    const info = m.info;
    assert.deepEqual(info.inputs.modalities.map((x) => [x.name, x.patchLen]), c.modalities.map((x) => [x.name, x.patch_len]), name);
    // mean and std as the model uses them: float32
    assert.deepEqual(info.inputs.modalities.map((x) => [x.mean, x.std]), c.modalities.map((x) => [Math.fround(x.mean ?? 0), Math.fround(x.std ?? 1)]), name);
    assert.deepEqual(info.inputs.placements, c.placements, name);
    assert.equal(info.inputs.sensorCount, c.n_sensors, name);
    assert.deepEqual(info.inputs.rateBucketEdgesHz, c.rate_bucket_edges_hz ?? [], name);
    assert.equal(info.inputs.minPresentFraction, c.min_present_fraction ?? 0.5, name);
    assert.equal(info.outputs.embeddingSize, c.d_model, name);
    assert.equal(info.outputs.headSize, c.n_outputs ?? 0, name);
    assert.deepEqual(info.outputs.labels, name.endsWith('+labels') ? LABELS : null, name);
    assert.deepEqual(
      [info.layout, info.causal, info.dModel, info.nHeads, info.nLayers, info.dimFeedforward, info.activation, info.normFirst, info.finalNorm, info.timeBin, info.maxPeriod],
      [c.layout, c.causal ?? false, c.d_model, c.n_heads, c.n_layers, c.dim_feedforward, c.activation ?? 'relu', c.norm_first ?? false, c.final_norm ?? false, c.time_bin ?? 1, c.max_period ?? 10000], name);
    assert.equal(info.layerNormEps, Math.fround(c.layer_norm_eps ?? 1e-5), name);
    assert.equal(info.attentionLookbackS, c.attention_lookback_s ?? null, name);
    // Parameters: every tensor's elements but the time table (a buffer, as torch counts them).
    const params = Object.entries(header).filter(([t]) => t !== '__metadata__' && t !== 'time_encoding.inv_freq').reduce((n, [, t]) => n + t.shape.reduce((a, b) => a * b, 1), 0);
    assert.equal(info.size.parameters, params, name);
    assert.ok(info.size.weightBytes >= 4 * params + 8 * (c.d_model / 2), `${name}: ${info.size.weightBytes}`);
    assert.ok(Object.isFrozen(info) && Object.isFrozen(info.inputs.modalities[0]) && Object.isFrozen(info.inputs.placements), name);
  }
});

test('model.info fills in the defaults of a config that leaves them out', async () => {
  const optional = ['activation', 'norm_first', 'layer_norm_eps', 'causal', 'time_bin', 'max_period', 'min_present_fraction'];
  const m = await loadModel(edited('time', { config: (c) => { for (const k of optional) delete c[k]; } }), { warmup: false });
  const { info } = m;
  assert.deepEqual(
    [info.activation, info.normFirst, info.layerNormEps, info.causal, info.timeBin, info.maxPeriod, info.inputs.minPresentFraction, info.attentionLookbackS],
    ['relu', false, Math.fround(1e-5), false, 1, 10000, 0.5, null]);  // docs/model.md
  m.dispose();
  assert.equal(m.info, info, 'info stays readable after dispose()');
});

test('model.info.size.weightBytes is what loading the model adds to the WebAssembly heap', async () => {
  const { loadWasm } = await import('../../web/src/loader.js');
  const wasm = await loadWasm();
  const bytes = readFileSync(fixturePath('model/factorized.safetensors'));
  const before = wasm.heapUsed();
  const m = await loadModel(bytes, { warmup: false });
  const added = wasm.heapUsed() - before;
  // Besides the weights: the tensor maps' nodes and names, the config, layer tables (~100 tensors
  // of a few hundred bytes each): 32 KiB covers them.
  assert.ok(added >= m.info.size.weightBytes && added <= m.info.size.weightBytes + 32768, `heap +${added}, weightBytes ${m.info.size.weightBytes}`);
  m.dispose();
});

test('a getter that disposes the model or session while its input is read: DISPOSED, not an Embind or Type error', async () => {
  // Plain objects with getters are valid input (the window is read field by field); one that
  // disposes what is being called must meet the same error as a call after dispose().
  const file = new URL('../../demo/model/stream.safetensors', import.meta.url).pathname;
  const hr = (onRead) => ({ sensor: 2, modality: 'hr', placement: 'chest', samples: [60, 61], get timestamps() { onRead(); return [1, 2]; } });
  const model = await loadModel(file, { warmup: false });
  assert.throws(() => model.forward({ streams: [hr(() => model.dispose())] }), (e) => e instanceof SensorformerError && e.code === 'DISPOSED');
  const other = await loadModel(file, { warmup: false });
  const session = other.stream();
  assert.throws(() => session.push({ streams: [hr(() => session.dispose())] }), (e) => e instanceof SensorformerError && e.code === 'DISPOSED');
  const again = other.stream();
  assert.throws(() => again.pooled({ get seconds() { again.dispose(); return 10; } }), (e) => e instanceof SensorformerError && e.code === 'DISPOSED');
  other.dispose();
});
