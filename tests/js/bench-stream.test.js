// bench/stream.mjs's helpers: the context count that labels each row, the row matching that
// checks a session's update against a recompute before anything is timed, and the feed whose
// chunks and windows must describe the same samples at the same times. Hand-computed cases; no
// timing, no WebAssembly.
//
//   node --test tests/js/bench-stream.test.js
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { compareRows, contextSize, makeFeed } from '../../bench/stream.mjs';

test('contextSize counts keys in [t - W, t], both ends included, later keys excluded', () => {
  // t - u = 2 = W for u = 1: on the boundary, so it counts (docs/model.md "Look-back")
  assert.equal(contextSize([0, 1, 2, 3, 4], 3, 2), 3);
  assert.equal(contextSize([0, 1, 2, 3, 4], 3, 1.999), 2);
  // the bench's rows: 4 streams, a patch every 0.04 s, W = 10.235 s, query at 20 s:
  // keys from ceil(9.765 / 0.04) = 245 to 500 = 256 per stream
  const times = [];
  for (let s = 0; s < 4; s++) for (let k = 0; k <= 500; k++) times.push((k * 8) / 200);
  assert.equal(contextSize(times, 20, 10.235), 1024);
});

function update(stream, time, rows, d) {
  return { dims: [stream.length, d], tokens: { stream: Int32Array.from(stream), time: Float64Array.from(time) }, embeddings: Float32Array.from(rows.flat()) };
}

test('compareRows matches rows by stream and time (within 1 us) in any order and reports the largest relative difference', () => {
  const u = update([0, 1], [2.5, 2.5], [[1, 2], [3, 4]], 2);
  // the recompute lists stream 1 first, another stream-0 token, and writes 2.5 with rounding
  const r = update([1, 0, 0], [2.5 + 1e-12, 2.0, 2.5 - 1e-12], [[3, 4], [9, 9], [1, 2]], 2);
  assert.equal(compareRows(u, r), 0);
  // one value off by 0.5, relative to the recompute's (the reference's) largest magnitude 4.5
  const off = update([1, 0, 0], [2.5, 2.0, 2.5], [[3, 4.5], [9, 9], [1, 2]], 2);
  assert.equal(compareRows(u, off), 0.5 / 4.5);
  // a wrong row must not be taken for the right one: stream 0's token at 2.0 is not at 2.5
  assert.throws(() => compareRows(u, update([1, 0], [2.5, 2.0], [[3, 4], [1, 2]], 2)), /stream 0, time 2.5\) has no row/);
  // 1 ms apart is another token, not rounding
  assert.throws(() => compareRows(u, update([1, 0], [2.5, 2.501], [[3, 4], [1, 2]], 2)), /no row/);
});

test('makeFeed: chunks give the samples in order, the first with descriptors; windows are the last samples at their times', () => {
  // 4 Hz, patch 2, 2 s: 8 samples per stream
  const feed = makeFeed({ rateHz: 4, seconds: 2, seed: 3, patchLen: 2 });
  assert.equal(feed.data.length, 4);
  assert.equal(feed.data[0].length, 8);
  const first = feed.next(2);
  assert.deepEqual({ ...first.streams[1], samples: undefined }, { sensor: 0, modality: 'acc', placement: 'wrist', rateHz: 4, startTime: 1000, timestamps: null, present: null, samples: undefined });
  const second = feed.next(4);
  assert.equal(second.streams[2].modality, undefined, 'later chunks carry no descriptor');
  assert.deepEqual([...first.streams[2].samples, ...second.streams[2].samples], [...feed.data[2].subarray(0, 6)]);
  assert.equal(feed.pushed, 6);
  // the last 4 of 6 samples start at sample 2: 1000 + 2 / 4 Hz
  const w = feed.window(4);
  assert.equal(w.referenceTime, 1000);
  assert.equal(w.streams[3].startTime, 1000.5);
  assert.deepEqual([...w.streams[3].samples], [...feed.data[3].subarray(2, 6)]);
  // more than received: everything from the start
  assert.equal(feed.window(100).streams[0].startTime, 1000);
  assert.equal(feed.window(100).streams[0].samples.length, 6);
  assert.throws(() => feed.next(4), /2 samples left, 4 asked/);
  // seeded: the same feed twice is the same data, another seed is not
  assert.deepEqual(makeFeed({ rateHz: 4, seconds: 2, seed: 3, patchLen: 2 }).data, feed.data);
  assert.notDeepEqual(makeFeed({ rateHz: 4, seconds: 2, seed: 4, patchLen: 2 }).data, feed.data);
});

test('makeFeed: per-stream descriptors go into the first chunk and every window, in stream order', () => {
  const streams = [{ sensor: 1, modality: 'acc_x', placement: 'wrist' }, { sensor: 2, modality: 'ecg', placement: 'chest' }];
  const feed = makeFeed({ rateHz: 10, seconds: 1, seed: 1, patchLen: 5, streams });
  assert.equal(feed.data.length, 2);
  const first = feed.next(5);
  assert.deepEqual(first.streams.map((s) => [s.sensor, s.modality, s.placement, s.rateHz, s.startTime]), [[1, 'acc_x', 'wrist', 10, 1000], [2, 'ecg', 'chest', 10, 1000]]);
  assert.deepEqual(feed.window(5).streams.map((s) => [s.sensor, s.modality, s.placement, s.startTime]), [[1, 'acc_x', 'wrist', 1000], [2, 'ecg', 'chest', 1000]]);
});
