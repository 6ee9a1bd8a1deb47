#!/usr/bin/env node
// First call against steady state: how much slower is the first forward in a fresh process (or a
// fresh browser page) than the same process's later forwards? V8 compiles new WebAssembly with its
// baseline compiler (Liftoff) and moves hot functions to its optimizing one (TurboFan) only after
// they ran a while (dynamic tiering), and a call already running stays in the code it started in.
//
// Each sample is a fresh Node process (or a fresh browser context with its own cache): loadModel,
// then forward #1 (the first call), then STEADY more forwards; steady state is the median of the
// last half of those. Reported per case: the median over processes of load time, first forward,
// steady forward and first / steady.
//
// Cases: the demo model (demo/model/demo.safetensors, factorized, d 32) on a 10 s window of the
// streams the demo page shows, with attention maps as the page asks for them; and a larger model
// (flattened layout, d 64, 4 heads, ff 256, 2 layers: the encoder) on a window of 1024
// tokens, its weights seeded random numbers written here (only the speed matters).
//
//   node bench/first_call.mjs [--runs 9] [--steady 12] [--node] [--browser] [--isolated]
//        [--case demo|large] [--wasm-url PATH] [--load-option key=value ...] [--web DIR] [--worker]
// --wasm-url / --load-option pass options to loadModel (to compare builds or loader settings);
// --worker (with --browser): the page loads the model with loadModelInWorker and awaits each
// forward (times include the messages to and from the Worker, both for the first forward and the
// steady ones). A page's main thread may not block (Atomics.wait throws there), so the threaded
// build's caller spins while it waits for a helper; in a Worker it sleeps (docs/performance.md,
// "First call of the threaded build").
// --web: the package's folder, relative to the repository (default web; a copy of web/ with
// another build in its dist/ compares builds, glue included).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
// mulberry32, seeded: the same window and weights in every process and page (its text is sent to the page).
import { prng } from '../tests/js/prng.js';
import { median } from './lib.mjs';

const repo = fileURLToPath(new URL('..', import.meta.url));
const here = fileURLToPath(import.meta.url);

// Imported (for makeCase) rather than run: parse nothing, run nothing.
const main = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
const { values: args } = parseArgs({
  args: main ? process.argv.slice(2) : [],
  options: {
    runs: { type: 'string', default: '9' },
    steady: { type: 'string', default: '12' },
    node: { type: 'boolean', default: false },
    browser: { type: 'boolean', default: false },
    case: { type: 'string', multiple: true },
    child: { type: 'string' },
    'wasm-url': { type: 'string' },
    web: { type: 'string', default: 'web' },
    // Chromium: serve the page cross-origin isolated (COOP/COEP), as the demo server does, so the
    // loader can pick the threaded build (numThreads defaults to the cores, at most 4).
    isolated: { type: 'boolean', default: false },
    worker: { type: 'boolean', default: false },
    'load-option': { type: 'string', multiple: true, default: [] },
  },
});
const RUNS = Number(args.runs), STEADY = Number(args.steady);
const CASES = args.case ?? ['demo', 'large'];

