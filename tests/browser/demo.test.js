// The demo page (`npm start`) in headless Chromium, served by tools/serve-demo.mjs with its strict
// CSP: the simulated wearable streams on its own, inference updates arrive from the Worker, the
// attention maps are real pictures that follow the layer/head controls, hover and click work,
// a simulated disconnect shows a gap and the stream recovers, and nothing logs an error or breaks
// the CSP. A screenshot lands in test-artifacts/demo.png.
//
//   node --test tests/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { CSP, CSP_HOOK, canvasStats, demoModel, demoServer, ensureArtifacts, launchChromium, log, watch } from './helpers.js';

const OUTAGE = 1;  // s the strap stays out of range: the device layer's first retry (2 s) succeeds
const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
const ctx = {};

before(async () => {
  ctx.model = demoModel();
  ctx.server = await demoServer();
  ctx.browser = await launchChromium();
  ctx.page = await ctx.browser.newPage({ viewport: { width: 1440, height: 900 } });
  await ctx.page.addInitScript({ content: CSP_HOOK });
  ctx.watch = watch(ctx.page, ctx.server.url.replace(/\/$/, ''));
  ctx.url = `${ctx.server.url}?outage=${OUTAGE}${ctx.model.query}`;
  log('demo', `${ctx.url} (model: ${ctx.model.kind}), Chromium ${ctx.browser.version()}`);
  await ctx.page.goto(ctx.url);
});

after(async () => {
  await ctx.browser?.close();
  await ctx.server?.close();
  ctx.model?.cleanup();
  log('demo', `done in ${elapsed()}`);
});

const count = (sel, attr) => ctx.page.$eval(sel, (e, a) => Number(e.dataset[a]), attr);

test('the simulated wearable streams and inference updates arrive from the worker', async () => {
  const page = ctx.page;
  await page.waitForFunction(() => Number(document.querySelector('#updates')?.dataset.count) >= 2, null, { timeout: 20_000 });
  const first = { updates: await count('#updates', 'count'), newest: await count('canvas.trace[data-stream="ecg"]', 'newest') };
  await page.waitForFunction((n) => Number(document.querySelector('#updates').dataset.count) >= n + 2, first.updates, { timeout: 10_000 });
  const later = { updates: await count('#updates', 'count'), newest: await count('canvas.trace[data-stream="ecg"]', 'newest') };
  const latency = await count('#latency', 'ms');
  const rate = Number(await page.textContent('#rate'));
  assert.ok(later.updates >= first.updates + 2, `updates did not increase: ${first.updates} -> ${later.updates}`);
  assert.ok(later.newest > first.newest, `no new ECG samples: newest ${first.newest} -> ${later.newest}`);
  assert.ok(latency > 0 && latency < 1000, `latency shown: ${latency} ms`);
  assert.ok(rate > 0.5 && rate < 2, `update rate ${rate} Hz (expected ~1 Hz)`);
  const predicted = await page.textContent('#predicted');
  assert.ok(['rest', 'walk', 'run'].includes(predicted), `prediction "${predicted}"`);
  const probs = await page.$$eval('.prob .p', (els) => els.map((e) => parseFloat(e.textContent)));
  assert.equal(probs.length, 3);
  assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 100) < 0.5, `probabilities ${probs} do not sum to 100 %`);
  const devices = await page.$$eval('#devices .device', (els) => els.map((e) => `${e.querySelector('.name').textContent}:${e.dataset.state}`));
  assert.deepEqual(devices.sort(), ['Oxi SIM:streaming', 'Polar H10 SIM:streaming', 'Thermo SIM:streaming']);
  const points = await page.$$eval('canvas.trace', (els) => Object.fromEntries(els.map((e) => [e.dataset.stream, Number(e.dataset.points)])));
  for (const [id, n] of Object.entries(points)) assert.ok(n > 0, `the ${id} trace draws no samples`);
  // Headless Chromium on Linux has no Web Bluetooth: the Connect button says why instead.
  await page.click('#connect');
  await page.waitForSelector('#notice:not([hidden])');
  const why = await page.textContent('#notice-text');
  assert.match(why, /Web Bluetooth/, `notice: ${why}`);
  assert.equal(await page.textContent('#source-name'), 'Simulated wearable', 'the simulator keeps running');
  await page.click('#notice-close');
  log('demo', `${elapsed()}: updates ${first.updates} -> ${later.updates}, latency ${latency.toFixed(1)} ms (median), ${rate} Hz, "${predicted}" (${probs.join(' / ')} %), samples drawn ${JSON.stringify(points)}`);
});

