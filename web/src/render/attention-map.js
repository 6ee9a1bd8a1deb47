// Canvas rendering of one attention map (a group's H x g x g weights, as Model.forward returns
// them) with labelled axes and a colour scale, plus the hit-testing a page needs for hover and
// selection. No DOM beyond the canvas it is given; works with OffscreenCanvas too.
import { SensorformerError } from '../errors.js';
import { viridis } from './colormap.js';

import { pixelRatioOption, resolveTheme } from './traces.js';

// Room around the cells (CSS px) besides the labels: the colour bar and its numbers on the right,
// half a label line above the first row.
const BAR = { gap: 8, width: 10, text: 4 };
const TOP = 6;
const LABEL_GAP = 4;   // between the cells (or the colour strips) and the labels
const STRIP = 6;       // colour strip (4 px) + 2 px

/**
 * Geometry of a map drawn into a width x height canvas: where the cells are. `margins` { left,
 * top, right, bottom } (CSS px) is what the labels and the colour bar need (drawAttentionMap
 * measures it; the default fits labels of about 8 characters in a 10 px font). fit: 'fill'
 * (default) stretches the cells to fill the canvas inside the margins (cells may be oblong);
 * 'square' keeps them square and centres the map in the room left over.
 * @returns {{ x0, y0, cellWidth, cellHeight, width, height, g, cell, size }} cell / size: the
 * cell's and the map's smaller side (square maps: the cell and the map side).
 */
export function mapLayout(width, height, g, { margins = { left: 56, top: TOP, right: 46, bottom: 44 }, fit = 'fill' } = {}) {
  if (fit !== 'fill' && fit !== 'square') throw new SensorformerError('INVALID_ARGUMENT', `mapLayout: fit must be 'fill' or 'square', got ${fit}`);
  let w = Math.max(1, width - margins.left - margins.right), h = Math.max(1, height - margins.top - margins.bottom);
  let x0 = margins.left, y0 = margins.top;
  if (fit === 'square') {
    const side = Math.min(w, h);
    x0 += (w - side) / 2;
    y0 += (h - side) / 2;
    w = h = side;
  }
  const cellWidth = w / g, cellHeight = h / g;
  return { x0, y0, cellWidth, cellHeight, width: w, height: h, g, cell: Math.min(cellWidth, cellHeight), size: Math.min(w, h) };
}

/** Canvas pixel -> { query, key } row/column of the map, or null outside the cells. */
export function cellAt(layout, x, y) {
  const cw = layout.cellWidth ?? layout.cell, ch = layout.cellHeight ?? layout.cell;
  const q = Math.floor((y - layout.y0) / ch), k = Math.floor((x - layout.x0) / cw);
  return q >= 0 && k >= 0 && q < layout.g && k < layout.g ? { query: q, key: k } : null;
}

// A map as Model.forward returns one: dims [H, g, g] of positive integers and H x g x g weights.
// Returns [H, g]. A map whose weights do not fill its dims would be drawn from bytes that are not
// there (or allocate a picture for a size the weights do not have).
function mapShape(map, fn) {
  const dims = map?.dims;
  if (!(dims && dims.length === 3 && [...dims].every((d) => Number.isInteger(d) && d > 0) && dims[1] === dims[2] && map.weights && typeof map.weights.length === 'number'))
    throw new SensorformerError('INVALID_ARGUMENT', `${fn}: map must be an attention map ({ dims: [H, g, g], weights }, Model.forward's), got dims ${JSON.stringify(dims ? [...dims] : dims)}`);
  const [H, g] = dims;
  if (map.weights.length !== H * g * g) throw new SensorformerError('SHAPE_MISMATCH', `${fn}: the map's dims [${H}, ${g}, ${g}] need ${H * g * g} weights, it has ${map.weights.length}`);
  return [H, g];
}

