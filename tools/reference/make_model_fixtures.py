"""Generate the end-to-end model fixtures in tests/fixtures/model/ (see FIXTURES.md).

* {model}.safetensors  - weight files (docs/model.md format) of small random models covering every
  layout, pre/post norm, relu/gelu, causal masks, look-back windows (attention_lookback_s, every
  layout), final norm, heads, F16/BF16 storage, and a modality read at a higher rate (upsample_hz).
* windows.json         - three input windows (docs/model.md input format) at Unix-epoch times.
* expected.safetensors - reference outputs of every model on every window, computed in float64
  by tools/reference/sensorformer_ref.py from the stored (float32, or f16/bf16-rounded) weights.

On the way it asserts, on the reference itself: the hand-written layer math equals torch's stock
nn.TransformerEncoderLayer (math path, float64) on every query that has an unmasked key; the
exported files read back exactly; permuting streams and appending entirely missing streams leave
the pooled output unchanged; shifting a window in absolute time changes nothing; a causal model's
embeddings do not depend on later samples; a look-back model's do not depend on tokens older than
their receptive field (n_layers * W, twice that when factorized).

    /usr/bin/python3 tools/reference/make_model_fixtures.py            # regenerate
    /usr/bin/python3 tools/reference/make_model_fixtures.py --check    # validate existing files
"""
import argparse
import copy
import json
import math
import pathlib
import zlib

import numpy as np
import torch

from export import export_safetensors, load_safetensors, rounded_copy
from sensorformer_ref import FORMAT, INV_FREQ, SensorformerRef, expected_tensor_shapes, inverse_frequencies
from st_io import read_safetensors, write_safetensors

GENERATOR = "tools/reference/make_model_fixtures.py"
EPOCH = 1764460800.0  # 2025-11-30T00:00:00Z
TOL = 1e-12

COMMON = {
    "format": FORMAT, "d_model": 16, "n_heads": 2, "n_layers": 2, "dim_feedforward": 32,
    "layer_norm_eps": 1e-5, "max_period": 10000.0, "min_present_fraction": 0.5, "n_sensors": 4,
    "modalities": [
        {"name": "ecg", "patch_len": 16, "mean": 0.0, "std": 1000.0},
        {"name": "acc_x", "patch_len": 8, "mean": 0.0, "std": 1.0},
        {"name": "hr", "patch_len": 2, "mean": 70.0, "std": 15.0},
        {"name": "rr", "patch_len": 4, "mean": 0.8, "std": 0.15},
        {"name": "temperature", "patch_len": 1, "mean": 33.0, "std": 2.0}],
    "placements": ["chest", "wrist", "finger"],
    "rate_bucket_edges_hz": [1.0, 10.0, 100.0],
}

