"""PyTorch reference of the sensorformer model. docs/model.md is the contract; this file follows it
literally and is what tests/fixtures/model/ is computed with.

One call processes ONE window, a dict in the input format of docs/model.md:

    {"streams": [{"sensor": 0, "modality": "ecg", "placement": "chest",
                  "rateHz": 130.3, "startTime": 1764460812.3, "samples": [...]},      # regular
                 {"sensor": 2, "modality": "rr", "placement": "chest",
                  "timestamps": [...], "samples": [...], "present": [1, 0, ...]},       # events
                 ...],
     "referenceTime": 1764460812.3}                                  # optional

NaN or None in `samples` is a missing sample. The pipeline is four small functions:

  tokenize(model, window) -> Tokens
      Each stream is cut into patches of its modality's patch_len P at its own rate. A patch is
      present iff (present samples) / P >= min_present_fraction; its token is
      value_proj[m]((x - mean) / std) with missing samples as 0, an absent patch takes mask_token.
      Plus time_encoding(t - reference_time) (float64 difference, sin block then cos block) and
      the sensor, modality, placement and rate-bucket embeddings. A stream with no present patch
      emits no tokens. An event stream of a modality with "missing_events": "leave-out" (a model
      trained without such events) is patched without its missing events; a regular stream of a
      modality with "upsample_hz" R above its rate is first read at R (upsample_stream). Token order: streams in
      input order, patches in time order. The default
      reference_time is the earliest start_time / first timestamp among the streams that emit
      tokens (an entirely missing stream changes nothing; same choice as src/tokenize).
  groups(tokens, block, time_bin) -> [token indices]
      "flattened": all tokens; "time": one group per stream (stream order); "channel": one group
      per bin floor((t - reference_time) / time_bin) (increasing bin). Each group is sorted by
      time, stably.
  encoder_layer(layer, x, key_mask) -> (y, weights)
      One stock nn.TransformerEncoderLayer's parameters applied to one group with our own math:
      identical to torch's math path, except that a query with no unmasked key gets a zero
      attention context (zero weights) where torch 1.13 returns NaN. Absent tokens are masked as
      keys; with `causal`, key j is masked for query i when t_j > t_i, and with
      `attention_lookback_s` W (causal models only) also when t_i - t_j > W (float64).
  pool(model, x, present) -> (embeddings, pooled, head)
      Optional final LayerNorm, mean over present tokens (zero vector when none), optional head.
      forward(window, pool_from=t) pools only the present tokens whose time is >= t (absolute
      seconds, float64): what a stream session's pooled(seconds) computes over its newest
      `seconds` (docs/model.md "Training a model for streaming"). The default None pools every
      present token, as the runtime's forward does; embeddings do not depend on it.

The module computes in its own dtype (`model.double()` for fixtures); times stay float64.
state_dict() names are exactly the tensor names of docs/model.md, so export.py writes the weight
file straight from it.
"""
import math
import struct
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

FORMAT = "sensorformer-1"
INV_FREQ = "time_encoding.inv_freq"  # the one optional tensor, F32 or F64, stored as trained
BLOCKS = {"flattened": ["flattened"], "time": ["time"], "channel": ["channel"],
          "factorized": ["time", "channel"]}


