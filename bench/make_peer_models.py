"""Writes the peer-benchmark models of `npm run bench` (bench/peers.mjs) into bench/models/.

Run: /usr/bin/python3 bench/make_peer_models.py      (Debian's torch 1.13; the outputs are committed,
so the bench itself never needs torch.)

Each workload starts from ONE seeded torch module; from it come our weights (a sensorformer
safetensors file, or the raw nn.MultiheadAttention tensors), the ONNX file a torch user would export
for onnxruntime-web, and a small reference case (inputs and float64 torch outputs) that the bench
checks every runtime against before it times anything.

  encoder:  SensorformerRef, 2-layer pre-norm GELU encoder, d 64, 4 heads, ff 256, flattened layout,
            one modality ("acc", patch 8 at 100 Hz), no final norm, no head. ONNX graph = what
            follows tokenization: value projection (N, 8) -> (N, 64) + the additive embedding
            (time encoding + sensor/modality/placement/rate rows, (N, 64), computed in JS by the
            bench) -> the two encoder layers. N is a dynamic axis (one file for N = 64 .. 4096).
  mha_E{E}_H{H}: nn.MultiheadAttention(E, H, batch_first=True), self-attention, no mask,
            need_weights=False; (E, H) = (16, 1), (64, 4), (64, 1), (256, 4): head dim 16 and 64
            with 1 and 4 heads. ONNX graph = torch's math path on x (N, E).
  stream:   stream_encoder.safetensors, the encoder's weights (the same tensors) with "causal": true
            and "attention_lookback_s": STREAM_LOOKBACK_S, for the streaming part (bench/stream.mjs);
            stream_encoder_time.safetensors, the same in the time layout (a group per stream);
            stream_demo.safetensors, demo/model/demo.safetensors' weights (d 32, factorized) with
            "causal": true and "attention_lookback_s": STREAM_DEMO_LOOKBACK_S:
            a session's per-update cost against recomputing the look-back window. Only the configs
            differ from the source files (tensors checked equal). No ONNX graph (no peer streams).
  demo:     demo/model/demo.safetensors (factorized layout, d 32) on a 10 s demo window; the ONNX
            graph takes the tokens after tokenization (T, 32) and the two layouts' groups as
            additive block-diagonal masks (T, T) (-1e9 off the group), which is how a torch user
            would export a grouped encoder; final norm, mean pool and head follow.
  af:       models/af.safetensors (the AF model of issue 20: causal look-back, flattened, ECG + RR
            events) when the checkout has it (otherwise the committed af files and models.json's
            "af" entry are kept as they are, and the bench skips its AF rows). The case is a
            synthetic 30 s recording written by `node bench/af.mjs --write-case` (the simulator's
            physiology and rrFromEcg; never the real data set). ONNX graph (AfPeer) = what follows
            what a JS user computes: per modality the normalised patches, a presence flag per
            patch and the token times (float64, absolute), plus the reference time, the placement
            index and the ECG's rate bucket; value projections, mask token, time encoding (float64
            angle), identity embeddings, the causal look-back mask as a dense (T, T) mask, the
            layers, final norm, masked mean, head. Its weights are stored as in the file (F16) and
            cast to float32 in the graph (half the file; onnxruntime folds the casts at load).
            models.json records the weights' sha256, so the bench refuses a stale graph.

The graphs are written with explicit ops (linear, reshape, matmul, softmax, layer_norm, gelu)
rather than by tracing nn.TransformerEncoderLayer / nn.MultiheadAttention: torch 1.13's fused
inference fast path must not be what gets traced, and the exported math is the documented one.
Reference outputs are computed in float64 (module.double()) on the documented math path.
"""
import copy
import hashlib
import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools" / "reference"))
from export import export_safetensors, load_ensemble, load_safetensors  # noqa: E402
from sensorformer_ref import INV_FREQ, SensorformerRef, groups, patch_stream, tokenize  # noqa: E402
from st_io import write_safetensors  # noqa: E402

