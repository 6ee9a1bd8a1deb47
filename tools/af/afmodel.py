"""The AF model (issue 20, docs/models.md): its config, its inputs built from a record, and a
batched twin of the reference module (tools/reference/sensorformer_ref.py) for training.

The reference runs one window at a time in pure Python; training needs batches. `BatchedTwin`
computes the same function with the same parameters (a SensorformerRef's) on padded batches:
the model is causal with a look-back and one attention block over all tokens ("flattened"), so a
window's attention is one masked (T, T) product and a batch is (B, T, T). `check_twin` compares it
with the reference on real records (train_af.py runs it before training; float64, the differences
are summation order only).

A record's inputs, as the runtime takes them (docs/models.md "Inputs"):
  ecg  a regular stream at its native rate, mV, sensor 0, placement "hand" (a handheld's lead I,
       as in the CinC set) or "chest" (a strap's);
  rr   an event stream, sensor 0: one event per detected beat after the first, at the beat's time,
       value the RR interval before it in seconds; missing (NaN) when a missing ECG sample lies
       between the two beats (the interval then spans a gap; web/src/qrs.js `rrEvents` is the
       runtime's definition of the same rule). Beats come from detectBeats (web/src/qrs.js) run by
       tools/af/prepare.mjs and tools/af/beats.mjs: one detector.
"""
import math
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F

LABELS = ["normal", "af", "other", "noisy"]   # the challenge's N, A, O, ~
CODES = ["N", "A", "O", "~"]
FS = 300.0
ECG_P = 40      # 0.133 s at 300 Hz, 0.31 s at 130 Hz
RR_P = 4        # beats per RR token
LOOKBACK_S = 5.0
# Local attention (forward_batched): tokens in time order, in blocks of BLOCK; a block's queries
# see the keys of the block, of `back` blocks before it (as few as hold every query's look-back
# in the batch, at most MAX_BACK) and of TIE positions after it (keys at a query's own time that
# sort after it). 16-token blocks with 3 back (the 5 s look-back at 300 Hz) score 68 keys a query.
BLOCK = 16
TIE = 4
MAX_BACK = 8
# A notification of a Polar H10's ECG: 73 samples at 130 Hz. Bluetooth-like dropouts lose whole ones.
NOTIFICATION_S = 73 / 130.0
# A strap's own RR intervals arrive in its Heart Rate Measurement notifications, one a second
# (Bluetooth Heart Rate Service); a lost one loses the intervals it carried.
HR_NOTIFICATION_S = 1.0
# The beat stream (web/src/qrs.js beatStream is the runtime's definition): each detected beat's ECG
# on a fixed grid around it, BEAT_L points BEAT_STEP_S apart from BEAT_FIRST_S (-0.24 .. +0.384 s:
# the P wave, the QRS and most of the T wave), whatever the ECG's rate.
BEAT_L = 40
BEAT_FIRST = -15          # grid point k is at (k + BEAT_FIRST) * BEAT_STEP_S from the beat
BEAT_STEP_S = 0.016
BEAT_MODALITY = {"name": "beat", "patch_len": BEAT_L, "mean": 0.0, "std": 0.25}   # mV

CONFIG = {
    "format": "sensorformer-1",
    "d_model": 64, "n_heads": 4, "n_layers": 4, "dim_feedforward": 128,
    "activation": "gelu", "norm_first": True, "layer_norm_eps": 1e-5, "final_norm": True,
    "layout": "flattened", "causal": True, "attention_lookback_s": LOOKBACK_S,
    "max_period": 1000.0, "min_present_fraction": 0.5,
    "n_sensors": 1,
    "modalities": [
        {"name": "ecg", "patch_len": ECG_P, "mean": 0.0, "std": 0.25},   # mV
        {"name": "rr", "patch_len": RR_P, "mean": 0.8, "std": 0.3},      # seconds
    ],
    "placements": ["hand", "chest"],
    # 1: below 200 Hz (a strap's 130 Hz), 2: 200 Hz and above (the set's 300 Hz); 0: events
    "rate_bucket_edges_hz": [200.0],
    "n_outputs": len(LABELS),
    "labels": LABELS,
}


