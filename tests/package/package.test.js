// The package as a consumer gets it: `npm pack`, the tarball installed into a fresh project outside
// the repo, then (a) a Node script and the installed CLI run the model, (b) a Vite app in
// TypeScript built from it (type-checked with tsc --strict) runs the model on the main thread and
// in a Worker, the simulated wearable, a trace and an attention map in headless Chromium, (c) a
// TypeScript consumer of every entry point type-checks against the shipped types, (d) Vite bundles
// of apps that use one part of the package carry only that part, (e) the README's web page builds
// and runs, (f) the README's node, ts and sh examples run from the install. No step may need
// Emscripten: emcc and friends are shadowed on PATH by stubs that record any call.
//
//   node --test tests/package/           (SENSORFORMER_KEEP_TMP=1 keeps the temp project)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, normalize, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import ts from 'typescript';

import { allClose, fixturePath, readSafetensors } from '../js/safetensors.js';
import { parseBlocks } from '../js/markdown.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const here = fileURLToPath(new URL('.', import.meta.url));
const bin = (name) => join(repo, 'node_modules', '.bin', name);
const CHROMIUM = '/usr/bin/chromium';
const POOLED_ATOL = 1e-5;  // model outputs vs the PyTorch reference (README "Tolerances")
const SAME_WASM_ATOL = 1e-6;  // Node vs Chromium: the same .wasm, so in practice bit-identical
const WINDOW_INDEX = 2;
const WEARABLE_SECONDS = 8;  // app/main.ts WINDOW_SECONDS

const tmp = mkdtempSync(join(tmpdir(), 'sensorformer-package-'));
const project = join(tmp, 'consumer');
const app = join(project, 'app');
const stubs = join(tmp, 'no-emscripten');
const stubLog = join(tmp, 'emscripten-calls.log');
const state = {};  // filled step by step: tarball, nodePooled

// Every child runs with Emscripten out of reach: stubs first on PATH, its variables removed.
const env = { ...process.env, PATH: `${stubs}:${process.env.PATH}`, npm_config_update_notifier: 'false' };
for (const k of Object.keys(env)) if (/^(EM_|EMSDK|EMCC_|EMSCRIPTEN)/.test(k)) delete env[k];

const seconds = (t0) => `${((performance.now() - t0) / 1000).toFixed(2)} s`;
const log = (step, message) => console.log(`[package] ${step}: ${message}`);

// Runs a command; resolves to { code, stdout, stderr, took }, never rejects on a non-zero exit.
// path: folders put first on PATH (before the Emscripten stubs).
function run(command, args, { cwd, timeout = 120_000, path = [] } = {}) {
  const t0 = performance.now();
  return new Promise((resolvePromise, reject) => {
    const childEnv = path.length ? { ...env, PATH: [...path, env.PATH].join(':') } : env;
    const child = spawn(command, args, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], timeout });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => resolvePromise({ code: code ?? signal, stdout, stderr, took: seconds(t0) }));
  });
}

function describe(what, r) {
  return `${what} exited with ${r.code} after ${r.took}\n--- stdout ---\n${r.stdout.trim()}\n--- stderr ---\n${r.stderr.trim()}\n---`;
}

async function mustRun(what, command, args, options) {
  const r = await run(command, args, options);
  assert.equal(r.code, 0, describe(what, r));
  return r;
}

function need(key, step) {
  assert.ok(state[key] !== undefined, `skipped: ${step} did not complete (see its failure above)`);
  return state[key];
}

before(() => {
  mkdirSync(stubs, { recursive: true });
  for (const tool of ['emcc', 'em++', 'emcmake', 'emconfigure', 'emmake', 'emar', 'wasm-ld']) {
    const stub = join(stubs, tool);
    writeFileSync(stub, `#!/bin/sh\necho "${tool} $*" >> '${stubLog}'\necho "${tool}: a consumer of the package must not need Emscripten" >&2\nexit 127\n`);
    chmodSync(stub, 0o755);
  }
});

after(() => {
  if (process.env.SENSORFORMER_KEEP_TMP) return log('cleanup', `kept ${tmp}`);
  rmSync(tmp, { recursive: true, force: true });
  log('cleanup', `removed ${tmp}`);
});

