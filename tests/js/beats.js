// Beat detections against reference beat times, as ANSI/AAMI EC57 scores a beat detector: each
// detection within `tolerance` seconds (150 ms) of an unmatched reference beat is a true positive.
// Both lists in time order. Returns sensitivity, positive predictivity and the median |time error|.
export function matchBeats(ref, det, tolerance = 0.15) {
  let i = 0, j = 0, tp = 0;
  const errs = [];
  while (i < ref.length && j < det.length) {
    const d = det[j] - ref[i];
    if (Math.abs(d) <= tolerance) tp++, errs.push(Math.abs(d)), i++, j++;
    else if (d < 0) j++;
    else i++;
  }
  errs.sort((a, b) => a - b);
  return { se: tp / ref.length, ppv: tp / det.length, median: errs[errs.length >> 1] };
}
