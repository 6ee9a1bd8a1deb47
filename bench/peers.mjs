// `npm run bench`: sensorformer against onnxruntime-web (wasm, one thread) and
// @tensorflow/tfjs-backend-wasm (one thread) on the same torch weights, in ONE Node process, in
// interleaved rounds (A, B, C, A, B, C, ...) after warm-up rounds, with medians and ratios; then the
// C++ kernels built as WebAssembly, native SSE4.1 and native -march=native (bench/native.mjs).
// The AF model's rows (bench/af.mjs) need models/af.safetensors and are skipped, saying so, without it.
// Prints BENCHMARKS.md-ready markdown on stdout (progress goes to stderr).
//
//   node bench/peers.mjs [--quick | --check] [--only=load,encoder,mha,demo,throughput,threads,memory,stream,af,native]
//
// --quick (or SF_BENCH_QUICK=1): a short run, N = 64 / 256 only and few rounds, a few minutes.
// --check: no timing at all, the output checks only (every runtime against float64 torch on the
// committed cases, the peers against sensorformer at the smallest timed sizes); `npm test` runs it.
// Models and reference cases come from bench/make_peer_models.py (committed in bench/models/).
// Before anything is timed, every runtime's output is checked: against the float64 torch reference
// on the committed cases, and against sensorformer's output on the generated inputs of each row.
import { readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { existsSync } from 'node:fs';
import { loadModel, loadModelInWorker, loadCore } from '../web/src/index.js';
import { assertSameResults, encoderInputsFor, fmt, interleaved, interleavedCpu, layerFlops, median, mhaFlops, normals, readF32, readSafetensors, relError, table } from './lib.mjs';
import { runNative } from './native.mjs';
import { GOAL_BYTES, runMemory } from './memory.mjs';
import { runStream } from './stream.mjs';
import { runAf } from './af.mjs';
import { runThreads } from './threads.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The peers are devDependencies that a checkout installed before the bench existed lacks, and the
// module comes from the build: say which command fixes either, rather than a resolver stack trace.
async function need(specifier) {
  try {
    return await import(specifier);
  } catch (cause) {
    if (cause?.code !== 'ERR_MODULE_NOT_FOUND') throw cause;
    console.error(`bench: ${specifier} is not installed; run \`npm ci\` (the bench's peers are pinned devDependencies)`);
    process.exit(1);
  }
}
const ort = await need('onnxruntime-web');
const tf = await need('@tensorflow/tfjs-core');
const { setWasmPaths, setThreadsCount } = await need('@tensorflow/tfjs-backend-wasm');
if (!existsSync(path.join(ROOT, 'web', 'dist', 'sensorformer-core.wasm'))) {
  console.error('bench: web/dist/sensorformer-core.wasm is missing; run `npm run build` first');
  process.exit(1);
}
const MODELS = path.join(ROOT, 'bench', 'models');
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const CHECK = args.includes('--check');
const QUICK = CHECK || args.includes('--quick') || process.env.SF_BENCH_QUICK === '1';
// --check keeps only the parts with output checks, and in them no timed rounds.
const only = CHECK ? ['encoder', 'mha', 'demo', 'threads', 'stream', 'af'] : args.find((a) => a.startsWith('--only='))?.slice(7).split(',');
const want = (part) => !only || only.includes(part);
// Output check: largest |difference| / max(1, max |reference|). Every runtime computes in float32
// (sums of <= 4096 terms, values O(1-10)), which lands at 1e-7..1e-5 of the reference; a weight,
// layout or mask mix-up is off by O(0.1-1). 1e-4 separates the two with room on both sides.
const TOL = 1e-4;
const TIMING = QUICK ? { warmup: 1, budgetMs: 600, minRounds: 3, maxRounds: 7 } : { warmup: 2, budgetMs: 12000, minRounds: 5, maxRounds: 41 };
const meta = JSON.parse(readFileSync(path.join(MODELS, 'models.json'), 'utf8'));
const log = (...a) => console.error('[bench]', ...a);
const out = (...a) => console.log(...a);
const checks = [];

function check(what, err) {
  checks.push({ what, err });
  if (!(err <= TOL)) throw new Error(`${what}: output differs by ${err} (tolerance ${TOL}); not timing a wrong result`);
  return err;
}

// --- runtimes ------------------------------------------------------------------------------------
ort.env.wasm.numThreads = 1;
// sensorformer on one thread too wherever ORT and tfjs are (the threads rows below use more).
const ONE = { numThreads: 1 };
ort.env.wasm.simd = true;
ort.env.logLevel = 'error';
const ORT_OPTIONS = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
const TFJS_DIST = path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm')) + '/';

async function ortRun(session, feeds) {
  const r = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, [data, dims]]) => [k, new ort.Tensor('float32', data, dims)])));
  return r;
}

