// sensorformer/render: its logic in Node (what drawTrace reports, seriesFromStream, autoRange, the
// tick choice against hand-computed ticks, themes, tokenLabels, reorderMap), then its pictures in
// headless Chromium, read back pixel by pixel (axis text drawn, background per theme, an attention
// map that fills its canvas).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  THEMES, autoRange, cellAt, drawAttentionMap, drawTimeAxis, drawTrace, formatTick, headWeights, mapLayout, reorderMap,
  resolveTheme, seriesFromStream, tickStep, tokenLabels, valueTicks,
} from '../../web/src/render/index.js';
import { SensorformerError } from '../../web/src/errors.js';
import * as renderModule from '../../web/src/render/index.js';
import { demoServer, launchChromium, repo, watch } from './helpers.js';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A SensorformerError with this code and a message matching re (for assert.throws).
const code = (c, re) => (e) => e instanceof SensorformerError && e.code === c && re.test(e.message);

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
  assert.throws(() => drawTrace(ctx, { times, values }, { t0: 5, t1: 5 }), code('INVALID_ARGUMENT', /t0 < t1/));
  for (const range of [[1, 1], [2, 1], [NaN, 1], [0, Infinity], 'auto']) {
    assert.throws(() => drawTrace(ctx, { times, values }, { t0: 2, t1: 9, range }), code('INVALID_ARGUMENT', /range must be/), JSON.stringify(range));
  }
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
  assert.throws(() => reorderMap(map, [0, 1]), code('SHAPE_MISMATCH', /order has 2 entries/));
  assert.throws(() => headWeights(map, 2), code('INDEX_OUT_OF_RANGE', /head must be 0..1/));

  // Node has neither ImageData nor OffscreenCanvas: minimal stand-ins for the cell image.
  globalThis.ImageData ??= class { constructor(w, h) { this.data = new Uint8ClampedArray(w * h * 4); } };
  globalThis.OffscreenCanvas ??= class { getContext() { return { putImageData() {} }; } };
  const ctx = fakeContext(300, 280);
  const { layout, max } = drawAttentionMap(ctx, r, { head: 1, pixelRatio: 2, colors: ['#f00', '#0f0', '#00f'], hover: { query: 0, key: 1 } });
  assert.equal(max, 17);
  // fakeContext measures 6 px per character: labels "0".."2" are 6 px, the bar's "17.00" 30 px.
  // left = 4 + 6 (strips) + 6 + 2 = 18; right = 8 + 10 + 4 + 30 + 2 = 54; top = 6;
  // bottom = ceil(10 + (6 + 10) / sqrt 2 + 2 + 12) = 36 (axis title on). CSS px: 150 x 140.
  assert.deepEqual([layout.x0, layout.y0, layout.width, layout.height], [18, 6, 150 - 18 - 54, 140 - 6 - 36], 'the layout is in CSS pixels and fills the canvas');
  assert.deepEqual(cellAt(layout, layout.x0 + 0.5, layout.y0 + 0.5), { query: 0, key: 0 });
  assert.deepEqual(cellAt(layout, layout.x0 + layout.width - 0.5, layout.y0 + layout.height - 0.5), { query: 2, key: 2 });
  assert.equal(cellAt(layout, layout.x0 + layout.width + 0.5, layout.y0), null);
});

test('valueTicks: 1/2/5 x 10^k steps at least minPixels apart, hand-computed', () => {
  // [lo, hi] over 80 px, 20 px apart at least: span 900 -> raw step 225 -> 500 (ticks -500..500
  // would leave only 0 inside), so 500 gives one tick and the next step down (200, 17.8 px >= 12)
  // is used: -400 .. 400.
  assert.deepEqual(valueTicks(-450, 450, 80), { step: 200, decimals: 0, ticks: [-400, -200, 0, 200, 400] });
  // span 12 over 38 px: raw 6.3 -> 10: 60 and 70.
  assert.deepEqual(valueTicks(60, 72, 38), { step: 10, decimals: 0, ticks: [60, 70] });
  // span 1 over 100 px: raw 0.2 -> 0.2, both ends are ticks (within rounding).
  assert.deepEqual(valueTicks(0, 1, 100), { step: 0.2, decimals: 1, ticks: [0, 0.2, 0.4, 0.6, 0.8, 1] });
  // span 0.6 over 40 px: raw 0.3 -> 0.5 leaves only 0; 0.2 is 13.3 px apart (>= 12): -0.2, 0, 0.2.
  assert.deepEqual(valueTicks(-0.3, 0.3, 40), { step: 0.2, decimals: 1, ticks: [-0.2, 0, 0.2] });
  // span 0.03 over 200 px: raw 0.003 -> 0.005: three decimals.
  assert.deepEqual(valueTicks(97.99, 98.02, 200), { step: 0.005, decimals: 3, ticks: [97.99, 97.995, 98, 98.005, 98.01, 98.015, 98.02] });
  // too short for two ticks 12 px apart: one tick rather than unreadable ones
  assert.deepEqual(valueTicks(-450, 450, 38).ticks, [0]);
  for (const bad of [[1, 1, 50], [2, 1, 50], [NaN, 1, 50], [0, Infinity, 50], [0, 1, 0]]) assert.deepEqual(valueTicks(...bad).ticks, [], `${bad}`);
  assert.equal(formatTick(-0.2, 1), '−0.2');
  assert.equal(formatTick(-1e-12, 1), '0.0', 'no "−0.0"');
  assert.equal(formatTick(1000, 0), '1000');
});

