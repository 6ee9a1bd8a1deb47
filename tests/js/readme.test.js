// The code in the docs runs: every fenced block in README.md, docs/*.md and demo/README.md that is
// meant to run is extracted and run here, against the package, so the docs cannot drift from the
// API. And every file the docs name exists.
//
// The convention (visible in the Markdown source, invisible on a rendered page): an HTML comment on
// the line right above the fence says what the block is.
//   <!-- test: node [files=...] -->        an ES module, run with Node
//   <!-- test: ts [files=...] -->          TypeScript: `tsc --strict` (the repo's typescript), then
//                                          the emitted JavaScript is run with Node
//   <!-- test: sh [files=...] [id=...] --> run with bash -euo pipefail (`npx sensorformer` included)
//   <!-- test: stdout -->                  above a ```text block right after a runnable block: what
//                                          that block prints, compared line by line, exactly (the
//                                          .wasm computes the same bits on every engine: no relaxed
//                                          SIMD; snippets print rounded numbers and counts, never
//                                          times of day)
//   <!-- test: browser [app=NAME] file=PATH -->
//                                          a file of one of the README's web-page apps (```html,
//                                          ```ts; app "main" by default): tests/package writes
//                                          each app into a fresh Vite project, type-checks,
//                                          builds and runs it in headless Chromium
//   <!-- test: skip (why) -->              not run, with the reason: a fragment, an install, a
//                                          job that takes minutes or needs PyTorch
// A js / ts / sh / python block without a marker fails this test, so a new snippet is either run
// or says why not. Blocks of other kinds (json, text, a tree) are not code and need none.
//
// Each runnable block runs in its own temp dir, as a package user's project: `import 'sensorformer'`
// resolves through node_modules/sensorformer (a symlink to this repo, so the package's exports map
// applies: a block cannot reach a file the package does not export), `npx sensorformer` through
// node_modules/.bin. `files=a:b,c` puts the repo's file b in the temp dir as a ("your model") and
// c under its own relative path. Nothing is fetched: npx runs offline.
//
// What a run must show: exit 0 (a snippet that hangs, like a `for await` that never ends, fails
// on the timeout), and then its printed output as the doc shows it (test: stdout) or, for a block
// with an id, the check registered for it below against an independent computation.
//
// Paths: every repo-relative path the docs mention (in backticks or a link) must exist, except
// generated outputs (build/, test-artifacts/, web/dist/ before a build). For package users, the
// reference docs README.md points to (docs/*.md) must be in the tarball (`npm pack --dry-run`); the
// other repo paths the README and docs name (sources, tests, tools that explain or prove a claim)
// are listed as a diagnostic, not a failure: they are pointers into the repository.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { loadModel } from '../../web/src/index.js';
import { parseBlocks } from './markdown.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const DOCS = ['README.md', ...readdirSync(join(repo, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'demo/README.md'];
const CODE = new Map([
  ['js', 'node'], ['javascript', 'node'], ['mjs', 'node'],
  ['ts', 'ts'], ['typescript', 'ts'],
  ['sh', 'sh'], ['bash', 'sh'], ['shell', 'sh'], ['console', 'sh'],
  ['python', 'python'], ['py', 'python'],
]);
// A snippet runs in a few seconds (the Bluetooth one streams ~6 s of simulated ECG in real time;
// npx alone takes ~1-3 s on a busy 2-core machine); a hang is caught well before node:test's own.
const BLOCK_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 3 * BLOCK_TIMEOUT_MS;  // tsc, then the run; npm pack --dry-run
const tmp = mkdtempSync(join(tmpdir(), 'sf-readme-'));
after(() => { if (!process.env.SENSORFORMER_KEEP_TMP) rmSync(tmp, { recursive: true, force: true }); });

const allBlocks = DOCS.flatMap((file) => parseBlocks(readFileSync(join(repo, file), 'utf8'), file));

function run(command, args, { cwd, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false', npm_config_fund: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: BLOCK_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

// A package user's project: package.json (ESM), the package and its CLI in node_modules, the
// block's files. Returns its path.
let projects = 0;
function project(block) {
  const dir = join(tmp, `block-${++projects}`);
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'docs-snippet', private: true, type: 'module' }));
  symlinkSync(repo, join(dir, 'node_modules', 'sensorformer'), 'dir');
  symlinkSync('../sensorformer/web/bin/sensorformer.js', join(dir, 'node_modules', '.bin', 'sensorformer'));
  for (const { as, from } of block.marker.files) {
    assert.ok(existsSync(join(repo, from)), `${where(block)}: files= names ${from}, which is not in the repo`);
    mkdirSync(dirname(join(dir, as)), { recursive: true });
    copyFileSync(join(repo, from), join(dir, as));
  }
  return dir;
}

