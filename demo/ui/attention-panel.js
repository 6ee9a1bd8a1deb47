// The attention maps: one panel per kind of block the model's layout has (time: within a stream,
// channel: across streams in a time bin, flattened: all tokens), selectable by layer and head
// (or the mean over heads) and by group; hover names the query and key tokens and the weight;
// a click selects a cell and points at both patches on the traces. By keyboard: a map takes focus,
// the arrow keys move the highlighted cell (as hover does), Enter or Space pins it, Escape unpins;
// its aria-label says what it shows and which cell is highlighted.
import { cellAt, drawAttentionMap, headWeights, reorderMap } from '../../web/src/render/index.js';
import { fitCanvas, h, relTime } from './dom.js';
import { palette } from './theme.js';
import { describeTokens, sameToken } from './tokens.js';

const BLOCK_INFO = {
  time: { title: 'Within a stream', kind: 'time × time', note: 'time block: every patch of one sensor attends to that sensor’s other patches' },
  channel: { title: 'Across streams', kind: 'channel × channel', note: 'channel block: the patches of every sensor in one time bin attend to each other' },
  flattened: { title: 'All tokens', kind: 'token × token', note: 'flattened: every token attends to every other token of the window' },
};

const BLOCKS_OF_LAYOUT = { factorized: ['time', 'channel'], time: ['time'], channel: ['channel'], flattened: ['flattened'] };

function segmented(name, label, options, value, onChange) {
  const group = h('div', { class: 'seg', role: 'radiogroup', 'aria-label': label, id: `${name}-seg` });
  for (const o of options) {
    const input = h('input', { type: 'radio', name, value: String(o.value), id: `${name}-${o.value}` });
    input.checked = String(o.value) === String(value);
    input.addEventListener('change', () => input.checked && onChange(o.value));
    group.append(h('label', { for: `${name}-${o.value}`, title: o.title ?? '' }, input, h('span', {}, o.label)));
  }
  return group;
}

export class AttentionPanel {
  #root;
  #controls;
  #panels = new Map();   // block -> panel state
  #last = null;          // the latest result detail (with token info)
  #selectionEl;

  constructor(root, { controls, selectionEl, onSelect = () => {} }) {
    this.#root = root;
    this.#controls = controls;
    this.#selectionEl = selectionEl;
    this.onSelect = onSelect;
    this.layer = 0;
    this.head = 'mean';
    this.selection = null;  // { query: token, key: token, weight, block, layer, head }
    this.config = null;
  }

