// sensorformer/render's logic without a browser: what drawTrace reports (gaps, points, ranges),
// seriesFromStream, autoRange, tickStep and reorderMap. The pictures themselves are checked in
// Chromium by demo.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { autoRange, cellAt, drawAttentionMap, drawTimeAxis, drawTrace, headWeights, reorderMap, seriesFromStream, tickStep } from '../../web/src/render/index.js';

// A 2D context that records calls and draws nothing.
function fakeContext(width = 400, height = 60) {
  const calls = [];
  const target = { canvas: { width, height }, measureText: (t) => ({ width: 6 * String(t).length }) };
  return new Proxy(target, {
    get(t, key) {
      if (key in t) return t[key];
      return (...args) => { calls.push([key, ...args]); };
    },
    set(t, key, value) { t[key] = value; calls.push([`=${String(key)}`, value]); return true; },
  });
}

test('seriesFromStream: regular and event streams, null / NaN / present 0 are missing', () => {
  const r = seriesFromStream({ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 4, startTime: 10, samples: [1, null, 3, 4], present: [1, 1, 1, 0] });
  assert.deepEqual(Array.from(r.times), [10, 10.25, 10.5, 10.75]);
  assert.deepEqual(Array.from(r.values, (v) => (Number.isNaN(v) ? 'NaN' : v)), [1, 'NaN', 3, 'NaN']);
  const e = seriesFromStream({ sensor: 2, modality: 'rr', placement: 'chest', timestamps: [1, 1.8, 2.5], samples: [0.8, 0.7, null] });
  assert.deepEqual(Array.from(e.times), [1, 1.8, 2.5]);
  assert.ok(Number.isNaN(e.values[2]));
});

test('autoRange: covers the visible values, pads, keeps a minimum span, ignores missing', () => {
  const s = { times: [0, 1, 2, 3], values: [5, NaN, 7, 100] };
  const [lo, hi] = autoRange(s, { t0: 0, t1: 2.5, pad: 0 });
  assert.deepEqual([lo, hi], [5, 7]);
  const [a, b] = autoRange({ times: [0, 1], values: [33.6, 33.6] }, { minSpan: 1, pad: 0 });
  assert.ok(Math.abs(b - a - 1) < 1e-12 && Math.abs((a + b) / 2 - 33.6) < 1e-12);
  assert.equal(autoRange({ times: [0], values: [NaN] }), null);
});

test('tickStep: 1/2/5 x 10^k, at least the minimum spacing', () => {
  assert.equal(tickStep(15, 600), 2);
  assert.equal(tickStep(15, 1200), 1);
  assert.equal(tickStep(120, 600), 20);
  assert.equal(tickStep(0.5, 600), 0.05);
});

test('drawTrace: counts visible gaps and drawn samples, breaks lines at gaps and missing samples', () => {
  const ctx = fakeContext();
  const times = Array.from({ length: 100 }, (_, i) => i / 10);      // 0 .. 9.9 s at 10 Hz
  const values = times.map((t) => (t >= 4 && t < 5 ? null : Math.sin(t)));
  const out = drawTrace(ctx, { times, values }, { t0: 2, t1: 9, gaps: [[4, 5], [20, 21]], style: 'line', pixelRatio: 2 });
  assert.equal(out.gaps, 1, 'one of the two gaps is in view');
  assert.equal(out.points, 62, 'samples 1.9 .. 9.0 s (one before t0 continues the line) without the 10 missing ones');
  assert.equal(out.last.t, 9);
  const labels = [];
  const ctx2 = fakeContext();
  ctx2.fillText = (t) => labels.push(t);
  drawTrace(ctx2, { times, values }, { t0: 2, t1: 9, gaps: [[4, 5, true]] });
  assert.ok(labels.includes('gap…'), `an ongoing gap is labelled: ${labels}`);
  assert.throws(() => drawTrace(ctx, { times, values }, { t0: 5, t1: 5 }), RangeError);
});

test('drawTimeAxis: ticks relative to the reference', () => {
  const labels = [];
  const ctx = fakeContext(600, 20);
  ctx.fillText = (t) => labels.push(t);
  const { ticks } = drawTimeAxis(ctx, { t0: 100, t1: 115, reference: 115 });
  assert.deepEqual(ticks.map((t) => t - 115), [-14, -12, -10, -8, -6, -4, -2, 0]);
  assert.equal(labels[labels.length - 1], '0 s');
  assert.equal(labels[0], '−14');
});

test('reorderMap permutes rows and columns of every head; headWeights and cellAt agree with it', () => {
  const H = 2, g = 3;
  const weights = new Float32Array(H * g * g).map((_, i) => i);
  const map = { layer: 0, block: 'channel', group: 0, tokens: Int32Array.of(10, 11, 12), weights, dims: [H, g, g] };
  const order = [2, 0, 1];
  const r = reorderMap(map, order);
  assert.deepEqual(Array.from(r.tokens), [12, 10, 11]);
  for (let h = 0; h < H; h++)
    for (let i = 0; i < g; i++)
      for (let j = 0; j < g; j++) assert.equal(r.weights[h * g * g + i * g + j], weights[h * g * g + order[i] * g + order[j]]);
  const mean = headWeights(r, 'mean');
  assert.equal(mean[0], (r.weights[0] + r.weights[9]) / 2);
  assert.throws(() => reorderMap(map, [0, 1]), RangeError);

  // Node has neither ImageData nor OffscreenCanvas: minimal stand-ins for the cell image.
  globalThis.ImageData ??= class { constructor(w, h) { this.data = new Uint8ClampedArray(w * h * 4); } };
  globalThis.OffscreenCanvas ??= class { getContext() { return { putImageData() {} }; } };
  const ctx = fakeContext(300, 280);
  const { layout, max } = drawAttentionMap(ctx, r, { head: 1, pixelRatio: 2, colors: ['#f00', '#0f0', '#00f'], hover: { query: 0, key: 1 } });
  assert.equal(max, 17);
  assert.equal(layout.size, Math.min(150 - 92 - 56, 140 - 8 - 64), 'the layout is in CSS pixels');
  assert.deepEqual(cellAt(layout, layout.x0 + 0.5, layout.y0 + 0.5), { query: 0, key: 0 });
});
