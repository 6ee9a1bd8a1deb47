"""A stand-in for demo/model/demo.safetensors while the real one is being trained: the demo model's
exact config (tools/demo/train_demo_model.py CONFIG: labels, modalities, layout) with random
weights, so the page and its tests run before training has finished.

    /usr/bin/python3 tests/browser/make_standin.py [OUT]   (default build/demo-standin.safetensors)
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "demo"))
sys.path.insert(0, str(ROOT / "tools" / "reference"))

import torch  # noqa: E402
from export import export_safetensors  # noqa: E402
from sensorformer_ref import SensorformerRef  # noqa: E402
from train_demo_model import CONFIG  # noqa: E402

out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "demo-standin.safetensors"
out.parent.mkdir(parents=True, exist_ok=True)
torch.manual_seed(42)
export_safetensors(SensorformerRef(CONFIG), CONFIG, str(out), dtype="F16")
print(out)