class Tokenizer(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config["d_model"]
        self.value_proj = nn.ModuleDict(
            {m["name"]: nn.Linear(m["patch_len"], d) for m in config["modalities"]})
        self.mask_token = nn.Parameter(torch.zeros(d))
        self.sensor_embedding = nn.Embedding(config["n_sensors"], d)
        self.modality_embedding = nn.Embedding(len(config["modalities"]), d)
        self.placement_embedding = nn.Embedding(len(config["placements"]), d)
        self.rate_embedding = nn.Embedding(len(config["rate_bucket_edges_hz"]) + 2, d)


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()

        def stock_layer():
            return nn.TransformerEncoderLayer(
                config["d_model"], config["n_heads"], config["dim_feedforward"], dropout=0.0,
                activation=config["activation"], layer_norm_eps=config["layer_norm_eps"],
                batch_first=True, norm_first=config["norm_first"])

        self.layers = nn.ModuleList(stock_layer() for _ in range(config["n_layers"]))
        if config["layout"] == "factorized":
            self.channel_layers = nn.ModuleList(stock_layer() for _ in range(config["n_layers"]))
        if config.get("final_norm", False):
            self.norm = nn.LayerNorm(config["d_model"], eps=config["layer_norm_eps"])


class SensorformerRef(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.get("format", FORMAT) == FORMAT
        assert config["layout"] in BLOCKS and config["activation"] in ("relu", "gelu")
        assert config["d_model"] % 2 == 0 and config["d_model"] % config["n_heads"] == 0
        check_lookback(config)
        self.config = dict(config)
        self.tokenizer = Tokenizer(config)
        self.time_encoding = TimeEncoding(config)
        self.encoder = Encoder(config)
        if config.get("n_outputs", 0) > 0:
            self.head = nn.Linear(config["d_model"], config["n_outputs"])

    def forward(self, window, layer_hook=None, pool_from=None):
        """Returns a dict: embeddings (T, d), pooled (d), head (n_outputs) or None, token_stream,
        token_modality (int64, T), token_time (float64, T, absolute seconds), token_present (bool,
        T), reference_time (float), attention {(layer, block, group): (token indices, (H, g, g))},
        and tokens (the Tokens record). `layer_hook(layer, x, key_mask, y, weights)` is called
        after each group's layer application (the fixture script checks torch's stock layer).
        `pool_from` (absolute seconds or None): pool only the present tokens with time >= it."""
        tokens = tokenize(self, window)
        x, attention = encode(self, tokens, layer_hook)
        keep = tokens.present if pool_from is None else tokens.present & (tokens.time >= float(pool_from))
        embeddings, pooled, head = pool(self, x, keep)
        return {"embeddings": embeddings, "pooled": pooled, "head": head,
                "token_stream": tokens.stream, "token_modality": tokens.modality,
                "token_time": tokens.time, "token_present": tokens.present,
                "referenceTime": tokens.reference_time, "attention": attention,
                "tokens": tokens}


# ---------------------------------------------------------------------------------------------
# tokenize

@dataclass
class Tokens:
    x: torch.Tensor                 # (T, d) in the module dtype
    stream: torch.Tensor            # (T,) int64, stream index in the input
    modality: torch.Tensor          # (T,) int64, index in config["modalities"]
    time: torch.Tensor              # (T,) float64, absolute token time (patch start)
    present: torch.Tensor           # (T,) bool
    reference_time: float
    patches: list = field(default_factory=list)  # per token: tuple of (value or None) x P


def is_event_stream(stream):
    return stream.get("timestamps") is not None


def rate_bucket(stream, edges):
    if is_event_stream(stream):
        return 0
    return 1 + sum(1 for e in edges if stream["rateHz"] >= e)


def inverse_frequencies(d_model, max_period):
    """float64 (d_model/2,): 1 / max_period^(2i/d_model)."""
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return 1.0 / max_period ** (2.0 * i / d_model)


def time_encoding(rel, d_model, max_period, inv_freq=None):
    """rel: float64 (T,) seconds since the reference time -> float64 (T, d_model). The angle is
    formed in float64 from the table's values as they are (float32 values stay exactly those)."""
    if inv_freq is None:
        inv_freq = inverse_frequencies(d_model, max_period)
    angle = rel.to(torch.float64)[:, None] * inv_freq.to(torch.float64)[None, :]
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)


class TimeEncoding(nn.Module):
    """Holds the inverse frequencies as a buffer, so the table a module was trained with is saved
    in its state_dict (`time_encoding.inv_freq`) and exported. Computed in float64 here; a module
    written like seed 000's keeps a float32 table (1 / max_period ** (arange(0, d, 2).float() / d)),
    whose rounding moves the encoding by up to 2.6e-3 after 24 h at d_model 128: the exported table
    makes the runtime use exactly those values."""

    def __init__(self, config):
        super().__init__()
        self.d_model, self.max_period = config["d_model"], config["max_period"]
        self.register_buffer("inv_freq", inverse_frequencies(self.d_model, self.max_period))

    def forward(self, rel):
        return time_encoding(rel, self.d_model, self.max_period, self.inv_freq)


def sample_present(values, flags):
    """None / NaN mark a missing sample; an infinite one is an error (docs/model.md)."""
    if any(v is not None and math.isinf(v) for v in values):
        raise ValueError("infinite sample")
    return [(f is None or f != 0) and v is not None and not math.isnan(v)
            for v, f in zip(values, flags)]


def keys_weights(f):
    """Keys' cubic convolution kernel (a = -1/2) at the four taps' distances 1 + f, f, 1 - f, 2 - f
    for f in [0, 1): floats or numpy arrays (tools/af/afmodel.py's vectorised upsample uses it),
    each written as src/tokenize/upsample.cpp writes it, so the float64 results are the same."""
    g = 1.0 - f
    return (((-0.5 * f + 1.0) * f - 0.5) * f,   # W(1 + f)
            (1.5 * f - 2.5) * f * f + 1.0,       # W(f)
            (1.5 * g - 2.5) * g * g + 1.0,       # W(1 - f)
            ((-0.5 * g + 1.0) * g - 0.5) * g)    # W(2 - f)


def upsample_stream(stream, target):
    """A regular stream read at `target` Hz (a modality's "upsample_hz", docs/model.md
    "Tokenizer"; src/tokenize/upsample.hpp): output j, at startTime + j / target, sits at input
    position u = j * rateHz / target; with i = floor(u) and f = u - i it is Keys' cubic convolution
    (a = -1/2) of inputs i-1 .. i+2, computed in float64 from the float32 samples and rounded to
    float32, missing (None) when any of the four is missing or outside the stream. Outputs: every
    j with floor(u) < n."""
    values = [None if v is None else float(v) for v in stream["samples"]]
    flags = stream.get("present") or [None] * len(values)
    ok = sample_present(values, flags)
    n, rate = len(values), stream["rateHz"]
    f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]
    tap = lambda i: f32(values[i]) if 0 <= i < n and ok[i] else None
    out, j = [], 0
    while True:
        u = j * rate / target
        i = math.floor(u)
        if i >= n:
            break
        taps = [tap(i - 1), tap(i), tap(i + 1), tap(i + 2)]
        if any(t is None for t in taps):
            out.append(None)
        else:
            w0, w1, w2, w3 = keys_weights(u - i)
            out.append(f32(w0 * taps[0] + w1 * taps[1] + w2 * taps[2] + w3 * taps[3]))
        j += 1
    return {k: v for k, v in stream.items() if k != "present"} | {"rateHz": target, "samples": out}


