// Shared helpers of the peer benchmark (bench/peers.mjs): file readers, a seeded generator,
// interleaved timing with medians, FLOP counts and markdown tables.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
// The tests' safetensors reader (F32 / F64 / I32 / U8): the bench's weight files are F32 and F64.
export { readSafetensors } from '../tests/js/safetensors.js';
import { prng } from '../tests/js/prng.js';

export function readF32(path) {
  const b = readFileSync(path);
  return new Float32Array(new Uint8Array(b).buffer);
}

/** Seeded standard-normal Float32Array (mulberry32 + Box-Muller): the bench's inputs past the
 * committed reference cases; every runtime gets the same array. */
export function normals(n, seed) {
  const uniform = prng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = 1 - uniform(), v = uniform();
    const r = Math.sqrt(-2 * Math.log(u));
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Largest |a - b| over max(1, max |b|): float32 results against a reference of values O(1-10). */
export function relError(a, b) {
  if (a.length !== b.length) return Infinity;
  let err = 0, scale = 1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    err = Number.isNaN(d) ? Infinity : Math.max(err, d);
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return err / scale;
}

/**
 * Runs `cases` ([{ name, run }], run() sync or async) in interleaved rounds A, B, C, A, B, C, ...
 * after `warmup` rounds; the number of timed rounds is chosen from the warm-up's round time so a
 * row takes about `budgetMs` (clamped to [minRounds, maxRounds]). Returns name -> median ms.
 * A case's optional prepare() runs untimed just before each of its runs (a streaming update's
 * earlier chunks that make nothing final, bench/af.mjs).
 */
export async function interleaved(cases, { warmup = 2, budgetMs = 12000, minRounds = 5, maxRounds = 41 } = {}) {
  const time = async (c) => {
    if (c.prepare) await c.prepare();
    const t0 = performance.now();
    await c.run();
    return performance.now() - t0;
  };
  let roundMs = 0;
  for (let w = 0; w < warmup; w++) {
    roundMs = 0;
    for (const c of cases) roundMs += await time(c);
  }
  const rounds = Math.max(minRounds, Math.min(maxRounds, Math.round(budgetMs / Math.max(roundMs, 1e-3))));
  const samples = Object.fromEntries(cases.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++)
    for (const c of cases) samples[c.name].push(await time(c));
  return { rounds, median: Object.fromEntries(cases.map((c) => [c.name, median(samples[c.name])])) };
}

/**
 * Runs `variants` ([[name, run]], run() sync or async) for `rounds` interleaved rounds whose order
 * rotates every round (a load change on the shared machine then lands on every variant in turn).
 * Returns per variant { ms, cpuMs }: the medians of wall time and of the whole process's CPU time
 * (every thread, Worker threads included). cpuMs / ms is how many cores a variant actually got,
 * which tells a pool that found no free core (a busy machine) from one that scaled badly.
 * settleMs: an untimed pause after each variant. onnxruntime-web's intra-op threads spin-wait after
 * a run (measured here: about one core for ~30 ms, ~100 ms after the first run), which would land
 * on the next variant's wall and CPU time.
 */
export async function interleavedCpu(variants, rounds, { settleMs = 0 } = {}) {
  const times = variants.map(() => []), cpu = variants.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < variants.length; k++) {
      const v = (k + round) % variants.length;
      const c0 = process.cpuUsage(), t0 = performance.now();
      await variants[v][1]();
      times[v].push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu[v].push((c.user + c.system) / 1000);
      if (settleMs) await new Promise((resolve) => setTimeout(resolve, settleMs));
    }
  }
  return variants.map((_, v) => ({ ms: median(times[v]), cpuMs: median(cpu[v]) }));
}

/** Throws unless every forward result ({ embeddings, head }) of `results` is bit-identical to
 * `reference`'s: a pool must compute what the main thread computes, not merely something close. */
export function assertSameResults(name, results, reference) {
  // head: null for a model without one (both must lack it)
  const same = (a, b) => a === b || (a != null && b != null && a.length === b.length && a.every((v, i) => Object.is(v, b[i])));
  if (results.length !== reference.length) throw new Error(`${name}: ${results.length} results for ${reference.length} windows`);
  results.forEach((r, i) => {
    if (!same(r.embeddings, reference[i].embeddings) || !same(r.head, reference[i].head)) throw new Error(`${name}: window ${i} differs from the main thread's`);
  });
}

/** FLOPs of self-attention with projections on (N, E), H heads (softmax not counted):
 * Q/K/V 6NE^2, scores 2N^2E, P.V 2N^2E, out projection 2NE^2. */
export function mhaFlops(N, E) {
  return 8 * N * E * E + 4 * N * N * E;
}

/** One pre-norm encoder layer on a group of g tokens: attention + the two FF products. */
export function layerFlops(g, d, ff) {
  return mhaFlops(g, d) + 4 * g * d * ff;
}

export const fmt = {
  ms: (v) => (v == null ? '–' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)),
  ratio: (v) => (v == null ? '–' : v.toFixed(2)),
  gflops: (flops, ms) => (ms == null ? '–' : (flops / ms / 1e6).toFixed(1)),
  err: (v) => (v == null ? '–' : v.toExponential(1)),
};

export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

// The peers' encoder workload, what a JS user of onnxruntime-web computes before the graph:
// patches (N, P) = (x - mean) / std and the additive embedding (N, d) = time encoding (sin block,
// cos block of rel * inv_freq, rel in float64 seconds) + sensor 0 + modality 0 + placement 0 +
// rate-bucket rows (docs/model.md). Timed inside the peers' forward, as our forward tokenizes too.
export function encoderInputsFor(st, cfg, rate, samples, N) {
  const d = cfg.d_model, P = cfg.modalities[0].patch_len, { mean, std } = cfg.modalities[0];
  const t = st.tensors;
  const bucket = 1 + cfg.rate_bucket_edges_hz.filter((e) => rate >= e).length;
  const ident = new Float64Array(d);
  for (const [name, row] of [['sensor', 0], ['modality', 0], ['placement', 0], ['rate', bucket]])
    for (let i = 0; i < d; i++) ident[i] += t[`tokenizer.${name}_embedding.weight`].data[row * d + i];
  const inv = t['time_encoding.inv_freq'].data, half = d / 2;
  const embed = new Float32Array(N * d);
  for (let k = 0; k < N; k++) {
    const rel = (k * P) / rate;  // window starts at its referenceTime
    for (let i = 0; i < half; i++) {
      const a = rel * inv[i];
      embed[k * d + i] = Math.sin(a) + ident[i];
      embed[k * d + half + i] = Math.cos(a) + ident[half + i];
    }
  }
  const patches = new Float32Array(N * P);
  for (let j = 0; j < N * P; j++) patches[j] = (samples[j] - mean) / std;
  return { patches, embed };
}
