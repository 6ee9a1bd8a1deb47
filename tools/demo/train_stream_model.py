"""Train the STREAMING demo model: the demo model's task (rest / walk / run, same simulated
sessions, same labels, same tokenizer config) with `causal: true` and `attention_lookback_s`, so a
stream session (model.stream) can run it incrementally and exactly. docs/model.md "Training a model
for streaming" explains the three choices made here:

  - look-back W = 4 s. With the factorized layout each layer has a time block (same stream, keys
    in [t - W, t]) and a channel block (same time_bin = 2 s bin, keys in [t - W, t], so less than
    2 s back), so a token's receptive field reaches back at most
    n_layers * (W + min(W, time_bin)) = 2 * (4 + 2) = 12 s (CONTEXT_SECONDS; the looser 4 W =
    16 s bound holds for any layout with two blocks per layer).
  - the objective is the streaming prediction, session.pooled({ seconds: 10 }): each training
    window is 12 s of context + 10 s, and the head is applied to the mean of the present tokens of
    the last 10 s only (forward(..., pool_from=end - 10)), each of which saw its full look-back.
  - random reference offsets: a session's reference time is fixed and t - ref grows for hours, so
    each training window gets referenceTime = window start - U(0, R), R = 12 h, longer than the
    slowest time-encoding component's period (2 pi max_period^((d-2)/d) = 35,333 s = 9.8 h at
    d_model 32): every component is seen at all its phases and the model cannot use one.

    node tools/demo/make_dataset.mjs build/stream-dataset.json --context 12
    node tools/demo/make_dataset.mjs build/demo-dataset.json        # for the windowed comparison
    /usr/bin/python3 tools/demo/train_stream_model.py build/stream-dataset.json \\
        --windowed-dataset build/demo-dataset.json

Writes demo/model/stream.safetensors (F16, config in its metadata), demo/model/stream-metrics.json
(held-out accuracy of the exported file at reference offsets 0 s, 600 s, 1 h, 4 h, 24 h, and the
windowed demo.safetensors at the same offsets through the same reference code), and the JS test's
fixture tests/fixtures/stream_model_windows.json (a few held-out windows at a 4 h offset with the
exported file's logits). Seeded, CPU only.
"""
import argparse
import json
import math
import pathlib
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import sensorformer_ref  # noqa: E402
from export import export_safetensors, load_safetensors  # noqa: E402
from sensorformer_ref import SensorformerRef  # noqa: E402
from train_demo_model import CONFIG as WINDOWED_CONFIG, LABELS, summarize  # noqa: E402

LOOKBACK_SECONDS = 4.0
POOL_SECONDS = 10.0            # the demo's session.pooled({ seconds: 10 })
CONTEXT_SECONDS = WINDOWED_CONFIG["n_layers"] * (LOOKBACK_SECONDS + min(LOOKBACK_SECONDS, WINDOWED_CONFIG["time_bin"]))
OFFSET_RANGE_SECONDS = 12 * 3600.0
EVAL_OFFSETS = [0.0, 600.0, 3600.0, 4 * 3600.0, 24 * 3600.0]
FIXTURE_OFFSET = 4 * 3600.0

CONFIG = dict(WINDOWED_CONFIG, causal=True, attention_lookback_s=LOOKBACK_SECONDS)


def cache_patches():
    """Patching a stream (pure Python over every sample) does not depend on the reference time,
    so it is computed once per stream object: same values, several times faster per epoch."""
    original = sensorformer_ref.patch_stream
    cache = {}

    def patch_stream(stream, modality, frac):
        key = id(stream)
        hit = cache.get(key)
        if hit is None or hit[0] is not stream:
            hit = cache[key] = (stream, original(stream, modality, frac))
        return hit[1]

    sensorformer_ref.patch_stream = patch_stream


def window_start(window):
    # make_dataset.mjs windows carry the assembler's referenceTime = the window's start
    return float(window["referenceTime"])


def with_offset(window, offset):
    return {"streams": window["streams"], "referenceTime": window_start(window) - offset}


def head(model, item, offset, pool_from_end):
    """Logits for one item with referenceTime = start - offset; pooled over the last POOL_SECONDS
    when pool_from_end (streaming model), over every present token otherwise (windowed model)."""
    w = item["window"]
    pool_from = item["end"] - POOL_SECONDS if pool_from_end else None
    return model(with_offset(w, offset), pool_from=pool_from)["head"]


