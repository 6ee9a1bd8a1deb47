#!/usr/bin/env node
// sensorformer CLI: run a model on windows from a JSON file, a single-device CSV, a recording or a
// WFDB record (.hea), or stream a recording through a causal model's streaming session.
//   sensorformer run --model m.safetensors --input window.json [--attention] [--output out.json]
//   sensorformer stream --model m.safetensors --input session.sfrec [--embeddings] [--window s]
// Exit codes: 0 done (also --help, --version, and a reader that closed stdout early); 1 the model,
// the input, a file or a window failed (one line, the error's code and message); 2 the arguments
// are wrong (unknown or missing options, bad values, an option the input kind has no use for).
// Results are written window by window as they are computed (one JSON document, {"windows":[...]}),
// so a long recording shows progress; neither its windows nor the output are ever held whole.
// The windows are computed by a pool of worker threads (--workers) and written in input order.
import { readFileSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { constants as bufferConstants } from 'node:buffer';
import { basename, dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';

import { loadModel, loadModelInWorker, SensorformerError } from '../src/index.js';
import { MAX_WORKERS, workerCount } from '../src/worker-client.js';
import { MAX_THREADS } from '../src/loader.js';
import { csvColumns, readCsv } from '../src/csv.js';
import { readWfdb } from '../src/wfdb.js';
import { readPolarLogger } from '../src/polar-logger.js';
import { sliceWindow } from '../src/window.js';
import { beatModalities, beatsFromEcg, detectBeats, rrFromEcg } from '../src/qrs.js';
import { shortestFloat32 } from '../src/float32.js';
import { RECORDING_FORMAT } from '../src/ble/recording.js';
import { MAX_WINDOWS, recordingWindows, replayIntoSession, replayPolarLoggerIntoSession } from '../src/ble/session.js';

// Node 20 can deadlock at process exit when a background TurboFan compile waits for a main-thread
// GC while the main thread waits for that compile (nodejs/node#54918): the CLI then never exits.
// Seen here in about 1 run in 100 of a recording replay; none in 400 with compiles on the main
// thread, which costs this short-lived process nothing measurable. V8's flags are per process:
// the worker threads, started after this line, compile on their own threads too.
setFlagsFromString('--no-concurrent-recompilation');

// Shorter windows or hops than 1 ms are below any wearable's sample period (the fastest here,
// ECG, is 130 Hz: 7.7 ms); they only multiply the window count.
const MIN_SECONDS = 0.001;

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const FORMATS = ['json', 'csv', 'sfrec', 'wfdb', 'polarlogger'];

// Points only at files in the npm package: README.md (npm always packs it) and examples/.
const USAGE = `usage: sensorformer run --model <weights.safetensors> --input <window.json|device.csv|session.sfrec|record.hea|export/|->
                       [--format json|csv|sfrec|wfdb|polarlogger] [--output <out.json>] [--pretty]
                       [--embeddings] [--attention] [--max-gflop <GFLOP>] [--workers <n>] [--threads <n>]
                       CSV, WFDB, Polar exports:  [--placement <name>]
                       CSV only:                  [--sensor <id>] [--rate <column>=<Hz|events>]...
                       recordings, Polar exports: [--window <seconds>] [--hop <seconds>]
       sensorformer stream --model <causal weights.safetensors> --input <session.sfrec|export/|->
                       [--output <out.jsonl>] [--window <seconds>] [--embeddings] [--attention] [--threads <n>]
                       Polar exports: [--placement <name>]
       sensorformer --help | --version

  --input      JSON: one window {"streams": [...]} or a batch {"windows": [...]} (README "Input format")
               CSV:  one device; first column "time" (seconds), one column per stream named
                     modality[@placement][#sensor]; an empty or NaN cell is a missing sample
               .sfrec: a recorded Bluetooth session (README "Wearables over Web Bluetooth"),
                       replayed through the device layer into windows of --window seconds every --hop
               .hea: a WFDB record's header (PhysioNet), its signal files (format 16 or 212 .dat,
                     MATLAB v4 .mat) next to it; one window of the whole record, each signal a
                     stream at its own rate in physical units, placement --placement or the
                     model's first; signals the model has no input for are left out (said)
               a folder (or one of its .txt files): a Polar Sensor Logger export, one file per
                     stream (README "Polar Sensor Logger exports"); windows of --window seconds
                     every --hop, placement --placement or the model's first
               -: read standard input (not a WFDB record: its signal files need a folder).
               Examples: examples/window.json, examples/device.csv
  --format     what the input is, when neither its name (.json, .csv, .sfrec, .hea, a folder) nor its
               start tells
  --output     write the JSON there instead of stdout (the folder must exist; - is stdout)
  --pretty     indent the JSON (2 spaces)
  --embeddings include each window's token embeddings (tokens x d_model; large: left out by default)
  --attention  include attention maps (per layer, block, group: token indices and H x g x g weights)
  --max-gflop  compute limit per window in GFLOP, estimated before it runs (default 10; "Infinity"
               lifts it); a window over it fails with RESOURCE_EXHAUSTED
  --workers    threads computing windows in parallel, an integer from 1 to ${MAX_WORKERS} (default: one
               per core, at most 8); never more than the input has windows; 1 computes on the
               main thread. The output is the same, byte for byte, for any count
  --threads    threads each forward runs on, an integer from 1 to ${MAX_THREADS} (default: one per core,
               at most 4, with one worker; 1 per worker in a pool). The output is the same, byte
               for byte, for any count
  --placement  placement of CSV columns that do not name one, of a WFDB record's signals or of a
               Polar export's streams (default: the model's first)
  --sensor     sensor id of the first data column, an integer >= 0 (default 0; next columns count up)
  --rate       a column's rate in Hz (regular stream) or "events" (event-driven), overriding what
               its timestamps suggest; repeat for more columns. Otherwise each column is regular
               when its own timestamps fit one rate to their printed precision, else event-driven;
               any decision short of certain is explained on stderr
  --window     window length in seconds, a number >= ${MIN_SECONDS} (default 10)
  --hop        seconds between window ends, a number >= ${MIN_SECONDS} (default 5)

Output: {"windows": [...]}, each window written as soon as it is computed: referenceTime, tokens
({stream, modality, time, present}: one array each, as model.forward returns them), pooled, head,
probabilities and label (models whose config has labels), embeddings and attention when asked for.
Model outputs are float32, printed with the fewest digits that read back as the same float32.
A recording gives at most ${MAX_WINDOWS.toLocaleString('en-US')} windows (more: an error naming the count; use a larger --hop); windows
with no sample at all (the recording was silent) are left out and counted on stderr.
stream: the recording replays through the device layer into model.stream() (a causal model; one
with attention_lookback_s keeps its memory bounded), as a live wearable would feed it (a Polar
Sensor Logger export: each sample at its time through the same feeder, 1 s at a time); one JSON
line per push that made tokens final: frontier (tokens before it are final), tokens (how many),
index (session index of the first), stream, modality, time (s), present (one array each), and
pooled over the final tokens of the last --window seconds (default 10): from, to, presentTokens,
head, probabilities and label (models with labels; null with no present token). --embeddings adds
each token's embedding, --attention each token's attention rows (layer, block, keys, keyTimes,
weights per head). A long silence's absent patches past its first minute are not computed: the
line that crosses it lists them in skipped ({stream, from, to, patches}). Streams the model does
not know are left out (named on stderr).
Exit codes: 0 done; 1 the model, the input or a file failed (the message says which; output
already written stays, but the JSON is then unterminated); 2 usage error (arguments).`;

class UsageError extends Error {}

// The options, for parseArgs and for "did you mean" (a typo is one of them, misspelt).
const OPTIONS = {
  model: { type: 'string' }, input: { type: 'string' }, output: { type: 'string' }, format: { type: 'string' },
  attention: { type: 'boolean', default: false }, embeddings: { type: 'boolean', default: false }, pretty: { type: 'boolean', default: false },
  placement: { type: 'string' }, sensor: { type: 'string' }, rate: { type: 'string', multiple: true },
  window: { type: 'string' }, hop: { type: 'string' }, 'max-gflop': { type: 'string' }, workers: { type: 'string' }, threads: { type: 'string' },
  help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' },
};
const COMMANDS = ['run', 'stream'];

// Edits (insert, delete, substitute, swap two neighbours) from a to b: the optimal string
// alignment distance, O(|a| |b|) on names of a few letters. Written out: the package has no
// runtime dependencies, and this is all the CLI needs.
function editDistance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

// The known name closest to `typed`, if it is close: at most 2 edits and fewer than half the
// letters of the longer of the two ("rn" -> "run", "--x" -> nothing), or a name that `typed`
// (3 letters or more) begins ("--embed" -> "--embeddings").
function closest(typed, names) {
  const t = typed.toLowerCase();
  let best = null, bestDistance = Infinity;
  for (const name of names) {
    const edits = editDistance(t, name);
    const distance = name.startsWith(t) && t.length >= 3 ? 0.5 : edits <= 2 && edits < Math.max(t.length, name.length) / 2 ? edits : Infinity;
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return best;
}

// parseArgs' errors, said as the CLI's other usage errors are: one line, no advice about '--'.
function parseArgsMessage(e) {
  if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const typed = /'([^']+)'/.exec(e.message)?.[1] ?? '';
    const name = typed.replace(/^-+/, '').split('=')[0];
    const guess = closest(name, Object.keys(OPTIONS));
    return `unknown option ${typed}${guess ? ` (did you mean --${guess}?)` : ''}`;
  }
  if (e.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const flag = /'(--?[\w-]+)/.exec(e.message)?.[1];
    if (flag && /argument missing/.test(e.message)) return `${flag} needs a value`;
    if (flag && /does not take an argument/.test(e.message)) return `${flag} takes no value`;
    // "--max-gflop -1": parseArgs reads -1 as an option, not the value
    if (flag && /argument is ambiguous/.test(e.message)) return `${flag} needs a value (one starting with "-" is written ${flag}=-N)`;
  }
  return e.message.split(/\.\s/)[0];
}

