// The demo page's stream mode (issue 12) in headless Chromium: the stream model (causal, with
// attention_lookback_s) is the default, a session in the Worker is fed from the simulated strap as
// notifications arrive, the prediction updates as patches become final, the newest token's
// look-back attention is drawn, the latency and update-cost readouts show numbers. With ?record=1
// the page keeps every chunk it pushed and every prediction: the test recomputes them from the
// same chunks with a full model.forward in Node (the rows' masked mean and the head from the
// weights file), follows a simulated disconnect (a gap marked, no session error, nothing lost),
// and switches to the windowed model and back; a stream model that does not load sends the page
// back to the windowed model, from window mode too; overlapping starts of the stream mode's
// session and of the windowed loop run one each (Node). Screenshot: test-artifacts/demo-stream.png.
//
// Every wait is for a condition with a deadline (helpers.waitFor); no timing is asserted (the
// latency and update-cost medians are logged for the record).
//
//   node --test tests/browser/demo-stream.test.js
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { loadModel } from '../../web/src/index.js';
import { InferenceLoop } from '../../demo/ui/inference.js';
import { StreamInference } from '../../demo/ui/stream-inference.js';
import { CSP_HOOK, canvasStats, ensureArtifacts, log, missingSlots, openDemoPage, repo, simulateDisconnect, unlabeledCopy, waitFor, watch, windowFromChunks } from './helpers.js';

const SEED = 9912;    // the seed of demo.test.js: late first thermometer reading (a stream joining late)
const OUTAGE = 1;     // s out of range: the device layer's first retry (2 s) gets the strap back
const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
const ctx = {};

before(async () => {
  Object.assign(ctx, await openDemoPage('stream', `seed=${SEED}&outage=${OUTAGE}&record=1`));
});

after(async () => {
  await ctx.browser?.close();
  await ctx.server?.close();
  ctx.model?.cleanup();
  log('stream', `done in ${elapsed()}`);
});

const predictions = () => Number(document.querySelector('#updates')?.dataset.count);

// The page's recording as plain arrays (NaN as null: it crosses as JSON).
const RECORDING = () => {
  const r = globalThis.sensorformerDemo.recording();
  const plain = (x) => (x == null ? x : Array.from(x, (v) => (Number.isNaN(v) ? null : v)));
  return {
    streamIds: [...r.streamIds],
    chunks: r.chunks.map((c) => ({
      streams: c.streams.map((s) => s && {
        ...s, samples: plain(s.samples), timestamps: plain(s.timestamps), present: plain(s.present),
      }),
    })),
    predictions: r.predictions.map((p) => ({ ...p, pooled: plain(p.pooled), head: plain(p.head), probabilities: plain(p.probabilities) })),
    received: Object.fromEntries(Object.entries(r.received).map(([id, v]) => [id, plain(v)])),
    shown: { label: document.querySelector('#predicted').textContent, best: document.querySelector('.prob.best .name')?.textContent ?? null },
    stats: globalThis.sensorformerDemo.stats(),
    // The feeder's accounting in the same task as the chunks and values above, so that nothing
    // moves from pending to a chunk between the two.
    feed: globalThis.sensorformerDemo.feed(),
  };
};

