// loadModelInWorker in a Node worker_thread: the same numbers as the in-thread model, typed errors
// across the thread boundary, transfer instead of copy on request, a free main thread, dispose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadModel, loadModelInWorker, SensorformerError } from '../../web/src/index.js';
import { fixturePath } from './safetensors.js';

const { windows } = JSON.parse(readFileSync(fixturePath('model/windows.json'), 'utf8'));
const path = fixturePath('model/factorized.safetensors');
const local = await loadModel(path);
const remote = await loadModelInWorker(path);

test('the worker computes exactly what the main thread computes', async () => {
  assert.deepEqual(remote.config, local.config);
  for (const w of windows) {
    const [a, b] = [local.forward(w, { attention: true }), await remote.forward(w, { attention: true })];
    assert.deepEqual(b.embeddings, a.embeddings);
    assert.deepEqual(b.pooled, a.pooled);
    assert.deepEqual(b.tokens, a.tokens);
    assert.deepEqual(b.attention, a.attention);
  }
  const batch = await remote.forwardBatch(windows);
  batch.forEach((r, i) => assert.deepEqual(r.pooled, local.forward(windows[i]).pooled));
});

test('concurrent requests each get their own answer', async () => {
  const results = await Promise.all(windows.concat(windows).map((w) => remote.forward(w)));
  results.forEach((r, i) => assert.deepEqual(r.pooled, local.forward(windows[i % windows.length]).pooled));
});

test('with transfer: true the inputs move to the worker; by default they are copied', async () => {
  const s = windows[0].streams[0];
  const make = () => ({ streams: [{ ...s, samples: Float32Array.from(s.samples, (v) => v ?? NaN) }] });
  const copied = make();
  await remote.forward(copied);
  assert.equal(copied.streams[0].samples.length, s.samples.length, 'copied input stays usable');
  const moved = make();
  const r = await remote.forward(moved, { transfer: true });
  assert.equal(moved.streams[0].samples.buffer.byteLength, 0, 'transferred input is detached');
  assert.deepEqual(r.pooled, local.forward(make()).pooled);
});

test('the main thread keeps running while the worker computes', async () => {
  // A heavier window: 1,500 ECG tokens in the time layer, 2 layers.
  const samples = Float32Array.from({ length: 16 * 1500 }, (_, i) => Math.sin(i / 9) * 400);
  const big = { streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130.3, startTime: 0, samples }] };
  // Three turns of the event loop (setImmediate: no timer, no duration) against the forward's
  // answer: a forward computed on this thread would block before returning and its promise would
  // settle first; in the worker the answer needs the whole computation (tens of milliseconds)
  // while a turn of the loop is microseconds. No clock is read.
  const turns = (n) => new Promise((resolve) => {
    const next = (left) => (left ? setImmediate(() => next(left - 1)) : resolve('loop turned'));
    next(n);
  });
  const pending = remote.forward(big);
  const first = await Promise.race([pending.then(() => 'forward settled'), turns(3)]);
  assert.equal(first, 'loop turned', 'the event loop ran while the forward was in flight');
  assert.equal((await pending).dims[0], 1500);
});

