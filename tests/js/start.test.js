// `npm start`'s build step (tools/build.sh --demo) and the build folders' guard (tools/build-dir.sh):
// what is configured, compiled and linked, seen through PATH stubs that record every cmake,
// emcmake and compiler call before handing it to the real tool.
//
// The decisions are checked on a miniature CMake project (a temporary folder with this repo's
// tools/build.sh, build-dir.sh, setup.sh and sanitize.sh, and a CMakeLists.txt with the same target
// names and options as the real one, its "wasm" configured natively by a pass-through emcmake), so
// that a stale source, a deleted web/dist or a copied build/ costs a second, not a WebAssembly
// build. The last test runs the real `npm start` on this tree: its build step must compile nothing
// on a built tree, and the server must answer.
//
//   node --test tests/js/start.test.js
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync,
  rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// The miniature's builds are a few trivial files each; only a broken script comes near this.
const STEP_TIMEOUT_MS = 180_000;
// The real `npm start`: a second on a built tree; the first call below builds the core if a source
// changed since the last build (minutes on a loaded 2-core machine), so the deadline is generous.
const REAL_BUILD_TIMEOUT_MS = 900_000;
const SERVER_DEADLINE_MS = 60_000;

// Resolved: CMake records physical paths, and the notes below quote them.
const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'sf-start-')));
const stubs = path.join(tmp, 'stubs');
const callLog = path.join(tmp, 'calls.log');

function which(name) {
  return execFileSync('bash', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
}

// A stub per tool: records its name and arguments (one line per call), then runs `then`.
function stub(name, then) {
  const file = path.join(stubs, name);
  writeFileSync(file, `#!/usr/bin/env bash\nprintf '%s\\n' "${name} $*" >> '${callLog}'\n${then}\n`);
  chmodSync(file, 0o755);
}

const calls = () => { try { return readFileSync(callLog, 'utf8').split('\n').filter(Boolean); } catch { return []; } };
const clearCalls = () => writeFileSync(callLog, '');
// Sources compiled (CMake's own compiler checks during a configure step left out).
const compiled = (log) => log.filter((l) => l.startsWith('c++ ') && / -c /.test(l)).map((l) => / -c (\S+)/.exec(l)[1])
  .filter((f) => f.startsWith(tmp)).sort();
// Outputs linked (CMake's compiler probes, cmTC_*, and `c++ --version` left out).
const linked = (log) => log.filter((l) => l.startsWith('c++ ') && !/ -c /.test(l)).map((l) => / -o (\S+)/.exec(l)?.[1])
  .filter((o) => o && !/cmTC_/.test(o)).sort();
const configures = (log) => log.filter((l) => / -S /.test(l));

// The real CMakeLists.txt's target names and the options the scripts set; a "core" object, the
// "bindings" linked into web/dist, the tests. SF_SANITIZE adds the fuzz targets tools/sanitize.sh builds.
const MINI_CMAKE = `cmake_minimum_required(VERSION 3.20)
project(mini LANGUAGES CXX)
option(SF_BUILD_TESTS "" ON)
option(SF_WERROR "" OFF)
option(SF_SANITIZE "" OFF)
add_library(sensorformer_core STATIC src/core.cpp)
target_include_directories(sensorformer_core PUBLIC src)
add_executable(sensorformer_wasm bindings/glue.cpp)
target_link_libraries(sensorformer_wasm PRIVATE sensorformer_core)
set_target_properties(sensorformer_wasm PROPERTIES OUTPUT_NAME sensorformer-core
  RUNTIME_OUTPUT_DIRECTORY \${CMAKE_SOURCE_DIR}/web/dist)
# As the real one does: the linker does not create a deleted web/dist.
add_custom_command(TARGET sensorformer_wasm PRE_LINK COMMAND \${CMAKE_COMMAND} -E make_directory \${CMAKE_SOURCE_DIR}/web/dist)
# The threaded twin (the real one links a pthreads build of the core).
add_executable(sensorformer_wasm_mt bindings/glue.cpp)
target_link_libraries(sensorformer_wasm_mt PRIVATE sensorformer_core)
set_target_properties(sensorformer_wasm_mt PROPERTIES OUTPUT_NAME sensorformer-core-mt
  RUNTIME_OUTPUT_DIRECTORY \${CMAKE_SOURCE_DIR}/web/dist)
add_custom_command(TARGET sensorformer_wasm_mt PRE_LINK COMMAND \${CMAKE_COMMAND} -E make_directory \${CMAKE_SOURCE_DIR}/web/dist)
if(SF_BUILD_TESTS)
  add_executable(sensorformer_tests tests/cpp/t.cpp)
  target_link_libraries(sensorformer_tests PRIVATE sensorformer_core)
endif()
if(SF_SANITIZE)
  foreach(t fuzz_model_file fuzz_window fuzz_stream)
    add_executable(\${t} tests/cpp/t.cpp)
    target_link_libraries(\${t} PRIVATE sensorformer_core)
  endforeach()
endif()
`;

function makeTree(dir) {
  for (const d of ['tools', 'src', 'bindings', 'tests/cpp']) mkdirSync(path.join(dir, d), { recursive: true });
  for (const f of ['build.sh', 'build-dir.sh', 'setup.sh', 'sanitize.sh', 'patch-mt-glue.mjs']) copyFileSync(path.join(repo, 'tools', f), path.join(dir, 'tools', f));
  writeFileSync(path.join(dir, 'CMakeLists.txt'), MINI_CMAKE);
  writeFileSync(path.join(dir, 'src/core.hpp'), 'int core();\n');
  writeFileSync(path.join(dir, 'src/core.cpp'), '#include "core.hpp"\nint core() { return 1; }\n');
  writeFileSync(path.join(dir, 'bindings/glue.cpp'), '#include "core.hpp"\nint main() { return core() - 1; }\n');
  writeFileSync(path.join(dir, 'tests/cpp/t.cpp'), '#include "core.hpp"\nint main() { return core() - 1; }\n');
  // setup.sh checks node_modules; the repo's own keeps it from running `npm ci` here.
  symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

// Every file of a tree `seconds` from now (negative: in the past), so that a test sets the order.
function setTimes(dir, seconds) {
  const t = new Date(Date.now() + seconds * 1000);
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const p = path.join(e.parentPath ?? e.path, e.name);
    if (e.isFile()) utimesSync(p, t, t);
  }
}

const env = () => ({ ...process.env, PATH: `${stubs}:${process.env.PATH}`, CXX: path.join(stubs, 'c++') });

// Runs a tools/ script of a tree; returns { status, stdout, stderr, calls } with this run's calls only.
function run(dir, script, ...args) {
  clearCalls();
  const r = spawnSync('bash', [path.join(dir, 'tools', script), ...args], { cwd: dir, env: env(), encoding: 'utf8', timeout: STEP_TIMEOUT_MS });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, calls: calls() };
}