/** An F16 bit pattern's value (IEEE 754 binary16). */
function f16(bits) {
  const sign = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The head (a Linear layer on the pooled vector: docs/model.md "Outputs") from the weights file. */
function headOf(path) {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const tensor = (name) => {
    const { dtype, shape, data_offsets: [a, b] } = header[name];
    const raw = bytes.subarray(8 + n + a, 8 + n + b);
    const values = dtype === 'F16' ? Array.from({ length: raw.length / 2 }, (_, i) => f16(raw.readUInt16LE(2 * i)))
      : Array.from({ length: raw.length / 4 }, (_, i) => raw.readFloatLE(4 * i));
    return { shape, values };
  };
  const w = tensor('head.weight'), bias = tensor('head.bias');
  const [out, d] = w.shape;
  return (x) => Array.from({ length: out }, (_, o) => {
    let z = bias.values[o];
    for (let j = 0; j < d; j++) z += w.values[o * d + j] * x[j];
    return z;
  });
}

test('stream mode is the default: predictions as patches become final, the look-back strip, latency and update cost', async () => {
  const page = ctx.page;
  await waitFor(page, 'the stream mode', () => document.querySelector('#mode')?.dataset.mode === 'stream' && !document.querySelector('#lookback-row').hidden);
  await waitFor(page, 'three streamed predictions', () => Number(document.querySelector('#updates')?.dataset.count) >= 3 && document.querySelector('.prob.best'));
  const predicted = await page.textContent('#predicted');
  assert.match(predicted, /^(rest|walk|run)$/, `the card shows ${predicted}`);
  // The look-back strip: the newest token's keys, drawn (pixels other than the background).
  await waitFor(page, 'keys on the look-back strip', () => Number(document.querySelector('#lookback').dataset.keys) > 0);
  const strip = await canvasStats(page, '#lookback');
  assert.ok(strip.nonBackground > 200, `the look-back strip is nearly empty: ${JSON.stringify(strip)}`);
  assert.match(await page.textContent('#lookback-caption'), /newest token: .+ attends to \d+ .*keys within 4 s · layer 2, mean of 4 heads/);
  // The attention card lists each block's largest weights: descending, and (a block's weights sum
  // to 1 over its keys) summing to at most 1, to the two decimals shown.
  await waitFor(page, 'the key list', () => Number(document.querySelector('#stream-keys').dataset.keys) > 0);
  const blocks = await page.$$eval('#stream-keys .key-block', (els) => els.map((e) => ({ block: e.dataset.block, w: [...e.querySelectorAll('.key-w')].map((x) => Number(x.textContent)) })));
  assert.ok(blocks.length >= 1, 'no block listed');
  for (const b of blocks) {
    assert.deepEqual(b.w, [...b.w].sort((x, y) => y - x), `${b.block}: weights not in descending order`);
    assert.ok(b.w.reduce((x, y) => x + y, 0) <= 1 + 0.005 * b.w.length, `${b.block}: the listed weights sum above 1: ${b.w}`);
  }
  // Readouts: numbers, in ms (not asserted against a bound: a shared machine is no benchmark).
  await waitFor(page, 'latency and update-cost readouts', () => ['#latency', '#cost'].every((s) => Number(document.querySelector(s).dataset.ms) > 0));
  const readout = await page.evaluate(() => ({
    latency: Number(document.querySelector('#latency').dataset.ms), cost: Number(document.querySelector('#cost').dataset.ms),
    latencyText: document.querySelector('#latency').textContent, costText: document.querySelector('#cost').textContent,
  }));
  assert.match(readout.latencyText, /^\d+\.\d$/);
  // Its parts, as the readout's tooltip says them (logged below).
  readout.parts = await page.getAttribute('#latency', 'title');
  assert.match(readout.parts, /^feeder \d+\.\d\d ms · pushes and pooled\(\) in the Worker, with the messages \d+\.\d\d ms · this page's panels \d+\.\d\d ms$/);
  assert.match(readout.costText, /^\d+\.\d\d$/);
  // The prediction moves with finality, not once a second: the predictions' count grows with the
  // session's final tokens (each prediction follows a push that made tokens final).
  const before = await page.evaluate(predictions);
  await waitFor(page, 'five more predictions', (n) => Number(document.querySelector('#updates').dataset.count) >= n + 5, before);
  const final = await page.getAttribute('#session-line', 'data-final');
  assert.ok(Number(final) > 0, `no final token counted: ${final}`);
  log('stream', `${elapsed()}: "${predicted}"; medians: notification -> prediction ${readout.latency.toFixed(2)} ms (${readout.parts}), push round trip ${readout.cost.toFixed(3)} ms; strip ${strip.nonBackground} px; ${final} final tokens`);
});

test('the streamed predictions equal a full forward over the same chunks (pooled rows and head)', async () => {
  const page = ctx.page;
  await waitFor(page, 'ten streamed predictions with present tokens', () =>
    globalThis.sensorformerDemo.recording().predictions.filter((p) => p.presentTokens > 0).length >= 10);
  const rec = await page.evaluate(RECORDING);
  const last = rec.predictions[rec.predictions.length - 1];
  // The card shows the latest prediction, the session's own label.
  assert.equal(rec.shown.label, last.label ?? '–');
  const referenceTime = last.referenceTime;
  // Every chunk the page pushed so far, as one window: the rows of every final token are final
  // (a later chunk cannot change them: the model is causal), so one forward serves every prediction.
  const window = windowFromChunks(rec.chunks, referenceTime);
  const modelPath = join(repo, 'demo', ctx.model.streamFile);
  const model = await loadModel(readFileSync(modelPath));
  const head = headOf(modelPath);
  const fwd = model.forward(window);
  const [T, d] = [fwd.tokens.time.length, fwd.embeddings.length / fwd.tokens.time.length];
  let checked = 0, worstPooled = 0, worstP = 0;
  for (const p of rec.predictions) {
    if (!p.presentTokens) continue;
    // Masked mean of the forward's rows in [from, to): the pooled vector the session gave.
    const mean = new Float64Array(d);
    let count = 0;
    for (let t = 0; t < T; t++) {
      const time = fwd.tokens.time[t];
      if (!fwd.tokens.present[t] || time < p.from || time >= p.to) continue;
      for (let j = 0; j < d; j++) mean[j] += fwd.embeddings[t * d + j];
      count++;
    }
    assert.equal(count, p.presentTokens, `prediction at frontier ${p.frontier}: ${p.presentTokens} present tokens pooled, the forward has ${count} in [${p.from}, ${p.to})`);
    for (let j = 0; j < d; j++) {
      const diff = Math.abs(mean[j] / count - p.pooled[j]);
      worstPooled = Math.max(worstPooled, diff);
      // 1e-5: a session's rows equal the forward's within float32 rounding of differently tiled
      // sums (docs/model.md "Streaming sessions"); a mean of such rows keeps that bound.
      assert.ok(diff <= 1e-5, `pooled[${j}] at frontier ${p.frontier}: session ${p.pooled[j]}, forward ${mean[j] / count}`);
    }
    // The head from the weights file (F16, decoded here) on the forward's mean, softmax in float64.
    const z = head(Array.from(mean, (v) => v / count));
    const m = Math.max(...z);
    const e = z.map((v) => Math.exp(v - m));
    const sum = e.reduce((a, b) => a + b, 0);
    for (let k = 0; k < z.length; k++) {
      const diff = Math.abs(e[k] / sum - p.probabilities[k]);
      worstP = Math.max(worstP, diff);
      // 1e-4: the pooled vector's 1e-5 through a 32-wide linear layer of |w| < 1 and a softmax
      // (slope <= 1/4), plus float32 accumulation in the core.
      assert.ok(diff <= 1e-4, `probability ${k} at frontier ${p.frontier}: page ${p.probabilities[k]}, forward + head ${e[k] / sum}`);
    }
    assert.equal(p.label, model.config.labels[z.indexOf(m)], `label at frontier ${p.frontier}`);
    checked++;
  }
  model.dispose();
  assert.ok(checked >= 10, `only ${checked} predictions checked`);
  log('stream', `${elapsed()}: ${checked} streamed predictions = forward over ${rec.chunks.length} chunks (${T} tokens): max |pooled diff| ${worstPooled.toExponential(2)}, max |p diff| ${worstP.toExponential(2)}`);
});

test('the Worker\'s work per push, timed: the page\'s chunks replayed into a session on the page\'s main thread (same code and .wasm), equal results', async () => {
  const page = ctx.page;
  const url = new URL(ctx.model.streamFile, ctx.server.url).href;
  const out = await page.evaluate(async (modelUrl) => {
    const { loadModel } = await import('/web/src/index.js');
    const rec = globalThis.sensorformerDemo.recording();
    const chunks = rec.chunks.slice();
    const last = rec.predictions.filter((p) => p.chunks <= chunks.length).at(-1);
    const model = await loadModel(modelUrl);
    const session = model.stream({ attention: true });
    const all = [], final = [];
    let pooled = null;
    for (let i = 0; i < chunks.length; i++) {
      const t = performance.now();
      const u = session.push(chunks[i]);
      const ms = performance.now() - t;
      all.push(ms);
      if (u.dims[0]) final.push(ms);
      if (i + 1 === last.chunks) pooled = session.pooled({ seconds: 10 });
    }
    session.dispose();
    model.dispose();
    const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
    let same = pooled.pooled.length === last.pooled.length;
    for (let j = 0; j < last.pooled.length; j++) same &&= Object.is(pooled.pooled[j], last.pooled[j]);
    return { pushes: all.length, finalPushes: final.length, median: med(all), medianFinal: med(final), p90Final: [...final].sort((a, b) => a - b)[Math.floor(final.length * 0.9)], same, label: pooled.label, shown: last.label };
  }, url);
  // The same chunks through the same code give the same floats: the Worker adds nothing but messages.
  assert.equal(out.same, true, `the replayed session's pooled vector differs from the Worker's: ${JSON.stringify(out)}`);
  assert.equal(out.label, out.shown);
  log('stream', `${elapsed()}: ${out.pushes} pushes replayed on the main thread (Chromium, attention rows on): median ${out.median.toFixed(3)} ms; ${out.finalPushes} that made tokens final: median ${out.medianFinal.toFixed(3)} ms, p90 ${out.p90Final.toFixed(3)} ms`);
});

test('the trained stream model predicts "rest" at the end of the tour\'s first rest segment', async (t) => {
  if (!ctx.model.streamFile.startsWith('model/')) {
    t.skip('demo/model/stream.safetensors is not there yet: the stand-in has random weights');
    return;
  }
  const page = ctx.page;
  // The tour starts with 30 s of rest (ui/source.js TOUR). The predictions that count pool 10 s
  // wholly inside it, every token of which had its full receptive field (12 s: 2 layers x (W 4 s +
  // the 2 s time bin), tools/demo/train_stream_model.py) inside the session: what the model was
  // trained on.
  const CONTEXT = 12;
  const qualifying = (context) => globalThis.sensorformerDemo.recording().predictions.filter((p) =>
    p.presentTokens > 0 && p.truth?.every((a) => a === 'rest') && p.from >= p.referenceTime + context);
  await waitFor(page, 'three predictions over rest with full context, or the end of the rest segment', (c) => {
    const all = globalThis.sensorformerDemo.recording().predictions;
    return all.filter((p) => p.presentTokens > 0 && p.truth?.every((a) => a === 'rest') && p.from >= p.referenceTime + c).length >= 3 ||
      all.some((p) => p.truth?.[1] && p.truth[1] !== 'rest');
  }, CONTEXT);
  const rest = (await page.evaluate(qualifying, CONTEXT)).map((p) => ({ label: p.label, from: p.from, to: p.to }));
  assert.ok(rest.length >= 1, 'no prediction pooled over rest with full context before the segment ended (the session started late?)');
  const wrong = rest.filter((p) => p.label !== 'rest');
  assert.deepEqual(wrong, [], `predictions over rest that are not "rest" (${wrong.length} of ${rest.length})`);
  log('stream', `${elapsed()}: ${rest.length} predictions over rest with full context, all "rest"`);
});

test('a simulated disconnect: the gap is marked in the chunks, the session keeps going, nothing received is lost', async () => {
  const page = ctx.page;
  const { from, back } = await simulateDisconnect(page);
  // Finality passes the outage: the session's frontier moves beyond the reconnect.
  await waitFor(page, 'the frontier past the reconnect', (t) => Number(document.querySelector('#session-line').dataset.frontier) > t + 1, back);
  const n = await page.evaluate(predictions);
  await waitFor(page, 'predictions after the reconnect', (k) => Number(document.querySelector('#updates').dataset.count) >= k + 3, n);
  const rec = await page.evaluate(RECORDING);
  const ecg = rec.streamIds.indexOf('ecg');
  assert.ok(ecg >= 0, `no ECG stream in the session: ${rec.streamIds}`);
  // The outage in the ECG chunks: a startTime past the next slot, or an `until` (the feeder's two
  // ways to mark missing samples), inside [from, back + a second].
  const window = windowFromChunks(rec.chunks, 0).streams[ecg];
  const { all: missing, within: inOutage } = missingSlots(window, from - 0.5, back + 1);
  assert.ok(inOutage.length >= Math.floor(OUTAGE * window.rateHz * 0.5), `the outage is not marked missing in the ECG stream: ${inOutage.length} missing samples in [${from}, ${back}] (${missing.length} in all)`);
  // Nothing received is lost: every value the device layer gave the feeder is in a chunk (float32,
  // as the chunks carry it), except those it still holds (pending) or that came before the frontier
  // of a stream joining later (beforeFrontier); counted per stream.
  const stats = await page.evaluate(() => ({ ...document.querySelector('#session-line').dataset }));
  const feed = rec.feed;
  for (const [id, values] of Object.entries(rec.received)) {
    const index = rec.streamIds.indexOf(id);
    const given = [];
    for (const c of rec.chunks) for (const v of c.streams[index]?.samples ?? []) if (v !== null) given.push(v);
    const got = new Map();
    for (const v of given) got.set(v, (got.get(v) ?? 0) + 1);
    let unmatched = 0;
    for (const v of values) {
      if (v === null) continue;
      const f = Math.fround(v);
      if (got.get(f)) got.set(f, got.get(f) - 1);
      else unmatched++;
    }
    const extra = [...got.values()].reduce((a, b) => a + b, 0);
    assert.equal(extra, 0, `${id}: ${extra} values in the chunks that the device layer did not give`);
    const held = feed[id].pending + feed[id].beforeFrontier;
    assert.ok(unmatched <= held, `${id}: ${unmatched} received values are in no chunk, and the feeder holds only ${held} (pending ${feed[id].pending}, before the frontier ${feed[id].beforeFrontier})`);
  }
  // No session error, no restart.
  const logged = await page.$$eval('#log li', (els) => els.map((e) => `${e.dataset.kind}: ${e.querySelector('.text').textContent}`));
  assert.deepEqual(logged.filter((l) => /stream session|new stream session/.test(l)), [], 'the stream session failed');
  log('stream', `${elapsed()}: outage ${from.toFixed(2)}-${back.toFixed(2)}: ${inOutage.length} ECG samples marked missing; frontier ${stats.frontier}; every received value in a chunk or held`);
});

test('the windowed model stays available: Window shows its maps, Stream comes back with a new session', async () => {
  const page = ctx.page;
  await page.click('label[for="mode-window"]');
  await waitFor(page, 'the window mode with its maps', () => document.querySelector('#mode').dataset.mode === 'window' &&
    ['map-time', 'map-channel'].every((id) => Number(document.getElementById(id)?.dataset.size) > 0));
  assert.equal(await page.isVisible('#lookback-row'), false, 'the look-back strip stays in window mode');
  await waitFor(page, 'two window updates', () => Number(document.querySelector('#updates').dataset.count) >= 2);
  await page.click('label[for="mode-stream"]');
  await waitFor(page, 'streamed predictions again', () => document.querySelector('#mode').dataset.mode === 'stream' && Number(document.querySelector('#updates').dataset.count) >= 2);
  assert.equal(await page.isVisible('#maps'), false, 'the window maps stay in stream mode');
  log('stream', `${elapsed()}: window -> stream again`);
});

test('phone 390x844: the look-back strip takes the card\'s width, the page does not scroll sideways', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    await page.goto(`${ctx.server.url}?seed=${SEED}${ctx.model.query}`);
    await waitFor(page, 'keys on the look-back strip', () => Number(document.querySelector('#lookback').dataset.keys) > 0);
    const box = await page.evaluate(() => {
      const card = document.querySelector('.card.signals');
      const cs = getComputedStyle(card);
      return {
        viewport: innerWidth, page: document.documentElement.scrollWidth,
        content: card.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
        strip: document.querySelector('#lookback').getBoundingClientRect().width,
        trace: document.querySelector('canvas.trace').getBoundingClientRect().width,
      };
    });
    assert.ok(box.page <= box.viewport, `the page scrolls sideways: ${JSON.stringify(box)}`);
    assert.ok(box.strip >= 0.9 * box.content && Math.abs(box.strip - box.trace) < 1, `the strip is not as wide as the traces: ${JSON.stringify(box)}`);
    await page.screenshot({ path: join(ensureArtifacts(), 'demo-stream-phone.png'), fullPage: true });
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations at 390x844');
    log('stream', `${elapsed()}: 390x844: strip ${box.strip} px of ${box.content} px`);
  } finally {
    await page.close();
  }
});