// --- encoder workload (encoderInputs, lib.mjs: what a JS user of onnxruntime-web computes first) --
const encoderInputs = (st, cfg, samples, N) => encoderInputsFor(st, cfg, meta.encoder.rateHz, samples, N);

function encoderWindow(samples) {
  return { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }], referenceTime: meta.encoder.startTime };
}

// --- tfjs, written the fast way: weights transposed once at load, fused bias matMuls, Q scaled
// through its weights, per-head 2-D matMuls with K transposed explicitly ---------------------------
const tfT = (data, shape) => tf.tensor(data, shape, 'float32');

function tfjsMhaWeights(inW, inB, outW, outB, E, H) {
  const dh = E / H, s = 1 / Math.sqrt(dh);
  const part = (p, scale) => {
    const w = tfT(inW.subarray(p * E * E, (p + 1) * E * E), [E, E]);
    const b = tfT(inB.subarray(p * E, (p + 1) * E), [E]);
    return { wT: tf.keep(tf.transpose(scale === 1 ? w : tf.mul(w, scale))), b: tf.keep(scale === 1 ? b : tf.mul(b, scale)) };
  };
  return tf.tidy(() => ({ E, H, dh, q: part(0, s), k: part(1, 1), v: part(2, 1), oT: tf.keep(tf.transpose(tfT(outW, [E, E]))), ob: tf.keep(tfT(outB, [E])) }));
}

function tfjsAttention(w, x) {
  const N = x.shape[0];
  const q = tf.fused.matMul({ a: x, b: w.q.wT, bias: w.q.b });
  const kT = tf.transpose(tf.fused.matMul({ a: x, b: w.k.wT, bias: w.k.b }));
  const v = tf.fused.matMul({ a: x, b: w.v.wT, bias: w.v.b });
  const heads = [];
  for (let h = 0; h < w.H; h++) {
    const qh = w.H === 1 ? q : tf.slice(q, [0, h * w.dh], [N, w.dh]);
    const kh = w.H === 1 ? kT : tf.slice(kT, [h * w.dh, 0], [w.dh, N]);
    const vh = w.H === 1 ? v : tf.slice(v, [0, h * w.dh], [N, w.dh]);
    heads.push(tf.matMul(tf.softmax(tf.matMul(qh, kh)), vh));
  }
  const ctx = w.H === 1 ? heads[0] : tf.concat(heads, 1);
  return tf.fused.matMul({ a: ctx, b: w.oT, bias: w.ob });
}

function tfjsLayerNorm(x, g, b, eps) {
  const { mean, variance } = tf.moments(x, 1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, eps))), g), b);
}

