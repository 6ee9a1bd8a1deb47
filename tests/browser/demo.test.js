// The demo page (`npm start`) in headless Chromium, served by tools/serve-demo.mjs with its strict
// CSP: the simulated wearable (seeded from the URL) streams on its own, inference updates arrive
// from the Worker, the attention maps are real pictures that follow the layer/head controls, hover
// and click work, a simulated disconnect shows a gap and the stream recovers, and nothing logs an
// error or breaks the CSP. A screenshot lands in test-artifacts/demo.png.
//
// Every check waits for the condition it needs (helpers.waitFor, a deadline of DEADLINE_MS), never
// for a number of updates or a fixed time: the simulator runs on the real clock on a shared machine.
//
//   node --test tests/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/devices.js';
import { CSP, CSP_HOOK, DEADLINE_MS, canvasStats, ensureArtifacts, log, openDemoPage, unlabeledCopy, waitFor, watch } from './helpers.js';

const OUTAGE = 1;  // s the strap stays out of range: the device layer's first retry (2 s) succeeds
// The page's simulator. Seed 9912 puts the thermometer's first reading at the end of its 5 s
// interval (phase 4.999 s) and the oximeter's at 0.997 s: the latest first samples any seed gives,
// the case in which the old fixed-count check found "the temperature trace draws no samples".
const SEED = 9912;
const STREAMS = ['ecg', 'acc_x', 'acc_y', 'acc_z', 'hr', 'rr', 'temperature', 'spo2'];
const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
const ctx = {};

before(async () => {
  // The windowed model's page (?mode=window): its maps, keyboard and card (demo-stream.test.js: the stream mode).
  Object.assign(ctx, await openDemoPage('demo', `mode=window&seed=${SEED}&outage=${OUTAGE}`));
});

after(async () => {
  await ctx.browser?.close();
  await ctx.server?.close();
  ctx.model?.cleanup();
  log('demo', `done in ${elapsed()}`);
});

const count = (sel, attr) => ctx.page.$eval(sel, (e, a) => Number(e.dataset[a]), attr);

/** Bluetooth device ids the simulator makes from `seed` (Node, virtual clock: no timers run). */
function simulatorIds(seed) {
  const sim = createSimulatedBluetooth({ seed, clock: createVirtualClock() });
  const ids = Object.fromEntries(Object.entries(sim.devicesByKey).map(([k, d]) => [k, d.id]));
  sim.close();
  return ids;
}

/** The middle of cell (query q, key k) of an attention map, as a position on its canvas; g: cells per side. */
async function cellPosition(page, selector, pick) {
  const [x0, y0, cw, ch, g] = (await page.getAttribute(selector, 'data-cells')).split(' ').map(Number);
  const [q, k] = pick(g);
  return { position: { x: x0 + (k + 0.5) * cw, y: y0 + (q + 0.5) * ch }, q, k, g };
}

const pageIds = (page) => page.$$eval('#devices .device', (els) => Object.fromEntries(els.map((e) => [e.dataset.kind, e.dataset.id ?? null])));
const allConnected = () => ['strap', 'thermometer', 'oximeter'].every((k) => document.querySelector(`#devices .device[data-kind="${k}"]`)?.dataset.id);