test('errors cross the thread boundary as SensorformerError with their code', async () => {
  await assert.rejects(remote.forward({ streams: [{ sensor: 0, modality: 'eeg', placement: 'chest', rateHz: 1, startTime: 0, samples: [1] }] }),
    (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /eeg/.test(e.message));
  await assert.rejects(loadModelInWorker('/nonexistent.safetensors'), (e) => e instanceof SensorformerError && e.code === 'IO');
  await assert.rejects(loadModelInWorker(readFileSync(fixturePath('attention.safetensors'))), (e) => e.code === 'BAD_FORMAT');
  assert.deepEqual((await remote.forward(windows[2])).pooled, local.forward(windows[2]).pooled, 'still works after errors');
});

test('dispose stops the worker; later calls are a typed error', async () => {
  const m = await loadModelInWorker(path);
  await m.forward(windows[2]);
  await m.dispose();
  await m.dispose();
  await assert.rejects(m.forward(windows[2]), (e) => e.code === 'DISPOSED');
});

test('a value structured clone cannot copy is INVALID_ARGUMENT, and the worker keeps working', async () => {
  const cases = [
    [{ ...windows[2], onDone: () => {} }, /^the window cannot be sent to the worker: .*could not be cloned/],
    [{ streams: [{ ...windows[2].streams[0], sensor: Symbol('ecg') }] }, /^the window cannot be sent to the worker/],
  ];
  for (const [w, message] of cases) {
    await assert.rejects(remote.forward(w), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && message.test(e.message));
    await assert.rejects(remote.forwardBatch([windows[0], w]), (e) => e.code === 'INVALID_ARGUMENT' && /^the windows cannot be sent/.test(e.message));
  }
  assert.deepEqual((await remote.forward(windows[2])).pooled, local.forward(windows[2]).pooled);
});

test('bad options and bad windows get the same codes and messages as the main-thread Model', async () => {
  const s0 = windows[2].streams[0];
  const calls = [
    [windows[0], { atention: true }], [windows[0], true], [windows[0], 'attention'], [windows[0], { attention: 'yes' }],
    [{ streams: [{ ...s0, samples: new BigInt64Array(16) }] }, undefined],
    [{ streams: [{ ...s0, samples: Float64Array.from(s0.samples, (v, i) => (i === 3 ? 1e39 : v ?? NaN)) }] }, undefined],
    [{ streams: [{ ...s0, present: new Uint8Array(16).fill(2) }] }, null],
    [{ streams: [{ ...s0, sensor: 2 ** 31 }] }, null],
  ];
  for (const [w, options] of calls) {
    let want;
    try { local.forward(w, options); } catch (e) { want = e; }
    assert.ok(want instanceof SensorformerError, 'the main thread rejects it');
    await assert.rejects(remote.forward(w, options), (e) => {
      assert.ok(e instanceof SensorformerError);
      assert.equal(e.code, want.code);
      // The worker accepts one more option (transfer), so its list of keys is longer.
      assert.equal(e.message.replace(', transfer', ''), want.message);
      return true;
    });
  }
  await assert.rejects(remote.forward(windows[0], { transfer: 'yes' }), (e) => e.code === 'INVALID_ARGUMENT' && /transfer must be true or false/.test(e.message));
  assert.deepEqual((await remote.forward(windows[0], null)).pooled, local.forward(windows[0]).pooled);
});

test('forward after an un-awaited dispose is DISPOSED; calls in flight complete; nothing stays pending', async () => {
  const m = await loadModelInWorker(path);
  const inFlight = [m.forward(windows[0]), m.forwardBatch(windows), m.forward({ streams: [{ sensor: 0, modality: 'eeg', placement: 'chest', rateHz: 1, startTime: 0, samples: [1] }] })];
  const disposing = m.dispose();
  const after = [m.forward(windows[0]), m.forwardBatch(windows), m.forward(windows[0], { atention: true })];
  // Every promise settles (a deadline instead of hoping: a pending promise fails here, not hangs).
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('a call was left pending for 20 s')), 20_000); });
  const settled = await Promise.race([Promise.allSettled([...inFlight, ...after, disposing]), deadline]).finally(() => clearTimeout(timer));
  assert.equal(settled[0].status, 'fulfilled', String(settled[0].reason));
  assert.deepEqual(settled[0].value.pooled, local.forward(windows[0]).pooled);
  assert.equal(settled[1].status, 'fulfilled', String(settled[1].reason));
  assert.equal(settled[1].value.length, windows.length);
  assert.equal(settled[2].reason?.code, 'INVALID_ARGUMENT', 'an in-flight error keeps its own code');
  for (const r of settled.slice(3, 6)) assert.equal(r.reason?.code, 'DISPOSED', `${r.reason?.code}: ${r.reason?.message}`);
  assert.equal(settled[6].status, 'fulfilled');
  await assert.rejects(m.forward(windows[0]), (e) => e.code === 'DISPOSED');
});

test('a worker that stops while calls are pending rejects them with WORKER_FAILED', async () => {
  // A stand-in for the thread (the constructor takes any { post, listen, terminate }): it takes
  // requests and never answers, then dies, as a worker killed by the system would.
  let fail;
  const posted = [];
  const fake = { post: (msg) => posted.push(msg), listen: (_, onFailure) => { fail = onFailure; }, terminate: async () => {} };
  const { WorkerModel } = await import('../../web/src/worker-client.js');
  const m = new WorkerModel(fake);
  const pending = [m.forward(windows[0]), m.forwardBatch(windows)];
  assert.equal(posted.length, 2);
  fail(new Error('the worker exited (code 1)'));
  for (const p of pending) await assert.rejects(p, (e) => e.code === 'WORKER_FAILED' && /exited \(code 1\)/.test(e.message));
  await assert.rejects(m.forward(windows[0]), (e) => e.code === 'WORKER_FAILED');
  await m.dispose();  // settles although the worker never answers the dispose request
  await assert.rejects(m.forward(windows[0]), (e) => e.code === 'DISPOSED');
});

test.after(async () => {
  await remote.dispose();
  local.dispose();
});
