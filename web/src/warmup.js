// Warm-up at load (issue 10, "first call"): loadModel runs a few small synthetic forwards through
// the model's own kernels and sizes before it resolves, so that the caller's first forward does not
// pay for the engine's compilation.
//
// Why: engines compile new WebAssembly in two tiers. V8 (Chrome, Edge, Node) compiles each
// function with its baseline compiler (Liftoff) when first called and recompiles it with its
// optimizing compiler (TurboFan) on background threads once it has run enough ("dynamic
// tiering", https://v8.dev/blog/wasm-dynamic-tiering); SpiderMonkey (Firefox) also starts in a
// baseline tier and swaps in Ion code compiled in the background. Without a warm-up, the first
// real forward runs in baseline code while the optimizing compiles compete with it for the CPU:
// measured 2-10x the steady forward (BENCHMARKS.md, "First call").
//
// What it does: forwards of a window built from the model's config (every modality, about 128
// tokens at 4 patches per second, so that time groups hold tens of tokens and the flattened
// layout 128: the kernels' tile loops and remainders all run), alternately with and without
// attention maps so both paths run, yielding to the event loop between them so the background
// compiles can finish, until the forward time has settled: 2 forwards in a row within 1.2x
// (+ 0.2 ms) of the best of their kind without beating it by 10 %, and at least 4 forwards. At
// most WARMUP_MAX_FORWARDS, and none started after WARMUP_BUDGET_MS (a bound on the load time it
// adds on a slow or busy machine; measured cost: BENCHMARKS.md, "First call").
// The model's results do not depend on it: forward keeps no state between calls, and
// tests/js/warmup.test.js compares a warmed and an unwarmed model bit for bit. A failing warm-up
// forward (weights that overflow on this synthetic input, say) is not a load error: the warm-up
// stops and the model loads. loadModel(source, { warmup: false }) skips it.

export const WARMUP_BUDGET_MS = 150;
export const WARMUP_MAX_FORWARDS = 24;
export const WARMUP_TOKENS = 128;
const SETTLED_RATIO = 1.2;
// Browsers coarsen performance.now() (to 0.1 ms without cross-origin isolation): a tiny model's
// forwards would otherwise never look settled.
const SETTLED_SLACK_MS = 0.2;

const now = () => globalThis.performance?.now() ?? Date.now();
// A macrotask: lets a browser render and the engine's compile threads run.
const yieldToEventLoop = () => new Promise((resolve) => setTimeout(resolve, 0));

/** The synthetic window: every modality of the config, 4 patches per second, ~WARMUP_TOKENS tokens. */
export function warmupWindow(config) {
  const modalities = config.modalities ?? [];
  if (!modalities.length) return null;
  const perModality = Math.max(2, Math.ceil(WARMUP_TOKENS / modalities.length));
  const startTime = 1_000_000;
  const streams = modalities.map((m, k) => {
    const n = m.patch_len * perModality;
    const samples = new Float32Array(n);
    // Values around the modality's mean, a few standard deviations wide: the tokens differ, as
    // real ones do, so softmax and layer norm see ordinary inputs.
    for (let i = 0; i < n; i++) samples[i] = m.mean + m.std * Math.sin(0.37 * i + k);
    return {
      sensor: k % Math.max(1, config.n_sensors ?? 1),
      modality: m.name,
      placement: config.placements?.[0] ?? 'chest',
      rateHz: 4 * m.patch_len,
      startTime,
      samples,
    };
  });
  return { streams, referenceTime: startTime };
}

/**
 * Runs the warm-up on a loaded Model; resolves to { forwards, ms, error } (error: what stopped it
 * early, or null) when done. Never throws. An aborted `signal` (loadModel's) stops it between
 * forwards; loadModel then rejects.
 */
export async function warmUp(model, signal) {
  const window = warmupWindow(model.config);
  if (!window) return { forwards: 0, ms: 0, error: null };
  let error = null;
  const start = now();
  const best = [Infinity, Infinity];  // without and with maps: the two take different times
  let settled = 0, forwards = 0;
  try {
    while (forwards < WARMUP_MAX_FORWARDS && now() - start < WARMUP_BUDGET_MS && !signal?.aborted) {
      const maps = forwards % 2;
      const t = now();
      model.forward(window, { attention: maps === 1 });
      const ms = now() - t;
      forwards++;
      // Settled: the last forward of each kind within SETTLED_RATIO of the best of its kind, and
      // that best no longer improving by 10 %. (Stopping at the first forwards that fail to
      // improve is too early: in Chromium baseline-tier forwards vary by 1.5x among themselves
      // before the optimized code arrives and makes them 4-5x faster.)
      settled = ms < 0.9 * best[maps] ? 0 : ms <= SETTLED_RATIO * best[maps] + SETTLED_SLACK_MS ? settled + 1 : 0;
      best[maps] = Math.min(best[maps], ms);
      if (settled >= 2 && forwards >= 4) break;
      await yieldToEventLoop();
    }
  } catch (e) {
    error = e;  // best effort: see the header
  }
  return { forwards, ms: now() - start, error };
}
