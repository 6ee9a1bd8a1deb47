// The atrial-fibrillation model (models/af.safetensors, issue 20) against onnxruntime-web on the
// same weights: one 30 s recording (forward) and one streaming update (a session push).
//
//   node bench/peers.mjs --only=af [--quick]     (a part of `npm run bench`)
//   node bench/peers.mjs --check                 (includes this part's output checks, no timing)
//   node bench/af.mjs --write-case DIR           (the committed 30 s case; `npm run bench:models` runs it)
//
// Inputs come from the simulator, never from the real data set: a single-lead ECG at 300 Hz in mV
// from web/src/simulator/physiology.js (seeded; at rest, sinus rhythm, then atrial fibrillation
// from 15 s on) and its RR stream from the package's rrFromEcg (web/src/qrs.js), the stream the
// model was trained with.
//
// The peer graph (bench/models/af.onnx, bench/make_peer_models.py) takes what a JS user of
// onnxruntime-web computes before the graph, as the other peers do: per modality the patches,
// normalised ((x - mean) / std, missing samples 0), a presence flag per patch and the token
// times (float64 seconds, absolute: the masks compare them as the runtime does), the reference
// time, the placement index and the ECG's rate bucket. Inside the graph: value projections, the
// mask token, the time encoding (float64 angle), the identity embeddings, the causal look-back
// mask (key j hidden when t_j > t_i or t_i - t_j > W, and when absent) as a dense (T, T) mask,
// the 4 layers, the final norm, the masked mean and the head. The JS side is timed with the graph.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createPhysiology } from '../web/src/simulator/physiology.js';
import { beatModalities, beatsFromEcg, detectBeats, isBeatModality, rrFromEcg } from '../web/src/qrs.js';
import { ensembleMembers } from '../web/src/ensemble.js';
import { loadModel } from '../web/src/index.js';
import { fmt, interleaved, median, readF32, relError, table } from './lib.mjs';
import { compareRows } from './stream.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODELS = path.join(ROOT, 'bench', 'models');
export const AF_WEIGHTS = path.join(ROOT, 'models', 'af.safetensors');

// The synthetic recording. 300 Hz is the CinC 2017 set's rate (the model's training data);
// START: seconds, the recording's start and every window's and session's referenceTime.
export const AF_CASE = Object.freeze({ seed: 20, seconds: 30, rateHz: 300, startTime: 1000, placement: 'chest', afFromS: 15 });

/**
 * A seeded single-lead ECG (mV, Float32Array) of `seconds` from the simulator's physiology (at rest;
 * sinus rhythm, atrial fibrillation from afFromS on), its RR stream from rrFromEcg and a beat
 * stream from beatsFromEcg for each of `grids` (beatModalities(model.config); one detection).
 * Returns { ecg, rr, [grid.modality]: ..., detected }: a regular stream and event streams in the window
 * format, and the detection they come from (detectBeats' result).
 */
export function synthesize(seconds, grids, { seed, rateHz, startTime, placement, afFromS } = AF_CASE) {
  const ph = createPhysiology({ seed, activities: [{ activity: 'rest' }], af: [{ at: afFromS, duration: 1e6 }] });
  const n = Math.round(seconds * rateHz);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = ph.ecgAt(i / rateHz) / 1000;  // the simulator gives µV
  const ecg = { sensor: 0, modality: 'ecg', placement, rateHz, startTime, samples };
  const detected = detectBeats(samples, rateHz, { startTime });
  return { ecg, rr: rrFromEcg(ecg, detected), ...Object.fromEntries(grids.map((g) => [g.modality, beatsFromEcg(ecg, detected, g)])), detected };
}

// The model's event streams (rr, and its beat modalities), in its config's order
// after the ECG: the graph's inputs and the session's streams follow that order.
const eventNames = (cfg) => cfg.modalities.map((m) => m.name).filter((n) => n !== 'ecg');

// --- what an onnxruntime-web user computes before the graph --------------------------------------
/** Patches [k0, k1) of `values` (P each; past the end or NaN: missing), normalised, and their
 * presence (docs/model.md "Tokenizer": present iff present samples / P >= min_present_fraction). */