# name: (parameter seed name, storage dtype, overrides)
MODELS = {
    "flattened": ("flattened", "F32", dict(layout="flattened", norm_first=False, activation="relu",
                                           final_norm=False, causal=False, n_outputs=0)),
    "time": ("time", "F32", dict(layout="time", norm_first=True, activation="gelu", final_norm=True,
                                 causal=False, n_outputs=0, n_heads=4)),
    "channel": ("channel", "F32", dict(layout="channel", norm_first=False, activation="gelu",
                                       final_norm=False, causal=False, time_bin=2.0, n_outputs=2)),
    "factorized": ("factorized", "F32", dict(layout="factorized", norm_first=True,
                                             activation="gelu", final_norm=True, causal=False,
                                             time_bin=1.0, n_outputs=3)),
    "flattened_causal": ("flattened_causal", "F32", dict(layout="flattened", norm_first=True,
                                                         activation="gelu", final_norm=True,
                                                         causal=True, n_outputs=0)),
    "factorized_causal": ("factorized_causal", "F32", dict(layout="factorized", norm_first=False,
                                                           activation="relu", final_norm=False,
                                                           causal=True, time_bin=1.0,
                                                           n_outputs=0)),
}
# Causal models with a look-back W (attention_lookback_s), one per layout, each W short enough to
# cut keys inside its groups: channel groups span one time_bin, so W < time_bin there.
MODELS.update({
    "flattened_lookback": ("flattened_lookback", "F32", dict(layout="flattened", norm_first=True,
                                                             activation="gelu", final_norm=True,
                                                             causal=True, attention_lookback_s=2.0,
                                                             n_outputs=2)),
    "time_lookback": ("time_lookback", "F32", dict(layout="time", norm_first=False, activation="relu",
                                                   final_norm=False, causal=True,
                                                   attention_lookback_s=1.5, n_outputs=0, n_heads=4)),
    "channel_lookback": ("channel_lookback", "F32", dict(layout="channel", norm_first=True,
                                                         activation="gelu", final_norm=False,
                                                         causal=True, time_bin=2.0,
                                                         attention_lookback_s=0.5, n_outputs=0)),
    "factorized_lookback": ("factorized_lookback", "F32", dict(layout="factorized", norm_first=True,
                                                               activation="gelu", final_norm=True,
                                                               causal=True, time_bin=1.0,
                                                               attention_lookback_s=0.75,
                                                               n_outputs=3)),
})
LOOKBACK_MODELS = [n for n in MODELS if "attention_lookback_s" in MODELS[n][2]]
# flattened_lookback's weights with its ECG (130.3 Hz in the windows) read at 263 Hz ("upsample_hz";
# a rate whose patch times do not tie with the other streams' within the windows).
MODELS["flattened_upsample"] = ("flattened_lookback", "F32", dict(
    MODELS["flattened_lookback"][2],
    modalities=[dict(m, upsample_hz=263.0) if m["name"] == "ecg" else m for m in COMMON["modalities"]]))
# Models whose window-0 attention maps are not stored: flattened_upsample's 190 tokens would add
# 0.6 MB of maps that test nothing flattened_lookback's (the same layout and weights) do not.
NO_MAPS_MODELS = {"flattened_upsample"}
MODELS["factorized_f16"] = ("factorized", "F16", MODELS["factorized"][2])
MODELS["factorized_bf16"] = ("factorized", "BF16", MODELS["factorized"][2])
# The time model with the time-encoding table a seed-000 module trains with: float32
# 1 / max_period ** (arange(0, d, 2).float() / d), stored as F32 and used as it is.
MODELS["time_f32_table"] = ("time", "F32", MODELS["time"][2])
SEED_TABLE_MODELS = {"time_f32_table"}
CONFIG_ORDER = ["format", "d_model", "n_heads", "n_layers", "dim_feedforward", "activation",
                "norm_first", "layer_norm_eps", "final_norm", "layout", "causal",
                "attention_lookback_s", "time_bin",
                "max_period", "min_present_fraction", "n_sensors", "modalities", "placements",
                "rate_bucket_edges_hz", "n_outputs"]


def seed_000_table(d_model, max_period):
    """inv_freq exactly as seed 000's TimeAndIdentityEncoding computes it (float32)."""
    k = torch.arange(0, d_model, 2).float() / d_model
    return 1.0 / (max_period ** k)


def seed_of(name):
    return zlib.crc32(name.encode())


def config_of(name):
    merged = dict(COMMON, time_bin=1.0)  # time_bin is unused by flattened/time; written anyway
    merged.update(MODELS[name][2])
    return {k: merged[k] for k in CONFIG_ORDER if k in merged}  # look-back only where set


# ---------------------------------------------------------------------------------------------
# weights

def init_parameters(model, seed_name):
    """Non-trivial deterministic values for every parameter (float32)."""
    g = torch.Generator().manual_seed(seed_of(seed_name))
    with torch.no_grad():
        for module_name, module in model.named_modules():
            for pname, p in module.named_parameters(recurse=False):
                if isinstance(module, torch.nn.Embedding):
                    p.normal_(0.0, 0.5, generator=g)
                elif pname == "mask_token":
                    p.normal_(0.0, 1.0, generator=g)
                elif isinstance(module, torch.nn.LayerNorm):
                    p.normal_(0.0, 0.1, generator=g)
                    if pname == "weight":
                        p.add_(1.0)
                elif p.dim() == 2:  # Linear weights and the packed in_proj_weight
                    bound = 1.5 / math.sqrt(p.shape[1])
                    p.uniform_(-bound, bound, generator=g)
                else:  # Linear biases and in_proj_bias
                    p.normal_(0.0, 0.1, generator=g)
    return model


