// Streaming sessions (web/src/stream.js over the core's src/stream/session.cpp), checked against
// model.forward on the window made of everything received so far (docs/model.md "Streaming"):
// - every final token's embedding equals its forward row, for every layout, with random chunking
//   across devices with different latencies, gaps (by startTime and by `until`), missing samples,
//   mask tokens, event-driven streams with watermarks and a stream joining late;
// - attention rows equal the rows of forward's maps; pooled() equals the masked mean of forward
//   rows and its head the head's linear map of it (probabilities / label as forward's);
// - every bad input gets its code (and the field's name), and leaves the session exactly as it was;
// - dispose semantics (DISPOSED), model.dispose() ending sessions, memory returned.
//
// Tolerance EMBED_ATOL = 1e-5 (the bound): a session computes a final token's attention
// against cached keys in batches of different sizes than the forward's one pass, so its float32
// sums are tiled and ordered differently; each sum is exact to float32 rounding, and the rows are
// layer-normed (|x| of order 1), so rows agree to a few ulps of 1 (~1e-6), well within 1e-5.
// Token times, stream indices, presence and modality names are compared exactly: the session uses
// the tokenizer's own expressions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';

import { loadModel, SensorformerError, StreamSession } from '../../web/src/index.js';
import { loadWasm } from '../../web/src/loader.js';
import { editHeader, fixturePath, readSafetensors } from './safetensors.js';
import { delivery, recording } from './stream-plan.js';

const EMBED_ATOL = 1e-5;
// Attention weights are softmax outputs in [0, 1] computed from the same (differently tiled)
// scores: they agree to float32 rounding of the exp and the sum, far below 1e-5.
const WEIGHT_ATOL = 1e-5;
// pooled: a float32 mean of rows that each agree within EMBED_ATOL agrees within EMBED_ATOL plus
// the rounding of summing up to a few hundred float32 values of order 1 (< 1e-5 in the mean).
const POOLED_ATOL = 2e-5;
// head: a float32 dot product of d_model = 16 terms against the same in float64.
const HEAD_ATOL = 1e-5;

const LOOKBACK = ['flattened_lookback', 'time_lookback', 'channel_lookback', 'factorized_lookback'];
const MODELS = [...LOOKBACK, 'factorized_causal'];  // factorized_causal: causal without a look-back
const models = new Map(await Promise.all(MODELS.map(async (m) => [m, await loadModel(fixturePath(`model/${m}.safetensors`), { warmup: false })])));

// --- checking a session against forward ---------------------------------------------------------

// Runs the chunks through a session of `model`, and after each push checks the new final tokens
// (and with attention: their rows) against forward on everything received so far.
function checkSession(model, { chunks, windows }, options = {}, { attentionEvery = 1, label = '' } = {}) {
  const session = model.stream(options);
  const d = model.info.dModel;
  const perStream = [];         // session tokens per stream, by patch: { index, time }
  const byIndex = [];           // session index -> { stream, patch }
  let worst = 0, compared = 0, rows = 0, absentRows = 0, lastUpdate = null;
  chunks.forEach((chunk, k) => {
    const before = session.finalTokens;
    const u = session.push(chunk);
    lastUpdate = u;
    const m = u.tokens.time.length;
    assert.deepEqual(u.dims, [m, d]);
    assert.equal(u.embeddings.length, m * d);
    assert.equal(session.finalTokens, before + m);
    assert.equal(session.frontier, u.frontier);
    for (let i = 0; i < m; i++) {
      assert.equal(u.tokens.index[i], before + i, `${label} push ${k}: indices count up`);
      assert.ok(u.tokens.time[i] < u.frontier, `${label} push ${k}: a final token is before the frontier`);
      if (i > 0) {
        const [ta, tb, sa, sb] = [u.tokens.time[i - 1], u.tokens.time[i], u.tokens.stream[i - 1], u.tokens.stream[i]];
        assert.ok(ta < tb || (ta === tb && sa <= sb), `${label} push ${k}: time order, ties by stream`);
      }
    }
    if (m === 0 && !u.attention?.length) return;
    const ref = u.referenceTime;
    const fwd = model.forward({ streams: windows[k], referenceTime: ref }, { attention: !!options.attention && k % attentionEvery === 0, maxGflop: Infinity });
    const fwdPerStream = [];
    for (let j = 0; j < fwd.tokens.stream.length; j++) (fwdPerStream[fwd.tokens.stream[j]] ??= []).push(j);
    for (let i = 0; i < m; i++) {
      const s = u.tokens.stream[i];
      const patch = (perStream[s] ??= []).length;
      perStream[s].push({ index: u.tokens.index[i], time: u.tokens.time[i], present: u.tokens.present[i] });
      byIndex[u.tokens.index[i]] = { stream: s, patch };
      let ref = fwd, j = fwdPerStream[s]?.[patch];
      if (j === undefined) {
        // A stream with no present patch in the window has no row there (docs/model.md); the
        // session's token equals the row of a forward in which the stream has a present patch
        // after the frontier (which, causal, changes no final token).
        assert.equal(u.tokens.present[i], 0, `${label} push ${k}: a present token of stream ${s} has no forward row`);
        assert.equal(fwdPerStream[s], undefined, `${label} push ${k}: stream ${s} has rows but not patch ${patch}`);
        ref = forwardWithPresentPatch(model, windows[k], s, u);
        j = ref.tokens.stream.reduce((found, t, n) => (t === s && found.seen++ === patch ? Object.assign(found, { at: n }) : found), { seen: 0, at: -1 }).at;
        absentRows++;
      }
      assert.equal(u.tokens.time[i], ref.tokens.time[j], `${label} push ${k}: time of stream ${s} patch ${patch}`);
      assert.equal(u.tokens.present[i], ref.tokens.present[j], `${label} push ${k}: presence of stream ${s} patch ${patch}`);
      assert.equal(u.tokens.modality[i], ref.tokens.modality[j]);
      for (let c = 0; c < d; c++) {
        const diff = Math.abs(u.embeddings[i * d + c] - ref.embeddings[j * d + c]);
        worst = Math.max(worst, diff);
        assert.ok(diff <= EMBED_ATOL, `${label} push ${k}: token ${u.tokens.index[i]} (stream ${s}, patch ${patch}, t=${u.tokens.time[i]}) [${c}]: ${u.embeddings[i * d + c]} vs forward ${ref.embeddings[j * d + c]}`);
      }
      compared++;
    }
    if (options.attention) {
      assert.ok(Array.isArray(u.attention));
      if (fwd.attention) rows += checkRows(u, fwd, fwdPerStream, byIndex, model.info.nHeads, `${label} push ${k}`);
    } else {
      assert.equal(u.attention, null);
    }
  });
  return { session, worst, compared, rows, absentRows, perStream, lastUpdate };
}

