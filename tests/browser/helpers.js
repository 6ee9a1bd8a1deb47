// Shared by the browser tests: the demo server (tools/serve-demo.mjs, in-process on port 0), a model
// for the page, headless Debian Chromium through playwright-core, and a watcher that collects
// everything a page must not do (console errors, uncaught exceptions, failed requests, CSP
// violations, responses without the CSP header).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before } from 'node:test';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { CSP, startServer } from '../../tools/serve-demo.mjs';

export const repo = fileURLToPath(new URL('../..', import.meta.url));
export const CHROMIUM = '/usr/bin/chromium';
// The launch arguments of tests/package/package.test.js.
export const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const artifacts = join(repo, 'test-artifacts');
export { CSP };

export const log = (scope, message) => console.log(`[${scope}] ${message}`);

// Every wait in the browser tests is for a condition, with this deadline: generous, because the
// machine is shared and a deadline costs time only when something is wrong.
export const DEADLINE_MS = 60_000;

/**
 * page.waitForFunction(fn, arg) with DEADLINE_MS; on a timeout the error names `what` and shows
 * `state()` (evaluated in the page) so a failure says what the page looked like.
 */
export async function waitFor(page, what, fn, arg, { state = PAGE_STATE, timeout = DEADLINE_MS } = {}) {
  try {
    await page.waitForFunction(fn, arg, { timeout });
  } catch (error) {
    const seen = await page.evaluate(state).catch((e) => `(page state unavailable: ${e.message})`);
    throw new Error(`waited ${timeout / 1000} s for ${what}: ${error.message.split('\n')[0]}\npage: ${JSON.stringify(seen)}`);
  }
}

// What a failed wait reports: the counters the tests read.
const PAGE_STATE = () => ({
  updates: document.querySelector('#updates')?.dataset.count,
  devices: [...document.querySelectorAll('#devices .device')].map((e) => `${e.dataset.kind}:${e.dataset.state}`),
  traces: Object.fromEntries([...document.querySelectorAll('canvas.trace')].map((c) => [c.dataset.stream, { points: c.dataset.points, gaps: c.dataset.gaps, gapsTotal: c.dataset.gapsTotal, newest: c.dataset.newest }])),
  pause: document.querySelector('#pause')?.getAttribute('aria-pressed'),
  inflight: document.querySelector('#pause')?.dataset.inflight,
  selected: document.querySelector('#selection')?.dataset.selected,
  notice: document.querySelector('#notice')?.hidden ? null : document.querySelector('#notice-text')?.textContent,
  log: [...document.querySelectorAll('#log li')].slice(0, 8).map((li) => `${li.dataset.kind}: ${li.querySelector('.text')?.textContent}`),
});

/**
 * The weights the page loads: the windowed model, the stream model and the AF model. Each is the
 * trained file when it exists (demo/model/demo.safetensors, demo/model/stream.safetensors,
 * models/af.safetensors); otherwise a stand-in with the same config and random weights
 * (build/demo-standin.safetensors, build/stream-standin.safetensors, build/af-standin.safetensors,
 * made by make_standin.py if missing or older than the file holding the config), copied for the
 * test's duration to a directory of its own under demo/ (the server serves demo/, web/ and models/;
 * demo/model/ and models/ are never touched).
 * Returns { query: '' | '&model=...&streamModel=...&afModel=...', file, streamFile (paths under
 * demo/), afFile (the AF model's path in the repository), kind, cleanup() }.
 */
