// Canvas rendering of live signal traces: one stream over a time span, with gaps marked, the
// model's patches highlighted and a relative time axis. Like attention-map.js it touches nothing
// but the 2D context it is given (OffscreenCanvas works too); sizes are canvas pixels.
//
// Times are float64 seconds on any scale (host epoch seconds in the demo). A series is
// { times, values } (values: numbers, null or NaN = missing) or one of the model's stream
// objects ({ rateHz, startTime, samples } or { timestamps, samples }, what WindowAssembler and
// StreamBuffer.slice return); seriesFromStream converts the latter.
//
// Missing data is never drawn as a line: the trace breaks at a missing sample and where two
// present samples are further apart than `maxStep`. Marked gaps (a disconnect: StreamBuffer.gaps)
// are a hatched band labelled "gap"; shorter runs of missing samples (lost notifications) are a
// faint band when longer than `missingBand` seconds.

const DEFAULTS = {
  color: '#58a6ff',
  background: '#0d1117',
  grid: 'rgba(240,246,252,0.06)',
  text: '#8b949e',
  gapFill: 'rgba(248,81,73,0.13)',
  gapStroke: 'rgba(248,81,73,0.55)',
  gapText: '#ff7b72',
  missingFill: 'rgba(240,246,252,0.05)',
  windowFill: 'rgba(88,166,255,0.045)',
};

/** Plot-area padding in canvas pixels (top, right, bottom, left). */
export const TRACE_PADDING = Object.freeze({ top: 4, right: 8, bottom: 4, left: 8 });

/**
 * A model stream object (regular or event-driven) or { times, values } -> { times: Float64Array,
 * values: Float64Array } with NaN for missing samples (and for samples whose present flag is 0).
 */
export function seriesFromStream(stream) {
  if (!stream) return { times: new Float64Array(0), values: new Float64Array(0) };
  if (stream.times && stream.values) {
    const n = stream.times.length;
    const values = new Float64Array(n);
    for (let i = 0; i < n; i++) values[i] = stream.values[i] === null ? NaN : stream.values[i];
    return { times: Float64Array.from(stream.times), values };
  }
  const samples = stream.samples ?? [];
  const n = samples.length;
  const times = new Float64Array(n), values = new Float64Array(n);
  const present = stream.present;
  for (let i = 0; i < n; i++) {
    times[i] = stream.timestamps ? stream.timestamps[i] : stream.startTime + i / stream.rateHz;
    const v = samples[i];
    values[i] = v === null || v === undefined || (present && !present[i]) ? NaN : v;
  }
  return { times, values };
}

/**
 * [lo, hi] covering the finite values with times in [t0, t1], padded by `pad` (fraction of the
 * span) and at least `minSpan` wide (so a flat signal stays flat instead of being stretched).
 * Returns null when there is no value to scale to.
 */
export function autoRange({ times, values }, { t0 = -Infinity, t1 = Infinity, minSpan = 0, pad = 0.08 } = {}) {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!(times[i] >= t0 && times[i] <= t1) || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(lo <= hi)) return null;
  let span = hi - lo;
  const mid = (lo + hi) / 2;
  if (span < minSpan) span = minSpan;
  span = span * (1 + 2 * pad) || 1;
  return [mid - span / 2, mid + span / 2];
}

/** The plot area of a width x height canvas and the maps between time/value and pixels. */
export function traceLayout(width, height, { t0, t1, range, padding = TRACE_PADDING }) {
  const x0 = padding.left, x1 = width - padding.right, y0 = padding.top, y1 = height - padding.bottom;
  const [lo, hi] = range;
  const sx = (x1 - x0) / (t1 - t0), sy = (y1 - y0) / (hi - lo || 1);
  return {
    x0, x1, y0, y1, t0, t1, lo, hi,
    x: (t) => x0 + (t - t0) * sx,
    y: (v) => y1 - (v - lo) * sy,
    time: (x) => t0 + (x - x0) / sx,
  };
}

