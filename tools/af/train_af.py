"""Train the AF model (issue 20; docs/models.md is its model card).

    node tools/af/prepare.mjs --data DIR            # build/af/: ECG + beats through the package's code
    /usr/bin/python3 tools/af/train_af.py [--variant main] [--fold 0] [--seed 1] [--epochs 40]
        [--schedule full|v1]    # full (default): anneals by the last epoch; v1: the runs before 2026-12-03

Speed: Debian's python3-torch does its matrix products through the system BLAS; the reference BLAS
(libblas3) makes training ~10x slower than OpenBLAS: `apt-get install libopenblas0-openmp` first.

Variants (the ablations of docs/models.md; each a model trained the same way but for one change):
  main         ECG + RR events, rate augmentation, dropout augmentation, continuous-time encoding;
               an RR interval across a gap (dropout augmentation) left out of the RR stream, as
               rrFromEcg does by default
  nan-rr       main with such an interval sent as a missing (NaN) event instead: the shipped
               configuration until 2026-12-03, and the one the variants below were trained in
               (each of them differs from nan-rr by its one change)
  ecg-only     no RR stream (train and test)
  no-rate-aug  never sees a rate other than the set's 300 Hz
  index-time   the time encoding takes a token's position in time order instead of its time
               (masks still use real time: only the encoding changes)
  beats        nan-rr plus a third stream: each detected beat's ECG on a fixed grid around it
               (afmodel.beat_stream; one token per beat), the beats' morphology aligned
  beats-rr     beats with each beat's token also holding the two RR intervals before it
               (afmodel.beat_rr_context): a probe, its rhythm and morphology in one token
  beats-fine   beats-rr with the beat grid twice as fine (80 points 8 ms apart, the same span)
  zero-fill    the dropout augmentation fills lost samples with 0 mV, present (what a pipeline
               without a notion of missing samples does); scored on the "-zeros" test conditions
The ablations were trained in nan-rr's configuration (v1 schedule, 40 epochs); since 2026-12-05
they are trained again in the 60-epoch configuration (main, 10 s look-back; the single model
shipped before the pair), each differing from it by its one change:
  --variant V --rr-gaps leave-out --epochs 60 --config '{"attention_lookback_s": 10}'
(--rr-gaps: an RR interval across a gap left out or a missing event; each variant's default is
how its earlier runs were trained, recorded in metrics.json as "rr_gaps").

Reading a strap's rate: --upsample-hz 300 declares "upsample_hz": 300 on the ECG (the runtime then
reads a slower ECG at 300 Hz, interpolated) and trains the model as it will be read: a record the
rate augmentation resampled below 300 Hz is interpolated back to 300 Hz before patching, its RR and
beat streams taken at the lower rate (evaluate_af.py's rule for such a model). --no-rate-aug turns
the rate augmentation off in any variant (as the no-rate-aug variant does).

Distillation (--teacher RUN, repeatable): the loss mixes the labels' cross-entropy with the
Kullback-Leibler divergence to the teachers' mean class probabilities at a temperature
(Hinton, Vinyals and Dean, "Distilling the knowledge in a neural network", 2015): (1 - a) CE +
a T^2 KL(mean_i softmax(z_i / T) || softmax(z / T)), a = --distill-weight, T =
--distill-temperature. The teachers' logits are those of their exported files on each training
record as it is (no augmentation), computed once (teacher_logits.json in the run's folder); every
augmented view of a record is pulled towards that record's soft target (the logged loss is the
mixed one). The student is the variant trained (main: no beat stream, whatever the teachers take).

Fold k tests on fold k of tools/af/split/ and stops early on the validation part carved from the
other folds (make_split.validation_of); fold 0 is the split every reported score uses. Writes
build/af/runs/<variant>-fold<k>/: model.safetensors (F16), log.txt, metrics.json (validation and
test scores of the exported file), test_logits.json and validation_logits.json (the exported file's
logits per record) and checkpoint.pt (after every epoch; `--resume` continues a stopped run from
it). Deterministic for a seed, a thread count and a machine (torch's
CPU kernels, numpy's and Python's generators all seeded; a resumed run restores their states).
"""
import argparse
import copy
import os
import shlex
import shutil
import json
import tempfile
import math
import pathlib
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
from export import export_safetensors, load_safetensors  # noqa: E402
from conditions import STRAP_RATE  # noqa: E402  (evaluate_af.py's strap conditions use the same rate)
from make_split import folds_of, validation_of  # noqa: E402
from sensorformer_ref import SensorformerRef  # noqa: E402

AUG_RATES = [125.0, 130.0, 150.0, 180.0, 200.0, 250.0]
# --strap-aug: the largest share of notifications a record loses (at STRAP_RATE, a Polar H10's ECG rate)
STRAP_MAX_LOSS = 0.3
REF_OFFSET_S = 6 * 3600.0  # a streaming session's reference can be hours back (docs/models.md)
TOKEN_BUDGET = 12000       # tokens per batch (padded)


