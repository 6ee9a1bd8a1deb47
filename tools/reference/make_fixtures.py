"""Generate the PyTorch reference fixtures described in tools/reference/FIXTURES.md.

Writes two safetensors files (by default into tests/fixtures/ of this repository):

* attention.safetensors     - stock torch.nn.MultiheadAttention(E, H, batch_first=True) with
  random float32 weights and non-zero biases, evaluated in float64 (outputs, per-head and
  head-averaged attention weights), with optional causal and key-padding masks.
* time_encoding.safetensors - float64 sinusoidal time encoding of timestamps in seconds relative
  to a reference time, optionally plus a learned identity table (nn.Embedding weight).

Needs Debian's PyTorch (python3-torch 1.13) and NumPy; the safetensors writer is built in.
Every seed is fixed, so reruns are byte-identical.

    /usr/bin/python3 tools/reference/make_fixtures.py            # regenerate
    /usr/bin/python3 tools/reference/make_fixtures.py --check    # validate existing files
"""
import argparse
import copy
import json
import math
import pathlib
import zlib

import numpy as np
import torch

from st_io import read_safetensors, write_safetensors

GENERATOR = "tools/reference/make_fixtures.py"

# (name, N, E, H, B, key_padding, causal)
ATTENTION_CASES = [
    ("n1_e64_h1_b1", 1, 64, 1, 1, False, False),
    ("n1_e64_h4_b2_kpm", 1, 64, 4, 2, True, False),
    ("n7_e64_h1_b1", 7, 64, 1, 1, False, False),
    ("n7_e64_h4_b2_kpm", 7, 64, 4, 2, True, False),
    ("n7_e64_h8_b1_causal", 7, 64, 8, 1, False, True),
    ("n7_e64_h4_b2_kpm_causal", 7, 64, 4, 2, True, True),
    ("n7_e24_h4_b1", 7, 24, 4, 1, False, False),
    ("n267_e64_h1_b1", 267, 64, 1, 1, False, False),
    ("n267_e64_h4_b2_kpm", 267, 64, 4, 2, True, False),
    ("n267_e64_h8_b1_causal", 267, 64, 8, 1, False, True),
    ("n267_e20_h4_b1_kpm_causal", 267, 20, 4, 1, True, True),
    ("n1030_e64_h1_b1", 1030, 64, 1, 1, False, False),
    ("n1030_e64_h4_b1_kpm", 1030, 64, 4, 1, True, False),
    ("n1030_e64_h8_b1_causal", 1030, 64, 8, 1, False, True),
]

DAY = 86400.0
EPOCH = 1764460800.0  # 2025-11-30T00:00:00Z
# (name, D, max_period, t_ref, offset range, N, offsets that must appear, identity sensors)
TIME_CASES = [
    ("day_d64", 64, 10000.0, 0.0, (0.0, DAY), 200, [0.0, 6000.0, DAY], 0),
    ("day_d6_p500", 6, 500.0, 0.0, (0.0, DAY), 50, [0.0, DAY], 0),
    ("epoch_d64", 64, 10000.0, EPOCH, (0.0, DAY), 200, [0.0, DAY], 0),
    ("epoch_frac_ref_d32", 32, 10000.0, 1764460812.345678, (-10.0, DAY), 100, [-10.0, 0.0, DAY], 0),
    ("identity_d16", 16, 10000.0, 3.5, (0.0, 96.5), 40, [0.0], 5),
]


def seed_of(name):
    return zlib.crc32(name.encode())