function hatch(ctx, x0, x1, y0, y1, color, spacing = 7) {
  ctx.save();
  ctx.beginPath();
  ctx.rect(x0, y0, x1 - x0, y1 - y0);
  ctx.clip();
  ctx.strokeStyle = color;
  ctx.lineWidth = 1;
  ctx.beginPath();
  const h = y1 - y0;
  for (let x = x0 - h; x < x1; x += spacing) {
    ctx.moveTo(x, y1);
    ctx.lineTo(x + h, y0);
  }
  ctx.stroke();
  ctx.restore();
}

// Runs of missing samples (NaN) between present ones, as [start, end] time spans.
function missingRuns(series, t0, t1) {
  const { times, values } = series;
  const runs = [];
  let start = null;
  for (let i = 0; i < values.length; i++) {
    if (times[i] < t0 || times[i] > t1) continue;
    const missing = !Number.isFinite(values[i]);
    if (missing && start === null) start = i;
    if (!missing && start !== null) {
      runs.push([times[Math.max(0, start - 1)], times[i]]);
      start = null;
    }
  }
  if (start !== null) runs.push([times[Math.max(0, start - 1)], times[values.length - 1]]);
  return runs;
}

/**
 * Draws one trace into the whole canvas (clears it first).
 *
 * options:
 *   t0, t1          visible time span (required)
 *   reference       time the vertical grid lines count from (default t1; as in drawTimeAxis)
 *   range           [lo, hi] of the value axis (default: autoRange with minSpan)
 *   minSpan         smallest value span of the automatic range
 *   style           'line' (regular streams) | 'step' (event streams: held value, a dot per event)
 *   maxStep         seconds: no line between present samples further apart (default: 3 periods of a
 *                   regular series' median spacing; Infinity for 'step')
 *   gaps            [[a, b], ...] marked gaps (disconnects): hatched band + "gap" label
 *   gapLabel        text of that label ('gap'); ongoing: [a, b] spans still growing get 'gap…'
 *   missingBand     seconds: runs of missing samples at least this long get a faint band (0.25)
 *   window          { t0, t1 }: the model's input window, a faint band
 *   highlights      [{ t0, t1, color, label? }]: patches to point at (e.g. a selected token)
 *   color, background, grid, text, gapFill, gapStroke, gapText, missingFill, windowFill
 *   padding         { top, right, bottom, left }
 *   pixelRatio      canvas pixels per CSS pixel (devicePixelRatio); sizes and layout in CSS pixels
 * Returns { layout, range, gaps: number of marked gaps visible, missing: faint bands drawn,
 * points: samples drawn, last: the newest present sample { t, v } or null }.
 */