class Data:
    def __init__(self, folder):
        folder = pathlib.Path(folder)
        self.index = json.loads((folder / "index.json").read_text())
        self.fs = float(self.index["fs"])
        assert self.fs == A.FS
        self.ecg = np.memmap(folder / "ecg.f32", dtype=np.float32, mode="r")
        self.records = {r["record"]: r for r in self.index["records"]}

    def signal(self, rec):
        return np.array(self.ecg[rec["offset"]:rec["offset"] + rec["length"]], dtype=np.float64)


# The variants whose RR stream leaves out the intervals it cannot measure (across a dropout) rather
# than sending them as NaN events, unless the run says otherwise (--rr-gaps): main only. Every other
# variant's runs were trained with them missing, as nan-rr (the ablations, the beat-stream models).
LEAVE_OUT_RR = {"main"}


def declare_rr_gaps(config, rr_gaps):
    """config with its rr modality saying how the run was trained (docs/model.md, "missing_events"):
    a run trained with the intervals across a gap left out makes the runtime drop the missing RR
    events a caller sends, so every model gets the stream `rrFromEcg(..., { gaps: 'missing' })`
    gives the way it was trained."""
    mods = [{**m, "missing_events": "leave-out"} if m["name"] == "rr" and rr_gaps == "leave-out" else m
            for m in config["modalities"]]
    return {**config, "modalities": mods}


def rr_gaps_of(variant, recorded=None):
    """A run's rule for an RR interval across a gap: "leave-out" or "missing". recorded: the run's
    metrics.json "rr_gaps" (written since 2026-12-05; older runs followed their variant's default),
    so evaluate_af.py and a distillation's teachers feed each model as it was trained."""
    return recorded or ("leave-out" if variant in LEAVE_OUT_RR else "missing")


def make_item(data, rec, rng, variant, augment, rr_gaps=None, strap_aug=0.0, rate_aug=True):
    """One record as the model's input. augment: training's random crops, amplitude, rate (unless
    rate_aug is False or the variant is no-rate-aug), dropouts, reference offset and placement
    (evaluate_af.py builds its perturbed test inputs itself, with beats from the package's detector)."""
    x = data.signal(rec)
    beats = np.asarray(rec["beats"], dtype=np.int64)
    start = float(rec["startTime"])  # the header's base date and time, epoch seconds (as readWfdb)
    rate = A.FS
    label = A.CODES.index(rec["label"])
    if augment:
        n = len(x)
        dur = n / rate
        if dur > 16 and rng.random() < 0.5:
            L = rng.uniform(15.0, min(dur, 45.0))
            a = int(rng.uniform(0, dur - L) * rate)
            b = a + int(L * rate)
            x = x[a:b]
            beats = beats[(beats >= a) & (beats < b)] - a
        x = x * rng.uniform(0.7, 1.4)
        strap, missing = None, None
        if strap_aug > 0 and rng.random() < strap_aug:
            # A chest strap streaming (--strap-aug): its ECG at 130 Hz with whole notifications lost,
            # and its own RR intervals, measured on the device from every sample, with whole 1 s
            # notifications lost (evaluate_af.py's strap conditions). Drawn instead of the rate and
            # dropout augmentations below.
            x = A.resample(x, STRAP_RATE, rate).astype(np.float64)
            beats = np.unique(np.clip(np.round(beats * STRAP_RATE / rate).astype(np.int64), 0, len(x) - 1))
            rate = STRAP_RATE
            fraction = rng.uniform(0.0, STRAP_MAX_LOSS)
            strap = A.lose_hr_notifications(*A.rr_stream(beats, rate, None, start), fraction, rng)
            missing = A.drop_notifications(len(x), rate, fraction, rng)
            x = np.where(missing, np.nan, x)
            near = np.convolve(missing.astype(np.int64), np.ones(2 * int(0.15 * rate) + 1, dtype=np.int64), mode="same") > 0
            beats = beats[~near[beats]]  # the beat stream's beats: those the detector would report
        if strap is None and rate_aug and variant != "no-rate-aug" and rng.random() < 0.5:
            new = float(rng.choice(AUG_RATES))
            x = A.resample(x, new, rate).astype(np.float64)
            beats = np.unique(np.clip(np.round(beats * new / rate).astype(np.int64), 0, len(x) - 1))
            rate = new
        if strap is None and rng.random() < 0.5:
            lost = A.drop_notifications(len(x), rate, rng.uniform(0.0, 0.25), rng)
            if variant == "zero-fill":
                # the lost samples are 0 mV and present; the detector (evaluate_af.py runs it on
                # such ECG) loses the beats inside a loss and measures the interval across it: on
                # the test part's drop20-zeros condition it finds 9,772 intervals in 300 records,
                # this rule 9,323 (the detector adds some at the edges of the flat stretches)
                x = np.where(lost, 0.0, x)
                beats = beats[~lost[beats]]
            else:
                missing = lost
                x = np.where(missing, np.nan, x)
                # the detector reports no beat within 150 ms of a missing sample (web/src/qrs.js)
                near = np.convolve(missing.astype(np.int64), np.ones(2 * int(0.15 * rate) + 1, dtype=np.int64), mode="same") > 0
                beats = beats[~near[beats]]
        placement = int(rng.integers(len(A.CONFIG["placements"])))
    else:
        missing, placement, strap = None, 0, None
    if variant == "ecg-only":
        rr_t, rr_v = np.zeros(0), np.zeros(0)
    elif strap is not None:
        rr_t, rr_v = strap
    else:
        rr_t, rr_v = A.rr_stream(beats, rate, missing, start)
        if rr_gaps_of(variant, rr_gaps) == "leave-out":  # an interval across a gap is left out, not sent as missing
            rr_t, rr_v = A.known_rr(rr_t, rr_v)
    bm = A.beat_modality(A.CONFIG)
    beat = A.beat_stream(x, rate, beats, start, bm) if bm else None
    # a model that declares "upsample_hz" (--upsample-hz) reads a slower ECG as the runtime does,
    # after the RR and beat streams were taken at the ECG's own rate (evaluate_af.py's rule)
    x, rate = A.read_ecg(x, rate, A.ecg_read_hz(A.CONFIG))
    tokens = A.tokens_of(x, rate, rr_t, rr_v, start=start, beat=beat)
    ref = A.default_ref(tokens)
    if augment and rng.random() < 0.5:
        ref -= rng.uniform(0.0, REF_OFFSET_S)
    return {"tokens": tokens, "rate": rate, "placement": placement, "ref": ref, "label": label,
            "ecg": x, "rr_times": rr_t, "rr_values": rr_v, "beat": beat, "start": start, "record": rec["record"]}


