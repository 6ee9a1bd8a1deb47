// The Bluetooth decoders (web/src/ble/decoders.js): hand-computed byte fixtures for every profile,
// every truncation, and fast-check properties (arbitrary bytes only ever give a value or a
// BluetoothDecodeError; encode -> decode round trips).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';

import {
  decodeSfloat, decodeFloat, decodeHeartRate, decodeBodySensorLocation, decodeTemperature,
  decodePlxContinuous, decodeBattery, decodeRsc, decodePmdFeatures, encodePmdStart,
  encodePmdGetSettings, encodePmdStop, decodePmdControlResponse, decodePmdData,
} from '../../web/src/ble/decoders.js';
import { BluetoothDecodeError, BluetoothUnavailableError } from '../../web/src/ble/errors.js';
import { SensorformerError } from '../../web/src/errors.js';

// Every property below runs on the same generated cases each time (a test that passes by luck
// fails CI for everyone); FC_SEED=<n> explores other cases, and a failure prints its seed.
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 0x5eed) });

// '10 4B 34 03' -> Uint8Array
const h = (s) => Uint8Array.from(s.trim().split(/\s+/).filter(Boolean).map((x) => parseInt(x, 16)));
const hexOf = (u8) => Array.from(u8, (b) => b.toString(16).toUpperCase().padStart(2, '0')).join(' ');

function isDecodeError(e, bytesLength) {
  return e instanceof BluetoothDecodeError && e instanceof SensorformerError && e.code === 'DECODE_ERROR' &&
    typeof e.profile === 'string' && e.profile.length > 0 && Number.isInteger(e.offset) && e.offset >= 0 &&
    (bytesLength === undefined || e.offset <= bytesLength) && typeof e.message === 'string' && e.message.length > 0;
}