test('drawTrace: value-axis labels carry the units on the top tick; no axis, no labels', () => {
  const labels = [];
  const ctx = fakeContext(300, 100);
  ctx.fillText = (t) => labels.push(t);
  const series = { times: [0, 1, 2], values: [-450, 0, 450] };
  const out = drawTrace(ctx, series, { t0: 0, t1: 2, range: [-450, 450], units: 'µV', timeAxis: false, theme: 'dark' });
  // plot 100 - 4 - 4 = 92 px tall: raw step 900 * 20 / 92 = 196 -> 200
  assert.deepEqual(out.ticks, [-400, -200, 0, 200, 400]);
  assert.deepEqual(labels, ['−400', '−200', '0', '200', '400 µV']);
  assert.equal(out.layout.x0, 50, 'the default gutter: VALUE_AXIS_WIDTH');
  const none = [];
  const ctx2 = fakeContext(300, 100);
  ctx2.fillText = (t) => none.push(t);
  const out2 = drawTrace(ctx2, series, { t0: 0, t1: 2, range: [-450, 450], valueAxis: false, timeAxis: false, theme: 'dark' });
  assert.deepEqual(none, []);
  assert.equal(out2.layout.x0, 8);
  // nothing in view and no range: no made-up scale on the axis
  const empty = [];
  const ctx3 = fakeContext(300, 100);
  ctx3.fillText = (t) => empty.push(t);
  const out3 = drawTrace(ctx3, { times: [0, 1], values: [NaN, null] }, { t0: 0, t1: 2, units: 'µV', timeAxis: false, theme: 'dark' });
  assert.deepEqual([empty, out3.ticks, out3.range], [[], [], [0, 1]]);
});