// forward on the window with stream s given one present patch after everything it has (its
// incomplete patch filled with missing samples, or events after the frontier), so that the stream
// has rows; being later than every final token, the patch changes none of them (causal).
function forwardWithPresentPatch(model, streams, s, u) {
  const st = streams[s];
  const P = model.info.inputs.modalities.find((m) => m.name === st.modality).patchLen;
  let extra;
  if (st.timestamps) {
    const t = Math.max(u.frontier, st.timestamps.at(-1) ?? -Infinity) + 1;
    const pad = (P - (st.timestamps.length % P)) % P;  // events completing the last patch, missing
    extra = { ...st, timestamps: [...st.timestamps, ...new Array(pad + P).fill(t)], samples: [...st.samples, ...new Array(pad).fill(null), ...new Array(P).fill(1)], present: [...st.present, ...new Array(pad + P).fill(1)] };
  } else {
    const pad = (P - (st.samples.length % P)) % P;
    extra = { ...st, samples: [...st.samples, ...new Array(pad).fill(null), ...new Array(P).fill(1)], present: [...st.present, ...new Array(pad + P).fill(1)] };
  }
  return model.forward({ streams: streams.map((x, i) => (i === s ? extra : x)), referenceTime: u.referenceTime }, { maxGflop: Infinity });
}

// Each attention row of the update against the forward map row of the same query, layer and block:
// the same weight for every listed key, and (within rounding) zero for every key not listed.
function checkRows(u, fwd, fwdPerStream, byIndex, H, where) {
  const at = new Map();  // `${layer}:${block}:${forward token}` -> [map, row]
  for (const map of fwd.attention) map.tokens.forEach((t, r) => at.set(`${map.layer}:${map.block}:${t}`, [map, r]));
  const fwdIndex = (sessionIndex) => {
    const { stream, patch } = byIndex[sessionIndex];
    return fwdPerStream[stream]?.[patch];
  };
  let checked = 0;
  for (const row of u.attention) {
    const n = row.keys.length;
    assert.deepEqual(row.dims, [H, n]);
    assert.equal(row.weights.length, H * n);
    assert.equal(row.keyTimes.length, n);
    const q = fwdIndex(row.token);
    if (q === undefined) continue;  // a query of a stream with no row in the forward
    const [map, r] = at.get(`${row.layer}:${row.block}:${q}`);
    const g = map.tokens.length;
    const cols = Array.from(row.keys, (key, j) => {
      const f = fwdIndex(key);
      assert.equal(row.keyTimes[j], fwd.tokens.time[f], `${where}: key time`);
      return map.tokens.indexOf(f);
    });
    for (let h = 0; h < H; h++) {
      const listed = new Set(cols);
      for (let j = 0; j < n; j++) {
        const want = map.weights[(h * g + r) * g + cols[j]];
        assert.ok(Math.abs(row.weights[h * n + j] - want) <= WEIGHT_ATOL, `${where}: query ${row.token} layer ${row.layer} ${row.block} head ${h} key ${row.keys[j]}: ${row.weights[h * n + j]} vs ${want}`);
      }
      for (let c = 0; c < g; c++)
        if (!listed.has(c)) assert.ok(Math.abs(map.weights[(h * g + r) * g + c]) <= WEIGHT_ATOL, `${where}: query ${row.token} attends in the forward to a key the row does not list`);
    }
    checked++;
  }
  return checked;
}

