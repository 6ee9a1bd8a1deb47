"""Train the demo model: rest / walk / run from a chest strap's ECG, accelerometer, heart rate and
RR intervals plus a thermometer and an oximeter, all from the simulated wearable.

    node tools/demo/make_dataset.mjs build/demo-dataset.json      # windows through the real BLE path
    /usr/bin/python3 tools/demo/train_demo_model.py build/demo-dataset.json

The dataset's windows were produced by the package's own code path (simulated devices -> GATT
bytes -> decoders -> clock alignment -> assembler), with dropouts, disconnects and clock drift, so
the model sees at training time what the page feeds it. Sessions are split by seed: the last
session is held out and its accuracy is written to demo/model/metrics.json (and the README).
Writes demo/model/demo.safetensors (F16) with the config in its metadata.
"""
import argparse
import json
import pathlib
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
from export import export_safetensors  # noqa: E402
from sensorformer_ref import SensorformerRef  # noqa: E402

LABELS = ["rest", "walk", "run"]

CONFIG = {
    "format": "sensorformer-1",
    "d_model": 32, "n_heads": 4, "n_layers": 2, "dim_feedforward": 64,
    "activation": "gelu", "norm_first": True, "layer_norm_eps": 1e-5, "final_norm": True,
    "layout": "factorized", "causal": False, "time_bin": 2.0,
    "max_period": 10000.0, "min_present_fraction": 0.5,
    "n_sensors": 5,
    "modalities": [
        {"name": "ecg", "patch_len": 26, "mean": 0.0, "std": 400.0},       # 0.2 s at 130 Hz
        {"name": "acc_x", "patch_len": 25, "mean": 0.0, "std": 500.0},     # 0.5 s at 50 Hz, mG
        {"name": "acc_y", "patch_len": 25, "mean": 0.0, "std": 500.0},
        {"name": "acc_z", "patch_len": 25, "mean": 0.0, "std": 500.0},
        {"name": "hr", "patch_len": 2, "mean": 100.0, "std": 35.0},        # notifications, ~1 Hz
        {"name": "rr", "patch_len": 4, "mean": 0.65, "std": 0.2},          # beats
        {"name": "temperature", "patch_len": 1, "mean": 34.0, "std": 1.0},
        {"name": "spo2", "patch_len": 5, "mean": 97.0, "std": 2.0},
    ],
    "placements": ["chest", "wrist", "finger"],
    "rate_bucket_edges_hz": [1.0, 10.0, 100.0],
    "n_outputs": len(LABELS),
    "labels": LABELS,
}


def evaluate(model, items):
    model.eval()
    correct = 0
    with torch.no_grad():
        for it in items:
            correct += int(model(it["window"])["head"].argmax().item() == it["label"])
    return correct / max(1, len(items))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--out", default=str(ROOT / "demo" / "model"))
    args = ap.parse_args(argv)

    data = json.loads(pathlib.Path(args.dataset).read_text())
    items = [{"window": w["window"], "label": LABELS.index(w["label"]), "session": w["session"]}
             for w in data["windows"]]
    sessions = sorted({it["session"] for it in items})
    held_out = sessions[-1]
    train = [it for it in items if it["session"] != held_out]
    test = [it for it in items if it["session"] == held_out]
    print(f"{len(train)} training windows, {len(test)} held out (session {held_out})")

    torch.manual_seed(0)
    random.seed(0)
    model = SensorformerRef(CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    started = time.time()
    for epoch in range(args.epochs):
        model.train()
        random.shuffle(train)
        total = 0.0
        for b in range(0, len(train), args.batch):
            batch = train[b:b + args.batch]
            logits = torch.stack([model(it["window"])["head"] for it in batch])
            loss = F.cross_entropy(logits, torch.tensor([it["label"] for it in batch]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(batch)
        acc = evaluate(model, test)
        print(f"epoch {epoch + 1}: loss {total / len(train):.4f}, held-out accuracy {acc:.3f} "
              f"({time.time() - started:.0f} s)")

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    export_safetensors(model, CONFIG, out / "demo.safetensors", dtype="F16")
    per_class = {}
    model.eval()
    with torch.no_grad():
        for name in LABELS:
            subset = [it for it in test if LABELS[it["label"]] == name]
            per_class[name] = {"windows": len(subset), "accuracy": evaluate(model, subset)}
    metrics = {"held_out_session": held_out, "held_out_windows": len(test),
               "training_windows": len(train), "accuracy": evaluate(model, test),
               "per_class": per_class, "epochs": args.epochs, "dataset": data.get("meta", {})}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps(metrics, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
