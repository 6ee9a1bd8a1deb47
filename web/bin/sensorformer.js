#!/usr/bin/env node
// sensorformer CLI: run a model on windows from a JSON file or a single-device CSV.
//   sensorformer run --model m.safetensors --input window.json [--attention] [--output out.json]
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { loadModel, SensorformerError } from '../src/index.js';
import { parseCsv } from '../src/csv.js';

const USAGE = `usage: sensorformer run --model <weights.safetensors> --input <window.json|device.csv>
                       [--attention] [--output <out.json>] [--placement <name>] [--sensor <id>]

  --input      JSON: one window {"streams": [...]} or a batch {"windows": [...]} (README "Input")
               CSV:  one device; first column "time" (seconds), one column per stream
  --attention  include attention maps (per layer, block, group: token indices and H x g x g weights)
  --output     write the JSON there instead of stdout
  --placement  CSV only: placement of columns that do not name one (default: the model's first)
  --sensor     CSV only: sensor id of the first data column (default 0; next columns count up)`;

function fail(message, code = 2) {
  process.stderr.write(`sensorformer: ${message}\n`);
  process.exit(code);
}

async function readWindows(path, csvOptions) {
  const text = await readFile(path, 'utf8').catch((e) => fail(`cannot read ${path}: ${e.message}`));
  if (/\.csv$/i.test(path)) return [parseCsv(text, csvOptions)];
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    fail(`${path} is not valid JSON: ${e.message}`);
  }
  if (Array.isArray(json?.windows)) return json.windows;
  if (Array.isArray(json?.streams)) return [json];
  fail(`${path}: expected {"streams": [...]} or {"windows": [...]}`);
}

// Typed arrays become plain arrays; NaN (JSON has none) becomes null.
const plain = (a) => Array.from(a, (v) => (Number.isNaN(v) ? null : v));
const rows = (a, width) => Array.from({ length: a.length / width }, (_, i) => plain(a.subarray(i * width, (i + 1) * width)));

function toJson(r) {
  const out = {
    referenceTime: r.referenceTime,
    tokens: Array.from(r.tokens.time, (t, i) => ({ stream: r.tokens.stream[i], modality: r.tokens.modality[i], time: t, present: r.tokens.present[i] === 1 })),
    embeddings: rows(r.embeddings, r.dims[1]),
    pooled: plain(r.pooled),
    head: r.head ? plain(r.head) : null,
  };
  if (r.attention)
    out.attention = r.attention.map((m) => ({
      layer: m.layer, block: m.block, group: m.group, tokens: plain(m.tokens),
      weights: Array.from({ length: m.dims[0] }, (_, h) => rows(m.weights.subarray(h * m.dims[1] * m.dims[2], (h + 1) * m.dims[1] * m.dims[2]), m.dims[2])),
    }));
  return out;
}

async function main() {
  let args;
  try {
    args = parseArgs({
      allowPositionals: true,
      options: {
        model: { type: 'string' }, input: { type: 'string' }, output: { type: 'string' },
        attention: { type: 'boolean', default: false }, placement: { type: 'string' }, sensor: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    fail(`${e.message}\n${USAGE}`);
  }
  const { values, positionals } = args;
  if (values.help) return void process.stdout.write(`${USAGE}\n`);
  if (positionals[0] !== 'run' || !values.model || !values.input) fail(USAGE);

  const model = await loadModel(values.model);
  const windows = await readWindows(values.input, {
    placement: values.placement ?? model.config.placements[0],
    firstSensor: values.sensor === undefined ? 0 : Number(values.sensor),
  });
  const results = model.forwardBatch(windows, { attention: values.attention });
  const json = JSON.stringify({ windows: results.map(toJson) });
  if (values.output) await writeFile(values.output, json);
  else process.stdout.write(`${json}\n`);
  model.dispose();
}

main().catch((e) => fail(e instanceof SensorformerError ? `${e.code}: ${e.message}` : e.stack ?? String(e), 1));
