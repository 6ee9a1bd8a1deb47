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
import { SensorformerError } from '../errors.js';

// Colour themes. 'dark' suits a dark page (the demo's), 'light' a light one; 'auto' picks one from
// the page's prefers-color-scheme, as uPlot users do with a media query. Contrast of text on
// background is at least 4.5:1 (WCAG 2.x AA for small text) in both.
export const THEMES = Object.freeze({
  dark: Object.freeze({
    color: '#58a6ff',
    background: '#0d1117',
    grid: 'rgba(240,246,252,0.08)',
    axis: 'rgba(240,246,252,0.28)',
    text: '#8b949e',
    gapFill: 'rgba(248,81,73,0.13)',
    gapStroke: 'rgba(248,81,73,0.55)',
    gapText: '#ff7b72',
    missingFill: 'rgba(240,246,252,0.05)',
    windowFill: 'rgba(88,166,255,0.045)',
  }),
  light: Object.freeze({
    color: '#0969da',
    background: '#ffffff',
    grid: 'rgba(31,35,40,0.09)',
    axis: 'rgba(31,35,40,0.35)',
    text: '#57606a',
    gapFill: 'rgba(207,34,46,0.10)',
    gapStroke: 'rgba(207,34,46,0.55)',
    gapText: '#cf222e',
    missingFill: 'rgba(31,35,40,0.05)',
    windowFill: 'rgba(9,105,218,0.06)',
  }),
});

/**
 * A theme option -> a full colour set. 'dark' | 'light'; 'auto' (the default of every drawing
 * function): 'dark' when the page prefers a dark colour scheme (matchMedia), else 'light' (also
 * where there is no matchMedia, e.g. in a Worker with OffscreenCanvas: pass the theme there); an
 * object: its colours over the theme named by its `base` ('auto' unless given). 'auto' is looked
 * up on every draw, so a page that redraws (a live trace) follows a switch of the colour scheme.
 */
export function resolveTheme(theme = 'auto') {
  if (theme && typeof theme === 'object') {
    const { base = 'auto', ...colors } = theme;
    if (base && typeof base === 'object') throw new SensorformerError('INVALID_ARGUMENT', 'resolveTheme: base must be a theme name');
    return { ...resolveTheme(base), ...colors };
  }
  if (theme === 'dark' || theme === 'light') return THEMES[theme];
  if (theme === 'auto') {
    const dark = typeof globalThis.matchMedia === 'function' && globalThis.matchMedia('(prefers-color-scheme: dark)').matches;
    return THEMES[dark ? 'dark' : 'light'];
  }
  throw new SensorformerError('INVALID_ARGUMENT', `theme must be 'dark', 'light', 'auto' or an object of colours, got ${String(theme)}`);
}

/**
 * options.pixelRatio of the drawing functions: 1 by default, else a number from 0.1 to 16 (a
 * devicePixelRatio at any browser zoom). Anything else is INVALID_ARGUMENT: 0 would make the
 * canvas infinitely many CSS pixels wide, a tiny ratio hundreds of millions.
 */
export function pixelRatioOption(value, fn) {
  const pr = value ?? 1;
  if (!(typeof pr === 'number' && pr >= 0.1 && pr <= 16)) throw new SensorformerError('INVALID_ARGUMENT', `${fn}: pixelRatio must be a number from 0.1 to 16 (devicePixelRatio), got ${String(value)}`);
  return pr;
}

/** Plot-area padding in CSS pixels (top, right, bottom, left) of a trace drawn without axes. */
export const TRACE_PADDING = Object.freeze({ top: 4, right: 8, bottom: 4, left: 8 });
/** Default width of the value-axis gutter (CSS px): "−1000 µV" in 10 px system-ui fits. */
export const VALUE_AXIS_WIDTH = 50;
/** Height of the time-axis strip under a trace that draws its own (CSS px). */
export const TIME_AXIS_HEIGHT = 16;

/**
 * The plot-area padding drawTrace uses by default: room on the left for the value axis and at the
 * bottom for the time axis when they are drawn. drawTimeAxis takes the same options so that a
 * separate time-axis canvas under a column of traces lines up with them.
 */
export function tracePadding({ valueAxis = true, timeAxis = true, axisWidth = VALUE_AXIS_WIDTH } = {}) {
  return {
    top: TRACE_PADDING.top,
    right: TRACE_PADDING.right,
    bottom: TRACE_PADDING.bottom + (timeAxis ? TIME_AXIS_HEIGHT : 0),
    left: valueAxis ? axisWidth : TRACE_PADDING.left,
  };
}

