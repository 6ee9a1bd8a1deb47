// sensorformer/simulator: its own entry point (sensorformer/ble does not reach it), and options
// checked by name: an unknown option is INVALID_ARGUMENT naming it and listing the valid ones,
// and the names the runtime accepts are exactly the ones web/simulator.d.ts declares.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as ble from '../../web/src/ble/index.js';
import * as simulator from '../../web/src/simulator/index.js';
import { SensorformerError } from '../../web/src/index.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const { createSimulatedBluetooth, createVirtualClock, SIMULATOR_OPTIONS } = simulator;

// The error createSimulatedBluetooth(options) throws; a simulation it creates instead is closed
// (its timers would keep the test process alive) and fails the test.
function errorOf(options) {
  let sim;
  try {
    sim = createSimulatedBluetooth(options);
  } catch (e) {
    return e;
  }
  sim.close();
  return assert.fail(`createSimulatedBluetooth(${JSON.stringify(options)}) did not throw`);
}

function rejects(options, pattern) {
  const e = errorOf(options);
  assert.ok(e instanceof SensorformerError, `expected a SensorformerError, got ${e?.name}: ${e?.message}`);
  assert.equal(e.code, 'INVALID_ARGUMENT');
  assert.match(e.message, pattern);
  return e;
}

test('an unknown option is INVALID_ARGUMENT naming it and listing every valid option', () => {
  const e = rejects({ seeed: 3 }, /unknown option 'seeed'/);
  for (const name of SIMULATOR_OPTIONS) assert.ok(e.message.includes(name), `the message does not list ${name}: ${e.message}`);
  // A typo next to valid options is still caught (the valid ones do not hide it).
  rejects({ seed: 3, clock: createVirtualClock(), dropoutProbabilty: 0.1 }, /'dropoutProbabilty'/);
});

test('unknown keys inside nested options are INVALID_ARGUMENT with their path', () => {
  const clock = createVirtualClock();
  rejects({ clock, faults: { dupPmd: [1] } }, /'faults\.dupPmd'.*duplicatePmd, duplicatePmdProbability/);
  rejects({ clock, faults: { clockJumps: [{ at: 1, too: 0 }] } }, /'faults\.clockJumps\[0\]\.too'/);
  rejects({ clock, thermometer: { expnent: -1 } }, /'thermometer\.expnent'.*exponent/);
  rejects({ clock, names: { strapp: 'x' } }, /'names\.strapp'.*strap, thermometer, oximeter/);
  rejects({ clock, driftPpm: { strap: 1, oxi: 2 } }, /'driftPpm\.oxi'/);
  rejects({ clock, disconnects: [{ device: 'strap', at: 1, duraton: 2 }] }, /'disconnects\[0\]\.duraton'.*device, at, duration/);
  rejects({ clock, disconnects: { rate: 60 } }, /'disconnects\.rate'.*ratePerHour/);
  rejects({ clock, activities: [{ activity: 'rest', duraton: 5 }] }, /'activities\[0\]\.duraton'/);
  rejects({ clock, fingerOff: [{ start: 1, duration: 2 }] }, /'fingerOff\[0\]\.start'/);
  rejects({ clock, accRatesHz: { 25: 25.5, 50: 51, 100: 102, 200: 204, 400: 408 } }, /'accRatesHz\.400'/);
});

test('options that are not an object are INVALID_ARGUMENT', () => {
  for (const bad of [null, 5, 'seed', [], true]) rejects(bad, /options must be an object/);
});

