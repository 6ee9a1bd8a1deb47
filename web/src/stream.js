// Streaming sessions (docs/model.md "Streaming"): model.stream(options) -> StreamSession, whose
// push(chunk) appends samples per stream and returns the tokens that became final, and whose
// pooled({ seconds }) pools the latest final tokens. The core's session (bindings/embind.cpp,
// src/stream/session.cpp) does the work; this file checks what the caller gives, names the field
// of a mistake, and turns the core's arrays into the API's objects.
//
// Chunk rules (on top of the window's, window.js):
// - chunk: { streams: [...] } and nothing else (a `referenceTime` is a session option).
// - chunk.streams[i]: null / undefined / a hole = nothing new for session stream i.
// - the description (sensor, modality, placement, and rateHz for a regular stream) is given with
//   `modality`: with it, sensor and placement are required too (as in a window); without it,
//   sensor, placement and rateHz must be left out (a lone rateHz would otherwise be ignored).
//   The core checks that a repeated description matches and that a new stream has one.
// - event-driven iff timestamps is given (with or without the description); a description
//   without timestamps needs rateHz, and timestamps with rateHz or startTime are refused, as in
//   a window.
// - samples may be left out (= none): an entry may carry only `until`, or a first chunk only a
//   description (declaring a stream before its data, so that finality waits for it).
// - timestamps and present have one entry per sample (SHAPE_MISMATCH naming the field).
import { SensorformerError } from './errors.js';
import { checkOptions } from './options.js';
import { prediction } from './prediction.js';
import { bad, describe, fail, finiteNumber, present, samples, sensor, timestamps } from './window.js';
import { combineHeads, renumber, routeStreams } from './ensemble.js';

const STREAM_OPTIONS = {
  referenceTime: {
    fallback: null,
    valid: (v) => v === null || Number.isFinite(v),
    code: (v) => (typeof v === 'number' ? 'NON_FINITE' : 'INVALID_ARGUMENT'),
    expected: 'a finite time in seconds (null: the earliest time of the first chunk that has one)',
  },
  attention: { fallback: false, valid: (v) => typeof v === 'boolean', expected: 'true or false' },
  // The default keeps a minute of final embeddings for pooled(): d_model floats per token.
  historySeconds: { fallback: 60, valid: (v) => Number.isFinite(v) && v > 0, expected: 'a finite number of seconds > 0' },
  // An event stream's incomplete patch is closed (its missing events marked missing) once its
  // `until` is this far past the patch's first event: a strap that leaves part-way through a patch
  // of 4 beats would otherwise hold every stream's finality back. 15 s: 4 beats at 16 bpm.
  eventTimeoutSeconds: { fallback: 15, valid: (v) => Number.isFinite(v) && v > 0, expected: 'a finite number of seconds > 0' },
  // forward's default compute limit, per push (counted as forward counts a window).
  maxGflop: { fallback: 10, valid: (v) => typeof v === 'number' && v > 0, expected: 'a number of GFLOP > 0 (Infinity: no limit)' },
};

// Streams one session takes (src/stream/session.hpp kMaxSessionStreams): a chunk's streams array is
// checked against it before it is read, so a sparse array of length 3e7 is refused, not walked.
const MAX_SESSION_STREAMS = 4096;

/** The options of model.stream(), checked here for Model and WorkerModel alike. */
export function streamOptions(options, method = 'stream(options)') {
  return checkOptions(options, method, STREAM_OPTIONS);
}

// pooled(): seconds defaults to the session's historySeconds (every final token it keeps); the
// upper bound (historySeconds) is the core's check, with its message.
function pooledOptions(options, historySeconds) {
  return checkOptions(options, 'pooled(options)', {
    seconds: { fallback: historySeconds, valid: (v) => Number.isFinite(v) && v > 0, expected: `a finite number of seconds > 0 (at most historySeconds, ${historySeconds})` },
  });
}

const CHUNK_STREAM_KEYS = ['sensor', 'modality', 'placement', 'rateHz', 'startTime', 'timestamps', 'samples', 'present', 'until'];
const DESCRIPTION_KEYS = ['sensor', 'placement', 'rateHz'];