test('the attention maps are real pictures and follow layer and head', async () => {
  const page = ctx.page;
  const maps = await page.$$eval('canvas.map-canvas', (els) => els.map((e) => e.id));
  assert.deepEqual(maps, ['map-time', 'map-channel'], 'a factorized model has a time and a channel map');
  for (const id of maps) {
    const s = await canvasStats(page, `#${id}`);
    assert.ok(s.fraction > 0.3 && s.variance > 0, `#${id} holds no picture: ${JSON.stringify(s)}`);
  }
  // Freeze the inputs (Pause), then every change of the picture comes from the controls.
  await page.click('#pause');
  try {
    await controlsChangeTheMaps(page, maps);
  } finally {
    await page.mouse.move(0, 0);
    if (await page.getAttribute('#pause', 'aria-pressed') === 'true') await page.click('#pause');
    await page.evaluate(() => window.scrollTo(0, 0));
  }
});

async function controlsChangeTheMaps(page, maps) {
  await page.waitForTimeout(1200);  // a forward in flight lands
  const base = { time: (await canvasStats(page, '#map-time')).hash, channel: (await canvasStats(page, '#map-channel')).hash };
  await page.waitForTimeout(1100);
  assert.equal((await canvasStats(page, '#map-time')).hash, base.time, 'the map changed while paused');

  await page.click('label[for="head-0"]');
  await page.waitForFunction(() => document.querySelector('#map-time').dataset.head === '0');
  const head1 = { time: (await canvasStats(page, '#map-time')).hash, channel: (await canvasStats(page, '#map-channel')).hash };
  assert.notEqual(head1.time, base.time, 'head 1 draws the same time map as the mean over heads');
  assert.notEqual(head1.channel, base.channel, 'head 1 draws the same channel map as the mean over heads');

  await page.click('label[for="layer-1"]');
  await page.waitForFunction(() => document.querySelector('#map-time').dataset.layer === '1');
  const layer2 = (await canvasStats(page, '#map-time')).hash;
  assert.notEqual(layer2, head1.time, 'layer 2 draws the same map as layer 1');

  // The stream of the time map and the bin of the channel map are selectable.
  const streams = await page.$$eval('#group-time option', (os) => os.map((o) => o.value));
  assert.ok(streams.length >= 6 && streams.includes('ecg') && streams.includes('acc_x'), `time-map streams: ${streams}`);
  await page.selectOption('#group-time', 'acc_x');
  await page.waitForFunction(() => document.querySelector('#map-time').dataset.group === 'acc_x');
  assert.notEqual((await canvasStats(page, '#map-time')).hash, layer2, 'choosing another stream did not change the map');
  const bins = await page.$$eval('#group-channel option', (os) => os.map((o) => o.value));
  assert.ok(bins[0] === 'latest' && bins.length >= 2, `channel-map bins: ${bins}`);

  await page.selectOption('#group-time', 'ecg');
  await page.click('label[for="layer-0"]');
  await page.click('label[for="head-mean"]');
  await page.waitForFunction(() => document.querySelector('#map-time').dataset.head === 'mean' && document.querySelector('#map-time').dataset.layer === '0');
  assert.equal((await canvasStats(page, '#map-time')).hash, base.time, 'back to layer 1 / mean: not the first picture');

  // Hover names query, key and weight; a click pins the cell and highlights both patches.
  const map = page.locator('#map-channel');
  const box = await map.boundingBox();
  const at = { x: Math.round(box.width * 0.45), y: Math.round(box.height * 0.45) };
  await map.hover({ position: at });
  await page.waitForSelector('.map-channel .tooltip:not([hidden])');
  const tip = await page.textContent('.map-channel .tooltip');
  assert.match(tip, /query.*key.*weight/s, `tooltip: ${tip}`);
  await map.click({ position: at });
  await page.waitForSelector('#selection[data-selected="true"]');
  await page.waitForFunction(() => [...document.querySelectorAll('canvas.trace')].reduce((n, c) => n + Number(c.dataset.highlights), 0) >= 1);
  const highlighted = await page.$$eval('canvas.trace', (els) => els.filter((e) => Number(e.dataset.highlights) > 0).map((e) => e.dataset.stream));
  log('demo', `${elapsed()}: maps ${maps.join(', ')} non-blank; mean/head 1/layer 2/stream hashes ${base.time} ${head1.time} ${layer2}; tooltip "${tip.replace(/\s+/g, ' ').trim()}"; highlighted on ${highlighted.join(', ')}`);
}

