#!/usr/bin/env node
// Where one forward's time goes: V8's sampling profiler (--cpu-prof) over a loop of
// model.forward() on one thread, the samples' self time summed per WebAssembly function (named
// through the build's symbol map, build/wasm/sensorformer-core.symbols) and per group: the GEMM,
// attention and other kernels, the model's own code (tokenizer, embeddings, pooling, buffers),
// the bindings, and JavaScript (the package's wrapper, Embind's glue, the garbage collector).
// Issue 22 item 3 (per-call overhead at small windows) is measured with it.
//
//   node bench/profile_forward.mjs [--tokens 64] [--seconds 4] [--top 15] [--symbols FILE]
//
// The workload is `npm run bench`'s encoder (bench/models/encoder.safetensors: flattened, d 64,
// 4 heads, ff 256, 2 layers) on one accelerometer stream of --tokens patches.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { readSymbolMap } from '../tests/js/symbols.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    tokens: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '4' },
    top: { type: 'string', default: '15' },
    symbols: { type: 'string', default: path.join(ROOT, 'build', 'wasm', 'sensorformer-core.symbols') },
    child: { type: 'boolean', default: false },
  },
});
const N = Number(args.tokens), SECONDS = Number(args.seconds);

if (args.child) {
  // The profiled process: load, warm up (so TurboFan's code is what is sampled), then loop.
  const { loadModel } = await import('../web/src/index.js');
  const { normals } = await import('./lib.mjs');
  const meta = JSON.parse(readFileSync(path.join(ROOT, 'bench', 'models', 'models.json'), 'utf8'));
  const P = meta.encoder.config.modalities[0].patch_len;
  const model = await loadModel(path.join(ROOT, 'bench', 'models', 'encoder.safetensors'), { numThreads: 1 });
  const window = { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples: normals(N * P, N) }], referenceTime: meta.encoder.startTime };
  for (let i = 0; i < 200; i++) model.forward(window);
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < SECONDS * 1000) {
    model.forward(window);
    n++;
  }
  console.log(JSON.stringify({ forwards: n, ms: (performance.now() - t0) / n }));
  process.exit(0);
}

// The groups a reader of docs/performance.md thinks in, first match wins.
const GROUPS = [
  ['GEMM (gemm_packed, gemm_nt)', /kernels::gemm_|kernels::linear/],
  ['attention kernel', /kernels::attention_head|kernels::.*softmax/],
  ['layer norm, activations', /layer_norm|norm_all|gelu|relu/],
  ['time encoding, embeddings', /encode_time|sinusoid|add_embedding|embed_tokens|kernels::add\b/],
  ['model (tokenizer, layout, pooling, buffers)', /^sf::|^std::|^void std::|^\(anonymous namespace\)::(?!ModelHandle)/],
  ['memcpy, memset, malloc, free', /^(__memcpy|memcpy|memset|dlmalloc|dlfree|malloc|free|emscripten_builtin_)/],
  ['bindings (ModelHandle::forward, Embind)', /ModelHandle|emscripten::|_embind_|__emval/],
];

const dir = mkdtempSync(path.join(os.tmpdir(), 'sf-prof-'));
try {
  const child = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, fileURLToPath(import.meta.url), '--child', '--tokens', String(N), '--seconds', String(SECONDS)], { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`profiled process failed: ${child.stderr}`);
  const { forwards, ms } = JSON.parse(child.stdout.trim().split('\n').pop());
  const profile = JSON.parse(readFileSync(path.join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))), 'utf8'));
  const symbols = readSymbolMap(args.symbols);
  const selfUs = new Map();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byName = new Map();
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (!us) continue;
    const f = node.callFrame;
    const wasm = /^wasm-function\[(\d+)\]$/.exec(f.functionName);
    let name = wasm ? symbols.get(Number(wasm[1])) ?? f.functionName : `${f.functionName || '(anonymous)'} ${path.basename(f.url)}`.trim();
    if (!wasm && /^\((idle|program)\)/.test(name)) name = '(idle, program)';
    byName.set(name, (byName.get(name) ?? 0) + us);
  }
  // Only the loop's share: loading and warm-up were sampled too, but are over in the first second.
  const total = [...byName.values()].reduce((a, b) => a + b, 0);
  const share = (us) => `${((100 * us) / total).toFixed(1)} %`;
  const groupOf = (name) => (GROUPS.find(([, re]) => re.test(name)) ?? [/\.js$|\(garbage|wasm-to-js|js-to-wasm/.test(name) ? 'JavaScript (package, glue, GC, calls between)' : 'other'])[0];
  const groups = new Map();
  for (const [name, us] of byName) groups.set(groupOf(name), (groups.get(groupOf(name)) ?? 0) + us);
  // C++ names without their argument lists; JavaScript ones as they are.
  const short = (name) => (/\.js$/.test(name) ? name : name.replace(/\(anonymous namespace\)::/g, '').replace(/\(.*$/s, '')).slice(0, 70);
  console.log(`encoder (d 64, 4 heads, ff 256, 2 layers), ${N} tokens, 1 thread: ${forwards} forwards, ${ms.toFixed(3)} ms each (profiled; the profiler adds a little)\n`);
  console.log('| group | share of samples |\n| --- | --- |');
  for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1])) console.log(`| ${g} | ${share(us)} |`);
  console.log(`\n| function | group | share |\n| --- | --- | --- |`);
  for (const [name, us] of [...byName].sort((a, b) => b[1] - a[1]).slice(0, Number(args.top))) console.log(`| ${short(name)} | ${groupOf(name)} | ${share(us)} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