def rate_bucket(rate, edges):
    return 1 + sum(1 for e in edges if rate >= e)


# ---------------------------------------------------------------------------------------------
# a record's inputs

def rr_events(beats, missing=None):
    """(indices, values) of the RR stream from beat sample indices: an event at every beat after
    the first, its value the interval before it in seconds (index difference / rate, computed by
    the caller); here the event's beat index and a flag per event: False when `missing` (bool per
    ECG sample) has a missing sample strictly between the two beats (the value is then NaN)."""
    beats = np.asarray(beats, dtype=np.int64)
    if len(beats) < 2:
        return beats[:0], np.zeros(0, dtype=bool)
    ok = np.ones(len(beats) - 1, dtype=bool)
    if missing is not None and missing.any():
        cum = np.concatenate([[0], np.cumsum(missing)])
        ok = cum[beats[1:]] - cum[beats[:-1] + 1] == 0
    return beats[1:], ok


def rr_stream(beats, rate, missing=None, start=0.0):
    """The RR stream's (timestamps, values) in seconds, as rrEvents (web/src/qrs.js) makes it:
    times start + index / rate, values the difference of consecutive beat times, NaN across a gap."""
    times = start + np.asarray(beats, dtype=np.int64) / rate
    idx, ok = rr_events(beats, missing)
    if not len(idx):
        return np.zeros(0), np.zeros(0)
    values = np.where(ok, np.diff(times), np.nan)
    return times[1:], values


def lose_hr_notifications(times, values, fraction, rng):
    """A strap's RR stream after its 1 s notifications are lost, each with probability `fraction`
    (a random phase of the notification grid against the first event): the events that arrive,
    their times and values unchanged."""
    times, values = np.asarray(times, dtype=np.float64), np.asarray(values, dtype=np.float64)
    phase = rng.uniform(0.0, HR_NOTIFICATION_S)
    if not len(times):
        rng.random(0)
        return times, values
    notification = np.floor((times - times[0] + phase) / HR_NOTIFICATION_S).astype(np.int64)
    keep = ~(rng.random(int(notification.max()) + 1) < fraction)[notification]
    return times[keep], values[keep]


def known_rr(times, values):
    """The RR stream without its unknown intervals (NaN: across a gap): left out, not missing
    (rrFromEcg's default, gaps: 'leave-out')."""
    known = ~np.isnan(values)
    return times[known], values[known]


def beat_waveforms(x, rate, beats, points=BEAT_L, first=BEAT_FIRST, step_s=BEAT_STEP_S):
    """(len(beats), points): the ECG x (NaN missing) around each beat (sample index) on the beat
    grid, linearly interpolated between the two samples around each grid point (NaN when either
    is missing or outside x), minus the mean of the beat's present points. points, first, step_s:
    the grid (the runtime's: BEAT_L, BEAT_FIRST, BEAT_STEP_S; others only in the beats-fine probe)."""
    x = np.asarray(x, dtype=np.float64)
    b = np.asarray(beats, dtype=np.int64)
    if not len(b):
        return np.zeros((0, points))
    off = (np.arange(points) + first) * step_s * rate          # samples, float64
    u = b[:, None] + off[None, :]
    i0 = np.floor(u).astype(np.int64)
    frac = u - i0
    ok = (i0 >= 0) & (i0 + 1 < len(x))
    a = x[np.clip(i0, 0, len(x) - 1)]
    c = x[np.clip(i0 + 1, 0, len(x) - 1)]
    w = np.where(ok, a * (1.0 - frac) + c * frac, np.nan)
    present = ~np.isnan(w)
    count = present.sum(axis=1)
    mean = np.where(count > 0, np.nansum(w, axis=1) / np.maximum(count, 1), 0.0)
    return w - mean[:, None]


