"""tests/fixtures/beat_waveforms.json: the beat stream's waveforms (afmodel.beat_waveforms, the
training's definition) on a synthetic ECG, for tests/js/qrs.test.js to hold web/src/qrs.js
beatWaveforms (the runtime's) to; and ("streams") the whole beat stream of each beat modality
train_af.py trains (afmodel.beat_stream: the 40-point grid, with the RR intervals before each beat,
and a grid twice as fine) on the same signals, for beatsFromEcg with beatModalities' grids. No data
set is involved.

    /usr/bin/python3 tools/af/make_beat_fixture.py
"""
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import afmodel as A  # noqa: E402
from train_af import BEAT_VARIANTS  # noqa: E402


def case(rate, seconds, beats, gaps):
    n = int(seconds * rate)
    t = np.arange(n) / rate
    # a smooth signal with a slow baseline, so interpolation and the mean both matter
    x = 0.8 * np.sin(2 * np.pi * 1.3 * t) ** 9 + 0.1 * np.sin(2 * np.pi * 0.2 * t) + 0.05 * np.cos(2 * np.pi * 7.1 * t)
    for a, b in gaps:
        x[a:b] = np.nan
    w = A.beat_waveforms(x, rate, beats)
    streams = {}
    for variant, modality in BEAT_VARIANTS.items():
        _, values = A.beat_stream(x, rate, beats, 0.0, modality)
        streams[variant] = [None if np.isnan(v) else float(v) for v in values]
    return {"rateHz": rate, "samples": [None if np.isnan(v) else float(v) for v in x], "indices": list(map(int, beats)),
            "waveforms": [None if np.isnan(v) else float(v) for v in w.reshape(-1)], "streams": streams}


cases = [
    # beats at the edges (grid points outside the samples are missing), one inside a gap's reach
    case(300.0, 3.0, [0, 3, 71, 72, 400, 600, 897, 899], [(500, 530)]),
    case(130.0, 4.0, [0, 31, 32, 200, 300, 517, 519], [(250, 262)]),
    case(250.0, 2.0, [60, 61, 250, 499], []),
    # a missing sample just after a beat, just before one (the intervals across them unknown) and
    # at a beat itself (not between two beats: both intervals known)
    case(200.0, 4.0, [10, 150, 300, 301, 460, 600, 750], [(151, 152), (459, 460), (600, 601)]),
]
rr = next(m for m in A.CONFIG["modalities"] if m["name"] == "rr")
out = {"points": A.BEAT_L, "first": A.BEAT_FIRST, "step_s": A.BEAT_STEP_S, "cases": cases,
       "modalities": {variant: [m, rr] for variant, m in BEAT_VARIANTS.items()}}
path = HERE.parent.parent / "tests" / "fixtures" / "beat_waveforms.json"
path.write_text(json.dumps(out) + "\n")
print(f"wrote {path}")