test('?seed=N seeds the page\'s simulator: its devices are the ones the simulator makes from N; no seed or a bad one: a random seed, shown', async () => {
  const page = ctx.page;
  await waitFor(page, 'the three simulated devices', allConnected);
  assert.equal(await page.getAttribute('#source-name', 'data-seed'), String(SEED));
  assert.deepEqual(await pageIds(page), simulatorIds(SEED), 'the page\'s device ids are not those of the simulator seeded with ?seed');
  assert.notDeepEqual(simulatorIds(SEED + 1), simulatorIds(SEED), 'the ids do not depend on the seed: this test could not tell seeds apart');
  const logged = await page.textContent('#log li[data-kind="source"] .text');
  assert.match(logged, new RegExp(`seed ${SEED}\\b`), `the event log does not name the seed: ${logged}`);

  // A visitor's page (no seed) and a bad seed: a random seed, shown, and the devices follow it.
  for (const [query, notice] of [['', null], ['seed=abc&', /Ignored seed=abc/], ['seed=-3&outage=x&', /Ignored (?=.*seed=-3 )(?=.*outage=x ).*using the defaults/]]) {
    const other = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
    await other.addInitScript({ content: CSP_HOOK });
    const watcher = watch(other, ctx.server.url.replace(/\/$/, ''));
    await other.goto(`${ctx.server.url}?mode=window&${query}${ctx.model.query.slice(1)}`);
    await waitFor(other, `the three simulated devices (?${query})`, allConnected);
    const seed = await other.getAttribute('#source-name', 'data-seed');
    assert.match(seed, /^\d+$/, `?${query}: the seed shown is ${seed}`);
    assert.deepEqual(await pageIds(other), simulatorIds(Number(seed)), `?${query}: the devices do not follow the seed shown (${seed})`);
    const shown = await other.isVisible('#notice') ? await other.textContent('#notice-text') : null;
    if (notice) assert.match(shown ?? '', notice, `?${query}: notice ${shown}`);
    else assert.equal(shown, null, `a notice on a page with valid parameters: ${shown}`);
    assert.deepEqual(await watcher.problems(), [], `?${query}: console errors, page errors, failed requests or CSP violations`);
    await other.close();
    log('demo', `${elapsed()}: ?${query || '(no seed)'} -> seed ${seed}${shown ? `, notice "${shown}"` : ''}`);
  }
});

test('the simulated wearable streams and inference updates arrive from the worker', async () => {
  const page = ctx.page;
  await waitFor(page, 'two inference updates', () => Number(document.querySelector('#updates')?.dataset.count) >= 2);
  const first = { updates: await count('#updates', 'count'), newest: await count('canvas.trace[data-stream="ecg"]', 'newest') };
  await waitFor(page, 'two more updates and newer ECG samples', ([n, t]) =>
    Number(document.querySelector('#updates').dataset.count) >= n + 2 && Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.newest) > t,
  [first.updates, first.newest]);
  // The thermometer's first reading comes up to 5 s after it connects (its seeded phase), and a
  // trace draws samples once they are 0.6 s old: wait for samples on every trace.
  await waitFor(page, 'samples drawn on every trace', (ids) => ids.every((id) => Number(document.querySelector(`canvas.trace[data-stream="${id}"]`)?.dataset.points) > 0), STREAMS);
  // The update rate needs two windows within its 10 s span.
  await waitFor(page, 'an update rate and a latency on show', () => Number(document.querySelector('#rate').textContent) > 0 && Number(document.querySelector('#latency').dataset.ms) > 0);
  const later = { updates: await count('#updates', 'count'), newest: await count('canvas.trace[data-stream="ecg"]', 'newest') };
  const latency = await count('#latency', 'ms');
  const rate = Number(await page.textContent('#rate'));
  // Wall-clock values: only their being finite and positive is checked (the machine is shared).
  assert.ok(Number.isFinite(latency) && latency > 0, `latency shown: ${latency} ms`);
  assert.ok(Number.isFinite(rate) && rate > 0, `update rate shown: ${rate} Hz`);
  const predicted = await page.textContent('#predicted');
  assert.ok(['rest', 'walk', 'run'].includes(predicted), `prediction "${predicted}"`);
  const probs = await page.$$eval('.prob .p', (els) => els.map((e) => parseFloat(e.textContent)));
  assert.equal(probs.length, 3);
  // three values shown to 0.1 %: their sum is off 100 by at most 0.15
  assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 100) < 0.5, `probabilities ${probs} do not sum to 100 %`);
  // Threads (docs/performance.md "Threads"): the demo server sends COOP + COEP, so the page is
  // cross-origin isolated and the model's Worker runs the threaded build on min(4, cores) threads.
  const isolation = await page.evaluate(() => ({ isolated: globalThis.crossOriginIsolated, cores: navigator.hardwareConcurrency }));
  assert.equal(isolation.isolated, true, 'the demo page must be cross-origin isolated');
  const loadedLine = await page.$$eval('#log li[data-kind="model"] .text', (els) => els.map((e) => e.textContent).find((t) => t.startsWith('windowed model loaded')));
  const threads = Number(/; (\d+) threads?\)$/.exec(loadedLine ?? '')?.[1]);
  assert.equal(threads, Math.min(4, isolation.cores), `threads in "${loadedLine}"`);
  const devices = await page.$$eval('#devices .device', (els) => els.map((e) => `${e.querySelector('.name').textContent}:${e.dataset.state}`));
  assert.deepEqual(devices.sort(), ['Oxi SIM:streaming', 'Polar H10 SIM:streaming', 'Thermo SIM:streaming']);
  const points = await page.$$eval('canvas.trace', (els) => Object.fromEntries(els.map((e) => [e.dataset.stream, Number(e.dataset.points)])));
  // Headless Chromium on Linux has no Web Bluetooth: the Connect button says why instead.
  await page.click('#connect');
  await page.waitForSelector('#notice:not([hidden])', { timeout: DEADLINE_MS });
  const why = await page.textContent('#notice-text');
  assert.match(why, /Web Bluetooth/, `notice: ${why}`);
  assert.equal(await page.textContent('#source-name'), 'Simulated wearable', 'the simulator keeps running');
  await page.click('#notice-close');
  log('demo', `${elapsed()}: updates ${first.updates} -> ${later.updates}, latency ${latency.toFixed(1)} ms (median), ${rate} Hz, "${predicted}" (${probs.join(' / ')} %), samples drawn ${JSON.stringify(points)}`);
});

