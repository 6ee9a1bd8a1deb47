// The simulated optical armband "Polar Sense SIM", shaped on a Polar Verity Sense (device key
// 'armband'; not among the default devices: createSimulatedBluetooth({ devices: ['armband'] })):
//
//   0x180D Heart Rate: 0x2A37 notify once a second on the device clock, flags 0x00 (u8 heart rate,
//          no RR intervals: an optical sensor sends pulse intervals over PMD instead).
//   0x180F battery 0x2A19 (read).
//   Polar PMD FB005C80-…: control point read answers 0F 6E … (PPG, ACC, PPI, gyroscope,
//          magnetometer; no ECG). Get-settings answers (Verity Sense, Polar's SDK feature list):
//            ACC   52 Hz, 16 bit, 8 G, 3 channels
//            PPG   55 Hz, 22 bit, 4 channels (3 photodiodes + ambient)
//            GYRO  52 Hz, 16 bit, 250 / 500 / 1000 / 2000 dps, 3 channels
//            MAGN  10 / 20 / 50 / 100 Hz, 16 bit, 50 G, 3 channels
//          A start with other settings is refused with the PMD status of the first wrong one (8
//          sample rate, 7 resolution, 9 range). Gyroscope and magnetometer starts answer their
//          scale factor (float32 after the "more" byte): 8.75 / 17.5 / 35 / 70 mdps per count by
//          range (a 16-bit MEMS gyroscope's sensitivities; a real Verity's exported gyroscope values
//          are multiples of 0.07 dps at 2000 dps) and 1.5 mG per count (its magnetometer values
//          are multiples of 0.0015 G). PPI starts without settings.
//   Data …5C82 notify: every stream in delta frames (frame type 0x80; Polar's layout, encodePmdDelta),
//          each frame as many samples as fit in one notification (pmdMaxFrameBytes, 229), its
//          timestamp the device time of its last sample (+ the timestamp jitter).
//
// True rates on the device clock, as measured from a real Verity Sense's sensor timestamps
// (bench/polar_logger_timing.mjs on a Polar Sensor Logger export; BENCHMARKS.md "Real device
// timing"): ACC and gyroscope 51.705 Hz for 52 asked, magnetometer 49.434 Hz for 50 (other
// magnetometer rates scaled the same), PPG 54.75 Hz for 55. Frames of that recording held ACC
// 71-86, PPG 41-46, gyroscope 86-150 and magnetometer 102-124 samples: a notification filled by
// delta frames, which is what filling maxBytes here gives (the count depends on the signal).
//
// PPI (type 3, frame type 0, 6 bytes per pulse: hr, interval ms, error estimate ms, flags): a
// frame per pulse, 0.15-1.4 s after it (normal, mean 0.6 s, sd 0.2 s), the first ~25 s after the
// start (Polar's SDK documentation for the Verity Sense). Pulses arrive a pulse transit time (0.22 s) after the
// physiology's beats; the interval is measured on the device clock. Blocker (bit 0) is set while
// moving (walk, run, or a motion burst at rest), with a larger error estimate; skin contact
// supported and detected (bits 1-2) are set. The frame timestamp is the device time of its last
// pulse.
//
// Signals (deterministic functions of time and the seed; truth.armband has them):
//   ACC: the physiology's accelerometer (mG; the same body as the strap's).
//   Gyroscope: 0.01 dps per mG/s of the accelerometer's rate of change (over +-0.1 s), plus noise.
//   Magnetometer: a fixed field (-1.2, -0.4, 0.25) G plus 50 µG per mG of acceleration.
//   PPG: per channel a DC level (262000, 279000, 293000 counts) minus a pulse (a systolic and a
//        dicrotic bump per pulse arrival, ~600 counts) with respiratory baseline wander and noise;
//        ambient -640 counts with slow drift and noise.
import { encodeHeartRate, encodePmdDelta, encodePmdPpi, u16le } from '../ble/encoders.js';
import { parseSettings, PMD_STATUS, UNIX_2000 } from './devices.js';

export { encodePmdPpi };
import { createRng, hashSeed, noiseAt } from './physiology.js';

const PTT = 0.22;                    // s from a beat (R peak) to its pulse at the arm
const PMD_LATENCY = 0.002;           // s from a frame's last sample to the frame being ready
const PMD_STARTUP = 0.05;            // s from a start command to the first sample
const CONTROL_LATENCY = 0.003;
const PPI_FIRST = 25;                // s from the PPI start to its first frame
const CANDIDATES = 220;              // samples offered to a delta frame (more than ever fit)
const GYRO_FACTORS = { 250: 0.00875, 500: 0.0175, 1000: 0.035, 2000: 0.07 };
const MAGN_FACTOR = 0.0015;
const GYRO_PER_MGS = 0.004;         // dps per mG/s of acceleration change
const HR_JITTER_SD = 0.032;         // s
const HR_JITTER_MAX = 0.15;         // s
const PPI_DELAY_MEAN = 0.6, PPI_DELAY_SD = 0.2, PPI_DELAY_MIN = 0.15, PPI_DELAY_MAX = 1.4;  // s, pulse -> its frame ready
const MAGN_RATE_SCALE = 49.434 / 50;