def beat_rr_context(x, rate, beats, count):
    """(len(beats), count): the RR intervals before each beat, newest first (column j: from beat
    i-j-1 to beat i-j), each scaled by the beat stream's std over the rr stream's and shifted by the
    rr stream's mean, so that the beat stream's own normalisation (mean 0, std 0.25) reads it as the
    rr stream's does ((RR - 0.8) / 0.3); NaN before
    the record's first beats and across a missing sample (NaN in x) between the two beats, as
    rr_stream (train_af.py --variant beats-rr, beats-fine; web/src/qrs.js beatsFromEcg builds the
    same from a model's "rr_context")."""
    beats = np.asarray(beats, dtype=np.int64)
    out = np.full((len(beats), count), np.nan)
    if len(beats) < 2:
        return out
    _, ok = rr_events(beats, np.isnan(np.asarray(x, dtype=np.float64)))
    rr = np.where(ok, np.diff(beats) / rate, np.nan)           # rr[k]: beat k to beat k + 1
    for j in range(count):
        k = np.arange(len(beats)) - 1 - j
        out[:, j] = np.where(k >= 0, rr[np.clip(k, 0, len(rr) - 1)], np.nan)
    rr_mod = next(m for m in CONFIG["modalities"] if m["name"] == "rr")
    return BEAT_MODALITY["std"] / rr_mod["std"] * (out - rr_mod["mean"])


def is_beat_modality(name):
    """A beat stream's modality: "beat", or "beat_..." (web/src/qrs.js isBeatModality: an ensemble
    file names a second grid so, beat_modality_name)."""
    return name == "beat" or name.startswith("beat_")


def beat_modality(config):
    """The config's beat modality (a dict), or None (a run's model has at most one)."""
    return next((m for m in config["modalities"] if is_beat_modality(m["name"])), None)


def beat_modality_name(modality):
    """The name an ensemble file gives a beat modality whose grid differs from another member's
    (ensemble.py export: the runtime sends a stream to every member that knows its modality's
    name): "beat" for the default grid, else "beat_<points>x<step in ms>ms", with "_rr<k>" when each
    token ends with k RR intervals (e.g. beat_80x8ms_rr2); grids that differ only in where they
    start share a name (export refuses them)."""
    rr = modality.get("rr_context", 0)
    first, step = modality.get("grid_first", BEAT_FIRST), modality.get("grid_step_s", BEAT_STEP_S)
    if modality["patch_len"] == BEAT_L and not rr and first == BEAT_FIRST and step == BEAT_STEP_S:
        return "beat"
    return f"beat_{modality['patch_len'] - rr}x{step * 1000:g}ms" + (f"_rr{rr}" if rr else "")


def beat_stream(x, rate, beats, start=0.0, modality=BEAT_MODALITY):
    """The beat stream's (timestamps, values): BEAT_L events per beat, all at the beat's time
    start + index / rate, valued its waveform (beat_waveforms); one token per beat (patch_len
    BEAT_L). Probes (train_af.py --variant beats-rr, beats-fine) set in the modality: "rr_context"
    > 0, each beat's token then ends with that many intervals before it (beat_rr_context);
    "grid_first" and "grid_step_s", another grid of patch_len - rr_context points."""
    rr_context = modality.get("rr_context", 0)
    w = beat_waveforms(x, rate, beats, modality["patch_len"] - rr_context,
                       modality.get("grid_first", BEAT_FIRST), modality.get("grid_step_s", BEAT_STEP_S))
    if rr_context:
        w = np.concatenate([w, beat_rr_context(x, rate, beats, rr_context)], axis=1)
    times = start + np.asarray(beats, dtype=np.int64) / rate
    return np.repeat(times, w.shape[1]), w.reshape(-1)