function patches(values, { patch_len: P, mean, std }, frac, k0, k1) {
  const K = k1 - k0, out = new Float32Array(K * P), present = new Uint8Array(K);
  for (let k = 0; k < K; k++) {
    let n = 0;
    for (let j = 0; j < P; j++) {
      const i = (k0 + k) * P + j, v = i < values.length ? values[i] : NaN;
      if (Number.isNaN(v)) continue;
      out[k * P + j] = (v - mean) / std;
      n++;
    }
    present[k] = n / P >= frac ? 1 : 0;
  }
  return { out, present };
}

/**
 * The graph's inputs (bench/make_peer_models.py AfPeer) for the patches ranges[name] = [k0, k1) of
 * each of the model's streams as received so far: rec[name] the streams, counts[name] how many of
 * their samples or events were received (default all). Token times as the tokenizer writes them:
 * startTime + k P / rateHz, and an event patch's first event's time.
 */
export function peerFeeds(ort, cfg, rec, ranges, referenceTime, counts = {}) {
  const frac = cfg.min_present_fraction;
  const feeds = {};
  for (const m of cfg.modalities) {
    const stream = rec[m.name], [k0, k1] = ranges[m.name];
    const n = counts[m.name] ?? stream.samples.length;
    const p = patches(stream.samples.subarray(0, n), m, frac, k0, k1);
    const time = new Float64Array(k1 - k0);
    for (let k = k0; k < k1; k++) time[k - k0] = m.name === 'ecg' ? stream.startTime + k * m.patch_len / stream.rateHz : stream.timestamps[k * m.patch_len];
    feeds[m.name] = new ort.Tensor('float32', p.out, [k1 - k0, m.patch_len]);
    feeds[`${m.name}_present`] = new ort.Tensor('bool', p.present, [k1 - k0]);
    feeds[`${m.name}_time`] = new ort.Tensor('float64', time, [k1 - k0]);
  }
  const ecg = rec.ecg;
  const bucket = 1 + cfg.rate_bucket_edges_hz.filter((edge) => ecg.rateHz >= edge).length;
  feeds.reference_time = new ort.Tensor('float64', Float64Array.of(referenceTime), []);
  feeds.placement = new ort.Tensor('int64', BigInt64Array.of(BigInt(cfg.placements.indexOf(ecg.placement))), []);
  feeds.ecg_rate_bucket = new ort.Tensor('int64', BigInt64Array.of(BigInt(bucket)), []);
  return feeds;
}

/** The graph's token labels (the modalities' tokens in config order, as fed) in the shape compareRows reads. */
function peerTokens(cfg, feeds) {
  const stream = [], time = [];
  cfg.modalities.forEach((m, i) => { for (const t of feeds[`${m.name}_time`].data) stream.push(i), time.push(t); });
  return { stream: Int32Array.from(stream), time: Float64Array.from(time) };
}

/** Nominal FLOPs of a forward on tokens (times, present): the value projections, per layer the
 * Q/K/V and output projections and the feed-forward pair of every token, and Q.K^T and P.V over
 * the (query, key) pairs in reach (present keys in [t - W, t]): the work both runtimes must do
 * (the ORT graph computes every pair of its dense (T, T) mask; that extra work is not counted). */
function afFlops(cfg, times, present, patchValues) {
  const d = cfg.d_model, W = cfg.attention_lookback_s, T = times.length;
  let pairs = 0;
  for (let i = 0; i < T; i++) for (let j = 0; j < T; j++) if (present[j] && times[j] <= times[i] && !(times[i] - times[j] > W)) pairs++;
  return 2 * patchValues * d + cfg.n_layers * (T * (8 * d * d + 4 * d * cfg.dim_feedforward) + 4 * d * pairs);
}

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

// --- the part --------------------------------------------------------------------------------------
/**
 * Runs the AF part: checks, then (unless CHECK) the two timed rows. check(what, err) records an
 * output check and throws past the tolerance. Returns { markdown } or { skipped } (no weights).
 */