function tfjsEncoder(st, cfg) {
  const t = st.tensors, d = cfg.d_model, P = cfg.modalities[0].patch_len, ff = cfg.dim_feedforward;
  const get = (n) => t[n].data;
  const keep = (x) => tf.keep(x);
  const model = tf.tidy(() => ({
    vT: keep(tf.transpose(tfT(get('tokenizer.value_proj.acc.weight'), [d, P]))),
    vb: keep(tfT(get('tokenizer.value_proj.acc.bias'), [d])),
    layers: Array.from({ length: cfg.n_layers }, (_, i) => {
      const p = `encoder.layers.${i}.`;
      return {
        attn: tfjsMhaWeights(get(p + 'self_attn.in_proj_weight'), get(p + 'self_attn.in_proj_bias'), get(p + 'self_attn.out_proj.weight'), get(p + 'self_attn.out_proj.bias'), d, cfg.n_heads),
        n1g: keep(tfT(get(p + 'norm1.weight'), [d])), n1b: keep(tfT(get(p + 'norm1.bias'), [d])),
        n2g: keep(tfT(get(p + 'norm2.weight'), [d])), n2b: keep(tfT(get(p + 'norm2.bias'), [d])),
        w1T: keep(tf.transpose(tfT(get(p + 'linear1.weight'), [ff, d]))), b1: keep(tfT(get(p + 'linear1.bias'), [ff])),
        w2T: keep(tf.transpose(tfT(get(p + 'linear2.weight'), [d, ff]))), b2: keep(tfT(get(p + 'linear2.bias'), [d])),
      };
    }),
  }));
  const eps = cfg.layer_norm_eps;
  return (patches, embed, N) => {
    const y = tf.tidy(() => {
      let x = tf.add(tf.fused.matMul({ a: tfT(patches, [N, P]), b: model.vT, bias: model.vb }), tfT(embed, [N, d]));
      for (const L of model.layers) {
        x = tf.add(x, tfjsAttention(L.attn, tfjsLayerNorm(x, L.n1g, L.n1b, eps)));
        const h = tf.fused.matMul({ a: tfjsLayerNorm(x, L.n2g, L.n2b, eps), b: L.w1T, bias: L.b1 });
        const g = tf.mul(tf.mul(h, tf.add(tf.erf(tf.mul(h, Math.SQRT1_2)), 1)), 0.5);  // exact-erf GELU
        x = tf.add(x, tf.fused.matMul({ a: g, b: L.w2T, bias: L.b2 }));
      }
      return x;
    });
    const data = y.dataSync();
    y.dispose();
    return data;
  };
}

// --- parts ---------------------------------------------------------------------------------------
const results = {};
// Issue 10's goals, each with what this run measured: [goal, measured, met].
const goals = [];
const goal = (what, value, ok) => goals.push([what, value, ok ? 'yes' : '**no**']);

