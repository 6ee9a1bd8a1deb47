// The simulated strap's atrial fibrillation (web/src/simulator/physiology.js, issue 20): what AF looks
// like on one ECG lead, from the physiology literature, checked on the simulator's own output
// against the same person's sinus rhythm (seeded):
//   - RR intervals irregularly irregular: coefficient of variation >= 0.15 in AF (sinus at rest
//     here: ~0.03), successive intervals nearly independent (|lag-1 autocorrelation| < 0.3), a
//     faster mean rate than sinus;
//   - no P wave: the beat-averaged bump 160 ms before R (where the sinus P wave peaks, ~120 µV)
//     under a quarter of the sinus average;
//   - fibrillatory waves: between beats (T end to next Q) the 4-9 Hz band holds at least 4x the
//     power it holds in sinus rhythm;
//   - the QRS detector (web/src/qrs.js) still finds every beat (Se, PPV >= 99 %);
//   - episodes: fixed ones from options, startAf() while running; bad episodes INVALID_ARGUMENT.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createPhysiology } from '../../web/src/simulator/physiology.js';
import { createSimulatedBluetooth, createVirtualClock } from '../../web/src/simulator/index.js';
import { detectBeats, SensorformerError } from '../../web/src/index.js';
import { matchBeats } from './beats.js';

const FS = 250;
const AF = { at: 120, duration: 180 };

function rrStats(beats, lo, hi) {
  const rr = [];
  for (let i = 1; i < beats.length; i++) if (beats[i - 1] >= lo && beats[i] < hi) rr.push(beats[i] - beats[i - 1]);
  const mean = rr.reduce((a, v) => a + v, 0) / rr.length;
  const sd = Math.sqrt(rr.reduce((a, v) => a + (v - mean) ** 2, 0) / rr.length);
  let c = 0;
  for (let i = 1; i < rr.length; i++) c += (rr[i] - mean) * (rr[i - 1] - mean);
  return { n: rr.length, rate: 60 / mean, cv: sd / mean, lag1: c / ((rr.length - 1) * sd * sd) };
}

// Power in 4-9 Hz of one stretch of ECG (mean and linear trend removed, so baseline wander and the
// tail of a T wave count little): a direct Fourier sum at 0.5 Hz steps, per sample squared.
function bandPower(x, fs) {
  const n = x.length;
  if (n < 8) return 0;
  const tMean = (n - 1) / 2, xMean = x.reduce((a, v) => a + v, 0) / n;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) sxy += (i - tMean) * (x[i] - xMean), sxx += (i - tMean) ** 2;
  const slope = sxy / sxx;
  const y = Array.from(x, (v, i) => v - xMean - slope * (i - tMean));
  let p = 0;
  for (let f = 4; f <= 9; f += 0.5) {
    let re = 0, im = 0;
    for (let i = 0; i < n; i++) re += y[i] * Math.cos((2 * Math.PI * f * i) / fs), im -= y[i] * Math.sin((2 * Math.PI * f * i) / fs);
    p += (re * re + im * im) / (n * n);
  }
  return p;
}

