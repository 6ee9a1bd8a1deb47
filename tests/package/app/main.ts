// A consumer page in TypeScript: the package as installed from its npm tarball, bundled by Vite
// with no plugins or options, type-checked by tsc --strict (package.test.js) with no cast and no
// `any`. It runs the model on the main thread and in a Worker, connects the simulated wearable
// through connectWearable, draws its ECG with drawTrace and an attention map with
// drawAttentionMap, and writes what the test compares into #result. The test fills in the window
// below (window 2 of tests/fixtures/model/windows.json) and puts the weights at
// public/model.safetensors.
import { loadModel, loadModelInWorker, SensorformerError, type AttentionMap, type SensorWindow, type Stream } from 'sensorformer';
import { connectWearable, DEFAULT_STREAMS, type Wearable } from 'sensorformer/ble';
import { createSimulatedBluetooth, createVirtualClock } from 'sensorformer/simulator';
import { cellAt, drawAttentionMap, drawTrace, viridis } from 'sensorformer/render';

const WINDOW: SensorWindow = __WINDOW__;
const SEED = 11;
const WINDOW_SECONDS = 8;
const COLOR_TOLERANCE = 1;  // per RGB channel: the canvas stores the colours viridis() gives, as bytes

function show(id: string, text: string): void {
  const pre = document.createElement('pre');
  pre.id = id;
  pre.textContent = text;
  document.body.append(pre);
}

function context(id: string, width: number, height: number, label: string): CanvasRenderingContext2D {
  const canvas = document.createElement('canvas');
  canvas.id = id;
  canvas.width = width;
  canvas.height = height;
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', label);
  document.body.append(canvas);
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('no 2D canvas context');
  return ctx;
}

interface WearableRun {
  window: SensorWindow;
  t0: number;
  t1: number;
  ecgSamples: number;
  deviceTimed: boolean;
  events: string[];
}

// The simulated chest strap on a virtual clock (deterministic), through the same device layer as a
// real one; the model's streams are those of the test model (ECG, HR, RR; no accelerometer).
async function simulatedWearable(): Promise<WearableRun> {
  const clock = createVirtualClock(1764468000);
  const bluetooth = createSimulatedBluetooth({ seed: SEED, clock, devices: ['strap'] });
  const events: string[] = [];
  let strap: Wearable | null = null;
  try {
    const pending = connectWearable({
      bluetooth,
      clock,
      streams: { ecg: DEFAULT_STREAMS.ecg, hr: DEFAULT_STREAMS.hr, rr: DEFAULT_STREAMS.rr },
      pmd: { ecg: true, acc: false },
    });
    await clock.advanceAsync(2);
    strap = await pending;
    strap.addEventListener('error', (e) => events.push(`error: ${e.detail.error.message}`));
    strap.addEventListener('disconnect', (e) => events.push(`disconnect at ${e.detail.time}`));
    strap.addEventListener('reconnect-failed', (e) => events.push(`reconnect attempt ${e.detail.attempt} failed: ${e.detail.error.message}`));
    let ecgSamples = 0;
    let deviceTimed = true;
    const reading = (async () => {
      if (!strap) return;
      for await (const batch of strap.samples('ecg')) {
        const values: Float32Array = batch.values;  // samples('ecg') is typed: no cast
        ecgSamples += values.length;
        deviceTimed &&= batch.deviceTimes.length === values.length;
      }
    })();
    await clock.advanceAsync(WINDOW_SECONDS + 2);
    const t1 = strap.now(), t0 = t1 - WINDOW_SECONDS;
    const window = strap.assembler.window({ end: t1, seconds: WINDOW_SECONDS });
    await strap.close();
    await reading;
    return { window, t0, t1, ecgSamples, deviceTimed, events };
  } finally {
    bluetooth.close();
  }
}

function presentCount(stream: Stream): number {
  let n = 0;
  for (const v of stream.samples) if (v !== null && !Number.isNaN(v)) n++;
  return n;
}