/** True rates (Hz) of the simulated armband per requested rate. */
export const VERITY_RATES_HZ = Object.freeze({
  acc: Object.freeze({ 52: 51.705 }),
  gyro: Object.freeze({ 52: 51.705 }),
  magnetometer: Object.freeze(Object.fromEntries([10, 20, 50, 100].map((r) => [r, r * MAGN_RATE_SCALE]))),
  ppg: Object.freeze({ 55: 54.75 }),
});

// What get-settings answers and a start must ask, per measurement type.
const OFFER = {
  1: { name: 'ppg', sampleRate: [55], resolution: [22], range: null, channels: 4 },
  2: { name: 'acc', sampleRate: [52], resolution: [16], range: [8], channels: 3 },
  5: { name: 'gyro', sampleRate: [52], resolution: [16], range: [250, 500, 1000, 2000], channels: 3 },
  6: { name: 'magnetometer', sampleRate: [10, 20, 50, 100], resolution: [16], range: [50], channels: 3 },
};

const f32le = (v) => Array.from(new Uint8Array(Float32Array.of(v).buffer));

function settingsAnswer(offer) {
  const out = [0x00, offer.sampleRate.length, ...offer.sampleRate.flatMap(u16le), 0x01, 1, ...u16le(offer.resolution[0])];
  if (offer.range) out.push(0x02, offer.range.length, ...offer.range.flatMap(u16le));
  out.push(0x04, 1, offer.channels);
  return out;
}

// The armband's signals as functions of time since the simulation start (s).
function signals(phys, seed) {
  const key = hashSeed(seed, 'armband');
  const clamp16 = (v) => Math.max(-32768, Math.min(32767, Math.round(v)));
  const acc = (t) => phys.accAt(t);
  // The armband's accelerometer: the body's motion plus its own sensor noise (12 mG).
  const accMg = (t) => acc(t).map((v, c) => v + 12 * noiseAt(key, 40 + c, t));
  const gyroDps = (t) => {
    const a = acc(t + 0.1), b = acc(t - 0.1);
    return [0, 1, 2].map((c) => GYRO_PER_MGS * (a[c] - b[c]) / 0.2 + 0.08 * noiseAt(key, 10 + c, t));
  };
  const magnG = (t) => {
    const a = acc(t);
    return [-1.2, -0.4, 0.25].map((base, c) => base + 5e-5 * a[c] + 0.004 * noiseAt(key, 20 + c, t));
  };
  const pulse = (t) => {
    let v = 0;
    for (const b of phys.beats(t - PTT - 0.8, t - PTT + 0.3)) {
      const d = t - (b + PTT);
      v += Math.exp(-0.5 * (d / 0.09) ** 2) + 0.3 * Math.exp(-0.5 * ((d - 0.28) / 0.07) ** 2);
    }
    return v;
  };
  const ppg = (t) => {
    const p = pulse(t), resp = Math.sin(2 * Math.PI * 0.25 * t), mv = acc(t);
    const motion = 0.4 * (Math.abs(mv[0]) + Math.abs(mv[1]) + Math.abs(mv[2]) - 1000);
    const out = [262000, 279000, 293000].map((dc, c) => Math.round(dc * (1 + 0.002 * resp) - (560 + 40 * c) * p + motion + 65 * noiseAt(key, 30 + c, t)));
    out.push(Math.round(-640 + 20 * Math.sin(2 * Math.PI * t / 47) + 15 * noiseAt(key, 34, t)));
    return out;
  };
  return {
    accMg, gyroDps, magnG, ppg,
    counts: {
      2: (t) => accMg(t).map((v) => Math.max(-8000, Math.min(8000, clamp16(v)))),
      5: (t, factor) => gyroDps(t).map((v) => clamp16(v / factor)),
      6: (t) => magnG(t).map((v) => clamp16(v / MAGN_FACTOR)),
      1: (t) => ppg(t),
    },
  };
}

/**
 * Builds the armband on a SimDevice (devices.js): its services, notifications and PMD engine.
 * `bt` is the SimulatedBluetooth (physiology, start, options, truth, seed).
 */
