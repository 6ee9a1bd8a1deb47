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
  if (head !== 'mean') return map.weights.subarray(head * g * g, (head + 1) * g * g);
  const out = new Float32Array(g * g);
  for (let h = 0; h < H; h++) for (let i = 0; i < g * g; i++) out[i] += map.weights[h * g * g + i] / H;
  return out;
}

/**
 * Draws the map. labels[i] names row/column i (e.g. "ecg 3.2 s"); absent[i] marks masked keys
 * (hatched columns). The scale runs from 0 to the largest weight shown (printed on the bar), so a
 * flat map is visibly flat rather than stretched.
 */
export function drawAttentionMap(ctx, map, { head = 0, labels = [], absent = [], selected = null, background = '#11151c', text = '#c9d1d9' } = {}) {
  const { width, height } = ctx.canvas;
  const g = map.dims[1];
  const w = headWeights(map, head);
  let max = 0;
  for (const v of w) max = Math.max(max, v);
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
  if (selected) {
    ctx.strokeStyle = '#ff6b6b';
    ctx.lineWidth = 2;
    ctx.strokeRect(layout.x0 + selected.key * layout.cell, layout.y0 + selected.query * layout.cell, Math.max(2, layout.cell), Math.max(2, layout.cell));
    ctx.lineWidth = 1;
  }

  // axes: rows = queries, columns = keys; label a readable subset
  ctx.fillStyle = text;
  ctx.font = '10px sans-serif';
  const step = Math.max(1, Math.ceil(12 / layout.cell));
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i < g; i += step) ctx.fillText(labels[i] ?? String(i), layout.x0 - 4, layout.y0 + (i + 0.5) * layout.cell);
  ctx.save();
  ctx.translate(layout.x0, layout.y0 + layout.size + 4);
  ctx.rotate(-Math.PI / 4);
  ctx.textAlign = 'right';
  for (let k = 0; k < g; k += step) {
    const d = (k + 0.5) * layout.cell / Math.SQRT2;
    ctx.fillText(labels[k] ?? String(k), d - 2, d + 2);
  }
  ctx.restore();
  ctx.textAlign = 'left';
  ctx.fillText('query ↓  key →', 4, height - 8);

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
  return { layout, max, weights: w };
}
