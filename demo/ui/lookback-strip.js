// The stream mode's attention picture: the newest final token's attention over its look-back, as
// one strip with a row per stream on the traces' time axis (the same seconds, the same value-axis
// gutter, so a key lines up with the patch of the trace it stands for). Each key's patch is coloured
// by its weight (viridis, 0 -> that block's largest weight), the query's patch is outlined and
// the look-back [t - W, t] is shaded. Last layer, mean over heads. With two blocks per layer
// (factorized) the query's own stream shows its within-stream (time) block and the other streams
// the across-streams (channel) block: each block's weights sum to 1 over its own keys, so each is
// scaled by its own largest weight.
import { viridis } from '../../web/src/render/index.js';
import { fitCanvas, h, hostNow, relTime } from './dom.js';
import { STREAM_VIEW } from './streams.js';
import { palette } from './theme.js';
import { AXIS_WIDTH, VIEW_LAG, VIEW_SECONDS } from './traces-panel.js';

// The rows' labels: the size of the page's other small print (11 px, style.css), which a row of
// the strip (112 px / 8 streams, style.css) holds with room to spare.
const LABEL_FONT = '11px system-ui, sans-serif';

// Which block's weight a key's row shows: the query's own stream reads its within-stream block,
// the other streams the block across streams; 'flattened' (one block) serves both.
const PRIORITY = { own: ['time', 'flattened', 'channel'], other: ['channel', 'flattened'] };

export class LookbackStrip {
  #fit;

  constructor(canvas, caption) {
    this.canvas = canvas;
    this.caption = caption;
    this.lookback = null;
    this.#fit = fitCanvas(canvas, () => this.draw());
  }

  /** The newest token's look-back (StreamInference 'result' detail.lookback). */
  update(lookback) {
    this.lookback = lookback;
    if (!lookback) {
      this.caption.textContent = 'waiting for the first final token…';
      return;
    }
    const q = lookback.query;
    const view = STREAM_VIEW.find((v) => v.id === q.id);
    const counts = lookback.blocks.map((b) => `${b.keys.length} ${b.block}`).join(' + ');
    this.caption.textContent = `newest token: ${view?.title ?? q.id} at ${relTime(q.time - hostNow())} · attends to ${counts} keys within ${lookback.lookbackSeconds} s · layer ${lookback.layer + 1}, mean of ${lookback.heads} heads · colour: weight ÷ its block's largest`;
  }

  /** Cells to draw: { row, t0, t1, v } per key, with the block it was read from. */
  cells() {
    const lb = this.lookback;
    if (!lb) return [];
    const byBlock = new Map(lb.blocks.map((b) => [b.block, b]));
    const out = [];
    for (const [r, view] of STREAM_VIEW.entries()) {
      const block = (view.id === lb.query.id ? PRIORITY.own : PRIORITY.other).map((name) => byBlock.get(name)).find((b) => b?.keys.some((k) => k.id === view.id));
      if (!block) continue;
      for (const k of block.keys) if (k.id === view.id) out.push({ row: r, t0: k.time, t1: k.t1, v: block.max > 0 ? k.weight / block.max : 0, weight: k.weight, block: block.block });
    }
    return out;
  }

