// Pure decoders for the bytes wearables send over GATT, and the Polar PMD command encoders.
//
// Layouts: the Bluetooth SIG GATT Specification Supplement (Heart Rate 0x2A37, Body Sensor Location
// 0x2A38, Temperature Measurement 0x2A1C, PLX Continuous 0x2A5F, Battery Level 0x2A19, RSC
// Measurement 0x2A53), IEEE 11073-20601 SFLOAT/FLOAT, and Polar's public description of its
// Polar Measurement Data (PMD) service. Written from those descriptions; no SDK code is ported.
//
// Every decoder accepts a DataView, a Uint8Array (any ArrayBuffer view) or an ArrayBuffer, returns
// a plain object, and on malformed input throws BluetoothDecodeError (code 'DECODE_ERROR', with
// `profile` and `offset`) — never another error type, never a partially decoded value. Loops only
// advance through the input, so no input can make a decoder hang.
//
// Strictness (decisions): every field the flags announce must be present; bytes left over after
// the last announced field are an error (except after a PMD features read, which carries more
// bytes than the bitmask); flag bits the specifications mark RFU are ignored.
import { SensorformerError } from '../errors.js';
import { BluetoothDecodeError } from './errors.js';

const LABELS = {
  'sfloat': 'SFLOAT',
  'float': 'FLOAT',
  'heart-rate': 'heart rate',
  'body-sensor-location': 'body sensor location',
  'temperature': 'temperature measurement',
  'plx-continuous': 'PLX continuous measurement',
  'battery': 'battery level',
  'rsc': 'RSC measurement',
  'pmd-features': 'PMD features',
  'pmd-control': 'PMD control response',
  'pmd-data': 'PMD data',
};

function fail(profile, offset, detail) {
  throw new BluetoothDecodeError(profile, offset, `${LABELS[profile] ?? profile}: ${detail}`);
}

function bytesWord(n) {
  return `${n} byte${n === 1 ? '' : 's'}`;
}

function remainWord(n) {
  return `${bytesWord(n)} remain${n === 1 ? 's' : ''}`;
}

function hex(n, digits = 2) {
  return `0x${n.toString(16).toUpperCase().padStart(digits, '0')}`;
}

function describe(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') return v.constructor?.name ?? 'object';
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return `${typeof v} ${v}`;
  return typeof v;
}

// A byte view of the input without copying.
function toBytes(input, profile) {
  try {
    if (input instanceof Uint8Array) return input;
    if (ArrayBuffer.isView(input)) return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    if (input instanceof ArrayBuffer ||
        (typeof SharedArrayBuffer !== 'undefined' && input instanceof SharedArrayBuffer)) {
      return new Uint8Array(input);
    }
  } catch (cause) {  // e.g. a detached buffer
    throw new BluetoothDecodeError(profile, 0,
      `${LABELS[profile] ?? profile}: the input bytes cannot be read (${cause?.message ?? cause})`, { cause });
  }
  return fail(profile, 0, `expected a DataView, Uint8Array or ArrayBuffer, got ${describe(input)}`);
}

// Little-endian reads with a length check before every field.
class Reader {
  constructor(bytes, profile) {
    this.bytes = bytes;
    this.profile = profile;
    this.offset = 0;
  }

  get remaining() {
    return this.bytes.length - this.offset;
  }

  need(n, what) {
    if (this.remaining < n) {
      fail(this.profile, this.offset,
        `expected ${what} (${bytesWord(n)}) at offset ${this.offset} but ${remainWord(this.remaining)}`);
    }
  }

  u8(what) {
    this.need(1, what);
    return this.bytes[this.offset++];
  }

  u16(what) {
    this.need(2, what);
    const b = this.bytes, o = this.offset;
    this.offset += 2;
    return b[o] | (b[o + 1] << 8);
  }

  u24(what) {
    this.need(3, what);
    const b = this.bytes, o = this.offset;
    this.offset += 3;
    return b[o] | (b[o + 1] << 8) | (b[o + 2] << 16);
  }

  u32(what) {
    this.need(4, what);
    const b = this.bytes, o = this.offset;
    this.offset += 4;
    return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
  }