/**
 * Ticks of a value axis over [lo, hi] drawn `pixels` tall: multiples of a 1/2/5 x 10^k step at
 * least `minPixels` apart (uPlot's rule too). When that leaves fewer than two ticks (a short
 * canvas), smaller steps are tried as long as ticks stay `minPixels * 0.6` apart (one line of
 * 10 px text). Returns { step, decimals (enough to tell ticks apart), ticks (ascending) };
 * no ticks for an empty or non-finite range.
 */
export function valueTicks(lo, hi, pixels, minPixels = 20) {
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && hi > lo && pixels > 0 && Number.isFinite(pixels))) return { step: NaN, decimals: 0, ticks: [] };
  const span = hi - lo;
  let step = tickStep(span, pixels, minPixels);
  let ticks = ticksOf(lo, hi, step);
  while (ticks.length < 2) {
    const smaller = stepBelow(step);
    if (!(smaller * pixels / span >= minPixels * 0.6) || !tickNumbers(lo, hi, smaller)) break;
    step = smaller;
    ticks = ticksOf(lo, hi, step);
  }
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return { step, decimals, ticks: ticks.map((v) => +v.toFixed(decimals)) };
}

/** A tick value as text: `decimals` digits, a true minus sign (U+2212), no "−0". */
export function formatTick(v, decimals = 0) {
  const text = Math.abs(v).toFixed(decimals);
  return Number(text) === 0 ? text : `${v < 0 ? '−' : ''}${text}`;
}

// At most this many ticks on an axis: a step that would give more is a degenerate one (a span far
// below the values' float64 resolution, a canvas millions of pixels wide).
const MAX_TICKS = 1000;

// The tick numbers k of multiples `origin + k * step` in [from, to] (the 1e-9 margins keep a tick
// that lands on either end within rounding), ascending; null for a step that cannot be drawn: not
// positive and finite, more than MAX_TICKS ticks, or k past 2^53, where k++ would no longer move
// and a loop over them would never end (values 1e16 a few units apart, a reference 1e17 s from
// the view).
function tickNumbers(from, to, step, origin = 0) {
  if (!(step > 0 && Number.isFinite(step))) return null;
  const first = Math.ceil((from - origin) / step - 1e-9), last = Math.floor((to - origin) / step + 1e-9);
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(last) || last - first > MAX_TICKS) return null;
  return Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
}

const ticksOf = (lo, hi, step) => (tickNumbers(lo, hi, step) ?? []).map((k) => k * step);