test('npm pack ships the module, loader, types and CLI, and nothing of the build', async () => {
  for (const f of ['web/dist/sensorformer-core.wasm', 'web/dist/sensorformer-core.js'])
    assert.ok(existsSync(join(repo, f)), `${f} is missing: run \`bash tools/build.sh\` first`);
  // web/dist is rebuilt by tools/build.sh; a build finishing during the pack would ship a glue and a
  // .wasm from two builds (seen: "Import #0 module=\"env\" error" in step (a)).
  const stamp = () => ['js', 'wasm'].map((x) => statSync(join(repo, `web/dist/sensorformer-core.${x}`)).mtimeMs).join();
  const before = stamp();
  const r = await mustRun('npm pack', 'npm', ['pack', '--pack-destination', tmp, '--json'], { cwd: repo });
  assert.equal(stamp(), before, 'web/dist changed while npm pack ran (is tools/build.sh running?): run the test again');
  const [info] = JSON.parse(r.stdout);
  const tarball = join(tmp, info.filename);
  assert.ok(existsSync(tarball), `npm pack reported ${info.filename} but ${tarball} does not exist`);

  // What is really in the tarball (not what npm says it would put there).
  const listing = await mustRun('tar -tzf', 'tar', ['-tzf', tarball]);
  const files = listing.stdout.split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
  const required = ['package.json', 'LICENSE', 'web/dist/sensorformer-core.wasm', 'web/dist/sensorformer-core.js',
    'web/dist/sensorformer-core-mt.wasm', 'web/dist/sensorformer-core-mt.js', 'web/dist/sensorformer-core-mt.worker.js', 'web/src/index.js', 'web/bin/sensorformer.js',
    'web/index.d.ts', 'web/ble.d.ts', 'web/render.d.ts', 'web/simulator.d.ts', 'web/src/simulator/index.js',
    'models/af.safetensors', 'models/af-metrics.json'];
  for (const f of required) assert.ok(files.includes(f), `the tarball lacks ${f}; it has:\n${files.join('\n')}`);
  // package.json says MIT: the tarball carries the licence text itself (its terms require it).
  const license = (await mustRun('tar -xOzf LICENSE', 'tar', ['-xOzf', tarball, 'package/LICENSE'])).stdout;
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 the sensorformer authors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
  assert.equal(JSON.parse((await mustRun('tar -xOzf package.json', 'tar', ['-xOzf', tarball, 'package/package.json'])).stdout).license, 'MIT');
  const forbidden = files.filter((f) => /^(src|tests|tools|build|bindings)\//.test(f));
  assert.deepEqual(forbidden, [], `the tarball carries build inputs:\n${forbidden.join('\n')}`);
  assert.deepEqual(info.bundled ?? [], []);
  state.tarball = tarball;
  log('npm pack', `${info.filename}: ${files.length} files, ${(info.size / 1024).toFixed(0)} kB packed, ` +
    `${(info.unpackedSize / 1024).toFixed(0)} kB unpacked, in ${r.took}\n  ${files.join('\n  ')}`);
});

test('the tarball installs into a fresh project with no build step', async () => {
  const tarball = need('tarball', 'npm pack');
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'sensorformer-consumer', version: '0.0.0', type: 'module', private: true }, null, 2)}\n`);
  const r = await mustRun('npm install <tarball>', 'npm', ['install', tarball, '--no-audit', '--no-fund'], { cwd: project });
  const installed = join(project, 'node_modules', 'sensorformer');
  assert.ok(!lstatSync(installed).isSymbolicLink(), 'the package must be a copy, not a link into the repo');
  for (const f of ['web/dist/sensorformer-core.wasm', 'web/src/index.js', 'web/index.d.ts'])
    assert.ok(existsSync(join(installed, f)), `installed package lacks ${f}`);
  assert.ok(existsSync(join(project, 'node_modules', '.bin', 'sensorformer')), 'the CLI was not linked into node_modules/.bin');
  state.installed = installed;
  log('npm install', `${basename(tarball)} into ${project} in ${r.took} (${r.stdout.trim().split('\n').pop()})`);
});

test('(a) Node: a consumer script and the installed CLI run the model', async () => {
  need('installed', 'npm install');
  const t0 = performance.now();
  copyFileSync(fixturePath('model/factorized.safetensors'), join(project, 'model.safetensors'));
  copyFileSync(fixturePath('model/windows.json'), join(project, 'windows.json'));
  writeFileSync(join(project, 'run.js'), `import { readFile } from 'node:fs/promises';
import { loadModel, loadCore } from 'sensorformer';

const { windows } = JSON.parse(await readFile('windows.json', 'utf8'));
const model = await loadModel('model.safetensors');
const r = model.forward(windows[${WINDOW_INDEX}]);
const { simdArch } = await loadCore();
console.log(JSON.stringify({ simdArch, resolved: import.meta.resolve('sensorformer'), dims: r.dims, pooled: Array.from(r.pooled) }));
model.dispose();
`);
  const r = await mustRun('node run.js', process.execPath, ['run.js'], { cwd: project });
  const out = JSON.parse(r.stdout);
  assert.ok(out.resolved.startsWith(`file://${project}/node_modules/sensorformer/`), `'sensorformer' resolved to ${out.resolved}, not the installed copy`);
  const expected = readSafetensors(fixturePath('model/expected.safetensors')).tensors[`factorized.w${WINDOW_INDEX}.pooled`].data;
  const cmp = allClose(out.pooled, expected, POOLED_ATOL, 0);
  assert.ok(cmp.ok, `pooled (window ${WINDOW_INDEX}) vs the reference: ${cmp.message}`);
  state.nodePooled = out.pooled;
  log('(a) node', `run.js: ${out.dims[0]} tokens, pooled vs reference ${cmp.maxAbs.toExponential(2)} (atol ${POOLED_ATOL}), simd ${out.simdArch}, in ${r.took}`);

  const windowFile = join(project, 'window.json');
  writeFileSync(windowFile, JSON.stringify(JSON.parse(readFileSync(join(project, 'windows.json'), 'utf8')).windows[WINDOW_INDEX]));
  const cli = await mustRun('npx sensorformer run', join(project, 'node_modules', '.bin', 'sensorformer'), ['run', '--model', 'model.safetensors', '--input', 'window.json'], { cwd: project });
  const cliPooled = JSON.parse(cli.stdout).windows[0].pooled;
  // the CLI prints float32 at float32 precision (shortest decimal): read back through fround
  assert.deepEqual(cliPooled.map(Math.fround), out.pooled, 'the installed CLI and the API disagree');
  log('(a) node', `installed CLI (node_modules/.bin/sensorformer) gives the same pooled vector, in ${cli.took}; step ${seconds(t0)}`);
});