def drop_notifications(n, fs, fraction, rng):
    """Bool (n,): True where a sample is lost, whole notifications (NOTIFICATION_S) at a time,
    each lost with probability `fraction` (so `fraction` of the samples on average)."""
    missing = np.zeros(n, dtype=bool)
    if fraction <= 0:
        return missing
    edges = np.arange(0.0, n / fs + NOTIFICATION_S, NOTIFICATION_S)
    offset = rng.uniform(0, NOTIFICATION_S)
    for k in range(len(edges)):
        if rng.random() < fraction:
            a, b = int(round((edges[k] - offset) * fs)), int(round((edges[k] - offset + NOTIFICATION_S) * fs))
            missing[max(0, a):max(0, min(n, b))] = True
    return missing


def resample(x, rate, fs=FS):
    """x at fs -> at `rate` (anti-aliased polyphase; scipy). rate/fs must be a small fraction."""
    from scipy.signal import resample_poly
    f = Fraction(rate / fs).limit_denominator(100)
    return resample_poly(np.asarray(x, dtype=np.float64), f.numerator, f.denominator).astype(np.float32)


def ecg_read_hz(config=CONFIG):
    """The rate a model reads a slower ECG at: its ECG modality's "upsample_hz" (0: none)."""
    return next((m.get("upsample_hz", 0.0) for m in config["modalities"] if m["name"] == "ecg"), 0.0)


def read_ecg(x, rate, read_hz):
    """(ECG, rate) as the runtime reads a regular ECG stream: below read_hz (ecg_read_hz), the
    samples interpolated to read_hz (upsample); otherwise as they are."""
    if rate < read_hz:
        return upsample(x, rate, read_hz).astype(np.float64), read_hz
    return x, rate


def upsample(x, rate, target):
    """x (float32 samples at `rate`, NaN missing) read at `target` Hz: the runtime's rule for a
    modality with "upsample_hz" (src/tokenize/upsample.hpp; the reference module's
    upsample_stream, vectorised, with its keys_weights: the same float64 results). Output j sits at
    input position u = j * rate / target, for every j with floor(u) < len(x); Keys' cubic
    convolution (a = -1/2) of inputs floor(u)-1 .. floor(u)+2, NaN when any is missing or outside."""
    from sensorformer_ref import keys_weights  # tools/reference is on the path of every script that reads at a rate
    x = np.asarray(x, dtype=np.float32)
    n = len(x)
    j = np.arange(int(np.ceil(n * target / rate)) + 2, dtype=np.float64)
    u = j * rate / target
    fl = np.floor(u)
    u, fl = u[fl < n], fl[fl < n]
    idx = fl.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    taps = np.where((idx >= 0) & (idx < n), x[np.clip(idx, 0, max(n - 1, 0))].astype(np.float64) if n else np.nan, np.nan)
    w0, w1, w2, w3 = keys_weights(u - fl)
    y = w0 * taps[:, 0] + w1 * taps[:, 1] + w2 * taps[:, 2] + w3 * taps[:, 3]  # NaN where a tap is
    return y.astype(np.float32)