def patch_stream(stream, modality, frac):
    """Cut one stream into patches: (normalized values (K, P), present (K), times (K), values)."""
    P, mu, sigma = modality["patch_len"], modality["mean"], modality["std"]
    values = [None if v is None else float(v) for v in stream["samples"]]
    flags = stream.get("present") or [None] * len(values)
    assert len(flags) == len(values)
    ok = sample_present(values, flags)
    if is_event_stream(stream) and modality.get("missing_events", "mask") == "leave-out":
        # a model trained without this stream's missing events: patched as if never sent
        stream = {**stream, "timestamps": [t for t, keep in zip(stream["timestamps"], ok) if keep]}
        values = [v for v, keep in zip(values, ok) if keep]
        flags, ok = [None] * len(values), [True] * len(values)
    n, event = len(values), is_event_stream(stream)
    if event:
        assert len(stream["timestamps"]) == n
    normalized, present, times, patch_values = [], [], [], []
    for k in range(-(-n // P)):  # K = ceil(n / P); past the end: missing
        idx = range(k * P, k * P + P)
        normalized.append([(values[j] - mu) / sigma if j < n and ok[j] else 0.0 for j in idx])
        present.append(sum(1 for j in idx if j < n and ok[j]) / P >= frac)
        times.append(float(stream["timestamps"][k * P]) if event
                     else stream["startTime"] + k * P / stream["rateHz"])
        patch_values.append(tuple(values[j] if j < n and ok[j] else None for j in idx))
    return normalized, present, times, patch_values


def tokenize(model, window):
    cfg, tok = model.config, model.tokenizer
    dtype, d = tok.mask_token.dtype, cfg["d_model"]
    frac = cfg.get("min_present_fraction", 0.5)
    modalities = {m["name"]: (i, m) for i, m in enumerate(cfg["modalities"])}
    placements = {p: i for i, p in enumerate(cfg["placements"])}

    # streams with no present patch emit no tokens (and take no part in the reference time)
    emitting = []
    for s_index, s in enumerate(window["streams"]):
        m_index, m = modalities[s["modality"]]
        if not is_event_stream(s) and s["rateHz"] < m.get("upsample_hz", 0):
            s = upsample_stream(s, m["upsample_hz"])  # read at the modality's rate
        patches = patch_stream(s, m, frac)
        if any(patches[1]):
            emitting.append((s_index, s, m_index, patches))

    # default reference time: the earliest first token time (start_time or first timestamp) among
    # the streams that emit tokens, so an entirely missing stream changes nothing
    ref = window.get("referenceTime")
    if ref is None:
        ref = min((p[2][0] for _, _, _, p in emitting), default=0.0)
    ref = float(ref)

    xs, stream_ids, modality_ids, times, present, patch_values = [], [], [], [], [], []
    for s_index, s, m_index, (normalized, patch_present, patch_time, values) in emitting:
        K = len(patch_time)
        value = tok.value_proj[s["modality"]](torch.tensor(normalized, dtype=torch.float64).to(dtype))
        keep = torch.tensor(patch_present)[:, None]
        ident = (tok.sensor_embedding.weight[s["sensor"]]
                 + tok.modality_embedding.weight[m_index]
                 + tok.placement_embedding.weight[placements[s["placement"]]]
                 + tok.rate_embedding.weight[rate_bucket(s, cfg["rate_bucket_edges_hz"])])
        t = torch.tensor(patch_time, dtype=torch.float64)
        enc = model.time_encoding(t - ref).to(dtype)
        xs.append(torch.where(keep, value, tok.mask_token[None, :]) + enc + ident[None, :])
        stream_ids += [s_index] * K
        modality_ids += [m_index] * K
        times += patch_time
        present += patch_present
        patch_values += values

    x = torch.cat(xs) if xs else torch.zeros(0, d, dtype=dtype)
    return Tokens(x=x, stream=torch.tensor(stream_ids, dtype=torch.int64),
                  modality=torch.tensor(modality_ids, dtype=torch.int64),
                  time=torch.tensor(times, dtype=torch.float64),
                  present=torch.tensor(present, dtype=torch.bool), reference_time=ref,
                  patches=patch_values)


# ---------------------------------------------------------------------------------------------
# groups and encoder

def groups(tokens, block, time_bin=None):
    """Token-index lists of the attention groups of one block, each sorted by time (stably)."""
    T = len(tokens.time)
    t = tokens.time.tolist()
    by_time = lambda idx: sorted(idx, key=lambda i: t[i])  # Python's sort is stable
    if T == 0:
        return []
    if block == "flattened":
        return [by_time(range(T))]
    if block == "time":
        order = list(dict.fromkeys(tokens.stream.tolist()))
        return [by_time([i for i in range(T) if tokens.stream[i] == s]) for s in order]
    if block == "channel":
        bins = [math.floor((ti - tokens.reference_time) / time_bin) for ti in t]
        return [by_time([i for i in range(T) if bins[i] == b]) for b in sorted(set(bins))]
    raise ValueError(block)


def check_lookback(config):
    """attention_lookback_s, as the loader checks it: absent or None (unlimited), or a finite
    number of seconds > 0 in a causal config. ValueError otherwise."""
    w = config.get("attention_lookback_s")
    if w is None:
        return
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
        raise ValueError(f"attention_lookback_s must be a finite number of seconds > 0 (or None), got {w!r}")
    if not config.get("causal", False):
        raise ValueError("attention_lookback_s needs causal: True (a query at time t attends to keys "
                         "in [t - W, t]); this config has causal: False")


def key_mask(tokens, idx, causal, lookback=None):
    """(g, g) bool, True = key j hidden from query i."""
    idx = torch.tensor(idx, dtype=torch.int64)
    mask = (~tokens.present[idx])[None, :].expand(len(idx), len(idx)).clone()
    if causal:
        t = tokens.time[idx]  # float64, absolute seconds: the differences are the C++ ones
        mask |= t[None, :] > t[:, None]
        if lookback is not None:
            mask |= (t[:, None] - t[None, :]) > lookback
    return mask


def attend(mha, x, mask):
    """Multi-head self-attention of one group. x (g, d), mask (g, g) -> (out (g, d), w (H, g, g)).
    A query with every key masked gets zero weights and a zero context (output = out_proj.bias)."""
    g, d = x.shape
    H = mha.num_heads
    dh = d // H
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (u.reshape(g, H, dh).transpose(0, 1) for u in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    scores = scores.masked_fill(mask[None], -math.inf)
    no_key = mask.all(dim=-1)[None, :, None]
    weights = scores.softmax(dim=-1).masked_fill(no_key, 0.0)
    context = (weights @ v).transpose(0, 1).reshape(g, d)
    return F.linear(context, mha.out_proj.weight, mha.out_proj.bias), weights


def encoder_layer(layer, x, mask):
    """nn.TransformerEncoderLayer semantics (pre/post norm, dropout 0) on one group."""
    def feed_forward(h):
        return layer.linear2(layer.activation(layer.linear1(h)))

    if layer.norm_first:
        a, w = attend(layer.self_attn, layer.norm1(x), mask)
        x = x + a
        x = x + feed_forward(layer.norm2(x))
    else:
        a, w = attend(layer.self_attn, x, mask)
        x = layer.norm1(x + a)
        x = layer.norm2(x + feed_forward(x))
    return x, w


def encode(model, tokens, layer_hook=None):
    cfg, enc = model.config, model.encoder
    causal = cfg.get("causal", False)
    lookback = cfg.get("attention_lookback_s")
    x, attention = tokens.x, {}
    for i in range(cfg["n_layers"]):
        for block in BLOCKS[cfg["layout"]]:
            layer = enc.channel_layers[i] if block == "channel" and cfg["layout"] == "factorized" \
                else enc.layers[i]
            y = x.clone()
            for gi, idx in enumerate(groups(tokens, block, cfg.get("time_bin"))):
                mask = key_mask(tokens, idx, causal, lookback)
                out, w = encoder_layer(layer, x[idx], mask)
                if layer_hook is not None:
                    layer_hook(layer, x[idx], mask, out, w)
                y[idx] = out
                attention[(i, block, gi)] = (torch.tensor(idx, dtype=torch.int64), w)
            x = y
    return x, attention


# ---------------------------------------------------------------------------------------------
# pool

def pool(model, x, present):
    if model.config.get("final_norm", False):
        x = model.encoder.norm(x)
    pooled = x[present].mean(dim=0) if bool(present.any()) else x.new_zeros(x.shape[1])
    head = model.head(pooled) if model.config.get("n_outputs", 0) > 0 else None
    return x, pooled, head


def expected_tensor_shapes(config):
    """Every tensor name of docs/model.md's weight table with its shape, from the config alone."""
    d, ff = config["d_model"], config["dim_feedforward"]
    shapes = {}
    for m in config["modalities"]:
        shapes[f"tokenizer.value_proj.{m['name']}.weight"] = (d, m["patch_len"])
        shapes[f"tokenizer.value_proj.{m['name']}.bias"] = (d,)
    shapes.update({
        "tokenizer.mask_token": (d,),
        "tokenizer.sensor_embedding.weight": (config["n_sensors"], d),
        "tokenizer.modality_embedding.weight": (len(config["modalities"]), d),
        "tokenizer.placement_embedding.weight": (len(config["placements"]), d),
        "tokenizer.rate_embedding.weight": (len(config["rate_bucket_edges_hz"]) + 2, d)})
    stacks = ["layers"] + (["channel_layers"] if config["layout"] == "factorized" else [])
    for stack in stacks:
        for i in range(config["n_layers"]):
            p = f"encoder.{stack}.{i}."
            shapes.update({
                p + "self_attn.in_proj_weight": (3 * d, d), p + "self_attn.in_proj_bias": (3 * d,),
                p + "self_attn.out_proj.weight": (d, d), p + "self_attn.out_proj.bias": (d,),
                p + "linear1.weight": (ff, d), p + "linear1.bias": (ff,),
                p + "linear2.weight": (d, ff), p + "linear2.bias": (d,),
                p + "norm1.weight": (d,), p + "norm1.bias": (d,),
                p + "norm2.weight": (d,), p + "norm2.bias": (d,)})
    if config.get("final_norm", False):
        shapes.update({"encoder.norm.weight": (d,), "encoder.norm.bias": (d,)})
    if config.get("n_outputs", 0) > 0:
        shapes.update({"head.weight": (config["n_outputs"], d), "head.bias": (config["n_outputs"],)})
    shapes[INV_FREQ] = (d // 2,)  # optional in a file (computed from max_period when absent)
    return shapes
