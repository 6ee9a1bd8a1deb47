// Live traces: one canvas per model stream, the last VIEW_SECONDS of what the assembler holds (the
// very samples the model is fed, on their nominal grid), with disconnect gaps marked, the model's
// current window shaded and the selected query/key patches highlighted.
import { autoRange, drawTimeAxis, drawTrace, seriesFromStream } from '../../web/src/render/index.js';
import { fitCanvas, h, hostNow } from './dom.js';
import { STREAM_VIEW } from './streams.js';
import { palette } from './theme.js';

export const VIEW_SECONDS = 15;
export const VIEW_LAG = 0.6;  // s: the newest ECG frame (73 samples, ~0.56 s) has arrived by then
// The value axis's gutter (CSS px), the same for every trace and the shared time axis so their
// plot areas line up: "−1000 µV" (ACC, ECG) fits at 10 px.
export const AXIS_WIDTH = 52;

export class TracesPanel {
  #rows = [];
  #axis;
  #session = null;
  #frame = 0;
  #lastText = 0;

  constructor(container, axisCanvas, gapBadge) {
    this.container = container;
    this.gapBadge = gapBadge;
    this.window = null;        // { t0, t1 } of the latest inference
    this.highlights = [];      // [{ id, t0, t1, role: 'query' | 'key', label }]: coloured by the palette's query / key
    this.afterDraw = null;     // called after each frame (the look-back strip scrolls with the traces)
    for (const view of STREAM_VIEW) {
      const value = h('span', { class: 'value' }, '–');
      const source = h('span', { class: 'src' }, '');
      const canvas = h('canvas', { class: 'trace', dataset: { stream: view.id, gaps: '0', gapsTotal: '0', points: '0' }, role: 'img', 'aria-label': `${view.title} trace in ${view.unit}, the last ${VIEW_SECONDS} s, with disconnect gaps marked` });
      const row = h('div', { class: `trace-row${view.tall ? ' tall' : ''}`, dataset: { stream: view.id } },
        h('div', { class: 'trace-meta' },
          h('div', { class: 'trace-name' }, h('span', { class: 'dot', dataset: { stream: view.id } }), view.title),
          h('div', { class: 'trace-value' }, value, h('span', { class: 'unit' }, view.unit)),
          source),
        canvas);
      container.append(row);
      this.#rows.push({ view, canvas, value, source, row, fit: fitCanvas(canvas), range: null });
    }
    this.#axis = { canvas: axisCanvas, fit: fitCanvas(axisCanvas) };
  }

  setSession(session) {
    this.#session = session;
    for (const r of this.#rows) r.range = null;
  }

  start() {
    const loop = () => {
      // ~30 frames per second is plenty for a 15 s window
      if ((this.#frame++ & 1) === 0) this.draw();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  draw() {
    const session = this.#session;
    const now = hostNow();
    const t1 = now - VIEW_LAG, t0 = t1 - VIEW_SECONDS;
    let gapsInView = 0;
    const colors = palette();
    const updateText = now - this.#lastText > 0.25;
    if (updateText) this.#lastText = now;
    for (const r of this.#rows) {
      const ctx = r.canvas.getContext('2d');
      const buffer = session?.assembler.get(r.view.id);
      const device = session?.deviceOfStream(r.view.id);
      const series = buffer && buffer.size ? seriesFromStream(buffer.slice(t0 - 1, t1 + 1)) : { times: [], values: [] };
      const ongoing = device?.state === 'reconnecting';
      const gaps = (buffer?.gaps ?? []).map(([a, b]) => [a, b, ongoing && b > now - 1.5]);
      const target = autoRange(series, { t0, t1, minSpan: r.view.minSpan });
      r.range = smoothRange(r.range, target);
      const highlights = this.highlights.filter((x) => x.id === r.view.id).map((x) => ({ ...x, color: colors[x.role] }));
      const out = drawTrace(ctx, series, {
        t0, t1, reference: now, range: r.range ?? undefined, minSpan: r.view.minSpan, style: r.view.style, maxStep: r.view.maxStep,
        gaps, window: this.window, highlights, color: colors.stream(r.view.id) || r.view.color, theme: 'auto', background: colors.background, text: colors.text,
        valueAxis: true, axisWidth: AXIS_WIDTH, units: r.view.unit, timeAxis: false,
        pixelRatio: r.fit.pixelRatio, lineWidth: r.view.tall ? 1.4 : 1.25,
      });
      gapsInView += out.gaps;
      const ds = r.canvas.dataset;
      ds.gaps = String(out.gaps);                          // in view
      ds.gapsTotal = String(buffer?.gaps.length ?? 0);     // in the retained 120 s
      ds.points = String(out.points);
      ds.highlights = String(highlights.length);
      ds.newest = buffer && buffer.size ? buffer.newest.toFixed(3) : '';
      r.row.classList.toggle('stale', !device || device.state !== 'streaming');
      if (updateText) {
        r.value.textContent = out.last ? out.last.v.toFixed(r.view.digits) : '–';
        r.source.textContent = device ? `${buffer.placement} · ${device.name}` : 'no device';
      }
    }
    const axis = this.#axis.canvas.getContext('2d');
    axis.clearRect(0, 0, this.#axis.canvas.width, this.#axis.canvas.height);
    drawTimeAxis(axis, { t0, t1, reference: now, valueAxis: true, axisWidth: AXIS_WIDTH, pixelRatio: this.#axis.fit.pixelRatio, theme: 'auto', color: colors.text, unit: 's' });
    if (this.gapBadge) {
      this.gapBadge.hidden = gapsInView === 0;
      this.gapBadge.dataset.count = String(gapsInView);
    }
    this.afterDraw?.();
  }
}

// Eases the value axis toward the data's range (never cutting the data off) so traces do not jump.
function smoothRange(current, target) {
  if (!target) return current;
  if (!current) return target;
  const k = 0.12;
  let [lo, hi] = current;
  lo = target[0] < lo ? target[0] : lo + k * (target[0] - lo);
  hi = target[1] > hi ? target[1] : hi + k * (target[1] - hi);
  return [lo, hi];
}