test('the attention maps are real pictures and follow layer and head', async () => {
  const page = ctx.page;
  await waitFor(page, 'both attention maps drawn from a window', () => ['map-time', 'map-channel'].every((id) => Number(document.getElementById(id)?.dataset.size) > 0));
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
  // Paused, and the window that was in the Worker (if any) has landed: no result comes after this.
  await waitFor(page, 'Pause with no window in the Worker', () => {
    const b = document.querySelector('#pause');
    return b.getAttribute('aria-pressed') === 'true' && b.dataset.inflight === '0';
  });
  const updates = await count('#updates', 'count');
  const newest = await count('canvas.trace[data-stream="ecg"]', 'newest');
  const base = { time: (await canvasStats(page, '#map-time')).hash, channel: (await canvasStats(page, '#map-channel')).hash };
  // The signals go on while paused: 2.5 s of new ECG is more than two inference periods (1 s).
  await waitFor(page, '2.5 s of new ECG while paused', (t) => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.newest) > t + 2.5, newest);
  assert.equal(await count('#updates', 'count'), updates, 'inference ran while paused');
  assert.equal((await canvasStats(page, '#map-time')).hash, base.time, 'the map changed while paused');

  await page.click('label[for="head-0"]');
  await waitFor(page, 'the maps of head 1', () => document.querySelector('#map-time').dataset.head === '0');
  const head1 = { time: (await canvasStats(page, '#map-time')).hash, channel: (await canvasStats(page, '#map-channel')).hash };
  assert.notEqual(head1.time, base.time, 'head 1 draws the same time map as the mean over heads');
  assert.notEqual(head1.channel, base.channel, 'head 1 draws the same channel map as the mean over heads');

  await page.click('label[for="layer-1"]');
  await waitFor(page, 'the maps of layer 2', () => document.querySelector('#map-time').dataset.layer === '1');
  const layer2 = (await canvasStats(page, '#map-time')).hash;
  assert.notEqual(layer2, head1.time, 'layer 2 draws the same map as layer 1');

  // The stream of the time map and the bin of the channel map are selectable.
  const streams = await page.$$eval('#group-time option', (os) => os.map((o) => o.value));
  assert.ok(streams.length >= 6 && streams.includes('ecg') && streams.includes('acc_x'), `time-map streams: ${streams}`);
  await page.selectOption('#group-time', 'acc_x');
  await waitFor(page, 'the ACC x time map', () => document.querySelector('#map-time').dataset.group === 'acc_x');
  assert.notEqual((await canvasStats(page, '#map-time')).hash, layer2, 'choosing another stream did not change the map');
  const bins = await page.$$eval('#group-channel option', (os) => os.map((o) => o.value));
  assert.ok(bins[0] === 'latest' && bins.length >= 2, `channel-map bins: ${bins}`);

  await page.selectOption('#group-time', 'ecg');
  await page.click('label[for="layer-0"]');
  await page.click('label[for="head-mean"]');
  await waitFor(page, 'the maps of layer 1, mean over heads', () => document.querySelector('#map-time').dataset.head === 'mean' && document.querySelector('#map-time').dataset.layer === '0');
  assert.equal((await canvasStats(page, '#map-time')).hash, base.time, 'back to layer 1 / mean: not the first picture');

  // Hover names query, key and weight; a click pins the cell and highlights both patches.
  const map = page.locator('#map-channel');
  const { position: at } = await cellPosition(page, '#map-channel', (g) => [Math.floor(g * 0.45), Math.floor(g * 0.45)]);
  await map.hover({ position: at });
  await page.waitForSelector('.map-channel .tooltip:not([hidden])', { timeout: DEADLINE_MS });
  const tip = await page.textContent('.map-channel .tooltip');
  assert.match(tip, /query.*key.*weight/s, `tooltip: ${tip}`);
  await map.click({ position: at });
  await page.waitForSelector('#selection[data-selected="true"]', { timeout: DEADLINE_MS });
  await waitFor(page, 'a highlighted patch on the traces', () => [...document.querySelectorAll('canvas.trace')].reduce((n, c) => n + Number(c.dataset.highlights), 0) >= 1);
  const highlighted = await page.$$eval('canvas.trace', (els) => els.filter((e) => Number(e.dataset.highlights) > 0).map((e) => e.dataset.stream));
  // Escape unpins the cell and leaves the maps (paused: no new window could redraw them).
  await page.keyboard.press('Escape');
  await waitFor(page, 'Escape to unpin the cell', () => document.querySelector('#selection').dataset.selected === 'false');
  for (const id of maps) {
    const s = await canvasStats(page, `#${id}`);
    assert.ok(s.fraction > 0.3 && s.variance > 0, `#${id} lost its picture on Escape: ${JSON.stringify(s)}`);
  }
  log('demo', `${elapsed()}: maps ${maps.join(', ')} non-blank; mean/head 1/layer 2/stream hashes ${base.time} ${head1.time} ${layer2}; tooltip "${tip.replace(/\s+/g, ' ').trim()}"; highlighted on ${highlighted.join(', ')}`);
}