// Each case finished within the test's own time: before these checks the first ones ran out of
// memory (a tick loop whose k++ stopped moving past 2^53) or never returned.
test('degenerate scales draw without ticks instead of looping: values a float64 unit apart, a reference 1e17 s away, huge or zero pixel ratios refused', () => {
  const ctx = fakeContext(300, 150);
  // 0.1 + 0.2 against 0.3: a flat signal, drawn at least a billionth of its size wide (autoRange)
  const flat = drawTrace(ctx, { times: [0, 1, 2], values: [0.3, 0.1 + 0.2, 0.3] }, { t0: 0, t1: 2 });
  assert.ok(flat.range[1] - flat.range[0] >= 0.3e-9 && flat.range[0] < 0.3 && flat.range[1] > 0.3, `range ${flat.range}`);
  assert.ok(flat.ticks.length >= 1 && flat.ticks.length <= 10, `ticks ${flat.ticks}`);
  assert.deepEqual(autoRange({ times: [0, 1], values: [1e16, 1e16 + 4] }, { pad: 0 }), [1e16 + 2 - 5e6, 1e16 + 2 + 5e6], 'span at least 1e-9 of the values, around their middle');
  // a given range 4 units wide at 1e16: no tick is a safe integer count of steps away
  assert.deepEqual(drawTrace(ctx, { times: [0, 1], values: [1, 2] }, { t0: 0, t1: 2, range: [1e16, 1e16 + 4] }).ticks, [], 'no ticks, no hang');
  assert.deepEqual(valueTicks(1e16, 1e16 + 4, 100).ticks, []);
  assert.deepEqual(valueTicks(0.76, 4.24, Infinity).ticks, [], 'infinitely many pixels: no ticks');
  // a reference far from the view (nanoseconds given where seconds are): no grid, no time ticks
  assert.deepEqual(drawTrace(ctx, { times: [0, 1], values: [1, 2] }, { t0: 0, t1: 2, reference: 1e17 }).timeTicks, []);
  assert.deepEqual(drawTimeAxis(ctx, { t0: 0, t1: 2, reference: 1e17 }).ticks, []);
  for (const reference of [NaN, Infinity]) {
    assert.throws(() => drawTrace(ctx, { times: [0], values: [1] }, { t0: 0, t1: 2, reference }), code('INVALID_ARGUMENT', /reference must be a finite time/));
    assert.throws(() => drawTimeAxis(ctx, { t0: 0, t1: 2, reference }), code('INVALID_ARGUMENT', /reference must be a finite time/));
  }
  for (const pixelRatio of [0, 1e-6, -1, 17, NaN, '2']) {
    const bad = code('INVALID_ARGUMENT', /pixelRatio must be a number from 0\.1 to 16/);
    assert.throws(() => drawTrace(ctx, { times: [0], values: [1] }, { t0: 0, t1: 2, pixelRatio }), bad, String(pixelRatio));
    assert.throws(() => drawTimeAxis(ctx, { t0: 0, t1: 2, pixelRatio }), bad, String(pixelRatio));
    assert.throws(() => drawAttentionMap(ctx, { dims: [1, 2, 2], weights: new Float32Array(4) }, { pixelRatio }), bad, String(pixelRatio));
  }
  assert.throws(() => drawTrace(ctx, { times: [0], values: [1] }, { t0: 0, t1: 2, gaps: {} }), code('INVALID_ARGUMENT', /gaps must be an array/));
  assert.throws(() => drawTrace(ctx, { times: [0], values: [1] }, { t0: 0, t1: 2, highlights: [null] }), code('INVALID_ARGUMENT', /highlights must be an array/));
});

test('attention maps: dims and weights must agree, a permutation reorders, a NaN weight leaves the scale to the others, bad options are INVALID_ARGUMENT', () => {
  globalThis.ImageData ??= class { constructor(w, h) { this.data = new Uint8ClampedArray(w * h * 4); } };
  globalThis.OffscreenCanvas ??= class { getContext() { return { putImageData() {} }; } };
  const ctx = fakeContext(300, 280);
  const map = { dims: [1, 2, 2], weights: Float32Array.of(0.25, NaN, 0.5, 0.5) };
  assert.equal(drawAttentionMap(ctx, map).max, 0.5, 'the largest finite weight tops the scale');
  assert.equal(drawAttentionMap(ctx, map, { maxWeight: 1, labels: null, absent: null }).max, 1);
  const shape = code('SHAPE_MISMATCH', /dims \[1, 3, 3\] need 9 weights, it has 4/);
  assert.throws(() => drawAttentionMap(ctx, { dims: [1, 3, 3], weights: new Float32Array(4) }), shape);
  assert.throws(() => headWeights({ dims: [1, 3, 3], weights: new Float32Array(4) }, 0), shape);
  assert.throws(() => drawAttentionMap(ctx, { dims: [1, 6000, 6000], weights: new Float32Array(4) }), code('SHAPE_MISMATCH', /need 36000000 weights/));
  for (const bad of [{ dims: [1, 0, 0], weights: [] }, { weights: [1] }, { dims: [1, 2, 3], weights: new Float32Array(6) }, null])
    assert.throws(() => drawAttentionMap(ctx, bad), code('INVALID_ARGUMENT', /map must be an attention map/), JSON.stringify(bad));
  for (const maxWeight of ['1', 0, -1, NaN, Infinity])
    assert.throws(() => drawAttentionMap(ctx, map, { maxWeight }), code('INVALID_ARGUMENT', /maxWeight must be a finite number > 0 or null/), String(maxWeight));
  assert.throws(() => drawAttentionMap(ctx, map, { labels: 'ab' }), code('INVALID_ARGUMENT', /labels must be an array/));
  for (const order of [[0, 5], [1, 1], [0, 0.5]])
    assert.throws(() => reorderMap(map, order), code('INVALID_ARGUMENT', /order must hold each of 0\.\.1 once/), JSON.stringify(order));
  const tokens = { time: Float64Array.of(0, 1), modality: ['ecg', 'ecg'], stream: Int32Array.of(0, 0) };
  for (const digits of [-1, 101, 1.5, '2'])
    assert.throws(() => tokenLabels(tokens, null, { digits }), code('INVALID_ARGUMENT', /digits must be an integer from 0 to 20/), String(digits));
  assert.deepEqual(tokenLabels(tokens, null, { digits: 0 }), ['ecg 0 s', 'ecg 1 s']);
});