// --- exactness ---------------------------------------------------------------------------------

for (const name of MODELS) {
  test(`${name}: every final token equals forward on everything received (random chunking, gaps, watermarks, 3 seeds)`, () => {
    const model = models.get(name);
    let compared = 0, worst = 0, absent = 0;
    for (const seed of [1, 2, 3]) {
      const rec = recording(100 + seed, 20);
      const plan = delivery(rec, 200 + seed);
      // The plan exercises what the test claims: gaps by startTime and by `until` on regular
      // streams, watermarks and watermark-only entries on event streams, absent entries (null).
      const entries = plan.chunks.slice(1).flatMap((c) => [0, 1, 2, 3].map((i) => [i < 2 ? 'regular' : 'event', c.streams[i]]));
      const count = (kind, f) => entries.filter(([k, e]) => k === kind && e && f(e)).length;
      assert.ok(count('regular', (e) => e.startTime !== undefined) >= 3, `seed ${seed}: gaps by startTime`);
      assert.ok(count('regular', (e) => e.until !== undefined) >= 3, `seed ${seed}: gaps by until`);
      assert.ok(count('event', (e) => e.until !== undefined && e.timestamps?.length > 0) >= 3, `seed ${seed}: events with a watermark`);
      assert.ok(count('event', (e) => e.until !== undefined && e.timestamps === undefined) >= 3, `seed ${seed}: watermark-only entries`);
      assert.ok(entries.filter(([, e]) => e == null).length >= 10, `seed ${seed}: streams with nothing new`);
      const r = checkSession(model, plan, { referenceTime: seed === 3 ? rec.t0 - 3 * 3600 : undefined }, { label: `seed ${seed}` });
      compared += r.compared;
      worst = Math.max(worst, r.worst);
      for (const tokens of r.perStream) absent += tokens.filter((t) => !t.present).length;
      // Every stream made tokens final, the last frontier is near the end of the data.
      assert.equal(r.perStream.filter(Boolean).length, 4, `seed ${seed}: every stream has final tokens`);
      r.session.dispose();
    }
    // The plans did exercise mask tokens (else the test would not test them).
    assert.ok(absent > 5, `only ${absent} absent tokens`);
    assert.ok(compared > 600, `only ${compared} tokens compared`);
    console.log(`${name}: ${compared} final tokens equal forward rows, max |diff| ${worst.toExponential(2)}`);
  });
}

test('a stream that joins a session later (at the end of chunk.streams) is exact too', () => {
  for (const name of ['flattened_lookback', 'factorized_lookback']) {
    const rec = recording(7, 10);
    const plan = delivery(rec, 8, { joinLate: true });
    assert.equal(plan.chunks[0].streams.length, 3, 'the last stream is not in the first chunk');
    const r = checkSession(models.get(name), plan, {}, { label: `${name} join` });
    assert.ok(r.perStream[3]?.length > 0, 'the late stream made final tokens');
    r.session.dispose();
  }
});

test('a stream with no present patch yet: its mask tokens are emitted, and equal a forward in which it has one', () => {
  for (const name of MODELS) {
    const rec = recording(71, 8);
    // The wrist sensor is not worn: every acc_x sample is missing, and so is every heart rate.
    rec.streams[1].samples.fill(NaN);
    rec.streams[3].samples.fill(NaN);
    const r = checkSession(models.get(name), delivery(rec, 72), {}, { label: `${name} unworn` });
    assert.ok(r.absentRows > 40, `${name}: only ${r.absentRows} tokens of all-missing streams compared`);
    assert.ok(r.perStream[1].every((t) => !t.present) && r.perStream[3].every((t) => !t.present));
    r.session.dispose();
  }
});

test('attention rows equal the rows of forward\'s maps (every layout)', () => {
  for (const name of MODELS) {
    const rec = recording(11, 12);
    const r = checkSession(models.get(name), delivery(rec, 12), { attention: true }, { attentionEvery: 2, label: name });
    assert.ok(r.rows > 100, `${name}: only ${r.rows} rows compared`);
    r.session.dispose();
  }
});

