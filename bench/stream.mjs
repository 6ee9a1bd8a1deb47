// Streaming sessions (issue 12): what one update of a session costs against what a page without
// sessions would do on each update (recompute a window), and what a session holds in memory.
//
//   node bench/peers.mjs --only=stream [--quick]      (a part of `npm run bench`)
//   node bench/peers.mjs --check                      (includes this part's output checks, no timing)
//
// Models (bench/make_peer_models.py): stream_encoder.safetensors = the encoder part's weights
// (2 layers, d 64, 4 heads, ff 256) with "causal": true and "attention_lookback_s": W = 10.235 s,
// flattened layout; stream_encoder_time.safetensors = the same in the time layout (a group per
// stream); stream_demo.safetensors = the demo model's weights (d 32, factorized) with W = 127.9375 s.
// Streams: regular, all starting together, one new patch per stream per update (SETUPS below). The
// "context" of a row (the keys each new token attends to, per layer and time block) is counted from
// the window's token times, not assumed.
//
// Per row, in one process and in interleaved rounds (bench/lib.mjs `interleaved`, medians):
//   session:         session.push(one new patch per stream) in steady state (the session has run
//                    past B x W, B = the attention blocks a token passes through, so every key
//                    cache is full and evicting, and past historySeconds, so the pooling history is
//                    full and dropping);
//   recompute W:     model.forward(the last W seconds + the new patches) — what a page without
//                    sessions would run each update (the comparison; its rows are NOT the
//                    session's: it cuts the receptive field, B x W, at W);
//   recompute exact: model.forward(the last B x W seconds + 2 patches + the new patches), the
//                    smallest window whose last rows ARE the session's (docs/model.md "Look-back":
//                    a token depends on tokens at most B x W older).
// Before timing, and again after it, the session's new tokens are checked (no timing) against the
// rows of a full forward of everything received (same referenceTime), as docs/model.md
// "Streaming" promises, and against the exact recompute's last rows.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../web/src/index.js';
import { loadOptions, loadWasm } from '../web/src/loader.js';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fmt, interleaved, median, normals, relError, table } from './lib.mjs';

const MODELS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'models');
const ACC4 = Array.from({ length: 4 }, () => ({ sensor: 0, modality: 'acc', placement: 'wrist' }));
const ACC_XYZ = ['acc_x', 'acc_y', 'acc_z'].map((modality) => ({ sensor: 1, modality, placement: 'wrist' }));
// The rows. d 64 (the encoder's weights), W 10.235 s: flattened = one group, context = every
// stream's tokens in W (1024 at 200 Hz, 4096 at 800 Hz); time = a group per stream, context = one
// stream's (1024 at 800 Hz, the caches holding 4096 tokens as in the flattened 800 Hz row).
// Demo-size (demo/model/demo.safetensors' weights, d 32, factorized), W 127.9375 s: the demo's
// accelerometer axes at 200 Hz (patch 25: 8 a second), 1024 tokens per stream in W (time block).
const SETUPS = [
  { label: 'd 64', layout: 'flattened', file: 'stream_encoder.safetensors', rateHz: 200, streams: ACC4 },
  { label: 'd 64', layout: 'flattened', file: 'stream_encoder.safetensors', rateHz: 800, streams: ACC4 },
  { label: 'd 64', layout: 'time', file: 'stream_encoder_time.safetensors', rateHz: 800, streams: ACC4 },
  { label: 'demo d 32', layout: 'factorized', file: 'stream_demo.safetensors', rateHz: 200, streams: ACC_XYZ },
];
const START = 1000;  // seconds; the session's referenceTime (its first chunk's startTime)
// The core's cost estimate for forward() (src/model/model.cpp forward_gflop) counts every pair of a
// group, not the look-back's band, so the exact recompute at 4096 (8204 tokens, ~36 "GFLOP", about
// 2 x 4 x 8204 x 4096 x 64 x 2 = 34 real) and the full-history check pass the default 10 GFLOP
// limit; a page recomputing these windows would have to raise it too.
const FORWARD = { maxGflop: Infinity };
const HISTORY_S = 60;  // the sessions' historySeconds: the default
const CONSECUTIVE = 41;  // back-to-back pushes timed after the interleaved rounds
const MiB = (b) => (b / 2 ** 20).toFixed(2);

