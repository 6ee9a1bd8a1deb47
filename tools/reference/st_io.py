"""Minimal safetensors writer and validating reader shared by the reference scripts.

No dependency on the `safetensors` package (not installable here): the format is 8-byte
little-endian u64 N, N bytes of JSON header (padded with spaces so the buffer starts 8-byte
aligned), then the tensors' bytes, contiguous, row-major, little-endian.

Arrays are NumPy arrays. BF16 has no NumPy dtype: the writer takes either raw bits (uint16) or
float values (rounded float32 -> bfloat16 to nearest even), and the reader decodes BF16 to float32.
"""
import json
import math
import pathlib
import struct

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
          "I64": "<i8", "I32": "<i4", "U8": "u1", "BOOL": "u1"}


def f32_to_bf16_bits(array):
    """float32 -> bfloat16 bit patterns (uint16), rounding to nearest even; NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(array, dtype="<f4").view("<u4").astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(array, dtype=np.float32))
    return np.where(nan, np.uint16(0x7FC0) | ((bits >> 16) & 0x8000).astype(np.uint16), rounded)


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype("<u4") << 16).view("<f4")


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, dtype, array) written in that order; metadata: str -> str."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, dtype, array in tensors:
        if dtype == "BF16" and np.asarray(array).dtype != np.uint16:
            array = f32_to_bf16_bits(array)
        blob = np.ascontiguousarray(array, dtype=DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(array)),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    pathlib.Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path, with_dtypes=False):
    """Parse and validate a file; return (metadata, {name: array}) (plus {name: dtype} on request).

    BF16 tensors are returned decoded to float32."""
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode())
    metadata, buf, tensors, dtypes, end = header.pop("__metadata__", {}), raw[8 + n:], {}, {}, 0
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        dt = np.dtype(DTYPES[info["dtype"]])
        assert begin == end and stop - begin == dt.itemsize * math.prod(info["shape"]), name
        array = np.frombuffer(buf[begin:stop], dt).reshape(info["shape"])
        tensors[name] = bf16_bits_to_f32(array) if info["dtype"] == "BF16" else array
        dtypes[name] = info["dtype"]
        end = stop
    assert end == len(buf), "trailing bytes after the last tensor"
    return (metadata, tensors, dtypes) if with_dtypes else (metadata, tensors)