OUT = ROOT / "bench" / "models"
OPSET = 17  # LayerNormalization is an ONNX op from 17; torch 1.13 exports up to 17

ENCODER_CONFIG = {
    "format": "sensorformer-1", "d_model": 64, "n_heads": 4, "n_layers": 2, "dim_feedforward": 256,
    "activation": "gelu", "norm_first": True, "layer_norm_eps": 1e-5, "final_norm": False,
    "layout": "flattened", "causal": False, "time_bin": 1.0, "max_period": 10000.0,
    "min_present_fraction": 0.5, "n_sensors": 1,
    "modalities": [{"name": "acc", "patch_len": 8, "mean": 0.0, "std": 1.0}],
    "placements": ["wrist"], "rate_bucket_edges_hz": [1.0, 10.0, 100.0], "n_outputs": 0,
}
ENCODER_RATE_HZ = 100.0
ENCODER_START = 1000.0      # seconds; the window's referenceTime is its start
ENCODER_CHECK_N = 256       # tokens in the committed reference case
# Streaming look-back W, seconds: 255.875 patch periods at 200 Hz (patch 8) and 1023.5 at 800 Hz, so
# a key is never exactly at t - W (where float64 rounding of two ways of writing a token's time
# would decide whether it counts) and 4 streams put exactly 1024 / 4096 tokens in [t - W, t]
# (bench/stream.mjs).
STREAM_LOOKBACK_S = 10.235
# The demo-size streaming model's look-back: 1023.5 patch periods of its accelerometer axes at
# 200 Hz (patch 25, 0.125 s), so 1024 tokens per stream in [t - W, t], none exactly at t - W.
STREAM_DEMO_LOOKBACK_S = 127.9375
MHA_SHAPES = [(16, 1), (64, 4), (64, 1), (256, 4)]
MHA_CHECK_N = 128
MASK_OFF = -1e9             # additive mask off the group: exp underflows to exactly 0 in float32
AF_WEIGHTS = ROOT / "models" / "af.safetensors"
AF_FILES = ["af.onnx", "af_case_*", "af_check_*"]  # globs in bench/models


def mha_math(x, in_w, in_b, out_w, out_b, num_heads):
    """torch's nn.MultiheadAttention math path (need_weights=False), x (N, E) -> (N, E)."""
    E = x.shape[-1]
    dh = E // num_heads
    q, k, v = F.linear(x, in_w, in_b).chunk(3, dim=-1)
    q = q * (1.0 / math.sqrt(dh))  # torch scales q before the product
    q, k, v = (u.reshape(-1, num_heads, dh).transpose(0, 1) for u in (q, k, v))
    return q, k, v


def attention_out(q, k, v, out_w, out_b, E, mask=None):
    scores = torch.matmul(q, k.transpose(1, 2))
    if mask is not None:
        scores = scores + mask
    ctx = torch.matmul(scores.softmax(dim=-1), v).transpose(0, 1).reshape(-1, E)
    return F.linear(ctx, out_w, out_b)


def self_attention(mha, x, mask=None):
    q, k, v = mha_math(x, mha.in_proj_weight, mha.in_proj_bias, None, None, mha.num_heads)
    return attention_out(q, k, v, mha.out_proj.weight, mha.out_proj.bias, x.shape[-1], mask)


def pre_norm_layer(layer, x, mask=None):
    """nn.TransformerEncoderLayer(norm_first=True, activation='gelu', dropout=0) on (N, d)."""
    x = x + self_attention(layer.self_attn, layer.norm1(x), mask)
    return x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x))))


class EncoderPeer(nn.Module):
    """patches (N, P), embed (N, d) -> embeddings (N, d): the encoder workload after tokenization."""

    def __init__(self, ref):
        super().__init__()
        self.proj = ref.tokenizer.value_proj["acc"]
        self.layers = ref.encoder.layers

    def forward(self, patches, embed):
        x = self.proj(patches) + embed
        for layer in self.layers:
            x = pre_norm_layer(layer, x)
        return x