test('a property: any chunking of one recording gives the tokens of forward (fast-check, seeded)', () => {
  const model = models.get('factorized_lookback');
  const rec = recording(21, 5);
  const [ecg, , rr] = rec.streams;
  // Cut points (sample counts) for ECG and RR, pushed in alternation; forward is the reference.
  fc.assert(fc.property(
    fc.uniqueArray(fc.integer({ min: 1, max: ecg.samples.length - 1 }), { maxLength: 12 }),
    fc.uniqueArray(fc.integer({ min: 1, max: rr.timestamps.length - 1 }), { maxLength: 4 }),
    (ecgCuts, rrCuts) => {
      const cuts = (list, n) => [0, ...list.sort((a, b) => a - b), n];
      const ec = cuts(ecgCuts, ecg.samples.length), rc = cuts(rrCuts, rr.timestamps.length);
      const chunks = [], windows = [];
      const steps = Math.max(ec.length, rc.length) - 1;
      for (let k = 0; k < steps; k++) {
        const e = Math.min(k, ec.length - 2), q = Math.min(k, rc.length - 2);
        const ecgEntry = k < ec.length - 1 ? { samples: ecg.samples.slice(ec[k], ec[k + 1]) } : null;
        const rrEntry = k < rc.length - 1 ? { timestamps: rr.timestamps.slice(rc[k], rc[k + 1]), samples: rr.samples.slice(rc[k], rc[k + 1]) } : null;
        if (k === 0) {
          Object.assign(ecgEntry, { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: ecg.rateHz, startTime: ecg.startTime });
          Object.assign(rrEntry, { sensor: 2, modality: 'rr', placement: 'chest' });
        }
        chunks.push({ streams: [ecgEntry, rrEntry] });
        windows.push([
          { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: ecg.rateHz, startTime: ecg.startTime, samples: ecg.samples.slice(0, ec[e + 1]) },
          { sensor: 2, modality: 'rr', placement: 'chest', timestamps: rr.timestamps.slice(0, rc[q + 1]), samples: rr.samples.slice(0, rc[q + 1]) },
        ]);
      }
      const r = checkSession(model, { chunks, windows }, {}, { label: `cuts ${ec} / ${rc}` });
      r.session.dispose();
      return r.compared > 0;
    },
  ), { seed: 12, numRuns: 25 });
});

// --- pooled ------------------------------------------------------------------------------------

const LABELS = ['rest', 'walk', 'run'];
const labelled = await loadModel(new Uint8Array(editHeader(readFileSync(fixturePath('model/factorized_lookback.safetensors')), (c) => { c.labels = LABELS; }).bytes), { warmup: false });
const headWeights = readSafetensors(fixturePath('model/factorized_lookback.safetensors')).tensors;

test('pooled({ seconds }) is the masked mean of the forward rows of the final tokens in [frontier - seconds, frontier), and the head on it', () => {
  const model = labelled;
  const d = model.info.dModel;
  const rec = recording(31, 12);
  const { chunks, windows } = delivery(rec, 32);
  const session = model.stream({ historySeconds: 5 });
  const finals = [];  // every final token so far: { stream, patch, time, present }
  const patches = [];
  let checked = 0, withData = 0;
  chunks.forEach((chunk, k) => {
    const u = session.push(chunk);
    for (let i = 0; i < u.tokens.time.length; i++) {
      const s = u.tokens.stream[i];
      patches[s] = (patches[s] ?? -1) + 1;
      finals.push({ stream: s, patch: patches[s], time: u.tokens.time[i], present: u.tokens.present[i] });
    }
    if (k % 4 !== 3 || !Number.isFinite(u.frontier)) return;
    const fwd = model.forward({ streams: windows[k], referenceTime: u.referenceTime }, { maxGflop: Infinity });
    const fwdPerStream = [];
    for (let j = 0; j < fwd.tokens.stream.length; j++) (fwdPerStream[fwd.tokens.stream[j]] ??= []).push(j);
    for (const seconds of [0.5, 2, 5]) {
      const p = session.pooled({ seconds });
      assert.equal(p.to, u.frontier);
      assert.equal(p.from, u.frontier - seconds);
      const inRange = finals.filter((t) => t.present && t.time >= p.from && t.time < p.to);
      assert.equal(p.presentTokens, inRange.length, `push ${k}, ${seconds} s: present tokens`);
      const mean = new Float64Array(d);
      for (const t of inRange) {
        const j = fwdPerStream[t.stream][t.patch];
        for (let c = 0; c < d; c++) mean[c] += fwd.embeddings[j * d + c] / inRange.length;
      }
      for (let c = 0; c < d; c++) assert.ok(Math.abs(p.pooled[c] - mean[c]) <= POOLED_ATOL, `push ${k}, ${seconds} s: pooled[${c}] ${p.pooled[c]} vs ${mean[c]}`);
      // The head: head.weight (n_outputs, d) times the session's pooled vector, plus head.bias.
      const W = headWeights['head.weight'].data, b = headWeights['head.bias'].data;
      const head = Array.from(b, (bi, o) => bi + Array.from(p.pooled, (x, c) => W[o * d + c] * x).reduce((a, v) => a + v, 0));
      head.forEach((h, o) => assert.ok(Math.abs(p.head[o] - h) <= HEAD_ATOL, `push ${k}: head[${o}] ${p.head[o]} vs ${h}`));
      if (p.presentTokens === 0) {
        assert.equal(p.probabilities, null);
        assert.equal(p.label, null);
      } else {
        // probabilities / label exactly as forward states them: a forward whose head is this head
        // is not at hand, so the shared helper is checked by its definition (softmax, arg-max).
        const max = Math.max(...p.head);
        const e = Array.from(p.head, (h) => Math.exp(h - max)), sum = e.reduce((a, v) => a + v, 0);
        e.forEach((v, o) => assert.ok(Math.abs(p.probabilities[o] - v / sum) <= 2 ** -24, 'probabilities'));
        assert.equal(p.label, LABELS[Array.from(p.head).indexOf(max)]);
        withData++;
      }
      checked++;
    }
  });
  assert.ok(checked > 20 && withData > 20, `checked ${checked}, with data ${withData}`);
  // Defaults: seconds = historySeconds; a model without labels gives no probabilities / label.
  assert.deepEqual(session.pooled(), session.pooled({ seconds: 5 }));
  session.dispose();
  const plain = models.get('time_lookback').stream();
  plain.push(chunks[0]);
  const p = plain.pooled();
  assert.equal(p.head, null, 'no head: null, as forward');
  assert.ok(!('probabilities' in p) && !('label' in p), 'no labels: no probabilities or label');
  assert.equal(p.presentTokens, 0, 'nothing final yet');
  assert.deepEqual(Array.from(p.pooled), new Array(16).fill(0), 'no present token: a zero pooled vector');
  plain.dispose();
});

