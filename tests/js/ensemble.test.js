// Ensembles (web/src/ensemble.js, docs/model.md "Ensembles"): one weights file holding several
// models whose class probabilities are averaged. The fixture, tests/fixtures/af-pair.safetensors,
// is the AF pair that tools/af/ensemble.py writes (`ensemble.py build/af/runs/lb10-fold0
// build/af/runs/beats-lb10-fold0 --export tests/fixtures/af-pair.safetensors --test-logits
// tests/fixtures/af-pair-test-logits.json`): a member with ECG and RR, and one with ECG, RR and
// beats, both with the AF labels.
//
// References: the split is checked against the fixture's own tensors read by the test-only reader
// (tests/js/safetensors.js); an ensemble's forward and session against its members loaded as
// models of their own, fed the streams of their modalities by hand, and the mean-probability rule
// written out here (tolerance 1e-6: the same float32 heads, combined in float64 both ways and
// rounded to float32 once); with the CinC 2017 data (SF_CINC2017), PyTorch's logits of the pair on
// the whole test part (tolerance 1e-4 and equal labels, as for the single model: af-model.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { beatModalities, beatsFromEcg, detectBeats, loadModel, rrFromEcg } from '../../web/src/index.js';
import { combineHeads, ensembleMembers } from '../../web/src/ensemble.js';
import { compare, dataFromEnv, evaluate } from '../../tools/af/eval_af.mjs';
import { fixturePath } from './safetensors.js';

const pairPath = fixturePath('af-pair.safetensors');
const pairBytes = () => new Uint8Array(readFileSync(pairPath));

// The safetensors header and data of a file (bytes), parsed here without the library.
function parse(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  return { header: JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))), data: bytes.subarray(8 + n) };
}

// A safetensors file from its header and its data's parts, in order.
function write(header, parts) {
  const text = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + text.length + parts.reduce((n, p) => n + p.length, 0));
  new DataView(out.buffer).setBigUint64(0, BigInt(text.length), true);
  out.set(text, 8);
  let at = 8 + text.length;
  for (const p of parts) out.set(p, at), (at += p.length);
  return out;
}

// A file with its header replaced (the data kept): for the malformed-ensemble cases.
function withHeader(bytes, edit) {
  const { header, data } = parse(bytes);
  edit(header);
  return write(header, [data]);
}

// 30 s of a synthetic ECG at 130 Hz (a strap's rate): a QRS-like bump every 0.8 s with a 0.5 s
// dropout, its RR stream and beat stream from the package's detector.
function strapWindow() {
  const rate = 130, startTime = 1764460800;
  const samples = Array.from({ length: 30 * rate }, (_, i) => (i >= 1300 && i < 1365 ? null : 1.2 * Math.exp(-(((i % 104) - 20) ** 2) / 3) - 0.1 * Math.exp(-(((i % 104) - 60) ** 2) / 60)));
  const ecg = { sensor: 0, modality: 'ecg', placement: 'chest', rateHz: rate, startTime, samples };
  const beats = detectBeats(samples, rate, { startTime });
  return { ecg, rr: { ...rrFromEcg(ecg, beats), sensor: 0 }, beat: { ...beatsFromEcg(ecg, beats), sensor: 0 } };
}