def batches(items, rng, shuffle):
    """Items grouped by token count (little padding) into batches of at most TOKEN_BUDGET."""
    size = lambda it: sum(len(t) for (_, _, t) in it["tokens"].values())
    order = sorted(range(len(items)), key=lambda i: size(items[i]))
    out, cur, top = [], [], 0
    for i in order:
        s = size(items[i])
        if cur and max(top, s) * (len(cur) + 1) > TOKEN_BUDGET:
            out.append(cur)
            cur, top = [], 0
        cur.append(i)
        top = max(top, s)
    if cur:
        out.append(cur)
    if shuffle:
        rng.shuffle(out)
    return out


def predict(model, items, variant, dtype=torch.float32, dense=False):
    model.eval()
    logits = [None] * len(items)
    with torch.no_grad():
        for idx in batches(items, None, False):
            b = A.Batch([items[i] for i in idx], config=model.config, index_time=variant == "index-time", dtype=dtype)
            z = A.forward_batched(model, b, dense=dense)
            for j, i in enumerate(idx):
                logits[i] = z[j].tolist()
    return logits


def score(logits, items):
    confusion = np.zeros((4, 4), dtype=np.int64)
    for z, it in zip(logits, items):
        confusion[it["label"], int(np.argmax(z))] += 1
    f1, per = A.challenge_f1(confusion)
    return {"f1": f1, "per_class_f1": dict(zip(A.CODES, per)), "confusion": confusion.tolist(),
            "records": len(items)}


def rope_omega(config, pairs=None):
    """--rope-time's angular frequencies (rad/s), one per pair of a head's dimensions (dh / 2): the
    first `pairs` (default all) with periods 0.25 s to 20 s, geometric; the rest 0, a pair left
    unrotated (--rope-pairs: part of each head for content alone)."""
    half = config["d_model"] // config["n_heads"] // 2
    pairs = half if pairs is None else pairs
    assert 1 <= pairs <= half, f"--rope-pairs: 1 to {half} (d_model / n_heads / 2)"
    omega = torch.zeros(half, dtype=torch.float64)
    omega[:pairs] = 2 * math.pi / torch.logspace(math.log10(0.25), math.log10(20.0), pairs, dtype=torch.float64)
    return omega


def check_twin(model, items, variant, count=12):
    """max |logit difference| of the batched twin against the reference module (the first `count`
    items) and of its local attention against its dense attention (every item), float64. The
    index-time variant's encoding exists only in the twin (the reference module and the runtime
    encode real times), so its twin is checked against the reference with real times, and its own
    encoding by local against dense attention."""
    m = copy.deepcopy(model).double()  # (.float() afterwards would round the float64 time table)
    with torch.no_grad():
        local = predict(m, items, variant, dtype=torch.float64)
        dense = predict(m, items, variant, dtype=torch.float64, dense=True)
        bands = max(abs(a - b) for z, zd in zip(local, dense) for a, b in zip(z, zd))
        # how many batches took the bands (the rest fell back to dense attention: no check of bands)
        backs = [A.Batch([items[i] for i in idx], index_time=variant == "index-time").back for idx in batches(items, None, False)]
        if variant == "index-time":
            dense = predict(m, items[:count], "main", dtype=torch.float64, dense=True)
        worst = 0.0
        if getattr(m, "rope_omega", None) is not None:
            return worst, bands, backs  # the reference module has no rotary time: local vs dense only
        for it, zd in zip(items[:count], dense):
            w = A.window_of(it)
            w["referenceTime"] = it["ref"]
            ref = m(w)["head"].tolist()
            worst = max(worst, max(abs(a - b) for a, b in zip(ref, zd)))
    return worst, bands, backs


