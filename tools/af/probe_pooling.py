"""Would another pooling help? A linear probe on a trained run's frozen final embeddings.

    /usr/bin/python3 tools/af/probe_pooling.py RUN [--data build/af] [--out FILE]

The model pools its final embeddings with a masked mean (docs/model.md "Pooling"). "Other rhythm"
records often differ from normal ones by a few beats (an ectopic beat in 30 s), which a mean over
hundreds of tokens may dilute and a maximum would not. Before any model is trained with another
pooling, this asks whether the information is there: per record, the masked mean, maximum and
standard deviation of the present tokens' final embeddings (after the final LayerNorm, where the
head reads the mean), computed once with the run's exported file; then class-weighted logistic
regressions (the training's class weights, (1 / share)^0.5) on the feature sets mean,
mean + max, mean + sd and mean + max + sd, fitted on the fold's training part as it is (no
augmentation) with L-BFGS, the L2 weight (1e-4, 1e-3, 1e-2) chosen on the validation part, scored
on validation and test with the challenge's F1. The "mean" probe is the fair baseline: the same
fit on the same features the model's own head reads (that head was trained on augmented views).

A frozen probe answers a narrower question than training with the pooling would: an encoder
trained for a mean may not put what a maximum could use into its embeddings. A gain here would be
reason to train; no gain is weak evidence against.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
import train_af as T  # noqa: E402
from export import load_safetensors  # noqa: E402
from make_split import folds_of, validation_of  # noqa: E402

WEIGHT_DECAYS = [1e-4, 1e-3, 1e-2]


def features(model, data, names, variant, rr_gaps):
    """(records, 3 d) mean | max | sd of the present tokens' final embeddings, and the model's logits."""
    captured = {}
    norm = model.encoder.norm

    class Capture(nn.Module):
        def forward(self, x):
            captured["x"] = norm(x)
            return captured["x"]

    model.encoder.norm = Capture()
    items = [T.make_item(data, data.records[n], None, variant, False, rr_gaps) for n in names]
    feats, logits = [None] * len(items), [None] * len(items)
    with torch.no_grad():
        for idx in T.batches(items, None, False):
            b = A.Batch([items[i] for i in idx], config=model.config)
            z = A.forward_batched(model, b)
            x = captured["x"]  # (B, T', d) in time order, padded to whole blocks
            keep = torch.gather(b.keep, 1, b.order)
            keep = F.pad(keep, (0, x.shape[1] - keep.shape[1]), value=False)
            w = keep.to(x.dtype)[..., None]
            n = w.sum(1).clamp(min=1.0)
            mean = (x * w).sum(1) / n
            top = torch.where(keep[..., None], x, torch.full_like(x, -torch.inf)).amax(1)
            sd = (((x - mean[:, None]) ** 2 * w).sum(1) / n).sqrt()
            for j, i in enumerate(idx):
                feats[i] = torch.cat([mean[j], top[j], sd[j]])
                logits[i] = z[j]
    model.encoder.norm = norm
    return torch.stack(feats), torch.stack(logits)


def f1(logits, y):
    confusion = np.zeros((4, 4), dtype=np.int64)
    for t, p in zip(y.tolist(), logits.argmax(1).tolist()):
        confusion[t, p] += 1
    return A.challenge_f1(confusion)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--data", default=str(ROOT / "build" / "af"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="write the scores as JSON")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    run = pathlib.Path(args.run)
    metrics = json.loads((run / "metrics.json").read_text())
    _, model = load_safetensors(run / "model.safetensors")
    model = model.float().eval()
    assert model.config.get("final_norm"), "the probe reads the final LayerNorm's output"
    A.CONFIG["modalities"] = model.config["modalities"]  # make_item reads this model's streams
    data = T.Data(args.data)
    labels = {r["record"]: r["label"] for r in data.index["records"]}
    folds = folds_of(labels)
    train_names, val_names = validation_of(metrics["fold"], folds, labels)
    parts = {"train": train_names, "validation": val_names, "test": folds[metrics["fold"]]}
    rr_gaps = T.rr_gaps_of(metrics["variant"], metrics.get("rr_gaps"))
    X, Z, Y = {}, {}, {}
    for part, names in parts.items():
        X[part], Z[part] = features(model, data, names, metrics["variant"], rr_gaps)
        Y[part] = torch.tensor([A.CODES.index(labels[n]) for n in names])
    out = {"run": run.name, "fold": metrics["fold"],
           "model_head": {"validation": f1(Z["validation"], Y["validation"]), "test": f1(Z["test"], Y["test"])}, "probes": {}}
    print(f"{run.name}: the model's own head: validation {out['model_head']['validation']:.4f}, test {out['model_head']['test']:.4f}")
    counts = torch.bincount(Y["train"], minlength=4).double()
    weight = ((counts.sum() / (4 * counts)) ** 0.5).float()
    d = model.config["d_model"]
    mean, top, sd = list(range(d)), list(range(d, 2 * d)), list(range(2 * d, 3 * d))
    for name, cols in [("mean", mean), ("mean+max", mean + top), ("mean+sd", mean + sd), ("mean+max+sd", mean + top + sd)]:
        mu, scale = X["train"][:, cols].mean(0), X["train"][:, cols].std(0) + 1e-6
        x = {p: (X[p][:, cols] - mu) / scale for p in parts}
        best = None
        for wd in WEIGHT_DECAYS:
            torch.manual_seed(0)
            probe = nn.Linear(len(cols), 4)
            opt = torch.optim.LBFGS(probe.parameters(), max_iter=500, line_search_fn="strong_wolfe")

            def closure():
                opt.zero_grad()
                loss = F.cross_entropy(probe(x["train"]), Y["train"], weight=weight) + wd * (probe.weight ** 2).sum()
                loss.backward()
                return loss

            opt.step(closure)
            with torch.no_grad():
                s = {"validation": f1(probe(x["validation"]), Y["validation"]), "test": f1(probe(x["test"]), Y["test"]), "weight_decay": wd}
            if best is None or s["validation"] > best["validation"]:
                best = s
        out["probes"][name] = best
        print(f"  probe on {name:12s} validation {best['validation']:.4f}, test {best['test']:.4f} (L2 weight {best['weight_decay']})", flush=True)
    if args.out:
        path = pathlib.Path(args.out)
        rows = json.loads(path.read_text()) if path.exists() else []
        rows = [r for r in rows if r["run"] != run.name] + [out]
        path.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