export function drawTrace(ctx, series, options) {
  const o = { ...DEFAULTS, ...options };
  const pr = o.pixelRatio ?? 1;
  const width = ctx.canvas.width / pr, height = ctx.canvas.height / pr;
  const { t0, t1 } = o;
  if (!(Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0)) throw new RangeError(`drawTrace: need finite t0 < t1, got ${t0}, ${t1}`);
  const data = series && series.times && series.values ? series : seriesFromStream(series);
  const range = o.range ?? autoRange(data, { t0, t1, minSpan: o.minSpan ?? 0 }) ?? [0, 1];
  const L = traceLayout(width, height, { t0, t1, range, padding: o.padding ?? TRACE_PADDING });

  ctx.save();
  ctx.scale(pr, pr);
  ctx.fillStyle = o.background;
  ctx.fillRect(0, 0, width, height);

  // the model's window
  if (o.window) {
    const a = Math.max(L.x0, L.x(o.window.t0)), b = Math.min(L.x1, L.x(o.window.t1));
    if (b > a) {
      ctx.fillStyle = o.windowFill;
      ctx.fillRect(a, L.y0, b - a, L.y1 - L.y0);
    }
  }

  // grid: a vertical line per tick of drawTimeAxis (same step and reference), a mid line
  ctx.strokeStyle = o.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  const step = tickStep(t1 - t0, L.x1 - L.x0);
  const ref = o.reference ?? t1;
  for (let k = Math.ceil((t0 - ref) / step); ref + k * step <= t1; k++) {
    const x = Math.round(L.x(ref + k * step)) + 0.5;
    if (x < L.x0 || x > L.x1) continue;
    ctx.moveTo(x, L.y0);
    ctx.lineTo(x, L.y1);
  }
  const ym = Math.round((L.y0 + L.y1) / 2) + 0.5;
  ctx.moveTo(L.x0, ym);
  ctx.lineTo(L.x1, ym);
  ctx.stroke();

  // faint bands: runs of missing samples
  let missing = 0;
  const minRun = o.missingBand ?? 0.25;
  ctx.fillStyle = o.missingFill;
  for (const [a, b] of missingRuns(data, t0, t1)) {
    if (b - a < minRun) continue;
    const xa = Math.max(L.x0, L.x(a)), xb = Math.min(L.x1, L.x(b));
    if (xb <= xa) continue;
    ctx.fillRect(xa, L.y0, xb - xa, L.y1 - L.y0);
    missing++;
  }

  // marked gaps
  let gaps = 0;
  const gapList = o.gaps ?? [];
  for (const [a, b, ongoing] of gapList) {
    const xa = Math.max(L.x0, L.x(a)), xb = Math.min(L.x1, L.x(b));
    if (xb <= xa) continue;
    gaps++;
    const w = Math.max(2, xb - xa);
    ctx.fillStyle = o.gapFill;
    ctx.fillRect(xa, L.y0, w, L.y1 - L.y0);
    hatch(ctx, xa, xa + w, L.y0, L.y1, o.gapFill, 6);
    ctx.strokeStyle = o.gapStroke;
    ctx.setLineDash([3, 3]);
    ctx.beginPath();
    if (L.x(a) >= L.x0) { ctx.moveTo(Math.round(xa) + 0.5, L.y0); ctx.lineTo(Math.round(xa) + 0.5, L.y1); }
    if (L.x(b) <= L.x1) { ctx.moveTo(Math.round(xa + w) - 0.5, L.y0); ctx.lineTo(Math.round(xa + w) - 0.5, L.y1); }
    ctx.stroke();
    ctx.setLineDash([]);
    const label = ongoing ? `${o.gapLabel ?? 'gap'}…` : (o.gapLabel ?? 'gap');
    ctx.font = `600 ${Math.max(9, Math.min(12, Math.round(height / 5)))}px system-ui, sans-serif`;
    const tw = ctx.measureText(label).width;
    if (w >= tw + 6) {
      ctx.fillStyle = o.gapText;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      ctx.fillText(label, xa + w / 2, (L.y0 + L.y1) / 2);
    }
  }

  // highlights (under the trace, over the bands)
  for (const h of o.highlights ?? []) {
    let xa = L.x(h.t0), xb = L.x(h.t1 ?? h.t0);
    if (xb - xa < 4) { const c = (xa + xb) / 2; xa = c - 2; xb = c + 2; }
    xa = Math.max(L.x0, xa); xb = Math.min(L.x1, xb);
    if (xb <= xa) continue;
    ctx.fillStyle = h.fill ?? withAlpha(h.color, 0.22);
    ctx.fillRect(xa, L.y0, xb - xa, L.y1 - L.y0);
    ctx.strokeStyle = h.color;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(xa + 0.75, L.y0 + 0.75, xb - xa - 1.5, L.y1 - L.y0 - 1.5);
    if (h.label) {
      ctx.font = '600 10px system-ui, sans-serif';
      ctx.fillStyle = h.color;
      ctx.textAlign = xb + 40 < L.x1 ? 'left' : 'right';
      ctx.textBaseline = 'top';
      ctx.fillText(h.label, ctx.textAlign === 'left' ? xb + 3 : xa - 3, L.y0 + 2);
    }
  }

  // the trace
  const { times, values } = data;
  const style = o.style ?? 'line';
  let maxStep = o.maxStep;
  if (maxStep === undefined) maxStep = style === 'step' ? Infinity : 3 * medianSpacing(times);
  const inGap = (a, b) => gapList.some(([g0, g1]) => a < g1 && b > g0);
  ctx.beginPath();
  ctx.strokeStyle = o.color;
  ctx.lineWidth = o.lineWidth ?? 1.25;
  ctx.lineJoin = 'round';
  let points = 0, prev = -1, last = null;
  // first index that can matter: one before t0
  let i0 = lowerBound(times, t0);
  if (i0 > 0) i0--;
  const dots = [];
  for (let i = i0; i < times.length; i++) {
    const t = times[i], v = values[i];
    if (t > t1) break;
    if (!Number.isFinite(v)) { prev = -1; continue; }
    const x = L.x(t), y = L.y(v);
    const connected = prev >= 0 && t - times[prev] <= maxStep && !inGap(times[prev], t);
    if (!connected) ctx.moveTo(x, y);
    else if (style === 'step') { ctx.lineTo(x, L.y(values[prev])); ctx.lineTo(x, y); }
    else ctx.lineTo(x, y);
    if (style === 'step') dots.push(x, y);
    prev = i;
    points++;
    last = { t, v };
  }
  ctx.stroke();
  if (dots.length) {
    ctx.fillStyle = o.color;
    for (let k = 0; k < dots.length; k += 2) {
      if (dots[k] < L.x0 - 3) continue;
      ctx.beginPath();
      ctx.arc(dots[k], dots[k + 1], 2.2, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
  ctx.restore();
  return { layout: L, range, gaps, missing, points, last };
}

/**
 * A time axis for traces drawn with the same t0, t1 and padding: ticks labelled in seconds
 * relative to `reference` (default t1: "-10 s" ... "0 s"), or by `format(t)`.
 */
export function drawTimeAxis(ctx, { t0, t1, reference = t1, padding = TRACE_PADDING, color = '#8b949e', background = null, format = null, unit = 's', pixelRatio = 1 }) {
  const width = ctx.canvas.width / pixelRatio, height = ctx.canvas.height / pixelRatio;
  const L = traceLayout(width, height, { t0, t1, range: [0, 1], padding });
  ctx.save();
  ctx.scale(pixelRatio, pixelRatio);
  if (background) {
    ctx.fillStyle = background;
    ctx.fillRect(0, 0, width, height);
  }
  const step = tickStep(t1 - t0, L.x1 - L.x0);
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.font = `${Math.max(9, Math.min(11, height - 8))}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  ctx.beginPath();
  const ticks = [];
  for (let k = Math.ceil((t0 - reference) / step); reference + k * step <= t1 + 1e-9; k++) {
    const t = reference + k * step;
    const x = Math.round(L.x(t)) + 0.5;
    if (x < L.x0 - 0.5 || x > L.x1 + 0.5) continue;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, 4);
    const rel = Math.round(k * step * 1000) / 1000;
    const label = format ? format(t) : `${rel > 0 ? '+' : rel < 0 ? '−' : ''}${Math.abs(rel)}${rel === 0 ? ` ${unit}` : ''}`;
    ctx.textAlign = x < L.x0 + 12 ? 'left' : x > L.x1 - 12 ? 'right' : 'center';
    ctx.fillText(label, x, 5);
    ticks.push(t);
  }
  ctx.stroke();
  ctx.restore();
  return { layout: L, ticks };
}

/** A "nice" tick step (1, 2 or 5 x 10^k seconds) giving ticks at least ~60 px apart. */
export function tickStep(span, pixels, minPixels = 60) {
  const raw = span * minPixels / Math.max(1, pixels);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function lowerBound(times, t) {
  let lo = 0, hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function medianSpacing(times) {
  const n = Math.min(times.length - 1, 64);
  if (n < 1) return Infinity;
  const d = [];
  for (let i = times.length - n; i < times.length; i++) d.push(times[i] - times[i - 1]);
  d.sort((a, b) => a - b);
  return d[d.length >> 1] || Infinity;
}

function withAlpha(color, alpha) {
  const m = /^#([0-9a-f]{6})$/i.exec(color ?? '');
  if (!m) return color;
  const n = parseInt(m[1], 16);
  return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${alpha})`;
}