test('a simulated disconnect shows a gap and the stream recovers', async () => {
  const page = ctx.page;
  await waitFor(page, 'the strap streaming and "Simulate disconnect" enabled', () =>
    document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming' && !document.querySelector('#disconnect').disabled);
  // Every state the strap's entry passes through, recorded as the DOM changes (the
  // "reconnecting" state lasts about 2 s: a poll could miss it, a MutationObserver cannot).
  await page.evaluate(() => {
    window.__strapStates = [];
    const list = document.querySelector('#devices');
    const note = () => {
      const s = list.querySelector('.device[data-kind="strap"]')?.dataset.state;
      if (s && s !== window.__strapStates[window.__strapStates.length - 1]) window.__strapStates.push(s);
    };
    note();
    new MutationObserver(note).observe(list, { childList: true, subtree: true, attributes: true });
  });
  await page.click('#disconnect');
  // The gap is visible while the link is down (the device layer extends it to "now") and stays in
  // view for the 15 s the traces show after it ends.
  await waitFor(page, 'a gap on the ECG trace', () => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.gaps) >= 1);
  assert.equal(await page.isVisible('#gap-indicator'), true, 'the "gap in view" badge is not shown');
  await waitFor(page, 'the reconnect in the event log', () => !!document.querySelector('#log li[data-kind="reconnect"]'));
  const back = Number(await page.getAttribute('#log li[data-kind="reconnect"]', 'data-time'));
  await waitFor(page, 'the gap in the event log', () => !!document.querySelector('#log li[data-kind="gap"]'));
  const gapText = await page.textContent('#log li[data-kind="gap"] .text');
  await waitFor(page, 'ECG samples 0.5 s past the reconnect', (t) => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.newest) > t + 0.5, back);
  await waitFor(page, 'the strap streaming again', () => window.__strapStates.at(-1) === 'streaming' && window.__strapStates.length >= 3);
  const states = await page.evaluate(() => window.__strapStates);
  assert.deepEqual(states, ['streaming', 'reconnecting', 'streaming'], 'the strap\'s states');
  // Gaps in the assembler's data (the whole 120 s kept), not only in view.
  const gaps = await page.$$eval('canvas.trace', (els) => Object.fromEntries(els.map((e) => [e.dataset.stream, Number(e.dataset.gapsTotal)])));
  for (const id of ['ecg', 'acc_x', 'acc_y', 'acc_z', 'hr', 'rr']) assert.equal(gaps[id], 1, `the strap's ${id} stream holds no (or more than one) gap: ${JSON.stringify(gaps)}`);
  for (const id of ['temperature', 'spo2']) assert.equal(gaps[id], 0, `the ${id} device stayed connected but its stream holds a gap: ${JSON.stringify(gaps)}`);
  const updates = await count('#updates', 'count');
  await waitFor(page, 'inference going on after the reconnect', (n) => Number(document.querySelector('#updates').dataset.count) >= n + 1, updates);
  log('demo', `${elapsed()}: disconnect -> reconnect at ${back.toFixed(2)}, "${gapText}", gaps per stream ${JSON.stringify(gaps)}, strap ${states.join(' -> ')}, inference continues`);
});

