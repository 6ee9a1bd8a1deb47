// Small DOM helpers. Nothing here writes a style attribute from markup: sizes go through CSSOM
// properties (allowed under the page's CSP, which forbids inline styles in HTML).

/** h('div', { class: 'x', dataset: { a: 1 }, onclick }, child, 'text') -> Element */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/**
 * Keeps a canvas's backing store at its CSS size x devicePixelRatio; calls onResize() after a
 * later change. Returns { get pixelRatio, get width, get height } (CSS pixels).
 */
export function fitCanvas(canvas, onResize = () => {}) {
  const state = { pixelRatio: 1, width: 0, height: 0 };
  const apply = (notify = true) => {
    const r = canvas.getBoundingClientRect();
    const pr = Math.min(3, Math.max(1, window.devicePixelRatio || 1));
    const w = Math.max(1, Math.round(r.width)), hgt = Math.max(1, Math.round(r.height));
    if (w === state.width && hgt === state.height && pr === state.pixelRatio) return;
    state.width = w;
    state.height = hgt;
    state.pixelRatio = pr;
    canvas.width = Math.round(w * pr);
    canvas.height = Math.round(hgt * pr);
    if (notify) onResize();
  };
  new ResizeObserver(() => apply()).observe(canvas);
  apply(false);  // sized now; onResize only on later changes (the caller is still being built)
  return state;
}

/** Clock time "12:03:04" of host seconds. */
export function clockTime(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
}

/** "−3.2 s" for a time relative to a reference. */
export function relTime(dt, digits = 1) {
  const v = Math.abs(dt) < 0.05 ? 0 : dt;
  return `${v < 0 ? '−' : v > 0 ? '+' : ''}${Math.abs(v).toFixed(digits)} s`;
}

export const hostNow = () => (performance.timeOrigin + performance.now()) / 1000;
