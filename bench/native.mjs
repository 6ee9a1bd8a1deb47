// The C++ kernels timed by bench/kernels.cpp (sensorformer_bench), built three ways: WebAssembly
// (build/wasm, run under Node), native SSE4.1 only (build/bench-sse41, -DSF_NATIVE_ARCH=OFF: the
// same 128-bit instruction set the WebAssembly build maps to) and native -march=native
// (build/native). Each build folder is configured and the target built, incrementally (a folder
// copied from another checkout is removed first and configured afresh: tools/build-dir.sh). The three
// binaries run in alternation (wasm, sse4.1, native, wasm, ...) and each kernel's median over the
// passes is kept; each pass itself reports medians of interleaved repetitions.
//
// Against the hardware (issue 22): every pass also measures the core's clock (the bench's first
// line, {"kernel": "clock", "ghz", "limit_gflops"}; bench/kernels.cpp, add_chain) and the GEMM,
// attention and probe rows get each build's GFLOP/s as a percentage of the 128-bit limit: its median
// GFLOP/s over the median of the limit its own passes measured (16 FLOP per cycle x clock). The probe
// (GEMM's inner loop alone) shows how much of the limit the core gave during the run.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

// What /proc/cpuinfo says the clock is ("cpu MHz" of the first core), or null off Linux: printed
// beside the measured clock, which it need not match (a VM reports the nominal clock; cores boost).
function cpuinfoMHz() {
  try {
    const m = /^cpu MHz\s*:\s*([\d.]+)/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// goal(what, measured, met): records issue 10's kernel goals and issue 22's GEMM >= 70 % of the
// 128-bit limit in WebAssembly (bench/peers.mjs prints them).
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
  const vsLimit = new Set();  // kernels the bench reports against the 128-bit limit (GEMM, attention, probe)
  const clock = {}, limit = {};  // build -> [GHz per pass], [128-bit limit in GFLOP/s per pass]
  for (let p = 0; p < passes; p++) {
    for (const b of builds) {
      log(`native pass ${p + 1}/${passes}: ${b.key}`);
      const r = spawnSync(b.cmd[0], [...b.cmd.slice(1), ...(quick ? ['--quick'] : []), '--rounds', String(rounds)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 24 });
      if (r.status !== 0) throw new Error(`${b.cmd.join(' ')} failed (${r.status}): ${r.stderr}`);
      for (const line of r.stdout.split('\n')) {
        if (!line.startsWith('{')) continue;
        const { kernel, gflops: g, ghz, limit_gflops: lim, limit_pct: limitPct } = JSON.parse(line);
        if (kernel === 'clock') {
          (clock[b.key] ??= []).push(ghz);
          (limit[b.key] ??= []).push(lim);
          continue;
        }
        if (!gflops[kernel]) { gflops[kernel] = {}; order.push(kernel); }
        (gflops[kernel][b.key] ??= []).push(g);
        if (limitPct != null) vsLimit.add(kernel);
      }
    }
  }
  const med = (k, b) => (gflops[k][b] ? median(gflops[k][b]) : null);
  const g = (v) => (v == null ? '–' : v.toFixed(v >= 10 ? 1 : 2));
  // Percentage of the build's own measured limit, for the kernels the bench marks (null otherwise).
  const pctOf = (k, b) => {
    const v = med(k, b);
    return vsLimit.has(k) && v && limit[b] ? (100 * v) / median(limit[b]) : null;
  };
  const fmtPct = (v) => (v == null ? '–' : `${v.toFixed(0)} %`);
  // The core's own measured 128-bit peak (independent multiplies and adds, 1:1, as in GEMM and
  // attention): per build, a kernel's GFLOP/s over it says how much of what this core can issue it
  // gets, where the limit above assumes Zen's ports.
  const PEAK = order.find((k) => k.startsWith('peak: 4-wide mul+add'));
  const pctOfPeak = (k, b) => {
    const v = med(k, b), p = PEAK && med(PEAK, b);
    return vsLimit.has(k) && !k.startsWith('peak') && v && p ? (100 * v) / p : null;
  };
  for (const k of order) {
    const w = med(k, 'wasm'), s = med(k, 'sse41');
    // The probe (GEMM's inner loop alone) and the peak rows (bench/kernels.cpp) are yardsticks for
    // the run, not kernels.
    if (k.startsWith('probe') || k.startsWith('peak')) continue;
    if (w && s) goal(`${k}: native SSE4.1 / wasm <= 1.2`, (s / w).toFixed(2), s / w <= 1.2);
    const dh = /^attention_head Dh (\d+)/.exec(k)?.[1];
    const floor = { 16: 20, 64: 25 }[dh];
    if (floor && w) goal(`${k}: wasm >= ${floor} GFLOP/s`, w.toFixed(1), w >= floor);
    const wp = pctOf(k, 'wasm');
    if (k.startsWith('gemm') && wp != null) goal(`${k}: wasm >= 70 % of the 128-bit limit`, fmtPct(wp), wp >= 70);
  }
  const clocks = builds.filter((b) => clock[b.key]).map((b) => `${b.key} ${median(clock[b.key]).toFixed(2)}`).join(', ');
  const mhz = cpuinfoMHz();
  return table(['kernel', 'wasm GFLOP/s', 'native SSE4.1 GFLOP/s', 'native -march=native GFLOP/s', 'SSE4.1 / wasm (goal <= 1.2)', 'native / wasm',
    'wasm % of 128-bit limit (GEMM goal >= 70)', 'SSE4.1 % of 128-bit limit', '-march=native % of 128-bit limit', 'wasm % of measured peak'],
    order.map((k) => {
      const w = med(k, 'wasm'), s = med(k, 'sse41'), n = med(k, 'native');
      const wp = pctOf(k, 'wasm');
      return [k, g(w), g(s), g(n), w && s ? `**${(s / w).toFixed(2)}**` : '–', w && n ? (n / w).toFixed(2) : '–',
        wp != null ? `**${fmtPct(wp)}**` : '–', fmtPct(pctOf(k, 'sse41')), fmtPct(pctOf(k, 'native')), fmtPct(pctOfPeak(k, 'wasm'))];
    })) + `\n\n${passes} alternated pass${passes > 1 ? 'es' : ''} of each build (wasm, SSE4.1, native, wasm, ...), median GFLOP/s per kernel over the passes (each pass: the median of ${rounds} interleaved rounds). GELU, layer norm: "GFLOP/s" counts elements x 1e-9 per second (Gelem/s).` +
    ` 128-bit limit: 16 FLOP per cycle (two 4-wide float multiplies and two 4-wide float adds; WebAssembly SIMD128 has no FMA) x the clock each build measured in its own passes (a chain of dependent integer adds, one per cycle), median GHz: ${clocks || '–'}` +
    `${mhz ? ` (/proc/cpuinfo: ${(mhz / 1000).toFixed(2)} GHz)` : ''}. -march=native uses wider vectors and FMA, so it can pass 100 %.` +
    ' The probe row is GEMM\'s 4 x 8 inner loop alone with its data in L1: the most this code got from the core during the run (on a shared machine, much less than the limit at times).' +
    ' The peak rows are independent 4-wide multiplies and adds with no loads: what this core issues (a Zen 4/5 core reaches 100 % of the limit with mul+add; a core with fewer float ports, less), and the last column is each kernel against the mul+add peak in WebAssembly.';
}
