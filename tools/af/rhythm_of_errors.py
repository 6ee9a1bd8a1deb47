"""How regular the RR rhythm is in the shipped model's test-part records, by true and predicted
class: the evidence behind the card's "what tells them apart is the beats' shape" (docs/models.md,
"Still to come").

    node tools/af/prepare.mjs --data DIR          # build/af/index.json: each record's detected beats
    /usr/bin/python3 tools/af/rhythm_of_errors.py [--data build/af] [--logits models/af-test-logits.json]

Per (true, predicted) class: the records' count and medians of heart rate (60 / median RR) and of
median |successive RR difference| / median RR, from the beats the package's detector found
(prepare.mjs), the predicted class the arg-max of the committed test logits.
"""
import argparse
import json
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
CODES = ["N", "A", "O", "~"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=pathlib.Path, default=ROOT / "build" / "af", help="prepare.mjs's output folder")
    ap.add_argument("--logits", type=pathlib.Path, default=ROOT / "models" / "af-test-logits.json")
    args = ap.parse_args()
    index = json.loads((args.data / "index.json").read_text())
    records = {r["record"]: r for r in index["records"]}
    fs = index["fs"]
    rows = {}
    for name, logits in json.loads(args.logits.read_text()).items():
        rec = records[name]
        rr = np.diff(np.asarray(rec["beats"], dtype=np.float64)) / fs
        if len(rr) < 3:
            continue  # too few beats for a successive difference
        med = np.median(rr)
        key = (rec["label"], CODES[int(np.argmax(logits))])
        rows.setdefault(key, []).append((60.0 / med, np.median(np.abs(np.diff(rr))) / med))
    print("true predicted records  heart rate  |dRR| / RR (medians)")
    for true in CODES:
        for pred in CODES:
            if (true, pred) in rows:
                a = np.asarray(rows[(true, pred)])
                print(f"{true:>4} {pred:>9} {len(a):>7}  {np.median(a[:, 0]):>10.0f}  {np.median(a[:, 1]):>8.3f}")


if __name__ == "__main__":
    main()
