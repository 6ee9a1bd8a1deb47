// The C++ kernels timed by bench/kernels.cpp (sensorformer_bench), built three ways: WebAssembly
// (build/wasm, run under Node), native SSE4.1 only (build/bench-sse41, -DSF_NATIVE_ARCH=OFF: the
// same 128-bit instruction set the WebAssembly build maps to) and native -march=native
// (build/native). Each build folder is configured and the target built, incrementally (a folder
// copied from another checkout is removed first and configured afresh: tools/build-dir.sh). The three
// binaries run in alternation (wasm, sse4.1, native, wasm, ...) and each kernel's median over the
// passes is kept; each pass itself reports medians of interleaved repetitions.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, table } from './lib.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * tools/build-dir.sh's guard, as tools/build.sh runs it: a build folder configured for another
 * checkout (a copied build/, a moved checkout) makes CMake refuse to configure, so it is removed,
 * with a one-line note on stderr, and configured afresh. `dir` is relative to the repository.
 */
export function resetForeignBuildDir(dir) {
  execFileSync('bash', ['-c', 'source tools/build-dir.sh && reset_foreign_build_dir "$1"', 'reset_foreign_build_dir', dir],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

// `run`: execFileSync's signature; tests/js/bench-native.test.js records the calls.
export function build(dir, configure, log, run = execFileSync) {
  const env = { ...process.env, NODE_PATH: ['/usr/share/nodejs', process.env.NODE_PATH].filter(Boolean).join(':') };
  resetForeignBuildDir(dir);
  // Configured every time (a second or two when up to date): a folder configured before the
  // bench target existed has no rule for it until CMake runs again.
  log(`configuring ${dir}`);
  run(configure[0], configure.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  log(`building ${dir} sensorformer_bench`);
  run('cmake', ['--build', dir, '--target', 'sensorformer_bench', '-j2'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
}

// goal(what, measured, met): records issue 10's kernel goals (bench/peers.mjs prints them).
export async function runNative({ quick, log, goal = () => {} }) {
  const builds = [
    { key: 'wasm', dir: 'build/wasm', configure: ['emcmake', 'cmake', '-S', '.', '-B', 'build/wasm', '-DCMAKE_BUILD_TYPE=Release'], cmd: ['node', '--no-experimental-fetch', 'build/wasm/sensorformer_bench.js'] },
    { key: 'sse41', dir: 'build/bench-sse41', configure: ['cmake', '-S', '.', '-B', 'build/bench-sse41', '-DCMAKE_BUILD_TYPE=Release', '-DSF_NATIVE_ARCH=OFF', '-DSF_BUILD_TESTS=OFF'], cmd: ['build/bench-sse41/sensorformer_bench'] },
    { key: 'native', dir: 'build/native', configure: ['cmake', '-S', '.', '-B', 'build/native', '-DCMAKE_BUILD_TYPE=Release'], cmd: ['build/native/sensorformer_bench'] },
  ];
  for (const b of builds) build(b.dir, b.configure, log);
  // Many short passes rather than a few long ones: the machine is shared, and a load change during
  // one build's pass would otherwise land on that build alone.
  const passes = quick ? 1 : 7, rounds = quick ? 3 : 2;
  const gflops = {};  // kernel -> build -> [GFLOP/s per pass]
  const order = [];
  for (let p = 0; p < passes; p++) {
    for (const b of builds) {
      log(`native pass ${p + 1}/${passes}: ${b.key}`);
      const r = spawnSync(b.cmd[0], [...b.cmd.slice(1), ...(quick ? ['--quick'] : []), '--rounds', String(rounds)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24 });
      if (r.status !== 0) throw new Error(`${b.cmd.join(' ')} failed (${r.status}): ${r.stderr}`);
      for (const line of r.stdout.split('\n')) {
        if (!line.startsWith('{')) continue;
        const { kernel, gflops: g } = JSON.parse(line);
        if (!gflops[kernel]) { gflops[kernel] = {}; order.push(kernel); }
        (gflops[kernel][b.key] ??= []).push(g);
      }
    }
  }
  const med = (k, b) => (gflops[k][b] ? median(gflops[k][b]) : null);
  const g = (v) => (v == null ? '–' : v.toFixed(v >= 10 ? 1 : 2));
  for (const k of order) {
    const w = med(k, 'wasm'), s = med(k, 'sse41');
    if (w && s) goal(`${k}: native SSE4.1 / wasm <= 1.2`, (s / w).toFixed(2), s / w <= 1.2);
    const dh = /^attention_head Dh (\d+)/.exec(k)?.[1];
    const floor = { 16: 20, 64: 25 }[dh];
    if (floor && w) goal(`${k}: wasm >= ${floor} GFLOP/s`, w.toFixed(1), w >= floor);
  }
  return table(['kernel', 'wasm GFLOP/s', 'native SSE4.1 GFLOP/s', 'native -march=native GFLOP/s', 'SSE4.1 / wasm (goal <= 1.2)', 'native / wasm'],
    order.map((k) => {
      const w = med(k, 'wasm'), s = med(k, 'sse41'), n = med(k, 'native');
      return [k, g(w), g(s), g(n), w && s ? `**${(s / w).toFixed(2)}**` : '–', w && n ? (n / w).toFixed(2) : '–'];
    })) + `\n\n${passes} alternated pass${passes > 1 ? 'es' : ''} of each build (wasm, SSE4.1, native, wasm, ...), median GFLOP/s per kernel over the passes (each pass: the median of ${rounds} interleaved rounds). GELU, layer norm: "GFLOP/s" counts elements x 1e-9 per second (Gelem/s).`;
}
