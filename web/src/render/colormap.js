// Perceptually uniform colour scale for attention weights: viridis, interpolated between 9 of its
// published key colours (dark blue = 0 -> yellow = 1).
const KEYS = [
  [68, 1, 84], [72, 40, 120], [62, 73, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [253, 231, 37],
];

/** v in [0, 1] -> [r, g, b] (0-255). Values outside are clamped; NaN maps to 0. */
export function viridis(v) {
  const x = Number.isFinite(v) ? Math.min(1, Math.max(0, v)) * (KEYS.length - 1) : 0;
  const i = Math.min(KEYS.length - 2, Math.floor(x)), f = x - i;
  return KEYS[i].map((c, k) => Math.round(c + f * (KEYS[i + 1][k] - c)));
}