test('every valid option (at once, nested ones included) is accepted and the simulation runs', async () => {
  const clock = createVirtualClock();
  const sim = createSimulatedBluetooth({
    seed: 'x', clock, start: clock.now(), devices: ['strap', 'thermometer', 'oximeter'],
    names: { strap: 'S', thermometer: 'T', oximeter: 'O' }, driftPpm: { strap: 10 }, clockOffset: 0.1,
    connectionIntervalMs: { thermometer: 30 }, delayProbability: 0.01, maxDelayIntervals: 2, dropoutProbability: 0,
    disconnects: [{ device: 'strap', at: 100, duration: 2 }],
    faults: { duplicatePmd: [5], duplicatePmdProbability: 0, reorderPmd: [], reorderPmdProbability: 0, clockJumps: [{ device: 'strap', at: 50, by: 1 }] },
    activities: [{ activity: 'rest', duration: 10 }, { activity: 'walk', start: 10 }],
    fingerOff: [{ at: 3, duration: 1 }], fingerOffRatePerMinute: 0, ecgRateHz: 130, accRatesHz: simulator.H10_ACC_RATES_HZ,
    accCompressed: false, accFrameSamples: 36, accDeltaBlockSamples: 16, hrContact: true, pmdResponses: 'short',
    pmdTimestampJitterUs: 0, pmdMaxFrameBytes: 229, thermometer: { intervalSeconds: 5, exponent: -1, timeField: false, type: null },
    battery: { strap: 50, oximeter: 40 }, connectLatencyMs: 0, gattLatencyMs: 0, staleAttributes: true,
    overwriteAfterDispatch: true, strictUuids: false, chooser: null, available: true,
  });
  try {
    const strap = await (async () => {
      const pending = ble.connectWearable({ bluetooth: sim, clock, filters: ble.DEVICE_FILTERS.strap });
      await clock.advanceAsync(1);
      return pending;
    })();
    const got = [];
    const it = strap.samples('hr');
    const next = it.next();
    await clock.advanceAsync(3);
    got.push(await next);
    assert.equal(got[0].done, false);
    assert.equal(got[0].value.kind, 'hr');
    assert.ok(got[0].value.values instanceof Float32Array);
    await strap.close();
  } finally {
    sim.close();
  }
});

// The keys of SimulatedBluetoothOptions in web/simulator.d.ts.
function declaredOptions() {
  const text = readFileSync(join(repo, 'web/simulator.d.ts'), 'utf8');
  const start = text.indexOf('export interface SimulatedBluetoothOptions {');
  assert.ok(start >= 0, 'web/simulator.d.ts declares no SimulatedBluetoothOptions');
  let depth = 0, i = text.indexOf('{', start), body = '';
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === '{') depth++;
    if (c === '}') depth--;
    if (depth === 1 && c !== '{') body += c;
    else if (depth > 1) body += ' ';
    if (depth === 0) break;
  }
  return [...body.replace(/\/\*\*[\s\S]*?\*\//g, '').matchAll(/^\s*([A-Za-z0-9_]+)\??:/gm)].map((m) => m[1]);
}

test('the option names the runtime accepts are the ones the types declare', () => {
  assert.deepEqual([...declaredOptions()].sort(), [...SIMULATOR_OPTIONS].sort());
});

// Static imports, followed from a module: which files a plain ESM loader (no bundler) fetches.
function moduleGraph(entry) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(repo, file), 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gm)) visit(normalize(join(dirname(file), m[1])));
  };
  visit(entry);
  return seen;
}

test('sensorformer/ble does not import the simulator; sensorformer/simulator does', () => {
  const bleGraph = moduleGraph('web/src/ble/index.js');
  for (const f of ['web/src/simulator/devices.js', 'web/src/simulator/physiology.js'])
    assert.ok(!bleGraph.has(f), `sensorformer/ble imports ${f}:\n${[...bleGraph].join('\n')}`);
  assert.ok(bleGraph.has('web/src/ble/device.js'), 'the graph walk found nothing (device.js missing)');
  const simGraph = moduleGraph('web/src/simulator/index.js');
  for (const f of ['web/src/simulator/devices.js', 'web/src/simulator/physiology.js']) assert.ok(simGraph.has(f), `sensorformer/simulator lacks ${f}`);
  assert.equal(ble.createSimulatedBluetooth, undefined, 'sensorformer/ble still exports createSimulatedBluetooth');
  assert.equal(typeof simulator.createSimulatedBluetooth, 'function');
  // The clocks are in both: replay and record take one.
  assert.equal(ble.createVirtualClock, simulator.createVirtualClock);
  assert.equal(ble.createRealClock, simulator.createRealClock);
  const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  assert.equal(pkg.exports['./simulator'].default, './web/src/simulator/index.js');
});