// |actual - expected| <= tol for every entry
function close(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) assert.ok(Math.abs(actual[i] - expected[i]) <= tol, `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
}

function meanProbabilityHead(heads) {
  const mean = new Float64Array(heads[0].length);
  for (const h of heads) {
    const e = Array.from(h, (v) => Math.exp(v));
    const sum = e.reduce((a, b) => a + b, 0);
    e.forEach((v, i) => (mean[i] += v / sum / heads.length));
  }
  return Float32Array.from(mean, Math.log);
}

test('an ensemble file splits into its members: every tensor and the metadata as the file holds them', () => {
  const bytes = pairBytes();
  const { header, data } = parse(bytes);
  const spec = JSON.parse(header.__metadata__.ensemble);
  const members = ensembleMembers(bytes);
  assert.equal(members.length, 2);
  members.forEach((file, k) => {
    const { header: h, data: d } = parse(file);
    assert.equal((8 + Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true))) % 8, 0, 'the data starts 8-byte aligned');
    assert.deepEqual(h.__metadata__, spec.members[k].metadata);
    const names = Object.keys(header).filter((n) => n.startsWith(spec.members[k].prefix));
    assert.deepEqual(Object.keys(h).filter((n) => n !== '__metadata__').sort(), names.map((n) => n.slice(spec.members[k].prefix.length)).sort());
    let end = 0;
    for (const name of names) {
      const t = header[name], u = h[name.slice(spec.members[k].prefix.length)];
      assert.deepEqual([u.dtype, u.shape], [t.dtype, t.shape]);
      assert.deepEqual(d.subarray(...u.data_offsets), data.subarray(...t.data_offsets), name);
      end = Math.max(end, u.data_offsets[1]);
    }
    assert.equal(end, d.length, 'no bytes past the last tensor');
  });
  // not an ensemble: a single model's file gives null (the core loads it as it is)
  assert.equal(ensembleMembers(new Uint8Array(readFileSync(fixturePath('model/flattened_causal.safetensors')))), null);
});

test('an ensemble forward: the first member\'s tokens and embeddings in the window\'s stream numbers, the members\' mean probability as its head', async () => {
  const pair = await loadModel(pairPath);
  const [m0, m1] = await Promise.all(ensembleMembers(pairBytes()).map((b) => loadModel(b)));
  try {
    assert.deepEqual(pair.config.modalities.map((m) => m.name), ['ecg', 'rr', 'beat']);
    assert.deepEqual(pair.info.inputs.modalities.map((m) => m.name), ['ecg', 'rr', 'beat']);
    assert.deepEqual(pair.info.ensemble, { combine: 'mean_probability', members: 2 });
    assert.deepEqual(pair.config.ensemble.members.map((c) => c.modalities.map((m) => m.name)), [['ecg', 'rr'], ['ecg', 'rr', 'beat']]);
    assert.deepEqual(pair.info.outputs, m0.info.outputs);
    assert.deepEqual(pair.info.size, { parameters: m0.info.size.parameters + m1.info.size.parameters, weightBytes: m0.info.size.weightBytes + m1.info.size.weightBytes });
    assert.equal(pair.info.dModel, m0.info.dModel);
    const { ecg, rr, beat } = strapWindow();
    // the beat stream first: the first member, which has no beat modality, numbers ECG and RR 0 and 1
    const out = pair.forward({ streams: [beat, ecg, rr] }, { attention: true });
    const a = m0.forward({ streams: [ecg, rr] }, { attention: true });
    const b = m1.forward({ streams: [beat, ecg, rr] });
    assert.deepEqual(out.embeddings, a.embeddings);
    assert.deepEqual(out.pooled, a.pooled);
    assert.deepEqual(Array.from(out.tokens.stream), Array.from(a.tokens.stream, (j) => j + 1));
    assert.deepEqual(out.tokens.modality, a.tokens.modality);
    assert.equal(out.attention.length, a.attention.length);
    close(out.head, meanProbabilityHead([a.head, b.head]), 1e-6, 'head');
    const p = a.probabilities.map((v, i) => (v + b.probabilities[i]) / 2);
    close(out.probabilities, p, 1e-6, 'probabilities');
    assert.equal(out.label, pair.info.outputs.labels[p.indexOf(Math.max(...p))]);
    // a window without beats: the second member sees ECG and RR only, as a model of its own would
    const noBeats = pair.forward({ streams: [ecg, rr] });
    const c = m1.forward({ streams: [ecg, rr] });
    close(noBeats.head, meanProbabilityHead([a.head, c.head]), 1e-6, 'head without beats');
    // a member with no present token is left out of the mean; none at all: no prediction
    const onlyBeats = pair.forward({ streams: [beat] });
    assert.deepEqual(onlyBeats.tokens.stream.length, 0, 'the first member gets no stream');
    const d = m1.forward({ streams: [beat] });
    close(onlyBeats.probabilities, d.probabilities, 1e-6, 'probabilities with beats alone');
    const empty = pair.forward({ streams: [] });
    assert.equal(empty.probabilities, null);
    assert.equal(empty.label, null);
  } finally {
    for (const m of [pair, m0, m1]) m.dispose();
  }
});

// The AF pair's members were trained on RR intervals across an ECG gap in two ways: the first
// with them left out (its file's rr modality says "missing_events": "leave-out"), the second with
// them as missing (NaN) events. Fed rrFromEcg's default (the NaN events), the first member's
// output must be bit for bit its output without them, the second's must differ (it reads them),
// and the pair's head is the mean-probability rule over those two.
test('an ensemble feeds each member the RR stream as it was trained: the left-out member drops the missing intervals, the other reads them', async () => {
  const pair = await loadModel(pairPath);
  const [m0, m1] = await Promise.all(ensembleMembers(pairBytes()).map((b) => loadModel(b)));
  try {
    assert.deepEqual(pair.config.ensemble.members.map((c) => c.modalities.find((m) => m.name === 'rr').missing_events), ['leave-out', undefined]);
    const { ecg, rr, beat } = strapWindow();
    const nan = Array.from(rr.samples).filter(Number.isNaN).length;
    assert.ok(nan >= 1, 'the dropout leaves an interval unknown');
    const keep = Array.from(rr.samples.keys()).filter((k) => !Number.isNaN(rr.samples[k]));
    const leftOut = { ...rr, timestamps: Float64Array.from(keep, (k) => rr.timestamps[k]), samples: Float64Array.from(keep, (k) => rr.samples[k]) };
    const a = m0.forward({ streams: [ecg, rr] }), aOut = m0.forward({ streams: [ecg, leftOut] });
    assert.deepEqual(a.embeddings, aOut.embeddings);
    assert.deepEqual(a.head, aOut.head);
    const b = m1.forward({ streams: [beat, ecg, rr] }), bOut = m1.forward({ streams: [beat, ecg, leftOut] });
    assert.notDeepEqual(b.head, bOut.head, 'the second member reads the missing intervals');
    const out = pair.forward({ streams: [ecg, rr, beat] });
    close(out.head, meanProbabilityHead([aOut.head, b.head]), 1e-6, 'head');
  } finally {
    for (const m of [pair, m0, m1]) m.dispose();
  }
});

test('an ensemble\'s errors name the window\'s stream, not a member\'s', async () => {
  const pair = await loadModel(pairPath);
  try {
    const { ecg, rr, beat } = strapWindow();
    // stream 2 (RR) is the first member's stream 1: the message says "stream 2"
    const badRr = { ...rr, samples: Float64Array.from(rr.samples, (v, i) => (i === 3 ? Infinity : v)) };
    assert.throws(() => pair.forward({ streams: [beat, ecg, badRr] }), (e) => e.code === 'NON_FINITE' && /^window\.streams\[2\]|stream 2/.test(e.message));
    assert.throws(() => pair.forward({ streams: [beat, { ...ecg, modality: 'ppg' }] }), (e) => e.code === 'INVALID_ARGUMENT' && /stream 1: modality "ppg"/.test(e.message));
    assert.throws(() => pair.forwardBatch([{ streams: [ecg] }, { streams: [beat, { ...ecg, modality: 'ppg' }] }]), (e) => /^windows\[1\]: stream 1: modality "ppg"/.test(e.message));
  } finally {
    pair.dispose();
  }
});

test('a malformed ensemble file is BAD_FORMAT naming what is wrong; members with other labels are refused', async () => {
  const cases = [
    [(h) => (h.__metadata__.ensemble = '{'), /not JSON/],
    [(h) => (h.__metadata__.ensemble = JSON.stringify({ ...JSON.parse(h.__metadata__.ensemble), combine: 'max' })), /combine must be "mean_probability", got "max"/],
    [(h) => (h.__metadata__.ensemble = JSON.stringify({ combine: 'mean_probability', members: [JSON.parse(h.__metadata__.ensemble).members[0]] })), /2-16 members/],
    [(h) => ((h['stray.weight'] = h[Object.keys(h).find((n) => n.startsWith('member0.'))])), /tensor "stray\.weight" belongs to no ensemble member/],
    [(h) => {
      const spec = JSON.parse(h.__metadata__.ensemble);
      const config = JSON.parse(spec.members[1].metadata.config);
      spec.members[1].metadata.config = JSON.stringify({ ...config, labels: ['n', 'a', 'o', 'x'] });
      h.__metadata__.ensemble = JSON.stringify(spec);
    }, /same head labels/],
    // member 1's tensor pointing at member 0's bytes: the split would copy them twice (2,000 such
    // entries would make the members' files gigabytes from a small file)
    [(h) => {
      const first = Object.keys(h).find((n) => n.startsWith('member0.'));
      h[`member1.${first.slice('member0.'.length)}`].data_offsets = [...h[first].data_offsets];
    }, /tensors "member\d\..+" and "member\d\..+" overlap in the file \(data_offsets\)/],
  ];
  for (const [edit, message] of cases) {
    await assert.rejects(loadModel(withHeader(pairBytes(), edit)), (e) => e.code === 'BAD_FORMAT' && message.test(e.message), String(message));
  }
  // a member the core refuses: its error, prefixed with the member
  const broken = withHeader(pairBytes(), (h) => {
    const name = Object.keys(h).find((n) => n.startsWith('member1.') && h[n].shape.length === 2);
    h[name].shape = [h[name].shape[0] + 1, h[name].shape[1]];
  });
  await assert.rejects(loadModel(broken), (e) => /ensemble member 1: /.test(e.message));
});

// An ensemble file from member files (safetensors each), as tools/af/ensemble.py export writes
// one: member k's tensors prefixed "member<k>.", its metadata kept.
function pack(files) {
  const tensors = {}, parts = [];
  let offset = 0;
  const members = files.map((file, k) => {
    const { header, data } = parse(file);
    for (const [name, t] of Object.entries(header)) {
      if (name === '__metadata__') continue;
      const bytes = data.subarray(...t.data_offsets);
      tensors[`member${k}.${name}`] = { ...t, data_offsets: [offset, offset + bytes.length] };
      parts.push(bytes);
      offset += bytes.length;
    }
    return { prefix: `member${k}.`, metadata: header.__metadata__ };
  });
  return write({ __metadata__: { ensemble: JSON.stringify({ combine: 'mean_probability', members }) }, ...tensors }, parts);
}

// The AF pair's beat member with its beat modality on another grid (8 ms apart, not 16, or the
// step given), under `name` (its value projection renamed with it, as ensemble.py renames it).
function otherGrid(file, name, step = 0.008) {
  return withHeader(file, (h) => {
    const config = JSON.parse(h.__metadata__.config);
    config.modalities = config.modalities.map((m) => (m.name === 'beat' ? { ...m, name, grid_step_s: step } : m));
    h.__metadata__.config = JSON.stringify(config);
    for (const key of Object.keys(h)) {
      if (!key.startsWith('tokenizer.value_proj.beat.')) continue;
      h[key.replace('.beat.', `.${name}.`)] = h[key];
      if (name !== 'beat') delete h[key];
    }
  });
}

test('ensemble members with different beat grids: each member gets the beat stream of its own modality; one name with two grids is BAD_FORMAT', async () => {
  const [f0, f1] = ensembleMembers(pairBytes());
  const f2 = otherGrid(f1, 'beat_40x8ms');
  const triple = await loadModel(pack([f0, f1, f2]));
  const [m0, m1, m2] = await Promise.all([f0, f1, f2].map((b) => loadModel(b)));
  try {
    assert.deepEqual(triple.config.modalities.map((m) => m.name), ['ecg', 'rr', 'beat', 'beat_40x8ms']);
    const grids = beatModalities(triple.config);
    assert.deepEqual(grids.map((g) => [g.modality, g.stepS]), [['beat', 0.016], ['beat_40x8ms', 0.008]]);
    const { ecg, rr } = strapWindow();
    const beats = detectBeats(ecg.samples, ecg.rateHz, { startTime: ecg.startTime });
    const [b1, b2] = grids.map((g) => beatsFromEcg(ecg, beats, g));
    assert.notDeepEqual(b1.samples, b2.samples);
    const out = triple.forward({ streams: [ecg, rr, b2, b1] });
    const heads = [m0.forward({ streams: [ecg, rr] }).head, m1.forward({ streams: [ecg, rr, b1] }).head, m2.forward({ streams: [ecg, rr, b2] }).head];
    close(out.head, meanProbabilityHead(heads), 1e-6, 'head');
    // the member fed the other grid's stream under its own name would read something else
    const wrong = m2.forward({ streams: [ecg, rr, { ...b1, modality: 'beat_40x8ms' }] }).head;
    assert.ok(Math.max(...wrong.map((v, i) => Math.abs(v - heads[2][i]))) > 1e-3, 'the two grids give the member different heads');
  } finally {
    for (const m of [triple, m0, m1, m2]) m.dispose();
  }
  await assert.rejects(loadModel(pack([f0, f1, otherGrid(f1, 'beat')])),
    (e) => e.code === 'BAD_FORMAT' && /ensemble member 2: beat modality "beat" has another grid than member 1's/.test(e.message));
  // a grid a file may not ask for: refused at load, in a single model's file and in a member's
  await assert.rejects(loadModel(otherGrid(f1, 'beat', 0)), (e) => e.code === 'BAD_FORMAT' && /^beat modality "beat": "grid_step_s" must be/.test(e.message));
  await assert.rejects(loadModel(pack([f0, otherGrid(f1, 'beat_x', 2)])), (e) => e.code === 'BAD_FORMAT' && /^ensemble member 1: beat modality "beat_x": "grid_step_s" must be/.test(e.message));
});

test('an ensemble session: the first member\'s tokens, the members\' pooled heads combined, as the members\' own sessions give them', async () => {
  const pair = await loadModel(pairPath);
  const [m0, m1] = await Promise.all(ensembleMembers(pairBytes()).map((b) => loadModel(b)));
  try {
    const { ecg, rr, beat } = strapWindow();
    const s = pair.stream(), s0 = m0.stream(), s1 = m1.stream();
    // pushed in 3 s chunks: [beat, ecg, rr] to the pair, [ecg, rr] to the first member, [beat, ecg, rr] to the second
    const t0 = ecg.startTime;
    const part = (stream, from, to, first) => {
      if (stream.timestamps) {
        const keep = Array.from(stream.timestamps.keys()).filter((i) => stream.timestamps[i] >= from && stream.timestamps[i] < to);
        const out = { timestamps: keep.map((i) => stream.timestamps[i]), samples: keep.map((i) => stream.samples[i]), until: to };
        return first ? { sensor: stream.sensor, modality: stream.modality, placement: stream.placement, ...out } : out;
      }
      const a = Math.round((from - t0) * stream.rateHz), b = Math.round((to - t0) * stream.rateHz);
      const out = { samples: stream.samples.slice(a, b) };
      return first ? { sensor: stream.sensor, modality: stream.modality, placement: stream.placement, rateHz: stream.rateHz, startTime: t0, ...out } : out;
    };
    let tokens = 0;
    for (let k = 0; k < 10; k++) {
      const from = t0 + 3 * k, to = from + 3;
      const [pb, pe, pr] = [beat, ecg, rr].map((x) => part(x, from, to, k === 0));
      const out = s.push({ streams: [pb, pe, pr] });
      const a = s0.push({ streams: [pe, pr] });
      s1.push({ streams: [pb, pe, pr] });
      assert.deepEqual(out.embeddings, a.embeddings);
      assert.deepEqual(Array.from(out.tokens.stream), Array.from(a.tokens.stream, (j) => j + 1));
      tokens += a.tokens.stream.length;
    }
    assert.ok(tokens >= 80, `${tokens} tokens compared`);  // ~30 s of ECG patches and RR, less what is not final yet
    const p = s.pooled({ seconds: 30 }), p0 = s0.pooled({ seconds: 30 }), p1 = s1.pooled({ seconds: 30 });
    assert.deepEqual(p.pooled, p0.pooled);
    close(p.head, meanProbabilityHead([p0.head, p1.head]), 1e-6, 'pooled head');
    assert.equal(s.frontier, s0.frontier);
    assert.equal(s.memoryBytes, s0.memoryBytes + s1.memoryBytes);
    // a refused chunk leaves the session as it was, and names the session's stream
    assert.throws(() => s.push({ streams: [null, null, { timestamps: [t0 + 40], samples: [Infinity] }] }), (e) => e.code === 'NON_FINITE' && /^chunk\.streams\[2\]/.test(e.message));
    // RR is the first member's stream 1 and the second's stream 2: the core's message says 2
    assert.throws(() => s.push({ streams: [null, null, { ...part(rr, t0 + 30, t0 + 33, true), placement: 'hand' }] }), (e) => e.code === 'INVALID_ARGUMENT' && /^stream 2: placement/.test(e.message));
    assert.throws(() => s.push({ streams: [null, null, null, { samples: [1] }] }), (e) => e.code === 'INVALID_ARGUMENT' && /stream 3: the session has not seen this stream yet/.test(e.message));
    const again = s.push({ streams: [null, part(ecg, t0 + 30, t0 + 30, false), null] });
    assert.equal(again.tokens.stream.length, 0);
  } finally {
    for (const m of [pair, m0, m1]) m.dispose();
  }
});

// A member's config edited (`edit(config)`), its tensors as they are.
const withConfig = (file, edit) => withHeader(file, (h) => {
  h.__metadata__.config = JSON.stringify(edit(JSON.parse(h.__metadata__.config)));
});

test('an ensemble\'s info.causal and attentionLookbackS describe every member: causal only when all are, the longest look-back', async () => {
  const [f0, f1] = ensembleMembers(pairBytes());
  const longer = await loadModel(pack([f0, withConfig(f1, (c) => ({ ...c, attention_lookback_s: 25 }))]), { warmup: false });
  try {
    assert.equal(longer.info.causal, true);
    assert.equal(longer.info.attentionLookbackS, 25, 'the second member looks back 25 s, the first 10 s');
    longer.stream().dispose();
  } finally {
    longer.dispose();
  }
  const unlimited = await loadModel(pack([f0, withConfig(f1, (c) => { const { attention_lookback_s: _, ...rest } = c; return rest; })]), { warmup: false });
  try {
    assert.equal(unlimited.info.attentionLookbackS, null, 'a member without a look-back limit: unlimited');
  } finally {
    unlimited.dispose();
  }
  const mixed = await loadModel(pack([f0, withConfig(f1, (c) => { const { attention_lookback_s: _, ...rest } = c; return { ...rest, causal: false }; })]), { warmup: false });
  try {
    assert.equal(mixed.info.causal, false, 'the second member is not causal');
    assert.throws(() => mixed.stream(), (e) => e.code === 'INVALID_ARGUMENT' && /^ensemble member 1: /.test(e.message));
  } finally {
    mixed.dispose();
  }
});

const { data, skip } = dataFromEnv();

test('CinC 2017 test part: the AF pair in WebAssembly gives PyTorch\'s ensemble label on every record, logits within 1e-4', { skip }, async () => {
  const result = await evaluate({ data, model: pairPath });
  assert.equal(result.records, 1707);
  const reference = JSON.parse(readFileSync(fixturePath('af-pair-test-logits.json'), 'utf8'));
  const c = compare(result.logits, reference);
  assert.deepEqual(c.labelDiffers, [], 'records whose label differs from PyTorch');
  assert.ok(c.worst <= 1e-4, `largest |logit difference| ${c.worst} (${c.worstRecord})`);
});

test('combineHeads: the log of the members\' mean probability, finite however far apart a member\'s logits are', () => {
  // Reference: float64 softmax of each head, their mean, its log (no underflow for these heads).
  const direct = (heads) => {
    const probs = heads.map((h) => { const e = h.map((v) => Math.exp(v - Math.max(...h))); const z = e.reduce((a, b) => a + b); return e.map((v) => v / z); });
    return probs[0].map((_, i) => Math.log(probs.reduce((a, p) => a + p[i], 0) / probs.length));
  };
  const heads = [Float32Array.of(1, 2, 3), Float32Array.of(3, -1, 0.5), Float32Array.of(-2, 0, 4)];
  const got = combineHeads(heads, [true, true, true]);
  direct(heads).forEach((v, i) => assert.ok(Math.abs(got[i] - v) < 1e-6, `class ${i}: ${got[i]} vs ${v}`));
  // a member that saw no present token is left out
  const two = combineHeads(heads, [true, false, true]);
  direct([heads[0], heads[2]]).forEach((v, i) => assert.ok(Math.abs(two[i] - v) < 1e-6));
  // Logits 1000 apart: the probability of class 1 underflows in float64 (exp(-1005) = 0); its log
  // does not. Two equal members: the mean is the member, log p = v - logsumexp(v) = v - 5 - log1p(e^-5 + e^-1005).
  const far = combineHeads([Float32Array.of(0, -1000, 5), Float32Array.of(0, -1000, 5)], [true, true]);
  assert.ok(far.every(Number.isFinite), `head ${[...far]}`);
  const lse = 5 + Math.log1p(Math.exp(-5));
  [0 - lse, -1000 - lse, 5 - lse].forEach((v, i) => assert.ok(Math.abs(far[i] - v) < 1e-4, `class ${i}: ${far[i]} vs ${v}`));
});