# ---------------------------------------------------------------------------------------------
# windows

def f32(values):
    """Round to float32-representable float64 values (the C++ side stores samples as float32)."""
    return [float(np.float32(v)) for v in values]


def with_nulls(values, missing):
    return [None if j in missing else v for j, v in enumerate(values)]


def make_windows():
    rng = np.random.default_rng(seed_of("windows"))

    # w0: ~10 s, four streams of different rates and kinds
    t0 = EPOCH + 12.3456789
    rr_units = [830, 820, 835, 810, 790, 805, 840, 860, 845, 815, 800, 825]  # 1/1024 s
    beats = [t0 + 0.21]
    for u in rr_units[1:]:
        beats.append(beats[-1] + u / 1024.0)
    ecg_rate, n_ecg = 130.3, 1306  # 81 full patches + a partial one of 10 samples
    te = np.arange(n_ecg) / ecg_rate
    ecg = 80.0 * np.sin(2 * np.pi * 0.3 * te) + rng.normal(0.0, 15.0, n_ecg)
    for b in beats:
        c = b - t0
        ecg += 1200.0 * np.exp(-0.5 * ((te - c) / 0.012) ** 2)
        ecg -= 150.0 * np.exp(-0.5 * ((te - c - 0.03) / 0.01) ** 2)
        ecg += 250.0 * np.exp(-0.5 * ((te - c - 0.25) / 0.05) ** 2)
    ecg_missing = (set(range(320, 336))          # patch 20 entirely missing
                   | {5, 100, 101, 700, 1303}     # scattered; 1303 is in the partial last patch
                   | set(range(800, 808))         # patch 50: 8/16 present -> still present
                   | set(range(960, 969)))        # patch 60: 7/16 present -> absent
    n_acc = 160
    ta = 0.37 + np.arange(n_acc) / 50.0
    acc = 0.3 + 0.2 * np.sin(2 * np.pi * 1.7 * ta) + rng.normal(0.0, 0.03, n_acc)
    acc = list(np.round(acc * 1024.0) / 1024.0)
    acc_present = [0 if j < 7 else 1 for j in range(n_acc)]  # patch 0: 1/8 present -> absent
    acc[100] = None  # a NaN with present = 1 is missing too
    w0 = {"streams": [
        {"sensor": 0, "modality": "ecg", "placement": "chest", "rateHz": ecg_rate,
         "startTime": t0, "samples": with_nulls(f32(np.round(ecg)), ecg_missing)},
        {"sensor": 1, "modality": "acc_x", "placement": "wrist", "rateHz": 50.0,
         "startTime": t0 + 0.37, "samples": [None if v is None else float(v) for v in acc],
         "present": acc_present},
        {"sensor": 2, "modality": "rr", "placement": "chest", "timestamps": beats,
         "samples": with_nulls([u / 1024.0 for u in rr_units], {6})},
        {"sensor": 3, "modality": "temperature", "placement": "wrist", "rateHz": 0.2,
         "startTime": t0 + 1.3, "samples": [33.125, 33.1875]},
    ]}

    # w1: ~6 s, an hour later; an entirely missing ECG stream between two live ones
    t1 = EPOCH + 3600.0 + 41.871234
    hr_times = [t1 + o for o in (0.0, 1.013, 2.031, 2.998, 4.021, 5.007)]
    n_acc1 = 300  # 37 full patches + a last one with 4/8 samples: exactly the threshold
    ta1 = 0.13 + np.arange(n_acc1) / 50.0
    acc1 = -0.2 + 0.4 * np.sin(2 * np.pi * 2.3 * ta1) + rng.normal(0.0, 0.05, n_acc1)
    acc1 = [float(v) for v in np.round(acc1 * 1024.0) / 1024.0]
    gap = {j for j in range(n_acc1) if 2.95 <= ta1[j] <= 4.2}  # bin [3, 4) has only absent tokens
    w1 = {"streams": [
        {"sensor": 2, "modality": "hr", "placement": "finger", "timestamps": hr_times,
         "samples": [72.0, 73.0, 75.0, 74.0, 76.0, 75.0]},
        {"sensor": 0, "modality": "ecg", "placement": "chest", "rateHz": 130.3,
         "startTime": t1 + 0.5, "samples": [None] * 780},
        {"sensor": 1, "modality": "acc_x", "placement": "wrist", "rateHz": 50.0,
         "startTime": t1 + 0.13, "samples": with_nulls(acc1, gap)},
    ]}

    # w2: one ECG patch, with an explicit reference time 2.5 s before it
    t2 = EPOCH + 7200.0 + 5.5
    ecg2 = f32(np.round(300.0 * np.sin(np.arange(16) / 2.0) + rng.normal(0.0, 20.0, 16)))
    w2 = {"streams": [{"sensor": 0, "modality": "ecg", "placement": "chest", "rateHz": 130.3,
                       "startTime": t2, "samples": ecg2}],
          "referenceTime": t2 - 2.5}
    # w3: a day: heart-rate events and hourly temperature from just after the reference time to
    # 24 h later, where a float32 time-encoding table is 1e-3 away from the float64 one
    t3 = EPOCH + 10800.0 + 0.731
    hr3 = [t3 + o for o in (0.0, 1.013, 2.031, 2.998)] + \
          [t3 + 86400.0 + o for o in (0.137, 1.152, 2.121, 3.109)]
    w3 = {"streams": [
        {"sensor": 2, "modality": "hr", "placement": "chest", "timestamps": hr3,
         "samples": [64.0, 65.0, 66.0, 64.0, 70.0, 71.0, 69.0, 70.0]},
        {"sensor": 3, "modality": "temperature", "placement": "wrist", "rateHz": 1.0 / 3600.0,
         "startTime": t3 + 5.37, "samples": f32(33.0 + 0.5 * np.sin(np.arange(25) / 4.0))},
    ]}
    return [w0, w1, w2, w3]


