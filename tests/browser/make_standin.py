"""Stand-ins for the demo's models while the real ones are being trained: the demo model's exact
config (tools/demo/train_demo_model.py CONFIG: labels, modalities, layout) with random weights, so
the page and its tests run before training has finished. With --stream, the streaming demo
model's config instead: the same with `causal: true` and `attention_lookback_s` 4 s (the value
tools/demo/train_stream_model.py trains demo/model/stream.safetensors with). With --af, the AF
model's config (tools/af/afmodel.py CONFIG), for the Rhythm card while models/af.safetensors is not
there.

    /usr/bin/python3 tests/browser/make_standin.py [--stream | --af] [OUT]
    (default build/demo-standin.safetensors, build/stream-standin.safetensors, build/af-standin.safetensors)
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "demo"))
sys.path.insert(0, str(ROOT / "tools" / "reference"))
sys.path.insert(0, str(ROOT / "tools" / "af"))

import torch  # noqa: E402
from export import export_safetensors  # noqa: E402
from sensorformer_ref import SensorformerRef  # noqa: E402
from train_demo_model import CONFIG  # noqa: E402

args = sys.argv[1:]
stream, af = "--stream" in args, "--af" in args
args = [a for a in args if a not in ("--stream", "--af")]
if af:
    from afmodel import CONFIG as AF_CONFIG  # noqa: E402
    config, default = AF_CONFIG, "af-standin.safetensors"
elif stream:
    config, default = dict(CONFIG, causal=True, attention_lookback_s=4.0), "stream-standin.safetensors"
else:
    config, default = CONFIG, "demo-standin.safetensors"
out = pathlib.Path(args[0]) if args else ROOT / "build" / default
out.parent.mkdir(parents=True, exist_ok=True)
torch.manual_seed(42)
export_safetensors(SensorformerRef(config), config, str(out), dtype="F16")
print(out)
