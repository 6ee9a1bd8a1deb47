// probabilities and label from a head (docs/model.md "Outputs"), shared by Model.forward and
// StreamSession.pooled so that a window and a session state a prediction the same way.

// softmax of a head, stably (the max subtracted first, so a logit of 1000 does not overflow exp),
// summed in float64 and rounded to float32 once at the end.
function softmax(head) {
  let max = -Infinity;
  for (const v of head) max = Math.max(max, v);
  const e = Float64Array.from(head, (v) => Math.exp(v - max));
  let sum = 0;
  for (const v of e) sum += v;
  return Float32Array.from(e, (v) => v / sum);
}

// With labels (config "labels", one per head output): probabilities (softmax of the head) and
// label (the name of the head's arg-max; a tie goes to the first). Without labels neither key
// is there: labels are what says that the head is a classifier (a regression head's softmax
// would mean nothing). No present token leaves the pooled vector at zero and the head at its
// bias (docs/model.md): a prediction from no data, so both are null then.
export function prediction(labels, head, anyPresent) {
  if (!labels) return {};
  if (!anyPresent) return { probabilities: null, label: null };
  let best = 0;
  for (let i = 1; i < head.length; i++) if (head[i] > head[best]) best = i;
  return { probabilities: softmax(head), label: labels[best] };
}