def windows_json(windows):
    out = ['{"windows": [']
    for wi, w in enumerate(windows):
        out.append('{"streams": [')
        out.append(",\n".join(json.dumps(s) for s in w["streams"]))
        extra = "".join(f', {json.dumps(k)}: {json.dumps(v)}' for k, v in w.items() if k != "streams")
        out.append("]" + extra + "}" + ("," if wi + 1 < len(windows) else ""))
    out.append("]}")
    return "\n".join(out) + "\n"


def check_windows(windows, text):
    assert json.loads(text) == {"windows": windows}, "windows.json does not round-trip"
    for w in windows:
        for s in w["streams"]:
            assert all(v is None or float(np.float32(v)) == v for v in s["samples"])
            times = s.get("timestamps") or [s["startTime"]]
            assert all(float(repr(t)) == t for t in times)


# ---------------------------------------------------------------------------------------------
# checks on the reference

class StockCheck:
    """layer_hook comparing encoder_layer with torch's stock layer on the same group."""

    def __init__(self):
        self.groups = self.groups_with_empty_query = self.rows = self.empty_rows = 0
        self.max_diff = 0.0

    def __call__(self, layer, x, mask, y, w):
        causal = mask & ~mask.all(dim=0, keepdim=True)  # keys masked for some queries only
        padding = mask.all(dim=0)  # absent keys are masked for every query
        # rebuild torch's inputs: src_key_padding_mask = absent keys, src_mask = the rest
        assert torch.equal(causal | padding[None, :], mask)
        ys = layer(x[None], src_mask=causal if bool(causal.any()) else None,
                   src_key_padding_mask=padding[None])[0]
        h = layer.norm1(x) if layer.norm_first else x
        _, ws = layer.self_attn(h[None], h[None], h[None], key_padding_mask=padding[None],
                                attn_mask=causal if bool(causal.any()) else None,
                                need_weights=True, average_attn_weights=False)
        ws = ws[0]
        empty = mask.all(dim=1)
        ok = ~empty
        diff = max(float((ys[ok] - y[ok]).abs().max()) if bool(ok.any()) else 0.0,
                   float((ws[:, ok] - w[:, ok]).abs().max()) if bool(ok.any()) else 0.0)
        assert diff < TOL, f"manual layer differs from stock layer by {diff}"
        assert not bool(y.isnan().any()) and not bool(w.isnan().any())
        if bool(empty.any()):
            assert bool(ys[empty].isnan().all()), "torch 1.13 is expected to give NaN here"
            assert bool((w[:, empty] == 0).all())
            self.groups_with_empty_query += 1
        self.groups += 1
        self.rows += int(ok.sum())
        self.empty_rows += int(empty.sum())
        self.max_diff = max(self.max_diff, diff)


