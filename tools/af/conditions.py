"""The test conditions of evaluate_af.py, read from their names: plain Python (no numpy, no torch),
so that the suite checks the reading on a machine without PyTorch (tests/js/af-conditions.test.js).

    python3 tools/af/conditions.py NAME [NAME ...]

prints one JSON line per name ({"condition", "rate", "drop", "zeros", "strap", "known",
"losses"}) or, for a name it refuses, the error on stderr and exit status 2.
"""
import json
import sys

FS = 300.0        # the challenge's ECG rate (afmodel.FS)
STRAP_RATE = 130.0  # a Polar H10's ECG rate
KNOWN_PARTS = {"clean", "strap", "r130", "drop5", "drop20", "zeros", "known"}


def parse_condition(condition):
    """A condition's parts, each named once in its dash-separated name: "clean" alone, or any of
    "strap" (the RR stream is the strap's own), "r130" (the ECG at 130 Hz), "drop5" / "drop20"
    (notifications lost), "zeros" (losses filled with 0 mV) and "known" (RR across a gap left
    out). Until 2026-12-05 the rate was read from the name's start, so "strap-r130-drop20" kept
    the ECG at 300 Hz; every part is now read wherever it stands, and a name with a part this
    function does not know is refused rather than read as something else."""
    parts = condition.split("-")
    unknown = [q for q in parts if q not in KNOWN_PARTS]
    if unknown or len(set(parts)) != len(parts) or ("clean" in parts and len(parts) > 1) \
            or ("drop5" in parts and "drop20" in parts):
        raise ValueError(f"evaluate_af.py: condition {condition!r} is not one of the forms "
                         f"clean or [strap-][r130-][drop5|drop20[-zeros]][-known]")
    drop = 0.05 if "drop5" in parts else 0.20 if "drop20" in parts else 0.0
    if ("zeros" in parts or "strap" in parts) and not drop:
        raise ValueError(f"evaluate_af.py: condition {condition!r}: 'zeros' and 'strap' need drop5 or drop20")
    return {"rate": STRAP_RATE if "r130" in parts else FS, "drop": drop, "zeros": "zeros" in parts,
            "strap": "strap" in parts, "known": "known" in parts}


def losses_key(condition):
    """The name that seeds a condition's ECG losses: the condition without "-known" and without
    "strap-", so that "strap-r130-drop20" and "r130-drop20-known" lose the very samples
    "r130-drop20" loses and differ from it in their RR stream alone (until 2026-12-05 the strap
    conditions drew losses of their own)."""
    return condition.removesuffix("-known").removeprefix("strap-")


def main(names):
    for name in names:
        try:
            print(json.dumps({"condition": name, **parse_condition(name), "losses": losses_key(name)}))
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