for (const seed of [1, 2, 3]) {
  test(`seed ${seed}: AF has irregular RR, no P waves, f waves; sinus before and after is regular`, () => {
    const p = createPhysiology({ seed, activities: [{ activity: 'rest' }], af: [AF] });
    const beats = Array.from(p.beats(0, 400));
    const sinus = rrStats(beats, 10, 118), af = rrStats(beats, 122, 298), after = rrStats(beats, 310, 400);
    assert.ok(af.cv >= 0.15 && sinus.cv < 0.08 && after.cv < 0.08, `CV: sinus ${sinus.cv}, AF ${af.cv}, after ${after.cv}`);
    assert.ok(Math.abs(af.lag1) < 0.3, `AF lag-1 autocorrelation ${af.lag1}`);
    assert.ok(af.rate > sinus.rate + 10, `rates: sinus ${sinus.rate}, AF ${af.rate} bpm`);
    assert.equal(p.rhythmAt(119.9), 'sinus');
    assert.equal(p.rhythmAt(120), 'af');
    assert.equal(p.rhythmAt(300), 'sinus');
    // P waves: the bump 160 ms before each R over its neighbours 60 ms either side, averaged over
    // beats (f waves are not locked to the beats, so they average out; a P wave does not).
    const pWave = (lo, hi) => {
      const bs = beats.filter((b) => b >= lo && b < hi);
      return bs.reduce((a, b) => a + p.ecgAt(b - 0.16) - (p.ecgAt(b - 0.1) + p.ecgAt(b - 0.22)) / 2, 0) / bs.length;
    };
    const pSinus = pWave(10, 118), pAf = pWave(122, 298);
    assert.ok(pSinus > 60 && Math.abs(pAf) < pSinus / 4, `P-wave average: sinus ${pSinus} µV, AF ${pAf} µV`);
    // f waves: the 4-9 Hz power of each T-Q stretch (0.4 s after a beat to 0.1 s before the next:
    // after the T wave, before the QRS), averaged over the stretches of each rhythm.
    const tq = (lo, hi) => {
      const powers = [];
      for (let i = 1; i < beats.length; i++) {
        if (beats[i - 1] < lo || beats[i] >= hi) continue;
        const x = [];
        for (let t = beats[i - 1] + 0.4; t < beats[i] - 0.1; t += 1 / FS) x.push(p.ecgAt(t));
        if (x.length >= 0.15 * FS) powers.push(bandPower(x, FS));
      }
      return powers.reduce((a, v) => a + v, 0) / powers.length;
    };
    const fSinus = tq(10, 118), fAf = tq(122, 298);
    assert.ok(fAf >= 4 * fSinus, `4-9 Hz power between beats: sinus ${fSinus}, AF ${fAf}`);
    // The QRS detector on the whole 400 s.
    const x = Float32Array.from({ length: 400 * FS }, (_, i) => p.ecgAt(i / FS));
    const det = Array.from(detectBeats(x, FS).times).filter((t) => t >= 0.3 && t < 399.7);
    const m = matchBeats(beats.filter((t) => t >= 0.3 && t < 399.7), det);
    assert.ok(m.se >= 0.99 && m.ppv >= 0.99, `Se ${m.se}, PPV ${m.ppv}`);
  });
}

test('no af option: the same beats and ECG as an empty af list (sinus only)', () => {
  const a = createPhysiology({ seed: 4 }), b = createPhysiology({ seed: 4, af: [] });
  assert.deepEqual(a.beats(0, 120), b.beats(0, 120));
  for (let t = 0; t < 120; t += 0.37) assert.equal(a.ecgAt(t), b.ecgAt(t));
  assert.equal(a.rhythmAt(60), 'sinus');
});

test('bad episodes are INVALID_ARGUMENT naming them', () => {
  const bad = (options, pattern) => assert.throws(() => createPhysiology(options), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && pattern.test(e.message));
  bad({ af: 'yes' }, /af must be an array/);
  bad({ af: [{ at: -1, duration: 10 }] }, /af\[0\] must be \{ at, duration \}/);
  bad({ af: [{ at: 10, duration: 0 }] }, /af\[0\]/);
  bad({ af: [{ at: 10, duration: 60 }, { at: 30, duration: 60 }] }, /af\[1\] overlaps/);
  assert.throws(() => createSimulatedBluetooth({ af: [{ at: 1, length: 2 }] }), /unknown option 'af\[0\]\.length'/);
});

test('the simulated strap: af episodes from options, and startAf() while it runs, in host time', async () => {
  const clock = createVirtualClock(1000);
  const sim = createSimulatedBluetooth({ seed: 7, clock, af: [{ at: 30, duration: 20 }] });
  try {
    assert.deepEqual(sim.truth.afEpisodes(1000, 2000), [{ start: 1030, end: 1050 }]);
    assert.equal(sim.truth.rhythmAt(1040), 'af');
    await clock.advanceAsync(100);
    sim.truth.ecgAt(1100);  // the strap draws beats about a second ahead of what it sends
    const e = sim.startAf({ duration: 30, after: 2 });
    assert.ok(e.start >= 1102 && e.start < 1104.5, `starts at ${e.start}`);
    assert.equal(e.end - e.start, 30);
    assert.equal(sim.truth.rhythmAt(e.start + 1), 'af');
    assert.equal(sim.truth.rhythmAt(e.end + 1), 'sinus');
    assert.throws(() => sim.startAf({ duration: -1 }), /startAf: duration must be/);
  } finally {
    sim.close();
  }
});