function ok(r) {
  assert.equal(r.status, 0, `exit ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r;
}

const mini = path.join(tmp, 'mini');
const dist = path.join(mini, 'web/dist/sensorformer-core');
const distMt = `${dist}-mt`;
// The five files of web/dist the demo serves (the single-thread module and the threaded one).
const DIST_FILES = ['sensorformer-core.js', 'sensorformer-core.wasm', 'sensorformer-core-mt.js', 'sensorformer-core-mt.wasm', 'sensorformer-core-mt.worker.js'];

before(() => {
  mkdirSync(stubs);
  const cmake = which('cmake');
  stub('cmake', `exec ${cmake} "$@"`);
  // The real emcmake adds Emscripten's toolchain file to the cmake command it is given; running
  // that command as is configures the miniature natively, which is what these tests need (the
  // scripts' calls, not emcc's output). It calls the real cmake, so the call is recorded once.
  stub('emcmake', `[ "$1" = cmake ] || exit 64\nshift\nexec ${cmake} "$@"`);
  stub('c++', `exec ${which('g++')} "$@"`);
  makeTree(mini);
});

after(() => rmSync(tmp, { recursive: true, force: true }));

test('npm start on a fresh tree: configures build/wasm once without the tests and builds only the core and its module', () => {
  const r = ok(run(mini, 'build.sh', '--demo'));
  const conf = configures(r.calls);
  assert.equal(conf.length, 1, r.calls.join('\n'));
  assert.match(conf[0], /^emcmake cmake -S \. -B build\/wasm .*-DSF_BUILD_TESTS=OFF/);
  assert.deepEqual(compiled(r.calls), ['bindings/glue.cpp', 'bindings/glue.cpp', 'src/core.cpp'].map((f) => path.join(mini, f)).sort());
  assert.deepEqual(linked(r.calls).map((f) => path.resolve(mini, 'build/wasm', f)).sort(), [dist, distMt]);
  assert.ok(statSync(dist).isFile());
  assert.throws(() => statSync(path.join(mini, 'build/native')), { code: 'ENOENT' }, 'no native build for the demo');
});

test('npm start on a built tree: no configure step, one build of the core target, and no compiler runs', () => {
  const before = statSync(dist).mtimeMs;
  const r = ok(run(mini, 'build.sh', '--demo'));
  assert.deepEqual(r.calls.filter((l) => !l.startsWith('c++ ')).map((l) => l.replace(/-j\d+/, '-jN')),
    ['cmake --build build/wasm -jN --target sensorformer_wasm sensorformer_wasm_mt']);
  assert.deepEqual(r.calls.filter((l) => l.startsWith('c++ ')), [], 'a built tree compiles and links nothing');
  assert.equal(statSync(dist).mtimeMs, before);
  assert.match(r.stdout, /up to date/);
});

test('npm start after a source changed: that file is compiled and the module relinked, nothing else', () => {
  appendFileSync(path.join(mini, 'src/core.cpp'), '// changed\n');
  const r = ok(run(mini, 'build.sh', '--demo'));
  assert.deepEqual(configures(r.calls), []);
  assert.deepEqual(compiled(r.calls), [path.join(mini, 'src/core.cpp')]);
  assert.deepEqual(linked(r.calls).map((f) => path.resolve(mini, 'build/wasm', f)).sort(), [dist, distMt]);
});

test('npm start after a header changed: every file that includes it is compiled again', () => {
  appendFileSync(path.join(mini, 'src/core.hpp'), '// changed\n');
  const r = ok(run(mini, 'build.sh', '--demo'));
  assert.deepEqual(compiled(r.calls), ['bindings/glue.cpp', 'bindings/glue.cpp', 'src/core.cpp'].map((f) => path.join(mini, f)).sort());
});

test('npm start with web/dist deleted: the module is linked again from the built objects', () => {
  rmSync(path.join(mini, 'web/dist'), { recursive: true });
  const r = ok(run(mini, 'build.sh', '--demo'));
  assert.deepEqual(compiled(r.calls), []);
  assert.deepEqual(linked(r.calls).map((f) => path.resolve(mini, 'build/wasm', f)).sort(), [dist, distMt]);
  assert.ok(statSync(dist).isFile());
});

test('npm start after CMakeLists.txt changed: make re-runs the configure step by itself', () => {
  appendFileSync(path.join(mini, 'CMakeLists.txt'), '# changed\n');
  const r = ok(run(mini, 'build.sh', '--demo'));
  assert.deepEqual(configures(r.calls), [], 'the script does not configure an existing build folder');
  assert.match(r.stdout, /Configuring done/);
});

test('npm run build after npm start: both configurations with the GoogleTest suite, SF_WERROR passed through', () => {
  clearCalls();
  const r = spawnSync('bash', [path.join(mini, 'tools/build.sh')], { cwd: mini, env: { ...env(), SF_WERROR: 'ON' }, encoding: 'utf8', timeout: STEP_TIMEOUT_MS });
  ok({ ...r });
  const log = calls();
  const conf = configures(log);
  assert.equal(conf.length, 2, log.join('\n'));
  assert.match(conf[0], /^cmake -S \. -B build\/native .*-DSF_BUILD_TESTS=ON.* -DSF_WERROR=ON/);
  assert.match(conf[1], /^emcmake cmake -S \. -B build\/wasm .*-DSF_BUILD_TESTS=ON.* -DSF_WERROR=ON/);
  const tests = compiled(log).filter((f) => f.endsWith('tests/cpp/t.cpp'));
  assert.equal(tests.length, 2, 'the tests are compiled in build/native and in build/wasm');
  assert.match(readFileSync(path.join(mini, 'build/wasm/CMakeCache.txt'), 'utf8'), /^SF_BUILD_TESTS:BOOL=ON$/m);
});

test('a build/ copied from another checkout: each build folder is removed with a one-line note and configured afresh', () => {
  const copy = path.join(tmp, 'copy');
  cpSync(mini, copy, { recursive: true, verbatimSymlinks: true });
  // tools/sanitize.sh's folder too, as a cache written elsewhere (sanitize.sh needs clang; only
  // the configure step and the build are run, --build-only).
  mkdirSync(path.join(copy, 'build/sanitize'), { recursive: true });
  writeFileSync(path.join(copy, 'build/sanitize/CMakeCache.txt'),
    `CMAKE_CACHEFILE_DIR:INTERNAL=/elsewhere/build/sanitize\nCMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere\n`);

  const full = ok(run(copy, 'build.sh'));
  const notes = full.stderr.split('\n').filter((l) => /configuring afresh/.test(l));
  assert.deepEqual(notes, [
    `build/native: configured for ${mini} (not ${copy}); removing it and configuring afresh`,
    `build/wasm: configured for ${mini} (not ${copy}); removing it and configuring afresh`,
  ]);
  assert.ok(statSync(path.join(copy, 'web/dist/sensorformer-core')).isFile());
  assert.match(readFileSync(path.join(copy, 'build/native/CMakeCache.txt'), 'utf8'), new RegExp(`^CMAKE_HOME_DIRECTORY:INTERNAL=${copy}$`, 'm'));

  const san = ok(run(copy, 'sanitize.sh', '--build-only'));
  assert.match(san.stderr, /^build\/sanitize: configured for \/elsewhere \(not .*\); removing it and configuring afresh$/m);

  // The copied tree's build/wasm again, for `npm start`, with a source newer than web/dist.
  rmSync(path.join(copy, 'build/wasm'), { recursive: true });
  cpSync(path.join(mini, 'build/wasm'), path.join(copy, 'build/wasm'), { recursive: true });
  setTimes(copy, -60);
  utimesSync(path.join(copy, 'src/core.cpp'), new Date(), new Date());
  const demo = ok(run(copy, 'build.sh', '--demo'));
  assert.match(demo.stderr, /^build\/wasm: configured for .* removing it and configuring afresh$/m);
  assert.equal(configures(demo.calls).length, 1);
  assert.deepEqual(compiled(demo.calls), ['bindings/glue.cpp', 'bindings/glue.cpp', 'src/core.cpp'].map((f) => path.join(copy, f)).sort());
});

test('npm start with a built web/dist and no build folder: used as it is while it is newer than every source', () => {
  const copy = path.join(tmp, 'copy');
  rmSync(path.join(copy, 'build'), { recursive: true });
  setTimes(copy, -60);
  const now = new Date();
  for (const f of DIST_FILES) {
    writeFileSync(path.join(copy, 'web/dist', f), 'built elsewhere');
    utimesSync(path.join(copy, 'web/dist', f), now, now);
  }
  const fresh = ok(run(copy, 'build.sh', '--demo'));
  assert.deepEqual(fresh.calls, [], 'nothing configured, built or compiled');
  assert.match(fresh.stdout, /used as they are/);

  // One input newer than one of the files: configured and built.
  utimesSync(path.join(copy, 'web/dist/sensorformer-core.js'), new Date(now - 30_000), new Date(now - 30_000));
  utimesSync(path.join(copy, 'CMakeLists.txt'), new Date(now - 10_000), new Date(now - 10_000));
  const stale = ok(run(copy, 'build.sh', '--demo'));
  assert.equal(configures(stale.calls).length, 1);
  assert.deepEqual(compiled(stale.calls), ['bindings/glue.cpp', 'bindings/glue.cpp', 'src/core.cpp'].map((f) => path.join(copy, f)).sort());
});

test('the same checkout reached through a symbolic link keeps its build folders', () => {
  const link = path.join(tmp, 'link');
  symlinkSync(mini, link);
  const r = ok(run(link, 'build.sh', '--demo'));
  assert.doesNotMatch(r.stderr, /configuring afresh/);
  assert.deepEqual(configures(r.calls), []);
  assert.deepEqual(r.calls.filter((l) => l.startsWith('c++ ')), []);
});

test('npm start on this tree: its build step configures and compiles nothing once built, then the demo is served', async () => {
  // Brings this tree's web/dist up to date first (a no-op when `npm test` has just built it), so
  // that the run below shows what `npm start` does on a built tree.
  const first = spawnSync('bash', ['tools/build.sh', '--demo'], { cwd: repo, encoding: 'utf8', timeout: REAL_BUILD_TIMEOUT_MS });
  assert.equal(first.status, 0, `${first.stdout}\n${first.stderr}`);
  const wasm = path.join(repo, 'web/dist/sensorformer-core.wasm');
  const wasmBefore = statSync(wasm).mtimeMs;

  clearCalls();
  const child = spawn('npm', ['start'], { cwd: repo, env: { ...process.env, PATH: `${stubs}:${process.env.PATH}`, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  try {
    const port = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL within ${SERVER_DEADLINE_MS} ms:\n${out}`)), SERVER_DEADLINE_MS);
      child.stdout.on('data', () => {
        const m = /http:\/\/localhost:(\d+)\//.exec(out);
        if (m) { clearTimeout(timer); resolve(Number(m[1])); }
      });
      child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`npm start exited (${code}):\n${out}`)); });
    });
    const get = (p) => new Promise((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path: p }, (res) => { res.resume(); res.on('end', () => resolve(res)); }).on('error', reject);
    });
    assert.equal((await get('/')).statusCode, 200);
    for (const f of ['sensorformer-core.wasm', 'sensorformer-core-mt.wasm']) {
      const w = await get(`/web/dist/${f}`);
      assert.equal(w.statusCode, 200, f);
      assert.equal(w.headers['content-type'], 'application/wasm', f);
    }
  } finally {
    // npm, its shell and the server share the group the spawn made (detached).
    const exited = new Promise((resolve) => { if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.on('exit', resolve); });
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    await exited;
  }
  const log = calls();
  assert.deepEqual(log.map((l) => l.replace(/-j\d+/, '-jN')), ['cmake --build build/wasm -jN --target sensorformer_wasm sensorformer_wasm_mt'],
    'npm start runs no configure step, no native build and no emcmake on a built tree');
  assert.doesNotMatch(out, /Building CXX|Linking CXX/, 'no compiler runs on a built tree');
  assert.equal(statSync(wasm).mtimeMs, wasmBefore);
});