class MhaPeer(nn.Module):
    def __init__(self, mha):
        super().__init__()
        self.mha = mha

    def forward(self, x):
        return self_attention(self.mha, x)


class DemoPeer(nn.Module):
    """tokens (T, d), time_mask (T, T), channel_mask (T, T) -> (embeddings (T, d), head (n_out)).
    Factorized layout: per layer the time block (layers[i], groups = streams), then the channel
    block (channel_layers[i], groups = time bins); final norm, mean over tokens, head."""

    def __init__(self, ref):
        super().__init__()
        self.ref = ref

    def forward(self, tokens, time_mask, channel_mask):
        enc = self.ref.encoder
        x = tokens
        for i in range(len(enc.layers)):
            x = pre_norm_layer(enc.layers[i], x, time_mask[None])
            x = pre_norm_layer(enc.channel_layers[i], x, channel_mask[None])
        x = enc.norm(x)
        return x, self.ref.head(x.mean(dim=0))


def export_onnx(module, args, names, outputs, path, dynamic):
    module.eval()
    torch.onnx.export(module, args, str(path), input_names=names, output_names=outputs,
                      dynamic_axes=dynamic, opset_version=OPSET, do_constant_folding=True)


def f32(path, array):
    np.ascontiguousarray(array, dtype="<f4").tofile(path)


def encoder_window(samples):
    return {"streams": [{"sensor": 0, "modality": "acc", "placement": "wrist",
                         "rateHz": ENCODER_RATE_HZ, "startTime": ENCODER_START,
                         "samples": [float(v) for v in samples]}],
            "referenceTime": ENCODER_START}


def make_encoder(meta):
    torch.manual_seed(10)
    ref = SensorformerRef(ENCODER_CONFIG)
    export_safetensors(ref, ENCODER_CONFIG, OUT / "encoder.safetensors")
    P, N = ENCODER_CONFIG["modalities"][0]["patch_len"], ENCODER_CHECK_N
    samples = np.random.default_rng(10).standard_normal(N * P).astype(np.float32)
    f32(OUT / "encoder_check_samples.f32", samples)

    # float64 reference through the documented pipeline, from the file as the runtime reads it
    _, ref32 = load_safetensors(OUT / "encoder.safetensors")
    ref64 = copy.deepcopy(ref32).double()  # .double() converts in place
    out = ref64(encoder_window(samples))
    f32(OUT / "encoder_check_embeddings.f32", out["embeddings"].detach().numpy())

    # the peer graph, checked against the pipeline in float64 before export
    tokens = out["tokens"]
    patches = torch.from_numpy(samples.astype(np.float64)).reshape(N, P)
    embed = tokens.x - ref64.tokenizer.value_proj["acc"](patches)
    peer = EncoderPeer(ref64)
    err = (peer(patches, embed) - out["embeddings"]).abs().max().item()
    assert err < 1e-10, f"encoder peer graph differs from the reference pipeline by {err}"
    export_onnx(EncoderPeer(ref32), (patches.float(), embed.float()), ["patches", "embed"],
                ["embeddings"], OUT / "encoder.onnx",
                {"patches": {0: "N"}, "embed": {0: "N"}, "embeddings": {0: "N"}})
    meta["encoder"] = {"config": ENCODER_CONFIG, "rateHz": ENCODER_RATE_HZ,
                       "startTime": ENCODER_START, "checkN": N}