// The map with the most tokens, drawn; then every cell's centre pixel against viridis(weight / max).
// Each cell's pixels are found through cellAt (the package's own pointer-to-cell mapping), so the
// check assumes nothing about the layout (square or not, margins).
function drawAndCheckMap(maps: AttentionMap[]): { g: number; cell: number; checked: number; mismatches: number } {
  const map = maps.reduce((a, b) => (b.dims[1] > a.dims[1] ? b : a));
  const size = 420;
  const ctx = context('attention', size, size, `attention map, layer ${map.layer}, ${map.block} block`);
  const { layout, max, weights } = drawAttentionMap(ctx, map, { head: 0 });
  const pixels = ctx.getImageData(0, 0, size, size).data;
  const g = map.dims[1];
  const box = new Map<number, { x0: number; x1: number; y0: number; y1: number }>();  // q * g + k -> pixel extent
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const c = cellAt(layout, x + 0.5, y + 0.5);
      if (!c) continue;
      const i = c.query * g + c.key, b = box.get(i);
      if (b) { b.x0 = Math.min(b.x0, x); b.x1 = Math.max(b.x1, x); b.y0 = Math.min(b.y0, y); b.y1 = Math.max(b.y1, y); }
      else box.set(i, { x0: x, x1: x, y0: y, y1: y });
    }
  }
  let mismatches = 0, cell = Infinity;
  for (const [i, b] of box) {
    cell = Math.min(cell, b.x1 - b.x0 + 1, b.y1 - b.y0 + 1);
    const x = Math.floor((b.x0 + b.x1) / 2), y = Math.floor((b.y0 + b.y1) / 2);
    const expected = viridis(max > 0 ? weights[i] / max : 0);
    const at = 4 * (y * size + x);
    if (expected.some((c, k) => Math.abs(c - pixels[at + k]) > COLOR_TOLERANCE)) mismatches++;
  }
  return { g, cell, checked: box.size, mismatches };
}

async function main(): Promise<void> {
  const status = document.getElementById('status');
  if (!status) throw new Error('#status is missing');
  try {
    const model = await loadModel('model.safetensors');  // a relative string: a URL relative to the page
    const t0 = performance.now();
    const r = model.forward(WINDOW);
    const ms = performance.now() - t0;
    const threads = model.threads;  // > 1 on a cross-origin-isolated page (the threaded build)
    model.dispose();
    // The same model in a Web Worker (bundled by Vite from new Worker(new URL(...), { type: 'module' })).
    const worker = await loadModelInWorker('/model.safetensors');
    const w = await worker.forward(WINDOW);
    const workerThreads = worker.threads;

    const wearable = await simulatedWearable();
    const live = await worker.forward(wearable.window, { attention: true });
    await worker.dispose();

    const ecg = wearable.window.streams.find((s) => s.modality === 'ecg');
    if (!ecg) throw new Error('the simulated strap gave no ECG stream');
    const trace = drawTrace(context('trace', 720, 140, 'ECG of the simulated chest strap'), ecg, { t0: wearable.t0, t1: wearable.t1 });
    const map = drawAndCheckMap(live.attention ?? []);

    status.textContent = `forward: ${r.dims[0]} tokens x ${r.dims[1]} in ${ms.toFixed(2)} ms (${r.tokens.modality.join(', ')}); ` +
      `worker too; simulated strap: ${wearable.ecgSamples} ECG samples, ${live.dims[0]} tokens, map of ${map.g} tokens`;
    show('result', JSON.stringify({
      pooled: Array.from(r.pooled), workerPooled: Array.from(w.pooled), dims: r.dims, head: r.head && Array.from(r.head),
      isolated: globalThis.crossOriginIsolated, cores: navigator.hardwareConcurrency, threads, workerThreads,
      wearable: {
        window: wearable.window, ecgSamples: wearable.ecgSamples, deviceTimed: wearable.deviceTimed, events: wearable.events,
        pooled: Array.from(live.pooled), tokens: live.dims[0], ecgPresent: presentCount(ecg),
        trace: { points: trace.points, range: trace.range }, map,
      },
    }));
  } catch (e) {
    status.textContent = 'failed';
    const code = e instanceof SensorformerError ? e.code : null;
    show('error', JSON.stringify({ name: e instanceof Error ? e.name : typeof e, code, message: e instanceof Error ? e.message : String(e) }));
  }
}

void main();