const where = (b) => `${b.file}:${b.line}`;
const report = (b, r) => `${where(b)} exited with ${r.code ?? r.signal}\n--- the block ---\n${b.code}\n--- stdout ---\n${r.stdout.slice(-4000)}\n--- stderr ---\n${r.stderr.slice(-4000)}`;

async function runBlock(block) {
  const dir = project(block);
  const { kind } = block.marker;
  if (kind === 'node') {
    writeFileSync(join(dir, 'snippet.mjs'), block.code);
    return { dir, r: await run(process.execPath, ['--no-concurrent-recompilation', 'snippet.mjs'], { cwd: dir }) };
  }
  if (kind === 'sh') {
    writeFileSync(join(dir, 'snippet.sh'), block.code);
    return { dir, r: await run('bash', ['-euo', 'pipefail', 'snippet.sh'], { cwd: dir, env: { PATH: `${join(dir, 'node_modules', '.bin')}:${process.env.PATH}` } }) };
  }
  // TypeScript: checked as a strict Node project would check it (nodenext resolution through the
  // package's exports map to its .d.ts, library .d.ts files checked too), then its output is run.
  // Target es2022 makes tsc lower `using` to its helpers, as a project supporting Node 20 needs.
  writeFileSync(join(dir, 'snippet.ts'), block.code);
  symlinkSync(join(repo, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'esnext.disposable', 'dom'], types: ['node'], skipLibCheck: false, outDir: 'out' },
    files: ['snippet.ts'],
  }));
  const tsc = await run(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir });
  if (tsc.code !== 0) return { dir, r: { ...tsc, stdout: `tsc --strict failed:\n${tsc.stdout}` } };
  return { dir, r: await run(process.execPath, ['--no-concurrent-recompilation', join('out', 'snippet.js')], { cwd: dir }) };
}

// Checks for blocks whose output is too long to show (test: sh id=...), each against a
// computation of its own.
const CHECKS = {
  // The README's CLI line vs the API on the same files: the same .wasm on the same window, so
  // every value equals the API's float32 result once read back as float32 (tolerance 0).
  async cli(block, { dir, r }) {
    const args = block.code.split(/\s+/);
    const model = await loadModel(join(dir, args[args.indexOf('--model') + 1]));
    const input = JSON.parse(readFileSync(join(dir, args[args.indexOf('--input') + 1]), 'utf8'));
    const windows = input.windows ?? [input];
    const out = JSON.parse(r.stdout).windows;
    assert.equal(out.length, windows.length, 'one output per input window');
    windows.forEach((w, i) => {
      const api = model.forward(w);
      assert.deepEqual(out[i].pooled.map(Math.fround), [...api.pooled], `window ${i}: pooled`);
      assert.deepEqual(out[i].head.map(Math.fround), [...api.head], `window ${i}: head`);
    });
    model.dispose();
  },
};

test('every js / ts / sh / python block in the docs is marked to run or says why not', () => {
  const unmarked = allBlocks.filter((b) => CODE.has(b.lang) && !b.marker);
  assert.deepEqual(unmarked.map(where), [], 'put <!-- test: node | ts | sh | skip (why) --> on the line above each of these fences');
  for (const b of allBlocks.filter((b) => b.marker && !['skip', 'stdout', 'browser'].includes(b.marker.kind))) {
    assert.equal(CODE.get(b.lang), b.marker.kind, `${where(b)}: a \`\`\`${b.lang} block marked "${b.marker.kind}"`);
  }
  // The browser app's files: run by tests/package (step e: Vite + headless Chromium).
  for (const b of allBlocks.filter((b) => b.marker?.kind === 'browser')) {
    assert.ok(['html', 'ts'].includes(b.lang) && b.marker.file, `${where(b)}: a browser block is a \`\`\`html or \`\`\`ts file with file=<path>`);
  }
  assert.ok(allBlocks.filter((b) => b.marker && !['skip', 'stdout', 'browser'].includes(b.marker.kind)).length >= 4, 'the README has runnable blocks: the parser found them');
});

// Every runnable block, each a test of its own (named by file and line, so a failure says where).
const runnable = allBlocks.filter((b) => b.marker && ['node', 'ts', 'sh'].includes(b.marker.kind));
for (const block of runnable) {
  const index = allBlocks.indexOf(block);
  const next = allBlocks[index + 1];
  const expected = next?.marker?.kind === 'stdout' ? next : null;
  test(`${where(block)} (${block.marker.kind}${block.marker.id ? ` ${block.marker.id}` : ''}) runs as written`, { timeout: TEST_TIMEOUT_MS }, async () => {
    assert.ok(expected || block.marker.id, `${where(block)}: a runnable block needs a <!-- test: stdout --> block after it or an id= with a check here (else its run proves nothing)`);
    if (block.marker.id) assert.ok(CHECKS[block.marker.id], `${where(block)}: no check registered for id=${block.marker.id}`);
    const { dir, r } = await runBlock(block);
    assert.equal(r.code, 0, report(block, r));
    if (expected) {
      const lines = (s) => s.replace(/\s+$/, '').split('\n').map((l) => l.replace(/\s+$/, ''));
      assert.deepEqual(lines(r.stdout), lines(expected.code), `${where(block)}: the output differs from ${where(expected)}\n${report(block, r)}`);
    }
    if (block.marker.id) await CHECKS[block.marker.id](block, { dir, r });
  });
}