def make_stream(meta):
    """The encoder's file with a causal look-back config (same tensors, checked bit-identical), in
    the flattened layout (one group) and the time layout (a group per stream: the same tensors,
    as that layout has no channel layers)."""
    config, ref32 = load_safetensors(OUT / "encoder.safetensors")
    meta["stream"] = {"lookbackS": STREAM_LOOKBACK_S, "files": {}}
    for layout, name in [("flattened", "stream_encoder.safetensors"), ("time", "stream_encoder_time.safetensors")]:
        streamed = dict(config, layout=layout, causal=True, attention_lookback_s=STREAM_LOOKBACK_S)
        export_safetensors(ref32, streamed, OUT / name)
        _, again = load_safetensors(OUT / name)
        for (tensor, a), (_, b) in zip(ref32.state_dict().items(), again.state_dict().items()):
            assert torch.equal(a, b), f"{name}: tensor {tensor} differs from encoder.safetensors"
        meta["stream"]["files"][layout] = name
    # the demo model's weights (F16 in its file, so written as F16: no value changes)
    config, ref32 = load_safetensors(ROOT / "demo" / "model" / "demo.safetensors")
    streamed = dict(config, causal=True, attention_lookback_s=STREAM_DEMO_LOOKBACK_S)
    export_safetensors(ref32, streamed, OUT / "stream_demo.safetensors", dtype="F16")
    _, again = load_safetensors(OUT / "stream_demo.safetensors")
    for (tensor, a), (_, b) in zip(ref32.state_dict().items(), again.state_dict().items()):
        assert torch.equal(a, b), f"stream_demo.safetensors: tensor {tensor} differs from demo.safetensors"
    meta["stream"]["files"]["demo"] = "stream_demo.safetensors"
    meta["stream"]["demoLookbackS"] = STREAM_DEMO_LOOKBACK_S


def make_mha(meta):
    meta["mha"] = []
    for E, H in MHA_SHAPES:
        torch.manual_seed(1000 + E + H)
        mha = nn.MultiheadAttention(E, H, batch_first=True)
        # torch's default init leaves the biases at zero: random ones so a bias mix-up is caught
        with torch.no_grad():
            mha.in_proj_bias.normal_(0, 0.1)
            mha.out_proj.bias.normal_(0, 0.1)
        mha.eval()
        name = f"mha_E{E}_H{H}"
        write_safetensors(OUT / f"{name}.safetensors", [
            ("in_proj_weight", "F32", mha.in_proj_weight.detach().numpy()),
            ("in_proj_bias", "F32", mha.in_proj_bias.detach().numpy()),
            ("out_proj_weight", "F32", mha.out_proj.weight.detach().numpy()),
            ("out_proj_bias", "F32", mha.out_proj.bias.detach().numpy())],
            {"embed_dim": str(E), "num_heads": str(H)})
        x = torch.from_numpy(np.random.default_rng(E * 10 + H).standard_normal(
            (MHA_CHECK_N, E)).astype(np.float32))
        f32(OUT / f"{name}_check_x.f32", x.numpy())
        m64 = MhaPeer(copy.deepcopy(mha)).double()
        # nn.MultiheadAttention itself (grad enabled: the documented math path) is the reference
        stock = nn.MultiheadAttention(E, H, batch_first=True).double()
        stock.load_state_dict(mha.state_dict())
        want = stock(x.double()[None], x.double()[None], x.double()[None], need_weights=False)[0][0]
        err = (m64(x.double()) - want).abs().max().item()
        assert err < 1e-10, f"{name}: peer graph differs from nn.MultiheadAttention by {err}"
        f32(OUT / f"{name}_check_out.f32", want.detach().numpy())
        export_onnx(MhaPeer(mha), (x,), ["x"], ["out"], OUT / f"{name}.onnx",
                    {"x": {0: "N"}, "out": {0: "N"}})
        meta["mha"].append({"name": name, "embedDim": E, "numHeads": H, "checkN": MHA_CHECK_N})