def attention_case(name, n, e, heads, batch, key_padding, causal):
    g = torch.Generator().manual_seed(seed_of(name))
    mha = torch.nn.MultiheadAttention(e, heads, batch_first=True)
    bound = 2.0 / math.sqrt(e)
    with torch.no_grad():
        mha.in_proj_weight.uniform_(-bound, bound, generator=g)
        mha.in_proj_bias.normal_(0.0, 0.1, generator=g)
        mha.out_proj.weight.uniform_(-1.0 / math.sqrt(e), 1.0 / math.sqrt(e), generator=g)
        mha.out_proj.bias.normal_(0.0, 0.1, generator=g)
    x = torch.randn(batch, n, e, generator=g)
    params = [(k.replace("out_proj.", "out_proj_"), "F32", v.detach().clone())
              for k, v in mha.named_parameters()]
    kpm = torch.zeros(batch, n, dtype=torch.bool)
    if key_padding and n > 1:  # key 0 stays visible, so no query row is ever fully masked
        count = max(1, round(0.25 * (n - 1)))
        for b in range(batch):
            kpm[b, 1 + torch.randperm(n - 1, generator=g)[:count]] = True
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else None

    # float64 evaluation; eval mode with grad enabled keeps torch 1.13 on the math path
    ref, xd = copy.deepcopy(mha).double().eval(), x.double()
    kw = dict(key_padding_mask=kpm if key_padding else None, attn_mask=mask, need_weights=True)
    out, per_head = ref(xd, xd, xd, average_attn_weights=False, **kw)
    _, avg = ref(xd, xd, xd, average_attn_weights=True, **kw)
    out, per_head, avg = out.detach(), per_head.detach(), avg.detach()
    assert not any(t.isnan().any() for t in (out, per_head, avg)), name

    # independent float64 check of the semantics we document
    q, k, v = (xd @ ref.in_proj_weight.T + ref.in_proj_bias).detach().chunk(3, dim=-1)
    split = lambda t: t.reshape(batch, n, heads, e // heads).transpose(1, 2)
    scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(e // heads)
    scores = scores.masked_fill(kpm[:, None, None, :], -math.inf)
    if causal:
        scores = scores.masked_fill(mask, -math.inf)
    p = scores.softmax(-1)
    o = (p @ split(v)).transpose(1, 2).reshape(batch, n, e) @ ref.out_proj.weight.T + ref.out_proj.bias
    assert (o.detach() - out).abs().max() < 1e-12 and (p - per_head).abs().max() < 1e-12, name
    assert (p.mean(1) - avg).abs().max() < 1e-12, name

    rows = torch.arange(n) if n <= 7 else torch.tensor([0, 1, n // 2, n - 1])
    tensors = [("x", "F32", x)] + params
    if key_padding:
        tensors.append(("key_padding_mask", "U8", kpm.to(torch.uint8)))
    tensors += [("out", "F32", out), ("weight_rows", "I32", rows),
                ("attn_per_head", "F32", per_head[:, :, rows]), ("attn_avg", "F32", avg[:, rows])]
    info = {"name": name, "n": n, "e": e, "heads": heads, "batch": batch,
            "causal": causal, "key_padding": key_padding}
    return info, [(f"{name}.{t}", dt, a.numpy()) for t, dt, a in tensors]


def time_case(name, d, max_period, t_ref, span, n, fixed, sensors):
    rng = np.random.default_rng(seed_of(name))
    offsets = np.sort(np.concatenate([fixed, rng.uniform(*span, n - len(fixed))]))
    t = t_ref + offsets  # stored timestamps; the encoding uses t - t_ref as stored
    inv_freq = 1.0 / max_period ** (2.0 * np.arange(d // 2) / d)
    angle = (t - t_ref)[:, None] * inv_freq[None, :]
    enc = np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    tensors = [("t", "F64", t), ("t_ref", "F64", np.array([t_ref])), ("enc", "F64", enc)]
    if sensors:
        ids = rng.integers(0, sensors, n)
        torch.manual_seed(seed_of(name))
        table = torch.nn.Embedding(sensors, d).weight.detach().numpy()
        tensors += [("sensor_ids", "I32", ids), ("identity_table", "F32", table),
                    ("enc_plus_identity", "F64", enc + table.astype(np.float64)[ids])]
    info = {"name": name, "n": n, "d": d, "max_period": max_period, "identity": bool(sensors)}
    return info, [(f"{name}.{k}", dt, a) for k, dt, a in tensors]


def check(out_dir):
    """Validate both files: format, metadata and the shapes FIXTURES.md specifies."""
    for file in ("attention", "time_encoding"):
        path = out_dir / f"{file}.safetensors"
        meta, tensors = read_safetensors(path)
        assert meta["generator"] == GENERATOR and meta["torch"] == torch.__version__
        expected = {}
        for c in json.loads(meta["cases"]):
            if file == "attention":
                B, N, E, H = c["batch"], c["n"], c["e"], c["heads"]
                R = N if N <= 7 else 4
                shapes = {"x": (B, N, E), "in_proj_weight": (3 * E, E), "in_proj_bias": (3 * E,),
                          "out_proj_weight": (E, E), "out_proj_bias": (E,), "out": (B, N, E),
                          "weight_rows": (R,), "attn_per_head": (B, H, R, N), "attn_avg": (B, R, N)}
                if c["key_padding"]:
                    shapes["key_padding_mask"] = (B, N)
            else:
                N, D = c["n"], c["d"]
                shapes = {"t": (N,), "t_ref": (1,), "enc": (N, D)}
                if c["identity"]:
                    shapes.update(sensor_ids=(N,), identity_table=(5, D), enc_plus_identity=(N, D))
            expected.update({f"{c['name']}.{k}": s for k, s in shapes.items()})
        actual = {k: tuple(v.shape) for k, v in tensors.items()}
        assert actual == expected, (path, set(actual) ^ set(expected))
        assert all(np.isfinite(v).all() for v in tensors.values())
        print(f"ok {path} {path.stat().st_size} bytes, {len(tensors)} tensors")


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=pathlib.Path, default=root / "tests" / "fixtures")
    parser.add_argument("--check", action="store_true", help="only validate existing files")
    args = parser.parse_args()
    if not args.check:
        torch.manual_seed(0)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        for file, make, cases in [("attention", attention_case, ATTENTION_CASES),
                                  ("time_encoding", time_case, TIME_CASES)]:
            infos, tensors = zip(*(make(*case) for case in cases))
            meta = {"cases": json.dumps(list(infos)), "generator": GENERATOR,
                    "torch": torch.__version__}
            write_safetensors(args.out_dir / f"{file}.safetensors",
                              [t for ts in tensors for t in ts], meta)
    check(args.out_dir)


if __name__ == "__main__":
    main()