// The ways a TypeScript file can step around the types: `x as T` (but `as const`), `<T>x`, `x!`,
// `any`; found by TypeScript's parser, so comments and strings do not count.
function escapes(name, text) {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const visit = (node) => {
    const isConst = ts.isAsExpression(node) && ts.isTypeReferenceNode(node.type) && node.type.typeName.getText(source) === 'const';
    if ((ts.isAsExpression(node) && !isConst) || ts.isTypeAssertionExpression(node) || ts.isNonNullExpression(node) || node.kind === ts.SyntaxKind.AnyKeyword) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${name}:${line + 1}: ${node.getText(source).slice(0, 80)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

// tsc on an app as a browser project: strict, bundler resolution, no @types/node, the library's
// .d.ts files checked too. Resolves to tsc's run; fails the test on any error.
async function typeCheckBrowserApp(dir, files) {
  const tsconfig = { compilerOptions: { noEmit: true, strict: true, noImplicitAny: true, module: 'esnext', moduleResolution: 'bundler', target: 'es2022', lib: ['es2022', 'dom', 'dom.iterable'], types: [], skipLibCheck: false }, files };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  const tsc = await run(bin('tsc'), ['-p', 'tsconfig.json'], { cwd: dir });
  assert.equal(tsc.code, 0, `tsc -p ${dir}/tsconfig.json (strict, bundler resolution, no @types/node) failed:\n${tsc.stdout}${tsc.stderr}`);
  return tsc;
}

// Serves a built app and opens it in headless Chromium; closed after the test. problems collects
// console errors and warnings, uncaught exceptions, failed requests and HTTP errors; pageError
// rejects on the first uncaught exception (so a wait can end early).
async function openInChromium(dist, t, headers = {}) {
  const server = await serve(dist, headers);
  const { chromium } = await import('playwright-core');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (tools/setup.sh)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.after(async () => { await browser.close(); await server.close(); });
  const page = await browser.newPage({ viewport: { width: 900, height: 520 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`); });
  let pageFailed;
  const pageError = new Promise((_, reject) => { pageFailed = reject; });
  pageError.catch(() => {});
  page.on('pageerror', (e) => { problems.push(`pageerror: ${e.stack ?? e.message}`); pageFailed(new Error('uncaught exception in the page')); });
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  return { page, problems, pageError, browser, server };
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.safetensors': 'application/octet-stream', '.json': 'application/json', '.svg': 'image/svg+xml' };

// A static server for one directory, with extra response headers; resolves to { url, close, requests }.
function serve(root, headers = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = normalize(join(root, path === '/' ? 'index.html' : path));
    const ok = file.startsWith(root + sep) && existsSync(file) && statSync(file).isFile();
    requests.push(`${ok ? 200 : 404} ${req.method} ${path}`);
    if (!ok) return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', ...headers });
    res.end(readFileSync(file));
  });
  return new Promise((resolvePromise) => server.listen(0, '127.0.0.1', () => {
    resolvePromise({ url: `http://127.0.0.1:${server.address().port}/`, requests, close: () => new Promise((r) => server.close(r)) });
  }));
}

test('(b) Vite: a fresh app builds with the package and runs it in headless Chromium', async (t) => {
  need('installed', 'npm install');
  const nodePooled = need('nodePooled', '(a) node');
  let t0 = performance.now();
  mkdirSync(join(app, 'public'), { recursive: true });
  copyFileSync(join(here, 'app', 'index.html'), join(app, 'index.html'));
  const win = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8')).windows[WINDOW_INDEX];
  const main = readFileSync(join(here, 'app', 'main.ts'), 'utf8');
  assert.equal(main.split('__WINDOW__').length, 2, 'app/main.ts must hold exactly one __WINDOW__ placeholder');
  writeFileSync(join(app, 'main.ts'), main.replace('__WINDOW__', JSON.stringify(win)));
  copyFileSync(fixturePath('model/factorized.safetensors'), join(app, 'public', 'model.safetensors'));

  // The app as a browser project type-checks it: strict, no @types/node, the library .d.ts files
  // checked too; no cast or `any` in main.ts (a cast would make the check meaningless).
  const casts = escapes('app/main.ts', main);
  assert.deepEqual(casts, [], 'app/main.ts must not cast, use `any` or non-null assertions');
  const tsc = await typeCheckBrowserApp(app, ['main.ts']);
  log('(b) tsc', `app/main.ts: tsc --strict --noEmit, 0 errors, in ${tsc.took}`);

  const build = await mustRun('vite build', bin('vite'), ['build', app, '--logLevel', 'info'], { cwd: app });
  const dist = join(app, 'dist');
  const assets = readdirSync(join(dist, 'assets'));
  // Two modules: the single-thread one and the threaded one (loaded only on a cross-origin-isolated
  // page, which this one is not), with the threaded one's pthread worker script.
  const wasm = assets.filter((f) => f.endsWith('.wasm'));
  assert.equal(wasm.length, 2, `vite build should emit the two .wasm assets: ${assets.join(', ')}\n${describe('vite build', build)}`);
  for (const f of wasm) assert.deepEqual([...readFileSync(join(dist, 'assets', f)).subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d]);
  assert.deepEqual(wasm.map((f) => statSync(join(dist, 'assets', f)).size).sort(),
    ['sensorformer-core.wasm', 'sensorformer-core-mt.wasm'].map((f) => statSync(join(repo, 'web/dist', f)).size).sort(), 'the emitted .wasm files are not the shipped ones');
  assert.ok(assets.some((f) => /^sensorformer-core-mt\.worker.*\.js$/.test(f)), `no pthread worker script among the assets: ${assets.join(', ')}`);
  // Warnings do not fail the step (the page run below is the judge) but are shown, one line each.
  const warnings = `${build.stdout}\n${build.stderr}`.replace(/\x1b\[[0-9;]*m/g, '').split('\n')
    .filter((l) => /^\s*\[[A-Z_]+\]|warn|externalized|error/i.test(l)).map((l) => l.trim());
  log('(b) vite', `vite build in ${build.took}: ${assets.join(', ')}${warnings.length ? `\n  build warnings:\n  ${warnings.join('\n  ')}` : ''}`);

  const { page, problems, pageError, browser, server } = await openInChromium(dist, t);
  t0 = performance.now();
  await page.goto(server.url);
  // Done when the page writes #result or #error; an uncaught exception ends the wait early.
  const waited = await Promise.race([page.waitForSelector('#result, #error', { timeout: 60_000 }), pageError]).then(() => null, (e) => e);
  mkdirSync(join(repo, 'test-artifacts'), { recursive: true });
  const shot = join(repo, 'test-artifacts', 'package-vite.png');
  await page.screenshot({ path: shot, fullPage: true });
  const context = `browser ${browser.version()}, ${server.url}\nrequests:\n  ${server.requests.join('\n  ')}\nproblems:\n  ${problems.join('\n  ') || 'none'}\nscreenshot: ${shot}`;
  assert.equal(waited, null, `neither #result nor #error appeared within 60 s: ${waited?.message}\n${context}`);
  const error = await page.$eval('#error', (e) => e.textContent).catch(() => null);
  assert.equal(error, null, `the page reported an error: ${error}\n${context}`);
  assert.deepEqual(problems, [], `console errors or page errors:\n${context}`);
  const result = JSON.parse(await page.$eval('#result', (e) => e.textContent));
  const cmp = allClose(result.pooled, nodePooled, SAME_WASM_ATOL, 0);
  assert.ok(cmp.ok, `Chromium vs Node pooled (same .wasm): ${cmp.message}`);
  assert.deepEqual(result.workerPooled, result.pooled, 'the Web Worker gives the main thread\'s result');
  // The simulated wearable: its window through the Worker against the same window in Node.
  const live = result.wearable;
  assert.deepEqual(live.events, [], 'the simulated strap dispatched error or disconnect events');
  assert.ok(live.deviceTimed, 'ECG batches carry a device time per sample');
  const ecg = live.window.streams.find((st) => st.modality === 'ecg');
  assert.ok(ecg, `no ECG stream in the wearable's window: ${JSON.stringify(live.window).slice(0, 300)}`);
  // The simulated strap runs at an H10's true ECG rate (simulator default 130.35 Hz, + 20 ppm
  // drift): the assembler measures it within 0.05 % (a 10 s fit with ~12 us timestamp jitter).
  assert.ok(Math.abs(ecg.rateHz / 130.35 - 1) < 5e-4, `ECG window rate ${ecg.rateHz} Hz, expected ~130.35`);
  assert.ok(live.ecgSamples >= WEARABLE_SECONDS * 130, `only ${live.ecgSamples} ECG samples in ${WEARABLE_SECONDS} s`);
  const present = ecg.samples.filter((v) => v !== null).length;
  assert.equal(live.ecgPresent, present);
  assert.equal(live.trace.points, present, 'drawTrace drew a point per present ECG sample of the window');
  assert.ok(live.map.g >= 2 && live.map.cell >= 2, `attention map of ${live.map.g} tokens, ${live.map.cell} px cells: too small to check`);
  assert.equal(live.map.checked, live.map.g ** 2);
  assert.equal(live.map.mismatches, 0, `${live.map.mismatches} of ${live.map.checked} attention-map cells are not viridis(weight / max)`);
  const { loadModel } = await import('../../web/src/index.js');
  const nodeModel = await loadModel(fixturePath('model/factorized.safetensors'));
  const nodeLive = nodeModel.forward(live.window);
  nodeModel.dispose();
  assert.equal(live.tokens, nodeLive.dims[0]);
  const liveCmp = allClose(live.pooled, Array.from(nodeLive.pooled), SAME_WASM_ATOL, 0);
  assert.ok(liveCmp.ok, `simulated wearable window: Worker in Chromium vs Node pooled (same .wasm): ${liveCmp.message}`);
  assert.equal(result.isolated, false);
  assert.deepEqual([result.threads, result.workerThreads], [1, 1], 'a page that is not cross-origin isolated runs the single-thread build');

  // The same build served with COOP + COEP: cross-origin isolated, so the threaded build (its glue,
  // worker script and .wasm copied by Vite as assets) runs on the main thread and in the Worker,
  // with the default thread count and the same numbers bit for bit.
  const iso = await openInChromium(dist, t, { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
  await iso.page.goto(iso.server.url);
  const isoWaited = await Promise.race([iso.page.waitForSelector('#result, #error', { timeout: 60_000 }), iso.pageError]).then(() => null, (e) => e);
  const isoContext = `requests:\n  ${iso.server.requests.join('\n  ')}\nproblems:\n  ${iso.problems.join('\n  ') || 'none'}`;
  assert.equal(isoWaited, null, `isolated page: neither #result nor #error within 60 s: ${isoWaited?.message}\n${isoContext}`);
  const isoError = await iso.page.$eval('#error', (e) => e.textContent).catch(() => null);
  assert.equal(isoError, null, `isolated page reported an error: ${isoError}\n${isoContext}`);
  assert.deepEqual(iso.problems, [], `isolated page: console errors or page errors:\n${isoContext}`);
  const threaded = JSON.parse(await iso.page.$eval('#result', (e) => e.textContent));
  assert.equal(threaded.isolated, true);
  const want = Math.min(4, threaded.cores);
  assert.deepEqual([threaded.threads, threaded.workerThreads], [want, want], `threads granted on the isolated page (cores ${threaded.cores})`);
  assert.deepEqual(threaded.pooled, result.pooled, 'threaded build, main thread: the single-thread build\'s pooled bit for bit');
  assert.deepEqual(threaded.workerPooled, result.workerPooled, 'threaded build, Worker: the same');
  assert.ok(iso.server.requests.some((r) => /sensorformer-core-mt\.worker-[^/]*\.js$/.test(r)) && iso.server.requests.some((r) => /sensorformer-core-mt-[^/]*\.wasm$/.test(r)),
    `the threaded build's files were not requested:\n${isoContext}`);

  const status = await page.$eval('#status', (e) => e.textContent);
  log('(b) chromium', `${browser.version()}: ${status}; pooled vs Node ${cmp.maxAbs.toExponential(2)} (atol ${SAME_WASM_ATOL}); ` +
    `wearable window: ECG ${ecg.rateHz.toFixed(3)} Hz, trace ${live.trace.points} points, map ${live.map.checked} cells (>= ${live.map.cell} px) all viridis, ` +
    `Worker vs Node pooled ${liveCmp.maxAbs.toExponential(2)}; ` +
    `requests: ${server.requests.join(', ')}; screenshot ${shot}; in ${seconds(t0)}`);
});

// (e) The README's web-page apps, from the README alone: each app's `browser [app=NAME] file=...`
// blocks (the Markdown parser of tests/js/readme.test.js) are the whole app; the model is where
// its shell block copies it from (the installed package). Done when the page shows a prediction:
// the simulated strap streams in real time, so this waits for it (deadline below) rather than a count.
const README_APP_DEADLINE_MS = 60_000;  // first prediction after ~1-10 s of data; generous for a loaded machine
const readmeApps = () => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const apps = new Map();
  for (const b of parseBlocks(readme, 'README.md').filter((b) => b.marker?.kind === 'browser')) {
    if (!apps.has(b.marker.app)) apps.set(b.marker.app, []);
    apps.get(b.marker.app).push(b);
  }
  return { readme, apps };
};

/**
 * Writes a README app into project/readme-<name>, copies `model` (a path in the installed package)
 * to its public/<as> (the README's shell block must copy the same), type-checks it (strict, no
 * escape hatch), builds it with Vite and opens it in Chromium; resolves once #statusId matches
 * `ready` (or a page error / "failed"), with the page still open.
 */
async function runReadmeApp(t, name, { model, as, statusId, ready }) {
  const installed = need('installed', 'npm install');
  const { readme, apps } = readmeApps();
  const blocks = apps.get(name) ?? [];
  assert.deepEqual(blocks.map((b) => b.marker.file).sort(), ['index.html', 'src/main.ts'], `the README's "${name}" app is index.html and src/main.ts`);
  const dir = join(project, `readme-${name}`);
  for (const b of blocks) {
    mkdirSync(dirname(join(dir, b.marker.file)), { recursive: true });
    writeFileSync(join(dir, b.marker.file), `${b.code}\n`);
  }
  // The README copies the model out of the installed package: that file must be there.
  assert.ok(readme.includes(`cp node_modules/sensorformer/${model} public/${as}`), `the README copies ${model} to public/${as}`);
  mkdirSync(join(dir, 'public'), { recursive: true });
  copyFileSync(join(installed, model), join(dir, 'public', as));
  const main = blocks.find((b) => b.marker.file === 'src/main.ts').code;
  assert.deepEqual(escapes(`README ${name} src/main.ts`, main), [], 'a README app must not cast, use `any` or non-null assertions');
  const tsc = await typeCheckBrowserApp(dir, ['src/main.ts']);
  const build = await mustRun(`vite build (README ${name} app)`, bin('vite'), ['build', dir, '--logLevel', 'warn'], { cwd: dir });
  const opened = await openInChromium(join(dir, 'dist'), t);
  const { page, problems, pageError, server } = opened;
  const t0 = performance.now();
  await page.goto(server.url);
  const waited = await Promise.race([
    page.waitForFunction(([id, re]) => new RegExp(re).test(document.getElementById(id)?.textContent ?? '') || /^(failed|stopped)/.test(document.getElementById(id)?.textContent ?? ''),
      [statusId, ready.source], { timeout: README_APP_DEADLINE_MS }),
    pageError,
  ]).then(() => null, (e) => e);
  const shot = join(repo, 'test-artifacts', `package-readme-${name}.png`);
  mkdirSync(dirname(shot), { recursive: true });
  await page.screenshot({ path: shot, fullPage: true });
  const status = await page.$eval(`#${statusId}`, (e) => e.textContent);
  const context = `status: ${status}\nrequests:\n  ${server.requests.join('\n  ')}\nproblems:\n  ${problems.join('\n  ') || 'none'}\nscreenshot: ${shot}`;
  assert.equal(waited, null, `no prediction within ${README_APP_DEADLINE_MS / 1000} s: ${waited?.message}\n${context}`);
  assert.match(status, ready, context);
  assert.deepEqual(problems, [], `console errors or page errors:\n${context}`);
  // The model ran in a Worker: Vite emitted the package's worker entry and the page fetched it.
  assert.ok(server.requests.some((r) => /^200 GET \/assets\/worker-[^/]*\.js$/.test(r)), `no worker script was loaded:\n${context}`);
  return { ...opened, status, shot, took: seconds(t0), tsc, build };
}

test('(e) the README\'s web page (Worker, simulated wearable, trace with axes, attention map) builds from the README alone and runs with no console error', async (t) => {
  const { apps } = readmeApps();
  assert.deepEqual([...apps.keys()].sort(), ['af', 'main'], 'the README\'s browser apps');
  const { page, browser, status, shot, took, tsc, build } = await runReadmeApp(t, 'main', {
    model: 'demo/model/demo.safetensors', as: 'model.safetensors', statusId: 'status', ready: /^(rest|walk|run) \d+ % \(\d+ tokens\)$/,
  });
  // The trace has its axes and a line, the map its cells: counted against each canvas's own
  // background (its corner pixel), in the regions render's layout puts them in.
  const pixels = await page.evaluate(() => {
    const count = (id, x0, y0, x1, y1) => {
      const c = document.getElementById(id);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const bg = d.slice(0, 4).join();
      const colours = new Set();
      let other = 0;
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) {
        const px = d.slice(4 * (y * c.width + x), 4 * (y * c.width + x) + 4).join();
        if (px !== bg) { other++; colours.add(px); }
      }
      return { other, colours: colours.size };
    };
    return { gutter: count('ecg', 0, 0, 40, 140), plot: count('ecg', 60, 0, 720, 130), timeAxis: count('ecg', 60, 140, 720, 160), map: count('map', 0, 0, 420, 420) };
  });
  assert.ok(pixels.gutter.other > 50, `no value-axis labels drawn in the ECG canvas's gutter: ${JSON.stringify(pixels)}`);
  assert.ok(pixels.plot.other > 300, `no ECG line drawn: ${JSON.stringify(pixels)}`);
  assert.ok(pixels.timeAxis.other > 20, `no time-axis labels under the ECG: ${JSON.stringify(pixels)}`);
  assert.ok(pixels.map.colours > 10, `the attention map is not drawn (${pixels.map.colours} colours): ${JSON.stringify(pixels)}`);
  log('(e) README app', `tsc ${tsc.took}, vite build ${build.took}; ${browser.version()}: "${status}" after ${took}; ` +
    `pixels ${JSON.stringify(pixels)}; screenshot ${shot}`);
});

// The README's AF app: the shipped AF model as a streaming session in a Worker, fed by the
// simulated strap through the Bluetooth layer and feedSession. The simulated wearer is in sinus
// rhythm for the first minute at rest (tools/af/simulated_accuracy.mjs: 84 / 96 such windows
// "normal", none "af"), but the first rhythm shows after ~5-10 s of data, so any label is taken;
// the label's probability must be the largest of a softmax over the model's four labels.
test('(e) the README\'s heart-rhythm page (the AF model streaming in a Worker from a simulated strap) builds from the README alone and shows a rhythm', async (t) => {
  const { browser, status, shot, took, tsc, build, server } = await runReadmeApp(t, 'af', {
    model: 'models/af.safetensors', as: 'af.safetensors', statusId: 'rhythm', ready: /^(normal|af|other|noisy) \d+ % \(\d+ tokens of the last 30 s\)$/,
  });
  const [, , percent, tokens] = /^(\w+) (\d+) % \((\d+) tokens/.exec(status);
  assert.ok(Number(percent) >= 25 && Number(percent) <= 100, `the shown label's probability ${percent} % (the largest of 4)`);
  assert.ok(Number(tokens) > 0, status);
  assert.ok(server.requests.some((r) => r === '200 GET /af.safetensors'), `the page did not fetch /af.safetensors:\n  ${server.requests.join('\n  ')}`);
  log('(e) README AF app', `tsc ${tsc.took}, vite build ${build.took}; ${browser.version()}: "${status}" after ${took}; screenshot ${shot}`);
});

// (f) The README's runnable examples (its node, ts and sh blocks) as a reader who ran `npm install
// sensorformer` runs them: each in a folder of its own whose node_modules/sensorformer is the
// installed copy (so `import 'sensorformer'`, `npx sensorformer` and the paths under
// node_modules/sensorformer/ are the tarball's), with the files its marker names taken from the
// installed package: a file the package does not ship fails here. Its output must be the README's
// stdout block; the CLI's (too long to show) must equal the installed API's on the same files.
// readme.test.js runs the same blocks against the repository.
const NOT_SHIPPED_YET = new Map([
  // README "Streaming": the causal model it needs is not in the package yet; readme.test.js runs it.
  ['tests/fixtures/model/factorized_lookback.safetensors', 'the streaming example\'s causal model'],
]);
const README_BLOCK_TIMEOUT_MS = 90_000;  // as readme.test.js: npx alone takes 1-3 s on a busy machine

test('(f) the README\'s node, ts and sh examples run from the installed package and print what the README shows', async (t) => {
  const installed = need('installed', 'npm install');
  const blocks = parseBlocks(readFileSync(join(repo, 'README.md'), 'utf8'), 'README.md');
  const runnable = blocks.filter((b) => ['node', 'ts', 'sh'].includes(b.marker?.kind));
  assert.ok(runnable.length >= 4, `the README has runnable blocks: ${runnable.length}`);
  const api = await import(pathToFileURL(join(installed, 'web', 'src', 'index.js')).href);
  const skipped = [];
  let ran = 0;
  for (const block of runnable) {
    const where = `README.md:${block.line}`;
    const unshipped = block.marker.files.filter(({ from }) => !existsSync(join(installed, from)));
    if (unshipped.length && unshipped.every(({ from }) => NOT_SHIPPED_YET.has(from))) {
      skipped.push(`${where} (${unshipped.map(({ from }) => NOT_SHIPPED_YET.get(from)).join(', ')})`);
      continue;
    }
    assert.deepEqual(unshipped.map(({ from }) => from), [], `${where} needs files the package does not ship ("files" in package.json)`);
    const dir = join(tmp, `readme-${block.line}`);
    mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'readme-example', private: true, type: 'module' }));
    symlinkSync(installed, join(dir, 'node_modules', 'sensorformer'), 'dir');
    symlinkSync(join(installed, 'web', 'bin', 'sensorformer.js'), join(dir, 'node_modules', '.bin', 'sensorformer'));
    for (const { as, from } of block.marker.files) {
      mkdirSync(dirname(join(dir, as)), { recursive: true });
      copyFileSync(join(installed, from), join(dir, as));
    }
    let r;
    if (block.marker.kind === 'node') {
      writeFileSync(join(dir, 'snippet.mjs'), block.code);
      r = await run(process.execPath, ['snippet.mjs'], { cwd: dir, timeout: README_BLOCK_TIMEOUT_MS });
    } else if (block.marker.kind === 'sh') {
      writeFileSync(join(dir, 'snippet.sh'), block.code);
      r = await run('bash', ['-euo', 'pipefail', 'snippet.sh'], { cwd: dir, timeout: README_BLOCK_TIMEOUT_MS, path: [join(dir, 'node_modules', '.bin')] });
    } else {
      // TypeScript as a strict Node project checks it (the installed .d.ts files too), then run.
      writeFileSync(join(dir, 'snippet.ts'), block.code);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'esnext.disposable', 'dom'], types: ['node'], typeRoots: [join(repo, 'node_modules', '@types')], skipLibCheck: false, outDir: 'out' },
        files: ['snippet.ts'],
      }));
      await mustRun(`tsc ${where}`, bin('tsc'), ['-p', 'tsconfig.json'], { cwd: dir });
      r = await run(process.execPath, [join('out', 'snippet.js')], { cwd: dir, timeout: README_BLOCK_TIMEOUT_MS });
    }
    assert.equal(r.code, 0, describe(`${where} (${block.marker.kind})`, r));
    const next = blocks[blocks.indexOf(block) + 1];
    if (next?.marker?.kind === 'stdout') {
      const lines = (text) => text.replace(/\s+$/, '').split('\n').map((l) => l.replace(/\s+$/, ''));
      assert.deepEqual(lines(r.stdout), lines(next.code), `${where}: the output differs from the README's`);
    } else {
      // The CLI line: every window's pooled and head equal the installed API's on the same files
      // once read back as float32 (the same .wasm on the same window: tolerance 0).
      assert.equal(block.marker.id, 'cli', `${where}: a block with neither a stdout block nor a check here`);
      const args = block.code.trim().split(/\s+/);
      const model = await api.loadModel(join(dir, args[args.indexOf('--model') + 1]), { warmup: false });
      const input = JSON.parse(readFileSync(join(dir, args[args.indexOf('--input') + 1]), 'utf8'));
      const out = JSON.parse(r.stdout).windows;
      const windows = input.windows ?? [input];
      assert.equal(out.length, windows.length, `${where}: one output per input window`);
      windows.forEach((w, i) => {
        const want = model.forward(w);
        assert.deepEqual(out[i].pooled.map(Math.fround), [...want.pooled], `${where}: window ${i} pooled`);
        assert.deepEqual(out[i].head.map(Math.fround), [...want.head], `${where}: window ${i} head`);
      });
      model.dispose();
    }
    ran++;
  }
  assert.ok(ran >= 3, `only ${ran} README examples ran`);
  t.diagnostic(`not run from the package (${skipped.length}): ${skipped.join('; ') || 'none'}`);
  log('(f) README examples', `${ran} run from the installed package with the README's output; not run: ${skipped.join('; ') || 'none'}`);
});