def demo_window():
    """10 s of every demo stream, lengths a whole number of patches so every token is present
    (the peer graph has no absent-token handling) and groups of 1-50 tokens."""
    rng = np.random.default_rng(7)
    t0, seconds = 5000.0, 10.0

    def regular(sensor, modality, placement, rate, n, mean, sd):
        return {"sensor": sensor, "modality": modality, "placement": placement, "rateHz": rate,
                "startTime": t0, "samples": [float(v) for v in rng.normal(mean, sd, n)]}

    rr_times = np.cumsum(rng.uniform(0.6, 0.8, 12))
    streams = [
        regular(0, "ecg", "chest", 130.0, 1300, 0.0, 400.0),       # 50 tokens
        regular(1, "acc_x", "wrist", 50.0, 500, 0.0, 500.0),       # 20 tokens each
        regular(1, "acc_y", "wrist", 50.0, 500, 0.0, 500.0),
        regular(1, "acc_z", "wrist", 50.0, 500, 0.0, 500.0),
        regular(0, "hr", "chest", 1.0, 10, 100.0, 10.0),           # 5 tokens
        {"sensor": 0, "modality": "rr", "placement": "chest",       # 3 tokens (events)
         "timestamps": [float(t0 + t) for t in rr_times],
         "samples": [float(v) for v in np.diff(np.concatenate([[0.0], rr_times]))]},
        regular(2, "temperature", "wrist", 1.0, 10, 34.0, 0.2),    # 10 tokens
        regular(3, "spo2", "finger", 0.5, 5, 97.0, 1.0),           # 1 token
    ]
    return {"streams": streams, "referenceTime": t0}


def make_demo(meta):
    config, ref32 = load_safetensors(ROOT / "demo" / "model" / "demo.safetensors")
    window = demo_window()
    (OUT / "demo_window.json").write_text(json.dumps(window))
    ref64 = copy.deepcopy(ref32).double()  # .double() converts in place
    out = ref64(window)
    tokens = out["tokens"]
    assert bool(tokens.present.all()), "the demo window must have every token present"
    T = tokens.x.shape[0]

    def block_mask(block):
        m = torch.full((T, T), MASK_OFF, dtype=torch.float64)
        sizes = []
        for idx in groups(tokens, block, config["time_bin"]):
            i = torch.tensor(idx)
            m[i[:, None], i[None, :]] = 0.0
            sizes.append(len(idx))
        return m, sizes

    time_mask, time_sizes = block_mask("time")
    channel_mask, channel_sizes = block_mask("channel")
    peer = DemoPeer(ref64)
    emb, head = peer(tokens.x, time_mask, channel_mask)
    err = max((emb - out["embeddings"]).abs().max().item(), (head - out["head"]).abs().max().item())
    assert err < 1e-10, f"demo peer graph differs from the reference pipeline by {err}"
    f32(OUT / "demo_tokens.f32", tokens.x.detach().numpy())
    f32(OUT / "demo_time_mask.f32", time_mask.numpy())
    f32(OUT / "demo_channel_mask.f32", channel_mask.numpy())
    f32(OUT / "demo_check_embeddings.f32", out["embeddings"].detach().numpy())
    f32(OUT / "demo_check_head.f32", out["head"].detach().numpy())
    export_onnx(DemoPeer(ref32), (tokens.x.float(), time_mask.float(), channel_mask.float()),
                ["tokens", "time_mask", "channel_mask"], ["embeddings", "head"],
                OUT / "demo.onnx", None)
    meta["demo"] = {"tokens": T, "timeGroups": time_sizes, "channelGroups": channel_sizes,
                    "nOutputs": config["n_outputs"]}


