"""Score trained AF models on the test part under the conditions of docs/models.md's ablation table.

    /usr/bin/python3 tools/af/evaluate_af.py RUN [RUN ...] [--conditions clean,r130,...]
        [--out tools/af/results/NAME.json]

RUN: a folder train_af.py wrote (model.safetensors + metrics.json, which names the variant and
fold; a --rope-time run: best.pt, exported again with its rotation, train_af.load_run). Conditions (each record perturbed with its own seeded generator, the same for every model):
  clean          the recording as it is (300 Hz)
  r130           resampled to 130 Hz (a Polar H10's ECG rate; scipy's polyphase resampler)
  drop5, drop20  Bluetooth-like dropouts: whole notifications (73 samples at 130 Hz = 0.56 s) lost,
                 each with probability 5 % / 20 %; lost samples are missing (NaN): absent patches
                 take the mask token, the detector reports no beat next to a gap, an RR interval
                 across a gap is missing
  drop5-zeros, drop20-zeros
                 the same losses filled with 0 mV and sent as present samples (what a pipeline
                 without a missing-sample notion does); the detector sees the zeros too
  r130-drop20    130 Hz and 20 % dropouts (the issue's goal: within 0.03 of clean)
  strap-drop20, strap-r130-drop20
                 the same ECG as drop20 / r130-drop20 (same losses), but the RR stream is a
                 strap's own: a Polar H10 computes RR on the device from every sample and sends
                 them in its 1 Hz Heart Rate Measurement notifications, so an ECG notification lost
                 on the way costs no beat. Its stand-in: the package's detector on the clean 300 Hz
                 record (the beats prepare.mjs stored), each 1 s notification's RR values lost with
                 probability 20 % as well (the remaining events keep their beat times and values)
  drop20-known, r130-drop20-known (any condition + "-known")
                 the same losses, but the RR intervals the detector cannot measure (across a gap)
                 are left out of the stream instead of sent as missing events (a run trained
                 that way, train_af.py's --rr-gaps leave-out, the main variant's default, is fed
                 so in every condition; rrFromEcg's default)
A model with a beat stream (variant beats) takes it from the package's detector on the perturbed
ECG in every condition (a strap sends RR but no beat times). The RR stream of every other condition comes from the package's detector (tools/af/beats.mjs runs
rrFromEcg in Node on the perturbed ECG, as the CLI and the demo do for a source without RR): one
detector definition. Prints a table row per model and condition; --out writes them as JSON
(committed under tools/af/results/; rows already in the file for other runs or conditions are kept).

--rr-coverage runs no model: per condition, of the intervals between the clean record's beats, how
many have no lost sample between their two beats (the most any detector measures without guessing
across a gap), how many also none within 150 ms of either beat (the detector's margin), and how many
the detector reports (docs/models.md, "Where the dropouts cost").

--ensemble NAME scores the RUNs together instead, as one row per condition named NAME: the mean of
their class probabilities (softmax of each run's logits; tools/af/ensemble.py's rule), each run
fed its own inputs under the same perturbation (a beat-stream member gets its beats). The RUNs
must be of one fold.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import zlib

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
from conditions import FS, losses_key, parse_condition  # noqa: E402
import train_af as T  # noqa: E402

assert FS == A.FS, "conditions.FS is the challenge's rate, afmodel.FS"

CONDITIONS = ["clean", "r130", "drop5", "drop20", "drop5-zeros", "drop20-zeros", "r130-drop20",
              "strap-drop20", "strap-r130-drop20"]


def perturb(x, condition, record):
    """(ecg, rate) of a record under a condition; seeded by the record's name. A "-zeros"
    condition's losses are 0 mV samples, present: the tokenizer sees no missing sample."""
    c = parse_condition(condition)
    rng = np.random.default_rng([zlib.crc32(record.encode()), zlib.crc32(losses_key(condition).encode())])
    rate = c["rate"]
    if rate != A.FS:
        x = A.resample(x, rate).astype(np.float64)
    if c["drop"]:
        missing = A.drop_notifications(len(x), rate, c["drop"], rng)
        x = np.where(missing, 0.0 if c["zeros"] else np.nan, x)
    return x, rate


