// The committed streaming demo model (demo/model/stream.safetensors) against its description:
// the config its metrics file and docs/model.md "Training a model for streaming" state, F16
// weights, and the outputs PyTorch computed for the same file on held-out windows whose
// reference time is 4 h before their start (tests/fixtures/stream_model_windows.json, written
// by tools/demo/train_stream_model.py; CI never runs PyTorch). Retraining without regenerating
// the fixture, or editing the file or the metrics by hand, fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';

import { loadModel } from '../../web/src/index.js';
import { allClose, fixturePath } from './safetensors.js';

const root = new URL('../../', import.meta.url).pathname;
const modelPath = `${root}demo/model/stream.safetensors`;
const metrics = JSON.parse(readFileSync(`${root}demo/model/stream-metrics.json`, 'utf8'));
const fixture = JSON.parse(readFileSync(fixturePath('stream_model_windows.json'), 'utf8'));

// Logits of the WebAssembly core (float32) against PyTorch's float32 module on the same F16
// weights: both sum ~270 tokens through 2 factorized layers in different orders; measured worst
// difference 7.2e-7, so 1e-4 leaves room for summation order on other engines and none for a
// changed model (the windowed demo model in its place is off by 1.1; retraining moves logits by
// whole units).
const ATOL = 1e-4;

// IEEE 754 binary16 -> number (the test reads the file itself, not through the code it tests).
function f16(bits) {
  const s = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function readHeader(path) {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const tensor = (name) => {
    const { dtype, shape, data_offsets: [b, e] } = header[name];
    assert.equal(dtype, 'F16', name);
    const out = [];
    for (let i = 8 + n + b; i < 8 + n + e; i += 2) out.push(f16(bytes.readUInt16LE(i)));
    return { shape, data: out };
  };
  return { header, config: JSON.parse(header.__metadata__.config), tensor };
}

const argmax = (z) => Array.from(z).reduce((best, v, i) => (v > z[best] ? i : best), 0);

test('stream.safetensors: causal, look-back and labels as described, every weight F16', () => {
  const { header, config } = readHeader(modelPath);
  const windowed = readHeader(`${root}demo/model/demo.safetensors`).config;
  assert.equal(config.causal, true);
  assert.equal(config.attention_lookback_s, metrics.attention_lookback_s);
  assert.equal(metrics.causal, true);
  // Everything else is the windowed demo model's config: same streams, tokenizer and labels.
  const { causal, attention_lookback_s: w, ...rest } = config;
  const { causal: c0, attention_lookback_s: w0, ...rest0 } = windowed;
  assert.equal(c0, false);
  assert.equal(w0 ?? null, null);
  assert.deepEqual(rest, rest0);
  assert.deepEqual(config.labels, metrics.dataset.labels);
  // receptive field n_layers * (W + min(W, time_bin)) (docs/model.md "Training a model for streaming")
  assert.equal(metrics.receptive_field_seconds, config.n_layers * (w + Math.min(w, config.time_bin)));
  assert.equal(metrics.objective.context_seconds, metrics.receptive_field_seconds);
  assert.equal(metrics.dataset.contextSeconds, metrics.objective.context_seconds);
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    // the time encoding's table keeps its own precision (docs/model.md "Weights file")
    assert.equal(info.dtype, name === 'time_encoding.inv_freq' ? 'F64' : 'F16', name);
  }
  assert.equal(statSync(modelPath).size, metrics.model_file.bytes);
  assert.equal(metrics.model_file.dtype, 'F16');
});

test('stream-metrics.json: held-out accuracy at every documented reference offset', () => {
  for (const off of ['0', '600', '3600', '14400']) {
    const a = metrics.accuracy_by_offset[off];
    assert.ok(a >= 0 && a <= 1, `offset ${off}: ${a}`);
    assert.ok(metrics.windowed_model_by_offset.accuracy_by_offset[off] >= 0, `windowed, offset ${off}`);
  }
  assert.equal(metrics.accuracy, metrics.accuracy_by_offset[String(metrics.accuracy_offset_seconds)]);
  assert.equal(fixture.offset_seconds, metrics.accuracy_offset_seconds);
  assert.equal(fixture.held_out_session, metrics.held_out_session);
});

test('stream.safetensors far from its reference time: the WASM core gives PyTorch\'s logits and labels', async () => {
  const model = await loadModel(modelPath);
  const { tensor } = readHeader(modelPath);
  const W = tensor('head.weight'), b = tensor('head.bias');
  const [nOut, d] = W.shape;
  try {
    assert.ok(fixture.windows.length >= 3);
    const seen = new Set();
    let correct = 0;
    for (const [i, item] of fixture.windows.entries()) {
      const w = item.window;
      // 4 h between the reference time and the first sample: the setting the offsets train for
      const first = Math.min(...w.streams.map((s) => s.startTime ?? s.timestamps[0]));
      assert.ok(first - w.referenceTime >= fixture.offset_seconds - 1e-6, `window ${i}`);
      const r = model.forward(w);
      assert.equal(r.referenceTime, w.referenceTime);
      const full = allClose(r.head, item.forwardHead, ATOL, 0);
      assert.ok(full.ok, `window ${i}, forward head: ${full.message}`);

      // session.pooled({ seconds: 10 }): masked mean of the present tokens of the last 10 s,
      // then the head, recomputed here from forward's embeddings and the file's F16 head.
      const pooled = new Float64Array(d);
      let count = 0;
      for (let t = 0; t < r.dims[0]; t++) {
        if (!r.tokens.present[t] || r.tokens.time[t] < item.poolFrom) continue;
        count++;
        for (let k = 0; k < d; k++) pooled[k] += r.embeddings[t * d + k];
      }
      assert.ok(count > 0, `window ${i}: no present token in the last ${fixture.pooled_seconds} s`);
      const head = Array.from({ length: nOut }, (_, o) => {
        let z = b.data[o];
        for (let k = 0; k < d; k++) z += W.data[o * d + k] * (pooled[k] / count);
        return z;
      });
      const streaming = allClose(head, item.streamingHead, ATOL, 0);
      assert.ok(streaming.ok, `window ${i}, pooled last ${fixture.pooled_seconds} s: ${streaming.message}`);
      // the label PyTorch predicted for the same file (the fixture's windows were chosen by
      // position, not by outcome, so a wrong prediction would be recorded, not hidden)
      const label = model.config.labels[argmax(head)];
      assert.equal(label, item.predicted, `window ${i}: label`);
      assert.equal(model.config.labels[argmax(item.streamingHead)], item.predicted, `window ${i}: fixture`);
      if (label === item.label) correct++;
      seen.add(item.label);
    }
    assert.deepEqual([...seen].sort(), [...model.config.labels].sort(), 'windows of every label');
    // docs/model.md states the model's held-out accuracy at 4 h (100 % when trained; >= 90 % is
    // the floor below which the docs' claim would be false); on six windows at most one miss is
    // consistent with it.
    assert.ok(metrics.accuracy >= 0.9, `metrics accuracy ${metrics.accuracy}`);
    assert.ok(correct >= fixture.windows.length - 1, `${correct}/${fixture.windows.length} correct`);
  } finally {
    model.dispose();
  }
});