test('keyboard: a map takes focus, arrows move the highlighted cell, Enter pins, Escape unpins; roles and labels', async () => {
  const page = ctx.page;
  await waitFor(page, 'both attention maps drawn from a window', () => ['map-time', 'map-channel'].every((id) => Number(document.getElementById(id)?.dataset.size) > 0));
  // Every canvas that shows something is an image with a description; the maps are focusable.
  const roles = await page.$$eval('canvas', (els) => els.map((e) => ({ id: e.id || e.dataset.stream, role: e.getAttribute('role'), label: e.getAttribute('aria-label') ?? '', hidden: e.getAttribute('aria-hidden'), tabindex: e.getAttribute('tabindex') })));
  for (const c of roles.filter((r) => r.hidden !== 'true')) {
    assert.equal(c.role, 'img', `canvas ${c.id} has no role="img": ${JSON.stringify(c)}`);
    assert.ok(c.label.length >= 12, `canvas ${c.id} has no description: ${JSON.stringify(c)}`);
  }
  for (const id of ['map-time', 'map-channel']) assert.equal(roles.find((r) => r.id === id).tabindex, '0', `#${id} cannot take focus`);
  // Pause: the window stays, so the cell the keys move is the same token from key to key.
  await page.click('#pause');
  try {
    await waitFor(page, 'Pause with no window in the Worker', () => document.querySelector('#pause').dataset.inflight === '0' && document.querySelector('#pause').getAttribute('aria-pressed') === 'true');
    const map = '#map-time';
    const label = () => page.getAttribute(map, 'aria-label');
    assert.match(await label(), /layer 1, mean over heads, ECG \(chest\)/, 'the map\'s label names layer, head and stream');
    // Tab order reaches the map (from the head control before it); then the keys.
    await page.focus('#group-time');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'map-time', 'Tab from the stream select does not reach the map');
    await page.keyboard.press('ArrowDown');   // the first press shows the starting cell
    await waitFor(page, 'the highlighted cell at 0 0', () => document.querySelector('#map-time').dataset.hover === '0 0');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowDown');
    await waitFor(page, 'the highlighted cell at query 1, key 2', () => document.querySelector('#map-time').dataset.hover === '1 2');
    const rows = await page.$eval(map, (c) => Number(c.dataset.size));
    const text = await label();
    assert.match(text, /highlighted query ECG −?\d+\.\d s, key ECG −?\d+\.\d s/, `label: ${text}`);
    assert.match(await page.textContent('.map-time .tooltip'), /query.*key.*weight/s, 'the keyboard\'s cell has no tooltip');
    // Arrows stop at the edges.
    for (let i = 0; i < rows + 2; i++) await page.keyboard.press('ArrowUp');
    await waitFor(page, 'the top row', () => document.querySelector('#map-time').dataset.hover === '0 2');
    await page.keyboard.press('End');
    await waitFor(page, 'the last key', (g) => document.querySelector('#map-time').dataset.hover === `0 ${g - 1}`, rows);
    await page.keyboard.press('Enter');
    await waitFor(page, 'Enter to pin the cell', () => document.querySelector('#selection').dataset.selected === 'true');
    assert.match(await label(), /pinned query ECG/, 'the label does not say which cell is pinned');
    await waitFor(page, 'the pinned patches on the ECG trace', () => Number(document.querySelector('canvas.trace[data-stream="ecg"]').dataset.highlights) >= 1);
    await page.keyboard.press('Escape');
    await waitFor(page, 'Escape to unpin', () => document.querySelector('#selection').dataset.selected === 'false');
    await page.keyboard.press(' ');
    await waitFor(page, 'Space to pin', () => document.querySelector('#selection').dataset.selected === 'true');
    await page.keyboard.press('Escape');
    await waitFor(page, 'Escape to unpin again', () => document.querySelector('#selection').dataset.selected === 'false');
    // Leaving the map drops the keyboard's highlight.
    await page.keyboard.press('Shift+Tab');
    await waitFor(page, 'no highlighted cell after blur', () => document.querySelector('#map-time').dataset.hover === '');
    log('demo', `${elapsed()}: keyboard on #map-time (${rows} tokens): ${text}`);
  } finally {
    if (await page.getAttribute('#pause', 'aria-pressed') === 'true') await page.click('#pause');
  }
});

