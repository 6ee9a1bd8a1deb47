// loadModelInWorker in a Node worker_thread: the same numbers as the in-thread model, typed errors
// across the thread boundary, transfer instead of copy on request, a free main thread, dispose.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { loadModel, loadModelInWorker, SensorformerError } from '../../web/src/index.js';
import { fixturePath } from './safetensors.js';
import { prng } from './prng.js';
import { delivery, recording } from './stream-plan.js';

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
    // In a batch the error names the window (here windows[1]), as Model's errors do.
    await assert.rejects(remote.forwardBatch([windows[0], w]), (e) => e.code === 'INVALID_ARGUMENT' && /^windows\[1\] cannot be sent to the worker/.test(e.message));
  }
  assert.deepEqual((await remote.forward(windows[2])).pooled, local.forward(windows[2]).pooled);
});

test('what postMessage refuses is INVALID_ARGUMENT at once (the worker lives); a SharedArrayBuffer is shared, not moved', async () => {
  const s2 = windows[2].streams[0];
  const typed = () => ({ streams: [{ ...s2, samples: Float32Array.from(s2.samples, (v) => v ?? NaN) }] });
  // A getter that throws (structured clone calls it), and nesting deeper than the stack.
  const getter = typed();
  Object.defineProperty(getter.streams[0], 'sensor', { enumerable: true, get() { throw new Error('sensor is not ready'); } });
  let deep = {};
  for (let i = 0; i < 200_000; i++) deep = { next: deep };
  const cases = [
    [getter, undefined, /^the window cannot be sent to the worker: sensor is not ready$/],
    [getter, { transfer: true }, /^the window cannot be sent to the worker: sensor is not ready$/],
    [{ ...typed(), deep }, undefined, /^the window cannot be sent to the worker: Maximum call stack size exceeded \(nested too deeply to copy\?\)$/],
    [{ ...typed(), deep }, { transfer: true }, /^the window cannot be sent to the worker: Maximum call stack size exceeded/],
  ];
  // A buffer moved by an earlier transfer: Node 20 drops such a message without a word, so the
  // call must be refused before it is posted (a 10 s deadline: an answer takes milliseconds).
  const moved = typed();
  await remote.forward(moved, { transfer: true });
  cases.push([moved, { transfer: true }, /^the window cannot be sent to the worker: a typed array's ArrayBuffer is detached/]);
  cases.push([moved, undefined, /^the window cannot be sent to the worker: .*detached/]);
  for (const [w, options, message] of cases) {
    const e = await within(10_000, remote.forward(w, options).then(() => assert.fail('sent'), (e) => e), 'forward');
    assert.ok(e instanceof SensorformerError, String(e));
    assert.equal(e.code, 'INVALID_ARGUMENT', e.message);
    assert.match(e.message, message);
  }
  const batch = await within(10_000, remote.forwardBatch([typed(), moved], { transfer: true }).then(() => assert.fail('sent'), (e) => e), 'batch');
  assert.equal(batch.code, 'INVALID_ARGUMENT');
  assert.match(batch.message, /^windows\[1\] cannot be sent to the worker: .*detached/);
  // A window over a SharedArrayBuffer with transfer: true: nothing to move, structured clone shares
  // it; the result is the main thread's (the same .wasm on the same floats: tolerance 0).
  const shared = typed();
  const memory = new Float32Array(new SharedArrayBuffer(shared.streams[0].samples.byteLength));
  memory.set(shared.streams[0].samples);
  shared.streams[0].samples = memory;
  assert.deepEqual((await remote.forward(shared, { transfer: true })).pooled, local.forward(typed()).pooled);
  assert.equal(memory.length, s2.samples.length, 'a shared buffer stays usable here');
  assert.deepEqual((await remote.forward(windows[2])).pooled, local.forward(windows[2]).pooled, 'the worker still works');
});

test('a worker whose WebAssembly module aborted is replaced: the calls after it all succeed, as on the main thread', async (t) => {
  // worker.js's test seam: a forward of a window with this referenceTime leaves the worker's
  // module as an abort does (every later call into it throws a WebAssembly.RuntimeError).
  const { testSeam } = await import('../../web/src/worker-client.js');
  const abortAt = 1234.5;
  const poison = { ...windows[0], referenceTime: abortAt };
  // Set for the whole test: the replacements get it too, and abort in the second round.
  testSeam.workerData = { abortAt };
  t.after(() => { testSeam.workerData = undefined; });
  const models = [await loadModelInWorker(path, { workers: 2, warmup: false }), await loadModelInWorker(path, { workers: 1, warmup: false })];
  for (const m of models) {
    for (let round = 0; round < 2; round++) {
      await assert.rejects(within(20_000, m.forward(poison), 'the aborting forward'),
        (e) => e instanceof SensorformerError && e.code === 'WORKER_FAILED' && e.message === "the sensorformer worker's WebAssembly module aborted (test fault); the worker is replaced");
      // 20 calls at once right after: with 2 workers, before the fix half went to the aborted one.
      const calls = Array.from({ length: 20 }, (_, i) => m.forward(windows[i % windows.length]));
      const settled = await within(60_000, Promise.allSettled(calls), `${m.workers} worker(s): the calls after the abort`);
      settled.forEach((r, i) => {
        assert.equal(r.status, 'fulfilled', `${m.workers} worker(s), round ${round}, call ${i}: ${r.reason?.code}: ${r.reason?.message}`);
        assert.deepEqual(r.value.pooled, local.forward(windows[i % windows.length]).pooled, `call ${i}`);
      });
      const batch = await within(60_000, m.forwardBatch(windows), 'a batch after the abort');
      batch.forEach((r, i) => assert.deepEqual(r.pooled, local.forward(windows[i]).pooled, `batch window ${i}`));
      assert.equal(m.workers, models.indexOf(m) === 0 ? 2 : 1);
    }
    await within(20_000, m.dispose(), 'dispose');
  }
});

test('bad options and bad windows get the same codes and messages as the main-thread Model', async () => {
  const s0 = windows[2].streams[0];
  const calls = [
    [windows[0], { atention: true }], [windows[0], true], [windows[0], 'attention'], [windows[0], { attention: 'yes' }],
    [{ streams: [{ ...s0, samples: new BigInt64Array(16) }] }, undefined],
    [{ streams: [{ ...s0, samples: Float64Array.from(s0.samples, (v, i) => (i === 3 ? 1e39 : v ?? NaN)) }] }, undefined],
    [{ streams: [{ ...s0, present: new Uint8Array(16).fill(2) }] }, null],
    [{ streams: [{ ...s0, sensor: 2 ** 31 }] }, null],
    // Sparse: cheap to clone; a Float64Array copy of it needed 32 GiB (a RangeError: WORKER_FAILED).
    [{ streams: [{ sensor: 2, modality: 'hr', placement: 'chest', timestamps: new Array(2 ** 32 - 1), samples: [] }] }, null],
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

// --- pools: loadModelInWorker(source, { workers }) -------------------------------------------

// Many windows of different sizes (the four fixture windows, samples scaled by a seeded factor):
// the compute time per window varies, as in a real batch.
const rand = prng(10);
const many = Array.from({ length: 48 }, (_, i) => {
  const base = windows[i % windows.length], scale = 0.5 + rand();
  return { ...base, streams: base.streams.map((st) => ({ ...st, samples: Array.from(st.samples, (v) => (v === null ? null : v * scale)) })) };
});
const expectSame = (got, want, what) => {
  for (const key of ['embeddings', 'dims', 'pooled', 'head', 'referenceTime', 'tokens', 'attention']) assert.deepStrictEqual(got[key], want[key], `${what}: ${key}`);
};

// A promise that must settle within `ms`: a hang fails the test instead of blocking the suite.
async function within(ms, promise, what) {
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not settled after ${ms} ms`)), ms); });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const pool = await loadModelInWorker(path, { workers: 3 });

test('a pool of 3 workers computes exactly what one in-process Model computes, in input order', async () => {
  assert.equal(pool.workers, 3);
  assert.deepEqual(pool.config, local.config);
  const want = many.map((w) => local.forward(w, { attention: true }));
  const batch = await within(60_000, pool.forwardBatch(many, { attention: true }), 'forwardBatch');
  assert.equal(batch.length, many.length);
  batch.forEach((r, i) => expectSame(r, want[i], `forwardBatch windows[${i}]`));
  // forward() calls spread over the pool, all in flight at once, each answered with its own window.
  const single = await within(60_000, Promise.all(many.map((w) => pool.forward(w, { attention: true }))), 'forward');
  single.forEach((r, i) => expectSame(r, want[i], `forward #${i}`));
  // Two batches and single calls interleaved on the same pool keep their own results.
  const [a, b, c] = await within(60_000, Promise.all([pool.forwardBatch(many.slice(0, 20)), pool.forward(many[30]), pool.forwardBatch(many.slice(20))]), 'mixed');
  a.forEach((r, i) => expectSame(r, local.forward(many[i]), `batch a [${i}]`));
  expectSame(b, local.forward(many[30]), 'forward between batches');
  c.forEach((r, i) => expectSame(r, local.forward(many[20 + i]), `batch c [${i}]`));
  assert.deepEqual(await pool.forwardBatch([]), []);
});

test('a pool batch rejects with the error of its first bad window, with Model\'s code and message', async () => {
  const s0 = windows[2].streams[0];
  const bad = {
    nonFinite: { streams: [{ ...s0, samples: Float64Array.from(s0.samples, (v, i) => (i === 3 ? 1e39 : v ?? NaN)) }] },
    modality: { streams: [{ ...s0, modality: 'eeg' }] },
    sensor: { streams: [{ ...s0, sensor: 2 ** 31 }] },
  };
  // Positions in the first chunk, in a middle one, the last window; a second bad window after the
  // first (it must not win even when its chunk finishes first); two in the same chunk.
  const cases = [[[0, 'modality']], [[17, 'nonFinite']], [[47, 'sensor']], [[40, 'nonFinite'], [5, 'sensor']], [[30, 'modality'], [31, 'nonFinite']]];
  for (const placed of cases) {
    const batch = many.slice();
    for (const [i, kind] of placed) batch[i] = bad[kind];
    let want;
    try { local.forwardBatch(batch); } catch (e) { want = e; }
    assert.ok(want instanceof SensorformerError);
    await within(60_000, assert.rejects(pool.forwardBatch(batch), (e) => {
      assert.ok(e instanceof SensorformerError, String(e));
      assert.equal(e.code, want.code);
      assert.equal(e.message, want.message);
      return true;
    }), `bad windows at ${placed.map(([i]) => i)}`);
  }
  // The pool keeps working after failed batches.
  (await pool.forwardBatch(many.slice(0, 8))).forEach((r, i) => expectSame(r, local.forward(many[i]), `after errors [${i}]`));
});

test('a pool batch names a window structured clone cannot copy; with transfer: true the buffers move', async () => {
  const batch = many.slice(0, 24);
  batch[13] = { ...many[13], onDone: () => {} };
  await assert.rejects(pool.forwardBatch(batch), (e) => e.code === 'INVALID_ARGUMENT' && /^windows\[13\] cannot be sent to the worker: .*could not be cloned/.test(e.message));
  // Windows sharing one buffer across chunks (a typical ring-buffer view): each chunk gets them whole.
  const shared = Float32Array.from(windows[0].streams[0].samples, (v) => v ?? NaN);
  const make = () => ({ ...windows[0], streams: [{ ...windows[0].streams[0], samples: shared }] });
  const moved = Array.from({ length: 30 }, make);
  const results = await within(60_000, pool.forwardBatch(moved, { transfer: true }), 'transfer');
  assert.equal(shared.buffer.byteLength, 0, 'transferred input is detached');
  const want = local.forward({ ...windows[0], streams: [{ ...windows[0].streams[0], samples: Float32Array.from(windows[0].streams[0].samples, (v) => v ?? NaN) }] });
  results.forEach((r, i) => expectSame(r, want, `moved[${i}]`));
});

test('dispose during a pool batch: the batch rejects with DISPOSED, earlier forward() calls complete, nothing hangs', async () => {
  const m = await loadModelInWorker(path, { workers: 2 });
  const big = Array.from({ length: 200 }, (_, i) => many[i % many.length]);
  const before = m.forward(many[0]);
  const batch = m.forwardBatch(big);  // chunks of at most 8 windows, two per worker: most windows are not sent yet
  const disposing = m.dispose();
  const after = [m.forward(many[0]), m.forwardBatch(many)];
  const settled = await within(60_000, Promise.allSettled([before, batch, ...after, disposing]), 'dispose');
  assert.equal(settled[0].status, 'fulfilled', String(settled[0].reason));
  expectSame(settled[0].value, local.forward(many[0]), 'forward before dispose');
  assert.equal(settled[1].reason?.code, 'DISPOSED', `the batch: ${settled[1].status} ${settled[1].reason}`);
  for (const r of settled.slice(2, 4)) assert.equal(r.reason?.code, 'DISPOSED');
  assert.equal(settled[4].status, 'fulfilled');
  await assert.rejects(m.forwardBatch(many), (e) => e.code === 'DISPOSED');
});

test('workers: an integer from 1 to 64 or "auto"; anything else is INVALID_ARGUMENT before any worker starts', async () => {
  for (const workers of [0, -1, 1.5, 65, 1e6, NaN, Infinity, '2', 'AUTO', true, {}, [2], 2n]) {
    await assert.rejects(loadModelInWorker(path, { workers }), (e) => {
      assert.ok(e instanceof SensorformerError);
      assert.equal(e.code, 'INVALID_ARGUMENT');
      assert.match(e.message, /^loadModelInWorker\(source, options\): workers must be an integer from 1 to 64 or 'auto', got /);
      return true;
    }, String(workers));
  }
  const { availableParallelism } = await import('node:os');
  for (const [workers, count] of [[undefined, 1], [null, 1], [1, 1], [2, 2], ['auto', Math.min(availableParallelism(), 8)]]) {
    const m = await loadModelInWorker(path, { workers });
    assert.equal(m.workers, count, String(workers));
    expectSame(await m.forward(many[1]), local.forward(many[1]), `workers ${workers}`);
    await m.dispose();
  }
});

test('a pool reads or fetches the model once and gives each worker a copy (the caller\'s bytes stay usable)', async () => {
  const { createServer } = await import('node:http');
  const bytes = readFileSync(path);
  let requests = 0;
  const server = createServer((req, res) => { requests++; res.end(bytes); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const m = await loadModelInWorker(`http://127.0.0.1:${server.address().port}/model.safetensors`, { workers: 3 });
    assert.equal(requests, 1);
    (await m.forwardBatch(many.slice(0, 9))).forEach((r, i) => expectSame(r, local.forward(many[i]), `fetched [${i}]`));
    await m.dispose();
  } finally {
    server.close();
  }
  // A Node Buffer (whose slice() shares memory), a Uint8Array and an ArrayBuffer stay usable.
  for (const mine of [readFileSync(path), new Uint8Array(bytes), new Uint8Array(bytes).buffer]) {
    const m = await loadModelInWorker(mine, { workers: 2 });
    assert.equal(mine.byteLength, bytes.length, 'the caller\'s buffer is not detached');
    expectSame(await m.forward(many[0]), local.forward(many[0]), 'from bytes');
    await m.dispose();
  }
  await assert.rejects(loadModelInWorker('/nonexistent.safetensors', { workers: 2 }), (e) => e.code === 'IO');
  await assert.rejects(loadModelInWorker(readFileSync(fixturePath('attention.safetensors')), { workers: 2 }), (e) => e.code === 'BAD_FORMAT');
});

test('Node exits with an idle model never disposed, and stays until an awaited call is answered', async () => {
  const { execFile } = await import('node:child_process');
  const index = new URL('../../web/src/index.js', import.meta.url).href;
  // The last statement awaits a forward at the top level: the process must live until the answer
  // (exit 13 "unsettled top-level await" otherwise), then end although the model is not disposed.
  const script = `import { loadModelInWorker } from ${JSON.stringify(index)};
    const m = await loadModelInWorker(${JSON.stringify(path)}, { workers: Number(process.argv[2]) });
    console.log((await m.forward(${JSON.stringify(windows[0])})).dims.join('x'));`;
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const file = `${mkdtempSync(`${tmpdir()}/sf-worker-`)}/idle.mjs`;
  writeFileSync(file, script);
  for (const workers of [1, 2]) {
    const r = await new Promise((resolve) => execFile(process.execPath, ['--no-concurrent-recompilation', file, String(workers)],
      { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => resolve({ status: error ? error.code : 0, signal: error?.signal ?? null, stdout, stderr })));
    assert.equal(r.signal, null, `${workers} workers: the process did not end (killed after 30 s)`);
    assert.equal(r.status, 0, `${workers} workers: ${r.stderr}`);
    assert.equal(r.stdout, `${local.forward(windows[0]).dims.join('x')}\n`);
  }
});

// Stand-ins for worker threads ({ post, listen, terminate }, what the constructor takes): the
// test decides when each answers, so the scheduling is checked without timing. A window here is
// { id }, and a stand-in's result for it is { id }.
function standIns(n) {
  return Array.from({ length: n }, () => {
    const w = { inbox: [], terminated: false };
    w.post = (msg) => w.inbox.push(msg);
    w.listen = (onMessage, onFailure) => { w.onMessage = onMessage; w.onFailure = onFailure; };
    w.terminate = async () => { w.terminated = true; };
    // Answers the oldest request (or the one at `index`); `fail(offset + j)` makes window j fail.
    w.answer = (index = 0, fail) => {
      const [{ id, op, args }] = w.inbox.splice(index, 1);
      if (op === 'dispose') return w.onMessage({ id, ok: true, result: null });
      const list = op === 'forward' ? [args.window] : args.windows;
      const bad = list.findIndex((x, j) => fail?.((args.offset ?? 0) + j));
      if (bad >= 0) return w.onMessage({ id, ok: false, error: { code: 'NON_FINITE', message: `windows[${args.offset + bad}]: bad`, index: args.offset + bad } });
      const results = list.map((x) => ({ id: x.id }));
      w.onMessage({ id, ok: true, result: op === 'forward' ? results[0] : results });
    };
    return w;
  });
}
const flush = () => new Promise((resolve) => setImmediate(resolve));  // lets the pool's promise callbacks run
const ids = (n) => Array.from({ length: n }, (_, id) => ({ id }));
const sentIds = (w) => w.inbox.flatMap((m) => (m.op === 'forwardBatch' ? m.args.windows : [m.args.window]).map((x) => x.id));

test('pool scheduling: a worker holding a slow chunk gets no more; the others take the rest; forward() goes to the least busy', async () => {
  const { WorkerModel } = await import('../../web/src/worker-client.js');
  const ws = standIns(3);
  const m = new WorkerModel(ws);
  const batch = m.forwardBatch(ids(40));
  let done = false;
  batch.then(() => { done = true; });
  // Two chunks in flight per worker, taken from the front of the batch in order.
  assert.deepEqual(ws.map((w) => w.inbox.length), [2, 2, 2]);
  const slow = sentIds(ws[0]);
  // Workers 1 and 2 answer whatever they get until the batch has nothing left to hand out.
  for (let guard = 0; guard < 1000 && (ws[1].inbox.length || ws[2].inbox.length); guard++) {
    for (const w of [ws[1], ws[2]]) if (w.inbox.length) w.answer();
    await flush();
  }
  assert.deepEqual(sentIds(ws[0]), slow, 'the busy worker got nothing more');
  assert.equal(done, false, 'the batch waits for the slow chunk');
  // forward() now goes to the least busy worker: 1 or 2 (nothing in flight), not 0.
  const single = m.forward({ id: 'x' });
  assert.equal(ws[0].inbox.length, 2);
  assert.equal(ws[1].inbox.length + ws[2].inbox.length, 1);
  for (const w of ws) while (w.inbox.length) w.answer();
  const results = await within(10_000, batch, 'batch');
  assert.deepEqual(results, ids(40), 'every window once, in input order');
  assert.deepEqual(await single, { id: 'x' });

  // dispose() rejects a batch with windows not handed out at once, without waiting for the
  // chunks in flight; a forward() already sent completes; then the workers are terminated.
  const big = m.forwardBatch(ids(100));
  const sent = m.forward({ id: 'y' });
  let state = 'pending';
  big.then(() => { state = 'resolved'; }, (e) => { state = e.code; });
  const disposing = m.dispose();
  await flush();
  assert.equal(state, 'DISPOSED', 'rejected while every chunk is still unanswered');
  assert.ok(ws.every((w) => !w.terminated));
  for (const w of ws) while (w.inbox.length) w.answer();
  await within(10_000, disposing, 'dispose');
  assert.deepEqual(await sent, { id: 'y' });
  assert.ok(ws.every((w) => w.terminated));
});

test('pool errors: the lowest failing index wins, chunks after it are not started, a dead worker rejects its calls with WORKER_FAILED', async () => {
  const { WorkerModel } = await import('../../web/src/worker-client.js');
  let ws = standIns(2);
  let m = new WorkerModel(ws);
  let batch = m.forwardBatch(ids(40));
  const firstIds = ws[0].inbox[0].args.windows.map((x) => x.id);
  assert.equal(firstIds[0], 0);
  // Worker 1's first chunk (after worker 0's) fails first; the batch waits for worker 0's first
  // chunk, which fails at a lower index: that error is the batch's.
  let settled = false;
  batch.catch(() => {}).finally(() => { settled = true; });
  ws[1].answer(0, () => true);
  await flush();
  assert.equal(settled, false, 'a chunk before the error is still out');
  assert.equal(ws[1].inbox.length, 1, 'nothing handed out after the error');
  const lowest = firstIds[firstIds.length - 1];
  ws[0].answer(0, (i) => i === lowest);
  await assert.rejects(within(10_000, batch, 'batch'), (e) => e.code === 'NON_FINITE' && e.message === `windows[${lowest}]: bad`);
  assert.equal(ws[0].inbox.length, 1, 'nothing handed out after the error');

  // A worker that dies: its chunks reject the batch with WORKER_FAILED; the pool goes on with
  // the living worker; with none left every call is WORKER_FAILED, and dispose still settles.
  ws = standIns(2);
  m = new WorkerModel(ws);
  batch = m.forwardBatch(ids(20));
  ws[1].onFailure(new Error('the worker exited (code 1)'));
  for (const w of [ws[0]]) while (w.inbox.length) w.answer();
  await assert.rejects(within(10_000, batch, 'batch'), (e) => e.code === 'WORKER_FAILED' && /exited \(code 1\)/.test(e.message));
  const alive = m.forward({ id: 'y' });
  assert.equal(ws[0].inbox.length, 1, 'the living worker takes the call');
  ws[0].answer();
  assert.deepEqual(await alive, { id: 'y' });
  const more = m.forwardBatch(ids(6));
  await flush();
  while (ws[0].inbox.length) { ws[0].answer(); await flush(); }
  assert.deepEqual(await within(10_000, more, 'batch on one living worker'), ids(6));
  const pending = m.forwardBatch(ids(10));
  ws[0].onFailure(new Error('the worker exited (code 1)'));
  await assert.rejects(within(10_000, pending, 'batch'), (e) => e.code === 'WORKER_FAILED');
  await assert.rejects(m.forward({ id: 'z' }), (e) => e.code === 'WORKER_FAILED');
  await assert.rejects(m.forwardBatch(ids(3)), (e) => e.code === 'WORKER_FAILED');
  await within(10_000, m.dispose(), 'dispose');
  assert.ok(ws.every((w) => w.terminated), 'every worker is terminated');
});

// The fixture with "labels" added to its config (header rewritten, tensor bytes unchanged).
function withLabels(labels) {
  const file = readFileSync(path);
  const n = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + n).toString('utf8'));
  header.__metadata__.config = JSON.stringify({ ...JSON.parse(header.__metadata__.config), labels });
  const text = Buffer.from(JSON.stringify(header), 'utf8');
  const out = Buffer.alloc(8 + text.length + file.length - 8 - n);
  out.writeBigUInt64LE(BigInt(text.length), 0);
  text.copy(out, 8);
  file.copy(out, 8 + text.length, 8 + n);
  return new Uint8Array(out);
}

test('the worker model gives the same probabilities, label and info as the in-thread model', async () => {
  const bytes = withLabels(['rest', 'walk', 'run']);
  const here = await loadModel(bytes, { warmup: false });
  for (const workers of [1, 2]) {
    const there = await loadModelInWorker(bytes, { warmup: false, workers });
    assert.deepEqual(there.info, here.info);
    assert.ok(Object.isFrozen(there.info) && Object.isFrozen(there.info.outputs.labels));
    assert.deepEqual(there.config.labels, ['rest', 'walk', 'run']);
    for (const w of windows) {
      const [a, b] = [here.forward(w), await there.forward(w)];
      assert.deepEqual(b.probabilities, a.probabilities);
      assert.equal(b.label, a.label);
      assert.equal(typeof b.label, 'string');
    }
    const batch = await there.forwardBatch([...windows, { streams: [] }]);
    batch.slice(0, windows.length).forEach((r, i) => assert.equal(r.label, here.forward(windows[i]).label));
    assert.equal(batch.at(-1).probabilities, null, 'no present token: null, across the thread boundary too');
    assert.equal(batch.at(-1).label, null);
    await there.dispose();
  }
  here.dispose();
  // Without labels: neither field, as in the thread.
  const r = await remote.forward(windows[0]);
  assert.equal('probabilities' in r || 'label' in r, false);
  assert.deepEqual(remote.info, local.info);
  assert.equal(remote.info.outputs.labels, null);
});

test('a bad labels list fails the worker load with the main thread\'s code and message', async () => {
  for (const labels of [['rest', 'walk'], ['a', 'a', 'b'], ['a', '', 'b'], 'rest']) {
    const bytes = withLabels(labels);
    const want = await loadModel(bytes).then(() => assert.fail('loaded'), (e) => e);
    assert.equal(want.code, 'BAD_FORMAT');
    assert.match(want.message, /"labels" must be an array of 3 distinct names/);
    await assert.rejects(loadModelInWorker(bytes), (e) => e instanceof SensorformerError && e.code === want.code && e.message === want.message);
  }
});

// --- stream sessions in a worker ---------------------------------------------------------------

const streamPath = fixturePath('model/factorized_lookback.safetensors');
const streamLocal = await loadModel(streamPath, { warmup: false });

// The main thread's session and the worker's take the same chunks; every answer must be equal,
// bit for bit (the same .wasm computes the same floats in either thread).
async function sameAsMainThread(workerSession, plan, options, label) {
  const here = streamLocal.stream(options);
  for (const [k, chunk] of plan.chunks.entries()) {
    const want = here.push(chunk);
    assert.deepEqual(await workerSession.push(chunk), want, `${label}: push ${k}`);
    for (const getter of ['frontier', 'referenceTime', 'memoryBytes', 'finalTokens'])
      assert.equal(workerSession[getter], here[getter], `${label}: ${getter} after push ${k}`);
    if (k % 10 === 9) for (const seconds of [1, 5]) assert.deepEqual(await workerSession.pooled({ seconds }), here.pooled({ seconds }), `${label}: pooled after push ${k}`);
  }
  assert.deepEqual(await workerSession.pooled(), here.pooled());
  here.dispose();
  return plan.chunks.length;
}

test('a stream session in the worker answers exactly as the main thread\'s (updates, attention rows, pooled, getters)', async () => {
  const m = await loadModelInWorker(streamPath, { warmup: false });
  const plan = delivery(recording(41, 10), 42);
  const s = await m.stream({ attention: true, historySeconds: 5 });
  assert.equal(s.frontier, -Infinity);
  assert.equal(s.referenceTime, null);
  await sameAsMainThread(s, plan, { attention: true, historySeconds: 5 }, 'attention');
  await s.dispose();
  await m.dispose();
});

test('a pool pins each session to one worker: two sessions pushed concurrently stay apart', async () => {
  const m = await loadModelInWorker(streamPath, { warmup: false, workers: 2 });
  // Made together, the two sessions go to the two workers, where each is the worker's first
  // session: a call routed to the wrong worker would reach the other session and differ.
  const [a, b] = await Promise.all([m.stream(), m.stream()]);
  const plans = [delivery(recording(51, 8), 52), delivery(recording(53, 8), 54)];
  const heres = [streamLocal.stream(), streamLocal.stream()];
  for (let k = 0; k < Math.max(plans[0].chunks.length, plans[1].chunks.length); k++) {
    // Not awaited one by one: both sessions' pushes and a forward are in flight at once.
    const calls = [a, b].map((s, i) => (k < plans[i].chunks.length ? s.push(plans[i].chunks[k]) : null));
    const fwd = m.forward(windows[k % windows.length]);
    const got = await Promise.all(calls);
    got.forEach((u, i) => { if (u) assert.deepEqual(u, heres[i].push(plans[i].chunks[k]), `session ${i}, push ${k}`); });
    assert.deepEqual((await fwd).pooled, streamLocal.forward(windows[k % windows.length]).pooled, `forward between pushes ${k}`);
  }
  for (const h of heres) h.dispose();
  await Promise.all([a.dispose(), b.dispose()]);
  await m.dispose();
});

test('worker session: with transfer: true the chunk\'s arrays move; errors have the main thread\'s codes and messages, and change nothing', async () => {
  const m = await loadModelInWorker(streamPath, { warmup: false });
  const s = await m.stream();
  const here = streamLocal.stream();
  const first = { streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 10, samples: new Float32Array(40).fill(3) }, { sensor: 2, modality: 'rr', placement: 'chest', timestamps: [10.2, 11], samples: [0.8, 0.8] }] };
  assert.deepEqual(await s.push(first), here.push(first));
  const moving = { streams: [{ samples: new Float32Array(40).fill(2) }, null] };
  const copy = { streams: [{ samples: new Float32Array(40).fill(2) }, null] };
  const moved = await s.push(moving, { transfer: true });
  assert.equal(moving.streams[0].samples.buffer.byteLength, 0, 'transferred chunk is detached');
  assert.deepEqual(moved, here.push(copy));
  const bad = [
    { streams: [{ samples: [1, Infinity] }] },
    { streams: [{ startTime: 9, samples: [1] }] },
    { streams: [null, { timestamps: [10.5], samples: [1] }] },
    { streams: [null, { timestamps: [12], samples: [1, 2] }] },
    { streams: [{ modality: 'ecg', samples: [1] }] },
    { streams: [], referenceTime: 1 },
    null,
  ];
  for (const chunk of bad) {
    let want;
    try { here.push(chunk); } catch (e) { want = e; }
    assert.ok(want instanceof SensorformerError, 'the main thread refuses it');
    await assert.rejects(s.push(chunk), (e) => e instanceof SensorformerError && e.code === want.code && e.message === want.message);
  }
  for (const options of [{ seconds: 0 }, { seconds: 100 }, { secs: 1 }]) {
    let want;
    try { here.pooled(options); } catch (e) { want = e; }
    await assert.rejects(s.pooled(options), (e) => e.code === want.code && e.message === want.message);
  }
  await assert.rejects(s.push(first, { transfer: 'yes' }), (e) => e.code === 'INVALID_ARGUMENT' && /^push\(chunk, options\): transfer must be true or false/.test(e.message));
  await assert.rejects(s.push({ streams: [{ samples: [1], onData: () => {} }] }), (e) => e.code === 'INVALID_ARGUMENT' && /^the chunk cannot be sent to the worker/.test(e.message));
  const next = { streams: [{ samples: new Float32Array(64).fill(1) }, { timestamps: [11.5, 12, 12.5, 13, 13.5], samples: [0.7, 0.8, 0.9, 0.8, 0.7] }] };
  assert.deepEqual(await s.push(next), here.push(next), 'after the errors the worker session is where the main thread\'s is');
  // stream(): the same option errors, and a model that is not causal gets the core's message.
  for (const options of [{ historySeconds: -1 }, { referenceTime: NaN }, { atention: true }, 'x']) {
    let want;
    try { streamLocal.stream(options); } catch (e) { want = e; }
    await assert.rejects(m.stream(options), (e) => e.code === want.code && e.message === want.message);
  }
  await assert.rejects(remote.stream(), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /^this model is not causal/.test(e.message));
  here.dispose();
  await s.dispose();
  await m.dispose();
});

test('worker session dispose: calls made before complete, calls after reject DISPOSED; the model\'s dispose ends its sessions', async () => {
  const m = await loadModelInWorker(streamPath, { warmup: false });
  const plan = delivery(recording(61, 4), 62);
  const s = await m.stream();
  const here = streamLocal.stream();
  const before = plan.chunks.slice(0, 5).map((c) => s.push(c));  // not awaited
  const disposing = s.dispose();
  const after = [s.push(plan.chunks[5]), s.pooled()];
  const settled = await within(20_000, Promise.allSettled([...before, ...after, disposing]), 'session calls');
  settled.slice(0, 5).forEach((r, k) => assert.deepEqual(r.value, here.push(plan.chunks[k]), `push ${k} made before dispose`));
  for (const r of settled.slice(5, 7)) assert.equal(r.reason?.code, 'DISPOSED');
  assert.equal(settled[5].reason.message, 'this stream session was disposed');
  assert.equal(settled[7].status, 'fulfilled');
  assert.equal(await s.dispose(), undefined, 'dispose is idempotent');
  // The getters too, as on the main thread.
  for (const getter of ['frontier', 'referenceTime', 'memoryBytes', 'finalTokens'])
    assert.throws(() => s[getter], (e) => e.code === 'DISPOSED' && e.message === 'this stream session was disposed', getter);
  const t = await m.stream();
  await t.push(plan.chunks[0]);
  await m.dispose();
  await assert.rejects(t.push(plan.chunks[1]), (e) => e.code === 'DISPOSED' && e.message === 'this stream session ended when its model was disposed');
  assert.throws(() => t.frontier, (e) => e.code === 'DISPOSED' && e.message === 'this stream session ended when its model was disposed');
  await t.dispose();  // never rejects
  await assert.rejects(m.stream(), (e) => e.code === 'DISPOSED');
  here.dispose();
});

test('a worker that dies rejects its sessions\' calls with WORKER_FAILED', async () => {
  const { WorkerModel } = await import('../../web/src/worker-client.js');
  const [w] = standIns(1);
  const m = new WorkerModel([w]);
  const starting = m.stream();
  assert.equal(w.inbox[0].op, 'streamStart');
  const state = { frontier: -Infinity, referenceTime: null, memoryBytes: 0, finalTokens: 0 };
  w.onMessage({ id: w.inbox.shift().id, ok: true, result: { session: 0, state } });
  const s = await starting;
  const pending = s.push({ streams: [] });
  assert.deepEqual(w.inbox[0].args, { session: 0, chunk: { streams: [] } });
  w.onFailure(new Error('the worker exited (code 1)'));
  await assert.rejects(pending, (e) => e.code === 'WORKER_FAILED' && /exited \(code 1\)/.test(e.message));
  await assert.rejects(s.pooled(), (e) => e.code === 'WORKER_FAILED');
  await within(10_000, s.dispose(), 'session dispose');
  await within(10_000, m.dispose(), 'dispose');
});

test('a worker session dropped without dispose() is disposed in its worker by the FinalizationRegistry backstop; a disposed one is not disposed twice', async () => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const { WorkerModel } = await import('../../web/src/worker-client.js');
  const [w] = standIns(1);
  const m = new WorkerModel([w]);
  const state = { frontier: -Infinity, referenceTime: null, memoryBytes: 0, finalTokens: 0 };
  const open = async (session) => {
    const starting = m.stream();
    const { id, op } = w.inbox.shift();
    assert.equal(op, 'streamStart');
    w.onMessage({ id, ok: true, result: { session, state } });
    return starting;
  };
  const answerDisposes = () => {
    for (const msg of w.inbox.splice(0)) if (msg.op === 'streamDispose') w.onMessage({ id: msg.id, ok: true, result: null });
  };
  const kept = await open(0);
  const disposes = [];
  await (async () => {
    await open(1);  // lost at once
    const explicit = await open(2);
    const disposing = explicit.dispose();
    disposes.push(...w.inbox.filter((msg) => msg.op === 'streamDispose').map((msg) => msg.args.session));
    answerDisposes();
    await disposing;
  })();
  // Finalizers run at V8's discretion after a collection: collect and yield until the message is sent.
  const deadline = performance.now() + 30_000;
  while (!w.inbox.some((msg) => msg.op === 'streamDispose') && performance.now() < deadline) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  for (let k = 0; k < 5; k++) {  // and a few more collections: nothing else may be sent
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  disposes.push(...w.inbox.filter((msg) => msg.op === 'streamDispose').map((msg) => msg.args.session));
  answerDisposes();
  assert.deepEqual(disposes, [2, 1], 'session 2 disposed once by dispose(), the lost session 1 by the backstop, the kept session 0 not at all');
  assert.equal(kept.frontier, -Infinity, 'the kept session is untouched');
  const disposing = m.dispose();
  w.answer();
  await within(10_000, disposing, 'dispose');
});

test.after(async () => {
  streamLocal.dispose();
  await remote.dispose();
  await pool.dispose();
  local.dispose();
});
