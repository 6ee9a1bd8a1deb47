"""An ensemble model file's members as run folders that evaluate_af.py reads (model.safetensors,
metrics.json): to score a shipped ensemble on a machine that no longer has the runs it was
exported from (build/af/runs/ is not kept from one machine to the next).

    /usr/bin/python3 tools/af/unpack_ensemble.py models/af.safetensors --metrics models/af-metrics.json
        [--out build/af/runs]

writes OUT/shipped-<member's run>/ per member (the run names, variants, folds and seeds from the
metrics file ensemble.py --metrics wrote; each member's config as the ensemble file holds it,
"upsample_hz" and "missing_events" included; its tensors byte for byte).
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
from st_io import read_safetensors, write_safetensors  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=pathlib.Path)
    ap.add_argument("--metrics", type=pathlib.Path, required=True)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "build" / "af" / "runs")
    args = ap.parse_args()
    meta, arrays, dtypes = read_safetensors(args.file, with_dtypes=True)
    if "ensemble" not in meta:
        sys.exit(f"unpack_ensemble.py: {args.file} is one model, not an ensemble")
    members = json.loads(meta["ensemble"])["members"]
    done = json.loads(args.metrics.read_text())
    if len(done.get("members", [])) != len(members):
        sys.exit(f"unpack_ensemble.py: {args.metrics} lists {len(done.get('members', []))} members, the file {len(members)}")
    for m, info in zip(members, done["members"]):
        out = args.out / f"shipped-{info['run']}"
        out.mkdir(parents=True, exist_ok=True)
        p = m["prefix"]
        write_safetensors(out / "model.safetensors", [(n[len(p):], dtypes[n], a) for n, a in arrays.items() if n.startswith(p)], m["metadata"])
        config = json.loads(m["metadata"]["config"])
        rr = next((x.get("missing_events", "mask") for x in config["modalities"] if x["name"] == "rr"), None)
        (out / "metrics.json").write_text(json.dumps({
            "run": info["run"], "variant": info["variant"], "fold": done["fold"], "seed": info["seed"],
            # evaluate_af.py feeds RR intervals across a gap as the member was trained
            **({"rr_gaps": "leave-out" if rr == "leave-out" else "missing"} if rr else {}),
            "unpacked_from": str(args.file)}, indent=1) + "\n")
        print(out)


if __name__ == "__main__":
    main()
