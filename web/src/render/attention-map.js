// Canvas rendering of one attention map (a group's H x g x g weights, as Model.forward returns
// them) with labelled axes and a colour scale, plus the hit-testing a page needs for hover and
// selection. No DOM beyond the canvas it is given; works with OffscreenCanvas too.
import { viridis } from './colormap.js';

const MARGIN = { left: 92, top: 8, right: 56, bottom: 64 };

/**
 * Geometry of a map drawn into a width x height canvas: where the cells are.
 * @returns {{ x0, y0, cell, size, g }}
 */
export function mapLayout(width, height, g) {
  const size = Math.max(1, Math.min(width - MARGIN.left - MARGIN.right, height - MARGIN.top - MARGIN.bottom));
  return { x0: MARGIN.left, y0: MARGIN.top, cell: size / g, size, g };
}

/** Canvas pixel -> { query, key } row/column of the map, or null outside the cells. */
export function cellAt(layout, x, y) {
  const q = Math.floor((y - layout.y0) / layout.cell), k = Math.floor((x - layout.x0) / layout.cell);
  return q >= 0 && k >= 0 && q < layout.g && k < layout.g ? { query: q, key: k } : null;
}

/** The g x g weights of one head (0..H-1), or their mean over heads (head = 'mean'). */
export function headWeights(map, head) {
  const [H, g] = map.dims;
  if (head !== 'mean') {
    const h = Number(head);  // a <select>'s "1" too: "1" + 1 would be "11"
    if (!(Number.isInteger(h) && h >= 0 && h < H)) throw new RangeError(`headWeights: head must be 0..${H - 1} or 'mean', got ${head}`);
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
  const [H, g] = map.dims;
  if (order.length !== g) throw new RangeError(`reorderMap: order has ${order.length} entries, the map ${g}`);
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
 * Draws the map. labels[i] names row/column i (e.g. "ecg 3.2 s"); absent[i] marks masked keys
 * (hatched columns). The scale runs from 0 to the largest weight shown (printed on the bar), so a
 * flat map is visibly flat rather than stretched; `maxWeight` fixes the top of the scale instead
 * (e.g. 1). `colors[i]` (CSS colours) draws a strip beside row and column i (e.g. by sensor);
 * `hover` ({ query, key }) outlines that row and column; `selected` outlines one cell.
 * `pixelRatio` (devicePixelRatio): the canvas holds that many pixels per CSS pixel; margins, fonts
 * and the returned layout are in CSS pixels.
 */
export function drawAttentionMap(ctx, map, { head = 0, labels = [], absent = [], selected = null, hover = null, colors = null, maxWeight = null, pixelRatio = 1, background = '#11151c', text = '#c9d1d9', font = '10px sans-serif', axisTitle = 'query ↓  key →' } = {}) {
  // Drawn in CSS pixels: a canvas sized width x pixelRatio for a sharp picture keeps the layout
  // (and so cellAt with mouse offsets) in CSS pixels.
  const width = ctx.canvas.width / pixelRatio, height = ctx.canvas.height / pixelRatio;
  ctx.save();
  ctx.scale(pixelRatio, pixelRatio);
  const g = map.dims[1];
  const w = headWeights(map, head);
  let max = 0;
  for (const v of w) max = Math.max(max, v);
  if (maxWeight !== null && maxWeight > 0) max = maxWeight;
  const layout = mapLayout(width, height, g);
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
  ctx.drawImage(off, layout.x0, layout.y0, layout.size, layout.size);

  // masked keys: hatched columns
  ctx.strokeStyle = 'rgba(255,255,255,0.25)';
  for (let k = 0; k < g; k++) {
    if (!absent[k]) continue;
    const x = layout.x0 + k * layout.cell;
    ctx.beginPath();
    for (let y = 0; y < layout.size; y += 6) {
      ctx.moveTo(x, layout.y0 + y);
      ctx.lineTo(x + layout.cell, layout.y0 + Math.min(layout.size, y + layout.cell));
    }
    ctx.stroke();
  }
  if (hover) {
    // the hovered query's row and key's column, outlined
    ctx.strokeStyle = 'rgba(255,255,255,0.55)';
    ctx.lineWidth = 1;
    if (hover.query !== undefined && hover.query !== null) ctx.strokeRect(layout.x0 - 0.5, layout.y0 + hover.query * layout.cell - 0.5, layout.size + 1, layout.cell + 1);
    if (hover.key !== undefined && hover.key !== null) ctx.strokeRect(layout.x0 + hover.key * layout.cell - 0.5, layout.y0 - 0.5, layout.cell + 1, layout.size + 1);
  }
  if (selected) {
    ctx.strokeStyle = '#ff6b6b';
    ctx.lineWidth = 2;
    ctx.strokeRect(layout.x0 + selected.key * layout.cell, layout.y0 + selected.query * layout.cell, Math.max(2, layout.cell), Math.max(2, layout.cell));
    ctx.lineWidth = 1;
  }

  // colour strips along both axes (e.g. one colour per sensor/modality)
  let pad = 4;
  if (colors) {
    for (let i = 0; i < g; i++) {
      if (!colors[i]) continue;
      ctx.fillStyle = colors[i];
      const a = Math.floor(i * layout.cell), b = Math.ceil((i + 1) * layout.cell);
      ctx.fillRect(layout.x0 - 7, layout.y0 + a, 4, b - a);
      ctx.fillRect(layout.x0 + a, layout.y0 + layout.size + 3, b - a, 4);
    }
    pad = 10;
  }

  // axes: rows = queries, columns = keys; label a readable subset
  ctx.fillStyle = text;
  ctx.font = font;
  const step = Math.max(1, Math.ceil(12 / layout.cell));
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < g; i += step) ctx.fillText(labels[i] ?? String(i), layout.x0 - pad, layout.y0 + (i + 0.5) * layout.cell);
  ctx.save();
  ctx.translate(layout.x0, layout.y0 + layout.size + pad);
  ctx.rotate(-Math.PI / 4);
  ctx.textAlign = 'right';
  for (let k = 0; k < g; k += step) {
    const d = (k + 0.5) * layout.cell / Math.SQRT2;
    ctx.fillText(labels[k] ?? String(k), d - 2, d + 2);
  }
  ctx.restore();
  ctx.textAlign = 'left';
  if (axisTitle) ctx.fillText(axisTitle, 4, height - 8);

  // colour scale
  const bx = layout.x0 + layout.size + 12, bh = layout.size;
  for (let y = 0; y < bh; y++) {
    const [r, gr, b] = viridis(1 - y / bh);
    ctx.fillStyle = `rgb(${r},${gr},${b})`;
    ctx.fillRect(bx, layout.y0 + y, 10, 1);
  }
  ctx.fillStyle = text;
  ctx.fillText(max.toFixed(2), bx + 12, layout.y0 + 5);
  ctx.fillText('0', bx + 12, layout.y0 + bh - 5);
  ctx.restore();
  return { layout, max, weights: w };
}
