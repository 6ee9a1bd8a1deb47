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
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  const pending = remote.forward(big);
  await new Promise((r) => setTimeout(r, 5));
  const during = ticks;
  await pending;
  clearInterval(timer);
  assert.ok(during > 0, 'timers ran while the forward was in flight (a main-thread forward would block them)');
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

test.after(async () => {
  await remote.dispose();
  local.dispose();
});
