#!/usr/bin/env node
// sensorformer CLI: run a model on windows from a JSON file, a single-device CSV or a recording.
//   sensorformer run --model m.safetensors --input window.json [--attention] [--output out.json]
// Results are written window by window as they are computed (one JSON document, {"windows":[...]}),
// so a long recording shows progress; neither its windows nor the output are ever held whole.
// The windows are computed by a pool of worker threads (--workers) and written in input order.
import { open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';

import { loadModel, loadModelInWorker, SensorformerError } from '../src/index.js';
import { MAX_WORKERS, workerCount } from '../src/worker-client.js';
import { parseCsv } from '../src/csv.js';
import { RECORDING_FORMAT } from '../src/ble/recording.js';
import { MAX_WINDOWS, recordingWindows } from '../src/ble/session.js';

// Node 20 can deadlock at process exit when a background TurboFan compile waits for a main-thread
// GC while the main thread waits for that compile (nodejs/node#54918): the CLI then never exits.
// Seen here in about 1 run in 100 of a recording replay; none in 400 with compiles on the main
// thread, which costs this short-lived process nothing measurable. V8's flags are per process:
// the worker threads, started after this line, compile on their own threads too.
setFlagsFromString('--no-concurrent-recompilation');

// Shorter windows or hops than 1 ms are below any wearable's sample period (the fastest here,
// ECG, is 130 Hz: 7.7 ms); they only multiply the window count.
const MIN_SECONDS = 0.001;

const USAGE = `usage: sensorformer run --model <weights.safetensors> --input <window.json|device.csv|session.sfrec>
                       [--attention] [--output <out.json>] [--placement <name>] [--sensor <id>]
                       [--window <seconds>] [--hop <seconds>] [--max-gflop <GFLOP>]
                       [--workers <n>]

  --input      JSON: one window {"streams": [...]} or a batch {"windows": [...]} (README "Input")
               CSV:  one device; first column "time" (seconds), one column per stream
               .sfrec: a recorded Bluetooth session (docs/bluetooth.md), replayed through the
                       device layer into windows of --window seconds every --hop seconds
  --attention  include attention maps (per layer, block, group: token indices and H x g x g weights)
  --output     write the JSON there instead of stdout (the folder must exist)
  --placement  CSV only: placement of columns that do not name one (default: the model's first)
  --sensor     CSV only: sensor id of the first data column, an integer >= 0 (default 0; next
               columns count up)
  --window     recordings only: window length in seconds, a number >= ${MIN_SECONDS} (default 10)
  --hop        recordings only: seconds between window ends, a number >= ${MIN_SECONDS} (default 5)
  --max-gflop  compute limit per window in GFLOP, estimated before it runs (default 10; "Infinity"
               lifts it); a window over it fails with RESOURCE_EXHAUSTED
  --workers    threads computing windows in parallel, an integer from 1 to ${MAX_WORKERS} (default: one
               per core, at most 8); never more than the input has windows; 1 computes on the
               main thread. The output is the same, byte for byte, for any count

Output: {"windows": [...]}, each window written as soon as it is computed. A recording gives at
most ${MAX_WINDOWS.toLocaleString('en-US')} windows (more: an error naming the count; use a larger --hop); windows
with no sample at all (the recording was silent) are left out and counted on stderr.
Exit codes: 0 done; 1 the model, the input or a file failed (the message says which; output
already written stays, but the JSON is then unterminated); 2 usage error (arguments).`;

class UsageError extends Error {}

function fail(message, code) {
  process.stderr.write(`sensorformer: ${message}\n`);
  process.exit(code);
}

const note = (message) => process.stderr.write(`sensorformer: ${message}\n`);

function seconds(text, flag, fallback) {
  if (text === undefined) return fallback;
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || v < MIN_SECONDS)
    throw new UsageError(`${flag} must be a number of seconds >= ${MIN_SECONDS}, got "${text}"`);
  return v;
}

function gflop(text) {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (text.trim() === '' || !(v > 0)) throw new UsageError(`--max-gflop must be a number > 0 (or Infinity), got "${text}"`);
  return v;
}