test('resolveTheme: auto follows prefers-color-scheme; objects over a base; bad names are errors', () => {
  const saved = globalThis.matchMedia;
  try {
    globalThis.matchMedia = (q) => ({ matches: q === '(prefers-color-scheme: dark)' });
    assert.equal(resolveTheme('auto'), THEMES.dark);
    assert.equal(resolveTheme(), THEMES.dark, "'auto' is the default");
    globalThis.matchMedia = () => ({ matches: false });
    assert.equal(resolveTheme('auto'), THEMES.light);
    delete globalThis.matchMedia;
    assert.equal(resolveTheme('auto'), THEMES.light, 'no matchMedia (Node, a Worker): light');
  } finally {
    if (saved) globalThis.matchMedia = saved; else delete globalThis.matchMedia;
  }
  assert.deepEqual(resolveTheme({ base: 'dark', color: '#123456' }), { ...THEMES.dark, color: '#123456' });
  assert.throws(() => resolveTheme('solarized'), code('INVALID_ARGUMENT', /solarized/));
  assert.throws(() => drawTrace(fakeContext(), { times: [0, 1], values: [0, 1] }, { t0: 0, t1: 1, theme: 'blue' }), code('INVALID_ARGUMENT', /blue/));
});

test('tokenLabels: modality and seconds after the first token, per map group', () => {
  const tokens = {
    stream: Int32Array.of(0, 0, 1, 2, 2),
    modality: ['ecg', 'ecg', 'hr', 'acc_x', 'acc_x'],
    time: Float64Array.of(100, 103.25, 100.5, 100, 102),
    present: Uint8Array.of(1, 1, 1, 1, 0),
  };
  assert.deepEqual(tokenLabels(tokens), ['ecg 0.0 s', 'ecg 3.3 s', 'hr 0.5 s', 'acc_x 0.0 s', 'acc_x 2.0 s']);
  assert.deepEqual(tokenLabels(tokens, { tokens: Int32Array.of(1, 2) }, { names: { ecg: 'ECG' } }), ['ECG 3.3 s', 'hr 0.5 s']);
  assert.deepEqual(tokenLabels(tokens, [0, 4], { reference: 104, digits: 2 }), ['ecg −4.00 s', 'acc_x −2.00 s']);
  // two streams of one modality are told apart
  const two = { stream: Int32Array.of(0, 1), modality: ['acc_x', 'acc_x'], time: Float64Array.of(0, 0), present: Uint8Array.of(1, 1) };
  assert.deepEqual(tokenLabels(two), ['acc_x #0 0.0 s', 'acc_x #1 0.0 s']);
  assert.throws(() => tokenLabels(tokens, [5]), code('INDEX_OUT_OF_RANGE', /token index 5 is not in 0..4/));
  assert.throws(() => tokenLabels({ time: [] }), code('INVALID_ARGUMENT', /forward result/));
});

test('mapLayout: fill reaches the margins, square keeps square cells centred', () => {
  const margins = { left: 40, top: 6, right: 30, bottom: 50 };
  const f = mapLayout(400, 300, 10, { margins });
  assert.deepEqual([f.x0, f.y0, f.width, f.height, f.cellWidth, f.cellHeight], [40, 6, 330, 244, 33, 24.4]);
  const sq = mapLayout(400, 300, 10, { margins, fit: 'square' });
  assert.deepEqual([sq.x0, sq.y0, sq.width, sq.height, sq.cell], [40 + (330 - 244) / 2, 6, 244, 244, 24.4]);
  assert.throws(() => mapLayout(400, 300, 10, { fit: 'cover' }), code('INVALID_ARGUMENT', /cover/));
});