BASE_CONFIG = copy.deepcopy(A.CONFIG)  # afmodel's configuration before a run's options change it


# The variants with a beat stream, and its modality (afmodel.beat_stream). beats-rr, a probe: each beat's
# token also holds the two RR intervals before it; beats-fine, a probe: beats-rr on a grid twice as
# fine (8 ms, the same span).
BEAT_VARIANTS = {
    "beats": A.BEAT_MODALITY,
    "beats-rr": dict(A.BEAT_MODALITY, patch_len=A.BEAT_L + 2, rr_context=2),
    "beats-fine": dict(A.BEAT_MODALITY, patch_len=2 * A.BEAT_L + 2, rr_context=2,
                       grid_first=2 * A.BEAT_FIRST, grid_step_s=A.BEAT_STEP_S / 2),
}


def config_of(variant, overrides, upsample_hz=0.0):
    """The model configuration a run trains: afmodel's, with --config's overrides, the beat stream
    (variant beats) and the ECG's upsample_hz (--upsample-hz)."""
    config = copy.deepcopy(BASE_CONFIG)
    config.update(overrides)
    if variant in BEAT_VARIANTS:
        config["modalities"] = config["modalities"] + [BEAT_VARIANTS[variant]]
    if upsample_hz:
        config["modalities"] = [dict(m, upsample_hz=upsample_hz) if m["name"] == "ecg" else m for m in config["modalities"]]
    return config


def load_run(run):
    """A finished run's exported model (float32 SensorformerRef): its model.safetensors; for a
    --rope-time run, whose file main() removes (the runtime has no rotation), its best.pt exported
    again the same way (F16, the same config) with the run's rotation (model.rope_omega) set, as
    main() scored it."""
    path = run / "model.safetensors"
    if path.exists():
        return load_safetensors(path)[1]
    done = json.loads((run / "metrics.json").read_text())
    periods = done.get("rope_time_periods_s")
    if periods is None or not (run / "best.pt").exists():
        sys.exit(f"train_af.py: {run} has no model.safetensors" + ("" if periods is None else " and no best.pt"))
    config = config_of(done["variant"], done["config"], done.get("upsample_hz", 0.0))
    model = SensorformerRef(config)
    model.load_state_dict(torch.load(run / "best.pt"))
    with tempfile.TemporaryDirectory() as tmp:
        export_safetensors(model, declare_rr_gaps(config, done["rr_gaps"]), pathlib.Path(tmp) / "m.safetensors", dtype="F16")
        _, exported = load_safetensors(pathlib.Path(tmp) / "m.safetensors")
    # the rotation as trained: rope_omega of as many rotated pairs as the run recorded periods
    exported.rope_omega = rope_omega(config, sum(p is not None for p in periods))
    recorded = [2 * math.pi / p if p else 0.0 for p in periods]
    assert len(recorded) == len(exported.rope_omega) and all(
        abs(a - b) <= 1e-12 * max(1.0, b) for a, b in zip(recorded, exported.rope_omega.tolist())), \
        f"{run}: its rope_time_periods_s are not those of rope_omega"
    return exported


def run_logits(run, data, names):
    """{name: float64 logits} of a finished run's exported model (load_run: its model.safetensors,
    or a --rope-time run's best.pt with its rotation) on the named records as they are, each fed
    as the run was trained (its variant, its rule for RR across a gap, its modalities: make_item
    builds a beat stream only when the config has that modality)."""
    done = json.loads((run / "metrics.json").read_text())
    model = load_run(run)
    modalities = A.CONFIG["modalities"]
    A.CONFIG["modalities"] = model.config["modalities"]
    try:
        items = [make_item(data, data.records[n], None, done["variant"], False, done.get("rr_gaps")) for n in names]
    finally:
        A.CONFIG["modalities"] = modalities
    return dict(zip(names, predict(model.double(), items, done["variant"], torch.float64)))