def predict(model, items, offset, pool_from_end):
    model.eval()
    with torch.no_grad():
        return [head(model, it, offset, pool_from_end).tolist() for it in items]


def accuracy(logits, items):
    return sum(int(max(range(len(LABELS)), key=lambda k: z[k]) == it["label"])
               for z, it in zip(logits, items)) / max(1, len(items))


def load_items(path, context):
    data = json.loads(pathlib.Path(path).read_text())
    got = data["meta"].get("contextSeconds", 0)
    if abs(got - context) > 1e-9:
        raise SystemExit(f"{path} has {got} s of context, this model needs {context} s "
                         f"(make_dataset.mjs --context {context:g})")
    span = data["meta"]["windowSeconds"] + context
    items = [{"window": w["window"], "label": LABELS.index(w["label"]), "session": w["session"],
              "end": window_start(w["window"]) + span} for w in data["windows"]]
    return data, items


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", help="make_dataset.mjs output with --context 12")
    ap.add_argument("--windowed-dataset", default=str(ROOT / "build" / "demo-dataset.json"),
                    help="10 s windows (make_dataset.mjs, no --context) to evaluate demo.safetensors "
                         "at the same offsets ('' to skip)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "demo" / "model"))
    ap.add_argument("--fixture", default=str(ROOT / "tests" / "fixtures" / "stream_model_windows.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cache_patches()

    data, items = load_items(args.dataset, CONTEXT_SECONDS)
    sessions = sorted({it["session"] for it in items})
    held_out = sessions[-1]
    train = [it for it in items if it["session"] != held_out]
    test = [it for it in items if it["session"] == held_out]
    print(f"{len(train)} training windows, {len(test)} held out (session {held_out}); "
          f"W {LOOKBACK_SECONDS} s, context {CONTEXT_SECONDS} s, pooled {POOL_SECONDS} s, "
          f"offsets U(0, {OFFSET_RANGE_SECONDS:.0f} s)", flush=True)

    torch.manual_seed(0)
    rng = random.Random(0)
    model = SensorformerRef(CONFIG)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    steps = args.epochs * math.ceil(len(train) / args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.15)
    started = time.time()
    for epoch in range(args.epochs):
        model.train()
        rng.shuffle(train)
        total = 0.0
        for b in range(0, len(train), args.batch):
            batch = train[b:b + args.batch]
            logits = torch.stack([head(model, it, rng.uniform(0.0, OFFSET_RANGE_SECONDS), True)
                                  for it in batch])
            loss = F.cross_entropy(logits, torch.tensor([it["label"] for it in batch]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(batch)
            done = b + len(batch)
            if (b // args.batch) % 25 == 24:
                print(f"  epoch {epoch + 1}: {done}/{len(train)} windows, loss {total / done:.4f} "
                      f"({time.time() - started:.0f} s)", flush=True)
        print(f"epoch {epoch + 1}: loss {total / len(train):.4f} ({time.time() - started:.0f} s)", flush=True)
    training_seconds = time.time() - started

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "stream.safetensors"
    export_safetensors(model, CONFIG, path, dtype="F16")
    # The shipped numbers are those of the exported F16 file, read back as the JS package reads it.
    _, exported = load_safetensors(path)
    by_offset, logits_at = {}, {}
    for off in EVAL_OFFSETS:
        logits_at[off] = predict(exported, test, off, True)
        acc, per_class, confusion = summarize(logits_at[off], test)
        by_offset[f"{off:g}"] = {"accuracy": acc, "per_class": {k: v["accuracy"] for k, v in per_class.items()},
                                 "confusion": confusion}
        print(f"stream.safetensors, offset {off:>6g} s: held-out accuracy {acc:.4f}", flush=True)

    windowed = None
    if args.windowed_dataset:
        wdata = json.loads(pathlib.Path(args.windowed_dataset).read_text())
        wspan = wdata["meta"]["windowSeconds"]
        wtest = [{"window": w["window"], "label": LABELS.index(w["label"]),
                  "end": window_start(w["window"]) + wspan}
                 for w in wdata["windows"] if w["session"] == held_out]
        _, demo = load_safetensors(ROOT / "demo" / "model" / "demo.safetensors")
        windowed = {"model_file": "demo/model/demo.safetensors", "held_out_windows": len(wtest),
                    "pooling": "every present token of its 10 s window (as it was trained)",
                    "accuracy_by_offset": {}}
        for off in EVAL_OFFSETS:
            acc = accuracy(predict(demo, wtest, off, False), wtest)
            windowed["accuracy_by_offset"][f"{off:g}"] = acc
            print(f"demo.safetensors (windowed), offset {off:>6g} s: held-out accuracy {acc:.4f}", flush=True)

    meta = {k: v for k, v in data.get("meta", {}).items() if k != "schedules"}
    metrics = {
        "model_file": {"path": "demo/model/stream.safetensors", "dtype": "F16", "bytes": path.stat().st_size},
        "causal": True, "attention_lookback_s": LOOKBACK_SECONDS,
        "receptive_field_seconds": CONTEXT_SECONDS,
        "objective": {"pooled_seconds": POOL_SECONDS, "context_seconds": CONTEXT_SECONDS,
                      "reference_offset_seconds": [0.0, OFFSET_RANGE_SECONDS],
                      "description": "cross-entropy of the head over the masked mean of the present tokens of the "
                                     "last pooled_seconds of each window (context_seconds + pooled_seconds long), "
                                     "referenceTime = window start - U(reference_offset_seconds)"},
        "held_out_session": held_out, "held_out_windows": len(test), "training_windows": len(train),
        "accuracy": by_offset[f"{FIXTURE_OFFSET:g}"]["accuracy"],
        "accuracy_offset_seconds": FIXTURE_OFFSET,
        "accuracy_by_offset": {k: v["accuracy"] for k, v in by_offset.items()},
        "by_offset": by_offset,
        "windowed_model_by_offset": windowed,
        "epochs": args.epochs, "batch": args.batch, "lr": args.lr, "schedule": "one-cycle",
        "seed": 0, "threads": args.threads,
        "training_seconds": round(training_seconds, 1),
        "dataset": meta,
    }
    (out / "stream-metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: v for k, v in metrics.items() if k not in ("dataset", "by_offset")}, indent=2))

    if args.fixture:
        write_fixture(pathlib.Path(args.fixture), exported, test, logits_at[FIXTURE_OFFSET], held_out)


def write_fixture(path, exported, test, logits, held_out):
    """Six held-out windows (at 1/3 and 2/3 of each class's windows in time order: chosen by
    position, not by outcome) with referenceTime set FIXTURE_OFFSET before their start, and the
    exported file's outputs: the streaming head (pooled over the last 10 s), its label and forward's
    head (every present token). tests/js/stream-model.test.js recomputes them through the WASM core."""
    chosen = []
    for label in range(len(LABELS)):
        of_class = sorted((i for i, it in enumerate(test) if it["label"] == label), key=lambda i: test[i]["end"])
        chosen += [of_class[len(of_class) // 3], of_class[2 * len(of_class) // 3]]
    windows = []
    with torch.no_grad():
        for i in chosen:
            it = test[i]
            w = with_offset(it["window"], FIXTURE_OFFSET)
            full = exported(w)["head"].tolist()
            predicted = LABELS[max(range(len(LABELS)), key=lambda k: logits[i][k])]
            windows.append({"label": LABELS[it["label"]], "predicted": predicted,
                            "poolFrom": it["end"] - POOL_SECONDS, "window": w,
                            "streamingHead": logits[i], "forwardHead": full})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "generator": "tools/demo/train_stream_model.py", "model": "demo/model/stream.safetensors",
        "held_out_session": held_out, "offset_seconds": FIXTURE_OFFSET, "pooled_seconds": POOL_SECONDS,
        "windows": windows}) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


def fixture_only(argv):
    """--fixture-only: rewrite the JS fixture from the committed stream.safetensors and the
    dataset, without training (same windows, same outputs as the training run wrote)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--fixture", default=str(ROOT / "tests" / "fixtures" / "stream_model_windows.json"))
    args = ap.parse_args(argv)
    cache_patches()
    _, items = load_items(args.dataset, CONTEXT_SECONDS)
    held_out = max(it["session"] for it in items)
    test = [it for it in items if it["session"] == held_out]
    _, exported = load_safetensors(ROOT / "demo" / "model" / "stream.safetensors")
    write_fixture(pathlib.Path(args.fixture), exported, test, predict(exported, test, FIXTURE_OFFSET, True), held_out)


if __name__ == "__main__":
    if "--fixture-only" in sys.argv[1:]:
        fixture_only([a for a in sys.argv[1:] if a != "--fixture-only"])
    else:
        main(sys.argv[1:])