class AfPeer(nn.Module):
    """The AF model after what a JS user computes (bench/af.mjs peerFeeds): per modality of the
    config, in its order (ecg, rr and the model's beat streams, "beat" or "beat_*"), the normalised
    patches (K, P) (missing samples 0), <name>_present (bool) and <name>_time (float64 absolute
    seconds) per patch; then reference_time (float64), placement and ecg_rate_bucket (int64
    indices) -> embeddings (sum K, d) (the modalities' tokens in that order) and head. The ECG is
    the one regular stream (its rate bucket); the others are event streams (bucket 0).
    Same function as SensorformerRef on the window (flattened layout, causal look-back, pre-norm
    GELU layers, final norm): the masks compare absolute float64 times, the time encoding's angle
    is formed in float64, a query with no key gets a zero context. Parameters are held in
    `storage` dtype and cast to `compute` where used (F16 storage: the file's values, cast in the
    graph)."""

    def __init__(self, ref, storage, compute):
        super().__init__()
        cfg = ref.config
        for key, want in [("layout", "flattened"), ("causal", True), ("norm_first", True),
                          ("activation", "gelu"), ("final_norm", True)]:
            assert cfg.get(key) == want, f"AfPeer is written for {key} = {want!r}, the model has {cfg.get(key)!r}"
        self.names = [m["name"] for m in cfg["modalities"]]
        assert self.names[:2] == ["ecg", "rr"] and all(n == "beat" or n.startswith("beat_") for n in self.names[2:]) and cfg["n_sensors"] == 1
        self.cfg, self.compute = cfg, compute
        for name, t in ref.state_dict().items():
            keep = torch.float64 if name == INV_FREQ else storage
            self.register_buffer(name.replace(".", "__"), t.detach().to(keep).clone())

    def w(self, name):
        return getattr(self, name.replace(".", "__")).to(self.compute)

    def forward(self, *args):
        cfg, w = self.cfg, self.w
        n = len(self.names)
        reference_time, placement, ecg_rate_bucket = args[3 * n:]
        d, H, W, eps = cfg["d_model"], cfg["n_heads"], cfg["attention_lookback_s"], cfg["layer_norm_eps"]
        mask_token = w("tokenizer.mask_token")
        ident = w("tokenizer.sensor_embedding.weight")[0] + w("tokenizer.placement_embedding.weight")[placement]
        modality, rate = w("tokenizer.modality_embedding.weight"), w("tokenizer.rate_embedding.weight")
        xs, ts, ps = [], [], []
        for i, name in enumerate(self.names):
            vals, present, time = args[3 * i:3 * i + 3]
            x = torch.where(present[:, None], F.linear(vals.to(self.compute), w(f"tokenizer.value_proj.{name}.weight"), w(f"tokenizer.value_proj.{name}.bias")), mask_token)
            # the ECG's rate bucket; event streams: bucket 0
            xs.append(x + (ident + modality[i] + rate[ecg_rate_bucket if name == "ecg" else 0]))
            ts.append(time)
            ps.append(present)
        t = torch.cat(ts)
        angle = (t - reference_time)[:, None] * getattr(self, INV_FREQ.replace(".", "__"))[None, :]
        x = torch.cat(xs) + torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).to(self.compute)
        present = torch.cat(ps)
        hidden = ~present[None, :] | (t[None, :] > t[:, None]) | ((t[:, None] - t[None, :]) > W)
        no_key = ((~hidden).to(self.compute).sum(dim=-1) == 0)[None, :, None]
        dh = d // H
        for i in range(cfg["n_layers"]):
            p = f"encoder.layers.{i}."
            h = F.layer_norm(x, (d,), w(p + "norm1.weight"), w(p + "norm1.bias"), eps)
            q, k, v = F.linear(h, w(p + "self_attn.in_proj_weight"), w(p + "self_attn.in_proj_bias")).chunk(3, dim=-1)
            q, k, v = (u.reshape(-1, H, dh).transpose(0, 1) for u in (q, k, v))
            scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(dh)
            weights = scores.masked_fill(hidden[None], -math.inf).softmax(dim=-1).masked_fill(no_key, 0.0)
            ctx = torch.matmul(weights, v).transpose(0, 1).reshape(-1, d)
            x = x + F.linear(ctx, w(p + "self_attn.out_proj.weight"), w(p + "self_attn.out_proj.bias"))
            h = F.layer_norm(x, (d,), w(p + "norm2.weight"), w(p + "norm2.bias"), eps)
            x = x + F.linear(F.gelu(F.linear(h, w(p + "linear1.weight"), w(p + "linear1.bias"))),
                             w(p + "linear2.weight"), w(p + "linear2.bias"))
        x = F.layer_norm(x, (d,), w("encoder.norm.weight"), w("encoder.norm.bias"), eps)
        keep = present.to(self.compute)[:, None]
        pooled = (x * keep).sum(dim=0) / keep.sum().clamp(min=1.0)
        return x, F.linear(pooled, w("head.weight"), w("head.bias"))