// --- the session adapter ---------------------------------------------------------------------------
// The public API (web/src/stream.js). The bench first ran against the embind StreamSession behind
// this one function, before model.stream() was in main; it is the one place to change if a run
// must drive another session implementation (same update shape: tokens, embeddings, dims).
function openSession(model, options) {
  return model.stream(options);
}

/** wasm heap in use (mallinfo's uordblks), or null when the module exposes none. */
async function heapUsed() {
  const wasm = await loadWasm(loadOptions({}, 'core'));
  return typeof wasm.heapUsed === 'function' ? wasm.heapUsed() : null;
}

// --- workload ----------------------------------------------------------------------------------------
/**
 * Samples of regular streams (`streams`: their sensor, modality and placement) at `rateHz`,
 * `seconds` long (seeded normals), and the chunks and windows cut from them. Stream s's sample i is at START + i / rateHz (the tokenizer's times).
 */
export function makeFeed({ rateHz, seconds, seed, patchLen, streams = ACC4 }) {
  const n = Math.ceil(seconds * rateHz / patchLen) * patchLen;
  const data = streams.map((_, s) => normals(n, seed + 31 * s));
  let pushed = 0;  // samples per stream given to the session so far
  const descriptors = streams.map((d) => ({ ...d, rateHz, startTime: START }));
  return {
    data,
    get pushed() { return pushed; },
    /** The next `count` samples of every stream as one chunk (the first carries the descriptors). */
    next(count) {
      if (pushed + count > n) throw new Error(`bench: the feed has ${n - pushed} samples left, ${count} asked (make it longer)`);
      const chunk = { streams: data.map((x, s) => ({ ...(pushed === 0 ? descriptors[s] : {}), timestamps: null, samples: x.subarray(pushed, pushed + count), present: null })) };
      pushed += count;
      return chunk;
    },
    /** The window of the last `count` samples received per stream (all if count >= pushed). */
    window(count) {
      const from = Math.max(0, pushed - count);
      return {
        referenceTime: START,
        streams: data.map((x, s) => ({ ...descriptors[s], startTime: START + from / rateHz, samples: x.subarray(from, pushed) })),
      };
    },
  };
}

/**
 * Largest relative difference (bench/lib.mjs relError) between each token of `update` and the row
 * of the same stream and time in `result` (a forward's output); throws if a token has no row.
 * Times match within 1 us, not exactly: a window starting later writes a token's time as
 * (start + from / rate) + kP / rate, the session as start + (from + kP) / rate (float64 rounding).
 */
export function compareRows(update, result, tolS = 1e-6) {
  const [m, d] = update.dims;
  let err = 0;
  for (let k = 0; k < m; k++) {
    const s = update.tokens.stream[k], t = update.tokens.time[k];
    let row = -1;
    for (let j = result.tokens.time.length - 1; j >= 0 && row < 0; j--)
      if (result.tokens.stream[j] === s && Math.abs(result.tokens.time[j] - t) < tolS) row = j;
    if (row < 0) throw new Error(`bench stream: the session's token (stream ${s}, time ${t}) has no row in the recompute`);
    err = Math.max(err, relError(update.embeddings.subarray(k * d, (k + 1) * d), result.embeddings.subarray(row * d, (row + 1) * d)));
  }
  return err;
}

/** Keys a query at time `t` attends to among `times` (its group's tokens): those with time in
 * [t - W, t] (docs/model.md "Look-back", the difference in float64 as the core takes it). */
export function contextSize(times, t, W) {
  let n = 0;
  for (const u of times) if (u <= t && !(t - u > W)) n++;
  return n;
}

// --- the part ----------------------------------------------------------------------------------------
/**
 * Runs the streaming part. check(what, err) records an output check and throws past the bench's
 * tolerance; goal(what, value, ok) records a goal row. CHECK: the output checks at the small size
 * only, no timing. Returns the markdown (null under CHECK).
 */