test('chunk entries may be any object (a class instance from a device layer), as a window\'s streams', () => {
  class Entry {
    constructor(samples) { this.samples = samples; }
  }
  const model = models.get('time_lookback');
  const [a, b] = [model.stream(), model.stream()];
  const first = { streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 0, samples: new Float32Array(20).fill(4) }] };
  a.push(first);
  b.push(first);
  const samples = Float32Array.from({ length: 40 }, (_, i) => i);
  assert.deepEqual(a.push({ streams: [new Entry(samples)] }), b.push({ streams: [{ samples }] }));
  a.dispose();
  b.dispose();
});

test('before any data: frontier -Infinity, referenceTime null, no tokens; an explicit referenceTime is kept', () => {
  const s = models.get('time_lookback').stream();
  assert.equal(s.frontier, -Infinity);
  assert.equal(s.referenceTime, null);
  assert.equal(s.finalTokens, 0);
  const u = s.push({ streams: [] });
  assert.deepEqual(u.dims, [0, 16]);
  assert.equal(u.frontier, -Infinity);
  assert.equal(u.referenceTime, null);
  s.push({ streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 5000.5 }] });
  assert.equal(s.referenceTime, 5000.5, 'default: the earliest time of the first chunk with one');
  s.dispose();
  const t = models.get('time_lookback').stream({ referenceTime: 4000 });
  assert.equal(t.referenceTime, 4000);
  assert.equal(t.push({ streams: [{ sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 5000.5, samples: new Float32Array(40) }] }).referenceTime, 4000);
  t.dispose();
});

// --- bad input ---------------------------------------------------------------------------------

const ECG0 = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: 130, startTime: 1000, samples: new Float32Array(20).fill(5) };
const RR0 = { sensor: 2, modality: 'rr', placement: 'chest', timestamps: [1000.2, 1001], samples: [0.8, 0.8] };