async function firstCall(run, steadyCalls = 40) {
  const t0 = performance.now();
  await run();
  const first = performance.now() - t0;
  const times = [];
  for (let i = 0; i < steadyCalls; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return { first, steady: median(times.slice(10)) };
}

async function timeIt(fn) {
  const t0 = performance.now();
  const r = await fn();
  return [performance.now() - t0, r];
}

// Cold = the first load in this process (it compiles the runtime's .wasm); warm = the median of
// five more. First call = the first forward on that runtime in this process, against the median
// of calls 11-40 after it (30 calls: a load spike on the shared machine moves the median little).
// These run before any other workload, so the process is fresh.
async function loadAndFirstCall() {
  const demoWindow = JSON.parse(readFileSync(path.join(MODELS, 'demo_window.json'), 'utf8'));
  const demoPath = path.join(ROOT, 'demo', 'model', 'demo.safetensors');
  const rows = [];

  const [sfCold, model] = await timeIt(() => loadModel(demoPath, ONE));
  const sfWarm = [];
  for (let i = 0; i < 5; i++) sfWarm.push((await timeIt(async () => (await loadModel(demoPath, ONE)).dispose()))[0]);
  const sfFirst = await firstCall(() => model.forward(demoWindow));
  model.dispose();

  const demoOnnx = path.join(MODELS, 'demo.onnx');
  const demoFeeds = demoOrtFeeds();
  const [ortCold, session] = await timeIt(() => ort.InferenceSession.create(demoOnnx, ORT_OPTIONS));
  const ortWarm = [];
  for (let i = 0; i < 5; i++) ortWarm.push((await timeIt(async () => (await ort.InferenceSession.create(demoOnnx, ORT_OPTIONS)).release()))[0]);
  const ortFirst = await firstCall(() => ortRun(session, demoFeeds));
  await session.release();

  // tfjs: backend start (its .wasm) is the cold part; its "model" is the weight upload, built
  // again for the warm figure. Its first call is the encoder at N = 256 (there is no tfjs demo).
  setWasmPaths(TFJS_DIST);
  setThreadsCount(1);
  const [tfBackend] = await timeIt(() => tf.setBackend('wasm'));
  if (tf.getBackend() !== 'wasm') throw new Error('tfjs wasm backend did not start');
  const encSt = readSafetensors(path.join(MODELS, 'encoder.safetensors'));
  const cfg = meta.encoder.config;
  const [tfLoad, enc] = await timeIt(() => tfjsEncoder(encSt, cfg));
  const samples = normals(256 * cfg.modalities[0].patch_len, 256);
  const tfFirst = await firstCall(() => { const { patches, embed } = encoderInputs(encSt, cfg, samples, 256); return enc(patches, embed, 256); });

  goal('sensorformer first forward in a fresh process <= 1.5x steady state', `${fmt.ratio(sfFirst.first / sfFirst.steady)}x`, sfFirst.first / sfFirst.steady <= 1.5);
  rows.push(['sensorformer', 'demo model (`loadModel`)', fmt.ms(sfCold), fmt.ms(median(sfWarm)), 'demo window', fmt.ms(sfFirst.first), fmt.ms(sfFirst.steady), fmt.ratio(sfFirst.first / sfFirst.steady)]);
  rows.push(['onnxruntime-web', 'demo.onnx (`InferenceSession.create`)', fmt.ms(ortCold), fmt.ms(median(ortWarm)), 'demo window', fmt.ms(ortFirst.first), fmt.ms(ortFirst.steady), fmt.ratio(ortFirst.first / ortFirst.steady)]);
  rows.push(['tfjs-backend-wasm', 'backend start + encoder weights', `${fmt.ms(tfBackend)} + ${fmt.ms(tfLoad)}`, '–', 'encoder N = 256', fmt.ms(tfFirst.first), fmt.ms(tfFirst.steady), fmt.ratio(tfFirst.first / tfFirst.steady)]);
  results.load = table(['runtime', 'load', 'cold ms', 'warm ms', 'first call on', 'first ms', 'steady ms', 'first / steady'], rows);
}

function sizes() {
  const files = [
    ['sensorformer', path.join(ROOT, 'web', 'dist', 'sensorformer-core.wasm')],
    ['onnxruntime-web ' + ort.env.versions.web, path.join(path.dirname(require.resolve('onnxruntime-web')), 'ort-wasm-simd-threaded.wasm')],
    ['tfjs-backend-wasm ' + tf.version_core, TFJS_DIST + 'tfjs-backend-wasm-simd.wasm'],
  ];
  const ours = statSync(files[0][1]).size;
  goal('.wasm <= 300 KB raw', `${(ours / 1024).toFixed(0)} KB`, ours <= 300 * 1024);
  results.sizes = table(['runtime', '.wasm', 'raw KB', 'gzip -9 KB'], files.map(([name, f]) => {
    const bytes = readFileSync(f);
    return [name, path.basename(f), (bytes.length / 1024).toFixed(0), (gzipSync(bytes, { level: 9 }).length / 1024).toFixed(0)];
  }));
}

async function encoderBench() {
  const cfg = meta.encoder.config, P = cfg.modalities[0].patch_len, d = cfg.d_model;
  const file = path.join(MODELS, 'encoder.safetensors');
  const st = readSafetensors(file);
  const model = await loadModel(file, ONE);
  const session = await ort.InferenceSession.create(path.join(MODELS, 'encoder.onnx'), ORT_OPTIONS);
  const tfjs = tfjsEncoder(st, cfg);

  const runners = (samples, N) => {
    const window = encoderWindow(samples);
    return [
      { name: 'sf', run: () => model.forward(window).embeddings },
      { name: 'ort', run: async () => { const { patches, embed } = encoderInputs(st, cfg, samples, N); return (await ortRun(session, { patches: [patches, [N, P]], embed: [embed, [N, d]] })).embeddings.data; } },
      { name: 'tfjs', run: () => { const { patches, embed } = encoderInputs(st, cfg, samples, N); return tfjs(patches, embed, N); } },
    ];
  };

  // the committed case against float64 torch
  const N0 = meta.encoder.checkN, want = readF32(path.join(MODELS, 'encoder_check_embeddings.f32'));
  const refErr = {};
  for (const r of runners(readF32(path.join(MODELS, 'encoder_check_samples.f32')), N0))
    refErr[r.name] = check(`encoder N=${N0} ${r.name} vs float64 torch`, relError(await r.run(), want));

  const rows = [], peerErr = { ort: 0, tfjs: 0 };
  for (const N of CHECK ? [64] : QUICK ? [64, 256] : [64, 256, 1024, 4096]) {
    const cases = runners(normals(N * P, N), N);
    const ours = await cases[0].run();
    for (const c of cases.slice(1)) peerErr[c.name] = Math.max(peerErr[c.name], check(`encoder N=${N} ${c.name} vs sensorformer`, relError(await c.run(), ours)));
    log(`encoder N=${N}`);
    if (CHECK) continue;
    const { rounds, median: m } = await interleaved(cases, TIMING);
    const flops = cfg.n_layers * layerFlops(N, d, cfg.dim_feedforward) + 2 * N * P * d;
    const target = N === 64 ? 2 : 1.5;
    goal(`encoder N = ${N}: onnxruntime-web / sensorformer >= ${target}`, fmt.ratio(m.ort / m.sf), m.ort / m.sf >= target);
    rows.push([N, fmt.ms(m.sf), fmt.gflops(flops, m.sf), fmt.ms(m.ort), fmt.gflops(flops, m.ort), fmt.ms(m.tfjs), fmt.gflops(flops, m.tfjs), `**${fmt.ratio(m.ort / m.sf)}**`, `**${fmt.ratio(m.tfjs / m.sf)}**`, rounds]);
  }
  results.encoder = table(['N', 'sensorformer ms', 'GFLOP/s', 'onnxruntime-web ms', 'GFLOP/s', 'tfjs-wasm ms', 'GFLOP/s', 'ORT / sf', 'tfjs / sf', 'rounds'], rows)
    + `\n\nOutputs against float64 torch at N = ${N0} (max |diff| / max(1, max |ref|)): sensorformer ${fmt.err(refErr.sf)}, onnxruntime-web ${fmt.err(refErr.ort)}, tfjs ${fmt.err(refErr.tfjs)}. Largest difference from sensorformer's output over the timed rows (seeded inputs): onnxruntime-web ${fmt.err(peerErr.ort)}, tfjs ${fmt.err(peerErr.tfjs)}.`;
  model.dispose();
  await session.release();
}

async function mhaBench() {
  const core = await loadCore(ONE);
  const rows = [], refNotes = [], peerErr = { ort: 0, tfjs: 0 };
  for (const { name, embedDim: E, numHeads: H, checkN } of meta.mha) {
    const st = readSafetensors(path.join(MODELS, `${name}.safetensors`)).tensors;
    const weights = { inProjWeight: st.in_proj_weight.data, inProjBias: st.in_proj_bias.data, outProjWeight: st.out_proj_weight.data, outProjBias: st.out_proj_bias.data };
    const session = await ort.InferenceSession.create(path.join(MODELS, `${name}.onnx`), ORT_OPTIONS);
    const tw = tfjsMhaWeights(weights.inProjWeight, weights.inProjBias, weights.outProjWeight, weights.outProjBias, E, H);
    // Weights prepared once on every side: the ORT session and the tfjs tensors hold theirs too.
    const prepared = core.prepareMultiheadAttention({ embedDim: E, numHeads: H, weights });
    const runners = (x, N) => [
      { name: 'sf', run: () => prepared.forward(x).output },
      { name: 'ort', run: async () => (await ortRun(session, { x: [x, [N, E]] })).out.data },
      { name: 'tfjs', run: () => { const y = tf.tidy(() => tfjsAttention(tw, tfT(x, [N, E]))); const d = y.dataSync(); y.dispose(); return d; } },
    ];
    const want = readF32(path.join(MODELS, `${name}_check_out.f32`));
    const errs = [];
    for (const r of runners(readF32(path.join(MODELS, `${name}_check_x.f32`)), checkN))
      errs.push(`${r.name} ${fmt.err(check(`${name} N=${checkN} ${r.name} vs float64 torch`, relError(await r.run(), want)))}`);
    refNotes.push(`${H} x ${E / H}: ${errs.join(', ')}`);
    for (const N of QUICK ? [256] : [256, 1024, 4096]) {
      const x = normals(N * E, N + E + H);
      const cases = runners(x, N);
      const ours = await cases[0].run();
      for (const c of cases.slice(1)) peerErr[c.name] = Math.max(peerErr[c.name], check(`${name} N=${N} ${c.name} vs sensorformer`, relError(await c.run(), ours)));
      log(`mha ${name} N=${N}`);
      if (CHECK) continue;
      const { rounds, median: m } = await interleaved(cases, TIMING);
      const flops = mhaFlops(N, E);
      goal(`attention ${H} x ${E / H}, N = ${N}: both peers / sensorformer >= 1.2`, `ORT ${fmt.ratio(m.ort / m.sf)}, tfjs ${fmt.ratio(m.tfjs / m.sf)}`, Math.min(m.ort, m.tfjs) / m.sf >= 1.2);
      rows.push([H, E / H, N, fmt.ms(m.sf), fmt.gflops(flops, m.sf), fmt.ms(m.ort), fmt.gflops(flops, m.ort), fmt.ms(m.tfjs), fmt.gflops(flops, m.tfjs), `**${fmt.ratio(m.ort / m.sf)}**`, `**${fmt.ratio(m.tfjs / m.sf)}**`, rounds]);
    }
    await session.release();
    prepared.dispose();
    tf.dispose([tw.q.wT, tw.q.b, tw.k.wT, tw.k.b, tw.v.wT, tw.v.b, tw.oT, tw.ob]);
  }
  results.mha = table(['heads', 'head dim', 'N', 'sensorformer ms', 'GFLOP/s', 'onnxruntime-web ms', 'GFLOP/s', 'tfjs-wasm ms', 'GFLOP/s', 'ORT / sf', 'tfjs / sf', 'rounds'], rows)
    + `\n\nOutputs against float64 torch \`nn.MultiheadAttention\` at N = ${meta.mha[0].checkN} (max |diff| / max(1, max |ref|)): ${refNotes.join('; ')}. Largest difference from sensorformer's output over the timed rows (seeded inputs): onnxruntime-web ${fmt.err(peerErr.ort)}, tfjs ${fmt.err(peerErr.tfjs)}.`;
}

function demoOrtFeeds() {
  const T = meta.demo.tokens, d = 32;
  return {
    tokens: [readF32(path.join(MODELS, 'demo_tokens.f32')), [T, d]],
    time_mask: [readF32(path.join(MODELS, 'demo_time_mask.f32')), [T, T]],
    channel_mask: [readF32(path.join(MODELS, 'demo_channel_mask.f32')), [T, T]],
  };
}

function demoFlops(cfg) {
  const d = cfg.d_model, ff = cfg.dim_feedforward;
  let f = 0;
  for (const g of [...meta.demo.timeGroups, ...meta.demo.channelGroups]) f += cfg.n_layers * layerFlops(g, d, ff);
  return f;
}

async function demoBench() {
  const window = JSON.parse(readFileSync(path.join(MODELS, 'demo_window.json'), 'utf8'));
  const model = await loadModel(path.join(ROOT, 'demo', 'model', 'demo.safetensors'), ONE);
  const session = await ort.InferenceSession.create(path.join(MODELS, 'demo.onnx'), ORT_OPTIONS);
  const feeds = demoOrtFeeds();
  const wantEmb = readF32(path.join(MODELS, 'demo_check_embeddings.f32'));
  const wantHead = readF32(path.join(MODELS, 'demo_check_head.f32'));
  const sf = model.forward(window), o = await ortRun(session, feeds);
  const errSf = Math.max(check('demo sensorformer embeddings vs float64 torch', relError(sf.embeddings, wantEmb)), check('demo sensorformer head vs float64 torch', relError(sf.head, wantHead)));
  const errOrt = Math.max(check('demo ORT embeddings vs float64 torch', relError(o.embeddings.data, wantEmb)), check('demo ORT head vs float64 torch', relError(o.head.data, wantHead)));
  log('demo');
  if (CHECK) {
    model.dispose();
    await session.release();
    return;
  }
  const { rounds, median: m } = await interleaved([
    { name: 'sf', run: () => model.forward(window) },
    { name: 'ort', run: () => ortRun(session, feeds) },
  ], QUICK ? TIMING : { ...TIMING, warmup: 20, budgetMs: 8000, maxRounds: 2001 });
  const cfg = model.config, flops = demoFlops(cfg);
  const groups = `${meta.demo.tokens} tokens; time groups ${meta.demo.timeGroups.join('/')}; channel groups ${meta.demo.channelGroups.join('/')}`;
  results.demo = table(['window', 'sensorformer ms', 'GFLOP/s', 'onnxruntime-web ms', 'GFLOP/s', 'ORT / sf', 'rounds'],
    [[groups, fmt.ms(m.sf), fmt.gflops(flops, m.sf), fmt.ms(m.ort), fmt.gflops(flops, m.ort), `**${fmt.ratio(m.ort / m.sf)}**`, rounds]])
    + `\n\nOutputs (embeddings and head) against float64 torch: sensorformer ${fmt.err(errSf)}, onnxruntime-web ${fmt.err(errOrt)}.`;
  model.dispose();
  await session.release();
  return { window, feeds };
}

// Windows per second over one batch of the demo window (the window the ORT graph's tokens and masks
// were made from, so both runtimes score the same thing): sensorformer's forwardBatch on this
// thread, on one Worker and on a pool of 2 (`loadModelInWorker(source, { workers })`), against
// onnxruntime-web with numThreads = 2 in a worker thread (an ORT instance's thread count is fixed
// when it starts, and this process's is pinned to 1). Rotating interleaved rounds, medians, and the
// cores each variant got (process CPU time / wall: a busy machine shows as < 2 for the pools).
async function throughputBench() {
  const window = JSON.parse(readFileSync(path.join(MODELS, 'demo_window.json'), 'utf8'));
  const demoPath = path.join(ROOT, 'demo', 'model', 'demo.safetensors');
  const model = await loadModel(demoPath, ONE);
  const batch = QUICK ? 24 : 200, rounds = QUICK ? 3 : 9, WORKERS = 2;
  const worker = new Worker(new URL('./ort-throughput-worker.mjs', import.meta.url), { workerData: { models: MODELS, tokens: meta.demo.tokens, threads: WORKERS } });
  const ask = (msg) => new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); worker.postMessage(msg); });
  const ready = await ask({ op: 'init' });
  check('throughput: ORT (numThreads 2) demo embeddings vs float64 torch', relError(ready.embeddings, readF32(path.join(MODELS, 'demo_check_embeddings.f32'))));
  check('throughput: ORT (numThreads 2) demo head vs float64 torch', relError(ready.head, readF32(path.join(MODELS, 'demo_check_head.f32'))));
  const one = await loadModelInWorker(demoPath, ONE), pool = await loadModelInWorker(demoPath, { workers: WORKERS, numThreads: 1 });
  const windows = Array.from({ length: batch }, () => window);
  const variants = [
    ['sensorformer main thread, `Model.forwardBatch`', () => model.forwardBatch(windows)],
    ['sensorformer 1 worker, `forwardBatch`', () => one.forwardBatch(windows)],
    [`sensorformer pool of ${WORKERS} workers, \`forwardBatch\``, () => pool.forwardBatch(windows)],
    [`onnxruntime-web, numThreads ${WORKERS} (${ready.threads} in effect${ready.note ? `; ${ready.note}` : ''})`, () => ask({ op: 'run', count: batch })],
  ];
  const reference = model.forwardBatch(windows);
  for (const [name, run] of variants.slice(0, 3)) assertSameResults(name, await run(), reference);  // also their warm-up
  await variants[3][1]();
  log('throughput');
  const stats = await interleavedCpu(variants, rounds, { settleMs: 150 });
  const perSecond = stats.map((s) => batch / (s.ms / 1000));
  const [, oneW, poolW, ortW] = perSecond;
  // The issue sets no number here; decided: a pool of 2 should give >= 1.5x one worker (75 % of
  // linear on 2 free cores) and should beat ORT's own 2 threads (>= 1.0).
  goal(`throughput: pool of ${WORKERS} workers / 1 worker >= 1.5 (demo windows / s)`, `${fmt.ratio(poolW / oneW)} (cores used: ${(stats[2].cpuMs / stats[2].ms).toFixed(2)})`, poolW / oneW >= 1.5);
  goal(`throughput: pool of ${WORKERS} workers / onnxruntime-web numThreads ${WORKERS} >= 1.0`, `${fmt.ratio(poolW / ortW)} (cores used: sf ${(stats[2].cpuMs / stats[2].ms).toFixed(2)}, ORT ${(stats[3].cpuMs / stats[3].ms).toFixed(2)})`, poolW / ortW >= 1.0);
  results.throughput = table(['variant', 'ms / batch', 'demo windows / s', 'vs 1 worker', 'pool of 2 / this', 'cores used (CPU / wall)'],
    variants.map(([name], v) => [name, fmt.ms(stats[v].ms), perSecond[v].toFixed(0), fmt.ratio(perSecond[v] / oneW), `**${fmt.ratio(poolW / perSecond[v])}**`, (stats[v].cpuMs / stats[v].ms).toFixed(2)]))
    + `\n\nBatches of ${batch} copies of the demo window (${meta.demo.tokens} tokens), ${rounds} interleaved rounds whose order rotates, medians; the three sensorformer variants' results checked bit-identical, ORT's against float64 torch. Load average at the end: ${os.loadavg()[0].toFixed(1)} (1 min) on ${os.availableParallelism()} cores.`;
  await worker.terminate();
  await Promise.all([one.dispose(), pool.dispose()]);
  model.dispose();
}