// (d) What a bundler ships for an app that uses one part of the package. Markers are string
// literals a minifier keeps: 'Aborted(' occurs once in Emscripten's glue (its abort message)
// (web/dist/sensorformer-core.js); 'thermo-phase' and 'activity-shape' are seed labels of the
// simulator (web/src/simulator/devices.js) and its physiology model (physiology.js). The two apps that
// use the parts (loadModel on the main thread too; the simulator) are the controls: they must
// contain the markers, or the counts below would prove nothing.
const GLUE_MARKER = 'Aborted(';
// A replacement tools/patch-mt-glue.mjs makes once in the threaded glue (not in its worker script).
const MT_GLUE_MARKER = 'Module.sfNodeWorker=nodeWorkerThreads.Worker';
const SIMULATOR_MARKERS = ['thermo-phase', 'activity-shape'];
const BUNDLE_APPS = {
  'worker-only': "import { loadModelInWorker } from 'sensorformer';\nloadModelInWorker('/model.safetensors').then((m) => { document.body.textContent = String(m.workers); });\n",
  'main-and-worker': "import { loadModel, loadModelInWorker } from 'sensorformer';\nPromise.all([loadModel('/model.safetensors'), loadModelInWorker('/model.safetensors')]).then(([a, b]) => { document.body.textContent = `${a.config.d_model} ${b.workers}`; });\n",
  'ble-only': "import { connectWearable, DEVICE_FILTERS } from 'sensorformer/ble';\ndocument.body.onclick = () => connectWearable({ filters: DEVICE_FILTERS.strap }).then((w) => { document.body.textContent = w.name; });\n",
  'ble-and-simulator': "import { connectWearable } from 'sensorformer/ble';\nimport { createSimulatedBluetooth } from 'sensorformer/simulator';\nconnectWearable({ bluetooth: createSimulatedBluetooth() }).then((w) => { document.body.textContent = w.name; });\n",
};