test('the prediction is a polite live region, announced when the class changes, not every update', async () => {
  const page = ctx.page;
  const region = await page.$eval('#announce', (e) => ({ live: e.getAttribute('aria-live'), atomic: e.getAttribute('aria-atomic'), role: e.getAttribute('role') }));
  assert.deepEqual(region, { live: 'polite', atomic: 'true', role: 'status' });
  // Count the region's changes and the class changes from here on.
  await page.evaluate(() => {
    window.__announce = { writes: 0, classes: [document.querySelector('#predicted').textContent] };
    new MutationObserver(() => { window.__announce.writes++; }).observe(document.querySelector('#announce'), { childList: true, characterData: true, subtree: true });
    new MutationObserver(() => {
      const now = document.querySelector('#predicted').textContent;
      if (now !== window.__announce.classes.at(-1)) window.__announce.classes.push(now);
    }).observe(document.querySelector('#predicted'), { childList: true, characterData: true, subtree: true });
  });
  const updates = await count('#updates', 'count');
  await waitFor(page, 'four more inference updates', (n) => Number(document.querySelector('#updates').dataset.count) >= n + 4, updates);
  const seen = await page.evaluate(() => window.__announce);
  assert.match(await page.textContent('#announce'), /^Predicted activity: (rest|walk|run)$/);
  assert.equal(await page.textContent('#announce'), `Predicted activity: ${await page.textContent('#predicted')}`);
  // textContent replaces the text node: one mutation record batch per write.
  assert.equal(seen.writes, seen.classes.length - 1, `announced ${seen.writes} times for class changes ${JSON.stringify(seen.classes)}`);
});

/** A copy of the page's model whose config has no `labels`, served from demo/<dir>/. */
function unlabeledModel() {
  const copy = unlabeledCopy(ctx.model.file, `unlabeled-${process.pid}`, 'model.safetensors');
  return { query: `model=${copy.path}`, cleanup: copy.cleanup };
}