test('a stream model that is not causal: the core\'s refusal is shown, the windowed model runs, the Stream toggle is disabled', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    // The windowed model as the stream model: causal false.
    await page.goto(`${ctx.server.url}?mode=stream&seed=${SEED}${ctx.model.query.replace(/&streamModel=[^&]*/, '')}&streamModel=${ctx.model.file}`);
    await waitFor(page, 'the window mode with its maps', () => document.querySelector('#mode').dataset.mode === 'window' &&
      Number(document.getElementById('map-time')?.dataset.size) > 0);
    const shown = await page.evaluate(() => ({
      notice: document.querySelector('#notice').hidden ? null : document.querySelector('#notice-text').textContent,
      disabled: document.querySelector('#mode-stream').disabled,
      why: document.querySelector('label[for="mode-stream"]').title,
      strip: !document.querySelector('#lookback-row').hidden,
    }));
    assert.match(shown.notice ?? '', /did not load .*\(INVALID_ARGUMENT: .*causal.*\): the windowed model runs instead/, JSON.stringify(shown));
    assert.equal(shown.disabled, true);
    assert.match(shown.why, /INVALID_ARGUMENT/);
    assert.equal(shown.strip, false);
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
    log('stream', `${elapsed()}: not causal: "${shown.notice}"`);
  } finally {
    await page.close();
  }
});

