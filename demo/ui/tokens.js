// Token bookkeeping: which stream, modality and time span each token of a forward pass stands for,
// so maps can be labelled and a clicked cell can be pointed at on the traces.
import { ALL_STREAMS, VIEW_BY_ID, streamKey } from './streams.js';

const ID_BY_KEY = Object.fromEntries(Object.entries(ALL_STREAMS).map(([id, s]) => [streamKey(s), id]));

/**
 * Per token: { index, stream (input index), id (assembler stream id), modality, placement, sensor,
 * title, color, time, t0, t1 (the patch's span, host seconds), rel (time - window end), present }.
 * Regular streams: patch k spans [t_k, t_k + patch_len / rateHz). Event streams: the first to the
 * last event of the patch.
 */
export function describeTokens(result, window, config, end) {
  const patchLen = Object.fromEntries(config.modalities.map((m) => [m.name, m.patch_len]));
  const { stream: streamOf, time, present, modality } = result.tokens;
  const first = new Map();
  const out = new Array(time.length);
  for (let i = 0; i < time.length; i++) {
    const s = streamOf[i];
    if (!first.has(s)) first.set(s, i);
    const stream = window.streams[s];
    const p = patchLen[stream.modality] ?? 1;
    const k = i - first.get(s);
    let t0 = time[i], t1;
    if (stream.timestamps) {
      const n = stream.timestamps.length;
      const a = Math.min(k * p, n - 1), b = Math.min(n, k * p + p) - 1;
      t0 = stream.timestamps[a] ?? time[i];
      t1 = stream.timestamps[Math.max(a, b)] ?? t0;
    } else {
      t1 = t0 + p / stream.rateHz;
    }
    const id = ID_BY_KEY[streamKey(stream)] ?? stream.modality;
    const view = VIEW_BY_ID[id];
    out[i] = {
      index: i, stream: s, id, modality: modality[i], placement: stream.placement, sensor: stream.sensor,
      title: view?.title ?? stream.modality, short: view?.short ?? stream.modality, color: view?.color ?? '#adb5bd',
      time: time[i], t0, t1, rel: time[i] - end, present: !!present[i], event: !!stream.timestamps,
    };
  }
  return out;
}

/** Whether a token is the one a selection points at (same stream, span containing its middle). */
export function sameToken(token, target) {
  if (!token || !target || token.id !== target.id) return false;
  const mid = (target.t0 + target.t1) / 2;
  if (token.event) return Math.abs(token.time - target.time) < 1e-6 || (mid >= token.t0 && mid <= token.t1);
  return mid >= token.t0 && mid < token.t1;
}
