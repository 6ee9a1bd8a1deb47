// The Bluetooth layer's issue: "the same fake injected into headless Chromium with
// page.addInitScript". web/src/simulator/devices.js is bundled by Vite (build API, lib format 'iife',
// in memory) into one classic script that installs navigator.bluetooth = createSimulatedBluetooth();
// the demo opened with ?source=bluetooth then takes the path a real browser takes (no simulator of
// its own): connectWearable -> navigator.bluetooth.requestDevice -> GATT -> decoders -> clock
// alignment -> assembler -> the model in its Worker. The injected simulator and the page's own are
// seeded; every check waits for its condition (helpers.waitFor, DEADLINE_MS). Connect starts one
// connection at a time, and comes back for a strap the device layer gave up on.
//
//   node --test tests/browser/
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { CSP_HOOK, DEADLINE_MS, demoModel, demoServer, ensureArtifacts, launchChromium, log, repo, waitFor, watch } from './helpers.js';

const ctx = {};
const PAGE_SEED = 4242;  // the page's own simulator (second test), before Connect replaces it
const STREAMS = ['ecg', 'acc_x', 'acc_y', 'acc_z', 'hr', 'rr', 'temperature', 'spo2'];
const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

/** The simulator as one classic script defining SensorformerInject.install(options). */
async function bundleSimulator() {
  const { build } = await import('vite');
  const out = await build({
    configFile: false,
    root: repo,
    logLevel: 'silent',
    build: {
      write: false,
      minify: false,
      emptyOutDir: false,
      lib: { entry: join(repo, 'tests/browser/fixtures/inject-bluetooth.js'), formats: ['iife'], name: 'SensorformerInject', fileName: 'inject-bluetooth' },
    },
  });
  const outputs = (Array.isArray(out) ? out : [out]).flatMap((o) => o.output);
  const chunks = outputs.filter((o) => o.type === 'chunk');
  assert.equal(chunks.length, 1, `expected one chunk, got ${outputs.map((o) => o.fileName).join(', ')}`);
  const code = chunks[0].code;
  assert.doesNotMatch(code, /^\s*(import|export)\s/m, 'the bundle is not a classic script');
  return code;
}

before(async () => {
  const started = performance.now();
  ctx.code = await bundleSimulator();
  log('inject', `vite build (iife, in memory): simulator bundle ${(ctx.code.length / 1024).toFixed(0)} kB in ${((performance.now() - started) / 1000).toFixed(2)} s`);
  ctx.model = demoModel();
  ctx.server = await demoServer();
  ctx.browser = await launchChromium();
});

after(async () => {
  await ctx.browser?.close();
  await ctx.server?.close();
  ctx.model?.cleanup();
  log('inject', `done in ${elapsed()}`);
});