function chunkStream(s, path) {
  if (s == null) return null;
  // Any object, as a window's streams (a class instance from a device layer included).
  if (typeof s !== 'object' || Array.isArray(s)) throw bad(path, `must be an object or null (nothing new for this stream), got ${describe(s)}`);
  for (const key of Object.keys(s))
    if (!CHUNK_STREAM_KEYS.includes(key)) throw bad(`${path}.${key}`, `is not a chunk stream field (fields: ${CHUNK_STREAM_KEYS.join(', ')})`);
  const described = s.modality != null;
  const eventDriven = s.timestamps != null;
  const out = { timestamps: null, present: null };
  if (described) {
    for (const key of ['modality', 'placement'])
      if (typeof s[key] !== 'string') throw bad(`${path}.${key}`, `must be a string, got ${describe(s[key])}`);
    out.sensor = sensor(s.sensor, `${path}.sensor`);
    out.modality = s.modality;
    out.placement = s.placement;
    if (eventDriven && s.rateHz != null)
      throw bad(path, 'gives both rateHz and timestamps: a stream is regular (rateHz, startTime) or event-driven (timestamps)');
    if (!eventDriven) {
      if (s.rateHz == null) throw bad(path, 'describes a stream without rateHz (a regular stream) or timestamps (an event-driven one)');
      finiteNumber(s.rateHz, `${path}.rateHz`, 'a rate in Hz > 0');
      if (!(s.rateHz > 0)) throw bad(`${path}.rateHz`, `must be a rate in Hz > 0, got ${s.rateHz}`);
      out.rateHz = s.rateHz;
    }
  } else {
    for (const key of DESCRIPTION_KEYS)
      if (s[key] != null) throw bad(`${path}.${key}`, 'is part of the stream\'s description: give it with sensor, modality and placement, or leave all of them out after the stream\'s first chunk');
  }
  if (eventDriven && s.startTime != null)
    throw bad(path, 'gives both startTime and timestamps: a stream is regular (rateHz, startTime) or event-driven (timestamps)');
  if (s.startTime != null) out.startTime = finiteNumber(s.startTime, `${path}.startTime`, 'a time in seconds');
  if (s.until != null) out.until = finiteNumber(s.until, `${path}.until`, 'a time in seconds');
  out.samples = s.samples == null ? new Float32Array(0) : samples(s.samples, `${path}.samples`);
  const n = out.samples.length;
  if (eventDriven) {
    out.timestamps = timestamps(s.timestamps, `${path}.timestamps`);
    if (out.timestamps.length !== n) throw fail('SHAPE_MISMATCH', `${path}.timestamps`, `has ${out.timestamps.length} entries for ${n} samples (one per sample)`);
  }
  if (s.present != null) {
    out.present = present(s.present, `${path}.present`);
    if (out.present.length !== n) throw fail('SHAPE_MISMATCH', `${path}.present`, `has ${out.present.length} entries for ${n} samples (one per sample)`);
  }
  return out;
}

// The core's skipped runs, (stream, from, to, patches) flat, as objects.
function skippedRuns(flat) {
  const runs = [];
  for (let i = 0; i < flat.length; i += 4) runs.push({ stream: flat[i], from: flat[i + 1], to: flat[i + 2], patches: flat[i + 3] });
  return runs;
}

/** A chunk as the core's StreamSession.push takes it (bindings/embind.cpp, chunk_from_js). */
export function normalizeChunk(chunk, path = 'chunk') {
  if (!chunk || typeof chunk !== 'object' || !Array.isArray(chunk.streams)) throw bad(path, `must be an object with a streams array, got ${describe(chunk)}`);
  if (chunk.streams.length > MAX_SESSION_STREAMS)
    throw bad(`${path}.streams`, `has length ${chunk.streams.length}, over the ${MAX_SESSION_STREAMS} streams a session takes (entry i appends to session stream i)`);
  for (const key of Object.keys(chunk))
    if (key !== 'streams')
      throw bad(`${path}.${key}`, key === 'referenceTime' ? 'is a session option: model.stream({ referenceTime })' : 'is not a chunk field (a chunk is { streams })');
  return { streams: Array.from(chunk.streams, (s, i) => chunkStream(s, `${path}.streams[${i}]`)) };
}

// Held value: the core's session and the record of its model's open sessions. The model's own
// cleanup (model.js) may have deleted the handle first.
const registry = new FinalizationRegistry(({ handles, live }) => {
  for (const handle of handles) {
    live.sessions.delete(handle);
    if (!handle.isDeleted()) handle.delete();
  }
});