def maxdiff(a, b):
    return float((a - b).abs().max()) if a.numel() else 0.0


def check_permutation(model, window, perm):
    base = model(window)
    w = dict(window, streams=[window["streams"][p] for p in perm])
    out = model(w)
    assert maxdiff(out["pooled"], base["pooled"]) < TOL
    if base["head"] is not None:
        assert maxdiff(out["head"], base["head"]) < TOL
    # every token keeps its embedding: match (original stream, time)
    key = lambda o, streams: {(streams[s], t): i for i, (s, t) in
                              enumerate(zip(o["token_stream"].tolist(), o["token_time"].tolist()))}
    a, b = key(base, list(range(len(perm)))), key(out, perm)
    assert a.keys() == b.keys()
    ia, ib = zip(*[(a[k], b[k]) for k in a])
    assert maxdiff(out["embeddings"][list(ib)], base["embeddings"][list(ia)]) < TOL
    return maxdiff(out["pooled"], base["pooled"])


def check_missing_streams(model, window):
    """Entirely missing streams (also one starting before everything else, which must not move
    the default reference time) leave every output unchanged."""
    base = model(window)
    t = base["referenceTime"]
    late = [{"sensor": 3, "modality": "hr", "placement": "finger", "timestamps": [t + 1.5, t + 2.5],
             "samples": [None, None]},
            {"sensor": 1, "modality": "temperature", "placement": "chest", "rateHz": 0.5,
             "startTime": t + 0.75, "samples": [33.0, 34.0, 35.0], "present": [0, 0, 0]}]
    early = [{"sensor": 2, "modality": "acc_x", "placement": "wrist", "rateHz": 50.0,
              "startTime": t - 7.25, "samples": [0.5] + [None] * 15}]  # 1/8 present: no token
    diff = 0.0
    for streams in (window["streams"] + late, early + window["streams"]):
        out = model(dict(window, streams=streams))
        assert out["referenceTime"] == t and len(out["token_time"]) == len(base["token_time"])
        diff = max(diff, maxdiff(out["pooled"], base["pooled"]),
                   maxdiff(out["embeddings"], base["embeddings"]))
    assert diff < TOL
    return diff


def check_shift(model, window, shift=1024.0):
    """Shift every time by an amount that is exact at epoch scale: outputs must not move."""
    def moved(s):
        s = dict(s)
        if s.get("timestamps") is not None:
            s["timestamps"] = [t + shift for t in s["timestamps"]]
        else:
            s["startTime"] += shift
        return s
    w = dict(window, streams=[moved(s) for s in window["streams"]])
    if window.get("referenceTime") is not None:
        w["referenceTime"] = window["referenceTime"] + shift
    base, out = model(window), model(w)
    assert maxdiff(out["embeddings"], base["embeddings"]) < TOL
    assert maxdiff(out["pooled"], base["pooled"]) < TOL


def truncate(window, cutoff):
    """Drop every sample / event at or after `cutoff` (absolute seconds)."""
    streams = []
    for s in window["streams"]:
        s = dict(s)
        if s.get("timestamps") is not None:
            n = sum(1 for t in s["timestamps"] if t < cutoff)
            s["timestamps"] = s["timestamps"][:n]
        else:
            n = sum(1 for j in range(len(s["samples"])) if s["startTime"] + j / s["rateHz"] < cutoff)
        s["samples"] = s["samples"][:n]
        if s.get("present") is not None:
            s["present"] = s["present"][:n]
        streams.append(s)
    return dict(window, streams=streams)


