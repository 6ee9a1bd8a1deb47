// Byte encoders: the device side of the layouts web/src/ble/decoders.js reads (Bluetooth SIG GATT
// Specification Supplement, IEEE 11073-20601, Polar's public PMD documentation). The simulator
// (web/src/simulator/) sends its bytes with them, and toRecording (polar-logger-recording.js)
// writes a Polar Sensor Logger export as the notifications a live device would have sent.

/** A u16 as its two little-endian bytes. */
export const u16le = (v) => [v & 0xFF, (v >> 8) & 0xFF];

/** IEEE-11073 SFLOAT word of mantissa x 10^exponent (mantissa -2048..2047 except reserved). */
export function encodeSfloat(value, exponent) {
  if (Number.isNaN(value)) return 0x07FF;
  const m = Math.round(value / 10 ** exponent);
  if (m < -2046 || m > 2045) throw new RangeError(`SFLOAT mantissa ${m} out of range`);
  return ((exponent & 0xF) << 12) | (m & 0xFFF);
}

/** IEEE-11073 FLOAT word of mantissa x 10^exponent. */
export function encodeFloat(value, exponent) {
  if (Number.isNaN(value)) return 0x007FFFFF;
  const m = Math.round(value / 10 ** exponent);
  if (m < -8388606 || m > 8388605) throw new RangeError(`FLOAT mantissa ${m} out of range`);
  return (((exponent & 0xFF) << 24) | (m & 0xFFFFFF)) >>> 0;
}

/**
 * Heart Rate Measurement 0x2A37 with a u8 heart rate and RR intervals (1/1024 s). Flags: bit 4 when
 * RR intervals follow; with `contact`, bits 1-2 (contact supported and detected) as well. A real
 * H10 sends 0x10: no contact bits.
 */
export function encodeHeartRate(bpm, rr1024 = [], { contact = false } = {}) {
  const flags = (rr1024.length ? 0x10 : 0) | (contact ? 0x06 : 0);
  const out = [flags, Math.max(0, Math.min(255, Math.round(bpm)))];
  for (const v of rr1024) out.push(v & 0xFF, (v >> 8) & 0xFF);
  return Uint8Array.from(out);
}

export function encodeTemperature(celsius, { exponent = -2, time = null, type = null } = {}) {
  const flags = (time ? 0x02 : 0) | (type !== null && type !== undefined ? 0x04 : 0);
  const f = encodeFloat(celsius, exponent);
  const out = [flags, f & 0xFF, (f >>> 8) & 0xFF, (f >>> 16) & 0xFF, f >>> 24];
  if (time) out.push(time.year & 0xFF, time.year >> 8, time.month, time.day, time.hours, time.minutes, time.seconds);
  if (flags & 0x04) out.push(type);
  return Uint8Array.from(out);
}

export function encodePlxContinuous(spo2, pulseRate) {
  const s = Number.isNaN(spo2) ? 0x07FF : encodeSfloat(spo2, -1);
  const p = Number.isNaN(pulseRate) ? 0x07FF : encodeSfloat(pulseRate, 0);
  return Uint8Array.of(0x00, s & 0xFF, s >> 8, p & 0xFF, p >> 8);
}

export function pmdFrame(type, timestampNs, frameType, payloadLength) {
  const out = new Uint8Array(10 + payloadLength);
  out[0] = type;
  let ts = BigInt.asUintN(64, timestampNs);
  for (let i = 0; i < 8; i++, ts >>= 8n) out[1 + i] = Number(ts & 0xFFn);
  out[9] = frameType;
  return out;
}

/** A PMD ECG frame: type 0, frame type 0, signed 24-bit LE µV samples. */
export function encodePmdEcg(timestampNs, samples) {
  const out = pmdFrame(0x00, timestampNs, 0x00, samples.length * 3);
  samples.forEach((v, i) => {
    const x = Math.max(-8388608, Math.min(8388607, Math.round(v))) & 0xFFFFFF;
    out[10 + 3 * i] = x & 0xFF;
    out[11 + 3 * i] = (x >> 8) & 0xFF;
    out[12 + 3 * i] = x >> 16;
  });
  return out;
}

/** A PMD ACC frame, frame type 0x01: int16 LE x, y, z per sample (mG). */
export function encodePmdAccRaw(timestampNs, samples) {
  const out = pmdFrame(0x02, timestampNs, 0x01, samples.length * 6);
  samples.forEach((s, i) => {
    for (let a = 0; a < 3; a++) {
      const v = s[a] & 0xFFFF;
      out[10 + 6 * i + 2 * a] = v & 0xFF;
      out[11 + 6 * i + 2 * a] = v >> 8;
    }
  });
  return out;
}

// Smallest two's complement width holding v (|v| < 2^31: PMD values are at most 24 bits).
const bitsFor = (v) => 33 - Math.clz32(v >= 0 ? v : ~v);