// The next smaller step of the 1/2/5 ladder: 5 -> 2 -> 1 -> 0.5 ...
function stepBelow(step) {
  const p = 10 ** Math.floor(Math.log10(step) + 1e-9);
  const m = Math.round(step / p);
  return m >= 5 ? 2 * p : m >= 2 ? p : p / 2;
}

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
  // Below a billionth of the values' size a span is float rounding (0.1 + 0.2 against 0.3; float32
  // samples resolve 6e-8 of it): such a signal is flat, drawn at least that wide.
  if (span < Math.abs(mid) * 1e-9) span = Math.abs(mid) * 1e-9;
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
 *   theme           'auto' (default: follows the page's prefers-color-scheme) | 'dark' | 'light' |
 *                   { base?, ...colours } (see resolveTheme)
 *   color, background, grid, axis, text, gapFill, gapStroke, gapText, missingFill, windowFill
 *                   single colours over the theme's
 *   valueAxis       true (default): a value axis in a left gutter of `axisWidth` CSS px (default
 *                   VALUE_AXIS_WIDTH), ticks at 1/2/5 x 10^k (valueTicks) with grid lines; no
 *                   ticks when nothing is in view and no range is given
 *   units           text after the top tick's value (e.g. 'µV'); none by default
 *   timeAxis        true (default): time ticks under the plot, labelled like drawTimeAxis (seconds
 *                   relative to `reference`, or `format(t)`, `unit` after the 0); false for a
 *                   column of traces sharing one drawTimeAxis canvas
 *   padding         { top, right, bottom, left } (default tracePadding(options))
 *   pixelRatio      canvas pixels per CSS pixel (devicePixelRatio, 0.1-16); sizes and layout in CSS pixels
 * Bad options (t0 >= t1 or not finite, a range that is not finite lo < hi, a reference that is not
 * finite, a pixelRatio outside 0.1-16, gaps or highlights that are not arrays of spans, an unknown
 * theme): SensorformerError INVALID_ARGUMENT, before anything is drawn.
 * Returns { layout, range, gaps: number of marked gaps visible, missing: faint bands drawn,
 * points: samples drawn, last: the newest present sample { t, v } or null, ticks: the value
 * ticks drawn, theme: the colours used }.
 */
export function drawTrace(ctx, series, options) {
  const theme = resolveTheme(options?.theme ?? 'auto');
  const o = { ...theme };
  // an option given as undefined keeps the theme's colour
  for (const [k, v] of Object.entries(options ?? {})) if (v !== undefined) o[k] = v;
  const pr = pixelRatioOption(o.pixelRatio, 'drawTrace');
  const width = ctx.canvas.width / pr, height = ctx.canvas.height / pr;
  const { t0, t1 } = o;
  if (!(Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0)) throw new SensorformerError('INVALID_ARGUMENT', `drawTrace: need finite t0 < t1, got ${t0}, ${t1}`);
  if (o.reference !== undefined && o.reference !== null && !Number.isFinite(o.reference)) throw new SensorformerError('INVALID_ARGUMENT', `drawTrace: reference must be a finite time, got ${o.reference}`);
  const isPair = (x) => Array.isArray(x) || ArrayBuffer.isView(x);
  if (o.gaps !== undefined && o.gaps !== null && !(Array.isArray(o.gaps) && o.gaps.every(isPair))) throw new SensorformerError('INVALID_ARGUMENT', 'drawTrace: gaps must be an array of [t0, t1] (or [t0, t1, ongoing]) spans');
  if (o.highlights !== undefined && o.highlights !== null && !(Array.isArray(o.highlights) && o.highlights.every((h) => h && typeof h === 'object' && Number.isFinite(h.t0))))
    throw new SensorformerError('INVALID_ARGUMENT', 'drawTrace: highlights must be an array of { t0, t1?, color, label? } with a finite t0');
  const data = series && series.times && series.values ? series : seriesFromStream(series);
  if (o.range !== undefined && o.range !== null && !(Array.isArray(o.range) && Number.isFinite(o.range[0]) && Number.isFinite(o.range[1]) && o.range[1] > o.range[0])) {
    throw new SensorformerError('INVALID_ARGUMENT', `drawTrace: range must be [lo, hi] with finite lo < hi, got ${JSON.stringify(o.range)}`);
  }
  const auto = o.range ? null : autoRange(data, { t0, t1, minSpan: o.minSpan ?? 0 });
  // No value in view and no range given: a [0, 1] placeholder, whose ticks would be a made-up
  // scale, so the value axis is drawn without them.
  const placeholder = !o.range && !auto;
  const range = o.range ?? auto ?? [0, 1];
  const valueAxis = o.valueAxis ?? true, timeAxis = o.timeAxis ?? true;
  const padding = o.padding ?? tracePadding({ valueAxis, timeAxis, axisWidth: o.axisWidth });
  const L = traceLayout(width, height, { t0, t1, range, padding });
  const vt = valueAxis && !placeholder ? valueTicks(L.lo, L.hi, L.y1 - L.y0) : { ticks: [], decimals: 0 };

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

  // grid: a vertical line per tick of drawTimeAxis (same step and reference); a horizontal line
  // per value tick, or a mid line when there is no value axis
  ctx.strokeStyle = o.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  const step = tickStep(t1 - t0, L.x1 - L.x0);
  const ref = o.reference ?? t1;
  for (const k of tickNumbers(t0, t1, step, ref) ?? []) {
    const x = Math.round(L.x(ref + k * step)) + 0.5;
    if (x < L.x0 || x > L.x1) continue;
    ctx.moveTo(x, L.y0);
    ctx.lineTo(x, L.y1);
  }
  const ys = valueAxis ? vt.ticks.map((v) => Math.round(L.y(v)) + 0.5) : [Math.round((L.y0 + L.y1) / 2) + 0.5];
  for (const y of ys) {
    ctx.moveTo(L.x0, y);
    ctx.lineTo(L.x1, y);
  }
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

  // axes, drawn last so nothing covers their text
  const fontPx = 10;
  if (valueAxis) {
    ctx.strokeStyle = o.axis;
    ctx.lineWidth = 1;
    ctx.beginPath();
    const xa = Math.round(L.x0) - 0.5;
    ctx.moveTo(xa, L.y0);
    ctx.lineTo(xa, L.y1);
    for (const v of vt.ticks) {
      const y = Math.round(L.y(v)) + 0.5;
      ctx.moveTo(xa - 3, y);
      ctx.lineTo(xa, y);
    }
    ctx.stroke();
    ctx.fillStyle = o.text;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const room = L.x0 - 6;
    vt.ticks.forEach((v, i) => {
      const top = i === vt.ticks.length - 1;
      const label = top && o.units ? `${formatTick(v, vt.decimals)} ${o.units}` : formatTick(v, vt.decimals);
      // A label wider than the gutter gets a smaller font (down to 7 px) rather than clipped.
      ctx.font = `${fontPx}px system-ui, sans-serif`;
      const w = ctx.measureText(label).width;
      if (w > room) ctx.font = `${Math.max(7, Math.floor(fontPx * room / w))}px system-ui, sans-serif`;
      // kept inside the canvas: a tick at the very top or bottom of the plot
      const y = Math.min(height - fontPx / 2, Math.max(fontPx / 2, L.y(v)));
      ctx.fillText(label, L.x0 - 5, y);
    });
  }
  let timeTicks = [];
  if (timeAxis) {
    timeTicks = timeTickLabels(ctx, L, { reference: ref, format: o.format ?? null, unit: o.unit ?? 's', color: o.text, axis: o.axis, top: L.y1, fontPx });
  }
  ctx.restore();
  return { layout: L, range, gaps, missing, points, last, ticks: vt.ticks, timeTicks, theme: o };
}

// Time ticks along the bottom of the plot area L, from y = top: a 4 px mark and a label per tick,
// seconds relative to `reference` ("−14" ... "0 s") or format(t). Returns the tick times.
function timeTickLabels(ctx, L, { reference, format, unit, color, axis = color, top, fontPx }) {
  const { t0, t1 } = L;
  const step = tickStep(t1 - t0, L.x1 - L.x0);
  ctx.strokeStyle = axis;
  ctx.fillStyle = color;
  ctx.lineWidth = 1;
  ctx.font = `${fontPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  ctx.beginPath();
  const ticks = [];
  for (const k of tickNumbers(t0, t1, step, reference) ?? []) {
    const t = reference + k * step;
    const x = Math.round(L.x(t)) + 0.5;
    if (x < L.x0 - 0.5 || x > L.x1 + 0.5) continue;
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + 4);
    const rel = Math.round(k * step * 1000) / 1000;
    const label = format ? format(t) : `${rel > 0 ? '+' : rel < 0 ? '−' : ''}${Math.abs(rel)}${rel === 0 ? ` ${unit}` : ''}`;
    ctx.textAlign = x < L.x0 + 12 ? 'left' : x > L.x1 - 12 ? 'right' : 'center';
    ctx.fillText(label, x, top + 5);
    ticks.push(t);
  }
  ctx.stroke();
  return ticks;
}

/**
 * A time axis for traces drawn with the same t0, t1 and padding: ticks labelled in seconds
 * relative to `reference` (default t1: "−10" ... "0 s"), or by `format(t)`. `valueAxis` and
 * `axisWidth` as given to drawTrace (default padding: tracePadding of them) keep the ticks under
 * the traces' grid lines. Colours from `theme` ('auto' by default), `color` for the text.
 */
export function drawTimeAxis(ctx, { t0, t1, reference = t1, valueAxis = true, axisWidth, padding = tracePadding({ valueAxis, timeAxis: false, axisWidth }), theme = 'auto', color, background = null, format = null, unit = 's', pixelRatio = 1 }) {
  if (!(Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0)) throw new SensorformerError('INVALID_ARGUMENT', `drawTimeAxis: need finite t0 < t1, got ${t0}, ${t1}`);
  if (!Number.isFinite(reference)) throw new SensorformerError('INVALID_ARGUMENT', `drawTimeAxis: reference must be a finite time, got ${reference}`);
  pixelRatio = pixelRatioOption(pixelRatio, 'drawTimeAxis');
  const colors = resolveTheme(theme);
  const width = ctx.canvas.width / pixelRatio, height = ctx.canvas.height / pixelRatio;
  const L = traceLayout(width, height, { t0, t1, range: [0, 1], padding });
  ctx.save();
  ctx.scale(pixelRatio, pixelRatio);
  if (background) {
    ctx.fillStyle = background;
    ctx.fillRect(0, 0, width, height);
  }
  const text = color ?? colors.text;
  const ticks = timeTickLabels(ctx, L, { reference, format, unit, color: text, axis: text, top: 0, fontPx: Math.max(9, Math.min(11, height - 8)) });
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