  draw() {
    const ctx = this.canvas.getContext('2d');
    const pr = this.#fit.pixelRatio, W = this.canvas.width / pr, H = this.canvas.height / pr;
    ctx.save();
    ctx.setTransform(pr, 0, 0, pr, 0, 0);
    const colors = palette();
    ctx.fillStyle = colors.background;
    ctx.fillRect(0, 0, W, H);
    const now = hostNow(), t1 = now - VIEW_LAG, t0 = t1 - VIEW_SECONDS;
    const plotW = Math.max(1, W - AXIS_WIDTH);
    const x = (t) => AXIS_WIDTH + ((t - t0) / (t1 - t0)) * plotW;
    const rows = STREAM_VIEW.length, rh = H / rows;
    ctx.font = LABEL_FONT;
    const labelFont = ctx.font;  // as the context took it (the tests read it)
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (const [r, view] of STREAM_VIEW.entries()) {
      ctx.fillStyle = colors.text;
      ctx.fillText(view.short, AXIS_WIDTH - 6, (r + 0.5) * rh);
      if (r) {
        ctx.fillStyle = colors.line;
        ctx.fillRect(AXIS_WIDTH, Math.round(r * rh), plotW, 1);
      }
    }
    ctx.beginPath();
    ctx.rect(AXIS_WIDTH, 0, plotW, H);
    ctx.clip();
    const lb = this.lookback;
    let drawn = 0;
    if (lb) {
      const q = lb.query;
      // the look-back: keys can only lie in [t - W, t]
      ctx.fillStyle = colors.lookbackFill;
      ctx.fillRect(x(q.time - lb.lookbackSeconds), 0, x(q.time) - x(q.time - lb.lookbackSeconds), H);
      for (const c of this.cells()) {
        const [red, green, blue] = viridis(c.v);
        ctx.fillStyle = `rgb(${red}, ${green}, ${blue})`;
        const a = x(c.t0), b = x(c.t1);
        ctx.fillRect(a, c.row * rh + 1, Math.max(1.5, b - a - 0.5), rh - 2);
        drawn++;
      }
      const r = STREAM_VIEW.findIndex((v) => v.id === q.id);
      if (r >= 0) {
        ctx.strokeStyle = colors.query;
        ctx.lineWidth = 1.5;
        ctx.strokeRect(x(q.time), r * rh + 0.75, Math.max(2, x(q.t1) - x(q.time)), rh - 1.5);
      }
    }
    ctx.restore();
    const ds = this.canvas.dataset;
    ds.draws = String(Number(ds.draws ?? 0) + 1);
    ds.keys = String(drawn);
    ds.rows = String(rows);
    ds.labelFont = labelFont;
    ds.query = lb ? `${lb.query.id} ${lb.query.time.toFixed(3)}` : '';
    // Without the token's age, which changes every frame: the label changes with the token.
    const label = lb
      ? `Look-back attention of the newest final token (${STREAM_VIEW.find((v) => v.id === lb.query.id)?.title ?? lb.query.id}): ${drawn} keys coloured by weight, last layer, mean over heads`
      : 'Look-back attention strip, waiting for the first final token';
    if (this.canvas.getAttribute('aria-label') !== label) this.canvas.setAttribute('aria-label', label);
  }
}

const BLOCK_TITLES = { time: 'within its stream (time block)', channel: 'across streams in its time bin (channel block)', flattened: 'all tokens (flattened)' };
const TOP_KEYS = 6;

/**
 * The same rows as a list, for the attention card: per block, the newest token's keys with the
 * largest weights (mean over heads, last layer) and their weights as bars (0 - 1: a block's
 * weights sum to 1). Redrawn with each new token, not every frame.
 */
export function renderKeyList(root, lookback) {
  if (!lookback) {
    root.replaceChildren(h('p', { class: 'muted' }, 'waiting for the first final token…'));
    root.dataset.keys = '0';
    return;
  }
  const now = hostNow();
  const title = (id) => STREAM_VIEW.find((v) => v.id === id)?.title ?? id;
  const q = lookback.query;
  let listed = 0;
  const blocks = lookback.blocks.map((b) => {
    const top = [...b.keys].sort((x, y) => y.weight - x.weight).slice(0, TOP_KEYS);
    listed += top.length;
    return h('section', { class: 'key-block', dataset: { block: b.block } },
      h('h3', {}, BLOCK_TITLES[b.block] ?? b.block, ' ', h('span', { class: 'kind' }, `${b.keys.length} keys`)),
      h('ol', { class: 'key-list' }, ...top.map((k) => h('li', {},
        h('span', { class: 'dot', dataset: { stream: k.id } }),
        h('span', { class: 'key-name' }, `${title(k.id)} ${relTime(k.time - now)}`),
        h('span', { class: 'key-bar' }, h('span', { class: 'key-fill', dataset: { w: k.weight.toFixed(3) } })),
        h('span', { class: 'key-w' }, k.weight.toFixed(2))))));
  });
  root.replaceChildren(
    h('p', { class: 'key-head' }, 'Newest final token: ', h('b', {}, `${title(q.id)} ${relTime(q.time - now)}`),
      ` · layer ${lookback.layer + 1}, mean of ${lookback.heads} heads · its largest weights`),
    ...blocks);
  // Widths through CSSOM (the CSP forbids style attributes in markup).
  for (const fill of root.querySelectorAll('.key-fill')) fill.style.setProperty('--w', fill.dataset.w);
  root.dataset.keys = String(listed);
}