// A usage error: the message and where the usage is, on two lines (the usage itself is 50 lines,
// and the message would scroll away above it). With no message (no command at all), the usage.
function usageError(message) {
  if (!message) fail(USAGE, 2);
  fail(`${message}\nsensorformer: run "sensorformer --help" for the commands and options`, 2);
}

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

function threads(text) {
  if (text === undefined) return undefined;  // the loader's default
  const v = Number(text);
  if (text.trim() === '' || !Number.isInteger(v) || v < 1 || v > MAX_THREADS)
    throw new UsageError(`--threads must be an integer from 1 to ${MAX_THREADS}, got "${text}"`);
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

// File-system errors as one line, IO like a model that cannot be read: what we tried, on which
// path, and why (no stack).
function fileError(e, action, path) {
  const why = e.code === 'ENOENT' && action === 'write' ? `the folder ${dirname(path)} does not exist`
    : e.code === 'ENOENT' ? 'no such file'
    : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied'
    : e.code === 'EISDIR' ? 'it is a folder'
    : e.message;
  return new SensorformerError('IO', `cannot ${action} ${path}: ${why}`, { cause: e });
}

// An input is read as text, so it is at most V8's longest string (2^29 - 24 UTF-16 units in Node
// 20): counting bytes (at least one per character) stops /dev/zero or an endless pipe there
// instead of reading until memory runs out.
const MAX_INPUT_BYTES = bufferConstants.MAX_STRING_LENGTH;
const INPUT_CHUNK = 1 << 20;

// The --input file (or standard input, for "-") as UTF-8 text.
async function readInput(path) {
  const name = path === '-' ? 'standard input' : path;
  const chunks = [];
  let size = 0;
  const add = (chunk) => {
    size += chunk.length;
    if (size > MAX_INPUT_BYTES)
      throw new SensorformerError('RESOURCE_EXHAUSTED', `${name} holds more than ${MAX_INPUT_BYTES.toLocaleString('en-US')} bytes, the most an input can be (it is read as text)`);
    chunks.push(chunk);
  };
  if (path === '-') {
    for await (const chunk of process.stdin) add(chunk);
  } else {
    const handle = await open(path, 'r').catch((e) => { throw fileError(e, 'read', path); });
    try {
      for (;;) {
        const buffer = Buffer.allocUnsafe(INPUT_CHUNK);
        const { bytesRead } = await handle.read(buffer, 0, INPUT_CHUNK, null).catch((e) => { throw fileError(e, 'read', path); });
        if (bytesRead === 0) break;
        add(buffer.subarray(0, bytesRead));
      }
    } finally {
      await handle.close();
    }
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

// A recording's streams follow the device layer's defaults; keep those the model knows. `name`:
// how a stream left out is said (`dropped`).
function streamFilter(config, name = (s) => `${s.modality}@${s.placement}#${s.sensor}`) {
  const modalities = new Set(config.modalities.map((m) => m.name)), placements = new Set(config.placements);
  const dropped = new Set();
  return {
    dropped,
    apply: (w) => ({
      ...w,
      streams: w.streams.filter((s) => {
        const ok = modalities.has(s.modality) && placements.has(s.placement) && s.sensor < config.n_sensors;
        if (!ok) dropped.add(name(s));
        return ok;
      }),
    }),
  };
}

// A WFDB record (an ECG recording: no RR of its own) run by a model with an `rr` or a beat
// modality: those event streams from the package's QRS detector, as the AF model was trained
// (rrFromEcg, beatsFromEcg on each beat modality's grid; one detection). Said on stderr; nothing is
// added when the ECG's rate is outside the detector's 50-100000 Hz or it has fewer than two beats
// (one for a beat stream). Only for WFDB records: a CSV or JSON input says itself what it holds.
function addBeatStreams(window, config) {
  const given = (m) => window.streams.some((s) => s.modality === m);
  const grids = beatModalities(config).filter((g) => !given(g.modality));
  const wantRr = config.modalities.some((c) => c.name === 'rr') && !given('rr');
  if (!wantRr && !grids.length) return window;
  const ecg = window.streams.find((s) => s.modality === 'ecg' && s.rateHz >= 50 && s.rateHz <= 1e5);
  if (!ecg) return window;
  const detected = detectBeats(ecg.samples, ecg.rateHz, { startTime: ecg.startTime ?? 0 });
  const streams = [...window.streams];
  if (wantRr) {
    const rr = rrFromEcg(ecg, detected);
    if (rr.timestamps.length) {
      note(`rr: the model takes RR intervals and the input has none: ${rr.timestamps.length} from the beats detected in the ECG (rrFromEcg)`);
      streams.push(rr);
    }
  }
  for (const grid of detected.times.length ? grids : []) {
    note(`${grid.modality}: the model takes beat waveforms and the input has none: ${detected.times.length} from the beats detected in the ECG (beatsFromEcg)`);
    streams.push(beatsFromEcg(ecg, detected, grid));
  }
  return { ...window, streams };
}

// What the input is: --format if given, else a recording by its first bytes (they are fixed), else
// the file name's extension, else its first character ("{" JSON) or a first line starting with a
// "time" column (CSV). Standard input has no name: only its content tells.
function inputKind(text, name, format) {
  if (format) return format;
  if (text.startsWith(`{"format":"${RECORDING_FORMAT}"`)) return 'sfrec';
  const extension = /\.(json|csv|sfrec|hea)$/i.exec(name)?.[1].toLowerCase();
  if (extension) return extension === 'hea' ? 'wfdb' : extension;
  const start = text.replace(/^\uFEFF/, '').trimStart();
  if (start.startsWith('{')) return 'json';
  if (/^time\s*,/i.test(start)) return 'csv';
  if (start.startsWith('Phone timestamp;')) return 'polarlogger';
  throw new SensorformerError('BAD_FORMAT', `cannot tell what ${name} is: not JSON (it does not start with "{"), not CSV (its first line does not start with a "time" column), not a recording, not a Polar Sensor Logger file; pass --format json, csv, sfrec, wfdb or polarlogger`);
}

// "a", "a and b", "a, b and c"
const listed = (items) => (items.length > 1 ? `${items.slice(0, -1).join(', ')} and ${items.at(-1)}` : items[0]);

// The options each input kind has a use for: any other is a usage error, not silently ignored.
const ONLY = { window: ['sfrec', 'polarlogger'], hop: ['sfrec', 'polarlogger'], placement: ['csv', 'wfdb', 'polarlogger'], sensor: ['csv'], rate: ['csv'] };
const KIND_NAMES = { json: 'JSON windows', csv: 'CSV input', sfrec: 'recordings (.sfrec)', wfdb: 'a WFDB record', polarlogger: 'Polar Sensor Logger exports' };

// --rate column=Hz or column=events, repeatable, checked against the CSV's header.
function csvRates(list, text) {
  const rates = {}, columns = csvColumns(text);
  for (const item of list ?? []) {
    const at = item.lastIndexOf('=');
    const column = item.slice(0, at), value = item.slice(at + 1);
    if (at < 1) throw new UsageError(`--rate must be <column>=<Hz> or <column>=events, got "${item}"`);
    if (!columns.includes(column)) throw new UsageError(`--rate ${item}: the CSV has no column "${column}" (its columns: ${columns.join(', ')})`);
    const hz = Number(value);
    if (value !== 'events' && (value.trim() === '' || !Number.isFinite(hz) || hz <= 0))
      throw new UsageError(`--rate ${item}: the rate must be a number of Hz > 0 or "events", got "${value}"`);
    if (column in rates) throw new UsageError(`--rate is given twice for column "${column}"`);
    rates[column] = value === 'events' ? 'events' : hz;
  }
  return rates;
}

// The input as { kind, count (of windows; for a recording the estimate made before replay),
// windows(config) (an array, or an async iterable for a recording), label(j) (what to call
// stream j of a window in a message), finish?(count) }. Read and checked before the model is
// loaded: the window count sets the number of workers.
async function openInput(values, options) {
  const path = values.input, name = path === '-' ? 'standard input' : path;
  if (path === '-' && values.format === 'wfdb')
    throw new UsageError('a WFDB record cannot come from standard input: its signal files are read from the header\'s folder; pass the .hea path');
  // A folder is a Polar Sensor Logger export (one file per stream); nothing else is a folder.
  const folder = path !== '-' && (await stat(path).catch(() => null))?.isDirectory();
  if (folder && values.format !== undefined && values.format !== 'polarlogger')
    throw new UsageError(`--format ${values.format}: ${name} is a folder (only a Polar Sensor Logger export is read from a folder: --format polarlogger)`);
  if (path === '-' && values.format === 'polarlogger')
    throw new UsageError('a Polar Sensor Logger export cannot come from standard input: pass its folder or files');
  const text = folder ? '' : await readInput(path);
  const kind = folder ? 'polarlogger' : inputKind(text, name, values.format);
  if (path === '-' && kind === 'polarlogger')
    throw new UsageError('a Polar Sensor Logger export cannot come from standard input: pass its folder or files');
  const misplaced = Object.keys(ONLY).filter((o) => values[o] !== undefined && !ONLY[o].includes(kind));
  const unused = misplaced.filter((o) => ONLY[o].join() === ONLY[misplaced[0]].join());  // one kind per message
  if (unused.length)
    throw new UsageError(`${unused.map((o) => `--${o}`).join(', ')} ${unused.length > 1 ? 'apply' : 'applies'} to ${listed(ONLY[unused[0]].map((k) => KIND_NAMES[k]))} only; ${name} is ${KIND_NAMES[kind]}`);
  if (kind === 'csv') {
    // Parsed before the model loads: a bad row or --rate fails fast, the warnings come first.
    // Columns that name no placement get --placement, else the model's first (known only then).
    const { window, columns } = readCsv(text, { ...options, rates: csvRates(values.rate, text), placement: values.placement, onWarning: note });
    return {
      kind,
      count: 1,
      single: true,
      windows: (config) => [{ streams: window.streams.map((s) => ({ ...s, placement: s.placement ?? config.placements[0] })) }],
      label: (j) => `CSV column "${columns[j]}"`,
    };
  }
  if (kind === 'wfdb') {
    // The header is read again by path: its signal files are found next to it.
    const { streams, units } = await readWfdb(path);
    // A model trained on PhysioNet's ECG (models/af.safetensors) takes millivolts, the unit of
    // almost every PhysioNet ECG; a record in another voltage unit is given as it is, and said.
    streams.forEach((s, j) => {
      if (s.modality === 'ecg' && units[j] !== 'mV' && /^(?:[uµnk]?V)$/.test(units[j]))
        note(`${name} signal ${s.sensor} is in ${units[j]}, given to the model as it is (a model trained on PhysioNet's ECG, like models/af.safetensors, takes mV)`);
    });
    let kept = [], filter;
    return {
      kind,
      count: 1,
      single: true,
      // A WFDB header says nothing of where the sensor was: --placement, else the model's first
      // (as for CSV). Signals the model has no input for (a respiration channel; leads past its
      // sensor count) are left out and said, as a recording's streams are.
      windows: (config) => {
        // Filtered on the model's first placement (one it knows), then given --placement: a
        // placement the model does not know is checkKnown's error, naming it, not a left-out signal.
        filter = streamFilter(config, (s) => `signal ${s.sensor} (${s.modality}${s.sensor >= config.n_sensors ? `, sensor ${s.sensor}: the model has ${config.n_sensors}` : ''})`);
        const placement = values.placement ?? config.placements[0];
        kept = filter.apply({ streams: streams.map((s) => ({ ...s, placement: config.placements[0] })) }).streams.map((s) => ({ ...s, placement }));
        if (!kept.length)
          throw new SensorformerError('INVALID_ARGUMENT', `${name}: no signal the model takes (its signals: ${streams.map((s) => s.modality).join(', ')}; the model's modalities: ${config.modalities.map((m) => m.name).join(', ')}, ${config.n_sensors} sensor${config.n_sensors === 1 ? '' : 's'})`);
        return [addBeatStreams({ streams: kept }, config)];
      },
      // Streams past the header's kept signals are the event streams derived from its ECG.
      label: (j) => (j < kept.length ? `${name} signal ${kept[j].sensor}` : `the event stream derived from ${name}'s ECG (stream ${j})`),
      finish() {
        if (filter?.dropped.size) note(`the model has no use for ${name}'s ${[...filter.dropped].join(', ')}: left out`);
      },
    };
  }
  if (kind === 'polarlogger') return polarLoggerInput(path, values, options);
  if (kind === 'sfrec') {
    const recording = recordingWindows(text, { seconds: options.seconds, hop: options.hop });
    let filter;
    return {
      kind,
      count: recording.estimate,
      windows: (config) => {
        filter = streamFilter(config);
        return (async function* () {
          for await (const { window } of recording) yield filter.apply(window);
        })();
      },
      label: (j) => `window.streams[${j}]`,
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
    throw new SensorformerError('BAD_FORMAT', `${name} is not valid JSON: ${e.message}`);
  }
  const label = (j) => `window.streams[${j}]`;
  if (Array.isArray(json?.windows)) return { kind, count: json.windows.length, windows: () => json.windows, label };
  if (Array.isArray(json?.streams)) return { kind, count: 1, single: true, windows: () => [json], label };
  throw new SensorformerError('BAD_FORMAT', `${name}: expected {"streams": [...]} or {"windows": [...]}`);
}

// A Polar Sensor Logger export (a folder, or one of its files): read whole, then cut into windows
// of --window seconds every --hop (window ends from the first sample's time + --window), as a
// recording is; streams the model has no use for are left out and named on stderr, windows with no
// sample at all are counted. The export's streams carry --placement, else the model's first.
async function polarLoggerInput(path, values, options) {
  const result = await readPolarLogger(path);
  const skippedRows = Object.values(result.report).reduce((a, r) => a + r.skipped.length, 0);
  const streams = result.window.streams;
  const times = streams.flatMap((s) => (s.timestamps ? (s.timestamps.length ? [s.timestamps[0], s.timestamps[s.timestamps.length - 1]] : [])
    : (s.samples.length ? [s.startTime, s.startTime + (s.samples.length - 1) / s.rateHz] : [])));
  const first = Math.min(...times), last = Math.max(...times);
  const { seconds, hop } = options;
  // Window k covers [first + k hop, first + k hop + seconds); the last one ends past the last sample.
  const count = times.length ? Math.max(1, Math.ceil((last - first - seconds) / hop + 1e-9) + 1) : 0;
  if (count > MAX_WINDOWS)
    throw new SensorformerError('RESOURCE_EXHAUSTED', `${path}: ${count.toLocaleString('en-US')} windows of ${seconds} s every ${hop} s, more than ${MAX_WINDOWS.toLocaleString('en-US')}; use a larger --hop`);
  let filter, skipped = 0;
  const counts = Object.entries(result.report).map(([f, r]) => `${basename(f)} ${r.kind} ${r.samples}`).join(', ');
  note(`${path}: ${counts} (rows read); ${(last - first).toFixed(1)} s`);
  return {
    kind: 'polarlogger',
    count,
    windows: (config) => {
      filter = streamFilter(config);
      const placed = { ...result.window, streams: streams.map((s) => ({ ...s, placement: values.placement ?? config.placements[0] })) };
      const out = [];
      for (let k = 0; k < count; k++) {
        const w = filter.apply(sliceWindow(placed, first + k * hop, first + k * hop + seconds));
        if (!w.streams.some((s) => s.samples.length)) { skipped++; continue; }
        out.push(w);
      }
      return out;
    },
    label: (j) => `window.streams[${j}]`,
    finish() {
      if (filter?.dropped.size) note(`the model has no use for ${[...filter.dropped].join(', ')}: left out`);
      if (skipped) note(`${skipped.toLocaleString('en-US')} windows with no sample the model uses were left out`);
      if (skippedRows) note(`${skippedRows} rows did not parse`);
    },
  };
}

// An unknown modality or placement named as the user wrote it (a CSV column, a JSON stream) with
// the ones the model knows; the core's own message says only "stream j".
function checkKnown(window, config, label) {
  if (!Array.isArray(window?.streams)) return;
  const modalities = config.modalities.map((m) => m.name);
  window.streams.forEach((s, j) => {
    if (typeof s?.modality === 'string' && !modalities.includes(s.modality))
      throw new SensorformerError('INVALID_ARGUMENT', `${label(j)}: modality "${s.modality}" is not one the model knows (${modalities.join(', ')})`);
    if (typeof s?.placement === 'string' && !config.placements.includes(s.placement))
      throw new SensorformerError('INVALID_ARGUMENT', `${label(j)}: placement "${s.placement}" is not one the model knows (${config.placements.join(', ')})`);
  });
}

// The core's messages say "stream j"; name the CSV column or the window's stream instead. (The
// JS checks in web/src/window.js catch every field error the core would word as its C++ struct
// does, rate_hz for rateHz, before the core sees the window.)
const apiWording = (message, label) => message.replace(/^stream (\d+):/, (_, j) => `${label(Number(j))}:`);

// Float32 outputs at float32 precision; NaN (JSON has none) becomes null.
const f32 = (a) => Array.from(a, (v) => (Number.isNaN(v) ? null : shortestFloat32(v)));
const rows = (a, width) => Array.from({ length: a.length / width }, (_, i) => f32(a.subarray(i * width, (i + 1) * width)));

// One window's result as JSON: the API's fields and shapes, flat typed arrays as JSON arrays
// (embeddings and attention weights as nested rows, as a JSON reader expects). Times are float64.
function toJson(r, { embeddings }) {
  const out = {
    referenceTime: r.referenceTime,
    tokens: { stream: Array.from(r.tokens.stream), modality: r.tokens.modality, time: Array.from(r.tokens.time), present: Array.from(r.tokens.present) },
    pooled: f32(r.pooled),
    head: r.head ? f32(r.head) : null,
  };
  // From models whose config has labels (computed by the model; passed through as they are).
  if (r.probabilities != null) out.probabilities = f32(r.probabilities);
  if (r.label != null) out.label = r.label;
  if (embeddings) out.embeddings = rows(r.embeddings, r.dims[1]);
  if (r.attention)
    out.attention = r.attention.map((m) => ({
      layer: m.layer, block: m.block, group: m.group, tokens: Array.from(m.tokens),
      weights: Array.from({ length: m.dims[0] }, (_, h) => rows(m.weights.subarray(h * m.dims[1] * m.dims[2], (h + 1) * m.dims[1] * m.dims[2]), m.dims[2])),
    }));
  return out;
}

// The document is written window by window, its start with the first window (an error in window 0
// leaves nothing on stdout; one in window k the k windows before it, an unclosed document whose
// windows are complete). --pretty gives JSON.stringify(doc, null, 2) exactly,
// except that no window at all is written "[\n  ]", not "[]".
const LAYOUT = {
  compact: { open: '{"windows":[', sep: ',', close: ']}\n', closeEmpty: ']}\n', window: (w) => JSON.stringify(w) },
  pretty: { open: '{\n  "windows": [\n', sep: ',\n', close: '\n  ]\n}\n', closeEmpty: '  ]\n}\n', window: (w) => JSON.stringify(w, null, 2).replace(/^/gm, '    ') },
};

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

function parseArguments() {
  let parsed;
  try {
    parsed = parseArgs({ allowPositionals: true, options: OPTIONS });
  } catch (e) {
    if (e?.code?.startsWith?.('ERR_PARSE_ARGS')) throw new UsageError(parseArgsMessage(e));
    throw e;
  }
  const { values, positionals } = parsed;
  if (values.help || values.version) return { values };
  const command = positionals[0];
  if (!COMMANDS.includes(command)) {
    const guess = positionals.length ? closest(command, COMMANDS) : null;
    throw new UsageError(positionals.length ? `unknown command "${command}" (${guess ? `did you mean "${guess}"? ` : ''}the commands are "run" and "stream")` : '');
  }
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  if (!values.model || !values.input) throw new UsageError(`${command} needs ${!values.model ? '--model' : '--input'}`);
  if (command === 'stream') {
    // A stream is replayed from a recording only, into one session on this thread.
    const unused = ['format', 'pretty', 'sensor', 'rate', 'hop', 'max-gflop', 'workers'].filter((o) => values[o] !== undefined && values[o] !== false);
    if (unused.length) throw new UsageError(`${unused.map((o) => `--${o}`).join(', ')} ${unused.length > 1 ? 'apply' : 'applies'} to "run" only`);
    return { values, command, options: { seconds: seconds(values.window, '--window', 10), numThreads: threads(values.threads) } };
  }
  if (values.format !== undefined && !FORMATS.includes(values.format)) throw new UsageError(`--format must be json, csv, sfrec, wfdb or polarlogger, got "${values.format}"`);
  const options = {
    firstSensor: sensorId(values.sensor),
    seconds: seconds(values.window, '--window', 10),
    hop: seconds(values.hop, '--hop', 5),
    maxGflop: gflop(values['max-gflop']),
    workers: workers(values.workers),
    numThreads: threads(values.threads),
  };
  return { values, command, options };
}

// `sensorformer stream`: the recording replayed into a streaming session, one JSON line per push
// that made tokens final (the usage text lists the fields), written as the replay goes.
async function streamCommand(values, options) {
  const path = values.input, name = path === '-' ? 'standard input' : path;
  // A folder, or a file starting "Phone timestamp;": a Polar Sensor Logger export (--placement for
  // its streams, else the model's first); anything else must be a recording.
  const folder = path !== '-' && (await stat(path).catch(() => null))?.isDirectory();
  const text = folder ? '' : await readInput(path);
  const polar = folder || text.startsWith('Phone timestamp;');
  if (!polar && !text.startsWith(`{"format":"${RECORDING_FORMAT}"`))
    throw new SensorformerError('BAD_FORMAT', `${name} is not a recording (.sfrec: its first line is {"format":"${RECORDING_FORMAT}", ...}) or a Polar Sensor Logger export; stream replays those only`);
  if (!polar && values.placement !== undefined) throw new UsageError(`--placement applies to Polar Sensor Logger exports only; ${name} is recordings (.sfrec)`);
  if (polar && path === '-') throw new UsageError('a Polar Sensor Logger export cannot come from standard input: pass its folder or files');
  const exported = polar ? await readPolarLogger(path) : null;
  const model = await loadModel(values.model, { numThreads: options.numThreads });
  // historySeconds: the pooling window is the only use of the history here.
  const session = model.stream({ historySeconds: options.seconds, attention: values.attention });
  const sink = values.output && values.output !== '-' ? await fileSink(values.output) : stdoutSink();
  let lines = [];
  const onUpdate = (u) => {
    const m = u.tokens.time.length;
    if (!m && !u.skipped.length) return;
    const p = session.pooled({ seconds: options.seconds });
    const line = {
      frontier: u.frontier,
      tokens: m,
      index: u.tokens.index[0],
      stream: Array.from(u.tokens.stream),
      modality: u.tokens.modality,
      time: Array.from(u.tokens.time),
      present: Array.from(u.tokens.present),
      pooled: { from: p.from, to: p.to, presentTokens: p.presentTokens, head: p.head ? f32(p.head) : null },
    };
    if (p.probabilities !== undefined) line.pooled.probabilities = p.probabilities ? f32(p.probabilities) : null;
    if (p.label !== undefined) line.pooled.label = p.label;
    // A long gap's absent patches past its first minute: listed, not computed (docs/model.md "Gaps").
    if (u.skipped.length) line.skipped = u.skipped;
    if (values.embeddings) line.embeddings = rows(u.embeddings, u.dims[1]);
    if (u.attention)
      line.attention = u.attention.map((a) => ({
        token: a.token, layer: a.layer, block: a.block, keys: Array.from(a.keys), keyTimes: Array.from(a.keyTimes),
        weights: rows(a.weights, a.dims[1]),
      }));
    lines.push(`${JSON.stringify(line)}\n`);
  };
  const between = async () => {
    const out = lines;
    lines = [];
    for (const l of out) await sink.write(l);
  };
  try {
    const { leftOut, stats } = exported
      ? await replayPolarLoggerIntoSession(exported, session, { config: model.config, onUpdate, between, placement: values.placement ?? model.config.placements[0] })
      : await replayIntoSession(text, session, { config: model.config, onUpdate, between });
    if (Object.keys(leftOut).length)
      note(`the model has no use for ${Object.values(leftOut).map((s) => `${s.modality}@${s.placement}#${s.sensor}`).sort().join(', ')}: left out`);
    const late = Object.entries(stats).filter(([, s]) => s.beforeFrontier > 0);
    if (late.length) note(`samples that came after their tokens were final, not given: ${late.map(([id, s]) => `${id} ${s.beforeFrontier}`).join(', ')}`);
  } finally {
    await between().catch(() => {});
    await sink.close();
    model.dispose();
  }
}

async function main() {
  let values, options, input, command;
  try {
    ({ values, options, command } = parseArguments());
    if (values.help) return void process.stdout.write(`${USAGE}\n`);
    if (values.version) return void process.stdout.write(`${version}\n`);
    if (command === 'stream') return await streamCommand(values, options);
    input = await openInput(values, options);
  } catch (e) {
    if (e instanceof UsageError) usageError(e.message);
    throw e;
  }

  // One worker means this thread: a worker thread would only add its start-up and a copy of
  // every window and result (the same .wasm computes the same bytes either way).
  const count = Math.max(1, Math.min(await workerCount(options.workers), input.count));
  const model = count === 1 ? await loadModel(values.model, { numThreads: options.numThreads })
    : await loadModelInWorker(values.model, { workers: count, numThreads: options.numThreads });
  const windows = input.windows(model.config);
  // Opened once the model and the input are known good (no empty file for a typo in --model), and
  // before the windows are computed (a missing folder is reported before the work, not after).
  const sink = values.output && values.output !== '-' ? await fileSink(values.output) : stdoutSink();
  const layout = values.pretty ? LAYOUT.pretty : LAYOUT.compact;
  const forwardOptions = { attention: values.attention, maxGflop: options.maxGflop };

  // Windows in flight, oldest first: two per worker, so each has its next window queued while
  // the results are written in input order (this also bounds the memory they take).
  const inFlight = [], lookahead = 2 * count;
  let written = 0;
  const writeNext = async () => {
    let result;
    try {
      result = await inFlight.shift();
    } catch (e) {
      if (e instanceof SensorformerError) {
        e.message = apiWording(e.message, input.label);
        if (!input.single) e.message = `input window ${written}: ${e.message}`;
      }
      throw e;
    }
    await sink.write(`${written ? layout.sep : layout.open}${layout.window(toJson(result, values))}`);
    written++;
  };
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
    const pending = Promise.resolve().then(() => {
      checkKnown(window, model.config, input.label);
      return model.forward(window, forwardOptions);
    });
    pending.catch(() => {});  // awaited in order by writeNext: an error after a failing window is never reported
    inFlight.push(pending);
    if (inFlight.length >= lookahead) await writeNext();
  }
  while (inFlight.length) await writeNext();
  await sink.write(written ? layout.close : `${layout.open}${layout.closeEmpty}`);
  await sink.close();
  input.finish?.(written);
  await model.dispose();
}

main().catch((e) => {
  if (e instanceof SensorformerError) fail(`${e.code}: ${e.suggestedHop ? e.message.replace(/use a larger hop.*$/, `pass --hop ${e.suggestedHop} or larger`) : e.message}`, 1);
  if (e?.userFacing) fail(e.message, 1);
  fail(e?.stack ?? String(e), 1);  // a defect in sensorformer itself: the stack helps the report
});