// ---- inputs (plain data: the same function text builds them in Node and in the page) ----------
// Returns { model: Uint8Array | null (null: the demo model file), window, forwardOptions }.
export function makeCase(name, demoConfig, rand) {
  const T0 = 1764460800;
  const stream = (sensor, modality, placement, rateHz, seconds, scale) => {
    const n = Math.round(rateHz * seconds);
    const samples = new Float32Array(n);
    for (let i = 0; i < n; i++) samples[i] = scale * (Math.sin(i / rateHz * 7.3) + 0.3 * (rand() - 0.5));
    return { sensor, modality, placement, rateHz, startTime: T0, samples };
  };
  if (name === 'demo') {
    // What the demo page's simulated strap and watch send for a 10 s window.
    const streams = [stream(0, 'ecg', 'chest', 130, 10, 400), stream(1, 'hr', 'chest', 1, 10, 20), stream(1, 'rr', 'chest', 1.5, 10, 0.1)];
    for (const axis of ['acc_x', 'acc_y', 'acc_z']) streams.push(stream(0, axis, 'chest', 50, 10, 500), stream(2, axis, 'wrist', 50, 10, 500));
    streams.push(stream(3, 'spo2', 'finger', 1, 10, 1), stream(2, 'temperature', 'wrist', 1, 10, 0.5));
    return { model: null, window: { streams, referenceTime: T0 }, forwardOptions: { attention: true } };
  }
  // The encoder: d 64, 4 heads, ff 256, 2 pre-norm GELU layers; 1024 ECG patches of 26.
  const config = { ...demoConfig, d_model: 64, n_heads: 4, dim_feedforward: 256, layout: 'flattened' };
  const d = 64, ff = 256;
  const shapes = { 'tokenizer.mask_token': [d] };
  config.modalities.forEach((m) => { shapes[`tokenizer.value_proj.${m.name}.weight`] = [d, m.patch_len]; shapes[`tokenizer.value_proj.${m.name}.bias`] = [d]; });
  shapes['tokenizer.sensor_embedding.weight'] = [config.n_sensors, d];
  shapes['tokenizer.modality_embedding.weight'] = [config.modalities.length, d];
  shapes['tokenizer.placement_embedding.weight'] = [config.placements.length, d];
  shapes['tokenizer.rate_embedding.weight'] = [config.rate_bucket_edges_hz.length + 2, d];
  for (let l = 0; l < config.n_layers; l++) {
    const p = `encoder.layers.${l}.`;
    Object.assign(shapes, {
      [`${p}self_attn.in_proj_weight`]: [3 * d, d], [`${p}self_attn.in_proj_bias`]: [3 * d],
      [`${p}self_attn.out_proj.weight`]: [d, d], [`${p}self_attn.out_proj.bias`]: [d],
      [`${p}linear1.weight`]: [ff, d], [`${p}linear1.bias`]: [ff], [`${p}linear2.weight`]: [d, ff], [`${p}linear2.bias`]: [d],
      [`${p}norm1.weight`]: [d], [`${p}norm1.bias`]: [d], [`${p}norm2.weight`]: [d], [`${p}norm2.bias`]: [d],
    });
  }
  Object.assign(shapes, { 'encoder.norm.weight': [d], 'encoder.norm.bias': [d], 'head.weight': [config.n_outputs, d], 'head.bias': [config.n_outputs] });
  // safetensors: 8-byte header length, JSON header, little-endian F32 data.
  const header = { __metadata__: { config: JSON.stringify(config) } };
  let offset = 0;
  for (const [key, shape] of Object.entries(shapes)) {
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    header[key] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(new TextEncoder().encode(json), 8);
  const data = new Float32Array(out.buffer, 8 + json.length, offset / 4);
  let k = 0;
  for (const [key, shape] of Object.entries(shapes)) {
    const n = shape.reduce((a, b) => a * b, 1);
    // Norm weights near 1, the rest ~ U(-1, 1) / sqrt(fan in): activations stay O(1).
    const norm = /norm\d?\.weight$/.test(key);
    const scale = 1 / Math.sqrt(shape.length > 1 ? shape[1] : d);
    for (let i = 0; i < n; i++) data[k++] = norm ? 1 + 0.1 * (rand() - 0.5) : scale * 2 * (rand() - 0.5);
  }
  return { model: out, window: { streams: [stream(0, 'ecg', 'chest', 130, 1024 * 26 / 130, 400)], referenceTime: T0 }, forwardOptions: {} };
}

// ---- one sample: runs in a fresh process or page ----------------------------------------------
async function sample(loadModel, demoBytes, name, loadOptions, steadyCount) {
  const demoConfig = JSON.parse(new TextDecoder().decode(demoBytes.subarray(8, 8 + Number(new DataView(demoBytes.buffer, demoBytes.byteOffset).getBigUint64(0, true))))).__metadata__.config;
  const c = makeCase(name, JSON.parse(demoConfig), prng(7));
  let t = performance.now();
  const model = await loadModel(c.model ?? demoBytes, loadOptions);
  const loadMs = performance.now() - t;
  const times = [];
  let tokens = 0;
  for (let i = 0; i <= steadyCount; i++) {
    t = performance.now();
    const r = await model.forward(c.window, c.forwardOptions);  // a Model's result, or a Worker's promise of it
    times.push(performance.now() - t);
    tokens = r.dims[0];
  }
  const threads = model.threads;
  await model.dispose();
  const later = times.slice(1 + Math.floor(steadyCount / 2)).sort((a, b) => a - b);
  return { loadMs, firstMs: times[0], steadyMs: later[later.length >> 1], tokens, threads };
}

function loadOptionsFromArgs() {
  const o = {};
  if (args['wasm-url']) o.wasmUrl = args['wasm-url'];
  for (const kv of args['load-option']) {
    const [k, v] = kv.split('=');
    o[k] = v === 'true' ? true : v === 'false' ? false : Number.isNaN(Number(v)) ? v : Number(v);
  }
  return o;
}

if (main && args.child) {
  const { loadModel } = await import(pathToFileURL(`${repo}${args.web}/src/index.js`).href);
  const demoBytes = new Uint8Array(readFileSync(new URL('../demo/model/demo.safetensors', import.meta.url)));
  const r = await sample(loadModel, demoBytes, args.child, loadOptionsFromArgs(), STEADY);
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0);
}


