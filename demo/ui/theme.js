// The colours of the page's canvases, read from its CSS custom properties (style.css: a dark set,
// and a light one under prefers-color-scheme: light), so the canvases and the page change
// together. The drawing functions of sensorformer/render get theme 'auto' (the same media query)
// with the card's background and the page's muted text over it.

const media = globalThis.matchMedia?.('(prefers-color-scheme: dark)') ?? null;
const listeners = new Set();
// The classes the stylesheet colours (--rest, --walk, --run): a model's label is looked up only
// among these, so a label that happens to name another property (say "bg") is not given its colour.
const CLASSES = new Set(['rest', 'walk', 'run']);
let cached = null;

/**
 * { background, text, line, tint, lookbackFill, query, key, stream(id), cls(name) }: CSS colours
 * of the current scheme (cached until it changes).
 */
export function palette() {
  if (cached) return cached;
  const style = getComputedStyle(document.documentElement);
  const v = (name) => style.getPropertyValue(name).trim();
  const streams = new Map(), classes = new Map();
  cached = {
    background: v('--card-2'), text: v('--muted'), line: v('--row-line'), tint: v('--tint'), lookbackFill: v('--lookback-fill'),
    query: v('--q'), key: v('--k'),
    // '' for a stream or class the stylesheet has no colour for: the caller's fallback applies
    stream: (id) => (streams.has(id) ? streams.get(id) : streams.set(id, v(`--${id}`)).get(id)),
    cls: (name) => (!CLASSES.has(name) ? '' : classes.has(name) ? classes.get(name) : classes.set(name, v(`--${name}`)).get(name)),
  };
  return cached;
}

/** Calls `redraw` after each change of the colour scheme (canvases that are not redrawn every frame). */
export function onSchemeChange(redraw) {
  listeners.add(redraw);
}

media?.addEventListener('change', () => {
  cached = null;
  for (const redraw of listeners) redraw();
});
