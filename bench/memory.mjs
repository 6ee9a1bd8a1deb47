// Peak memory of one long window: N = 16384 tokens through the bench's 2-layer d 64 encoder
// (bench/models/encoder.safetensors, flattened layout, 4 heads, ff 256) without attention maps,
// each runtime in a FRESH Node process (a child), so nothing an earlier row allocated counts.
// Reported per runtime: the WebAssembly memory's size after the forward (memory.buffer.byteLength;
// a wasm memory never shrinks, so this is its peak), the process's peak RSS, and the one forward's
// time (it takes seconds: timed once, not a benchmark). Issue 10's goal: < 64 MiB of heap for us.
//
//   node bench/memory.mjs [N ...]   (default 16384 4096) prints the table; bench/peers.mjs runs it too
//
// The core exposes no heap figure, so the child captures the WebAssembly.Memory objects of every
// module it instantiates (exported or imported: ORT's threaded build imports its memory) by
// wrapping WebAssembly.instantiate before the runtime loads; the runtimes' code is untouched.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { normals, table } from './lib.mjs';

const HERE = fileURLToPath(import.meta.url);
const MODELS = path.join(path.dirname(HERE), 'models');
// Issue 10 says "64 MB"; read as MiB (wasm memory grows in 64 KiB pages); the table prints bytes too.
export const GOAL_BYTES = 64 * 2 ** 20;
const MiB = (b) => (b / 2 ** 20).toFixed(1);

function captureMemories() {
  const memories = new Set();
  const scan = (obj) => {
    for (const v of Object.values(obj ?? {})) {
      if (v instanceof WebAssembly.Memory) memories.add(v);
      else if (v && typeof v === 'object' && !(v instanceof WebAssembly.Module)) for (const w of Object.values(v)) if (w instanceof WebAssembly.Memory) memories.add(w);
    }
  };
  for (const fn of ['instantiate', 'instantiateStreaming']) {
    const original = WebAssembly[fn];
    if (!original) continue;
    WebAssembly[fn] = async function (source, imports, ...rest) {
      scan(imports);
      const r = await original.call(this, source, imports, ...rest);
      scan((r.instance ?? r).exports);
      return r;
    };
  }
  return () => Math.max(0, ...[...memories].map((m) => m.buffer.byteLength));
}

// Peak RSS of this process in KiB. Linux's VmHWM belongs to the memory map this program got at exec;
// getrusage's maxRSS (process.resourceUsage) also keeps the pre-exec high-water mark, which for a
// child spawned by the bench is the parent's (seen: the same 177 MiB for every child).
function peakRssKiB() {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch { /* not Linux */ }
  return process.resourceUsage().maxRSS;
}

async function child(runtime, N) {
  const heapBytes = captureMemories();
  let ms;
  if (runtime === 'sf') {
    const { loadModel } = await import('../web/src/index.js');
    const model = await loadModel(path.join(MODELS, 'encoder.safetensors'), { numThreads: 1 });
    const P = model.config.modalities[0].patch_len;
    // Flattened layout, one stream of P * N samples at 100 Hz: N tokens (bench/peers.mjs's window).
    const window = { streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: 100, startTime: 1000, samples: normals(N * P, N) }], referenceTime: 1000 };
    const t0 = performance.now();
    const r = model.forward(window, { maxGflop: 1000 });  // the default 10 GFLOP guard stops long windows; this row is about memory
    ms = performance.now() - t0;
    if (r.dims[0] !== N || !r.embeddings.every(Number.isFinite)) throw new Error(`forward gave ${r.dims[0]} tokens (want ${N}) or a non-finite embedding`);
  } else {
    const ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
    ort.env.logLevel = 'error';
    const session = await ort.InferenceSession.create(path.join(MODELS, 'encoder.onnx'), { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    // Only the sizes matter here (the values are checked by bench/peers.mjs at N <= 4096).
    const feeds = { patches: new ort.Tensor('float32', normals(N * 8, N), [N, 8]), embed: new ort.Tensor('float32', normals(N * 64, N + 1), [N, 64]) };
    const t0 = performance.now();
    try {
      await session.run(feeds);
    } catch (e) {
      console.log(JSON.stringify({ error: String(e?.message ?? e).replace(/\/\S*\//g, '').slice(0, 200), heap: heapBytes(), maxRssKiB: peakRssKiB() }));
      return;
    }
    ms = performance.now() - t0;
  }
  console.log(JSON.stringify({ ms, heap: heapBytes(), maxRssKiB: peakRssKiB() }));
}

/** Runs each runtime's child at each N (the goal's N first; a smaller N where both runtimes run,
 * for comparison); returns { markdown, sfHeap } (sfHeap: ours at the first N). */
export function runMemory({ sizes = [16384, 4096], log = () => {}, timeoutMs = 300000 } = {}) {
  const rows = [];
  let sfHeap = null;
  for (const N of sizes) {
    for (const [runtime, name] of [['sf', 'sensorformer `model.forward(window)`'], ['ort', 'onnxruntime-web (1 thread), the encoder graph']]) {
      log(`memory N=${N} ${runtime} (fresh process)`);
      const r = spawnSync(process.execPath, [HERE, '--child', runtime, String(N)], { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 1 << 20 });
      const line = r.stdout?.trim().split('\n').filter((l) => l.startsWith('{')).pop();
      if (r.status !== 0 || !line) {
        const why = r.error?.code === 'ETIMEDOUT' ? `timed out after ${timeoutMs / 1000} s` : `exit ${r.status ?? r.signal}: ${(r.stderr ?? '').trim().split('\n').pop()?.slice(0, 160)}`;
        if (runtime === 'sf') throw new Error(`memory row: sensorformer at N = ${N} failed (${why})`);
        rows.push([N, name, '–', '–', '–', `failed: ${why}`]);
        continue;
      }
      const m = JSON.parse(line);
      if (runtime === 'sf' && N === sizes[0]) sfHeap = m.heap;
      rows.push([N, name, m.heap ? `${MiB(m.heap)} (${m.heap} B)` : '–', MiB(m.maxRssKiB * 1024), m.ms == null ? '–' : (m.ms / 1000).toFixed(2), m.error ? `failed: ${m.error.trim()}` : 'ok']);
    }
  }
  return {
    sfHeap,
    markdown: table(['N', 'runtime', 'wasm memory after the forward, MiB', 'peak RSS MiB', 'forward s (once)', 'result'], rows)
      + `\n\nNo attention maps; each runtime and size in a fresh Node process. Goal for sensorformer at N = ${sizes[0]}: < ${MiB(GOAL_BYTES)} MiB (${GOAL_BYTES} B) of WebAssembly memory. Ours runs with forward option \`maxGflop: 1000\` (the default 10 GFLOP guard refuses N = 16384).`,
  };
}

const args = process.argv.slice(2);
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (args[0] === '--child') await child(args[1], Number(args[2]));
  else console.log(runMemory({ sizes: args.length ? args.map(Number) : undefined, log: (...a) => console.error('[memory]', ...a) }).markdown);
}
