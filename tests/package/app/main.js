// A consumer page: the package as installed from its npm tarball, bundled by Vite with no plugins
// or options. The test fills in the window below (window 2 of tests/fixtures/model/windows.json) and puts
// the weights at public/model.safetensors.
import { loadModel, loadModelInWorker } from 'sensorformer';

const WINDOW = __WINDOW__;

function show(id, text) {
  const pre = document.createElement('pre');
  pre.id = id;
  pre.textContent = text;
  document.body.append(pre);
}

async function main() {
  const status = document.getElementById('status');
  try {
    const model = await loadModel('model.safetensors');  // a relative string: a URL relative to the page
    const t0 = performance.now();
    const r = model.forward(WINDOW);
    const ms = performance.now() - t0;
    model.dispose();
    // The same model in a Web Worker (bundled by Vite from new Worker(new URL(...), { type: 'module' })).
    const worker = await loadModelInWorker('/model.safetensors');
    const w = await worker.forward(WINDOW);
    await worker.dispose();
    status.textContent = `forward: ${r.dims[0]} tokens x ${r.dims[1]} in ${ms.toFixed(2)} ms (${r.tokens.modality.join(', ')}); worker too`;
    show('result', JSON.stringify({ pooled: Array.from(r.pooled), workerPooled: Array.from(w.pooled), dims: r.dims, head: r.head && Array.from(r.head) }));
  } catch (e) {
    status.textContent = 'failed';
    show('error', JSON.stringify({ name: e?.name, code: e?.code ?? null, message: String(e?.message ?? e) }));
  }
}

main();
