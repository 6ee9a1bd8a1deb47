// Printing float32 results: the shortest decimal that reads back (parseFloat, then Math.fround)
// as the same float32. JSON.stringify prints a float32 widened to a double with up to 17 digits
// ("0.10000000149011612"); 9 significant digits always suffice for a float32 (IEEE 754-2019,
// 5.12.2), and most need fewer ("0.1").
//
// A round trip at p significant digits implies one at p + 1 (the nearest (p+1)-digit decimal is
// at least as close), so the first p that works is the shortest. The nearest p-digit decimal is
// the one to try, except at a power of two, where the float32s below are twice as dense as
// those above: there the next decimal up may read back while the nearest (below) does not.
const reads = (text, v) => Math.fround(Number(text)) === v;

/**
 * The float32 nearest v as a JS number whose own shortest text (String, JSON.stringify) is the
 * shortest decimal of that float32. NaN and +-Infinity are returned as they are.
 */
export function shortestFloat32(value) {
  const v = Math.fround(value);
  if (!Number.isFinite(v) || v === 0) return v;
  if (v !== 2 ** Math.floor(Math.log2(Math.abs(v))) * Math.sign(v)) {
    // binary search for the first p that reads back (9 always does)
    let lo = 1, hi = 9;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (reads(v.toPrecision(mid), v)) hi = mid; else lo = mid + 1;
    }
    return Number(v.toPrecision(lo));
  }
  for (let p = 1; p < 9; p++) {
    const near = v.toPrecision(p);
    if (reads(near, v)) return Number(near);
    // the decimal one unit in the last place further from zero
    const [mantissa, exponent] = v.toExponential(p - 1).split('e');
    const digits = BigInt(mantissa.replace('.', '').replace('-', '')) + 1n;
    const up = `${v < 0 ? '-' : ''}${digits}e${Number(exponent) - (p - 1)}`;
    if (reads(up, v)) return Number(up);
  }
  return Number(v.toPrecision(9));
}
