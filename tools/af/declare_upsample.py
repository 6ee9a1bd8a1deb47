"""Declare in a model file that a modality is read at a higher rate: its config (each member's, in
an ensemble file) gains "upsample_hz" (docs/model.md, "Tokenizer"): the runtime then reads a
regular stream of that modality slower than the rate at that rate, interpolated, before patching.
The tensors are written back unchanged; only the metadata moves.

    /usr/bin/python3 tools/af/declare_upsample.py models/af.safetensors --modality ecg --hz 300 \
        [--metrics models/af-metrics.json]

--metrics: the metrics file ensemble.py --export wrote for FILE gets the declared file's size
("bytes": the metadata grows) and this step appended to its "command".

The shipped AF model (docs/models.md, "Inputs", and its ablation "(b) ... and reading a strap's
ECG at the training rate carries it further") is ensemble.py's export followed by this command:
its members were trained on 300 Hz records (and on records resampled to 125-250 Hz), and read a
strap's 130 Hz ECG better at 300 Hz than at its own rate.
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "reference"))
from st_io import read_safetensors, write_safetensors  # noqa: E402


def declare(config, modality, hz):
    names = [m["name"] for m in config["modalities"]]
    if modality not in names:
        sys.exit(f"declare_upsample.py: the model has no modality {modality!r} (it has {names})")
    return {**config, "modalities": [dict(m, upsample_hz=hz) if m["name"] == modality else m for m in config["modalities"]]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=pathlib.Path)
    ap.add_argument("--modality", required=True)
    ap.add_argument("--hz", type=float, required=True)
    ap.add_argument("--out", type=pathlib.Path, default=None, help="write here instead of over FILE")
    ap.add_argument("--metrics", type=pathlib.Path, default=None, help="the metrics file of FILE: its bytes and command follow")
    args = ap.parse_args()
    meta, arrays, dtypes = read_safetensors(args.file, with_dtypes=True)
    assert all(d != "BF16" for d in dtypes.values()), "BF16 tensors are not written back bit for bit"
    if "ensemble" in meta:
        ens = json.loads(meta["ensemble"])
        for m in ens["members"]:
            m["metadata"] = {**m["metadata"], "config": json.dumps(declare(json.loads(m["metadata"]["config"]), args.modality, args.hz))}
        meta = {**meta, "ensemble": json.dumps(ens)}
    else:
        meta = {**meta, "config": json.dumps(declare(json.loads(meta["config"]), args.modality, args.hz))}
    # the tensors in their stored order (read_safetensors returns them by offset)
    out = args.out or args.file
    write_safetensors(out, [(n, dtypes[n], a) for n, a in arrays.items()], meta)
    if args.metrics:
        metrics = json.loads(args.metrics.read_text())
        step = f"/usr/bin/python3 tools/af/declare_upsample.py {out} --modality {args.modality} --hz {args.hz:g}"
        metrics["bytes"] = out.stat().st_size
        if step not in metrics.get("command", ""):
            metrics["command"] = f"{metrics['command']} && {step}" if metrics.get("command") else step
        args.metrics.write_text(json.dumps(metrics, indent=1) + "\n")


if __name__ == "__main__":
    main()