function report(engine, name, rows) {
  const m = (k) => median(rows.map((r) => r[k]));
  const ratio = median(rows.map((r) => r.firstMs / r.steadyMs));
  // threads: as granted by the loader (more than 1: the pthreads build ran).
  console.log(`${engine.padEnd(8)} ${name.padEnd(6)} ${String(rows[0].tokens).padStart(5)} tokens  threads ${[...new Set(rows.map((r) => r.threads))].join('/')}  load ${m('loadMs').toFixed(1).padStart(6)} ms  ` +
    `first ${m('firstMs').toFixed(2).padStart(8)} ms  steady ${m('steadyMs').toFixed(2).padStart(8)} ms  first/steady ${ratio.toFixed(2)}  ` +
    `(${rows.length} fresh ${engine === 'node' ? 'processes' : 'contexts'}; per-run ratios ${rows.map((r) => (r.firstMs / r.steadyMs).toFixed(2)).join(' ')})`);
}

async function runNode() {
  for (const name of CASES) {
    const rows = [];
    for (let i = 0; i < RUNS; i++) {
      const extra = [];
      if (args['wasm-url']) extra.push('--wasm-url', args['wasm-url']);
      extra.push('--web', args.web);
      for (const kv of args['load-option']) extra.push('--load-option', kv);
      const out = await new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [here, '--child', name, '--steady', String(STEADY), ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
        let text = '';
        p.stdout.on('data', (b) => { text += b; });
        p.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`child exited with ${code}`))));
      });
      rows.push(JSON.parse(out));
    }
    report('node', name, rows);
  }
}

// A fresh page of `browser` in a context of its own (its own cache: nothing compiled before), on a
// localhost origin (a secure context, which SharedArrayBuffer needs besides COOP/COEP) served by an
// HTTP server of its own on a free port, which answers every request from the repository.
// `isolated`: with the COOP/COEP headers the demo server sends, so the loader can pick the threaded
// build. (A Playwright route served these pages until 2026-12-06, but a route does not see the
// requests of a Worker started by a Worker, as the threaded build's pool is under
// loadModelInWorker.) Also used by first_call_trace.mjs. Returns { page, close }; close() closes
// the page's context and the server.
export const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export async function openPage(browser, { isolated, title = 'first call' }) {
  const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };
  const headers = isolated ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://localhost').pathname;
    if (path === '/') return res.writeHead(200, { ...headers, 'Content-Type': 'text/html' }).end(`<!doctype html><title>${title}</title>`);
    let body;
    try {
      body = readFileSync(repo + path.slice(1));
    } catch {
      return res.writeHead(404).end();
    }
    res.writeHead(200, { ...headers, 'Content-Type': types[path.slice(path.lastIndexOf('.'))] ?? 'application/octet-stream' }).end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`http://localhost:${server.address().port}/`);
  const close = async () => {
    await context.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { page, close };
}

async function runBrowser() {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: LAUNCH_ARGS });
  try {
    for (const name of CASES) {
      const rows = [];
      for (let i = 0; i < RUNS; i++) {
        const { page, close } = await openPage(browser, { isolated: args.isolated });
        const r = await page.evaluate(async ({ sampleText, makeCaseText, prngText, name, loadOptions, steady, web, worker }) => {
          const { loadModel, loadModelInWorker } = await import(`/${web}/src/index.js`);
          const demoBytes = new Uint8Array(await (await fetch('/demo/model/demo.safetensors')).arrayBuffer());
          // The functions of this file, rebuilt in the page (no bundler needed for three functions).
          // eslint-disable-next-line no-new-func
          const build = new Function(`${prngText}\n${makeCaseText}\n${sampleText}\nreturn sample;`);
          globalThis.__bench = build;
          return build()(worker ? loadModelInWorker : loadModel, demoBytes, name, loadOptions, steady);
        }, { sampleText: sample.toString().replace(/^async function sample/, 'async function sample'), makeCaseText: makeCase.toString(), prngText: prng.toString(), name, loadOptions: loadOptionsFromArgs(), steady: STEADY, web: args.web, worker: args.worker });
        rows.push(r);
        await close();
      }
      report(`chromium${args.isolated ? ' (isolated)' : ''}${args.worker ? ', Worker' : ''}`, name, rows);
    }
  } finally {
    await browser.close();
  }
}

const both = !args.node && !args.browser;
if (main && !args.child) console.log(`# node ${process.version}; ${RUNS} fresh runs per case; steady = median of forwards ${2 + Math.floor(STEADY / 2)}..${STEADY + 1} of the same run`);
if (main && !args.child && (args.node || both)) await runNode();
if (main && !args.child && (args.browser || both)) await runBrowser();
