// The shipped .wasm really holds SIMD code in the attention kernel: disassemble it with wabt's
// wasm-objdump (function names survive through --profiling-funcs) and count v128 instructions
// inside sf::kernels::attention_head.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const wasm = fileURLToPath(new URL('../../web/dist/sensorformer-core.wasm', import.meta.url));

function simdOpsPerFunction() {
  const text = execFileSync('wasm-objdump', ['-d', wasm], { encoding: 'utf8', maxBuffer: 256 << 20 });
  const counts = new Map();
  let fn = null;
  for (const line of text.split('\n')) {
    const m = /^[0-9a-f]+ func\[\d+\] <(.*)>:$/.exec(line);
    if (m) { fn = m[1]; counts.set(fn, { simd: 0, f32x4: 0 }); continue; }
    if (!fn) continue;
    if (/\b(v128|f32x4|i32x4|f64x2)\./.test(line)) counts.get(fn).simd++;
    if (/\bf32x4\.(add|mul|max|sub)\b/.test(line)) counts.get(fn).f32x4++;
  }
  return counts;
}

test('attention kernel in the shipped module uses v128 / f32x4 instructions', () => {
  const counts = simdOpsPerFunction();
  const pick = (prefix) => [...counts].find(([name]) => name.startsWith(prefix))?.[1];
  const head = pick('sf::kernels::attention_head(');
  assert.ok(head, 'sf::kernels::attention_head not found in the disassembly (names stripped?)');
  console.log(`attention_head: ${head.simd} v128-family instructions, ${head.f32x4} f32x4 arithmetic`);
  // online softmax + vectorized exp + P.V accumulation: dozens of f32x4 ops, not a stray one
  assert.ok(head.f32x4 >= 20, `only ${head.f32x4} f32x4 arithmetic ops in attention_head`);
  const gemm = pick('sf::kernels::gemm_nt(');
  assert.ok(gemm && gemm.f32x4 >= 4, 'gemm_nt (projections, Q.K^T) is not vectorized');
});
