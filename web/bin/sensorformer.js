#!/usr/bin/env node
// sensorformer CLI: run a model on windows from a JSON file or a single-device CSV.
//   sensorformer run --model m.safetensors --input window.json [--attention] [--output out.json]
import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { loadModel, SensorformerError } from '../src/index.js';
import { parseCsv } from '../src/csv.js';
import { RECORDING_FORMAT } from '../src/ble/recording.js';
import { windowsFromRecording } from '../src/ble/session.js';

const USAGE = `usage: sensorformer run --model <weights.safetensors> --input <window.json|device.csv|session.sfrec>
                       [--attention] [--output <out.json>] [--placement <name>] [--sensor <id>]
                       [--window <seconds>] [--hop <seconds>]

  --input      JSON: one window {"streams": [...]} or a batch {"windows": [...]} (README "Input")
               CSV:  one device; first column "time" (seconds), one column per stream
               .sfrec: a recorded Bluetooth session (docs/bluetooth.md), replayed through the
                       device layer into windows of --window seconds every --hop seconds
  --attention  include attention maps (per layer, block, group: token indices and H x g x g weights)
  --output     write the JSON there instead of stdout
  --placement  CSV only: placement of columns that do not name one (default: the model's first)
  --sensor     CSV only: sensor id of the first data column (default 0; next columns count up)
  --window     recordings only: window length in seconds (default 10)
  --hop        recordings only: seconds between window ends (default 5)`;

function fail(message, code = 2) {
  process.stderr.write(`sensorformer: ${message}\n`);
  process.exit(code);
}

// A recording's streams follow the device layer's defaults; keep those the model knows.
function onlyKnownStreams(windows, config) {
  const modalities = new Set(config.modalities.map((m) => m.name)), placements = new Set(config.placements);
  const dropped = new Set();
  const kept = windows.map((w) => ({
    ...w,
    streams: w.streams.filter((s) => {
      const ok = modalities.has(s.modality) && placements.has(s.placement) && s.sensor < config.n_sensors;
      if (!ok) dropped.add(`${s.modality}@${s.placement}#${s.sensor}`);
      return ok;
    }),
  }));
  if (dropped.size) process.stderr.write(`sensorformer: the model has no use for ${[...dropped].join(', ')}: left out\n`);
  return kept;
}

async function readWindows(path, options, config) {
  const text = await readFile(path, 'utf8').catch((e) => fail(`cannot read ${path}: ${e.message}`));
  if (/\.csv$/i.test(path)) return [parseCsv(text, options)];
  if (/\.sfrec$/i.test(path) || text.startsWith(`{"format":"${RECORDING_FORMAT}"`)) {
    const { windows } = await windowsFromRecording(text, { seconds: options.seconds, hop: options.hop });
    return onlyKnownStreams(windows, config);
  }
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

// `sensorformer run ... | head` closes stdout early: that is not an error.
process.stdout.on('error', (e) => (e.code === 'EPIPE' ? process.exit(0) : fail(e.message, 1)));

async function main() {
  let args;
  try {
    args = parseArgs({
      allowPositionals: true,
      options: {
        model: { type: 'string' }, input: { type: 'string' }, output: { type: 'string' },
        attention: { type: 'boolean', default: false }, placement: { type: 'string' }, sensor: { type: 'string' },
        window: { type: 'string' }, hop: { type: 'string' },
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
    seconds: values.window === undefined ? 10 : Number(values.window),
    hop: values.hop === undefined ? 5 : Number(values.hop),
  }, model.config);
  const results = model.forwardBatch(windows, { attention: values.attention });
  const json = JSON.stringify({ windows: results.map(toJson) });
  if (values.output) await writeFile(values.output, json);
  else process.stdout.write(`${json}\n`);
  model.dispose();
}

main().catch((e) => fail(e instanceof SensorformerError ? `${e.code}: ${e.message}` : e.stack ?? String(e), 1));
