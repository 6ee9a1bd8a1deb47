#!/usr/bin/env node
// What the engine does during the first forward after loadModel, in Chromium: a Chrome trace (V8's
// compile and wasm categories) of a fresh cross-origin-isolated page (the threaded build) that
// loads first_call.mjs's "large" case (the d 64 encoder, 1024 tokens), optionally waits, then runs
// 10 forwards. Prints the forwards' times and, for forwards 1, 2 and 9, the trace's compile events
// that fall inside each one, on any thread (lazy baseline compiles of functions the warm-up never
// called, top-tier recompiles still running). Issue 22 item 4 (first call <= 1.5x steady in
// Chromium): docs/performance.md, "First call of the threaded build".
//
//   node bench/first_call_trace.mjs [--runs 1] [--sleep MS] [--plain] [--web DIR] [--placement]
// --sleep: idle milliseconds between loadModel and the first forward; --plain: no COOP/COEP (the
// single-thread build); --web: the package's folder relative to the repository (default web: a
// copy of web/ holding another build compares builds). SF_JS_FLAGS=... passes V8 flags to the
// page (--trace-wasm-compilation-times lists every function compiled, with its compile time).
// --placement (Linux): also samples, about once a millisecond from a thread of this process, where
// the kernel runs the page's main thread and its pthread Worker (/proc/<pid>/task/<tid>/stat: state
// and last CPU; a thread counts as running when its state is R, which includes waiting for a CPU),
// and prints per forward the share of its samples in which both ran on the same vCPU and on two:
// whether a slow forward is one whose two threads shared a core (docs/performance.md).
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { LAUNCH_ARGS, makeCase, openPage } from './first_call.mjs';
import { median } from './lib.mjs';
import { prng } from '../tests/js/prng.js';

const { values: args } = parseArgs({
  options: { placement: { type: 'boolean', default: false }, runs: { type: 'string', default: '1' }, sleep: { type: 'string', default: '0' }, plain: { type: 'boolean', default: false }, web: { type: 'string', default: 'web' } },
});
// The placement sampler (--placement), run in a worker thread so that page.evaluate's wait does
// not block it. Every ~1 ms it reads the stat line of the renderer's main thread (its tid is its
// pid) and of each "DedicatedWorker" thread of the newest renderer that has one (the page's
// pthread pool; rescanned every 50 ms), and keeps [CLOCK_MONOTONIC us, main running, worker running, same CPU].
// Chrome's trace timestamps are the same clock (base::TimeTicks on Linux), so samples line up with
// the forwards' marks. Stops when told (postMessage), and posts its samples.
const SAMPLER = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const stat = (path) => { try { const s = fs.readFileSync(path, 'latin1'); const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { name: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), running: f[0] === 'R', cpu: Number(f[36]) }; } catch { return null; } };
const scan = () => { const found = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\\d+$/.test(d))) {
    let tids; try { tids = fs.readdirSync('/proc/' + pid + '/task'); } catch { continue; }
    const workers = tids.filter((t) => stat('/proc/' + pid + '/task/' + t + '/stat')?.name.startsWith('DedicatedWorker'));
    if (workers.length) found.push({ pid: Number(pid), main: '/proc/' + pid + '/task/' + pid + '/stat', workers: workers.map((t) => '/proc/' + pid + '/task/' + t + '/stat') });
  }
  return found.sort((a, b) => b.pid - a.pid)[0] ?? null; };  // the newest renderer: an old page's may not have exited yet
