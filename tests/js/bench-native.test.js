// bench/native.mjs's build folders (build/wasm, build/bench-sse41, build/native) get
// tools/build-dir.sh's guard before CMake configures them: a folder whose CMakeCache.txt was
// written for another checkout is removed (CMake would refuse it), one configured here is kept.
// The configure and build commands are recorded, not run (`build`'s `run` argument), so this takes
// milliseconds; the guard itself is the real tools/build-dir.sh.
//
//   node --test tests/js/bench-native.test.js
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from '../../bench/native.mjs';

const repo = realpathSync(fileURLToPath(new URL('../..', import.meta.url)));
// Folders of their own under build/ (never one a real build uses), removed at the end.
const dirs = [];
const folder = (name) => {
  const dir = `build/test-bench-native-${process.pid}-${name}`;
  dirs.push(path.join(repo, dir));
  return dir;
};
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

// A CMakeCache.txt as CMake writes it: the source folder and the folder the cache was made in.
function configured(dir, { home, cachedir }) {
  mkdirSync(path.join(repo, dir, 'CMakeFiles'), { recursive: true });
  writeFileSync(path.join(repo, dir, 'CMakeCache.txt'),
    `# This is the CMakeCache file.\nCMAKE_CACHEFILE_DIR:INTERNAL=${cachedir}\nCMAKE_HOME_DIRECTORY:INTERNAL=${home}\n`);
  writeFileSync(path.join(repo, dir, 'CMakeFiles/marker'), 'a build product\n');
}

function recorder(dir) {
  const calls = [];
  const run = (cmd, args) => calls.push({ cmd: [cmd, ...args].join(' '), cacheThere: existsSync(path.join(repo, dir, 'CMakeCache.txt')) });
  return { calls, run };
}

test('a build folder copied from another checkout is removed before the bench configures it', () => {
  const dir = folder('copied');
  // As if build/ had been copied from /elsewhere/sensorformer: both paths name the other checkout.
  configured(dir, { home: '/elsewhere/sensorformer', cachedir: `/elsewhere/sensorformer/${dir}` });
  const { calls, run } = recorder(dir);
  build(dir, ['cmake', '-S', '.', '-B', dir, '-DCMAKE_BUILD_TYPE=Release'], () => {}, run);
  assert.deepEqual(calls.map((c) => c.cmd), [
    `cmake -S . -B ${dir} -DCMAKE_BUILD_TYPE=Release`,
    `cmake --build ${dir} --target sensorformer_bench -j2`,
  ]);
  assert.equal(calls[0].cacheThere, false, 'the foreign CMakeCache.txt was still there when CMake was asked to configure');
  assert.equal(existsSync(path.join(repo, dir, 'CMakeFiles/marker')), false, 'the other checkout\'s build products were kept');
});

test('a checkout that was moved (same source, cache made elsewhere) gets the same treatment', () => {
  const dir = folder('moved');
  configured(dir, { home: repo, cachedir: `/elsewhere/${dir}` });
  const { calls, run } = recorder(dir);
  build(dir, ['cmake', '-S', '.', '-B', dir], () => {}, run);
  assert.equal(calls[0].cacheThere, false);
});

test('a build folder configured in this checkout is kept (incremental builds stay incremental)', () => {
  const dir = folder('here');
  configured(dir, { home: repo, cachedir: path.join(repo, dir) });
  const { calls, run } = recorder(dir);
  build(dir, ['cmake', '-S', '.', '-B', dir], () => {}, run);
  assert.equal(calls[0].cacheThere, true);
  assert.equal(existsSync(path.join(repo, dir, 'CMakeFiles/marker')), true);
});