function assertDecodeError(fn, profile, what = '') {
  let thrown;
  try {
    const v = fn();
    assert.fail(`${what}: expected a DECODE_ERROR, got ${JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x))}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    thrown = e;
  }
  assert.ok(isDecodeError(thrown), `${what}: expected a BluetoothDecodeError, got ${thrown}`);
  if (profile) assert.equal(thrown.profile, profile, what);
  return thrown;
}

const close = (a, b, eps = 1e-12) => assert.ok(Math.abs(a - b) <= eps, `${a} != ${b}`);

// --------------------------------------------------------------------------------------------
// errors.js

test('error classes carry their codes and fields', () => {
  const d = new BluetoothDecodeError('heart-rate', 4, 'heart rate: bad');
  assert.ok(d instanceof SensorformerError && d instanceof Error);
  assert.equal(d.code, 'DECODE_ERROR');
  assert.equal(d.profile, 'heart-rate');
  assert.equal(d.offset, 4);
  assert.equal(d.name, 'BluetoothDecodeError');
  const u = new BluetoothUnavailableError('insecure-context', 'use https');
  assert.ok(u instanceof SensorformerError);
  assert.equal(u.code, 'BLUETOOTH_UNAVAILABLE');
  assert.equal(u.reason, 'insecure-context');
  assert.equal(u.message, 'use https');
  for (const reason of ['no-api', 'insecure-context', 'adapter-unavailable', 'permission-denied']) {
    assert.ok(new BluetoothUnavailableError(reason).message.length > 0);
  }
});

// --------------------------------------------------------------------------------------------
// IEEE 11073 SFLOAT / FLOAT

test('SFLOAT fixtures', () => {
  // word: exponent = top nibble (signed), mantissa = low 12 bits (signed)
  const cases = [
    [0xF3DA, 98.6],      // e -1, m 0x3DA = 986
    [0x0072, 114],       // e 0, m 114
    [0x2003, 300],       // e 2, m 3
    [0xFFFF, -0.1],      // e -1, m -1
    [0x0FFF, -1],        // e 0, m 0xFFF = -1
    [0x8001, 1e-8],      // e -8, m 1
    [0x7001, 1e7],       // e 7, m 1
    [0x77FF, 2047e7],    // e 7, m 2047 (largest)
    [0x0000, 0],
    [0x17FF, 20470],     // mantissa 0x7FF with exponent 1 is NOT the NaN word
    [0xF800, -204.8],    // e -1, m -2048 (mantissa 0x800 with exponent -1 is not NRes)
  ];
  for (const [word, value] of cases) {
    assert.deepEqual(decodeSfloat(word), { value, missing: null }, hexOf([word >> 8, word & 255]));
  }
  assert.equal(decodeSfloat(0xF3DA).value, 98.6);  // exactly the double nearest 98.6
  const reserved = { 0x07FF: 'nan', 0x0800: 'nres', 0x07FE: '+inf', 0x0802: '-inf', 0x0801: 'rfu' };
  for (const [word, reason] of Object.entries(reserved)) {
    const r = decodeSfloat(Number(word));
    assert.ok(Number.isNaN(r.value));
    assert.equal(r.missing, reason);
  }
  for (const bad of [-1, 0x10000, 1.5, NaN, '12', null, undefined, 12n]) {
    assertDecodeError(() => decodeSfloat(bad), 'sfloat', String(bad));
  }
});

test('FLOAT fixtures', () => {
  const cases = [
    [0xFF00016E, 36.6],        // e -1, m 366
    [0xFE00E3C2, 583.06],      // e -2, m 58306
    [0x00FFFFFF, -1],          // e 0, m -1
    [0x01800000, -83886080],   // e 1, m -8388608 (not NRes: exponent 1)
    [0x00000000, 0],
    [0x05000007, 700000],      // e 5, m 7
    [0x807FFFFD, Number('8388605e-128')],  // e -128: beyond exact powers of ten
    [0x7F000001, 1e127],       // e 127
  ];
  for (const [word, value] of cases) assert.deepEqual(decodeFloat(word), { value, missing: null }, word.toString(16));
  const reserved = {
    0x007FFFFF: 'nan', 0x00800000: 'nres', 0x007FFFFE: '+inf', 0x00800002: '-inf', 0x00800001: 'rfu',
  };
  for (const [word, reason] of Object.entries(reserved)) {
    const r = decodeFloat(Number(word));
    assert.ok(Number.isNaN(r.value));
    assert.equal(r.missing, reason);
  }
  for (const bad of [-1, 2 ** 32, 0.5, Infinity, '1', {}]) assertDecodeError(() => decodeFloat(bad), 'float', String(bad));
});

// --------------------------------------------------------------------------------------------
// Heart Rate Measurement 0x2A37

test('heart rate fixtures', () => {
  const hr = (s) => decodeHeartRate(h(s));
  assert.deepEqual(hr('00 48'), { heartRate: 72, contact: 'unsupported', energyExpended: null, rrIntervals: [] });
  assert.deepEqual(hr('01 48 01'), { heartRate: 328, contact: 'unsupported', energyExpended: null, rrIntervals: [] });
  assert.equal(hr('06 48').contact, 'detected');        // bit2 supported + bit1 detected
  assert.equal(hr('04 48').contact, 'not-detected');    // supported, not detected
  assert.equal(hr('02 48').contact, 'unsupported');     // bit1 without bit2 means nothing
  assert.equal(hr('E0 48').heartRate, 72);              // RFU bits 5-7 ignored
  assert.deepEqual(hr('08 48 E8 03'), { heartRate: 72, contact: 'unsupported', energyExpended: 1000, rrIntervals: [] });
  // 75 bpm, one RR of 820/1024 s: a notification captured from a real H10 (flags 0x10; public
  // capture, github.com/fstanis/polar-h10-web test/helpers/captured.ts)
  assert.deepEqual(hr('10 4B 34 03'), { heartRate: 75, contact: 'unsupported', energyExpended: null, rrIntervals: [820 / 1024] });
  // u16 HR 0x012C = 300, energy 10 kJ, RR 0x0400 = 1 s, 0x0200 = 0.5 s, 0x039A = 922/1024 s, contact detected
  assert.deepEqual(hr('1F 2C 01 0A 00 00 04 00 02 9A 03'),
    { heartRate: 300, contact: 'detected', energyExpended: 10, rrIntervals: [1, 0.5, 922 / 1024] });
  const e = assertDecodeError(() => hr('18 4B E8 03 01'), 'heart-rate');
  assert.match(e.message, /^heart rate: flags say an RR list follows but 1 byte remains at offset 4/);
  assert.equal(e.offset, 4);
  assertDecodeError(() => hr('10 4B'), 'heart-rate', 'RR flag with no RR');
  assertDecodeError(() => hr('10 4B 34 03 01'), 'heart-rate', 'odd RR bytes');
  assertDecodeError(() => hr('00 48 00'), 'heart-rate', 'trailing byte');
  assertDecodeError(() => hr(''), 'heart-rate', 'empty');
  assertDecodeError(() => decodeHeartRate('10 4B'), 'heart-rate', 'a string');
  assertDecodeError(() => decodeHeartRate(null), 'heart-rate', 'null');
});

test('decoders accept DataView, Uint8Array (with offset) and ArrayBuffer', () => {
  const buf = new ArrayBuffer(8);
  const all = new Uint8Array(buf);
  all.set(h('AA BB 10 4B 34 03 CC DD'));
  const expected = { heartRate: 75, contact: 'unsupported', energyExpended: null, rrIntervals: [820 / 1024] };
  assert.deepEqual(decodeHeartRate(new DataView(buf, 2, 4)), expected);
  assert.deepEqual(decodeHeartRate(new Uint8Array(buf, 2, 4)), expected);
  assert.deepEqual(decodeHeartRate(h('10 4B 34 03').buffer), expected);
  assert.deepEqual(decodeBattery(new DataView(h('55').buffer)), { level: 0x55 });
});

// --------------------------------------------------------------------------------------------
// Body Sensor Location, Battery

test('body sensor location fixtures', () => {
  const names = ['other', 'chest', 'wrist', 'finger', 'hand', 'ear-lobe', 'foot'];
  names.forEach((location, code) => assert.deepEqual(decodeBodySensorLocation(Uint8Array.of(code)), { code, location }));
  assert.deepEqual(decodeBodySensorLocation(h('07')), { code: 7, location: 'reserved' });
  assert.deepEqual(decodeBodySensorLocation(h('FF')), { code: 255, location: 'reserved' });
  assertDecodeError(() => decodeBodySensorLocation(h('')), 'body-sensor-location');
  assertDecodeError(() => decodeBodySensorLocation(h('01 00')), 'body-sensor-location');
});

test('battery fixtures', () => {
  assert.deepEqual(decodeBattery(h('00')), { level: 0 });
  assert.deepEqual(decodeBattery(h('64')), { level: 100 });
  assert.deepEqual(decodeBattery(h('2A')), { level: 42 });
  const e = assertDecodeError(() => decodeBattery(h('65')), 'battery');  // 101
  assert.match(e.message, /101/);
  assertDecodeError(() => decodeBattery(h('FF')), 'battery');
  assertDecodeError(() => decodeBattery(h('')), 'battery');
  assertDecodeError(() => decodeBattery(h('50 00')), 'battery');
});

// --------------------------------------------------------------------------------------------
// Temperature Measurement 0x2A1C

test('temperature fixtures', () => {
  const t = (s) => decodeTemperature(h(s));
  // FLOAT 0xFF00016E = 366 x 10^-1 = 36.6 C
  assert.deepEqual(t('00 6E 01 00 FF'),
    { celsius: 36.6, unit: 'celsius', value: 36.6, missing: null, time: null, type: null });
  // Fahrenheit: 0xFF0003DA = 98.6 F -> (98.6 - 32) x 5 / 9 = 37 C
  const f = t('01 DA 03 00 FF');
  assert.equal(f.unit, 'fahrenheit');
  assert.equal(f.value, 98.6);
  close(f.celsius, 37);
  // time + type: 2024-03-15 14:30:45 (0x07E8 = 2024), type 2 (body)
  assert.deepEqual(t('06 6E 01 00 FF E8 07 03 0F 0E 1E 2D 02'), {
    celsius: 36.6, unit: 'celsius', value: 36.6, missing: null,
    time: { year: 2024, month: 3, day: 15, hours: 14, minutes: 30, seconds: 45 }, type: 2,
  });
  // Fahrenheit with time only; unknown (0) year/month/day are allowed
  const ft = t('03 DA 03 00 FF 00 00 00 00 00 00 00');
  assert.deepEqual(ft.time, { year: 0, month: 0, day: 0, hours: 0, minutes: 0, seconds: 0 });
  assert.equal(ft.type, null);
  // type only: 6 (mouth); RFU flag bits ignored
  assert.deepEqual(t('F4 6E 01 00 FF 06'),
    { celsius: 36.6, unit: 'celsius', value: 36.6, missing: null, time: null, type: 6 });
  // negative: 0xFF FFFF9C = -100 x 10^-1 = -10 C
  assert.equal(t('00 9C FF FF FF').celsius, -10);
  // reserved FLOATs, each reason, in both units
  const reserved = [['FF FF 7F 00', 'nan'], ['00 00 80 00', 'nres'], ['FE FF 7F 00', '+inf'],
    ['02 00 80 00', '-inf'], ['01 00 80 00', 'rfu']];
  for (const [bytes, reason] of reserved) {
    for (const flags of ['00', '01']) {
      const r = t(`${flags} ${bytes}`);
      assert.equal(r.missing, reason);
      assert.ok(Number.isNaN(r.value) && Number.isNaN(r.celsius));
    }
  }
  // malformed date times
  assertDecodeError(() => t('02 6E 01 00 FF E8 07 0D 0F 0E 1E 2D'), 'temperature', 'month 13');
  assertDecodeError(() => t('02 6E 01 00 FF E8 07 03 20 0E 1E 2D'), 'temperature', 'day 32');
  assertDecodeError(() => t('02 6E 01 00 FF E8 07 03 0F 18 1E 2D'), 'temperature', 'hour 24');
  assertDecodeError(() => t('02 6E 01 00 FF E8 07 03 0F 0E 3C 2D'), 'temperature', 'minute 60');
  assertDecodeError(() => t('02 6E 01 00 FF E8 07 03 0F 0E 1E 3C'), 'temperature', 'second 60');
  assertDecodeError(() => t('02 6E 01 00 FF 10 00 03 0F 0E 1E 2D'), 'temperature', 'year 16');
  assertDecodeError(() => t('00 6E 01 00 FF 02'), 'temperature', 'trailing byte');
});

// --------------------------------------------------------------------------------------------
// PLX Continuous 0x2A5F

test('PLX continuous fixtures', () => {
  const p = (s) => decodePlxContinuous(h(s));
  // SpO2 0x0062 = 98 %, PR 0x0048 = 72 bpm
  assert.deepEqual(p('00 62 00 48 00'), {
    spo2: 98, pulseRate: 72, missing: {}, fast: null, slow: null,
    measurementStatus: null, deviceStatus: null, pulseAmplitudeIndex: null,
  });
  // every optional field: fast 97/73, slow 96/71, measurement status 0x0020, device status
  // 0x000201, PAI 0xF02D = 45 x 10^-1 = 4.5 %
  assert.deepEqual(p('1F 62 00 48 00 61 00 49 00 60 00 47 00 20 00 01 02 00 2D F0'), {
    spo2: 98, pulseRate: 72, missing: {}, fast: { spo2: 97, pulseRate: 73 }, slow: { spo2: 96, pulseRate: 71 },
    measurementStatus: 0x0020, deviceStatus: 0x000201, pulseAmplitudeIndex: 4.5,
  });
  // each optional field alone
  assert.deepEqual(p('01 62 00 48 00 61 00 49 00').fast, { spo2: 97, pulseRate: 73 });
  assert.deepEqual(p('02 62 00 48 00 60 00 47 00').slow, { spo2: 96, pulseRate: 71 });
  assert.equal(p('04 62 00 48 00 34 12').measurementStatus, 0x1234);
  assert.equal(p('08 62 00 48 00 56 34 12').deviceStatus, 0x123456);
  assert.equal(p('10 62 00 48 00 2D F0').pulseAmplitudeIndex, 4.5);
  // SpO2 as SFLOAT with exponent: 0xF3D5 = 981 x 10^-1 = 98.1
  assert.equal(p('00 D5 F3 48 00').spo2, 98.1);
  // reserved SFLOATs
  let r = p('00 FF 07 48 00');
  assert.ok(Number.isNaN(r.spo2));
  assert.deepEqual(r.missing, { spo2: 'nan' });
  r = p('00 62 00 FF 07');
  assert.deepEqual(r.missing, { pulseRate: 'nan' });
  r = p('00 01 08 00 08');
  assert.deepEqual(r.missing, { spo2: 'rfu', pulseRate: 'nres' });
  r = p('01 62 00 48 00 FE 07 49 00');
  assert.deepEqual(r.missing, { 'fast.spo2': '+inf' });
  assert.ok(Number.isNaN(r.fast.spo2));
  r = p('02 62 00 48 00 60 00 02 08');
  assert.deepEqual(r.missing, { 'slow.pulseRate': '-inf' });
  r = p('10 62 00 48 00 00 08');
  assert.deepEqual(r.missing, { pulseAmplitudeIndex: 'nres' });
  assert.ok(Number.isNaN(r.pulseAmplitudeIndex));
  assertDecodeError(() => p('00 62 00 48 00 00'), 'plx-continuous', 'trailing byte');
  assertDecodeError(() => p('08 62 00 48 00 56 34'), 'plx-continuous', 'short device status');
});

// --------------------------------------------------------------------------------------------
// RSC Measurement 0x2A53

test('RSC fixtures', () => {
  const r = (s) => decodeRsc(h(s));
  // speed 0x0300 = 768/256 = 3 m/s, cadence 0xB4 = 180/min
  assert.deepEqual(r('00 00 03 B4'), { speed: 3, cadence: 180, strideLength: null, totalDistance: null, running: false });
  // all: speed 0x0280 = 2.5 m/s, cadence 170, stride 0x008C = 140 cm, distance 0x2710 = 10000 dm
  assert.deepEqual(r('07 80 02 AA 8C 00 10 27 00 00'),
    { speed: 2.5, cadence: 170, strideLength: 1.4, totalDistance: 1000, running: true });
  assert.deepEqual(r('04 40 01 5A'), { speed: 1.25, cadence: 90, strideLength: null, totalDistance: null, running: true });
  assert.deepEqual(r('01 01 00 00 64 00'), { speed: 1 / 256, cadence: 0, strideLength: 1, totalDistance: null, running: false });
  assert.deepEqual(r('02 00 01 50 FF FF FF FF'),
    { speed: 1, cadence: 80, strideLength: null, totalDistance: 429496729.5, running: false });
  assertDecodeError(() => r('01 00 03 B4 64'), 'rsc', 'short stride');
  assertDecodeError(() => r('00 00 03 B4 00'), 'rsc', 'trailing byte');
});

// --------------------------------------------------------------------------------------------
// Polar PMD: features, commands, control responses

test('PMD features', () => {
  const none = { ecg: false, ppg: false, acc: false, ppi: false, gyro: false, magnetometer: false };
  // H10: ECG + ACC (0x05), followed by more bytes
  assert.deepEqual(decodePmdFeatures(h('0F 05 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00')), { ...none, ecg: true, acc: true });
  // PPG + ACC + PPI + gyro + magnetometer: 0x02 | 0x04 | 0x08 | 0x20 | 0x40 = 0x6E
  assert.deepEqual(decodePmdFeatures(h('0F 6E')),
    { ...none, ppg: true, acc: true, ppi: true, gyro: true, magnetometer: true });
  assert.deepEqual(decodePmdFeatures(h('0F 00')), none);
  assertDecodeError(() => decodePmdFeatures(h('F0 05')), 'pmd-features');
  assertDecodeError(() => decodePmdFeatures(h('0F')), 'pmd-features');
  assertDecodeError(() => decodePmdFeatures(h('')), 'pmd-features');
});

test('PMD commands', () => {
  // H10 ECG 130 Hz 14 bit; ACC 200 Hz 16 bit 8 G (setting TLVs of Polar's PMD documentation,
  // polar-ble-sdk technical_documentation/online_measurement.pdf, table 5)
  assert.equal(hexOf(encodePmdStart(0, { sampleRate: 130, resolution: 14 })), '02 00 00 01 82 00 01 01 0E 00');
  assert.equal(hexOf(encodePmdStart(2, { sampleRate: 200, resolution: 16, range: 8 })),
    '02 02 00 01 C8 00 01 01 10 00 02 01 08 00');
  assert.equal(hexOf(encodePmdStart('acc', { range: 8, resolution: 16, sampleRate: 200 })),
    '02 02 00 01 C8 00 01 01 10 00 02 01 08 00');  // order fixed by setting type, not by key order
  assert.equal(hexOf(encodePmdStart(1, { sampleRate: 135, resolution: 22, channels: 4 })),
    '02 01 00 01 87 00 01 01 16 00 04 01 04');
  assert.equal(hexOf(encodePmdStart(0, { sampleRate: 0x1234 })), '02 00 00 01 34 12');
  assert.equal(hexOf(encodePmdStart(0)), '02 00');
  assert.equal(hexOf(encodePmdGetSettings(2)), '01 02');
  assert.equal(hexOf(encodePmdGetSettings('ecg')), '01 00');
  assert.equal(hexOf(encodePmdStop(0)), '03 00');
  assert.equal(hexOf(encodePmdStop('acc')), '03 02');
  assert.ok(encodePmdStop(0) instanceof Uint8Array);
  const invalid = (fn) => assert.throws(fn, (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT');
  invalid(() => encodePmdStart(256, {}));
  invalid(() => encodePmdStart('eeg', {}));
  invalid(() => encodePmdStart(0, { sampleRate: 70000 }));
  invalid(() => encodePmdStart(0, { sampleRate: 130.5 }));
  invalid(() => encodePmdStart(0, { channels: 256 }));
  invalid(() => encodePmdStart(0, { samplerate: 130 }));
  invalid(() => encodePmdGetSettings(-1));
  invalid(() => encodePmdStop('x'));
});

test('PMD control responses', () => {
  const c = (s) => decodePmdControlResponse(h(s));
  assert.deepEqual(c('F0 02 00 00 00'), { opCode: 2, type: 0, status: 0, ok: true, settings: null, parameters: new Uint8Array(0), factor: null });
  // An H10's ACC start answer ends in one byte (01): kept as a parameter, no factor.
  assert.deepEqual(c('F0 02 02 00 00 01'), { opCode: 2, type: 2, status: 0, ok: true, settings: null, parameters: Uint8Array.of(1), factor: null });
  // A start answer with 4 bytes after "more": a float32 LE factor, here 0.07 (0x3D8F5C29, the
  // gyroscope count of a Verity Sense in dps).
  const gyro = c('F0 02 05 00 00 29 5C 8F 3D');
  assert.equal(gyro.factor, Math.fround(0.07));
  assert.deepEqual(Array.from(gyro.parameters), [0x29, 0x5C, 0x8F, 0x3D]);
  assert.deepEqual(c('F0 03 02 00'), { opCode: 3, type: 2, status: 0, ok: true, settings: null });
  // errors: start ACC -> 5 (invalid parameter); get settings of an unsupported type -> 3
  assert.deepEqual(c('F0 02 02 05 00'), { opCode: 2, type: 2, status: 5, ok: false, settings: null });
  assert.deepEqual(c('F0 01 01 03 00'), { opCode: 1, type: 1, status: 3, ok: false, settings: null });
  const empty = { sampleRate: [], resolution: [], range: [], rangeMilliunit: [], channels: [], factor: [] };
  // H10 ECG settings: 130 Hz (0x0082), 14 bit
  assert.deepEqual(c('F0 01 00 00 00 00 01 82 00 01 01 0E 00'),
    { opCode: 1, type: 0, status: 0, ok: true, settings: { ...empty, sampleRate: [130], resolution: [14] } });
  // ACC settings: 25/50/100/200 Hz, 16 bit, 2/4/8 G, 3 channels, factor 2^-10 (float32 0x3A800000)
  assert.deepEqual(c('F0 01 02 00 00 00 04 19 00 32 00 64 00 C8 00 01 01 10 00 02 03 02 00 04 00 08 00 04 01 03 05 01 00 00 80 3A'), {
    opCode: 1, type: 2, status: 0, ok: true,
    settings: { ...empty, sampleRate: [25, 50, 100, 200], resolution: [16], range: [2, 4, 8], channels: [3], factor: [2 ** -10] },
  });
  // range in milliunits (u32): 1000
  assert.deepEqual(c('F0 01 01 00 00 03 01 E8 03 00 00').settings.rangeMilliunit, [1000]);
  // a setting with 0 values is well formed
  assert.deepEqual(c('F0 01 00 00 00 00 00').settings, empty);
  // status only / "more" only
  assert.deepEqual(c('F0 01 00 00').settings, empty);
  assertDecodeError(() => c('0F 05'), 'pmd-control', 'a features read');
  assertDecodeError(() => c('F0 01 00'), 'pmd-control', 'no status');
  const unknown = assertDecodeError(() => c('F0 01 00 00 00 07 01 00'), 'pmd-control', 'unknown setting');
  assert.equal(unknown.offset, 5);
  assertDecodeError(() => c('F0 01 00 00 00 00 02 82 00'), 'pmd-control', 'count 2, one value');
  assertDecodeError(() => c('F0 01 00 00 00 05 01 00 00 80'), 'pmd-control', 'short factor');
});

// --------------------------------------------------------------------------------------------
// Polar PMD data frames

// Header timestamp 757382400000000000 ns = 757382400 s after 2000-01-01T00:00:00Z, i.e.
// 2024-01-01T00:00:00Z (Unix 1704067200); LE bytes 00 00 22 AF 47 C3 82 0A.
const TS = '00 00 22 AF 47 C3 82 0A';
const TS_NS = 757382400000000000n;
const TS_UNIX = 1704067200;

test('PMD ECG uncompressed frame', () => {
  // samples 100 (64 00 00), -100000 (0xFE7960: 60 79 FE), 8388607 (FF FF 7F)
  const f = decodePmdData(h(`00 ${TS} 00 64 00 00 60 79 FE FF FF 7F`));
  assert.equal(f.type, 'ecg');
  assert.equal(f.timestamp, TS_NS);
  assert.equal(typeof f.timestamp, 'bigint');
  assert.equal(f.deviceTime, TS_UNIX);
  assert.equal(new Date(f.deviceTime * 1000).toISOString(), '2024-01-01T00:00:00.000Z');
  assert.equal(f.compressed, false);
  assert.equal(f.frameType, 0);
  assert.ok(f.samples instanceof Int32Array);
  assert.deepEqual(Array.from(f.samples), [100, -100000, 8388607]);
  // -8388608 (00 00 80), -1 (FF FF FF); timestamp + 0.5 s: 757382400500000000 = 00 65 EF CC 47 C3 82 0A
  const g = decodePmdData(h('00 00 65 EF CC 47 C3 82 0A 00 00 00 80 FF FF FF'));
  assert.deepEqual(Array.from(g.samples), [-8388608, -1]);
  assert.equal(g.timestamp, 757382400500000000n);
  assert.equal(g.deviceTime, TS_UNIX + 0.5);
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 00`)), 'pmd-data', 'no samples');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 00 64 00`)), 'pmd-data', 'partial sample');
});

test('PMD ACC uncompressed frames', () => {
  // int16: (10, -20, 1000), (-1000, 32767, -32768)
  const f = decodePmdData(h(`02 ${TS} 01 0A 00 EC FF E8 03 18 FC FF 7F 00 80`));
  assert.equal(f.type, 'acc');
  assert.equal(f.frameType, 1);
  assert.equal(f.compressed, false);
  assert.ok(f.samples.x instanceof Int16Array);
  assert.deepEqual(Array.from(f.samples.x), [10, -1000]);
  assert.deepEqual(Array.from(f.samples.y), [-20, 32767]);
  assert.deepEqual(Array.from(f.samples.z), [1000, -32768]);
  // int8: (1, -1, 127), (-128, 0, 5)
  const g = decodePmdData(h(`02 ${TS} 00 01 FF 7F 80 00 05`));
  assert.ok(g.samples.x instanceof Int16Array);
  assert.deepEqual([g.samples.x, g.samples.y, g.samples.z].map((a) => Array.from(a)), [[1, -128], [-1, 0], [127, 5]]);
  // int24: (100000 = 0x0186A0, -1, 0)
  const k = decodePmdData(h(`02 ${TS} 02 A0 86 01 FF FF FF 00 00 00`));
  assert.ok(k.samples.x instanceof Int32Array);
  assert.deepEqual([k.samples.x, k.samples.y, k.samples.z].map((a) => Array.from(a)), [[100000], [-1], [0]]);
  // a conversion factor gives Float64Array
  const s = decodePmdData(h(`02 ${TS} 01 0A 00 EC FF E8 03`), { accFactor: 0.5 });
  assert.ok(s.samples.x instanceof Float64Array);
  assert.deepEqual([s.samples.x[0], s.samples.y[0], s.samples.z[0]], [5, -10, 500]);
  assert.ok(decodePmdData(h(`02 ${TS} 01 0A 00 EC FF E8 03`), { accFactor: 1 }).samples.x instanceof Int16Array);
  assert.throws(() => decodePmdData(h(`02 ${TS} 01 0A 00 EC FF E8 03`), { accFactor: NaN }),
    (e) => e.code === 'INVALID_ARGUMENT');
  assertDecodeError(() => decodePmdData(h(`02 ${TS} 01 0A 00 EC FF E8`)), 'pmd-data', 'partial ACC sample');
});

test('PMD frames that are not decoded keep their payload', () => {
  const f = decodePmdData(h(`01 ${TS} 05 01 02 03`));  // PPG, a format not in Polar's table
  assert.equal(f.type, 'ppg');
  assert.equal(f.samples, null);
  assert.deepEqual(Array.from(f.payload), [1, 2, 3]);
  const g = decodePmdData(h(`04 ${TS} 00`));  // type 4 (reserved): the type stays a number
  assert.equal(g.type, 4);
  assert.equal(decodePmdData(h(`05 ${TS} 01 00 00`)).samples, null);  // gyro format 1: not decoded
  assert.equal(decodePmdData(h(`00 ${TS} 05 01 02 03`)).samples, null);  // unknown ECG format
  assertDecodeError(() => decodePmdData(h(`00 ${TS}`)), 'pmd-data', 'no frame type');
});

// PPG, PPI, gyroscope and magnetometer frames (Polar Measurement Data Specification for 3rd
// Party: "Frame types PPG / PPI / Gyroscope / Magnetometer"), bytes computed by hand below.
test('PMD PPG frames: raw (OH1, 4 x int24) and delta (Verity Sense, 22-bit reference in 3 bytes)', () => {
  // ppg0 200000 = 0x030D40 -> 40 0D 03; ppg1 -5 -> FB FF FF; ppg2 1000 -> E8 03 00; ambient -700 =
  // 0xFFFD44 -> 44 FD FF.
  const ref = '40 0D 03 FB FF FF E8 03 00 44 FD FF';
  const raw = decodePmdData(h(`01 ${TS} 00 ${ref} 00 00 80 FF FF 7F 01 00 00 00 00 00`));
  assert.equal(raw.type, 'ppg');
  assert.ok(raw.samples.ppg0 instanceof Int32Array);
  assert.deepEqual(['ppg0', 'ppg1', 'ppg2', 'ambient'].map((k) => Array.from(raw.samples[k])),
    [[200000, -8388608], [-5, 8388607], [1000, 1], [-700, 0]]);
  assertDecodeError(() => decodePmdData(h(`01 ${TS} 00 ${ref} 00`)), 'pmd-data', 'partial PPG sample');
  // Delta: width 8, 2 samples: (+10, -3, +127, -128) = 0A FD 7F 80, (-1, 0, +1, +2) = FF 00 01 02;
  // then width 4, 1 sample: (+1, -2, +7, -8): nibbles LSB first -> E1 87.
  const delta = decodePmdData(h(`01 ${TS} 80 ${ref} 08 02 0A FD 7F 80 FF 00 01 02 04 01 E1 87`));
  assert.equal(delta.compressed, true);
  assert.deepEqual(['ppg0', 'ppg1', 'ppg2', 'ambient'].map((k) => Array.from(delta.samples[k])), [
    [200000, 200010, 200009, 200010],
    [-5, -8, -8, -10],
    [1000, 1127, 1128, 1135],
    [-700, -828, -826, -834],
  ]);
  // A 2-byte reference (resolution 16 given) is read as such: 4 x 2 bytes, then the blocks.
  const narrow = decodePmdData(h(`01 ${TS} 80 10 00 20 00 30 00 40 00 08 01 01 02 03 04`), { resolution: 16 });
  assert.deepEqual(['ppg0', 'ppg1', 'ppg2', 'ambient'].map((k) => Array.from(narrow.samples[k])), [[16, 17], [32, 34], [48, 51], [64, 68]]);
});

test('PMD PPI frames: 6 bytes per pulse, flags kept', () => {
  // pulse 1: hr 66 (42), interval 1117 ms (5D 04), error 30 ms (1E 00), flags 06: contact, supported
  // pulse 2: hr 0, interval 900 ms (84 03), error 500 ms (F4 01), flags 07: + blocker
  const f = decodePmdData(h(`03 ${TS} 00 42 5D 04 1E 00 06 00 84 03 F4 01 07`));
  assert.equal(f.type, 'ppi');
  assert.deepEqual(Object.fromEntries(Object.entries(f.samples).map(([k, v]) => [k, Array.from(v)])), {
    hr: [66, 0], ppi: [1117, 900], errorEstimate: [30, 500], blocker: [0, 1], skinContact: [1, 1], skinContactSupported: [1, 1],
  });
  assertDecodeError(() => decodePmdData(h(`03 ${TS} 00 42 5D 04 1E 00`)), 'pmd-data', 'partial pulse');
  assertDecodeError(() => decodePmdData(h(`03 ${TS} 00`)), 'pmd-data', 'no pulse');
  assert.equal(decodePmdData(h(`03 ${TS} 80 42 5D 04 1E 00 06`)).samples, null);  // no delta PPI frames
});

test('PMD gyroscope and magnetometer frames: int16 counts, times the factor', () => {
  // gyro (5, 2, 17) counts = 05 00 02 00 11 00; x 0.07 dps -> (0.35, 0.14, 1.19)
  const g = decodePmdData(h(`05 ${TS} 00 05 00 02 00 11 00`));
  assert.equal(g.type, 'gyro');
  assert.ok(g.samples.x instanceof Int16Array);
  assert.deepEqual([g.samples.x[0], g.samples.y[0], g.samples.z[0]], [5, 2, 17]);
  const gs = decodePmdData(h(`05 ${TS} 00 05 00 02 00 11 00`), { factor: 0.07 });
  assert.ok(gs.samples.x instanceof Float64Array);
  assert.deepEqual([gs.samples.x[0], gs.samples.y[0], gs.samples.z[0]], [5 * 0.07, 2 * 0.07, 17 * 0.07]);
  // magnetometer delta: reference (-833, -275, 165) = BF FC ED FE A5 00; width 2, 1 sample
  // (+1, -1, 0): bits 01 | 11 << 2 | 00 << 4 = 0x0D.
  const m = decodePmdData(h(`06 ${TS} 80 BF FC ED FE A5 00 02 01 0D`), { factor: 0.0015 });
  assert.equal(m.type, 'magnetometer');
  assert.deepEqual([m.samples.x, m.samples.y, m.samples.z].map((a) => Array.from(a)),
    [[-833 * 0.0015, -832 * 0.0015], [-275 * 0.0015, -276 * 0.0015], [165 * 0.0015, 165 * 0.0015]]);
  assert.throws(() => decodePmdData(h(`06 ${TS} 00 05 00 02 00 11 00`), { factor: Infinity }),
    (e) => e.code === 'INVALID_ARGUMENT' && /factor/.test(e.message));
  assertDecodeError(() => decodePmdData(h(`06 ${TS} 00 05 00 02 00 11`)), 'pmd-data', 'partial magnetometer sample');
});

// Delta frames: the reference sample takes ceil(resolution / 8) bytes per channel, resolution being
// the stream's resolution setting (Polar's PMD documentation, polar-ble-sdk
// technical_documentation: online_measurement.pdf 4.3.2-4.3.3; Polar_Measurement_Data_Specification

test('PMD data: the measurement type is byte 0 & 0x3F; the upper two bits do not change the frame', () => {
  // online_measurement.pdf: bits 6-7 of byte 0 are not part of the measurement type. The same
  // frames as above with one or both upper bits set decode to the same type and samples.
  const ecg = `${TS} 00 64 00 00 60 79 FE FF FF 7F`;
  const acc = `${TS} 01 0A 00 EC FF E8 03 18 FC FF 7F 00 80`;
  for (const flags of [0x40, 0x80, 0xC0]) {
    const byte = (type) => (type | flags).toString(16).padStart(2, '0');
    const e = decodePmdData(h(`${byte(0)} ${ecg}`));
    assert.equal(e.type, 'ecg', `byte 0 = ${byte(0)}`);
    assert.deepEqual(Array.from(e.samples), [100, -100000, 8388607]);
    const a = decodePmdData(h(`${byte(2)} ${acc}`));
    assert.equal(a.type, 'acc', `byte 0 = ${byte(2)}`);
    assert.deepEqual([a.samples.x, a.samples.y, a.samples.z].map((c) => Array.from(c)), [[10, -1000], [-20, 32767], [1000, -32768]]);
    assert.equal(decodePmdData(h(`${byte(4)} ${TS} 00`)).type, 4);  // reserved, undecoded: its type number
  }
});
// .pdf, "Delta frame sample example from Polar Verity Sense"). Defaults: ECG 14 bits, ACC 16 bits.
test('PMD delta-compressed frames, hand-written', () => {
  // Polar's own example (Verity Sense ACC, frame type 128, resolution 16, 3 channels): reference
  // D0 FF 65 01 E4 0F = (-48, 357, 4068); block width 08; the example's first two delta samples
  // FC 07 FF = (-4, +7, -1) and 0C 13 F2 = (+12, +19, -14) (its count 1D = 29 cut to 02 here).
  // Its stated results: (-52, 364, 4067), (-40, 383, 4053).
  const spec = decodePmdData(h(`02 ${TS} 80 D0 FF 65 01 E4 0F 08 02 FC 07 FF 0C 13 F2`));
  assert.equal(spec.frameType, 0x80);
  assert.equal(spec.compressed, true);
  assert.ok(spec.samples.x instanceof Int16Array);
  assert.deepEqual([spec.samples.x, spec.samples.y, spec.samples.z].map((a) => Array.from(a)),
    [[-48, -52, -40], [357, 364, 383], [4068, 4067, 4053]]);
  // The layout other parsers expect, with the first samples of a real H10's 200 Hz ACC capture:
  // reference (-470, -185, 868) = 2A FE 47 FF 64 03; width 4, 3 samples, deltas (-3, +6, 0),
  // (+5, +5, 0), (0, -2, -4) = nibbles D 6 0 5 5 0 0 E C packed LSB first -> 6D 50 05 E0 0C
  // (ceil(4 x 3 x 3 / 8) = 5 bytes). Regression: read with a 1-byte-per-axis reference (the old
  // assumption for 0x80) the width landed on y's high byte FF and the frame was rejected with
  // "bit width 255".
  const h10 = decodePmdData(h(`02 ${TS} 80 2A FE 47 FF 64 03 04 03 6D 50 05 E0 0C`));
  assert.deepEqual([h10.samples.x, h10.samples.y, h10.samples.z].map((a) => Array.from(a)),
    [[-470, -473, -468, -468], [-185, -179, -174, -176], [868, 868, 868, 864]]);
  // ACC 0x81 (the same layout; emitted and accepted by other parsers): reference (100, -50, 1000)
  // as int16 = 64 00 CE FF E8 03. Block 1: width 4, 2 samples, deltas (+1, -2, +3), (-8, +7, 0):
  // nibbles 1, E, 3, 8, 7, 0 packed LSB first -> E1 83 07 (ceil(4 x 2 x 3 / 8) = 3 bytes).
  // Samples (101, -52, 1003), (93, -45, 1003). Block 2: width 3, 1 sample, deltas (-4, +3, -1) =
  // 100b, 011b, 111b -> bits 0-8 = 0,0,1, 1,1,0, 1,1,1 -> DC 01. Sample (89, -42, 1002).
  const f = decodePmdData(h(`02 ${TS} 81 64 00 CE FF E8 03 04 02 E1 83 07 03 01 DC 01`));
  assert.equal(f.frameType, 0x81);
  assert.ok(f.samples.x instanceof Int16Array);
  assert.deepEqual(Array.from(f.samples.x), [100, 101, 93, 89]);
  assert.deepEqual(Array.from(f.samples.y), [-50, -52, -45, -42]);
  assert.deepEqual(Array.from(f.samples.z), [1000, 1003, 1003, 1002]);
  // The same deltas at resolution 8: a 1-byte reference per axis, (100, -50, -24) = 64 CE E8.
  const r8 = decodePmdData(h(`02 ${TS} 80 64 CE E8 04 02 E1 83 07`), { resolution: 8 });
  assert.deepEqual([r8.samples.x, r8.samples.y, r8.samples.z].map((a) => Array.from(a)), [[100, 101, 93], [-50, -52, -45], [-24, -21, -21]]);
  // ACC at resolution 24: 3-byte references, Int32Array.
  const r24 = decodePmdData(h(`02 ${TS} 80 A0 86 01 FF FF FF 00 00 00 02 01 31`), { resolution: 24 });
  assert.ok(r24.samples.x instanceof Int32Array);
  assert.deepEqual([r24.samples.x, r24.samples.y, r24.samples.z].map((a) => Array.from(a)), [[100000, 100001], [-1, -1], [0, -1]]);
  // ECG 0x80 at the H10's 14 bits: reference 1000 as 2 bytes (E8 03); width 2, 4 deltas 1, -1,
  // -2, 0 = 01, 11, 10, 00 -> 0b00101101 = 2D. Samples 1000, 1001, 1000, 998, 998.
  const e = decodePmdData(h(`00 ${TS} 80 E8 03 02 04 2D`));
  assert.ok(e.samples instanceof Int32Array);
  assert.deepEqual(Array.from(e.samples), [1000, 1001, 1000, 998, 998]);
  // ... and at resolution 24 the reference takes 3 bytes (E8 03 00).
  assert.deepEqual(Array.from(decodePmdData(h(`00 ${TS} 80 E8 03 00 02 04 2D`), { resolution: 24 }).samples), [1000, 1001, 1000, 998, 998]);
  // reference only
  assert.deepEqual(Array.from(decodePmdData(h(`00 ${TS} 80 E8 03`)).samples), [1000]);
  // malformed
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8`)), 'pmd-data', 'short reference');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8 03 02`)), 'pmd-data', 'half block header');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8 03 00 04`)), 'pmd-data', 'width 0');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8 03 21 01 00 00 00 00 00`)), 'pmd-data', 'width 33');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8 03 02 00`)), 'pmd-data', 'count 0');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 E8 03 08 02 01`)), 'pmd-data', 'short block');
  // int16 overflow: reference x = 32767 (FF 7F), delta +1 (width 2: 01) on x; ECG likewise
  assertDecodeError(() => decodePmdData(h(`02 ${TS} 81 FF 7F 00 00 00 00 02 01 01`)), 'pmd-data', 'overflow');
  assertDecodeError(() => decodePmdData(h(`00 ${TS} 80 FF 7F 02 01 01`)), 'pmd-data', 'ECG overflow');
  // the resolution option is the stream's setting in bits
  for (const resolution of [0, 33, 1.5, '16', NaN]) {
    assert.throws(() => decodePmdData(h(`00 ${TS} 80 E8 03`), { resolution }), (err) => err.code === 'INVALID_ARGUMENT', String(resolution));
  }
  // uncompressed frames keep their format's width whatever the resolution
  assert.deepEqual(Array.from(decodePmdData(h(`00 ${TS} 00 64 00 00`), { resolution: 14 }).samples), [100]);
});

// --------------------------------------------------------------------------------------------
// Test-only PMD encoders: uncompressed frames and the delta packer.

function frameHeader(type, timestampNs, frameType) {
  const out = [type];
  for (let i = 0n; i < 8n; i++) out.push(Number((timestampNs >> (8n * i)) & 0xFFn));
  out.push(frameType);
  return out;
}

function pushInt(out, v, bytes) {
  let u = v < 0 ? v + 2 ** (8 * bytes) : v;
  for (let k = 0; k < bytes; k++) {
    out.push(u % 256);
    u = Math.floor(u / 256);
  }
}

// columns: per-channel sample arrays of equal length >= 1; blocks: sample counts (1-255) that sum
// to length - 1. Each block gets the smallest width that holds its deltas (or `minWidth`).
function packDelta(type, timestampNs, frameType, width, columns, blocks, minWidth = 1) {
  const out = frameHeader(type, timestampNs, frameType);
  const ch = columns.length;
  for (let c = 0; c < ch; c++) pushInt(out, columns[c][0], width);
  let s = 1;
  for (const count of blocks) {
    const deltas = [];
    for (let i = 0; i < count; i++, s++) for (let c = 0; c < ch; c++) deltas.push(columns[c][s] - columns[c][s - 1]);
    let bits = minWidth;
    for (const d of deltas) while (d < -(2 ** (bits - 1)) || d > 2 ** (bits - 1) - 1) bits++;
    out.push(bits, count);
    const bytes = new Array(Math.ceil((bits * count * ch) / 8)).fill(0);
    let pos = 0;
    for (const d of deltas) {
      const u = d < 0 ? d + 2 ** bits : d;
      for (let k = 0; k < bits; k++, pos++) if (Math.floor(u / 2 ** k) % 2) bytes[pos >> 3] |= 1 << (pos & 7);
    }
    out.push(...bytes);
  }
  return Uint8Array.from(out);
}

test('the test packer reproduces the hand-written delta frames', () => {
  assert.equal(hexOf(packDelta(2, TS_NS, 0x81, 2, [[100, 101, 93, 89], [-50, -52, -45, -42], [1000, 1003, 1003, 1002]], [2, 1])),
    `02 ${TS} 81 64 00 CE FF E8 03 04 02 E1 83 07 03 01 DC 01`);
  assert.equal(hexOf(packDelta(0, TS_NS, 0x80, 2, [[1000, 1001, 1000, 998, 998]], [4])), `00 ${TS} 80 E8 03 02 04 2D`);
  assert.equal(hexOf(packDelta(2, TS_NS, 0x80, 2, [[-470, -473, -468, -468], [-185, -179, -174, -176], [868, 868, 868, 864]], [3])),
    `02 ${TS} 80 2A FE 47 FF 64 03 04 03 6D 50 05 E0 0C`);
  assert.equal(hexOf(packDelta(2, TS_NS, 0x80, 2, [[-48, -52, -40], [357, 364, 383], [4068, 4067, 4053]], [2], 8)),
    `02 ${TS} 80 D0 FF 65 01 E4 0F 08 02 FC 07 FF 0C 13 F2`);
});

test('a delta-compressed ACC frame packed from a known sequence', () => {
  // a slow wobble with a jolt in the middle, int16 mG
  const n = 40;
  const x = Array.from({ length: n }, (_, i) => Math.round(1000 * Math.sin(i / 5)) + (i === 20 ? 3000 : 0));
  const y = Array.from({ length: n }, (_, i) => -500 + 7 * i);
  const z = Array.from({ length: n }, (_, i) => (i % 2 ? 32767 : 32700));
  const bytes = packDelta(2, TS_NS, 0x81, 2, [x, y, z], [10, 9, 1, 19]);
  const f = decodePmdData(bytes);
  assert.deepEqual([f.samples.x, f.samples.y, f.samples.z].map((a) => Array.from(a)), [x, y, z]);
  assert.equal(f.timestamp, TS_NS);
});

// --------------------------------------------------------------------------------------------
// Every truncation of every fixture: DECODE_ERROR, except prefixes that are themselves complete
// values (a shorter RR list, fewer samples, fewer setting TLVs), listed here with their lengths.

const TRUNCATION_FIXTURES = [
  ['heart-rate', decodeHeartRate, '00 48', []],
  ['heart-rate', decodeHeartRate, '01 48 01', []],
  ['heart-rate', decodeHeartRate, '08 48 E8 03', []],
  ['heart-rate', decodeHeartRate, '10 4B 34 03', []],
  ['heart-rate', decodeHeartRate, '1F 2C 01 0A 00 00 04 00 02 9A 03', [7, 9]],
  ['body-sensor-location', decodeBodySensorLocation, '01', []],
  ['battery', decodeBattery, '64', []],
  ['temperature', decodeTemperature, '00 6E 01 00 FF', []],
  ['temperature', decodeTemperature, '01 DA 03 00 FF', []],
  ['temperature', decodeTemperature, '06 6E 01 00 FF E8 07 03 0F 0E 1E 2D 02', []],
  ['temperature', decodeTemperature, '03 DA 03 00 FF 00 00 00 00 00 00 00', []],
  ['temperature', decodeTemperature, '04 6E 01 00 FF 06', []],
  ['plx-continuous', decodePlxContinuous, '00 62 00 48 00', []],
  ['plx-continuous', decodePlxContinuous, '1F 62 00 48 00 61 00 49 00 60 00 47 00 20 00 01 02 00 2D F0', []],
  ['plx-continuous', decodePlxContinuous, '08 62 00 48 00 56 34 12', []],
  ['rsc', decodeRsc, '00 00 03 B4', []],
  ['rsc', decodeRsc, '07 80 02 AA 8C 00 10 27 00 00', []],
  ['pmd-features', decodePmdFeatures, '0F 05', []],
  ['pmd-control', decodePmdControlResponse, 'F0 02 00 00', []],
  ['pmd-control', decodePmdControlResponse, 'F0 01 00 00 00 00 01 82 00 01 01 0E 00', [4, 5, 9]],
  ['pmd-control', decodePmdControlResponse, 'F0 01 02 00 00 05 01 00 00 80 3A', [4, 5]],
  ['pmd-data', decodePmdData, `00 ${TS} 00 64 00 00 60 79 FE FF FF 7F`, [13, 16]],
  ['pmd-data', decodePmdData, `02 ${TS} 01 0A 00 EC FF E8 03 18 FC FF 7F 00 80`, [16]],
  ['pmd-data', decodePmdData, `02 ${TS} 00 01 FF 7F 80 00 05`, [13]],
  ['pmd-data', decodePmdData, `02 ${TS} 02 A0 86 01 FF FF FF 00 00 00`, []],
  ['pmd-data', decodePmdData, `02 ${TS} 81 64 00 CE FF E8 03 04 02 E1 83 07 03 01 DC 01`, [16, 21]],
  ['pmd-data', decodePmdData, `02 ${TS} 80 D0 FF 65 01 E4 0F 08 02 FC 07 FF 0C 13 F2`, [16]],
  ['pmd-data', decodePmdData, `02 ${TS} 80 2A FE 47 FF 64 03 04 03 6D 50 05 E0 0C`, [16]],
  ['pmd-data', decodePmdData, `00 ${TS} 80 E8 03 02 04 2D`, [12]],
  ['pmd-data', (b) => decodePmdData(b, { resolution: 24 }), `00 ${TS} 80 E8 03 00 02 04 2D`, [13]],
];

test('every truncation of every fixture is a DECODE_ERROR (or a complete shorter value)', () => {
  let checked = 0;
  for (const [profile, decode, hexBytes, complete] of TRUNCATION_FIXTURES) {
    const bytes = h(hexBytes);
    decode(bytes);  // the whole fixture decodes
    for (let len = 0; len < bytes.length; len++) {
      const prefix = bytes.slice(0, len);
      if (complete.includes(len)) {
        decode(prefix);
      } else {
        const e = assertDecodeError(() => decode(prefix), profile, `${hexBytes} cut to ${len}`);
        assert.ok(e.offset <= len, `${hexBytes} cut to ${len}: offset ${e.offset}`);
      }
      checked++;
    }
  }
  console.log(`truncations checked: ${checked}`);
});

test('a complete shorter prefix decodes to the prefix of the samples', () => {
  const full = decodePmdData(h(`02 ${TS} 81 64 00 CE FF E8 03 04 02 E1 83 07 03 01 DC 01`));
  const cut = decodePmdData(h(`02 ${TS} 81 64 00 CE FF E8 03 04 02 E1 83 07`));
  assert.deepEqual(Array.from(cut.samples.x), Array.from(full.samples.x).slice(0, 3));
  assert.deepEqual(decodeHeartRate(h('1F 2C 01 0A 00 00 04 00 02')).rrIntervals, [1, 0.5]);
});

// --------------------------------------------------------------------------------------------
// fast-check: arbitrary input gives a value or a BluetoothDecodeError, nothing else.

let fuzzCases = 0;
let pmdDeltaDecoded = 0;  // fuzzed delta frames that decoded to samples (the fuzzing reaches the unpacker)
const FUZZ_RUNS = 15_000;

function checkOutcome(decode, bytes, sane) {
  fuzzCases++;
  const isBytes = bytes instanceof Uint8Array;
  const shown = isBytes ? hexOf(bytes) : String(typeof bytes === 'symbol' ? 'a symbol' : bytes);
  let value;
  try {
    value = decode(bytes);
  } catch (e) {
    if (!isDecodeError(e, isBytes ? bytes.length : undefined)) {
      throw new Error(`unexpected ${e?.name}: ${e?.message} for ${shown}`, { cause: e });
    }
    return true;
  }
  if (value === null || typeof value !== 'object') throw new Error(`not an object for ${shown}`);
  if (sane && !sane(value)) throw new Error(`implausible value for ${shown}`);
  return true;
}

const anyBytes = fc.uint8Array({ minLength: 0, maxLength: 300 });
const numOrNaN = (v) => typeof v === 'number' && (Number.isFinite(v) || Number.isNaN(v));
const isU = (v, max) => Number.isInteger(v) && v >= 0 && v <= max;

// Bytes that start like a real value, so the fuzzing gets past the first checks.
const withPrefix = (...prefixes) => fc.tuple(fc.constantFrom(...prefixes.map(h)), fc.uint8Array({ maxLength: 290 }))
  .map(([p, rest]) => Uint8Array.from([...p, ...rest]));
const shortTail = (arb) => fc.tuple(arb, fc.uint8Array({ maxLength: 12 })).map(([a, b]) => Uint8Array.from([...a, ...b]));
const pmdHeader = fc.tuple(fc.constantFrom(0, 1, 2, 3, 4, 5, 6, 255), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.constantFrom(0, 1, 2, 3, 0x80, 0x81, 0x82, 0x83, 0xFF))
  .map(([type, ts, ft]) => frameHeader(type, ts, ft));
const pmdFrames = fc.oneof(
  anyBytes,
  fc.tuple(pmdHeader, fc.uint8Array({ maxLength: 290 })).map(([hd, p]) => Uint8Array.from([...hd, ...p])),
  // delta frames with small, plausible block headers
  fc.tuple(pmdHeader.map((hd) => { hd[0] = hd[0] % 7; hd[9] |= 0x80; return hd; }), fc.uint8Array({ minLength: 3, maxLength: 12 }),
    fc.array(fc.tuple(fc.integer({ min: 0, max: 34 }), fc.integer({ min: 0, max: 40 }), fc.uint8Array({ maxLength: 40 })), { maxLength: 6 }))
    .map(([hd, ref, blocks]) => Uint8Array.from([...hd, ...ref, ...blocks.flatMap(([w, n, d]) => [w, n, ...d])])),
  // well-formed delta frames with random delta bits (which may still overflow the sample range)
  // (reference widths of the default resolutions: ECG 14 bits -> 2 bytes, PPG 22 -> 3, ACC, gyro
  // and magnetometer 16 -> 2)
  fc.tuple(fc.constantFrom([0, 0x80, 1, 2], [1, 0x80, 4, 3], [2, 0x80, 3, 2], [2, 0x81, 3, 2], [2, 0x82, 3, 2], [5, 0x80, 3, 2], [6, 0x80, 3, 2]),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    fc.uint8Array({ minLength: 12, maxLength: 12 }), fc.array(fc.tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 30 })), { maxLength: 5 }),
    fc.uint8Array({ minLength: 300, maxLength: 300 }))
    .map(([[type, ft, ch, w], ts, ref, blocks, noise]) => {
      const out = [...frameHeader(type, ts, ft), ...ref.slice(0, ch * w)];
      let k = 0;
      for (const [bits, n] of blocks) {
        out.push(bits, n);
        for (let i = 0; i < Math.ceil((bits * n * ch) / 8); i++) out.push(noise[k++ % noise.length] & (bits < 4 ? 0x11 : 0xFF));
      }
      return Uint8Array.from(out);
    }),
);

const FUZZ_TARGETS = [
  ['heart rate', decodeHeartRate, fc.oneof(anyBytes, shortTail(fc.uint8Array({ maxLength: 4 }))),
    (v) => isU(v.heartRate, 0xFFFF) && v.rrIntervals.every((r) => r >= 0 && r < 64)],
  ['body sensor location', decodeBodySensorLocation, fc.oneof(anyBytes, fc.uint8Array({ maxLength: 2 })), (v) => isU(v.code, 255)],
  ['temperature', decodeTemperature, fc.oneof(anyBytes, shortTail(fc.uint8Array({ minLength: 5, maxLength: 5 }))),
    (v) => numOrNaN(v.value) && numOrNaN(v.celsius) && (v.missing === null) === !Number.isNaN(v.value)],
  ['PLX continuous', decodePlxContinuous, fc.oneof(anyBytes, shortTail(fc.uint8Array({ minLength: 5, maxLength: 9 }))),
    (v) => numOrNaN(v.spo2) && numOrNaN(v.pulseRate)],
  ['battery', decodeBattery, fc.oneof(anyBytes, fc.uint8Array({ maxLength: 2 })), (v) => isU(v.level, 100)],
  ['RSC', decodeRsc, fc.oneof(anyBytes, shortTail(fc.uint8Array({ minLength: 4, maxLength: 4 }))),
    (v) => Number.isFinite(v.speed) && isU(v.cadence, 255)],
  ['PMD features', decodePmdFeatures, fc.oneof(anyBytes, withPrefix('0F')), (v) => typeof v.ecg === 'boolean'],
  ['PMD control response', decodePmdControlResponse,
    fc.oneof(anyBytes, withPrefix('F0 01 00 00 00', 'F0 01 02 00 00', 'F0 02 00 00'),
      fc.tuple(fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 5 }), fc.uint8Array({ maxLength: 12 })), { maxLength: 6 }))
        .map(([tlvs]) => Uint8Array.from([0xF0, 1, 2, 0, 0, ...tlvs.flatMap(([t, n, d]) => [t, n, ...d])]))),
    (v) => isU(v.opCode, 255) && (v.settings === null || Object.values(v.settings).every(Array.isArray))],
  ['PMD data', decodePmdData, pmdFrames,
    (v) => (v.compressed && v.samples && pmdDeltaDecoded++, true) && typeof v.timestamp === 'bigint' && Number.isFinite(v.deviceTime) &&
      (v.samples === null || v.samples instanceof Int32Array ||
        // {x, y, z}, the PPG channels or the PPI fields: columns of one length >= 1
        Object.values(v.samples).every((c, _, all) => ArrayBuffer.isView(c) && c.length === all[0].length && c.length > 0))],
];

for (const [name, decode, arb, sane] of FUZZ_TARGETS) {
  test(`fuzz: ${name} gives a value or a BluetoothDecodeError`, { timeout: 60_000 }, () => {
    fc.assert(fc.property(arb, (bytes) => checkOutcome(decode, bytes, sane)), { numRuns: FUZZ_RUNS });
    // Other input types than bytes.
    for (const weird of [undefined, null, 0, 'ab', [1, 2], {}, new Set(), Symbol('s')]) checkOutcome(decode, weird);
  });
}

test('fuzz: SFLOAT and FLOAT words', { timeout: 60_000 }, () => {
  const anyNumber = fc.oneof(fc.integer({ min: -10, max: 0x1_0000_0010 }), fc.double(), fc.constantFrom(null, '1', 1n));
  fc.assert(fc.property(anyNumber, (w) => checkOutcome(() => decodeSfloat(w), new Uint8Array(0))), { numRuns: FUZZ_RUNS / 2 });
  fc.assert(fc.property(anyNumber, (w) => checkOutcome(() => decodeFloat(w), new Uint8Array(0))), { numRuns: FUZZ_RUNS / 2 });
});

// --------------------------------------------------------------------------------------------
// fast-check: round trips through test-side encoders.

const SFLOAT_RES = new Set([0x07FF, 0x0800, 0x07FE, 0x0802, 0x0801]);
const FLOAT_RES = new Set([0x007FFFFF, 0x00800000, 0x007FFFFE, 0x00800002, 0x00800001]);
const sext = (v, bits) => (v >= 2 ** (bits - 1) ? v - 2 ** bits : v);

test('round trip: SFLOAT and FLOAT words equal the correctly rounded m x 10^e', () => {
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xFFFF }), (w) => {
    fuzzCases++;
    const r = decodeSfloat(w);
    if (SFLOAT_RES.has(w)) return Number.isNaN(r.value) && r.missing !== null;
    return r.missing === null && r.value === Number(`${sext(w & 0xFFF, 12)}e${sext(w >> 12, 4)}`);
  }), { numRuns: 5_000 });
  fc.assert(fc.property(fc.integer({ min: 0, max: 0xFFFFFFFF }), (w) => {
    fuzzCases++;
    const r = decodeFloat(w);
    if (FLOAT_RES.has(w)) return Number.isNaN(r.value) && r.missing !== null;
    return r.missing === null && r.value === Number(`${sext(w & 0xFFFFFF, 24)}e${sext(Math.floor(w / 2 ** 24), 8)}`);
  }), { numRuns: 5_000 });
});

function encodeHeartRate({ wide, heartRate, contactBits, energy, rr, rfu }) {
  const out = [(wide ? 1 : 0) | (contactBits << 1) | (energy !== null ? 8 : 0) | (rr.length ? 16 : 0) | (rfu << 5)];
  pushInt(out, heartRate, wide ? 2 : 1);
  if (energy !== null) pushInt(out, energy, 2);
  for (const v of rr) pushInt(out, v, 2);
  return Uint8Array.from(out);
}

test('round trip: heart rate packets from arbitrary fields', () => {
  const fields = fc.record({
    wide: fc.boolean(), heartRate: fc.integer({ min: 0, max: 0xFFFF }), contactBits: fc.integer({ min: 0, max: 3 }),
    energy: fc.option(fc.integer({ min: 0, max: 0xFFFF })), rr: fc.array(fc.integer({ min: 0, max: 0xFFFF }), { maxLength: 9 }),
    rfu: fc.integer({ min: 0, max: 7 }),
  }).map((f) => ({ ...f, heartRate: f.wide ? f.heartRate : f.heartRate & 0xFF }));
  fc.assert(fc.property(fields, (f) => {
    fuzzCases++;
    const d = decodeHeartRate(encodeHeartRate(f));
    assert.deepEqual(d, {
      heartRate: f.heartRate,
      contact: f.contactBits & 2 ? (f.contactBits & 1 ? 'detected' : 'not-detected') : 'unsupported',
      energyExpended: f.energy, rrIntervals: f.rr.map((v) => v / 1024),
    });
  }), { numRuns: 5_000 });
});

test('round trip: temperature, PLX and RSC packets from arbitrary fields', () => {
  const floatWord = fc.integer({ min: 0, max: 0xFFFFFFFF });
  const time = fc.record({
    year: fc.oneof(fc.constant(0), fc.integer({ min: 1582, max: 9999 })), month: fc.integer({ min: 0, max: 12 }),
    day: fc.integer({ min: 0, max: 31 }), hours: fc.integer({ min: 0, max: 23 }), minutes: fc.integer({ min: 0, max: 59 }),
    seconds: fc.integer({ min: 0, max: 59 }),
  });
  const temp = fc.record({ f: fc.boolean(), word: floatWord, time: fc.option(time), type: fc.option(fc.integer({ min: 0, max: 255 })) });
  fc.assert(fc.property(temp, ({ f, word, time: t, type }) => {
    fuzzCases++;
    const out = [(f ? 1 : 0) | (t ? 2 : 0) | (type !== null ? 4 : 0)];
    pushInt(out, word, 4);
    if (t) { pushInt(out, t.year, 2); out.push(t.month, t.day, t.hours, t.minutes, t.seconds); }
    if (type !== null) out.push(type);
    const d = decodeTemperature(Uint8Array.from(out));
    const { value, missing } = decodeFloat(word);
    assert.deepEqual(d, {
      celsius: f ? (value - 32) * 5 / 9 : value, unit: f ? 'fahrenheit' : 'celsius', value, missing, time: t && { ...t }, type,
    });
  }), { numRuns: 3_000 });

  const sw = fc.integer({ min: 0, max: 0xFFFF });
  const plx = fc.record({
    spo2: sw, pr: sw, fast: fc.option(fc.tuple(sw, sw)), slow: fc.option(fc.tuple(sw, sw)),
    ms: fc.option(fc.integer({ min: 0, max: 0xFFFF })), ds: fc.option(fc.integer({ min: 0, max: 0xFFFFFF })), pai: fc.option(sw),
  });
  fc.assert(fc.property(plx, (p) => {
    fuzzCases++;
    const out = [(p.fast ? 1 : 0) | (p.slow ? 2 : 0) | (p.ms !== null ? 4 : 0) | (p.ds !== null ? 8 : 0) | (p.pai !== null ? 16 : 0)];
    for (const w of [p.spo2, p.pr, ...(p.fast ?? []), ...(p.slow ?? [])]) pushInt(out, w, 2);
    if (p.ms !== null) pushInt(out, p.ms, 2);
    if (p.ds !== null) pushInt(out, p.ds, 3);
    if (p.pai !== null) pushInt(out, p.pai, 2);
    const d = decodePlxContinuous(Uint8Array.from(out));
    const missing = {};
    const val = (w, key) => { const r = decodeSfloat(w); if (r.missing) missing[key] = r.missing; return r.value; };
    const expected = {
      spo2: val(p.spo2, 'spo2'), pulseRate: val(p.pr, 'pulseRate'), missing,
      fast: p.fast && { spo2: val(p.fast[0], 'fast.spo2'), pulseRate: val(p.fast[1], 'fast.pulseRate') },
      slow: p.slow && { spo2: val(p.slow[0], 'slow.spo2'), pulseRate: val(p.slow[1], 'slow.pulseRate') },
      measurementStatus: p.ms, deviceStatus: p.ds, pulseAmplitudeIndex: p.pai === null ? null : val(p.pai, 'pulseAmplitudeIndex'),
    };
    assert.deepEqual(d, expected);
  }), { numRuns: 3_000 });

  const rsc = fc.record({
    speed: fc.integer({ min: 0, max: 0xFFFF }), cadence: fc.integer({ min: 0, max: 255 }), running: fc.boolean(),
    stride: fc.option(fc.integer({ min: 0, max: 0xFFFF })), dist: fc.option(fc.integer({ min: 0, max: 0xFFFFFFFF })),
  });
  fc.assert(fc.property(rsc, (r) => {
    fuzzCases++;
    const out = [(r.stride !== null ? 1 : 0) | (r.dist !== null ? 2 : 0) | (r.running ? 4 : 0)];
    pushInt(out, r.speed, 2);
    out.push(r.cadence);
    if (r.stride !== null) pushInt(out, r.stride, 2);
    if (r.dist !== null) pushInt(out, r.dist, 4);
    assert.deepEqual(decodeRsc(Uint8Array.from(out)), {
      speed: r.speed / 256, cadence: r.cadence, strideLength: r.stride === null ? null : r.stride / 100,
      totalDistance: r.dist === null ? null : r.dist / 10, running: r.running,
    });
  }), { numRuns: 3_000 });
});

test('round trip: PMD start settings read back as get-settings TLVs', () => {
  const settings = fc.record({
    sampleRate: fc.integer({ min: 0, max: 0xFFFF }), resolution: fc.integer({ min: 0, max: 0xFFFF }),
    range: fc.integer({ min: 0, max: 0xFFFF }), channels: fc.integer({ min: 0, max: 255 }),
  }, { requiredKeys: [] });
  fc.assert(fc.property(fc.integer({ min: 0, max: 255 }), settings, (type, s) => {
    fuzzCases++;
    const cmd = encodePmdStart(type, s);
    assert.deepEqual(Array.from(cmd.slice(0, 2)), [2, type]);
    const d = decodePmdControlResponse(Uint8Array.from([0xF0, 1, type, 0, 0, ...cmd.slice(2)]));
    const wrap = (v) => (v === undefined ? [] : [v]);
    assert.deepEqual(d.settings, {
      sampleRate: wrap(s.sampleRate), resolution: wrap(s.resolution), range: wrap(s.range),
      rangeMilliunit: [], channels: wrap(s.channels), factor: [],
    });
  }), { numRuns: 2_000 });
});

// Random walks that stay inside the format's range; random block splits.
function walk(bits, maxStep) {
  const lim = 2 ** (bits - 1);
  return fc.tuple(fc.integer({ min: -lim, max: lim - 1 }), fc.array(fc.integer({ min: -maxStep, max: maxStep }), { maxLength: 120 }))
    .map(([start, steps]) => {
      const out = [start];
      for (const st of steps) out.push(Math.min(lim - 1, Math.max(-lim, out[out.length - 1] + st)));
      return out;
    });
}

function splits(total, seeds) {
  const blocks = [];
  let left = total, i = 0;
  while (left > 0) {
    const n = Math.min(left, 1 + (seeds[i++ % Math.max(1, seeds.length)] ?? 254) % 255);
    blocks.push(n);
    left -= n;
  }
  return blocks;
}

test('round trip: delta-compressed ACC and ECG frames decode exactly', () => {
  // [frame type, reference bytes, resolution option (bits; undefined = the default 16)]
  const accCase = fc.tuple(fc.constantFrom([0x80, 1, 8], [0x80, 2, undefined], [0x81, 2, 16], [0x80, 3, 24], [0x82, 3, 20]),
    fc.integer({ min: 1, max: 3 }), fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 8 }),
    fc.integer({ min: 1, max: 4 }), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }))
    .chain(([fmt, stepExp, seeds, minWidth, ts]) => {
      const bits = 8 * fmt[1];
      const step = Math.min(2 ** (bits - 1), 10 ** stepExp);
      return fc.tuple(fc.constant(fmt), walk(bits, step), walk(bits, step), walk(bits, step), fc.constant(seeds),
        fc.constant(minWidth), fc.constant(ts));
    });
  fc.assert(fc.property(accCase, ([[ft, width, resolution], x0, y0, z0, seeds, minWidth, ts]) => {
    fuzzCases++;
    const n = Math.min(x0.length, y0.length, z0.length);
    const cols = [x0.slice(0, n), y0.slice(0, n), z0.slice(0, n)];
    const f = decodePmdData(packDelta(2, ts, ft, width, cols, splits(n - 1, seeds), minWidth), { resolution });
    assert.equal(f.timestamp, ts);
    assert.equal(f.deviceTime, Number(ts) / 1e9 + 946684800);
    assert.deepEqual([f.samples.x, f.samples.y, f.samples.z].map((a) => Array.from(a)), cols);
  }), { numRuns: 2_000 });

  // ECG at the default 14 bits (2-byte reference) and at 24 bits (3 bytes)
  for (const [bits, resolution] of [[16, undefined], [24, 24]]) {
    fc.assert(fc.property(walk(bits, 2 ** (bits - 4)), fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 5 }), (ecg, seeds) => {
      fuzzCases++;
      const f = decodePmdData(packDelta(0, 1n, 0x80, bits / 8, [ecg], splits(ecg.length - 1, seeds)), { resolution });
      assert.deepEqual(Array.from(f.samples), ecg);
    }), { numRuns: 1_000 });
  }
});

test('round trip: uncompressed ECG and ACC frames', () => {
  fc.assert(fc.property(fc.array(fc.integer({ min: -(2 ** 23), max: 2 ** 23 - 1 }), { minLength: 1, maxLength: 80 }), (ecg) => {
    fuzzCases++;
    const out = frameHeader(0, 123n, 0);
    for (const v of ecg) pushInt(out, v, 3);
    assert.deepEqual(Array.from(decodePmdData(Uint8Array.from(out)).samples), ecg);
  }), { numRuns: 1_000 });
  const acc = fc.constantFrom([0, 1], [1, 2], [2, 3]).chain(([ft, w]) => fc.tuple(fc.constant([ft, w]),
    fc.array(fc.tuple(...[0, 1, 2].map(() => fc.integer({ min: -(2 ** (8 * w - 1)), max: 2 ** (8 * w - 1) - 1 }))), { minLength: 1, maxLength: 60 })));
  fc.assert(fc.property(acc, ([[ft, w], samples]) => {
    fuzzCases++;
    const out = frameHeader(2, 9n, ft);
    for (const s of samples) for (const v of s) pushInt(out, v, w);
    const d = decodePmdData(Uint8Array.from(out));
    assert.deepEqual([d.samples.x, d.samples.y, d.samples.z].map((a) => Array.from(a)), [0, 1, 2].map((c) => samples.map((s) => s[c])));
  }), { numRuns: 1_000 });
});

test('at least 100,000 generated cases ran', () => {
  console.log(`fast-check cases: ${fuzzCases} (fuzzed delta frames decoded to samples: ${pmdDeltaDecoded})`);
  assert.ok(pmdDeltaDecoded >= 1000, `only ${pmdDeltaDecoded} fuzzed delta frames decoded`);
  assert.ok(fuzzCases >= 100_000, `only ${fuzzCases} cases`);
});