test('a stream model that does not load, chosen in window mode: the notice, and the windowed model goes on with its layout', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  const missing = `missing-stream-${process.pid}.safetensors`;
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    await page.goto(`${ctx.server.url}?mode=window&seed=${SEED}${ctx.model.query.replace(/&streamModel=[^&]*/, '')}&streamModel=${missing}`);
    await waitFor(page, 'the window mode with its maps and a prediction', () => document.querySelector('#mode').dataset.mode === 'window' &&
      Number(document.getElementById('map-time')?.dataset.size) > 0 && Number(document.querySelector('#updates').dataset.count) > 0);
    await page.click('label[for="mode-stream"]');
    await waitFor(page, 'the notice, and the window mode back', () => !document.querySelector('#notice').hidden &&
      /did not load/.test(document.querySelector('#notice-text').textContent) && document.querySelector('#mode').dataset.mode === 'window');
    const shown = await page.evaluate(() => ({
      body: document.body.dataset.mode, window: document.querySelector('#mode-window').checked, disabled: document.querySelector('#mode-stream').disabled,
      strip: !document.querySelector('#lookback-row').hidden, maps: !document.querySelector('#maps').hidden, notice: document.querySelector('#notice-text').textContent,
    }));
    assert.match(shown.notice, new RegExp(`^The stream model did not load from ${missing} \\(\\w+: .+\\): the windowed model runs instead`));
    assert.deepEqual({ ...shown, notice: undefined }, { body: 'window', window: true, disabled: true, strip: false, maps: true, notice: undefined });
    // The windowed loop runs again (the switch stopped it): predictions go on. The switch set the
    // count to 0 and the loop's results count on from its own total, so: one result, then two more.
    await waitFor(page, 'a windowed prediction after the switch', () => Number(document.querySelector('#updates').dataset.count) > 0);
    const n = Number(await page.getAttribute('#updates', 'data-count'));
    await waitFor(page, 'two more windowed predictions', (k) => Number(document.querySelector('#updates').dataset.count) >= k + 2, n);
    // The only problems: the missing file's 404 (and Chromium's console line for it).
    const problems = (await watcher.problems()).filter((p) => !p.includes(missing) && !/Failed to load resource: .*404/.test(p));
    assert.deepEqual(problems, [], 'console errors, page errors, failed requests or CSP violations besides the missing file');
    log('stream', `${elapsed()}: no stream model, from window mode: "${shown.notice}"; windowed predictions ${n} -> ${n + 2}+`);
  } finally {
    await page.close();
  }
});