/** Deletes every open session of a model (model.dispose(), or the model's collection). */
export function endSessions(live) {
  live.disposed = true;
  for (const handle of live.sessions) if (!handle.isDeleted()) handle.delete();
  live.sessions.clear();
}

const CREATE = Symbol('StreamSession');

// members: [{ handle, modalities }] of the model (one, modalities null, for a single model; an
// ensemble's, ensemble.js): one core session each.
export function openSession(wasm, members, model, live, info, options) {
  const sessions = [];
  for (const [k, { handle: modelHandle, modalities }] of members.entries()) {
    const handle = new wasm.StreamSession();
    // only the first member's attention is returned (its tokens are the session's)
    const r = handle.start(modelHandle, k === 0 ? options : { ...options, attention: false });
    if (!r.ok) {
      handle.delete();
      for (const s of sessions) s.handle.delete();
      throw new SensorformerError(r.code, members.length > 1 ? `ensemble member ${k}: ${r.message}` : r.message);
    }
    sessions.push({ handle, modalities, route: [] });
  }
  return new StreamSession(CREATE, { sessions, model, live, info, options });
}

/**
 * A model run incrementally over live streams (docs/model.md "Streaming"); made by
 * model.stream(options). Errors leave the session as it was (a push is all or nothing).
 */
export class StreamSession {
  #handle;    // the core's session (an ensemble's first member's)
  #sessions;  // one per member: { handle, modalities (null: every stream), route (its stream j is session stream route[j]) }
  #modality = [];  // per session stream, its modality once described (an ensemble routes by it)
  #model;  // kept alive by the session: the core's session reads its weights
  #live;
  #info;
  #options;

  constructor(key, { sessions, model, live, info, options } = {}) {
    if (key !== CREATE) throw new SensorformerError('INVALID_ARGUMENT', 'a StreamSession is made by model.stream(options)');
    this.#handle = sessions[0].handle;
    this.#sessions = sessions;
    this.#model = model;
    this.#live = live;
    this.#info = info;
    this.#options = options;
    for (const s of sessions) live.sessions.add(s.handle);
    registry.register(this, { handles: sessions.map((s) => s.handle), live }, this);
  }