// --- main ----------------------------------------------------------------------------------------
const started = performance.now();
log(`quick=${QUICK}`);
if (want('load')) await loadAndFirstCall();
else {
  setWasmPaths(TFJS_DIST);
  setThreadsCount(1);
  await tf.setBackend('wasm');
}
if (!CHECK) sizes();
if (want('encoder')) await encoderBench();
if (want('mha')) await mhaBench();
if (want('demo')) await demoBench();
if (want('throughput')) await throughputBench();
if (want('threads')) results.threads = await runThreads({ CHECK, QUICK, check, goal, log, meta, MODELS, loadModel });
if (want('memory')) {
  const { sfHeap, markdown } = runMemory({ log });
  goal('N = 16384 encoder tokens without maps: WebAssembly memory < 64 MiB', `${(sfHeap / 2 ** 20).toFixed(1)} MiB`, sfHeap < GOAL_BYTES);
  results.memory = markdown;
}
if (want('stream')) results.stream = await runStream({ CHECK, QUICK, TIMING, check, goal, log });
let afSkipped = null;
if (want('af')) {
  const r = await runAf({ CHECK, QUICK, TIMING, check, log, ort, ORT_OPTIONS, loadModel, meta });
  if (r.skipped) {
    afSkipped = r.skipped;
    log(`af: ${r.skipped}`);
    results.af = `Skipped: ${r.skipped}.`;
  } else results.af = r.markdown;
}
if (want('native')) results.native = await runNative({ quick: QUICK, log, goal });
if (goals.length) results.goals = table(['goal (issues 10 and 12)', 'measured', 'met'], goals);