// Every emitted JavaScript file of a Vite build (the entry, its chunks and the worker's).
function emittedJs(dist) {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.m?js$/.test(name)) out.push({ name: path.slice(dist.length + 1), text: readFileSync(path, 'utf8') });
    }
  };
  walk(dist);
  return out;
}

const occurrences = (files, marker) => files.reduce((n, f) => n + f.text.split(marker).length - 1, 0);

test('(d) Vite: an app using only loadModelInWorker ships the glue once; one using only sensorformer/ble ships no simulator', async () => {
  need('installed', 'npm install');
  const t0 = performance.now();
  const builds = await Promise.all(Object.entries(BUNDLE_APPS).map(async ([name, code]) => {
    const dir = join(project, 'bundles', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'index.html'), '<!doctype html><html><body><script type="module" src="./main.js"></script></body></html>\n');
    writeFileSync(join(dir, 'main.js'), code);
    await mustRun(`vite build (${name})`, bin('vite'), ['build', dir, '--logLevel', 'warn'], { cwd: dir });
    const files = emittedJs(join(dir, 'dist'));
    // The threaded build's glue is copied once as an asset and
    // imported by URL; the single-thread glue is what the bundler inlines.
    const mt = occurrences(files, MT_GLUE_MARKER);
    return [name, { files, mt, glue: occurrences(files, GLUE_MARKER) - mt, simulator: SIMULATOR_MARKERS.map((m) => occurrences(files, m)) }];
  }));
  const b = Object.fromEntries(builds);
  const describeBuild = (name) => `${name}: ${b[name].files.map((f) => `${f.name} (${(f.text.length / 1024).toFixed(0)} kB, glue x${occurrences([f], GLUE_MARKER)})`).join(', ')}`;
  assert.equal(b['main-and-worker'].glue, 2, `control: loadModel + loadModelInWorker should ship the glue in the page and in the worker\n${describeBuild('main-and-worker')}`);
  assert.equal(b['worker-only'].glue, 1, `an app that only calls loadModelInWorker ships the Emscripten glue ${b['worker-only'].glue} times (once: in the worker)\n${describeBuild('worker-only')}`);
  for (const name of ['worker-only', 'main-and-worker'])
    assert.equal(b[name].mt, 1, `${name}: the threaded glue should be one asset file, found ${b[name].mt} copies\n${describeBuild(name)}`);
  assert.deepEqual(b['ble-and-simulator'].simulator.map((n) => n > 0), [true, true], `control: the simulator app lacks the markers ${SIMULATOR_MARKERS}`);
  assert.deepEqual(b['ble-only'].simulator, [0, 0], `an app that only connects real devices ships simulator code (${SIMULATOR_MARKERS} found)\n${describeBuild('ble-only')}`);
  const kb = (name) => (b[name].files.reduce((n, f) => n + f.text.length, 0) / 1024).toFixed(0);
  log('(d) bundles', `glue: worker-only x${b['worker-only'].glue}, main-and-worker x${b['main-and-worker'].glue}; ` +
    `simulator markers: ble-only ${b['ble-only'].simulator}, ble-and-simulator ${b['ble-and-simulator'].simulator}; JS kB: ` +
    `${Object.keys(BUNDLE_APPS).map((n) => `${n} ${kb(n)}`).join(', ')}; in ${seconds(t0)}`);
});