export function buildArmband(bt, sim, { battery = 72 } = {}) {
  const fake = sim.fake, phys = bt.physiology, start = bt.start, opts = bt.options;
  const sig = signals(phys, bt.seed);
  const hrSvc = fake.addService('heart_rate');
  const hrm = hrSvc.addCharacteristic('heart_rate_measurement', { notify: true });
  const bat = fake.addService('battery_service');
  bat.addCharacteristic('battery_level', { read: true }, { value: [battery] });
  const pmd = fake.addService('fb005c80-02e7-f387-1cad-8acd2d8df0c8');
  const control = pmd.addCharacteristic('fb005c81-02e7-f387-1cad-8acd2d8df0c8', { read: true, write: true, indicate: true },
    { value: [0x0F, 0x6E, ...new Array(15).fill(0)] });
  const data = pmd.addCharacteristic('fb005c82-02e7-f387-1cad-8acd2d8df0c8', { notify: true });
  const maxBytes = opts.pmdMaxFrameBytes ?? 229;
  const jitterUs = opts.pmdTimestampJitterUs ?? 12;
  const jitterRng = createRng(bt.seed, 'armband-pmd-jitter');
  const jitterNs = () => (jitterUs > 0 ? BigInt(Math.round(jitterRng.uniform(-jitterUs, jitterUs) * 1000)) : 0n);
  const unixOf = (ns) => Number(ns) / 1e9 + UNIX_2000;

  bt.truth.armband = {
    /** [x, y, z] mG, [x, y, z] dps, [x, y, z] G, [ppg0, ppg1, ppg2, ambient] counts at host time t. */
    accAt: (t) => sig.accMg(t - start),
    gyroAt: (t) => sig.gyroDps(t - start),
    magnetometerAt: (t) => sig.magnG(t - start),
    ppgAt: (t) => sig.ppg(t - start),
    /** The exact host times the samples of a pmdFrames entry (device 'armband') were taken at. */
    sampleHostTimes: (frame) => Float64Array.from({ length: frame.count }, (_, i) => sim.clock.hostOfOsc(frame.osc.o0 + (frame.osc.first + i) / frame.osc.rate)),
    /** Pulse arrival host times in [t0, t1). */
    pulseTimes: (t0, t1) => Array.from(phys.beats(t0 - start - PTT, t1 - start - PTT), (b) => b + PTT + start),
    rates: VERITY_RATES_HZ,
  };

  // Heart rate once a second, no RR, each notification off its 1 s tick by a seeded normal
  // jitter (sd 32 ms, at most 150 ms): a real Verity Sense's HR notifications arrived 992 ms apart
  // (median) with 90 % of intervals within 920-1074 ms (BENCHMARKS.md "Real device timing"),
  // i.e. an interval sd of ~46 ms = sqrt(2) x the per-notification sd.
  const hrRng = createRng(bt.seed, 'armband-hr-phase');
  const hrPhase = hrRng.uniform(0, 1);
  let tick = 0;
  const hrTick = () => {
    const h = sim.clock.hostOfOsc(hrPhase + tick + Math.max(-HR_JITTER_MAX, Math.min(HR_JITTER_MAX, hrRng.normal(0, HR_JITTER_SD))));
    sim.at(h, () => {
      sim.send(hrm, 'hr', encodeHeartRate(phys.heartRateAt(h - start), []), h);
      tick++;
      hrTick();
    });
  };
  hrTick();

  const streams = new Map();  // type -> { timer }
  const stop = (type) => {
    const s = streams.get(type);
    if (s) sim.cancel(s.timer);
    streams.delete(type);
  };

  // A sampled stream: frames of as many samples as fit, scheduled one after another.
  const startSampled = (type, now, rate, valueAt, width) => {
    const s = { o0: sim.clock.osc(now) + PMD_STARTUP, next: 0, timer: null };
    streams.set(type, s);
    const name = OFFER[type].name;
    const schedule = () => {
      const candidates = [];
      for (let k = s.next; k < s.next + CANDIDATES; k++) candidates.push(valueAt(sim.clock.hostOfOsc(s.o0 + k / rate) - start));
      const jitter = jitterNs();
      const exactOf = (n) => sim.clock.nsAtOsc(s.o0 + (s.next + n - 1) / rate);
      const { bytes, count } = encodePmdDelta(type, (n) => exactOf(n) + jitter, candidates, { width, maxBytes });
      const hLast = sim.clock.hostOfOsc(s.o0 + (s.next + count - 1) / rate);
      s.timer = sim.at(hLast + PMD_LATENCY, () => {
        const ts = exactOf(count) + jitter;
        bt.truth._log(bt.truth.pmdFrames, {
          device: 'armband', type: name, count, timestamp: ts, deviceTime: unixOf(ts), trueDeviceTime: unixOf(exactOf(count)),
          firstDeviceTime: unixOf(sim.clock.nsAtOsc(s.o0 + s.next / rate)), spacing: 1 / rate, lastSampleTime: hLast, ready: hLast + PMD_LATENCY,
          osc: { o0: s.o0, first: s.next, rate },
        });
        sim.send(data, 'pmd-data', bytes, hLast + PMD_LATENCY);
        s.next += count;
        schedule();
      });
    };
    schedule();
  };

  // PPI: one frame per pulse, `delay` after it (a real Verity Sense's PPI rows arrived one per
  // pulse: 1170 ms apart at ~51 bpm, 90 % within 550-1596 ms, 3 of 442 within 50 ms of the
  // previous), the first pulses ~25 s after the start.
  const ppiRng = createRng(bt.seed, 'armband-ppi-delay');
  const startPpi = (now) => {
    const s = { timer: null };
    streams.set(3, s);
    const from = now - start + PPI_FIRST - 1;
    const prior = phys.beats(from - PTT - 5, from - PTT);
    let last = prior.length ? prior[prior.length - 1] + PTT : null;  // the previous pulse (s since start)
    const schedule = () => {
      const after = last ?? from;
      const [b] = phys.beats(after - PTT + 1e-9, after - PTT + 10);
      const p = b + PTT;
      const delay = Math.max(PPI_DELAY_MIN, Math.min(PPI_DELAY_MAX, ppiRng.normal(PPI_DELAY_MEAN, PPI_DELAY_SD)));
      const h = p + start + delay;
      s.timer = sim.at(h, () => {
        if (last !== null) {
          const moving = phys.activityAt(p) !== 'rest' || phys.motionBurstAt(p);
          const ppi = (p - last) * 1000 * (1 + sim.clock.eps);
          const pulse = { hr: 60000 / ppi, ppi, error: moving ? 60 : 12, flags: 0x06 | (moving ? 1 : 0) };
          sim.send(data, 'pmd-data', encodePmdPpi(sim.clock.ns(p + start), [pulse]), h);
        }
        last = p;
        schedule();
      });
    };
    schedule();
  };

  const respond = (bytes) => sim.send(control, 'pmd-control', Uint8Array.from(bytes), bt.clock.now() + CONTROL_LATENCY, { reliable: true });
  control.onWrite = (bytes) => {
    const now = bt.clock.now();
    const op = bytes[0], type = bytes.length > 1 ? bytes[1] : 0;
    const reply = (status, extra = []) => respond(status === PMD_STATUS.SUCCESS ? [0xF0, op, type, status, 0x00, ...extra] : [0xF0, op ?? 0, type, status]);
    if (bytes.length < 2) return reply(PMD_STATUS.INVALID_LENGTH);
    if (op !== 0x01 && op !== 0x02 && op !== 0x03) return reply(PMD_STATUS.INVALID_OP_CODE);
    if (!OFFER[type] && type !== 3) return reply(type > 0x0F ? PMD_STATUS.INVALID_MEASUREMENT_TYPE : PMD_STATUS.NOT_SUPPORTED);
    if (op === 0x01) return type === 3 ? reply(PMD_STATUS.SUCCESS) : reply(PMD_STATUS.SUCCESS, settingsAnswer(OFFER[type]));
    if (op === 0x03) {
      stop(type);
      return reply(PMD_STATUS.SUCCESS);
    }
    if (streams.has(type)) return reply(PMD_STATUS.ALREADY_IN_STATE);
    if (type === 3) {
      reply(PMD_STATUS.SUCCESS);
      startPpi(now);
      return undefined;
    }
    const parsed = parseSettings(bytes.subarray(2));
    if (parsed.status) return reply(parsed.status);
    const st = parsed.settings;
    const offer = OFFER[type];
    if (!offer.sampleRate.includes(st.sampleRate)) return reply(PMD_STATUS.INVALID_SAMPLE_RATE);
    if (!offer.resolution.includes(st.resolution)) return reply(PMD_STATUS.INVALID_RESOLUTION);
    if (offer.range && !offer.range.includes(st.range)) return reply(PMD_STATUS.INVALID_RANGE);
    const rate = VERITY_RATES_HZ[offer.name][st.sampleRate];
    if (type === 5) {
      const factor = GYRO_FACTORS[st.range];
      reply(PMD_STATUS.SUCCESS, f32le(factor));
      startSampled(5, now, rate, (t) => sig.counts[5](t, Math.fround(factor)), 2);
    } else if (type === 6) {
      reply(PMD_STATUS.SUCCESS, f32le(MAGN_FACTOR));
      startSampled(6, now, rate, sig.counts[6], 2);
    } else {
      reply(PMD_STATUS.SUCCESS);
      startSampled(type, now, rate, sig.counts[type], type === 1 ? 3 : 2);
    }
    return undefined;
  };
  sim.onDisconnect = () => {
    for (const type of [...streams.keys()]) stop(type);
  };
}