def check_causal_truncation(model, window, seconds=5.0):
    """Embeddings of tokens before the first changed patch do not depend on what follows."""
    base = model(window)
    cutoff = base["referenceTime"] + seconds
    out = model(truncate(window, cutoff))
    assert out["referenceTime"] == base["referenceTime"]
    orig = {(s, t): i for i, (s, t) in enumerate(zip(base["token_stream"].tolist(),
                                                     base["token_time"].tolist()))}
    patches_b, patches_o = base["tokens"].patches, out["tokens"].patches
    same, changed_times = [], []
    for i, (s, t) in enumerate(zip(out["token_stream"].tolist(), out["token_time"].tolist())):
        j = orig.get((s, t))
        if j is not None and patches_b[j] == patches_o[i]:
            same.append((i, j))
        else:
            changed_times.append(t)
    # a token at or after a changed patch's time may attend to it (t_j <= t_i): compare the others
    first_change = min(changed_times, default=math.inf)
    pairs = [(i, j) for i, j in same if out["token_time"][i] < first_change]
    ia, ib = zip(*pairs)
    diff = maxdiff(out["embeddings"][list(ia)], base["embeddings"][list(ib)])
    assert diff < TOL, diff
    return len(pairs), len(out["token_time"]), len(base["token_time"]), first_change - cutoff + seconds


def check_lookback_truncation(model, window):
    """With a look-back W, a token's output depends only on tokens at most B * W older (B = the
    attention blocks a token passes: n_layers, twice that when factorized): dropping every token
    older than a cutoff leaves the embeddings of tokens at or after cutoff + B * W unchanged, with
    the same reference time. Event-driven streams lose their older events (whole patches);
    regular streams keep their samples' times (a new startTime would round the later patch times
    differently) and have the older patches marked missing: absent tokens are masked as keys, so
    they reach no other token. tests/cpp/test_lookback.cpp drops regular patches outright at rates
    whose patch times are exact."""
    config = model.config
    base = model(window)
    blocks = config["n_layers"] * (2 if config["layout"] == "factorized" else 1)
    span = blocks * config["attention_lookback_s"]
    t_all = base["token_time"].tolist()
    cutoff = min(t_all) + 0.4 * (max(t_all) - min(t_all) - span)
    patch = {m["name"]: m["patch_len"] for m in config["modalities"]}
    streams = []
    for s in window["streams"]:
        s, P = dict(s), patch[s["modality"]]
        if s.get("timestamps") is not None:
            k = next((k for k in range(0, len(s["timestamps"]), P) if s["timestamps"][k] >= cutoff),
                     len(s["timestamps"]))
            s["timestamps"] = s["timestamps"][k:]
            s["samples"] = s["samples"][k:]
            if s.get("present") is not None:
                s["present"] = s["present"][k:]
        else:
            n = len(s["samples"])
            k = next((k for k in range(0, n, P) if s["startTime"] + k / s["rateHz"] >= cutoff), n)
            s["samples"] = [None] * k + s["samples"][k:]
        streams.append(s)
    out = model(dict(window, streams=streams, referenceTime=base["referenceTime"]))
    orig = {(s, t): i for i, (s, t) in enumerate(zip(base["token_stream"].tolist(), t_all))}
    pairs = [(i, orig[(s, t)]) for i, (s, t) in
             enumerate(zip(out["token_stream"].tolist(), out["token_time"].tolist()))
             if t >= cutoff + span]
    assert pairs and int(out["token_present"].sum()) < int(base["token_present"].sum())
    ia, ib = zip(*pairs)
    diff = maxdiff(out["embeddings"][list(ia)], base["embeddings"][list(ib)])
    assert diff < TOL, diff
    # and the look-back is not vacuous: without it those tokens differ
    unlimited = copy.deepcopy(model)
    unlimited.config = {k: v for k, v in config.items() if k != "attention_lookback_s"}
    moved = maxdiff(unlimited(window)["embeddings"], base["embeddings"])
    assert moved > 1e-3, moved
    return len(pairs), len(t_all), moved