test('(c) TypeScript: a strict consumer type-checks against the installed types', async () => {
  need('installed', 'npm install');
  copyFileSync(join(here, 'consumer.ts'), join(project, 'consumer.ts'));
  assert.deepEqual(escapes('consumer.ts', readFileSync(join(here, 'consumer.ts'), 'utf8')), [], 'consumer.ts must not cast, use `any` or non-null assertions');
  // --types node resolves from the repo's @types (the consumer project installs nothing else).
  const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022',
    '--lib', 'es2022,dom', '--types', 'node', '--typeRoots', join(repo, 'node_modules', '@types'), '--listFiles', 'consumer.ts'];
  const r = await run(bin('tsc'), args, { cwd: project });
  const lines = r.stdout.split('\n');
  const errors = lines.filter((l) => !l.startsWith('/'));  // --listFiles lines are absolute paths
  assert.equal(r.code, 0, `tsc ${args.filter((a) => a !== '--listFiles').join(' ')} (in ${project}) exited with ${r.code}:\n${errors.join('\n')}\n${r.stderr}`);
  const types = join(project, 'node_modules', 'sensorformer', 'web', 'index.d.ts');
  assert.ok(lines.includes(types), `'sensorformer' did not resolve to the installed ${types}; tsc read:\n${lines.filter((l) => !l.includes('/typescript/lib/')).join('\n')}`);
  log('(c) tsc', `tsc --noEmit --strict --module nodenext consumer.ts: 0 errors (${(readFileSync(join(here, 'consumer.ts'), 'utf8').match(/^\s*\/\/ @ts-expect-error/gm) ?? []).length} misuses rejected), ` +
    `'sensorformer' -> node_modules/sensorformer/web/index.d.ts, in ${r.took}`);
});