test('the card shows forward\'s own label and probabilities; a model without labels shows "no class labels", not invented classes', async () => {
  const page = ctx.page;
  await waitFor(page, 'an inference update with a prediction', () => Number(document.querySelector('#updates')?.dataset.count) >= 1 && document.querySelector('.prob.best'));
  const card = await page.evaluate(() => ({
    predicted: document.querySelector('#predicted').textContent,
    best: document.querySelector('.prob.best .name').textContent,
    shown: [...document.querySelectorAll('.prob .p')].map((e) => parseFloat(e.textContent)),
    bestShown: parseFloat(document.querySelector('.prob.best .p').textContent),
  }));
  assert.equal(card.best, card.predicted, `the highlighted row is not the predicted class: ${JSON.stringify(card)}`);
  // forward's label is the arg-max of its probabilities: the highlighted value is the largest shown
  // (to 0.1 %, so a tie within 0.05 % may show equal values, never a larger one elsewhere).
  assert.equal(Math.max(...card.shown), card.bestShown, JSON.stringify(card));

  const model = unlabeledModel();
  const other = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await other.addInitScript({ content: CSP_HOOK });
    const watcher = watch(other, ctx.server.url.replace(/\/$/, ''));
    await other.goto(`${ctx.server.url}?mode=window&seed=${SEED}&${model.query}${ctx.model.query.replace(/&model=[^&]*/, '')}`);
    await waitFor(other, 'two inference updates (model without labels)', () => Number(document.querySelector('#updates')?.dataset.count) >= 2);
    const shown = await other.evaluate(() => ({
      predicted: document.querySelector('#predicted').textContent,
      none: document.querySelector('#predicted').classList.contains('none'),
      rows: document.querySelectorAll('.prob').length,
      announce: document.querySelector('#announce').textContent,
      logged: [...document.querySelectorAll('#log li[data-kind="model"] .text')].map((e) => e.textContent).join(' | '),
    }));
    assert.deepEqual({ predicted: shown.predicted, none: shown.none, rows: shown.rows, announce: shown.announce },
      { predicted: 'no class labels', none: true, rows: 0, announce: '' }, JSON.stringify(shown));
    assert.match(shown.logged, /no class labels/);
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
    log('demo', `${elapsed()}: a model without labels: "${shown.predicted}", ${shown.rows} probability rows`);
  } finally {
    await other.close();
    model.cleanup();
  }
});

test('desktop 1440x900: the events card ends with its list', async () => {
  const page = ctx.page;
  const box = await page.evaluate(() => {
    const card = document.querySelector('.card.log').getBoundingClientRect();
    const items = document.querySelectorAll('#log li');
    const list = document.querySelector('#log').getBoundingClientRect();
    return { cardBottom: card.bottom, lastBottom: items[items.length - 1].getBoundingClientRect().bottom, listBottom: list.bottom, items: items.length };
  });
  // card padding (14 px) + border (1 px) + rounding
  assert.ok(box.cardBottom - Math.min(box.lastBottom, box.listBottom) <= 18, `an empty area under the events list: ${JSON.stringify(box)}`);
});