test('web/render.d.ts declares what the module exports, and a strict TypeScript consumer compiles', () => {
  const dts = readFileSync(join(repo, 'web/render.d.ts'), 'utf8');
  const declared = [...dts.matchAll(/^export (?:function|const) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(declared)].sort(), Object.keys(renderModule).sort(), 'web/render.d.ts and web/src/render/index.js disagree');
  // tsc --strict on tests/browser/fixtures/render-consumer.ts: every new option is used, two
  // @ts-expect-error lines (an unknown theme, a misspelt option) must be errors.
  const dir = mkdtempSync(join(tmpdir(), 'render-tsc-'));
  try {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] },
      files: [join(repo, 'tests/browser/fixtures/render-consumer.ts')],
    }));
    const r = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc --strict failed on the render consumer:\n${r.stdout}${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// --- pictures, in Chromium ------------------------------------------------------------------

const browserCtx = {};
before(async () => {
  browserCtx.server = await demoServer();
  browserCtx.browser = await launchChromium();
  browserCtx.page = await browserCtx.browser.newPage({ viewport: { width: 800, height: 600 } });
  browserCtx.watch = watch(browserCtx.page, browserCtx.server.url.replace(/\/$/, ''));
  // A blank page on the server's origin (the package is served at /web/), so the module imports.
  const blank = `${browserCtx.server.url}render-test.html`;
  await browserCtx.page.route(blank, (r) => r.fulfill({ contentType: 'text/html', body: '<!doctype html><meta charset="utf-8"><title>render</title>' }));
  await browserCtx.page.goto(blank);
});
after(async () => {
  await browserCtx.browser?.close();
  await browserCtx.server?.close();
});

// Runs fn(render, arg) in the page with sensorformer/render imported; fn returns plain data.
function inPage(fn, arg) {
  return browserCtx.page.evaluate(async ([src, a]) => {
    const render = await import('/web/src/render/index.js');
    // eslint-disable-next-line no-new-func
    return (0, eval)(`(${src})`)(render, a);
  }, [fn.toString(), arg]);
}

// In the page: a canvas drawn by draw(ctx, render) -> per-region counts of pixels that differ
// from `bg` ([r, g, b]) by more than 24 (sum of channel differences: antialiased text edges count,
// JPEG-like noise does not exist on a canvas).
const PIXELS = `(canvas, regions, bg) => {
  const ctx = canvas.getContext('2d');
  const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  const out = {};
  for (const [name, [x0, y0, x1, y1]] of Object.entries(regions)) {
    let n = 0;
    for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) {
      const i = 4 * (y * canvas.width + x);
      if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 24) n++;
    }
    out[name] = n;
  }
  return out;
}`;

const hex = (c) => [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16));

test('drawTrace in Chromium: value-axis and time-axis text are drawn; the background follows the theme', async () => {
  for (const scheme of ['dark', 'light']) {
    await browserCtx.page.emulateMedia({ colorScheme: scheme });
    for (const theme of ['dark', 'light', 'auto']) {
      const r = await inPage((render, { theme, PIXELS }) => {
        const count = (0, eval)(`(${PIXELS})`);
        const canvas = document.createElement('canvas');
        canvas.width = 400; canvas.height = 120;
        // read back here: willReadFrequently keeps Chromium from warning about it
        const ctx = canvas.getContext('2d', { willReadFrequently: true });
        const times = Array.from({ length: 401 }, (_, i) => i / 40);
        const values = times.map((t) => 400 * Math.sin(2 * Math.PI * t));
        const out = render.drawTrace(ctx, { times, values }, { t0: 0, t1: 10, range: [-500, 500], units: 'µV', theme });
        const L = out.layout;
        const bg = [...ctx.getImageData(1, 1, 1, 1).data].slice(0, 3);
        const regions = {
          valueAxis: [0, Math.round(L.y0), Math.round(L.x0) - 4, Math.round(L.y1)],
          timeAxis: [Math.round(L.x0), Math.round(L.y1) + 5, Math.round(L.x1), 120],
        };
        const plain = document.createElement('canvas');
        plain.width = 400; plain.height = 120;
        render.drawTrace(plain.getContext('2d', { willReadFrequently: true }), { times, values }, { t0: 0, t1: 10, range: [-500, 500], theme, valueAxis: false, timeAxis: false, padding: render.tracePadding() });
        return { bg, drawn: count(canvas, regions, bg), bare: count(plain, regions, bg), ticks: out.ticks, timeTicks: out.timeTicks.length };
      }, { theme, PIXELS });
      const expected = theme === 'auto' ? scheme : theme;
      assert.deepEqual(r.bg, hex(THEMES[expected].background), `theme ${theme} with prefers-color-scheme ${scheme}: background`);
      // 10 px labels: a digit has some 15-30 text pixels; five labels and "µV" are far more than 40
      assert.ok(r.drawn.valueAxis > 40, `theme ${theme}: the value axis's text is missing: ${JSON.stringify(r)}`);
      assert.ok(r.drawn.timeAxis > 40, `theme ${theme}: the time axis's text is missing: ${JSON.stringify(r)}`);
      // plot 120 - 4 - (4 + 16) = 96 px for 1000: raw step 1000 * 20 / 96 = 208 -> 500
      assert.deepEqual(r.ticks, [-500, 0, 500]);
      assert.ok(r.timeTicks >= 4, `time ticks: ${r.timeTicks}`);
      // the same regions of a trace drawn without axes (same plot area) hold only background
      assert.deepEqual(r.bare, { valueAxis: 0, timeAxis: 0 }, `no axes asked, yet pixels where they go: ${JSON.stringify(r)}`);
    }
  }
  assert.deepEqual(await browserCtx.watch.problems(), []);
});