class AfEnsemblePeer(nn.Module):
    """An ensemble file's AF models (docs/model.md "Ensembles") as one graph: its inputs are the
    union of the members' (AfPeer's, per modality in `names` order, then reference_time, placement
    and ecg_rate_bucket); each member takes those of its modalities; the outputs are the first
    member's embeddings and log(mean_k softmax(head_k)), as the package combines them."""

    def __init__(self, peers, names):
        super().__init__()
        self.peers = nn.ModuleList(peers)
        self.names = names

    def forward(self, *args):
        n = len(self.names)
        by = {name: args[3 * i:3 * i + 3] for i, name in enumerate(self.names)}
        tail = args[3 * n:]
        outs = [peer(*[t for name in peer.names for t in by[name]], *tail) for peer in self.peers]
        probs = torch.stack([h.softmax(-1) for _, h in outs]).mean(0)
        return outs[0][0], probs.log()


def union_config(configs):
    """The first member's config with every member's modalities (the first's first), as
    web/src/model.js presents an ensemble."""
    seen, modalities = set(), []
    for c in configs:
        for m in c["modalities"]:
            if m["name"] not in seen:
                seen.add(m["name"])
                modalities.append(m)
    return {**configs[0], "modalities": modalities}


def af_inputs(config, window, dtype):
    """AfPeer's inputs for a window whose streams are the config's modalities in order (the patches
    as the reference cuts them)."""
    mods = {m["name"]: m for m in config["modalities"]}
    assert [s["modality"] for s in window["streams"]] == [m["name"] for m in config["modalities"]]
    frac = config["min_present_fraction"]
    out = []
    for stream in window["streams"]:
        normalized, present, times, _ = patch_stream(stream, mods[stream["modality"]], frac)
        out += [torch.tensor(normalized, dtype=torch.float64).to(dtype), torch.tensor(present),
                torch.tensor(times, dtype=torch.float64)]
    ecg = window["streams"][0]
    bucket = 1 + sum(1 for e in config["rate_bucket_edges_hz"] if ecg["rateHz"] >= e)
    return out + [torch.tensor(float(window["referenceTime"]), dtype=torch.float64),
                  torch.tensor(config["placements"].index(ecg["placement"])), torch.tensor(bucket)]


