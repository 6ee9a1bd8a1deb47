"""Write a SensorformerRef (or any module with the same state_dict) as a sensorformer weight file.

    export_safetensors(model, config, "model.safetensors", dtype="F32" | "F16" | "BF16",
                       labels=["rest", "walk", "run"])   # optional: the head's class names

Every tensor of `model.state_dict()` is written in state_dict order, row-major, little-endian
(the time encoding's `time_encoding.inv_freq` in its own F64/F32, the rest in `dtype`),
with `__metadata__ = {"config": json.dumps(config)}` (docs/model.md, "Weights file"). `labels`
(or a "labels" list already in the config) names the head's outputs: the loader then gives
`probabilities` and `label` with every forward. They are checked as the loader checks them
(src/model/config.cpp): n_outputs distinct strings of 1 to 256 UTF-8 bytes, so a file this writes
is never one the runtime refuses for its labels. Parameters
are first taken as float32; F16 is torch's float16 conversion, BF16 the upper 16 bits of the
float32 rounded to nearest even (torch's bfloat16 conversion, cross-checked bit for bit).

`rounded_copy(model, dtype)` gives the float64 model whose parameters are exactly what a reader of
that file gets back (used for the F16/BF16 expected outputs); `load_safetensors(path)` reads a
weight file back into a SensorformerRef.

CLI: `/usr/bin/python3 tools/reference/export.py FILE` prints the config and tensors of a file.
"""
import copy
import json
import sys

import numpy as np
import torch

from sensorformer_ref import INV_FREQ, SensorformerRef, check_lookback, expected_tensor_shapes
from st_io import f32_to_bf16_bits, read_safetensors, write_safetensors

STORAGE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def storage_array(tensor, dtype):
    """float tensor -> NumPy array of the stored values (BF16: uint16 bit patterns)."""
    t32 = tensor.detach().to(torch.float32).contiguous().cpu()
    if dtype == "F32":
        return t32.numpy()
    if dtype == "F16":
        return t32.to(torch.float16).numpy()
    if dtype == "BF16":
        bits = t32.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(bits, f32_to_bf16_bits(t32.numpy())), "bfloat16 rounding mismatch"
        return bits
    raise ValueError(f"unsupported dtype {dtype!r}")


# src/core/limits.hpp kMaxNameBytes: a label's (and a modality's) name, in UTF-8 bytes.
MAX_NAME_BYTES = 256


def with_labels(config, labels=None):
    """A copy of `config` with `labels` (when given) in it, checked as the loader checks them;
    ValueError naming the problem otherwise. The caller's config is not changed."""
    out = dict(config)
    if labels is not None:
        labels = list(labels) if not isinstance(labels, str) else labels
        if "labels" in config and config["labels"] != labels:
            raise ValueError(f"labels: the config already has labels {config['labels']!r}, and labels={labels!r} differ")
        out["labels"] = labels
    if "labels" not in out:
        return out
    labels = out["labels"]
    n_outputs = config.get("n_outputs", 0)
    want = (f"labels must be a list of {n_outputs} distinct names of 1 to {MAX_NAME_BYTES} UTF-8 bytes "
            "(one per head output, n_outputs)")
    if n_outputs == 0:
        raise ValueError("labels name the head's outputs, but n_outputs is 0 (no head)")
    if not isinstance(labels, list) or len(labels) != n_outputs:
        got = f"{len(labels)} entries" if isinstance(labels, list) else type(labels).__name__
        raise ValueError(f"{want}, got {got}")
    seen = set()
    for i, name in enumerate(labels):
        try:
            size = len(name.encode("utf-8")) if isinstance(name, str) else 0
        except UnicodeEncodeError:  # a lone surrogate: not a string JSON readers accept
            size = 0
        if not 1 <= size <= MAX_NAME_BYTES:
            raise ValueError(f"{want}; entry {i} is {name!r}"[:400])
        if name in seen:
            raise ValueError(f"{want}; {name!r} is listed twice")
        seen.add(name)
    return out


def export_safetensors(model, config, path, dtype="F32", labels=None):
    """The time encoding's table (`time_encoding.inv_freq`) is written in its own dtype, F64 or F32,
    whatever `dtype` the weights take: it is what the module computed its encoding with, and F16
    would move a day-old angle by radians. `labels`: the head's class names (see with_labels)."""
    config = with_labels(config, labels)
    check_lookback(config)  # a file the loader would refuse is never written
    state = model.state_dict()
    shapes = expected_tensor_shapes(config)
    assert {k: tuple(v.shape) for k, v in state.items()} == shapes, "state_dict does not match config"
    tensors = []
    for name, value in state.items():
        if name == INV_FREQ:
            table_dtype = "F64" if value.dtype == torch.float64 else "F32"
            tensors.append((name, table_dtype, value.detach().cpu().numpy().astype(
                np.float64 if table_dtype == "F64" else np.float32)))
        else:
            tensors.append((name, dtype, storage_array(value, dtype)))
    write_safetensors(path, tensors, {"config": json.dumps(config)})


def rounded_copy(model, dtype="F32"):
    """float64 copy of `model` with every parameter rounded through the storage dtype."""
    out = copy.deepcopy(model).double()
    with torch.no_grad():
        for (name, p), (_, q) in zip(model.named_parameters(), out.named_parameters()):
            q.copy_(p.detach().to(torch.float32).to(STORAGE[dtype]).to(torch.float64))
    return out


def load_safetensors(path):
    """Weight file -> (config, float32 SensorformerRef)."""
    meta, tensors = read_safetensors(path)
    return model_of(meta, tensors)


def load_ensemble(path):
    """An ensemble file (docs/model.md "Ensembles": metadata "ensemble", member k's tensors under
    its prefix) -> [(config, float32 SensorformerRef)] in member order; a single model's file ->
    [(config, model)]."""
    meta, tensors = read_safetensors(path)
    if "ensemble" not in meta:
        return [model_of(meta, tensors)]
    spec = json.loads(meta["ensemble"])
    assert spec["combine"] == "mean_probability", spec["combine"]
    return [model_of(m["metadata"], {k[len(m["prefix"]):]: v for k, v in tensors.items() if k.startswith(m["prefix"])})
            for m in spec["members"]]


def model_of(meta, tensors):
    """(metadata, {name: array}) of one model -> (config, float32 SensorformerRef)."""
    config = json.loads(meta["config"])
    model = SensorformerRef(config)
    state = {k: torch.from_numpy(np.array(v, dtype=np.float64 if k == INV_FREQ else np.float32))
             for k, v in tensors.items()}
    if INV_FREQ in state:  # a float32 table stays float32 (the values it was trained with)
        state[INV_FREQ] = state[INV_FREQ].to(torch.float32 if tensors[INV_FREQ].dtype == np.float32 else torch.float64)
        model.time_encoding.inv_freq = state[INV_FREQ].clone()
    else:  # files written before the table was exported: computed from max_period, as the runtime does
        state[INV_FREQ] = model.time_encoding.inv_freq
    model.load_state_dict(state, strict=True)
    return config, model


def main(argv):
    for path in argv:
        meta, tensors, dtypes = read_safetensors(path, with_dtypes=True)
        print(path)
        print("config:", meta.get("config"))
        for name, value in tensors.items():
            print(f"  {name:48s} {dtypes[name]:5s} {tuple(value.shape)}")


if __name__ == "__main__":
    main(sys.argv[1:])