const samples = []; let target = null, scanned = 0, stop = false;
const nap = new Int32Array(new SharedArrayBuffer(4));
parentPort.on('message', () => { stop = true; });
const tick = () => {
  for (let i = 0; i < 50 && !stop; i++) {
    const t = Number(process.hrtime.bigint() / 1000n);
    if (t - scanned > 50000) { target = scan(); scanned = t; }
    if (target) { const m = stat(target.main), w = target.workers.map(stat).filter(Boolean);
      if (m && w.length) samples.push([t, m.running, w.some((x) => x.running), w.some((x) => x.running && m.running && x.cpu === m.cpu)]); }
    Atomics.wait(nap, 0, 0, 1);
  }
  if (stop) parentPort.postMessage(samples); else setImmediate(tick);
};
tick();
`;
function startSampler() {
  const worker = new Worker(SAMPLER, { eval: true });
  const done = new Promise((resolve) => worker.once('message', resolve));
  return async () => { worker.postMessage('stop'); const samples = await done; await worker.terminate(); return samples; };
}

// --placement's summary over every run: each forward's time and the share of its both-running
// samples in which the two threads were on one vCPU.
const placed = [];
function placementSummary() {
  // null: no sample of the forward found both threads running (the sampler, a third busy thread on
  // the same cores, was not scheduled then).
  const groups = [['on one vCPU in >= 50 % of their samples', (x) => x !== null && x >= 0.5], ['10-50 %', (x) => x !== null && x >= 0.1 && x < 0.5], ['< 10 %', (x) => x !== null && x < 0.1], ['never both sampled running', (x) => x === null]];
  console.log(`placement, all ${placed.length} forwards of ${Number(args.runs)} pages (first forwards in brackets):`);
  for (const [name, test] of groups) {
    const all = placed.filter((f) => test(f.shared)), first = all.filter((f) => f.first);
    const m = (fs) => (fs.length ? `median ${median(fs.map((f) => f.ms)).toFixed(1)} ms` : '-');
    console.log(`  ${name === 'never both sampled running' ? '' : 'both threads '}${name}: ${all.length} forwards, ${m(all)} [${first.length}, ${m(first)}]`);
  }
}

const COMPILE = /CompileLazy|TopTier|CompileBaseline|ExecuteCompilationUnits|ImportCallWrapper|V8\.CompileCode/;
const { chromium } = await import('playwright-core');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: [...LAUNCH_ARGS, ...(process.env.SF_JS_FLAGS ? ['--js-flags=' + process.env.SF_JS_FLAGS] : [])] });
try {
  for (let run = 0; run < Number(args.runs); run++) {
    const { page, close } = await openPage(browser, { isolated: !args.plain, title: 'first call trace' });
    const stopSampler = args.placement ? startSampler() : null;
    await browser.startTracing(page, { categories: ['v8', 'v8.wasm', 'disabled-by-default-v8.compile', 'disabled-by-default-v8.wasm.detailed', 'blink.user_timing'] });
    const r = await page.evaluate(async ({ makeCaseText, prngText, sleep, web }) => {
      const { loadModel } = await import(`/${web}/src/index.js`);
      const demoBytes = new Uint8Array(await (await fetch('/demo/model/demo.safetensors')).arrayBuffer());
      // eslint-disable-next-line no-new-func
      const [build, rand] = new Function(`${prngText}\n${makeCaseText}\nreturn [makeCase, prng];`)();
      const headerLength = Number(new DataView(demoBytes.buffer).getBigUint64(0, true));
      const demoConfig = JSON.parse(JSON.parse(new TextDecoder().decode(demoBytes.subarray(8, 8 + headerLength))).__metadata__.config);
      const c = build('large', demoConfig, rand(7));
      const model = await loadModel(c.model, {});
      await new Promise((resolve) => setTimeout(resolve, sleep));
      const ms = [];
      for (let i = 0; i < 10; i++) {
        performance.mark(`f${i}s`);
        const t = performance.now();
        model.forward(c.window, c.forwardOptions);
        ms.push(+(performance.now() - t).toFixed(1));
        performance.mark(`f${i}e`);
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
      const threads = model.threads;
      model.dispose();
      return { ms, threads };
    }, { makeCaseText: makeCase.toString(), prngText: prng.toString(), sleep: Number(args.sleep), web: args.web });
    const events = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
    const samples = stopSampler ? await stopSampler() : null;
    await close();
    console.log(`run ${run + 1}: ${r.threads} thread(s), forwards ${r.ms.join(' ')} ms`);
    const marks = Object.fromEntries(events.filter((e) => /^f\d+[se]$/.test(e.name)).map((e) => [e.name, e]));
    const main = marks.f0s.tid;
    if (samples) {
      // Per forward: samples in which both threads were running, on one vCPU / on two.
      const rows = r.ms.map((ms, i) => {
        const s = marks[`f${i}s`].ts, e = marks[`f${i}e`].ts;
        const both = samples.filter(([t, m, w]) => t >= s && t <= e && m && w);
        const same = both.filter((x) => x[3]).length;
        placed.push({ ms, first: i === 0, shared: both.length ? same / both.length : null });
        return `${ms} ms: ${samples.filter(([t]) => t >= s && t <= e).length} samples, both running ${both.length} (one vCPU ${same}, two ${both.length - same})`;
      });
      console.log(`  placement (main thread and pool Worker):\n    ${rows.join('\n    ')}`);
    }
    for (const i of [0, 1, 8]) {
      const s = marks[`f${i}s`].ts, e = marks[`f${i}e`].ts;
      const inside = events.filter((x) => x.ph === 'X' && x.ts >= s && x.ts <= e);
      const compile = inside.filter((x) => COMPILE.test(x.name));
      const total = compile.reduce((a, x) => a + (x.dur ?? 0), 0) / 1000;
      console.log(`  forward ${i + 1}: ${((e - s) / 1000).toFixed(1)} ms; compile events ${compile.length}, ${total.toFixed(2)} ms (any thread)`);
      for (const x of compile) {
        const what = x.args?.func_index ?? x.args?.funcIndex;
        console.log(`    ${x.name} on ${x.tid === main ? 'main' : `thread ${x.tid}`}: ${((x.dur ?? 0) / 1000).toFixed(2)} ms${what === undefined ? '' : `, wasm function ${what}`}`);
      }
    }
  }
  if (args.placement) placementSummary();
} finally {
  await browser.close();
}
