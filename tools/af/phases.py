"""Test-time averaging over patch phases: does the AF model score better when each recording is
also read with its 40-sample patch grid shifted, and the class probabilities averaged?

    /usr/bin/python3 tools/af/phases.py [--model models/af.safetensors] [--phases 0,10,20,30]
        [--fold 0] [--data build/af]

A phase k drops the recording's first k samples (its start time moves k / 300 s later, the beats
move with it): the same signal, tokenized on a grid k samples later. Prints, for the validation
part and the fold's test part, the challenge F1 of each phase alone and of the mean of the class
probabilities (softmax) of the phases so far. Phase 0 is the model as shipped (its numbers are
docs/models.md's). A choice is made on the validation part only.
"""
import argparse
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
import train_af as T  # noqa: E402
from export import load_safetensors  # noqa: E402
from make_split import folds_of, validation_of  # noqa: E402


def shifted(rec, k):
    """The index entry of `rec` read from its k-th sample on."""
    out = dict(rec, offset=rec["offset"] + k, length=rec["length"] - k, startTime=float(rec["startTime"]) + k / A.FS)
    beats = np.asarray(rec["beats"], dtype=np.int64) - k
    out["beats"] = beats[beats >= 0].tolist()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "models" / "af.safetensors"))
    ap.add_argument("--phases", default="0,10,20,30")
    ap.add_argument("--fold", type=int, default=0, help="the fold the model was trained for (its test part)")
    ap.add_argument("--data", default=str(ROOT / "build" / "af"), help="prepare.mjs's output folder")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    data = T.Data(args.data)
    _, model = load_safetensors(args.model)
    model = model.float()
    A.CONFIG["modalities"] = model.config["modalities"]
    phases = [int(p) for p in args.phases.split(",")]
    # the parts train_af.py used for this fold: its validation part and its test fold
    labels = {r["record"]: r["label"] for r in data.index["records"]}
    folds = folds_of(labels)
    _, val_names = validation_of(args.fold, folds, labels)
    for part, names in [("validation", val_names), ("test", folds[args.fold])]:
        recs = [data.records[n] for n in names]
        probs = []
        for k in phases:
            items = [T.make_item(data, shifted(r, k), None, "main", False) for r in recs]
            z = torch.tensor(T.predict(model, items, "main"))
            probs.append(z.softmax(-1))
            alone = T.score(z.tolist(), items)
            mean = T.score(torch.stack(probs).mean(0).log().tolist(), items)
            print(f"{part:10s} phase {k:3d}: F1 {alone['f1']:.4f}   mean of phases {phases[:len(probs)]}: F1 {mean['f1']:.4f} ("
                  + " ".join(f"{c} {v:.3f}" for c, v in mean["per_class_f1"].items()) + ")", flush=True)


if __name__ == "__main__":
    main()