def strap_rr(rec, condition):
    """A strap's RR stream for a record: beats of the clean record (the device sees every sample),
    the RR values of each lost 1 s notification never arriving (see the module's docstring)."""
    t, v = A.rr_stream(np.asarray(rec["beats"], dtype=np.int64), A.FS, None, float(rec["startTime"]))
    rng = np.random.default_rng([zlib.crc32(rec["record"].encode()), zlib.crc32(condition.encode())])
    t, v = A.lose_hr_notifications(t, v, parse_condition(condition)["drop"], rng)
    return {"timestamps": t.tolist(), "samples": v.tolist()}


def condition_items(data, names, condition, workdir, variant, leave_out, beat_modality, upsample_hz=0.0):
    """The test records under a condition as the model's items. upsample_hz: the model's ECG
    modality's "upsample_hz" (0: none): an ECG slower than that is read at that rate, as the
    runtime reads it (A.upsample, the tokenizer's rule); the RR and beat streams come from the ECG
    at its own rate, as the package's detector finds them on a strap's samples. beat_modality: the
    model's beat modality (afmodel.beat_stream), None without one."""
    workdir.mkdir(parents=True, exist_ok=True)
    signals, listing, offset = [], [], 0
    for n in names:
        rec = data.records[n]
        x, rate = perturb(data.signal(rec), condition, n)
        signals.append(x.astype(np.float32))
        listing.append({"record": n, "offset": offset, "length": len(x), "rateHz": rate, "startTime": rec["startTime"]})
        offset += len(x)
    np.concatenate(signals).tofile(workdir / f"{condition}.f32")
    (workdir / f"{condition}.json").write_text(json.dumps(listing))
    subprocess.run(["node", str(HERE / "beats.mjs"), str(workdir / f"{condition}.f32"), str(workdir / f"{condition}.json"),
                    str(workdir / f"{condition}-rr.json")], check=True)
    detected = json.loads((workdir / f"{condition}-rr.json").read_text())
    c = parse_condition(condition)
    rr = {n: strap_rr(data.records[n], condition) for n in names} if c["strap"] else detected
    items = []
    for n, x, entry in zip(names, signals, listing):
        rec = data.records[n]
        start, rate = entry["startTime"], entry["rateHz"]
        x = x.astype(np.float64)
        if variant == "ecg-only":
            rr_t, rr_v = np.zeros(0), np.zeros(0)
        else:
            rr_t = np.asarray(rr[n]["timestamps"], dtype=np.float64)
            rr_v = np.asarray([np.nan if v is None else v for v in rr[n]["samples"]], dtype=np.float64)
            if c["known"] or leave_out:  # intervals across a gap left out, not sent as missing
                rr_t, rr_v = A.known_rr(rr_t, rr_v)
        beat = A.beat_stream(x, rate, detected[n]["indices"], start, beat_modality) if beat_modality else None
        x, rate = A.read_ecg(x, rate, upsample_hz)
        tokens = A.tokens_of(x, rate, rr_t, rr_v, start=start, beat=beat)
        items.append({"tokens": tokens, "rate": rate, "placement": 0, "ref": A.default_ref(tokens),
                      "label": A.CODES.index(rec["label"]), "record": n})
    return items


def rr_coverage(data, names, condition, workdir):
    """How many RR intervals a condition leaves measurable: the intervals between the clean
    record's beats (prepare.mjs's, at the condition's rate), those with no lost sample between
    their two beats (what any detector could measure without guessing across a gap), those with
    no lost sample within 150 ms of either beat either (what web/src/qrs.js's margin allows), and
    the intervals the detector reports on the perturbed ECG (condition_items' beats.mjs output)."""
    total = between = margin = 0
    zeros = parse_condition(condition)["zeros"]
    for n in names:
        rec = data.records[n]
        x, rate = perturb(data.signal(rec), condition, n)
        lost = (x == 0.0) if zeros else np.isnan(x)
        beats = np.unique(np.clip(np.round(np.asarray(rec["beats"]) * rate / A.FS).astype(np.int64), 0, len(x) - 1))
        cum = np.concatenate([[0], np.cumsum(lost)])
        _, ok = A.rr_events(beats, lost)
        w = int(0.15 * rate)
        clear = cum[np.minimum(len(x), beats + w + 1)] - cum[np.maximum(0, beats - w)] == 0
        total += len(ok)
        between += int(ok.sum())
        margin += int((ok & clear[1:] & clear[:-1]).sum())
    detected = json.loads((workdir / f"{condition}-rr.json").read_text())
    found = sum(sum(v is not None for v in detected[n]["samples"]) for n in names)
    print(f"{condition}: {len(names)} records, {total} intervals between the clean record's beats; no lost sample "
          f"between the two beats {between} ({between / total:.1%}); nor within 150 ms of either {margin} "
          f"({margin / total:.1%}); measured by the detector on the perturbed ECG {found} ({found / total:.1%})", flush=True)