  setConfig(config) {
    this.config = config;
    this.#controls.replaceChildren(
      h('span', { class: 'ctl-label' }, 'Layer'),
      segmented('layer', 'Layer', Array.from({ length: config.n_layers }, (_, i) => ({ value: i, label: String(i + 1) })), this.layer, (v) => { this.layer = Number(v); this.redraw(); }),
      h('span', { class: 'ctl-label' }, 'Head'),
      segmented('head', 'Head', [{ value: 'mean', label: 'mean', title: 'mean over heads' },
        ...Array.from({ length: config.n_heads }, (_, i) => ({ value: i, label: String(i + 1) }))], this.head,
      (v) => { this.head = v === 'mean' ? 'mean' : Number(v); this.redraw(); }),
    );
    this.#root.replaceChildren();
    this.#panels.clear();
    for (const block of BLOCKS_OF_LAYOUT[config.layout] ?? ['flattened']) this.#panels.set(block, this.#makePanel(block));
  }

  #makePanel(block) {
    const info = BLOCK_INFO[block];
    const select = h('select', { id: `group-${block}`, 'aria-label': block === 'time' ? 'Stream' : 'Time bin', class: 'group-select' });
    const canvas = h('canvas', { id: `map-${block}`, class: 'map-canvas', tabindex: '0', role: 'img', dataset: { block, draws: '0' }, 'aria-label': `${info.title} (${info.kind}) attention map, waiting for the first window` });
    const tooltip = h('div', { class: 'tooltip', role: 'tooltip', hidden: true });
    const caption = h('div', { class: 'map-caption' });
    const figure = h('figure', { class: `map map-${block}`, dataset: { block } },
      h('figcaption', {},
        h('div', { class: 'map-title' }, h('h3', {}, info.title, ' ', h('span', { class: 'kind' }, info.kind)), h('p', {}, info.note)),
        block === 'flattened' ? null : select),
      h('div', { class: 'map-frame' }, canvas, tooltip),
      h('div', { class: 'map-axes' }, h('span', {}, 'rows: query ↓'), h('span', {}, 'columns: key →'),
        h('span', {}, block === 'time' ? 'times: s before the window end' : 'sensor, then s before the window end')),
      caption);
    this.#root.append(figure);
    const panel = { block, figure, select, canvas, tooltip, caption, choice: block === 'time' ? 'ecg' : 'latest', view: null, hover: null };
    panel.fit = fitCanvas(canvas, () => this.#draw(panel));
    select.addEventListener('change', () => { panel.choice = select.value; this.#draw(panel); });
    canvas.addEventListener('mousemove', (e) => this.#onHover(panel, e));
    canvas.addEventListener('mouseleave', () => { panel.hover = null; panel.tooltip.hidden = true; this.#draw(panel); });
    canvas.addEventListener('click', (e) => this.#onClick(panel, e));
    canvas.addEventListener('keydown', (e) => this.#onKey(panel, e));
    canvas.addEventListener('blur', () => { if (panel.keyboard) { panel.keyboard = false; panel.hover = null; panel.tooltip.hidden = true; this.#draw(panel); } });
    return panel;
  }

  /** A new forward result (detail of InferenceLoop's 'result' event). */
  update(detail) {
    const tokens = describeTokens(detail.result, detail.window, this.config, detail.end);
    this.#last = { ...detail, tokens };
    this.redraw();
  }

  /** Forgets the maps and the pinned cell (a new source: its windows are not these). */
  clear() {
    this.#last = null;
    this.clearSelection();
  }

  /** Unpins the cell; the maps stay. */
  clearSelection() {
    this.selection = null;
    this.onSelect(null);
    this.redraw();
  }

  redraw() {
    for (const panel of this.#panels.values()) this.#draw(panel);
    this.#showSelection();
  }

  // The maps of a block in the current layer, with their group options.
  #groups(panel) {
    const last = this.#last;
    if (!last?.result.attention) return [];
    const { tokens, window } = last;
    const timeBin = this.config.time_bin;
    const maps = last.result.attention.filter((m) => m.layer === this.layer && m.block === panel.block);
    return maps.map((map) => {
      const first = tokens[map.tokens[0]];
      if (panel.block === 'time') return { map, value: first.id, label: `${first.title} (${first.placement}) · ${map.tokens.length} tokens` };
      if (panel.block === 'channel') {
        const bin = Math.floor((first.time - window.referenceTime) / timeBin);
        const a = window.referenceTime + bin * timeBin - last.end;
        const streams = new Set(Array.from(map.tokens, (t) => tokens[t].id)).size;
        return { map, value: String(bin), bin, streams, label: `${relTime(a, 0)} … ${relTime(a + timeBin, 0)} · ${streams} streams` };
      }
      return { map, value: 'all', label: 'all tokens' };
    });
  }

  #chooseGroup(panel, groups) {
    if (!groups.length) return null;
    if (panel.block === 'channel') {
      const latest = [...groups].reverse().find((g) => g.streams >= 2) ?? groups[groups.length - 1];
      const options = [{ value: 'latest', label: `latest (${latest.label.split(' · ')[0]})` }, ...groups];
      syncOptions(panel.select, options, panel.choice);
      return panel.choice === 'latest' ? latest : groups.find((g) => g.value === panel.choice) ?? latest;
    }
    syncOptions(panel.select, groups, panel.choice);
    return groups.find((g) => g.value === panel.choice) ?? groups[0];
  }

  #draw(panel) {
    const ctx = panel.canvas.getContext('2d');
    const { width, height } = panel.canvas;
    const last = this.#last;
    const groups = this.#groups(panel);
    const group = this.#chooseGroup(panel, groups);
    if (!group) {
      ctx.fillStyle = palette().background;
      ctx.fillRect(0, 0, width, height);
      ctx.fillStyle = palette().text;
      ctx.font = `${13 * panel.fit.pixelRatio}px system-ui, sans-serif`;
      ctx.textAlign = 'center';
      ctx.fillText(last ? 'no tokens in this block yet' : 'waiting for the first window…', width / 2, height / 2);
      panel.view = null;
      panel.caption.textContent = '';
      panel.canvas.setAttribute('aria-label', `${BLOCK_INFO[panel.block].title} (${BLOCK_INFO[panel.block].kind}) attention map, ${last ? 'no tokens in this block yet' : 'waiting for the first window'}`);
      return;
    }
    if (panel.select.value !== group.value && panel.choice !== 'latest') panel.select.value = group.value;
    const tokens = last.tokens;
    // Channel and flattened maps: rows grouped by stream (then time), so each sensor is a block.
    let map = group.map;
    if (panel.block !== 'time') {
      const order = Array.from(map.tokens, (_, i) => i).sort((a, b) => {
        const ta = tokens[map.tokens[a]], tb = tokens[map.tokens[b]];
        return ta.stream - tb.stream || ta.time - tb.time;
      });
      map = reorderMap(map, order);
    }
    const rows = Array.from(map.tokens, (t) => tokens[t]);
    const labels = rows.map((t) => (panel.block === 'time' ? relTime(t.rel) : `${t.short} ${relTime(t.rel).replace(' s', '')}`));
    const selected = this.#selectedCell(rows);
    // a new window can have fewer tokens: the keyboard's cell stays on the map
    if (panel.hover && (panel.hover.query >= rows.length || panel.hover.key >= rows.length)) {
      panel.hover = { query: Math.min(panel.hover.query, rows.length - 1), key: Math.min(panel.hover.key, rows.length - 1) };
    }
    const { layout, max } = drawAttentionMap(ctx, map, {
      head: this.head, labels, absent: rows.map((t) => !t.present), colors: rows.map((t) => t.color),
      selected, hover: panel.hover, pixelRatio: panel.fit.pixelRatio, theme: 'auto', background: palette().background, text: palette().text,
      font: '10px system-ui, sans-serif', axisTitle: '',
    });
    panel.view = { map, rows, layout, max, weights: headWeights(map, this.head), group };
    const ds = panel.canvas.dataset;
    ds.draws = String(Number(ds.draws) + 1);
    ds.layer = String(this.layer);
    ds.head = String(this.head);
    ds.group = group.value;
    ds.size = String(rows.length);
    // where the cells are (CSS px: left, top, cell size, cells per side), for pointing at one
    ds.cells = [layout.x0, layout.y0, layout.cellWidth, layout.cellHeight, layout.g].map((v) => +v.toFixed(3)).join(' ');
    ds.hover = panel.hover ? `${panel.hover.query} ${panel.hover.key}` : '';
    panel.canvas.setAttribute('aria-label', this.#describe(panel, rows, group, selected));
    const absent = rows.filter((t) => !t.present).length;
    panel.caption.textContent = `${rows.length} tokens${absent ? `, ${absent} masked (missing data, hatched)` : ''} · layer ${this.layer + 1} · ${this.head === 'mean' ? `mean of ${map.dims[0]} heads` : `head ${this.head + 1}`} · colour scale 0 – ${max.toFixed(2)}`;
  }

  // What a screen reader says for a map: block, layer, head, group, the highlighted and pinned cells.
  // No weights: they change every second and a focused element's label is re-read when it changes.
  #describe(panel, rows, group, selected) {
    const info = BLOCK_INFO[panel.block];
    const head = this.head === 'mean' ? 'mean over heads' : `head ${this.head + 1}`;
    const cell = (c) => `query ${rows[c.query].title} ${relTime(rows[c.query].rel)}, key ${rows[c.key].title} ${relTime(rows[c.key].rel)}`;
    const parts = [`${info.title} (${info.kind}) attention map, layer ${this.layer + 1}, ${head}, ${group.label}`];
    if (panel.hover) parts.push(`highlighted ${cell(panel.hover)}`);
    if (selected) parts.push(`pinned ${cell(selected)}`);
    if (!panel.hover && !selected) parts.push('arrow keys move a highlighted cell, Enter pins it');
    return parts.join('; ');
  }

  // Arrow keys move the highlighted cell (rows: query, columns: key), Home/End jump to the first /
  // last key, Enter or Space pins it (or unpins it when it is the pinned one), Escape unpins.
  #onKey(panel, e) {
    if (!panel.view) return;
    const g = panel.view.rows.length;
    const cur = panel.hover ?? this.#selectedCell(panel.view.rows) ?? { query: 0, key: 0 };
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    let next = null;
    if (moves[e.key]) {
      // the first arrow press shows the cell it starts from
      const [dq, dk] = panel.hover ? moves[e.key] : [0, 0];
      next = { query: clamp(cur.query + dq, 0, g - 1), key: clamp(cur.key + dk, 0, g - 1) };
    } else if (e.key === 'Home' || e.key === 'End') {
      next = { query: cur.query, key: e.key === 'Home' ? 0 : g - 1 };
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      this.#pin(panel, cur.query, cur.key);
      return;
    } else if (e.key === 'Escape') {
      if (this.selection) { e.preventDefault(); e.stopPropagation(); this.clearSelection(); }
      return;
    } else {
      return;
    }
    e.preventDefault();  // arrows would scroll the page
    panel.keyboard = true;
    panel.hover = next;
    const c = this.#cellInfo(panel, next.query, next.key);
    const { layout } = panel.view;
    this.#showTooltip(panel, c, layout.x0 + (next.key + 1) * layout.cellWidth, layout.y0 + (next.query + 1) * layout.cellHeight);
    this.#draw(panel);
  }

  #selectedCell(rows) {
    const s = this.selection;
    if (!s) return null;
    const query = rows.findIndex((t) => sameToken(t, s.query));
    const key = rows.findIndex((t) => sameToken(t, s.key));
    return query >= 0 && key >= 0 ? { query, key } : null;
  }

  #cell(panel, e) {
    if (!panel.view) return null;
    const r = panel.canvas.getBoundingClientRect();
    const cell = cellAt(panel.view.layout, e.clientX - r.left, e.clientY - r.top);
    return cell ? this.#cellInfo(panel, cell.query, cell.key) : null;
  }

  #cellInfo(panel, query, key) {
    const { rows, weights, map } = panel.view;
    const g = map.dims[1];
    return { query, key, q: rows[query], k: rows[key], weight: weights[query * g + key] };
  }

  #onHover(panel, e) {
    const c = this.#cell(panel, e);
    const before = panel.hover;
    panel.keyboard = false;
    panel.hover = c ? { query: c.query, key: c.key } : null;
    if (!c) {
      panel.tooltip.hidden = true;
      if (before) this.#draw(panel);
      return;
    }
    const frame = panel.tooltip.parentElement.getBoundingClientRect();
    this.#showTooltip(panel, c, e.clientX - frame.left, e.clientY - frame.top);
    if (!before || before.query !== c.query || before.key !== c.key) this.#draw(panel);
  }

  // The tooltip of cell c near (x, y) (CSS px in the map's frame), kept inside the frame.
  #showTooltip(panel, c, x, y) {
    const head = this.head === 'mean' ? `mean of ${panel.view.map.dims[0]} heads` : `head ${this.head + 1}`;
    panel.tooltip.replaceChildren(...[
      tokenLine('query', c.q), tokenLine('key', c.k),
      h('div', { class: 'tt-weight' }, h('b', {}, c.weight.toFixed(3)), ` weight · layer ${this.layer + 1} · ${head}`),
      c.k.present ? null : h('div', { class: 'tt-note' }, 'key masked: its patch has too little data'),
    ].filter(Boolean));
    panel.tooltip.hidden = false;
    const frame = panel.tooltip.parentElement.getBoundingClientRect();
    const tw = panel.tooltip.offsetWidth, th = panel.tooltip.offsetHeight;
    const left = x + 16 + tw > frame.width ? Math.max(0, x - 16 - tw) : x + 16;
    const top = y + 16 + th > frame.height ? Math.max(0, y - 16 - th) : y + 16;
    panel.tooltip.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
  }

  #onClick(panel, e) {
    const c = this.#cell(panel, e);
    if (c) this.#pin(panel, c.query, c.key);
  }

  // Pins cell (query, key) of a panel, or unpins it when it is the pinned cell.
  #pin(panel, query, key) {
    const c = this.#cellInfo(panel, query, key);
    const current = this.selection;
    if (current && sameToken(c.q, current.query) && sameToken(c.k, current.key)) this.selection = null;
    else this.selection = { query: c.q, key: c.k, weight: c.weight, block: panel.block, layer: this.layer, head: this.head };
    this.onSelect(this.selection);
    this.redraw();
  }

  #showSelection() {
    const el = this.#selectionEl;
    const s = this.selection;
    if (!s) {
      el.replaceChildren(h('span', { class: 'muted' }, 'Hover a cell to read it (or focus a map and use the arrow keys); click or press Enter to pin it and see both patches highlighted on the traces.'));
      el.dataset.selected = 'false';
      return;
    }
    el.dataset.selected = 'true';
    el.replaceChildren(
      h('span', { class: 'sel-q' }, 'Q'), ' ', h('b', {}, s.query.title), ` ${relTime(s.query.rel)} `,
      h('span', { class: 'arrow' }, '→'), ' ',
      h('span', { class: 'sel-k' }, 'K'), ' ', h('b', {}, s.key.title), ` ${relTime(s.key.rel)} `,
      h('span', { class: 'muted' }, `· weight ${s.weight.toFixed(3)} (layer ${s.layer + 1}, ${s.head === 'mean' ? 'mean of heads' : `head ${s.head + 1}`}, ${s.block} block) `),
      h('button', { class: 'link', type: 'button', onclick: () => this.clearSelection() }, 'clear'));
  }
}

function tokenLine(role, t) {
  const span = t.event ? `${(t.t1 - t.t0).toFixed(1)} s of events` : `${((t.t1 - t.t0) * 1000).toFixed(0)} ms patch`;
  return h('div', { class: `tt-${role}` },
    h('span', { class: 'tt-role' }, role), ' ',
    h('span', { class: 'swatch', dataset: { stream: t.id } }), h('b', {}, t.title), ` · ${t.placement} · ${relTime(t.rel)} `,
    h('span', { class: 'muted' }, `(${span})`));
}

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

function syncOptions(select, options, choice) {
  const sig = options.map((o) => `${o.value}=${o.label}`).join('|');
  if (select.dataset.sig === sig) return;
  select.dataset.sig = sig;
  select.replaceChildren(...options.map((o) => h('option', { value: o.value }, o.label)));
  select.value = options.some((o) => o.value === choice) ? choice : options[0].value;
}
