"""safetensors inputs: a minimal reader (header JSON + raw bytes) so the harness needs no extra package,
and a writer for tests. Where a blob lives (`--blob-root`) is blobs.py's."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch

from .blobs import resolve
from .opmodel import Operator, OperatorError

_ST_DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
}
for _name, _attr in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):  # torch >= 2.3
    if hasattr(torch, _attr):
        _ST_DTYPES[_name] = getattr(torch, _attr)


def load_tensor(op: Operator, desc: dict[str, Any], input_name: str) -> torch.Tensor:
    path = resolve(op, desc)
    if path is None:
        raise OperatorError(
            f"safetensors file {desc.get('path')} for input {input_name!r} not found; pass --blob-root DIR"
        )
    key = desc.get("tensor_key") or desc.get("key") or input_name
    with path.open("rb") as f:  # the header, then only this tensor's bytes (a blob may hold many inputs)
        try:
            (hlen,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(hlen))
            if not isinstance(header, dict):
                raise ValueError("the header is not a JSON object")
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise OperatorError(f"{path}: not a safetensors file ({exc})") from None
        if key not in header:
            raise OperatorError(
                f"{path}: no tensor {key!r} (has {sorted(k for k in header if k != '__metadata__')}); "
                f"fix tensor_key of input {input_name!r}"
            )
        meta = header[key]
        if meta.get("dtype") not in _ST_DTYPES:
            raise OperatorError(f"{path}: tensor {key!r} has dtype {meta.get('dtype')!r}, not supported here")
        start, end = meta["data_offsets"]
        f.seek(8 + hlen + start)
        raw = bytearray(f.read(end - start))
    dtype = _ST_DTYPES[meta["dtype"]]
    flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    return flat.reshape(meta["shape"]).clone()


def save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Write a safetensors file (tests and fixtures make their blobs with it)."""
    names = {v: k for k, v in _ST_DTYPES.items()}
    header: dict[str, Any] = {}
    chunks, offset = [], 0
    for key, t in tensors.items():
        raw = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[key] = {
            "dtype": names[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        chunks.append(raw)
        offset += len(raw)
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"".join(chunks))