export async function runStream({ CHECK, QUICK, TIMING, check, goal, log }) {
  const models = new Map();  // file -> Model (the public API's, for the recomputes)
  const modelOf = async (file) => {
    if (!models.has(file)) models.set(file, await loadModel(path.join(MODELS, file), { numThreads: 1 }));
    return models.get(file);
  };
  const rows = [], memRows = [];
  // A push is ~1000x cheaper than the recomputes it alternates with, and on a loaded machine some
  // rounds' pushes land on a preemption (measured: 6-30 ms spikes against 1.2-2.6 ms): more rounds
  // than the bench's default minimum so the median is the push's (a round at 4096 tokens takes
  // ~2.5 s, so the ~12 s budget alone would give 5).
  const timing = { warmup: 2, maxRounds: 41, ...TIMING, minRounds: Math.max(TIMING.minRounds ?? 5, QUICK ? 7 : 21) };
  // --check: the smallest flattened row and the time layout's row (a few seconds together)
  const setups = CHECK ? [SETUPS[0], SETUPS[2]] : SETUPS;
  const nameOf = ({ label, layout, rateHz, streams }) => `${label}, ${streams.length} x ${rateHz} Hz, ${layout}`;
  for (const setup of setups) {
    const { layout, file, rateHz, streams } = setup, S = streams.length, name = nameOf(setup);
    const model = await modelOf(file);
    const cfg = model.config, d = cfg.d_model, W = cfg.attention_lookback_s;
    const P = cfg.modalities[cfg.modalities.findIndex((m) => m.name === streams[0].modality)].patch_len;
    if (!cfg.causal || !(W > 0) || cfg.layout !== layout) throw new Error(`bench/models/${file}: not a causal ${layout} look-back model; run \`npm run bench:models\``);
    if (streams.some((st) => cfg.modalities.find((m) => m.name === st.modality).patch_len !== P)) throw new Error(`bench stream: ${name}: the streams' patches differ in length`);
    const blocks = layout === 'factorized' ? 2 : 1;  // attention blocks per layer
    const B = cfg.n_layers * blocks;  // a token depends on tokens at most B x W older (docs/model.md)
    // the last W seconds rounded up to whole patches, so windows stay patch-aligned
    const wSamples = Math.ceil((W * rateHz) / P) * P;
    const exactSamples = B * wSamples + 2 * P;
    // Pre-roll in 1 s chunks past B x W (caches full, the exact window inside what was received) and
    // past historySeconds (the pooling history full, so each push also drops its oldest entries,
    // which costs: 1.2 ms a push at 4 x 800 Hz after 22 s, 5.7 ms after 70 s, measured), then
    // single-patch pushes: the checks', the warm-up's, the timed ones and the back-to-back ones.
    // (--check needs neither timing nor a full history: past 2 W, every cache evicts, is enough.)
    const prerollS = CHECK ? Math.ceil(B * W) + 2 : Math.max(Math.ceil(B * W), HISTORY_S) + 2;
    const singles = 2 + timing.warmup + timing.maxRounds + CONSECUTIVE + 2;
    const feed = makeFeed({ rateHz, seconds: prerollS + (singles * P) / rateHz, seed: rateHz, patchLen: P, streams });
    const session = openSession(model, { referenceTime: START, historySeconds: HISTORY_S });
    for (let s = 0; s < prerollS; s++) session.push(feed.next(rateHz));

    const pushOne = () => session.push(feed.next(P));
    const recomputeW = () => model.forward(feed.window(wSamples + P), FORWARD);
    const recomputeExact = () => model.forward(feed.window(exactSamples + P), FORWARD);
    const verify = (when) => {
      const u = pushOne();
      if (u.dims[0] !== S || !u.tokens.present.every((p) => p === 1))
        throw new Error(`bench stream: ${name}: a push of one patch per stream gave ${u.dims[0]} final tokens (want ${S}, all present)`);
      // the new patches are the last samples the session received: the recompute windows end there
      check(`stream ${name}: session update vs forward of everything received (${when})`, compareRows(u, model.forward(feed.window(feed.pushed), FORWARD)));
      check(`stream ${name}: session update vs exact recompute's last rows (${when})`, compareRows(u, recomputeExact()));
      return u;
    };
    const first = verify('before timing');
    const wResult = recomputeW();
    const tq = first.tokens.time[0], sq = first.tokens.stream[0];
    const groupTimes = layout === 'flattened' ? wResult.tokens.time : wResult.tokens.time.filter((_, k) => wResult.tokens.stream[k] === sq);
    const context = contextSize(groupTimes, tq, W);
    const cached = contextSize(wResult.tokens.time, tq, W);  // tokens in [t - W, t] over all groups
    // Informational: how far the W-window recompute is from the session (cut receptive field).
    const wErr = compareRows(first, wResult);
    const memSteady = session.memoryBytes;
    log(`stream ${name}: context ${context} tokens, memory ${MiB(memSteady)} MiB`);

    // memory formula: K and V (float32) per layer and block for the tokens in W, plus the pooling
    // history (float32 embedding + a (time, present) entry per token of historySeconds)
    const kvFormula = 2 * 4 * d * cfg.n_layers * blocks * cached;
    const tokensInHistory = Math.min(HISTORY_S, feed.pushed / rateHz) * (rateHz / P) * S;
    const historyFormula = tokensInHistory * (4 * d + 16);
    memRows.push([name, context, cached, MiB(kvFormula), `${MiB(historyFormula)} (${Math.round(tokensInHistory)} tokens)`, MiB(kvFormula + historyFormula), MiB(memSteady), fmt.ratio(memSteady / (kvFormula + historyFormula))]);

    if (!CHECK) {
      const { rounds, median: m } = await interleaved([
        { name: 'push', run: pushOne },
        { name: 'w', run: recomputeW },
        { name: 'exact', run: recomputeExact },
      ], timing);
      // The session alone: pushes back to back, nothing in between (a page doing only this).
      const alone = [];
      for (let k = 0; k < CONSECUTIVE; k++) {
        const t0 = performance.now();
        pushOne();
        alone.push(performance.now() - t0);
      }
      verify('after timing');
      const target = context <= 2048 ? 20 : 80;
      goal(`stream ${name}, context ${context}: recompute W / session push >= ${target}`, fmt.ratio(m.w / m.push), m.w / m.push >= target);
      rows.push([name, W, B, context, fmt.ms(m.push), fmt.ms(median(alone)), fmt.ms(m.w), fmt.ms(m.exact), `**${fmt.ratio(m.w / m.push)}**`, `**${fmt.ratio(m.exact / m.push)}**`, fmt.ratio(m.w / median(alone)), fmt.err(wErr), rounds]);
    }
    session.dispose();
  }
  const loadavg = os.loadavg()[0].toFixed(1);

  // Ten minutes of simulated pushes (1 s chunks): the wasm heap and memoryBytes at each minute's end.
  const heapRows = [];
  for (const setup of CHECK ? [] : QUICK ? setups.slice(0, 1) : setups) {
    const { file, rateHz, streams } = setup, S = streams.length, name = nameOf(setup);
    const model = await modelOf(file), d = model.config.d_model;
    const P = model.config.modalities.find((m) => m.name === streams[0].modality).patch_len;
    const session = openSession(model, { referenceTime: START, historySeconds: HISTORY_S });
    const perMinute = [];
    const chunk = (s) => ({ streams: streams.map((desc, k) => ({
      ...(s === 0 ? { ...desc, rateHz, startTime: START } : {}),
      timestamps: null, samples: normals(rateHz, 7919 * s + k), present: null })) });
    for (let s = 0; s < 600; s++) {
      session.push(chunk(s));
      if ((s + 1) % 60 === 0) perMinute.push({ heap: await heapUsed(), session: session.memoryBytes });
    }
    session.dispose();
    log(`stream ${name}: 10 minutes simulated`);
    // Flat: from minute m0 to minute 10 the heap grows by less than one pushed second's data (its
    // samples and their embeddings, float32): anything kept per push would grow it by at least
    // that every second, hundreds of times over. m0: the end of the first minute after which
    // nothing is still filling up. A key cache and the pooling history both drop their front by an
    // offset and compact once the dropped rows outnumber the kept ones, so their storage peaks at
    // twice their span: after 2 W and 2 historySeconds.
    const W = model.config.attention_lookback_s;
    const m0 = Math.max(1, Math.ceil((2 * Math.max(W, HISTORY_S)) / 60));
    const perSecond = S * rateHz * 4 + S * (rateHz / P) * d * 4;
    const heaps = perMinute.map((p) => p.heap);
    const growth = Math.max(...heaps.slice(m0 - 1)) - heaps[m0 - 1];
    const flat = growth < perSecond;
    goal(`stream ${name}: wasm heap flat over 10 simulated minutes (growth after minute ${m0} < one second's data, ${perSecond} B)`, `+${growth} B`, flat);
    heapRows.push([name, ...perMinute.map((p) => `${MiB(p.heap)} / ${MiB(p.session)}`), `${growth} B after minute ${m0}`, flat ? 'yes' : '**no**']);
  }
  for (const m of models.values()) m.dispose();
  if (CHECK) return null;

  const notes = `Models: bench/models/stream_encoder.safetensors and stream_encoder_time.safetensors (d 64: the encoder part's weights; flattened layout = one group, time layout = a group per stream) and stream_demo.safetensors (d 32: the demo model's weights, factorized: a time block per stream and a channel block per time bin), each with "causal": true and its attention_lookback_s W (the table). Regular streams starting together, one new patch per stream per update (one final token per stream and push). Context = the keys of a new token per layer in its (time) block: its group's tokens in [t - W, t], counted from the tokens' times. B = the attention blocks a token's output passes through (n_layers, or 2 n_layers in the factorized layout): it depends on tokens at most B x W older. "recompute W" = \`model.forward\` on the last W s + the new patch, what a page without sessions runs each update; its rows are not the session's (the "W-window error" column: it cuts the B x W receptive field at W). "recompute exact" = the last B x W s + 3 patches, whose last rows equal the session's. Steady state: every session first ran max(B x W, historySeconds ${HISTORY_S}) + 2 s (1 s chunks): key caches full and evicting, pooling history full and dropping. "session push" is timed in the interleaved rounds, so it pays for the cold caches and garbage collections the recomputes leave behind (the goals use it); "back to back" is the median of ${CONSECUTIVE} pushes in a row after the rounds, the session alone. Load average at the end of the timed rows: ${loadavg} (1 min) on ${os.availableParallelism()} cores. Every row's session update was checked, before and after timing, against a full forward of everything received (same referenceTime) and against the exact recompute's last rows (tolerance 1e-4), and all forwards ran with \`maxGflop: Infinity\` (the default 10 GFLOP guard, which counts each query's keys in its look-back band, refuses the exact recompute at 800 Hz: 8204 tokens with up to 4096 keys each).`;
  return table(['model, streams, layout', 'W s', 'B', 'context (keys / token / layer)', 'session push ms', 'push ms, back to back', 'recompute W ms', 'recompute exact ms', 'recompute W / push', 'exact / push', 'recompute W / back-to-back push', 'W-window error', 'rounds'], rows)
    + `\n\n${notes}\n\n`
    + `Memory per session in steady state (\`memoryBytes\` after the pre-roll and the checks) against 2 (K, V) x 4 bytes x d_model x layers x blocks x the tokens the caches hold (in [t - W, t] over every group), plus the pooling history (historySeconds ${HISTORY_S}, the default, full; 4 x d_model + 16 bytes a token). MiB:\n\n`
    + table(['model, streams, layout', 'context', 'tokens in W (all groups)', 'K/V formula', 'history formula', 'formula total', 'memoryBytes', 'measured / formula'], memRows)
    + '\n\nTen simulated minutes (600 pushes of 1 s of every stream, a fresh session): wasm heap in use (`heapUsed`, mallinfo\'s uordblks) / the session\'s `memoryBytes` at the end of each minute, MiB, and the heap\'s growth after the minute m0 by which the key caches and the pooling history have reached their largest size (2 W and 2 historySeconds: each compacts once its dropped rows outnumber the kept ones):\n\n'
    + table(['model, streams, layout', ...Array.from({ length: 10 }, (_, i) => `min ${i + 1}`), 'growth', 'flat'], heapRows);
}
