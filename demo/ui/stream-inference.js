// The stream mode's inference (issue 12): the stream model (causal, with attention_lookback_s) runs
// in a Web Worker as a streaming session (docs/model.md "Streaming sessions"). The device layer's
// samples become session chunks as notifications arrive (SessionFeeder of sensorformer/ble, web/src/ble/feeder.js:
// the fixed grid, the watermarks, the gaps of a disconnect) and are pushed at once, not once a
// second; a push that makes tokens final is followed by session.pooled({ seconds }), whose label
// and probabilities are the prediction. This is the only module of the page that knows the
// session's API (sibling of inference.js, which runs the windowed model). The page runs two: the
// stream model over every stream (with attention rows), and the AF model over the strap's ECG and
// RR (ui/rhythm.js: its own stream specs and units, no attention rows); tools/af/simulated_accuracy.mjs
// runs the second in Node on the simulator's virtual clock (`now`).
//
// Measured here, medians over the last STATS_WINDOW updates:
// - update cost: a push's round trip main thread -> Worker -> main thread (the Worker's push plus
//   two messages: what the page waits for, so an upper bound of the Worker's own time; the pushes
//   of one flush are sent together, and each after the first counts from its predecessor's answer);
// - latency: the first notification of a flush arriving at the device layer -> the prediction it
//   led to written to the page (feeder, pushes, pooled(), the panels' DOM updates).
import { loadModelInWorker } from '../../web/src/index.js';
import { SessionFeeder } from '../../web/src/ble/index.js';
import { hostNow } from './dom.js';
import { ALL_STREAMS } from './streams.js';

export const STATS_WINDOW = 50;
// Tokens kept for naming the keys of attention rows (their stream and patch span): a key is at
// most attention_lookback_s before its query, so this is plenty.
const TOKEN_MEMORY_SECONDS = 30;
// A session that failed (a chunk refused) is replaced by a fresh one, at most this often (ms).
const RESTART_DELAY_MS = 2000;

const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function pushBounded(list, value, n = STATS_WINDOW) {
  list.push(value);
  if (list.length > n) list.shift();
}

/**
 * Events: 'loaded' ({ config, threads }), 'result' ({ prediction, update, lookback, frontier, referenceTime,
 * source, stats, feed, ... }), 'error' ({ error, phase: 'load' | 'stream', restarting: a new
 * session follows }), 'log' ({ kind, text }).
 * prediction: pooled()'s result (pooled, head, probabilities, label, presentTokens, from, to).
 * lookback: the newest final token's attention over its look-back (see #lookback), or null.
 */
export class StreamInference extends EventTarget {
  #model = null;
  #run = null;
  #costs = [];
  #latencies = [];
  #parts = { feed: [], worker: [], page: [] };  // the latency's parts (see #update)
  #completions = [];
  #restartTimer = null;
  #calls = 0;

  /**
   * streams: the feeder's stream specs by device-layer id (default every stream of the page); a
   * stream the model does not know is left out by the feeder (its config); a spec's `scale` is the
   * unit factor the feeder applies (the H10's ECG is in µV, a model may want mV). attention: the
   * session's attention rows (the look-back strip). now:
   * the host clock in seconds that the device layer stamps samples with (the simulator's virtual
   * clock in Node).
   */
  constructor({ modelUrl, seconds = 10, historySeconds = 60, record = false, streams = ALL_STREAMS, attention = true, now = hostNow }) {
    super();
    this.modelUrl = modelUrl;
    this.seconds = seconds;
    this.historySeconds = historySeconds;
    this.record = record;
    this.streams = streams;
    this.attention = attention;
    this.now = now;
    this.paused = false;
    this.updates = 0;
    this.config = null;
  }

