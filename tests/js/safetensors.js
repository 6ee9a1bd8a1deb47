// Test-only safetensors reader for the committed fixtures (the library's reader is the C++ one in
// src/io; this one exists so the JS tests do not depend on the code they test).
import { readFileSync } from 'node:fs';

const TYPES = { F32: Float32Array, F64: Float64Array, I32: Int32Array, U8: Uint8Array };

export function readSafetensors(path) {
  const bytes = readFileSync(path);
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const start = 8 + n;
  const tensors = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [b, e] = info.data_offsets;
    const copy = new Uint8Array(bytes.subarray(start + b, start + e));  // aligned copy
    tensors[name] = { shape: info.shape, data: new TYPES[info.dtype](copy.buffer) };
  }
  return { metadata: header.__metadata__ ?? {}, tensors };
}

export const fixturePath = (name) => new URL(`../fixtures/${name}`, import.meta.url).pathname;

// torch.allclose: |a - e| <= atol + rtol |e|; returns the largest |a - e| and the worst element.
export function allClose(actual, expected, atol, rtol) {
  let maxAbs = 0, worst = -1, worstRatio = 0;
  for (let i = 0; i < expected.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (Number.isNaN(d)) return { ok: false, maxAbs: NaN, worst: i, message: `NaN at [${i}]` };
    maxAbs = Math.max(maxAbs, d);
    const ratio = d / (atol + rtol * Math.abs(expected[i]));
    if (ratio > worstRatio) { worstRatio = ratio; worst = i; }
  }
  const ok = actual.length === expected.length && worstRatio <= 1;
  const message = `len ${actual.length}/${expected.length}, max|diff| ${maxAbs.toExponential(3)}` +
    (worst >= 0 ? `, worst [${worst}] actual ${actual[worst]} expected ${expected[worst]}` : '') + ` (atol ${atol}, rtol ${rtol})`;
  return { ok, maxAbs, worst, message };
}

/**
 * A safetensors file's bytes (a Buffer) with its header edited: `edit(config, header)` gets the
 * parsed __metadata__.config (written back afterwards) and the header; tensor bytes are kept.
 * Returns the new bytes and where the data buffer starts in them.
 */
export function editHeader(file, edit) {
  const n = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + n).toString('utf8'));
  const config = JSON.parse(header.__metadata__.config);
  edit(config, header);
  header.__metadata__.config = JSON.stringify(config);
  const text = Buffer.from(JSON.stringify(header), 'utf8');
  const bytes = Buffer.alloc(8 + text.length + (file.length - 8 - n));
  bytes.writeBigUInt64LE(BigInt(text.length), 0);
  text.copy(bytes, 8);
  file.copy(bytes, 8 + text.length, 8 + n);
  return { bytes, header, dataStart: 8 + text.length };
}

/**
 * The bytes (a Buffer) of a safetensors file holding `tensors` ({ name: { dtype: 'F32' | 'F64',
 * shape, data } }, written in this order, contiguous from 0) and `metadata` (string values). The
 * header is padded with spaces to a multiple of 8 bytes, as safetensors writers do.
 */
export function writeSafetensors(tensors, metadata = {}) {
  const header = { __metadata__: metadata };
  const parts = [];
  let offset = 0;
  for (const [name, { dtype, shape, data }] of Object.entries(tensors)) {
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    header[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([length, Buffer.from(json), ...parts]);
}