  f32(what) {
    this.need(4, what);
    const b = this.bytes;
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength).getFloat32(this.offset, true);
    this.offset += 4;
    return v;
  }

  end() {
    if (this.remaining !== 0) {
      fail(this.profile, this.offset,
        `expected the value to end at offset ${this.offset} but ${this.remaining} more byte${this.remaining === 1 ? ' follows' : 's follow'}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// IEEE 11073-20601 SFLOAT (16 bit) and FLOAT (32 bit): value = mantissa x 10^exponent.
//
// The reserved encodings are whole words with exponent 0 and are compared against the raw word
// before any sign extension. A word whose mantissa looks reserved but whose exponent is not 0
// (e.g. 0x17FF) is an ordinary number here (2047 x 10^1).

const SFLOAT_RESERVED = new Map([
  [0x07FF, 'nan'], [0x0800, 'nres'], [0x07FE, '+inf'], [0x0802, '-inf'], [0x0801, 'rfu'],
]);
const FLOAT_RESERVED = new Map([
  [0x007FFFFF, 'nan'], [0x00800000, 'nres'], [0x007FFFFE, '+inf'], [0x00800002, '-inf'],
  [0x00800001, 'rfu'],
]);

// Exact powers of ten (every one up to 1e22 is exactly representable as a double).
const POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
  1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

// mantissa x 10^exponent rounded once: with both operands exact, one IEEE multiplication or
// division is correctly rounded, so 986 x 10^-1 = 986 / 10 is the double nearest 98.6 (multiplying
// by 0.1 would not be). Beyond 10^22 the decimal string is parsed, which is also correctly rounded.
function scale(mantissa, exponent) {
  if (exponent === 0) return mantissa;
  if (exponent > 0 && exponent <= 22) return mantissa * POW10[exponent];
  if (exponent < 0 && exponent >= -22) return mantissa / POW10[-exponent];
  return Number(`${mantissa}e${exponent}`);
}

export function decodeSfloat(u16) {
  if (!Number.isInteger(u16) || u16 < 0 || u16 > 0xFFFF) {
    fail('sfloat', 0, `expected an unsigned 16-bit integer, got ${describe(u16)}`);
  }
  const reserved = SFLOAT_RESERVED.get(u16);
  if (reserved) return { value: NaN, missing: reserved };
  let mantissa = u16 & 0x0FFF;
  if (mantissa >= 0x800) mantissa -= 0x1000;
  let exponent = u16 >> 12;
  if (exponent >= 8) exponent -= 16;
  return { value: scale(mantissa, exponent), missing: null };
}

export function decodeFloat(u32) {
  if (!Number.isInteger(u32) || u32 < 0 || u32 > 0xFFFFFFFF) {
    fail('float', 0, `expected an unsigned 32-bit integer, got ${describe(u32)}`);
  }
  const reserved = FLOAT_RESERVED.get(u32);
  if (reserved) return { value: NaN, missing: reserved };
  let mantissa = u32 & 0x00FFFFFF;
  if (mantissa >= 0x800000) mantissa -= 0x1000000;
  let exponent = Math.floor(u32 / 0x1000000);
  if (exponent >= 0x80) exponent -= 0x100;
  return { value: scale(mantissa, exponent), missing: null };
}

// ---------------------------------------------------------------------------------------------
// Heart Rate Measurement 0x2A37.
// flags u8: bit0 heart rate is u16 (else u8); bit2 contact supported, bit1 contact detected;
// bit3 energy expended u16 kJ follows; bit4 RR intervals (u16, 1/1024 s, oldest first) fill the
// rest. With bit4 set at least one RR interval must follow.

export function decodeHeartRate(input) {
  const P = 'heart-rate';
  const r = new Reader(toBytes(input, P), P);
  const flags = r.u8('the flags byte');
  const heartRate = flags & 0x01
    ? r.u16('a 16-bit heart rate (flags bit 0 set)')
    : r.u8('an 8-bit heart rate');
  const contact = flags & 0x04 ? (flags & 0x02 ? 'detected' : 'not-detected') : 'unsupported';
  const energyExpended = flags & 0x08
    ? r.u16('the energy expended (u16 kJ; flags bit 3 set)')
    : null;
  const rrIntervals = [];
  if (flags & 0x10) {
    const left = r.remaining;
    if (left === 0 || left % 2 !== 0) {
      fail(P, r.offset, `flags say an RR list follows but ${remainWord(left)} at offset ${r.offset}` +
        (left === 0 ? '' : ' (RR intervals are 2 bytes each)'));
    }
    while (r.remaining >= 2) rrIntervals.push(r.u16('an RR interval') / 1024);
  }
  r.end();
  return { heartRate, contact, energyExpended, rrIntervals };
}

// ---------------------------------------------------------------------------------------------
// Body Sensor Location 0x2A38: one u8.

const BODY_SENSOR_LOCATIONS = ['other', 'chest', 'wrist', 'finger', 'hand', 'ear-lobe', 'foot'];

export function decodeBodySensorLocation(input) {
  const P = 'body-sensor-location';
  const r = new Reader(toBytes(input, P), P);
  const code = r.u8('the location code');
  r.end();
  return { code, location: BODY_SENSOR_LOCATIONS[code] ?? 'reserved' };
}

// ---------------------------------------------------------------------------------------------
// Temperature Measurement 0x2A1C.
// flags u8: bit0 Fahrenheit (else Celsius); bit1 a 7-byte Date Time follows the value (year u16,
// month, day, hours, minutes, seconds; 0 = unknown for year/month/day); bit2 temperature type u8
// follows. The value is a FLOAT. Date Time fields out of their ranges are a decode error.

function readDateTime(r) {
  const start = r.offset;
  r.need(7, 'a 7-byte date time (flags bit 1 set)');
  const time = {
    year: r.u16('the year'),
    month: r.u8('the month'),
    day: r.u8('the day'),
    hours: r.u8('the hours'),
    minutes: r.u8('the minutes'),
    seconds: r.u8('the seconds'),
  };
  const bad = (field, range) => fail(r.profile, start,
    `date time at offset ${start} has ${field} ${time[field]}, expected ${range}`);
  if (time.year !== 0 && (time.year < 1582 || time.year > 9999)) bad('year', '1582-9999 or 0 (unknown)');
  if (time.month > 12) bad('month', '1-12 or 0 (unknown)');
  if (time.day > 31) bad('day', '1-31 or 0 (unknown)');
  if (time.hours > 23) bad('hours', '0-23');
  if (time.minutes > 59) bad('minutes', '0-59');
  if (time.seconds > 59) bad('seconds', '0-59');
  return time;
}

export function decodeTemperature(input) {
  const P = 'temperature';
  const r = new Reader(toBytes(input, P), P);
  const flags = r.u8('the flags byte');
  const { value, missing } = decodeFloat(r.u32('the temperature (32-bit FLOAT)'));
  const unit = flags & 0x01 ? 'fahrenheit' : 'celsius';
  const time = flags & 0x02 ? readDateTime(r) : null;
  const type = flags & 0x04 ? r.u8('the temperature type (flags bit 2 set)') : null;
  r.end();
  const celsius = unit === 'fahrenheit' ? (value - 32) * 5 / 9 : value;
  return { celsius, unit, value, missing, time, type };
}

// ---------------------------------------------------------------------------------------------
// PLX Continuous Measurement 0x2A5F.
// flags u8, SpO2 (normal) SFLOAT %, PR (normal) SFLOAT bpm; then by flag: bit0 SpO2PR-Fast pair,
// bit1 SpO2PR-Slow pair (2 x SFLOAT each), bit2 measurement status u16, bit3 device and sensor
// status u24, bit4 pulse amplitude index SFLOAT %. `missing` maps each field that carries a
// reserved SFLOAT ('spo2', 'pulseRate', 'fast.spo2', 'slow.pulseRate', 'pulseAmplitudeIndex', ...)
// to its reason; the field's value is NaN then.

export function decodePlxContinuous(input) {
  const P = 'plx-continuous';
  const r = new Reader(toBytes(input, P), P);
  const missing = {};
  const sfloat = (field, what) => {
    const { value, missing: reason } = decodeSfloat(r.u16(what));
    if (reason) missing[field] = reason;
    return value;
  };
  const flags = r.u8('the flags byte');
  const spo2 = sfloat('spo2', 'SpO2 (SFLOAT)');
  const pulseRate = sfloat('pulseRate', 'the pulse rate (SFLOAT)');
  const pair = (name, bit) => (flags & bit ? {
    spo2: sfloat(`${name}.spo2`, `the ${name} SpO2 (SFLOAT)`),
    pulseRate: sfloat(`${name}.pulseRate`, `the ${name} pulse rate (SFLOAT)`),
  } : null);
  const fast = pair('fast', 0x01);
  const slow = pair('slow', 0x02);
  const measurementStatus = flags & 0x04 ? r.u16('the measurement status (u16; flags bit 2 set)') : null;
  const deviceStatus = flags & 0x08
    ? r.u24('the device and sensor status (u24; flags bit 3 set)')
    : null;
  const pulseAmplitudeIndex = flags & 0x10
    ? sfloat('pulseAmplitudeIndex', 'the pulse amplitude index (SFLOAT; flags bit 4 set)')
    : null;
  r.end();
  return { spo2, pulseRate, missing, fast, slow, measurementStatus, deviceStatus, pulseAmplitudeIndex };
}

// ---------------------------------------------------------------------------------------------
// Battery Level 0x2A19: u8 percent, 0-100.

export function decodeBattery(input) {
  const P = 'battery';
  const r = new Reader(toBytes(input, P), P);
  const level = r.u8('the battery level');
  if (level > 100) fail(P, 0, `level ${level} at offset 0 is above 100 %`);
  r.end();
  return { level };
}

// ---------------------------------------------------------------------------------------------
// RSC Measurement 0x2A53.
// flags u8: bit0 stride length present, bit1 total distance present, bit2 running (else walking);
// speed u16 in 1/256 m/s, cadence u8 per minute, stride length u16 in 1/100 m, total distance u32
// in 1/10 m.

export function decodeRsc(input) {
  const P = 'rsc';
  const r = new Reader(toBytes(input, P), P);
  const flags = r.u8('the flags byte');
  const speed = r.u16('the speed (u16, 1/256 m/s)') / 256;
  const cadence = r.u8('the cadence (u8, 1/min)');
  const strideLength = flags & 0x01 ? r.u16('the stride length (u16 cm; flags bit 0 set)') / 100 : null;
  const totalDistance = flags & 0x02 ? r.u32('the total distance (u32 dm; flags bit 1 set)') / 10 : null;
  r.end();
  return { speed, cadence, strideLength, totalDistance, running: (flags & 0x04) !== 0 };
}

// ---------------------------------------------------------------------------------------------
// Polar Measurement Data (PMD).
//
// Measurement types (also the bit numbers of the features bitmask): 0 ECG, 1 PPG, 2 ACC, 3 PPI,
// 5 gyroscope, 6 magnetometer.

export const PMD_MEASUREMENT_TYPES = Object.freeze({
  ecg: 0, ppg: 1, acc: 2, ppi: 3, gyro: 5, magnetometer: 6,
});
const PMD_TYPE_NAMES = ['ecg', 'ppg', 'acc', 'ppi', undefined, 'gyro', 'magnetometer'];

// Reading the control point answers 0x0F followed by the feature bitmask (and more bytes, which
// are not interpreted).
export function decodePmdFeatures(input) {
  const P = 'pmd-features';
  const r = new Reader(toBytes(input, P), P);
  const code = r.u8('the features code 0x0F');
  if (code !== 0x0F) fail(P, 0, `expected 0x0F at offset 0 (a control point read), got ${hex(code)}`);
  const mask = r.u8('the feature bitmask');
  return {
    ecg: (mask & 0x01) !== 0,
    ppg: (mask & 0x02) !== 0,
    acc: (mask & 0x04) !== 0,
    ppi: (mask & 0x08) !== 0,
    gyro: (mask & 0x20) !== 0,
    magnetometer: (mask & 0x40) !== 0,
  };
}

// Commands. `type` is a measurement type code (0-255) or a name from PMD_MEASUREMENT_TYPES.
// Arguments that cannot be encoded are programmer errors: SensorformerError INVALID_ARGUMENT.

function pmdTypeCode(type) {
  if (typeof type === 'string' && Object.hasOwn(PMD_MEASUREMENT_TYPES, type)) return PMD_MEASUREMENT_TYPES[type];
  if (Number.isInteger(type) && type >= 0 && type <= 0xFF) return type;
  throw new SensorformerError('INVALID_ARGUMENT',
    `PMD measurement type must be 0-255 or one of ${Object.keys(PMD_MEASUREMENT_TYPES).join(', ')}, got ${describe(type)}`);
}

export function encodePmdGetSettings(type) {
  return Uint8Array.of(0x01, pmdTypeCode(type));
}

export function encodePmdStop(type) {
  return Uint8Array.of(0x03, pmdTypeCode(type));
}

// Setting TLVs of a start command: [setting type][count = 1][value], values little-endian u16
// except channels (u8); written in the order sample rate, resolution, range, channels. Settings
// that are null/undefined are left out.
const START_SETTINGS = [
  ['sampleRate', 0x00, 2], ['resolution', 0x01, 2], ['range', 0x02, 2], ['channels', 0x04, 1],
];

export function encodePmdStart(type, settings = {}) {
  const out = [0x02, pmdTypeCode(type)];
  if (settings === null || typeof settings !== 'object') {
    throw new SensorformerError('INVALID_ARGUMENT', `PMD start settings must be an object, got ${describe(settings)}`);
  }
  for (const key of Object.keys(settings)) {
    if (!START_SETTINGS.some(([k]) => k === key)) {
      throw new SensorformerError('INVALID_ARGUMENT',
        `unknown PMD start setting '${key}' (expected sampleRate, resolution, range, channels)`);
    }
  }
  for (const [key, id, width] of START_SETTINGS) {
    const v = settings[key];
    if (v === undefined || v === null) continue;
    const max = width === 1 ? 0xFF : 0xFFFF;
    if (!Number.isInteger(v) || v < 0 || v > max) {
      throw new SensorformerError('INVALID_ARGUMENT', `PMD setting ${key} must be an integer 0-${max}, got ${describe(v)}`);
    }
    out.push(id, 1, v & 0xFF);
    if (width === 2) out.push(v >> 8);
  }
  return Uint8Array.from(out);
}

// Control point responses (indications): F0 [op code] [type] [status] [more] [settings TLVs...].
// Status 0 is success. Settings are parsed for successful get-settings (op 0x01) responses:
// TLV [setting type][count][count values]; value widths by setting type: 0 sample rate u16,
// 1 resolution u16, 2 range u16, 3 range in milliunits u32, 4 channels u8, 5 factor float32, all
// little-endian. Every setting is reported as an array (empty when absent); an unknown setting
// type is a decode error (its width, and so everything after it, is unknown).
// Successful start (op 0x02) responses: the bytes after the "more" byte are returned as
// `parameters`; when there are 4 or more, the first 4 are a float32 LE scale factor (`factor`: the
// physical value of one count of the stream's samples, e.g. dps for a gyroscope), else factor is
// null (an H10 answers one extra byte, 00 or 01, which is no factor).
const RESPONSE_SETTINGS = new Map([
  [0x00, ['sampleRate', 'u16']], [0x01, ['resolution', 'u16']], [0x02, ['range', 'u16']],
  [0x03, ['rangeMilliunit', 'u32']], [0x04, ['channels', 'u8']], [0x05, ['factor', 'f32']],
]);
const WIDTH = { u8: 1, u16: 2, u32: 4, f32: 4 };

export function decodePmdControlResponse(input) {
  const P = 'pmd-control';
  const r = new Reader(toBytes(input, P), P);
  const code = r.u8('the response code 0xF0');
  if (code !== 0xF0) {
    fail(P, 0, `expected 0xF0 at offset 0, got ${hex(code)}` +
      (code === 0x0F ? ' (a features read: use decodePmdFeatures)' : ''));
  }
  const opCode = r.u8('the op code');
  const type = r.u8('the measurement type');
  const status = r.u8('the status');
  const ok = status === 0;
  let settings = null;
  if (opCode === 0x02 && ok) {
    if (r.remaining > 0) r.u8('the "more" byte');
    const parameters = r.bytes.slice(r.offset);
    const factor = parameters.length >= 4 ? r.f32('the scale factor') : null;
    return { opCode, type, status, ok, settings, parameters, factor };
  }
  if (opCode === 0x01 && ok) {
    settings = { sampleRate: [], resolution: [], range: [], rangeMilliunit: [], channels: [], factor: [] };
    if (r.remaining > 0) r.u8('the "more" byte');
    while (r.remaining > 0) {
      const at = r.offset;
      const id = r.u8('a setting type');
      const def = RESPONSE_SETTINGS.get(id);
      if (!def) fail(P, at, `unknown setting type ${hex(id)} at offset ${at} (known: 0-5)`);
      const [name, kind] = def;
      const count = r.u8(`the value count of setting ${name}`);
      r.need(count * WIDTH[kind], `${count} ${name} value${count === 1 ? '' : 's'} (${kind} each)`);
      for (let i = 0; i < count; i++) settings[name].push(r[kind](name));
    }
  }
  return { opCode, type, status, ok, settings };
}

// Data frames (notifications):
//   [measurement type: bits 0-5; bits 6-7 reserved][u64 LE timestamp: ns since
//   2000-01-01T00:00:00 (device clock) of the LAST sample in the frame][frame type u8: bit7 delta
//   compressed, bits 0-6 sample format][payload]
//
// The measurement type is byte 0 & 0x3F (online_measurement.pdf: the upper two bits are not part of
// the type and may be set by a device): an ECG frame whose byte 0 is 0x40 is still ECG.
//
// `deviceTime` is the same instant in Unix seconds: Number(timestamp) / 1e9 + 946684800 (the Unix
// time of 2000-01-01T00:00:00Z). It is only an epoch shift: the device clock drifts (~20 ppm) and
// was set by whoever set it; map it onto the host clock with clock.js.
//
// Decoded frames (others return `samples: null` with a copy of the undecoded `payload`). Polar
// Measurement Data Specification for 3rd Party ("Frame types ACC / Magnetometer / Gyroscope / PPG
// / ECG / PPI") and polar-ble-sdk technical_documentation/online_measurement.pdf:
//   ECG (type 0), format 0: signed 24-bit LE µV, one channel                    -> Int32Array
//   PPG (type 1), format 0: signed 24-bit LE ppg0, ppg1, ppg2, ambient (OH1)     -> { ppg0, ppg1,
//     ppg2, ambient } of Int32Array (raw photodiode counts, no unit)
//   ACC (type 2), format 0 / 1 / 2: signed 8 / 16 / 24-bit LE x, y, z in mG    -> {x, y, z} of
//     Int16Array (formats 0 and 1) or Int32Array (format 2)
//   PPI (type 3), format 0: 6 bytes per pulse: heart rate u8 (bpm), pulse-to-pulse interval u16
//     (ms), its error estimate u16 (ms), flags u8 (bit0 blocker: the interval is unreliable, e.g.
//     movement; bit1 skin contact; bit2 skin contact supported)               -> { hr, ppi,
//     errorEstimate } of Uint16Array and { blocker, skinContact, skinContactSupported } of
//     Uint8Array (0 / 1). The frame's timestamp is not used by the device layer (device.js).
//   GYRO (type 5) / MAGNETOMETER (type 6), format 0: signed 16-bit LE x, y, z  -> {x, y, z}
//     Int16Array of raw counts.
// ACC, GYRO and MAGNETOMETER values become physical units with options.factor (a finite number
// other than 1: the factor a start response or get-settings answers, e.g. a Verity Sense's gyro
// 0.07 dps and magnetometer 0.0015 G per count, as its exported values are multiples of them):
// the raw values are multiplied by it and the arrays are Float64Array. `accFactor` is the older
// name of the same option.
//
// Delta-compressed frames (bit7 set; ECG with format 0, PPG, ACC, GYRO and MAGNETOMETER with one
// of their formats above): Polar's public
// PMD documentation (polar-ble-sdk, technical_documentation/online_measurement.pdf, sections 3 and
// 4.3.2-4.3.3; Polar_Measurement_Data_Specification.pdf, "Frame types ACC" and "Delta frame sample
// example from Polar Verity Sense") gives the layout:
//   reference sample: `channels` values of ceil(resolution / 8) bytes each, signed LE, where
//     resolution is the stream's resolution SETTING (the get-settings / start TLV 0x01, "needed for
//     delta compression decoding"), not the frame type's low bits; then blocks
//   [bit width u8 (1-32)][sample count u8 (>= 1)][ceil(width x count x channels / 8) bytes]
//     holding count x channels signed deltas of `width` bits (two's complement), packed LSB first
//     (bit k of the stream is bit k % 8 of byte k / 8 of the block), sample by sample and within a
//     sample channel by channel.
// Each block starts on a byte; padding bits of its last byte are ignored. Each delta is added to
// the previous value of its channel; samples = the reference followed by every reconstructed
// sample. Channels: ECG 1, PPG 4 (3 + ambient), ACC / GYRO / MAGNETOMETER 3. `options.resolution`
// (bits, 1-32) defaults to ECG 14 (the H10's), PPG 22 (a Verity Sense's get-settings answer:
// 3-byte reference values), ACC / GYRO / MAGNETOMETER 16 (3 x int16 reference: the spec's Verity
// Sense example, frame type 0x80, reference D0 FF 65 01 E4 0F = (-48, 357, 4068)). Polar's
// frame-type table lists delta frames for ACC (0x80) but none for ECG (types 1-255 are RFU there):
// ECG delta frames follow the general rule above. A reconstructed value outside the signed range
// of the reference width (e.g. int16 at resolution 16) is a decode error, as are a width of 0 or
// above 32, a count of 0, and a block cut short. Output arrays: ECG and PPG Int32Array; ACC /
// GYRO / MAGNETOMETER Int16Array up to 2-byte references, else Int32Array (Float64Array with a
// factor).

const PMD_HEADER = 10;

// [channels, bytes per sample value] of uncompressed frames by measurement type and sample format;
// a delta frame is decoded when its low bits are one of these formats.
const PMD_FORMATS = {
  0: { 0: [1, 3] },
  1: { 0: [4, 3] },
  2: { 0: [3, 1], 1: [3, 2], 2: [3, 3] },
  5: { 0: [3, 2] },
  6: { 0: [3, 2] },
};
const PMD_PPI = 3;
const PPI_RECORD = 6;  // hr u8, interval u16, error estimate u16, flags u8

function signExtend(value, bits) {
  const half = 2 ** (bits - 1);
  return value >= half ? value - 2 * half : value;
}

// Delta-frame channels and default resolution (bits) by measurement type.
const PMD_DELTA = {
  0: { channels: 1, resolution: 14 },
  1: { channels: 4, resolution: 22 },
  2: { channels: 3, resolution: 16 },
  5: { channels: 3, resolution: 16 },
  6: { channels: 3, resolution: 16 },
};

export function decodePmdData(input, options = {}) {
  const P = 'pmd-data';
  const bytes = toBytes(input, P);
  const factorName = options?.factor !== undefined && options?.factor !== null ? 'factor' : 'accFactor';
  const factor = options?.[factorName];
  if (factor !== undefined && factor !== null && !Number.isFinite(factor)) {
    throw new SensorformerError('INVALID_ARGUMENT', `${factorName} must be a finite number, got ${describe(factor)}`);
  }
  const resolution = options?.resolution;
  if (resolution !== undefined && resolution !== null && !(Number.isInteger(resolution) && resolution >= 1 && resolution <= 32)) {
    throw new SensorformerError('INVALID_ARGUMENT',
      `resolution must be the stream's resolution setting in bits (an integer 1-32), got ${describe(resolution)}`);
  }
  if (bytes.length < PMD_HEADER) {
    fail(P, bytes.length, `expected a 10-byte frame header (type, u64 timestamp, frame type) but the frame has ${bytesWord(bytes.length)}`);
  }
  const typeCode = bytes[0] & 0x3F;
  let lo = 0, hi = 0;
  for (let i = 3; i >= 0; i--) {
    lo = lo * 256 + bytes[1 + i];
    hi = hi * 256 + bytes[5 + i];
  }
  const timestamp = (BigInt(hi) << 32n) | BigInt(lo);
  const deviceTime = Number(timestamp) / 1e9 + 946684800;
  const frameType = bytes[9];
  const compressed = (frameType & 0x80) !== 0;
  const format = frameType & 0x7F;
  const type = PMD_TYPE_NAMES[typeCode] ?? typeCode;
  const result = { type, timestamp, deviceTime, compressed, frameType, samples: null };

  if (typeCode === PMD_PPI && !compressed && format === 0) {
    result.samples = decodePpi(bytes, P, frameType);
    return result;
  }
  const layout = PMD_FORMATS[typeCode]?.[format];
  if (!layout) {
    result.payload = bytes.slice(PMD_HEADER);
    return result;
  }
  let channels, width;
  if (compressed) {
    channels = PMD_DELTA[typeCode].channels;
    width = Math.ceil((resolution ?? PMD_DELTA[typeCode].resolution) / 8);
  } else {
    [channels, width] = layout;
  }
  const bits = 8 * width;
  const columns = compressed
    ? decodeDelta(bytes, channels, width, P, frameType)
    : decodeRaw(bytes, channels, width, P, frameType);

  if (typeCode === 0) {
    result.samples = Int32Array.from(columns[0]);
  } else if (typeCode === 1) {
    const [ppg0, ppg1, ppg2, ambient] = columns.map((c) => Int32Array.from(c));
    result.samples = { ppg0, ppg1, ppg2, ambient };
  } else {
    const scaled = factor !== undefined && factor !== null && factor !== 1;
    const Ctor = scaled ? Float64Array : bits <= 16 ? Int16Array : Int32Array;
    const [x, y, z] = columns.map((c) => (scaled ? Ctor.from(c, (v) => v * factor) : Ctor.from(c)));
    result.samples = { x, y, z };
  }
  return result;
}

function decodePpi(bytes, P, frameType) {
  const n = bytes.length - PMD_HEADER;
  if (n === 0 || n % PPI_RECORD !== 0) {
    fail(P, PMD_HEADER + n - (n % PPI_RECORD),
      `PPI frame type ${hex(frameType)} expects a whole number (>= 1) of ${PPI_RECORD}-byte pulses after offset ${PMD_HEADER} but ${remainWord(n)}`);
  }
  const count = n / PPI_RECORD;
  const out = {
    hr: new Uint16Array(count), ppi: new Uint16Array(count), errorEstimate: new Uint16Array(count),
    blocker: new Uint8Array(count), skinContact: new Uint8Array(count), skinContactSupported: new Uint8Array(count),
  };
  for (let i = 0, o = PMD_HEADER; i < count; i++, o += PPI_RECORD) {
    out.hr[i] = bytes[o];
    out.ppi[i] = bytes[o + 1] | (bytes[o + 2] << 8);
    out.errorEstimate[i] = bytes[o + 3] | (bytes[o + 4] << 8);
    const flags = bytes[o + 5];
    out.blocker[i] = flags & 1;
    out.skinContact[i] = (flags >> 1) & 1;
    out.skinContactSupported[i] = (flags >> 2) & 1;
  }
  return out;
}

function decodeRaw(bytes, channels, width, P, frameType) {
  const stride = channels * width;
  const n = bytes.length - PMD_HEADER;
  if (n === 0 || n % stride !== 0) {
    fail(P, PMD_HEADER + n - (n % stride),
      `frame type ${hex(frameType)} expects a whole number (>= 1) of ${stride}-byte samples after offset ${PMD_HEADER} but ${remainWord(n)}`);
  }
  const columns = Array.from({ length: channels }, () => new Array(n / stride));
  for (let s = 0, o = PMD_HEADER; s < n / stride; s++) {
    for (let c = 0; c < channels; c++, o += width) {
      let v = 0;
      for (let k = width - 1; k >= 0; k--) v = v * 256 + bytes[o + k];
      columns[c][s] = signExtend(v, 8 * width);
    }
  }
  return columns;
}

function decodeDelta(bytes, channels, width, P, frameType) {
  const refBytes = channels * width;
  const sampleBits = 8 * width;
  const min = -(2 ** (sampleBits - 1)), max = 2 ** (sampleBits - 1) - 1;
  if (bytes.length - PMD_HEADER < refBytes) {
    fail(P, PMD_HEADER, `frame type ${hex(frameType)} expects a ${refBytes}-byte reference sample ` +
      `(${channels} x ${width} bytes: ceil(resolution / 8) per channel) at offset ${PMD_HEADER} but ${remainWord(bytes.length - PMD_HEADER)}`);
  }
  const columns = Array.from({ length: channels }, () => []);
  const prev = new Array(channels);
  let o = PMD_HEADER;
  for (let c = 0; c < channels; c++, o += width) {
    let v = 0;
    for (let k = width - 1; k >= 0; k--) v = v * 256 + bytes[o + k];
    prev[c] = signExtend(v, sampleBits);
    columns[c].push(prev[c]);
  }
  while (o < bytes.length) {  // every pass consumes at least 2 bytes
    const left = bytes.length - o;
    if (left < 2) fail(P, o, `expected a delta block header (bit width, sample count) at offset ${o} but ${remainWord(left)}`);
    const deltaBits = bytes[o], count = bytes[o + 1];
    if (deltaBits < 1 || deltaBits > 32) {
      fail(P, o, `delta block at offset ${o} has bit width ${deltaBits}, expected 1-32 (the reference sample ` +
        `before it took ${channels} x ${width} bytes: is the resolution option the stream's resolution setting?)`);
    }
    if (count === 0) fail(P, o + 1, `delta block at offset ${o} has a sample count of 0`);
    const start = o + 2;
    const size = Math.ceil((deltaBits * count * channels) / 8);
    if (bytes.length - start < size) {
      fail(P, start, `delta block at offset ${o} (${count} sample${count === 1 ? '' : 's'} x ${channels} channel${channels === 1 ? '' : 's'} x ${deltaBits} bits) ` +
        `needs ${bytesWord(size)} at offset ${start} but ${remainWord(bytes.length - start)}`);
    }
    let bit = 0;
    for (let s = 0; s < count; s++) {
      for (let c = 0; c < channels; c++) {
        let raw = 0;
        for (let k = 0; k < deltaBits; k++, bit++) {
          if ((bytes[start + (bit >> 3)] >> (bit & 7)) & 1) raw += 2 ** k;
        }
        const v = prev[c] + signExtend(raw, deltaBits);
        if (v < min || v > max) {
          fail(P, start + ((bit - 1) >> 3), `delta block at offset ${o}: sample ${columns[c].length} of channel ${c} ` +
            `reconstructs to ${v}, outside the ${sampleBits}-bit range of its ${width}-byte reference (frame type ${hex(frameType)})`);
        }
        prev[c] = v;
        columns[c].push(v);
      }
    }
    o = start + size;
  }
  return columns;
}