  /** Loads the model and opens a trial session (the core refuses a model that is not causal). */
  async load() {
    try {
      this.#model = await loadModelInWorker(this.modelUrl);
      const trial = await this.#model.stream({});
      await trial.dispose();
    } catch (error) {
      this.#model?.dispose();
      this.#model = null;
      this.dispatchEvent(new CustomEvent('error', { detail: { error, phase: 'load' } }));
      return null;
    }
    this.config = this.#model.config;
    this.dispatchEvent(new CustomEvent('loaded', { detail: { config: this.config, threads: this.#model.threads } }));
    return this.config;
  }

  get loaded() {
    return this.#model !== null;
  }

  get running() {
    return this.#run !== null;
  }

  get stats() {
    const now = performance.now();
    const recent = this.#completions.filter((t) => now - t < 10_000);
    const rate = recent.length >= 2 ? (recent.length - 1) / ((recent[recent.length - 1] - recent[0]) / 1000) : NaN;
    return {
      updates: this.updates, latencyMs: median(this.#latencies), costMs: median(this.#costs), rateHz: rate,
      parts: { feedMs: median(this.#parts.feed), workerMs: median(this.#parts.worker), pageMs: median(this.#parts.page) },
      samples: { latency: this.#latencies.length, cost: this.#costs.length },
    };
  }

  /** What was recorded (with `record`): the chunks pushed, in order, and each prediction. */
  get recording() {
    return this.#run?.record ?? null;
  }

  /**
   * Feeds a new session from `source` (ui/source.js Session): every device's samples and gap marks
   * from now on. A running session is ended first (a session has one fixed reference time and
   * cannot skip the time it was not fed).
   */
  async start(source) {
    const call = ++this.#calls;  // a later start() or stop() makes this one give way
    await this.#end();
    if (call !== this.#calls || !this.#model || !source || source.closed) return;
    const run = {
      source, closed: false, failed: null, session: null, detach: null,
      feeder: new SessionFeeder({ config: this.config, streams: this.streams }),
      queue: Promise.resolve(), arrival: null, scheduled: false,
      tokens: new Map(), lookback: null, finalTokens: 0, absentTokens: 0, pushes: 0,
      // received: id -> every value the sink was given, in arrival order (what the chunks must hold)
      record: this.record ? { chunks: [], predictions: [], streamIds: [], received: {} } : null,
    };
    this.#run = run;
    try {
      run.session = await this.#model.stream({ attention: this.attention, historySeconds: this.historySeconds });
    } catch (error) {
      if (this.#run !== run) return;  // ended meanwhile: nothing to say
      this.#run = null;
      this.dispatchEvent(new CustomEvent('error', { detail: { error, phase: 'stream' } }));
      return;
    }
    if (run.closed || call !== this.#calls) {
      run.session.dispose();
      if (this.#run === run) this.#run = null;
      return;
    }
    // Inert once the run ends: a device that was connecting then may still hold the sink.
    const sink = {
      push: (id, times, values, spec, deviceTimes) => {
        if (run.closed || run.failed) return;
        run.feeder.push(id, times, values, spec, deviceTimes);
        if (run.record) (run.record.received[id] ??= []).push(...Array.from(values, (v) => v ?? NaN));
        this.#arrived(run);
      },
      markGap: (t0, t1, ids) => {
        if (run.closed || run.failed) return;
        const known = run.feeder.ids;
        const mine = (ids ?? known).filter((id) => known.includes(id));
        if (!mine.length) return;
        run.feeder.markGap(t0, t1, mine);
        this.#arrived(run);
      },
      // A recording delivered its last sample: what the feeder holds for late samples is given
      // now, so the card's last prediction covers the recording to its end.
      end: () => {
        if (run.closed || run.failed) return;
        run.arrival ??= performance.now();
        this.#flush(run, true);
      },
    };
    run.detach = source.addSink(sink);
  }

  /** Ends the running session (its pushes in flight finish first). */
  async stop() {
    ++this.#calls;
    await this.#end();
  }

  async #end() {
    clearTimeout(this.#restartTimer);
    const run = this.#run;
    if (!run) return;
    this.#run = null;
    run.closed = true;
    run.detach?.();
    await run.queue.catch(() => {});
    await run.session?.dispose();
  }

  /**
   * Resolves once every push and pooled() sent so far has been answered and its 'result' sent
   * (a Node script on a virtual clock waits for the Worker before it reads the results).
   */
  async drain() {
    const run = this.#run;
    if (!run) return;
    let queue;
    do {
      queue = run.queue;
      await queue.catch(() => {});
    } while (queue !== run.queue);
  }

  /** The feeder's accounting per stream id (received = given + pending + beforeFrontier). */
  get feed() {
    return this.#run ? this.#run.feeder.stats : null;
  }

  // A notification's samples (or a gap mark) reached the feeder: flush at the end of this task,
  // so every characteristic of one notification goes into the same chunks.
  #arrived(run) {
    if (run.arrival === null) run.arrival = performance.now();
    if (run.scheduled) return;
    run.scheduled = true;
    queueMicrotask(() => {
      run.scheduled = false;
      this.#flush(run);
    });
  }

  #flush(run, final = false) {
    if (run.closed || run.failed) return;
    const arrival = run.arrival;
    run.arrival = null;
    let chunks;
    try {
      chunks = run.feeder.flush({ now: this.now(), final });
    } catch (error) {
      this.#fail(run, error);
      return;
    }
    if (!chunks.length) return;
    // Recorded as the feeder gives them, not when the queue reaches them: the recording and the
    // feeder's accounting then agree at any moment (a chunk waiting behind an update is in both).
    if (run.record) for (const chunk of chunks) run.record.chunks.push(structuredClone(chunk));
    run.queue = run.queue.then(() => this.#update(run, chunks, arrival)).catch((error) => this.#fail(run, error));
  }

  async #update(run, chunks, arrival) {
    if (run.closed || run.failed) return;
    // Every push of the flush and the pooled() after them are sent at once: the Worker answers
    // in order, so pooled() sees every chunk, and the page waits for one round trip, not one per
    // call. pooled() after a push that made nothing final is a cheap call whose answer is unused.
    const sent = performance.now();
    const pushes = chunks.map((chunk) => run.session.push(chunk));
    for (const p of pushes) p.catch(() => {});  // the first refusal is thrown below; the rest are moot
    const pooled = this.paused ? null : run.session.pooled({ seconds: this.seconds });
    pooled?.catch(() => {});  // a refused push rejects first (and is handled); pooled's own error then means nothing
    const made = [];
    let previous = sent;
    for (const pending of pushes) {
      const update = await pending;
      // One push's cost: from its answer's predecessor (or the send) to its answer, so a flush of
      // several chunks does not count the earlier pushes again.
      const now = performance.now();
      pushBounded(this.#costs, now - previous);
      previous = now;
      run.pushes++;
      if (run.closed) return;
      if (update.dims[0] > 0) {
        made.push(update);
        this.#remember(run, update);
      }
    }
    if (run.record) run.record.streamIds = run.feeder.streamIds;
    if (!made.length || !pooled) return;
    const last = made[made.length - 1];
    run.lookback = this.#lookback(run, last) ?? run.lookback;
    const answered = performance.now();
    const prediction = await pooled;
    if (run.closed) return;
    const pooledAt = performance.now();
    this.updates++;
    pushBounded(this.#completions, performance.now(), 30);
    const detail = {
      prediction, update: last, updates: made, lookback: run.lookback, frontier: last.frontier, referenceTime: last.referenceTime,
      finalTokens: run.finalTokens, absentTokens: run.absentTokens, memoryBytes: run.session.memoryBytes,
      source: run.source, stats: this.stats, feed: run.feeder.stats, streamIds: run.feeder.streamIds,
    };
    if (run.record) {
      // The simulator's activity at both ends of the pooled seconds (null for a real wearable).
      const truth = run.source.sim?.truth;
      run.record.predictions.push({
        chunks: run.pushes, frontier: last.frontier, referenceTime: last.referenceTime, ...prediction,
        truth: truth ? [truth.activityAt(prediction.from), truth.activityAt(prediction.to)] : null,
      });
    }
    this.dispatchEvent(new CustomEvent('result', { detail }));
    // After the panels wrote the prediction: the latency includes the page's own work.
    const shown = performance.now();
    if (arrival !== null) {
      pushBounded(this.#latencies, shown - arrival);
      pushBounded(this.#parts.feed, sent - arrival);
      pushBounded(this.#parts.worker, pooledAt - sent);
      pushBounded(this.#parts.page, shown - pooledAt);
    }
    // Where the latency goes (ms): the feeder (arrival -> chunks sent), the pushes' answers, the
    // pooled() answer, the panels.
    if (run.record && arrival !== null) {
      run.record.predictions[run.record.predictions.length - 1].timing = { feed: sent - arrival, pushes: answered - sent, pooled: pooledAt - answered, page: shown - pooledAt, chunks: chunks.length };
    }
  }

  #fail(run, error) {
    if (run.failed || run.closed) return;
    run.failed = error;
    this.dispatchEvent(new CustomEvent('error', { detail: { error, phase: 'stream', restarting: true } }));
    // The feeder already moved past the refused chunk: the session and it no longer agree, so
    // both are replaced (the new session's reference time is its first sample's).
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      if (this.#run !== run) return;
      this.dispatchEvent(new CustomEvent('log', { detail: { kind: 'model', text: 'a new stream session after the error' } }));
      this.start(run.source);
    }, RESTART_DELAY_MS);
  }

  // Keeps the new final tokens (session index -> stream id, time, present) for naming keys.
  #remember(run, update) {
    const { tokens } = update;
    const ids = run.feeder.streamIds;
    for (let i = 0; i < tokens.time.length; i++) {
      run.tokens.set(tokens.index[i], { id: ids[tokens.stream[i]], stream: tokens.stream[i], modality: tokens.modality[i], time: tokens.time[i], present: tokens.present[i] === 1 });
      run.finalTokens++;
      if (!tokens.present[i]) run.absentTokens++;
    }
    const horizon = update.frontier - TOKEN_MEMORY_SECONDS;
    for (const [index, t] of run.tokens) {
      if (t.time >= horizon) break;  // a Map iterates in insertion order, which is time order
      run.tokens.delete(index);
    }
  }

  /**
   * The newest final token's attention in the last layer, mean over heads, per block:
   * { query: token, layer, heads, blocks: [{ block, keys: [{ id, time, t1, weight }], max }] }.
   * A token's span: a regular stream's patch (patch_len / rateHz), an event stream's from its time
   * to the stream's next token (or a quarter second for the newest).
   */
  #lookback(run, update) {
    if (!update.attention) return null;
    const n = update.tokens.time.length;
    const index = update.tokens.index[n - 1];
    const query = run.tokens.get(index);
    const layer = this.config.n_layers - 1;
    const rows = update.attention.filter((r) => r.token === index && r.layer === layer);
    if (!query || !rows.length) return null;
    const span = (t) => this.#span(run, t);
    const blocks = rows.map((r) => {
      const [H, k] = r.dims;
      const keys = [];
      let max = 0;
      for (let j = 0; j < k; j++) {
        let w = 0;
        for (let h = 0; h < H; h++) w += r.weights[h * k + j];
        w /= H;
        const key = run.tokens.get(r.keys[j]);
        if (!key) continue;
        keys.push({ id: key.id, time: r.keyTimes[j], t1: span(key), weight: w, index: r.keys[j] });
        if (w > max) max = w;
      }
      return { block: r.block, keys, max };
    });
    return { query: { ...query, index, t1: span(query) }, layer, heads: rows[0].dims[0], blocks, lookbackSeconds: this.config.attention_lookback_s };
  }

  #span(run, token) {
    const spec = run.feeder.stats[token.id];
    const modality = this.config.modalities.find((m) => m.name === token.modality);
    if (spec?.kind === 'regular' && spec.rateHz && modality) return token.time + modality.patch_len / spec.rateHz;
    let next = Infinity;
    for (const t of run.tokens.values()) if (t.stream === token.stream && t.time > token.time && t.time < next) next = t.time;
    return Number.isFinite(next) ? next : token.time + 0.25;
  }

  dispose() {
    this.stop();
    this.#model?.dispose();
    this.#model = null;
  }
}