function workers(text) {
  if (text === undefined) return 'auto';
  const v = Number(text);
  if (text.trim() === '' || !Number.isInteger(v) || v < 1 || v > MAX_WORKERS)
    throw new UsageError(`--workers must be an integer from 1 to ${MAX_WORKERS}, got "${text}"`);
  return v;
}

function sensorId(text) {
  if (text === undefined) return 0;
  const v = Number(text);
  if (text.trim() === '' || !Number.isInteger(v) || v < 0 || v > 2 ** 31 - 1)
    throw new UsageError(`--sensor must be an integer sensor id >= 0, got "${text}"`);
  return v;
}

// File-system errors as one line: what we tried, on which path, and why (no stack).
function fileError(e, action, path) {
  const why = e.code === 'ENOENT' && action === 'write' ? `the folder ${dirname(path)} does not exist`
    : e.code === 'ENOENT' ? 'no such file'
    : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied'
    : e.code === 'EISDIR' ? 'it is a folder'
    : e.message;
  return Object.assign(new Error(`cannot ${action} ${path}: ${why}`), { userFacing: true });
}

// A recording's streams follow the device layer's defaults; keep those the model knows.
function streamFilter(config) {
  const modalities = new Set(config.modalities.map((m) => m.name)), placements = new Set(config.placements);
  const dropped = new Set();
  return {
    dropped,
    apply: (w) => ({
      ...w,
      streams: w.streams.filter((s) => {
        const ok = modalities.has(s.modality) && placements.has(s.placement) && s.sensor < config.n_sensors;
        if (!ok) dropped.add(`${s.modality}@${s.placement}#${s.sensor}`);
        return ok;
      }),
    }),
  };
}

