// The hand-written types against the runtime they describe, by reading the sources (tsc runs on a
// consumer in tests/package/):
// - no `any` anywhere in the shipped .d.ts files (found by TypeScript's own parser, so a comment
//   saying "any" does not count and `Array<any>` or `(...a: any[]) => any` does);
// - every error code the package can throw is in the SensorformerErrorCode union and in the
//   README's error table, and neither lists a code that nothing throws;
// - every entry point of package.json has its .d.ts, shipped in "files".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const read = (f) => readFileSync(join(repo, f), 'utf8');
const pkg = JSON.parse(read('package.json'));

function jsFiles(dir) {
  return readdirSync(join(repo, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(repo, path)).isDirectory()) return jsFiles(path);
    return /\.(m?js)$/.test(name) ? [path] : [];
  });
}

const shippedTypes = () => pkg.files.filter((f) => f.endsWith('.d.ts'));

// Each `any` keyword in a .d.ts with its line, via the TypeScript parser.
function anyKeywords(file, text = read(file)) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const visit = (node) => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${file}:${line + 1}: ${source.text.split('\n')[line].trim()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('the anyKeywords probe finds `any` in types and ignores it in comments', () => {
  // The probe itself, on the forms the old ble.d.ts had (decoders, createSimulatedBluetooth).
  const text = '// any comment, "any" in a string\nexport const a: Record<string, (...args: any[]) => any>;\n/** Returns any device. */\nexport function f(): Promise<any>;\n';
  assert.deepEqual(anyKeywords('x.d.ts', text).map((l) => l.split(':')[1]), ['2', '2', '4']);
});

test('no `any` in the public types (every .d.ts in package.json "files")', () => {
  const files = shippedTypes();
  assert.ok(files.length >= 4, `expected index, ble, render and simulator .d.ts in "files", got ${files.join(', ')}`);
  const found = files.flatMap((f) => anyKeywords(f));
  assert.deepEqual(found, [], `\`any\` in the public types:\n${found.join('\n')}`);
});

// Code entry points are objects { types, default }; a string target is a data folder (the shipped
// models: `sensorformer/models/af.safetensors`), whose shipped files must exist.
const codeExports = () => Object.entries(pkg.exports).filter(([, target]) => typeof target !== 'string');

test('the data export ./models/* is the models folder, and the model files it ships exist', () => {
  assert.equal(pkg.exports['./models/*'], './models/*');
  const shipped = pkg.files.filter((f) => f.startsWith('models/'));
  assert.ok(shipped.includes('models/af.safetensors'), `"files" ships ${shipped.join(', ')}`);
  for (const f of shipped) statSync(join(repo, f));
  for (const [entry, target] of Object.entries(pkg.exports))
    if (typeof target === 'string') assert.equal(entry, './models/*', `${entry}: only the models folder is a data export`);
});

test('every entry point has types, and they are shipped', () => {
  for (const [entry, target] of codeExports()) {
    assert.ok(target.types && target.default, `exports["${entry}"] needs "types" and "default"`);
    const types = target.types.replace(/^\.\//, ''), code = target.default.replace(/^\.\//, '');
    assert.ok(pkg.files.includes(types), `exports["${entry}"].types ${types} is not in "files"`);
    assert.ok(pkg.files.some((f) => code === f || (f.endsWith('/') && code.startsWith(f))), `exports["${entry}"] ${code} is not in "files"`);
    statSync(join(repo, types));
    statSync(join(repo, code));
  }
});

// The value exports (functions, classes, constants; not types) a .d.ts declares, by TypeScript's
// checker, and those of one of its namespaces.
function declaredValues(dts) {
  const file = join(repo, dts);
  const program = ts.createProgram([file], {
    noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.esnext.disposable.d.ts'], types: [],
  });
  const checker = program.getTypeChecker();
  const resolve = (s) => ((s.flags & ts.SymbolFlags.Alias) ? checker.getAliasedSymbol(s) : s);
  const values = (symbol) => checker.getExportsOfModule(symbol).filter((s) => resolve(s).flags & ts.SymbolFlags.Value);
  const top = values(checker.getSymbolAtLocation(program.getSourceFile(file)));
  const names = top.map((s) => s.name).sort();
  const namespace = (name) => values(resolve(top.find((s) => s.name === name))).map((s) => s.name).sort();
  return { names, namespace };
}

test('every entry point exports at runtime exactly the values its .d.ts declares', async () => {
  for (const [entry, target] of codeExports()) {
    const declared = declaredValues(target.types.replace(/^\.\//, ''));
    const runtime = await import(join(repo, target.default));
    assert.deepEqual(declared.names, Object.keys(runtime).sort(), `${entry}: ${target.types} vs ${target.default}`);
    if (entry === './ble') assert.deepEqual(declared.namespace('decoders'), Object.keys(runtime.decoders).sort(), 'sensorformer/ble decoders');
  }
});

// Codes that can reach a caller. From the JS sources: a literal first argument of
// `new SensorformerError(`, of `super(` in its subclasses, of the local helpers that build one
// (`fail(`, `need(cond, code, ...)`), a `code: '...'` property, and any other quoted
// UPPER_CASE_WITH_UNDERSCORES literal (how loader.js passes WASM_NOT_WASM). From the core: the
// names of src/core/status.hpp, which model.js and core.js rethrow (`new SensorformerError(r.code`).
const NOT_ERROR_CODES = new Set([]);  // UPPER_CASE literals in web/src that are not codes (none today)
// Node's own error codes (ERR_PARSE_ARGS_UNKNOWN_OPTION, ...: nodejs.org/api/errors.html) are
// compared against, never thrown as a SensorformerError code; ours never start with ERR_.
const isNodeCode = (code) => code.startsWith('ERR_');

function thrownCodes() {
  const found = new Map();  // code -> first place
  const add = (code, where) => { if (!found.has(code)) found.set(code, where); };
  const patterns = [
    /new SensorformerError\(\s*'([A-Z][A-Z0-9_]*)'/g,
    /\bsuper\(\s*'([A-Z][A-Z0-9_]*)'/g,
    /\bcode:\s*'([A-Z][A-Z0-9_]*)'/g,
    /\bfail\(\s*'([A-Z][A-Z0-9_]*)'/g,
    /\bneed\([^;]*?,\s*'([A-Z][A-Z0-9_]*)'/g,
    /'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g,
  ];
  for (const file of [...jsFiles('web/src'), ...jsFiles('web/bin')]) {
    const text = read(file);
    for (const re of patterns) {
      for (const m of text.matchAll(re)) {
        if (NOT_ERROR_CODES.has(m[1]) || isNodeCode(m[1])) continue;
        add(m[1], `${file}:${text.slice(0, m.index).split('\n').length}`);
      }
    }
  }
  const status = read('src/core/status.hpp');
  const names = status.slice(status.indexOf('error_code_name'));
  for (const m of names.matchAll(/return "([A-Z_]+)";/g)) if (m[1] !== 'OK' && m[1] !== 'UNKNOWN') add(m[1], 'src/core/status.hpp');
  return found;
}

function unionCodes() {
  const text = read('web/index.d.ts');
  const m = text.match(/export type SensorformerErrorCode =([^;]*);/);
  assert.ok(m, 'web/index.d.ts has no `export type SensorformerErrorCode = ...;`');
  const body = m[1].replace(/\/\/.*$/gm, '');
  return new Set([...body.matchAll(/'([A-Z0-9_]+)'/g)].map((x) => x[1]));
}

// The codes in the first column of the README's error table (the table after "**Errors**").
function readmeCodes() {
  const lines = read('README.md').split('\n');
  const start = lines.findIndex((l) => l.startsWith('**Errors**'));
  assert.ok(start >= 0, 'README.md has no **Errors** paragraph');
  let i = start;
  while (i < lines.length && !lines[i].startsWith('|')) i++;
  const codes = new Set();
  for (; i < lines.length && lines[i].startsWith('|'); i++) {
    const first = lines[i].split('|')[1];
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) codes.add(m[1]);
  }
  assert.ok(codes.size > 0, 'the README error table lists no codes');
  return codes;
}

test('the code collector sees the codes thrown in each way the sources throw them', () => {
  // One code per way: a literal argument, a subclass's super(), the core's status names, loader.js's
  // argument on its own line; if one of these stopped being found, the checks below would be blind.
  const codes = thrownCodes();
  for (const code of ['BLUETOOTH_NO_DEVICE', 'DECODE_ERROR', 'BLUETOOTH_UNAVAILABLE', 'UNSUPPORTED_DTYPE', 'IO', 'WASM_NOT_WASM', 'WORKER_FAILED'])
    assert.ok(codes.has(code), `the collector missed ${code}`);
});

test('every error code thrown at runtime is in the SensorformerErrorCode union, and nothing else is', () => {
  const thrown = thrownCodes(), union = unionCodes();
  const missing = [...thrown].filter(([c]) => !union.has(c)).map(([c, where]) => `${c} (${where})`);
  assert.deepEqual(missing, [], `thrown but not in web/index.d.ts SensorformerErrorCode:\n${missing.join('\n')}`);
  const stale = [...union].filter((c) => !thrown.has(c));
  assert.deepEqual(stale, [], `in SensorformerErrorCode but thrown nowhere in web/src, web/bin or the core: ${stale.join(', ')}`);
});

test('every error code thrown at runtime is in the README error table, and nothing else is', () => {
  const thrown = thrownCodes(), table = readmeCodes();
  const missing = [...thrown].filter(([c]) => !table.has(c)).map(([c, where]) => `${c} (${where})`);
  assert.deepEqual(missing, [], `thrown but not in the README's error table:\n${missing.join('\n')}`);
  const stale = [...table].filter((c) => !thrown.has(c));
  assert.deepEqual(stale, [], `in the README's error table but thrown nowhere: ${stale.join(', ')}`);
});

test('the ble error classes carry the codes their types declare', async () => {
  const { BluetoothDecodeError, BluetoothUnavailableError } = await import('../../web/src/ble/index.js');
  const { SensorformerError } = await import('../../web/src/index.js');
  const decode = new BluetoothDecodeError('heart-rate', 3, 'x');
  const unavailable = new BluetoothUnavailableError('no-api');
  assert.ok(decode instanceof SensorformerError && unavailable instanceof SensorformerError);
  const dts = read('web/ble.d.ts');
  for (const [e, cls] of [[decode, 'BluetoothDecodeError'], [unavailable, 'BluetoothUnavailableError']]) {
    const body = dts.slice(dts.indexOf(`export class ${cls} `));
    assert.equal(body.match(/readonly code: '([A-Z_]+)'/)[1], e.code, `${cls}.code`);
    assert.equal(body.match(/readonly name: '([A-Za-z]+)'/)[1], e.name, `${cls}.name`);
  }
});