def teacher_targets(args, data, names, out, log):
    """record -> the teachers' mean softmax(z / T) (float32 tensor (4,)), from their exported
    files' logits on the records as they are; cached in out/teacher_logits.json."""
    cache = out / "teacher_logits.json"
    teachers = [pathlib.Path(t) for t in args.teacher]
    stored = json.loads(cache.read_text()) if cache.exists() else {}
    if stored.get("teachers") != [str(t) for t in teachers] or set(stored.get("logits", {})) != set(names):
        logits = {n: [] for n in names}
        for t in teachers:
            done = json.loads((t / "metrics.json").read_text())
            assert done["fold"] == args.fold, f"--teacher {t}: trained on fold {done['fold']}, not {args.fold}"
            for n, z in run_logits(t, data, names).items():
                logits[n].append(z)
            log(f"teacher {t.name} ({done['variant']}): logits of {len(names)} training records")
        stored = {"teachers": [str(t) for t in teachers], "logits": logits}
        cache.write_text(json.dumps(stored) + "\n")
    return {n: A.mean_probability(z, args.distill_temperature).float() for n, z in stored["logits"].items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "build" / "af"), help="prepare.mjs's output folder")
    ap.add_argument("--variant", default="main", choices=["main", "nan-rr", "ecg-only", "no-rate-aug", "index-time", "zero-fill", *BEAT_VARIANTS])
    ap.add_argument("--rr-gaps", default=None, choices=["leave-out", "missing"],
                    help="an RR interval across a dropout: left out of the RR stream or a missing (NaN) event. "
                         "Default: leave-out for main, missing for the other variants (as their runs were trained); "
                         "the ablations of the shipped configuration take leave-out")
    ap.add_argument("--strap-aug", type=float, default=0.0, metavar="P",
                    help="with probability P a training record is read as a chest strap streams it: ECG at 130 Hz, "
                         "0-30 %% of its notifications lost, the strap's own RR with as many 1 s notifications lost "
                         "(instead of the rate and dropout augmentations); 0: never (the shipped model)")
    ap.add_argument("--no-rate-aug", action="store_true",
                    help="no rate augmentation (as --variant no-rate-aug) in any variant: e.g. the beat-stream model "
                         "trained only at the set's 300 Hz, to be read at 300 Hz (a modality's upsample_hz)")
    ap.add_argument("--upsample-hz", type=float, default=0.0, metavar="HZ",
                    help="the model declares \"upsample_hz\": HZ on its ECG (docs/model.md, \"Tokenizer\") and is "
                         "trained as it will be read: an augmented record resampled below HZ is read at HZ "
                         "(Keys' cubic interpolation, afmodel.upsample), its RR and beat streams taken at its own "
                         "rate; the augmentation's draws are those of the same run without it. 0: none")
    ap.add_argument("--ema", type=float, default=0.0, metavar="DECAY",
                    help="keep an exponential moving average of the weights (decay per step, warmed up as "
                         "min(DECAY, (1 + step) / (10 + step))); validation, early stopping and the export use the "
                         "average (Polyak and Juditsky 1992). 0: none (every model shipped so far)")
    ap.add_argument("--dropout", type=float, default=0.0, metavar="P",
                    help="residual and feed-forward dropout in training (afmodel.forward_batched); the exported "
                         "model is the same kind of file. 0: none (every model trained before 2026-12-06)")
    ap.add_argument("--time-scale", type=float, default=1.0, metavar="S",
                    help="the time encoding's inverse frequencies times S (exported as the file's "
                         "time_encoding.inv_freq): S = 20 makes its periods 0.31 s to 254 s instead of 6.3 s to "
                         "5,083 s (max_period 1000), fine enough to place a beat. 1: as every model before 2026-12-06")
    ap.add_argument("--rope-time", action="store_true",
                    help="a research probe: queries and keys rotated by their tokens' times (afmodel.rotation; "
                         "per head dh / 2 periods from 0.25 s to 20 s, geometric) on top of the additive encoding. "
                         "The runtime cannot run such a model: its exported file is scored here only")
    ap.add_argument("--rope-pairs", type=int, default=None, metavar="K",
                    help="with --rope-time: rotate only the first K of each head's dh / 2 dimension pairs (periods 0.25 s "
                         "to 20 s over those K), the rest left for content; default all")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=None,
                    help="stop when the validation F1 has not improved for this many epochs; 0: never. Default: 0 with "
                         "--schedule full (the learning rate anneals only in the last epochs: a run stopped before them "
                         "keeps a model trained at a high rate), 10 with v1 (as those runs were trained)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--schedule", default="full", choices=["full", "v1"],
                    help="full: sized from a whole epoch, so it anneals to the end of the last epoch (the shipped model); "
                         "v1: the schedule of the runs before 2026-12-03 (ends at ~40 %% of its peak)")
    ap.add_argument("--limit", type=int, default=0, help="train on this many records (a smoke run)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--export-only", action="store_true", help="no training: export and score the run's best.pt")
    ap.add_argument("--from-published", action="store_true",
                    help="with --export-only (main, fold 0, seed 1): take best.pt and metrics.json from the shipped "
                         "models/af.safetensors and models/af-metrics.json (the run folder's logits for ensemble.py "
                         "on a machine that did not train it)")
    ap.add_argument("--resume", action="store_true",
                    help="continue the run from its checkpoint.pt (written after every epoch: weights, optimiser, "
                         "schedule and every generator's state, so the run goes on as if never stopped)")
    ap.add_argument("--config", default=None, metavar="JSON",
                    help="model settings over afmodel.CONFIG's (d_model, n_heads, n_layers, dim_feedforward, "
                         "attention_lookback_s), e.g. '{\"d_model\": 96, \"dim_feedforward\": 192}' "
                         "(an experiment's model; written into the exported file's metadata and metrics.json)")
    ap.add_argument("--teacher", action="append", default=[], metavar="RUN",
                    help="distil from this finished run's exported model (repeatable: their mean probability); "
                         "every teacher must have been trained on --fold")
    ap.add_argument("--distill-weight", type=float, default=0.5, help="with --teacher: the divergence's share of the loss")
    ap.add_argument("--distill-temperature", type=float, default=2.0, help="with --teacher: T, both sides' softmax temperature")
    ap.add_argument("--publish", action="store_true",
                    help="also write models/af.safetensors, models/af-metrics.json and models/af-test-logits.json "
                         "(the shipped model: variant main, fold 0)")
    args = ap.parse_args()
    args.rr_gaps = rr_gaps_of(args.variant, args.rr_gaps)
    assert args.variant != "nan-rr" or args.rr_gaps == "missing", "--variant nan-rr: its RR intervals across a gap are missing events"
    assert 0.0 <= args.strap_aug <= 1.0 and not (args.strap_aug and args.variant == "zero-fill"), \
        "--strap-aug: a probability, and not with zero-fill (a strap's losses are missing samples)"
    assert 0.0 <= args.dropout < 1.0, "--dropout: a probability below 1"
    assert 0.0 <= args.ema < 1.0, "--ema: a decay below 1"
    assert 0.0 < args.time_scale <= 1e3, "--time-scale: in (0, 1000]"
    if args.patience is None:
        args.patience = 10 if args.schedule == "v1" else 0
    assert not args.publish or (args.variant == "main" and args.fold == 0 and not args.limit), "--publish: main, fold 0, no --limit"
    overrides = json.loads(args.config) if args.config else {}
    if args.from_published:
        shipped = json.loads((ROOT / "models" / "af-metrics.json").read_text())
        assert (args.export_only and args.variant == "main" and args.fold == 0 and args.seed == shipped["seed"]
                and overrides == shipped["config"] and args.schedule == shipped["schedule"]), \
            f"--from-published: with --export-only and the shipped model's settings ({shipped['command']})"
    settable = {"d_model", "n_heads", "n_layers", "dim_feedforward", "attention_lookback_s"}
    unknown = sorted(set(overrides) - settable)
    assert not unknown, f"--config: only {', '.join(sorted(settable))} can change, not {unknown}"
    assert not args.upsample_hz or args.upsample_hz >= A.FS, "--upsample-hz: at least the set's rate"
    A.CONFIG.update(config_of(args.variant, overrides, args.upsample_hz))  # in place: afmodel's functions take this dict as their default
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    data = Data(args.data)
    labels = {r["record"]: r["label"] for r in data.index["records"]}
    folds = folds_of(labels)
    train_names, val_names = validation_of(args.fold, folds, labels)
    test_names = folds[args.fold]
    if args.limit:
        train_names = train_names[:args.limit]
        val_names = val_names[:max(50, args.limit // 8)]
    # main's runs with the v1 schedule (shipped until 2026-12-03) keep a name of their own beside the
    # present configuration's; the ablations were all trained with v1 and keep theirs.
    v1 = "-v1" if args.variant == "main" and args.schedule == "v1" else ""
    out = pathlib.Path(args.out or ROOT / "build" / "af" / "runs" / f"{args.variant}{v1}-fold{args.fold}")
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.pt"
    resume = args.resume and checkpoint.exists()
    # A rotary-time run's weights mean nothing without the rotation: a marker in its folder makes
    # --resume and --export-only of it refuse to go on without --rope-time (and the reverse).
    marker = out / "rope_time"
    assert args.rope_pairs is None or args.rope_time, "--rope-pairs: with --rope-time"
    said = "trained with train_af.py --rope-time" + (f" --rope-pairs {args.rope_pairs}" if args.rope_pairs else "") + "\n"
    if (args.resume or args.export_only) and (marker.exists() != args.rope_time or (args.rope_time and marker.read_text() != said)):
        was = marker.read_text().strip() if marker.exists() else "trained without --rope-time"
        sys.exit(f"train_af.py: {out} was {was}; give the same options again")
    if args.rope_time:
        marker.write_text(said)
    log_file = open(out / "log.txt", "a" if args.export_only or resume else "w")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    fixed = lambda names: [make_item(data, data.records[n], None, args.variant, False, args.rr_gaps) for n in names]
    val_items, test_items = fixed(val_names), fixed(test_names)
    counts = np.bincount([A.CODES.index(labels[n]) for n in train_names], minlength=4)
    class_weight = torch.tensor((counts.sum() / (4 * counts)) ** 0.5, dtype=torch.float32)
    log(f"variant {args.variant} fold {args.fold} seed {args.seed}: train {len(train_names)} "
        f"validation {len(val_items)} test {len(test_items)}; class counts {counts.tolist()}, weights {class_weight.tolist()}")

    soft = teacher_targets(args, data, train_names, out, log) if args.teacher else None

    model = SensorformerRef(A.CONFIG)
    with torch.no_grad():
        for emb in (model.tokenizer.sensor_embedding, model.tokenizer.modality_embedding,
                    model.tokenizer.placement_embedding):
            emb.weight.normal_(0.0, 0.02)
        model.tokenizer.rate_embedding.weight.zero_()  # a rate bucket never trained adds nothing
        model.tokenizer.mask_token.normal_(0.0, 0.02)
        model.time_encoding.inv_freq.mul_(args.time_scale)  # a buffer: saved, resumed and exported with the weights
    if args.rope_time:
        model.rope_omega = rope_omega(A.CONFIG, args.rope_pairs)
    log(f"parameters {sum(p.numel() for p in model.parameters())}")
    worst, bands, backs = check_twin(model, val_items, args.variant)
    local = [b for b in backs if b is not None]
    versus = "not checked (the reference module has no rotary time)" if args.rope_time else f"max |logit diff| {worst:.3g}"
    log(f"batched twin vs reference module (float64, {min(12, len(val_items))} validation records): {versus}; "
        f"local vs dense attention ({len(val_items)} records): {bands:.3g}; "
        f"{len(local)} of {len(backs)} batches in bands of {A.BLOCK}-token blocks, {min(local, default=0)}-{max(local, default=0)} back")
    assert worst < 1e-9 and bands < 1e-9 and local, (worst, bands, backs)

    if args.schedule == "v1":
        # The runs before 2026-12-03 (every model shipped so far, the NaN-RR CV and ablations): the
        # one-cycle schedule sized from 200 records' batches scaled up, plus 1000 steps. That
        # overestimates: 40 epochs take ~3,500 of its ~5,760 steps, so the learning rate ends at
        # ~40 % of its peak instead of annealing (docs/models.md, "Training").
        epoch_batches = len(batches([make_item(data, data.records[n], rng, args.variant, True, args.rr_gaps, args.strap_aug, not args.no_rate_aug) for n in train_names[:200]], rng, False))
        steps = args.epochs * max(1, int(epoch_batches * len(train_names) / min(200, len(train_names)))) + 1000
    else:
        # "full": sized from one whole augmented epoch (its own generator, so the training's draws
        # are not consumed), 2 % spare; the last steps (if any) stay at the final learning rate.
        sizing = np.random.default_rng([args.seed, 1])
        epoch_batches = len(batches([make_item(data, data.records[n], sizing, args.variant, True, args.rr_gaps, args.strap_aug, not args.no_rate_aug) for n in train_names], None, False))
        steps = args.epochs * epoch_batches * 102 // 100
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.1)
    best, best_epoch, started, epoch = -1.0, -1, time.time(), -1
    if args.from_published:  # the shipped file's weights as the run's best: exported again byte for byte
        shutil.copyfile(ROOT / "models" / "af-metrics.json", out / "metrics.json")
        _, published = load_safetensors(ROOT / "models" / "af.safetensors")
        # as loaded (no .float(): that would round the float64 time-encoding table)
        torch.save(published.state_dict(), out / "best.pt")
    if args.export_only:  # a finished run's best.pt: export, score and (--publish) publish again
        args.epochs = 0
        done = json.loads((out / "metrics.json").read_text())
        best_epoch, epoch = done["best_epoch"], done["epochs_run"] - 1
        started -= done["train_seconds"]
    # --ema: the average's own copy of the model (rope_omega and the float64 time table included)
    ema = copy.deepcopy(model) if args.ema else None
    step, first = 0, 0
    if resume:
        state = torch.load(checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        rng.bit_generator.state = state["numpy"]
        random.setstate(state["python"])
        torch.set_rng_state(state["torch"])
        step, first, best, best_epoch = state["step"], state["epoch"], state["best"], state["best_epoch"]
        if ("ema" in state) != (ema is not None):
            sys.exit(f"train_af.py: {checkpoint} was written {'with' if 'ema' in state else 'without'} --ema; give the same option again")
        if ema is not None:
            ema.load_state_dict(state["ema"])
        started, epoch = time.time() - state["train_seconds"], first - 1
        log(f"resumed after epoch {first} (best validation F1 {best:.4f} at epoch {best_epoch})")
    for epoch in range(first, args.epochs):
        model.train()
        t0 = time.time()
        items = [make_item(data, data.records[n], rng, args.variant, True, args.rr_gaps, args.strap_aug, not args.no_rate_aug) for n in train_names]
        prep = time.time() - t0
        total, seen = 0.0, 0
        for idx in batches(items, rng, True):
            b = A.Batch([items[i] for i in idx], index_time=args.variant == "index-time")
            logits = A.forward_batched(model, b, dropout=args.dropout)
            loss = F.cross_entropy(logits, b.label, weight=class_weight)
            if soft is not None:
                T, a = args.distill_temperature, args.distill_weight
                target = torch.stack([soft[items[i]["record"]] for i in idx])
                kd = F.kl_div(F.log_softmax(logits / T, dim=1), target, reduction="batchmean") * T * T
                loss = (1 - a) * loss + a * kd
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step < steps - 1:
                sched.step()
            if ema is not None:
                decay = min(args.ema, (1 + step) / (10 + step))
                with torch.no_grad():
                    for a, w in zip(ema.parameters(), model.parameters()):
                        a.mul_(decay).add_(w, alpha=1.0 - decay)
            step += 1
            total += loss.item() * len(idx)
            seen += len(idx)
        scored = model if ema is None else ema  # predict() sets eval mode; the loop sets train mode again
        val = score(predict(scored, val_items, args.variant), val_items)
        log(f"epoch {epoch + 1}: loss {total / seen:.4f} validation F1 {val['f1']:.4f} "
            f"({' '.join(f'{k} {v:.3f}' for k, v in val['per_class_f1'].items())}) "
            f"[{time.time() - t0:.0f} s, data {prep:.0f} s]")
        if val["f1"] > best:
            best, best_epoch = val["f1"], epoch + 1
            torch.save(scored.state_dict(), out / "best.pt")
        elif args.patience and epoch + 1 - best_epoch >= args.patience and epoch + 1 < args.epochs:
            log(f"early stop: no better validation F1 for {args.patience} epochs")
            break
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(),
                    "numpy": rng.bit_generator.state, "python": random.getstate(), "torch": torch.get_rng_state(),
                    "step": step, "epoch": epoch + 1, "best": best, "best_epoch": best_epoch,
                    **({"ema": ema.state_dict()} if ema is not None else {}),
                    "train_seconds": time.time() - started}, checkpoint.with_suffix(".tmp"))
        checkpoint.with_suffix(".tmp").replace(checkpoint)  # a run killed while saving keeps the last whole one
    train_seconds = time.time() - started
    model.load_state_dict(torch.load(out / "best.pt"))
    path = out / "model.safetensors"
    export_safetensors(model, declare_rr_gaps(A.CONFIG, args.rr_gaps), path, dtype="F16")
    _, exported = load_safetensors(path)
    exported = exported.double()
    if args.rope_time:
        exported.rope_omega = model.rope_omega
    val_logits = predict(exported, val_items, args.variant, torch.float64)
    val = score(val_logits, val_items)
    test_logits = predict(exported, test_items, args.variant, torch.float64)
    test = score(test_logits, test_items)
    metrics = {"variant": args.variant, "fold": args.fold, "seed": args.seed, "best_epoch": best_epoch,
               "epochs_run": epoch + 1, "train_seconds": round(train_seconds), "threads": args.threads, "schedule": args.schedule,
               "rr_gaps": args.rr_gaps, **({"rate_aug": False} if args.no_rate_aug else {}), **({"upsample_hz": args.upsample_hz} if args.upsample_hz else {}), **({"strap_aug": args.strap_aug} if args.strap_aug else {}), **({"dropout": args.dropout} if args.dropout else {}), **({"ema": args.ema} if args.ema else {}), **({"time_scale": args.time_scale} if args.time_scale != 1.0 else {}), **({"rope_time_periods_s": [2 * math.pi / w if w else None for w in model.rope_omega.tolist()]} if args.rope_time else {}), "train_records": len(train_names), "config": overrides,
               **({"distill": {"teachers": [pathlib.Path(t).name for t in args.teacher], "weight": args.distill_weight,
                               "temperature": args.distill_temperature}} if args.teacher else {}), "validation": val, "test": test,
               "bytes": path.stat().st_size, "parameters": sum(p.numel() for p in model.parameters())}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    if args.rope_time:  # the runtime would run the file without the rotation: keep only best.pt and the scores
        path.unlink()
    (out / "test_logits.json").write_text(json.dumps(
        {it["record"]: z for it, z in zip(test_items, test_logits)}) + "\n")
    # The validation part's too: what combining runs (an ensemble, offsets) may be chosen on.
    (out / "validation_logits.json").write_text(json.dumps(
        {it["record"]: z for it, z in zip(val_items, val_logits)}) + "\n")
    if args.publish:
        models = ROOT / "models"
        models.mkdir(exist_ok=True)
        shutil.copyfile(path, models / "af.safetensors")
        published = dict(metrics, command="/usr/bin/python3 tools/af/train_af.py " + shlex.join(a for a in sys.argv[1:] if a != "--export-only"),
                         machine=f"{os.cpu_count()} cores, torch {torch.__version__}")
        (models / "af-metrics.json").write_text(json.dumps(published, indent=1) + "\n")
        # 6 decimals: 5e-7, far inside the parity test's 1e-4
        (models / "af-test-logits.json").write_text(json.dumps(
            {it["record"]: [round(v, 6) for v in z] for it, z in zip(test_items, test_logits)}) + "\n")
    log(f"exported {path} ({metrics['bytes']} bytes): validation F1 {val['f1']:.4f}, test F1 {test['f1']:.4f} "
        f"({' '.join(f'{k} {v:.3f}' for k, v in test['per_class_f1'].items())}); trained {train_seconds / 60:.1f} min"
        + ("; the file removed again (the runtime has no rotary time)" if args.rope_time else ""))


if __name__ == "__main__":
    main()