// The input as { kind, count (of windows; for a recording the estimate made before replay),
// windows(config) (an array, or an async iterable for a recording), finish?(count) }. Read and
// checked before the model is loaded: the window count sets the number of workers.
async function openInput(path, options) {
  const text = await readFile(path, 'utf8').catch((e) => { throw fileError(e, 'read', path); });
  if (/\.csv$/i.test(path)) return { kind: 'csv', count: 1, windows: (config) => [parseCsv(text, { ...options, placement: options.placement ?? config.placements[0] })] };
  if (/\.sfrec$/i.test(path) || text.startsWith(`{"format":"${RECORDING_FORMAT}"`)) {
    const recording = recordingWindows(text, { seconds: options.seconds, hop: options.hop });
    let filter;
    return {
      kind: 'recording',
      count: recording.estimate,
      windows: (config) => {
        filter = streamFilter(config);
        return (async function* () {
          for await (const { window } of recording) yield filter.apply(window);
        })();
      },
      finish(count) {
        if (filter?.dropped.size) note(`the model has no use for ${[...filter.dropped].join(', ')}: left out`);
        if (recording.skipped) note(`${recording.skipped.toLocaleString('en-US')} windows with no sample at all (silent stretches of the recording) were left out`);
        if (!count) note(`the recording gave no window: it holds less than one --window (${options.seconds} s) of data`);
      },
    };
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new SensorformerError('BAD_FORMAT', `${path} is not valid JSON: ${e.message}`);
  }
  if (Array.isArray(json?.windows)) return { kind: 'batch', count: json.windows.length, windows: () => json.windows };
  if (Array.isArray(json?.streams)) return { kind: 'window', count: 1, windows: () => [json] };
  throw new SensorformerError('BAD_FORMAT', `${path}: expected {"streams": [...]} or {"windows": [...]}`);
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

// {"windows":[ ... ]} written piece by piece, waiting for the stream to drain (bounded memory).
function stdoutSink() {
  return {
    write: (text) => (process.stdout.write(text) ? undefined : new Promise((r) => process.stdout.once('drain', r))),
    close: () => {},
  };
}

async function fileSink(path) {
  const handle = await open(path, 'w').catch((e) => { throw fileError(e, 'write', path); });
  return {
    write: (text) => handle.write(text).catch((e) => { throw fileError(e, 'write', path); }),
    close: () => handle.close(),
  };
}

// `sensorformer run ... | head` closes stdout early: that is not an error.
process.stdout.on('error', (e) => (e.code === 'EPIPE' ? process.exit(0) : fail(e.message, 1)));

async function main() {
  let values, positionals, options;
  try {
    ({ values, positionals } = parseArgs({
      allowPositionals: true,
      options: {
        model: { type: 'string' }, input: { type: 'string' }, output: { type: 'string' },
        attention: { type: 'boolean', default: false }, placement: { type: 'string' }, sensor: { type: 'string' },
        window: { type: 'string' }, hop: { type: 'string' }, 'max-gflop': { type: 'string' }, workers: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
    if (values.help) return void process.stdout.write(`${USAGE}\n`);
    if (positionals[0] !== 'run' || positionals.length !== 1 || !values.model || !values.input) throw new UsageError('');
    options = {
      firstSensor: sensorId(values.sensor),
      seconds: seconds(values.window, '--window', 10),
      hop: seconds(values.hop, '--hop', 5),
      maxGflop: gflop(values['max-gflop']),
      workers: workers(values.workers),
    };
  } catch (e) {
    fail(`${e.message ? `${e.message}\n` : ''}${USAGE}`, 2);
  }

  const input = await openInput(values.input, { ...options, placement: values.placement });
  // One worker means this thread: a worker thread would only add its start-up and a copy of
  // every window and result (the same .wasm computes the same bytes either way).
  const count = Math.max(1, Math.min(await workerCount(options.workers), input.count));
  const model = count === 1 ? await loadModel(values.model) : await loadModelInWorker(values.model, { workers: count });
  const windows = input.windows(model.config);
  if (input.kind !== 'recording' && (values.window !== undefined || values.hop !== undefined)) note('--window and --hop apply to recordings only: ignored');
  if (input.kind !== 'csv' && (values.placement !== undefined || values.sensor !== undefined)) note('--placement and --sensor apply to CSV input only: ignored');
  // Opened once the model and the input are known good (no empty file for a typo in --model), and
  // before the windows are computed (a missing folder is reported before the work, not after).
  const sink = values.output ? await fileSink(values.output) : stdoutSink();

  // Windows in flight, oldest first: two per worker, so each has its next window queued while
  // the results are written in input order (this also bounds the memory they take).
  const inFlight = [], lookahead = 2 * count;
  let written = 0;
  const writeNext = async () => {
    let result;
    try {
      result = await inFlight.shift();
    } catch (e) {
      if (input.kind !== 'window' && e instanceof SensorformerError) e.message = `input window ${written}: ${e.message}`;
      throw e;
    }
    await sink.write(`${written ? ',' : ''}${JSON.stringify(toJson(result))}`);
    written++;
  };
  await sink.write('{"windows":[');
  const source = windows[Symbol.asyncIterator]?.() ?? windows[Symbol.iterator]();
  for (;;) {
    let next;
    try {
      next = await source.next();
    } catch (e) {
      // A recording that fails part-way (too many windows): what was computed before is written
      // first, as when windows were computed one at a time.
      while (inFlight.length) await writeNext();
      throw e;
    }
    if (next.done) break;
    const window = next.value;
    const pending = count === 1 ? Promise.resolve().then(() => model.forward(window, { attention: values.attention, maxGflop: options.maxGflop }))
      : model.forward(window, { attention: values.attention, maxGflop: options.maxGflop });
    pending.catch(() => {});  // awaited in order by writeNext: an error after a failing window is never reported
    inFlight.push(pending);
    if (inFlight.length >= lookahead) await writeNext();
  }
  while (inFlight.length) await writeNext();
  await sink.write(']}\n');
  await sink.close();
  input.finish?.(written);
  await model.dispose();
}

main().catch((e) => {
  if (e instanceof SensorformerError) fail(`${e.code}: ${e.suggestedHop ? e.message.replace(/use a larger hop.*$/, `pass --hop ${e.suggestedHop} or larger`) : e.message}`, 1);
  if (e?.userFacing) fail(e.message, 1);
  fail(e?.stack ?? String(e), 1);  // a defect in sensorformer itself: the stack helps the report
});
