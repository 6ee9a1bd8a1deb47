#!/usr/bin/env node
// What the engine does during the first forward after loadModel, in Chromium: a Chrome trace (V8's
// compile and wasm categories) of a fresh cross-origin-isolated page (the threaded build) that
// loads first_call.mjs's "large" case (the d 64 encoder, 1024 tokens), optionally waits, then runs
// 10 forwards. Prints the forwards' times and, for forwards 1, 2 and 9, the trace's compile events
// that fall inside each one, on any thread (lazy baseline compiles of functions the warm-up never
// called, top-tier recompiles still running). Issue 22 item 4 (first call <= 1.5x steady in
// Chromium): docs/performance.md, "First call of the threaded build".
//
//   node bench/first_call_trace.mjs [--runs 1] [--sleep MS] [--plain] [--web DIR]
// --sleep: idle milliseconds between loadModel and the first forward; --plain: no COOP/COEP (the
// single-thread build); --web: the package's folder relative to the repository (default web: a
// copy of web/ holding another build compares builds). SF_JS_FLAGS=... passes V8 flags to the
// page (--trace-wasm-compilation-times lists every function compiled, with its compile time).
import { parseArgs } from 'node:util';
import { LAUNCH_ARGS, makeCase, openPage } from './first_call.mjs';
import { prng } from '../tests/js/prng.js';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '1' }, sleep: { type: 'string', default: '0' }, plain: { type: 'boolean', default: false }, web: { type: 'string', default: 'web' } },
});
const COMPILE = /CompileLazy|TopTier|CompileBaseline|ExecuteCompilationUnits|ImportCallWrapper|V8\.CompileCode/;
const { chromium } = await import('playwright-core');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: [...LAUNCH_ARGS, ...(process.env.SF_JS_FLAGS ? ['--js-flags=' + process.env.SF_JS_FLAGS] : [])] });
try {
  for (let run = 0; run < Number(args.runs); run++) {
    const { context, page } = await openPage(browser, { isolated: !args.plain, title: 'first call trace' });
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
    await context.close();
    console.log(`run ${run + 1}: ${r.threads} thread(s), forwards ${r.ms.join(' ')} ms`);
    const marks = Object.fromEntries(events.filter((e) => /^f\d+[se]$/.test(e.name)).map((e) => [e.name, e]));
    const main = marks.f0s.tid;
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
} finally {
  await browser.close();
}
