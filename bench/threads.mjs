// Threads inside one forward (issue 22): sensorformer's encoder on 1 and 2 threads (numThreads;
// the threaded build, docs/performance.md "Threads") against onnxruntime-web with numThreads 2
// and with its own default, same weights (bench/models/encoder.onnx), same process, interleaved.
//
//   node bench/peers.mjs --only=threads [--quick]     (a part of `npm run bench`)
//
// ORT runs in worker threads of this process, one instance per thread count (an ORT instance's
// thread count is fixed when it starts and the main thread's is pinned to 1), and times each run
// inside its worker (bench/ort-encoder-worker.mjs: the JS preprocessing and session.run, as the
// one-thread encoder rows do), so message passing is not charged to it. Each run is preceded by a
// 100 ms pause (SETTLE_MS), so that no runtime's spinning pool from the run before competes with
// it. sensorformer runs on this thread, its calling thread being one of its numThreads. Each round times every variant once, in
// an order that rotates from round to round; medians. Before timing, per N: sensorformer's 2-thread
// output bit-identical to its 1-thread output, and both ORT instances within TOL of it.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { assertSameResults, fmt, layerFlops, median, normals, relError, table } from './lib.mjs';

// The pause before each timed run. onnxruntime-web's pool of 2 threads keeps spinning for tens of
// milliseconds after a run (`node bench/ort_spin.mjs`, 2026-12-03 on the 2-vCPU Xeon: a 64-token
// forward of ours on 2 threads right after one of ORT's ran at 0.65x our 1 thread after a 20 ms
// pause, 0.72x after 50 ms, 1.10x after 100 ms, 1.15x after 200 ms). A pause of 20 ms, used until
// then, let ORT's spinning take a core from the run after it whenever that was ours on 2 threads.
const SETTLE_MS = 100;
// Forwards per run, back to back after the pause: the encoder table has the first's times (the
// threads woken by it) and a second table the last's. On a Linux that packs a woken thread onto
// its waker's vCPU (the 2-vCPU Firecracker VM: `build/native/sensorformer_thread_placement`,
// BENCHMARKS.md "Where the helper wakes") the first forward after a pause often runs both threads
// on one vCPU until the scheduler moves one; the third shows what the threads do once spread.
const REPEAT = 3;
const ordinal = (n) => ['first', 'second', 'third', 'fourth'][n - 1] ?? `${n}th`;

function ortWorker(models, threads) {
  const worker = new Worker(new URL('./ort-encoder-worker.mjs', import.meta.url), { workerData: { models, threads } });
  const ask = (msg) => new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.postMessage(msg);
  });
  return { worker, ask };
}

// The demo model (factorized, d 32) on the demo window, with and without attention maps, 1 and 2
// threads: no group of it is large enough for its steps to split, so its time and channel groups
// are spread over the threads whole (model.cpp, run_block). Back to back, as the demo's Worker
// runs it on each update (no pause: the row asks what the page gets, not a cold start).
async function demoRow({ CHECK, QUICK, MODELS, loadModel }) {
  const window = JSON.parse(readFileSync(path.join(MODELS, 'demo_window.json'), 'utf8'));
  const file = path.join(MODELS, '..', '..', 'demo', 'model', 'demo.safetensors');
  const one = await loadModel(file, { numThreads: 1 }), two = await loadModel(file, { numThreads: 2 });
  const rows = [];
  for (const attention of [false, true]) {
    assertSameResults(`threads demo${attention ? ' with maps' : ''}: 2 threads against 1`, [two.forward(window, { attention })], [one.forward(window, { attention })]);
    if (CHECK) continue;
    const times = { sf1: [], sf2: [] }, reps = 10, rounds = QUICK ? 5 : 41;
    const timed = (m) => { const t = performance.now(); for (let i = 0; i < reps; i++) m.forward(window, { attention }); return (performance.now() - t) / reps; };
    for (let i = 0; i < 3; i++) timed(one), timed(two);
    for (let r = 0; r < rounds; r++) {
      if (r % 2) times.sf1.push(timed(one)), times.sf2.push(timed(two));
      else times.sf2.push(timed(two)), times.sf1.push(timed(one));
    }
    const m = { sf1: median(times.sf1), sf2: median(times.sf2) };
    rows.push([`demo model, ${window.streams.length} streams${attention ? ', with maps' : ''}`, fmt.ms(m.sf1), fmt.ms(m.sf2), `**${fmt.ratio(m.sf1 / m.sf2)}**`, rounds]);
  }
  one.dispose();
  two.dispose();
  if (CHECK) return '';
  return table(['window', 'sf 1 thread ms', 'sf 2 threads ms', 'sf 1 / 2 threads', 'rounds (of 10 forwards)'], rows)
    + '\n\nThe demo model (factorized, d 32, 2 layers) on the bench\'s demo window (129 tokens; time groups of 1-50 tokens, channel groups of 25-27): whole groups spread over the threads. 2-thread outputs (and maps) bit-identical to 1 thread\'s (checked before timing).';
}

