"""Train the demo model: rest / walk / run from a chest strap's ECG, accelerometer, heart rate and
RR intervals plus a thermometer and an oximeter, all from the simulated wearable.

    node tools/demo/make_dataset.mjs build/demo-dataset.json      # windows through the real BLE path
    /usr/bin/python3 tools/demo/train_demo_model.py build/demo-dataset.json

The dataset's windows were produced by the package's own code path (simulated devices -> GATT
bytes -> decoders -> clock alignment -> assembler), with dropouts, disconnects and clock drift, so
the model sees at training time what the page feeds it. Sessions are split by seed: the last
session is held out and its accuracy is written to demo/model/metrics.json (and the README).
Writes demo/model/demo.safetensors (F16) with the config in its metadata.

The armband model (`--model armband`): the same task and training from the simulated optical
armband's streams (a Polar Verity Sense's: PPG channel 0 at ~55 Hz, ACC at ~52 Hz, heart rate at
1 Hz and PPI events, on the upper arm), so that a real Verity Sense recording (a Polar Sensor
Logger export, readPolarLogger) runs through a committed model that accepts its streams. Trained on
simulated data only; a real recording has no labels and is never trained on.

    node tools/demo/make_dataset.mjs build/armband-dataset.json --device armband
    /usr/bin/python3 tools/demo/train_demo_model.py build/armband-dataset.json --model armband

Writes demo/model/armband.safetensors and demo/model/armband-metrics.json.
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
from export import export_safetensors, load_safetensors  # noqa: E402
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


# The armband model: sensors numbered as readPolarLogger numbers a Verity Sense's (ACC 1, HR and
# PPI 2, PPG 7; n_sensors 8), one placement. PPG is raw photodiode counts: normalised around the
# simulated (and a real Verity's) DC level of ~262,000 counts with a scale at which a pulse
# (~600 counts) is visible; a sensor whose DC sits elsewhere is offset, not out of range.
# Causal with a 4 s look-back (the streaming demo model's choice, train_stream_model.py), so that the
# same file runs as windows and as a streaming session (the CLI's `stream` on an export).
ARMBAND_CONFIG = dict(
    CONFIG,
    causal=True,
    attention_lookback_s=4.0,
    n_sensors=8,
    modalities=[
        {"name": "ppg_0", "patch_len": 27, "mean": 262000.0, "std": 2000.0},  # ~0.5 s at 55 Hz
        {"name": "acc_x", "patch_len": 26, "mean": 0.0, "std": 500.0},       # ~0.5 s at 52 Hz, mG
        {"name": "acc_y", "patch_len": 26, "mean": 0.0, "std": 500.0},
        {"name": "acc_z", "patch_len": 26, "mean": 0.0, "std": 500.0},
        {"name": "hr", "patch_len": 2, "mean": 100.0, "std": 35.0},
        {"name": "ppi", "patch_len": 4, "mean": 0.65, "std": 0.2},           # pulses, s
    ],
    placements=["upper_arm"],
)
MODELS = {"demo": (CONFIG, "demo.safetensors", "metrics.json"),
          "armband": (ARMBAND_CONFIG, "armband.safetensors", "armband-metrics.json")}


def predict(model, items):
    """Head outputs (logits) of every item, as lists of floats."""
    model.eval()
    with torch.no_grad():
        return [model(it["window"])["head"].tolist() for it in items]


def evaluate(model, items):
    correct = sum(int(max(range(len(LABELS)), key=lambda k: z[k]) == it["label"])
                  for z, it in zip(predict(model, items), items))
    return correct / max(1, len(items))


def summarize(logits, items):
    """Overall and per-class accuracy and the confusion matrix (rows: truth, columns: predicted)."""
    n = len(LABELS)
    confusion = [[0] * n for _ in range(n)]
    for z, it in zip(logits, items):
        confusion[it["label"]][max(range(n), key=lambda k: z[k])] += 1
    per_class = {}
    for i, name in enumerate(LABELS):
        total = sum(confusion[i])
        per_class[name] = {"windows": total, "accuracy": confusion[i][i] / max(1, total)}
    accuracy = sum(confusion[i][i] for i in range(n)) / max(1, len(items))
    return accuracy, per_class, confusion


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--out", default=str(ROOT / "demo" / "model"))
    ap.add_argument("--predictions", default=None,
                    help="where to write the exported model's held-out logits ('' to skip; default "
                         "build/demo-heldout-predictions.json, build/armband-heldout-predictions.json)")
    ap.add_argument("--model", choices=sorted(MODELS), default="demo")
    args = ap.parse_args(argv)
    config, weights_name, metrics_name = MODELS[args.model]
    if args.predictions is None:
        args.predictions = str(ROOT / "build" / f"{args.model}-heldout-predictions.json")

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
    model = SensorformerRef(config)
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
            done = b + len(batch)
            if (b // args.batch) % 25 == 24:
                print(f"  epoch {epoch + 1}: {done}/{len(train)} windows, loss {total / done:.4f} "
                      f"({time.time() - started:.0f} s)", flush=True)
        acc = evaluate(model, test)
        print(f"epoch {epoch + 1}: loss {total / len(train):.4f}, held-out accuracy {acc:.3f} "
              f"({time.time() - started:.0f} s)", flush=True)
    training_seconds = time.time() - started

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / weights_name
    export_safetensors(model, config, path, dtype="F16")
    # The shipped numbers are those of the exported F16 file, read back as the JS package reads it.
    f32_accuracy = evaluate(model, test)
    _, exported = load_safetensors(path)
    logits = predict(exported, test)
    accuracy, per_class, confusion = summarize(logits, test)
    meta = {k: v for k, v in data.get("meta", {}).items() if k != "schedules"}
    metrics = {"held_out_session": held_out, "held_out_windows": len(test),
               "training_windows": len(train), "accuracy": accuracy, "per_class": per_class,
               "confusion": {"labels": LABELS, "rows": "truth", "columns": "predicted",
                             "matrix": confusion},
               "accuracy_f32_before_export": f32_accuracy,
               "epochs": args.epochs, "batch": args.batch, "lr": args.lr,
               "training_seconds": round(training_seconds, 1),
               "model_file": {"path": f"demo/model/{weights_name}", "dtype": "F16",
                              "bytes": path.stat().st_size},
               "dataset": meta}
    (out / metrics_name).write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: v for k, v in metrics.items() if k != "dataset"}, indent=2))
    if args.predictions:
        # held-out logits of the exported file, for tools/demo/check_demo_model.mjs
        pred = pathlib.Path(args.predictions)
        pred.parent.mkdir(parents=True, exist_ok=True)
        pred.write_text(json.dumps({"held_out_session": held_out, "labels": LABELS,
                                    "accuracy": accuracy, "logits": logits}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