test('parseBlocks reads fences, their markers and their files; a bad marker is an error naming the line', () => {
  const md = [
    'Intro', '<!-- test: node files=model.safetensors:demo/model/demo.safetensors,examples/window.json id=x -->', '```js', 'a();', '```',
    '', '```sh', 'b', '```', '<!-- test: skip (takes an hour) -->', '  ~~~python', '  c', '  ~~~', '```', 'tree', '```',
  ].join('\n');
  const blocks = parseBlocks(md, 'x.md');
  assert.deepEqual(blocks.map((b) => [b.line, b.lang, b.code, b.marker?.kind ?? null]),
    [[3, 'js', 'a();', 'node'], [7, 'sh', 'b', null], [11, 'python', 'c', 'skip'], [14, '', 'tree', null]]);
  assert.deepEqual(blocks[0].marker.files, [{ as: 'model.safetensors', from: 'demo/model/demo.safetensors' }, { as: 'examples/window.json', from: 'examples/window.json' }]);
  assert.equal(blocks[0].marker.id, 'x');
  assert.equal(blocks[2].marker.reason, 'takes an hour');
  assert.throws(() => parseBlocks('<!-- test: skip -->\n```sh\nx\n```', 'y.md'), /y\.md:1: unknown marker "skip"/);
  assert.throws(() => parseBlocks('<!-- test: node file=a -->\n```js\nx\n```', 'y.md'), /y\.md:1: unknown marker attribute "file=a"/);
  assert.throws(() => parseBlocks('```js\nx', 'y.md'), /y\.md:1: a fence that is never closed/);
  // browser blocks: the app they belong to ("main" unless app= says), a name Vite can use as a folder
  const apps = parseBlocks('<!-- test: browser file=index.html -->\n```html\n<p>\n```\n<!-- test: browser app=af file=src/main.ts -->\n```ts\nx\n```', 'z.md');
  assert.deepEqual(apps.map((b) => [b.marker.app, b.marker.file]), [['main', 'index.html'], ['af', 'src/main.ts']]);
  assert.throws(() => parseBlocks('<!-- test: browser app=../x file=a.ts -->\n```ts\nx\n```', 'y.md'), /y\.md:1: unknown marker attribute "app=..\/x" \(file=, app=\)/);
  assert.throws(() => parseBlocks('<!-- test: node app=af -->\n```js\nx\n```', 'y.md'), /unknown marker attribute "app=af" \(files=, id=\)/);
});

test('every stdout block follows a runnable block', () => {
  for (const [i, b] of allBlocks.entries()) {
    if (b.marker?.kind !== 'stdout') continue;
    const before = allBlocks[i - 1];
    assert.ok(before && before.file === b.file && ['node', 'ts', 'sh'].includes(before.marker?.kind), `${where(b)}: a stdout block with no runnable block right before it`);
  }
});

// --- paths -----------------------------------------------------------------------------------

// Generated outputs a doc may name before they exist (a build, a test run, a tool writes them).
const GENERATED = ['build/', 'test-artifacts/', 'web/dist/'];
// Paths in the reader's own project (README "In a web page": a Vite app's public/ folder).
const READERS_PROJECT = ['public/'];
// node_modules/sensorformer/X in the reader's project is the package's X: it must exist here (and
// the package test copies it out of the installed tarball, so it must ship too).
const INSTALLED = 'node_modules/sensorformer/';
const EXTENSIONS = /\.(md|js|mjs|cjs|ts|json|py|sh|cpp|hpp|h|txt|safetensors|csv|sfrec|wasm|html|css|svg|png|pdf|docx)$/;

/**
 * The repo-relative paths a Markdown text names: link targets, and backticked words that look like
 * a path (a top-level folder of the repo followed by '/', or a file name with a known extension
 * and a folder). URLs, package specifiers (`sensorformer/ble`) and server paths (`/web/`) are not.
 */
