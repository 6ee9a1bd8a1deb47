// A WFDB record (PhysioNet's format: a .hea header and its signal files) -> a window (README
// "Input format", "WFDB records").
//
// What is read (PhysioNet's header(5) and signal(5) pages are the specification):
// - the record line: name nsig [fs[/counterfreq[(base)]] [nsamp [basetime [basedate]]]];
//   multi-segment records (name/segments) are refused;
// - one signal line per signal: file format[xsamp][:skew][+offset] gain[(baseline)][/units]
//   adcres adczero initval checksum blocksize description;
// - signal formats 16 (16-bit little-endian two's complement) and 212 (pairs of 12-bit samples in
//   3 bytes), several signals of one file interleaved frame by frame; the MATLAB v4 .mat files
//   PhysioNet distributes (CinC 2017: "A00001.mat 16+24") are format 16 after the MAT header, and
//   that header is checked against the .hea (an int16 matrix of signals x frames).
// Each signal becomes a regular stream at its own rate (fs x samples per frame), in physical units
// (adc - baseline) / gain, with the format's invalid-sample code (-32768 in 16, -2048 in 212) as a
// missing sample (NaN). Defaults are header(5)'s: fs 250 Hz, gain 0 or missing = 200 adu per unit
// (an uncalibrated signal), baseline = adc zero. The checksum, initial value and block size are
// not checked (CinC 2017 headers write a checksum of 0).
//
// Decisions the specification leaves to the reader:
// - startTime: a base time and date are read as UTC (the header names no time zone) and give epoch
//   seconds; a base time alone gives seconds after midnight; no base time gives 0. The model
//   encodes times relative to the window's referenceTime, so this changes no output.
// - modality: an ECG-like description (one naming ECG / EKG, or a lead name: I, II, III, aVR, aVL,
//   aVF, V1-V9, MLI, MLII, MLIII) is "ecg"; any other is the description lowercased, and a signal
//   with none is "signal". The units decide nothing: they are returned beside the streams
//   (`units[j]`, header(5)'s default "mV" when the header gives none), the values left in them.
// - sensor: the signal's index in the header (0, 1, ...). placement: options.placement, else left
//   out (the caller knows where the device was; the CLI gives the model's first placement).
import { SensorformerError } from './errors.js';
import { describe, FLOAT32_MAX } from './window.js';

const badFormat = (where, message) => new SensorformerError('BAD_FORMAT', `${where}: ${message}`);
const invalid = (message) => new SensorformerError('INVALID_ARGUMENT', `readWfdb: ${message}`);

const DEFAULT_FS = 250;
const DEFAULT_GAIN = 200;
// Bytes of a MAT v4 matrix header: type, rows, columns, imaginary flag, name length (int32 each).
const MAT_HEADER = 20;
// MAT v4 type code M*1000 + O*100 + P*10 + T: little-endian (M 0), int16 (P 3), full matrix (T 0).
const MAT_INT16_LE = 30;
const FORMATS = {
  16: { invalid: -32768, bytes: (n) => 2 * n, samples: (bytes) => Math.floor(bytes / 2) },
  // Two samples in three bytes; an odd last sample takes two (signal(5)).
  212: { invalid: -2048, bytes: (n) => 3 * Math.floor(n / 2) + 2 * (n % 2), samples: (bytes) => 2 * Math.floor(bytes / 3) + (bytes % 3 === 2 ? 1 : 0) },
};
const ECG_LEAD = /^(i|ii|iii|avr|avl|avf|v[1-9]|mli|mlii|mliii)$/i;

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;

function modalityOf(description) {
  if (!description) return 'signal';
  if (/\b(ecg|ekg)/i.test(description) || ECG_LEAD.test(description)) return 'ecg';
  return description.toLowerCase();
}