def report(name, condition, s):
    print(f"{name:24s} {condition:14s} F1 {s['f1']:.3f}  " + "  ".join(f"{k} {v:.3f}" for k, v in s["per_class_f1"].items()), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--data", default=str(ROOT / "build" / "af"))
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ensemble", default=None, metavar="NAME")
    ap.add_argument("--rr-coverage", action="store_true",
                    help="no model is run: per condition, how many RR intervals stay measurable (the RUNs give the fold)")
    args = ap.parse_args()
    for condition in args.conditions.split(","):
        parse_condition(condition)  # a misspelt condition stops here, before any model is run
    torch.set_num_threads(args.threads)
    data = T.Data(args.data)
    rows = []
    cache = {}
    members = {}  # condition -> [(run, metrics, logits, items)] when --ensemble
    for run in map(pathlib.Path, args.runs):
        metrics = json.loads((run / "metrics.json").read_text())
        variant, fold = metrics["variant"], metrics["fold"]
        names = [r["record"] for r in data.index["records"] if r["fold"] == fold]
        if args.rr_coverage:
            workdir = ROOT / "build" / "af" / "conditions" / f"fold{fold}"
            for condition in args.conditions.split(","):
                condition_items(data, names, condition, workdir, variant, False, False)  # writes the detector's output
                rr_coverage(data, names, condition, workdir)
            continue
        model = T.load_run(run).double()  # a --rope-time run: its best.pt with the rotation
        # afmodel's functions take A.CONFIG as their default: this model's modalities
        A.CONFIG["modalities"] = model.config["modalities"]
        beat_modality = A.beat_modality(model.config)
        leave_out = T.rr_gaps_of(variant, metrics.get("rr_gaps")) == "leave-out"  # as the run was trained
        upsample_hz = A.ecg_read_hz(model.config)
        for condition in args.conditions.split(","):
            key = (fold, condition, variant == "ecg-only", leave_out, json.dumps(beat_modality, sort_keys=True), upsample_hz)
            if key not in cache:
                cache[key] = condition_items(data, names, condition, ROOT / "build" / "af" / "conditions" / f"fold{fold}", variant, leave_out, beat_modality, upsample_hz)
            items = cache[key]
            logits = T.predict(model, items, variant, torch.float64)
            if args.ensemble:
                members.setdefault(condition, []).append((run, metrics, logits, items))
                continue
            s = T.score(logits, items)
            row = {"run": run.name, "variant": variant, "fold": fold, "seed": metrics["seed"], "condition": condition, **s}
            rows.append(row)
            report(run.name, condition, s)
    for condition, group in members.items():
        folds = {m["fold"] for _, m, _, _ in group}
        if len(folds) != 1:
            sys.exit(f"evaluate_af.py --ensemble: the runs are of folds {sorted(folds)}; an ensemble needs one")
        items = group[0][3]
        if any([it["record"] for it in its] != [it["record"] for it in items] for _, _, _, its in group):
            sys.exit("evaluate_af.py --ensemble: the runs' test items differ")
        s = T.score(A.mean_probability([z for _, _, z, _ in group]).log().tolist(), items)
        row = {"run": args.ensemble, "members": [r.name for r, _, _, _ in group], "variant": "ensemble", "fold": folds.pop(),
               "seed": [m["seed"] for _, m, _, _ in group], "condition": condition, **s}
        rows.append(row)
        report(args.ensemble, condition, s)
    if args.out:
        # rows of other runs or conditions already in the file are kept (a condition added later
        # is scored without redoing the rest); a row for the same run and condition is replaced
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(out.read_text()) if out.exists() else []
        fresh = {(r["run"], r["condition"]) for r in rows}
        out.write_text(json.dumps([r for r in old if (r["run"], r["condition"]) not in fresh] + rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
