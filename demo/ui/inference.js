// The inference loop: the model runs in a Web Worker (loadModelInWorker); about once a second the
// latest window (10 s, ending a little before now so every stream's last packet has arrived) goes
// in, the prediction and the attention maps come out.
import { loadModelInWorker } from '../../web/src/index.js';
import { hostNow } from './dom.js';

/** The streams of a window that the model can take (modality, placement and sensor it knows). */
export function knownStreams(streams, config) {
  const modalities = new Set(config.modalities.map((m) => m.name));
  const placements = new Set(config.placements);
  return streams.filter((s) => modalities.has(s.modality) && placements.has(s.placement) &&
    s.sensor >= 0 && s.sensor < config.n_sensors && s.samples.length > 0);
}

const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Events: 'loaded' ({ config, threads }), 'result' ({ result, window, end, seconds, latencyMs, stats }),
 * 'error' ({ error, phase: 'load' | 'forward' }), 'state' (inFlight changed).
 */
export class InferenceLoop extends EventTarget {
  #model = null;
  #timer = null;
  #running = false;
  #run = 0;  // the running chain of ticks (start), ended by stop()
  #latencies = [];
  #completions = [];
  #lastError = null;
  #inFlight = false;

  constructor({ modelUrl, seconds = 10, latency = 0.6, periodMs = 1000, getSession }) {
    super();
    this.modelUrl = modelUrl;
    this.seconds = seconds;
    this.latency = latency;
    this.periodMs = periodMs;
    this.getSession = getSession;
    this.paused = false;
    this.updates = 0;
    this.config = null;
  }

  async load() {
    try {
      this.#model = await loadModelInWorker(this.modelUrl);
    } catch (error) {
      this.dispatchEvent(new CustomEvent('error', { detail: { error, phase: 'load' } }));
      return null;
    }
    this.config = this.#model.config;
    this.dispatchEvent(new CustomEvent('loaded', { detail: { config: this.config, threads: this.#model.threads } }));
    return this.config;
  }

  get stats() {
    const now = performance.now();
    const recent = this.#completions.filter((t) => now - t < 10_000);
    const rate = recent.length >= 2 ? (recent.length - 1) / ((recent[recent.length - 1] - recent[0]) / 1000) : NaN;
    return { updates: this.updates, latencyMs: median(this.#latencies), lastLatencyMs: this.#latencies[this.#latencies.length - 1] ?? NaN, rateHz: rate };
  }

  start() {
    if (this.#running || !this.#model) return;
    this.#running = true;
    // This chain's run: stop() ends it even while its window is in the Worker, and a start() that
    // follows begins another, so the old tick, once its step resolves, must not go on beside it.
    const run = ++this.#run;
    const tick = async () => {
      if (run !== this.#run) return;
      const started = performance.now();
      if (!this.paused) await this.step();
      if (run !== this.#run) return;
      this.#timer = setTimeout(tick, Math.max(50, this.periodMs - (performance.now() - started)));
    };
    tick();
  }

  stop() {
    this.#running = false;
    this.#run++;
    clearTimeout(this.#timer);
  }

  /** Stops and lets the Worker go (a script that is done with the loop; the page keeps its one). */
  dispose() {
    this.stop();
    this.#model?.dispose();
    this.#model = null;
  }

  /** Whether a window is in the Worker now ('state' events tell of changes). */
  get inFlight() {
    return this.#inFlight;
  }

  /** One window through the model; resolves when its result was dispatched (or skipped). */
  async step() {
    this.#setInFlight(true);
    try {
      await this.#step();
    } finally {
      // after the 'result' event: a listener that sees false sees the maps of the last window
      this.#setInFlight(false);
    }
  }

  #setInFlight(value) {
    if (this.#inFlight === value) return;
    this.#inFlight = value;
    this.dispatchEvent(new Event('state'));
  }

  async #step() {
    const session = this.getSession();
    if (!session || !this.#model) return;
    const end = hostNow() - this.latency;
    const raw = session.assembler.window({ end, seconds: this.seconds });
    const streams = knownStreams(raw.streams, this.config);
    if (!streams.length) return;
    const window = { streams, referenceTime: raw.referenceTime };
    const t0 = performance.now();
    let result;
    try {
      result = await this.#model.forward(window, { attention: true });
    } catch (error) {
      if (error?.message !== this.#lastError) this.dispatchEvent(new CustomEvent('error', { detail: { error, phase: 'forward' } }));
      this.#lastError = error?.message;
      return;
    }
    this.#lastError = null;
    const latencyMs = performance.now() - t0;
    this.#latencies.push(latencyMs);
    if (this.#latencies.length > 21) this.#latencies.shift();
    this.#completions.push(performance.now());
    if (this.#completions.length > 30) this.#completions.shift();
    this.updates++;
    if (session !== this.getSession()) return;  // the source changed meanwhile
    // The prediction is the model's own (forward's probabilities and label, given when the config
    // has labels), so the page shows what a user of the library gets.
    this.dispatchEvent(new CustomEvent('result', {
      detail: { result, window, end, seconds: this.seconds, latencyMs, session, stats: this.stats },
    }));
  }
}