def make_af(meta, previous):
    if not AF_WEIGHTS.exists():
        kept = sorted(f.name for g in AF_FILES for f in OUT.glob(g))
        print(f"af: {AF_WEIGHTS.relative_to(ROOT)} is not in this checkout: the AF peer files "
              f"({', '.join(kept) or 'none'}) and models.json's \"af\" entry are kept as they were")
        if "af" in previous:
            meta["af"] = previous["af"]
        return
    members = load_ensemble(AF_WEIGHTS)  # one (config, model) for a single model's file
    config = union_config([c for c, _ in members])
    sha = hashlib.sha256(AF_WEIGHTS.read_bytes()).hexdigest()
    case = json.loads(subprocess.run(["node", str(ROOT / "bench" / "af.mjs"), "--write-case", str(OUT)],
                                     check=True, capture_output=True, text=True).stdout)
    ecg = np.fromfile(OUT / "af_case_ecg.f32", dtype="<f4")
    streams = [{"sensor": 0, "modality": "ecg", "placement": case["placement"], "rateHz": case["rateHz"],
                "startTime": case["startTime"], "samples": [float(v) for v in ecg]}]
    for m in config["modalities"][1:]:  # the event streams (rr, beat): af.mjs --write-case wrote them
        events = json.loads((OUT / f"af_case_{m['name']}.json").read_text())
        streams.append({"sensor": 0, "modality": m["name"], "placement": case["placement"],
                        "timestamps": events["timestamps"], "samples": events["samples"]})
    window = {"streams": streams, "referenceTime": case["startTime"]}

    # The reference: each member on the streams of its modalities (the package's routing), the
    # first member's embeddings, the members' mean probability as the head.
    outs = []
    for c, ref32 in members:
        names = {m["name"] for m in c["modalities"]}
        own = {**window, "streams": [s for s in streams if s["modality"] in names]}
        outs.append(copy.deepcopy(ref32).double()(own))
    out = {"embeddings": outs[0]["embeddings"],
           "head": torch.stack([o["head"].softmax(-1) for o in outs]).mean(0).log()}
    f32(OUT / "af_check_embeddings.f32", out["embeddings"].detach().numpy())
    f32(OUT / "af_check_head.f32", out["head"].detach().numpy())

    def graph(storage, compute, double=False):
        peers = [AfPeer(copy.deepcopy(r).double() if double else r, storage, compute) for _, r in members]
        return peers[0] if len(peers) == 1 else AfEnsemblePeer(peers, [m["name"] for m in config["modalities"]])

    # the peer graph in float64 against the reference pipeline, before export
    emb, head = graph(torch.float64, torch.float64, double=True)(*af_inputs(config, window, torch.float64))
    err = max((emb - out["embeddings"]).abs().max().item(), (head - out["head"]).abs().max().item())
    assert err < 1e-10, f"af peer graph differs from the reference pipeline by {err}"
    # Stored as the file stores them when that is exact (F16 files), else float32.
    exact16 = all(torch.equal(t.half().float(), t) for _, r in members for n, t in r.state_dict().items() if n != INV_FREQ)
    peer = graph(torch.float16 if exact16 else torch.float32, torch.float32).eval()
    args = tuple(af_inputs(config, window, torch.float32))
    emb32, head32 = peer(*args)
    err32 = max((emb32.double() - out["embeddings"]).abs().max().item(), (head32.double() - out["head"]).abs().max().item())
    assert err32 < 1e-4, f"af peer graph in float32 differs from float64 by {err32}"
    mods = [m["name"] for m in config["modalities"]]
    names = [f"{m}{suffix}" for m in mods for suffix in ("", "_present", "_time")] + ["reference_time", "placement", "ecg_rate_bucket"]
    dynamic = {f"{m}{suffix}": {0: f"N_{m}"} for m in mods for suffix in ("", "_present", "_time")} | {"embeddings": {0: "T"}}
    # no constant folding: it would turn the F16 weights and their casts into float32 initializers
    torch.onnx.export(peer, args, str(OUT / "af.onnx"), input_names=names,
                      output_names=["embeddings", "head"], dynamic_axes=dynamic,
                      opset_version=OPSET, do_constant_folding=False)
    meta["af"] = {"weights": "models/af.safetensors", "weightsSha256": sha, "case": case,
                  "tokens": int(out["embeddings"].shape[0]), "weightStorage": "F16" if exact16 else "F32"}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    previous = json.loads((OUT / "models.json").read_text()) if (OUT / "models.json").exists() else {}
    meta = {"torch": torch.__version__, "opset": OPSET}
    make_encoder(meta)
    make_stream(meta)
    make_mha(meta)
    make_demo(meta)
    make_af(meta, previous)
    (OUT / "models.json").write_text(json.dumps(meta, indent=1) + "\n")
    for p in sorted(OUT.iterdir()):
        print(f"{p.stat().st_size:>9}  {p.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