export function demoModel() {
  const models = [
    { param: 'model', trained: 'demo/model/demo.safetensors', standin: 'demo-standin.safetensors', args: [], config: 'tools/demo/train_demo_model.py' },
    { param: 'streamModel', trained: 'demo/model/stream.safetensors', standin: 'stream-standin.safetensors', args: ['--stream'], config: 'tools/demo/train_demo_model.py' },
    { param: 'afModel', trained: 'models/af.safetensors', standin: 'af-standin.safetensors', args: ['--af'], config: 'tools/af/afmodel.py' },
  ];
  const dir = `standin-${process.pid}`;
  let query = '';
  const kinds = [], files = [];
  for (const m of models) {
    const name = m.trained.split('/').pop();
    if (existsSync(join(repo, m.trained))) {
      files.push(m.trained);
      kinds.push(`${m.trained} (trained)`);
      continue;
    }
    const standin = join(repo, 'build', m.standin);
    // The file holding CONFIG: a newer one means a stale stand-in.
    if (!existsSync(standin) || statSync(join(repo, m.config)).mtimeMs > statSync(standin).mtimeMs) {
      const r = spawnSync('/usr/bin/python3', [join(repo, 'tests/browser/make_standin.py'), ...m.args, standin], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${m.trained} is missing and the stand-in could not be made (python3 + torch):\n${r.stdout}${r.stderr}`);
    }
    mkdirSync(join(repo, 'demo', dir), { recursive: true });
    copyFileSync(standin, join(repo, 'demo', dir, name));
    query += `&${m.param}=${dir}/${name}`;
    files.push(`demo/${dir}/${name}`);
    kinds.push(`stand-in for ${m.trained} (random weights, its config): the trained file is not there yet`);
  }
  const underDemo = (f) => f.replace(/^demo\//, '');
  return {
    query, file: underDemo(files[0]), streamFile: underDemo(files[1]), afFile: files[2], kind: kinds.join('; '),
    cleanup: () => rmSync(join(repo, 'demo', dir), { recursive: true, force: true }),
  };
}

export async function demoServer() {
  const server = await startServer({ port: 0, host: '127.0.0.1' });
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }) };
}

export async function launchChromium() {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (tools/setup.sh)`);
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
}

// Runs in the page before any of its scripts (page.addInitScript): the page's own listener in
// main.js starts only once the module runs, and a violation in the HTML itself would come earlier.
export const CSP_HOOK = `
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => {
    window.__csp.push({ directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber, sample: e.sample });
  });
`;

/** Collects what a page must not do; `problems()` lists it, `responses` holds every response. */
export function watch(page, origin) {
  const problems = [];
  const responses = [];
  const onConsole = (where) => (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${where} console.${m.type()}: ${m.text()}`);
  };
  page.on('console', onConsole('page'));
  page.on('worker', (w) => w.on('console', onConsole(`worker ${w.url()}`)));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.stack ?? e.message}`));
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (!r.url().startsWith(origin)) return;
    responses.push({ url: r.url(), status: r.status(), csp: r.headers()['content-security-policy'] ?? null });
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return {
    responses,
    async problems() {
      const csp = await page.evaluate(() => window.__csp ?? []).catch(() => []);
      return [...problems, ...csp.map((v) => `CSP violation: ${JSON.stringify(v)}`)];
    },
  };
}

/** FNV-1a of a canvas's pixels, and how much of it is not background (read in the page). */
export function canvasStats(page, selector) {
  return page.$eval(selector, (canvas) => {
    const { width, height } = canvas;
    // Read through a copy: repeated getImageData on the page's own context makes Chromium warn
    // (willReadFrequently), and the page must stay free of warnings.
    const copy = document.createElement('canvas');
    copy.width = width;
    copy.height = height;
    const c2 = copy.getContext('2d', { willReadFrequently: true });
    c2.drawImage(canvas, 0, 0);
    const data = c2.getImageData(0, 0, width, height).data;
    // background: the most common colour along the canvas's left edge
    const bg = [data[0], data[1], data[2]];
    let h = 0x811c9dc5, n = 0, sum = 0, sum2 = 0;
    for (let i = 0; i < data.length; i += 4) {
      h = Math.imul(h ^ data[i], 16777619); h = Math.imul(h ^ data[i + 1], 16777619); h = Math.imul(h ^ data[i + 2], 16777619);
      if (Math.abs(data[i] - bg[0]) + Math.abs(data[i + 1] - bg[1]) + Math.abs(data[i + 2] - bg[2]) > 6) {
        const l = 0.2126 * data[i] + 0.7152 * data[i + 1] + 0.0722 * data[i + 2];
        n++; sum += l; sum2 += l * l;
      }
    }
    const mean = n ? sum / n : 0;
    return { width, height, hash: (h >>> 0).toString(16), nonBackground: n, fraction: n / (width * height), variance: n ? sum2 / n - mean * mean : 0 };
  });
}

export function ensureArtifacts() {
  mkdirSync(artifacts, { recursive: true });
  return artifacts;
}

/**
 * The demo page in a fresh Chromium at 1440 x 900, watched (watch()) from before its first script:
 * the setup of demo.test.js and demo-stream.test.js. `params` is the query before the models'
 * (e.g. 'mode=window&seed=1'). Returns { model, server, browser, page, watch, url }; the caller
 * closes the browser and the server and calls model.cleanup().
 */
export async function openDemoPage(scope, params) {
  const model = demoModel();
  const server = await demoServer();
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  await page.addInitScript({ content: CSP_HOOK });
  const watched = watch(page, server.url.replace(/\/$/, ''));
  const url = `${server.url}?${params}${model.query}`;
  log(scope, `${url} (models: ${model.kind}), Chromium ${browser.version()}`);
  await page.goto(url);
  return { model, server, browser, page, watch: watched, url };
}

/**
 * openDemoPage(scope, params) in a `before` hook of the calling test file, closed in an `after`
 * hook (browser, server, the models' stand-ins; the time taken logged). Returns { ctx (filled by
 * the hook: openDemoPage's result), elapsed () => 'N.N s' since this call }.
 */
export function demoPageForTests(scope, params) {
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
  const ctx = {};
  before(async () => {
    Object.assign(ctx, await openDemoPage(scope, params));
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.server?.close();
    ctx.model?.cleanup();
    log(scope, `done in ${elapsed()}`);
  });
  return { ctx, elapsed };
}

/**
 * A copy of demo/<file> whose config has no `labels` (the safetensors header rewritten), written
 * to demo/<dir>/<name> for the server to serve. Tensor offsets count from the end of the header, so
 * a shorter header is fine; it is padded with spaces to a multiple of 8 bytes, as safetensors
 * writers do. Returns { path (under demo/), cleanup() }.
 */
export function unlabeledCopy(file, dir, name) {
  const bytes = readFileSync(join(repo, 'demo', file));
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const config = JSON.parse(header.__metadata__.config);
  assert.ok(Array.isArray(config.labels) && config.labels.length > 0, `${file} has no labels: the test could not tell the cases apart`);
  delete config.labels;
  header.__metadata__.config = JSON.stringify(config);
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  mkdirSync(join(repo, 'demo', dir), { recursive: true });
  writeFileSync(join(repo, 'demo', dir, name), Buffer.concat([length, Buffer.from(json), bytes.subarray(8 + n)]));
  return { path: `${dir}/${name}`, cleanup: () => rmSync(join(repo, 'demo', dir), { recursive: true, force: true }) };
}

/**
 * In the page (page.evaluate(pageRecording, name)): a recording of a `?record=1` page
 * (globalThis.sensorformerDemo[name](): 'recording' for the stream model's session, 'rhythm' for
 * the AF model's) as plain arrays that cross as JSON (typed arrays to arrays, NaN to null).
 */
export const pageRecording = (name) => {
  const r = globalThis.sensorformerDemo[name]();
  if (!r) return null;
  const plain = (x) => (x == null ? x : Array.from(x, (v) => (Number.isNaN(v) ? null : v)));
  return {
    streamIds: [...r.streamIds],
    chunks: r.chunks.map((c) => ({
      streams: c.streams.map((s) => s && { ...s, samples: plain(s.samples), timestamps: plain(s.timestamps) }),
    })),
    predictions: r.predictions.map((p) => ({ ...p, pooled: plain(p.pooled), head: plain(p.head), probabilities: plain(p.probabilities) })),
    received: Object.fromEntries(Object.entries(r.received).map(([id, v]) => [id, plain(v)])),
  };
};

/** A chunk from pageRecording back as the page pushed it (typed arrays, null to NaN). */
export function chunkFromPage(chunk) {
  return {
    streams: chunk.streams.map((s) => s && {
      ...s,
      samples: s.samples == null ? s.samples : Float32Array.from(s.samples, (v) => v ?? NaN),
      timestamps: s.timestamps == null ? s.timestamps : Float64Array.from(s.timestamps),
    }),
  };
}

/**
 * The window of everything the chunks gave, per session stream (docs/model.md "Streaming
 * sessions": a regular stream's later startTime fills the samples up to its slot, rounded to the
 * nearest, with missing ones; `until` fills the slots with time < until; event streams append).
 */
export function windowFromChunks(chunks, referenceTime) {
  const streams = [];
  for (const chunk of chunks) {
    chunk.streams.forEach((s, i) => {
      if (!s) return;
      if (!streams[i]) {
        streams[i] = s.timestamps
          ? { sensor: s.sensor, modality: s.modality, placement: s.placement, timestamps: [], samples: [] }
          : { sensor: s.sensor, modality: s.modality, placement: s.placement, rateHz: s.rateHz, startTime: s.startTime, samples: [] };
      }
      const w = streams[i];
      if (w.timestamps) {
        w.timestamps.push(...(s.timestamps ?? []));
        w.samples.push(...(s.samples ?? []));
        return;
      }
      const slot = (t) => (t - w.startTime) * w.rateHz;
      if (s.startTime != null && w.samples.length) {
        const k = Math.round(slot(s.startTime));
        while (w.samples.length < k) w.samples.push(null);
      }
      w.samples.push(...(s.samples ?? []));
      if (s.until != null) {
        const k = Math.ceil(slot(s.until));
        while (w.samples.length < k) w.samples.push(null);
      }
    });
  }
  return { referenceTime, streams };
}

/**
 * Clicks "Simulate disconnect" once it is enabled and waits for the strap to be back (its
 * reconnect logged, its state streaming). Returns { from, back }: host seconds before the click
 * and once it was back.
 */
export async function simulateDisconnect(page) {
  await waitFor(page, 'Simulate disconnect enabled', () => !document.querySelector('#disconnect').disabled);
  const from = await page.evaluate(() => (performance.timeOrigin + performance.now()) / 1000);
  await page.click('#disconnect');
  await waitFor(page, 'the strap back after its outage', () => document.querySelector('#log li[data-kind="reconnect"]') && document.querySelector('#devices .device[data-kind="strap"]')?.dataset.state === 'streaming');
  const back = await page.evaluate(() => (performance.timeOrigin + performance.now()) / 1000);
  return { from, back };
}

/** The times of a regular stream's missing slots (windowFromChunks' nulls) in [t0, t1]; all: every one. */
export function missingSlots(stream, t0 = -Infinity, t1 = Infinity) {
  const all = [];
  stream.samples.forEach((v, i) => { if (v === null) all.push(stream.startTime + i / stream.rateHz); });
  return { all, within: all.filter((t) => t >= t0 && t <= t1) };
}