// [chunk, code, what the message must name]
const BAD_CHUNKS = [
  [null, 'INVALID_ARGUMENT', /^chunk must be an object with a streams array, got null/],
  [[], 'INVALID_ARGUMENT', /^chunk must be an object with a streams array/],
  [{ streams: 'ecg' }, 'INVALID_ARGUMENT', /^chunk must be an object with a streams array/],
  [{ streams: [], referenceTime: 3 }, 'INVALID_ARGUMENT', /^chunk\.referenceTime is a session option: model\.stream\(\{ referenceTime \}\)/],
  [{ streams: [5] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\] must be an object or null/],
  [{ streams: [{ sample: [1] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.sample is not a chunk stream field/],
  [{ streams: [{ rateHz: 130, samples: [1] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.rateHz is part of the stream's description/],
  [{ streams: [{ sensor: 0, samples: [1] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.sensor is part of the stream's description/],
  [{ streams: [{ ...ECG0, modality: 3 }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.modality must be a string, got 3/],
  [{ streams: [{ ...ECG0, placement: undefined }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.placement must be a string/],
  [{ streams: [{ ...ECG0, sensor: -1 }] }, 'INDEX_OUT_OF_RANGE', /^chunk\.streams\[0\]\.sensor -1 is not a sensor id/],
  [{ streams: [{ ...ECG0, sensor: 1.5 }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.sensor must be an integer/],
  [{ streams: [null, null, { ...ECG0, sensor: 9 }] }, 'INDEX_OUT_OF_RANGE', /^stream 2: sensor 9 is outside the model's 4 sensors/],
  [{ streams: [{ ...ECG0, rateHz: undefined }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\] describes a stream without rateHz/],
  [{ streams: [{ ...ECG0, rateHz: -1 }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.rateHz must be a rate in Hz > 0/],
  [{ streams: [{ ...ECG0, rateHz: Infinity }] }, 'NON_FINITE', /^chunk\.streams\[0\]\.rateHz is Infinity/],
  [{ streams: [null, { ...RR0, rateHz: 2 }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[1\] gives both rateHz and timestamps/],
  [{ streams: [null, { timestamps: [1002], samples: [1], startTime: 1002 }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[1\] gives both startTime and timestamps/],
  [{ streams: [{ samples: [1, 2, Infinity] }] }, 'NON_FINITE', /^chunk\.streams\[0\]\.samples\[2\] is Infinity/],
  [{ streams: [{ samples: [1, 1e39] }] }, 'NON_FINITE', /^chunk\.streams\[0\]\.samples\[1\] is 1e\+39, beyond float32's range/],
  [{ streams: [{ samples: new BigInt64Array(2) }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.samples must be an array or one of/],
  [{ streams: [{ samples: ['1'] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.samples\[0\] must be a number or null/],
  [{ streams: [{ samples: [1, 2], present: [1] }] }, 'SHAPE_MISMATCH', /^chunk\.streams\[0\]\.present has 1 entries for 2 samples/],
  [{ streams: [{ samples: [1], present: [2] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.present\[0\] must be 0, 1, true or false/],
  [{ streams: [null, { timestamps: [1002], samples: [1, 2] }] }, 'SHAPE_MISMATCH', /^chunk\.streams\[1\]\.timestamps has 1 entries for 2 samples/],
  [{ streams: [null, { timestamps: [1003, 1002], samples: [1, 2] }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[1\]\.timestamps\[1\] \(1002\) is earlier than/],
  [{ streams: [null, { timestamps: [NaN], samples: [1] }] }, 'NON_FINITE', /^chunk\.streams\[1\]\.timestamps\[0\] is NaN/],
  [{ streams: [null, { samples: [1] }] }, 'SHAPE_MISMATCH', /^stream 1: an event-driven stream's samples need timestamps/],
  [{ streams: [{ until: NaN }] }, 'NON_FINITE', /^chunk\.streams\[0\]\.until is NaN/],
  [{ streams: [{ until: '1001' }] }, 'INVALID_ARGUMENT', /^chunk\.streams\[0\]\.until must be a time in seconds/],
  [{ streams: [{ startTime: -Infinity, samples: [1] }] }, 'NON_FINITE', /^chunk\.streams\[0\]\.startTime is -Infinity/],
  // The core's checks: its messages name the stream.
  [{ streams: [{ startTime: 1000.05, samples: [1] }] }, 'INVALID_ARGUMENT', /^stream 0: startTime 1000\.05 s is sample [\d.]+ of the stream, but 50 samples were already received .* chunks must not overlap/],
  // A gap of any length is accepted (it costs a minute of absent patches: stream-edges.test.js);
  // a time past 1e12 s from the reference time is refused when it is given.
  [{ streams: [{ startTime: 1000 + 2e12, samples: [1] }] }, 'NON_FINITE', /^stream 0: startTime 2000000001000 s: times must be finite and within 1e12 s/],
  [{ streams: [null, { until: 1e300 }] }, 'NON_FINITE', /^stream 1: until 1e\+300 s: times must be finite/],
  [{ streams: [null, { timestamps: [1000.5], samples: [1] }] }, 'INVALID_ARGUMENT', /^stream 1: timestamp 0 \(1000\.5 s\) is earlier than the stream's previous event/],
  [{ streams: [null, { timestamps: [1001.5], samples: [3e38] }] }, 'NON_FINITE', /^stream 1: sample [\d.e+]+ normalised as \(x - mean\) \/ std = .* overflows float32/],
  [{ streams: [{ ...ECG0, modality: 'acc_x', startTime: undefined, samples: [] }] }, 'INVALID_ARGUMENT', /^stream 0: modality "acc_x" differs from the stream's "ecg"/],
  [{ streams: [{ ...ECG0, rateHz: 131, startTime: undefined, samples: [] }] }, 'INVALID_ARGUMENT', /^stream 0: rateHz 131 differs from the stream's 130/],
  [{ streams: [{ timestamps: [1002], samples: [1] }] }, 'INVALID_ARGUMENT', /^stream 0: a regular stream takes samples on its rate, not timestamps/],
  [{ streams: [null, null, { samples: [1] }] }, 'INVALID_ARGUMENT', /^stream 2: the session has not seen this stream yet: its first chunk must describe it/],
  [{ streams: [null, null, null, { ...ECG0 }] }, 'INVALID_ARGUMENT', /^stream 3: stream 2 has never been given: streams join a session in order/],
  [{ streams: [null, null, { ...ECG0, modality: 'eeg' }] }, 'INVALID_ARGUMENT', /^stream 2: modality "eeg" is not one the model knows/],
  [{ streams: [null, null, { ...ECG0, placement: 'ankle' }] }, 'INVALID_ARGUMENT', /^stream 2: placement "ankle" is not one the model knows/],
  [{ streams: [null, null, { ...ECG0, startTime: undefined }] }, 'INVALID_ARGUMENT', /^stream 2: a regular stream's first chunk needs startTime/],
  [{ streams: [null, null, { ...ECG0, startTime: 999 }] }, 'INVALID_ARGUMENT', /^stream 2: this new stream starts at 999 s, before the session's frontier/],
  [{ streams: [null, null, { ...RR0, timestamps: [1e13, 1e13, 1e13, 1e13], samples: [1, 1, 1, 1], sensor: 3 }] }, 'NON_FINITE', /^stream 2: timestamp 0 10000000000000 s: times must be finite and within 1e12 s of the session.s reference time/],
];

test('every bad chunk gets its code and names the field; the session is as before and keeps working', () => {
  const model = models.get('factorized_lookback');
  const good = [
    { streams: [ECG0, RR0] },
    { streams: [{ samples: new Float32Array(30).fill(7) }, { timestamps: [1001.2, 1001.3], samples: [0.7, 0.9], until: 1001.4 }] },
  ];
  const later = [
    { streams: [{ samples: new Float32Array(40).fill(-3) }, { timestamps: [1001.5, 1001.6, 1001.8], samples: [0.7, 0.9, 0.8] }] },
    { streams: [{ startTime: 1000 + 120 / 130, samples: new Float32Array(16).fill(1) }, { until: 1002 }] },
  ];
  // The twin never sees a bad chunk: after every error the session must answer as it does.
  const twin = model.stream({ attention: true });
  const session = model.stream({ attention: true });
  for (const c of good) assert.deepEqual(session.push(c), twin.push(c));
  const state = (s) => [s.frontier, s.referenceTime, s.finalTokens, s.memoryBytes];
  for (const [chunk, code, message] of BAD_CHUNKS) {
    const before = state(session);
    assert.throws(() => session.push(chunk), (e) => {
      assert.ok(e instanceof SensorformerError, `${e}`);
      assert.equal(e.code, code, `${message}: ${e.message}`);
      assert.match(e.message, message);
      return true;
    });
    assert.deepEqual(state(session), before, `${message}: the session changed`);
  }
  for (const c of later) assert.deepEqual(session.push(c), twin.push(c), 'after the errors the session answers as its twin');
  assert.deepEqual(session.pooled(), twin.pooled());
  session.dispose();
  twin.dispose();
});

test('an event at or after a watermark is accepted, one before it is INVALID_ARGUMENT', () => {
  const s = models.get('time_lookback').stream();
  s.push({ streams: [{ ...RR0, until: 1001.5 }] });
  assert.throws(() => s.push({ streams: [{ timestamps: [1001.4], samples: [1] }] }),
    (e) => e.code === 'INVALID_ARGUMENT' && /^stream 0: timestamp 0 \(1001\.4 s\) is earlier than the stream's watermark \(1001\.5 s\)/.test(e.message));
  // A smaller watermark later changes nothing (monotone).
  s.push({ streams: [{ until: 1001 }] });
  s.push({ streams: [{ timestamps: [1001.5], samples: [1] }] });
  s.dispose();
});

test('bad options of stream() and pooled() get their codes', () => {
  const model = models.get('time_lookback');
  const streamCases = [
    ['ecg', 'INVALID_ARGUMENT', /^stream\(options\): options must be an object with the keys referenceTime, attention, historySeconds, eventTimeoutSeconds, maxGflop, got "ecg"/],
    [{ referenceTme: 1 }, 'INVALID_ARGUMENT', /^stream\(options\): unknown option "referenceTme"/],
    [{ referenceTime: Infinity }, 'NON_FINITE', /^stream\(options\): referenceTime must be a finite time in seconds/],
    [{ referenceTime: '2025' }, 'INVALID_ARGUMENT', /referenceTime must be a finite time/],
    [{ attention: 1 }, 'INVALID_ARGUMENT', /attention must be true or false, got 1/],
    [{ historySeconds: 0 }, 'INVALID_ARGUMENT', /historySeconds must be a finite number of seconds > 0, got 0/],
    [{ historySeconds: Infinity }, 'INVALID_ARGUMENT', /historySeconds must be a finite number of seconds > 0, got Infinity/],
  ];
  for (const [options, code, message] of streamCases)
    assert.throws(() => model.stream(options), (e) => e instanceof SensorformerError && e.code === code && message.test(e.message), String(message));
  const s = model.stream({ historySeconds: 10 });
  const pooledCases = [
    [{ seconds: 0 }, 'INVALID_ARGUMENT', /^pooled\(options\): seconds must be a finite number of seconds > 0 \(at most historySeconds, 10\), got 0/],
    [{ seconds: NaN }, 'INVALID_ARGUMENT', /seconds must be .*got NaN/],
    [{ seconds: '5' }, 'INVALID_ARGUMENT', /seconds must be .*got "5"/],
    [{ seconds: 11 }, 'INVALID_ARGUMENT', /^pooled: seconds must be > 0 and at most the session's historySeconds \(10\), got 11/],
    [{ second: 1 }, 'INVALID_ARGUMENT', /^pooled\(options\): unknown option "second"/],
    [5, 'INVALID_ARGUMENT', /^pooled\(options\): options must be an object/],
  ];
  for (const [options, code, message] of pooledCases)
    assert.throws(() => s.pooled(options), (e) => e instanceof SensorformerError && e.code === code && message.test(e.message), String(message));
  assert.equal(s.pooled({ seconds: 10 }).presentTokens, 0);
  s.dispose();
});

test('a model that is not causal is refused with INVALID_ARGUMENT saying so', async () => {
  const m = await loadModel(fixturePath('model/factorized.safetensors'), { warmup: false });
  assert.throws(() => m.stream(), (e) => e instanceof SensorformerError && e.code === 'INVALID_ARGUMENT' && /^this model is not causal/.test(e.message));
  m.dispose();
});

// --- dispose and memory ------------------------------------------------------------------------

const wasm = await loadWasm();

test('dispose: later calls throw DISPOSED; model.dispose() ends its sessions; memory comes back', async () => {
  const start = wasm.heapUsed();
  const model = await loadModel(fixturePath('model/channel_lookback.safetensors'), { warmup: false });
  const afterLoad = wasm.heapUsed();
  const a = model.stream(), b = model.stream();
  const chunk = { streams: [ECG0, RR0] };
  a.push(chunk);
  b.push(chunk);
  assert.ok(wasm.heapUsed() > afterLoad);
  a.dispose();
  a.dispose();  // idempotent
  const disposed = (e) => e instanceof SensorformerError && e.code === 'DISPOSED' && /^this stream session was disposed$/.test(e.message);
  assert.throws(() => a.push(chunk), disposed);
  assert.throws(() => a.pooled(), disposed);
  for (const getter of ['frontier', 'referenceTime', 'memoryBytes', 'finalTokens']) assert.throws(() => a[getter], disposed, getter);
  const c = model.stream();
  c.push(chunk);
  c[Symbol.dispose]();  // what `using` calls (Node 20 has no `using` syntax yet)
  assert.throws(() => c.push(chunk), disposed);
  model.dispose();  // b is still open: it ends with the model
  assert.equal(wasm.heapUsed(), start, 'the model and its sessions were freed');
  const ended = (e) => e.code === 'DISPOSED' && /^this stream session ended when its model was disposed$/.test(e.message);
  assert.throws(() => b.push(chunk), ended);
  assert.throws(() => b.frontier, ended);
  b.dispose();
  assert.throws(() => model.stream(), (e) => e.code === 'DISPOSED' && /^this model was disposed$/.test(e.message));
  assert.throws(() => new StreamSession(), (e) => e.code === 'INVALID_ARGUMENT' && /model\.stream\(options\)/.test(e.message));
});

test('sessions and a model that are never disposed are freed by the FinalizationRegistry backstop', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  // Objects an earlier (failed) test left behind may be finalized during this one: let those
  // finalizers run first, so that `start` stays put (three rounds without a change).
  for (let same = 0, last = -1, deadline = performance.now() + 10_000; same < 3 && performance.now() < deadline;) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
    same = wasm.heapUsed() === last ? same + 1 : 0;
    last = wasm.heapUsed();
  }
  const start = wasm.heapUsed();
  let kept;
  await (async () => {
    const model = await loadModel(fixturePath('model/time_lookback.safetensors'), { warmup: false });
    model.stream().push({ streams: [ECG0] });  // lost at once
    kept = model.stream();  // keeps its model alive
    kept.push({ streams: [ECG0] });
  })();
  const collect = async (until) => {
    // Finalizers run at V8's discretion after a collection: collect and yield until they have.
    const deadline = performance.now() + 30_000;
    while (!until() && performance.now() < deadline) {
      gc();
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const withKept = wasm.heapUsed();
  await collect(() => wasm.heapUsed() < withKept);
  assert.ok(wasm.heapUsed() < withKept, 'the lost session was freed');
  assert.equal(kept.push({ streams: [{ samples: new Float32Array(16) }] }).dims[1], 16, 'the kept session still works: its model is alive');
  kept = null;
  await collect(() => wasm.heapUsed() === start);
  assert.equal(wasm.heapUsed(), start, 'the lost model and its last session were freed');
});
