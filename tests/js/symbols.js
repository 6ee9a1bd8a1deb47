// Emscripten's symbol map (--emit-symbol-map; CMakeLists.txt moves it to build/wasm/*.symbols):
// one `index:name` line per function (imports first), with characters outside [A-Za-z0-9_:]
// written as \xx hex ("\28" is "("). Read by the SIMD check (simd.test.js) and the forward
// profiler (bench/profile_forward.mjs).
import { readFileSync } from 'node:fs';

/** Function index -> name, from a symbol map file. */
export function readSymbolMap(file) {
  const names = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\d+):(.*)$/.exec(line);
    if (m) names.set(Number(m[1]), m[2].replace(/\\([0-9a-f]{2})/gi, (_, h) => String.fromCharCode(parseInt(h, 16))));
  }
  return names;
}