def check_fixture_times(out, config):
    """Keep the fixtures away from float64 knife edges: distinct token times (no ties to order),
    channel-bin boundaries not within 1e-6 s, no two token times exactly W +- 1e-6 s apart."""
    t = sorted(out["token_time"].tolist())
    assert all(b - a > 1e-6 for a, b in zip(t, t[1:])), "token times too close"
    w = config.get("attention_lookback_s")
    if w is not None:
        assert all(abs((b - a) - w) > 1e-6 for i, a in enumerate(t) for b in t[i + 1:]), \
            "two token times on the look-back edge"
    if config["layout"] in ("channel", "factorized"):
        for ti in t:
            r = (ti - out["referenceTime"]) / config["time_bin"]
            assert r == 0.0 or abs(r - round(r)) > 1e-6, ("token time on a bin edge", ti)


# ---------------------------------------------------------------------------------------------
# main

def model_tensors(name, i, out, config, with_attention):
    p = f"{name}.w{i}."
    tensors = [(p + "embeddings", "F32", out["embeddings"].detach().numpy()),
               (p + "pooled", "F32", out["pooled"].detach().numpy())]
    if config["n_outputs"] > 0:
        tensors.append((p + "head", "F32", out["head"].detach().numpy()))
    tensors += [(p + "token_stream", "I32", out["token_stream"].numpy()),
                (p + "token_modality", "I32", out["token_modality"].numpy()),
                (p + "token_time", "F64", out["token_time"].numpy()),
                (p + "token_present", "U8", out["token_present"].numpy().astype(np.uint8))]
    if with_attention:
        for (layer, block, group), (idx, w) in out["attention"].items():
            a = f"{p}attn.l{layer}.{block}.g{group}"
            tensors += [(a, "F32", w.detach().numpy()), (a + ".tokens", "I32", idx.numpy())]
    return tensors


