"""Score an ensemble of trained AF runs: the mean of their class probabilities (the softmax of each
run's logits), on the validation part (where an ensemble may be chosen) and on the test part.

    /usr/bin/python3 tools/af/ensemble.py RUN RUN [RUN ...] [--index build/af/index.json]

RUN: a folder train_af.py wrote, with validation_logits.json and test_logits.json (the exported
file's logits; a run exported before these files existed writes them again with the same command
and `--export-only`). A folder with only model.safetensors and metrics.json (a shipped ensemble's
member, as unpack_ensemble.py writes it) gets the two files computed from its model first (float64,
as train_af.py computes them; --data names prepare.mjs's output). Every RUN must have been trained
on the same fold (the same parts). Labels come from prepare.mjs's index. Prints, per part, each run
alone and then the ensemble: challenge F1 (mean of N, A, O) and the per-class F1.

    --export FILE          also writes the RUNs as one ensemble weights file (the package's
                           loadModel runs it: web/src/ensemble.js; docs/model.md "Ensembles"):
                           member k's tensors named member<k>.<name>, its metadata kept
    --test-logits FILE     also writes the ensemble's test-part logits, log of the mean probability
                           per record (6 decimals), for `npm run eval:af -- --compare FILE`
    --metrics FILE         also writes the ensemble's metrics (train_af.py's metrics.json for a
                           run: its members' settings, the validation and test scores, the
                           exported file's bytes, the command)
"""
import argparse
import json
import pathlib
import shlex
import sys


HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
from st_io import read_safetensors, write_safetensors  # noqa: E402
import train_af as T  # noqa: E402
from make_split import folds_of, validation_of  # noqa: E402
from train_af import declare_rr_gaps, rr_gaps_of, score  # noqa: E402


def export(runs, path):
    """The runs' model.safetensors as one ensemble file (web/src/ensemble.js reads it). Each member's
    config says how its run was trained on RR intervals across a gap (train_af.declare_rr_gaps; runs
    exported before the key existed lack it), so the runtime feeds each member as it was trained;
    members whose beat streams differ (train_af.BEAT_VARIANTS) name them apart, so that each gets
    its own (afmodel.beat_modality_name; the runtime sends a stream to every member that knows its
    modality's name)."""
    tensors, members = [], []
    files = [read_safetensors(run / "model.safetensors", with_dtypes=True) for run in runs]
    configs = [json.loads(meta["config"]) for meta, _, _ in files]
    grids = {json.dumps(dict(m, name=None), sort_keys=True): m for c in configs if (m := A.beat_modality(c))}
    names = {key: A.beat_modality_name(m) for key, m in grids.items()} if len(grids) > 1 else {}
    assert len(set(names.values())) == len(names), f"two beat grids share the name {sorted(names.values())}"
    for k, (run, (meta, arrays, dtypes)) in enumerate(zip(runs, files)):
        done = json.loads((run / "metrics.json").read_text())
        config = declare_rr_gaps(json.loads(meta["config"]), rr_gaps_of(done["variant"], done.get("rr_gaps")))
        # Members whose beat grids differ take them under different names (afmodel.beat_modality_name):
        # the modality and its value projection (tokenizer.value_proj.<modality>.*, the one tensor
        # named by a modality).
        beat = A.beat_modality(config)
        new = beat and names.get(json.dumps(dict(beat, name=None), sort_keys=True))
        if new:
            old_prefix, new_prefix = f"tokenizer.value_proj.{beat['name']}.", f"tokenizer.value_proj.{new}."
            config["modalities"] = [dict(m, name=new) if m is beat else m for m in config["modalities"]]
            rename = {n: new_prefix + n[len(old_prefix):] for n in arrays if n.startswith(old_prefix)}
            arrays = {rename.get(n, n): v for n, v in arrays.items()}
            dtypes = {rename.get(n, n): v for n, v in dtypes.items()}
        meta = {**meta, "config": json.dumps(config)}
        assert all(d != "BF16" for d in dtypes.values()), "BF16 members are not written back bit for bit"
        prefix = f"member{k}."
        members.append({"prefix": prefix, "metadata": meta})
        tensors += [(prefix + name, dtypes[name], arrays[name]) for name in arrays]
    write_safetensors(path, tensors, {"ensemble": json.dumps({"combine": "mean_probability", "members": members})})


