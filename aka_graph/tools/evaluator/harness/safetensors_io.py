"""A minimal safetensors reader (header JSON + raw bytes) so the harness needs no extra package."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch

from .opmodel import OperatorError

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


def load_tensor(op_dir: Path, desc: dict[str, Any], input_name: str) -> torch.Tensor:
    rel = desc.get("path")
    if not rel:
        raise OperatorError(f"{op_dir}/workload.jsonl: safetensors input {input_name!r} has no 'path'")
    path = (op_dir / rel) if not Path(rel).is_absolute() else Path(rel)
    if not path.is_file():
        raise OperatorError(
            f"{path}: safetensors file for input {input_name!r} not found; place it relative to {op_dir}"
        )
    key = desc.get("tensor_key") or desc.get("key") or input_name
    data = path.read_bytes()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + hlen])
    if key not in header:
        raise OperatorError(
            f"{path}: no tensor {key!r} (has {sorted(k for k in header if k != '__metadata__')})"
        )
    meta = header[key]
    start, end = meta["data_offsets"]
    raw = bytearray(data[8 + hlen + start : 8 + hlen + end])
    dtype = _ST_DTYPES[meta["dtype"]]
    flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    return flat.reshape(meta["shape"]).clone()