test('an injected navigator.bluetooth streams through connectWearable into the model', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript({ content: `${CSP_HOOK}\n${ctx.code}\nSensorformerInject.install({ seed: 7 });` });
  const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
  const url = `${ctx.server.url}?source=bluetooth${ctx.model.query}`;
  await page.goto(url);

  // The page found Web Bluetooth, went through requestDevice (no click) and connected all three.
  await waitFor(page, 'the Web Bluetooth source', () => document.querySelector('#source-name')?.textContent === 'Web Bluetooth');
  await waitFor(page, 'the three injected devices streaming', () =>
    ['strap', 'thermometer', 'oximeter'].every((k) => document.querySelector(`#devices .device[data-kind="${k}"]`)?.dataset.state === 'streaming'));
  const devices = await page.$$eval('#devices .device', (els) => els.map((e) => `${e.querySelector('.name').textContent}:${e.dataset.state}`));
  assert.ok(devices.includes('Polar H10 SIM:streaming'), `devices shown: ${devices}`);
  const strapName = await page.textContent('#devices .device[data-kind="strap"] .name');
  assert.equal(strapName, 'Polar H10 SIM');

  // It is the injected object that is connected, and the page holds no simulator of its own.
  const state = await page.evaluate(async () => {
    const bt = navigator.bluetooth;
    const granted = await bt.getDevices();
    return {
      injected: typeof bt.devicesByKey === 'object',
      connected: Object.fromEntries(Object.entries(bt.devicesByKey).map(([k, d]) => [k, d.gatt.connected])),
      granted: granted.map((d) => d.name).sort(),
      pmdFrames: bt.truth.pmdFrames.length,
    };
  });
  assert.equal(state.injected, true);
  assert.deepEqual(state.connected, { strap: true, thermometer: true, oximeter: true });
  assert.deepEqual(state.granted, ['Oxi SIM', 'Polar H10 SIM', 'Thermo SIM'], 'requestDevice was not asked for every device');
  assert.equal(await page.isHidden('#connect'), true, 'the Connect button should give way to the device controls');

  // Data flows: samples on the traces and inference updates from the Worker.
  await waitFor(page, 'an inference update with a latency', () => Number(document.querySelector('#updates')?.dataset.count) >= 1 && Number(document.querySelector('#latency').dataset.ms) > 0);
  // The thermometer reads every 5 s (first reading at its seeded phase) and traces draw samples
  // 0.6 s old: wait for samples on every trace rather than count updates.
  await waitFor(page, 'samples drawn on every trace', (ids) => ids.every((id) => Number(document.querySelector(`canvas.trace[data-stream="${id}"]`)?.dataset.points) > 0), STREAMS);
  const points = await page.$$eval('canvas.trace', (els) => Object.fromEntries(els.map((e) => [e.dataset.stream, Number(e.dataset.points)])));
  const latency = Number(await page.getAttribute('#latency', 'data-ms'));
  assert.ok(latency > 0, `latency ${latency}`);
  const predicted = await page.textContent('#predicted');
  assert.ok(['rest', 'walk', 'run'].includes(predicted), `prediction "${predicted}"`);

  const shot = join(ensureArtifacts(), 'demo-bluetooth.png');
  await page.screenshot({ path: shot, fullPage: true });
  assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('inject', `${elapsed()}: ${url}: devices ${devices.join(', ')}; granted via requestDevice ${state.granted.join(', ')}; ` +
    `${state.pmdFrames} PMD frames generated; samples drawn ${JSON.stringify(points)}; "${predicted}", latency ${latency.toFixed(1)} ms; screenshot ${shot}`);
  await page.close();
});