def line(name, s):
    return f"  {name}: F1 {s['f1']:.4f} (" + " ".join(f"{k} {v:.3f}" for k, v in s["per_class_f1"].items()) + ")"


def write_logits(run, data_folder):
    """run/validation_logits.json and run/test_logits.json from run/model.safetensors (train_af.run_logits)."""
    fold = json.loads((run / "metrics.json").read_text())["fold"]
    data = T.Data(data_folder)
    labels = {r["record"]: r["label"] for r in data.index["records"]}
    folds = folds_of(labels)
    for part, names in (("validation", validation_of(fold, folds, labels)[1]), ("test", folds[fold])):
        (run / f"{part}_logits.json").write_text(json.dumps(T.run_logits(run, data, names)) + "\n")
    print(f"wrote {run}/validation_logits.json and test_logits.json from its model.safetensors")


def read_logits(run, part, data_folder):
    path = run / f"{part}_logits.json"
    if not path.exists() and (run / "model.safetensors").exists() and not (run / "best.pt").exists():
        write_logits(run, data_folder)
    if not path.exists():
        sys.exit(f"ensemble.py: {path} is missing; write it with the run's train_af.py command and --export-only")
    return json.loads(path.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=pathlib.Path)
    ap.add_argument("--index", type=pathlib.Path, default=ROOT / "build" / "af" / "index.json")
    ap.add_argument("--data", type=pathlib.Path, default=ROOT / "build" / "af",
                    help="prepare.mjs's output folder (for a RUN whose logits are computed here)")
    ap.add_argument("--export", type=pathlib.Path, default=None, metavar="FILE")
    ap.add_argument("--test-logits", type=pathlib.Path, default=None, metavar="FILE")
    ap.add_argument("--metrics", type=pathlib.Path, default=None, metavar="FILE")
    args = ap.parse_args()
    scores = {}
    label = {r["record"]: A.CODES.index(r["label"]) for r in json.loads(args.index.read_text())["records"]}
    folds = {json.loads((run / "metrics.json").read_text())["fold"] for run in args.runs}
    if len(folds) != 1:
        sys.exit(f"ensemble.py: the runs test on different folds ({sorted(folds)}); an ensemble needs one")
    for part in ("validation", "test"):
        runs = [read_logits(run, part, args.data) for run in args.runs]
        names = sorted(runs[0])
        if any(sorted(r) != names for r in runs):
            sys.exit(f"ensemble.py: the runs' {part} records differ")
        items = [{"record": n, "label": label[n]} for n in names]
        print(f"{part} part ({len(names)} records):")
        for run, logits in zip(args.runs, runs):
            print(line(run.name, score([logits[n] for n in names], items)))
        # (runs, records, classes) -> each run's probabilities, averaged over the runs
        mean = A.mean_probability([[r[n] for n in names] for r in runs])
        scores[part] = score(mean.tolist(), items)
        print(line("ensemble (mean probability)", scores[part]))
        if part == "test" and args.test_logits:
            args.test_logits.write_text(json.dumps({n: [round(v, 6) for v in z] for n, z in zip(names, mean.log().tolist())}) + "\n")
    if args.export:
        export(args.runs, args.export)
        print(f"wrote {args.export} ({args.export.stat().st_size} bytes)")
    if args.metrics:
        done = [json.loads((run / "metrics.json").read_text()) for run in args.runs]
        keep = ("variant", "seed", "schedule", "rr_gaps", "rate_aug", "upsample_hz", "strap_aug", "dropout", "time_scale",
                "rope_time_periods_s", "ema", "config", "best_epoch", "epochs_run",
                "train_seconds", "bytes", "parameters")
        args.metrics.write_text(json.dumps({
            "variant": "ensemble", "combine": "mean_probability", "fold": folds.pop(),
            "members": [{"run": run.name, **{k: m[k] for k in keep if k in m}} for run, m in zip(args.runs, done)],
            # an unpacked shipped member's metrics.json has neither: the sum is then unknown (null)
            **{k: sum(m[k] for m in done) if all(k in m for m in done) else None for k in ("train_seconds", "parameters")},
            **({"bytes": args.export.stat().st_size} if args.export else {}),
            "validation": scores["validation"], "test": scores["test"],
            "command": "/usr/bin/python3 tools/af/ensemble.py " + shlex.join(sys.argv[1:]),
        }, indent=1) + "\n")


if __name__ == "__main__":
    main()
