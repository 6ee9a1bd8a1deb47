// fuzz/fuzz_model_file.dict against the config reader: every key src/model/config.cpp reads (and
// every enum value it accepts) is a token of the dictionary, written as it appears in a weights
// file (the config is a JSON string inside the safetensors header, so its quotes are escaped).
// A key added to the reader without a token fails here.
//
//   node --test tests/js/fuzz-dict.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';

const repo = new URL('../../', import.meta.url);
const read = (p) => readFileSync(new URL(p, repo));

// libFuzzer's dictionary syntax: one "quoted" token a line (optionally name=), escapes \\ \" \xAB.
function dictionaryTokens(text) {
  const tokens = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(?:[A-Za-z0-9_]+=)?"(.*)"\s*$/.exec(line);
    if (!m) continue;
    tokens.push(m[1].replace(/\\(x[0-9A-Fa-f]{2}|\\|")/g, (_, e) => (e.length === 3 ? String.fromCharCode(parseInt(e.slice(1), 16)) : e)));
  }
  return tokens;
}

// The keys and enum values config.cpp reads: get_int/get_double/get_bool/get_enum(obj, "key", ...),
// obj.find("key"), obj.contains("key"), and get_enum's {"a", "b"} lists.
function configKeys(source) {
  const keys = new Set();
  for (const m of source.matchAll(/get_(?:int|double|bool|enum)\(\s*\w+,\s*"([a-z_]+)"/g)) keys.add(m[1]);
  for (const m of source.matchAll(/\.(?:find|contains)\("([a-z_]+)"\)/g)) keys.add(m[1]);
  const values = new Set();
  for (const m of source.matchAll(/get_enum\([^{]*\{([^}]*)\}/g)) for (const v of m[1].matchAll(/"([a-z_]+)"/g)) values.add(v[1]);
  return { keys: [...keys].sort(), values: [...values].sort() };
}

const escaped = (word) => `\\"${word}\\"`;

test('every config key and enum value the reader accepts is in the fuzzer dictionary, escaped as in a weights file', () => {
  const tokens = new Set(dictionaryTokens(read('fuzz/fuzz_model_file.dict').toString('utf8')));
  const { keys, values } = configKeys(read('src/model/config.cpp').toString('utf8'));
  // The parse must have found the reader's keys at all (a changed helper name would find none).
  for (const k of ['format', 'd_model', 'labels', 'modalities', 'patch_len', 'rate_bucket_edges_hz']) assert.ok(keys.includes(k), `${k} not found in config.cpp: ${keys}`);
  for (const v of ['relu', 'gelu', 'flattened', 'time', 'channel', 'factorized']) assert.ok(values.includes(v), `${v} not found in config.cpp: ${values}`);
  const missing = [...keys, ...values].filter((w) => !tokens.has(escaped(w)));
  assert.deepEqual(missing, [], `fuzz/fuzz_model_file.dict lacks ${missing.map(escaped).join(', ')}`);
});

test('the escaped form is what a weights file holds: each fixture model contains its config keys that way', () => {
  const dir = new URL('tests/fixtures/model/', repo);
  // Models only (a header whose __metadata__ has a config); expected.safetensors holds reference outputs.
  const models = readdirSync(dir).filter((f) => f.endsWith('.safetensors')).map((f) => {
    const bytes = readFileSync(new URL(f, dir));
    const n = Number(bytes.readBigUInt64LE(0));
    return { f, bytes: bytes.subarray(0, 8 + n).toString('latin1'), config: JSON.parse(bytes.subarray(8, 8 + n).toString('utf8')).__metadata__?.config };
  }).filter((m) => typeof m.config === 'string');
  assert.ok(models.length >= 5, `${models.length} fixture models`);
  for (const { f, bytes } of models) {
    for (const k of ['format', 'd_model', 'modalities', 'patch_len']) assert.ok(bytes.includes(escaped(k)), `${f} does not hold ${escaped(k)}`);
  }
});