test('a stream model without labels: "no class labels", no invented classes; the session still streams', async () => {
  // The stream model with `labels` taken out of its config.
  const copy = unlabeledCopy(ctx.model.streamFile, `unlabeled-stream-${process.pid}`, 'stream.safetensors');
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    await page.goto(`${ctx.server.url}?seed=${SEED}${ctx.model.query.replace(/&streamModel=[^&]*/, '')}&streamModel=${copy.path}`);
    await waitFor(page, 'two streamed updates', () => document.querySelector('#mode').dataset.mode === 'stream' && Number(document.querySelector('#updates').dataset.count) >= 2);
    const shown = await page.evaluate(() => ({
      predicted: document.querySelector('#predicted').textContent, none: document.querySelector('#predicted').classList.contains('none'),
      rows: document.querySelectorAll('.prob').length, keys: Number(document.querySelector('#lookback').dataset.keys),
    }));
    assert.deepEqual({ predicted: shown.predicted, none: shown.none, rows: shown.rows }, { predicted: 'no class labels', none: true, rows: 0 }, JSON.stringify(shown));
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
    log('stream', `${elapsed()}: a stream model without labels: "${shown.predicted}"`);
  } finally {
    await page.close();
    copy.cleanup();
  }
});

test('no console errors, no CSP violation; screenshot', async () => {
  const page = ctx.page;
  await waitFor(page, 'keys on the look-back strip', () => Number(document.querySelector('#lookback').dataset.keys) > 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  const shot = join(ensureArtifacts(), 'demo-stream.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.deepEqual(await ctx.watch.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('stream', `${elapsed()}: no console error; screenshot ${shot}`);
});

test('StreamInference (Node, no page): overlapping start() calls feed one session, from the latest source; stop() detaches it', async () => {
  // A source as ui/source.js's Session offers it to the stream mode: addSink() and closed.
  const source = () => ({ closed: false, sinks: new Set(), addSink(sink) { this.sinks.add(sink); return () => this.sinks.delete(sink); } });
  const inference = new StreamInference({ modelUrl: join(repo, 'demo', ctx.model.streamFile) });
  try {
    assert.ok(await inference.load(), 'the stream model did not load');
    // The page does this when a new source comes while the stream mode is starting.
    const [a, b] = [source(), source()];
    await Promise.all([inference.start(a), inference.start(b)]);
    assert.deepEqual([a.sinks.size, b.sinks.size], [0, 1], 'an earlier start() still feeds a session (two sessions fed, one of them leaked)');
    assert.equal(inference.running, true);
    // start() then stop() before the session opened: nothing attached.
    const c = source();
    const started = inference.start(c);
    await inference.stop();
    await started;
    assert.deepEqual([b.sinks.size, c.sinks.size, inference.running], [0, 0, false]);
  } finally {
    inference.dispose();
  }
});

test('InferenceLoop (Node, no page): stop() and start() while a window is in the Worker leave one chain of ticks', async (t) => {
  // The page does this on Stream then Window within a second: the old tick's step is still
  // awaited when the new chain starts. Each step here waits for the test to answer it, and the
  // timers are mocked: a tick scheduled per chain, so a second chain is a second step.
  const loop = new InferenceLoop({ modelUrl: join(repo, 'demo', ctx.model.file), periodMs: 1000, getSession: () => null });
  const answers = [];
  let steps = 0;
  try {
    assert.ok(await loop.load(), 'the windowed model did not load');
    loop.step = () => {
      steps++;
      return new Promise((resolve) => answers.push(resolve));
    };
    t.mock.timers.enable({ apis: ['setTimeout'] });
    loop.start();  // step 1 in the Worker
    loop.stop();
    loop.start();  // a new chain: step 2
    assert.equal(steps, 2);
    for (const answer of answers.splice(0)) answer();
    await new Promise((resolve) => setImmediate(resolve));  // the ticks' awaits resolve (setImmediate is not mocked)
    t.mock.timers.tick(1000);
    assert.equal(steps, 3, 'the stopped chain went on beside the new one');
    loop.stop();
    for (const answer of answers.splice(0)) answer();
  } finally {
    t.mock.timers.reset();
    loop.dispose();
  }
});