test('drawAttentionMap in Chromium: map, labels and colour bar fill the canvas (no empty band)', async () => {
  for (const [w, hgt] of [[400, 400], [420, 360], [300, 520]]) {
    const r = await inPage((render, { w, hgt }) => {
      const canvas = document.createElement('canvas');
      canvas.width = w; canvas.height = hgt;
      const ctx = canvas.getContext('2d', { willReadFrequently: true });
      const g = 16, H = 2;
      // a fixed, non-flat map: weights from the cell index, rows normalised like softmax rows
      const weights = new Float32Array(H * g * g).map((_, i) => 1 + ((i * 7919) % 13));
      for (let r0 = 0; r0 < H * g; r0++) {
        let s = 0;
        for (let j = 0; j < g; j++) s += weights[r0 * g + j];
        for (let j = 0; j < g; j++) weights[r0 * g + j] /= s;
      }
      const tokens = { stream: new Int32Array(g), modality: Array(g).fill('ecg'), time: Float64Array.from({ length: g }, (_, i) => 100 + 0.4 * i), present: new Uint8Array(g).fill(1) };
      const labels = render.tokenLabels(tokens, null, { names: { ecg: 'ECG' } });
      const { layout } = render.drawAttentionMap(ctx, { weights, dims: [H, g, g] }, { labels, theme: 'light' });
      const d = ctx.getImageData(0, 0, w, hgt).data;
      const bg = [d[0], d[1], d[2]];
      // the longest run of rows and of columns that hold background only
      const rowEmpty = (y) => { for (let x = 0; x < w; x++) { const i = 4 * (y * w + x); if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 24) return false; } return true; };
      const colEmpty = (x) => { for (let y = 0; y < hgt; y++) { const i = 4 * (y * w + x); if (Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1]) + Math.abs(d[i + 2] - bg[2]) > 24) return false; } return true; };
      let lastRow = -1, lastCol = -1, emptyRows = 0, emptyCols = 0;
      for (let y = 0, run = 0; y < hgt; y++) {
        if (!rowEmpty(y)) { lastRow = y; run = 0; } else emptyRows = Math.max(emptyRows, ++run);
      }
      for (let x = 0, run = 0; x < w; x++) {
        if (!colEmpty(x)) { lastCol = x; run = 0; } else emptyCols = Math.max(emptyCols, ++run);
      }
      return { bg, lastRow, lastCol, emptyRows, emptyCols, layout: { x0: layout.x0, y0: layout.y0, width: layout.width, height: layout.height } };
    }, { w, hgt });
    assert.deepEqual(r.bg, hex(THEMES.light.background));
    // The lowest drawn pixels (the rotated key labels) and the rightmost (the colour bar's "0.xx")
    // come within a few px of the edges: 6 px covers the 2 px of slack in the margins plus the
    // descender and antialiasing of 10 px text.
    assert.ok(r.lastRow >= hgt - 7, `${w}x${hgt}: the bottom ${hgt - 1 - r.lastRow} px of the canvas are empty: ${JSON.stringify(r)}`);
    assert.ok(r.lastCol >= w - 7, `${w}x${hgt}: the right ${w - 1 - r.lastCol} px of the canvas are empty: ${JSON.stringify(r)}`);
    // No band of empty rows or columns anywhere (the old fixed margins left 76 px and more under
    // the labels of a square canvas, 360 px in a tall one): at most the 6 px top margin.
    assert.ok(r.emptyRows <= 8 && r.emptyCols <= 8, `${w}x${hgt}: an empty band of ${r.emptyRows} rows / ${r.emptyCols} columns: ${JSON.stringify(r)}`);
    assert.ok(r.layout.y0 <= 7 && r.layout.x0 <= 80, `${w}x${hgt}: the cells start far from the top-left: ${JSON.stringify(r.layout)}`);
  }
  assert.deepEqual(await browserCtx.watch.problems(), []);
});
