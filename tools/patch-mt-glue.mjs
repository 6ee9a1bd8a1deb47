#!/usr/bin/env node
// Makes the threaded module's Emscripten 3.1.6 glue (an ES module) and its pthread worker script
// run under Node as ES modules; run by CMake after each link of sensorformer_wasm_mt.
//   node tools/patch-mt-glue.mjs <sensorformer-core-mt.js> <sensorformer-core-mt.worker.js>
//
// Why: this Emscripten writes CommonJS for Node (require, __dirname, __filename) even in an
// EXPORT_ES6 module, and the package's "type": "module" makes Node load the worker script as an
// ES module too, where those names do not exist. Later Emscripten releases emit the same fix
// (createRequire); here:
// - require("x") -> process.getBuiltinModule("x") (Node >= 20.16; the loader uses this build in
//   Node only when process.getBuiltinModule exists, else the single-thread build);
// - __dirname, __filename -> "" (they only seed a default file location, unused: the loader hands
//   the glue its compiled module, and the worker script is found from import.meta.url);
// - the glue's global.Worker = worker_threads.Worker becomes a property of the module object, so
//   loading the threaded core leaves the user's globalThis as it was.
// Each replacement must match exactly as often as expected: a different Emscripten fails the
// build here instead of shipping a half-patched glue. Browsers never take these code paths (they
// are behind ENVIRONMENT_IS_NODE).
import { readFileSync, writeFileSync } from 'node:fs';

const [gluePath, workerPath] = process.argv.slice(2);
if (!gluePath || !workerPath) {
  console.error('usage: node tools/patch-mt-glue.mjs <glue.js> <worker.js>');
  process.exit(2);
}
const MARK = '// Patched for Node ES modules by tools/patch-mt-glue.mjs.\n';
// Put at the top of the worker script (it says why it is as long as it is).
const WORKER_HEADER = `// sensorformer's pthread worker script (Emscripten 3.1.6's worker.js for the threaded build,
// web/dist/sensorformer-core-mt.worker.js). Each Worker of the pool the threaded module starts at
// load runs this file: on {cmd: 'load'} it receives the compiled WebAssembly module and the shared
// memory, imports the glue (sensorformer-core-mt.js, by the URL the main thread sends) and
// instantiates the module on that memory; on {cmd: 'run'} it runs a pthread's start routine (one
// of the helper threads of src/core/parallel.cpp, which then waits for the forward's steps); the
// other commands serve Emscripten's proxying and cancellation. Nothing here is called by the
// package directly: web/src/loader.js names this file to the glue (locateFile), and the glue
// starts the Workers.
//
// Why this header is this long: it keeps the file above 4 KiB. Bundlers inline smaller assets as
// data: URLs (Vite's build.assetsInlineLimit is 4096 bytes by default), and a Worker started from a
// data: URL has an opaque origin, from which the glue of a cross-origin-isolated page cannot be
// imported (a Content-Security-Policy with worker-src 'self' refuses such a Worker outright). The
// loader also refuses threads if it finds this file's URL turned into a data: URL anyway.
`;

function patch(path, rules, header = '') {
  let text = readFileSync(path, 'utf8');
  if (text.startsWith(MARK)) return;  // already patched (a re-run without a relink)
  for (const [from, to, count] of rules) {
    const found = text.split(from).length - 1;
    if (found !== count) {
      console.error(`patch-mt-glue: ${path}: expected ${count} of ${JSON.stringify(from)}, found ${found} (another Emscripten version?)`);
      process.exit(1);
    }
    text = text.split(from).join(to);
  }
  const left = text.match(/\brequire\(|__dirname|__filename/);
  if (left) {
    console.error(`patch-mt-glue: ${path}: ${left[0]} left after patching`);
    process.exit(1);
  }
  writeFileSync(path, MARK + header + text);
}

patch(gluePath, [
  ['require("fs")', 'process.getBuiltinModule("fs")', 1],
  ['require("path")', 'process.getBuiltinModule("path")', 2],
  ['require("perf_hooks")', 'process.getBuiltinModule("perf_hooks")', 1],
  ['require("worker_threads")', 'process.getBuiltinModule("worker_threads")', 1],
  ['scriptDirectory=__dirname+"/"', 'scriptDirectory=""', 1],
  ['global.Worker=nodeWorkerThreads.Worker', 'Module.sfNodeWorker=nodeWorkerThreads.Worker', 1],
  ['new Worker(', 'new(Module.sfNodeWorker||Worker)(', 2],
]);
patch(workerPath, [
  ['require("worker_threads")', 'process.getBuiltinModule("worker_threads")', 1],
  ['require("fs")', 'process.getBuiltinModule("fs")', 1],
  ['require:require,', '', 1],
  ['href:__filename', 'href:""', 1],
], WORKER_HEADER);
if (readFileSync(workerPath).length <= 4096) {
  console.error(`patch-mt-glue: ${workerPath} is ${readFileSync(workerPath).length} bytes; it must stay above 4096 (see WORKER_HEADER)`);
  process.exit(1);
}