// Blocks of up to `blockSamples` deltas over samples 1 .. n - 1, each with the smallest width its
// deltas need (widths[j]: the width of sample j's deltas).
function deltaBlocks(widths, n, blockSamples) {
  const blocks = [];
  for (let i = 1; i < n; i += blockSamples) {
    const end = Math.min(n, i + blockSamples);
    let width = 1;
    for (let j = i; j < end; j++) width = Math.max(width, widths[j]);
    blocks.push({ from: i, to: end, width });
  }
  return blocks;
}

function deltaSize(blocks, channels, width) {
  return 10 + channels * width + blocks.reduce((s, b) => s + 2 + Math.ceil((b.width * (b.to - b.from) * channels) / 8), 0);
}

/**
 * A delta-compressed PMD frame in the layout of Polar's public PMD documentation (frame type
 * 0x80 = delta frame; Polar Measurement Data Specification, "Frame types ACC" and the Verity Sense
 * delta example): a reference sample of channels x `width` bytes (signed LE; width =
 * ceil(resolution / 8): 2 for the 16-bit ACC, gyroscope and magnetometer, 3 for 22-bit PPG), then
 * blocks [bit width][count][count x channels signed deltas, LSB-first packed]. `samples`: one array
 * of channel values per sample. Takes as many leading samples as fit in maxBytes (a device fills
 * its notification): -> { bytes, count }. `timestampNsOfLast` may be a function of that count.
 */
export function encodePmdDelta(type, timestampNsOfLast, samples, { width = 2, maxBytes = 229, blockSamples = 16, frameType = 0x80 } = {}) {
  const channels = samples[0].length;
  const widths = new Array(samples.length).fill(1);
  for (let j = 1; j < samples.length; j++) {
    for (let a = 0; a < channels; a++) widths[j] = Math.max(widths[j], bitsFor(samples[j][a] - samples[j - 1][a]));
  }
  // The frame's size only grows with its sample count: add samples while it fits.
  let n = 1, done = 10 + channels * width, blockWidth = 0, blockCount = 0;
  for (let j = 1; j < samples.length; j++) {
    if ((j - 1) % blockSamples === 0 && blockCount) {
      done += 2 + Math.ceil((blockWidth * blockCount * channels) / 8);
      blockWidth = blockCount = 0;
    }
    const w = Math.max(blockWidth, widths[j]);
    if (done + 2 + Math.ceil((w * (blockCount + 1) * channels) / 8) > maxBytes) break;
    blockWidth = w;
    blockCount++;
    n = j + 1;
  }
  const blocks = deltaBlocks(widths, n, blockSamples);
  const ts = typeof timestampNsOfLast === 'function' ? timestampNsOfLast(n) : timestampNsOfLast;
  const out = pmdFrame(type, ts, frameType, deltaSize(blocks, channels, width) - 10);
  const mask = 2 ** (8 * width);
  for (let a = 0; a < channels; a++) {
    let v = ((samples[0][a] % mask) + mask) % mask;
    for (let k = 0; k < width; k++, v = Math.floor(v / 256)) out[10 + width * a + k] = v & 0xFF;
  }
  let o = 10 + channels * width;
  for (const b of blocks) {
    out[o] = b.width;
    out[o + 1] = b.to - b.from;
    const start = o + 2;
    let bit = 0;
    for (let j = b.from; j < b.to; j++) {
      for (let a = 0; a < channels; a++) {
        const d = samples[j][a] - samples[j - 1][a];
        for (let k = 0; k < b.width; k++, bit++) {
          if (Math.floor(d / 2 ** k) & 1) out[start + (bit >> 3)] |= 1 << (bit & 7);
        }
      }
    }
    o = start + Math.ceil(bit / 8);
  }
  return { bytes: out, count: n };
}

/**
 * A delta-compressed PMD ACC frame (type 2, 3 x int16 reference: the 16-bit resolution an H10
 * offers): encodePmdDelta. `frameType` 0x81 gives the same layout with the low bits of an int16
 * raw frame (what some parsers emit and accept).
 */
export function encodePmdAccDelta(timestampNsOfLast, samples, { maxBytes = 229, blockSamples = 16, frameType = 0x80 } = {}) {
  return encodePmdDelta(0x02, timestampNsOfLast, samples, { width: 2, maxBytes, blockSamples, frameType });
}

/** A PMD PPI frame (type 3, frame type 0): [{ hr, ppi, error, flags }] -> bytes. */
export function encodePmdPpi(timestampNs, pulses) {
  const out = pmdFrame(0x03, timestampNs, 0x00, 6 * pulses.length);
  pulses.forEach((p, i) => {
    const o = 10 + 6 * i;
    out[o] = Math.max(0, Math.min(255, Math.round(p.hr)));
    [out[o + 1], out[o + 2]] = u16le(Math.max(0, Math.min(0xFFFF, Math.round(p.ppi))));
    [out[o + 3], out[o + 4]] = u16le(Math.max(0, Math.min(0xFFFF, Math.round(p.error))));
    out[o + 5] = p.flags;
  });
  return out;
}