def generate(out_dir):
    torch.manual_seed(0)
    out_dir.mkdir(parents=True, exist_ok=True)
    windows = make_windows()
    text = windows_json(windows)
    check_windows(windows, text)
    (out_dir / "windows.json").write_text(text)

    base_models, expected, cases, report = {}, [], [], []
    stock = StockCheck()
    for name, (seed_name, dtype, _) in MODELS.items():
        config = config_of(name)
        if seed_name not in base_models:
            base_models[seed_name] = init_parameters(SensorformerRef(config_of(seed_name)), seed_name)
        model32 = base_models[seed_name]
        if config["modalities"] != model32.config["modalities"]:  # the seed's weights, this model's modalities
            model32 = copy.deepcopy(model32)
            model32.config = config
        if name in SEED_TABLE_MODELS:
            model32 = copy.deepcopy(model32)
            model32.time_encoding.inv_freq = seed_000_table(config["d_model"], config["max_period"])
        path = out_dir / f"{name}.safetensors"
        export_safetensors(model32, config, path, dtype)
        model = rounded_copy(model32, dtype).eval()  # float64, exactly the stored values

        # the file reads back to exactly these parameters
        config_back, loaded = load_safetensors(path)
        assert config_back == config
        for (k, a), (k2, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
            assert k == k2 and torch.equal(a, b.double()), k
        assert {k: tuple(v.shape) for k, v in loaded.state_dict().items()} == \
            expected_tensor_shapes(config)

        for i, window in enumerate(windows):
            out = model(window, layer_hook=stock)  # grad enabled: torch's math path
            check_fixture_times(out, config)
            assert all(not bool(v.isnan().any()) for v in
                       (out["embeddings"], out["pooled"]) + ((out["head"],) if out["head"] is not None else ()))
            expected += model_tensors(name, i, out, config, with_attention=(i == 0 and name not in NO_MAPS_MODELS))
            cases.append({"model": name, "window": i, "tokens": len(out["token_time"]),
                          "n_outputs": config["n_outputs"]})

        if name in SEED_TABLE_MODELS:
            # the fixture must tell the two tables apart: a runtime that ignored the stored table
            # would be this far off on the day-long window (parity tolerance: 1e-5)
            other = copy.deepcopy(model)
            other.time_encoding.inv_freq = inverse_frequencies(config["d_model"], config["max_period"])
            moved = maxdiff(other(windows[3])["embeddings"], model(windows[3])["embeddings"])
            assert moved > 1e-4, moved
            report.append(f"{name}: the float64 table would move w3's embeddings by {moved:.1e}")

        w0 = windows[0]
        perm = check_permutation(model, w0, [2, 0, 3, 1])
        check_permutation(model, windows[1], [2, 1, 0])
        miss = check_missing_streams(model, w0)
        for w in windows:
            check_shift(model, w)
        line = f"{name}: permutation |d pooled| {perm:.1e}, missing streams {miss:.1e}, shift ok"
        if config.get("attention_lookback_s") is not None:
            kept, total, moved = check_lookback_truncation(model, w0)
            line += (f", look-back: {kept} of {total} tokens unchanged when older tokens are "
                     f"dropped; without the look-back they move by {moved:.1e}")
        if config["causal"]:
            kept, t_trunc, t_full, first = check_causal_truncation(model, w0)
            line += (f", truncation to 5 s: {t_full} -> {t_trunc} tokens, {kept} compared "
                     f"(before the first changed patch at +{first:.3f} s)")
        report.append(line)

    meta = {"cases": json.dumps(cases), "generator": GENERATOR, "torch": torch.__version__}
    write_safetensors(out_dir / "expected.safetensors", expected, meta)
    print(f"stock layer check: {stock.groups} group applications, {stock.rows} query rows equal "
          f"to torch's nn.TransformerEncoderLayer (max |diff| {stock.max_diff:.1e}); "
          f"{stock.groups_with_empty_query} groups with {stock.empty_rows} fully masked queries "
          f"(torch 1.13: NaN, ours: zero context)")
    for line in report:
        print(line)


def check(out_dir):
    """Validate the files: format, configs, names and shapes; and the hand-checked token layout."""
    windows = json.loads((out_dir / "windows.json").read_text())["windows"]
    meta, tensors = read_safetensors(out_dir / "expected.safetensors")
    assert meta["generator"] == GENERATOR
    cases = json.loads(meta["cases"])
    names = set()
    for name, (_, dtype, _) in MODELS.items():
        wmeta, weights, dtypes = read_safetensors(out_dir / f"{name}.safetensors", with_dtypes=True)
        config = json.loads(wmeta["config"])
        assert config == config_of(name)
        assert {k: tuple(v.shape) for k, v in weights.items()} == expected_tensor_shapes(config)
        table = dtypes.pop(INV_FREQ)
        assert set(dtypes.values()) == {dtype}
        assert table == ("F32" if name in SEED_TABLE_MODELS else "F64"), (name, table)
    for c in cases:
        config = config_of(c["model"])
        p, T, d = f"{c['model']}.w{c['window']}.", c["tokens"], config["d_model"]
        shapes = {"embeddings": (T, d), "pooled": (d,), "token_stream": (T,),
                  "token_modality": (T,), "token_time": (T,), "token_present": (T,)}
        if c["n_outputs"]:
            shapes["head"] = (c["n_outputs"],)
        for k, s in shapes.items():
            assert tensors[p + k].shape == s, p + k
            names.add(p + k)
        if c["window"] == 0:
            attn = [k for k in tensors if k.startswith(p + "attn.")]
            assert bool(attn) == (c["model"] not in NO_MAPS_MODELS), p
            for k in attn:
                names.add(k)
                if not k.endswith(".tokens"):
                    g = tensors[k + ".tokens"].shape[0]
                    assert tensors[k].shape[1:] == (g, g), k
            covered = {}
            for k in attn:
                if k.endswith(".tokens"):
                    lb = k[len(p):].rsplit(".g", 1)[0]
                    covered.setdefault(lb, []).extend(tensors[k].tolist())
            assert all(sorted(v) == list(range(T)) for v in covered.values())
    assert names == set(tensors), set(tensors) ^ names
    assert len(cases) == len(MODELS) * len(windows)
    assert all(np.isfinite(v).all() for v in tensors.values())
    for f in sorted(out_dir.iterdir()):
        print(f"ok {f.relative_to(out_dir.parents[2])} {f.stat().st_size} bytes")
    print("tokens per window:", {c["model"]: [x["tokens"] for x in cases if x["model"] == c["model"]]
                                 for c in cases})


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=pathlib.Path, default=root / "tests" / "fixtures" / "model")
    parser.add_argument("--check", action="store_true", help="only validate existing files")
    args = parser.parse_args()
    if not args.check:
        generate(args.out_dir)
    check(args.out_dir)


if __name__ == "__main__":
    main()