  // An ensemble's chunk per member: chunk.streams[i] goes to every member whose modalities include
  // stream i's (described now or before), as that member's stream j (its streams numbered in
  // their order of arrival); a stream no member knows, or not described yet, to the first member
  // (whose error names it). Returns [memberChunks, routes after the push, modalities after it].
  #split(chunk) {
    const routes = this.#sessions.map((s) => s.route.slice());
    const modality = this.#modality.slice();
    const parts = this.#sessions.map(() => []);
    const given = [];  // the session streams this chunk has an entry for
    chunk.streams.forEach((entry, i) => {
      if (entry == null) return;
      if (modality[i] === undefined && entry.modality != null) modality[i] = entry.modality;
      given.push(i);
    });
    // ensemble.js's rule, as forward routes a window's streams
    routeStreams(given.map((i) => modality[i]), this.#sessions.map((s) => s.modalities)).forEach((to, k) => {
      for (const g of to) {
        const i = given[g];
        let j = routes[k].indexOf(i);
        if (j < 0) j = routes[k].push(i) - 1;
        parts[k][j] = chunk.streams[i];
      }
    });
    return [parts.map((streams, k) => ({ streams: Array.from({ length: routes[k].length }, (_, j) => streams[j] ?? null) })), routes, modality];
  }

  #usable() {
    if (this.#live.disposed && this.#handle) this.#release();
    if (!this.#handle) throw new SensorformerError('DISPOSED', this.#live.disposed ? 'this stream session ended when its model was disposed' : 'this stream session was disposed');
    return this.#handle;
  }

  /**
   * Appends a chunk (chunk.streams[i] to session stream i; null = nothing new) and returns the
   * tokens that became final, in time order (ties: stream order, then patch order).
   */
  push(chunk) {
    this.#usable();
    const normalized = normalizeChunk(chunk);
    // Again: reading the chunk runs the caller's getters, which may have disposed the session.
    const handle = this.#usable();
    let r, tokenStream;
    if (this.#sessions.length === 1) {
      r = handle.push(normalized);
      if (!r.ok) throw new SensorformerError(r.code, r.message);
      tokenStream = r.tokenStream;
    } else {
      // The member with the most streams in this chunk first: the others' streams are (for the
      // AF pair) a subset of its, with the same data, so its refusal comes before any member has
      // taken the chunk. Should a later member still refuse what an earlier one took, the
      // members no longer agree: the session is closed and says so.
      const [parts, routes, modality] = this.#split(normalized);
      const count = (k) => parts[k].streams.filter((x) => x != null).length;
      const order = parts.map((_, k) => k).sort((a, b) => count(b) - count(a) || a - b);
      const results = [];
      for (const [n, k] of order.entries()) {
        const out = this.#sessions[k].handle.push(parts[k]);
        if (!out.ok) {
          const message = renumber(out.message, routes[k]);
          if (n === 0) throw new SensorformerError(out.code, message);
          this.#release();
          throw new SensorformerError(out.code, `${message} (ensemble member ${k} refused a chunk that member ${order[0]} took: the session is closed)`);
        }
        results[k] = out;
      }
      this.#sessions.forEach((s, k) => (s.route = routes[k]));
      this.#modality = modality;
      r = results[0];
      tokenStream = Int32Array.from(r.tokenStream, (j) => routes[0][j]);
    }
    const { dModel: d, nHeads: H } = this.#info;
    const modalities = this.#info.inputs.modalities.map((m) => m.name);
    return {
      tokens: {
        stream: tokenStream,
        modality: Array.from(r.tokenModality, (m) => modalities[m]),
        time: r.tokenTime,
        present: r.tokenPresent,
        index: r.tokenIndex,
      },
      embeddings: r.embeddings,
      dims: [r.tokenTime.length, d],
      frontier: r.frontier,
      referenceTime: r.referenceTime,
      attention: this.#options.attention
        ? r.attention.map((a) => ({ token: a.query, layer: a.layer, block: a.block, keys: a.keys, keyTimes: a.keyTimes, weights: a.weights, dims: [H, a.keys.length] }))
        : null,
      skipped: skippedRuns(r.skipped),
    };
  }

  /**
   * Masked mean of the final embeddings with time in [frontier - seconds, frontier), and the head
   * on it (with labels: probabilities and label, as forward gives them; null with no present token).
   */
  pooled(options) {
    this.#usable();
    const { seconds } = pooledOptions(options, this.#options.historySeconds);
    this.#usable();  // the options' getters may have disposed it
    const results = this.#sessions.map((s) => s.handle.pooled(seconds));
    const r = results[0];
    for (const x of results) if (!x.ok) throw new SensorformerError(x.code, x.message);
    // An ensemble: each member pools its own final tokens, their heads combined (ensemble.js).
    const present = results.map((x) => x.presentTokens > 0);
    const head = !r.head.length ? null : results.length > 1 ? combineHeads(results.map((x) => x.head), present) : r.head;
    return {
      pooled: r.pooled,
      head,
      ...prediction(this.#info.outputs.labels, head, present.some(Boolean)),
      presentTokens: r.presentTokens,
      from: r.from,
      to: r.to,
    };
  }

  /** Every token with time < frontier is final (-Infinity before any data). */
  get frontier() {
    return this.#usable().frontier();
  }

  /** The session's reference time (null until a chunk gives a time). */
  get referenceTime() {
    return this.#usable().referenceTime();
  }

  /** Bytes the session holds in WebAssembly memory now (caches, pending patches, history). */
  get memoryBytes() {
    this.#usable();
    return this.#sessions.reduce((sum, s) => sum + s.handle.memoryBytes(), 0);
  }

  /** Tokens made final so far (the next token's index). */
  get finalTokens() {
    return this.#usable().finalTokens();
  }

  #release() {
    registry.unregister(this);
    for (const { handle } of this.#sessions) {
      this.#live.sessions.delete(handle);
      if (!handle.isDeleted()) handle.delete();
    }
    this.#handle = null;
  }

  /** Frees the session's WebAssembly memory now; later calls throw DISPOSED. Idempotent. */
  dispose() {
    if (this.#handle) this.#release();
  }

  [Symbol.dispose ?? Symbol.for('Symbol.dispose')]() {
    this.dispose();
  }
}