test('with Web Bluetooth present, the Connect button replaces the simulator with the chosen wearable', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.addInitScript({ content: `${CSP_HOOK}\n${ctx.code}\nSensorformerInject.install({ seed: 11, names: { strap: 'Polar H10 PICKED' } });` });
  const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
  await page.goto(`${ctx.server.url}?seed=${PAGE_SEED}${ctx.model.query}`);
  // The page starts its own simulator (default source) ...
  await waitFor(page, 'the page\'s simulated strap streaming', () => document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming');
  assert.equal(await page.textContent('#source-name'), 'Simulated wearable');
  assert.equal(await page.textContent('#devices .device[data-kind="strap"] .name'), 'Polar H10 SIM');
  // ... and the click goes through navigator.bluetooth.requestDevice (the chest strap's chooser).
  await page.click('#connect');
  await waitFor(page, 'the Web Bluetooth source', () => document.querySelector('#source-name').textContent === 'Web Bluetooth');
  await waitFor(page, 'the chosen strap streaming', () => document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming');
  assert.equal(await page.textContent('#devices .device[data-kind="strap"] .name'), 'Polar H10 PICKED');
  assert.equal(await page.$$eval('#devices .device', (els) => els.length), 1, 'only the strap was asked for');
  assert.equal(await page.isVisible('#add-thermometer'), true);
  await page.click('#add-thermometer');
  await waitFor(page, 'the thermometer streaming', () => document.querySelector('#devices .device[data-kind="thermometer"]')?.dataset.state === 'streaming');
  assert.equal(await page.isVisible('#add-thermometer'), false);
  const before = Number(await page.getAttribute('#updates', 'data-count'));
  await waitFor(page, 'two inference updates from the wearable', (n) => Number(document.querySelector('#updates').dataset.count) >= n + 2, before);
  // Back to the simulator: the wearables are let go. The page names the new source before the old
  // session has closed its connections, so wait for the disconnects themselves.
  await page.click('#use-simulator');
  await waitFor(page, 'the simulator as the source', () => document.querySelector('#source-name').textContent === 'Simulated wearable');
  await waitFor(page, 'every injected device disconnected', () => Object.values(navigator.bluetooth.devicesByKey).every((d) => !d.gatt.connected));
  const connected = await page.evaluate(() => Object.fromEntries(Object.entries(navigator.bluetooth.devicesByKey).map(([k, d]) => [k, d.gatt.connected])));
  assert.deepEqual(connected, { strap: false, thermometer: false, oximeter: false });
  assert.equal(await page.getAttribute('#source-name', 'data-seed'), String(PAGE_SEED), 'back to the page\'s simulator, with its seed');
  assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
  log('inject', `${elapsed()}: simulator -> Connect (requestDevice in the click) -> Polar H10 PICKED + thermometer -> back to the simulator; devices released`);
  await page.close();
});

test('Connect clicked twice while connecting: one chooser, one source; a lost strap brings Connect back, and it connects the strap again in the same session', async () => {
  const page = await ctx.browser.newPage({ viewport: { width: 1280, height: 800 } });
  // The injected navigator.bluetooth counts its choosers (requestDevice calls).
  await page.addInitScript({ content: `${CSP_HOOK}\n${ctx.code}\n(() => {
    const bluetooth = SensorformerInject.install({ seed: 13 });
    const request = bluetooth.requestDevice.bind(bluetooth);
    window.__choosers = 0;
    bluetooth.requestDevice = (options) => { window.__choosers++; return request(options); };
  })();` });
  const watcher = watch(page, ctx.server.url.replace(/\/$/, ''));
  try {
    await page.goto(`${ctx.server.url}?seed=${PAGE_SEED}&record=1${ctx.model.query}`);
    await waitFor(page, 'the page\'s simulated strap streaming', () => document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming');
    // Two clicks in one task: the second while the first's chooser is open (requestDevice runs in
    // the click, before anything is awaited, so the count is final once the clicks return).
    const choosers = await page.evaluate(() => {
      const button = document.querySelector('#connect');
      button.click();
      button.click();
      return window.__choosers;
    });
    assert.equal(choosers, 1, 'the second click started a second chooser and connection');
    await waitFor(page, 'the chosen strap streaming', () => document.querySelector('#source-name').textContent === 'Web Bluetooth' &&
      document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming');
    assert.equal(await page.isHidden('#connect'), true, 'Connect gives way while the strap streams');
    assert.equal(await page.isEnabled('#connect'), true, 'Connect enabled again once the connect finished');
    await page.evaluate(() => { window.__session = globalThis.sensorformerDemo.session(); });

    // The device layer gives up after six reconnect attempts (2 s, 4 s, ... 64 s: two minutes) and
    // says so with an 'error' of code BLUETOOTH_DISCONNECTED on the Wearable: sent here by hand.
    await page.evaluate(() => {
      const wearable = globalThis.sensorformerDemo.session().devices.get('strap').wearable;
      const error = Object.assign(new Error(`${wearable.name} did not come back after 6 reconnect attempts`), { code: 'BLUETOOTH_DISCONNECTED' });
      wearable.dispatchEvent(new CustomEvent('error', { detail: { error } }));
    });
    await waitFor(page, 'the strap lost and Connect shown', () => document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'lost' &&
      !document.querySelector('#connect').hidden);
    const updates = Number(await page.getAttribute('#updates', 'data-count'));
    await page.click('#connect');
    await waitFor(page, 'the strap streaming again, Connect hidden', () => document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming' &&
      document.querySelector('#connect').hidden);
    const after = await page.evaluate(() => ({
      same: globalThis.sensorformerDemo.session() === window.__session, choosers: window.__choosers,
      source: document.querySelector('#source-name').textContent, connected: navigator.bluetooth.devicesByKey.strap.gatt.connected,
    }));
    assert.deepEqual(after, { same: true, choosers: 2, source: 'Web Bluetooth', connected: true }, 'the strap again, in the same session');
    // The stream session goes on with the new link's samples.
    await waitFor(page, 'two more streamed predictions', (n) => Number(document.querySelector('#updates').dataset.count) >= n + 2, updates);
    assert.deepEqual(await watcher.problems(), [], 'console errors, page errors, failed requests or CSP violations');
    log('inject', `${elapsed()}: Connect twice -> one chooser; strap lost -> Connect shown -> the strap again in the same session`);
  } finally {
    await page.close();
  }
});