def patches(values, P):
    """values (n,) with NaN missing -> (normalised later) (K, P) raw with NaN, K = ceil(n / P)."""
    n = len(values)
    K = -(-n // P)
    out = np.full(K * P, np.nan, dtype=np.float64)
    out[:n] = values
    return out.reshape(K, P)


def tokens_of(ecg, rate, rr_times, rr_values, config=CONFIG, start=0.0, beat=None):
    """A record's tokens as numpy arrays, exactly the reference tokenizer's (sensorformer_ref.py
    tokenize) for streams [ecg (regular, `rate`, startTime `start`), rr (events at rr_times,
    absolute), beat (beat_stream's (times, values)) when the config has that modality]: per
    modality name (vals (K, P) normalised with missing as 0, present, time (float64, absolute))."""
    frac = config["min_present_fraction"]
    given = {"ecg": (np.asarray(ecg, dtype=np.float64), None),
             "rr": (np.asarray(rr_values, dtype=np.float64), np.asarray(rr_times, dtype=np.float64))}
    if beat is not None:
        given[(beat_modality(config) or BEAT_MODALITY)["name"]] = (np.asarray(beat[1], dtype=np.float64), np.asarray(beat[0], dtype=np.float64))
    out = {}
    for m in config["modalities"]:
        name = m["name"]
        vals, times = given.get(name, (np.zeros(0), np.zeros(0)))
        p = patches(vals, m["patch_len"])
        ok = ~np.isnan(p)
        present = ok.sum(axis=1) / m["patch_len"] >= frac
        norm = np.where(ok, (np.nan_to_num(p) - m["mean"]) / m["std"], 0.0)
        K = len(p)
        if times is None:
            t = start + np.arange(K) * m["patch_len"] / rate
        else:
            t = times[::m["patch_len"]][:K]
        if not present.any():  # a stream with no present patch emits no tokens
            norm, present, t = norm[:0], present[:0], t[:0]
        out[name] = (norm, present, t)
    return out


# ---------------------------------------------------------------------------------------------
# batched twin

class Batch:
    """Padded tensors of several records' tokens. Token order per record: the config's modalities
    in order (ECG tokens, then RR, then beats), each padded to the batch's longest."""

    def __init__(self, items, config=CONFIG, index_time=False, dtype=torch.float32):
        """items: dicts with tokens (tokens_of), rate, placement (index), ref (float: the
        reference time), label (int or None), pool_from (float or None)."""
        B = len(items)
        mods = config["modalities"]
        # forward_batched checks it against the model's: bands made for a shorter look-back than
        # the model's would leave keys out that its attention should see
        self.lookback = config["attention_lookback_s"]
        sizes = [max(1, max(len(it["tokens"][m["name"]][2]) for it in items)) for m in mods]
        self.vals = [torch.zeros(B, n, m["patch_len"], dtype=dtype) for n, m in zip(sizes, mods)]
        self.starts = [sum(sizes[:i]) for i in range(len(mods))]
        T = sum(sizes)
        self.present = torch.zeros(B, T, dtype=torch.bool)
        self.valid = torch.zeros(B, T, dtype=torch.bool)
        self.time = torch.full((B, T), 1e18, dtype=torch.float64)  # absolute; padding after everything
        self.enc_rel = torch.zeros(B, T, dtype=torch.float64)
        self.keep = torch.zeros(B, T, dtype=torch.bool)
        self.placement = torch.zeros(B, dtype=torch.int64)
        self.rate_bucket = torch.zeros(B, dtype=torch.int64)
        self.label = torch.tensor([it.get("label", -1) if it.get("label") is not None else -1 for it in items])
        self.modality = torch.cat([torch.full((n,), i, dtype=torch.int64) for i, n in enumerate(sizes)])
        self.regular = torch.tensor([m["name"] == "ecg" for m in mods])[self.modality]  # rate bucket from the rate
        for b, it in enumerate(items):
            enc_all, spans = [], []
            for i, m in enumerate(mods):
                v, p, t = it["tokens"][m["name"]]
                k, a = len(t), self.starts[i]
                self.vals[i][b, :k] = torch.from_numpy(v)
                self.present[b, a:a + k] = torch.from_numpy(p)
                self.valid[b, a:a + k] = True
                # Masks compare absolute times (float64), as the reference and the runtime do: at epoch
                # seconds (~1e9) a difference rounds differently from one of times relative to ref.
                self.time[b, a:a + k] = torch.from_numpy(t)
                enc_all.append(t - it["ref"])
                spans.append((a, k))
            rel = np.concatenate(enc_all)
            if index_time:  # the ablation: a token's position in time order instead of its time
                order = np.argsort(rel, kind="stable")
                rank = np.empty(len(rel))
                rank[order] = np.arange(len(rel))
                enc = rank
            else:
                enc = rel
            c = 0
            for a, k in spans:
                self.enc_rel[b, a:a + k] = torch.from_numpy(enc[c:c + k])
                c += k
            keep = self.present[b] & self.valid[b]
            if it.get("pool_from") is not None:
                keep &= self.time[b] >= it["pool_from"]
            self.keep[b] = keep
            self.placement[b] = it["placement"]
            self.rate_bucket[b] = rate_bucket(it["rate"], config["rate_bucket_edges_hz"])
        self.order = torch.argsort(self.time, dim=1, stable=True)
        self.back = bands_of(torch.gather(self.time, 1, self.order), config["attention_lookback_s"])


def attend_batched(mha, x, mask, rot=None):
    """sensorformer_ref.attend over a batch: x (B, T, d), mask (B, T, T) True = hidden; rot: see
    rotate (a research probe only; None for every model the runtime runs)."""
    B, T, d = x.shape
    H = mha.num_heads
    dh = d // H
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    if rot is not None:
        q, k = rotate(q, rot, H), rotate(k, rot, H)
    q, k, v = (u.reshape(B, T, H, dh).transpose(1, 2) for u in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
    m = mask[:, None]
    no_key = mask.all(dim=-1)[:, None, :, None]
    scores = scores.masked_fill(m, -math.inf).masked_fill(no_key, 0.0)  # no NaN in the gradient
    weights = scores.softmax(dim=-1).masked_fill(no_key, 0.0)
    context = (weights @ v).transpose(1, 2).reshape(B, T, d)
    return F.linear(context, mha.out_proj.weight, mha.out_proj.bias)


def bands_of(t, W):
    """The number of blocks back local attention needs for the time-sorted token times t (B, T)
    (padding 1e18) and look-back W: the fewest whose BLOCK * back + 1 consecutive tokens always
    span more than W; None (dense attention) when MAX_BACK are not enough or more than TIE
    later tokens share a query's time."""
    real = t < 1e17
    T = t.shape[1]
    if T > TIE + 1 and not bool(((t[:, TIE + 1:] > t[:, :-(TIE + 1)]) | ~real[:, :-(TIE + 1)]).all()):
        return None
    for back in range(1, MAX_BACK + 1):
        span = back * BLOCK + 1
        if T <= span or bool(((t[:, span:] - t[:, :-span] > W) | (t[:, span:] >= 1e17)).all()):
            return back
    return None


def band(u, back, fill):
    """u (B, nb * BLOCK, ...) -> (B, nb, ..., K): per block its keys, K = (back + 1) * BLOCK + TIE
    (the `back` blocks before it, itself, TIE positions after), `fill` outside the sequence."""
    pad = [0, 0] * (u.dim() - 2) + [back * BLOCK, TIE]
    return F.pad(u, pad, value=fill).unfold(1, (back + 1) * BLOCK + TIE, BLOCK)


HIDDEN = -1e30  # local_attend's bias for a key a query does not see


def rotation(t, omega, dtype):
    """Rotary time (a research probe, train_af.py --rope-time; the runtime has no such thing): per
    token the angles t * omega (float64, t (B, T) seconds, padding at 1e18 taken as 0) as (cos,
    sin), each (B, T, 1, len(omega)). Rotating queries and keys by them makes each head's scores
    depend on the tokens' time difference (Su et al. 2021, "RoFormer", with real times)."""
    rel = torch.where(t < 1e17, t - t[:, :1], torch.zeros_like(t))
    angle = rel[..., None, None] * omega.to(torch.float64)
    return angle.cos().to(dtype), angle.sin().to(dtype)


def rotate(u, rot, H):
    """u (B, T, H * dh) with each head's halves rotated pairwise by rot = rotation(...)."""
    c, s = rot
    B, T, d = u.shape
    u = u.reshape(B, T, H, d // H)
    a, b = u.chunk(2, dim=-1)
    return torch.cat([a * c - b * s, a * s + b * c], dim=-1).reshape(B, T, d)


def local_attend(mha, x, bias, qkeep, back, rot=None):
    """attend_batched restricted to bands: x (B, nb, BLOCK, d) in time order; bias (B, 1, nb,
    BLOCK, K) 0 for a key the query sees and HIDDEN otherwise (an exp that underflows to exactly
    0, so no -inf and no NaN in the gradient); qkeep (B, 1, nb, BLOCK, 1) 0 for a query that sees
    no key (its context is 0, as attend_batched's)."""
    B, nb, S, d = x.shape
    H = mha.num_heads
    dh = d // H
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    if rot is not None:
        q, k = (rotate(u.reshape(B, nb * S, d), rot, H).reshape(B, nb, S, d) for u in (q, k))
    q = q.reshape(B, nb, S, H, dh).permute(0, 3, 1, 2, 4)                               # (B, H, nb, S, dh)
    kb, vb = (band(u.reshape(B, nb * S, d), back, 0.0) for u in (k, v))                # (B, nb, d, K)
    K = kb.shape[-1]
    kT = kb.reshape(B, nb, H, dh, K).permute(0, 2, 1, 3, 4)                            # (B, H, nb, dh, K)
    vv = vb.reshape(B, nb, H, dh, K).permute(0, 2, 1, 4, 3)                            # (B, H, nb, K, dh)
    weights = (torch.matmul(q, kT) * (1.0 / math.sqrt(dh)) + bias).softmax(dim=-1)
    context = (torch.matmul(weights, vv) * qkeep).permute(0, 2, 3, 1, 4).reshape(B, nb, S, d)
    return F.linear(context, mha.out_proj.weight, mha.out_proj.bias)



def embed(model, batch):
    """The tokenizer's sum (value or mask token + time encoding + identity), (B, T) in batch order."""
    tok = model.tokenizer
    dtype = tok.mask_token.dtype
    names = [m["name"] for m in model.config["modalities"]]
    v = torch.cat([tok.value_proj[n](vals.to(dtype)) for n, vals in zip(names, batch.vals)], dim=1)
    v = torch.where(batch.present[..., None], v, tok.mask_token)
    B, T, d = v.shape
    enc = model.time_encoding(batch.enc_rel.reshape(-1)).reshape(B, T, d).to(dtype)
    mod = batch.modality[None, :].expand(B, T)
    rate = torch.where(batch.regular[None, :], batch.rate_bucket[:, None], torch.zeros_like(mod))
    ident = (tok.sensor_embedding.weight[0] + tok.modality_embedding.weight[mod]
             + tok.placement_embedding.weight[batch.placement][:, None, :] + tok.rate_embedding.weight[rate])
    return v + enc + ident


def forward_batched(model, batch, dense=False, dropout=0.0):
    """Head logits (B, n_outputs) of the reference module `model` on `batch`. Local attention
    (time order, blocks) unless `dense` or the batch's look-backs do not fit in the bands; the same
    function either way (keys outside a query's look-back have weight 0). `dropout` > 0 (training
    only, train_af.py --dropout): each sub-layer's output before it joins the residual stream and
    the feed-forward's hidden activations are dropped with that probability (Vaswani et al. 2017's
    residual dropout); the exported model is unchanged by it (inference runs without)."""
    cfg = model.config
    dtype = model.tokenizer.mask_token.dtype
    W = cfg["attention_lookback_s"]
    assert batch.lookback >= W, f"a batch made for a {batch.lookback} s look-back, the model's is {W} s: Batch(items, config=model.config)"
    assert all(layer.norm_first for layer in model.encoder.layers)  # the layer math below is pre-norm
    x = embed(model, batch)
    B, T, d = x.shape
    drop = (lambda u: F.dropout(u, dropout, training=True)) if dropout > 0 else (lambda u: u)
    gather = lambda u: torch.gather(u, 1, batch.order if u.dim() == 2 else batch.order[..., None].expand(-1, -1, u.shape[2]))
    x = gather(x)
    t = gather(batch.time)
    alive = gather(batch.present & batch.valid)
    keep = gather(batch.keep)
    omega = getattr(model, "rope_omega", None)  # train_af.py --rope-time (a probe)
    if dense or batch.back is None:
        mask = ~alive[:, None, :] | (t[:, None, :] > t[:, :, None]) | ((t[:, :, None] - t[:, None, :]) > W)
        rot = None if omega is None else rotation(t, omega, x.dtype)
        attend = lambda attn, u: attend_batched(attn, u, mask, rot)
    else:
        S, back = BLOCK, batch.back
        nb = -(-T // S)
        pad = nb * S - T
        x = F.pad(x, (0, 0, 0, pad))
        t = F.pad(t, (0, pad), value=1e18)
        alive = F.pad(alive, (0, pad), value=False)
        keep = F.pad(keep, (0, pad), value=False)
        tk, ak = band(t, back, 1e18), band(alive, back, False)                           # (B, nb, K)
        tq = t.reshape(B, nb, S)
        mask = ~ak[:, :, None, :] | (tk[:, :, None, :] > tq[..., None]) | ((tq[..., None] - tk[:, :, None, :]) > W)
        bias = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(mask, HIDDEN)[:, None]  # once for the 4 layers
        qkeep = (~mask.all(dim=-1, keepdim=True)).to(x.dtype)[:, None]
        x = x.reshape(B, nb, S, d)
        rot = None if omega is None else rotation(t, omega, x.dtype)
        attend = lambda attn, u: local_attend(attn, u, bias, qkeep, back, rot)
    for layer in model.encoder.layers:
        x = x + drop(attend(layer.self_attn, layer.norm1(x)))
        x = x + drop(layer.linear2(drop(layer.activation(layer.linear1(layer.norm2(x))))))
    x = x.reshape(B, -1, d)  # the local path's blocks back to one sequence (padding included)
    if cfg.get("final_norm"):
        x = model.encoder.norm(x)
    w = keep.to(dtype)[..., None]
    pooled = (x * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
    return model.head(pooled)


def window_of(item, config=CONFIG):
    """The same record as the reference module's input window (docs/model.md format)."""
    place = config["placements"][item["placement"]]
    ecg = [None if math.isnan(v) else float(v) for v in item["ecg"]]
    streams = [{"sensor": 0, "modality": "ecg", "placement": place, "rateHz": item["rate"],
                "startTime": item["start"], "samples": ecg}]
    if len(item["rr_times"]):
        streams.append({"sensor": 0, "modality": "rr", "placement": place,
                        "timestamps": [float(t) for t in item["rr_times"]],
                        "samples": [None if math.isnan(v) else float(v) for v in item["rr_values"]]})
    if item.get("beat") is not None and len(item["beat"][0]):
        streams.append({"sensor": 0, "modality": (beat_modality(config) or BEAT_MODALITY)["name"], "placement": place,
                        "timestamps": [float(t) for t in item["beat"][0]],
                        "samples": [None if math.isnan(v) else float(v) for v in item["beat"][1]]})
    w = {"streams": streams}
    if item.get("ref") is not None:
        w["referenceTime"] = item["ref"]
    return w


def default_ref(tokens):
    """The runtime's default reference time: the earliest first token time of the emitting streams."""
    firsts = [t[0] for (_, _, t) in tokens.values() if len(t)]
    return min(firsts) if firsts else 0.0


def f1_scores(confusion):
    """Per-class F1 from a confusion matrix (rows truth, columns predicted): the challenge's
    F1 = 2 * correct / (truth count + predicted count)."""
    c = np.asarray(confusion)
    return [2 * c[i, i] / max(1, c[i].sum() + c[:, i].sum()) for i in range(len(c))]


def mean_probability(logits, temperature=1.0):
    """(members, ..., classes) logits -> the members' mean softmax(z / T), a float64 tensor
    (..., classes): the ensemble rule of ensemble.py, evaluate_af.py --ensemble and train_af.py
    --teacher."""
    return (torch.as_tensor(logits, dtype=torch.float64) / temperature).softmax(-1).mean(0)


def challenge_f1(confusion):
    f = f1_scores(confusion)
    return float(np.mean(f[:3])), f