/** The g x g weights of one head (0..H-1), or their mean over heads (head = 'mean'). */
export function headWeights(map, head) {
  const [H, g] = mapShape(map, 'headWeights');
  if (head !== 'mean') {
    const h = Number(head);  // a <select>'s "1" too: "1" + 1 would be "11"
    if (!(Number.isInteger(h) && h >= 0 && h < H)) throw new SensorformerError('INDEX_OUT_OF_RANGE', `headWeights: head must be 0..${H - 1} or 'mean', got ${head}`);
    return map.weights.subarray(h * g * g, (h + 1) * g * g);
  }
  const out = new Float32Array(g * g);
  for (let h = 0; h < H; h++) for (let i = 0; i < g * g; i++) out[i] += map.weights[h * g * g + i] / H;
  return out;
}

/**
 * The same map with its rows and columns in another order: `order[i]` is the position in `map`
 * of the new row/column i (e.g. channel-block tokens sorted by stream instead of by time). The
 * result is a map like the input (tokens, weights H x g x g, dims), so every function here takes it.
 */
export function reorderMap(map, order) {
  const [H, g] = mapShape(map, 'reorderMap');
  if (order?.length !== g) throw new SensorformerError('SHAPE_MISMATCH', `reorderMap: order has ${order?.length} entries, the map ${g}`);
  const seen = new Uint8Array(g);
  for (const k of order) {
    if (!(Number.isInteger(k) && k >= 0 && k < g) || seen[k]++) throw new SensorformerError('INVALID_ARGUMENT', `reorderMap: order must hold each of 0..${g - 1} once (a permutation), got ${JSON.stringify(Array.from(order))}`);
  }
  const weights = new Float32Array(H * g * g);
  for (let h = 0; h < H; h++) {
    const base = h * g * g;
    for (let i = 0; i < g; i++) {
      const row = base + order[i] * g;
      for (let j = 0; j < g; j++) weights[base + i * g + j] = map.weights[row + order[j]];
    }
  }
  const tokens = map.tokens ? Int32Array.from(order, (k) => map.tokens[k]) : undefined;
  return { ...map, tokens, weights, dims: [H, g, g] };
}

/**
 * Labels for the rows and columns of an attention map: "<modality> <time> s" per token, the time
 * in seconds after `reference` (default: the earliest token time, so the window's first patch is
 * "0.0 s"). tokens: ForwardResult.tokens; group: an AttentionMap (its `tokens`), an array of token
 * indices, or null for every token. names: display names by modality (e.g. { ecg: 'ECG' }; default
 * the modality as the model names it); a modality fed by several streams gets "#<stream>" so the
 * labels tell them apart. digits: decimals of the time (default 1).
 */
export function tokenLabels(tokens, group = null, { reference, names = {}, digits = 1 } = {}) {
  if (!tokens || !tokens.time || !tokens.modality || !tokens.stream) throw new SensorformerError('INVALID_ARGUMENT', 'tokenLabels: tokens must be a forward result\'s tokens ({ stream, modality, time, present })');
  if (!(Number.isInteger(digits) && digits >= 0 && digits <= 20)) throw new SensorformerError('INVALID_ARGUMENT', `tokenLabels: digits must be an integer from 0 to 20, got ${String(digits)}`);
  const n = tokens.time.length;
  const idx = group === null || group === undefined ? Array.from({ length: n }, (_, i) => i) : Array.from(group.tokens ?? group);
  for (const i of idx) if (!(Number.isInteger(i) && i >= 0 && i < n)) throw new SensorformerError('INDEX_OUT_OF_RANGE', `tokenLabels: token index ${i} is not in 0..${n - 1}`);
  let ref = reference;
  if (ref === undefined || ref === null) {
    ref = Infinity;
    for (let i = 0; i < n; i++) if (tokens.time[i] < ref) ref = tokens.time[i];
    if (!Number.isFinite(ref)) ref = 0;
  }
  const streamsOf = new Map();
  for (let i = 0; i < n; i++) {
    const m = tokens.modality[i];
    if (!streamsOf.has(m)) streamsOf.set(m, new Set());
    streamsOf.get(m).add(tokens.stream[i]);
  }
  return idx.map((i) => {
    const m = tokens.modality[i];
    const name = (names[m] ?? m) + (streamsOf.get(m).size > 1 ? ` #${tokens.stream[i]}` : '');
    const dt = tokens.time[i] - ref;
    const text = Math.abs(dt).toFixed(digits);
    return `${name} ${Number(text) === 0 || dt >= 0 ? '' : '−'}${text} s`;
  });
}