// A browser app's TypeScript setup: bundler resolution, DOM lib, no @types/node, library .d.ts
// files checked (skipLibCheck off): index.d.ts must stand on its own (it references lib
// esnext.disposable for Symbol.dispose rather than relying on @types/node).
test('(c) TypeScript: a browser consumer (bundler resolution, no @types/node) type-checks', async () => {
  need('installed', 'npm install');
  copyFileSync(join(here, 'consumer.ts'), join(project, 'consumer.ts'));
  const config = { compilerOptions: { noEmit: true, strict: true, module: 'esnext', moduleResolution: 'bundler', target: 'es2022', lib: ['es2022', 'dom'], types: [], skipLibCheck: false }, files: ['consumer.ts'] };
  writeFileSync(join(project, 'tsconfig.browser.json'), JSON.stringify(config, null, 2));
  const r = await run(bin('tsc'), ['-p', 'tsconfig.browser.json'], { cwd: project });
  assert.equal(r.code, 0, `tsc -p ${JSON.stringify(config)} (in ${project}) exited with ${r.code}:\n${r.stdout}${r.stderr}`);
  log('(c) tsc browser', `tsc -p tsconfig.browser.json (bundler, lib es2022+dom, no @types/node): 0 errors, in ${r.took}`);
});

test('no step called Emscripten', () => {
  const calls = existsSync(stubLog) ? readFileSync(stubLog, 'utf8').trim() : '';
  assert.equal(calls, '', `a consumer step called Emscripten:\n${calls}`);
});