test('a simulated disconnect shows a gap and the stream recovers', async () => {
  const page = ctx.page;
  await page.waitForSelector('#disconnect:not([disabled])');
  await page.click('#disconnect');
  await page.waitForSelector('#devices .device[data-kind="strap"][data-state="reconnecting"]', { timeout: 3000 });
  // The gap is visible while the link is down (the device layer extends it to "now").
  await page.waitForFunction(() => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.gaps) >= 1, null, { timeout: 3000 });
  assert.equal(await page.isVisible('#gap-indicator'), true, 'the "gap in view" badge is not shown');
  await page.waitForSelector('#log li[data-kind="reconnect"]', { timeout: 10_000 });
  const back = Number(await page.getAttribute('#log li[data-kind="reconnect"]', 'data-time'));
  await page.waitForSelector('#log li[data-kind="gap"]');
  const gapText = await page.textContent('#log li[data-kind="gap"] .text');
  // New samples after the reconnect, the gap still marked in view.
  await page.waitForFunction((t) => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.newest) > t + 0.5, back, { timeout: 8000 });
  await page.waitForSelector('#devices .device[data-kind="strap"][data-state="streaming"]');
  const gaps = await page.$$eval('canvas.trace', (els) => Object.fromEntries(els.map((e) => [e.dataset.stream, Number(e.dataset.gaps)])));
  for (const id of ['ecg', 'acc_x', 'acc_y', 'acc_z', 'hr', 'rr']) assert.ok(gaps[id] >= 1, `no gap marked on the strap's ${id} trace: ${JSON.stringify(gaps)}`);
  for (const id of ['temperature', 'spo2']) assert.equal(gaps[id], 0, `the ${id} device stayed connected but its trace shows a gap: ${JSON.stringify(gaps)}`);
  const updates = await count('#updates', 'count');
  await page.waitForFunction((n) => Number(document.querySelector('#updates').dataset.count) >= n + 1, updates, { timeout: 5000 });
  log('demo', `${elapsed()}: disconnect -> reconnect at ${back.toFixed(2)}, "${gapText}", gaps per trace ${JSON.stringify(gaps)}, inference continues`);
});

test('CSP: every response carries the header, nothing violates it, no console errors; screenshot', async () => {
  const page = ctx.page;
  // Pin a cell so the screenshot shows the highlighted patches too.
  const map = page.locator('#map-time');
  const box = await map.boundingBox();
  const at = { x: Math.round(box.width * 0.6), y: Math.round(box.height * 0.4) };
  await map.click({ position: at });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(600);
  const shot = join(ensureArtifacts(), 'demo.png');
  await page.screenshot({ path: shot, fullPage: true });

  const { responses } = ctx.watch;
  const kinds = (re) => responses.filter((r) => re.test(new URL(r.url).pathname));
  for (const [what, re] of [['the page', /^\/(\?.*)?$/], ['main.js', /\/main\.js$/], ['style.css', /\/style\.css$/], ['the worker', /\/worker\.js$/], ['the .wasm', /\.wasm$/], ['the model', /\.safetensors$/]])
    assert.ok(kinds(re).length >= 1, `no response for ${what} was seen: ${responses.map((r) => r.url).join(', ')}`);
  const without = responses.filter((r) => r.csp !== CSP);
  assert.deepEqual(without, [], 'responses without the CSP header');
  const bad = await ctx.watch.problems();
  assert.deepEqual(bad, [], 'console errors, page errors, failed requests or CSP violations');
  const violations = await page.evaluate(() => document.documentElement.dataset.cspViolations ?? '0');
  assert.equal(violations, '0');
  log('demo', `${elapsed()}: ${responses.length} responses, all with the CSP header; no violation, no console error; screenshot ${shot}`);
});