export async function runThreads({ CHECK, QUICK, check, goal, log, meta, MODELS, loadModel }) {
  const cfg = meta.encoder.config, P = cfg.modalities[0].patch_len;
  const file = path.join(MODELS, 'encoder.safetensors');
  const one = await loadModel(file, { numThreads: 1 }), two = await loadModel(file, { numThreads: 2 });
  if (one.threads !== 1 || two.threads !== 2) throw new Error(`threads granted: ${one.threads} and ${two.threads} (asked 1 and 2)`);
  const ort2 = ortWorker(MODELS, 2), ortDefault = ortWorker(MODELS, null);
  const [info2, infoDefault] = [await ort2.ask({ op: 'init' }), await ortDefault.ask({ op: 'init' })];
  const window = (samples) => ({ streams: [{ sensor: 0, modality: 'acc', placement: 'wrist', rateHz: meta.encoder.rateHz, startTime: meta.encoder.startTime, samples }], referenceTime: meta.encoder.startTime });

  const rows = [], lastRows = [];
  for (const N of CHECK || QUICK ? [64, 1024] : [64, 256, 1024, 4096]) {
    const samples = normals(N * P, N), w = window(samples);
    const reference = one.forward(w), ref = reference.embeddings;
    assertSameResults(`threads N=${N}: 2 threads against 1`, [two.forward(w)], [reference]);
    check(`threads N=${N}: ORT numThreads 2 vs sensorformer`, relError((await ort2.ask({ op: 'run', samples, N, keep: true })).out, ref));
    check(`threads N=${N}: ORT default threads vs sensorformer`, relError((await ortDefault.ask({ op: 'run', samples, N, keep: true })).out, ref));
    if (CHECK) continue;
    // Each run: after the pause, REPEAT forwards back to back; the first's time (the pools' threads
    // asleep, woken by this forward) and the last's (threads awake and where the OS put them).
    const sfRun = (model) => async () => {
      let ms, msLast;
      for (let i = 0; i < REPEAT; i++) {
        const t = performance.now();
        model.forward(w);
        msLast = performance.now() - t;
        if (i === 0) ms = msLast;
      }
      return { ms, msLast };
    };
    const variants = [
      ['sf1', sfRun(one)],
      ['sf2', sfRun(two)],
      ['ort2', () => ort2.ask({ op: 'run', samples, N, repeat: REPEAT })],
      ['ortDefault', () => ortDefault.ask({ op: 'run', samples, N, repeat: REPEAT })],
    ];
    for (let i = 0; i < 2; i++) for (const [, run] of variants) await run();  // warm-up
    const rounds = QUICK ? 5 : N <= 256 ? 41 : N <= 1024 ? 21 : 11;
    const times = Object.fromEntries(variants.flatMap(([k]) => [[k, []], [`${k}Last`, []]]));
    for (let r = 0; r < rounds; r++)
      for (let v = 0; v < variants.length; v++) {
        const [k, run] = variants[(v + r) % variants.length];
        // A pause before each run: both runtimes' pools spin for a while after a forward (ours
        // 0.5 ms, ORT's tens of ms), and a spinning pool of the previous variant would take the
        // cores from the next one's threads (measured: sensorformer's 2 threads at N = 256 went
        // from 1.1-1.5x its 1 thread to 0.5-0.6x right after ORT's runs; SETTLE_MS above).
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        const { ms, msLast } = await run();
        times[k].push(ms);
        times[`${k}Last`].push(msLast);
      }
    const m = Object.fromEntries(Object.entries(times).map(([k, t]) => [k, median(t)]));
    const flops = cfg.n_layers * layerFlops(N, cfg.d_model, cfg.dim_feedforward) + 2 * N * P * cfg.d_model;
    if (N >= 1024) goal(`threads N = ${N}: sensorformer 2 threads / 1 thread >= 1.8`, fmt.ratio(m.sf1 / m.sf2), m.sf1 / m.sf2 >= 1.8);
    goal(`threads N = ${N}: onnxruntime-web numThreads 2 / sensorformer 2 threads >= 1.5`, fmt.ratio(m.ort2 / m.sf2), m.ort2 / m.sf2 >= 1.5);
    if (N >= 1024) goal(`threads N = ${N}, ${ordinal(REPEAT)} forward in a row: sensorformer 2 threads / 1 thread >= 1.8`, fmt.ratio(m.sf1Last / m.sf2Last), m.sf1Last / m.sf2Last >= 1.8);
    goal(`threads N = ${N}, ${ordinal(REPEAT)} forward in a row: onnxruntime-web numThreads 2 / sensorformer 2 threads >= 1.5`, fmt.ratio(m.ort2Last / m.sf2Last), m.ort2Last / m.sf2Last >= 1.5);
    rows.push([N, fmt.ms(m.sf1), fmt.ms(m.sf2), fmt.gflops(flops, m.sf2), `**${fmt.ratio(m.sf1 / m.sf2)}**`, fmt.ms(m.ort2), fmt.ms(m.ortDefault), `**${fmt.ratio(m.ort2 / m.sf2)}**`, fmt.ratio(m.ortDefault / m.sf2), rounds]);
    lastRows.push([N, fmt.ms(m.sf1Last), fmt.ms(m.sf2Last), `**${fmt.ratio(m.sf1Last / m.sf2Last)}**`, fmt.ms(m.ort2Last), fmt.ms(m.ortDefaultLast), `**${fmt.ratio(m.ort2Last / m.sf2Last)}**`, fmt.ratio(m.ortDefaultLast / m.sf2Last)]);
    log(`threads N=${N}`);
  }
  await Promise.all([ort2.worker.terminate(), ortDefault.worker.terminate()]);
  one.dispose();
  two.dispose();
  const demo = await demoRow({ CHECK, QUICK, MODELS, loadModel });
  return demo + '\n\n' + table(['N', 'sf 1 thread ms', 'sf 2 threads ms', 'GFLOP/s', 'sf 1 / 2 threads', 'ORT numThreads 2 ms', `ORT default (${infoDefault.threads ?? '?'}) ms`, 'ORT 2 / sf 2', 'ORT default / sf 2', 'rounds'], rows)
    + `\n\nThe same runs' ${ordinal(REPEAT)} forward (each run: ${REPEAT} forwards back to back after the ${SETTLE_MS} ms pause; the table above has the first's times):\n\n`
    + table(['N', 'sf 1 thread ms', 'sf 2 threads ms', 'sf 1 / 2 threads', 'ORT numThreads 2 ms', `ORT default (${infoDefault.threads ?? '?'}) ms`, 'ORT 2 / sf 2', 'ORT default / sf 2'], lastRows)
    + `\n\nThe 2-layer encoder of the one-thread rows (d 64, 4 heads, ff 256). ORT in worker threads of the same process, timed inside them; numThreads in effect: ${info2.threads}${info2.note ? ` (${info2.note})` : ''} and ${infoDefault.threads ?? 'its default'}${infoDefault.note ? ` (${infoDefault.note})` : ''}. sensorformer's 2-thread output is bit-identical to its 1-thread output at every N (checked before timing). Load average at the end: ${os.loadavg()[0].toFixed(1)} (1 min) on ${os.availableParallelism()} cores: the ratios of threaded variants need free cores.`;
}