if (!CHECK) {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const flags = args.filter((a) => a === '--quick' || a.startsWith('--only=')).join(' ');
  out(`Command: \`npm run bench${flags ? ` -- ${flags}` : QUICK ? ' -- --quick' : ''}\` (node bench/peers.mjs${flags ? ` ${flags}` : ''}), ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${os.cpus().length} cores (${cpu}), Node ${process.version}; onnxruntime-web ${ort.env.versions.web} (wasm EP, numThreads 1, SIMD), @tensorflow/tfjs-backend-wasm ${tf.version_core} (setThreadsCount(1), SIMD). Medians of interleaved rounds; ratios > 1 mean sensorformer is faster. Total ${((performance.now() - started) / 60000).toFixed(1)} min.\n`);
  const sections = [
    ['goals', 'Goals'],
    ['encoder', '2-layer pre-norm GELU encoder, d 64, 4 heads, ff 256 (`model.forward(window)` vs the graph after tokenization)'],
    ['mha', 'Multi-head self-attention, no mask, no weights returned'],
    ['demo', 'Demo model (d 32, factorized layout) on one demo window'],
    ['throughput', 'Throughput on many demo windows'],
    ['threads', 'Threads inside one forward: the encoder on 1 and 2 threads against onnxruntime-web on 2 and on its default (issue 22)'],
    ['memory', 'Memory: one long window (2-layer d 64 encoder, fresh process per runtime)'],
    ['stream', 'Streaming: a session update against recomputing the look-back window (issue 12)'],
    ['af', 'Atrial-fibrillation model (models/af.safetensors): one 30 s recording and one streaming update (issue 20)'],
    ['load', 'Load time and first call (fresh process)'],
    ['sizes', 'Module size'],
    ['native', 'The same C++ kernels: WebAssembly against native builds (sensorformer_bench)'],
  ];
  for (const [key, title] of sections) if (results[key]) out(`#### ${title}\n\n${results[key]}\n`);
}
log(`${checks.length} output checks passed (tolerance ${TOL})`);
if (CHECK) out(`bench --check: ${checks.length} output checks passed (tolerance ${TOL}):\n${checks.map((c) => `  ${c.what}: ${fmt.err(c.err)}`).join('\n')}${afSkipped ? `\n  af: ${afSkipped}` : ''}`);