export async function runAf({ CHECK, QUICK, TIMING, check, log, ort, ORT_OPTIONS, loadModel, meta }) {
  if (!existsSync(AF_WEIGHTS))
    return { skipped: `models/af.safetensors is not in this checkout (the trained AF model of issue 20); the AF rows and their output checks were skipped` };
  const info = meta.af;
  if (!info) throw new Error('bench/models has no AF peer (models.json has no "af"): run `npm run bench:models` with models/af.safetensors in place, and commit bench/models/');
  const sha = sha256(AF_WEIGHTS);
  if (sha !== info.weightsSha256)
    throw new Error(`bench/models/af.onnx was exported from other weights (sha256 ${info.weightsSha256.slice(0, 12)}...) than models/af.safetensors (${sha.slice(0, 12)}...): run \`npm run bench:models\` and commit bench/models/`);

  const model = await loadModel(AF_WEIGHTS, { numThreads: 1 });  // one thread each, as ORT here
  const cfg = model.config, d = cfg.d_model;
  // An ensemble (docs/model.md "Ensembles"): its tokens, embeddings and frontier are the first
  // member's; every member's streams are fed (the graph takes them all, bench/make_peer_models.py).
  const configs = cfg.ensemble?.members ?? [cfg], first = configs[0];
  const session = await ort.InferenceSession.create(path.join(MODELS, 'af.onnx'), ORT_OPTIONS);
  const mE = cfg.modalities.find((m) => m.name === 'ecg');
  const EV = eventNames(cfg), P = Object.fromEntries(cfg.modalities.map((m) => [m.name, m.patch_len]));
  const EV1 = eventNames(first);  // the first member's event streams: its tokens, its frontier
  const L = cfg.n_layers * cfg.attention_lookback_s;  // a token depends on tokens at most L older (flattened: one block per layer)

  // --- (a) one 30 s recording: the committed case, against float64 torch, then timed ------------
  const c = info.case;
  const ecgSamples = readF32(path.join(MODELS, 'af_case_ecg.f32'));
  const rec = { ecg: { sensor: 0, modality: 'ecg', placement: c.placement, rateHz: c.rateHz, startTime: c.startTime, samples: ecgSamples } };
  for (const name of EV) {
    const events = JSON.parse(readFileSync(path.join(MODELS, `af_case_${name}.json`), 'utf8'));
    rec[name] = { sensor: 0, modality: name, placement: c.placement, timestamps: Float64Array.from(events.timestamps), samples: Float64Array.from(events.samples, (v) => v ?? NaN) };
  }
  const window = { streams: cfg.modalities.map((m) => rec[m.name]), referenceTime: c.startTime };
  const K = Object.fromEntries(cfg.modalities.map((m) => [m.name, Math.ceil(rec[m.name].samples.length / m.patch_len)]));
  const Ke = K.ecg, Kev = EV1.reduce((a, n) => a + K[n], 0);
  const allRanges = Object.fromEntries(Object.entries(K).map(([n, k]) => [n, [0, k]]));
  const ortForward = async () => {
    const feeds = peerFeeds(ort, cfg, rec, allRanges, c.startTime);
    const o = await session.run(feeds);
    return { embeddings: o.embeddings.data, head: o.head.data };
  };
  const wantEmb = readF32(path.join(MODELS, 'af_check_embeddings.f32')), wantHead = readF32(path.join(MODELS, 'af_check_head.f32'));
  const sf = model.forward(window), o = await ortForward();
  // Each member's tokens for the nominal FLOP count (an ensemble's forward gives the first's):
  // the members loaded as models of their own, fed the streams of their modalities.
  const memberModels = cfg.ensemble ? await Promise.all(ensembleMembers(new Uint8Array(readFileSync(AF_WEIGHTS))).map((b) => loadModel(b, { numThreads: 1, warmup: false }))) : [model];
  const flops = memberModels.reduce((sum, m, k) => {
    const c = configs[k], own = { ...window, streams: window.streams.filter((st) => c.modalities.some((x) => x.name === st.modality)) };
    const r = cfg.ensemble ? m.forward(own) : sf;
    return sum + afFlops(c, r.tokens.time, r.tokens.present, c.modalities.reduce((a, x) => a + K[x.name] * x.patch_len, 0));
  }, 0);
  if (cfg.ensemble) for (const m of memberModels) m.dispose();
  const errSf = Math.max(check('af 30 s sensorformer embeddings vs float64 torch', relError(sf.embeddings, wantEmb)), check('af 30 s sensorformer head logits vs float64 torch', relError(sf.head, wantHead)));
  const errOrt = Math.max(check('af 30 s ORT embeddings vs float64 torch', relError(o.embeddings, wantEmb)), check('af 30 s ORT head logits vs float64 torch', relError(o.head, wantHead)));
  const T = sf.dims[0];
  const what = first.modalities.map((m) => `${K[m.name]} ${m.name === 'ecg' ? 'ECG' : m.name === 'rr' ? 'RR' : m.name}`).join(' + ')
    + (cfg.ensemble ? `, the first member's; the others' with ${EV.filter((n) => !EV1.includes(n)).map((n) => `${K[n]} ${n} tokens`).join(', ')} too` : '');
  if (T !== Ke + Kev) throw new Error(`bench af: the 30 s case gave ${T} tokens, the peer's inputs ${Ke + Kev}`);
  log(`af forward: ${T} tokens (${what})`);
  const rows = [];
  if (!CHECK) {
    const { rounds, median: m } = await interleaved([
      { name: 'sf', run: () => model.forward(window) },
      { name: 'ort', run: ortForward },
    ], QUICK ? TIMING : { ...TIMING, warmup: 20, budgetMs: 8000, maxRounds: 2001 });
    rows.push([`one 30 s recording, \`model.forward\`: ${T} tokens (${what})`, fmt.ms(m.sf), fmt.gflops(flops, m.sf), `the graph on the recording's ${T} tokens`, fmt.ms(m.ort), fmt.gflops(flops, m.ort), `**${fmt.ratio(m.ort / m.sf)}**`, rounds]);
  }

  // --- (b) one streaming update ----------------------------------------------------------------
  // A session fed 1 s chunks (300 ECG samples + the RR events among them). The RR stream's
  // incomplete 4-beat patch holds the frontier (docs/model.md "Finality"), so tokens become final
  // in bursts: when a patch completes (its 4th beat) and when the next patch's first beat arrives.
  // The timed update is the push of the next chunk that makes tokens final; the chunks before it
  // (nothing final) are pushed untimed, and timed apart. The ORT user, without a session, runs the
  // graph over the tokens the new ones can see: [first new token - L, frontier), L = n_layers x W
  // = 20 s, and takes the new tokens' rows (a token depends only on earlier tokens at most L older,
  // so those rows are exact; nothing after the frontier is fed).
  const timing = QUICK ? TIMING : { ...TIMING, warmup: 10, budgetMs: 8000, maxRounds: 401 };
  const HISTORY_S = 60;  // the session's historySeconds, the default: kept full and dropping, as in bench/stream.mjs
  const prerollS = CHECK ? Math.ceil(L) + 2 : Math.max(Math.ceil(L), HISTORY_S) + 2;
  // An update's chunks span at most a 4-beat patch (RR <= 2 s in the simulator's AF) plus one:
  // 9 s a round at most, 1-2 s on average; generated with room, and the loop says if it runs out.
  const updates = CHECK ? 3 : timing.warmup + timing.maxRounds + 2;
  const feedS = prerollS + Math.min(9 * updates, 60 + 3 * updates);
  const feed = synthesize(feedS, beatModalities(cfg), { ...AF_CASE, seed: AF_CASE.seed + 1 });
  const rate = feed.ecg.rateHz, Pe = mE.patch_len, START = feed.ecg.startTime;
  // An event (an RR interval, a beat's points) is pushed with the second its beat falls in (the
  // beat stream's values are computed from the whole feed: here only the times of the pushes matter).
  const eventIndex = Object.fromEntries(EV.map((n) => [n, Int32Array.from(feed[n].timestamps, (t) => Math.round((t - START) * rate))]));
  let nE = 0;
  const nEv = Object.fromEntries(EV.map((n) => [n, 0]));  // samples and events pushed
  const evBound = (n, k) => (k % P[n] ? feed[n].timestamps[k - (k % P[n])] : k ? feed[n].timestamps[k - 1] : -Infinity);
  const frontierOf = (ne, counts) => Math.min(START + Math.floor(ne / Pe) * Pe / rate, ...EV1.map((n) => evBound(n, counts[n])));
  const chunkEnd = (s) => {  // (ECG samples, events per stream) once second s is pushed
    const ne = Math.min(feed.ecg.samples.length, (s + 1) * rate);
    const counts = {};
    for (const n of EV) {
      let k = nEv[n];
      while (k < eventIndex[n].length && eventIndex[n][k] < ne) k++;
      counts[n] = k;
    }
    return [ne, counts];
  };
  // tokens (ECG patch k, event patch j) with time in [a, b), times compared as the tokenizer writes them
  const ecgTime = (k) => START + k * Pe / rate;
  const firstAtOrAfter = (a) => {
    let k = Math.max(0, Math.floor((a - START) * rate / Pe) - 1);
    while (ecgTime(k) < a) k++;
    return k;
  };
  const ecgRange = (a, b) => [firstAtOrAfter(a), firstAtOrAfter(b)];
  const evFirstAtOrAfter = (n, a, complete) => {  // binary search over the complete patches
    let lo = 0, hi = complete;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (feed[n].timestamps[mid * P[n]] < a) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const evRange = (n, a, b, k) => [evFirstAtOrAfter(n, a, Math.floor(k / P[n])), evFirstAtOrAfter(n, b, Math.floor(k / P[n]))];
  const ranges = (a, b, counts) => ({ ecg: ecgRange(a, b), ...Object.fromEntries(EV.map((n) => [n, evRange(n, a, b, counts[n])])) });
  const newTokens = (f0, f1, counts) => ['ecg', ...EV1].reduce((acc, n) => { const [k0, k1] = ranges(f0, f1, counts)[n]; return acc + (k1 - k0); }, 0);
  let s = 0;
  const stream = model.stream({ referenceTime: START, historySeconds: HISTORY_S });
  const pushSecond = () => {
    if ((s + 1) * rate > feed.ecg.samples.length) throw new Error(`bench af: the synthetic feed (${feedS} s) ran out; make it longer`);
    const [ne, counts] = chunkEnd(s);
    const first = s === 0;
    const part = (n) => {
      const k0 = first ? 0 : nEv[n], k1 = counts[n];
      if (k1 === k0 && !first) return null;
      const p = { timestamps: feed[n].timestamps.subarray(k0, k1), samples: feed[n].samples.subarray(k0, k1) };
      return first ? { ...feed[n], ...p } : p;
    };
    const ecgPart = { samples: feed.ecg.samples.subarray(nE, ne) };
    const chunk = { streams: cfg.modalities.map((m) => (m.name === 'ecg' ? (first ? { ...feed.ecg, ...ecgPart } : ecgPart) : part(m.name))) };
    const u = stream.push(chunk);
    nE = ne, Object.assign(nEv, counts), s++;
    return u;
  };
  for (let k = 0; k < prerollS; k++) pushSecond();

  let current = null;  // the latest timed update: { f0, f1, nE, counts, update }
  const fillers = [], perUpdate = { tokens: [], ortTokens: [] };
  const finalizes = () => {
    const [ne, counts] = chunkEnd(s);
    return newTokens(frontierOf(nE, nEv), frontierOf(ne, counts), counts) > 0;
  };
  const prepare = () => {
    while (!finalizes()) {
      const t0 = performance.now();
      const u = pushSecond();
      fillers.push(performance.now() - t0);
      if (u.dims[0] !== 0) throw new Error(`bench af: a push predicted to make nothing final gave ${u.dims[0]} tokens`);
    }
  };
  const sfUpdate = () => {
    const f0 = frontierOf(nE, nEv);
    const update = pushSecond();
    current = { f0, f1: frontierOf(nE, nEv), nE, counts: { ...nEv }, update };
    return update;
  };
  // The ORT user's update: the new tokens [f0, f1) and everything they can see, as received.
  const ortUpdate = async () => {
    const { f0, f1, nE: ne, counts } = current;
    const fresh = ranges(f0, f1, counts);
    const tFirst = Math.min(ecgTime(fresh.ecg[0]), ...EV1.map((n) => (fresh[n][0] * P[n] < counts[n] ? feed[n].timestamps[fresh[n][0] * P[n]] : Infinity)));
    const from = tFirst - L - 1e-6;  // margin: an extra older token changes nothing (it is out of reach)
    const feeds = peerFeeds(ort, cfg, feed, ranges(from, f1, counts), START, { ecg: ne, ...counts });
    const out = await session.run(feeds);
    return { feeds, embeddings: out.embeddings.data, dims: out.embeddings.dims };
  };
  const asRows = (r) => ({ tokens: peerTokens(first, r.feeds), embeddings: r.embeddings, dims: r.dims });
  // Session update against ORT's rows, and (untimed checks) against a forward of everything received.
  const everything = () => ({
    referenceTime: START,
    streams: cfg.modalities.map((m) => (m.name === 'ecg' ? { ...feed.ecg, samples: feed.ecg.samples.subarray(0, nE) }
      : { ...feed[m.name], timestamps: feed[m.name].timestamps.subarray(0, nEv[m.name]), samples: feed[m.name].samples.subarray(0, nEv[m.name]) })),
  });
  const expectTokens = (u, { f0, f1, counts }) => {
    const n = newTokens(f0, f1, counts);
    if (u.dims[0] !== n || !u.tokens.time.every((t) => t >= f0 && t < f1))
      throw new Error(`bench af: the session's update has ${u.dims[0]} tokens, the frontier rule ${n} in [${f0}, ${f1})`);
  };
  let ortErrMax = 0, ortCompared = 0;
  const verified = { session: 0, ort: 0 };  // largest differences in the untimed checks
  const verify = async (when) => {
    prepare();
    const u = sfUpdate();
    expectTokens(u, current);
    verified.session = Math.max(verified.session, check(`af stream: session update (${u.dims[0]} tokens) vs forward of everything received (${when})`, compareRows(u, model.forward(everything(), { maxGflop: Infinity }))));
    verified.ort = Math.max(verified.ort, check(`af stream: ORT rows of the look-back window vs session update (${when})`, compareRows(u, asRows(await ortUpdate()))));
  };
  await verify('before timing');
  await verify('before timing, next update');
  log(`af stream: ${prerollS} s pre-roll, session memory ${(stream.memoryBytes / 2 ** 20).toFixed(2)} MiB`);
  if (!CHECK) {
    fillers.length = 0;
    let pending = null;  // the latest round's { sf, ort }, checked untimed before the next round
    const settle = () => {
      if (!pending) return;
      expectTokens(pending.sf.update, pending.sf);
      ortErrMax = Math.max(ortErrMax, compareRows(pending.sf.update, asRows(pending.ort)));
      ortCompared++;
      perUpdate.tokens.push(pending.sf.update.dims[0]);
      perUpdate.ortTokens.push(pending.ort.dims[0]);
      pending = null;
    };
    const { rounds, median: m } = await interleaved([
      { name: 'sf', prepare: () => { settle(); prepare(); }, run: () => { sfUpdate(); pending = { sf: current }; } },
      { name: 'ort', run: async () => { pending.ort = await ortUpdate(); } },
    ], timing);
    settle();
    check(`af stream: ORT rows vs session update, largest over ${ortCompared} timed updates`, ortErrMax);
    await verify('after timing');
    const newT = median(perUpdate.tokens), ortT = median(perUpdate.ortTokens);
    rows.push([`one streaming update, \`session.push\` of the 1 s chunk that makes tokens final: ${newT} new tokens (median; ${Math.min(...perUpdate.tokens)}-${Math.max(...perUpdate.tokens)})`, fmt.ms(m.sf), '–',
      `the graph on [first new token - ${L} s, frontier): ${ortT} tokens (median), the new tokens' rows taken`, fmt.ms(m.ort), '–', `**${fmt.ratio(m.ort / m.sf)}**`, rounds]);
  }
  stream.dispose();
  model.dispose();
  await session.release();
  // The notes are built under --check too (and dropped), so the checks run every line of this function.
  const notes = `Model: models/af.safetensors (sha256 ${sha.slice(0, 12)}; ${cfg.ensemble ? `${configs.length} models in one file, their class probabilities averaged (docs/model.md "Ensembles"; ${configs.map((c, k) => `member ${k} takes ${c.modalities.map((m) => m.name).join(', ')}`).join('; ')}), each ` : ''}d ${d}, ${cfg.n_heads} heads, ${cfg.n_layers} layers, ff ${cfg.dim_feedforward}, flattened, causal, look-back W = ${cfg.attention_lookback_s} s; ECG patches of ${Pe} at 300 Hz, ${EV.map((n) => `${n} events in patches of ${P[n]}`).join(", ")}); peer: bench/models/af.onnx, exported from the same file by \`npm run bench:models\` (weights as stored, F16 cast to float32 in the graph). Input: a synthetic single-lead ECG (web/src/simulator/physiology.js, seed ${AF_CASE.seed}, at rest, sinus rhythm then atrial fibrillation from ${AF_CASE.afFromS} s; mV at 300 Hz, the data set's rate) and its RR events from \`rrFromEcg\`${EV.some(isBeatModality) ? ' and beat events from \`beatsFromEcg\` on each beat modality\'s grid' : ''}; the 30 s recording is the committed case (bench/models/af_case_*), the streaming feed the same physiology with seed ${AF_CASE.seed + 1}. onnxruntime-web's inputs are computed in JS inside its timed call (patches normalised, presence flags, token times; as sensorformer's forward and push tokenize inside theirs). The graph attends with a dense (T, T) mask, what a torch user would export; sensorformer computes only each query's keys in [t - W, t]. GFLOP/s uses one nominal count for both (projections and feed-forward per token, Q.K^T and P.V over the pairs in reach), not the dense graph's work. Streaming: a session fed 1 s chunks (300 samples and the ${EV.join(' and ')} events in them) after ${prerollS} s (key caches full and evicting, the ${HISTORY_S} s pooling history full and dropping); the RR stream's incomplete 4-beat patch holds the frontier, so tokens become final in bursts (when a patch's 4th beat arrives, and when the next patch's first does). Each round times the push of the next chunk that makes tokens final; the chunks before it make nothing final and are pushed untimed (${fillers.length} of them in the timed rounds, median ${fmt.ms(median(fillers))} ms a push). onnxruntime-web, without a session, runs the graph over the tokens the new ones can see, [first new token - n_layers x W, frontier), the new tokens' rows being exact there (a token depends only on tokens at most n_layers x W = ${L} s older). Output checks (max |diff| / max(1, max |ref|), tolerance 1e-4: float32 sums of at most 128 terms over 4 layers land near 1e-6, a weight, mask or time mix-up is off by O(0.1-1)): the 30 s case against float64 torch (the reference module on the same file), embeddings and head logits: sensorformer ${fmt.err(errSf)}, onnxruntime-web ${fmt.err(errOrt)}; onnxruntime-web's rows against the session's new tokens, on every timed update: ${fmt.err(ortErrMax)} (untimed checks before and after: ${fmt.err(verified.ort)}); the session's new tokens against a forward of everything received, before and after timing: ${fmt.err(verified.session)}. Load average at the end: ${os.loadavg()[0].toFixed(1)} (1 min) on ${os.availableParallelism()} cores.`;
  if (CHECK) return { markdown: null };
  return {
    markdown: table(['workload', 'sensorformer ms', 'GFLOP/s', 'onnxruntime-web runs', 'onnxruntime-web ms', 'GFLOP/s', 'ORT / sf', 'rounds'], rows) + `\n\n${notes}`,
  };
}

// --- CLI: the committed case ------------------------------------------------------------------------
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--write-case');
  if (at < 0 || !process.argv[at + 1]) {
    console.error('usage: node bench/af.mjs --write-case DIR');
    process.exit(2);
  }
  const dir = process.argv[at + 1];
  mkdirSync(dir, { recursive: true });
  // the event streams the model in models/af.safetensors takes: RR and one per beat modality
  const model = await loadModel(AF_WEIGHTS, { numThreads: 1, warmup: false });
  const grids = beatModalities(model.config);
  model.dispose();
  const feed = synthesize(AF_CASE.seconds, grids);
  for (const f of readdirSync(dir)) if (/^af_case_.*\.json$/.test(f)) rmSync(path.join(dir, f));  // another model's streams
  writeFileSync(path.join(dir, 'af_case_ecg.f32'), new Uint8Array(feed.ecg.samples.buffer));
  // NaN (a missing value) as null
  const events = (x) => JSON.stringify({ timestamps: [...x.timestamps], samples: Array.from(x.samples, (v) => (Number.isNaN(v) ? null : v)) }) + '\n';
  for (const name of ['rr', ...grids.map((g) => g.modality)]) writeFileSync(path.join(dir, `af_case_${name}.json`), events(feed[name]));
  console.log(JSON.stringify({ ...AF_CASE, ecgSamples: feed.ecg.samples.length, rrEvents: feed.rr.timestamps.length, beats: feed.detected.times.length }));
}