function mentionedPaths(text, topLevel) {
  const found = new Set();
  const consider = (raw) => {
    const p = raw.trim().replace(/^['"]+|['"),.:;]+$/g, '').replace(/#.*$/, '');
    if (!p || /^[a-z]+:/i.test(p) || p.startsWith('/') || /\s/.test(p) || /[*{}<>|$]/.test(p)) return;
    const first = p.split('/')[0];
    if (!p.includes('/')) return;
    if (topLevel.has(first) || (EXTENSIONS.test(p) && !p.startsWith('sensorformer/'))) found.add(p.replace(/^\.\//, ''));
  };
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) consider(m[1]);
  // Inline code only (fenced blocks are run or skipped above; their paths are the block's files).
  const prose = text.replace(/^(\s*)(`{3,}|~{3,})[\s\S]*?^\1\2\s*$/gm, '');
  // A `./x` or `../x` in a code span is a module specifier (`new URL('./worker.js', import.meta.url)`),
  // relative to the module it is written in, not to the doc.
  for (const m of prose.matchAll(/`([^`\n]+)`/g)) for (const word of m[1].split(/[\s,()]+/)) if (!/^['"]?\.\.?\//.test(word)) consider(word);
  // Bare paths in prose (README: "**docs/bad-input.md** lists ..."), and in fenced commands.
  for (const m of text.matchAll(/(?<![\w/.:'"-])((?:[\w-][\w.-]*\/)+[\w.-]+\.(?:md|js|mjs|json|py|sh|safetensors|csv))\b/g)) consider(m[1]);
  return [...found];
}

test('every file the docs name exists in the repo', () => {
  const topLevel = new Set(readdirSync(repo).filter((f) => !f.startsWith('.') && f !== 'node_modules'));
  const missing = [];
  for (const file of DOCS) {
    for (const p of mentionedPaths(readFileSync(join(repo, file), 'utf8'), topLevel)) {
      if (GENERATED.some((g) => p.startsWith(g)) || READERS_PROJECT.some((g) => p.startsWith(g))) continue;
      if (p.startsWith(INSTALLED)) {
        if (!existsSync(join(repo, p.slice(INSTALLED.length)))) missing.push(`${file}: ${p}`);
        continue;
      }
      // A path in demo/README.md may be relative to demo/ (`ui/`, `main.js`) or to the repo.
      const candidates = [join(repo, p), join(repo, dirname(file), p)];
      if (!candidates.some((c) => existsSync(c))) missing.push(`${file}: ${p}`);
    }
  }
  assert.deepEqual(missing, [], 'paths named in the docs that are not in the repo');
});

test('mentionedPaths finds paths in links, code spans and prose, and leaves out URLs and package names', () => {
  const top = new Set(['docs', 'web', 'tools']);
  const text = [
    'See [the model](docs/model.md#limits) and `web/src/window.js`; **docs/bad-input.md** lists it.',
    '`sensorformer/ble`, `/web/`, `https://example.org/a/b.md`, `chrome://flags/#x`, `model.safetensors`,',
    "`new URL('../dist/core.wasm', import.meta.url)`, `new Worker(new URL('./worker.js', import.meta.url))`",
    'the SDK repository\'s `technical_documentation/online_measurement.pdf`',
    '```sh', 'node tools/x.mjs', '```',
  ].join('\n');
  assert.deepEqual(mentionedPaths(text, top).sort(),
    ['docs/bad-input.md', 'docs/model.md', 'technical_documentation/online_measurement.pdf', 'tools/x.mjs', 'web/src/window.js']);
});

test('the docs the README points package users to are in the package', { timeout: TEST_TIMEOUT_MS }, async (t) => {
  const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: repo });
  assert.equal(r.code, 0, r.stderr);
  const shipped = new Set(JSON.parse(r.stdout)[0].files.map((f) => f.path));
  const topLevel = new Set(readdirSync(repo).filter((f) => !f.startsWith('.') && f !== 'node_modules'));
  const readme = mentionedPaths(readFileSync(join(repo, 'README.md'), 'utf8'), topLevel);
  const docs = readme.filter((p) => /^docs\/[^/]+\.md$/.test(p));
  assert.ok(docs.length >= 2, `the README names docs/*.md: ${docs}`);
  assert.deepEqual(docs.filter((p) => !shipped.has(p)), [], 'docs/*.md the README refers to, missing from the package ("files" in package.json)');
  const inRepoOnly = new Set();
  for (const file of DOCS.filter((f) => f !== 'demo/README.md')) {
    for (const p of mentionedPaths(readFileSync(join(repo, file), 'utf8'), topLevel)) {
      const shippedPath = [...shipped].some((s) => s === p || s.startsWith(p.endsWith('/') ? p : `${p}/`));
      if (!shippedPath && !GENERATED.some((g) => p.startsWith(g))) inRepoOnly.add(`${file}: ${p}`);
    }
  }
  t.diagnostic(`${inRepoOnly.size} repository pointers not in the package (fine: sources, tests, tools): ${[...inRepoOnly].join('; ')}`);
});