test('phone 390x844: traces take the card\'s width with names above them, selects show their text, no console error', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  try {
    await page.addInitScript({ content: CSP_HOOK });
    const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
    await page.goto(ctx.url);
    await waitFor(page, 'both attention maps drawn from a window', () => ['map-time', 'map-channel'].every((id) => Number(document.getElementById(id)?.dataset.size) > 0));
    const layout = await page.evaluate(() => {
      const card = document.querySelector('.card.signals');
      const cs = getComputedStyle(card);
      const content = card.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const rows = [...document.querySelectorAll('.trace-row')].map((row) => {
        const meta = row.querySelector('.trace-meta').getBoundingClientRect();
        const canvas = row.querySelector('canvas').getBoundingClientRect();
        return { id: row.dataset.stream, width: canvas.width, metaBottom: meta.bottom, canvasTop: canvas.top };
      });
      const axis = document.querySelector('#time-axis').getBoundingClientRect();
      return { viewport: innerWidth, page: document.documentElement.scrollWidth, content, rows, axis: { left: axis.left, width: axis.width }, trace: document.querySelector('canvas.trace').getBoundingClientRect().left };
    });
    assert.ok(layout.page <= layout.viewport, `the page scrolls sideways: ${layout.page} > ${layout.viewport}`);
    for (const r of layout.rows) {
      assert.ok(r.width >= 0.9 * layout.content, `${r.id}: the trace is ${r.width} px of the card's ${layout.content} px`);
      assert.ok(r.metaBottom <= r.canvasTop + 0.5, `${r.id}: the name is beside the trace, not above it: ${JSON.stringify(r)}`);
    }
    assert.ok(Math.abs(layout.axis.left - layout.trace) < 1 && Math.abs(layout.axis.width - layout.rows[0].width) < 1, `the time axis does not line up with the traces: ${JSON.stringify(layout)}`);
    // A select shows its chosen option whole: the text (measured in the select's font) fits
    // inside its padding and the 20 px Chromium keeps for the arrow.
    const selects = await page.$$eval('select', (els) => els.map((e) => {
      const cs = getComputedStyle(e);
      const ctx2 = document.createElement('canvas').getContext('2d');
      ctx2.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const text = e.options[e.selectedIndex]?.text ?? '';
      return { id: e.id, text, textWidth: ctx2.measureText(text).width, room: e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 20, clientWidth: e.clientWidth, scrollWidth: e.scrollWidth };
    }));
    assert.ok(selects.length >= 2, `selects: ${JSON.stringify(selects)}`);
    for (const s of selects) {
      assert.ok(s.scrollWidth <= s.clientWidth, `#${s.id} overflows: ${JSON.stringify(s)}`);
      assert.ok(s.textWidth <= s.room, `#${s.id} cuts "${s.text}" off: ${JSON.stringify(s)}`);
    }
    // The keyboard works here too (a phone with a keyboard, or a screen reader's arrows).
    await page.focus('#map-channel');
    await page.keyboard.press('ArrowRight');
    await waitFor(page, 'a highlighted cell on the phone', () => document.querySelector('#map-channel').dataset.hover === '0 0');
    await page.screenshot({ path: join(ensureArtifacts(), 'demo-phone.png'), fullPage: true });
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations at 390x844');
    log('demo', `${elapsed()}: 390x844: traces ${layout.rows[0].width} of ${layout.content} px; selects ${selects.map((s) => `"${s.text}" ${Math.round(s.textWidth)}/${Math.round(s.room)} px`).join(', ')}`);
  } finally {
    await page.close();
  }
});

test('CSP: every response carries the header, nothing violates it, no console errors; screenshot', async () => {
  const page = ctx.page;
  // Pin a cell so the screenshot shows the highlighted patches too.
  await page.keyboard.press('Escape');  // clears a pinned cell, so the click below pins, not unpins
  await waitFor(page, 'no pinned cell', () => document.querySelector('#selection').dataset.selected === 'false');
  const map = page.locator('#map-time');
  const { position: at } = await cellPosition(page, '#map-time', (g) => [Math.floor(g * 0.4), Math.floor(g * 0.6)]);
  await map.click({ position: at });
  await waitFor(page, 'the pinned cell highlighted on the traces', () =>
    document.querySelector('#selection').dataset.selected === 'true' && [...document.querySelectorAll('canvas.trace')].some((c) => Number(c.dataset.highlights) > 0));
  await page.mouse.move(0, 0);
  await page.evaluate(() => window.scrollTo(0, 0));
  const shot = join(ensureArtifacts(), 'demo.png');
  await page.screenshot({ path: shot, fullPage: true });

  const { responses } = ctx.watch;
  const kinds = (re) => responses.filter((r) => re.test(new URL(r.url).pathname));
  for (const [what, re] of [['the page', /^\/(\?.*)?$/], ['main.js', /\/main\.js$/], ['style.css', /\/style\.css$/], ['the worker', /\/worker\.js$/], ['the .wasm', /\.wasm$/], ['the threaded .wasm', /-mt\.wasm$/], ['its pthread worker', /-mt\.worker\.js$/], ['the model', /\.safetensors$/]])
    assert.ok(kinds(re).length >= 1, `no response for ${what} was seen: ${responses.map((r) => r.url).join(', ')}`);
  const without = responses.filter((r) => r.csp !== CSP);
  assert.deepEqual(without, [], 'responses without the CSP header');
  const bad = await ctx.watch.problems();
  assert.deepEqual(bad, [], 'console errors, page errors, failed requests or CSP violations');
  const violations = await page.evaluate(() => document.documentElement.dataset.cspViolations ?? '0');
  assert.equal(violations, '0');
  log('demo', `${elapsed()}: ${responses.length} responses, all with the CSP header; no violation, no console error; screenshot ${shot}`);
});