/**
 * Draws the map, filling the canvas: the labels' room is measured, the cells take the rest
 * (options.fit 'square' keeps cells square). labels[i] names row/column i (e.g. "ecg 3.2 s", see
 * tokenLabels); absent[i] marks masked keys (hatched columns). The scale runs from 0 to the
 * largest weight shown (printed on the bar), so a flat map is visibly flat rather than stretched;
 * `maxWeight` fixes the top of the scale instead (e.g. 1). `colors[i]` (CSS colours) draws a strip
 * beside row and column i (e.g. by sensor); `hover` ({ query, key }) outlines that row and column;
 * `selected` outlines one cell. theme: 'auto' (default, the page's prefers-color-scheme) | 'dark'
 * | 'light' | an object of colours (resolveTheme); `background` and `text` override it.
 * `pixelRatio` (devicePixelRatio): the canvas holds that many pixels per CSS pixel; margins, fonts
 * and the returned layout are in CSS pixels.
 */
export function drawAttentionMap(ctx, map, { head = 0, labels = [], absent = [], selected = null, hover = null, colors = null, maxWeight = null, pixelRatio = 1, theme = 'auto', background, text, font = '10px sans-serif', axisTitle = 'query ↓  key →', fit = 'fill' } = {}) {
  const th = resolveTheme(theme);
  background ??= th.background;
  text ??= th.text;
  pixelRatio = pixelRatioOption(pixelRatio, 'drawAttentionMap');
  const [, g] = mapShape(map, 'drawAttentionMap');
  if (maxWeight !== null && maxWeight !== undefined && !(typeof maxWeight === 'number' && maxWeight > 0 && Number.isFinite(maxWeight)))
    throw new SensorformerError('INVALID_ARGUMENT', `drawAttentionMap: maxWeight must be a finite number > 0 or null, got ${String(maxWeight)}`);
  for (const [name, list] of [['labels', labels], ['absent', absent], ['colors', colors]]) {
    if (list !== null && list !== undefined && !(Array.isArray(list) || ArrayBuffer.isView(list))) throw new SensorformerError('INVALID_ARGUMENT', `drawAttentionMap: ${name} must be an array (one entry per row and column) or null`);
  }
  labels ??= [];
  absent ??= [];
  const w = headWeights(map, head);
  // A NaN weight draws as 0 (viridis) and leaves the scale to the others.
  let max = 0;
  for (const v of w) if (v > max) max = v;
  if (maxWeight) max = maxWeight;
  // Drawn in CSS pixels: a canvas sized width x pixelRatio for a sharp picture keeps the layout
  // (and so cellAt with mouse offsets) in CSS pixels.
  const width = ctx.canvas.width / pixelRatio, height = ctx.canvas.height / pixelRatio;
  ctx.save();
  ctx.scale(pixelRatio, pixelRatio);

  // The room the labels need: the widest label (rows on the left; columns rotated 45 degrees
  // below, so a label of width L reaches L / sqrt(2) down), the colour bar's numbers on the right.
  ctx.font = font;
  const fontPx = Number(/(\d+(?:\.\d+)?)px/.exec(font)?.[1] ?? 10);
  const labelOf = (i) => labels[i] ?? String(i);
  let widest = 0;
  for (let i = 0; i < g; i++) widest = Math.max(widest, ctx.measureText(labelOf(i)).width);
  const pad = LABEL_GAP + (colors ? STRIP : 0);
  const barText = Math.max(ctx.measureText(max.toFixed(2)).width, ctx.measureText('0').width);
  const titleRoom = axisTitle ? fontPx + 2 : 0;
  const margins = {
    left: Math.ceil(pad + widest + 2),
    top: Math.ceil(Math.max(TOP, fontPx / 2 + 1)),
    right: Math.ceil(BAR.gap + BAR.width + BAR.text + barText + 2),
    bottom: Math.ceil(pad + (widest + fontPx) / Math.SQRT2 + 2 + titleRoom),
  };
  const layout = mapLayout(width, height, g, { margins, fit });
  const { x0, y0, cellWidth: cw, cellHeight: ch } = layout;
  const mw = layout.width, mh = layout.height;
  ctx.fillStyle = background;
  ctx.fillRect(0, 0, width, height);

  // cells: one image pixel per cell, scaled without smoothing
  const img = new ImageData(g, g);
  for (let i = 0; i < g * g; i++) {
    const [r, gr, b] = viridis(max > 0 ? w[i] / max : 0);
    img.data.set([r, gr, b, 255], 4 * i);
  }
  const off = typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(g, g) : Object.assign(document.createElement('canvas'), { width: g, height: g });
  off.getContext('2d').putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x0, y0, mw, mh);

  // masked keys: hatched columns (light lines read on viridis's dark end, the colour of a masked key)
  ctx.strokeStyle = 'rgba(255,255,255,0.25)';
  for (let k = 0; k < g; k++) {
    if (!absent[k]) continue;
    const x = x0 + k * cw;
    ctx.beginPath();
    for (let y = 0; y < mh; y += 6) {
      ctx.moveTo(x, y0 + y);
      ctx.lineTo(x + cw, y0 + Math.min(mh, y + cw));
    }
    ctx.stroke();
  }
  if (hover) {
    // the hovered query's row and key's column, outlined
    ctx.strokeStyle = 'rgba(255,255,255,0.55)';
    ctx.lineWidth = 1;
    if (hover.query !== undefined && hover.query !== null) ctx.strokeRect(x0 - 0.5, y0 + hover.query * ch - 0.5, mw + 1, ch + 1);
    if (hover.key !== undefined && hover.key !== null) ctx.strokeRect(x0 + hover.key * cw - 0.5, y0 - 0.5, cw + 1, mh + 1);
  }
  if (selected) {
    ctx.strokeStyle = '#ff6b6b';
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 + selected.key * cw, y0 + selected.query * ch, Math.max(2, cw), Math.max(2, ch));
    ctx.lineWidth = 1;
  }

  // colour strips along both axes (e.g. one colour per sensor/modality)
  if (colors) {
    for (let i = 0; i < g; i++) {
      if (!colors[i]) continue;
      ctx.fillStyle = colors[i];
      const a = Math.floor(i * ch), b = Math.ceil((i + 1) * ch);
      ctx.fillRect(x0 - 7, y0 + a, 4, b - a);
      const c = Math.floor(i * cw), d = Math.ceil((i + 1) * cw);
      ctx.fillRect(x0 + c, y0 + mh + 3, d - c, 4);
    }
  }

  // axes: rows = queries, columns = keys; a readable subset labelled (a line of text apart)
  ctx.fillStyle = text;
  ctx.font = font;
  const rowStep = Math.max(1, Math.ceil((fontPx + 2) / ch));
  // rotated labels: neighbours are cw / sqrt(2) apart across the text
  const colStep = Math.max(1, Math.ceil((fontPx + 2) * Math.SQRT2 / cw));
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < g; i += rowStep) ctx.fillText(labelOf(i), x0 - pad, y0 + (i + 0.5) * ch);
  ctx.save();
  ctx.translate(x0, y0 + mh + pad);
  ctx.rotate(-Math.PI / 4);
  ctx.textAlign = 'right';
  for (let k = 0; k < g; k += colStep) {
    const d = (k + 0.5) * cw / Math.SQRT2;
    ctx.fillText(labelOf(k), d - 2, d + 2);
  }
  ctx.restore();
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  if (axisTitle) ctx.fillText(axisTitle, 4, height - 4);

  // colour scale
  const bx = x0 + mw + BAR.gap, bh = mh;
  for (let y = 0; y < bh; y++) {
    const [r, gr, b] = viridis(1 - y / bh);
    ctx.fillStyle = `rgb(${r},${gr},${b})`;
    ctx.fillRect(bx, y0 + y, BAR.width, 1);
  }
  ctx.fillStyle = text;
  ctx.textBaseline = 'middle';
  ctx.fillText(max.toFixed(2), bx + BAR.width + BAR.text, y0 + fontPx / 2);
  ctx.fillText('0', bx + BAR.width + BAR.text, y0 + bh - fontPx / 2);
  ctx.restore();
  return { layout, max, weights: w };
}