// "05:05:15" / "5:15" / "15.5" -> seconds after midnight; null if it is not a time.
function timeOfDay(text) {
  const m = /^(?:(?:(\d{1,2}):)?(\d{1,2}):)?(\d{1,2}(?:\.\d*)?)$/.exec(text);
  if (!m) return null;
  const [h, min, s] = [Number(m[1] ?? 0), Number(m[2] ?? 0), Number(m[3])];
  if (h > 23 || min > 59 || s >= 60) return null;
  return h * 3600 + min * 60 + s;
}

// "1/05/2000" (DD/MM/YYYY) -> epoch seconds of its UTC midnight; null if it is not a date.
function dateOf(text) {
  const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(text);
  if (!m) return null;
  const [d, mo, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return null;
  return ms / 1000;
}

/** The header's record and signal specifications. `name` is the header's file name for messages. */
export function parseWfdbHeader(text, name) {
  const lines = text.split(/\r?\n|\r/).map((line, i) => ({ fields: line.trim().split(/\s+/).filter(Boolean), line: line.trim(), n: i + 1 }))
    .filter(({ line }) => line !== '' && !line.startsWith('#'));
  if (!lines.length) throw badFormat(name, 'has no record line');
  const { fields: rec, n: recLine } = lines[0];
  const at = (field) => `${name} line ${recLine}: ${field}`;
  const [recordName, ...rest] = rec;
  if (recordName.includes('/')) throw badFormat(at('record name'), `"${recordName}" is a multi-segment record (name/segments), which is not supported: read its segments' headers one by one`);
  if (!INTEGER.test(rest[0] ?? '') || Number(rest[0]) < 0) throw badFormat(at('number of signals'), `must be an integer >= 0, got ${rest[0] === undefined ? 'nothing' : `"${rest[0]}"`}`);
  const nsig = Number(rest[0]);
  let fs = DEFAULT_FS;
  if (rest[1] !== undefined) {
    const m = /^([^/(]+)(?:\/([^(]+))?(?:\((.+)\))?$/.exec(rest[1]);
    if (!m || !NUMBER.test(m[1]) || !(Number(m[1]) > 0) || !Number.isFinite(Number(m[1]))) throw badFormat(at('sampling frequency'), `must be a finite number of Hz > 0 (optionally /counter frequency(base counter)), got "${rest[1]}"`);
    fs = Number(m[1]);
  }
  let nsamp = null;
  if (rest[2] !== undefined) {
    if (!INTEGER.test(rest[2]) || Number(rest[2]) < 0 || !Number.isSafeInteger(Number(rest[2]))) throw badFormat(at('number of samples'), `must be an integer >= 0, got "${rest[2]}"`);
    nsamp = Number(rest[2]) || null;  // 0: not given (header(5))
  }
  let startTime = 0;
  if (rest[3] !== undefined) {
    const t = timeOfDay(rest[3]);
    if (t === null) throw badFormat(at('base time'), `must be HH:MM:SS, got "${rest[3]}"`);
    startTime = t;
    if (rest[4] !== undefined) {
      const d = dateOf(rest[4]);
      if (d === null) throw badFormat(at('base date'), `must be DD/MM/YYYY, got "${rest[4]}"`);
      startTime += d;
    }
  }
  if (rest.length > 5) throw badFormat(at('record line'), `has ${rest.length + 1} fields, at most 6 (name nsig fs nsamp basetime basedate)`);

  const signalLines = lines.slice(1, 1 + nsig);
  if (signalLines.length < nsig) throw badFormat(`${name} line ${recLine}`, `declares ${nsig} signal${nsig === 1 ? '' : 's'}, the header has ${signalLines.length} signal line${signalLines.length === 1 ? '' : 's'}`);
  const signals = signalLines.map(({ fields, line, n }, index) => {
    const where = (field) => `${name} line ${n}: ${field}`;
    const [file, formatText, gainText, resText, zeroText] = fields;
    const fm = /^(\d+)(?:x(\d+))?(?::(\d+))?(?:\+(\d+))?$/.exec(formatText ?? '');
    if (!fm) throw badFormat(where('format'), `must be format[xsamples][:skew][+offset], got ${formatText === undefined ? 'nothing' : `"${formatText}"`}`);
    const format = Number(fm[1]);
    if (!FORMATS[format]) throw badFormat(where('format'), `${format} is not supported (supported: ${Object.keys(FORMATS).join(', ')}; a .mat file is format 16+offset)`);
    // Counts past 2^53 are not integers any more in JavaScript (and no file holds that many bytes).
    const count = (digits, what) => {
      const v = digits === undefined ? undefined : Number(digits);
      if (v !== undefined && !Number.isSafeInteger(v)) throw badFormat(where('format'), `${what} must be below 2^53, got ${digits}`);
      return v;
    };
    const perFrame = count(fm[2], 'samples per frame') ?? 1;
    if (perFrame < 1) throw badFormat(where('format'), `samples per frame must be >= 1, got ${perFrame}`);
    if (!Number.isFinite(fs * perFrame)) throw badFormat(where('format'), `${perFrame} samples per frame at ${fs} Hz make a rate beyond float64`);
    const skew = count(fm[3], 'skew') ?? 0;
    const offset = count(fm[4], 'byte offset') ?? 0;
    let gain = DEFAULT_GAIN, baseline = null, units = 'mV';
    if (gainText !== undefined) {
      const gm = /^([^(/]+)(?:\(([^)]*)\))?(?:\/(.*))?$/.exec(gainText);
      if (!gm || !NUMBER.test(gm[1])) throw badFormat(where('gain'), `must be a number of adc units per physical unit [(baseline)][/units], got "${gainText}"`);
      gain = Number(gm[1]);
      if (!Number.isFinite(gain)) throw badFormat(where('gain'), `must be finite, got "${gm[1]}"`);
      // 0: uncalibrated, header(5)'s default; a gain written with a non-zero digit is not 0
      if (gain === 0 && /[1-9]/.test(gm[1].split(/e/i)[0])) throw badFormat(where('gain'), `"${gm[1]}" is too small to be told from 0 in float64`);
      gain ||= DEFAULT_GAIN;
      if (gm[2] !== undefined) {
        if (!INTEGER.test(gm[2])) throw badFormat(where('baseline'), `must be an integer (adc units), got "${gm[2]}"`);
        baseline = Number(gm[2]);
        if (!Number.isSafeInteger(baseline)) throw badFormat(where('baseline'), `must be an integer within +-2^53, got "${gm[2]}"`);
      }
      if (gm[3] !== undefined) units = gm[3];
    }
    if (resText !== undefined && !INTEGER.test(resText)) throw badFormat(where('adc resolution'), `must be an integer number of bits, got "${resText}"`);
    let zero = 0;
    if (zeroText !== undefined) {
      if (!INTEGER.test(zeroText)) throw badFormat(where('adc zero'), `must be an integer, got "${zeroText}"`);
      zero = Number(zeroText);
      if (!Number.isSafeInteger(zero)) throw badFormat(where('adc zero'), `must be an integer within +-2^53, got "${zeroText}"`);
    }
    // The description is the rest of the line after the eighth field (it may hold spaces).
    const description = fields.length > 8 ? line.replace(/^(\S+\s+){8}/, '') : '';
    return { index, line: n, file, format, perFrame, skew, offset, gain, baseline: baseline ?? zero, units, description };
  });
  return { record: recordName, nsig, fs, nsamp, startTime, signals };
}

// Checks a MAT v4 header in front of the samples: int16, little-endian, real, signals x frames,
// its name ending where the .hea says the samples start.
function checkMat(bytes, file, group, nsamp) {
  const where = `${file} (MAT v4 header)`;
  if (bytes.length < MAT_HEADER) throw badFormat(where, `the file holds ${bytes.length} bytes, less than the ${MAT_HEADER}-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [type, rows, cols, imag, nameLength] = [0, 4, 8, 12, 16].map((o) => view.getInt32(o, true));
  if (type !== MAT_INT16_LE) throw badFormat(where, `type ${type}: expected ${MAT_INT16_LE} (a little-endian int16 matrix), as format 16 reads`);
  if (imag !== 0) throw badFormat(where, 'the matrix is complex; expected a real one');
  if (MAT_HEADER + nameLength !== group.offset)
    throw badFormat(where, `the samples start at byte ${MAT_HEADER + nameLength} (after a ${nameLength}-byte name), the header says +${group.offset}`);
  if (rows !== group.frameSamples) throw badFormat(where, `the matrix has ${rows} rows; the .hea gives this file ${group.frameSamples} sample${group.frameSamples === 1 ? '' : 's'} per frame`);
  if (nsamp !== null && cols !== nsamp) throw badFormat(where, `the matrix has ${cols} columns; the .hea gives ${nsamp} samples`);
}

// Signals of one file: consecutive header lines with one format and offset (signal(5)).
function groupSignals(header, name) {
  const groups = [];
  for (const s of header.signals) {
    const last = groups[groups.length - 1];
    if (last && last.file === s.file) {
      const where = `${name} line ${s.line}: format`;
      if (s.format !== last.format) throw badFormat(where, `${s.format}, but earlier signals of ${s.file} are format ${last.format}: one file has one format`);
      if (s.offset !== last.offset) throw badFormat(where, `byte offset ${s.offset}, but earlier signals of ${s.file} start at ${last.offset}`);
      last.signals.push(s);
      last.frameSamples += s.perFrame;
      continue;
    }
    if (groups.some((g) => g.file === s.file)) throw badFormat(`${name} line ${s.line}: file`, `${s.file} is named again after other files: its signals must be on consecutive lines`);
    groups.push({ file: s.file, format: s.format, offset: s.offset, signals: [s], frameSamples: s.perFrame });
  }
  return groups;
}

// One file's samples -> its signals' streams (in header order).
function decodeGroup(bytes, group, header, placement, name) {
  const { file, format, offset, frameSamples } = group;
  const spec = FORMATS[format];
  if (/\.mat$/i.test(file) && offset >= MAT_HEADER) checkMat(bytes, file, group, header.nsamp);
  const available = bytes.length - offset;
  if (available < 0) throw badFormat(file, `holds ${bytes.length} bytes, fewer than its byte offset +${offset}`);
  let frames;
  if (header.nsamp !== null) {
    frames = header.nsamp;
    const need = spec.bytes(frames * frameSamples);
    if (available < need)
      throw badFormat(file, `is truncated: ${frames} frames of ${frameSamples} sample${frameSamples === 1 ? '' : 's'} in format ${format} take ${need} bytes after byte ${offset}, the file has ${available}`);
  } else {
    const samples = spec.samples(available);
    frames = Math.floor(samples / frameSamples);
    if (spec.bytes(frames * frameSamples) !== available)
      throw badFormat(file, `ends inside a frame: ${available} bytes after byte ${offset} are not whole frames of ${frameSamples} sample${frameSamples === 1 ? '' : 's'} in format ${format} (the header gives no number of samples to stop at)`);
  }
  const total = frames * frameSamples;
  const raw = new Int16Array(total);
  if (format === 16) {
    const view = new DataView(bytes.buffer, bytes.byteOffset + offset, 2 * total);
    for (let i = 0; i < total; i++) raw[i] = view.getInt16(2 * i, true);
  } else {
    // 212: sample 2k is byte 0 and the low 4 bits of byte 1 (as its high bits), sample 2k + 1 is
    // byte 2 and the high 4 bits of byte 1; 12-bit two's complement (signal(5)).
    for (let i = 0; i < total; i++) {
      const p = offset + 3 * (i >> 1);
      const v = i % 2 === 0 ? bytes[p] | ((bytes[p + 1] & 0x0f) << 8) : bytes[p + 2] | ((bytes[p + 1] & 0xf0) << 4);
      raw[i] = v >= 2048 ? v - 4096 : v;
    }
  }
  let first = 0;  // the signal's first sample within a frame
  return group.signals.map((s) => {
    const n = frames * s.perFrame, samples = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      // Skew: the signal's sample k was written in frame k + skew (signal(5)); past the end: missing.
      const frame = Math.floor(k / s.perFrame) + s.skew;
      const v = frame < frames ? raw[frame * frameSamples + first + (k % s.perFrame)] : spec.invalid;
      samples[k] = v === spec.invalid ? NaN : (v - s.baseline) / s.gain;
      // A window refuses values beyond float32 (NON_FINITE); here the header's gain is to blame.
      if (Math.abs(samples[k]) > FLOAT32_MAX)
        throw badFormat(`${name} line ${s.line}: gain`, `${s.gain} makes sample ${k} of ${file} (adc ${v}, baseline ${s.baseline}) ${samples[k]} ${s.units}, beyond float32`);
    }
    first += s.perFrame;
    const stream = { sensor: s.index, modality: modalityOf(s.description), rateHz: header.fs * s.perFrame, startTime: header.startTime, samples };
    if (placement !== undefined) stream.placement = placement;
    return stream;
  });
}

const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;
const asBytes = (v) => (v instanceof Uint8Array ? v : new Uint8Array(v));

async function fromPath(path) {
  const { readFile } = await import(/* @vite-ignore */ 'node:fs/promises');
  const read = (p) => readFile(p).then((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength), (e) => {
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a folder' : e.message;
    throw new SensorformerError('IO', `cannot read ${p}: ${why}`, { cause: e });
  });
  const cut = Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'));
  // Signal files are looked for next to the header (WFDB's search path is not consulted).
  return { header: await read(path), name: path.slice(cut + 1), file: (f) => read(path.slice(0, cut + 1) + f) };
}

/**
 * A WFDB record as a window. source: a header path (Node; the signal files next to it), or
 * { header: text or bytes, files: { [file name]: bytes } } (the names the header gives).
 * options (or null): { placement }, the placement of every stream (else left out).
 */
export async function readWfdb(source, options) {
  options ??= {};
  if (!options || typeof options !== 'object') throw invalid(`options must be an object, got ${describe(options)}`);
  for (const key of Object.keys(options)) if (key !== 'placement') throw invalid(`unknown option "${key}" (options: placement)`);
  const { placement } = options;
  if (placement !== undefined && typeof placement !== 'string') throw invalid(`options.placement must be a string, got ${describe(placement)}`);
  let input;
  if (typeof source === 'string') input = await fromPath(source);
  else if (source && typeof source === 'object' && (typeof source.header === 'string' || isBytes(source.header))) {
    const files = source.files ?? {};
    if (typeof files !== 'object') throw invalid(`source.files must be an object of file name -> bytes, got ${describe(files)}`);
    input = {
      header: source.header,
      name: null,
      file: async (f) => {
        const bytes = Object.hasOwn(files, f) ? files[f] : undefined;
        if (bytes === undefined) throw new SensorformerError('IO', `${f}: the header names this signal file, and source.files has no "${f}" (it has ${Object.keys(files).map((k) => `"${k}"`).join(', ') || 'none'})`);
        if (!isBytes(bytes)) throw invalid(`source.files["${f}"] must be a Uint8Array or ArrayBuffer, got ${describe(bytes)}`);
        return asBytes(bytes);
      },
    };
  } else throw invalid(`source must be a header path (Node) or { header, files }, got ${describe(source)}`);
  const text = typeof input.header === 'string' ? input.header : new TextDecoder().decode(asBytes(input.header));
  // Messages name the header file; given as text, by its record name.
  const name = input.name ?? `${/^\s*([^\s/]+)/.exec(text.split(/\r?\n/).find((l) => l.trim() && !l.trim().startsWith('#')) ?? '')?.[1] ?? 'record'}.hea`;
  const header = parseWfdbHeader(text, name);
  if (!header.nsig) throw badFormat(name, 'the record has no signals: nothing to read');
  const streams = [], units = [];
  for (const group of groupSignals(header, name)) {
    streams.push(...decodeGroup(await input.file(group.file), group, header, placement, name));
    units.push(...group.signals.map((s) => s.units));
  }
  return { streams, units };
}
